"""The transaction coordinator model, checked through real request frames against TransactionCoordinator.scala and TransactionMetadata.scala.

Every request here is encoded with kipviz.codec and answered by Cluster.handle; the data records
the markers close are appended straight to the partition log (what a Produce would leave there),
so these tests do not depend on the Produce handler."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz import codec
from kipviz.broker import Acl, Cluster, InvalidTransition, Machine, served_versions
from kipviz.broker.tables import transaction as txn_table
from kipviz.codec.fit import complete_body
from kipviz.records import decode_internal, read_batches, transaction_coordinator_partition
from kipviz.schema import events as ev
from kipviz.schema import registry
from kipviz.schema.error_codes import CODE

from .strategies import message_values

E = CODE
OPERATION_NOT_ATTEMPTED = 55
TXN_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers")


# ---- helpers ----------------------------------------------------------------------------------
def call(cluster, api, version, body, *, broker=0, principal="User:ANONYMOUS"):
    frame = codec.encode_request(api, version, complete_body(api + "Request", version, body), correlation_id=7)
    out = cluster.handle(frame, broker=broker, principal=principal)
    return codec.decode_response(out, api, version)["body"]


def init(cluster, tid, version=4, timeout=60000, expected=(-1, -1), **kw):
    return call(cluster, "InitProducerId", version, {"TransactionalId": tid, "TransactionTimeoutMs": timeout,
                                                      "ProducerId": expected[0], "ProducerEpoch": expected[1]}, **kw)


def add_partitions(cluster, tid, pid, epoch, topics, version=3, **kw):
    body = {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": pid, "V3AndBelowProducerEpoch": epoch,
            "V3AndBelowTopics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()]}
    resp = call(cluster, "AddPartitionsToTxn", version, body, **kw)
    return {(t["Name"], p["PartitionIndex"]): p["PartitionErrorCode"]
            for t in resp["ResultsByTopicV3AndBelow"] for p in t["ResultsByPartition"]}


def add_error(cluster, tid, pid, epoch, topics, version=3, **kw) -> int:
    errors = set(add_partitions(cluster, tid, pid, epoch, topics, version, **kw).values())
    assert len(errors) == 1, errors
    return errors.pop()


def end(cluster, tid, pid, epoch, commit, version=3, **kw):
    return call(cluster, "EndTxn", version, {"TransactionalId": tid, "ProducerId": pid, "ProducerEpoch": epoch,
                                             "Committed": commit}, **kw)


def add_offsets(cluster, tid, pid, epoch, group, version=3):
    return call(cluster, "AddOffsetsToTxn", version, {"TransactionalId": tid, "ProducerId": pid,
                                                      "ProducerEpoch": epoch, "GroupId": group})["ErrorCode"]


def state(cluster, tid):
    return cluster.txns.state_of(tid)


def changes(cluster, tid=None):
    return [(e.from_state, e.cause, e.to_state) for e in cluster.events
            if e.kind == "StateChanged" and e.machine == "transaction" and (tid is None or e.key == tid)]


def txn_records(cluster, tid=None):
    out = []
    for e in cluster.events:
        if e.kind == "RecordAppended" and e.topic == "__transaction_state":
            d = decode_internal(e.key, e.value, "__transaction_state")
            if tid is None or d["key"]["TransactionalId"] == tid:
                out.append((e, d))
    return out


def produce_directly(cluster, topic, partition, pid, epoch, records):
    """What a transactional Produce leaves in the log (the leader's append)."""
    return cluster.topics.partition(topic, partition).append(records, cluster.now, producer_id=pid,
                                                             producer_epoch=epoch, transactional=True)


@pytest.fixture
def cluster():
    c = Cluster(transaction_version=1)
    c.create_topic("orders", 3)
    c.create_topic("payments", 1)
    yield c
    assert c.internal_errors == []


@pytest.fixture
def cluster_tv2():
    c = Cluster(transaction_version=2)
    c.create_topic("orders", 3)
    yield c
    assert c.internal_errors == []


# ---- the state table ---------------------------------------------------------------------------
def test_state_ids_are_kafkas_transaction_status_ids():
    assert txn_table.TABLE.state_ids == {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3,
                                         "CompleteCommit": 4, "CompleteAbort": 5, "Dead": 6,
                                         "PrepareEpochFence": 7}
    assert txn_table.TABLE.initial == "Empty"
    assert set(txn_table.TABLE.states) == set(txn_table.STATE_IDS)


def test_table_allows_exactly_the_valid_previous_states_of_facts_d():
    facts = {"Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
             "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
             "PrepareCommit": {"Ongoing"}, "PrepareAbort": {"Ongoing", "PrepareEpochFence"},
             "CompleteCommit": {"PrepareCommit"}, "CompleteAbort": {"PrepareAbort"},
             "Dead": {"Empty", "CompleteAbort", "CompleteCommit"}, "PrepareEpochFence": {"Ongoing"}}
    tv1 = {}
    for r in txn_table.TABLE.rows:
        if not txn_table.is_tv2_only(r):
            tv1.setdefault(r.to_state, set()).add(r.from_state)
    assert tv1 == facts
    tv2_extra = {(r.from_state, r.to_state) for r in txn_table.TABLE.rows if txn_table.is_tv2_only(r)}
    # KIP-890 part 2: Empty/CompleteCommit/CompleteAbort -> PrepareAbort; implicit adds stay within Ongoing's
    assert tv2_extra - {(s, "Ongoing") for s in facts["Ongoing"]} == {
        ("Empty", "PrepareAbort"), ("CompleteCommit", "PrepareAbort"), ("CompleteAbort", "PrepareAbort")}
    for r in txn_table.TABLE.rows:
        if txn_table.is_tv2_only(r):
            assert r.kip == "KIP-890" and r.status == "released"
    assert all(r.status in ("released", "accepted") for r in txn_table.TABLE.rows)


def test_invalid_moves_raise_invalid_transition():
    seen = []
    m = Machine(txn_table.TABLE, "t", lambda **kw: seen.append(kw), enabled=txn_table.enabled_for(False))
    with pytest.raises(InvalidTransition):
        m.fire("end-txn-commit")                     # Empty -> PrepareCommit is not allowed
    with pytest.raises(InvalidTransition):
        m.fire("end-txn-abort")                      # only under transaction version 2
    m.fire("add-partitions")
    m.fire("end-txn-commit")
    for bad in ("add-partitions", "init-producer-id", "end-txn-abort", "timeout-fence"):
        with pytest.raises(InvalidTransition):
            m.fire(bad)
    m.fire("markers-written")
    assert m.state == "CompleteCommit" and len(seen) == 3
    tv2 = Machine(txn_table.TABLE, "t2", lambda **kw: None, enabled=txn_table.enabled_for(True))
    assert tv2.fire("end-txn-abort") == "PrepareAbort"
    dead = Machine(txn_table.TABLE, "t3", lambda **kw: None, state="Dead")
    for row in txn_table.TABLE.rows:
        with pytest.raises(InvalidTransition):
            dead.fire(row.event)


def test_every_row_of_the_table_is_reachable_through_frames():
    taken = set()
    for tv in (1, 2):
        c = Cluster(transaction_version=tv, release=None)    # trunk-like: KIP-939's accepted v6 is served too
        c.create_topic("t", 2)
        # init from Empty, add (Empty, Ongoing), commit, init from CompleteCommit
        r = init(c, "a")
        pid, ep = r["ProducerId"], r["ProducerEpoch"]
        assert add_error(c, "a", pid, ep, {"t": [0]}) == 0
        assert add_error(c, "a", pid, ep, {"t": [1]}) == 0
        assert add_offsets(c, "a", pid, ep, "g") == 0
        assert end(c, "a", pid, ep, True)["ErrorCode"] == 0
        assert add_offsets(c, "a", pid, ep, "g") == 0                 # add-offsets from CompleteCommit
        assert end(c, "a", pid, ep, False)["ErrorCode"] == 0
        assert add_error(c, "a", pid, ep, {"t": [0]}) == 0            # add-partitions from CompleteAbort
        assert end(c, "a", pid, ep, True)["ErrorCode"] == 0
        assert add_error(c, "a", pid, ep, {"t": [0]}) == 0            # add-partitions from CompleteCommit
        assert end(c, "a", pid, ep, False)["ErrorCode"] == 0
        ep = init(c, "a", expected=(pid, ep))["ProducerEpoch"]         # init from CompleteAbort
        assert add_offsets(c, "a", pid, ep, "g") == 0                 # add-offsets from Empty
        assert add_offsets(c, "a", pid, ep, "g2") == 0                # add-offsets from Ongoing
        assert end(c, "a", pid, ep, True)["ErrorCode"] == 0
        init(c, "a")                                                  # init from CompleteCommit
        r = init(c, "cc")
        pid, ep = r["ProducerId"], r["ProducerEpoch"]
        add_error(c, "cc", pid, ep, {"t": [0]})
        assert end(c, "cc", pid, ep, False)["ErrorCode"] == 0
        assert add_offsets(c, "cc", pid, ep, "g") == 0               # add-offsets from CompleteAbort
        assert end(c, "cc", pid, ep, True)["ErrorCode"] == 0         # left in CompleteCommit to expire
        # an open transaction fenced by a new instance
        r = init(c, "b")
        add_error(c, "b", r["ProducerId"], r["ProducerEpoch"], {"t": [0]})
        assert init(c, "b")["ErrorCode"] == E["CONCURRENT_TRANSACTIONS"]
        # an open transaction timed out
        r = init(c, "c")
        add_error(c, "c", r["ProducerId"], r["ProducerEpoch"], {"t": [1]})
        c.advance(71_000)
        assert state(c, "c") == "CompleteAbort"
        # KIP-939 (accepted): InitProducerId v6 keeping the prepared transaction
        r = init(c, "k")
        add_error(c, "k", r["ProducerId"], r["ProducerEpoch"], {"t": [1]})
        r6 = call(c, "InitProducerId", 6, {"TransactionalId": "k", "TransactionTimeoutMs": 60000,
                                           "ProducerId": -1, "ProducerEpoch": -1, "Enable2Pc": True,
                                           "KeepPreparedTxn": True})
        assert r6["ErrorCode"] == 0 and r6["OngoingTxnProducerEpoch"] == r["ProducerEpoch"]
        assert state(c, "k") == "Ongoing"
        if tv == 2:
            # EndTxn v5 (transaction version 2): abort from Empty, CompleteCommit and CompleteAbort
            r = init(c, "v2")
            pid, ep = r["ProducerId"], r["ProducerEpoch"]
            ep = end(c, "v2", pid, ep, False, version=5)["ProducerEpoch"]          # Empty
            ep = end(c, "v2", pid, ep, False, version=5)["ProducerEpoch"]          # CompleteAbort
            c.txns.check_produce("v2", pid, ep, "t", 0, version=12)                # implicit add from CompleteAbort
            ep = end(c, "v2", pid, ep, True, version=5)["ProducerEpoch"]
            ep = end(c, "v2", pid, ep, False, version=5)["ProducerEpoch"]          # CompleteCommit
            r = init(c, "v2b")
            pid, ep = r["ProducerId"], r["ProducerEpoch"]
            c.txns.check_produce("v2b", pid, ep, "t", 0, version=12)               # from Empty
            c.txns.verify_txn_offset_commit("v2b", pid, ep, "g", 5)               # from Ongoing
            ep = end(c, "v2b", pid, ep, True, version=5)["ProducerEpoch"]
            c.txns.check_produce("v2b", pid, ep, "t", 1, version=12)               # from CompleteCommit
        # three idle transactional ids expire (Empty, CompleteCommit, CompleteAbort)
        init(c, "idle")
        c.advance(7 * 24 * 3600 * 1000 + 3600 * 1000)
        taken |= set(changes(c))
        assert c.internal_errors == []
    rows = {(r.from_state, r.event, r.to_state) for r in txn_table.TABLE.rows}
    assert rows - taken == set()


# ---- InitProducerId ---------------------------------------------------------------------------------
def test_idempotent_producer_ids_come_from_per_broker_blocks():
    c = Cluster(brokers=2)
    a = call(c, "InitProducerId", 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                      "ProducerId": -1, "ProducerEpoch": -1})
    b = call(c, "InitProducerId", 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                      "ProducerId": -1, "ProducerEpoch": -1})
    other = call(c, "InitProducerId", 0, {"TransactionalId": None, "TransactionTimeoutMs": 60000}, broker=1)
    assert (a["ErrorCode"], a["ProducerEpoch"], b["ProducerEpoch"]) == (0, 0, 0)
    assert b["ProducerId"] == a["ProducerId"] + 1
    assert other["ErrorCode"] == 0 and other["ProducerId"] >= 1000
    assert c.txns.transactions == {}               # no transactional state for idempotent producers


