"""KIP-1289 (PROPOSED): every place the kit's model departs from the page, as data, each decided
and shown by a named scenario. `kipviz review` prints them as "Open questions".

    from kipviz.scenarios.kip1289_departures import DEPARTURES
    for d in DEPARTURES: d.key, d.page, d.model, d.suggestion, d.scenario, d.outcome

A departure whose scenario is not registered in this build (h24a's kip1289.marker_* scenarios
arrive with that branch) is still listed; `runnable()` says which are. The few scenarios no other
module shows are defined at the bottom of this file."""
from __future__ import annotations

from dataclasses import dataclass

from ..broker import share_txn
from ..schema.error_codes import name_of
from . import Trace, scenario
from .kip1289_errors import GROUP, PROPOSED, produce, setup
from .kip1289_faults import moves, stage_all, wait

__all__ = ["Departure", "DEPARTURES", "runnable"]


@dataclass(frozen=True)
class Departure:
    key: str
    page: str          # what the KIP page says (quote / section)
    model: str         # what the model does by default (the page as written where it can be followed)
    scenario: str      # the scenario that shows it
    outcome: str       # what running the scenario shows (its checks pass when this holds)
    suggestion: str = ""   # the kit's suggestion, a named option, if any
    kind: str = "inconsistency"   # inconsistency | violation | unspecified | not-modelled


