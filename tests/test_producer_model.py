"""The producer model (kipviz.clients.producer) against the Cluster, everything in real frames.

Checks version negotiation, transaction version 1 vs 2 flows, KIP-1319's v6 -> v5 fallback and
error classification (the KIP-1319 page), fencing, and a hypothesis state machine over random producer
operations: the cluster never raises, every response decodes, and a read_committed reader sees
exactly the records of committed transactions."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.broker.handlers import HANDLERS, load_all
from kipviz.clients import (
    AbortableError,
    CommitFailedError,
    FatalError,
    IllegalStateError,
    Producer,
    ProducerFencedError,
    RetriesExhaustedError,
    classify_txn_offset_commit_error,
)
from kipviz.clients.base import client_max_version
from kipviz.clients.producer import default_partition, murmur2
from kipviz.codec.fit import complete_body
from kipviz.schema import events as ev
from kipviz.schema.error_codes import CODE

E = CODE
load_all()


def needs(*apis):
    missing = sorted(set(apis) - set(HANDLERS))
    return pytest.mark.skipif(bool(missing), reason=f"no handler yet for {', '.join(missing)}")


FLOW = needs("FindCoordinator", "Metadata", "Produce")
GM = {"group_id": "g", "generation_id": -1, "member_id": "", "group_instance_id": None}


def requests(cluster, api=None):
    return [(e.api, e.version) for e in cluster.events
            if e.kind == "RequestReceived" and (api is None or e.api == api)]


def did(cluster, kind):
    return [e for e in cluster.events if isinstance(e, kind)]


def committed_values(cluster, topic, partition):
    return [e.value for e in cluster.topics.partition(topic, partition).visible(1)]


def all_responses_decode(cluster):
    for e in cluster.events:
        if e.kind == "ResponseSent" and e.frame:
            codec.decode_response(e.frame, e.api, e.version)


def _resolving_txn_offset_commit(cluster, req):
    """Stand-in used only while the group coordinator's TxnOffsetCommit handler is missing: topic
    resolution as KIP-1319 describes (v6 ids -> UNKNOWN_TOPIC_ID, v0-5 names ->
    UNKNOWN_TOPIC_OR_PARTITION), then the transaction coordinator's verification; no group checks."""
    b = req.body
    code = cluster.txns.verify_txn_offset_commit(b["TransactionalId"], b["ProducerId"], b["ProducerEpoch"],
                                                 b["GroupId"], req.version)
    topics = []
    for t in b["Topics"]:
        if req.version >= 6:
            found, missing = cluster.topics.live(t["TopicId"]), E["UNKNOWN_TOPIC_ID"]
        else:
            found, missing = cluster.topics.get(t["Name"]), E["UNKNOWN_TOPIC_OR_PARTITION"]
        topics.append({"Name": t.get("Name"), "TopicId": t.get("TopicId"),
                       "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": code if found else missing}
                                      for p in t["Partitions"]]})
    return complete_body("TxnOffsetCommitResponse", req.version, {"Topics": topics})


@pytest.fixture(autouse=True)
def _txn_offset_commit(monkeypatch):
    if "TxnOffsetCommit" not in HANDLERS:
        monkeypatch.setitem(HANDLERS, "TxnOffsetCommit", _resolving_txn_offset_commit)


OFFSETS = FLOW


@pytest.fixture
def tv1():
    c = Cluster(transaction_version=1)
    c.create_topic("in", 2)
    c.create_topic("out", 3)
    yield c
    assert c.internal_errors == []


@pytest.fixture
def tv2():
    c = Cluster(transaction_version=2)
    c.create_topic("in", 2)
    c.create_topic("out", 3)
    yield c
    assert c.internal_errors == []


# ---- pure parts -----------------------------------------------------------------------------------
def test_client_max_version_is_the_newest_non_proposed_version():
    assert client_max_version("TxnOffsetCommit") == 6          # v6 is released (KIP-1319, Kafka 4.4)
    assert client_max_version("EndTxn") == 5
    assert client_max_version("AddPartitionsToTxn") == 3       # v4+ is the broker-to-coordinator form


def test_default_partitioner_is_kafkas_murmur2():
    # values from Kafka's UtilsTest.testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert default_partition(b"21", 3) == (-973932308 & 0x7FFFFFFF) % 3


