"""Read-process-write workloads for sample data, scalable by the number of input records.

    regular_eos   KIP-98/447/848/890 (released): a loader writes orders; two processors (a KIP-848
                  consumer group, one transactional producer each) read them, write the enriched
                  records and their offsets in one transaction, commit; a few transactions abort
                  (a processing failure) and are retried from the committed offsets.
    kip1319       KIP-1319 (released in Kafka 4.4): the same loop with TxnOffsetCommit v6 (processor 0) and a
                  pre-KIP producer capped at v5 (processor 1), with group churn that leaves the
                  processors' captured member epochs stale (STALE_MEMBER_EPOCH at v6,
                  ILLEGAL_GENERATION at v5) and a side input that is deleted and recreated, so
                  cached topic ids go unknown (UNKNOWN_TOPIC_ID, retried with the new id).
    kip516        KIP-516 (released): the input topic is deleted and recreated twice while it is
                  written and read: by-id clients get UNKNOWN_TOPIC_ID and move on to the new
                  topic; a by-name producer (Produce v12) and a by-name reader (Fetch v12) carry on
                  silently into the new topic; the group's offsets are tombstoned with the topic.

Each workload is `fn(records, seed, step) -> Run`; `step(cluster, done, readers)` is called after
every round (the generator drains events and logs there; `readers` are the slowest read positions
per input partition, below which the written log may be released). Every request is a real frame
through cluster.handle; the clients are kipviz.clients' models (Producer.send_batch writes one record batch per Produce)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..broker import Cluster
from ..clients import Consumer
from ..clients.consumer_errors import ConsumerError
from ..clients.producer import Producer, default_partition
from ..clients.producer_errors import AbortableError, FatalError, ProducerError
from ..eos.checker import SOURCE_HEADER
from ..errors import KipvizError
from .pace import Pace

START_MS = 1_767_225_600_000     # 2026-01-01T00:00:00Z: where the virtual clock starts (timestamps look real)
CUSTOMERS = 997                  # distinct keys; their partitions are computed once (murmur2)
ROUND_MS = 250                   # virtual time per round


@dataclass
class Run:
    """What a workload produced: the cluster (its logs are the topic datasets) and labels."""
    cluster: Cluster
    workload: str
    records: int
    group: str | None = None
    input_topic: str | None = None
    output_topic: str | None = None
    summary: dict = field(default_factory=dict)


def sizes(records: int) -> tuple[int, int]:
    """(records per batch, records a loader round writes per partition): small runs get small
    batches and many transactions (more to look at), large runs batches of up to 1000 records."""
    batch = max(4, min(1000, records // 300))
    return batch, batch


class Member:
    """One processor: a KIP-848 consumer and its transactional producer."""

    def __init__(self, cluster, group: str, topics: list[str], name: str, *, client_versions=None,
                 max_poll: int = 1 << 20):
        self.name = name
        self.cluster = cluster
        self.client_versions = client_versions
        self.consumer = Consumer(cluster, group, client_id=f"{name}-consumer", protocol="consumer",
                                 isolation="read_committed", max_poll_records=max_poll,
                                 client_versions=client_versions)
        self.consumer.subscribe(topics)
        self.producer = self._new_producer()

    def _new_producer(self) -> Producer:
        p = Producer(self.cluster, f"{self.name}-tx", client_id=f"{self.name}-producer",
                          client_versions=self.client_versions)
        p.init_transactions()
        return p


class Pipeline:
    """The read-process-write loop shared by the workloads."""

    def __init__(self, cluster, rng: random.Random, *, inputs: list[str], output: str, group: str, partitions: int,
                 processors: int, batch: int, member_versions=None, loader_versions=None, pace: Pace | None = None):
        self.cluster, self.rng = cluster, rng
        self.pace = pace
        self.inputs, self.output, self.group = inputs, output, group
        self.partitions, self.batch = partitions, batch
        for t in (*inputs, output):
            cluster.create_topic(t, partitions)
        self.loader = Producer(cluster, None, client_id="loader", client_versions=loader_versions)
        self.members = [Member(cluster, group, inputs, f"processor-{i}",
                               client_versions=(member_versions or {}).get(i)) for i in range(processors)]
        self.keys = [b"customer-%04d" % c for c in range(CUSTOMERS)]
        self.key_partition = [default_partition(k, partitions) for k in self.keys]
        self.loaded = 0
        self.committed = 0            # input records whose processing committed
        self.outcomes: dict[str, int] = {}

    def count(self, what: str, n: int = 1) -> None:
        self.outcomes[what] = self.outcomes.get(what, 0) + n

    # ---- input -------------------------------------------------------------------------------------------
    def order(self, i: int) -> tuple[bytes, bytes, int]:
        c = self.rng.randrange(CUSTOMERS)
        cents = self.rng.randrange(100, 500_000)
        value = b'{"order":%d,"customer":%d,"amount_cents":%d}' % (i, c, cents)
        return self.keys[c], value, self.key_partition[c]

    def load(self, n: int, topic: str | None = None, producer: Producer | None = None) -> int:
        """Write n orders: each partition's share as batches of up to `batch` records."""
        topic, producer = topic or self.inputs[0], producer or self.loader
        by_p: dict[int, list] = {}
        for i in range(self.loaded, self.loaded + n):
            k, v, p = self.order(i)
            by_p.setdefault(p, []).append((k, v))
        for p in sorted(by_p):
            items = by_p[p]
            for s in range(0, len(items), self.batch):
                try:
                    producer.send_batch(topic, p, items[s:s + self.batch])
                except ProducerError as e:
                    self.count(f"load-failed:{e.error}", len(items[s:s + self.batch]))
        self.loaded += n
        return n

    # ---- processing -------------------------------------------------------------------------------------
    @staticmethod
    def transform(value: bytes, who: str) -> bytes:
        status = b"review" if b'"amount_cents":4' in value else b"ok"
        return value[:-1] + b',"status":"%s","by":"%s"}' % (status, who.encode())

    def turn(self, m: Member, *, abort: bool = False, before_offsets=None) -> int:
        """poll -> begin -> write outputs -> offsets -> commit (or abort and rewind). Returns the
        number of input records committed."""
        try:
            recs = m.consumer.poll()
        except ConsumerError as e:
            self.count(f"poll-error:{e.error}")
            return 0
        if not recs:
            return 0
        gm = m.consumer.group_metadata()       # captured with the records, as the application sees them
        p = m.producer
        pace, c = self.pace, self.cluster
        if pace is not None:
            pace.spend(c, pace.round_trip())          # the Fetch that brought the records
        try:
            p.begin_transaction()
            by_p: dict[int, list] = {}
            for r in recs:
                by_p.setdefault(r.partition % self.partitions, []).append(
                    (r.key, self.transform(r.value, m.name),
                     [(SOURCE_HEADER, b"%s-%d@%d" % (r.topic.encode(), r.partition, r.offset))]))
            for q in sorted(by_p):
                if pace is not None:                  # process a partition's records, then send them
                    pace.spend(c, pace.processing(len(by_p[q])) + pace.produce(1))
                p.send_batch(self.output, q, by_p[q])
            offsets: dict = {}
            for r in recs:
                tp = (r.topic, r.partition)
                offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
            if before_offsets is not None:
                before_offsets(m)
            if pace is not None:
                pace.spend(c, pace.round_trip(2))     # AddOffsetsToTxn, then TxnOffsetCommit
            p.send_offsets_to_transaction(offsets, gm)
            if abort:
                self.count("aborted:processing-failure")
                return self._rewind(m, abort=True)
            if pace is not None:
                pace.spend(c, pace.produce(1) + pace.round_trip(2))   # flush, EndTxn, the markers
            p.commit_transaction()
            if pace is not None:
                pace.spend(c, pace.think())
        except AbortableError as e:
            self.count(f"aborted:{e.error}")
            return self._rewind(m, abort=True)
        except FatalError as e:
            self.count(f"fatal:{e.error}")
            m.producer = m._new_producer()           # a new producer fences the old one's transaction
            return self._rewind(m, abort=False)
        except ProducerError as e:
            self.count(f"retries-exhausted:{e.error}")
            return self._rewind(m, abort=p.state in ("IN_TRANSACTION", "ABORTABLE_ERROR"))
        self.count("committed")
        return len(recs)

    def _rewind(self, m: Member, *, abort: bool) -> int:
        if abort:
            try:
                m.producer.abort_transaction()
            except ProducerError as e:
                self.count(f"abort-failed:{e.error}")
                m.producer = m._new_producer()
        try:
            m.consumer.seek_to_committed()
        except ConsumerError as e:
            self.count(f"rewind-error:{e.error}")
        return 0

    # ---- bookkeeping ---------------------------------------------------------------------------------
    def lag(self) -> int:
        """Input records not yet committed by the group, over the live input topics."""
        total = 0
        for t in self.inputs:
            topic = self.cluster.topics.get(t)
            for log in topic.partitions:
                c = self.cluster.groups.committed(self.group, t, log.partition)
                total += log.log_end_offset - (c.offset if c is not None else 0)
        return total

    def readers(self, extra=()) -> dict:
        """The slowest position that may still be read, per input partition: the group's committed
        offset (a member restarts there after an abort or a reassignment) and the consumers'
        positions."""
        out = {}
        for t in self.inputs:
            for log in self.cluster.topics.get(t).partitions:
                c = self.cluster.groups.committed(self.group, t, log.partition)
                out[(t, log.partition)] = c.offset if c is not None else 0
        for consumer in [m.consumer for m in self.members] + list(extra):
            for tp, pos in consumer.positions().items():
                if tp in out:
                    out[tp] = min(out[tp], pos)
        return out

    def close(self) -> None:
        for m in self.members:
            m.consumer.close()


