"""KIP-1289 (PROPOSED, voting; docs/facts.md#kip-1289s-draft-semantics): share-group
acknowledgements staged inside a producer transaction.

Nothing here is in released Kafka. The RPC (TxnShareAcknowledge) is served only at
share.version >= 2 (ClusterConfig.proposals), and the record moves are the "proposed" rows of
kipviz/broker/tables/share_record.py, enabled only at share.version >= 2.

Staging (`stage`, the share-partition leader's side of TxnShareAcknowledge), in this order:
1. request shape (empty TransactionalId / GroupId / MemberId, a topic-partition twice ->
   INVALID_REQUEST); transaction.version >= 2 required (the KIP is TV2-only) -> else
   UNSUPPORTED_VERSION; authorization: TRANSACTIONAL_ID WRITE, GROUP READ, TOPIC READ.
2. producer fencing at the transaction coordinator (read-only): TRANSACTIONAL_ID_NOT_FOUND /
   INVALID_PRODUCER_ID_MAPPING / PRODUCER_FENCED (older epoch, corner cases 3 and 14) /
   INVALID_PRODUCER_EPOCH (newer epoch) / INVALID_TXN_STATE (transaction already ending).
3. share-group member: unknown -> UNKNOWN_MEMBER_ID; MemberEpoch != the member's current epoch ->
   STALE_MEMBER_EPOCH (corner case 8; checked at staging, not at commit).
4. every partition is validated on a staged copy (SharePartition.plan_txn): UNKNOWN_TOPIC_ID,
   UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (+ CurrentLeader), INVALID_RECORD_STATE (an
   ack type other than ACCEPT 1 / REJECT 3 -- corner case 10 -- or a record not ACQUIRED by this
   member), INVALID_REQUEST (malformed batch). ALL OR NOTHING (corner case 11): if any partition
   fails, no partition changes; the partitions that would have succeeded answer
   OPERATION_NOT_ATTEMPTED (interpretation: the KIP only says "rolled back").
5. broker-internal AddPartitionsToTxn of the __share_group_state-N partition(s) of the
   acknowledged share partitions (kipviz.broker.share_txn_coordinator: add_state_partitions); an error
   there is the top-level error and nothing is staged (corner case 2).
6. ACQUIRED -> TX_PENDING (txn-stage) with the staging (producer id, epoch) on each record.

Markers (`on_marker`, called from the WriteTxnMarkers hook for __share_group_state-N on the
broker that received the marker, N's leader). As the KIP is written (the KIP-1289 page, "Existing RPCs NOT
changed": the hook "broadcasts to all SharePartition instances on that broker";
config.share_marker_routing "page", the default) only the share partitions THAT broker leads are
reached; a share partition led elsewhere keeps its records TX_PENDING until the lock expires
(scenario kip1289.marker_not_colocated; a MarkerUnreached event names it). With
"forward-to-leader" -- the kit's suggestion, not the KIP's -- the broker forwards the marker to
each share partition's leader. With "participants" -- also the kit's suggestion -- the
transaction coordinator tracks the share partitions themselves (registered at staging,
ShareTransactions.add_participants) and sends their markers to each one's current
leader (`on_participant_marker`); the hook on __share_group_state-N then resolves nothing. A
reached share partition whose state lives in partition N resolves
the TX_PENDING records staged by that producer id with an epoch below the marker's (TV2 markers
carry the bumped epoch): COMMIT ->
ACKNOWLEDGED (ACCEPT) / ARCHIVED (REJECT), persisted as a ShareUpdate; ABORT -> ACQUIRED for the
same member, its lock still running. Duplicate markers find nothing TX_PENDING (no-op by state);
a marker of another producer id or with an epoch not above the staging epoch is ignored (no-op by
epoch, corner cases 5, 6, 13). Lock expiry while TX_PENDING reverts to ACQUIRED (then the usual
expiry) -- SharePartition._expire, corner case 6."""
from __future__ import annotations

from ..records import share_coordinator_partition
from ..schema import events as ev
from ..schema.error_codes import CODE
from ..schema.topics import SHARE_GROUP_STATE as SHARE_STATE_TOPIC
from .share_partition import AckError

