"""Exactly-once read-process-write with a regular consumer group (KIP-98, KIP-447, KIP-848, KIP-890).

    txn.read_process_write_commit   consume -> transform -> produce + offsets in one transaction, commit
    txn.read_process_write_abort    the same loop aborted, then rewound and committed on the retry
    txn.timeout_abort               transaction.timeout.ms passes: the coordinator fences and aborts
    txn.zombie_fencing              a second instance with the same transactional.id fences the first
    txn.tv1_vs_tv2                  transaction version 1, then the feature upgrade to version 2

Every scenario drives the client models (kipviz.clients.Consumer / Producer) against trace.cluster,
so each step is a real request frame; the checks read the cluster's events (responses, records
appended, state changes) and what a read_committed consumer gets back."""
from __future__ import annotations

from ..broker.tables.transaction import STATE_NAMES
from ..clients import Consumer, Producer, ProducerFencedError
from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY
from ..schema.error_codes import name_of
from ..schema.topics import TRANSACTION_STATE
from . import Trace, scenario

INPUT, OUTPUT = "orders", "orders-enriched"
GROUP = "enricher"
TXN_ID = "enricher-tx"
INPUTS = [(b"order-%d" % i, b"widget x%d" % i) for i in range(1, 7)]


# ---- helpers shared by the scenarios ------------------------------------------------------------------
def transform(value: bytes) -> bytes:
    return value.upper() + b" (enriched)"


def setup(trace: Trace, inputs=INPUTS, partitions: int = 2) -> None:
    """Two topics and some input written by a plain (idempotent) producer."""
    c = trace.cluster
    c.create_topic(INPUT, partitions)
    c.create_topic(OUTPUT, partitions)
    loader = Producer(c, None, client_id="loader")
    for k, v in inputs:
        loader.send(INPUT, k, v)


def process(consumer: Consumer, producer: Producer, *, commit: bool = True, max_records: int | None = None):
    """One turn of the loop: poll, begin, write the transformed records, send the consumer's
    offsets to the transaction, commit (or abort). Returns (records, offsets sent)."""
    records = consumer.poll(max_records)
    producer.begin_transaction()
    for r in records:
        producer.send(OUTPUT, r.key, transform(r.value))
    offsets = {}
    for r in records:
        offsets[(r.topic, r.partition)] = max(offsets.get((r.topic, r.partition), 0), r.offset + 1)
    if offsets:
        producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    if commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()
    return records, offsets


def read_output(trace: Trace, isolation: str = "read_committed", client: str | None = None) -> list[bytes]:
    """What a fresh consumer (manual assignment, no group) reads from the output topic."""
    c = trace.cluster
    n = len(c.topics.get(OUTPUT).partitions)
    reader = Consumer(c, None, client_id=client or f"reader-{isolation.split('_')[1]}", isolation=isolation)
    reader.assign([(OUTPUT, p) for p in range(n)])
    values = [r.value for r in reader.poll()]
    reader.close()
    return values


def responses(trace: Trace, api: str, client: str | None = None) -> list:
    return [e for e in trace.events if e.kind == "ResponseSent" and e.api == api
            and (client is None or e.client == client)]


def requests(trace: Trace, api: str, client: str | None = None) -> list:
    return [e for e in trace.events if e.kind == "RequestReceived" and e.api == api
            and (client is None or e.client == client)]


def error_names(event) -> list[str]:
    return [name_of(c) for c in event.error_codes] or ["NONE"]


def collapse(seq) -> list:
    out = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def table_walk(trace: Trace, machine: str, key: str, since: int = 0) -> list[str]:
    """The states an instance went through (consecutive repeats collapsed)."""
    changes = [e for e in trace.events[since:] if e.kind == "StateChanged" and e.machine == machine and e.key == key]
    if not changes:
        return []
    return collapse([changes[0].from_state] + [e.to_state for e in changes])


def txn_log_states(trace: Trace, transactional_id: str, since: int = 0) -> list[str]:
    """TransactionStatus of each __transaction_state record written for the id (repeats collapsed)."""
    out = []
    for e in trace.events[since:]:
        if e.kind != "RecordAppended" or e.topic != TRANSACTION_STATE:
            continue
        rec = e.record or {}
        if (rec.get("key") or {}).get("TransactionalId") != transactional_id:
            continue
        value = rec.get("value")
        out.append("tombstone" if value is None else STATE_NAMES[value["TransactionStatus"]])
    return collapse(out)