@pytest.mark.parametrize("timeout, code", [(0, E["INVALID_TRANSACTION_TIMEOUT"]), (-5, E["INVALID_TRANSACTION_TIMEOUT"]),
                                           (900_001, E["INVALID_TRANSACTION_TIMEOUT"]), (900_000, 0), (1, 0)])
def test_transaction_timeout_is_checked_against_transaction_max_timeout_ms(cluster, timeout, code):
    assert init(cluster, "t", timeout=timeout)["ErrorCode"] == code


def test_empty_transactional_id_is_an_invalid_request(cluster):
    r = init(cluster, "")
    assert (r["ErrorCode"], r["ProducerId"], r["ProducerEpoch"]) == (E["INVALID_REQUEST"], -1, -1)
    assert init(cluster, "t", expected=(5, -1))["ErrorCode"] == E["INVALID_REQUEST"]


def test_init_producer_id_bumps_the_epoch_and_fences_the_older_instance(cluster):
    first = init(cluster, "app")
    second = init(cluster, "app")
    pid = first["ProducerId"]
    assert second["ProducerId"] == pid and second["ProducerEpoch"] == first["ProducerEpoch"] + 1
    old = first["ProducerEpoch"]
    # KIP-588: PRODUCER_FENCED from AddPartitionsToTxn/EndTxn v2, INVALID_PRODUCER_EPOCH before
    assert add_error(cluster, "app", pid, old, {"orders": [0]}, version=2) == E["PRODUCER_FENCED"]
    assert add_error(cluster, "app", pid, old, {"orders": [0]}, version=1) == E["INVALID_PRODUCER_EPOCH"]
    assert end(cluster, "app", pid, old, True, version=2)["ErrorCode"] == E["PRODUCER_FENCED"]
    assert end(cluster, "app", pid, old, True, version=0)["ErrorCode"] == E["INVALID_PRODUCER_EPOCH"]
    assert add_offsets(cluster, "app", pid, old, "g", version=1) == E["INVALID_PRODUCER_EPOCH"]
    # InitProducerId v3+ with a producer id that is not ours: PRODUCER_FENCED from v4 (KIP-588)
    assert init(cluster, "app", version=4, expected=(pid + 99, 0))["ErrorCode"] == E["PRODUCER_FENCED"]
    assert init(cluster, "app", version=3, expected=(pid + 99, 0))["ErrorCode"] == E["INVALID_PRODUCER_EPOCH"]
    # a stale epoch of our own producer id is fenced too
    init(cluster, "app")
    assert init(cluster, "app", expected=(pid, old))["ErrorCode"] == E["PRODUCER_FENCED"]


