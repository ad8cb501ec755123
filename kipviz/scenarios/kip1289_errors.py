"""KIP-1289 (PROPOSED, voting, docs/facts.md; its page's "Corner cases"): the error cases of share-group
acknowledgements inside a producer transaction. Nothing here is released Kafka.

    kip1289.case02_coordinator_unavailable   the broker-internal registration of __share_group_state-N
                                             with the transaction coordinator fails retriably
                                             (COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR): nothing
                                             staged, the user aborts, the retry commits
    kip1289.case03_zombie_producer           producer A (old epoch) stages after B initialised the same
                                             transactional id: PRODUCER_FENCED, A fatal; a late marker of
                                             A's transaction cannot resolve B's staging
    kip1289.case08_stale_member_epoch        a rebalance between share_group_metadata() and the call:
                                             STALE_MEMBER_EPOCH; a removed member: UNKNOWN_MEMBER_ID
    kip1289.case09_old_broker                share.version 1: the producer raises synchronously, no
                                             TxnShareAcknowledge bytes on the wire, the user aborts;
                                             after share.version 2 is finalized a restarted producer commits
    kip1289.case10_invalid_ack_type          RELEASE / RENEW / GAP in a transaction: INVALID_RECORD_STATE
    kip1289.case11_partial_multi_partition   two share partitions, the second fails (a record it had
                                             rejected already): nothing staged anywhere (all or
                                             nothing), abort, retry without it
    kip1289.case14_concurrent_epochs         an old in-flight TxnShareAcknowledge (stale epoch) after
                                             the epoch bump: PRODUCER_FENCED, never staged

Every scenario runs on one broker (the share partition and __share_group_state-N co-located) with
KIP-1289 as written (share_marker_routing "page"); see kip1289_marker.py for other layouts.

Every scenario is a read-process-write loop over the public client models (ShareConsumer,
Producer); each output record carries the header ("kipviz-source", b"in-{partition}@{offset}")
naming its input record. Checks read the broker's answers from ResponseSent events, the record
states from the share partitions and what a read_committed consumer gets back. Every scenario ends
with kipviz.eos.check_share_eos over its events, with no at-least-once allowance (none of these
cases is one of the KIP's documented windows): its Report is trace.result["eos"] and must be ok.

`share_commit_run(seed)` is the plain committed loop (no fault) the cases depart from; it is not a
registered scenario (kip1289.happy_commit in kip1289_faults.py is the named one)."""
from __future__ import annotations

from ..broker.share_txn import OPERATION_NOT_ATTEMPTED, pending
from ..clients import Consumer, Producer
from ..clients.producer_errors import (
    AbortableError,
    CommitFailedError,
    ProducerError,
    ProducerFencedError,
    UnsupportedVersionError,
)
from ..clients.share_consumer import ShareConsumer
from ..eos import check_share_eos
from ..records import share_coordinator_partition
from ..schema import events as ev
from ..schema.error_codes import CODE, name_of
from ..schema.topics import SHARE_GROUP_STATE
from . import Scenario, Trace, scenario

KIP = "KIP-1289"
STATUS = "proposed"
PROPOSED = dict(kip=KIP, status=STATUS, share_version=2)
INPUT, OUTPUT, GROUP, TXN_ID = "in", "out", "sg", "tx-worker"
ACCEPT, RELEASE, REJECT, RENEW, GAP = 1, 2, 3, 4, 0
API = "TxnShareAcknowledge"


# ---- helpers ---------------------------------------------------------------------------------------------
def setup(trace: Trace, *, partitions: int = 1, per_partition: int = 4, producer_kw: dict | None = None):
    """Input written by a plain producer, a share consumer that has acquired all of it, a
    transactional producer that has begun a transaction. Returns (share consumer, producer, records)."""
    c = trace.cluster
    c.create_topic(INPUT, partitions)
    c.create_topic(OUTPUT, 1)
    loader = Producer(c, None, client_id="loader")
    for p in range(partitions):
        for i in range(per_partition):
            loader.send(INPUT, b"k%d-%d" % (p, i), b"v%d-%d" % (p, i), partition=p)
    sc = ShareConsumer(c, GROUP, client_id="worker")
    sc.subscribe([INPUT])
    records = sc.poll()
    trace.expect("the share consumer acquired every input record", len(records) == partitions * per_partition,
                 f"{len(records)} records")
    pr = Producer(c, TXN_ID, client_id="worker-producer", **(producer_kw or {}))
    pr.init_transactions()
    pr.begin_transaction()
    trace.result.update(topic_id=sc.assignment[0][0] if sc.assignment else None, member_id=sc.member_id)
    return sc, pr, records


def source(r) -> bytes:
    return f"{r.topic}-{r.partition}@{r.offset}".encode()


