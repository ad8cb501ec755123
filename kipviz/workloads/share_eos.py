"""A seeded share-group read-process-write workload with KIP-1289 (PROPOSED) transactional
acknowledgements, and the seed's corner-case faults injected on a schedule.

    from kipviz.workloads import run_share_eos, Fault
    result = run_share_eos(records=2_000, consumers=4, partitions=2, seed=7, batch=50,
                           faults=[Fault(10, "broker-crash"), (25, "share-state-leader-change", {})])
    result.stats                     # steps, transactions, aborts, errors, transitions, virtual and wall time
    result.faults                    # one row per scheduled fault: when it fired, on whom, what happened
    result.check().summary()         # kipviz.eos over the run (documented windows 1 and 12 allowed)

THE LOOP. Every consumer is a ShareConsumer (explicit acknowledgement) paired with a transactional
Producer (transactional id "{group}-worker-{i}"); one step is one loop iteration of one
worker, round robin: poll -> begin -> write one output record per input record, with the header
kipviz.eos.source_header(...), as one record batch per output partition -> acknowledge ACCEPT (or
REJECT for a `reject_rate` share of inputs, which write no output) -> shareGroupMetadata() ->
send_share_acknowledgements_to_transaction -> commit. Any error follows the KIP's pseudo code: an
abortable one aborts; a fatal one (fenced, unsupported version, retries exhausted, abort failing)
drops the producer, and a new instance with the same transactional id (InitProducerId fences the
old one and aborts its open transaction) is made at the worker's next step. The batch is retried
(`max_attempts`); after that its records are RELEASEd (plain ShareAcknowledge) for redelivery.
After each step the virtual clock moves `step_ms`; each member heartbeats every
group.share.heartbeat.interval.ms. When every input record is written and terminal the run drains:
faults are healed (brokers restarted, held markers released, share.version restored) and the
workers keep going, sleeping past the acquisition lock when idle, until every input record is
ACKNOWLEDGED or ARCHIVED (or `drain_rounds` ran out: the stats say so). Finally every consumer
closes.

Model limits the driver works around (see the report of kipviz issue 6): the ShareConsumer model
sends every share RPC to broker 0, so the input partitions are led by broker 0 (the output and
__transaction_state partitions stay spread over the brokers); records are written with
Producer.send_batch (one record batch per Produce, as Kafka's RecordAccumulator does).

MARKER ROUTING. The cluster runs KIP-1289 as written (share_marker_routing "page", unless
cluster_settings says otherwise): a COMMIT marker on __share_group_state-N resolves only the share
partitions led by the broker that receives it. The workload therefore CO-LOCATES, on purpose, the
input partitions' __share_group_state-N with them on broker 0 (the KIP's worked example), and after
a share-state-leader-change fault leadership returns home at the end of that step (a
preferred-leader election): the fault is the KIP's case 12 window, not the not-co-located loss of
every later staging (scenario kip1289.marker_not_colocated shows that one).

FAULTS: `faults` is a list of Fault(at, kind, params) (or (at, kind[, params]) tuples or dicts).
`at` is a step number. A fault with a `point` fires at that point of the next iteration of its
worker (params["worker"], default the worker of step `at`) that reaches it -- after-poll,
after-produce, after-snapshot (between shareGroupMetadata() and the staging call), after-stage,
after-commit; the others fire at the start of step `at`. Every firing is recorded as a Note
("fault: ...") and as a row of WorkloadResult.faults. Kinds (seed 004 corner case in brackets):

  broker-crash (1)            crash `broker` (default 0: the share-partition leader; ACQUIRED and
                              TX_PENDING live in its memory) at `point` (after-stage | after-poll |
                              idle), restart it `down_ms` later on the virtual clock
  coordinator-unavailable (2) the next `count` broker-internal AddPartitionsToTxn registrations of
                              __share_group_state-N fail with COORDINATOR_NOT_AVAILABLE /
                              NOT_COORDINATOR (wraps ShareTransactions.add_state_partitions,
                              as scenario kip1289.case02 does)
  zombie-producer (3)         at `point` (after-produce | after-stage) a new producer instance with
                              the worker's transactional id initialises; the old one carries on and
                              is fenced; the worker adopts the new one
  duplicate-marker (5)        the last commit's WriteTxnMarkers are sent again (WriteTxnMarkers v2,
                              TransactionVersion 2) right after it (`when` now) or during the
                              worker's next staged transaction (`when` next-stage)
  lock-expiry (6)             the worker stalls past the acquisition lock at `point` (after-poll |
                              after-produce): its staging then finds the records gone (released
                              KIP-932 behaviour)
  lock-expiry-tx-pending (6)  the worker stalls past the lock while its acks are TX_PENDING, then
                              commits: the KIP's case 6 (the lock reverts TX_PENDING, the late
                              marker is filtered) -- the output is committed and the record is
                              redelivered: a duplicate the KIP does not list as a window (NOT in
                              DEFAULT_KINDS)
  transaction-timeout (7)     the worker's process dies after staging; time jumps past
                              transaction.timeout.ms so the coordinator aborts; it restarts later
  rebalance (8)               between shareGroupMetadata() and the call a member joins and the
                              worker heartbeats: STALE_MEMBER_EPOCH
  old-broker (9)              share.version goes to 1 for `steps` steps (no TxnShareAcknowledge
                              advertised); refused while any record is TX_PENDING, as the KIP's
                              downgrade rule says
  invalid-ack-type (10)       one acknowledgement in the transaction is RELEASE / RENEW / GAP
  partial-failure (11)        the staging call also names offsets of another partition that are not
                              in flight: all or nothing
  share-state-leader-change (12)  after staging, leadership of the staged records'
                              __share_group_state-N moves (`to_broker`); it returns after the step
  marker-never-arrives (13)   after staging, the markers for __share_group_state-N are held; the
                              worker commits (or aborts: `outcome`), stalls past the lock, then the
                              markers are released (they arrive late and resolve nothing)
  concurrent-epochs (14)      before the worker's staging, an old in-flight TxnShareAcknowledge
                              with the previous producer epoch arrives (PRODUCER_FENCED)

SCALE. Events: with `on_events`, every `events_chunk` events (and at the end) the driver hands
cluster.take_events() to on_events(chunk) -- the cluster's list restarts empty and seq numbers
continue, so memory stays flat and the chunks concatenate into one stream; with check=True the
chunks are also fed to an incremental kipviz.eos.ShareEosChecker (result.report). Input: up to
`preload` records are written before the first step, the rest topped up as the consumers catch up.
The model's partition logs keep every record, so memory still grows with `records`."""
from __future__ import annotations

