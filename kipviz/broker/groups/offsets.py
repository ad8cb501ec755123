"""Committed offsets: OffsetCommit, TxnOffsetCommit, OffsetFetch, pending transactional offsets
resolved by COMMIT/ABORT markers and DeleteGroups (Kafka:
group-coordinator/src/main/java/org/apache/kafka/coordinator/group/OffsetMetadataManager.java;
deleteGroups is GroupCoordinatorShard.deleteGroups)."""
from __future__ import annotations

from ...schema import events as ev
from ...schema.error_codes import CODE
from ...uuids import ZERO_UUID
from ..tables import classic_group as CG
from .classic import ClassicProtocol
from .metadata import GroupMetadataManager
from .model import (
    INVALID_OFFSET,
    NONE,
    ClassicGroup,
    Committed,
    GroupError,
    java_length,
)


class OffsetMetadataManager:
    """OffsetMetadataManager: offsets committed by groups, plain and transactional. The groups are
    `metadata`'s; a commit from a classic member restarts its session timer (`classic`)."""
    metadata: GroupMetadataManager
    classic: ClassicProtocol

    def __init__(self, cluster, metadata: GroupMetadataManager, classic: ClassicProtocol):
        self.cluster = cluster
        self.metadata = metadata
        self.classic = classic
        self.groups = metadata.groups          # the group table (one dict, shared)
        # offsetsByGroup: group -> (topic name, partition) -> Committed
        self.by_group: dict[str, dict[tuple[str, int], Committed]] = {}
        # pendingTransactionalOffsets per __consumer_offsets partition:
        # (partition, producer id) -> group -> (topic, partition) -> Committed
        self.pending_txn: dict[tuple[int, int], dict[str, dict[tuple[str, int], Committed]]] = {}

    def committed(self, group_id: str, topic: str, partition: int) -> Committed | None:
        """The offset the group committed for the partition, or None."""
        return self.by_group.get(group_id, {}).get((topic, partition))

    def _validate_commit_group(self, g, member_id: str, instance_id, epoch: int, transactional: bool,
                               version: int) -> None:
        """Group.validateOffsetCommit (group-coordinator/.../classic/ClassicGroup.java, .../modern/consumer/ConsumerGroup.java)."""
        if isinstance(g, ClassicGroup):
            if g.state == CG.DEAD:
                raise GroupError("COORDINATOR_NOT_AVAILABLE")
            if epoch < 0 and g.state == CG.EMPTY:
                return
            if epoch >= 0 or member_id or instance_id is not None:
                err = g.validate_member(member_id, instance_id)
                if err:
                    raise GroupError(err)
                if epoch != g.generation:
                    raise GroupError("ILLEGAL_GENERATION")
            elif not transactional and g.state != CG.EMPTY:
                raise GroupError("UNKNOWN_MEMBER_ID")
            if not transactional and g.state == CG.COMPLETING:
                raise GroupError("REBALANCE_IN_PROGRESS")
            return
        if epoch < 0 and not g.members:
            return
        m = g.members.get(member_id)
        if m is None:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {g.group_id}.")
        if not transactional and version < 9:
            raise GroupError("UNSUPPORTED_VERSION", "OffsetCommit version 9 or above must be used by members "
                             "using the consumer group protocol")
        if epoch != m.epoch:
            raise GroupError("STALE_MEMBER_EPOCH", f"The member epoch {epoch} is stale; the current epoch is "
                             f"{m.epoch}.")

    def _commit_group(self, gid: str, epoch: int, transactional: bool, version: int):
        """The group to commit to, or None to create a simple group; raises for a missing group."""
        g = self.groups.get(gid)
        if g is None and self.metadata.share_group(gid) is not None:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")
        if g is None:
            if epoch < 0:
                return None
            if transactional:
                raise GroupError("GROUP_ID_NOT_FOUND" if version >= 6 else "ILLEGAL_GENERATION")
            raise GroupError("GROUP_ID_NOT_FOUND" if version >= 9 else "ILLEGAL_GENERATION")
        return g

    def commit_offsets(self, req, b: dict, topics: list[dict]) -> dict[tuple, int]:
        """OffsetMetadataManager.commitOffset for the topics that passed KafkaApis' checks:
        topics = [{"name", "topic_id", "partitions": [request partition dicts]}]. Returns
        {(name, partition): error}; a group-level error is put on every partition."""
        gid = b["GroupId"]
        epoch = b.get("GenerationIdOrMemberEpoch", -1)
        try:
            g = self._commit_group(gid, epoch, False, req.version)
            if g is not None:
                self._validate_commit_group(g, b.get("MemberId", ""), b.get("GroupInstanceId"), epoch, False,
                                            req.version)
        except GroupError as e:
            return {(t["name"], p["PartitionIndex"]): e.code for t in topics for p in t["partitions"]}
        if g is None:
            g = self.metadata.new_classic_group(gid)
        if isinstance(g, ClassicGroup) and g.state in (CG.STABLE, CG.PREPARING) and b.get("MemberId") in g.members:
            self.classic.reschedule_member(g, g.members[b["MemberId"]])
        retention = b.get("RetentionTimeMs", -1) if 2 <= req.version <= 4 else -1
        expire = -1 if retention == -1 else self.cluster.now + retention
        out = {}
        for t, p, key in self._committable(topics, out):
            self.by_group.setdefault(gid, {})[key] = self._offset_record(gid, t["name"], t["topic_id"], p, expire)
        return out

    def _committable(self, topics: list[dict], out: dict):
        """Each (topic, partition, key) whose metadata fits offset.metadata.max.bytes, with out[key]
        set to NONE; the others get OFFSET_METADATA_TOO_LARGE in `out` and are not yielded."""
        limit = self.cluster.config.offset_metadata_max_bytes
        for t in topics:
            for p in t["partitions"]:
                key = (t["name"], p["PartitionIndex"])
                if java_length(p.get("CommittedMetadata")) > limit:
                    out[key] = CODE["OFFSET_METADATA_TOO_LARGE"]
                    continue
                out[key] = NONE
                yield t, p, key

    def _offset_record(self, gid: str, topic: str, topic_id, p: dict, expire: int, *, producer_id: int = -1,
                       producer_epoch: int = -1) -> Committed:
        """newOffsetCommitRecord: value v1 with an expire timestamp, else v4 (Kafka 4.1+, KAFKA-19141)
        whose tagged topicId is written only when it is not ZERO_UUID."""
        now = self.cluster.now
        leader_epoch = p.get("CommittedLeaderEpoch", -1)
        metadata = p.get("CommittedMetadata") or ""
        version = 1 if expire != -1 else 4
        value = {"offset": p["CommittedOffset"], "leaderEpoch": leader_epoch, "metadata": metadata,
                 "commitTimestamp": now, "expireTimestamp": expire, "topicId": topic_id or ZERO_UUID}
        off = self.metadata.append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p["PartitionIndex"]},
                           value, value_version=version, producer_id=producer_id, producer_epoch=producer_epoch,
                           transactional=producer_id >= 0)
        return Committed(p["CommittedOffset"], leader_epoch, metadata, now, off, topic_id or ZERO_UUID, expire)

    def commit_transactional_offsets(self, req, b: dict, topics: list[dict]) -> dict[tuple, int]:
        """OffsetMetadataManager.commitTransactionalOffset (+ the KIP-890 verification first)."""
        gid = b["GroupId"]
        epoch = b.get("GenerationIdOrMemberEpoch", -1)
        everything = [(t["name"], p["PartitionIndex"]) for t in topics for p in t["partitions"]]
        err = self._verify_transaction(b, req.version)
        if err:
            return {k: err for k in everything}
        try:
            g = self._commit_group(gid, epoch, True, req.version)
            if g is not None:
                try:
                    self._validate_commit_group(g, b.get("MemberId", ""), b.get("GroupInstanceId"), epoch, True,
                                                req.version)
                except GroupError as e:
                    if e.name == "STALE_MEMBER_EPOCH" and req.version < 6:
                        raise GroupError("ILLEGAL_GENERATION") from None    # KIP-1319: mapped before v6
                    raise
        except GroupError as e:
            return {k: e.code for k in everything}
        if g is None:
            g = self.metadata.new_classic_group(gid)
        pid, pepoch = b["ProducerId"], b["ProducerEpoch"]
        part = self.metadata.partition_for(gid)
        out = {}
        for t, p, key in self._committable(topics, out):
            # KIP-1319: the real topic id at v6; Uuid.ZERO_UUID (not written) on the v0-5 path
            tid = t["topic_id"] if req.version >= 6 else ZERO_UUID
            c = self._offset_record(gid, t["name"], tid, p, -1, producer_id=pid, producer_epoch=pepoch)
            self.pending_txn.setdefault((part, pid), {}).setdefault(gid, {})[key] = c
        if any(v == NONE for v in out.values()):
            self.cluster.emit(ev.OffsetsStaged, group=gid, producer_id=pid, partition=part)
        return out

    def _verify_transaction(self, b: dict, version: int) -> int:
        """KIP-890 verification with the transaction coordinator (cluster.txns)."""
        try:
            txns = self.cluster.txns
        except (ImportError, AttributeError):
            return NONE          # HOOK: no transaction coordinator in this build -> treated as verified
        verify = getattr(txns, "verify_txn_offset_commit", None)
        if verify is None:
            return NONE
        return verify(b["TransactionalId"], b["ProducerId"], b["ProducerEpoch"], b["GroupId"], version)

    def on_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """replayEndTransactionMarker: the transaction coordinator wrote a COMMIT/ABORT marker for
        `producer_id` to __consumer_offsets partition `partition`."""
        pending = self.pending_txn.pop((partition, producer_id), None)
        if pending is None:
            return
        for gid, offs in pending.items():
            for key, c in offs.items():
                if not commit:
                    continue
                cur = self.by_group.get(gid, {}).get(key)
                if cur is None or c.record_offset > cur.record_offset:
                    self.by_group.setdefault(gid, {})[key] = c
                else:
                    self.cluster.emit(ev.StaleTransactionalOffset, group=gid, topic=key[0], partition=key[1],
                                      offset=c.offset, committed_offset=cur.offset, record_offset=c.record_offset,
                                      committed_record_offset=cur.record_offset)
            self.cluster.emit(ev.OffsetsResolved, group=gid, producer_id=producer_id, commit=commit,
                              partitions=tuple(sorted(offs)))

    def on_partitions_deleted(self, topic: str, partitions: int) -> None:
        """OffsetMetadataManager.onPartitionsDeleted (KAFKA-16168): a topic was deleted, so every
        group's committed and pending transactional offsets for its partitions get an OffsetCommit
        tombstone (one per offset found, as Kafka appends them). Replaying a tombstone removes the
        committed offset and the pending ones of the group's open transactions."""
        doomed = set(range(partitions))
        found: list[tuple[str, int]] = []
        for gid in sorted(self.by_group):
            found += [(gid, p) for (t, p) in self.by_group[gid] if t == topic and p in doomed]
        for (_, _), groups in self.pending_txn.items():
            for gid, offs in groups.items():
                found += [(gid, p) for (t, p) in offs if t == topic and p in doomed]
        for gid, p in found:
            self.metadata.append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p}, None)
            self.by_group.get(gid, {}).pop((topic, p), None)
            for groups in self.pending_txn.values():
                groups.get(gid, {}).pop((topic, p), None)
        if found:
            self.cluster.emit(ev.DeletedTopicOffsetsRemoved, topic=topic, removed=len(found),
                              offsets=tuple(sorted(set(found))))

    def delete_groups(self, group_ids: list[str]) -> list[dict]:
        """GroupCoordinatorShard.deleteGroups: per group, validateDeleteGroup (a missing or Dead group
        is GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP), then OffsetMetadataManager
        .deleteAllOffsets (a tombstone per committed offset, and per pending transactional offset not
        also committed) and the group's own tombstones. A group known only by its offsets counts as
        Empty (Kafka would hold it as an Empty classic group)."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None and gid not in self.by_group:
                out.append({"GroupId": gid, "ErrorCode": CODE["GROUP_ID_NOT_FOUND"],
                            "ErrorMessage": f"Group {gid} not found."})
                continue
            if g is not None and g.state != "Empty":
                out.append({"GroupId": gid, "ErrorCode": CODE["NON_EMPTY_GROUP"],
                            "ErrorMessage": f"Group {gid} is not empty (state {g.state})."})
                continue
            keys = list(self.by_group.get(gid, {}))
            for groups in self.pending_txn.values():
                keys += [k for k in groups.get(gid, {}) if k not in keys]
            for topic, p in keys:
                self.metadata.append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p}, None)
            self.by_group.pop(gid, None)
            for groups in self.pending_txn.values():
                groups.pop(gid, None)
            if g is not None:
                self.metadata.remove_group(g, "deleted")
            self.cluster.emit(ev.GroupDeleted, group=gid, tombstones=len(keys),
                              partition=self.metadata.partition_for(gid))
            out.append({"GroupId": gid, "ErrorCode": 0, "ErrorMessage": None})
        return out

    def delete_offsets(self, gid: str, topics: dict[str, list[int]], subscribed) -> dict[str, dict[int, int]]:
        """OffsetMetadataManager.deleteOffsets (OffsetDelete, after KafkaApis' checks): validateOffsetDelete
        (a missing or Dead group GROUP_ID_NOT_FOUND, a classic group with members that does not use
        the consumer protocol NON_EMPTY_GROUP: GroupError), then per topic GROUP_SUBSCRIBED_TO_TOPIC
        while `subscribed(group, topic)`, else a tombstone for each committed or pending offset.
        Returns {topic: {partition: error code}}. A group known only by its offsets counts as Empty."""
        g = self.groups.get(gid)
        if g is None and gid not in self.by_group:
            self.metadata.group(gid)                      # raises GROUP_ID_NOT_FOUND
        if isinstance(g, ClassicGroup) and g.state == CG.DEAD:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is in dead state.")
        if isinstance(g, ClassicGroup) and g.state in (CG.STABLE, CG.PREPARING, CG.COMPLETING) \
                and g.protocol_type != "consumer":
            raise GroupError("NON_EMPTY_GROUP")
        out: dict[str, dict[int, int]] = {}
        gone = 0
        for topic, partitions in topics.items():
            if subscribed(g, topic):
                out[topic] = dict.fromkeys(partitions, CODE["GROUP_SUBSCRIBED_TO_TOPIC"])
                continue
            out[topic] = dict.fromkeys(partitions, NONE)
            for p in partitions:
                if (topic, p) in self.by_group.get(gid, {}) or self.has_pending(gid, topic, p):
                    self.metadata.append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p}, None)
                    self.by_group.get(gid, {}).pop((topic, p), None)
                    for groups in self.pending_txn.values():
                        groups.get(gid, {}).pop((topic, p), None)
                    gone += 1
        self.cluster.emit(ev.OffsetsDeleted, group=gid, removed=gone, partition=self.metadata.partition_for(gid))
        return out

    def has_pending(self, gid: str, topic: str, partition: int) -> bool:
        """Is a transactional offset of the group for the partition waiting for its marker?"""
        part = self.metadata.partition_for(gid)
        return any(gid in groups and (topic, partition) in groups[gid]
                   for (pp, _), groups in self.pending_txn.items() if pp == part)

    def fetch_offsets(self, gid: str, member_id, member_epoch: int, topics, require_stable: bool):
        """OffsetMetadataManager.fetchOffsets / fetchAllOffsets. topics = [(name, [partitions])] or None
        for all. Returns (error, [(name, [partition dicts])])."""
        fail_all = False
        g = self.groups.get(gid)
        try:
            if g is None:
                raise GroupError("GROUP_ID_NOT_FOUND")
            if isinstance(g, ClassicGroup):
                if g.state == CG.DEAD:
                    raise GroupError("GROUP_ID_NOT_FOUND")
            elif not (member_id is None and member_epoch < 0):
                m = g.members.get(member_id)
                if m is None:
                    return CODE["UNKNOWN_MEMBER_ID"], []
                if member_epoch != m.epoch:
                    return CODE["STALE_MEMBER_EPOCH"], []
        except GroupError:
            fail_all = True
        offs = {} if fail_all else self.by_group.get(gid, {})

        def part(name, p):
            if require_stable and self.has_pending(gid, name, p):
                return {"PartitionIndex": p, "CommittedOffset": INVALID_OFFSET, "CommittedLeaderEpoch": -1,
                        "Metadata": "", "ErrorCode": CODE["UNSTABLE_OFFSET_COMMIT"]}
            c = offs.get((name, p))
            if c is None:
                return {"PartitionIndex": p, "CommittedOffset": INVALID_OFFSET, "CommittedLeaderEpoch": -1,
                        "Metadata": "", "ErrorCode": NONE}
            return {"PartitionIndex": p, "CommittedOffset": c.offset, "CommittedLeaderEpoch": c.leader_epoch,
                    "Metadata": c.metadata, "ErrorCode": NONE}
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for (name, p) in offs:
                by_topic.setdefault(name, []).append(p)
            return NONE, [(name, [part(name, p) for p in sorted(ps)]) for name, ps in sorted(by_topic.items())]
        return NONE, [(name, [part(name, p) for p in ps]) for name, ps in topics]