DEPARTURES: tuple[Departure, ...] = (
    Departure(
        "marker-hook-colocation",
        'Existing RPCs NOT changed: the WriteTxnMarkers hook "broadcasts to all SharePartition instances on '
        'that broker"; the worked example puts the share partition and __share_group_state-N on one broker.',
        "share_marker_routing='page' (default): a marker resolves only share partitions led by the receiving "
        "broker. When the share partition's leader is not the state partition's leader the records stay "
        "TX_PENDING until the lock expires, are redelivered and the output is written twice.",
        "kip1289.marker_not_colocated",
        "exactly-once violation (duplicate output); co-located leaders work: kip1289.marker_colocated",
        "share_marker_routing='forward-to-leader' (kit's suggestion): kip1289.marker_forwarded; "
        "share_marker_routing='participants' (kit's suggestion: the transaction coordinator tracks share "
        "partitions as participants and marks each on its leader): kip1289.marker_participants, which also "
        "closes case 12 (kip1289.marker_participants_state_leader_change) but not a share-partition leader "
        "change (case 1's window, kip1289.marker_participants_leader_change)", "violation"),
    Departure(
        "api-key",
        'Public Interfaces: "TxnShareAcknowledgeRequest (apiKey 93)" but "TxnShareAcknowledgeResponse (apiKey 94, '
        'v0)"; the draft PR apache/kafka#22357 uses 94, a later draft 95.',
        "The definition's default is 95: 93 is GetReplicaLogInfo on trunk and StreamsGroupTopologyDescription"
        "Update in 4.4, 94 is UnregisterController in 4.4 (registry.api_key_history).",
        "kip1289.api_key_history", "93 and 94 are taken in the newest release; 95 is free", kind="inconsistency"),
    Departure(
        "release-in-transaction",
        '"On WriteTxnMarkers commit: TX_PENDING(ACCEPT) -> ACKNOWLEDGED; same for RELEASE and REJECT", while '
        '"only 1 (Accept) and 3 (Reject) are valid inside a transaction ... rejected with INVALID_RECORD_STATE".',
        "RELEASE / RENEW / GAP inside a transaction are refused with INVALID_RECORD_STATE (abortable).",
        "kip1289.case10_invalid_ack_type", "INVALID_RECORD_STATE, nothing registered or staged"),
    Departure(
        "archiving-state",
        'Producer javadoc: "REJECT records transition to ARCHIVING/ARCHIVED"; KIP-932 has no ARCHIVING state and '
        "no transition, RPC or persisted state of the page uses one.",
        "No ARCHIVING state: COMMIT of a REJECT goes TX_PENDING -> ARCHIVED directly.",
        "kip1289.happy_commit", "REJECTed records end ARCHIVED, committed", kind="unspecified"),
    Departure(
        "abort-state",
        'Test plan: "ACQUIRED to ACKNOWLEDGED on commit vs. AVAILABLE on abort"; javadoc: "On abort, all staged '
        'records revert to ACQUIRED and remain owned by the original consumer".',
        "ABORT moves TX_PENDING -> ACQUIRED for the same member (the text).",
        "kip1289.happy_abort", "TX_PENDING -> ACQUIRED (txn-abort); the next poll returns nothing"),
    Departure(
        "abort-spends-delivery",
        'Pseudo-code (catch KafkaException, abort): the records "will be re-delivered on next poll()".',
        "After ABORT the next poll returns nothing; the records return only after the acquisition lock "
        "expires (30 s), with deliveryCount 2: every abort spends one delivery attempt and a lock period.",
        "kip1289.happy_abort", "redelivered after the lock duration, deliveryCount 2", kind="unspecified"),
    Departure(
        "repeated-aborts-delivery-limit",
        "Not stated: how aborts interact with group.share.delivery.count.limit.",
        "Each abort + lock expiry counts a delivery; after delivery.count.limit (5) attempts the records are "
        "ARCHIVED without ever being processed.",
        "kip1289.aborts_reach_delivery_limit", "records ARCHIVED after 5 aborted attempts, never committed",
        kind="unspecified"),
    Departure(
        "case7-timeout-order",
        'Corner case 7: "WriteTxnMarkers(ABORT); broker reverts TX_PENDING -> ACQUIRED -> AVAILABLE on next lock '
        'cycle".',
        "Holds only with transaction.timeout.ms below the lock duration; with the defaults (60 s > 30 s) the "
        "lock expires first (case 6) and the ABORT finds nothing TX_PENDING.",
        "kip1289.case07_txn_timeout", "the scenario needs transaction.timeout.ms=10s to show the page's order",
        kind="unspecified"),
    Departure(
        "error-transactional-id-not-found",
        "TxnShareAcknowledgeResponse top-level errors: TRANSACTIONAL_ID_NOT_FOUND.",
        "Returned top-level (no partition answered) when the transaction coordinator has no such transactional id.",
        "kip1289.listed_errors", "a TxnShareAcknowledge frame with an unknown id answers TRANSACTIONAL_ID_NOT_FOUND, "
        "nothing staged", kind="unspecified"),
    Departure(
        "error-invalid-txn-state",
        "TxnShareAcknowledgeResponse top-level errors: INVALID_TXN_STATE.",
        "The page gives no condition. The model's (an interpretation): the transaction is already ending -- "
        "EndTxn answered (TV2 bumped the epoch) but its markers not yet written, the coordinator in "
        "PrepareCommit/PrepareAbort -- so staging into it is refused top-level.",
        "kip1289.listed_errors", "with the markers held back after EndTxn(commit), a TxnShareAcknowledge frame at "
        "the bumped epoch answers INVALID_TXN_STATE, nothing staged", kind="unspecified"),
    Departure(
        "error-not-leader",
        'Per-partition errors: "NOT_LEADER_OR_FOLLOWER (with CurrentLeader populated)".',
        "Per partition, with CurrentLeader, when the receiving broker does not lead the share partition.",
        "kip1289.listed_errors", "a TxnShareAcknowledge frame sent to a non-leader: the partition answers "
        "NOT_LEADER_OR_FOLLOWER with CurrentLeader, nothing staged", kind="unspecified"),
    Departure(
        "error-transaction-abortable",
        'Top-level errors: "TRANSACTION_ABORTABLE (KIP-890)".',
        "Never returned: the page names no condition that produces it on TxnShareAcknowledge.",
        "kip1289.listed_errors", "not among the codes the staging path can return", kind="not-modelled"),
    Departure(
        "error-kafka-storage",
        "Per-partition errors: KAFKA_STORAGE_ERROR.",
        "Never returned: staging is in memory (TX_PENDING is not persisted until the marker), so no log "
        "write can fail at staging.",
        "kip1289.listed_errors", "not among the codes the staging path can return", kind="not-modelled"),
    Departure(
        "plain-ack-of-tx-pending",
        "Not stated: a plain ShareAcknowledge of a record that is TX_PENDING.",
        "Refused per partition (INVALID_RECORD_STATE): the record is not ACQUIRED; it stays TX_PENDING.",
        "kip1289.plain_ack_tx_pending", "the plain acknowledgement is refused, the staging survives",
        kind="unspecified"),
    Departure(
        "rollout-share-version",
        "Compatibility: TxnShareAcknowledge needs share.version 2 and transaction.version 2; an old broker "
        "makes the producer fail; downgrade and old-client/new-broker are not discussed.",
        "share.version 1: the producer raises before sending, the user aborts; after share.version 2 a "
        "restarted producer commits.",
        "kip1289.case09_old_broker", "UnsupportedVersionError without bytes on the wire; commit after upgrade",
        kind="unspecified"),
    Departure(
        "rollout-gating-and-old-client",
        'Enablement: "the broker MUST advertise apiKey 93 only when feature-flag share.version >= 2"; the KIP is '
        "TV2-only; an old client against a new broker and a share.version downgrade with records TX_PENDING "
        "are not discussed.",
        "Advertised only at share.version 2; transaction.version 1 answers UNSUPPORTED_VERSION at staging; an "
        "old client keeps plain ShareAcknowledge. A downgrade is NOT refused by the model (no rule in the page); "
        "a new client against an old broker is case 9.",
        "kip1289.rollout_gating", "gating as the page says; plain ShareAcknowledge unaffected",
        kind="unspecified"),
)