import itertools
import operator
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from ..broker import Cluster
from ..broker.share_txn import pending as tx_pending
from ..clients.producer import (
    FatalError,
    IllegalStateError,
    Producer,
    ProducerError,
    UnsupportedVersionError,
)
from ..clients.share_consumer import ShareConsumer
from ..eos import ShareEosChecker, check_share_eos, source_header
from ..gcpause import rare_collections
from ..records import share_coordinator_partition
from ..schema import events as ev
from ..schema.error_codes import CODE, NAME
from ..schema.events import StateChanged

STATUS = "proposed"
KIP = "KIP-1289"
SHARE_STATE = "__share_group_state"

# kind -> seed 004 corner case
FAULT_KINDS = {
    "broker-crash": 1, "coordinator-unavailable": 2, "zombie-producer": 3, "duplicate-marker": 5,
    "lock-expiry": 6, "lock-expiry-tx-pending": 6, "transaction-timeout": 7, "rebalance": 8,
    "old-broker": 9, "invalid-ack-type": 10, "partial-failure": 11, "share-state-leader-change": 12,
    "marker-never-arrives": 13, "concurrent-epochs": 14,
}
# the faults after which the KIP promises exactly-once except its documented windows (cases 1, 12)
DEFAULT_KINDS = tuple(k for k in FAULT_KINDS if k != "lock-expiry-tx-pending")
POINTS = ("after-poll", "after-produce", "after-snapshot", "after-stage", "after-commit")
_DEFAULT_POINT = {"broker-crash": "after-stage", "zombie-producer": "after-produce",
                  "duplicate-marker": "after-commit", "lock-expiry": "after-produce",
                  "lock-expiry-tx-pending": "after-stage", "transaction-timeout": "after-stage",
                  "rebalance": "after-snapshot", "invalid-ack-type": "after-snapshot",
                  "partial-failure": "after-snapshot", "share-state-leader-change": "after-stage",
                  "marker-never-arrives": "after-stage", "concurrent-epochs": "after-snapshot"}
_IMMEDIATE = {"coordinator-unavailable", "old-broker"}


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: at step `at`, of `kind` (FAULT_KINDS), with `params`."""
    at: int
    kind: str
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")
        if not isinstance(self.at, int) or self.at < 0:
            raise ValueError(f"fault step must be an int >= 0, got {self.at!r}")

    @property
    def case(self) -> int:
        return FAULT_KINDS[self.kind]

    @property
    def point(self) -> str | None:
        if self.kind in _IMMEDIATE:
            return None
        p = self.params.get("point", _DEFAULT_POINT[self.kind])
        return None if p == "idle" else p

    @classmethod
    def of(cls, x) -> "Fault":
        if isinstance(x, Fault):
            return x
        if isinstance(x, dict):
            return cls(x["at"], x["kind"], dict(x.get("params") or {}))
        at, kind, *rest = x
        return cls(at, kind, dict(rest[0]) if rest and rest[0] else {})


def random_faults(seed, *, steps: int, count: int = 5, kinds=DEFAULT_KINDS, brokers: int = 3,
                  consumers: int | None = None) -> list[Fault]:
    """A reproducible random schedule: `count` faults of `kinds` at steps in [0, steps), with
    random points and parameters (brokers, down times, outcomes)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    kinds = list(kinds)
    out = []
    for _ in range(count):
        kind = rng.choice(kinds)
        p: dict = {}
        if kind == "broker-crash":
            p = {"broker": rng.randrange(brokers), "point": rng.choice(("after-stage", "after-poll", "idle")),
                 "down_ms": rng.choice((50, 300, 1500, 5000))}
        elif kind == "coordinator-unavailable":
            p = {"count": rng.choice((1, 2, 3, 30))}
        elif kind == "zombie-producer":
            p = {"point": rng.choice(("after-produce", "after-stage"))}
        elif kind == "duplicate-marker":
            p = {"when": rng.choice(("now", "next-stage"))}
        elif kind == "lock-expiry":
            p = {"point": rng.choice(("after-poll", "after-produce"))}
        elif kind == "old-broker":
            p = {"steps": rng.choice((1, 3, 10))}
        elif kind == "invalid-ack-type":
            p = {"type": rng.choice((0, 2, 4))}
        elif kind == "share-state-leader-change":
            p = {"to_broker": rng.randrange(brokers)}
        elif kind == "marker-never-arrives":
            p = {"outcome": rng.choice(("commit", "abort"))}
        if consumers and rng.random() < 0.5:
            p["worker"] = rng.randrange(consumers)
        out.append(Fault(rng.randrange(max(1, steps)), kind, p))
    return sorted(out, key=lambda f: f.at)