OPERATION_NOT_ATTEMPTED = CODE["OPERATION_NOT_ATTEMPTED"]
STATUS = "proposed"
KIP = "KIP-1289"


class StageResult:
    """What TxnShareAcknowledge answers: a top-level error, or one (code, message, leader) per
    requested (topic id, partition), in request order."""

    def __init__(self, error: int = 0, message: str | None = None):
        self.error, self.message = error, message
        self.partitions: dict[tuple, dict] = {}
        self.staged: int = 0


def _state_partition(cluster, group_id: str, topic_id, partition: int) -> int:
    return share_coordinator_partition(group_id, topic_id, partition,
                                       cluster.config.share_state_topic_partitions)


# size: stages a transactional share acknowledgement with its KIP-1289 checks in the page's order, first failing check wins
def stage(cluster, *, broker: int, principal: str, transactional_id: str | None, group_id: str,
          producer_id: int, producer_epoch: int, member_id: str, member_epoch: int,
          topics: list[dict]) -> StageResult:
    # 1. shape, feature, authorization
    requested: list[tuple] = []
    for t in topics:
        for pd in t.get("Partitions") or []:
            requested.append((t.get("TopicId"), pd.get("PartitionIndex", 0), pd.get("AcknowledgementBatches") or []))
    keys = [(tid, p) for tid, p, _ in requested]
    if not transactional_id or not group_id or not member_id:
        return StageResult(CODE["INVALID_REQUEST"], "TransactionalId, GroupId and MemberId are required.")
    if len(set(keys)) != len(keys):
        return StageResult(CODE["INVALID_REQUEST"], "A topic partition appears more than once.")
    if cluster.features.level("transaction.version") < 2:
        return StageResult(CODE["UNSUPPORTED_VERSION"], "KIP-1289 needs transaction.version >= 2.")
    if not cluster.authorized(principal, "TRANSACTIONAL_ID", transactional_id, "WRITE"):
        return StageResult(CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
    if not cluster.authorized(principal, "GROUP", group_id, "READ"):
        return StageResult(CODE["GROUP_AUTHORIZATION_FAILED"])
    for tid, _, _ in requested:
        topic = cluster.topics.live(tid)
        if topic is not None and not cluster.authorized(principal, "TOPIC", topic.name, "READ"):
            return StageResult(CODE["TOPIC_AUTHORIZATION_FAILED"])
    # 2. producer fencing at the transaction coordinator
    txns = cluster.txns
    err = txns.share.check_producer(transactional_id, producer_id, producer_epoch)
    if err:
        return StageResult(err, "The producer id/epoch is not the transactional id's current one.")
    # 3. the share-group member
    shares = cluster.shares
    member = shares.member(group_id, member_id)
    if member is None:
        return StageResult(CODE["UNKNOWN_MEMBER_ID"], f"Member {member_id} is not a member of group {group_id}.")
    if member_epoch != member.epoch:
        return StageResult(CODE["STALE_MEMBER_EPOCH"],
                           f"Member epoch {member_epoch} is not the current one ({member.epoch}).")
    # 4. validate every partition on a staged copy: all or nothing
    res = StageResult()
    plans: list[tuple] = []
    failed = False
    for tid, p, batches in requested:
        out = {"ErrorCode": 0, "ErrorMessage": None, "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1}}
        res.partitions[(tid, p)] = out
        topic = cluster.topics.live(tid)
        if topic is None:
            out["ErrorCode"] = CODE["UNKNOWN_TOPIC_ID"]
        elif not 0 <= p < len(topic.partitions):
            out["ErrorCode"] = CODE["UNKNOWN_TOPIC_OR_PARTITION"]
        elif topic.partitions[p].leader != broker:
            log = topic.partitions[p]
            out["ErrorCode"] = CODE["NOT_LEADER_OR_FOLLOWER"]
            out["CurrentLeader"] = {"LeaderId": log.leader, "LeaderEpoch": log.leader_epoch}
        else:
            sp = shares.partitions.get((group_id, tid, p))
            try:
                if sp is None:
                    raise AckError("INVALID_RECORD_STATE", "no record of this partition is in flight for the group")
                plans.append((sp, sp.plan_txn(member_id, batches)))
            except AckError as e:
                out["ErrorCode"], out["ErrorMessage"] = CODE[e.code_name], str(e)
        failed = failed or bool(out["ErrorCode"])
    if failed:
        for out in res.partitions.values():
            if not out["ErrorCode"]:
                out["ErrorCode"] = OPERATION_NOT_ATTEMPTED
                out["ErrorMessage"] = "Not staged: another partition of this request failed (all or nothing)."
        cluster.emit(ev.ShareAckRejected, group=group_id, member=member_id, transactional_id=transactional_id)
        return res
    # 5. register the share-state partition(s) in the transaction
    state_parts = sorted({(SHARE_STATE_TOPIC, _state_partition(cluster, group_id, sp.topic_id, sp.partition))
                          for sp, planned in plans if planned})
    if state_parts:
        err = txns.share.add_state_partitions(transactional_id, producer_id, producer_epoch, state_parts)
        if err:
            return StageResult(err, "Registering the share-state partition in the transaction failed.")
    if cluster.config.share_marker_routing == "participants":      # the kit's suggestion, not KIP-1289
        err = txns.share.add_participants(transactional_id, producer_id, producer_epoch,
                                          [(group_id, sp.topic_id, sp.partition) for sp, planned in plans if planned],
                                          broker=broker)
        if err:
            return StageResult(err, "Registering the share partition in the transaction failed.")
    # 6. stage
    for sp, planned in plans:
        sp.stage(planned, producer_id, producer_epoch)
        res.staged += len(planned)
    cluster.emit(ev.ShareAckStaged, group=group_id, member=member_id, transactional_id=transactional_id,
                 producer_id=producer_id, producer_epoch=producer_epoch, records=res.staged,
                 state_partitions=tuple(state_parts), broker=broker)
    return res


def _leader_of(cluster, sp) -> int | None:
    topic = cluster.topics.live(sp.topic_id)
    if topic is None or not 0 <= sp.partition < len(topic.partitions):
        return None
    return topic.partitions[sp.partition].leader


# size: applies a marker to the staged acknowledgements, one branch per case of the KIP-1289 page, in the page's order
def on_marker(cluster, partition: int, producer_id: int, commit: bool, producer_epoch: int | None = None) -> int:
    """The WriteTxnMarkers hook for __share_group_state-`partition`, on the broker that received
    the marker (that partition's leader): resolve the TX_PENDING records this marker ends. Returns
    how many records moved (0 for a duplicate/stale marker).

    Which share partitions it reaches is config.share_marker_routing (SHARE_MARKER_ROUTINGS):
    "page" (KIP-1289 as written, its page's "Existing RPCs NOT changed": the hook "broadcasts to all
    SharePartition instances on that broker") resolves only the share partitions that broker leads;
    records staged on a share partition led by another broker stay TX_PENDING until their lock
    expires (kip1289.marker_not_colocated). "forward-to-leader" (the kit's suggestion, not the KIP's)
    forwards the marker to each share partition's leader, which resolves its own.
    A share partition whose leader is down (offline) has lost its in-memory TX_PENDING state: the
    marker resolves nothing there (corner case 1). Every MarkerResolved says which broker resolved what, and a
    marker that resolves nothing says why. "participants" (the kit's suggestion): nothing here --
    the coordinator's own markers for the share partitions do it (on_participant_marker)."""
    shares = cluster.__dict__.get("shares")
    if shares is None:
        return 0
    log = cluster.topics.partition(SHARE_STATE_TOPIC, partition)
    receiver = log.leader if log is not None else 0
    routing = cluster.config.share_marker_routing
    if routing == "participants":
        return 0
    by_leader: dict[int | None, list] = {}
    for (gid, tid, p), sp in list(shares.partitions.items()):
        if _state_partition(cluster, gid, tid, p) == partition:
            by_leader.setdefault(_leader_of(cluster, sp), []).append(sp)
    base = dict(partition=partition, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                marker_broker=receiver, routing=routing)
    others = sorted((b for b in by_leader if b != receiver), key=lambda b: (b is None, b or 0))
    unreached = []
    if routing == "page":           # share partitions led elsewhere are not reached
        for b in others:
            for sp in by_leader[b]:
                # the records this marker would have resolved, had it reached them (same epoch filter)
                mine = [o for o in _staged_by(sp, producer_id)
                        if producer_epoch is None or producer_epoch > sp.records[o].staged_epoch]
                if mine:
                    unreached.append(ev.Unreached(
                        group=sp.group_id, topic=sp.topic, partition=sp.partition, offsets=tuple(mine), leader=b,
                        reason=_unreached_reason(sp, mine),
                        staged_state_leader_epoch=sp.records[mine[0]].staged_state_leader_epoch,
                        state_leader_epoch=sp.state_leader_epoch()))
    mine_here = any(_staged_by(sp, producer_id) for sp in by_leader.get(receiver, []))
    moved = _resolve_on(cluster, receiver, by_leader.get(receiver, []), producer_id, producer_epoch, commit,
                        base, via=None,
                        quiet=bool(unreached) and not mine_here if routing == "page"
                        else not by_leader.get(receiver) and bool(others))
    if routing == "forward-to-leader":
        for b in others:
            cluster.emit(ev.MarkerForwarded, partition=partition, marker_broker=receiver, broker=b,
                         share_partitions=_names(by_leader[b]), producer_id=producer_id,
                         producer_epoch=producer_epoch, commit=commit)
            moved += _resolve_on(cluster, b, by_leader[b], producer_id, producer_epoch, commit, base, via=receiver)
    if unreached:
        cluster.emit(ev.MarkerUnreached, broker=receiver, partition=partition, producer_id=producer_id,
                     producer_epoch=producer_epoch, commit=commit, routing=routing, unreached=tuple(unreached))
    return moved


def on_participant_marker(cluster, group_id: str, topic_id, partition: int, producer_id: int, commit: bool,
                          producer_epoch: int | None, *, broker: int) -> int:
    """share_marker_routing "participants" (the kit's suggestion, not KIP-1289): the WriteTxnMarkers
    the transaction coordinator sends for one share participant reaches `broker`, the share
    partition's leader at EndTxn, which resolves the TX_PENDING records `producer_id` staged there.

    Leader change between staging and commit: the marker follows the share partition's CURRENT
    leader. __share_group_state-N's leader does not matter (it only stores the ShareUpdate), so
    the KIP's case 12 is closed: the staging is resolved whatever N's leader epoch now is. If the
    SHARE partition's leader changed, the new leader built its SharePartition from
    __share_group_state, where TX_PENDING is not persisted (it is written as AVAILABLE, corner case
    1): it knows nothing staged, the marker resolves nothing (no-op by state), the records were
    already handed back and are redelivered -- the at-least-once window of corner case 1, which
    this suggestion does not close (persisting TX_PENDING would). Returns how many records moved."""
    shares = cluster.__dict__.get("shares")
    sp = shares.partitions.get((group_id, topic_id, partition)) if shares is not None else None
    base = dict(group=group_id, topic=sp.topic if sp is not None else None, partition=partition,
                producer_id=producer_id, producer_epoch=producer_epoch, commit=commit, broker=broker,
                marker_broker=broker, routing="participants", participant=True)
    if sp is None:
        cluster.emit(ev.MarkerResolved, records=0, missing=True, topic_id=str(topic_id), **base)
        return 0
    moved = [] if sp.offline else sp.resolve_txn(producer_id, producer_epoch, commit, any_state_epoch=True)
    if moved:
        cluster.emit(ev.MarkerResolved, records=len(moved), offsets=tuple(moved), **base)
        return len(moved)
    mine = _staged_by(sp, producer_id)
    if sp.offline:
        why = f"{_offsets(mine)}: its leader is down, the in-memory TX_PENDING state is gone" if mine else ""
    elif mine:
        why = (f"{_offsets(mine)} staged at epoch {sp.records[mine[0]].staged_epoch}, the marker's epoch "
               f"{producer_epoch} is not newer: a marker of an earlier transaction (no-op by epoch)")
    else:
        why = ""
    reason = why or (f"no record is TX_PENDING for producer id {producer_id} (no-op by state; a leader that "
                     "changed since the staging loaded the share partition from __share_group_state, where "
                     "TX_PENDING is not persisted: corner case 1)")
    cluster.emit(ev.MarkerResolved, records=0, reason=reason, **base)
    return 0


def _resolve_on(cluster, broker, sps: list, producer_id: int, producer_epoch, commit: bool, base: dict, via,
                quiet: bool = False) -> int:
    """The hook on `broker`: resolve the share partitions it leads (`sps`), and one MarkerResolved saying so."""
    moved = 0
    for sp in sps:
        if not sp.offline:
            moved += len(sp.resolve_txn(producer_id, producer_epoch, commit))
    if moved:
        cluster.emit(ev.MarkerResolved, broker=broker, records=moved, share_partitions=_names(sps),
                     forwarded_by=via, **base)
    elif not quiet:
        # nothing moved, so nothing changed: why each share partition kept its records, only now
        why = [w for sp in sps if (w := _why_left(sp, producer_id, producer_epoch))]
        reason = "; ".join(why) or f"no record is TX_PENDING for producer id {producer_id} (no-op by state)"
        cluster.emit(ev.MarkerResolved, broker=broker, records=0, share_partitions=_names(sps), reason=reason,
                     forwarded_by=via, **base)
    return moved


def _names(sps: list) -> str:
    return ", ".join(f"{sp.topic}-{sp.partition}" for sp in sps) or "no share partition"


def _unreached_reason(sp, offsets: list[int]) -> str:
    """"leader-change" when __share_group_state-N's leader changed since the staging (the KIP's
    corner case 12: the partitions were co-located when staged), else "not-colocated" (the share
    partition and its state partition had different leaders all along: no window the KIP lists)."""
    r = sp.records[offsets[0]]
    return "leader-change" if r.staged_state_leader_epoch != sp.state_leader_epoch() else "not-colocated"


def _staged_by(sp, producer_id: int) -> list[int]:
    return [o for o, r in sorted(sp.records.items()) if r.state == "TX_PENDING" and r.staged_pid == producer_id]


def _why_left(sp, producer_id: int, producer_epoch: int | None) -> str:
    """Why the records `producer_id` staged on `sp` are still TX_PENDING after its marker ("" if none are)."""
    mine = _staged_by(sp, producer_id)
    if not mine:
        return ""
    if sp.offline:
        return (f"{sp.topic}-{sp.partition} {_offsets(mine)}: its leader is down, the in-memory "
                "TX_PENDING state is gone")
    return _filtered(sp, mine, producer_epoch)


def _offsets(offsets: list[int]) -> str:
    return "@" + ",".join(map(str, offsets))


def _filtered(sp, offsets: list[int], producer_epoch: int | None) -> str:
    """Why records staged by the marker's producer id stayed TX_PENDING (resolve_txn's filters)."""
    r = sp.records[offsets[0]]
    now = sp.state_leader_epoch()
    if r.staged_state_leader_epoch != now:
        return (f"{sp.topic}-{sp.partition} {_offsets(offsets)} staged under share-state leader epoch "
                f"{r.staged_state_leader_epoch}, the leader is now at {now}: the new leader does not know "
                "that TX_PENDING (corner case 12)")
    return (f"{sp.topic}-{sp.partition} {_offsets(offsets)} staged at epoch {r.staged_epoch}, the marker's epoch "
            f"{producer_epoch} is not newer: a marker of an earlier transaction (no-op by epoch)")


def pending(cluster) -> list[tuple]:
    """[(group, topic, partition, offset, staged producer id, staged epoch)] of TX_PENDING records."""
    shares = cluster.__dict__.get("shares")
    out = []
    if shares is None:
        return out
    for sp in shares.partitions.values():
        for o, r in sorted(sp.records.items()):
            if r.state == "TX_PENDING":
                out.append((sp.group_id, sp.topic, sp.partition, o, r.staged_pid, r.staged_epoch))
    return out