def test_init_producer_id_retry_with_the_previous_epoch_returns_the_same_epoch(cluster):
    r = init(cluster, "app")
    bumped = init(cluster, "app", expected=(r["ProducerId"], r["ProducerEpoch"]))
    again = init(cluster, "app", expected=(r["ProducerId"], r["ProducerEpoch"]))      # the response was lost
    assert bumped["ProducerEpoch"] == r["ProducerEpoch"] + 1
    assert again["ErrorCode"] == 0 and again["ProducerEpoch"] == bumped["ProducerEpoch"]


@pytest.mark.parametrize("tv, bumps", [(1, 2), (2, 3)])
def test_init_producer_id_aborts_an_ongoing_transaction_and_answers_concurrent_transactions(tv, bumps):
    c = Cluster(transaction_version=tv)
    c.create_topic("orders", 2)
    r = init(c, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(c, "app", pid, ep, {"orders": [0, 1]})
    produce_directly(c, "orders", 0, pid, ep, [(b"k", b"lost")])
    again = init(c, "app")
    assert again["ErrorCode"] == E["CONCURRENT_TRANSACTIONS"] and again["ProducerId"] == -1
    assert state(c, "app") == "CompleteAbort"
    assert [x[1] for x in changes(c, "app")][-3:] == ["init-producer-id", "fence-abort", "markers-written"]
    for p in (0, 1):
        assert c.topics.partition("orders", p).entries[-1].control == "ABORT"
    assert c.topics.partition("orders", 0).visible(1) == []
    retry = init(c, "app")
    # fence (+1), the abort under TV2 bumps again (+1), the retried InitProducerId (+1)
    assert retry["ErrorCode"] == 0 and retry["ProducerEpoch"] == ep + bumps
    assert end(c, "app", pid, ep, True)["ErrorCode"] == E["PRODUCER_FENCED"]
    assert c.internal_errors == []


def test_init_producer_id_rotates_the_producer_id_when_the_epoch_is_exhausted(cluster):
    r = init(cluster, "app")
    cluster.txns.transactions["app"].producer_epoch = 32766           # Short.MaxValue - 1
    rotated = init(cluster, "app", expected=(r["ProducerId"], 32766))
    assert rotated["ErrorCode"] == 0 and rotated["ProducerEpoch"] == 0
    assert rotated["ProducerId"] != r["ProducerId"]
    assert cluster.txns.transactions["app"].previous_producer_id == r["ProducerId"]
    # a retry of that call (old id, exhausted epoch) is recognised, not fenced
    assert init(cluster, "app", expected=(r["ProducerId"], 32766))["ErrorCode"] == 0


def test_init_producer_id_requires_write_on_the_transactional_id():
    c = Cluster(acls=[Acl("User:alice", "TRANSACTIONAL_ID", "mine", "WRITE")])
    assert init(c, "mine", principal="User:alice")["ErrorCode"] == 0
    assert init(c, "other", principal="User:alice")["ErrorCode"] == E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]
    idem = call(c, "InitProducerId", 4, {"TransactionalId": None, "TransactionTimeoutMs": 1,
                                         "ProducerId": -1, "ProducerEpoch": -1}, principal="User:bob")
    assert idem["ErrorCode"] == E["CLUSTER_AUTHORIZATION_FAILED"]


