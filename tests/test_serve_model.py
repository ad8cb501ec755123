"""The model fixes a live cluster needs (issue 22, items 1-8), each through real frames:
encode a request, Cluster.dispatch/handle, decode the answer."""
from __future__ import annotations

import struct

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.records import read_batches, write_batch
from kipviz.schema.error_codes import CODE

ZERO = "AAAAAAAAAAAAAAAAAAAAAA"


def frame(api, version, body, cid=7, client="t"):
    return codec.encode_request(api, version, body, correlation_id=cid, client_id=client)


def answer(out, api, version):
    return codec.decode_response(out, api, version)


def produce_body(topic, values, acks=-1, partition=0):
    return {"TransactionalId": None, "Acks": acks, "TimeoutMs": 1000,
            "TopicData": [{"Name": topic, "PartitionData": [
                {"Index": partition, "Records": write_batch([(None, v) for v in values])}]}]}


def fetch_body(topic, offset=0, wait=500, min_bytes=1, partition=0):
    return {"ReplicaId": -1, "MaxWaitMs": wait, "MinBytes": min_bytes, "MaxBytes": 1 << 20, "IsolationLevel": 0,
            "SessionId": 0, "SessionEpoch": -1, "ForgottenTopicsData": [], "RackId": "",
            "Topics": [{"Topic": topic, "Partitions": [{"Partition": partition, "CurrentLeaderEpoch": -1,
                                                        "FetchOffset": offset, "LastFetchedEpoch": -1,
                                                        "LogStartOffset": -1, "PartitionMaxBytes": 1 << 20}]}]}


METADATA_ALL = {"Topics": None, "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False}


# ---- 1. advertised listeners are cluster configuration ----------------------------------------------
def test_metadata_and_find_coordinator_advertise_the_configured_listeners():
    c = Cluster(brokers=2, advertised_listeners={0: ("127.0.0.1", 40001), 1: ("127.0.0.1", 40002)})
    body = answer(c.handle(frame("Metadata", 12, METADATA_ALL)), "Metadata", 12)["body"]
    assert [(b["NodeId"], b["Host"], b["Port"]) for b in body["Brokers"]] == [
        (0, "127.0.0.1", 40001), (1, "127.0.0.1", 40002)]
    fc = answer(c.handle(frame("FindCoordinator", 4, {"KeyType": 0, "CoordinatorKeys": ["g"]})),
                "FindCoordinator", 4)["body"]["Coordinators"][0]
    assert (fc["Host"], fc["Port"]) == ("127.0.0.1", 40001 + fc["NodeId"])
    default = answer(Cluster(brokers=2).handle(frame("Metadata", 12, METADATA_ALL)), "Metadata", 12)["body"]
    assert [(b["Host"], b["Port"]) for b in default["Brokers"]] == [("broker-0", 9092), ("broker-1", 9092)]


# ---- 2. acks=0: no response ----------------------------------------------------------------------
def test_acks_0_produce_is_appended_and_never_answered():
    c = Cluster()
    c.create_topic("t")
    assert c.dispatch(frame("Produce", 9, produce_body("t", [b"a", b"b"], acks=0))) == ("none", b"")
    assert c.topics.partition("t", 0).log_end_offset == 2
    assert "acks=0" in c.events[-1].text
    # with an error Kafka closes the connection instead (the client then refreshes its metadata)
    assert c.dispatch(frame("Produce", 9, produce_body("nope", [b"x"], acks=0))) == ("close", b"")
    assert "connection closed" in c.events[-1].text
    kind, out = c.dispatch(frame("Produce", 9, produce_body("t", [b"c"], acks=1)))
    assert kind == "send" and answer(out, "Produce", 9)["body"]["Responses"][0]["PartitionResponses"][0]["BaseOffset"] == 2


# ---- 3. trailing bytes are ignored -------------------------------------------------------------------
def test_bytes_after_the_body_are_ignored_like_librdkafkas_metadata_v12():
    c = Cluster()
    good = frame("Metadata", 12, METADATA_ALL, cid=41)
    padded = good[4:] + b"\x00\x00\x01"                # librdkafka's all-topics Metadata leaves 3 bytes
    kind, out = c.dispatch(struct.pack(">i", len(padded)) + padded)
    assert kind == "send" and answer(out, "Metadata", 12)["correlation_id"] == 41
    assert c.internal_errors == []


# ---- 4. Fetch / ShareFetch long polling --------------------------------------------------------------
def test_fetch_with_nothing_to_return_is_held_until_a_produce_wakes_it():
    c = Cluster(long_poll=True)
    c.create_topic("t")
    assert c.dispatch(frame("Fetch", 12, fetch_body("t"), cid=3), client="consumer") == ("held", b"")
    assert c.take_completed() == []
    c.dispatch(frame("Produce", 9, produce_body("t", [b"x"])), client="producer")
    done = c.take_completed()
    assert [(cl, b) for cl, b, _ in done] == [("consumer", 0)]
    resp = answer(done[0][2], "Fetch", 12)
    assert resp["correlation_id"] == 3
    recs = resp["body"]["Responses"][0]["Partitions"][0]["Records"]
    assert [r["value"] for bt in read_batches(recs) for r in bt["records"]] == [b"x"]


def test_a_held_fetch_is_answered_empty_when_max_wait_passes_on_the_virtual_clock():
    c = Cluster(long_poll=True)
    c.create_topic("t")
    assert c.dispatch(frame("Fetch", 12, fetch_body("t", wait=500)))[0] == "held"
    c.advance(499)
    assert c.take_completed() == []
    c.advance(1)
    (_, _, out), = c.take_completed()
    assert answer(out, "Fetch", 12)["body"]["Responses"][0]["Partitions"][0]["Records"] == b""
    # without long polling (the scenarios) and with MaxWaitMs 0 the answer is immediate
    assert Cluster().dispatch(frame("Fetch", 12, fetch_body("nope")))[0] == "send"
    assert c.dispatch(frame("Fetch", 12, fetch_body("t", wait=0)))[0] == "send"


def test_a_closed_connection_drops_its_held_fetch():
    c = Cluster(long_poll=True)
    c.create_topic("t")
    c.dispatch(frame("Fetch", 12, fetch_body("t")), client="gone")
    c.connection_closed("gone", 0)
    c.dispatch(frame("Produce", 9, produce_body("t", [b"x"])), client="p")
    assert c.take_completed() == []


def share_hb(c, member, broker=0):
    return c.call("ShareGroupHeartbeat", 1, {"GroupId": "sg", "MemberId": member, "MemberEpoch": 0,
                                             "RackId": None, "SubscribedTopicNames": ["t"]}, broker=broker)


def share_fetch_body(tid, epoch, partition=0, wait=0, member="m1"):
    return {"GroupId": "sg", "MemberId": member, "ShareSessionEpoch": epoch, "MaxWaitMs": wait, "MinBytes": 1,
            "MaxBytes": 1 << 20, "MaxRecords": 100, "BatchSize": 100, "ForgottenTopicsData": [],
            "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": partition, "AcknowledgementBatches": []}]}]}