@pytest.mark.parametrize("name, kind", [
    ("NONE", "ok"),
    ("GROUP_ID_NOT_FOUND", "commit-failed"), ("STALE_MEMBER_EPOCH", "commit-failed"),
    ("ILLEGAL_GENERATION", "commit-failed"), ("UNKNOWN_MEMBER_ID", "commit-failed"),
    ("UNKNOWN_TOPIC_ID", "retriable"), ("UNKNOWN_TOPIC_OR_PARTITION", "retriable"),
    ("COORDINATOR_LOAD_IN_PROGRESS", "retriable"), ("CONCURRENT_TRANSACTIONS", "retriable"),
    ("COORDINATOR_NOT_AVAILABLE", "coordinator"), ("NOT_COORDINATOR", "coordinator"),
    ("PRODUCER_FENCED", "fenced"), ("INVALID_PRODUCER_EPOCH", "fenced"),
    ("GROUP_AUTHORIZATION_FAILED", "abortable"), ("FENCED_INSTANCE_ID", "abortable"),
    ("TRANSACTION_ABORTABLE", "abortable"),
    ("INVALID_TXN_STATE", "fatal"), ("UNKNOWN_SERVER_ERROR", "fatal"),
])
def test_txn_offset_commit_errors_are_classified_as_kip_1319_says(name, kind):
    assert classify_txn_offset_commit_error(0 if name == "NONE" else E[name]) == kind


# ---- version negotiation ------------------------------------------------------------------------------
@FLOW
def test_versions_are_min_of_client_max_and_broker_max(tv2):
    c = Cluster(api_versions={"EndTxn": (0, 3), "InitProducerId": (0, 2)})
    c.create_topic("out", 1)
    p = Producer(c, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"k", b"v")
    p.commit_transaction()
    assert requests(c, "InitProducerId") == [("InitProducerId", 2)]
    assert requests(c, "EndTxn") == [("EndTxn", 3)]
    chosen = {d.api: d for d in did(c, ev.VersionChosen)}
    assert chosen["EndTxn"].broker_max == 3 and chosen["EndTxn"].client_max == 5
    assert requests(c, "ApiVersions")[0][1] == client_max_version("ApiVersions")
    assert c.internal_errors == []


@FLOW
def test_transaction_version_2_adds_partitions_implicitly_and_bumps_the_epoch(tv2):
    p = Producer(tv2, "tx")
    pid, epoch = p.init_transactions()
    assert p.tv2
    for n in range(3):
        p.begin_transaction()
        p.send("out", b"k", b"v%d" % n, partition=1)
        p.commit_transaction()
        assert (p.producer_id, p.producer_epoch) == (pid, epoch + n + 1)      # EndTxn v5 hands back epoch+1
    assert requests(tv2, "AddPartitionsToTxn") == []
    assert {v for _, v in requests(tv2, "Produce")} >= {12} or {v for _, v in requests(tv2, "Produce")} == {13}
    assert {v for _, v in requests(tv2, "EndTxn")} == {5}
    assert committed_values(tv2, "out", 1) == [b"v0", b"v1", b"v2"]
    marker_epochs = [e.producer_epoch for e in tv2.topics.partition("out", 1).entries if e.control]
    assert marker_epochs == [epoch + 1, epoch + 2, epoch + 3]
    all_responses_decode(tv2)


@FLOW
def test_transaction_version_1_adds_partitions_explicitly_and_keeps_the_epoch(tv1):
    p = Producer(tv1, "tx")
    pid, epoch = p.init_transactions()
    assert not p.tv2
    p.begin_transaction()
    p.send("out", b"a", b"1", partition=0)
    p.send("out", b"b", b"2", partition=0)
    p.send("out", b"c", b"3", partition=2)
    p.commit_transaction()
    assert requests(tv1, "AddPartitionsToTxn") == [("AddPartitionsToTxn", 3)] * 2     # once per partition
    assert {v for _, v in requests(tv1, "Produce")} == {11}
    assert requests(tv1, "EndTxn") == [("EndTxn", 4)]
    assert (p.producer_id, p.producer_epoch) == (pid, epoch)
    assert committed_values(tv1, "out", 0) == [b"1", b"2"] and committed_values(tv1, "out", 2) == [b"3"]