def markers(trace: Trace, producer_id: int, since: int = 0) -> dict[tuple[str, int], list[tuple[str, int]]]:
    """(topic, partition) -> [(COMMIT/ABORT, producer epoch), ...] written for the producer id."""
    out: dict = {}
    for e in trace.events[since:]:
        if e.kind == "RecordAppended" and e.control and e.producer_id == producer_id:
            out.setdefault((e.topic, e.partition), []).append((e.record.get("type"), e.producer_epoch))
    return out


def offsets_partition(trace: Trace, group: str = GROUP) -> tuple[str, int]:
    return trace.cluster.coordinator_partition(GROUP_KEY, group)


# ---- read-process-write ---------------------------------------------------------------------------------
# size: one read-process-write loop the transaction scenarios share, its options changing single steps
def _rpw(trace: Trace, commit: bool) -> None:
    c = trace.cluster
    setup(trace)
    consumer = Consumer(c, GROUP, client_id="enricher-consumer", protocol="consumer")
    consumer.subscribe([INPUT])
    producer = Producer(c, TXN_ID, client_id="enricher-producer")
    producer.init_transactions()
    pid, epoch0 = producer.producer_id, producer.producer_epoch
    mark = len(c.events)
    records, offsets = process(consumer, producer, commit=commit)
    word = "COMMIT" if commit else "ABORT"
    article = "a" if commit else "an"
    expected = sorted(transform(v) for _, v in INPUTS)
    trace.result.update(records=records, offsets=offsets, producer_id=pid, producer_epoch=epoch0,
                        member_id=consumer.member_id, member_epoch=consumer.member_epoch)

    trace.expect("the KIP-848 consumer joined with ConsumerGroupHeartbeat and owns every input partition",
                 consumer.member_epoch >= 1 and consumer.assignment() == {(INPUT, 0), (INPUT, 1)},
                 f"member epoch {consumer.member_epoch}, assignment {sorted(consumer.assignment())}")
    trace.expect("the consumer read every input record (no committed offset: auto.offset.reset=earliest)",
                 len(records) == len(INPUTS), f"{len(records)} records")
    toc = requests(trace, "TxnOffsetCommit", "enricher-producer")
    sent = toc[-1].body if toc else {}
    trace.expect("the offsets went to the transaction with the consumer's member id and member epoch (KIP-447)",
                 bool(sent) and sent.get("MemberId") == consumer.member_id
                 and sent.get("GenerationIdOrMemberEpoch") == consumer.member_epoch,
                 f"TxnOffsetCommit v{toc[-1].version if toc else '?'}: MemberId {sent.get('MemberId')!r}, "
                 f"GenerationIdOrMemberEpoch {sent.get('GenerationIdOrMemberEpoch')}")
    visible = sorted(read_output(trace, "read_committed"))
    everything = sorted(read_output(trace, "read_uncommitted"))
    if commit:
        trace.expect("a read_committed consumer sees every transformed record, once",
                     visible == expected, f"{len(visible)} records visible")
    else:
        trace.expect("a read_committed consumer sees none of the aborted records", visible == [],
                     f"{len(visible)} records visible")
        trace.expect("the aborted records are still in the log: read_uncommitted sees them",
                     everything == expected, f"{len(everything)} records")
    committed = consumer.committed()
    if commit:
        trace.expect("the group's committed offsets advanced to the positions after the records",
                     committed == offsets, f"committed {committed}, sent {offsets}")
    else:
        trace.expect("the group's committed offsets did not move (the staged offsets were dropped)",
                     all(v is None for v in committed.values()), f"committed {committed}")
    written = markers(trace, pid, mark)
    participants = {(OUTPUT, r.partition) for r in records} | {offsets_partition(trace)}
    trace.expect(f"{article} {word} marker on every participating partition, __consumer_offsets included",
                 set(written) == participants and all(m[-1][0] == word for m in written.values()),
                 ", ".join(f"{t}-{p}: {m[-1][0]}" for (t, p), m in sorted(written.items())))
    final = "CompleteCommit" if commit else "CompleteAbort"
    prepare = "PrepareCommit" if commit else "PrepareAbort"
    logged = txn_log_states(trace, TXN_ID)
    trace.expect(f"__transaction_state holds a record for each state: Empty, Ongoing, {prepare}, {final}",
                 logged == ["Empty", "Ongoing", prepare, final], " -> ".join(logged))
    walk = table_walk(trace, "transaction", TXN_ID)
    trace.expect(f"the transaction table walk is Empty -> Ongoing -> {prepare} -> {final}",
                 walk == ["Empty", "Ongoing", prepare, final], " -> ".join(walk))
    if commit:
        return
    # the retry: rewind to the committed offsets, process again, commit
    restart = consumer.seek_to_committed()
    trace.expect("after the abort the consumer rewinds to the committed offsets (none: back to the start)",
                 all(v == 0 for v in restart.values()), f"positions {restart}")
    records2, offsets2 = process(consumer, producer, commit=True)
    visible = sorted(read_output(trace, "read_committed", client="reader-committed-2"))
    trace.expect("the retried transaction commits: read_committed sees every record exactly once",
                 visible == expected, f"{len(visible)} records visible")
    trace.expect("the committed offsets now advance", consumer.committed() == offsets2 == offsets,
                 f"{offsets2}")
    trace.result.update(retry_records=records2, retry_offsets=offsets2)
    trace.find(f"The abort drops the staged offsets with the output: the consumer rewinds to the committed "
               f"positions ({', '.join(f'{t}-{q}: {o}' for (t, q), o in sorted(restart.items()))}) and reads all "
               f"{len(records2)} records again, while the {len(everything)} aborted output records stay in the log.",
               f"A read_uncommitted consumer of {OUTPUT}: it sees the {len(everything)} aborted records as well as "
               "the retried ones; read_committed readers see each record once.",
               "KIP-98 ('Transactional Guarantees') and KIP-447: offsets sent to a transaction abort with it, and "
               "only isolation.level=read_committed hides aborted records (the ABORT markers).")


