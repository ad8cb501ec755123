"""Group metadata shared by both protocols: the group table, timers, records written to
__consumer_offsets, delayed responses, ListGroups and DescribeGroups (Kafka:
group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java,
its group(), listGroups and describeGroups)."""
from __future__ import annotations

from ...records import decode_internal, encode_internal
from ...records.internal import definitions as record_definitions
from ...schema import events as ev
from ...schema.coordinator_type import CoordinatorType
from ...schema.error_codes import CODE
from ...schema.topics import CONSUMER_OFFSETS
from ..machine import Machine
from ..tables import classic_group as CG
from .model import (
    CONSUMER_PROTOCOL_TYPE,
    NONE,
    ClassicGroup,
    ConsumerGroup,
    GroupError,
    shape,
    shape_record,
)


class GroupMetadataManager:
    """The coordinator's group table and the helpers both protocols and the offsets use: records
    written to __consumer_offsets, timers, delayed responses."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        self.outbox: list[tuple[str, int, bytes]] = []      # (client, broker, frame) of delayed responses

    # ---- delayed responses ------------------------------------------------------------------
    def complete(self, req, message: str, body: dict) -> None:
        """Answer a parked request now (emits ResponseSent and queues the frame)."""
        body = shape(req.api + "Response", req.version, body)   # handlers/groups.finish, without importing it
        frame = self.cluster.complete(req, body)
        self.outbox.append((req.client, req.broker, frame))

    def take_responses(self, client: str | None = None) -> list[bytes]:
        """Frames of delayed responses (JoinGroup/SyncGroup) completed since the last call, in order."""
        out = [f for c, _, f in self.outbox if client is None or c == client]
        self.outbox = [x for x in self.outbox if not (client is None or x[0] == client)]
        return out

    # ---- helpers --------------------------------------------------------------------------------
    def machine(self, table, key: str, state: str | None = None) -> Machine:
        """A state machine of `table` for instance `key`, recording its moves on the cluster."""
        return Machine(table, key, self.cluster.transition, state=state)

    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition holding the group (abs(groupId.hashCode) % partitions)."""
        return self.cluster.coordinator_partition(CoordinatorType.GROUP, group_id)[1]

    def is_coordinator(self, group_id: str, broker: int) -> bool:
        """Does `broker` lead the group's __consumer_offsets partition?"""
        return self.cluster.coordinator_broker(CoordinatorType.GROUP, group_id) == broker

    def append(self, group_id: str, record: str, key: dict, value: dict | None, *, value_version: int | None = None,
                producer_id: int = -1, producer_epoch: int = -1, transactional: bool = False) -> int:
        """Write a coordinator record (`value` None: a tombstone) to the group's partition; its offset."""
        if value is not None:
            spec = {"OffsetCommit": "OffsetCommitValue"}.get(record, record + "Value")
            v = value_version if value_version is not None else record_definitions()[spec].valid.hi
            value = shape_record(spec, v, value)
        kb, vb = encode_internal(record, key, value, value_version=value_version)
        decoded = decode_internal(kb, vb, CONSUMER_OFFSETS)
        topic, p = self.cluster.coordinator_partition(CoordinatorType.GROUP, group_id)
        return self.cluster.append_internal(topic, p, kb, vb, decoded, producer_id=producer_id,
                                            producer_epoch=producer_epoch, transactional=transactional)

    def schedule(self, delay_ms: int, action) -> int:
        """A timer on the virtual clock; a model bug inside it is recorded like one inside handle()."""
        def run():
            try:
                action()
            except Exception as e:  # noqa: BLE001 - cluster.advance must not raise for a model bug
                self.cluster.internal_errors.append(f"group coordinator timer: {type(e).__name__}: {e}")
        return self.cluster.clock.schedule(self.cluster.now + max(0, delay_ms), run)

    def cancel(self, tid: int | None) -> None:
        """Cancel a timer of schedule() (None: nothing to cancel)."""
        if tid is not None:
            self.cluster.clock.cancel(tid)

    def share_group(self, group_id: str):
        """A share group of the same id (kipviz/broker/shares.py), if that component exists and
        exposes `groups` (a dict by group id)."""
        shares = self.cluster.__dict__.get("shares")
        groups = getattr(shares, "groups", None)
        return groups.get(group_id) if isinstance(groups, dict) else None

    def group(self, group_id: str):
        """GroupMetadataManager.group(): the live group or GroupIdNotFoundException."""
        g = self.groups.get(group_id)
        if g is None:
            if self.share_group(group_id) is not None:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a consumer group.")
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} not found.")
        return g

    def group_state(self, group_id: str) -> str | None:
        """The group's state name, or None when the coordinator holds no such group."""
        g = self.groups.get(group_id)
        return None if g is None else g.state

    def new_classic_group(self, group_id: str) -> ClassicGroup:
        """A new Empty classic group in the table."""
        g = ClassicGroup(group_id, self.machine(CG.TABLE, group_id), self.cluster.now, state_ts=self.cluster.now)
        self.groups[group_id] = g
        self.cluster.emit(ev.GroupCreated, group=group_id, group_type="classic",
                          partition=self.partition_for(group_id))
        return g

    def remove_group(self, g, cause: str) -> None:
        """The group leaves the coordinator (converted to the other type, or deleted): -> Dead,
        tombstones. `cause`: a key of events.GroupRemoved.WHY."""
        if isinstance(g, ClassicGroup):
            g.machine.fire("group-removed")
            self.append(g.group_id, "GroupMetadata", {"group": g.group_id}, None)
            self.cancel(g.join_timer)
            self.cancel(g.sync_timer)
        else:
            g.machine.fire("group-removed")
            self.append(g.group_id, "ConsumerGroupTargetAssignmentMetadata", {"GroupId": g.group_id}, None)
            self.append(g.group_id, "ConsumerGroupMetadata", {"GroupId": g.group_id}, None)
        del self.groups[g.group_id]
        self.cluster.emit(ev.GroupRemoved, group=g.group_id, cause=cause)

    # =============================================================================================
    # listing and describing
    # =============================================================================================
    def list_groups(self, states: list[str], types: list[str]) -> list[dict]:
        """GroupMetadataManager.listGroups: case-insensitive state and type filters."""
        want_states = {s.strip().lower() for s in states}
        want_types = {t.strip().lower() for t in types}
        out = []
        for g in self.groups.values():
            if g.state == "Dead":
                continue
            if want_states and g.state.lower() not in want_states:
                continue
            if want_types and g.type not in want_types:
                continue
            ptype = (g.protocol_type or "") if isinstance(g, ClassicGroup) else CONSUMER_PROTOCOL_TYPE
            out.append({"GroupId": g.group_id, "ProtocolType": ptype, "GroupState": g.state, "GroupType": g.type})
        shares = self.cluster.__dict__.get("shares")
        listed = getattr(shares, "listed_groups", None)
        if callable(listed):
            for s in listed():
                if want_states and str(s.get("GroupState", "")).lower() not in want_states:
                    continue
                if want_types and "share" not in want_types:
                    continue
                out.append({"GroupId": s["GroupId"], "ProtocolType": s.get("ProtocolType", "share"),
                            "GroupState": s.get("GroupState", ""), "GroupType": "share"})
        return out

    def describe_groups(self, group_ids: list[str], version: int) -> list[dict]:
        """GroupMetadataManager.describeGroups (classic groups only; KIP-1043 errors from v6)."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if not isinstance(g, ClassicGroup):
                msg = f"Group {gid} not found." if g is None and self.share_group(gid) is None \
                    else f"Group {gid} is not a classic group."
                d = {"GroupId": gid, "GroupState": "Dead", "ErrorCode": NONE, "ProtocolType": "", "ProtocolData": ""}
                if version >= 6:
                    d.update(ErrorCode=CODE["GROUP_ID_NOT_FOUND"], ErrorMessage=msg)
                out.append(d)
                continue
            stable = g.state == CG.STABLE
            members = [{"MemberId": m.member_id, "GroupInstanceId": m.instance_id, "ClientId": m.client_id,
                        "ClientHost": m.client_host,
                        "MemberMetadata": m.metadata(g.protocol_name) if stable else b"",
                        "MemberAssignment": m.assignment if stable else b""} for m in g.members.values()]
            out.append({"GroupId": gid, "ErrorCode": NONE, "GroupState": g.state,
                        "ProtocolType": g.protocol_type or "", "ProtocolData": g.protocol_name if stable else "",
                        "Members": members})
        return out