def test_share_fetch_with_nothing_acquirable_is_held_and_woken_by_a_produce():
    c = Cluster(long_poll=True, share_auto_offset_reset="earliest")
    tid = c.create_topic("t")
    share_hb(c, "m1")
    assert c.dispatch(frame("ShareFetch", 1, share_fetch_body(tid, 0, wait=1000)), client="sc")[0] == "held"
    c.dispatch(frame("Produce", 9, produce_body("t", [b"a", b"b"])), client="p")
    (client, _, out), = c.take_completed()
    pr = answer(out, "ShareFetch", 1)["body"]["Responses"][0]["Partitions"][0]
    assert client == "sc" and pr["AcquiredRecords"] == [{"FirstOffset": 0, "LastOffset": 1, "DeliveryCount": 1}]


# ---- 5. share sessions per broker --------------------------------------------------------------------
def test_a_share_member_has_one_session_per_broker_like_kafkas_share_session_cache():
    c = Cluster(brokers=2, share_auto_offset_reset="earliest")
    tid = c.create_topic("t", 2)
    leaders = {p: c.topics.partition("t", p).leader for p in (0, 1)}
    assert sorted(leaders.values()) == [0, 1]
    share_hb(c, "m1")
    for epoch in (0, 1, 2):                  # each broker counts its own session epoch
        for p, broker in leaders.items():
            r = c.call("ShareFetch", 1, share_fetch_body(tid, epoch, partition=p), broker=broker)
            assert r["ErrorCode"] == 0, (epoch, p, r)
            assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == 0
    # closing the session on one broker leaves the other one open
    assert c.call("ShareFetch", 1, share_fetch_body(tid, -1, partition=0), broker=leaders[0])["ErrorCode"] == 0
    assert c.call("ShareFetch", 1, share_fetch_body(tid, 3, partition=1), broker=leaders[1])["ErrorCode"] == 0
    r = c.call("ShareFetch", 1, share_fetch_body(tid, 3, partition=0), broker=leaders[0])
    assert r["ErrorCode"] == CODE["SHARE_SESSION_NOT_FOUND"]


# ---- 6. share.auto.offset.reset ----------------------------------------------------------------------
def test_a_new_share_group_starts_at_latest_by_default_and_earliest_when_configured():
    for reset, first in (("latest", 3), ("earliest", 0)):
        c = Cluster(**({} if reset == "latest" else {"share_auto_offset_reset": reset}))
        assert c.config.share_auto_offset_reset == reset
        tid = c.create_topic("t")
        c.call("Produce", 9, produce_body("t", [b"old1", b"old2", b"old3"]))
        share_hb(c, "m1")
        r = c.call("ShareFetch", 1, share_fetch_body(tid, 0))
        got = r["Responses"][0]["Partitions"][0]["AcquiredRecords"]
        if reset == "latest":
            assert got == []
            c.call("Produce", 9, produce_body("t", [b"new"]))
            got = c.call("ShareFetch", 1, share_fetch_body(tid, 1))["Responses"][0]["Partitions"][0]["AcquiredRecords"]
        assert got[0]["FirstOffset"] == first
    c = Cluster(share_group_offset_reset={"sg": "earliest"})
    assert c.config.share_offset_reset("sg") == "earliest" and c.config.share_offset_reset("other") == "latest"