def produce(pr: Producer, records) -> None:
    """The 'process' step: one output record per input record, naming its source."""
    for r in records:
        pr.send(OUTPUT, r.key, (r.value or b"").upper(), partition=0, headers=[("kipviz-source", source(r))])


def acks_of(records, ack_type: int = ACCEPT) -> dict:
    out: dict = {}
    for r in records:
        out.setdefault((r.topic, r.partition), {})[r.offset] = ack_type
    return out


def stage(pr: Producer, acks: dict, gm: dict) -> tuple[str, ProducerError | None]:
    """send_share_acknowledgements_to_transaction; (error name or "NONE", the exception)."""
    try:
        pr.send_share_acknowledgements_to_transaction(acks, gm)
    except ProducerError as e:
        return e.error, e
    return "NONE", None


def answers(trace: Trace, since: int = 0, client: str | None = None) -> list[dict]:
    """TxnShareAcknowledge answers since event `since`: top-level error and per-partition errors."""
    out = []
    for e in trace.events[since:]:
        if e.kind == "ResponseSent" and e.api == API and (client is None or e.client == client):
            parts = {p["PartitionIndex"]: name_of(p["ErrorCode"]) if p["ErrorCode"] != OPERATION_NOT_ATTEMPTED
                     else "OPERATION_NOT_ATTEMPTED"
                     for t in e.body.get("Responses") or [] for p in t["Partitions"]}
            out.append({"error": name_of(e.body["ErrorCode"]), "partitions": parts})
    return out


def wire_requests(trace: Trace, since: int = 0) -> int:
    return sum(1 for e in trace.events[since:] if e.kind == "RequestReceived" and e.api == API)


def states(trace: Trace, partition: int = 0) -> dict[int, str]:
    c = trace.cluster
    tid = c.topics.get(INPUT).topic_id
    sp = c.shares.partitions.get((GROUP, tid, partition))
    return {} if sp is None else {o: r.state for o, r in sorted(sp.records.items())}


def tx_pending_moves(trace: Trace, since: int = 0) -> list:
    return [e for e in trace.events[since:] if e.kind == "StateChanged" and e.machine == "share-record"
            and "TX_PENDING" in (e.from_state, e.to_state)]


def share_state_partition(trace: Trace, partition: int = 0) -> tuple[str, int]:
    c = trace.cluster
    tid = c.topics.get(INPUT).topic_id
    return SHARE_GROUP_STATE, share_coordinator_partition(GROUP, tid, partition,
                                                              c.config.share_state_topic_partitions)


def place_share_state(trace: Trace, colocated: bool = True) -> tuple[tuple[str, int], int]:
    """Lead __share_group_state-N from in-0's leader (colocated) or from another broker, on
    purpose, before anything is staged: KIP-1289 as written resolves a staging only when the two
    are co-located (kipviz.broker.share_txn, scenarios kip1289.marker_*). Returns (the state
    partition, in-0's leader)."""
    c = trace.cluster
    state_tp = share_state_partition(trace)
    share_leader = c.topics.partition(INPUT, 0).leader
    log = c.topics.partition(*state_tp)
    want = share_leader if colocated else (share_leader + 1) % c.config.brokers
    if log.leader != want:
        c.move_share_state_leader(state_tp[1], want)
    c.emit(ev.ScenarioLayout, input=INPUT, state_partition=state_tp[1], share_leader=share_leader,
           state_leader=log.leader, colocated=colocated)
    trace.expect(f"layout: in-0 led by broker {share_leader}, {state_tp[0]}-{state_tp[1]} by broker {log.leader}",
                 (log.leader == share_leader) == colocated, "")
    trace.result.update(share_state_partition=state_tp, share_leader=share_leader, state_leader=log.leader,
                        routing=c.config.share_marker_routing)
    return state_tp, share_leader


def registered(trace: Trace, transactional_id: str = TXN_ID) -> bool:
    d = trace.cluster.txns.describe(transactional_id) or {}
    return any(tp[0] == SHARE_GROUP_STATE for tp in d.get("partitions") or [])


def read_committed(trace: Trace, client: str) -> list[bytes]:
    """The "kipviz-source" headers a read_committed reader sees in the output topic."""
    reader = Consumer(trace.cluster, None, client_id=client, isolation="read_committed")
    reader.assign([(OUTPUT, 0)])
    out = [dict(r.headers).get("kipviz-source") for r in reader.poll()]
    reader.close()
    return out


def nothing_staged(trace: Trace, since: int, what: str) -> None:
    moved = tx_pending_moves(trace, since)
    trace.expect(f"nothing staged ({what}): no record moved to TX_PENDING and none is TX_PENDING",
                 not moved and pending(trace.cluster) == [], f"{len(moved)} moves, pending {pending(trace.cluster)}")


