"""KIP-1289 (PROPOSED, voting: docs/facts.md): the happy paths of share-group acknowledgements inside a
producer transaction, and the corner cases that need a fault (a crash, a lost or repeated marker,
a timer). Nothing here is released Kafka.

    kip1289.happy_commit                     read-process-write, committed: ACCEPT -> ACKNOWLEDGED,
                                             REJECT -> ARCHIVED (its record goes to a DLQ topic)
    kip1289.happy_abort                      the same transaction aborted: back to ACQUIRED, redelivered
                                             after the lock expires, processed again, committed
    kip1289.case01_broker_crash_tx_pending   the share-partition leader crashes while TX_PENDING: the
                                             state reloads as AVAILABLE, redelivery, duplicate output
                                             (the KIP's at-least-once window)
    kip1289.case05_duplicate_marker          the coordinator sends the same marker twice: no-op by state,
                                             and later by epoch
    kip1289.case06_lock_expiry_tx_pending    the lock expires while TX_PENDING: ACQUIRED, re-acquirable,
                                             the late marker is filtered
    kip1289.case07_txn_timeout               the worker dies after staging: the coordinator aborts on
                                             timeout, ABORT reverts TX_PENDING, the lock frees the records
    kip1289.case12_leader_change_share_state __share_group_state-N moves between staging and marker: the
                                             marker resolves nothing, the lock reverts, duplicate output
    kip1289.case13_markers_never_arrive      the abort's marker does not reach the share-state leader: the
                                             lock reverts, the late marker is a no-op

Marker routing: every scenario runs KIP-1289 as written (share_marker_routing "page": the marker's
hook resolves only the share partitions led by the broker that receives it). One-broker scenarios are
co-located by construction; the two-broker ones (cases 1 and 12) place __share_group_state-N with
in-0 on purpose, as the KIP's worked example does (kip1289_marker.py has the other layouts).

Every scenario is a read-process-write loop over the client models (ShareConsumer, Producer);
each output record carries the header kipviz.eos.source_header(...) naming its input record, and
the run ends with kipviz.eos.check_share_eos over the events (result["eos"]): at-least-once allowed
only for cases 1 and 12, the two windows the KIP documents. The helpers shared with the error cases
come from kip1289_errors."""
from __future__ import annotations

from ..broker.share_txn import pending
from ..clients import Consumer, Producer
from ..clients.producer_errors import ProducerError, ProducerFencedError
from ..clients.share_consumer import ShareConsumer
from ..eos import AT_LEAST_ONCE, VIOLATION, check_share_eos, source_header
from ..schema import events as ev
from ..schema.error_codes import name_of
from . import Finding, Trace, scenario
from .kip1289_errors import (
    ACCEPT,
    GROUP,
    INPUT,
    OUTPUT,
    PROPOSED,
    REJECT,
    TXN_ID,
    place_share_state,
    setup,
    share_state_partition,
    stage,
    tx_pending_moves,
)

DLQ = "dlq"
MACHINE = "share-record"


# ---- helpers ---------------------------------------------------------------------------------------------
def process(pr: Producer, records, reject=(), *, output: str = OUTPUT) -> dict:
    """The 'process' step of the loop: one output record per input record (a rejected one goes to
    the DLQ topic instead), each naming its source; returns the acknowledgements to stage."""
    acks: dict = {}
    for r in records:
        bad = r.offset in reject
        pr.send(DLQ if bad else output, r.key, (r.value or b"").upper(), partition=0,
                headers=[source_header(r.topic, r.partition, r.offset)])
        acks.setdefault((r.topic, r.partition), {})[r.offset] = REJECT if bad else ACCEPT
    return acks


def loop(sc: ShareConsumer, pr: Producer, records, reject=(), *, output: str = OUTPUT, begin: bool = True) -> str:
    """begin (unless already begun), process, stage with a fresh snapshot; the caller ends it."""
    if begin:
        pr.begin_transaction()
    err, _ = stage(pr, process(pr, records, reject, output=output), sc.share_group_metadata())
    return err


def read(trace: Trace, topic: str, client: str) -> list[str]:
    """The sources ("in-0@3") a read_committed reader sees in `topic`."""
    reader = Consumer(trace.cluster, None, client_id=client, isolation="read_committed")
    reader.assign([(topic, 0)])
    out = [dict(r.headers).get("kipviz-source").decode() for r in reader.poll()]
    reader.close()
    return out


def srcs(records) -> list[str]:
    return sorted(f"{r.topic}-{r.partition}@{r.offset}" for r in records)


def moves(trace: Trace, since: int = 0, cause: str | None = None, group: str = GROUP) -> list:
    return [e for e in trace.events[since:] if e.kind == "StateChanged" and e.machine == MACHINE
            and e.key.startswith(group + "/") and (cause is None or e.cause == cause)]


def offset_of(e) -> int:
    return int(e.key.rpartition("@")[2])


def deliveries(trace: Trace, group: str = GROUP) -> dict[int, int]:
    """How many times each input offset was handed out (acquire moves)."""
    out: dict[int, int] = {}
    for e in moves(trace, cause="acquire", group=group):
        out[offset_of(e)] = out.get(offset_of(e), 0) + 1
    return out


def resolved_nothing(trace: Trace, since: int) -> list:
    """The KIP-1289 markers since `since` that resolved no record where they arrived (MarkerResolved
    with 0 records, MarkerUnreached)."""
    return [e for e in trace.events[since:] if isinstance(e, ev.MarkerUnreached)
            or (isinstance(e, ev.MarkerResolved) and not e.records and not e.missing)]


def timed_out(trace: Trace, since: int) -> list:
    """The transactions the coordinator aborted on its timeout since `since`."""
    return [e for e in trace.events[since:] if isinstance(e, ev.TransactionTimedOut)]