# ---- result ------------------------------------------------------------------------------------------------
@dataclass
class WorkloadResult:
    cluster: Cluster
    stats: dict
    faults: list[dict]
    group: str
    input_topic: str
    output_topic: str
    report: object = None          # kipviz.eos.Report when the run was checked (check=True)

    def check(self, allowed_at_least_once=True, **kw):
        """kipviz.eos.check_share_eos over the run's events (those still on the cluster: a run with
        on_events handed them over; use check=True there). Default: the KIP's documented windows
        (cases 1 and 12) are allowed and classified."""
        if self.cluster.events_taken:
            raise ValueError("the events were handed to on_events; run with check=True for a report")
        return check_share_eos(self.cluster.events, group=self.group, input_topic=self.input_topic,
                               output_topic=self.output_topic, allowed_at_least_once=allowed_at_least_once, **kw)


class _WorkerDied(Exception):
    pass


class _Done(Exception):
    """The iteration ended early on purpose (a fault aborted the transaction itself)."""


@dataclass
class _Worker:
    index: int
    name: str
    txn_id: str
    sc: ShareConsumer | None = None
    pr: Producer | None = None
    alive: bool = True
    revive_at: int = 0
    last_hb: int = -1
    retry: list = field(default_factory=list)
    attempts: int = 0
    armed: list = field(default_factory=list)       # [(Fault, row)]
    dup_markers: list = field(default_factory=list)     # [markers, fault row] to send at the next staging
    instances: int = 0


# ---- the workload -----------------------------------------------------------------------------------------
# fault kind -> the method of ShareEosWorkload that injects it
_FAULT_METHODS = {
    "broker-crash": "_fault_broker_crash",
    "coordinator-unavailable": "_fault_coordinator_unavailable",
    "zombie-producer": "_fault_zombie_producer",
    "duplicate-marker": "_fault_duplicate_marker",
    "lock-expiry": "_fault_lock_expiry",
    "lock-expiry-tx-pending": "_fault_lock_expiry",
    "transaction-timeout": "_fault_transaction_timeout",
    "rebalance": "_fault_rebalance",
    "old-broker": "_fault_old_broker",
    "invalid-ack-type": "_fault_invalid_ack_type",
    "partial-failure": "_fault_partial_failure",
    "share-state-leader-change": "_fault_share_state_leader_change",
    "marker-never-arrives": "_fault_marker_never_arrives",
    "concurrent-epochs": "_fault_concurrent_epochs",
}


