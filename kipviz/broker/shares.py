"""Share groups (KIP-932): membership, share sessions and the share coordinator's persisted state.

* Membership (ShareGroupHeartbeat v1, group-coordinator/.../modern/share): the client makes up its
  member id (v1) and joins at epoch 0 with SubscribedTopicNames; a join, a leave (epoch -1) or a
  changed subscription bumps the group epoch; share members have nothing to revoke, so a member
  moves to the new epoch at its next heartbeat. Assignment: every partition of every subscribed
  topic to every member (share groups allow many members per partition). A member that does not
  heartbeat within group.share.session.timeout.ms (45000) is removed. Leaving (or being removed)
  releases the records it holds (SharePartition.releaseAcquiredRecords).
* Share sessions (SharePartitionManager / ShareSessionCache): every broker keeps its own cache
  (server/.../share/session/ShareSessionCache.java, one per broker's SharePartitionManager), keyed
  by ShareSessionKey(group, member): here (group, member, broker). A client fetching from two
  leaders has two sessions with their own epochs. Epoch 0 opens one, -1 (FINAL) closes it and
  releases the member's records on that broker's partitions, otherwise the epoch must be the next
  one (+1 per request). The connection's disconnect removes its sessions too; leaving the group
  does not (ShareSessionCache).
* Persisted state: every change writes a ShareUpdate (record type 1) to __share_group_state at
  share_coordinator_partition(group, topic_id, partition); the first write of a share partition,
  and every share.coordinator.snapshot.update.records.per.snapshot (500) updates, is a
  ShareSnapshot (type 0). Values use the Kafka 4.1+ layouts (ShareSnapshotValueKafka41, ...).
* Pruning (when Config.share_state_prune_interval_ms is set; `kipviz serve` sets it): the state
  topic is cleanup.policy=delete, not compacted (ShareCoordinatorService.shareGroupStateTopicConfigs,
  "as defined in KIP-932"), and bounded by the coordinator itself. Each state partition tracks the
  offset of every share partition's latest ShareSnapshot (ShareCoordinatorShard.handleShareSnapshot
  -> ShareCoordinatorOffsetsManager.updateState); everything below the smallest of them is
  redundant (a later snapshot replaces it: lastRedundantOffset). Every
  share.coordinator.state.topic.prune.interval.ms the service's record-pruning task asks each shard
  for its lastRedundantOffset and calls PartitionWriter.deleteRecords(tp, offset), which moves the
  log start up (kipviz.broker.retention.move_log_start, the same path as retention). A share
  partition nobody acknowledges on would pin that offset forever, so every
  share.coordinator.cold.partition.snapshot.interval.ms the shard writes a fresh ShareSnapshot for
  each share partition whose latest snapshot is older than that (snapshotColdPartitions; a
  ShareUpdate does not count as recent). Sources: share-coordinator/src/main/java/org/apache/kafka/
  coordinator/share/{ShareCoordinatorService,ShareCoordinatorShard,ShareCoordinatorOffsetsManager}.java,
  server-common/.../config/ShareCoordinatorConfig.java (Kafka 4.1+). The kit's simplification: the
  two timers share the prune interval's period (Kafka's run independently; both default 5 min)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..records import encode_internal, share_coordinator_partition
from ..schema import events as ev
from ..schema.topics import SHARE_GROUP_STATE
from ..uuids import ZERO_UUID
from .share_partition import SharePartition

SHARE_STATE_TOPIC = SHARE_GROUP_STATE
UPDATES_PER_SNAPSHOT = 500


class ShareGroupError(Exception):
    def __init__(self, code_name: str, message: str | None = None):
        super().__init__(message or code_name)
        self.code_name = code_name


@dataclass
class ShareMember:
    member_id: str
    epoch: int
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    subscribed: list[str] = field(default_factory=list)
    timer: int | None = None


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


class ShareCoordinator:
    def __init__(self, cluster):
        self.cluster = cluster
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[tuple, SharePartition] = {}      # (group, topic_id, partition)
        self.sessions: dict[tuple[str, str, int], dict] = {}   # (group, member, broker) -> {"epoch", "parts"}
        self._updates: dict[tuple, int] = {}
        # ShareCoordinatorOffsetsManager, one per state partition: share partition key -> offset of
        # its latest ShareSnapshot; and the key's latest snapshot's write time (cold snapshots)
        self.snapshot_offsets: dict[int, dict[tuple, int]] = {}
        self._snapshot_at: dict[tuple, int] = {}

    # ---- ListGroups / describe ------------------------------------------------------------------
    def listed_groups(self) -> list[dict]:
        return [{"GroupId": g.group_id, "GroupState": g.state, "ProtocolType": "share"}
                for g in self.groups.values()]

    def assignment(self, member: ShareMember) -> list[tuple]:
        out = []
        for name in sorted(set(member.subscribed)):
            t = self.cluster.topics.get(name)
            if t is not None and not t.internal:
                out.append((t.topic_id, name, list(range(len(t.partitions)))))
        return out

    # ---- membership -----------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, epoch: int, subscribed, rack_id, client: str) -> dict:
        other = self.cluster.__dict__.get("groups")
        if other is not None and group_id in getattr(other, "groups", {}):
            raise ShareGroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a share group.")
        if not member_id:
            raise ShareGroupError("INVALID_REQUEST", "MemberId can't be empty.")
        g = self.groups.get(group_id)
        if epoch == -1:
            if g is None or member_id not in g.members:
                raise ShareGroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {group_id}.")
            self.remove_member(g, member_id, "left the group")
            return {"MemberId": member_id, "MemberEpoch": -1, "HeartbeatIntervalMs": 0, "Assignment": None}
        if epoch == 0:
            if not subscribed:
                raise ShareGroupError("INVALID_REQUEST", "SubscribedTopicNames must be set in first request.")
            if g is None:
                g = self.groups[group_id] = ShareGroup(group_id)
                self.cluster.emit(ev.ShareGroupCreated, group=group_id)
            m = g.members.get(member_id)
            if m is None:
                g.epoch += 1
                m = g.members[member_id] = ShareMember(member_id, g.epoch, client, "/127.0.0.1", rack_id,
                                                       list(subscribed))
                self.cluster.emit(ev.ShareMemberJoined, group=group_id, member=member_id, group_epoch=g.epoch)
        else:
            m = g.members.get(member_id) if g is not None else None
            if m is None:
                raise ShareGroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {group_id}.")
            if epoch != m.epoch:
                raise ShareGroupError("FENCED_MEMBER_EPOCH",
                                      f"The share group member has a smaller or larger member epoch ({epoch}) "
                                      f"than the one known by the group coordinator ({m.epoch}).")
            if subscribed is not None and sorted(subscribed) != sorted(m.subscribed):
                m.subscribed = list(subscribed)
                g.epoch += 1
        m.epoch = g.epoch
        self._arm(g, m)
        return {"MemberId": member_id, "MemberEpoch": m.epoch, "HeartbeatIntervalMs": self.cluster.config.group_share_heartbeat_interval_ms,
                "Assignment": {"TopicPartitions": [{"TopicId": tid, "Partitions": ps}
                                                   for tid, _, ps in self.assignment(m)]}}

    def _arm(self, g: ShareGroup, m: ShareMember) -> None:
        clock = self.cluster.clock
        if m.timer is not None:
            clock.cancel(m.timer)

        def expire():
            if g.members.get(m.member_id) is m:
                m.timer = None
                self.remove_member(g, m.member_id, "session timed out")
        m.timer = clock.schedule(self.cluster.now + self.cluster.config.group_share_session_timeout_ms, expire)

    def remove_member(self, g: ShareGroup, member_id: str, why: str) -> None:
        m = g.members.pop(member_id)
        if m.timer is not None:
            self.cluster.clock.cancel(m.timer)
        g.epoch += 1
        self.cluster.emit(ev.ShareMemberRemoved, group=g.group_id, member=member_id, group_epoch=g.epoch, why=why)
        # the brokers' share sessions stay: only the client's final epoch (-1) or its connection's
        # disconnect removes one (server/.../share/session/ShareSessionCache.java: remove,
        # ClientConnectionDisconnectListener); the group coordinator's leave does not reach them,
        # so a closing consumer's last ShareAcknowledge (epoch -1, after its leave) finds its session
        self.release(g.group_id, member_id)

    def release(self, group_id: str, member_id: str, broker: int | None = None) -> None:
        """Release the member's acquired records (on `broker`'s share partitions only, for one
        broker's session close)."""
        for (gid, tid, p), sp in list(self.partitions.items()):
            if gid == group_id and (broker is None or self._leader(tid, p) == broker):
                sp.release_member(member_id)

    def _leader(self, tid, p: int) -> int | None:
        topic = self.cluster.topics.live(tid)
        if topic is None or not 0 <= p < len(topic.partitions):
            return None
        return topic.partitions[p].leader

    def member(self, group_id: str, member_id: str) -> ShareMember | None:
        g = self.groups.get(group_id)
        return g.members.get(member_id) if g is not None else None

    # ---- share partitions -----------------------------------------------------------------------
    def share_partition(self, group_id: str, topic, partition: int) -> SharePartition:
        k = (group_id, topic.topic_id, partition)
        sp = self.partitions.get(k)
        if sp is None:
            sp = self.partitions[k] = SharePartition(self.cluster, group_id, topic.name, topic.topic_id, partition)
            # SharePartition.startOffsetDuringInitialization: with no persisted state the start
            # offset follows share.auto.offset.reset (GroupConfig: default "latest") -- a new share
            # group does not see records written before it existed
            if self.cluster.config.share_offset_reset(group_id) == "latest":
                log = topic.partitions[partition]
                sp.spso = sp.end = log.log_end_offset
            self.persist(sp, [])       # InitializeShareGroupState: the first snapshot
        return sp

    def persist(self, sp: SharePartition, batches: list[dict]) -> None:
        """WriteShareGroupState -> one ShareSnapshot or ShareUpdate record in __share_group_state."""
        k = (sp.group_id, sp.topic_id, sp.partition)
        n = self._updates.get(k)
        p = share_coordinator_partition(sp.group_id, sp.topic_id, sp.partition,
                                        self.cluster.config.share_state_topic_partitions)
        key = {"GroupId": sp.group_id, "TopicId": sp.topic_id, "Partition": sp.partition}
        log = self.cluster.topics.partition(SHARE_STATE_TOPIC, p)
        leader_epoch = log.leader_epoch if log is not None else 0
        if n is None or n >= UPDATES_PER_SNAPSHOT:
            self._updates[k] = 0
            value = {"SnapshotEpoch": 0 if n is None else 1, "StateEpoch": sp.state_epoch,
                     "LeaderEpoch": leader_epoch, "StartOffset": sp.spso, "CreateTimestamp": self.cluster.now,
                     "WriteTimestamp": self.cluster.now, "StateBatches": sp.state_batches()}
            kind = "ShareSnapshot"
        else:
            self._updates[k] = n + 1
            value = {"SnapshotEpoch": 0, "LeaderEpoch": leader_epoch, "StartOffset": sp.spso,
                     "StateBatches": batches}
            kind = "ShareUpdate"
        kb, vb = encode_internal(kind, key, value)
        offset = self.cluster.append_internal(SHARE_STATE_TOPIC, p, kb, vb,
                                              {"type": kind, "key": {**key, "TopicId": str(sp.topic_id)},
                                               "value": value})
        if kind == "ShareSnapshot":
            self.snapshot_offsets.setdefault(p, {})[k] = offset
            self._snapshot_at[k] = self.cluster.now

    # ---- the state topic's upkeep (ShareCoordinatorService's timers) ---------------------------
    def last_redundant_offset(self, state_partition: int) -> int | None:
        """ShareCoordinatorOffsetsManager.lastRedundantOffset: the smallest latest-snapshot offset of
        the share partitions kept in `state_partition`; the records below it are redundant. None
        when nothing is (Kafka's Optional.empty for 0 or no keys)."""
        offsets = self.snapshot_offsets.get(state_partition)
        low = min(offsets.values(), default=0) if offsets else 0
        return low if low > 0 else None

    def prune_state_topic(self) -> int:
        """The record-pruning task: DeleteRecords below each state partition's lastRedundantOffset.
        Returns the number of batches deleted."""
        from .retention import move_log_start
        total = 0
        for p in sorted(self.snapshot_offsets):
            upto = self.last_redundant_offset(p)
            log = self.cluster.topics.partition(SHARE_STATE_TOPIC, p)
            if upto is None or log is None or upto <= log.log_start_offset:
                continue
            total += move_log_start(self.cluster, SHARE_STATE_TOPIC, log, upto,
                                    "share coordinator record pruning", "lastRedundantOffset")
        return total

    def snapshot_cold_partitions(self) -> int:
        """The cold-partition snapshot task: a new ShareSnapshot (same state) for each share
        partition whose latest snapshot is share.coordinator.cold.partition.snapshot.interval.ms old
        or older, so an idle share partition does not hold back pruning. Returns how many."""
        interval = self.cluster.config.share_cold_partition_snapshot_interval_ms
        n = 0
        for k, sp in list(self.partitions.items()):
            at = self._snapshot_at.get(k)
            if sp.offline or at is None or self.cluster.now - at < interval:
                continue
            self._updates[k] = UPDATES_PER_SNAPSHOT      # the next write is a snapshot
            self.persist(sp, [])
            n += 1
        return n

    # ---- KIP-932's admin (AlterShareGroupOffsets / DeleteShareGroupOffsets) ----------------------
    def initialize_state(self, group_id: str, topic, partition: int, start_offset: int) -> SharePartition:
        """InitializeShareGroupState, as AlterShareGroupOffsets asks the persister: the share
        partition starts again at `start_offset`, with a new state epoch and nothing in flight; a
        ShareSnapshot records it."""
        sp = self.share_partition(group_id, topic, partition)
        sp.records.clear()
        sp.spso = sp.end = start_offset
        sp.state_epoch += 1
        self._updates[(group_id, topic.topic_id, partition)] = UPDATES_PER_SNAPSHOT   # a snapshot
        self.persist(sp, [])
        return sp

    def delete_state(self, group_id: str, topic) -> list[int]:
        """DeleteShareGroupState, as DeleteShareGroupOffsets asks the persister: the group's state
        for every partition of `topic` goes (a ShareSnapshot tombstone each). Returns the partitions."""
        gone = []
        for k in [k for k in self.partitions if k[0] == group_id and k[1] == topic.topic_id]:
            self.partitions.pop(k)
            self._updates.pop(k, None)
            p = share_coordinator_partition(group_id, topic.topic_id, k[2], self.cluster.config.share_state_topic_partitions)
            self.snapshot_offsets.get(p, {}).pop(k, None)
            key = {"GroupId": group_id, "TopicId": topic.topic_id, "Partition": k[2]}
            kb, vb = encode_internal("ShareSnapshot", key, None)
            self.cluster.append_internal(SHARE_STATE_TOPIC, p, kb, vb, {"type": "ShareSnapshot", "key": {
                **key, "TopicId": str(topic.topic_id)}, "value": None})
            gone.append(k[2])
        return sorted(gone)

    # ---- share sessions -------------------------------------------------------------------------
    def session_step(self, group_id: str, member_id: str, epoch: int, *, opening_allowed: bool,
                     broker: int = 0, client: str | None = None) -> dict | None:
        """Check and advance a share session epoch on `broker`. Returns the session. `client`: the
        connection that opened it (its disconnect removes the session)."""
        k = (group_id, member_id, broker)
        s = self.sessions.get(k)
        if epoch == 0:
            if not opening_allowed:
                raise ShareGroupError("INVALID_SHARE_SESSION_EPOCH", "ShareAcknowledge cannot open a share session.")
            if self.member(group_id, member_id) is None:
                raise ShareGroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {group_id}.")
            s = self.sessions[k] = {"epoch": 1, "parts": [], "client": client}
            return s
        if s is None:
            raise ShareGroupError("SHARE_SESSION_NOT_FOUND", f"Share session for {member_id} not found.")
        if epoch == -1:
            return s
        if epoch != s["epoch"]:
            raise ShareGroupError("INVALID_SHARE_SESSION_EPOCH",
                                  f"Share session epoch {epoch} != expected {s['epoch']}.")
        s["epoch"] += 1
        return s

    def on_disconnect(self, client: str, broker: int) -> None:
        """A connection closed: the sessions it opened on `broker` go and their members' records
        there are released (ShareSessionCache.ClientConnectionDisconnectListener ->
        SharePartitionManager's ShareGroupListener.onMemberLeave)."""
        for k in [k for k, s in self.sessions.items() if k[2] == broker and s.get("client") == client]:
            self.close_session(k[0], k[1], broker)

    def close_session(self, group_id: str, member_id: str, broker: int = 0) -> None:
        self.sessions.pop((group_id, member_id, broker), None)
        self.release(group_id, member_id, broker)

    # ---- broker crash (scenario faults) ---------------------------------------------------------
    def _led_by(self, broker: int) -> list[SharePartition]:
        out = []
        for (_, tid, p), sp in self.partitions.items():
            topic = self.cluster.topics.live(tid)
            if topic is not None and 0 <= p < len(topic.partitions) and topic.partitions[p].leader == broker:
                out.append(sp)
        return out

    def on_broker_crash(self, broker: int) -> None:
        """The share partitions this broker leads lose their in-memory state (lock timers too)."""
        for sp in self._led_by(broker):
            sp.offline = True

    def on_broker_restart(self, broker: int) -> None:
        """...and reload it from __share_group_state on restart (SharePartition.reload_from_state)."""
        for sp in self._led_by(broker):
            if sp.offline:
                sp.reload_from_state(f"broker {broker} restarted")

    # ---- KIP-1289 -------------------------------------------------------------------------------
    def on_marker(self, partition, producer_id: int, commit: bool, producer_epoch: int | None = None) -> None:
        """KIP-1289 (proposed): a WriteTxnMarkers COMMIT/ABORT on __share_group_state-`partition`
        resolves the TX_PENDING records staged by (producer_id, an older epoch) -- the
        txn-commit-accept / txn-commit-reject / txn-abort rows of tables/share_record.py. See
        kipviz/broker/share_txn.py."""
        from . import share_txn
        share_txn.on_marker(self.cluster, partition, producer_id, commit, producer_epoch)


__all__ = ["ShareCoordinator", "ShareGroupError", "ZERO_UUID"]