def drive(pipe: Pipeline, records: int, step, *, per_round: int, hooks=None, extra_readers=(),
          abort_rate: float = 0.0, max_idle: int = 2000) -> None:
    """Load `records` orders `per_round` at a time and let every member take a turn each round,
    until everything loaded is committed (or can no longer be: see max_idle)."""
    c = pipe.cluster
    idle = 0
    done = 0
    rnd = 0
    while True:
        if pipe.loaded < records:
            pipe.load(min(per_round, records - pipe.loaded))
        progressed = 0
        for m in pipe.members:
            abort = abort_rate > 0 and pipe.rng.random() < abort_rate
            hook = hooks(rnd, m) if hooks else None
            progressed += pipe.turn(m, abort=abort, before_offsets=hook)
        pipe.committed += progressed
        new_done = min(records, pipe.committed)
        step(c, new_done - done, pipe.readers(extra_readers))
        done = new_done
        c.advance(ROUND_MS)
        rnd += 1
        if pipe.loaded >= records and pipe.lag() == 0:
            break
        idle = 0 if progressed else idle + 1
        if idle > max_idle:
            raise KipvizError(f"workload stalled: no progress for {max_idle} rounds "
                              f"(lag {pipe.lag()}, outcomes {pipe.outcomes})")
    step(c, records - done, pipe.readers(extra_readers))