def _case12(e) -> bool:
    """Whether a marker that resolved nothing says it is corner case 12 (__share_group_state-N's
    leader changed since the staging)."""
    if isinstance(e, ev.MarkerUnreached):
        return any(u.reason == "leader-change" for u in e.unreached)
    return "corner case 12" in e.reason


def _why(e) -> str:
    """Why a marker resolved nothing (MarkerResolved.reason; a MarkerUnreached: its records' reason)."""
    return e.reason if isinstance(e, ev.MarkerResolved) else "; ".join(u.reason for u in e.unreached)


def wait(trace: Trace, ms: int, *alive: ShareConsumer, step: int = 15_000) -> None:
    """Let virtual time pass; the live consumers keep heartbeating (every <= 15 s, inside the 45 s
    share session timeout), as the Java consumer's background thread would."""
    c = trace.cluster
    end = c.now + ms
    while c.now < end:
        c.advance(min(step, end - c.now))
        for sc in alive:
            sc.heartbeat()


def sp_states(trace: Trace, group: str = GROUP) -> dict[int, str]:
    c = trace.cluster
    sp = c.shares.partitions.get((group, c.topics.get(INPUT).topic_id, 0))
    return {} if sp is None else {o: r.state for o, r in sorted(sp.records.items())}


def check_eos(trace: Trace, allowed=False, *, group: str = GROUP, output: str = OUTPUT, key: str = "eos"):
    """kipviz.eos over the run; the Report goes to result[key]."""
    report = check_share_eos(trace.events, group=group, input_topic=INPUT, output_topic=output,
                             allowed_at_least_once=allowed)
    trace.result[key] = report
    what = "at-least-once allowed for the KIP's documented cases 1 and 12" if allowed is True else \
        "no at-least-once allowance"
    trace.expect(f"EOS checker (kipviz.eos, {what}) reports OK", report.ok, report.summary(limit=6))
    return report


def check_window(trace: Trace, case: int, twice: list[str]) -> None:
    """Cases 1/12: the duplicates are exactly the classified window, and the same run checked
    strictly is a violation (the checker is not vacuous)."""
    report = trace.result["eos"]
    dups = [v for v in report.violations if v["kind"] == "duplicate-output"]
    trace.expect(f"the checker classifies each duplicate as the KIP's at-least-once window (case {case})",
                 bool(dups) and all(v["classification"] == AT_LEAST_ONCE and v["case"] == case for v in dups)
                 and sorted("{}-{}@{}".format(*v["input"]) for v in dups) == sorted(twice)
                 and len(dups) == len(report.violations), repr([(v["input"], v["case"]) for v in dups]))
    strict = check_share_eos(trace.events, group=GROUP, input_topic=INPUT, output_topic=OUTPUT,
                             allowed_at_least_once=False)
    trace.result["eos_strict"] = strict
    trace.expect("checked strictly (allowed_at_least_once=False) the same run is a VIOLATION: not exactly once",
                 not strict.ok and {v["classification"] for v in strict.violations} == {VIOLATION},
                 strict.summary(limit=3))


def no_model_bug(trace: Trace) -> None:
    trace.expect("no model bug (cluster.internal_errors empty)", trace.cluster.internal_errors == [],
                 repr(trace.cluster.internal_errors))


def stage_all(trace: Trace, sc: ShareConsumer, pr: Producer, records, reject=()) -> str:
    """Process and stage in the transaction setup() began; every record TX_PENDING (not committed yet)."""
    err = loop(sc, pr, records, reject, begin=False)
    trace.expect("TxnShareAcknowledge staged every record: all TX_PENDING",
                 err == "NONE" and set(sp_states(trace).values()) == {"TX_PENDING"}, f"{err} {sp_states(trace)}")
    return err