@scenario("txn.read_process_write_commit", title="Read-process-write: consume, produce and commit offsets "
          "in one transaction", kip="KIP-447", status="released",
          no_findings="The baseline loop the other txn.* scenarios depart from: nothing goes wrong, and the checks "
                      "say what holds.",
          summary="A KIP-848 consumer reads orders, a transactional producer writes enriched copies and sends "
                  "the consumer's offsets to the transaction (TxnOffsetCommit with the member epoch), then "
                  "commits: the output becomes visible to read_committed readers and the group's offsets "
                  "advance at the same moment, through COMMIT markers on every partition involved.")
def read_process_write_commit(trace: Trace) -> None:
    _rpw(trace, commit=True)


@scenario("txn.read_process_write_abort", title="Read-process-write: the transaction aborts, then the retry "
          "commits", kip="KIP-447", status="released",
          summary="The same loop, aborted: ABORT markers hide the output from read_committed readers and drop "
                  "the staged offsets, so the consumer rewinds to its committed offsets and processes the "
                  "records again; the retry commits each output record exactly once.")
def read_process_write_abort(trace: Trace) -> None:
    _rpw(trace, commit=False)


# ---- timeout ---------------------------------------------------------------------------------------------
# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("txn.timeout_abort", title="transaction.timeout.ms: the coordinator fences and aborts",
          kip="KIP-98", status="released",
          summary="A producer opens a transaction (output and offsets) and stalls. While it is open the "
                  "output is invisible to read_committed readers and OffsetFetch(RequireStable) answers "
                  "UNSTABLE_OFFSET_COMMIT. After transaction.timeout.ms the coordinator's abort scan bumps the "
                  "epoch (PrepareEpochFence) and aborts; the stalled producer's commit is then fenced.")