def clean_commit(trace: Trace, sc: ShareConsumer, pr: Producer, records, *, reader: str, partitions=(0,),
                 expected=None) -> None:
    """The retry after the failure: process `records` again, stage with a fresh snapshot, commit;
    every record ends ACKNOWLEDGED. The read_committed reader reads the whole output topic, so it
    must see exactly `expected` (default: `records`) -- the inputs of every transaction committed
    so far, not only this one's."""
    produce(pr, records)
    err, _ = stage(pr, acks_of(records), sc.share_group_metadata())
    trace.expect("staging with a fresh snapshot answers NONE", err == "NONE", err)
    pr.commit_transaction()
    left = {p: states(trace, p) for p in partitions}
    trace.expect("after the commit every input record is acknowledged (the SPSO moved past them)",
                 all(s == {} for s in left.values()), repr(left))
    seen = read_committed(trace, reader)
    want = records if expected is None else expected
    trace.expect("a read_committed reader sees each input's output exactly once (no loss, no duplicate)",
                 sorted(seen) == sorted(source(r) for r in want), repr(seen))
    trace.expect("no model bug (cluster.internal_errors empty)", trace.cluster.internal_errors == [],
                 repr(trace.cluster.internal_errors))


def check_eos(trace: Trace) -> None:
    """kipviz.eos over the whole run, no at-least-once allowance; the Report goes to result["eos"]."""
    report = check_share_eos(trace.events, group=GROUP, input_topic=INPUT, output_topic=OUTPUT,
                             allowed_at_least_once=False)
    trace.result["eos"] = report
    trace.expect("EOS checker (kipviz.eos, no at-least-once allowance): no input lost, none output twice, "
                 "no ack without output", report.ok, report.summary(limit=5))


def share_commit_run(seed: int = 0, *, colocate: bool = True, **cluster_settings) -> Trace:
    """The plain committed share-group loop (poll, produce, stage, commit) on a fresh cluster at
    share.version 2, as a Trace with checks: the baseline every corner case departs from.
    colocate (default): __share_group_state-N is led by in-0's leader, on purpose -- KIP-1289 as
    written resolves the staging only then (kip1289.marker_not_colocated); False keeps the
    placement the hash gives, on which the checks fail with more than one broker."""
    from ..broker import Cluster
    sc_ = Scenario("kip1289.share_commit_run", "KIP-1289: share-group read-process-write, committed", KIP, STATUS,
                   share_commit_run.__doc__ or "", lambda t: None, {"share_version": 2})
    trace = Trace(sc_, seed, Cluster(seed=seed, **{"share_version": 2, "share_auto_offset_reset": "earliest",
                                                     **cluster_settings}))
    sc, pr, records = setup(trace)
    if colocate:
        place_share_state(trace, colocated=True)
    clean_commit(trace, sc, pr, records, reader="reader")
    check_eos(trace)
    return trace


# ---- corner case 2 -------------------------------------------------------------------------------------
@scenario("kip1289.case02_coordinator_unavailable", title="KIP-1289 case 2: TxnCoord registration fails retriably",
          **PROPOSED)
def coordinator_unavailable(trace: Trace) -> None:
    """The share-partition leader's broker-internal AddPartitionsToTxn of __share_group_state-N
    fails with COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR (the transaction coordinator is loading
    or moving): nothing is staged, the error reaches the producer, the user aborts and retries."""
    c = trace.cluster
    sc, pr, records = setup(trace, producer_kw={"retries": 3})
    produce(pr, records)
    # Fault: while `faults` is non-empty the coordinator answers the broker-internal registration
    # with the next error (the model does not take cluster.down into account there; see the report).
    faults = ["COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"]
    real = c.txns.share.add_state_partitions

    def unavailable(transactional_id, producer_id, producer_epoch, partitions, **kw):
        if faults:
            err = faults.pop(0)
            c.emit(ev.RegistrationFailed, error=err)
            return CODE[err]
        return real(transactional_id, producer_id, producer_epoch, partitions, **kw)
    c.txns.share.add_state_partitions = unavailable
    mark = len(c.events)
    err, exc = stage(pr, acks_of(records), sc.share_group_metadata())
    got = answers(trace, mark)
    top = sorted({a["error"] for a in got})
    trace.expect("every TxnShareAcknowledge attempt answered the coordinator error top-level "
                 "(COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR)",
                 bool(got) and top == ["COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"], repr(got))
    nothing_staged(trace, mark, "registration failed")
    trace.expect("the record states did not move: all still ACQUIRED by the member",
                 set(states(trace).values()) == {"ACQUIRED"}, repr(states(trace)))
    trace.expect("__share_group_state-N was never added to the transaction", not registered(trace),
                 repr(c.txns.describe(TXN_ID)["partitions"]))
    trace.expect("the error reached the producer (raised from send_share_acknowledgements_to_transaction)",
                 err in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"), f"{type(exc).__name__}: {err}")
    trace.expect("the producer can abort (state IN_TRANSACTION or ABORTABLE_ERROR, not FATAL_ERROR)",
                 pr.state in ("IN_TRANSACTION", "ABORTABLE_ERROR"), pr.state)
    trace.result.update(error=err, exception=type(exc).__name__ if exc else None, producer_state=pr.state,
                        attempts=got)
    trace.find(f"The broker-internal registration of __share_group_state-N fails with {' / '.join(top)}: all "
               f"{len(got)} TxnShareAcknowledge attempts are answered that way, nothing is staged, and "
               f"send_share_acknowledgements_to_transaction raises {type(exc).__name__ if exc else 'nothing'}({err}).",
               f"The application ({pr.client_id}): it must abort and run the loop again; the records stay ACQUIRED "
               "by its share consumer, so nothing is lost.",
               "KIP-1289, corner case 2: a retriable coordinator error at registration stages nothing and the user "
               "aborts and retries; the page does not say how often the producer retries first.")
    pr.abort_transaction()
    trace.expect("after abortTransaction the output written so far is invisible to read_committed",
                 read_committed(trace, "reader-after-abort") == [], "")
    pr.begin_transaction()
    clean_commit(trace, sc, pr, records, reader="reader-after-retry")
    check_eos(trace)


# ---- corner case 3 -------------------------------------------------------------------------------------
# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("kip1289.case03_zombie_producer", title="KIP-1289 case 3: a zombie producer is fenced at staging",
          **PROPOSED)
