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

FAULTS: `faults` is a list of Fault(at, kind, params) (or (at, kind[, params]) tuples or dicts),
run by kipviz.workloads.share_faults (its FAULTS table: each kind's KIP-1289 corner case, how it is
armed and what it does).

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
from ..clients.producer import Producer
from ..clients.producer_errors import FatalError, IllegalStateError, ProducerError, UnsupportedVersionError
from ..clients.share_consumer import ShareConsumer
from ..eos import ShareEosChecker, check_share_eos, source_header
from ..gcpause import rare_collections
from ..records import share_coordinator_partition
from ..schema import events as ev
from ..schema.events import StateChanged
from .share_faults import SHARE_STATE, Fault, FaultRunner, IterationDone, WorkerDied


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
        self.rng = random.Random(seed)
        # the group reads the input from offset 0 (preloaded before it exists): Kafka's default is "latest"
        settings = {"share_version": 2, "transaction_version": 2, "share_auto_offset_reset": "earliest",
                    **(cluster_settings or {})}
        self.cluster = Cluster(seed=seed, brokers=brokers, **settings)
        self.faults = FaultRunner(self, sorted((Fault.of(f) for f in faults), key=lambda f: f.at))
        self.checker = ShareEosChecker(group=group, input_topic=input_topic, output_topic=output_topic) \
            if check else None
        self.allowed = allowed_at_least_once
        self.stats: Counter = Counter()
        self.errors: Counter = Counter()
        self.workers: list[_Worker] = []
        self.loaded = 0
        self.step = 0
        self.transitions = 0
        self._ran = False
        self.extra_members = 0                  # members a rebalance fault added

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
        self.new_producer(w)

    def new_producer(self, w: _Worker) -> Producer | None:
        """A new producer instance for worker `w` (its transactional id: InitProducerId fences the
        old one); None if it could not initialise."""
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

    def heartbeat(self, w: _Worker, force: bool = False) -> None:
        """Worker `w`'s member heartbeats when its interval is due (or now, `force`)."""
        c = self.cluster
        if w.sc is None or 0 in c.down or w.sc.member_epoch == 0:
            return
        if force or c.now - w.last_hb >= self._hb_ms:
            w.sc.heartbeat()
            w.last_hb = c.now

    def sleep(self, ms: int) -> None:
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
                    self.heartbeat(w)

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
        self.heartbeat(w)
        if w.pr is None and self.new_producer(w) is None:
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
        except WorkerDied:
            return len(recs)
        except IterationDone:
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
        self.faults.hook(w, "after-poll", pr=pr, recs=recs)
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
        self.faults.hook(w, "after-produce", pr=pr, recs=recs)
        for r in recs:
            sc.acknowledge(r, 3 if (r.partition, r.offset) in rejected else 1)
        # keyed by topic name: the producer then needs no all-topics Metadata to map ids to names
        acks = {(self.input, k[1]): v for k, v in sc.transactional_acknowledgements().items()}
        gm = sc.share_group_metadata()
        acks = self.faults.hook(w, "after-snapshot", pr=pr, recs=recs, acks=acks, gm=gm, extra=extra) or acks
        self._spend(lambda: pace.round_trip())
        pr.send_share_acknowledgements_to_transaction(acks, gm)
        self.faults.hook(w, "after-stage", pr=pr, recs=recs, acks=acks)
        # commitTransaction: flush the lingering batch, EndTxn, and the coordinator's markers
        self._spend(lambda: pace.produce(1) + pace.round_trip(2))
        mark = len(self.cluster.events)
        pid = pr.producer_id
        pr.commit_transaction()
        self._spend(lambda: pace.think())
        self.stats["transactions_committed"] += 1
        self.stats["records_committed"] += len(recs)
        self.faults.hook(w, "after-commit", pr=pr, recs=recs, mark=mark, pid=pid)

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
        self._setup()
        c = self.cluster
        n = len(self.workers)
        idle = 0
        while not self._done() and self.step < self.max_steps:
            self._maybe_top_up()
            self.faults.fire_due()
            handled = self._iteration(self.workers[self.step % n])
            self.faults.return_state_leaders()
            self.stats["steps"] += 1
            self.stats["idle_steps"] += handled == 0
            self.step += 1
            c.advance(self.step_ms)
            idle = 0 if handled else idle + 1
            if idle >= n:            # a whole round found nothing: what is left waits for a lock
                idle = 0
                self.stats["idle_sleeps"] += 1
                self.sleep(c.config.group_share_record_lock_duration_ms + 1)
            self._handoff()
        self.stats["main_steps"] = self.step
        self.faults.heal()
        rounds = 0
        while not self._done() and rounds < self.drain_rounds:
            rounds += 1
            self._maybe_top_up()
            got = 0
            for w in self.workers:
                got += self._iteration(w)
                self.faults.return_state_leaders()
                self.step += 1
                c.advance(self.step_ms)
            if not got:
                self.sleep(c.config.group_share_record_lock_duration_ms + 1)
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
        return WorkloadResult(c, stats, self.faults.rows, self.group, self.input, self.output, report)


def _count_transitions(events) -> int:
    """The share-record StateChanged events (counted in C: a chunk has ~100k events)."""
    changes = itertools.compress(events, map(operator.is_, map(type, events), itertools.repeat(StateChanged)))
    return operator.countOf(map(operator.attrgetter("machine"), changes), "share-record")


def run_share_eos(*, records: int = 1000, consumers: int = 3, partitions: int = 2, seed: int = 0, faults=(),
                  batch: int = 50, on_events=None, **options) -> WorkloadResult:
    """Run the share-group EOS workload (module docstring); options as ShareEosWorkload."""
    return ShareEosWorkload(records=records, consumers=consumers, partitions=partitions, seed=seed, faults=faults,
                            batch=batch, on_events=on_events, **options).run()