# ---- happy paths -----------------------------------------------------------------------------------------
@scenario("kip1289.happy_commit", title="KIP-1289: share-group read-process-write, committed", **PROPOSED)
def happy_commit(trace: Trace) -> None:
    """The KIP's loop: ShareFetch acquires in-0@0..3; the worker writes one output per record in a
    transaction (in-0@3 is a poison record: it goes to a DLQ topic and is REJECTed, the KIP's
    "atomic DLQ write"), stages the acknowledgements with send_share_acknowledgements_to_transaction
    (TxnShareAcknowledge: ACQUIRED -> TX_PENDING, __share_group_state-N added to the transaction)
    and commits: the COMMIT marker on __share_group_state-N moves ACCEPT -> ACKNOWLEDGED and REJECT ->
    ARCHIVED, the outcome is persisted as a ShareUpdate, and the output becomes visible to
    read_committed -- atomically. Exactly once."""
    c = trace.cluster
    c.create_topic(DLQ, 1)
    sc, pr, records = setup(trace)
    stage_all(trace, sc, pr, records, reject=(3,))
    state_tp = share_state_partition(trace)
    parts = c.txns.describe(TXN_ID)["partitions"]
    trace.expect(f"the transaction's partitions include {state_tp[0]}-{state_tp[1]} (registered by the broker)",
                 state_tp in parts and (OUTPUT, 0) in parts and (DLQ, 0) in parts, repr(parts))
    trace.expect("before the commit read_committed sees none of the output", read(trace, OUTPUT, "reader-0") == [],
                 "")
    mark = len(c.events)
    pr.commit_transaction()
    finals = {offset_of(e): (e.to_state, e.cause) for e in moves(trace, mark)}
    want = {0: ("ACKNOWLEDGED", "txn-commit-accept"), 1: ("ACKNOWLEDGED", "txn-commit-accept"),
            2: ("ACKNOWLEDGED", "txn-commit-accept"), 3: ("ARCHIVED", "txn-commit-reject")}
    trace.expect("COMMIT: ACCEPT -> ACKNOWLEDGED (txn-commit-accept), REJECT -> ARCHIVED (txn-commit-reject)",
                 finals == want, repr(finals))
    trace.expect("every move into or out of TX_PENDING is labelled proposed",
                 all(e.status == "proposed" for e in tx_pending_moves(trace)), "")
    upd = [e for e in c.events[mark:] if e.kind == "RecordAppended" and e.topic == state_tp[0]
           and e.record.get("type") == "ShareUpdate"]
    batches = upd[-1].record["value"]["StateBatches"] if upd else None
    trace.expect("the outcome is persisted in __share_group_state (ShareUpdate: ACKNOWLEDGED 2, ARCHIVED 4)",
                 batches == [{"FirstOffset": 0, "LastOffset": 2, "DeliveryState": 2, "DeliveryCount": 1},
                             {"FirstOffset": 3, "LastOffset": 3, "DeliveryState": 4, "DeliveryCount": 1}],
                 repr(batches))
    trace.expect("the share-partition start offset moved past them (nothing left in flight)", sp_states(trace) == {},
                 repr(sp_states(trace)))
    out, dlq = read(trace, OUTPUT, "reader"), read(trace, DLQ, "dlq-reader")
    trace.expect("read_committed sees the accepted records' output once, and the rejected one in the DLQ",
                 sorted(out) == srcs(records[:3]) and dlq == srcs(records[3:]), f"{out} / {dlq}")
    no_model_bug(trace)
    trace.result.update(states_after=finals, output=out, dlq=dlq, share_state_partition=state_tp)
    check_eos(trace)
    acked = sorted(o for o, (st, _) in finals.items() if st == "ACKNOWLEDGED")
    archived = sorted(o for o, (st, _) in finals.items() if st == "ARCHIVED")
    leaders = {c.topics.partition(INPUT, 0).leader, c.topics.partition(*state_tp).leader}
    trace.find(f"Exactly once holds here: the COMMIT marker on {state_tp[0]}-{state_tp[1]} moves in-0@"
               f"{', '.join(map(str, acked))} to ACKNOWLEDGED and in-0@{', '.join(map(str, archived))} to ARCHIVED in "
               f"the same transaction that makes {len(out)} outputs and {len(dlq)} DLQ record(s) visible; broker(s) "
               f"{', '.join(map(str, sorted(leaders)))} lead in-0 and {state_tp[0]}-{state_tp[1]}.",
               "A read_committed reader of out and dlq: each input's output once; the application sees "
               "commitTransaction() succeed and the share partition empties.",
               "KIP-1289: acknowledgements staged in the transaction are resolved by its marker; that holds only "
               "where the share partition and __share_group_state-N have one leader (see "
               "kip1289.marker_not_colocated).")


@scenario("kip1289.happy_abort", title="KIP-1289: share-group read-process-write, aborted then retried",
          findings=(
              Finding("An abort does not redeliver at once: the staged records go back to ACQUIRED for the same "
                      "member, the next poll returns nothing, and the loop gets them again only when the lock "
                      "expires (30 s) -- with deliveryCount 2, so every abort spends one of the five delivery "
                      "attempts (group.share.delivery.count.limit).",
                      "The application: a 30 s stall after each abort, and a record aborted five times is "
                      "archived unprocessed.",
                      "KIP-1289's pseudo-code says the records \"will be re-delivered on next poll()\"; its own "
                      "state machine (ABORT: TX_PENDING -> ACQUIRED) keeps them with the member."),), **PROPOSED)
def happy_abort(trace: Trace) -> None:
    """The same transaction, aborted (the KIP's catch-KafkaException branch): the ABORT marker on
    __share_group_state-N moves every TX_PENDING record back to ACQUIRED for the same member, its
    lock still running; the output is invisible. The loop gets them back when the lock expires
    (30 s, deliveryCount 2; see its findings), processes them again and commits: exactly once."""
    c = trace.cluster
    c.create_topic(DLQ, 1)
    sc, pr, records = setup(trace)
    stage_all(trace, sc, pr, records, reject=(3,))
    mark = len(c.events)
    pr.abort_transaction()
    back = moves(trace, mark)
    sp = c.shares.partitions[(GROUP, c.topics.get(INPUT).topic_id, 0)]
    trace.expect("ABORT: every TX_PENDING record back to ACQUIRED (txn-abort), still owned by the member",
                 [(e.from_state, e.to_state, e.cause) for e in back] == [("TX_PENDING", "ACQUIRED", "txn-abort")] * 4
                 and all(r.member == sc.member_id for r in sp.records.values()), repr(back))
    trace.expect("read_committed sees none of the aborted output (out and dlq)",
                 read(trace, OUTPUT, "reader-1") == [] and read(trace, DLQ, "dlq-reader-1") == [], "")
    again = sc.poll()
    trace.expect("the next poll() returns nothing: the records are still ACQUIRED by the member (the KIP's "
                 "pseudo-code comment says they are redelivered)", again == [], repr(again))
    t_abort = c.now
    wait(trace, c.config.group_share_record_lock_duration_ms, sc)
    expired = moves(trace, mark, "lock-expired")
    trace.expect("the acquisition lock expires: ACQUIRED -> AVAILABLE (lock-expired)",
                 sorted(offset_of(e) for e in expired) == [0, 1, 2, 3]
                 and all(e.from_state == "ACQUIRED" and e.to_state == "AVAILABLE" for e in expired), repr(expired))
    redelivered = sc.poll()
    trace.expect("redelivered on the next poll, deliveryCount 2",
                 [(r.offset, r.delivery_count) for r in redelivered] == [(o, 2) for o in range(4)],
                 repr([(r.offset, r.delivery_count) for r in redelivered]))
    err = loop(sc, pr, redelivered, reject=(3,))
    pr.commit_transaction()
    trace.expect("processed again, staged and committed: nothing left in flight",
                 err == "NONE" and sp_states(trace) == {}, f"{err} {sp_states(trace)}")
    out, dlq = read(trace, OUTPUT, "reader"), read(trace, DLQ, "dlq-reader")
    trace.expect("read_committed sees each output once (the aborted attempt never)",
                 sorted(out) == srcs(records[:3]) and dlq == srcs(records[3:]), f"{out} / {dlq}")
    no_model_bug(trace)
    trace.result.update(aborted=[offset_of(e) for e in back], redelivered=[r.offset for r in redelivered],
                        redelivered_after_ms=c.now - t_abort, output=out, dlq=dlq)
    check_eos(trace)