def zombie_producer(trace: Trace) -> None:
    """Producer A (epoch N) is still running when producer B initialises the same transactional
    id: A's TxnShareAcknowledge is rejected with PRODUCER_FENCED, nothing is staged, A is fatal.
    B stages the same records; a late marker of A's old transaction does not resolve them."""
    c = trace.cluster
    sc, a, records = setup(trace)
    produce(a, records)
    a_pid, a_epoch = a.producer_id, a.producer_epoch
    b = Producer(c, TXN_ID, client_id="worker-producer-2")
    b.init_transactions()
    trace.expect("B's InitProducerId bumped the epoch past A's (same producer id)",
                 b.producer_id == a_pid and b.producer_epoch > a_epoch,
                 f"A ({a_pid}, {a_epoch}), B ({b.producer_id}, {b.producer_epoch})")
    mark = len(c.events)
    err, exc = stage(a, acks_of(records), sc.share_group_metadata())
    got = answers(trace, mark)
    trace.expect("A's TxnShareAcknowledge is answered PRODUCER_FENCED (old epoch)",
                 [g["error"] for g in got] == ["PRODUCER_FENCED"], repr(got))
    nothing_staged(trace, mark, "fenced producer")
    trace.expect("producer A is fatal (ProducerFencedError, FATAL_ERROR)",
                 isinstance(exc, ProducerFencedError) and a.state == "FATAL_ERROR", f"{err}, {a.state}")
    # INVALID_PRODUCER_EPOCH: an epoch the coordinator never handed out (newer than current)
    body = {"TransactionalId": TXN_ID, "GroupId": GROUP, "ProducerId": a_pid, "ProducerEpoch": b.producer_epoch + 3,
            "MemberId": sc.member_id, "MemberEpoch": sc.member_epoch,
            "Topics": [{"TopicId": c.topics.get(INPUT).topic_id, "Partitions": [{
                "PartitionIndex": 0, "AcknowledgementBatches": [
                    {"FirstOffset": 0, "LastOffset": 0, "AcknowledgeTypes": [ACCEPT]}]}]}]}
    r = c.call(API, 0, body, client="worker-producer")
    trace.expect("an epoch above the current one is answered INVALID_PRODUCER_EPOCH, nothing staged",
                 name_of(r["ErrorCode"]) == "INVALID_PRODUCER_EPOCH" and pending(c) == [], name_of(r["ErrorCode"]))
    # B does the work
    b.begin_transaction()
    produce(b, records)
    err_b, _ = stage(b, acks_of(records), sc.share_group_metadata())
    staged = pending(c)
    trace.expect("B stages the same records (TX_PENDING at B's epoch)",
                 err_b == "NONE" and len(staged) == len(records) and all(s[5] == b.producer_epoch for s in staged),
                 repr(staged))
    # late marker of A's old transaction (the TV2 marker epoch of A's transaction is a_epoch + 1)
    part = share_state_partition(trace)[1]
    before = len(c.events)
    for epoch in (a_epoch, a_epoch + 1):
        c.call("WriteTxnMarkers", 1, {"Markers": [{
            "ProducerId": a_pid, "ProducerEpoch": epoch, "TransactionResult": True, "CoordinatorEpoch": 0,
            "Topics": [{"Name": SHARE_GROUP_STATE, "PartitionIndexes": [part]}]}]}, client="late-marker")
    trace.expect("a late COMMIT marker of A's transaction (epoch N, N+1) resolves none of B's staging",
                 pending(c) == staged and not tx_pending_moves(trace, before), repr(pending(c)))
    b.commit_transaction()
    trace.expect("B's commit acknowledges every record", states(trace) == {}, repr(states(trace)))
    seen = read_committed(trace, "reader")
    trace.expect("read_committed sees B's output once and nothing of A's (aborted when B initialised)",
                 sorted(seen) == sorted(source(r) for r in records), repr(seen))
    trace.expect("no model bug (cluster.internal_errors empty)", c.internal_errors == [], repr(c.internal_errors))
    trace.result.update(zombie=(a_pid, a_epoch), new=(b.producer_id, b.producer_epoch), error=err,
                        zombie_state=a.state)
    trace.find(f"Zombie producer A (epoch {a_epoch}) stages after B initialised the same transactional id: its "
               f"TxnShareAcknowledge is answered {', '.join(g['error'] for g in got)}, nothing is staged, A ends in "
               f"{a.state}, and a late COMMIT marker of A's transaction resolves none of B's staging.",
               "Producer A (client worker-producer) gets ProducerFencedError and must be closed; B's transaction "
               "and the read_committed readers of the output are unaffected.",
               "KIP-1289, corner case 3: TxnShareAcknowledge checks the producer epoch like any transactional "
               "request (PRODUCER_FENCED for an old one, INVALID_PRODUCER_EPOCH for one never handed out).")
    check_eos(trace)