def test_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator():
    c = Cluster(brokers=3)
    c.create_topic("orders", 1)
    tid = next(f"tx-{i}" for i in range(100) if c.coordinator_broker(1, f"tx-{i}") != 0)
    other = c.coordinator_broker(1, tid)
    assert init(c, tid, broker=0)["ErrorCode"] == E["NOT_COORDINATOR"]
    r = init(c, tid, broker=other)
    assert r["ErrorCode"] == 0
    assert add_error(c, tid, r["ProducerId"], r["ProducerEpoch"], {"orders": [0]}, broker=0) == E["NOT_COORDINATOR"]
    assert end(c, tid, r["ProducerId"], r["ProducerEpoch"], True, broker=0)["ErrorCode"] == E["NOT_COORDINATOR"]


# ---- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------------
def test_add_partitions_unknown_partition_and_operation_not_attempted(cluster):
    r = init(cluster, "app")
    errs = add_partitions(cluster, "app", r["ProducerId"], r["ProducerEpoch"],
                          {"orders": [0, 7], "nope": [0]})
    assert errs == {("orders", 0): OPERATION_NOT_ATTEMPTED, ("orders", 7): E["UNKNOWN_TOPIC_OR_PARTITION"],
                    ("nope", 0): E["UNKNOWN_TOPIC_OR_PARTITION"]}
    assert state(cluster, "app") == "Empty"


def test_add_partitions_checks_transactional_id_then_topic_authorization():
    c = Cluster(acls=[Acl("User:a", "TRANSACTIONAL_ID", "app", "WRITE"), Acl("User:a", "TOPIC", "ok", "WRITE")])
    c.create_topic("ok", 1)
    c.create_topic("secret", 1)
    r = init(c, "app", principal="User:a")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    errs = add_partitions(c, "app", pid, ep, {"ok": [0], "secret": [0]}, principal="User:a")
    assert errs == {("ok", 0): OPERATION_NOT_ATTEMPTED, ("secret", 0): E["TOPIC_AUTHORIZATION_FAILED"]}
    assert add_error(c, "app", pid, ep, {"ok": [0]}, principal="User:b") == E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]
    assert add_error(c, "app", pid, ep, {"ok": [0]}, principal="User:a") == 0


def test_add_partitions_errors_for_unknown_producer_ids(cluster):
    assert add_error(cluster, "ghost", 1, 0, {"orders": [0]}) == E["INVALID_PRODUCER_ID_MAPPING"]
    r = init(cluster, "app")
    assert add_error(cluster, "app", r["ProducerId"] + 1, 0, {"orders": [0]}) == E["INVALID_PRODUCER_ID_MAPPING"]


def test_add_partitions_is_concurrent_transactions_while_markers_are_pending(cluster):
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(cluster, "app", pid, ep, {"orders": [0]})
    cluster.txns.markers.hold = True
    assert end(cluster, "app", pid, ep, True)["ErrorCode"] == 0      # answered once PrepareCommit is written
    assert state(cluster, "app") == "PrepareCommit"
    assert add_error(cluster, "app", pid, ep, {"orders": [1]}) == E["CONCURRENT_TRANSACTIONS"]
    assert add_offsets(cluster, "app", pid, ep, "g") == E["CONCURRENT_TRANSACTIONS"]
    assert init(cluster, "app")["ErrorCode"] == E["CONCURRENT_TRANSACTIONS"]
    cluster.txns.markers.release()
    assert state(cluster, "app") == "CompleteCommit"
    assert add_error(cluster, "app", pid, ep, {"orders": [1]}) == 0


def test_markers_wait_for_a_partition_leader_that_is_down():
    c = Cluster(brokers=2)
    c.create_topic("orders", 2)                                       # partition 1 is led by broker 1
    tid = next(f"tx-{i}" for i in range(100) if c.coordinator_broker(1, f"tx-{i}") == 0)
    r = init(c, tid)
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(c, tid, pid, ep, {"orders": [0, 1]})
    c.down.add(1)
    assert end(c, tid, pid, ep, True)["ErrorCode"] == 0
    assert state(c, tid) == "PrepareCommit"
    assert c.topics.partition("orders", 0).entries[-1].control == "COMMIT"
    c.advance(1000)
    assert state(c, tid) == "PrepareCommit" and c.topics.partition("orders", 1).entries == []
    c.down.discard(1)
    c.advance(100)
    assert state(c, tid) == "CompleteCommit"
    assert c.topics.partition("orders", 1).entries[-1].control == "COMMIT"
    assert c.internal_errors == []


def test_add_offsets_adds_the_groups_consumer_offsets_partition(cluster):
    r = init(cluster, "app")
    assert add_offsets(cluster, "app", r["ProducerId"], r["ProducerEpoch"], "my-group") == 0
    # GroupCoordinatorService.partitionFor: "my-group" lives in __consumer_offsets partition 12
    assert cluster.coordinator_partition(0, "my-group") == ("__consumer_offsets", 12)
    assert cluster.txns.describe("app")["partitions"] == [("__consumer_offsets", 12)]
    assert [x[1] for x in changes(cluster, "app")][-1] == "add-offsets"


def test_add_offsets_needs_read_on_the_group():
    c = Cluster(acls=[Acl("*", "TRANSACTIONAL_ID", "*", "WRITE"), Acl("*", "GROUP", "g", "READ")])
    r = init(c, "app")
    assert add_offsets(c, "app", r["ProducerId"], r["ProducerEpoch"], "other") == E["GROUP_AUTHORIZATION_FAILED"]
    assert add_offsets(c, "app", r["ProducerId"], r["ProducerEpoch"], "g") == 0