def timeout_abort(trace: Trace) -> None:
    c = trace.cluster
    timeout = 20000
    setup(trace)
    consumer = Consumer(c, GROUP, client_id="enricher-consumer")
    consumer.subscribe([INPUT])
    producer = Producer(c, TXN_ID, client_id="slow-producer", transaction_timeout_ms=timeout)
    producer.init_transactions()
    pid, epoch = producer.producer_id, producer.producer_epoch
    records = consumer.poll()
    producer.begin_transaction()
    for r in records:
        producer.send(OUTPUT, r.key, transform(r.value))
    offsets = {}
    for r in records:
        offsets[(r.topic, r.partition)] = max(offsets.get((r.topic, r.partition), 0), r.offset + 1)
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    started = c.txns.transactions[TXN_ID].start_ms
    trace.expect("while the transaction is open, read_committed readers see nothing (the LSO is stuck)",
                 read_output(trace) == [], "")
    unstable = None
    try:
        consumer.committed(require_stable=True)
    except Exception as e:  # noqa: BLE001 - ConsumerError
        unstable = getattr(e, "error", None)
    trace.expect("OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for the offsets the transaction "
                 "holds", unstable == "UNSTABLE_OFFSET_COMMIT", f"{unstable}")
    # the producer stalls; the abort scan runs every 10 s
    c.advance(timeout + c.config.transaction_abort_timed_out_interval_ms)
    txn = c.txns.transactions[TXN_ID]
    trace.result.update(started_ms=started, aborted_at_ms=txn.last_update_ms, producer_id=pid,
                        producer_epoch=epoch, coordinator_epoch=txn.producer_epoch)
    trace.expect(f"after txnStartTimestamp + transaction.timeout.ms ({timeout} ms) the coordinator aborted",
                 txn.state == "CompleteAbort", f"state {txn.state}, started at {started} ms, now {c.now} ms")
    fence = [e for e in trace.events if e.kind == "StateChanged" and e.machine == "transaction"
             and e.key == TXN_ID and e.to_state == "PrepareEpochFence"]
    trace.expect("the abort scan fenced first: Ongoing -> PrepareEpochFence (timeout-fence), epoch bumped",
                 bool(fence) and fence[0].cause == "timeout-fence" and txn.producer_epoch > epoch,
                 f"epoch {epoch} -> {txn.producer_epoch}")
    walk = table_walk(trace, "transaction", TXN_ID)
    trace.expect("the table walk is Empty -> Ongoing -> PrepareEpochFence -> PrepareAbort -> CompleteAbort",
                 walk == ["Empty", "Ongoing", "PrepareEpochFence", "PrepareAbort", "CompleteAbort"],
                 " -> ".join(walk))
    logged = txn_log_states(trace, TXN_ID)
    trace.expect("PrepareEpochFence is never written: __transaction_state has Empty, Ongoing, PrepareAbort, "
                 "CompleteAbort", logged == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"], " -> ".join(logged))
    written = markers(trace, pid)
    participants = {(OUTPUT, r.partition) for r in records} | {offsets_partition(trace)}
    trace.expect("ABORT markers on every participating partition, with the fenced (bumped) epoch",
                 set(written) == participants and all(m[-1][0] == "ABORT" and m[-1][1] > epoch
                                                      for m in written.values()),
                 ", ".join(f"{t}-{p}: {m[-1]}" for (t, p), m in sorted(written.items())))
    trace.expect("read_committed readers still see nothing, and the offsets stay uncommitted",
                 read_output(trace, client="reader-committed-2") == []
                 and all(v is None for v in consumer.committed().values()), "")
    # the stalled producer wakes up and commits
    error = None
    try:
        producer.commit_transaction()
    except ProducerFencedError as e:
        error = e.error
    end = responses(trace, "EndTxn", "slow-producer")
    trace.expect("the zombie's EndTxn is refused with PRODUCER_FENCED and the producer is fatal",
                 error == "PRODUCER_FENCED" and producer.state == "FATAL_ERROR"
                 and bool(end) and error_names(end[-1]) == ["PRODUCER_FENCED"],
                 f"{error}; EndTxn v{end[-1].version if end else '?'} -> {error_names(end[-1]) if end else '-'}")
    trace.find(f"The stalled transaction is aborted by the coordinator {txn.last_update_ms - started} ms after it "
               f"began (transaction.timeout.ms {timeout} plus the abort scan's "
               f"{c.config.transaction_abort_timed_out_interval_ms} ms interval); until then OffsetFetch "
               f"with RequireStable answers {unstable}, and the producer's late commit is answered {error}.",
               f"The read_committed readers of {OUTPUT} (nothing visible while it is open) and group '{GROUP}' "
               f"(UNSTABLE_OFFSET_COMMIT); the producer slow-producer ends in {producer.state} and must be "
               "replaced.",
               "KIP-98: transaction.timeout.ms bounds how long an open transaction holds up readers; the "
               "coordinator's abort scan fences the epoch and aborts (TransactionCoordinator.scala, "
               "abortTimedOutTransactions).")


# ---- zombie fencing --------------------------------------------------------------------------------------
# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("txn.zombie_fencing", title="Zombie fencing: a new instance with the same transactional.id",
          kip="KIP-98", status="released",
          summary="Instance A reads, writes and stages offsets, then stalls long enough to drop out of the "
                  "consumer group. Instance B starts with the same transactional.id: its InitProducerId fences "
                  "A's epoch and aborts A's transaction (CONCURRENT_TRANSACTIONS until the abort is done). B "
                  "re-reads from the committed offsets and commits; A's late commit gets PRODUCER_FENCED.")