# ---- the workloads --------------------------------------------------------------------------------------------
def regular_eos(records: int, seed: int, step) -> Run:
    rng = random.Random(seed)
    cluster = Cluster(seed=seed, brokers=3, release="4.2", start_ms=START_MS)
    batch, per_partition = sizes(records)
    pipe = Pipeline(cluster, rng, inputs=["orders"], output="orders-enriched", group="enricher", partitions=4,
                    processors=2, batch=batch, pace=Pace(seed))
    drive(pipe, records, step, per_round=per_partition * 4, abort_rate=0.04)
    pipe.close()
    step(cluster, 0, None)
    return Run(cluster, "regular_eos", records, "enricher", "orders", "orders-enriched",
               {"outcomes": pipe.outcomes})


PRE_KIP_1319 = {"TxnOffsetCommit": 5}


def kip1319(records: int, seed: int, step) -> Run:
    rng = random.Random(seed)
    cluster = Cluster(seed=seed, brokers=3, start_ms=START_MS)      # the newest release (4.4): v6 served
    batch, per_partition = sizes(records)
    pipe = Pipeline(cluster, rng, inputs=["orders", "promos"], output="orders-enriched", group="enricher",
                    partitions=4, processors=2, batch=batch, member_versions={1: PRE_KIP_1319}, pace=Pace(seed))
    side_every = max(1, records // (per_partition * 4) // 6)    # rounds between promo batches / recreations
    churn = {"consumer": None}

    def hooks(rnd: int, m: Member):
        if rnd % 7 == 3 and m is pipe.members[rnd // 7 % 2]:
            return lambda member: _churn(pipe, member, churn)
        return None

    def step_with_side(c, done, readers):
        rnd = getattr(step_with_side, "rounds", 0)
        step_with_side.rounds = rnd + 1
        if readers is not None and rnd % side_every == 0:
            items = [(b"promo-%d" % (rnd + i), b'{"promo":%d,"percent":%d}' % (rnd + i, 5 + (rnd + i) % 20))
                     for i in range(4)]
            for p in range(4):
                try:
                    pipe.loader.send_batch("promos", p, items)
                except ProducerError as e:
                    pipe.count(f"load-failed:{e.error}")
            if rnd and rnd % (3 * side_every) == 0:
                cluster.delete_topic("promos")          # cached ids of 'promos' are now unknown
                cluster.create_topic("promos", 4)
                pipe.count("promos-recreated")
        step(c, done, readers)

    drive(pipe, records, step_with_side, per_round=per_partition * 4, hooks=hooks, abort_rate=0.0)
    if churn["consumer"] is not None:
        churn["consumer"].close()
    pipe.close()
    step(cluster, 0, None)
    return Run(cluster, "kip1319", records, "enricher", "orders", "orders-enriched", {"outcomes": pipe.outcomes})


def _churn(pipe: Pipeline, member: Member, state: dict) -> None:
    """Between the poll and send_offsets: a third member joins (or leaves) the group and `member`
    heartbeats, so its epoch moves past the one its application captured with the records."""
    c = pipe.cluster
    if state["consumer"] is None:
        extra = Consumer(c, pipe.group, client_id="scaler-consumer", protocol="consumer")
        extra.subscribe(pipe.inputs)
        extra.heartbeat()
        state["consumer"] = extra
        pipe.count("member-joined")
    else:
        state["consumer"].close()
        state["consumer"] = None
        pipe.count("member-left")
    c.advance(member.consumer.heartbeat_interval_ms)
    member.consumer.heartbeat()


LEGACY = {"Produce": 12, "Fetch": 12, "Metadata": 9}


def kip516(records: int, seed: int, step) -> Run:
    rng = random.Random(seed)
    cluster = Cluster(seed=seed, brokers=3, release="4.2", start_ms=START_MS)
    batch, per_partition = sizes(records)
    pipe = Pipeline(cluster, rng, inputs=["clicks"], output="clicks-enriched", group="sessionizer", partitions=3,
                    processors=2, batch=batch, pace=Pace(seed))
    legacy_loader = Producer(cluster, None, client_id="legacy-loader", client_versions=LEGACY)
    reader = Consumer(cluster, None, client_id="legacy-reader", isolation="read_uncommitted",
                      client_versions=LEGACY, max_poll_records=1 << 20)
    reader.assign([("clicks", p) for p in range(3)])
    per_round = per_partition * 3
    rounds = max(3, records // per_round)
    cuts = {rounds // 3, 2 * rounds // 3}
    state = {"round": 0}

    def step_516(c, done, readers):
        rnd = state["round"]
        state["round"] = rnd + 1
        if readers is not None:
            if rnd % 2 == 1 and pipe.loaded < records:      # the by-name producer writes every other round
                n = min(per_round // 2 or 1, records - pipe.loaded)
                pipe.load(n, producer=legacy_loader)
            try:
                reader.poll()
            except ConsumerError as e:
                pipe.count(f"legacy-reader:{e.error}")
            if rnd in cuts:
                cluster.delete_topic("clicks")              # KIP-516: the name comes back with a new id
                cluster.create_topic("clicks", 3)
                pipe.count("clicks-recreated")
            readers = dict(readers)
            for tp, pos in reader.positions().items():
                if tp in readers:
                    readers[tp] = min(readers[tp], pos)
        step(c, done, readers)

    drive(pipe, records, step_516, per_round=per_round, abort_rate=0.0)
    pipe.close()
    reader.close()
    step(cluster, 0, None)
    return Run(cluster, "kip516", records, "sessionizer", "clicks", "clicks-enriched", {"outcomes": pipe.outcomes})


WORKLOADS = {
    "regular_eos": (regular_eos, "released", "read-process-write with a KIP-848 group and transactions "
                                             "(KIP-98/447/848/890), with a few aborted transactions"),
    "kip1319": (kip1319, "released", "TxnOffsetCommit v6 and v5 with stale member epochs and unknown topic ids"),
    "kip516": (kip516, "released", "the input topic deleted and recreated while by-id and by-name clients use it"),
}