# ---- corner case 1 ---------------------------------------------------------------------------------------
@scenario("kip1289.case01_broker_crash_tx_pending",
          title="KIP-1289 case 1: the share-partition leader crashes while TX_PENDING", brokers=2, findings=(
              Finding("The output commits but the acknowledgements are lost: TX_PENDING lived only in the crashed "
                      "broker's memory, so the records reload as AVAILABLE, are redelivered and processed again.",
                      "A read_committed reader of the output: each record's output twice.",
                      "KIP-1289, corner case 1: documented as an at-least-once window (__share_group_state is not "
                      "written at staging), with no data loss."),), **PROPOSED)
def broker_crash(trace: Trace) -> None:
    """Two brokers: broker 0 leads in-0 (the share partition), out-0 and -- placed on purpose, as in
    the KIP's worked example -- __share_group_state-N; broker 1 is the transaction coordinator.
    (KIP-1289 as written resolves a staging only when the two are co-located: see
    kip1289.marker_not_colocated.) The worker stages in-0@0..3 (TX_PENDING, in memory only: the KIP
    keeps __share_group_state unchanged) and broker 0 crashes; the worker commits (EndTxn to broker 1).
    The COMMIT markers wait for broker 0; on restart broker 0 reloads the share partition from
    __share_group_state, where TX_PENDING was persisted as AVAILABLE ("state-reloaded"), so the
    COMMIT resolves nothing while the output commits. The records are redelivered, processed again
    and committed. The KIP's guarantee: no data loss, at-least-once on this window -- the output of
    each record is visible twice, which the checker classifies as the case-1 window."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    place_share_state(trace, colocated=True)
    stage_all(trace, sc, pr, records)
    leader = c.topics.partition(INPUT, 0).leader
    coordinator = c.txns.coordinator_broker(TXN_ID)
    trace.expect("the share-partition leader is not the transaction coordinator",
                 leader != coordinator, f"leader {leader}, coordinator {coordinator}")
    state_tp = share_state_partition(trace)
    mark = len(c.events)
    c.crash_broker(leader)
    nothing = sc.poll()
    trace.expect("while broker 0 is down the worker's ShareFetch gets no answer", nothing == [], repr(nothing))
    pr.commit_transaction()
    trace.expect("the commit still succeeds (EndTxn at the coordinator; the markers wait for broker 0)",
                 pr.state == "READY", pr.state)
    trace.expect("nothing resolved TX_PENDING while the leader was down", not moves(trace, mark), "")
    c.advance(2_000)
    c.restart_broker(leader)
    c.advance(c.txns.markers.retry_backoff_ms)
    reloaded = moves(trace, mark, "state-reloaded")
    trace.expect("restart: the share partition reloads from __share_group_state, TX_PENDING -> AVAILABLE "
                 "(cause state-reloaded)",
                 sorted(offset_of(e) for e in reloaded) == [0, 1, 2, 3]
                 and all(e.from_state == "TX_PENDING" and e.to_state == "AVAILABLE" for e in reloaded),
                 repr(reloaded))
    trace.expect("the COMMIT marker of that transaction resolved no record (no txn-commit-accept)",
                 not moves(trace, mark, "txn-commit-accept"), "")
    first_out = read(trace, OUTPUT, "reader-1")
    trace.expect("the transaction's output is committed and visible", sorted(first_out) == srcs(records),
                 repr(first_out))
    redelivered = sc.poll()
    trace.expect("the records are redelivered to the worker (no data loss)",
                 sorted(r.offset for r in redelivered) == [0, 1, 2, 3], repr(redelivered))
    err = loop(sc, pr, redelivered)
    pr.commit_transaction()
    trace.expect("processed again and committed: every record ACKNOWLEDGED",
                 err == "NONE" and sp_states(trace) == {}, f"{err} {sp_states(trace)}")
    out = read(trace, OUTPUT, "reader")
    trace.expect("KIP guarantee, at-least-once: each record's output is visible twice (duplicate window)",
                 sorted(out) == sorted(srcs(records) * 2), repr(out))
    no_model_bug(trace)
    trace.result.update(crashed=leader, coordinator=coordinator, share_state_partition=state_tp,
                        share_state_leader=c.topics.partition(*state_tp).leader,
                        reloaded=[offset_of(e) for e in reloaded], redelivered=[r.offset for r in redelivered],
                        deliveries=deliveries(trace), output=out)
    check_eos(trace, True)
    check_window(trace, 1, srcs(records))


# ---- corner case 5 ---------------------------------------------------------------------------------------
def _marker_sent(trace: Trace, since: int, state_tp) -> ev.MarkerSent:
    """The WriteTxnMarkers the coordinator wrote to __share_group_state-N."""
    return next(e for e in trace.events[since:] if isinstance(e, ev.MarkerSent)
                and (e.topic, e.partition) == tuple(state_tp))


def _resend(trace: Trace, m: ev.MarkerSent, state_tp) -> int:
    """The coordinator's retry of that marker (WriteTxnMarkers v1 to the share-state leader)."""
    c = trace.cluster
    r = c.call("WriteTxnMarkers", 1, {"Markers": [{
        "ProducerId": m.producer_id, "ProducerEpoch": m.producer_epoch,
        "TransactionResult": m.marker == "COMMIT", "CoordinatorEpoch": 0,
        "Topics": [{"Name": state_tp[0], "PartitionIndexes": [state_tp[1]]}]}]},
        broker=c.topics.partition(*state_tp).leader, client="txn-coordinator")
    return r["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"]


@scenario("kip1289.case05_duplicate_marker", title="KIP-1289 case 5: the same WriteTxnMarkers arrives twice",
          **PROPOSED)