def runnable() -> dict[str, bool]:
    """scenario name -> registered in this build."""
    from . import all_scenarios
    names = set(all_scenarios())
    return {d.scenario: d.scenario in names for d in DEPARTURES}


# ---- scenarios no other module shows ---------------------------------------------------------------------
@scenario("kip1289.api_key_history", title="KIP-1289: which api key TxnShareAcknowledge can have", **PROPOSED)
def api_key_history(trace: Trace) -> None:
    """The page's 93, the draft PR's 94 and a later 95, against Kafka's key table."""
    from ..schema import registry
    rows = {r["key"]: r for r in registry.api_key_history("TxnShareAcknowledge")}
    trace.expect("93 (the page's key) is taken in the newest release", not rows[93]["free_in_newest"], repr(rows[93]))
    trace.expect("94 (the draft PR's key) is taken in the newest release", not rows[94]["free_in_newest"],
                 repr(rows[94]))
    trace.expect("95 is free and the definition's default", rows[95]["free_in_newest"] and rows[95]["default"],
                 repr(rows[95]))
    trace.result.update(keys={k: r["free_in_newest"] for k, r in rows.items()})
    taken = [k for k in (93, 94) if not rows[k]["free_in_newest"]]
    trace.find(f"Both api keys KIP-1289 has named for TxnShareAcknowledge are taken in the newest release "
               f"({', '.join(map(str, taken))}); the kit's definition uses 95, which is free.",
               "A reviewer of the KIP and anyone building the draft: with 93 or 94 the new RPC would collide with "
               "an RPC Kafka 4.4 already ships.",
               "KIP-1289, 'Public Interfaces', says apiKey 93 (94 for the response) and its draft PR #22357 uses 94; "
               "Kafka 4.4 ships 93 StreamsGroupTopologyDescriptionUpdate and 94 UnregisterController.")


def _send_at(trace: Trace, sc, pr, records, *, broker: int | None = None, **override) -> dict:
    """One TxnShareAcknowledge v0 for `records` (ACCEPT), encoded as a frame, sent through
    Cluster.call to `broker` (the share partition's leader unless told) and decoded from the
    response bytes; `override` replaces request fields (e.g. TransactionalId)."""
    c = trace.cluster
    topic = c.topics.get(records[0].topic)
    body = {"TransactionalId": pr.transactional_id, "GroupId": GROUP, "ProducerId": pr.producer_id,
            "ProducerEpoch": pr.producer_epoch, "MemberId": sc.member_id, "MemberEpoch": sc.member_epoch,
            "Topics": [{"TopicId": topic.topic_id, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
                {"FirstOffset": r.offset, "LastOffset": r.offset, "AcknowledgeTypes": [1]} for r in records]}]}]}
    body.update(override)
    if broker is None:
        broker = c.topics.partition(records[0].topic, 0).leader
    return c.call("TxnShareAcknowledge", 0, body, broker=broker, client="worker-producer") or {}


