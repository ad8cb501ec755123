"""DeleteGroups v0-3 (api key 42) through real frames: empty groups and their offsets go (tombstones
in __consumer_offsets), groups with members stay (NON_EMPTY_GROUP), plus the front-door errors."""
from __future__ import annotations

import struct

import pytest

from kipviz import codec
from kipviz.broker import Acl, Cluster, served_versions
from kipviz.broker.groups.model import shape
from kipviz.schema.error_codes import CODE


def call(c, api, version, body, broker=None, principal="User:ANONYMOUS"):
    if broker is None:
        broker = c.coordinator_broker(0, body.get("GroupId") or (body.get("GroupsNames") or ["g"])[0])
    frame = codec.encode_request(api, version, shape(api + "Request", version, body), correlation_id=3)
    out = c.handle(frame, broker=broker, principal=principal)
    return codec.decode_response(out, api, version)["body"]


def classic_member(c, gid="g"):
    proto = [{"Name": "range", "Metadata": b""}]
    j = call(c, "JoinGroup", 9, {"GroupId": gid, "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000,
                                 "MemberId": "", "ProtocolType": "consumer", "Protocols": proto})
    j = call(c, "JoinGroup", 9, {"GroupId": gid, "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000,
                                 "MemberId": j["MemberId"], "ProtocolType": "consumer", "Protocols": proto})
    call(c, "SyncGroup", 5, {"GroupId": gid, "GenerationId": j["GenerationId"], "MemberId": j["MemberId"],
                             "ProtocolType": "consumer", "ProtocolName": "range",
                             "Assignments": [{"MemberId": j["MemberId"], "Assignment": b""}]})
    return j


def commit(c, gid, gen, member, offsets):
    call(c, "OffsetCommit", 9, {"GroupId": gid, "GenerationIdOrMemberEpoch": gen, "MemberId": member,
                                "Topics": [{"Name": t, "Partitions": [{"PartitionIndex": p, "CommittedOffset": o}]}
                                           for (t, p), o in offsets.items()]})


def delete(c, version, *groups, **kw):
    return {r["GroupId"]: r for r in call(c, "DeleteGroups", version, {"GroupsNames": list(groups)}, **kw)["Results"]}


def test_served_versions_per_release():
    assert served_versions("DeleteGroups", Cluster().config) == (0, 3)
    assert served_versions("DeleteGroups", Cluster(release="4.3").config) == (0, 2)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_non_empty_then_empty_then_gone_with_offset_tombstones(version):
    c = Cluster()
    c.create_topic("t", 2)
    j = classic_member(c)
    commit(c, "g", j["GenerationId"], j["MemberId"], {("t", 0): 5, ("t", 1): 7})
    r = delete(c, version, "g")["g"]
    assert r["ErrorCode"] == CODE["NON_EMPTY_GROUP"] and c.groups.group_state("g") == "Stable"
    assert (r.get("ErrorMessage") is not None) == (version >= 3)
    call(c, "LeaveGroup", 5, {"GroupId": "g", "Members": [{"MemberId": j["MemberId"]}]})
    assert c.groups.group_state("g") == "Empty"
    mark = len(c.events)
    r = delete(c, version, "g")["g"]
    assert r["ErrorCode"] == 0 and r.get("ErrorMessage") is None
    assert c.groups.group_state("g") is None and c.groups.committed("g", "t", 0) is None
    appended = [e for e in c.events[mark:] if e.kind == "RecordAppended" and e.topic == "__consumer_offsets"]
    assert [(e.value is None) for e in appended] == [True] * len(appended) and len(appended) == 3
    keys = [e.key for e in appended]
    assert keys[0][:2] == keys[1][:2] == struct.pack(">h", 1) and keys[2][:2] == struct.pack(">h", 2)
    assert delete(c, version, "g")["g"]["ErrorCode"] == CODE["GROUP_ID_NOT_FOUND"]


def test_empty_consumer_group_with_offsets_is_deleted():
    c = Cluster()
    c.create_topic("t", 1)
    hb = call(c, "ConsumerGroupHeartbeat", 0, {"GroupId": "cg", "MemberId": "", "MemberEpoch": 0,
                                               "RebalanceTimeoutMs": 30000, "SubscribedTopicNames": ["t"],
                                               "TopicPartitions": []})
    assert hb["ErrorCode"] == 0
    commit(c, "cg", hb["MemberEpoch"], hb["MemberId"], {("t", 0): 3})
    assert delete(c, 3, "cg")["cg"]["ErrorCode"] == CODE["NON_EMPTY_GROUP"]
    call(c, "ConsumerGroupHeartbeat", 0, {"GroupId": "cg", "MemberId": hb["MemberId"], "MemberEpoch": -1})
    assert c.groups.group_state("cg") == "Empty"
    assert delete(c, 3, "cg")["cg"]["ErrorCode"] == 0
    assert c.groups.group_state("cg") is None and c.groups.committed("cg", "t", 0) is None


def test_front_door_errors():
    c = Cluster(brokers=3, acls=[Acl("User:alice", "GROUP", "*", "DELETE")])
    gid = "my-group"
    right = c.coordinator_broker(0, gid)
    wrong = (right + 1) % 3
    assert delete(c, 3, gid, broker=wrong, principal="User:alice")[gid]["ErrorCode"] == CODE["NOT_COORDINATOR"]
    assert delete(c, 3, gid, broker=right, principal="User:bob")[gid]["ErrorCode"] == \
        CODE["GROUP_AUTHORIZATION_FAILED"]
    assert delete(c, 3, gid, broker=right, principal="User:alice")[gid]["ErrorCode"] == CODE["GROUP_ID_NOT_FOUND"]


def test_v3_response_layout_by_hand():
    c = Cluster()
    out = c.handle(codec.encode_request("DeleteGroups", 3, {"GroupsNames": ["x"]}, correlation_id=7))
    # response header v1 (flexible): correlation id + no tags; body: throttle 0, compact array of 1,
    # GroupId "x", ErrorCode 69 (GROUP_ID_NOT_FOUND), ErrorMessage "Group x not found.", no tags x2
    msg = b"Group x not found."
    body = struct.pack(">i", 0) + b"\x02" + b"\x02x" + struct.pack(">h", 69) + bytes([len(msg) + 1]) + msg + b"\x00"
    assert out[4:] == struct.pack(">i", 7) + b"\x00" + body + b"\x00"