def duplicate_marker(trace: Trace) -> None:
    """Transaction 1 stages in-0@0,1 and commits; the coordinator's WriteTxnMarkers to
    __share_group_state-N is sent again (its first answer was lost): the second one finds nothing
    TX_PENDING and changes nothing (idempotent by state). Transaction 2 then stages in-0@2,3 at the
    bumped epoch; the same duplicate arrives once more, late: it carries transaction 1's marker
    epoch, not newer than transaction 2's staging epoch, so it is filtered (no-op by epoch) and
    transaction 2 commits by its own marker."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    state_tp = share_state_partition(trace)
    err = loop(sc, pr, records[:2], begin=False)
    mark = len(c.events)
    pr.commit_transaction()
    m = _marker_sent(trace, mark, state_tp)
    trace.expect("transaction 1 committed: in-0@0,1 ACKNOWLEDGED by its marker",
                 err == "NONE" and sorted(offset_of(e) for e in moves(trace, mark, "txn-commit-accept")) == [0, 1],
                 repr(m))
    before = sp_states(trace)
    mark = len(c.events)
    code = first = _resend(trace, m, state_tp)
    trace.expect("the duplicate WriteTxnMarkers is answered NONE", code == 0, name_of(code))
    trace.expect("the duplicate changes nothing: no record moved, the states are the same",
                 not moves(trace, mark) and sp_states(trace) == before, f"{before} -> {sp_states(trace)}")
    said = resolved_nothing(trace, mark)
    trace.expect("the broker says why: no record is TX_PENDING for that producer id (no-op by state)",
                 bool(said) and "no-op by state" in _why(said[-1]), said[-1].text if said else "")
    err2 = loop(sc, pr, records[2:])
    staged = pending(c)
    trace.expect("transaction 2 staged in-0@2,3 at the bumped epoch", err2 == "NONE" and [s[3] for s in staged] == [2, 3]
                 and all(s[5] == m.producer_epoch for s in staged), repr(staged))
    mark = len(c.events)
    code = _resend(trace, m, state_tp)
    said = resolved_nothing(trace, mark)
    trace.expect("the late duplicate does not resolve transaction 2's staging (no-op by epoch)",
                 code == 0 and not moves(trace, mark) and pending(c) == staged
                 and bool(said) and "no-op by epoch" in _why(said[-1]), said[-1].text if said else name_of(code))
    mark = len(c.events)
    pr.commit_transaction()
    trace.expect("transaction 2 commits by its own marker: in-0@2,3 ACKNOWLEDGED",
                 sorted(offset_of(e) for e in moves(trace, mark, "txn-commit-accept")) == [2, 3] and sp_states(trace) == {},
                 repr(sp_states(trace)))
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees each output once", sorted(out) == srcs(records), repr(out))
    no_model_bug(trace)
    trace.result.update(marker=m, duplicate_error=name_of(code), states_after=sp_states(trace), output=out)
    check_eos(trace)
    trace.find(f"A duplicate WriteTxnMarkers for transaction 1 is answered {name_of(first)} and resolves nothing "
               f"(no-op by state); a late copy after transaction 2 staged at the bumped epoch is answered "
               f"{name_of(code)} and filtered (no-op by epoch), so transaction 2 commits by its own marker.",
               "Nobody downstream: no record state changes and read_committed sees each output once; only the "
               "broker's log line says why the duplicate did nothing.",
               "KIP-1289, corner case 5: a marker applied twice changes nothing, because resolution filters by "
               "record state and by producer epoch.")


# ---- corner case 6 ---------------------------------------------------------------------------------------
# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("kip1289.case06_lock_expiry_tx_pending",
          title="KIP-1289 case 6: the acquisition lock expires while TX_PENDING", findings=(
              Finding("If the stalled producer wakes after the lock expired but before its transaction timed out "
                      "and COMMITs, its output commits while its acknowledgements are filtered: another member "
                      "processes the same records again.",
                      "A read_committed reader of the output: duplicates (the checker reports a violation of the "
                      "case-6 pattern).",
                      "Silent: KIP-1289 only lists cases 1 and 12 as at-least-once windows and says the late marker "
                      "is filtered by epoch."),
              Finding("With the defaults the lock (30 s) expires long before the transaction times out (60 s), so "
                      "a stalled worker loses its records to another member.",
                      "An operator: TxnPendingLockExpiredCount grows.",
                      "KIP-1289, corner case 6: TX_PENDING reverts to ACQUIRED (re-acquirable) on lock expiry."),), **PROPOSED)
def lock_expiry(trace: Trace) -> None:
    """Worker A stages in-0@0..3 and stalls (its consumer keeps heartbeating). At 30 s
    (group.share.record.lock.duration.ms) the lock timer finds TX_PENDING: the KIP reverts it to
    ACQUIRED ("re-acquirable"), then the expired lock makes it AVAILABLE. Worker B (another member
    and transactional id) gets the records (deliveryCount 2), processes and commits them. A's
    transaction times out (transaction.timeout.ms 60 s) and is aborted; its late ABORT marker is
    filtered -- by state here, nothing of A's is TX_PENDING any more (the KIP says "epoch mismatch",
    which needs A's producer to have staged the records again) -- and A, waking up, is fenced.
    Exactly once.
    A second group (sg-late, output out-late) plays the ending the KIP is silent on: the stalled
    producer COMMITs after the lock expired (see its findings; result["eos_late_commit"])."""
    c = trace.cluster
    sc_a, pr_a, records = setup(trace)
    stage_all(trace, sc_a, pr_a, records)
    a_pid, a_epoch = pr_a.producer_id, pr_a.producer_epoch
    mark = len(c.events)
    wait(trace, c.config.group_share_record_lock_duration_ms, sc_a)
    expired = moves(trace, mark)
    pairs = [(e.from_state, e.to_state, e.cause) for e in expired]
    trace.expect("lock expiry while TX_PENDING: TX_PENDING -> ACQUIRED (lock-expired), then ACQUIRED -> "
                 "AVAILABLE (lock-expired)",
                 pairs.count(("TX_PENDING", "ACQUIRED", "lock-expired")) == 4
                 and pairs.count(("ACQUIRED", "AVAILABLE", "lock-expired")) == 4
                 and all(s == "AVAILABLE" for s in sp_states(trace).values()), repr(pairs))
    sc_b = ShareConsumer(c, GROUP, client_id="worker-b")
    sc_b.subscribe([INPUT])
    got = sc_b.poll()
    trace.expect("re-acquirable: worker B gets every record, deliveryCount 2",
                 [(r.offset, r.delivery_count) for r in got] == [(o, 2) for o in range(4)],
                 repr([(r.offset, r.delivery_count) for r in got]))
    pr_b = Producer(c, "tx-worker-b", client_id="worker-b-producer")
    pr_b.init_transactions()
    err = loop(sc_b, pr_b, got)
    pr_b.commit_transaction()
    trace.expect("B processes and commits them: every record ACKNOWLEDGED",
                 err == "NONE" and sp_states(trace) == {}, f"{err} {sp_states(trace)}")
    mark = len(c.events)
    every = c.config.transaction_abort_timed_out_interval_ms      # the coordinator's timeout scan
    due = (c.txns.transactions[TXN_ID].start_ms + pr_a.transaction_timeout_ms) // every * every + every
    wait(trace, due - c.now, sc_a, sc_b)
    aborted = timed_out(trace, mark)
    said = resolved_nothing(trace, mark)
    trace.expect("A's transaction times out (60 s); its late ABORT marker on __share_group_state-N is filtered",
                 bool(aborted) and bool(said) and not moves(trace, mark) and c.txns.state_of(TXN_ID) == "CompleteAbort",
                 said[-1].text if said else repr(c.txns.state_of(TXN_ID)))
    try:
        pr_a.commit_transaction()
        woke = "committed"
    except ProducerError as e:
        woke = e.error
    trace.expect("A wakes up and tries to commit: fenced (PRODUCER_FENCED), its output never visible",
                 woke == "PRODUCER_FENCED" and pr_a.state == "FATAL_ERROR", f"{woke} {pr_a.state}")
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees B's output once, nothing of A's", sorted(out) == srcs(records), repr(out))
    sc_a.close()
    sc_b.close()
    trace.result.update(stalled=(a_pid, a_epoch), expired=sorted({offset_of(e) for e in expired}),
                        redelivered=[r.offset for r in got], fenced=woke, output=out)
    check_eos(trace)
    _late_commit(trace, records)
    no_model_bug(trace)


def _late_commit(trace: Trace, records) -> None:
    """Case 6, the ending the KIP does not discuss: the stalled transaction commits after the lock
    expired. Group sg-late on the same input, output out-late."""
    c = trace.cluster
    group, out_topic = "sg-late", "out-late"
    c.create_topic(out_topic, 1)
    sc = ShareConsumer(c, group, client_id="late-worker")
    sc.subscribe([INPUT])
    got = sc.poll()
    pr = Producer(c, "tx-late", client_id="late-producer")
    pr.init_transactions()
    err = loop(sc, pr, got, output=out_topic)
    mark = len(c.events)
    wait(trace, c.config.group_share_record_lock_duration_ms + 5_000, sc)
    pr.commit_transaction()                       # woke up before transaction.timeout.ms
    said = resolved_nothing(trace, mark)
    trace.expect("[sg-late] the stalled producer commits after the lock expired: the marker is filtered, the "
                 "records stay AVAILABLE, the output commits",
                 err == "NONE" and bool(said) and set(sp_states(trace, group).values()) == {"AVAILABLE"}
                 and sorted(read(trace, out_topic, "late-reader-1")) == srcs(records), repr(sp_states(trace, group)))
    again = sc.poll()
    loop(sc, pr, again, output=out_topic)
    pr.commit_transaction()
    seen = read(trace, out_topic, "late-reader")
    trace.expect("[sg-late] redelivered and processed again: each output visible twice",
                 sorted(seen) == sorted(srcs(records) * 2) and sp_states(trace, group) == {}, repr(seen))
    sc.close()
    late = check_share_eos(trace.events, group=group, input_topic=INPUT, output_topic=out_topic,
                           allowed_at_least_once=True)
    trace.result["eos_late_commit"] = late
    dups = [v for v in late.violations if v["kind"] == "duplicate-output"]
    trace.expect("[sg-late] the checker reports duplicates matching the case-6 pattern as VIOLATIONS even with "
                 "the KIP's windows (1, 12) allowed: the KIP states no guarantee for a late COMMIT",
                 not late.ok and len(dups) == len(records)
                 and all(v["case"] == 6 and v["classification"] == VIOLATION for v in dups), late.summary(limit=2))


# ---- corner case 7 ---------------------------------------------------------------------------------------
@scenario("kip1289.case07_txn_timeout", title="KIP-1289 case 7: the transaction times out while TX_PENDING",
          findings=(
              Finding("The KIP's order (timeout abort, then TX_PENDING -> ACQUIRED -> AVAILABLE) happens only when "
                      "transaction.timeout.ms is below the lock duration; the scenario's producer uses 10 s. With "
                      "the defaults (60 s > 30 s) the lock expires first and this becomes case 6.",
                      "An operator choosing transaction.timeout.ms.",
                      "Silent: KIP-1289 (corner case 7) describes the order without the setting it needs."),),
          **PROPOSED)
def txn_timeout(trace: Trace) -> None:
    """The worker (share consumer and producer) dies after staging in-0@0..3. The transaction
    coordinator's timeout scan aborts the abandoned transaction (fence, epoch + 1) and writes ABORT
    markers: TX_PENDING -> ACQUIRED (txn-abort, same member, lock running), then the lock expires:
    ACQUIRED -> AVAILABLE -- the KIP's "TX_PENDING -> ACQUIRED -> AVAILABLE on next lock cycle". A
    replacement worker (same transactional id) gets them again and commits: no data loss, exactly
    once. The scenario's producer uses transaction.timeout.ms 10 s (why: its findings)."""
    c = trace.cluster
    timeout = 10_000
    sc, pr, records = setup(trace, producer_kw={"transaction_timeout_ms": timeout})
    stage_all(trace, sc, pr, records)
    old_epoch = pr.producer_epoch
    mark = len(c.events)
    c.emit(ev.ClientCrashed, client="worker", how="its share consumer and producer stop; no heartbeats, no commit")
    lock_ms = c.config.group_share_record_lock_duration_ms
    acquired = moves(trace, cause="acquire")[-1].t
    c.advance(acquired + lock_ms - 1 - c.now)     # just before the lock expires; the abort scan runs every 10 s
    aborted = moves(trace, mark, "txn-abort")
    trace.expect(f"transaction.timeout.ms ({timeout} ms) passed: the coordinator aborted the transaction",
                 bool(timed_out(trace, mark)) and c.txns.state_of(TXN_ID) == "CompleteAbort",
                 repr(c.txns.state_of(TXN_ID)))
    trace.expect("its ABORT marker on __share_group_state-N: TX_PENDING -> ACQUIRED (txn-abort), same member",
                 sorted(offset_of(e) for e in aborted) == [0, 1, 2, 3] and set(sp_states(trace).values()) == {"ACQUIRED"},
                 repr(sp_states(trace)))
    c.advance(1)
    expired = moves(trace, mark, "lock-expired")
    trace.expect("next lock cycle: ACQUIRED -> AVAILABLE (lock-expired)",
                 sorted(offset_of(e) for e in expired) == [0, 1, 2, 3]
                 and all(e.from_state == "ACQUIRED" and e.to_state == "AVAILABLE" for e in expired), repr(expired))
    sc2 = ShareConsumer(c, GROUP, client_id="worker-2")
    sc2.subscribe([INPUT])
    pr2 = Producer(c, TXN_ID, client_id="worker-2-producer")
    pr2.init_transactions()
    got = sc2.poll()
    trace.expect("the replacement worker gets every record again (deliveryCount 2)",
                 [(r.offset, r.delivery_count) for r in got] == [(o, 2) for o in range(4)],
                 repr([(r.offset, r.delivery_count) for r in got]))
    err = loop(sc2, pr2, got)
    pr2.commit_transaction()
    trace.expect("processed and committed: every record ACKNOWLEDGED", err == "NONE" and sp_states(trace) == {},
                 f"{err} {sp_states(trace)}")
    try:
        pr.commit_transaction()
        woke = "committed"
    except ProducerError as e:
        woke = e.error
    trace.expect("the dead instance, were it to come back, is fenced", isinstance(pr.last_error, ProducerFencedError),
                 woke)
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees each output once (the timed-out attempt was aborted)",
                 sorted(out) == srcs(records), repr(out))
    no_model_bug(trace)
    trace.result.update(transaction_timeout_ms=timeout, old_epoch=old_epoch, new_epoch=pr2.producer_epoch,
                        aborted=[offset_of(e) for e in aborted], redelivered=[r.offset for r in got], output=out)
    check_eos(trace)