# ---- corner case 8 -------------------------------------------------------------------------------------
@scenario("kip1289.case08_stale_member_epoch", title="KIP-1289 case 8: stale member epoch at staging",
          **PROPOSED)
def stale_member_epoch(trace: Trace) -> None:
    """A rebalance moves the member's epoch between share_group_metadata() and the call:
    STALE_MEMBER_EPOCH, nothing staged, abortable. A member that left the group: UNKNOWN_MEMBER_ID.
    The retry with a fresh snapshot commits."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    produce(pr, records)
    gm = sc.share_group_metadata()
    other = ShareConsumer(c, GROUP, client_id="worker-2")
    other.subscribe([INPUT])
    other.heartbeat()                   # joins: the group epoch moves
    sc.heartbeat()                      # the member moves to the new epoch; `gm` is stale
    trace.expect("the member's epoch moved after the snapshot", sc.member_epoch != gm["member_epoch"],
                 f"{gm['member_epoch']} -> {sc.member_epoch}")
    mark = len(c.events)
    err, exc = stage(pr, acks_of(records), gm)
    got = answers(trace, mark)
    trace.expect("TxnShareAcknowledge with the old snapshot is answered STALE_MEMBER_EPOCH",
                 [g["error"] for g in got] == ["STALE_MEMBER_EPOCH"], repr(got))
    nothing_staged(trace, mark, "stale member epoch")
    trace.expect("the producer is abortable (CommitFailedError, ABORTABLE_ERROR)",
                 isinstance(exc, CommitFailedError) and pr.state == "ABORTABLE_ERROR", f"{err}, {pr.state}")
    pr.abort_transaction()
    # a member that has left the group
    gone = other.share_group_metadata()
    other.close()
    sc.heartbeat()
    pr.begin_transaction()
    produce(pr, records)
    mark = len(c.events)
    err2, exc2 = stage(pr, acks_of(records), gone)
    got2 = answers(trace, mark)
    trace.expect("a snapshot of a member that left the group is answered UNKNOWN_MEMBER_ID",
                 [g["error"] for g in got2] == ["UNKNOWN_MEMBER_ID"], repr(got2))
    nothing_staged(trace, mark, "unknown member")
    trace.expect("again abortable", isinstance(exc2, AbortableError) and pr.state == "ABORTABLE_ERROR",
                 f"{err2}, {pr.state}")
    pr.abort_transaction()
    trace.expect("the records are still ACQUIRED by the member (its lock still running)",
                 set(states(trace).values()) == {"ACQUIRED"}, repr(states(trace)))
    trace.result.update(stale_epoch=gm["member_epoch"], current_epoch=sc.member_epoch, errors=[err, err2])
    trace.find(f"A rebalance between share_group_metadata() and the call moves the member from epoch "
               f"{gm['member_epoch']} to {sc.member_epoch}: TxnShareAcknowledge is answered {err}; a snapshot of a "
               f"member that has left is answered {err2}. Each time nothing is staged and the producer is abortable.",
               f"The application ({pr.client_id}): CommitFailedError, abort, take share_group_metadata() again and "
               "retry; the records stay ACQUIRED by the member meanwhile.",
               "KIP-1289, corner case 8: the member epoch in TxnShareAcknowledge is checked as in ShareAcknowledge "
               "(STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), and the error is abortable.")
    pr.begin_transaction()
    clean_commit(trace, sc, pr, records, reader="reader")
    check_eos(trace)


# ---- corner case 9 -------------------------------------------------------------------------------------
@scenario("kip1289.case09_old_broker", title="KIP-1289 case 9: a broker without TxnShareAcknowledge",
          kip=KIP, status=STATUS, share_version=1)
def old_broker(trace: Trace) -> None:
    """share.version 1 (a rolling upgrade, or the feature not finalized): ApiVersions does not
    list TxnShareAcknowledge, so the producer raises UnsupportedVersionError synchronously with no
    bytes on the wire; the user aborts the transaction (the output must be cleaned up). Then the
    operator finalizes share.version 2 (the KIP's rollout phase 3: online, no rebalance) and the
    worker's producer is restarted (phase 4): its ApiVersions now lists the RPC, the records the
    member still holds are staged and committed."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    produce(pr, records)
    mark = len(c.events)
    err, exc = stage(pr, acks_of(records), sc.share_group_metadata())
    trace.expect("the producer raised UnsupportedVersionError (UNSUPPORTED_VERSION)",
                 isinstance(exc, UnsupportedVersionError) and err == "UNSUPPORTED_VERSION", f"{exc!r}")
    trace.expect("no TxnShareAcknowledge bytes went over the wire (no RequestReceived for it)",
                 wire_requests(trace, mark) == 0 and wire_requests(trace) == 0, str(wire_requests(trace)))
    sync = [e for e in c.events[mark:] if isinstance(e, ev.ClientError) and e.api == API]
    trace.expect("the producer recorded the error as synchronous, 0 bytes sent",
                 bool(sync) and sync[-1].synchronous and sync[-1].bytes_sent == 0, repr(sync))
    trace.expect("the transaction is still open (IN_TRANSACTION): the user must abort it",
                 pr.state == "IN_TRANSACTION", pr.state)
    nothing_staged(trace, mark, "unsupported")
    pr.abort_transaction()
    trace.expect("after abortTransaction read_committed sees none of the output", read_committed(trace, "reader") == [],
                 "")
    trace.expect("the records are still ACQUIRED by the member: they will be redelivered (no loss)",
                 set(states(trace).values()) == {"ACQUIRED"}, repr(states(trace)))
    trace.expect("no model bug (cluster.internal_errors empty)", c.internal_errors == [], repr(c.internal_errors))
    trace.result.update(error=err, exception=type(exc).__name__ if exc else None, producer_state=pr.state)
    trace.find(f"At share.version 1 the broker does not advertise TxnShareAcknowledge: the producer raises "
               f"{type(exc).__name__ if exc else 'nothing'}({err}) with {wire_requests(trace, mark) or 'no'} "
               "TxnShareAcknowledge request(s) on the wire, and the transaction stays open until the user aborts it.",
               "The application: it must catch UnsupportedVersionError and abort, or its output would commit "
               "without the acknowledgements; an operator must finalize share.version 2 and restart the producer.",
               "KIP-1289, corner case 9 and its rollout: TxnShareAcknowledge is served only at share.version 2, "
               "finalized online (phase 3) before the clients restart (phase 4).")
    # recovery: the feature is finalized while the member keeps its records, the app restarts
    c.features.finalize("share.version", 2, by="operator", how="kafka-features.sh upgrade --feature share.version "
                        "--version 2; KIP-1289 rollout phase 3, proposed", status=STATUS, kip=KIP)
    restarted = Producer(c, TXN_ID, client_id="worker-producer-2")
    restarted.init_transactions()
    trace.expect("after the upgrade the restarted producer's ApiVersions lists TxnShareAcknowledge",
                 API in (restarted.broker_versions or {}), repr((restarted.broker_versions or {}).get(API)))
    restarted.begin_transaction()
    clean_commit(trace, sc, restarted, records, reader="reader-after-upgrade")
    check_eos(trace)


# ---- corner case 10 ------------------------------------------------------------------------------------
@scenario("kip1289.case10_invalid_ack_type", title="KIP-1289 case 10: RELEASE / RENEW / GAP in a transaction",
          **PROPOSED)
def invalid_ack_type(trace: Trace) -> None:
    """Only ACCEPT (1) and REJECT (3) have transactional meaning: RELEASE (2), RENEW (4) and GAP
    (0) are answered INVALID_RECORD_STATE and nothing is staged; each time the user aborts."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    seen_errors = {}
    for name, t in (("RELEASE", RELEASE), ("RENEW", RENEW), ("GAP", GAP)):
        produce(pr, records)
        acks = acks_of(records)
        acks[(INPUT, 0)][records[-1].offset] = t          # one bad type among ACCEPTs
        mark = len(c.events)
        err, exc = stage(pr, acks, sc.share_group_metadata())
        got = answers(trace, mark)
        codes = [g["partitions"].get(0) for g in got]
        seen_errors[name] = codes
        trace.expect(f"{name} ({t}) in a transaction is answered INVALID_RECORD_STATE",
                     codes == ["INVALID_RECORD_STATE"] and err == "INVALID_RECORD_STATE", repr(got))
        nothing_staged(trace, mark, name)
        trace.expect(f"{name}: abortable (AbortableError, ABORTABLE_ERROR), share-state partition not registered",
                     isinstance(exc, AbortableError) and pr.state == "ABORTABLE_ERROR" and not registered(trace),
                     f"{err}, {pr.state}")
        pr.abort_transaction()
        pr.begin_transaction()
    trace.expect("the records are still ACQUIRED by the member", set(states(trace).values()) == {"ACQUIRED"},
                 repr(states(trace)))
    trace.result.update(errors=seen_errors)
    trace.find(f"{', '.join(seen_errors)} inside a transaction are each answered "
               f"{'/'.join(sorted({str(v[0]) if v else 'nothing' for v in seen_errors.values()}))}: nothing is "
               "staged and the producer is abortable each time.",
               "The application: an AbortableError(INVALID_RECORD_STATE) for in-0; it aborts, and the records stay "
               "ACQUIRED by its share consumer.",
               "KIP-1289, corner case 10: only ACCEPT (1) and REJECT (3) have a transactional meaning; the page "
               "lists RENEW (4) and GAP (0), though RENEW came with KIP-1222 and GAP exists only on the wire.")
    clean_commit(trace, sc, pr, records, reader="reader")
    check_eos(trace)


# ---- corner case 11 ------------------------------------------------------------------------------------
@scenario("kip1289.case11_partial_multi_partition",
          title="KIP-1289 case 11: one of two share partitions fails, nothing is staged", **PROPOSED)
def partial_multi_partition(trace: Trace) -> None:
    """One TxnShareAcknowledge for share partitions A (in-0) and B (in-1); on B one record is no
    longer acquired by the member (the worker had already rejected it as poison through the plain
    ShareAcknowledge path, so it is ARCHIVED): B answers INVALID_RECORD_STATE, A
    OPERATION_NOT_ATTEMPTED, and neither is staged (all or nothing). The user aborts and retries
    without the record it no longer holds. (A plain ACCEPT there would be an EOS violation of the
    user's own: acknowledged, no output.)"""
    c = trace.cluster
    sc, pr, records = setup(trace, partitions=2, per_partition=3)
    tid = c.topics.get(INPUT).topic_id
    lost = next(r for r in records if r.partition == 1 and r.offset == 2)
    sc.pending[(tid, 1)] = {lost.offset: REJECT}          # B@2 rejected (poison) outside the transaction
    sc.commit_sync()
    trace.expect("B@2 is no longer ACQUIRED by the member (rejected: ARCHIVED)", 2 not in states(trace, 1) or
                 states(trace, 1)[2] == "ARCHIVED", repr(states(trace, 1)))
    produce(pr, records)
    mark = len(c.events)
    err, exc = stage(pr, acks_of(records), sc.share_group_metadata())
    got = answers(trace, mark)
    trace.expect("one request: A answered OPERATION_NOT_ATTEMPTED, B INVALID_RECORD_STATE",
                 len(got) == 1 and got[0]["partitions"] == {0: "OPERATION_NOT_ATTEMPTED", 1: "INVALID_RECORD_STATE"},
                 repr(got))
    moved = [e for e in c.events[mark:] if e.kind == "StateChanged" and e.machine == "share-record"]
    trace.expect("no record of either partition changed state (all or nothing)", not moved, repr(moved))
    nothing_staged(trace, mark, "partial failure")
    trace.expect("abortable (AbortableError INVALID_RECORD_STATE), share-state partitions not registered",
                 isinstance(exc, AbortableError) and err == "INVALID_RECORD_STATE" and pr.state == "ABORTABLE_ERROR"
                 and not registered(trace), f"{err}, {pr.state}")
    pr.abort_transaction()
    trace.expect("after the abort read_committed sees no output", read_committed(trace, "reader-1") == [], "")
    trace.result.update(answers=got, error=err)
    parts = got[0]["partitions"] if got else {}
    trace.find(f"One TxnShareAcknowledge for in-0 and in-1 fails on in-1 ({parts.get(1)}: in-1@2 was already "
               f"rejected outside the transaction), so in-0 is answered {parts.get(0)} and neither is staged.",
               f"The application: AbortableError({err}); it aborts and retries without in-1@2, which it no longer "
               "holds.",
               "KIP-1289, corner case 11: a TxnShareAcknowledge over several share partitions is all or nothing; "
               "the partitions not tried answer OPERATION_NOT_ATTEMPTED.")
    pr.begin_transaction()
    held = [r for r in records if r is not lost]
    clean_commit(trace, sc, pr, held, reader="reader-2", partitions=(0, 1))
    check_eos(trace)


# ---- corner case 14 ------------------------------------------------------------------------------------
@scenario("kip1289.case14_concurrent_epochs", title="KIP-1289 case 14: a stale-epoch TxnShareAcknowledge arrives late",
          **PROPOSED)
def concurrent_epochs(trace: Trace) -> None:
    """Transaction 1 (epoch E) commits, the TV2 commit bumps the epoch to E+1 and transaction 2
    stages in-0@1. A TxnShareAcknowledge built at epoch E (an old in-flight attempt) for in-0@1 and
    in-0@2 arrives now: PRODUCER_FENCED, nothing staged, transaction 2's staging untouched; a late
    copy of transaction 1's marker does not resolve it either."""
    c = trace.cluster
    sc, pr, records = setup(trace, per_partition=3)
    tid = c.topics.get(INPUT).topic_id
    pid, e = pr.producer_id, pr.producer_epoch
    # the in-flight request, built now at epoch E, delivered late
    old = {"TransactionalId": TXN_ID, "GroupId": GROUP, "ProducerId": pid, "ProducerEpoch": e,
           "MemberId": sc.member_id, "MemberEpoch": sc.member_epoch,
           "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
               {"FirstOffset": 1, "LastOffset": 2, "AcknowledgeTypes": [ACCEPT]}]}]}]}
    produce(pr, records[:1])
    stage(pr, acks_of(records[:1]), sc.share_group_metadata())
    pr.commit_transaction()
    trace.expect("the TV2 commit bumped the epoch (E -> E+1)", pr.producer_epoch == e + 1,
                 f"{e} -> {pr.producer_epoch}")
    pr.begin_transaction()
    produce(pr, records[1:2])
    err, _ = stage(pr, acks_of(records[1:2]), sc.share_group_metadata())
    staged = pending(c)
    trace.expect("transaction 2 staged in-0@1 at epoch E+1", err == "NONE" and staged == [
        (GROUP, INPUT, 0, 1, pid, e + 1)], repr(staged))
    mark = len(c.events)
    r = c.call(API, 0, old, client="worker-producer")
    trace.expect("the stale-epoch TxnShareAcknowledge is answered PRODUCER_FENCED",
                 name_of(r["ErrorCode"]) == "PRODUCER_FENCED", name_of(r["ErrorCode"]))
    trace.expect("never staged: in-0@2 still ACQUIRED, in-0@1 still TX_PENDING at epoch E+1, no record moved",
                 pending(c) == staged and states(trace).get(2) == "ACQUIRED" and not tx_pending_moves(trace, mark),
                 repr(states(trace)))
    part = share_state_partition(trace)[1]
    c.call("WriteTxnMarkers", 1, {"Markers": [{
        "ProducerId": pid, "ProducerEpoch": e + 1, "TransactionResult": True, "CoordinatorEpoch": 0,
        "Topics": [{"Name": SHARE_GROUP_STATE, "PartitionIndexes": [part]}]}]}, client="late-marker")
    trace.expect("a late copy of transaction 1's COMMIT marker (epoch E+1) does not resolve transaction 2's staging",
                 pending(c) == staged, repr(pending(c)))
    trace.expect("the live producer is unaffected (IN_TRANSACTION)", pr.state == "IN_TRANSACTION", pr.state)
    pr.commit_transaction()
    trace.expect("transaction 2 commits in-0@1; in-0@2 is still ACQUIRED", states(trace) == {2: "ACQUIRED"},
                 repr(states(trace)))
    pr.begin_transaction()
    # transaction 3 processes in-0@2; the reader sees the output of all three transactions
    clean_commit(trace, sc, pr, records[2:], reader="reader", expected=records)
    trace.result.update(producer_id=pid, stale_epoch=e, current_epoch=pr.producer_epoch,
                        stale_error=name_of(r["ErrorCode"]))
    trace.find(f"An in-flight TxnShareAcknowledge built at epoch {e} arrives after the commit bumped the epoch to "
               f"{e + 1}: it is answered {name_of(r['ErrorCode'])} and stages nothing, and neither it nor a late "
               "copy of transaction 1's marker touches transaction 2's staging of in-0@1.",
               "Only the broker's answer to the stale request shows it: the producer stays IN_TRANSACTION and the "
               "reader sees each output once.",
               "KIP-1289, corner case 14: staging is fenced by the producer epoch, which transaction version 2 "
               "bumps at every commit, and a marker resolves only staging at its own epoch.")
    check_eos(trace)