@FLOW
def test_an_empty_transaction_sends_no_end_txn(tv2):
    p = Producer(tv2, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.commit_transaction()
    p.begin_transaction()
    p.abort_transaction()
    assert requests(tv2, "EndTxn") == []
    assert [d.result for d in did(tv2, ev.EndTxnSkipped)] == ["commit", "abort"]


@FLOW
@pytest.mark.parametrize("tv", [1, 2])
def test_abort_hides_the_records_from_read_committed(tv):
    c = Cluster(transaction_version=tv)
    c.create_topic("out", 1)
    p = Producer(c, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", None, b"keep")
    p.commit_transaction()
    p.begin_transaction()
    p.send("out", None, b"drop")
    assert committed_values(c, "out", 0) == [b"keep"]       # open transaction: stops at the LSO
    p.abort_transaction()
    assert committed_values(c, "out", 0) == [b"keep"]
    assert [e.value for e in c.topics.partition("out", 0).visible(0)] == [b"keep", b"drop"]
    assert c.internal_errors == []


# ---- fencing and timeouts -------------------------------------------------------------------------
@FLOW
@pytest.mark.parametrize("tv", [1, 2])
def test_a_second_producer_fences_the_first(tv):
    c = Cluster(transaction_version=tv)
    c.create_topic("out", 1)
    old = Producer(c, "tx", client_id="old")
    old.init_transactions()
    old.begin_transaction()
    old.send("out", None, b"zombie")
    new = Producer(c, "tx", client_id="new")
    new.init_transactions()               # CONCURRENT_TRANSACTIONS while the old one is aborted, then retried
    assert any(d.error == "CONCURRENT_TRANSACTIONS" for d in did(c, ev.Retried))
    with pytest.raises(ProducerFencedError) as info:
        old.send("out", None, b"late")
    assert info.value.error in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert old.state == "FATAL_ERROR"
    with pytest.raises(IllegalStateError):
        old.commit_transaction()
    new.begin_transaction()
    new.send("out", None, b"fresh")
    new.commit_transaction()
    assert committed_values(c, "out", 0) == [b"fresh"]
    assert c.internal_errors == []


@FLOW
@pytest.mark.parametrize("tv", [1, 2])
def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(tv):
    c = Cluster(transaction_version=tv)
    c.create_topic("out", 1)
    p = Producer(c, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", None, b"slow")
    c.advance(61_000 + 10_000)
    assert c.txns.state_of("tx") == "CompleteAbort"
    with pytest.raises(FatalError) as info:
        p.commit_transaction()
    assert info.value.error in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert committed_values(c, "out", 0) == []
    assert c.internal_errors == []


# ---- offsets, KIP-1319 ------------------------------------------------------------------------------
@OFFSETS
def test_txn_offset_commit_uses_v6_with_topic_ids(tv2):
    p = Producer(tv2, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"k", b"v")
    p.send_offsets_to_transaction({("in", 0): 10, ("in", 1): (7, "meta")}, GM)
    p.commit_transaction()
    reqs = [e for e in tv2.events if e.kind == "RequestReceived" and e.api == "TxnOffsetCommit"]
    assert [r.version for r in reqs] == [6]
    assert [t["TopicId"] for t in reqs[0].body["Topics"]] == [tv2.topics.get("in").topic_id]
    assert did(tv2, ev.TxnOffsetCommitVersionChosen)[-1].version == 6
    assert requests(tv2, "AddOffsetsToTxn") == []          # TV2: v5+ adds the offsets partition itself


@OFFSETS
def test_txn_offset_commit_falls_back_to_v5_against_a_broker_without_v6():
    c = Cluster(api_versions={"TxnOffsetCommit": (0, 5)})
    c.create_topic("in", 1)
    p = Producer(c, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 3}, GM)
    p.commit_transaction()
    reqs = [e for e in c.events if e.kind == "RequestReceived" and e.api == "TxnOffsetCommit"]
    assert [r.version for r in reqs] == [5] and reqs[0].body["Topics"][0]["Name"] == "in"
    assert "v5" in did(c, ev.TxnOffsetCommitVersionChosen)[-1].reason
    assert c.internal_errors == []


@OFFSETS
def test_txn_offset_commit_falls_back_to_v5_when_a_topic_id_is_unknown():
    c = Cluster(api_versions={"Metadata": (0, 9)})             # no topic ids before Metadata v10
    c.create_topic("in", 1)
    p = Producer(c, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 3}, GM)
    p.commit_transaction()
    assert requests(c, "TxnOffsetCommit") == [("TxnOffsetCommit", 5)]
    fallback = did(c, ev.TxnOffsetCommitFallback)
    assert [(f.version, f.reason, f.topics) for f in fallback] == [(5, "topic id unknown", ("in",))]
    assert c.internal_errors == []


@OFFSETS
def test_txn_offset_commit_for_a_topic_that_does_not_exist_retries_then_gives_up(tv2):
    p = Producer(tv2, "tx", retries=2)
    p.init_transactions()
    p.begin_transaction()
    with pytest.raises(RetriesExhaustedError) as info:
        p.send_offsets_to_transaction({("ghost", 0): 1}, GM)
    assert info.value.error == "UNKNOWN_TOPIC_OR_PARTITION"
    assert {v for _, v in requests(tv2, "TxnOffsetCommit")} == {5}           # no id for it: whole request v5
    assert len(did(tv2, ev.Retried)) == 3


@OFFSETS
def test_a_stale_topic_id_is_retried_and_mapped_back_to_its_name(tv2):
    p = Producer(tv2, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 1}, GM)
    p.commit_transaction()
    old_id = tv2.topics.get("in").topic_id
    tv2.delete_topic("in")
    new_id = tv2.create_topic("in", 2)
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 1): 2}, GM)        # first with the cached (stale) id
    p.commit_transaction()
    sent = [e.body["Topics"][0]["TopicId"] for e in tv2.events
            if e.kind == "RequestReceived" and e.api == "TxnOffsetCommit"]
    assert sent == [old_id, old_id, new_id]
    errors = did(tv2, ev.TxnOffsetCommitFailed)
    assert [(e.topic, e.partition, e.error, e.handling, e.version) for e in errors] == [
        ("in", 1, "UNKNOWN_TOPIC_ID", "retriable", 6)]


