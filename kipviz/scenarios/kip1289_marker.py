"""KIP-1289 (PROPOSED, voting: docs/facts.md): where the COMMIT marker on __share_group_state-N is
resolved, one scenario per outcome. Nothing here is released Kafka.

    kip1289.marker_colocated       in-0 and __share_group_state-N led by the same broker (the KIP's
                                   worked example, "broker 5"): the marker resolves TX_PENDING, exactly once
    kip1289.marker_not_colocated   led by different brokers, the KIP as written (the default): the marker
                                   reaches a broker that does not lead in-0, the records stay TX_PENDING,
                                   the lock expires, they are redelivered and processed again; each
                                   attempt's output commits: duplicate output, never acknowledged
    kip1289.marker_forwarded       the same layout with share_marker_routing="forward-to-leader" (the
                                   kit's suggestion, NOT the KIP's): exactly once
    kip1289.marker_participants    the same layout with share_marker_routing="participants" (also the
                                   kit's suggestion): the transaction coordinator tracks in-0's share
                                   partition as a participant and sends its marker to in-0's leader:
                                   exactly once
    kip1289.marker_participants_state_leader_change
                                   "participants" and the KIP's case 12 (__share_group_state-N's
                                   leader moves between staging and commit): still exactly once
    kip1289.marker_participants_leader_change
                                   "participants" and in-0's leader moving between staging and commit:
                                   the new leader knows no TX_PENDING, at-least-once (case 1's window)

The KIP (the KIP-1289 page, "Existing RPCs NOT changed"): "The broker hooks the existing marker arrival in
KafkaApis.handleWriteTxnMarkersRequest and broadcasts to all SharePartition instances on that
broker"; the transaction coordinator sends the marker for __share_group_state-N to that
partition's leader, and TxnShareAcknowledge goes to the share partition's leader. Nothing in the
KIP puts the two on one broker, so the marker reaches the staging only when they happen to be.

Two brokers; in-0 is led by broker 0. The scenarios place __share_group_state-N's leader on
purpose (an operator's leader move, before anything is staged) so the outcome does not depend on
where the hash of the seed's topic id lands."""
from __future__ import annotations

from ..broker.config import SHARE_MARKER_ROUTINGS
from ..eos import VIOLATION, check_share_eos
from ..schema import events as ev
from . import Finding, Trace, scenario
from .kip1289_errors import GROUP, INPUT, OUTPUT, PROPOSED, place_share_state, setup
from .kip1289_faults import (
    check_eos,
    check_window,
    deliveries,
    loop,
    moves,
    no_model_bug,
    offset_of,
    read,
    sp_states,
    srcs,
    stage_all,
    wait,
)

PAGE = ('KIP-1289, "Existing RPCs NOT changed": the WriteTxnMarkers hook "broadcasts to all SharePartition '
        'instances on that broker"; the marker for __share_group_state-N goes to that partition\'s leader, '
        "TxnShareAcknowledge to the share partition's leader; the worked example puts both on broker 5")


