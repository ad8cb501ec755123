"""Share groups (KIP-932) against SharePartition.java: record states, delivery count, locks, SPSO,
sessions, persisted state. Driven through Cluster.call (real encoded frames)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz.broker import Cluster
from kipviz.broker.machine import Machine
from kipviz.broker.tables import share_record as sr
from kipviz.clients.share_consumer import ShareConsumer
from kipviz.records import decode_internal, share_coordinator_partition
from kipviz.schema.error_codes import CODE
from kipviz.schema.events import StateChanged

G = "sg"


def setup(n=5, **cfg):
    c = Cluster(seed=3, **{"share_auto_offset_reset": "earliest", **cfg})   # Kafka default: latest
    tid = c.create_topic("t", 1)
    c.topics.partition("t", 0).append([(b"k%d" % i, b"v%d" % i) for i in range(n)], 0)
    return c, tid


def hb(c, member="m1", epoch=0, topics=("t",)):
    return c.call("ShareGroupHeartbeat", 1, {"GroupId": G, "MemberId": member, "MemberEpoch": epoch,
                                             "RackId": None, "SubscribedTopicNames": list(topics) if topics else None})


def fetch(c, tid, member="m1", epoch=0, max_records=500, acks=(), version=1):
    extra = {"ShareAcquireMode": 0, "IsRenewAck": False} if version >= 2 else {}
    return c.call("ShareFetch", version, {**extra,
        "GroupId": G, "MemberId": member, "ShareSessionEpoch": epoch, "MaxWaitMs": 0, "MinBytes": 1,
        "MaxBytes": 1 << 20, "MaxRecords": max_records, "BatchSize": max_records,
        "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": list(acks)}]}],
        "ForgottenTopicsData": []})


def ack(c, tid, batches, member="m1", epoch=1, version=1):
    extra = {"IsRenewAck": False} if version >= 2 else {}
    return c.call("ShareAcknowledge", version, {**extra,
        "GroupId": G, "MemberId": member, "ShareSessionEpoch": epoch,
        "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": batches}]}]})


def acquired(resp):
    return resp["Responses"][0]["Partitions"][0]["AcquiredRecords"]


def sp(c, tid):
    return c.shares.partitions[(G, tid, 0)]


def states(c, tid):
    p = sp(c, tid)
    return {o: (r.state, r.delivery_count, r.member) for o, r in p.records.items()}


def b(first, last, t):
    return {"FirstOffset": first, "LastOffset": last, "AcknowledgeTypes": [t]}


def test_released_rows_match_validate_transition():
    released = [r for r in sr.TABLE.rows if r.status == "released"]
    moves = {(r.from_state, r.to_state) for r in released}
    assert moves == {("AVAILABLE", "ACQUIRED"), ("ACQUIRED", "AVAILABLE"), ("ACQUIRED", "ACKNOWLEDGED"),
                     ("ACQUIRED", "ARCHIVED")}
    assert all(r.from_state != r.to_state for r in released)
    assert not any(r.from_state in ("ACKNOWLEDGED", "ARCHIVED") for r in sr.TABLE.rows)
    assert sr.STATE_IDS == {"AVAILABLE": 0, "ACQUIRED": 1, "ACKNOWLEDGED": 2, "ARCHIVED": 4}
    assert sr.ACK_EVENTS == {0: "gap", 1: "accept", 2: "release", 3: "reject"}


def test_kip1289_rows_proposed_and_disabled_at_share_version_1():
    prop = {(r.from_state, r.event, r.to_state) for r in sr.TABLE.rows if r.status == "proposed"}
    assert prop == {("ACQUIRED", "txn-stage", "TX_PENDING"), ("TX_PENDING", "txn-commit-accept", "ACKNOWLEDGED"),
                    ("TX_PENDING", "txn-commit-reject", "ARCHIVED"), ("TX_PENDING", "txn-abort", "ACQUIRED"),
                    ("TX_PENDING", "lock-expired", "ACQUIRED")}
    assert all(r.kip == "KIP-1289" for r in sr.TABLE.rows if r.status == "proposed")
    m1 = Machine(sr.TABLE, "k", lambda **_: None, enabled=sr.enabled(False), state="ACQUIRED")
    assert not m1.can("txn-stage")
    m2 = Machine(sr.TABLE, "k", lambda **_: None, enabled=sr.enabled(True), state="ACQUIRED")
    assert m2.can("txn-stage") and m2.fire("txn-stage") == "TX_PENDING"


def test_acquisition_sets_delivery_count_1_and_reacquisition_adds_1():
    c, tid = setup(3)
    hb(c)
    r = fetch(c, tid)
    assert acquired(r) == [{"FirstOffset": 0, "LastOffset": 2, "DeliveryCount": 1}]
    assert r["AcquisitionLockTimeoutMs"] == 30000
    assert ack(c, tid, [b(0, 2, 2)])["Responses"][0]["Partitions"][0]["ErrorCode"] == 0
    r = fetch(c, tid, epoch=2)
    assert acquired(r) == [{"FirstOffset": 0, "LastOffset": 2, "DeliveryCount": 2}]
    assert not c.internal_errors


def test_a_fetch_moves_its_new_records_in_offset_order_with_consecutive_seqs():
    c, tid = setup(5)
    hb(c)
    fetch(c, tid, max_records=3)
    moves = [e for e in c.events if isinstance(e, StateChanged) and e.machine == "share-record"]
    assert [(e.key, e.from_state, e.to_state, e.cause) for e in moves] == [
        (f"{G}/t-0@{o}", "AVAILABLE", "ACQUIRED", "acquire") for o in range(3)]
    assert [e.seq for e in moves] == [moves[0].seq + i for i in range(3)]
    assert states(c, tid) == {o: ("ACQUIRED", 1, "m1") for o in range(3)}
    assert sp(c, tid).end == 3 and not c.internal_errors


def test_fifth_release_or_timeout_archives_at_default_limit_5():
    c, tid = setup(1)
    hb(c)
    epoch = 0
    for i in range(1, 6):
        r = fetch(c, tid, epoch=epoch)
        epoch = epoch + 1
        assert acquired(r) == [{"FirstOffset": 0, "LastOffset": 0, "DeliveryCount": i}]
        if i % 2:
            c.advance(30000)                # timeout
            hb(c, epoch=1, topics=None)     # stay in the group (45 s session timeout)
        else:
            assert ack(c, tid, [b(0, 0, 2)], epoch=epoch)["Responses"][0]["Partitions"][0]["ErrorCode"] == 0
            epoch += 1
    assert sp(c, tid).spso == 1 and not sp(c, tid).records     # ARCHIVED, then past the SPSO
    last = [e for e in c.events if isinstance(e, StateChanged)][-1]
    assert (last.to_state, last.cause) == ("ARCHIVED", "lock-expired-at-limit")
    assert acquired(fetch(c, tid, epoch=epoch)) == []


def test_lock_expiry_after_30000_ms_returns_records_available_member_cleared():
    c, tid = setup(2)
    hb(c)
    fetch(c, tid)
    c.advance(29999)
    assert states(c, tid)[0][0] == "ACQUIRED"
    c.advance(1)
    assert states(c, tid) == {0: ("AVAILABLE", 1, sp(c, tid).records[0].member)} | {1: states(c, tid)[1]}
    assert all(s == "AVAILABLE" and m == "AAAAAAAAAAAAAAAAAAAAAA" for s, _, m in states(c, tid).values())


def test_ack_by_other_member_or_non_acquired_is_invalid_record_state_all_or_nothing():
    c, tid = setup(4)
    hb(c)
    hb(c, "m2")
    fetch(c, tid, max_records=2)                       # m1 holds 0-1
    fetch(c, tid, member="m2", max_records=1)          # m2 holds 2; 3 not cached
    before = states(c, tid)
    r = ack(c, tid, [b(0, 0, 1), b(2, 2, 1)])          # 0 fine, 2 belongs to m2
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_RECORD_STATE"]
    assert states(c, tid) == before
    r = ack(c, tid, [b(0, 0, 1)], member="m2")
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_RECORD_STATE"]
    c.advance(30000)
    r = ack(c, tid, [b(0, 0, 1)], epoch=2)             # timed out: no longer acquired
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_RECORD_STATE"]
    r = ack(c, tid, [b(0, 0, 9)], epoch=3)
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_REQUEST"]
    r = ack(c, tid, [b(0, 9, 1)], epoch=4)             # past the last cached offset
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_REQUEST"]
    assert not c.internal_errors


def test_renew_type_4_only_at_v2():
    c, tid = setup(1)
    hb(c)
    fetch(c, tid, version=2)
    r = ack(c, tid, [b(0, 0, 4)], version=1)
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_REQUEST"]
    c.advance(20000)
    r = ack(c, tid, [b(0, 0, 4)], epoch=2, version=2)
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == 0 and r["AcquisitionLockTimeoutMs"] == 30000
    c.advance(20000)                                   # the old lock expired, the renewed one holds
    assert states(c, tid)[0][0] == "ACQUIRED"


def test_spso_advances_past_terminal_runs():
    c, tid = setup(5)
    hb(c)
    fetch(c, tid)
    ack(c, tid, [b(1, 1, 1), b(2, 2, 3)])
    assert sp(c, tid).spso == 0
    ack(c, tid, [b(0, 0, 0)], epoch=2)
    assert sp(c, tid).spso == 3 and sorted(sp(c, tid).records) == [3, 4]
    ack(c, tid, [b(0, 1, 1)], epoch=3)                 # entirely below the SPSO: ignored
    assert sp(c, tid).spso == 3


def test_release_on_member_leave_and_session_close():
    c, tid = setup(2)
    hb(c)
    fetch(c, tid)
    assert hb(c, epoch=-1)["MemberEpoch"] == -1
    assert {s for s, _, _ in states(c, tid).values()} == {"AVAILABLE"}
    assert c.shares.groups[G].state == "Empty"
    hb(c, "m2")
    fetch(c, tid, member="m2")
    r = ack(c, tid, [], member="m2", epoch=-1)
    assert r["ErrorCode"] == 0
    assert {s for s, _, _ in states(c, tid).values()} == {"AVAILABLE"}
    assert fetch(c, tid, member="m2", epoch=1)["ErrorCode"] == CODE["SHARE_SESSION_NOT_FOUND"]


def test_share_session_epochs_0_open_minus1_close_plus1():
    c, tid = setup(2)
    hb(c)
    assert fetch(c, tid, epoch=1)["ErrorCode"] == CODE["SHARE_SESSION_NOT_FOUND"]
    assert fetch(c, tid, member="nobody")["ErrorCode"] == CODE["UNKNOWN_MEMBER_ID"]
    assert fetch(c, tid, epoch=0)["ErrorCode"] == 0
    assert fetch(c, tid, epoch=2)["ErrorCode"] == CODE["INVALID_SHARE_SESSION_EPOCH"]
    assert fetch(c, tid, epoch=1)["ErrorCode"] == 0
    assert ack(c, tid, [], epoch=0)["ErrorCode"] == CODE["INVALID_SHARE_SESSION_EPOCH"]
    assert ack(c, tid, [], epoch=2)["ErrorCode"] == 0
    assert fetch(c, tid, epoch=-1)["ErrorCode"] == 0
    assert ack(c, tid, [], epoch=4)["ErrorCode"] == CODE["SHARE_SESSION_NOT_FOUND"]


def test_heartbeat_errors_unknown_member_and_fenced_epoch():
    c, _ = setup(0)
    assert hb(c)["MemberEpoch"] == 1
    assert hb(c, epoch=5, topics=None)["ErrorCode"] == CODE["FENCED_MEMBER_EPOCH"]
    assert hb(c, "ghost", epoch=1, topics=None)["ErrorCode"] == CODE["UNKNOWN_MEMBER_ID"]
    assert hb(c, "m2")["MemberEpoch"] == 2
    assert hb(c, epoch=1, topics=None)["MemberEpoch"] == 2
    c.advance(45000)
    assert c.shares.groups[G].members == {}


def test_unknown_topic_id_and_not_leader_per_partition():
    c = Cluster(seed=3, brokers=2, share_auto_offset_reset="earliest")
    c.create_topic("t", 2)
    tid = c.topics.get("t").topic_id
    hb(c)
    r = c.call("ShareFetch", 1, {"GroupId": G, "MemberId": "m1", "ShareSessionEpoch": 0, "MaxWaitMs": 0,
                                 "MinBytes": 1, "MaxBytes": 1, "MaxRecords": 5, "BatchSize": 5,
                                 "Topics": [{"TopicId": tid, "Partitions": [
                                     {"PartitionIndex": 1, "AcknowledgementBatches": []}]}],
                                 "ForgottenTopicsData": []}, broker=0)
    pr = r["Responses"][0]["Partitions"][0]
    assert pr["ErrorCode"] == CODE["NOT_LEADER_OR_FOLLOWER"] and pr["CurrentLeader"]["LeaderId"] == 1
    c.delete_topic("t")
    r = fetch(c, tid, epoch=1)
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["UNKNOWN_TOPIC_ID"]
    assert not c.internal_errors


def test_share_snapshot_and_update_land_in_share_coordinator_partition_and_decode():
    c, tid = setup(3)
    hb(c)
    fetch(c, tid)
    ack(c, tid, [b(0, 0, 1), b(1, 1, 3)])
    p = share_coordinator_partition(G, tid, 0, 50)
    log = c.topics.partition("__share_group_state", p)
    decoded = [decode_internal(e.key, e.value, "__share_group_state") for e in log.entries]
    assert len(decoded) == 2
    txt = [str(d) for d in decoded]
    assert "ShareSnapshot" in txt[0] and "ShareUpdate" in txt[1]
    assert "'StartOffset': 2" in txt[1] and "'DeliveryState': 2" in txt[1] and "'DeliveryState': 4" in txt[1]
    others = [q for q in range(50) if q != p and c.topics.partition("__share_group_state", q).entries]
    assert others == []


def test_list_groups_v5_types_filter_share():
    c, _ = setup(0)
    hb(c)
    r = c.call("ListGroups", 5, {"StatesFilter": [], "TypesFilter": ["share"]})
    assert r["Groups"] == [{"GroupId": G, "ProtocolType": "share", "GroupState": "Stable", "GroupType": "share"}]
    r = c.call("ListGroups", 5, {"StatesFilter": [], "TypesFilter": ["consumer"]})
    assert r["Groups"] == []


def test_share_group_describe():
    c, tid = setup(0)
    hb(c)
    r = c.call("ShareGroupDescribe", 1, {"GroupIds": [G, "nope"], "IncludeAuthorizedOperations": False})
    g, missing = r["Groups"]
    assert g["GroupState"] == "Stable" and g["Members"][0]["Assignment"]["TopicPartitions"][0]["TopicName"] == "t"
    assert missing["ErrorCode"] == CODE["GROUP_ID_NOT_FOUND"]


def test_read_committed_archives_aborted_records():
    c, tid = setup(0)
    log = c.topics.partition("t", 0)
    log.append([(b"a", b"1"), (b"b", b"2")], 0, producer_id=7, producer_epoch=0, transactional=True)
    log.append_marker("ABORT", 0, 7, 0)
    log.append([(b"c", b"3")], 0)
    c.shares.isolation = {G: 1}
    hb(c)
    r = fetch(c, tid)
    assert acquired(r) == [{"FirstOffset": 2, "LastOffset": 3, "DeliveryCount": 1}]
    assert sp(c, tid).spso == 2
    ack(c, tid, [b(2, 2, 0), b(3, 3, 1)])              # marker acked as a gap
    assert sp(c, tid).spso == 4


def test_share_consumer_poll_ack_commit_close():
    c, tid = setup(3)
    sc = ShareConsumer(c, G)
    sc.subscribe(["t"])
    recs = sc.poll()
    assert [r.value for r in recs] == [b"v0", b"v1", b"v2"] and recs[0].delivery_count == 1
    md = sc.share_group_metadata()
    assert md["group_id"] == G and md["member_epoch"] == 1
    sc.acknowledge(recs[0], 1)
    sc.acknowledge(recs[1], 3)
    assert sc.commit_sync()["ErrorCode"] == 0
    sc.close()
    assert sp(c, tid).spso == 2 and states(c, tid)[2][0] == "AVAILABLE"
    assert c.shares.groups[G].members == {} and not c.internal_errors


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["fetch", "ack", "advance", "leave", "close"]),
                          st.sampled_from(["m1", "m2"]), st.integers(0, 6), st.integers(0, 6),
                          st.integers(0, 4)), max_size=25))
def test_random_share_sequences_never_raise_and_follow_table(ops):
    c, tid = setup(6)
    epochs = {"m1": 0, "m2": 0}
    for m in epochs:
        hb(c, m)
    for op, m, x, y, t in ops:
        if op == "fetch":
            r = fetch(c, tid, member=m, epoch=epochs[m], max_records=x + 1,
                      acks=[b(min(x, y), max(x, y), t)] if t < 4 and epochs[m] else [], version=2)
            if r["ErrorCode"] == 0:
                epochs[m] += 1
            else:
                epochs[m] = 0
        elif op == "ack":
            r = ack(c, tid, [b(min(x, y), max(x, y), t)], member=m, epoch=epochs[m], version=2)
            if r["ErrorCode"] == 0:
                epochs[m] += 1
        elif op == "advance":
            c.advance(x * 7000)
        elif op == "close":
            ack(c, tid, [], member=m, epoch=-1)
            epochs[m] = 0
        else:
            g = c.shares.groups[G]
            if m in g.members:
                hb(c, m, epoch=-1, topics=None)
            hb(c, m)
            epochs[m] = 0
        if not c.shares.groups[G].members.get(m):
            hb(c, m)
    assert c.internal_errors == []
    for e in c.events:
        if isinstance(e, StateChanged) and e.machine == "share-record":
            assert any(r.from_state == e.from_state and r.event == e.cause and r.to_state == e.to_state
                       and r.status == "released" for r in sr.TABLE.rows)
    if (G, tid, 0) in c.shares.partitions:
        assert all(1 <= r.delivery_count <= 5 or r.state == "AVAILABLE" and r.delivery_count == 0
                   for r in sp(c, tid).records.values())