def test_add_partitions_v4_verify_only_is_the_broker_form(cluster):
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(cluster, "app", pid, ep, {"orders": [0]})

    def verify(version, partitions, epoch=ep):
        resp = call(cluster, "AddPartitionsToTxn", version, {"Transactions": [
            {"TransactionalId": "app", "ProducerId": pid, "ProducerEpoch": epoch, "VerifyOnly": True,
             "Topics": [{"Name": "orders", "Partitions": partitions}]}]})
        assert resp["ErrorCode"] == 0
        return {p["PartitionIndex"]: p["PartitionErrorCode"] for t in resp["ResultsByTransaction"][0]["TopicResults"]
                for p in t["ResultsByPartition"]}
    assert verify(5, [0, 1]) == {0: 0, 1: E["TRANSACTION_ABORTABLE"]}
    assert verify(4, [0, 1]) == {0: 0, 1: E["INVALID_TXN_STATE"]}        # v4 predates TRANSACTION_ABORTABLE
    assert verify(5, [0], epoch=ep - 1 if ep else 5) == {0: E["PRODUCER_FENCED"]}
    assert state(cluster, "app") == "Ongoing" and cluster.txns.describe("app")["partitions"] == [("orders", 0)]
    c = Cluster(acls=[Acl("*", "TRANSACTIONAL_ID", "*", "WRITE")])
    resp = call(c, "AddPartitionsToTxn", 5, {"Transactions": []})
    assert resp["ErrorCode"] == E["CLUSTER_AUTHORIZATION_FAILED"]


# ---- EndTxn ------------------------------------------------------------------------------------------
def test_end_txn_error_order_of_facts_d(cluster):
    # 1. no state
    assert end(cluster, "ghost", 0, 0, True)["ErrorCode"] == E["INVALID_PRODUCER_ID_MAPPING"]
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    # 2. producer id mismatch comes before the epoch check
    assert end(cluster, "app", pid + 1, ep + 5, True)["ErrorCode"] == E["INVALID_PRODUCER_ID_MAPPING"]
    # 3. bad epoch comes before the state check (Empty would be INVALID_TXN_STATE)
    assert end(cluster, "app", pid, ep + 1, True)["ErrorCode"] == E["PRODUCER_FENCED"]
    # 5. Empty -> INVALID_TXN_STATE
    assert end(cluster, "app", pid, ep, True)["ErrorCode"] == E["INVALID_TXN_STATE"]
    assert end(cluster, "app", pid, ep, False)["ErrorCode"] == E["INVALID_TXN_STATE"]
    add_error(cluster, "app", pid, ep, {"orders": [0]})
    cluster.txns.markers.hold = True
    assert end(cluster, "app", pid, ep, True)["ErrorCode"] == 0                          # Ongoing -> prepare
    # 4./5. a pending transition: same result -> CONCURRENT_TRANSACTIONS, opposite -> INVALID_TXN_STATE
    assert end(cluster, "app", pid, ep, True)["ErrorCode"] == E["CONCURRENT_TRANSACTIONS"]
    assert end(cluster, "app", pid, ep, False)["ErrorCode"] == E["INVALID_TXN_STATE"]
    assert end(cluster, "app", pid, ep + 1, True)["ErrorCode"] == E["PRODUCER_FENCED"]   # 3. before 4.
    cluster.txns.markers.release()
    # CompleteX with the same result is an idempotent retry; the opposite is INVALID_TXN_STATE
    assert end(cluster, "app", pid, ep, True)["ErrorCode"] == 0
    assert end(cluster, "app", pid, ep, False)["ErrorCode"] == E["INVALID_TXN_STATE"]
    assert state(cluster, "app") == "CompleteCommit"
    assert cluster.txns.describe("app")["producer_epoch"] == ep                           # TV1: no bump


