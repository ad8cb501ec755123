"""KIP-1289 (PROPOSED, voting; docs/facts.md#kip-1289s-draft-semantics): share-group
acknowledgements inside a producer transaction. Everything goes through real frames
(Cluster.call / the producer and share-consumer models); every TX_PENDING move must be labelled
"proposed"."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz.broker import Cluster
from kipviz.broker.share_metrics import metrics, time_series
from kipviz.broker.share_txn import OPERATION_NOT_ATTEMPTED, pending
from kipviz.clients.producer import Producer
from kipviz.clients.producer_errors import (
    AbortableError,
    CommitFailedError,
    ProducerFencedError,
    UnsupportedVersionError,
)
from kipviz.clients.share_consumer import ShareConsumer
from kipviz.records import decode_internal, share_coordinator_partition
from kipviz.schema.error_codes import CODE

G = "sg"


def setup(parts=1, n=4, **cfg):
    cfg.setdefault("share_version", 2)
    c = Cluster(seed=3, **{"share_auto_offset_reset": "earliest", **cfg})   # Kafka default: latest
    tid = c.create_topic("in", parts)
    c.create_topic("out", 1)
    for p in range(parts):
        c.topics.partition("in", p).append([(b"k%d" % i, b"v%d" % i) for i in range(n)], 0)
    sc = ShareConsumer(c, G, client_id="worker")
    sc.subscribe(["in"])
    recs = sc.poll()
    assert len(recs) == parts * n
    pr = Producer(c, "tx", client_id="app")
    pr.init_transactions()
    pr.begin_transaction()
    return c, tid, sc, pr


def body(pr, sc, tid, batches_by_part, member_epoch=None, pid=None, epoch=None):
    return {"TransactionalId": "tx", "GroupId": G,
            "ProducerId": pr.producer_id if pid is None else pid,
            "ProducerEpoch": pr.producer_epoch if epoch is None else epoch,
            "MemberId": sc.member_id, "MemberEpoch": sc.member_epoch if member_epoch is None else member_epoch,
            "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": p, "AcknowledgementBatches": bs}
                                                      for p, bs in batches_by_part.items()]}]}


def stage(c, *args, **kw):
    return c.call("TxnShareAcknowledge", 0, body(*args, **kw))


def b(first, last, *types):
    return {"FirstOffset": first, "LastOffset": last, "AcknowledgeTypes": list(types)}


def states(c, tid, p=0):
    sp = c.shares.partitions[(G, tid, p)]
    return {o: r.state for o, r in sp.records.items()}, sp.spso


def record_moves(c):
    return [e for e in c.events if e.kind == "StateChanged" and e.machine == "share-record"]


def assert_proposed_labels(c):
    """Every StateChanged into or out of TX_PENDING carries status "proposed"; no others do."""
    for e in record_moves(c):
        touches = "TX_PENDING" in (e.from_state, e.to_state)
        assert (e.status == "proposed") == touches, e
    assert c.internal_errors == []


def marker(c, pid, epoch, commit, state_partition):
    return c.call("WriteTxnMarkers", 1, {"Markers": [{
        "ProducerId": pid, "ProducerEpoch": epoch, "TransactionResult": commit, "CoordinatorEpoch": 0,
        "Topics": [{"Name": "__share_group_state", "PartitionIndexes": [state_partition]}]}]})


def state_partition(c, tid, p=0):
    return share_coordinator_partition(G, tid, p, c.config.share_state_topic_partitions)


# ---- happy paths ---------------------------------------------------------------------------------
def test_commit_moves_accept_to_acknowledged_reject_to_archived_and_output_is_read_committed_visible():
    c, tid, sc, pr = setup()
    pr.send("out", b"k", b"result")
    acks = {("in", 0): [(0, 1), (1, 1), (2, 3)]}
    pr.send_share_acknowledgements_to_transaction(acks, sc.share_group_metadata())
    st_, _ = states(c, tid)
    assert [st_[o] for o in range(4)] == ["TX_PENDING"] * 3 + ["ACQUIRED"]
    assert ("__share_group_state", state_partition(c, tid)) in c.txns.describe("tx")["partitions"]
    assert c.topics.partition("out", 0).visible(1) == []          # not committed yet
    pr.commit_transaction()
    finals = {e.key: (e.to_state, e.cause) for e in record_moves(c) if e.from_state == "TX_PENDING"}
    assert finals == {f"{G}/in-0@0": ("ACKNOWLEDGED", "txn-commit-accept"),
                      f"{G}/in-0@1": ("ACKNOWLEDGED", "txn-commit-accept"),
                      f"{G}/in-0@2": ("ARCHIVED", "txn-commit-reject")}
    assert states(c, tid) == ({3: "ACQUIRED"}, 3)                 # SPSO moved past the terminal ones
    assert [e.value for e in c.topics.partition("out", 0).visible(1)] == [b"result"]
    # the outcome is persisted as a ShareUpdate (ACKNOWLEDGED 2, ARCHIVED 4)
    upd = [e for e in c.events if e.kind == "RecordAppended" and e.topic == "__share_group_state"
           and e.record.get("type") == "ShareUpdate"]
    assert upd and decode_internal(upd[-1].key, upd[-1].value)["value"]["StateBatches"] == [
        {"FirstOffset": 0, "LastOffset": 1, "DeliveryState": 2, "DeliveryCount": 1},
        {"FirstOffset": 2, "LastOffset": 2, "DeliveryState": 4, "DeliveryCount": 1}]
    assert pending(c) == []
    assert_proposed_labels(c)


def test_abort_returns_staged_records_to_acquired_for_the_same_member_and_they_can_be_acknowledged_again():
    c, tid, sc, pr = setup()
    pr.send("out", b"k", b"result")
    pr.send_share_acknowledgements_to_transaction({(tid, 0): {0: 1, 1: 3}}, sc.share_group_metadata())
    pr.abort_transaction()
    st_, spso = states(c, tid)
    assert st_ == {o: "ACQUIRED" for o in range(4)} and spso == 0
    sp = c.shares.partitions[(G, tid, 0)]
    assert {sp.records[o].member for o in (0, 1)} == {sc.member_id}
    assert c.topics.partition("out", 0).visible(1) == []
    aborts = [e for e in record_moves(c) if e.cause == "txn-abort"]
    assert len(aborts) == 2 and all(e.to_state == "ACQUIRED" for e in aborts)
    assert [e.seq for e in aborts] == [aborts[0].seq, aborts[0].seq + 1]      # one run, in offset order
    for o in (0, 1):        # the staging is forgotten with the move out of TX_PENDING
        r = sp.records[o]
        assert (r.staged_pid, r.staged_epoch, r.staged_event, r.staged_at, r.staged_state_leader_epoch) == \
            (-1, -1, "", -1, -1)
    # re-acknowledgeable: a new transaction stages and commits them
    pr.begin_transaction()
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1), (1, 1)]}, sc.share_group_metadata())
    pr.commit_transaction()
    assert states(c, tid) == ({2: "ACQUIRED", 3: "ACQUIRED"}, 2)
    assert_proposed_labels(c)


def test_share_consumer_hands_its_pending_accept_reject_acks_to_the_producer():
    c, tid, sc, pr = setup(parts=2, n=2)
    for p in (0, 1):
        for o in (0, 1):
            sc.pending.setdefault((tid, p), {})[o] = 1 if o == 0 else 3
    sc.pending.setdefault((tid, 0), {})[5] = 0           # a gap stays with the consumer
    acks = sc.transactional_acknowledgements()
    assert acks == {(tid, 0): {0: 1, 1: 3}, (tid, 1): {0: 1, 1: 3}} and sc.pending == {(tid, 0): {5: 0}}
    pr.send_share_acknowledgements_to_transaction(acks, sc.share_group_metadata())
    pr.commit_transaction()
    assert states(c, tid, 0)[1] == 2 and states(c, tid, 1)[1] == 2
    assert_proposed_labels(c)


# ---- validation: nothing staged ----------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, 2, 4])
def test_only_accept_and_reject_are_valid_in_a_transaction_else_invalid_record_state_and_nothing_staged(bad):
    c, tid, sc, pr = setup()
    r = stage(c, pr, sc, tid, {0: [b(0, 0, 1), b(1, 1, bad)]})
    assert r["ErrorCode"] == 0
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_RECORD_STATE"]
    assert pending(c) == [] and states(c, tid)[0] == {o: "ACQUIRED" for o in range(4)}
    assert c.txns.describe("tx")["partitions"] == []                # never registered
    with pytest.raises(AbortableError) as ei:
        pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, bad)]}, sc.share_group_metadata())
    assert ei.value.code == CODE["INVALID_RECORD_STATE"] and pr.state == "ABORTABLE_ERROR"
    pr.abort_transaction()
    assert_proposed_labels(c)


def test_stale_member_epoch_is_rejected_at_staging_and_nothing_is_staged():
    c, tid, sc, pr = setup()
    gm = sc.share_group_metadata()
    other = ShareConsumer(c, G, client_id="worker-2")
    other.subscribe(["in"])
    other.heartbeat()                       # group epoch bumps
    sc.heartbeat()                          # sc moves to the new epoch: the snapshot is stale
    assert sc.member_epoch != gm["member_epoch"]
    r = stage(c, pr, sc, tid, {0: [b(0, 1, 1)]}, member_epoch=gm["member_epoch"])
    assert r["ErrorCode"] == CODE["STALE_MEMBER_EPOCH"] and r["Responses"] == []
    with pytest.raises(CommitFailedError):
        pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1)]}, gm)
    r = c.call("TxnShareAcknowledge", 0, {**body(pr, sc, tid, {0: [b(0, 1, 1)]}), "MemberId": "nobody"})
    assert r["ErrorCode"] == CODE["UNKNOWN_MEMBER_ID"]
    assert pending(c) == []
    assert_proposed_labels(c)


def test_fenced_producer_cannot_stage_and_becomes_fatal():
    c, tid, sc, pr = setup()
    zombie_epoch = pr.producer_epoch
    newer = Producer(c, "tx", client_id="app-2")
    newer.init_transactions()                       # epoch + 1 fences the first instance
    r = stage(c, pr, sc, tid, {0: [b(0, 1, 1)]}, epoch=zombie_epoch)
    assert r["ErrorCode"] == CODE["PRODUCER_FENCED"]
    r = stage(c, pr, sc, tid, {0: [b(0, 1, 1)]}, epoch=newer.producer_epoch + 5)
    assert r["ErrorCode"] == CODE["INVALID_PRODUCER_EPOCH"]
    r = stage(c, pr, sc, tid, {0: [b(0, 1, 1)]}, pid=newer.producer_id + 77, epoch=newer.producer_epoch)
    assert r["ErrorCode"] == CODE["INVALID_PRODUCER_ID_MAPPING"]
    with pytest.raises(ProducerFencedError):
        pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1)]}, sc.share_group_metadata())
    assert pr.state == "FATAL_ERROR"
    assert pending(c) == []
    assert_proposed_labels(c)


def test_all_or_nothing_across_two_partitions():
    c, tid, sc, pr = setup(parts=2, n=3)
    # partition 1: offset 2 is acknowledged by the plain path first, so it is no longer ACQUIRED
    sc.pending[(tid, 1)] = {2: 1}
    sc.commit_sync()
    before = len(c.events)
    r = stage(c, pr, sc, tid, {0: [b(0, 2, 1)], 1: [b(0, 2, 1)]})
    codes = {p["PartitionIndex"]: p["ErrorCode"] for p in r["Responses"][0]["Partitions"]}
    assert codes == {0: OPERATION_NOT_ATTEMPTED, 1: CODE["INVALID_RECORD_STATE"]}
    assert not [e for e in c.events[before:] if e.kind == "StateChanged"]      # no record, no txn moved
    assert pending(c) == [] and c.txns.describe("tx")["partitions"] == []
    assert_proposed_labels(c)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(good=st.lists(st.sampled_from([1, 3]), min_size=3, max_size=3), bad_pos=st.integers(0, 5),
       bad=st.sampled_from([0, 2, 4, 7]))
def test_all_or_nothing_any_bad_type_anywhere_stages_nothing(good, bad_pos, bad):
    c, tid, sc, pr = setup(parts=2, n=3)
    types = {0: list(good), 1: list(good)}
    types[bad_pos // 3][bad_pos % 3] = bad
    r = stage(c, pr, sc, tid, {p: [b(0, 2, *ts)] for p, ts in types.items()})
    codes = sorted(p["ErrorCode"] for p in r["Responses"][0]["Partitions"])
    assert codes == sorted([CODE["INVALID_RECORD_STATE"], OPERATION_NOT_ATTEMPTED])
    assert pending(c) == []


# ---- markers -----------------------------------------------------------------------------------
def test_duplicate_commit_marker_is_a_no_op():
    c, tid, sc, pr = setup()
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1)]}, sc.share_group_metadata())
    pid, epoch = pr.producer_id, pr.producer_epoch
    pr.commit_transaction()
    n_moves = len(record_moves(c))
    r = marker(c, pid, epoch + 1, True, state_partition(c, tid))        # the TC retries the same marker
    assert r["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
    r = marker(c, pid, epoch + 1, False, state_partition(c, tid))       # or a confused ABORT
    assert len(record_moves(c)) == n_moves
    assert states(c, tid) == ({1: "ACQUIRED", 2: "ACQUIRED", 3: "ACQUIRED"}, 1)
    assert_proposed_labels(c)


def test_marker_with_stale_epoch_or_other_producer_id_does_not_resolve_newer_staging():
    c, tid, sc, pr = setup()
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1)]}, sc.share_group_metadata())
    pid, e1 = pr.producer_id, pr.producer_epoch
    pr.commit_transaction()                               # marker epoch e1 + 1 (TV2 bump)
    pr.begin_transaction()
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(1, 1)]}, sc.share_group_metadata())
    assert pr.producer_epoch == e1 + 1
    sp_n = state_partition(c, tid)
    marker(c, pid, e1 + 1, True, sp_n)                    # late copy of the previous transaction's marker
    marker(c, pid + 1000, e1 + 5, True, sp_n)             # someone else's marker
    assert pending(c) == [(G, "in", 0, 1, pid, e1 + 1)]
    pr.abort_transaction()
    assert pending(c) == [] and states(c, tid)[0][1] == "ACQUIRED"
    assert_proposed_labels(c)


# ---- locks and redelivery ------------------------------------------------------------------------
def test_tx_pending_records_are_not_redelivered_nor_plainly_acknowledgeable_and_lock_expiry_reverts_them():
    c, tid, sc, pr = setup()
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1), (1, 1)]}, sc.share_group_metadata())
    other = ShareConsumer(c, G, client_id="worker-2")
    other.subscribe(["in"])
    assert other.poll() == []                            # nothing AVAILABLE: TX_PENDING is not handed out
    sc.pending[(tid, 0)] = {0: 1}
    r = sc.commit_sync()
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == CODE["INVALID_RECORD_STATE"]
    c.advance(c.config.group_share_record_lock_duration_ms)      # corner case 6
    expired = [e for e in record_moves(c) if e.from_state == "TX_PENDING"]
    assert [(e.to_state, e.cause) for e in expired] == [("ACQUIRED", "lock-expired")] * 2
    assert states(c, tid)[0] == {o: "AVAILABLE" for o in range(4)}
    pr.commit_transaction()                              # the late marker finds nothing
    assert states(c, tid)[0] == {o: "AVAILABLE" for o in range(4)}
    m = metrics(c.events)
    assert m["TxnPendingLockExpiredCount"] == 2 and m["TxnPendingRecordsCount"] == 0
    assert [r.offset for r in other.poll()] == [0, 1, 2, 3]     # re-acquirable
    assert_proposed_labels(c)


# ---- gating -------------------------------------------------------------------------------------
def test_share_version_1_does_not_serve_the_api_and_the_producer_fails_synchronously_without_bytes():
    c, tid, sc, pr = setup(share_version=1)
    r = stage(c, pr, sc, tid, {0: [b(0, 1, 1)]})
    assert r["ErrorCode"] == CODE["UNSUPPORTED_VERSION"]
    n_requests = sum(1 for e in c.events if e.kind == "RequestReceived" and e.api == "TxnShareAcknowledge")
    with pytest.raises(UnsupportedVersionError):
        pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1)]}, sc.share_group_metadata())
    assert sum(1 for e in c.events if e.kind == "RequestReceived" and e.api == "TxnShareAcknowledge") == n_requests
    assert pr.state == "IN_TRANSACTION"                 # corner case 9: the user aborts
    pr.abort_transaction()
    assert not [e for e in record_moves(c) if "TX_PENDING" in (e.from_state, e.to_state)]
    assert pending(c) == []
    assert_proposed_labels(c)


def test_transaction_version_1_cluster_answers_unsupported_version_top_level():
    c, tid, sc, pr = setup(transaction_version=1)
    r = stage(c, pr, sc, tid, {0: [b(0, 1, 1)]})
    assert r["ErrorCode"] == CODE["UNSUPPORTED_VERSION"] and pending(c) == []


# ---- metrics ------------------------------------------------------------------------------------
def test_metrics_are_computed_from_events_only():
    c, tid, sc, pr = setup()
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(0, 1), (1, 3)]}, sc.share_group_metadata())
    c.advance(500)
    pr.send_share_acknowledgements_to_transaction({("in", 0): [(2, 1)]}, sc.share_group_metadata())
    m = metrics(c.events)
    assert m["TxnPendingRecordsCount"] == 3
    assert m["ShareStatePartitionsInTransactions"] == 1 and m["TransactionPartitionsCount"] == 1
    c.advance(250)
    pr.commit_transaction()
    events = list(c.events)
    m = metrics(events)
    assert m["TxnPendingRecordsCount"] == 0
    assert m["TxnShareAcknowledgeRequestLatencyMs"]["count"] == 2
    assert m["TxnPendingResidencyMs"]["max"] == 750 and m["TxnPendingResidencyMs"]["count"] == 3
    assert m["TxnPendingLockExpiredCount"] == 0
    assert m["share-ack-txn-send-rate"] > 0 and m["share-ack-txn-send-error-rate"] == 0
    assert m["share-group-metadata-fetch-rate"] > 0 and m["status"] == "proposed"
    series = time_series(events)
    t0 = series[0][0]
    assert [(t - t0, n) for t, n in series] == [(0, 2), (500, 3), (750, 0)]
    assert time_series(events, "TxnPendingLockExpiredCount") == []
    assert metrics(events) == m                          # a pure function of the events