def _answering(code_for_version):
    """A TxnOffsetCommit handler answering every partition with one error (per version)."""
    def handler(cluster, req):
        code = code_for_version(req.version)
        topics = [{"Name": t.get("Name"), "TopicId": t.get("TopicId"),
                   "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": code}
                                  for p in t["Partitions"]]} for t in req.body["Topics"]]
        return complete_body("TxnOffsetCommitResponse", req.version, {"Topics": topics})
    return handler


@FLOW
@pytest.mark.parametrize("error", ["GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "ILLEGAL_GENERATION",
                                   "UNKNOWN_MEMBER_ID"])
def test_group_errors_are_abortable_commit_failed(tv2, monkeypatch, error):
    monkeypatch.setitem(HANDLERS, "TxnOffsetCommit", _answering(lambda v: E[error]))
    p = Producer(tv2, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", None, b"x")
    with pytest.raises(CommitFailedError) as info:
        p.send_offsets_to_transaction({("in", 0): 1}, {"group_id": "g", "member_epoch": 5, "member_id": "m"})
    assert info.value.error == error and isinstance(info.value, AbortableError)
    assert p.state == "ABORTABLE_ERROR"
    with pytest.raises(AbortableError):
        p.commit_transaction()
    p.abort_transaction()                                     # abort and carry on
    assert p.state == "READY"
    p.begin_transaction()
    p.send("out", None, b"y", partition=0)
    p.commit_transaction()
    assert b"x" not in [v for q in range(3) for v in committed_values(tv2, "out", q)]
    req = [e for e in tv2.events if e.kind == "RequestReceived" and e.api == "TxnOffsetCommit"][0]
    assert req.body["GenerationIdOrMemberEpoch"] == 5 and req.body["MemberId"] == "m"


@FLOW
@pytest.mark.parametrize("error", ["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"])
def test_fenced_txn_offset_commit_is_fatal(tv2, monkeypatch, error):
    monkeypatch.setitem(HANDLERS, "TxnOffsetCommit", _answering(lambda v: E[error]))
    p = Producer(tv2, "tx")
    p.init_transactions()
    p.begin_transaction()
    with pytest.raises(ProducerFencedError):
        p.send_offsets_to_transaction({("in", 0): 1}, GM)
    assert p.state == "FATAL_ERROR"


@FLOW
def test_unknown_topic_id_is_retriable_and_re_enqueued(tv2, monkeypatch):
    answers = iter([E["UNKNOWN_TOPIC_ID"], E["UNKNOWN_TOPIC_ID"], 0])
    monkeypatch.setitem(HANDLERS, "TxnOffsetCommit", _answering(lambda v: next(answers)))
    p = Producer(tv2, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 1}, GM)
    assert [d.error for d in did(tv2, ev.Retried)] == ["UNKNOWN_TOPIC_ID"] * 2
    assert tv2.now == 2 * p.retry_backoff_ms                  # backoff is virtual time
    assert p.state == "IN_TRANSACTION"