def zombie_fencing(trace: Trace) -> None:
    c = trace.cluster
    setup(trace)
    ca = Consumer(c, GROUP, client_id="instance-a-consumer")
    ca.subscribe([INPUT])
    pa = Producer(c, TXN_ID, client_id="instance-a")
    pa.init_transactions()
    pid, epoch_a = pa.producer_id, pa.producer_epoch
    records_a = ca.poll()
    pa.begin_transaction()
    for r in records_a:
        pa.send(OUTPUT, r.key, transform(r.value) + b" by A")
    offsets = {}
    for r in records_a:
        offsets[(r.topic, r.partition)] = max(offsets.get((r.topic, r.partition), 0), r.offset + 1)
    pa.send_offsets_to_transaction(offsets, ca.group_metadata())
    # instance A stalls (a long GC pause): the group drops its consumer after the session timeout
    c.advance(c.config.group_consumer_session_timeout_ms + 1000)
    group = c.groups.groups[GROUP]
    trace.expect("instance A's consumer missed its session timeout and left the group",
                 ca.member_id not in group.members, f"members now {sorted(group.members)}")
    # instance B starts: producer first (init_transactions fences A), then its consumer
    pb = Producer(c, TXN_ID, client_id="instance-b")
    pb.init_transactions()
    inits = responses(trace, "InitProducerId", "instance-b")
    trace.expect("B's InitProducerId first gets CONCURRENT_TRANSACTIONS while A's transaction is aborted, then "
                 "succeeds", [error_names(e)[0] for e in inits] == ["CONCURRENT_TRANSACTIONS", "NONE"]
                 or (len(inits) >= 2 and error_names(inits[0])[0] == "CONCURRENT_TRANSACTIONS"
                     and error_names(inits[-1]) == ["NONE"]),
                 " then ".join(error_names(e)[0] for e in inits))
    trace.expect("B keeps the producer id with a higher epoch, so A's epoch is fenced",
                 pb.producer_id == pid and pb.producer_epoch > epoch_a,
                 f"A: ({pid}, {epoch_a}); B: ({pb.producer_id}, {pb.producer_epoch})")
    walk = table_walk(trace, "transaction", TXN_ID)
    trace.expect("A's open transaction was fenced and aborted: Ongoing -> PrepareEpochFence -> PrepareAbort -> "
                 "CompleteAbort -> Empty", walk[:6] == ["Empty", "Ongoing", "PrepareEpochFence", "PrepareAbort",
                                                        "CompleteAbort", "Empty"], " -> ".join(walk))
    cb = Consumer(c, GROUP, client_id="instance-b-consumer")
    cb.subscribe([INPUT])
    records_b, offsets_b = process(cb, pb)
    trace.expect("B re-reads every input record: A's staged offsets were aborted with its transaction",
                 len(records_b) == len(INPUTS) and offsets_b == offsets, f"{len(records_b)} records")
    error = None
    try:
        pa.commit_transaction()
    except ProducerFencedError as e:
        error = e.error
    end = responses(trace, "EndTxn", "instance-a")
    trace.expect("A wakes up and commits: EndTxn answers PRODUCER_FENCED, A is fatal",
                 error == "PRODUCER_FENCED" and pa.state == "FATAL_ERROR" and bool(end)
                 and error_names(end[-1]) == ["PRODUCER_FENCED"], f"{error}")
    visible = sorted(read_output(trace))
    trace.expect("read_committed readers see B's output exactly once and nothing of A's",
                 visible == sorted(transform(v) for _, v in INPUTS), f"{len(visible)} records")
    trace.expect("the group's offsets are B's", cb.committed() == offsets_b, f"{cb.committed()}")
    written = markers(trace, pid)
    trace.expect("A's partitions got ABORT markers, B's got COMMIT markers (the same producer id)",
                 all(m[0][0] == "ABORT" and m[-1][0] == "COMMIT" for m in written.values())
                 and set(written) >= {offsets_partition(trace)},
                 ", ".join(f"{t}-{p}: {[x for x, _ in m]}" for (t, p), m in sorted(written.items())))
    trace.result.update(producer_id=pid, epoch_a=epoch_a, epoch_b=pb.producer_epoch)
    trace.find(f"Instance B's InitProducerId is answered {' then '.join(error_names(e)[0] for e in inits)}: it fences "
               f"A's epoch {epoch_a} (B holds {pb.producer_epoch}) and aborts A's open transaction, so A's late "
               f"commit is answered {error} and nothing A wrote becomes visible.",
               f"Instance A (client instance-a) gets PRODUCER_FENCED and is fatal; instance B is answered "
               f"CONCURRENT_TRANSACTIONS {sum(error_names(e)[0] == 'CONCURRENT_TRANSACTIONS' for e in inits)} "
               "time(s) and retries; read_committed readers see each output record once, B's.",
               "KIP-98, zombie fencing: InitProducerId bumps the epoch of the transactional.id and aborts its open "
               "transaction, so an older instance is fenced (TransactionCoordinator.scala, handleInitProducerId).")