# ---- 7. OffsetForLeaderEpoch -------------------------------------------------------------------------
def test_offset_for_leader_epoch_answers_the_current_epochs_end_offset():
    c = Cluster(brokers=2)
    c.create_topic("t", 2)
    c.call("Produce", 9, produce_body("t", [b"a", b"b"]), broker=c.topics.partition("t", 0).leader)
    log0, log1 = c.topics.partition("t", 0), c.topics.partition("t", 1)
    body = {"ReplicaId": -1, "Topics": [{"Topic": "t", "Partitions": [
        {"Partition": 0, "CurrentLeaderEpoch": log0.leader_epoch, "LeaderEpoch": log0.leader_epoch},
        {"Partition": 1, "CurrentLeaderEpoch": -1, "LeaderEpoch": 0}]}]}
    r = c.call("OffsetForLeaderEpoch", 4, body, broker=log0.leader)
    p0, p1 = r["Topics"][0]["Partitions"]
    assert (p0["ErrorCode"], p0["LeaderEpoch"], p0["EndOffset"]) == (0, log0.leader_epoch, 2)
    assert p1["ErrorCode"] == (0 if log1.leader == log0.leader else CODE["NOT_LEADER_OR_FOLLOWER"])
    body["Topics"][0]["Partitions"] = [{"Partition": 0, "CurrentLeaderEpoch": log0.leader_epoch + 1, "LeaderEpoch": 0}]
    r = c.call("OffsetForLeaderEpoch", 4, body, broker=log0.leader)
    assert r["Topics"][0]["Partitions"][0]["ErrorCode"] == CODE["UNKNOWN_LEADER_EPOCH"]
    assert c.internal_errors == []


# ---- 8. bounded events -------------------------------------------------------------------------------
def test_events_are_bounded_and_spill_in_order_when_configured():
    spilled = []
    c = Cluster(events_max=50, events_spill=spilled.extend)
    c.create_topic("t")
    for i in range(100):
        c.call("Produce", 9, produce_body("t", [b"%d" % i]))
    assert 0 < len(c.events) <= 50
    seqs = [e.seq for e in spilled] + [e.seq for e in c.events]
    assert seqs == list(range(len(seqs))) and c.next_seq == len(seqs)
    unbounded = Cluster()
    unbounded.create_topic("t")
    for i in range(100):
        unbounded.call("Produce", 9, produce_body("t", [b"%d" % i]))
    assert len(unbounded.events) == len(seqs)


# ---- 7. DescribeConfigs ------------------------------------------------------------------------------
def test_describe_configs_for_a_topic_a_broker_and_a_group():
    c = Cluster(brokers=2, share_group_offset_reset={"sg": "earliest"})
    c.create_topic("t")
    body = {"Resources": [{"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": None},
                          {"ResourceType": 2, "ResourceName": "nope", "ConfigurationKeys": None},
                          {"ResourceType": 4, "ResourceName": "1", "ConfigurationKeys": ["broker.id", "num.partitions"]},
                          {"ResourceType": 4, "ResourceName": "0", "ConfigurationKeys": None},
                          {"ResourceType": 32, "ResourceName": "sg", "ConfigurationKeys": ["share.auto.offset.reset"]},
                          {"ResourceType": 32, "ResourceName": "other", "ConfigurationKeys": ["share.auto.offset.reset"]},
                          {"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": []}],
            "IncludeSynonyms": False, "IncludeDocumentation": False}
    for v in (1, 4):
        topic, unknown, broker, other, group, default_group, empty = c.call("DescribeConfigs", v, body,
                                                                            broker=1)["Results"]
        assert empty["Configs"] == topic["Configs"] and len(topic["Configs"]) > 3     # [] lists every setting
        assert topic["ErrorCode"] == 0 and {x["Name"]: x["Value"] for x in topic["Configs"]}["cleanup.policy"] == "delete"
        assert unknown["ErrorCode"] == CODE["UNKNOWN_TOPIC_OR_PARTITION"]
        assert [(x["Name"], x["Value"]) for x in broker["Configs"]] == [("broker.id", "1"), ("num.partitions", "1")]
        assert other["ErrorCode"] == CODE["INVALID_REQUEST"] and "Unexpected broker id" in other["ErrorMessage"]
        assert [(x["Value"], x["ConfigSource"]) for x in group["Configs"]] == [("earliest", 8)]
        assert [(x["Value"], x["ConfigSource"]) for x in default_group["Configs"]] == [("latest", 5)]
        # an unknown resource type fails the whole request (ConfigHelper.handleDescribeConfigsRequest throws
        # while it sorts the resources; KafkaApis answers getErrorResponse for every one)
        mixed = dict(body, Resources=body["Resources"][:1] + [{"ResourceType": 99, "ResourceName": "x",
                                                               "ConfigurationKeys": None}])
        assert {r["ErrorCode"] for r in c.call("DescribeConfigs", v, mixed, broker=1)["Results"]} == {
            CODE["INVALID_REQUEST"]}
    assert c.internal_errors == []