def _codes(resp: dict) -> dict:
    """The decoded answer: top-level error name and, per partition, its error name (and CurrentLeader)."""
    parts = {p["PartitionIndex"]: name_of(p["ErrorCode"]) for t in resp.get("Responses") or [] for p in t["Partitions"]}
    leaders = {p["PartitionIndex"]: p["CurrentLeader"]["LeaderId"] for t in resp.get("Responses") or []
               for p in t["Partitions"] if p.get("CurrentLeader")}
    return {"error": name_of(resp.get("ErrorCode", -1)), "partitions": parts, "current_leader": leaders}


@scenario("kip1289.listed_errors", title="KIP-1289: the errors the page lists, each answered on the wire", brokers=3,
          **PROPOSED)
def listed_errors(trace: Trace) -> None:
    """Each listed error's condition, sent as a TxnShareAcknowledge frame through the cluster and
    read from the decoded response: an unknown transactional id (TRANSACTIONAL_ID_NOT_FOUND), a
    broker that does not lead the share partition (NOT_LEADER_OR_FOLLOWER + CurrentLeader), and a
    transaction that is ending -- EndTxn answered, its markers held back, the coordinator still in
    PrepareCommit (INVALID_TXN_STATE; the page names no trigger, this one is the model's).
    TRANSACTION_ABORTABLE and KAFKA_STORAGE_ERROR have no condition in the page."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    got = {}
    got["TRANSACTIONAL_ID_NOT_FOUND"] = a = _codes(_send_at(trace, sc, pr, records, TransactionalId="no-such-id"))
    trace.expect("an unknown transactional id: TRANSACTIONAL_ID_NOT_FOUND top-level, no partition answered, "
                 "nothing staged", a["error"] == "TRANSACTIONAL_ID_NOT_FOUND" and not a["partitions"]
                 and not share_txn.pending(c), repr(a))
    leader = c.topics.partition(records[0].topic, 0).leader
    other = next(b for b in range(c.config.brokers) if b != leader)
    got["NOT_LEADER_OR_FOLLOWER"] = a = _codes(_send_at(trace, sc, pr, records, broker=other))
    trace.expect(f"sent to broker {other}, not the share partition's leader: partition 0 answers "
                 f"NOT_LEADER_OR_FOLLOWER with CurrentLeader {leader}, nothing staged",
                 a["error"] == "NONE" and a["partitions"] == {0: "NOT_LEADER_OR_FOLLOWER"}
                 and a["current_leader"].get(0) == leader and not share_txn.pending(c), repr(a))
    # a transaction that is ending: output written, EndTxn(commit) answered (TV2 bumps the epoch),
    # the markers held back so the coordinator stays in PrepareCommit
    produce(pr, records[:1])
    c.txns.markers.hold = True
    pr.commit_transaction()
    state = c.txns.state_of(pr.transactional_id)
    got["INVALID_TXN_STATE"] = a = _codes(_send_at(trace, sc, pr, records))
    trace.expect(f"the transaction is ending ({state}, markers held): INVALID_TXN_STATE top-level, nothing staged",
                 state == "PrepareCommit" and a["error"] == "INVALID_TXN_STATE" and not a["partitions"]
                 and not share_txn.pending(c), f"{state} {a!r}")
    c.txns.markers.release()
    trace.expect("once the markers are written the transaction completes",
                 c.txns.state_of(pr.transactional_id) == "CompleteCommit", repr(c.txns.state_of(pr.transactional_id)))
    possible = set(errors_staging_can_return())
    for name in ("TRANSACTION_ABORTABLE", "KAFKA_STORAGE_ERROR"):
        trace.expect(f"{name}: listed by the page, never returned by the model's staging", name not in possible,
                     repr(sorted(possible)))
    trace.result.update(answers=got, possible=sorted(possible))
    nl = got["NOT_LEADER_OR_FOLLOWER"]
    trace.find(f"Of the errors the page lists, three are answered on the wire: {got['TRANSACTIONAL_ID_NOT_FOUND']['error']} "
               f"for an unknown transactional id, {nl['partitions'].get(0)} (CurrentLeader "
               f"{nl['current_leader'].get(0)}) from broker {other}, which does not lead in-0, and {got['INVALID_TXN_STATE']['error']} while the "
               "transaction is ending; TRANSACTION_ABORTABLE and KAFKA_STORAGE_ERROR are never returned.",
               "The producer (worker-producer) sending TxnShareAcknowledge: nothing is staged in any of the three "
               "cases, and only INVALID_TXN_STATE has a trigger the page does not give (the model's choice).",
               "KIP-1289, TxnShareAcknowledgeResponse: it lists TRANSACTIONAL_ID_NOT_FOUND, INVALID_TXN_STATE, "
               "TRANSACTION_ABORTABLE (KIP-890), NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR, with a condition "
               "for only some of them.")


def errors_staging_can_return() -> list[str]:
    """The error names TxnShareAcknowledge's staging can answer (kipviz.broker.errors_by_version's data)."""
    from ..broker.api_errors import errors_by_version
    return sorted(set().union(*errors_by_version("TxnShareAcknowledge").values()))


@scenario("kip1289.plain_ack_tx_pending", title="KIP-1289: a plain ShareAcknowledge of a TX_PENDING record",
          **PROPOSED)
def plain_ack_tx_pending(trace: Trace) -> None:
    """Staged records acknowledged again with plain ShareAcknowledge before the commit."""
    c = trace.cluster
    sc, pr, records = setup(trace)
    stage_all(trace, sc, pr, records)
    for r in records:
        sc.acknowledge(r, 3)
    out = sc.commit_sync() or {}
    sp = c.shares.partitions[(GROUP, c.topics.get(records[0].topic).topic_id, 0)]
    st = sorted({r.state for r in sp.records.values()})
    codes = [p["ErrorCode"] for t in out.get("Responses") or [] for p in t["Partitions"]]
    trace.expect("the plain ShareAcknowledge is refused with INVALID_RECORD_STATE",
                 codes and all(name_of(x) == "INVALID_RECORD_STATE" for x in codes), repr(codes))
    trace.expect("the plain acknowledgement does not move TX_PENDING records", st == ["TX_PENDING"], repr(st))
    trace.result.update(answer=repr(out), states=st)
    trace.find(f"A plain ShareAcknowledge of records already staged in a transaction is answered "
               f"{'/'.join(sorted({name_of(x) for x in codes})) or 'nothing'} and leaves them {', '.join(st)}: the "
               "staging survives and the transaction decides.",
               "The application (its share consumer worker): commitSync() reports INVALID_RECORD_STATE for in-0 "
               "if it acknowledges a record it has already handed to the producer.",
               "KIP-1289 does not say what a plain ShareAcknowledge of a TX_PENDING record does; KIP-932 refuses "
               "an acknowledgement of a record that is not ACQUIRED (SharePartition.java).")


@scenario("kip1289.aborts_reach_delivery_limit", title="KIP-1289: repeated aborts reach the delivery limit",
          **PROPOSED)
def aborts_reach_delivery_limit(trace: Trace) -> None:
    """Stage, abort, wait for the lock, poll again: each abort spends one delivery attempt."""
    c = trace.cluster
    limit = c.config.group_share_delivery_count_limit
    sc, pr, records = setup(trace, per_partition=1)
    aborts, counts = 0, []
    for _ in range(limit + 1):
        if not records:
            break
        counts.append(records[0].delivery_count)
        stage_all(trace, sc, pr, records)
        pr.abort_transaction()
        aborts += 1
        wait(trace, c.config.group_share_record_lock_duration_ms, sc)
        records = sc.poll()
        pr.begin_transaction()
    last = [(e.from_state, e.to_state, e.cause) for e in moves(trace)][-1:]
    st = [m[1] for m in last]
    trace.expect(f"after {limit} aborted attempts the records are ARCHIVED, never processed",
                 aborts == limit and st == ["ARCHIVED"], f"{aborts} aborts, states {st}")
    trace.expect("each abort spent one delivery attempt: deliveryCount 1, 2, ... limit",
                 counts == list(range(1, limit + 1)), repr(counts))
    trace.result.update(aborts=aborts, last_move=last, delivery_counts=counts)
    trace.find(f"Each abort spends a delivery attempt and a lock period: after {aborts} aborted attempts "
               f"(deliveryCount {', '.join(map(str, counts))}) the record is {', '.join(st) or 'not moved'}, never "
               "processed.",
               "The application: a record whose processing keeps failing is archived silently after "
               "group.share.delivery.count.limit aborts, with no error and no output.",
               "KIP-1289 does not say how aborts interact with group.share.delivery.count.limit (KIP-932); its "
               "ABORT returns the records to ACQUIRED and only the lock expiry makes them AVAILABLE again.")


@scenario("kip1289.rollout_gating", title="KIP-1289 rollout: share.version and transaction.version gating, "
          "an old client on a new broker", **PROPOSED)
def rollout_gating(trace: Trace) -> None:
    """ApiVersions advertises TxnShareAcknowledge only at share.version 2; staging needs
    transaction.version 2 (UNSUPPORTED_VERSION otherwise); a client that never sends the RPC keeps
    plain ShareAcknowledge on the same broker. A share.version downgrade while records are
    TX_PENDING is not refused by the model (the page does not say what should happen)."""
    from ..broker import served_versions
    c = trace.cluster
    sc, pr, records = setup(trace)
    trace.expect("share.version 2: ApiVersions advertises TxnShareAcknowledge v0",
                 served_versions("TxnShareAcknowledge", c.config, c.features) == (0, 0),
                 repr(served_versions("TxnShareAcknowledge", c.config, c.features)))
    # the probes change the finalized levels and back; the checks' sentences tell them (no event)
    c.features.finalize("share.version", 1, tell=False)
    trace.expect("share.version 1: TxnShareAcknowledge is not advertised",
                 served_versions("TxnShareAcknowledge", c.config, c.features) is None, "")
    c.features.finalize("share.version", 2, tell=False)
    c.features.finalize("transaction.version", 1, tell=False)
    tv1 = _codes(_send_at(trace, sc, pr, records))
    trace.expect("transaction.version 1: TxnShareAcknowledge answers UNSUPPORTED_VERSION, nothing staged",
                 tv1["error"] == "UNSUPPORTED_VERSION" and not tv1["partitions"] and not share_txn.pending(c),
                 repr(tv1))
    c.features.finalize("transaction.version", 2, tell=False)
    for r in records:                      # an old client: plain KIP-932 acknowledgement
        sc.acknowledge(r, 1)
    out = sc.commit_sync() or {}
    codes = [name_of(p["ErrorCode"]) for t in out.get("Responses") or [] for p in t["Partitions"]]
    acked = [e for e in moves(trace) if e.to_state == "ACKNOWLEDGED"]
    trace.expect("an old client's plain ShareAcknowledge works on the new broker",
                 codes == ["NONE"] and len(acked) == len(records), f"{codes} {len(acked)}")
    trace.result.update(tv1=tv1, plain=codes)
    trace.find(f"TxnShareAcknowledge is advertised only at share.version 2 and answered {tv1['error']} at "
               f"transaction.version 1, while an old client's plain ShareAcknowledge on the same broker is answered "
               f"{'/'.join(codes) or 'nothing'}.",
               "An operator rolling KIP-1289 out: both features must be finalized before producers stage "
               "acknowledgements, and no rule says what a share.version downgrade does to staged records.",
               "KIP-1289, 'Enablement': the broker MUST advertise the RPC only at share.version 2, and the KIP is "
               "transaction.version 2 only; a downgrade and an old client on a new broker are not discussed.")