# ---- transaction version 1 vs 2 ----------------------------------------------------------------------
# size: a scenario is one story told step by step, once per transaction version; split, the order of its steps would be lost
@scenario("txn.tv1_vs_tv2", title="Transaction version 1 vs 2: explicit adds, and an epoch bump per "
          "transaction", kip="KIP-890", status="released",
          summary="The loop runs twice under transaction.version=1 (AddPartitionsToTxn and AddOffsetsToTxn "
                  "before the writes, EndTxn v4, the epoch never moves), then the operator finalizes "
                  "transaction.version=2 and the restarted app runs it twice more: no explicit adds (Produce "
                  "v12+ and TxnOffsetCommit v5+ add partitions on the broker), and EndTxn v5 bumps the epoch at "
                  "every end of transaction, so the markers carry a newer epoch than the data.",
          transaction_version=1)
def tv1_vs_tv2(trace: Trace) -> None:
    c = trace.cluster
    setup(trace, inputs=[(b"order-%d" % i, b"widget x%d" % i) for i in range(1, 9)])
    consumer = Consumer(c, GROUP, client_id="enricher-consumer")
    consumer.subscribe([INPUT])

    def run(producer: Producer, label: str):
        epochs, seen = [producer.producer_epoch], []
        for _ in range(2):
            mark = len(c.events)
            records, _ = process(consumer, producer, max_records=2)
            seen.append((mark, records))
            epochs.append(producer.producer_epoch)
        trace.result[label] = {"epochs": epochs, "records": [r for _, rs in seen for r in rs]}
        return epochs, seen

    p1 = Producer(c, TXN_ID, client_id="app-tv1")
    p1.init_transactions()
    epochs1, runs1 = run(p1, "tv1")
    client = "app-tv1"
    trace.expect("TV1: the producer adds partitions and offsets explicitly (AddPartitionsToTxn, AddOffsetsToTxn)",
                 bool(requests(trace, "AddPartitionsToTxn", client)) and bool(requests(trace, "AddOffsetsToTxn", client)),
                 f"{len(requests(trace, 'AddPartitionsToTxn', client))} AddPartitionsToTxn, "
                 f"{len(requests(trace, 'AddOffsetsToTxn', client))} AddOffsetsToTxn")
    trace.expect("TV1: EndTxn v4 and TxnOffsetCommit v4 (transaction version 1 caps them)",
                 {e.version for e in requests(trace, "EndTxn", client)} == {4}
                 and {e.version for e in requests(trace, "TxnOffsetCommit", client)} == {4},
                 f"EndTxn {sorted({e.version for e in requests(trace, 'EndTxn', client)})}, TxnOffsetCommit "
                 f"{sorted({e.version for e in requests(trace, 'TxnOffsetCommit', client)})}")
    trace.expect("TV1: the epoch does not move from one transaction to the next", len(set(epochs1)) == 1,
                 f"epochs {epochs1}")
    pid = p1.producer_id
    tv1_markers = markers(trace, pid, runs1[0][0])
    trace.expect("TV1: the markers carry the same epoch as the data",
                 all(ep == epochs1[0] for m in tv1_markers.values() for _, ep in m), f"{tv1_markers}")

    # the operator finalizes transaction.version=2 (kafka-features.sh upgrade); the app restarts
    c.features.finalize("transaction.version", 2, by="operator",
                        how="kafka-features upgrade --feature transaction.version=2")
    p2 = Producer(c, TXN_ID, client_id="app-tv2")
    p2.init_transactions()
    epochs2, runs2 = run(p2, "tv2")
    client = "app-tv2"
    trace.expect("TV2: the client learns transaction.version=2 from ApiVersions (FinalizedFeatures)", p2.tv2, "")
    trace.expect("TV2: no AddPartitionsToTxn / AddOffsetsToTxn from the client",
                 not requests(trace, "AddPartitionsToTxn", client) and not requests(trace, "AddOffsetsToTxn", client), "")
    implicit = [e for e in trace.events[runs2[0][0]:] if isinstance(e, ev.PartitionAddedToTxn) and not e.verify_only]
    trace.expect("TV2: Produce and TxnOffsetCommit add their partitions on the broker (AddPartitionsToTxn v5, add)",
                 {n.via.split()[0] for n in implicit} == {"Produce", "TxnOffsetCommit"},
                 f"{len(implicit)} implicit adds")
    trace.expect("TV2: EndTxn v5 and TxnOffsetCommit v6",
                 {e.version for e in requests(trace, "EndTxn", client)} == {5}
                 and {e.version for e in requests(trace, "TxnOffsetCommit", client)} == {6}, "")
    trace.expect("TV2: every EndTxn bumps the epoch (and hands the new one back)",
                 all(b == a + 1 for a, b in zip(epochs2, epochs2[1:], strict=False)), f"epochs {epochs2}")
    tv2_markers = markers(trace, p2.producer_id, runs2[0][0])
    data_epochs = {e.producer_epoch for e in trace.events[runs2[0][0]:] if e.kind == "RecordAppended"
                   and e.topic == OUTPUT and not e.control}
    marker_epochs = {ep for m in tv2_markers.values() for _, ep in m}
    trace.expect("TV2: each marker carries the bumped epoch, newer than the data it ends",
                 marker_epochs == {e + 1 for e in data_epochs}, f"data epochs {sorted(data_epochs)}, marker epochs "
                 f"{sorted(marker_epochs)}")
    visible = sorted(read_output(trace))
    trace.expect("either way, read_committed sees every input transformed exactly once",
                 visible == sorted(transform(r.value) for rs in (runs1, runs2) for _, recs in rs for r in recs)
                 and len(visible) == 8, f"{len(visible)} records")
    trace.result["tv2_marker_epochs"] = sorted(marker_epochs)
    trace.find(f"Under transaction.version 1 the producer epoch never moves ({epochs1}); under version 2 every "
               f"EndTxn bumps it ({epochs2}), so each marker carries the data's epoch plus one (data "
               f"{sorted(data_epochs)}, markers {sorted(marker_epochs)}).",
               "Anyone reading the log (kafka-dump-log.sh) or a tool matching markers to data by epoch; the "
               "application sees no difference, and the client sends no AddPartitionsToTxn at version 2.",
               "KIP-890 part 2: with transaction.version 2 the coordinator bumps the epoch at every end of "
               "transaction (EndTxn v5) and adds partitions on the broker (AddPartitionsToTxn v5).")