def _commits_once(trace: Trace, colocated: bool) -> None:
    """Stage, commit: the marker resolves every record, each output visible once."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    state_tp, leader = place_share_state(trace, colocated)
    stage_all(trace, sc, pr, records)
    mark = len(c.events)
    pr.commit_transaction()
    done = moves(trace, mark, "txn-commit-accept")
    said = [e for e in c.events[mark:] if isinstance(e, ev.MarkerResolved) and e.records]
    trace.expect(f"the COMMIT marker's resolution runs on broker {leader}, in-0's leader: every record "
                 "TX_PENDING -> ACKNOWLEDGED",
                 sorted(offset_of(e) for e in done) == [0, 1, 2, 3] and sp_states(trace) == {}
                 and [e.broker for e in said] == [leader], said[-1].text if said else repr(sp_states(trace)))
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees each output once", sorted(out) == srcs(records), repr(out))
    sc.close()
    no_model_bug(trace)
    trace.result.update(resolved_on=[e.broker for e in said], output=out)
    check_eos(trace)


@scenario("kip1289.marker_colocated", title="KIP-1289: the share partition and its state partition on one broker",
          brokers=2, **PROPOSED,
          findings=(Finding("Works as the KIP describes only because in-0 and __share_group_state-N have the same "
                            "leader: the marker reaches the broker that holds the TX_PENDING records.",
                            "Nobody: the output is read once and the records end ACKNOWLEDGED.",
                            PAGE + "."),))
def marker_colocated(trace: Trace) -> None:
    """in-0 and __share_group_state-N are led by broker 0 (the KIP's worked example). The worker
    stages in-0@0..3 on broker 0 and commits; the COMMIT marker for __share_group_state-N goes to
    broker 0, whose hook resolves TX_PENDING -> ACKNOWLEDGED. Exactly once."""
    _commits_once(trace, True)


@scenario("kip1289.marker_forwarded",
          title="KIP-1289 with the kit's suggestion: the marker forwarded to the share partition's leader",
          brokers=2, share_marker_routing="forward-to-leader", **PROPOSED,
          findings=(Finding("The kit's suggestion, not the KIP's (share_marker_routing='forward-to-leader'): the "
                            "broker receiving the marker for __share_group_state-N forwards it to the leader of every "
                            "share partition whose state lives there, and that leader resolves its TX_PENDING records. "
                            "With it the not-co-located layout commits exactly once.",
                            "A reviewer: the KIP would need this (or the transaction coordinator tracking share "
                            "partitions as participants) written down.",
                            PAGE + "."),))
def marker_forwarded(trace: Trace) -> None:
    """The layout of kip1289.marker_not_colocated (in-0 on broker 0, __share_group_state-N on broker
    1) with share_marker_routing="forward-to-leader", the kit's suggestion: broker 1 receives the
    COMMIT marker and forwards it to broker 0, which resolves TX_PENDING -> ACKNOWLEDGED. Exactly once."""
    _commits_once(trace, False)
    c = trace.cluster
    fwd = [e for e in c.events if isinstance(e, ev.MarkerForwarded)]
    trace.expect("the forwarding is labelled the kit's suggestion, not KIP-1289",
                 bool(fwd) and all(_told_as_kit(trace, e, "forward-to-leader") for e in fwd),
                 fwd[-1].text if fwd else "no forwarding note")


# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("kip1289.marker_not_colocated",
          title="KIP-1289 as written: the share partition and its state partition led by different brokers",
          brokers=2, **PROPOSED,
          findings=(Finding("Exactly-once breaks whenever a share partition and its __share_group_state-N have "
                            "different leaders. The COMMIT marker goes to __share_group_state-N's leader, whose hook "
                            "resolves only the share partitions it leads, so the staged acknowledgements stay "
                            "TX_PENDING while the output commits. The lock expires, the records are redelivered "
                            "(deliveryCount 2, 3, ...) and processed again, and every attempt's output commits; at "
                            "the delivery limit the records are ARCHIVED, never ACKNOWLEDGED.",
                            "Consumers reading the output with read_committed (each output delivery-limit times); the "
                            "application sees every commitTransaction() succeed; nothing in the protocol reports "
                            "an error.",
                            "Not one of the at-least-once windows the KIP lists (cases 1 and 12). " + PAGE +
                            "; see kip1289.marker_forwarded for what would fix it."),))
def marker_not_colocated(trace: Trace) -> None:
    """in-0 is led by broker 0, __share_group_state-N by broker 1. The worker stages in-0@0..3 on
    broker 0 and commits; the COMMIT marker goes to broker 1, whose hook reaches no share partition
    holding the staging: the output commits, the records stay TX_PENDING. The lock expires
    (TX_PENDING -> ACQUIRED -> AVAILABLE), they are redelivered, processed again and committed --
    and stuck again, every attempt, until the delivery limit archives them. Each record's output is
    visible once per attempt; the EOS checker reports a violation (not a documented window)."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    state_tp, leader = place_share_state(trace, False)
    stage_all(trace, sc, pr, records)
    limit = c.config.group_share_delivery_count_limit
    attempts = 0
    stuck_notes = []
    got = records
    while got:
        attempts += 1
        mark = len(c.events)
        pr.commit_transaction()
        said = [e for e in c.events[mark:] if isinstance(e, ev.MarkerUnreached)]
        stuck_notes += said
        if attempts == 1:
            trace.expect(f"the COMMIT marker goes to broker {(leader + 1) % c.config.brokers} and resolves nothing: "
                         f"in-0 is led by broker {leader} (the KIP's hook reaches only that broker's share partitions)",
                         not moves(trace, mark) and bool(said) and said[-1].unreached[0].reason
                         == "not-colocated", said[-1].text if said else "no note")
            trace.expect("the output of the transaction is committed and visible",
                         sorted(read(trace, OUTPUT, "reader-1")) == srcs(records), "")
            trace.expect("the records stay TX_PENDING and are not handed out",
                         sc.poll() == [] and set(sp_states(trace).values()) == {"TX_PENDING"}, repr(sp_states(trace)))
        mark = len(c.events)
        wait(trace, c.config.group_share_record_lock_duration_ms, sc)
        pairs = [(e.from_state, e.to_state, e.cause) for e in moves(trace, mark)]
        if attempts == 1:
            trace.expect("the lock expires: TX_PENDING -> ACQUIRED -> AVAILABLE (lock-expired)",
                         pairs.count(("TX_PENDING", "ACQUIRED", "lock-expired")) == 4
                         and pairs.count(("ACQUIRED", "AVAILABLE", "lock-expired")) == 4, repr(pairs))
        got = sc.poll()
        if attempts == 1:
            trace.expect("redelivered (deliveryCount 2) and processed again",
                         [(r.offset, r.delivery_count) for r in got] == [(o, 2) for o in range(4)],
                         repr([(r.offset, r.delivery_count) for r in got]))
        if got:
            err = loop(sc, pr, got)
            if err != "NONE":
                trace.expect("staging the redelivered records answers NONE", False, err)
                break
        if attempts > limit * len(records):        # bounded: each attempt uses up one delivery
            break
    out = read(trace, OUTPUT, "reader")
    trace.expect(f"each record's output is visible {limit} times (once per delivery, every attempt committed): "
                 "duplicate output", sorted(out) == sorted(srcs(records) * limit), repr(out))
    final = {offset_of(e): e.to_state for e in moves(trace) if e.to_state in ("ACKNOWLEDGED", "ARCHIVED")}
    trace.expect(f"at the delivery limit ({limit}) the records are ARCHIVED, never ACKNOWLEDGED",
                 final == {o: "ARCHIVED" for o in range(4)} and deliveries(trace) == {o: limit for o in range(4)},
                 f"{final} {deliveries(trace)}")
    trace.expect("every commit's marker said which broker it reached and which it did not",
                 len(stuck_notes) == attempts and all(n.broker != leader for n in stuck_notes), "")
    sc.close()
    no_model_bug(trace)
    trace.result.update(attempts=attempts, output=out, deliveries=deliveries(trace),
                        unreached=[n.unreached for n in stuck_notes[:1]])
    report = check_share_eos(trace.events, group=GROUP, input_topic=INPUT, output_topic=OUTPUT,
                             allowed_at_least_once=True)
    trace.result["eos"] = report
    dups = [v for v in report.violations if v["kind"] == "duplicate-output"]
    trace.expect("the EOS checker, even with the KIP's windows (cases 1, 12) allowed, reports the duplicates as "
                 "VIOLATIONS of the not-co-located pattern, not as an at-least-once window",
                 not report.ok and len(dups) == 4 and all(v["classification"] == VIOLATION and "not co-located"
                                                          in v["detail"] for v in dups), report.summary(limit=3))


PARTICIPANTS = ("share_marker_routing='participants': the share-partition "
                "leader registers the share partition with the transaction coordinator (broker-internal "
                "AddPartitionsToTxn, next to __share_group_state-N) and EndTxn sends its WriteTxnMarkers to the share "
                "partition's current leader")


def _told_as_kit(trace: Trace, e, routing: str) -> bool:
    """`e` is told as the kit's suggestion: the run used `routing`, an option the kit proposes (not
    the page, broker/config.py SHARE_MARKER_ROUTINGS), and the event's sentence says so."""
    return (trace.cluster.config.share_marker_routing == routing == getattr(e, "routing", routing)
            and SHARE_MARKER_ROUTINGS[routing]["source"] == "kit" and "kit's suggestion" in e.text)


def _participant_notes(trace: Trace, since: int = 0) -> tuple[list, list]:
    """(the registrations, the coordinator's markers) of share participants, from `since`."""
    evs = trace.cluster.events[since:]
    return ([e for e in evs if isinstance(e, ev.ShareParticipantsAdded)],
            [e for e in evs if isinstance(e, ev.ShareMarkerSent)])


@scenario("kip1289.marker_participants",
          title="KIP-1289 with the kit's suggestion: share partitions as transaction participants",
          brokers=2, share_marker_routing="participants", **PROPOSED,
          findings=(Finding("The kit's suggestion, not the KIP's (" + PARTICIPANTS + "). The share partition's "
                            "leader resolves its TX_PENDING records from the coordinator's own marker, wherever "
                            "__share_group_state-N is led: the not-co-located layout commits exactly once. The "
                            "marker on __share_group_state-N still writes its control batch and resolves nothing.",
                            "A reviewer: the KIP says the coordinator 'does NOT need to track share-partitions as "
                            "transaction participants'; this is the other repair (see kip1289.marker_forwarded).",
                            PAGE + "."),))
def marker_participants(trace: Trace) -> None:
    """The layout of kip1289.marker_not_colocated (in-0 on broker 0, __share_group_state-N on broker
    1) with share_marker_routing="participants", the kit's suggestion: staging on broker 0 registers
    the share partition sg/in-0 with the transaction coordinator (AddPartitionsToTxn, broker-internal,
    with __share_group_state-N); EndTxn sends WriteTxnMarkers for out-0, __share_group_state-N and the
    share partition, the last to broker 0, which resolves TX_PENDING -> ACKNOWLEDGED. Exactly once."""
    _commits_once(trace, False)
    c = trace.cluster
    added, sent = _participant_notes(trace)
    leader = trace.result["share_leader"]
    trace.expect("the share-partition leader registered sg/in-0 as a participant, labelled the kit's suggestion",
                 len(added) == 1 and added[0].share_participants[0][0] == "sg"
                 and added[0].broker == leader and added[0].error_code == 0
                 and _told_as_kit(trace, added[0], "participants"),
                 added[-1].text if added else "no registration")
    trace.expect(f"EndTxn's marker for the share partition went to broker {leader}, in-0's leader, not to "
                 f"__share_group_state-N's leader (broker {trace.result['state_leader']})",
                 [e.broker for e in sent] == [leader] and all(_told_as_kit(trace, e, "participants") for e in sent),
                 repr([e.text for e in sent]))
    trace.expect("no forwarding and no unreached staging",
                 not [e for e in c.events if isinstance(e, (ev.MarkerForwarded, ev.MarkerUnreached))], "")


@scenario("kip1289.marker_participants_state_leader_change",
          title="KIP-1289 with the kit's participants: __share_group_state-N's leader moves before the commit "
                "(case 12)", brokers=2, share_marker_routing="participants", **PROPOSED,
          findings=(Finding("With share partitions as participants (the kit's suggestion) the KIP's case 12 is no "
                            "window: the marker goes to the share partition's leader, which still holds the "
                            "staging; __share_group_state-N's new leader only stores the ShareUpdate. Exactly once.",
                            "Nobody: the output is read once and the records end ACKNOWLEDGED.",
                            "KIP-1289's case 12: 'TX_PENDING lost on share-coordinator leadership change' -- true of "
                            "the page's hook, not of this suggestion."),))
def marker_participants_state_leader_change(trace: Trace) -> None:
    """kip1289.case12_leader_change_share_state with share_marker_routing="participants": in-0 and
    __share_group_state-N start on broker 0, the worker stages, N's leadership moves to broker 1,
    the worker commits. The share participant's marker goes to broker 0, in-0's leader, which
    resolves TX_PENDING -> ACKNOWLEDGED (persisted through N's new leader). Exactly once."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    state_tp, leader = place_share_state(trace, True)
    stage_all(trace, sc, pr, records)
    c.move_share_state_leader(state_tp[1], (leader + 1) % c.config.brokers)
    mark = len(c.events)
    pr.commit_transaction()
    done = moves(trace, mark, "txn-commit-accept")
    _, sent = _participant_notes(trace, mark)
    trace.expect(f"the share participant's COMMIT marker goes to broker {leader}, in-0's leader, and resolves every "
                 "record TX_PENDING -> ACKNOWLEDGED although N's leader moved",
                 [e.broker for e in sent] == [leader] and sorted(offset_of(e) for e in done) == [0, 1, 2, 3]
                 and sp_states(trace) == {}, repr(sp_states(trace)))
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees each output once", sorted(out) == srcs(records), repr(out))
    sc.close()
    no_model_bug(trace)
    trace.result.update(output=out, state_leader_now=c.topics.partition(*state_tp).leader)
    check_eos(trace)


@scenario("kip1289.marker_participants_leader_change",
          title="KIP-1289 with the kit's participants: the share partition's leader moves before the commit",
          brokers=2, share_marker_routing="participants", **PROPOSED,
          findings=(Finding("Share partitions as participants (the kit's suggestion) do not close the window of a "
                            "SHARE-partition leader change: the new leader builds the share partition from "
                            "__share_group_state, where TX_PENDING is not persisted (written as AVAILABLE), so the "
                            "staging is gone before the marker arrives. The marker follows the new leader and "
                            "resolves nothing; the output commits and the records are redelivered: each output "
                            "visible twice, the checker's case-1 window.",
                            "Consumers reading the output with read_committed (each output twice); nothing reports an error.",
                            "KIP-1289's case 1 (TX_PENDING is in memory only; persisting it is deferred to a follow-up "
                            "KIP) -- the root cause this suggestion leaves open."),))
def marker_participants_leader_change(trace: Trace) -> None:
    """share_marker_routing="participants", in-0 on broker 0, __share_group_state-N on broker 1. The
    worker stages in-0@0..3 on broker 0; then in-0's leadership moves to broker 1 (leader epoch + 1):
    the new leader loads sg/in-0 from __share_group_state, TX_PENDING -> AVAILABLE (state-reloaded).
    The worker commits: the coordinator resolves in-0's leader at EndTxn and sends the share
    participant's marker to broker 1, which resolves nothing (no-op by state). Leadership returns to
    broker 0 (a preferred-leader election; the kit's ShareConsumer fetches from broker 0), the
    records are redelivered, processed again and committed: ACKNOWLEDGED, each output twice."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    state_tp, leader = place_share_state(trace, False)
    stage_all(trace, sc, pr, records)
    other = (leader + 1) % c.config.brokers
    mark = len(c.events)
    c.move_partition_leader(INPUT, 0, other)
    lost = moves(trace, mark, "state-reloaded")
    trace.expect(f"in-0's new leader (broker {other}) loads the share partition from __share_group_state: the staging "
                 "is gone, TX_PENDING -> AVAILABLE",
                 len(lost) == 4 and all((e.from_state, e.to_state) == ("TX_PENDING", "AVAILABLE") for e in lost),
                 repr([(e.from_state, e.to_state) for e in lost]))
    mark = len(c.events)
    pr.commit_transaction()
    _, sent = _participant_notes(trace, mark)
    said = [e for e in c.events[mark:] if isinstance(e, ev.MarkerResolved)]
    trace.expect(f"the share participant's COMMIT marker follows the new leader (broker {other}) and resolves nothing",
                 [e.broker for e in sent] == [other] and not moves(trace, mark)
                 and [(e.broker, e.records) for e in said] == [(other, 0)],
                 said[-1].text if said else "no note")
    trace.expect("the transaction's output is committed and visible",
                 sorted(read(trace, OUTPUT, "reader-1")) == srcs(records), "")
    c.move_partition_leader(INPUT, 0, leader)
    again = sc.poll()
    trace.expect("redelivered and processed again", [r.offset for r in again] == [0, 1, 2, 3],
                 repr([(r.offset, r.delivery_count) for r in again]))
    mark = len(c.events)
    err = loop(sc, pr, again)
    pr.commit_transaction()
    trace.expect("the second attempt commits: every record ACKNOWLEDGED",
                 err == "NONE" and len(moves(trace, mark, "txn-commit-accept")) == 4 and sp_states(trace) == {},
                 f"{err} {sp_states(trace)}")
    out = read(trace, OUTPUT, "reader")
    trace.expect("at-least-once: each record's output is visible twice", sorted(out) == sorted(srcs(records) * 2),
                 repr(out))
    sc.close()
    no_model_bug(trace)
    trace.result.update(output=out, deliveries=deliveries(trace))
    check_eos(trace, True)
    check_window(trace, 1, srcs(records))