class ShareEosWorkload:
    """The share-group EOS workload (module docstring); run() -> WorkloadResult, once. Options:

        records, consumers, partitions   input records, workers, input partitions
        output_partitions                default `partitions`; input partition p writes to p % this
        seed                             the cluster's seed, and the driver's (reject choices)
        faults                           Fault, (at, kind[, params]) or {"at", "kind", "params"} items
        batch                            records per poll (ShareFetch MaxRecords)
        brokers, step_ms                 cluster size; virtual time per step
        reject_rate                      share of inputs REJECTed in the transaction (no output)
        max_attempts                     tries of one batch before its records are RELEASEd
        on_events, events_chunk          on_events(cluster.take_events()) every events_chunk events
        check, allowed_at_least_once     feed an incremental ShareEosChecker -> result.report
        group, input_topic, output_topic names
        load_batch, preload              input records per Produce; how many before the first step
        max_steps, drain_rounds          bounds of the main loop and of the drain
        transaction_timeout_ms           the producers' transaction.timeout.ms
        pace                             a kipviz.workloads.pace.Pace: virtual time spent on round trips,
                                         processing and think time inside each iteration (None: none)
        cluster_settings                 more Cluster settings (share_version and
                                         transaction_version are 2 unless given)

    The cluster exists from construction (.cluster), so an on_events callback can read it, e.g.
    to write out and release the part of the logs it has seen."""

    def __init__(self, *, records: int = 1000, consumers: int = 3, partitions: int = 2,
                 output_partitions: int | None = None, seed: int = 0, faults=(), batch: int = 50,
                 brokers: int = 3, step_ms: int = 5, reject_rate: float = 0.0, max_attempts: int = 2,
                 on_events=None, events_chunk: int = 200_000, check: bool = False,
                 allowed_at_least_once=True, group: str = "sg", input_topic: str = "in",
                 output_topic: str = "out", load_batch: int = 500, preload: int = 200_000,
                 max_steps: int | None = None, drain_rounds: int = 40, transaction_timeout_ms: int = 60000,
                 cluster_settings: dict | None = None, pace=None):
        if records < 0 or consumers < 1 or partitions < 1 or batch < 1 or brokers < 1:
            raise ValueError("records >= 0, consumers, partitions, batch and brokers >= 1 are required")
        self.records, self.n_consumers, self.partitions = records, consumers, partitions
        self.out_partitions = output_partitions or partitions
        self.seed, self.batch, self.brokers, self.step_ms = seed, batch, brokers, step_ms
        self.reject_rate, self.max_attempts = reject_rate, max_attempts
        self.on_events, self.events_chunk = on_events, events_chunk
        self.group, self.input, self.output = group, input_topic, output_topic
        self.load_batch, self.preload = load_batch, preload
        self.max_steps = max_steps if max_steps is not None else 20 * (records // max(1, batch) + 1) * consumers + 1000
        self.drain_rounds = drain_rounds
        self.txn_timeout_ms = transaction_timeout_ms
        self.pace = pace
        self.schedule = sorted((Fault.of(f) for f in faults), key=lambda f: f.at)
        self.rng = random.Random(seed)
        # the group reads the input from offset 0 (preloaded before it exists): Kafka's default is "latest"
        settings = {"share_version": 2, "transaction_version": 2, "share_auto_offset_reset": "earliest",
                    **(cluster_settings or {})}
        self.cluster = Cluster(seed=seed, brokers=brokers, **settings)
        self.checker = ShareEosChecker(group=group, input_topic=input_topic, output_topic=output_topic) \
            if check else None
        self.allowed = allowed_at_least_once
        self.stats: Counter = Counter()
        self.errors: Counter = Counter()
        self.fault_rows: list[dict] = []
        self.workers: list[_Worker] = []
        self.loaded = 0
        self.step = 0
        self.transitions = 0
        self._ran = False
        self._registration_errors: list[str] = []
        self._old_broker_until: int | None = None
        self._extra_members = 0

    # ---- set-up ---------------------------------------------------------------------------------------
    def _setup(self) -> None:
        c = self.cluster
        c.create_topic(self.input, self.partitions)
        c.create_topic(self.output, self.out_partitions)
        # the ShareConsumer model talks to broker 0 only: the share partitions live there
        for p in range(self.partitions):
            c.topics.partition(self.input, p).leader = 0
        self.input_id = c.topics.get(self.input).topic_id
        # ... and so do their __share_group_state-N, on purpose: KIP-1289 as written resolves a
        # staging only on the broker that receives the marker (kipviz.broker.share_txn, scenario
        # kip1289.marker_not_colocated); the KIP's worked example puts both on one broker
        n = c.config.share_state_topic_partitions
        states = sorted({share_coordinator_partition(self.group, self.input_id, p, n) for p in range(self.partitions)})
        for q in states:
            c.topics.partition(SHARE_STATE, q).leader = 0
        c.emit(ev.WorkloadLayout, input=self.input, partitions=self.partitions, share_leader=0,
               state_partitions=tuple(states), routing=c.config.share_marker_routing)
        self._home: dict[int, int] = {}     # share-state partitions a fault moved -> their broker
        self.loader = Producer(c, None, client_id="input-loader")
        self._top_up(min(self.records, self.preload))
        for i in range(self.n_consumers):
            w = _Worker(i, f"worker-{i}", f"{self.group}-worker-{i}")
            self.workers.append(w)
            self._start(w)

    def _start(self, w: _Worker) -> None:
        w.instances += 1
        w.sc = ShareConsumer(self.cluster, self.group, client_id=f"{w.name}.{w.instances}", max_records=self.batch)
        w.sc.subscribe([self.input])
        w.pr = None
        w.alive, w.retry, w.attempts, w.last_hb = True, [], 0, -1
        self._new_producer(w)

    def _new_producer(self, w: _Worker) -> Producer | None:
        self.stats["producers_created"] += 1
        pr = Producer(self.cluster, w.txn_id, client_id=f"{w.name}-producer.{self.stats['producers_created']}",
                              transaction_timeout_ms=self.txn_timeout_ms)
        try:
            pr.init_transactions()
        except (ProducerError, IllegalStateError) as e:
            self._error("init_transactions", e)
            w.pr = None
            return None
        w.pr = pr
        return pr

    # ---- input ----------------------------------------------------------------------------------------
    def _top_up(self, upto: int) -> None:
        """Write input records until `upto` are written (one record batch of <= load_batch per partition
        per Produce, round robin over partitions)."""
        t0 = time.perf_counter()
        try:
            self._write_input(upto)
        finally:
            self.stats["input_s"] += time.perf_counter() - t0

    def _write_input(self, upto: int) -> None:
        while self.loaded < min(upto, self.records):
            p = (self.loaded // self.load_batch) % self.partitions
            n = min(self.load_batch, upto - self.loaded, self.records - self.loaded)
            items = [(b"k%d" % i, b"v%d" % i, ()) for i in range(self.loaded, self.loaded + n)]
            try:
                self.loader.send_batch(self.input, p, items)
            except (ProducerError, IllegalStateError) as e:
                self._error("input", e)
                if self.loader.state == "FATAL_ERROR":
                    self.loader = Producer(self.cluster, None, client_id="input-loader")
                return
            self.loaded += n

    def consumed(self) -> int:
        """How many input records are done: the sum of the share partitions' start offsets (SPSO)."""
        parts = self.cluster.shares.partitions
        return sum(sp.spso for p in range(self.partitions)
                   if (sp := parts.get((self.group, self.input_id, p))) is not None)

    def _maybe_top_up(self) -> None:
        if self.loaded >= self.records:
            return
        ahead = max(8 * self.batch * self.n_consumers, 2 * self.load_batch * self.partitions)
        if self.loaded - self.consumed() < ahead and 0 not in self.cluster.down:
            self._top_up(self.loaded + ahead)

    def _done(self) -> bool:
        return self.loaded >= self.records and self.consumed() >= self.records

    # ---- time -----------------------------------------------------------------------------------------
    @property
    def _hb_ms(self) -> int:
        return self.cluster.config.group_share_heartbeat_interval_ms

    def _heartbeat(self, w: _Worker, force: bool = False) -> None:
        c = self.cluster
        if w.sc is None or 0 in c.down or w.sc.member_epoch == 0:
            return
        if force or c.now - w.last_hb >= self._hb_ms:
            w.sc.heartbeat()
            w.last_hb = c.now

    def _sleep(self, ms: int) -> None:
        """Advance the clock by ms in slices of at most the heartbeat interval; every live member
        keeps heartbeating (its heartbeat thread runs while its processing stalls)."""
        self.stats["slept_ms"] += ms
        left = ms
        while left > 0:
            d = min(left, self._hb_ms)
            self.cluster.advance(d)
            left -= d
            for w in self.workers:
                if w.alive:
                    self._heartbeat(w)

    # ---- one iteration ----------------------------------------------------------------------------------
    def _iteration(self, w: _Worker) -> int:
        """One read-process-write iteration of worker w; returns how many records it handled."""
        c = self.cluster
        if not w.alive:
            if self.step < w.revive_at:
                return 0
            self.stats["workers_restarted"] += 1
            self._start(w)
        if 0 in c.down:          # the share partitions' leader (and the share coordinator) is down
            return 0
        self._heartbeat(w)
        if w.pr is None and self._new_producer(w) is None:
            return 0
        recs = w.retry
        if not recs:
            recs = w.sc.poll()
            w.attempts = 0
            if not recs:
                return 0
            self.stats["records_polled"] += len(recs)
        w.retry = []
        w.attempts += 1
        pr = w.pr
        extra: list[ShareConsumer] = []
        try:
            self._process(w, pr, recs, extra)
        except _WorkerDied:
            return len(recs)
        except _Done:
            pass
        except (ProducerError, IllegalStateError) as e:
            self._error("transaction", e)
            self._recover(w, pr, e, recs)
        finally:
            for x in extra:
                x.close()
        return len(recs)

    def _spend(self, ms) -> None:
        if self.pace is not None:
            self.pace.spend(self.cluster, ms() if callable(ms) else ms)

    def _process(self, w: _Worker, pr: Producer, recs: list, extra: list) -> None:
        sc = w.sc
        pace = self.pace
        self._hook(w, "after-poll", pr=pr, recs=recs)
        self._spend(lambda: pace.round_trip())               # the ShareFetch that brought them
        pr.begin_transaction()
        by_part: dict[int, list] = {}
        rejected = set()
        for r in recs:
            if self.reject_rate and self.rng.random() < self.reject_rate:
                rejected.add((r.partition, r.offset))
                continue
            by_part.setdefault(r.partition % self.out_partitions, []).append(
                (r.key, b"T(" + (r.value or b"") + b")", (source_header(r.topic, r.partition, r.offset),)))
        for p in sorted(by_part):
            if pace is not None:                             # process a partition's records, then send
                self._spend(pace.processing(len(by_part[p])) + pace.produce(1))
            pr.send_batch(self.output, p, by_part[p])
        self._hook(w, "after-produce", pr=pr, recs=recs)
        for r in recs:
            sc.acknowledge(r, 3 if (r.partition, r.offset) in rejected else 1)
        # keyed by topic name: the producer then needs no all-topics Metadata to map ids to names
        acks = {(self.input, k[1]): v for k, v in sc.transactional_acknowledgements().items()}
        gm = sc.share_group_metadata()
        acks = self._hook(w, "after-snapshot", pr=pr, recs=recs, acks=acks, gm=gm, extra=extra) or acks
        self._spend(lambda: pace.round_trip())
        pr.send_share_acknowledgements_to_transaction(acks, gm)
        self._hook(w, "after-stage", pr=pr, recs=recs, acks=acks)
        # commitTransaction: flush the lingering batch, EndTxn, and the coordinator's markers
        self._spend(lambda: pace.produce(1) + pace.round_trip(2))
        mark = len(self.cluster.events)
        pid = pr.producer_id
        pr.commit_transaction()
        self._spend(lambda: pace.think())
        self.stats["transactions_committed"] += 1
        self.stats["records_committed"] += len(recs)
        self._hook(w, "after-commit", pr=pr, recs=recs, mark=mark, pid=pid)

    def _recover(self, w: _Worker, pr: Producer, exc: Exception, recs: list) -> None:
        """The KIP's catch blocks: abort on an abortable error; a fatal one (or an abort that fails)
        drops the producer -- the worker's next step makes a new instance, whose InitProducerId
        fences this one and aborts what it left open."""
        if pr is w.pr and pr is not None:
            aborted = False
            # UnsupportedVersionError is fatal but leaves the transaction open: abort it (case 9)
            abortable = isinstance(exc, UnsupportedVersionError) or not isinstance(exc, (FatalError,
                                                                                          IllegalStateError))
            if abortable and pr.state in ("IN_TRANSACTION", "ABORTABLE_ERROR"):
                try:
                    pr.abort_transaction()
                    aborted = True
                    self.stats["transactions_aborted"] += 1
                except (ProducerError, IllegalStateError) as e:
                    self._error("abort", e)
            if isinstance(exc, UnsupportedVersionError) or not aborted and pr.state != "READY":
                w.pr = None
                self.stats["producers_dropped"] += 1
        if w.attempts < self.max_attempts:
            w.retry = recs
        else:
            self._give_up(w, recs)

    def _give_up(self, w: _Worker, recs: list) -> None:
        """RELEASE the records (plain ShareAcknowledge) so they are redelivered; those not ACQUIRED
        by this member any more (staged in an open transaction, expired) make the partition's
        release fail, and wait for their lock."""
        self.stats["records_released"] += len(recs)
        w.retry, w.attempts = [], 0
        if w.sc is None or 0 in self.cluster.down:
            return
        for r in recs:
            w.sc.acknowledge(r, 2)
        w.sc.commit_sync()

    def _error(self, where: str, e: Exception) -> None:
        name = getattr(e, "error", None) or type(e).__name__
        self.errors[f"{where}: {type(e).__name__} {name}"] += 1

    # ---- faults ---------------------------------------------------------------------------------------
    def _fire_due(self) -> None:
        while self._next_fault < len(self.schedule) and self.schedule[self._next_fault].at <= self.step:
            f = self.schedule[self._next_fault]
            self._next_fault += 1
            row = {"at": f.at, "kind": f.kind, "case": f.case, "params": dict(f.params), "fired_step": None,
                   "worker": None, "applied": False, "outcome": "not reached"}
            self.fault_rows.append(row)
            if f.point is None:
                self._apply(f, row, None, "idle", {})
            else:
                w = self.workers[f.params.get("worker", f.at) % len(self.workers)]
                row["worker"] = w.name
                w.armed.append((f, row))
        if self._old_broker_until is not None and self.step >= self._old_broker_until:
            self._restore_share_version()

    def _hook(self, w: _Worker, point: str, **ctx):
        out = None
        if point == "after-stage" and w.dup_markers:
            (markers, row), w.dup_markers = w.dup_markers, []
            codes = self._send_markers(markers)
            row["outcome"] += f"; sent while the next transaction's acks are TX_PENDING: {codes}"
            self.cluster.emit(ev.FaultInjected, fault="duplicate-marker", case=5, worker=w.name,
                              outcome=f"{len(markers)} marker(s) of the previous transaction sent again: {codes}")
        for f, row in list(w.armed):
            if f.point == point:
                w.armed.remove((f, row))
                got = self._apply(f, row, w, point, ctx)
                if got is not None:
                    out = ctx["acks"] = got
        return out

    def _fired(self, row: dict, w: _Worker | None, outcome: str, applied: bool = True) -> None:
        row.update(fired_step=self.step, applied=applied, outcome=outcome)
        if w is not None:
            row["worker"] = w.name
        self.stats["faults_fired"] += applied
        self.cluster.emit(ev.FaultInjected, fault=row["kind"], case=row["case"], outcome=outcome,
                          worker=row["worker"], params=tuple(row["params"].items()))

    def _apply(self, f: Fault, row: dict, w: _Worker | None, point: str, ctx: dict):
        """Inject fault `f` at `point` (one method per kind, below); returns what that kind hands back."""
        name = _FAULT_METHODS.get(f.kind)
        if name is None:
            raise AssertionError(f.kind)
        return getattr(self, name)(f.params, row, w, point, ctx)

    def _fault_broker_crash(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        b = p.get("broker", 0) % self.brokers
        if b in c.down:
            return self._fired(row, w, f"broker {b} is already down", applied=False)
        down = p.get("down_ms", 300)
        c.crash_broker(b)
        c.clock.schedule(c.now + down, lambda: self._restart(b))
        return self._fired(row, w, f"broker {b} crashed at {point}, restarts in {down} ms")

    def _fault_coordinator_unavailable(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        n = p.get("count", 2)
        errs = [("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR")[i % 2] for i in range(n)]
        self._fail_registrations(errs)
        return self._fired(row, w, f"the next {n} share-state registrations fail ({', '.join(sorted(set(errs)))})")

    def _fault_zombie_producer(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        old = ctx["pr"]
        new = self._new_producer(w)
        if new is None:
            w.pr = old
            return self._fired(row, w, "the new instance could not initialise", applied=False)
        return self._fired(row, w, f"new instance {new.client_id} (epoch {new.producer_epoch}) fenced "
                                   f"{old.client_id} (epoch {old.producer_epoch}) at {point}")

    def _fault_duplicate_marker(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        pid = ctx["pid"]
        markers = [(e.topic, e.partition, e.producer_id, e.producer_epoch, e.record.get("type") == "COMMIT")
                   for e in c.events[ctx["mark"]:]
                   if e.__class__.__name__ == "RecordAppended" and e.control and e.producer_id == pid]
        if p.get("when", "now") == "next-stage":
            w.dup_markers = [markers, row]
            return self._fired(row, w, f"{len(markers)} marker(s) will be sent again during the next staging")
        codes = self._send_markers(markers)
        return self._fired(row, w, f"{len(markers)} marker(s) sent again: {codes}")

    def _fault_lock_expiry(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        ms = c.config.group_share_record_lock_duration_ms + 1 + p.get("extra_ms", 0)
        self._fired(row, w, f"worker stalls {ms} ms at {point}")
        self._sleep(ms)
        return None

    def _fault_transaction_timeout(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        w.alive, w.retry = False, []
        w.revive_at = self.step + p.get("restart_after_steps", len(self.workers))
        ms = self.txn_timeout_ms + c.config.transaction_abort_timed_out_interval_ms + 1
        self._fired(row, w, f"worker process died at {point}; {ms} ms pass")
        self.stats["workers_died"] += 1
        self._sleep(ms)
        raise _WorkerDied

    def _fault_rebalance(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        if 0 in c.down:             # (the ShareConsumer model cannot heartbeat a down broker)
            return self._fired(row, w, "the share coordinator's broker is down", applied=False)
        self._extra_members += 1
        x = ShareConsumer(c, self.group, client_id=f"rebalancer-{self._extra_members}")
        x.subscribe([self.input])
        x.heartbeat()
        ctx["extra"].append(x)
        before = w.sc.member_epoch
        self._heartbeat(w, force=True)
        return self._fired(row, w, f"a member joined; member epoch {before} -> {w.sc.member_epoch} after "
                                   f"the snapshot (epoch {ctx['gm']['member_epoch']})")

    def _fault_old_broker(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        if tx_pending(c):
            return self._fired(row, w, "downgrade refused: records are TX_PENDING", applied=False)
        c.features.finalize("share.version", 1, tell=False)      # the fault's FaultInjected tells it
        self._old_broker_until = self.step + max(1, p.get("steps", 3))
        return self._fired(row, w, f"share.version 2 -> 1 until step {self._old_broker_until}")

    def _fault_invalid_ack_type(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        acks = {k: dict(v) for k, v in ctx["acks"].items()}
        if not acks:
            return self._fired(row, w, "no acknowledgement to spoil", applied=False)
        k = sorted(acks, key=str)[0]
        o = min(acks[k])
        t = p.get("type", 2)
        acks[k][o] = t
        self._fired(row, w, f"offset {o} of {k[0]}-{k[1]} acknowledged with type {t} in the transaction")
        return acks

    def _fault_partial_failure(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        acks = {k: dict(v) for k, v in ctx["acks"].items()}
        used = {k[1] for k in acks}
        others = [q for q in range(self.partitions) if q not in used]
        q = others[0] if others else 0
        bogus = c.topics.partition(self.input, q).log_end_offset + 1000
        acks.setdefault((self.input, q), {})[bogus] = 1
        self._fired(row, w, f"the staging also names {self.input}-{q}@{bogus} (not in flight)")
        return acks

    def _fault_share_state_leader_change(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        moved = []
        for q in self._staged_state_partitions(ctx["acks"]):
            log = c.topics.partition(SHARE_STATE, q)
            to = p.get("to_broker", (log.leader + 1) % self.brokers) % self.brokers
            self._home.setdefault(q, log.leader)
            c.move_share_state_leader(q, to)
            moved.append(f"{SHARE_STATE}-{q} -> broker {to}")
        return self._fired(row, w, "; ".join(moved) or "nothing staged")

    def _fault_marker_never_arrives(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        parts = self._staged_state_partitions(ctx["acks"])
        for q in parts:
            c.txns.hold_markers_for(SHARE_STATE, q)
        outcome = p.get("outcome", "commit")
        self._fired(row, w, f"markers for {', '.join(f'{SHARE_STATE}-{q}' for q in parts)} held; "
                            f"the worker {'commits' if outcome == 'commit' else 'aborts'}")
        pr = ctx["pr"]
        try:
            if outcome == "commit":
                pr.commit_transaction()
                self.stats["transactions_committed"] += 1
            else:
                pr.abort_transaction()
                self.stats["transactions_aborted"] += 1
        finally:
            self._sleep(c.config.group_share_record_lock_duration_ms + 1)
            c.txns.release_markers()
        raise _Done

    def _fault_concurrent_epochs(self, p: dict, row: dict, w: _Worker | None, point: str, ctx: dict):
        c = self.cluster
        pr = ctx["pr"]
        body = {"TransactionalId": pr.transactional_id, "GroupId": self.group, "ProducerId": pr.producer_id,
                "ProducerEpoch": pr.producer_epoch - 1, "MemberId": ctx["gm"]["member_id"],
                "MemberEpoch": ctx["gm"]["member_epoch"],
                "Topics": [{"TopicId": self.input_id, "Partitions": [
                    {"PartitionIndex": k[1], "AcknowledgementBatches": [
                        {"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [t]} for o, t in sorted(v.items())]}
                    for k, v in sorted(ctx["acks"].items(), key=lambda kv: kv[0][1])]}]}
        resp = c.call("TxnShareAcknowledge", 0, body, broker=0, client=f"{w.name}-stale-request")
        err = "no answer" if resp is None else NAME.get(resp["ErrorCode"], resp["ErrorCode"])
        return self._fired(row, w, f"a TxnShareAcknowledge at epoch {pr.producer_epoch - 1} (current "
                                   f"{pr.producer_epoch}) arrived: {err}")

    def _staged_state_partitions(self, acks: dict) -> list[int]:
        n = self.cluster.config.share_state_topic_partitions
        return sorted({share_coordinator_partition(self.group, self.input_id, k[1], n) for k in acks})

    def _send_markers(self, markers) -> list[str]:
        c = self.cluster
        codes = []
        for topic, part, pid, epoch, commit in markers:
            log = c.topics.partition(topic, part)
            resp = c.call("WriteTxnMarkers", 2, {"Markers": [{
                "ProducerId": pid, "ProducerEpoch": epoch, "TransactionResult": commit,
                "Topics": [{"Name": topic, "PartitionIndexes": [part]}], "CoordinatorEpoch": 0,
                "TransactionVersion": 2}]}, broker=log.leader, client="duplicate-markers")
            if resp is None:
                codes.append(f"{topic}-{part}: no answer")
            else:
                code = resp["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"]
                codes.append(f"{topic}-{part}: {NAME.get(code, code)}")
        return codes

    def _fail_registrations(self, errors: list[str]) -> None:
        """Scenario kip1289.case02's fault: the broker-internal registration answers these errors."""
        txns = self.cluster.txns
        if not self._registration_errors and "add_state_partitions" not in txns.share.__dict__:
            real = txns.share.add_state_partitions
            queue = self._registration_errors

            def registration(transactional_id, producer_id, producer_epoch, partitions, **kw):
                if queue:
                    err = queue.pop(0)
                    self.cluster.emit(ev.RegistrationFailed, error=err)
                    return CODE[err]
                return real(transactional_id, producer_id, producer_epoch, partitions, **kw)
            txns.share.add_state_partitions = registration
        self._registration_errors.extend(errors)

    def _restart(self, b: int) -> None:
        if b in self.cluster.down:
            self.cluster.restart_broker(b)

    def _restore_share_version(self) -> None:
        self._old_broker_until = None
        if self.cluster.features.level("share.version") != 2:
            self.cluster.features.finalize("share.version", 2, by="workload", how="the old-broker fault ends",
                                           status=STATUS, kip=KIP)

    def _return_state_leaders(self) -> None:
        """After the step that moved a share-state leader (case 12): leadership returns home (a
        preferred-leader election). While it is away KIP-1289 as written would lose every later
        staging of the share partitions it serves (no longer co-located), which is not case 12."""
        for q, home in sorted(self._home.items()):
            self.cluster.move_share_state_leader(q, home)
        self._home.clear()

    def _heal(self) -> None:
        """Before draining: every scheduled fault that has not fired is dropped, crashed brokers
        restart, held markers go out, share.version is back to 2, registrations succeed."""
        for w in self.workers:
            w.armed.clear()
        for f in self.schedule[self._next_fault:]:
            self.fault_rows.append({"at": f.at, "kind": f.kind, "case": f.case, "params": dict(f.params),
                                    "fired_step": None, "worker": None, "applied": False, "outcome": "not reached"})
        self._next_fault = len(self.schedule)
        for b in sorted(self.cluster.down):
            self.cluster.restart_broker(b)
        txns = self.cluster.__dict__.get("txns")
        if txns is not None and (txns.held_partitions or txns.hold_markers):
            txns.release_markers()
        self._restore_share_version()
        self._registration_errors.clear()

    # ---- events -----------------------------------------------------------------------------------------
    def _handoff(self, final: bool = False) -> None:
        c = self.cluster
        if self.on_events is None and self.checker is None:
            return
        if not final and len(c.events) < self.events_chunk:
            return
        if self.on_events is None:           # checking on the fly, but keeping the events
            if final:
                self.transitions = _count_transitions(c.events)
                self.checker.feed(c.events)
            return
        chunk = c.take_events()
        self.transitions += _count_transitions(chunk)
        if self.checker is not None:
            self.checker.feed(chunk)
        self.on_events(chunk)

    # ---- run --------------------------------------------------------------------------------------------
    def run(self) -> WorkloadResult:
        if self._ran:
            raise RuntimeError("a ShareEosWorkload runs once")
        self._ran = True
        with rare_collections():         # (kipviz.gcpause) restored afterwards
            return self._run()

    def _run(self) -> WorkloadResult:
        t0 = time.perf_counter()
        self._next_fault = 0
        self._setup()
        c = self.cluster
        n = len(self.workers)
        idle = 0
        while not self._done() and self.step < self.max_steps:
            self._maybe_top_up()
            self._fire_due()
            handled = self._iteration(self.workers[self.step % n])
            self._return_state_leaders()
            self.stats["steps"] += 1
            self.stats["idle_steps"] += handled == 0
            self.step += 1
            c.advance(self.step_ms)
            idle = 0 if handled else idle + 1
            if idle >= n:            # a whole round found nothing: what is left waits for a lock
                idle = 0
                self.stats["idle_sleeps"] += 1
                self._sleep(c.config.group_share_record_lock_duration_ms + 1)
            self._handoff()
        self.stats["main_steps"] = self.step
        self._heal()
        rounds = 0
        while not self._done() and rounds < self.drain_rounds:
            rounds += 1
            self._maybe_top_up()
            got = 0
            for w in self.workers:
                got += self._iteration(w)
                self._return_state_leaders()
                self.step += 1
                c.advance(self.step_ms)
            if not got:
                self._sleep(c.config.group_share_record_lock_duration_ms + 1)
            self._handoff()
        for w in self.workers:
            if w.dup_markers:             # the worker staged nothing after the fault armed them
                w.dup_markers[1].update(applied=False, outcome=w.dup_markers[1]["outcome"] + "; never sent: the "
                                        "worker staged nothing afterwards")
                self.stats["faults_fired"] -= 1
            if w.alive and w.sc is not None:
                w.sc.close()
        self.stats["drain_rounds"] = rounds
        self.stats["complete"] = int(self._done())
        self.stats["records_loaded"] = self.loaded
        self.stats["records_terminal"] = self.consumed()
        self._handoff(final=True)
        if self.on_events is None and self.checker is None:
            self.transitions = _count_transitions(c.events)
        stats = dict(self.stats)
        stats.update(records=self.records, consumers=self.n_consumers, partitions=self.partitions,
                     virtual_ms=c.now, wall_s=time.perf_counter() - t0, events=c.events_taken + len(c.events),
                     transitions=self.transitions, errors=dict(self.errors),
                     internal_errors=list(c.internal_errors))
        report = self.checker.report(allowed_at_least_once=self.allowed) if self.checker is not None else None
        return WorkloadResult(c, stats, self.fault_rows, self.group, self.input, self.output, report)


def _count_transitions(events) -> int:
    """The share-record StateChanged events (counted in C: a chunk has ~100k events)."""
    changes = itertools.compress(events, map(operator.is_, map(type, events), itertools.repeat(StateChanged)))
    return operator.countOf(map(operator.attrgetter("machine"), changes), "share-record")


def run_share_eos(*, records: int = 1000, consumers: int = 3, partitions: int = 2, seed: int = 0, faults=(),
                  batch: int = 50, on_events=None, **options) -> WorkloadResult:
    """Run the share-group EOS workload (module docstring); options as ShareEosWorkload."""
    return ShareEosWorkload(records=records, consumers=consumers, partitions=partitions, seed=seed, faults=faults,
                            batch=batch, on_events=on_events, **options).run()
