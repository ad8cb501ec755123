"""Exactly-once, end to end: a hypothesis state machine over a cluster, a consumer (KIP-848 or
classic) and transactional producers running the read-process-write loop with random commits,
aborts, stalls (virtual time: transaction and session timeouts) and fencing by a new instance.

Invariants, after every step:
* cluster.handle never raises (an exception would fail the step), internal_errors stays empty and
  every response frame decodes;
* the group's committed offsets are exactly those staged in committed transactions;
* what read_committed sees in the output is exactly the output of committed transactions, and
  (exactly once) it is the transformed input, in order, up to the committed offset, without gaps
  or duplicates."""
from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.clients import (
    AbortableError,
    Consumer,
    FatalError,
    Producer,
    ProducerFencedError,
    RetriesExhaustedError,
)

GROUP, TXN = "eos-app", "eos-tx"
PARTS = (0, 1)


def transform(v: bytes) -> bytes:
    return b"T(" + v + b")"


class EosMachine(RuleBasedStateMachine):

    @initialize(protocol=st.sampled_from(["consumer", "classic"]), tv=st.sampled_from([1, 2]),
                seed=st.integers(0, 3), records=st.integers(4, 14))
    def start(self, protocol, tv, seed, records):
        c = self.cluster = Cluster(seed=seed, transaction_version=tv)
        c.create_topic("in", 2)
        c.create_topic("out", 2)
        # input: an aborted transaction first (never to be processed), then plain records
        junk = Producer(c, "junk-tx", client_id="junk")
        junk.init_transactions()
        junk.begin_transaction()
        junk.send("in", None, b"junk", partition=0)
        junk.abort_transaction()
        loader = Producer(c, None, client_id="loader")
        for i in range(records):
            loader.send("in", b"k%d" % i, b"v%d" % i, partition=i % 2)
        self.protocol = protocol
        self.n_producers = 0
        self.n_consumers = 0
        self.checked = 0
        self.out: dict[int, list[bytes]] = {p: [] for p in PARTS}       # committed output
        self.offsets: dict[tuple[str, int], int] = {}                    # committed offsets
        self.open: tuple[list, dict] | None = None                       # staged (records, offsets)
        self.consumer = self._new_consumer()
        self.producer = self._new_producer()

    # ---- helpers -----------------------------------------------------------------------------------
    def _new_consumer(self) -> Consumer:
        self.n_consumers += 1
        c = Consumer(self.cluster, GROUP, client_id=f"consumer-{self.n_consumers}", protocol=self.protocol,
                     session_timeout_ms=45000)
        c.subscribe(["in"])
        return c

    def _new_producer(self) -> Producer:
        self.n_producers += 1
        p = Producer(self.cluster, TXN, client_id=f"producer-{self.n_producers}", transaction_timeout_ms=20000,
                     retries=30)
        p.init_transactions()
        return p

    def _rewind(self) -> None:
        """The staged work is gone: read again from the committed offsets."""
        self.open = None
        if self.consumer.assignment():
            self.consumer.seek_to_committed()

    def _abort(self) -> None:
        try:
            self.producer.abort_transaction()
        except FatalError:
            self.producer = self._new_producer()
        self._rewind()

    def _lost_producer(self) -> None:
        self.producer = self._new_producer()
        self._rewind()

    # ---- rules ---------------------------------------------------------------------------------------
    @precondition(lambda self: self.open is None)
    @rule(n=st.integers(1, 4))
    def process(self, n):
        records = self.consumer.poll(n)
        p = self.producer
        try:
            p.begin_transaction()
            for r in records:
                p.send("out", r.key, transform(r.value), partition=r.partition)
            offsets = {}
            for r in records:
                offsets[(r.topic, r.partition)] = max(offsets.get((r.topic, r.partition), 0), r.offset + 1)
            if offsets:
                p.send_offsets_to_transaction(offsets, self.consumer.group_metadata())
        except FatalError:
            self._lost_producer()
            return
        except AbortableError:           # e.g. the group refused the offsets (stale member epoch)
            self._abort()
            return
        self.open = (records, offsets)

    @precondition(lambda self: self.open is not None)
    @rule()
    def commit(self):
        records, offsets = self.open
        try:
            self.producer.commit_transaction()
        except FatalError:
            self._lost_producer()
            return
        except AbortableError:
            self._abort()
            return
        for r in records:
            self.out[r.partition].append(transform(r.value))
        self.offsets.update(offsets)
        self.open = None

    @precondition(lambda self: self.open is not None)
    @rule()
    def abort(self):
        self._abort()

    @rule(ms=st.sampled_from([100, 5000, 30000, 46000]))
    def advance(self, ms):
        """Time passes: heartbeats fall due, a transaction may time out (20 s, scanned every 10 s),
        the consumer's session may expire (45 s)."""
        self.cluster.advance(ms)

    @rule()
    def heartbeat(self):
        """The consumer's background thread: membership only, no fetch (also mid-transaction)."""
        self.consumer.heartbeat()

    @rule()
    def fence(self):
        """A second instance with the same transactional.id starts; the old one is a zombie."""
        old = self.producer
        started = old.state == "IN_TRANSACTION" and old.transactions.started
        self._lost_producer()
        if started:
            try:
                old.commit_transaction()
                raise AssertionError("a fenced producer committed")
            except ProducerFencedError:
                pass
            except FatalError as e:       # INVALID_TXN_STATE and the like: fatal all the same
                assert e.error != "NONE"
            assert old.state == "FATAL_ERROR"

    @precondition(lambda self: self.open is None)
    @rule()
    def restart_consumer(self):
        """The consumer leaves and a new one takes over, from the committed offsets."""
        self.consumer.close()
        self.consumer = self._new_consumer()

    # ---- invariants ------------------------------------------------------------------------------------
    @invariant()
    def no_internal_errors_and_every_response_decodes(self):
        assert self.cluster.internal_errors == []
        events = self.cluster.events
        for e in events[self.checked:]:
            if e.kind == "ResponseSent" and e.frame:
                codec.decode_response(e.frame, e.api, e.version)
        self.checked = len(events)

    @invariant()
    def committed_offsets_are_those_of_committed_transactions(self):
        got = {tp: c.offset for tp, c in self.cluster.groups.offsets.by_group.get(GROUP, {}).items()}
        assert got == self.offsets

    @invariant()
    def read_committed_output_is_the_committed_output_exactly_once(self):
        for p in PARTS:
            visible = [e.value for e in self.cluster.topics.partition("out", p).visible(1)]
            assert visible == self.out[p]
            source = self.cluster.topics.partition("in", p).visible(1)
            k = len(visible)
            assert visible == [transform(e.value) for e in source[:k]]
            if k:
                assert self.offsets[("in", p)] == source[k - 1].offset + 1
            else:
                assert ("in", p) not in self.offsets

    def teardown(self):
        if getattr(self, "cluster", None) is None:
            return
        # a real read_committed consumer agrees with the broker's view
        reader = Consumer(self.cluster, None, client_id="reader")
        reader.assign([("out", p) for p in PARTS])
        got = {p: [] for p in PARTS}
        for r in reader.poll(10_000):
            got[r.partition].append(r.value)
        assert got == self.out
        assert b"T(junk)" not in sum(got.values(), [])
        assert self.cluster.internal_errors == []


EosMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
TestEosMachine = EosMachine.TestCase


def test_retries_exhausted_is_a_producer_error():
    # the state machine treats RetriesExhaustedError as neither fatal nor abortable: it must not happen
    assert not issubclass(RetriesExhaustedError, (FatalError, AbortableError))