def test_end_txn_v5_bumps_the_epoch_on_every_end_of_transaction(cluster_tv2):
    c = cluster_tv2
    r = init(c, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    assert add_error(c, "app", pid, ep, {"orders": [0]}) == 0
    produce_directly(c, "orders", 0, pid, ep, [(b"k", b"v")])
    done = end(c, "app", pid, ep, True, version=5)
    assert (done["ErrorCode"], done["ProducerId"], done["ProducerEpoch"]) == (0, pid, ep + 1)
    marker = c.topics.partition("orders", 0).entries[-1]
    assert (marker.control, marker.producer_epoch) == ("COMMIT", ep + 1)                 # markers carry the new epoch
    # a retry with the old epoch (endTxnEpochBumped) is answered NONE with the current id/epoch
    retry = end(c, "app", pid, ep, True, version=5)
    assert (retry["ErrorCode"], retry["ProducerEpoch"]) == (0, ep + 1)
    assert end(c, "app", pid, ep, False, version=5)["ErrorCode"] == E["INVALID_TXN_STATE"]
    # with the new epoch, commit of nothing is INVALID_TXN_STATE, abort of nothing bumps again
    assert end(c, "app", pid, ep + 1, True, version=5)["ErrorCode"] == E["INVALID_TXN_STATE"]
    aborted = end(c, "app", pid, ep + 1, False, version=5)
    assert (aborted["ErrorCode"], aborted["ProducerEpoch"]) == (0, ep + 2)
    assert state(c, "app") == "CompleteAbort"
    assert end(c, "app", pid, ep, False, version=5)["ErrorCode"] == E["PRODUCER_FENCED"]
    rec = txn_records(c, "app")[-1][1]["value"]
    assert rec["ClientTransactionVersion"] == 2 and rec["ProducerEpoch"] == ep + 2


def test_end_txn_v4_keeps_the_epoch(cluster_tv2):
    r = init(cluster_tv2, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(cluster_tv2, "app", pid, ep, {"orders": [0]})
    assert end(cluster_tv2, "app", pid, ep, True, version=4)["ErrorCode"] == 0
    assert cluster_tv2.txns.describe("app")["producer_epoch"] == ep
    assert end(cluster_tv2, "app", pid, ep, False, version=4)["ErrorCode"] == E["INVALID_TXN_STATE"]


def test_end_txn_v5_rotates_the_producer_id_when_the_epoch_is_exhausted(cluster_tv2):
    c = cluster_tv2
    r = init(c, "app")
    pid = r["ProducerId"]
    c.txns.transactions["app"].producer_epoch = 32766
    add_error(c, "app", pid, 32766, {"orders": [1]})
    done = end(c, "app", pid, 32766, True, version=5)
    assert done["ErrorCode"] == 0 and done["ProducerId"] != pid and done["ProducerEpoch"] == 0
    d = c.txns.describe("app")
    assert (d["producer_id"], d["producer_epoch"], d["previous_producer_id"]) == (done["ProducerId"], 0, pid)
    assert c.topics.partition("orders", 1).entries[-1].producer_epoch == 32767
    # retryOnOverflow: the old id with epoch 32766 is a retry, not a fence
    retry = end(c, "app", pid, 32766, True, version=5)
    assert (retry["ErrorCode"], retry["ProducerId"], retry["ProducerEpoch"]) == (0, done["ProducerId"], 0)


# ---- timeout ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tv", [1, 2])
def test_transaction_timeout_fences_with_epoch_plus_one_and_aborts(tv):
    c = Cluster(transaction_version=tv)
    c.create_topic("orders", 2)
    r = init(c, "slow")                                   # transaction.timeout.ms 60000
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(c, "slow", pid, ep, {"orders": [0, 1]})
    produce_directly(c, "orders", 1, pid, ep, [(b"a", b"1"), (b"b", b"2")])
    c.advance(69_999)                                     # the scan at 60 s: 0 + 60000 < 60000 is false
    assert state(c, "slow") == "Ongoing"
    c.advance(1)                                          # the scan at 70 s aborts
    assert state(c, "slow") == "CompleteAbort"
    assert [x[1] for x in changes(c, "slow")][-3:] == ["timeout-fence", "fence-abort", "markers-written"]
    fence = [e for e in c.events if e.kind == "StateChanged" and e.cause == "timeout-fence"][0]
    assert fence.t == 70_000 and fence.to_state == "PrepareEpochFence"
    d = c.txns.describe("slow")
    assert d["producer_epoch"] == ep + (2 if tv == 2 else 1)
    for p in (0, 1):
        m = c.topics.partition("orders", p).entries[-1]
        assert (m.control, m.producer_epoch) == ("ABORT", d["producer_epoch"])
    assert c.topics.partition("orders", 1).visible(1) == []
    # PrepareEpochFence is never written to the log; the PrepareAbort carries the bumped epoch
    statuses = [d["value"]["TransactionStatus"] for _, d in txn_records(c, "slow")]
    assert 7 not in statuses and statuses[-2:] == [3, 5]
    # the old producer is fenced afterwards
    assert end(c, "slow", pid, ep, True)["ErrorCode"] == E["PRODUCER_FENCED"]
    assert add_error(c, "slow", pid, ep, {"orders": [0]}) == E["PRODUCER_FENCED"]
    assert c.internal_errors == []


def test_cluster_advance_61s_plus_the_10s_scan_aborts(cluster):
    r = init(cluster, "t")
    add_error(cluster, "t", r["ProducerId"], r["ProducerEpoch"], {"orders": [0]})
    cluster.advance(61_000 + 10_000)
    assert state(cluster, "t") == "CompleteAbort"


def test_a_short_transaction_timeout_aborts_at_the_next_scan(cluster):
    r = init(cluster, "t", timeout=1000)
    cluster.advance(5000)
    add_error(cluster, "t", r["ProducerId"], r["ProducerEpoch"], {"orders": [0]})     # starts at 5 s
    cluster.advance(4999)
    assert state(cluster, "t") == "Ongoing"
    cluster.advance(1)                                                                 # scan at 10 s
    assert state(cluster, "t") == "CompleteAbort"


# ---- markers, read_committed, __transaction_state --------------------------------------------------
def test_markers_go_to_every_partition_and_read_committed_sees_only_committed(cluster):
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(cluster, "app", pid, ep, {"orders": [0, 1, 2], "payments": [0]})
    for p in range(3):
        produce_directly(cluster, "orders", p, pid, ep, [(b"k%d" % p, b"committed")])
    produce_directly(cluster, "payments", 0, pid, ep, [(b"pay", b"committed")])
    log = cluster.topics.partition("orders", 0)
    assert log.visible(1) == [] and log.last_stable_offset == 0 and len(log.visible(0)) == 1
    assert end(cluster, "app", pid, ep, True)["ErrorCode"] == 0
    for topic, p in [("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0)]:
        plog = cluster.topics.partition(topic, p)
        assert [e.control for e in plog.entries] == [None, "COMMIT"]
        assert [e.value for e in plog.visible(1)] == [b"committed"]
        batch = read_batches(plog.batches[-1])[0]
        assert batch["is_control"] and batch["is_transactional"] and batch["producer_id"] == pid
        assert batch["records"][0]["control"]["type"] == "COMMIT"
    appended = [e for e in cluster.events if e.kind == "RecordAppended" and e.control]
    assert len(appended) == 4 and all(e.record["type"] == "COMMIT" for e in appended)
    # the next transaction aborts: its records stay invisible to read_committed
    add_error(cluster, "app", pid, ep, {"orders": [0]})
    produce_directly(cluster, "orders", 0, pid, ep, [(b"x", b"aborted")])
    assert end(cluster, "app", pid, ep, False)["ErrorCode"] == 0
    assert [e.value for e in log.visible(1)] == [b"committed"]
    assert [e.value for e in log.visible(0)] == [b"committed", b"aborted"]
    assert cluster.topics.partition("orders", 1).entries[-1].control == "COMMIT"   # not in the 2nd transaction


def test_transaction_state_records_decode_and_land_in_the_partition_kafka_picks(cluster):
    for tid in ("app", "polygenelubricants", "tx-42"):
        r = init(cluster, tid)
        add_error(cluster, tid, r["ProducerId"], r["ProducerEpoch"], {"orders": [1], "payments": [0]})
        end(cluster, tid, r["ProducerId"], r["ProducerEpoch"], True)
        recs = txn_records(cluster, tid)
        assert recs, tid
        for e, d in recs:
            assert e.partition == transaction_coordinator_partition(tid, 50) == cluster.coordinator_partition(1, tid)[1]
            assert d["record"] == "TransactionLog" and d["value_version"] == 1
            assert e.record == d                          # the event's view is what the bytes decode to
            assert d["value"]["ProducerId"] == r["ProducerId"]
        values = [d["value"] for _, d in recs]
        assert [v["TransactionStatus"] for v in values] == [0, 1, 2, 4]
        assert values[0]["TransactionPartitions"] is None                       # Empty writes null
        assert {p["Topic"]: p["PartitionIds"] for p in values[1]["TransactionPartitions"]} == {
            "orders": [1], "payments": [0]}
        assert values[-1]["TransactionPartitions"] == []                        # complete: no partitions
        assert values[0]["TransactionStartTimestampMs"] == -1
        assert all(v["TransactionTimeoutMs"] == 60000 for v in values)
    assert transaction_coordinator_partition("polygenelubricants", 50) == 0     # TransactionStateManager.partitionFor edge case


def test_transactional_ids_expire_to_dead_with_a_tombstone(cluster):
    init(cluster, "idle")
    cluster.advance(3600 * 1000 + 1)
    init(cluster, "idle")                      # last update at 1 h: expires at the first scan >= 7 d + 1 h
    cluster.advance(7 * 24 * 3600 * 1000)
    assert state(cluster, "idle") == "Empty"
    cluster.advance(3600 * 1000)
    assert state(cluster, "idle") is None
    e, d = txn_records(cluster, "idle")[-1]
    assert d["tombstone"] and e.value is None
    assert changes(cluster, "idle")[-1] == ("Empty", "transactional-id-expired", "Dead")


# ---- WriteTxnMarkers from outside ---------------------------------------------------------------------
def test_external_write_txn_markers_v1_and_v2(cluster):
    pid, ep = 4242, 3
    produce_directly(cluster, "orders", 0, pid, ep, [(b"k", b"v")])

    def markers(version, partitions, epoch, commit=True, tv=2, broker=0, principal="User:ANONYMOUS"):
        m = {"ProducerId": pid, "ProducerEpoch": epoch, "TransactionResult": commit, "CoordinatorEpoch": 0,
             "TransactionVersion": tv, "Topics": [{"Name": t, "PartitionIndexes": ps} for t, ps in partitions.items()]}
        resp = call(cluster, "WriteTxnMarkers", version, {"Markers": [m]}, broker=broker, principal=principal)
        return {(t["Name"], p["PartitionIndex"]): p["ErrorCode"] for t in resp["Markers"][0]["Topics"]
                for p in t["Partitions"]}
    # TV2 (v2, KIP-1228): the marker must carry a newer epoch than the transaction's records
    assert markers(2, {"orders": [0]}, ep) == {("orders", 0): E["INVALID_PRODUCER_EPOCH"]}
    assert markers(1, {"orders": [0]}, ep - 1) == {("orders", 0): E["INVALID_PRODUCER_EPOCH"]}
    assert markers(1, {"orders": [0], "nope": [0]}, ep) == {("orders", 0): 0,
                                                           ("nope", 0): E["UNKNOWN_TOPIC_OR_PARTITION"]}
    log = cluster.topics.partition("orders", 0)
    assert log.entries[-1].control == "COMMIT" and [e.value for e in log.visible(1)] == [b"v"]
    v0_body = {"Markers": [{"ProducerId": pid, "ProducerEpoch": ep + 1, "TransactionResult": True,
                            "CoordinatorEpoch": 0, "Topics": [{"Name": "orders", "PartitionIndexes": [1]}]}]}
    # v0 was removed in 4.0 (KIP-896): the connection closes unanswered, nothing written
    assert cluster.dispatch(codec.encode_request("WriteTxnMarkers", 0, v0_body)) == ("close", b"")
    assert "WriteTxnMarkers v0 is not served" in cluster.events[-1].text
    assert served_versions("WriteTxnMarkers", cluster.config) == (1, 2)
    assert cluster.topics.partition("orders", 1).entries == []


def test_external_write_txn_markers_checks_leadership_and_cluster_action():
    c = Cluster(brokers=2, acls=[Acl("User:tc", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION")])
    c.create_topic("orders", 2)
    body = {"Markers": [{"ProducerId": 1, "ProducerEpoch": 0, "TransactionResult": False, "CoordinatorEpoch": 0,
                         "Topics": [{"Name": "orders", "PartitionIndexes": [0, 1]}]}]}
    resp = call(c, "WriteTxnMarkers", 1, body, broker=0, principal="User:tc")
    codes = [p["ErrorCode"] for p in resp["Markers"][0]["Topics"][0]["Partitions"]]
    assert codes == [0, E["NOT_LEADER_OR_FOLLOWER"]]
    resp = call(c, "WriteTxnMarkers", 1, body, broker=1, principal="User:someone")
    codes = [p["ErrorCode"] for p in resp["Markers"][0]["Topics"][0]["Partitions"]]
    assert codes == [E["CLUSTER_AUTHORIZATION_FAILED"]] * 2


def test_markers_on_consumer_offsets_are_reported_to_the_group_coordinator(cluster):
    seen = []

    class Groups:
        def on_marker(self, partition, producer_id, commit):
            seen.append((partition, producer_id, commit))
    cluster.groups = Groups()
    r = init(cluster, "app")
    add_offsets(cluster, "app", r["ProducerId"], r["ProducerEpoch"], "my-group")
    end(cluster, "app", r["ProducerId"], r["ProducerEpoch"], True)
    assert seen == [(12, r["ProducerId"], True)]
    assert cluster.topics.partition("__consumer_offsets", 12).entries[-1].control == "COMMIT"


# ---- the hooks for Produce and TxnOffsetCommit ----------------------------------------------------------
def test_check_produce_verifies_under_transaction_version_1(cluster):
    tx = cluster.txns
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    assert tx.check_produce(None, -1, -1, "orders", 0) == 0                      # not transactional
    assert tx.check_produce("app", pid, ep, "orders", 0) == E["INVALID_TXN_STATE"]
    assert tx.check_produce("app", pid, ep, "orders", 0, version=10) == E["INVALID_TXN_STATE"]
    assert tx.check_produce("app", pid, ep, "orders", 0, version=11) == E["TRANSACTION_ABORTABLE"]
    assert tx.check_produce("app", pid, ep, "orders", 0, version=12) == E["TRANSACTION_ABORTABLE"]  # no TV2
    add_error(cluster, "app", pid, ep, {"orders": [0]})
    assert tx.check_produce("app", pid, ep, "orders", 0) == 0
    assert tx.check_produce("app", pid, ep - 1 if ep else 9, "orders", 0) == E["INVALID_PRODUCER_EPOCH"]
    assert tx.check_produce("app", pid + 1, ep, "orders", 0) == E["INVALID_PRODUCER_ID_MAPPING"]
    tx.markers.hold = True
    end(cluster, "app", pid, ep, True)
    assert tx.check_produce("app", pid, ep, "orders", 0) == E["NOT_ENOUGH_REPLICAS"]   # retriable for old clients
    assert state(cluster, "app") == "PrepareCommit"


def test_check_produce_skips_the_coordinator_while_the_leader_holds_the_open_transaction(cluster):
    tx = cluster.txns
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    add_error(cluster, "app", pid, ep, {"orders": [0]})
    produce_directly(cluster, "orders", 0, pid, ep, [(b"k", b"v")])
    asked = len([e for e in cluster.events if isinstance(e, ev.PartitionAddedToTxn)])
    assert tx.check_produce("app", pid, ep, "orders", 0) == 0             # UnifiedLog.hasOngoingTransaction
    assert len([e for e in cluster.events if isinstance(e, ev.PartitionAddedToTxn)]) == asked
    assert tx.check_produce("app", pid, ep + 1, "orders", 0) == E["INVALID_PRODUCER_EPOCH"]   # other epoch: asks


def test_check_produce_v12_adds_the_partition_under_transaction_version_2(cluster_tv2):
    tx = cluster_tv2.txns
    r = init(cluster_tv2, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    assert tx.check_produce("app", pid, ep, "orders", 2, version=12) == 0
    assert state(cluster_tv2, "app") == "Ongoing" and tx.describe("app")["partitions"] == [("orders", 2)]
    assert changes(cluster_tv2, "app")[-1] == ("Empty", "implicit-add", "Ongoing")
    assert tx.check_produce("app", pid, ep, "orders", 2, version=12) == 0        # already there: no new write
    assert len(changes(cluster_tv2, "app")) == 2
    assert tx.check_produce("app", pid, ep + 1, "orders", 1, version=12) == E["INVALID_PRODUCER_EPOCH"]
    assert tx.check_produce("app", pid, ep, "orders", 1, version=11) == E["TRANSACTION_ABORTABLE"]


def test_verify_txn_offset_commit_maps_errors_by_api_version(cluster):
    tx = cluster.txns
    r = init(cluster, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    assert tx.verify_txn_offset_commit("app", pid, ep, "g", 3) == E["INVALID_TXN_STATE"]     # defaultError
    assert tx.verify_txn_offset_commit("app", pid, ep, "g", 4) == E["TRANSACTION_ABORTABLE"]  # genericError
    assert tx.verify_txn_offset_commit("app", pid, ep, "g", 5) == E["TRANSACTION_ABORTABLE"]  # no TV2: verify only
    assert add_offsets(cluster, "app", pid, ep, "g") == 0
    assert tx.verify_txn_offset_commit("app", pid, ep, "g", 3) == 0
    assert tx.verify_txn_offset_commit("app", pid, ep + 1, "g", 4) == E["INVALID_PRODUCER_EPOCH"]
    assert tx.verify_txn_offset_commit("ghost", 1, 0, "g", 4) == E["INVALID_PRODUCER_ID_MAPPING"]


def test_verify_txn_offset_commit_v5_adds_the_offsets_partition_under_tv2(cluster_tv2):
    tx = cluster_tv2.txns
    r = init(cluster_tv2, "app")
    pid, ep = r["ProducerId"], r["ProducerEpoch"]
    assert tx.verify_txn_offset_commit("app", pid, ep, "group1", 4) == E["TRANSACTION_ABORTABLE"]
    assert tx.verify_txn_offset_commit("app", pid, ep, "group1", 5) == 0
    assert tx.describe("app")["partitions"] == [("__consumer_offsets", 40)]       # GroupCoordinatorService.partitionFor: group1 -> 40
    assert tx.verify_txn_offset_commit("app", pid, ep + 3, "group1", 6) == E["INVALID_PRODUCER_EPOCH"]


# ---- robustness ----------------------------------------------------------------------------------------
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          deadline=None)
@given(data=st.data())
def test_random_transaction_requests_never_raise_and_always_decode(data):
    c = Cluster(transaction_version=data.draw(st.sampled_from([1, 2])))
    c.create_topic("orders", 2)
    init(c, "t")
    for _ in range(4):
        api = data.draw(st.sampled_from(TXN_APIS))
        spec = registry.get(api + "Request")
        version = data.draw(st.sampled_from(list(spec.versions)))
        body = data.draw(message_values(spec, version))
        if data.draw(st.booleans()):
            for k in ("TransactionalId", "V3AndBelowTransactionalId"):
                if k in body:
                    body[k] = "t"
        frame = codec.encode_request(api, version, body, correlation_id=3)
        out = c.handle(frame)
        served = served_versions(api, c.config)
        if served[0] <= version <= served[1]:       # otherwise the connection closes, unanswered
            codec.decode_response(out, api, version)
        else:
            assert out == b""
        if data.draw(st.booleans()):
            c.advance(data.draw(st.integers(0, 80_000)))
    assert c.internal_errors == []