@FLOW
def test_transaction_version_1_sends_add_offsets_then_txn_offset_commit_v4(tv1, monkeypatch):
    p = Producer(tv1, "tx")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 1}, GM)
    p.commit_transaction()
    apis = [a for a, _ in requests(tv1) if a in ("AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn")]
    assert apis == ["AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"]
    assert requests(tv1, "TxnOffsetCommit") == [("TxnOffsetCommit", 4)]
    assert tv1.txns.describe("tx")["state"] == "CompleteCommit"


# ---- the state machine over random producer operations ---------------------------------------------
@FLOW
class ProducerMachine(RuleBasedStateMachine):
    """Random begin/send/commit/abort/advance/fence operations; a read_committed reader must see
    exactly the records of committed transactions, in order."""

    @initialize(tv=st.sampled_from([1, 2]))
    def start(self, tv):
        self.n = 0
        self.cluster = Cluster(transaction_version=tv)
        self.cluster.create_topic("out", 2)
        self.committed = {0: [], 1: []}
        self.pending = {0: [], 1: []}
        self.producer = self._new_producer()

    def _new_producer(self):
        self.n += 1
        p = Producer(self.cluster, "tx", client_id=f"p{self.n}", retries=30)
        p.init_transactions()
        self.pending = {0: [], 1: []}
        return p

    def _lost(self):
        """The producer was fenced (or timed out): its open transaction is aborted; start again."""
        self.producer = self._new_producer()

    @rule()
    def begin(self):
        if self.producer.state == "READY":
            self.producer.begin_transaction()

    @rule(partition=st.sampled_from([0, 1]), count=st.integers(1, 3))
    def send(self, partition, count):
        if self.producer.state == "READY":
            self.producer.begin_transaction()
        for _ in range(count):
            self.n += 1
            value = b"v%d" % self.n
            try:
                self.producer.send("out", None, value, partition=partition)
            except FatalError:
                self._lost()
                return
            self.pending[partition].append(value)

    @rule()
    def commit(self):
        self.end(True)

    @rule()
    def abort(self):
        self.end(False)

    def end(self, commit):
        if self.producer.state != "IN_TRANSACTION":
            return
        try:
            if commit:
                self.producer.commit_transaction()
            else:
                self.producer.abort_transaction()
        except FatalError:
            self._lost()
            return
        if commit:
            for q in (0, 1):
                self.committed[q] += self.pending[q]
        self.pending = {0: [], 1: []}

    @rule(ms=st.sampled_from([10, 5_000, 30_000, 71_000]))
    def advance(self, ms):
        self.cluster.advance(ms)

    @rule(partition=st.sampled_from([0, 1]))
    def fence(self, partition):
        """A second instance with the same transactional.id takes over; the old one is a zombie
        whose writes are refused (and never become visible)."""
        old = self.producer
        self._lost()
        if old.state in ("READY", "IN_TRANSACTION"):
            if old.state == "READY":
                old.begin_transaction()
            with pytest.raises(FatalError):
                old.send("out", None, b"zombie", partition=partition)
            assert old.state == "FATAL_ERROR"

    @invariant()
    def read_committed_sees_exactly_the_committed_records(self):
        assert self.cluster.internal_errors == []
        for q in (0, 1):
            assert committed_values(self.cluster, "out", q) == self.committed[q]

    def teardown(self):
        if getattr(self, "cluster", None) is not None:
            all_responses_decode(self.cluster)
            assert self.cluster.internal_errors == []


ProducerMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=40, deadline=None,
                                             suppress_health_check=[HealthCheck.too_slow])
TestProducerMachine = FLOW(ProducerMachine.TestCase)
