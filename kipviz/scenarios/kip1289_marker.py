"""KIP-1289 (PROPOSED, voting; seed 004): where the COMMIT marker on __share_group_state-N is
resolved, one scenario per outcome. Nothing here is released Kafka.

    kip1289.marker_colocated       in-0 and __share_group_state-N led by the same broker (the KIP's
                                   worked example, "broker 5"): the marker resolves TX_PENDING, exactly once
    kip1289.marker_not_colocated   led by different brokers, the KIP as written (the default): the marker
                                   reaches a broker that does not lead in-0, the records stay TX_PENDING,
                                   the lock expires, they are redelivered and processed again; each
                                   attempt's output commits: duplicate output, never acknowledged
    kip1289.marker_forwarded       the same layout with share_marker_routing="forward-to-leader" (the
                                   kit's suggestion, NOT the KIP's): exactly once

The KIP (seed 004, "Existing RPCs NOT changed"): "The broker hooks the existing marker arrival in
KafkaApis.handleWriteTxnMarkersRequest and broadcasts to all SharePartition instances on that
broker"; the transaction coordinator sends the marker for __share_group_state-N to that
partition's leader, and TxnShareAcknowledge goes to the share partition's leader. Nothing in the
KIP puts the two on one broker, so the marker reaches the staging only when they happen to be.

Two brokers; in-0 is led by broker 0. The scenarios place __share_group_state-N's leader on
purpose (an operator's leader move, before anything is staged) so the outcome does not depend on
where the hash of the seed's topic id lands."""
from __future__ import annotations

from ..eos import VIOLATION, check_share_eos
from . import Finding, Trace, scenario
from .kip1289_errors import GROUP, INPUT, OUTPUT, PROPOSED, place_share_state, setup
from .kip1289_faults import (
    check_eos,
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
    said = [e for e in c.events[mark:] if e.kind == "Note" and e.detail.get("step") == "marker-resolve"
            and e.detail.get("records")]
    trace.expect(f"the COMMIT marker's resolution runs on broker {leader}, in-0's leader: every record "
                 "TX_PENDING -> ACKNOWLEDGED",
                 sorted(offset_of(e) for e in done) == [0, 1, 2, 3] and sp_states(trace) == {}
                 and [e.detail["broker"] for e in said] == [leader], said[-1].text if said else repr(sp_states(trace)))
    out = read(trace, OUTPUT, "reader")
    trace.expect("read_committed sees each output once", sorted(out) == srcs(records), repr(out))
    sc.close()
    no_model_bug(trace)
    trace.result.update(resolved_on=[e.detail["broker"] for e in said], output=out)
    check_eos(trace)


@scenario("kip1289.marker_colocated", title="KIP-1289: the share partition and its state partition on one broker",
          brokers=2, **PROPOSED,
          findings=(Finding("Works as the KIP describes only because in-0 and __share_group_state-N have the same "
                            "leader: the marker reaches the broker that holds the TX_PENDING records.",
                            "nobody: the output is read once and the records end ACKNOWLEDGED",
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
                            "a reviewer: the KIP would need this (or the transaction coordinator tracking share "
                            "partitions as participants) written down",
                            PAGE + "."),))
def marker_forwarded(trace: Trace) -> None:
    """The layout of kip1289.marker_not_colocated (in-0 on broker 0, __share_group_state-N on broker
    1) with share_marker_routing="forward-to-leader", the kit's suggestion: broker 1 receives the
    COMMIT marker and forwards it to broker 0, which resolves TX_PENDING -> ACKNOWLEDGED. Exactly once."""
    _commits_once(trace, False)
    c = trace.cluster
    fwd = [e for e in c.events if e.kind == "Note" and e.detail.get("step") == "marker-forward"]
    trace.expect("the forwarding is labelled the kit's suggestion, not KIP-1289",
                 bool(fwd) and all(e.detail.get("suggestion") == "kit" and "not KIP-1289" in e.text for e in fwd),
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
                            "read_committed readers of the output (each output delivery-limit times); the "
                            "application sees every commitTransaction() succeed; nothing in the protocol reports "
                            "an error",
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
        said = [e for e in c.events[mark:] if e.kind == "Note" and e.detail.get("step") == "marker-unreached"]
        stuck_notes += said
        if attempts == 1:
            trace.expect(f"the COMMIT marker goes to broker {(leader + 1) % c.config.brokers} and resolves nothing: "
                         f"in-0 is led by broker {leader} (the KIP's hook reaches only that broker's share partitions)",
                         not moves(trace, mark) and bool(said) and said[-1].detail["unreached"][0]["reason"]
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
                 len(stuck_notes) == attempts and all(n.detail["broker"] != leader for n in stuck_notes), "")
    sc.close()
    no_model_bug(trace)
    trace.result.update(attempts=attempts, output=out, deliveries=deliveries(trace),
                        unreached=[n.detail["unreached"] for n in stuck_notes[:1]])
    report = check_share_eos(trace.events, group=GROUP, input_topic=INPUT, output_topic=OUTPUT,
                             allowed_at_least_once=True)
    trace.result["eos"] = report
    dups = [v for v in report.violations if v["kind"] == "duplicate-output"]
    trace.expect("the EOS checker, even with the KIP's windows (cases 1, 12) allowed, reports the duplicates as "
                 "VIOLATIONS of the not-co-located pattern, not as an at-least-once window",
                 not report.ok and len(dups) == 4 and all(v["classification"] == VIOLATION and "not co-located"
                                                          in v["detail"] for v in dups), report.summary(limit=3))