# ---- corner case 12 --------------------------------------------------------------------------------------
@scenario("kip1289.case12_leader_change_share_state",
          title="KIP-1289 case 12: __share_group_state-N changes leader between staging and commit",
          brokers=2, findings=(
              Finding("The COMMIT marker goes to the new leader of __share_group_state-N, which never saw the "
                      "staging: the output commits, the records stay TX_PENDING until the lock expires, then are "
                      "redelivered and processed again.",
                      "A read_committed reader of the output: each record's output twice.",
                      "KIP-1289, corner case 12: documented as an at-least-once window."),
              Finding("The KIP's flow puts the share partition and __share_group_state-N on one broker "
                      "(\"broker 5\"); with two brokers the staging and the marker can meet different brokers.",
                      "An operator running more than one broker (every production cluster).",
                      "KIP-1289's marker hook (\"Existing RPCs NOT changed\") assumes a single broker holds both."),),
          **PROPOSED)
def leader_change(trace: Trace) -> None:
    """The worker stages in-0@0..3, then leadership of __share_group_state-N moves to the other
    broker (leader epoch + 1). The coordinator resolves the leader at commit time and sends the
    COMMIT marker to the new leader, whose memory holds no TX_PENDING from the old epoch: the marker
    resolves nothing, while the output commits. The records stay TX_PENDING (not redelivered) until
    the acquisition lock expires (TX_PENDING -> ACQUIRED -> AVAILABLE); then they are redelivered,
    processed again and committed. The KIP's stated limitation: at-least-once on this window -- each
    output visible twice, classified by the checker as the case-12 window. As in the KIP's flow
    ("broker 5"), in-0 and __share_group_state-N start on one broker (placed on purpose); the share
    partition stays where it is. Before the retry leadership returns to broker 0 (a preferred-leader
    election): while __share_group_state-N stays on the other broker, KIP-1289 as written loses
    every later staging of in-0 the same way (kip1289.marker_not_colocated), which the KIP's case 12
    does not say."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    state_tp, _ = place_share_state(trace, colocated=True)
    stage_all(trace, sc, pr, records)
    log = c.topics.partition(*state_tp)
    old, old_epoch = log.leader, log.leader_epoch
    c.move_share_state_leader(state_tp[1], (old + 1) % c.config.brokers)
    new = (log.leader, log.leader_epoch)
    mark = len(c.events)
    pr.commit_transaction()
    said = resolved_nothing(trace, mark)
    trace.expect("the COMMIT marker goes to the new leader and resolves nothing (corner case 12)",
                 not moves(trace, mark) and bool(said) and _case12(said[-1]),
                 said[-1].text if said else "")
    trace.expect("the transaction's output is committed and visible", sorted(read(trace, OUTPUT, "reader-1")) ==
                 srcs(records), "")
    trace.expect("the records are still TX_PENDING and are not handed out", sc.poll() == [] and
                 set(sp_states(trace).values()) == {"TX_PENDING"}, repr(sp_states(trace)))
    wait(trace, c.config.group_share_record_lock_duration_ms, sc)
    pairs = [(e.from_state, e.to_state, e.cause) for e in moves(trace, mark)]
    trace.expect("the lock expires: TX_PENDING -> ACQUIRED -> AVAILABLE (lock-expired)",
                 pairs.count(("TX_PENDING", "ACQUIRED", "lock-expired")) == 4
                 and pairs.count(("ACQUIRED", "AVAILABLE", "lock-expired")) == 4, repr(pairs))
    redelivered = sc.poll()
    trace.expect("redelivered (deliveryCount 2)", [(r.offset, r.delivery_count) for r in redelivered] ==
                 [(o, 2) for o in range(4)], repr([(r.offset, r.delivery_count) for r in redelivered]))
    c.move_share_state_leader(state_tp[1], old)       # preferred-leader election: co-located again
    mark = len(c.events)
    err = loop(sc, pr, redelivered)
    pr.commit_transaction()
    trace.expect("leadership back on broker 0: processed again, staged under the new leader epoch and committed: "
                 "every record ACKNOWLEDGED",
                 err == "NONE" and len(moves(trace, mark, "txn-commit-accept")) == 4 and sp_states(trace) == {},
                 f"{err} {sp_states(trace)}")
    out = read(trace, OUTPUT, "reader")
    trace.expect("KIP limitation, at-least-once: each record's output is visible twice",
                 sorted(out) == sorted(srcs(records) * 2), repr(out))
    no_model_bug(trace)
    trace.result.update(share_state_partition=state_tp, old_leader=(old, old_epoch),
                        new_leader=new, redelivered=[r.offset for r in redelivered],
                        deliveries=deliveries(trace), output=out)
    check_eos(trace, True)
    check_window(trace, 12, srcs(records))


# ---- corner case 13 --------------------------------------------------------------------------------------
@scenario("kip1289.case13_markers_never_arrive",
          title="KIP-1289 case 13: the ABORT marker does not reach the broker holding TX_PENDING", findings=(
              Finding("A lost ABORT marker costs a lock cycle (30 s) and a delivery attempt, but converges: the "
                      "late marker is a no-op. A lost COMMIT marker is case 12 (duplicates).",
                      "The application: the records come back after 30 s.",
                      "KIP-1289, corner case 13: the lock timeout guarantees convergence."),), **PROPOSED)
def markers_never_arrive(trace: Trace) -> None:
    """The worker aborts its transaction, but the share-state leader is cut off from the
    transaction coordinator: the ABORT reaches out-0 (the output is invisible) but not
    __share_group_state-N, and the transaction stays PrepareAbort. The records stay TX_PENDING until
    the lock expires (30 s): TX_PENDING -> ACQUIRED -> AVAILABLE; the worker gets them again. When
    the network heals, the late ABORT marker finds nothing TX_PENDING (no-op by state) and the
    transaction completes; the worker processes the records again and commits. Convergence, exactly
    once. (A COMMIT that never arrives is case 12: its output would be visible and the records
    redelivered -- at-least-once.)"""
    c = trace.cluster
    sc, pr, records = setup(trace)
    stage_all(trace, sc, pr, records)
    state_tp = share_state_partition(trace)
    c.txns.markers.hold_for(*state_tp)
    mark = len(c.events)
    pr.abort_transaction()
    trace.expect("the transaction is stuck in PrepareAbort (the share-state marker cannot be delivered)",
                 c.txns.state_of(TXN_ID) == "PrepareAbort" and set(sp_states(trace).values()) == {"TX_PENDING"},
                 f"{c.txns.state_of(TXN_ID)} {sp_states(trace)}")
    trace.expect("the output is aborted (out-0 got its ABORT marker)", read(trace, OUTPUT, "reader-1") == [], "")
    trace.expect("TX_PENDING records are not handed out", sc.poll() == [], "")
    wait(trace, c.config.group_share_record_lock_duration_ms, sc)
    pairs = [(e.from_state, e.to_state, e.cause) for e in moves(trace, mark)]
    trace.expect("the lock expires: TX_PENDING -> ACQUIRED -> AVAILABLE (lock-expired)",
                 pairs == [("TX_PENDING", "ACQUIRED", "lock-expired"), ("ACQUIRED", "AVAILABLE", "lock-expired")] * 4,
                 repr(pairs))
    got = sc.poll()
    trace.expect("the worker gets the records again (deliveryCount 2), ACQUIRED",
                 [(r.offset, r.delivery_count) for r in got] == [(o, 2) for o in range(4)]
                 and set(sp_states(trace).values()) == {"ACQUIRED"}, repr(sp_states(trace)))
    mark = len(c.events)
    c.txns.markers.release()
    said = resolved_nothing(trace, mark)
    trace.expect("the late ABORT marker is a no-op (nothing TX_PENDING) and the transaction completes",
                 not moves(trace, mark) and bool(said) and "no-op by state" in _why(said[-1])
                 and c.txns.state_of(TXN_ID) == "CompleteAbort", said[-1].text if said else "")
    err = loop(sc, pr, got)
    pr.commit_transaction()
    trace.expect("processed again and committed: every record ACKNOWLEDGED", err == "NONE" and sp_states(trace) == {},
                 f"{err} {sp_states(trace)}")
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees each output once", sorted(out) == srcs(records), repr(out))
    no_model_bug(trace)
    trace.result.update(share_state_partition=state_tp, redelivered=[r.offset for r in got],
                        late_marker=said[-1].text if said else None, output=out)
    check_eos(trace)
