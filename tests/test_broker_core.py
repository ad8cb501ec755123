"""The broker core: bytes in/bytes out, versions per release, typed ordered events, tables, clock."""
from __future__ import annotations

import struct

import pytest

from kipviz import codec
from kipviz.broker import Acl, Cluster, InvalidTransition, Machine, Row, Table, served_versions
from kipviz.broker.clock import VirtualClock
from kipviz.schema import events as ev
from kipviz.schema.error_codes import CODE


def test_api_versions_follow_the_release_played():
    assert served_versions("TxnOffsetCommit", Cluster().config) == (0, 6)          # default: 4.4 (KIP-1319)
    assert Cluster().config.release == "4.4"
    assert served_versions("TxnOffsetCommit", Cluster(release="4.3").config) == (0, 5)
    assert served_versions("InitProducerId", Cluster().config) == (0, 5)      # KIP-939 v6 accepted: not in 4.4
    assert served_versions("InitProducerId", Cluster(release=None).config) == (0, 6)  # trunk
    assert served_versions("TxnOffsetCommit", Cluster(release="4.0").config) == (0, 5)
    assert served_versions("OffsetCommit", Cluster(release="3.9").config) == (0, 9)
    assert served_versions("OffsetCommit", Cluster(release="4.2").config) == (2, 10)  # KIP-896 removals
    assert served_versions("TxnShareAcknowledge", Cluster().config) is None           # proposed: off
    assert served_versions("TxnShareAcknowledge", Cluster(share_version=2).config) == (0, 0)
    assert served_versions("TxnOffsetCommit", Cluster(api_versions={"TxnOffsetCommit": (0, 4)}).config) == (0, 4)


def test_unsupported_version_and_api_versions_v0_fallback():
    # a version the broker does not serve closes the connection (Processor.parseRequestHeader)
    c = Cluster(release="4.0")
    assert c.dispatch(codec.encode_request("TxnOffsetCommit", 6, {
        "TransactionalId": "t", "GroupId": "g", "ProducerId": 1, "ProducerEpoch": 0,
        "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None, "Topics": []},
        correlation_id=5)) == ("close", b"")
    assert "TxnOffsetCommit v6 is not served (this broker serves v0-v5)" in c.events[-1].text
    # ...only ApiVersions is answered, in v0, naming the ApiVersions versions served (KIP-511)
    future = codec.encode_request("ApiVersions", 4, {"ClientSoftwareName": "x", "ClientSoftwareVersion": "1"})
    c2 = Cluster(api_versions={"ApiVersions": (0, 3)})
    body = codec.decode_response(c2.handle(future), "ApiVersions", 0)["body"]
    assert body == {"ErrorCode": CODE["UNSUPPORTED_VERSION"], "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}


def test_malformed_requests_never_raise():
    c = Cluster()
    good = codec.encode_request("Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                                 "IncludeTopicAuthorizedOperations": False}, correlation_id=9)
    bad = good[:-2] + b"\xff\xff"
    bad = struct.pack(">i", len(bad) - 4) + bad[4:]
    # a parse failure closes the connection (RequestContext.parseRequest: InvalidRequestException, SocketServer closes)
    assert c.dispatch(bad) == ("close", b"")
    assert "Metadata v12" in c.events[-1].text
    assert c.dispatch(b"\x00\x00\x00\x02\x00") == ("close", b"")
    assert c.handle(b"") == b"" and c.internal_errors == []


def test_events_are_typed_ordered_and_carry_frames():
    c = Cluster(seed=3)
    c.create_topic("orders", 2)
    c.call("Metadata", 12, {"Topics": [{"TopicId": "AAAAAAAAAAAAAAAAAAAAAA", "Name": "orders"}], "AllowAutoTopicCreation": False,
                            "IncludeTopicAuthorizedOperations": False})
    kinds = [e.kind for e in c.events]
    assert kinds[-2:] == ["RequestReceived", "ResponseSent"]
    assert [e.seq for e in c.events] == list(range(len(c.events)))
    resp = c.events[-1]
    assert isinstance(resp, ev.ResponseSent) and resp.frame and resp.body["Topics"][0]["Name"] == "orders"
    assert resp.to_dict()["kind"] == "ResponseSent"


def test_acl_implications_like_kafka():
    c = Cluster(acls=[Acl("User:alice", "TOPIC", "orders", "READ")])
    assert c.authorized("User:alice", "TOPIC", "orders", "DESCRIBE")     # READ implies DESCRIBE
    assert not c.authorized("User:alice", "TOPIC", "orders", "WRITE")
    assert not c.authorized("User:bob", "TOPIC", "orders", "DESCRIBE")
    deny = Cluster(acls=[Acl("*", "TOPIC", "*", "ALL"), Acl("User:eve", "TOPIC", "orders", "READ", allow=False)])
    assert deny.authorized("User:bob", "TOPIC", "orders", "READ") and not deny.authorized("User:eve", "TOPIC", "orders", "READ")


def test_clock_fires_timers_in_order_at_their_time():
    clock, seen = VirtualClock(), []
    clock.schedule(50, lambda: seen.append(("b", clock.now)))
    clock.schedule(10, lambda: seen.append(("a", clock.now)))
    tid = clock.schedule(30, lambda: seen.append(("x", clock.now)))
    clock.cancel(tid)
    clock.advance(40)
    assert seen == [("a", 10)] and clock.now == 40
    clock.advance(100)
    assert seen == [("a", 10), ("b", 50)] and clock.now == 140
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_tables_reject_bad_rows_and_machines_reject_bad_moves():
    with pytest.raises(ValueError, match="unknown state"):
        Table("t", ("A",), "A", (Row("A", "go", "B"),))
    with pytest.raises(ValueError, match="two rows"):
        Table("t", ("A", "B"), "A", (Row("A", "go", "B"), Row("A", "go", "A")))
    t = Table("t", ("A", "B"), "A", (Row("A", "go", "B"), Row("B", "back", "A", status="proposed", kip="KIP-1")))
    seen = []
    m = Machine(t, "k", lambda **kw: seen.append(kw), enabled=lambda r: r.status == "released")
    assert m.fire("go") == "B" and seen[0]["from_state"] == "A"
    with pytest.raises(InvalidTransition):
        m.fire("back")                                   # proposed row switched off
    with pytest.raises(InvalidTransition):
        m.fire("go")


def test_call_routes_to_the_coordinator():
    c = Cluster(brokers=3, seed=5)
    c.create_topic("orders", 1)
    body = {"GroupId": "g1", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
            "Topics": [{"Name": "orders", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5,
                                                          "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]}
    assert c.call("OffsetCommit", 9, body)["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
    wrong = (c.coordinator_broker(0, "g1") + 1) % 3
    assert c.call("OffsetCommit", 9, body, broker=wrong)["Topics"][0]["Partitions"][0]["ErrorCode"] == CODE["NOT_COORDINATOR"]
