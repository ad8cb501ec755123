"""The group coordinator: classic groups, KIP-848 consumer groups and committed offsets.

Models released Kafka's *new* group coordinator (group-coordinator/ module; FACTS.md (c)), with
KIP-1319 (TxnOffsetCommit v6, released in Kafka 4.4):

* GroupMetadataManager   -> classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, generations,
                            session and rebalance timeouts) and consumer groups (ConsumerGroupHeartbeat,
                            member epochs, server-side assignment, reconciliation, fencing);
* OffsetMetadataManager  -> OffsetCommit / TxnOffsetCommit / OffsetFetch, pending transactional offsets
                            resolved by COMMIT/ABORT markers (`on_marker`);
* GroupCoordinatorService-> NOT_COORDINATOR / INVALID_GROUP_ID checks.

The request-level checks of KafkaApis (ACLs, topic names and ids) live in handlers/groups.py.

State machines: classic groups run tables/classic_group.py, consumer groups tables/consumer_group.py,
consumer members tables/consumer_member.py. Every write to __consumer_offsets goes through
cluster.append_internal in the partition Kafka picks (abs(groupId.hashCode) % 50).

Delayed responses. Kafka parks a JoinGroup until every member has rejoined (or the rebalance times
out) and a follower's SyncGroup until the leader sent the assignment. Such a request is *parked*:
cluster.handle returns b"" for it, and when the coordinator completes it the response is emitted as
a ResponseSent event (with its correlation id) and queued: `cluster.groups.take_responses(client)`
returns the frames in order."""
from __future__ import annotations

import re
import uuid as _uuid
from dataclasses import dataclass, field

from ..codec.defaults import default_value
from ..records import decode_internal, encode_internal
from ..records.internal import definitions as record_definitions
from ..schema import registry
from ..schema.resolve import resolve
from ..uuids import ZERO_UUID, random_uuid, to_kafka_str
from .error_codes import CODE
from .handlers import DEFERRED
from .machine import Machine
from .tables import classic_group as CG
from .tables import consumer_group as KG
from .tables import consumer_member as KM

NONE = 0
INVALID_OFFSET = -1
UNKNOWN_MEMBER_ID = ""                        # JoinGroupRequest.UNKNOWN_MEMBER_ID
LEAVE_GROUP_MEMBER_EPOCH = -1                 # ConsumerGroupHeartbeatRequest
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
CONSUMER_PROTOCOL_TYPE = "consumer"
ASSIGNORS = ("uniform", "range")              # group.consumer.assignors; the first is the default
CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000   # classicGroupNewMemberJoinTimeoutMs
GROUP_METADATA_VALUE_VERSION = 3
INVALID_REGULAR_EXPRESSION = CODE["INVALID_REGULAR_EXPRESSION"]
PARKED = DEFERRED                             # a handler's "no response yet"


class GroupError(Exception):
    """Kafka's ApiException: an error code (and message) for the whole operation."""

    def __init__(self, name: str, message: str | None = None):
        super().__init__(message or name)
        self.code = CODE.get(name, INVALID_REGULAR_EXPRESSION if name == "INVALID_REGULAR_EXPRESSION" else -1)
        self.name = name
        self.message = message


# ---- shaping bodies to one version ----------------------------------------------------------------
def _shape_fields(fields, src: dict) -> dict:
    out = {}
    for f in fields:
        if f.name in src:
            v = src[f.name]
            if v is None and not f.nullable:
                v = default_value(f)
            elif f.is_struct and v is not None:
                v = [_shape_fields(f.fields, e) for e in v] if f.is_array else _shape_fields(f.fields, v)
            out[f.name] = v
        else:
            out[f.name] = default_value(f)
    return out


def shape(message: str, version: int, body: dict) -> dict:
    """`body` cut to exactly the fields of `message` at `version`, missing ones at their defaults and
    nulls in non-nullable fields replaced by the field's default (as Kafka's responses do, e.g.
    JoinGroupResponse v0-6 turns a null ProtocolName into "")."""
    return _shape_fields(resolve(registry.get(message), version).fields, body)


def _shape_record(spec_name: str, version: int, value: dict) -> dict:
    return _shape_fields(resolve(record_definitions()[spec_name], version).fields, value)


def java_length(s: str | None) -> int:
    """Java's String.length(): UTF-16 code units (what offset.metadata.max.bytes is compared with)."""
    return 0 if s is None else len(s.encode("utf-16-le", "surrogatepass")) // 2


def _java_map_order(keys: list[str]) -> list[str]:
    """Iteration order of a java.util.HashMap holding `keys` (inserted in this order): by bucket
    (hash ^ hash >>> 16) & (capacity - 1), then insertion order."""
    from ..records import java_string_hash
    cap = 16
    while len(keys) > cap * 0.75:
        cap *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)
    return sorted(keys, key=lambda k: (bucket(k), keys.index(k)))


def _tp_list(assign: dict) -> list[dict]:
    return [{"TopicId": tid, "Partitions": sorted(ps)} for tid, ps in sorted(assign.items(), key=lambda kv: str(kv[0]))
            if ps]


def _copy(assign: dict) -> dict:
    return {t: set(ps) for t, ps in assign.items() if ps}


# ---- data ------------------------------------------------------------------------------------------
@dataclass
class Committed:
    """OffsetAndMetadata, plus the offset of its record in __consumer_offsets (recordOffset)."""
    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int
    record_offset: int
    topic_id: _uuid.UUID = ZERO_UUID
    expire_ts: int = -1


@dataclass
class ClassicMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_req: object | None = None          # parked JoinGroup (awaiting join)
    sync_req: object | None = None          # parked SyncGroup (awaiting sync)
    is_new: bool = False
    timer: int | None = None

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")

    def vote(self, candidates: set[str]) -> str:
        return next(n for n, _ in self.protocols if n in candidates)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]


@dataclass
class ClassicGroup:
    group_id: str
    machine: Machine
    created_ms: int
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: dict[str, int | None] = field(default_factory=dict)    # member id -> timer
    pending_sync: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)            # instance id -> member id
    join_timer: int | None = None
    sync_timer: int | None = None
    previous_state: str | None = None
    new_member_added: bool = False
    state_ts: int = 0
    type: str = "classic"

    @property
    def state(self) -> str:
        return self.machine.state

    def is_empty(self) -> bool:
        return not self.members and not self.pending_members

    def awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join_req is not None)

    def all_joined(self) -> bool:
        return len(self.members) == self.awaiting_join() and not self.pending_members

    def rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout for m in self.members.values()), default=0)

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {n for n, _ in protocols}
        if self.state == CG.EMPTY:
            return protocol_type != "" and bool(names)
        counts: dict[str, int] = {}
        for m in self.members.values():
            for n in {n for n, _ in m.protocols}:
                counts[n] = counts.get(n, 0) + 1
        return (self.protocol_type == protocol_type
                and any(counts.get(n, 0) == len(self.members) for n in names))

    def select_protocol(self) -> str:
        members = list(self.members.values())
        candidates = {n for n, _ in members[0].protocols}
        for m in members[1:]:
            candidates &= {n for n, _ in m.protocols}
        votes: dict[str, int] = {}
        for m in members:
            v = m.vote(candidates)
            votes[v] = votes.get(v, 0) + 1
        best = None
        for name in _java_map_order(list(votes)):     # Collections.max keeps the first maximum
            if best is None or votes[name] > votes[best]:
                best = name
        return best


@dataclass
class ConsumerMember:
    member_id: str
    machine: Machine
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout: int = -1
    subscribed: list[str] = field(default_factory=list)
    regex: str | None = None
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = 0
    assigned: dict = field(default_factory=dict)             # topic id -> set of partitions
    pending_revocation: dict = field(default_factory=dict)
    session_timer: int | None = None
    rebalance_timer: int | None = None

    @property
    def state(self) -> str:
        return self.machine.state

    def reconciled_to(self, epoch: int) -> bool:
        return self.state == KM.STABLE and self.epoch == epoch

    def metadata_tuple(self):
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout,
                tuple(self.subscribed), self.regex, self.server_assignor)


@dataclass
class ConsumerGroup:
    group_id: str
    machine: Machine
    created_ms: int
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, dict] = field(default_factory=dict)     # member id -> topic id -> partitions
    subscription_metadata: dict = field(default_factory=dict)  # topic name -> (topic id, partitions)
    type: str = "consumer"

    @property
    def state(self) -> str:
        return self.machine.state

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def owner_epoch(self, topic_id, partition: int, exclude: str | None = None) -> int:
        """currentPartitionEpoch: the epoch of the member owning the partition (assigned or pending
        revocation), or -1 if it is free."""
        for m in self.members.values():
            if m.member_id == exclude:
                continue
            if partition in m.assigned.get(topic_id, ()) or partition in m.pending_revocation.get(topic_id, ()):
                return m.epoch
        return -1

    def preferred_assignor(self) -> str:
        names = [m.server_assignor for m in self.members.values() if m.server_assignor]
        if not names:
            return ASSIGNORS[0]
        return max(sorted(set(names)), key=names.count)


# ---- the coordinator --------------------------------------------------------------------------------
class GroupCoordinator:
    def __init__(self, cluster):
        self.cluster = cluster
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        # committed offsets: group -> (topic name, partition) -> Committed
        self.offsets: dict[str, dict[tuple[str, int], Committed]] = {}
        # pendingTransactionalOffsets per __consumer_offsets partition:
        # (partition, producer id) -> group -> (topic, partition) -> Committed
        self.pending_txn: dict[tuple[int, int], dict[str, dict[tuple[str, int], Committed]]] = {}
        self.outbox: list[tuple[str, int, bytes]] = []      # (client, broker, frame) of delayed responses

    # ---- delayed responses ------------------------------------------------------------------
    def _complete(self, req, message: str, body: dict) -> None:
        """Answer a parked request now (emits ResponseSent and queues the frame)."""
        from .handlers.groups import finish
        body = finish(req.api, req.version, body)
        frame = self.cluster.complete(req, body)
        self.outbox.append((req.client, req.broker, frame))

    def take_responses(self, client: str | None = None) -> list[bytes]:
        """Frames of delayed responses (JoinGroup/SyncGroup) completed since the last call, in order."""
        out = [f for c, _, f in self.outbox if client is None or c == client]
        self.outbox = [x for x in self.outbox if not (client is None or x[0] == client)]
        return out

    # ---- helpers --------------------------------------------------------------------------------
    def _machine(self, table, key: str, state: str | None = None) -> Machine:
        return Machine(table, key, self.cluster.transition, state=state)

    def partition_for(self, group_id: str) -> int:
        return self.cluster.coordinator_partition(0, group_id)[1]

    def is_coordinator(self, group_id: str, broker: int) -> bool:
        return self.cluster.coordinator_broker(0, group_id) == broker

    def _append(self, group_id: str, record: str, key: dict, value: dict | None, *, value_version: int | None = None,
                producer_id: int = -1, producer_epoch: int = -1, transactional: bool = False) -> int:
        if value is not None:
            spec = {"OffsetCommit": "OffsetCommitValue"}.get(record, record + "Value")
            v = value_version if value_version is not None else record_definitions()[spec].valid.hi
            value = _shape_record(spec, v, value)
        kb, vb = encode_internal(record, key, value, value_version=value_version)
        decoded = decode_internal(kb, vb, "__consumer_offsets")
        topic, p = self.cluster.coordinator_partition(0, group_id)
        return self.cluster.append_internal(topic, p, kb, vb, decoded, producer_id=producer_id,
                                            producer_epoch=producer_epoch, transactional=transactional)

    def _schedule(self, delay_ms: int, action) -> int:
        """A timer on the virtual clock; a model bug inside it is recorded like one inside handle()."""
        def run():
            try:
                action()
            except Exception as e:  # noqa: BLE001 - cluster.advance must not raise for a model bug
                self.cluster.internal_errors.append(f"group coordinator timer: {type(e).__name__}: {e}")
        return self.cluster.clock.schedule(self.cluster.now + max(0, delay_ms), run)

    def _cancel(self, tid: int | None) -> None:
        if tid is not None:
            self.cluster.clock.cancel(tid)

    def _share_group(self, group_id: str):
        """A share group of the same id (kipviz/broker/shares.py), if that component exists and
        exposes `groups` (a dict by group id)."""
        shares = self.cluster.__dict__.get("shares")
        groups = getattr(shares, "groups", None)
        return groups.get(group_id) if isinstance(groups, dict) else None

    def group(self, group_id: str):
        """GroupMetadataManager.group(): the live group or GroupIdNotFoundException."""
        g = self.groups.get(group_id)
        if g is None:
            if self._share_group(group_id) is not None:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a consumer group.")
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} not found.")
        return g

    def group_state(self, group_id: str) -> str | None:
        g = self.groups.get(group_id)
        return None if g is None else g.state

    def committed(self, group_id: str, topic: str, partition: int) -> Committed | None:
        return self.offsets.get(group_id, {}).get((topic, partition))

    def _new_classic_group(self, group_id: str) -> ClassicGroup:
        g = ClassicGroup(group_id, self._machine(CG.TABLE, group_id), self.cluster.now, state_ts=self.cluster.now)
        self.groups[group_id] = g
        self.cluster.note(f"classic group {group_id} created", group=group_id,
                          partition=self.partition_for(group_id))
        return g

    def _remove_group(self, g, why: str) -> None:
        """The group leaves the coordinator (converted to the other type): -> Dead, tombstones."""
        if isinstance(g, ClassicGroup):
            g.machine.fire("group-removed")
            self._append(g.group_id, "GroupMetadata", {"group": g.group_id}, None)
            self._cancel(g.join_timer)
            self._cancel(g.sync_timer)
        else:
            g.machine.fire("group-removed")
            self._append(g.group_id, "ConsumerGroupTargetAssignmentMetadata", {"GroupId": g.group_id}, None)
            self._append(g.group_id, "ConsumerGroupMetadata", {"GroupId": g.group_id}, None)
        del self.groups[g.group_id]
        self.cluster.note(f"group {g.group_id} removed: {why}", group=g.group_id)

    # =============================================================================================
    # classic groups (GroupMetadataManager.classicGroup*)
    # =============================================================================================
    def _classic_fire(self, g: ClassicGroup, event: str) -> None:
        g.previous_state = g.state
        g.machine.fire(event)
        g.state_ts = self.cluster.now

    def join_group(self, req, b: dict):
        """classicGroupJoin; returns a JoinGroupResponse body or PARKED."""
        prev, self._current = self._current, req
        try:
            return self._join_group(req, b)
        finally:
            self._current = prev

    def _join_group(self, req, b: dict):
        gid, member_id = b["GroupId"], b["MemberId"]
        instance_id = b.get("GroupInstanceId")
        unknown = member_id == UNKNOWN_MEMBER_ID
        g = self.groups.get(gid)
        if g is not None and isinstance(g, ConsumerGroup):
            if g.members or not unknown:
                # classicGroupJoinToConsumerGroup (a classic member inside a consumer group) is not
                # modelled; such a JoinGroup is refused like a protocol mismatch.
                self.cluster.note(f"JoinGroup for consumer group {gid}: classic members in consumer groups "
                                  "are not modelled", group=gid)
                return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": member_id}
            self._remove_group(g, "an empty consumer group is replaced by a classic group (JoinGroup)")
            g = None
        if g is None and self._share_group(gid) is not None:
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": member_id}
        if g is None:
            if not unknown:
                return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "MemberId": member_id}
            g = self._new_classic_group(gid)
        protocols = [(p["Name"], bytes(p["Metadata"])) for p in b.get("Protocols", [])]
        rebalance_timeout = b.get("RebalanceTimeoutMs", -1)
        if req.version == 0 or rebalance_timeout == -1:
            rebalance_timeout = b["SessionTimeoutMs"]    # v0 has no rebalance timeout
        args = dict(session_timeout=b["SessionTimeoutMs"], rebalance_timeout=rebalance_timeout,
                    protocol_type=b["ProtocolType"], protocols=protocols,
                    client_id=(req.header.get("ClientId") or ""), reason=b.get("Reason"))
        if unknown:
            return self._join_new_member(req, g, instance_id, args)
        return self._join_existing_member(req, g, member_id, instance_id, args)

    def _join_new_member(self, req, g: ClassicGroup, instance_id, a):
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"], "MemberId": UNKNOWN_MEMBER_ID}
        if not g.supports(a["protocol_type"], a["protocols"]):
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": UNKNOWN_MEMBER_ID}
        u = _uuid.UUID(int=self.cluster.rng.getrandbits(128), version=4)
        new_id = f"{instance_id if instance_id is not None else a['client_id']}-{u}"
        if instance_id is not None:
            old_id = g.static_members.get(instance_id)
            if old_id is not None and old_id in g.members:
                # a static member restarted: the new member id replaces the old one (which is fenced)
                old = g.members.pop(old_id)
                self._cancel(old.timer)
                if old.join_req is not None:
                    self._complete(old.join_req, "JoinGroupResponse",
                                   {"ErrorCode": CODE["FENCED_INSTANCE_ID"], "MemberId": old_id})
                    old.join_req = None
                if g.leader == old_id:
                    g.leader = new_id
                g.pending_sync.discard(old_id)
                self.cluster.note(f"static member {instance_id} of {g.group_id} rejoined: {new_id} replaces "
                                  f"{old_id}", group=g.group_id, instance_id=instance_id)
            g.static_members[instance_id] = new_id
            return self._add_member_and_rebalance(req, g, new_id, instance_id, a)
        if req.version >= 4:     # JoinGroupRequest.requiresKnownMemberId
            self._cancel(g.pending_members.get(new_id))
            g.pending_members[new_id] = self._schedule(
                a["session_timeout"], lambda: self._expire_pending(g.group_id, new_id))
            self.cluster.note(f"{new_id} must rejoin {g.group_id} with its member id (MEMBER_ID_REQUIRED)",
                              group=g.group_id, member=new_id)
            return {"ErrorCode": CODE["MEMBER_ID_REQUIRED"], "MemberId": new_id}
        return self._add_member_and_rebalance(req, g, new_id, None, a)

    def _join_existing_member(self, req, g: ClassicGroup, member_id, instance_id, a):
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"], "MemberId": member_id}
        if not g.supports(a["protocol_type"], a["protocols"]):
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"], "MemberId": member_id}
        if member_id in g.pending_members and instance_id is None:
            self._cancel(g.pending_members.pop(member_id))
            return self._add_member_and_rebalance(req, g, member_id, None, a)
        err = self._validate_member(g, member_id, instance_id)
        if err:
            return {"ErrorCode": CODE[err], "MemberId": member_id}
        m = g.members[member_id]
        if g.state == CG.PREPARING:
            return self._update_member_and_rebalance(req, g, m, a, "member-rejoined")
        if g.state == CG.COMPLETING:
            if m.matches(a["protocols"]):
                return self._join_response(g, m, with_members=g.leader == member_id)
            return self._update_member_and_rebalance(req, g, m, a, "member-rejoined")
        if g.state == CG.STABLE:
            if g.leader == member_id or not m.matches(a["protocols"]):
                return self._update_member_and_rebalance(req, g, m, a, "member-rejoined")
            return self._join_response(g, m, with_members=False)
        return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "MemberId": member_id}

    def _validate_member(self, g: ClassicGroup, member_id: str, instance_id: str | None) -> str | None:
        """ClassicGroup.validateMember: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, or None."""
        if instance_id is not None:
            existing = g.static_members.get(instance_id)
            if existing is None:
                return "UNKNOWN_MEMBER_ID"
            if existing != member_id:
                return "FENCED_INSTANCE_ID"
        if member_id not in g.members:
            return "UNKNOWN_MEMBER_ID"
        return None

    def _join_response(self, g: ClassicGroup, m: ClassicMember, with_members: bool) -> dict:
        members = []
        if with_members:
            members = [{"MemberId": x.member_id, "GroupInstanceId": x.instance_id,
                        "Metadata": x.metadata(g.protocol_name)} for x in g.members.values()]
        return {"ErrorCode": NONE, "GenerationId": g.generation, "ProtocolType": g.protocol_type,
                "ProtocolName": g.protocol_name, "Leader": g.leader or "", "SkipAssignment": False,
                "MemberId": m.member_id, "Members": members}

    def _add_member_and_rebalance(self, req, g: ClassicGroup, member_id, instance_id, a):
        m = ClassicMember(member_id, instance_id, a["client_id"], "/127.0.0.1", a["rebalance_timeout"],
                          a["session_timeout"], a["protocol_type"], a["protocols"], join_req=req, is_new=True)
        if g.state == CG.PREPARING and g.previous_state == CG.EMPTY:
            g.new_member_added = True
        if not g.members:
            g.protocol_type = a["protocol_type"]
        g.members[member_id] = m
        if g.leader is None:
            g.leader = member_id
        self._reschedule_member(g, m, CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.cluster.note(f"{member_id} joins classic group {g.group_id}", group=g.group_id, member=member_id,
                          reason=a.get("reason"))
        self._maybe_prepare_rebalance_or_complete_join(g, "member-joined")
        return PARKED if m.join_req is req else self._take_answer(m)

    def _update_member_and_rebalance(self, req, g: ClassicGroup, m: ClassicMember, a, cause: str):
        m.protocols = a["protocols"]
        m.rebalance_timeout = a["rebalance_timeout"]
        m.session_timeout = a["session_timeout"]
        if m.join_req is not None and m.join_req is not req:
            self.cluster.note(f"{m.member_id}'s earlier JoinGroup is superseded and will not be answered",
                              group=g.group_id, member=m.member_id)
        m.join_req = req
        self._maybe_prepare_rebalance_or_complete_join(g, cause)
        return PARKED if m.join_req is req else self._take_answer(m)

    def _take_answer(self, m: ClassicMember):
        """The join completed inside this request: its answer was stored instead of parked."""
        ans = getattr(m, "_answer", None)
        m._answer = None
        return ans if ans is not None else PARKED

    def _maybe_prepare_rebalance_or_complete_join(self, g: ClassicGroup, cause: str) -> None:
        if g.state in (CG.STABLE, CG.COMPLETING, CG.EMPTY):
            self._prepare_rebalance(g, cause)
        else:
            self._maybe_complete_join(g)

    def _prepare_rebalance(self, g: ClassicGroup, cause: str) -> None:
        if g.state == CG.COMPLETING:
            self._reset_and_propagate_assignment_error(g, "REBALANCE_IN_PROGRESS")
        self._cancel(g.sync_timer)
        g.sync_timer = None
        initial = g.state == CG.EMPTY
        self._classic_fire(g, cause)
        self.cluster.note(f"{g.group_id}: preparing to rebalance ({CG.REBALANCE_CAUSES.get(cause, cause)})",
                          group=g.group_id, generation=g.generation)
        if initial:
            delay = self.cluster.config.group_initial_rebalance_delay_ms
            remaining = max(g.rebalance_timeout() - delay, 0)
            g.new_member_added = False
            if delay <= 0:
                self._complete_join(g)
            else:
                self._cancel(g.join_timer)
                g.join_timer = self._schedule(delay, lambda: self._initial_delay_expired(g, delay, remaining))
            return
        if g.all_joined():
            self._complete_join(g)
        else:
            self._cancel(g.join_timer)
            g.join_timer = self._schedule(g.rebalance_timeout(), lambda: self._join_timeout(g))

    def _initial_delay_expired(self, g: ClassicGroup, delay: int, remaining: int) -> None:
        if self.groups.get(g.group_id) is not g or g.state != CG.PREPARING:
            return
        if g.new_member_added and remaining > 0:
            g.new_member_added = False
            step = min(delay, remaining)
            g.join_timer = self._schedule(step, lambda: self._initial_delay_expired(g, delay, remaining - step))
        else:
            self._complete_join(g)

    def _join_timeout(self, g: ClassicGroup) -> None:
        if self.groups.get(g.group_id) is g and g.state == CG.PREPARING:
            self._complete_join(g)

    def _maybe_complete_join(self, g: ClassicGroup) -> None:
        if g.state == CG.PREPARING and g.all_joined() and g.previous_state != CG.EMPTY:
            self._complete_join(g)

    def _complete_join(self, g: ClassicGroup) -> None:
        """completeClassicGroupJoin + ClassicGroup.initNextGeneration."""
        self._cancel(g.join_timer)
        g.join_timer = None
        for m in [m for m in g.members.values() if m.join_req is None and m.instance_id is None]:
            self._remove_member(g, m, notify=False)
            self.cluster.note(f"{m.member_id} did not rejoin {g.group_id} in time and is removed",
                              group=g.group_id, member=m.member_id)
        if g.members and (g.leader not in g.members or g.members[g.leader].join_req is None):
            joined = [m for m in g.members.values() if m.join_req is not None]
            if joined:
                g.leader = joined[0].member_id
            else:
                # no member rejoined: postpone until session timeouts remove them
                g.join_timer = self._schedule(g.rebalance_timeout(), lambda: self._join_timeout(g))
                return
        g.generation += 1
        g.pending_sync.clear()
        if not g.members:
            g.protocol_name = None
            g.leader = None
            self._classic_fire(g, "join-complete-empty")
            self._write_group_metadata(g, {})
            self.cluster.note(f"{g.group_id} is empty at generation {g.generation}", group=g.group_id)
            return
        g.protocol_name = g.select_protocol()
        self._classic_fire(g, "join-complete")
        self.cluster.note(f"{g.group_id}: generation {g.generation}, protocol {g.protocol_name}, "
                          f"leader {g.leader}", group=g.group_id, generation=g.generation, leader=g.leader,
                          members=list(g.members))
        for m in list(g.members.values()):
            if m.join_req is None:
                continue       # a static member that did not rejoin keeps its place silently
            body = self._join_response(g, m, with_members=m.member_id == g.leader)
            req, m.join_req = m.join_req, None
            self._reschedule_member(g, m)
            m.is_new = False
            g.pending_sync.add(m.member_id)
            self._answer(req, m, "JoinGroupResponse", body)
        gen = g.generation
        g.sync_timer = self._schedule(g.rebalance_timeout(), lambda: self._expire_pending_sync(g, gen))

    def _answer(self, req, m, message: str, body: dict) -> None:
        """Complete a member's parked request; if it is the request being handled right now, hand the
        body back to the handler instead (the response then goes out the normal way)."""
        if req is self._current:
            m._answer = body
        else:
            self._complete(req, message, body)

    _current = None

    def _reset_and_propagate_assignment_error(self, g: ClassicGroup, error: str) -> None:
        for m in g.members.values():
            m.assignment = b""
            if m.sync_req is not None:
                req, m.sync_req = m.sync_req, None
                self._answer(req, m, "SyncGroupResponse", {"ErrorCode": CODE[error], "Assignment": b""})

    def _expire_pending_sync(self, g: ClassicGroup, generation: int) -> None:
        if self.groups.get(g.group_id) is not g or generation != g.generation:
            return
        if g.state in (CG.COMPLETING, CG.STABLE) and g.pending_sync:
            gone = sorted(g.pending_sync)
            for mid in gone:
                m = g.members.get(mid)
                if m is not None:
                    self._remove_member(g, m, notify=True)
            g.pending_sync.clear()
            self.cluster.note(f"{g.group_id}: {gone} sent no SyncGroup in time and are removed", group=g.group_id)
            self._prepare_rebalance(g, "sync-expired")

    def _reschedule_member(self, g: ClassicGroup, m: ClassicMember, timeout: int | None = None) -> None:
        self._cancel(m.timer)
        mid = m.member_id
        m.timer = self._schedule(m.session_timeout if timeout is None else timeout,
                                 lambda: self._expire_member(g, mid))

    def _expire_member(self, g: ClassicGroup, member_id: str) -> None:
        """expireClassicGroupMemberHeartbeat."""
        if self.groups.get(g.group_id) is not g or g.state == CG.DEAD:
            return
        m = g.members.get(member_id)
        if m is None:
            return
        satisfied = not m.is_new and (m.join_req is not None or m.sync_req is not None)
        if satisfied:
            return
        self.cluster.note(f"{member_id} of {g.group_id} missed its session timeout ({m.session_timeout} ms) "
                          "and is removed", group=g.group_id, member=member_id)
        self._remove_member(g, m, notify=True)
        if g.state in (CG.STABLE, CG.COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(g, "member-expired")
        elif g.state == CG.PREPARING and g.all_joined():
            self._complete_join(g)

    def _expire_pending(self, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if isinstance(g, ClassicGroup) and member_id in g.pending_members:
            del g.pending_members[member_id]
            self.cluster.note(f"pending member {member_id} of {group_id} did not rejoin and is removed",
                              group=group_id, member=member_id)
            if g.state == CG.PREPARING and g.all_joined():
                self._complete_join(g)

    def _remove_member(self, g: ClassicGroup, m: ClassicMember, notify: bool) -> None:
        self._cancel(m.timer)
        if notify and m.join_req is not None:
            self._answer(m.join_req, m, "JoinGroupResponse",
                         {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "MemberId": UNKNOWN_MEMBER_ID})
        if notify and m.sync_req is not None:
            self._answer(m.sync_req, m, "SyncGroupResponse", {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]})
        m.join_req = m.sync_req = None
        g.members.pop(m.member_id, None)
        g.pending_sync.discard(m.member_id)
        if m.instance_id is not None and g.static_members.get(m.instance_id) == m.member_id:
            del g.static_members[m.instance_id]
        if g.leader == m.member_id:
            g.leader = next(iter(g.members), None)

    def sync_group(self, req, b: dict):
        """classicGroupSync; returns a SyncGroupResponse body or PARKED."""
        prev, self._current = self._current, req
        try:
            return self._sync_group(req, b)
        finally:
            self._current = prev

    def _sync_group(self, req, b: dict):
        gid, member_id = b["GroupId"], b["MemberId"]
        g = self.groups.get(gid)
        if g is None or not isinstance(g, ClassicGroup) or g.is_empty():
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]}
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"]}
        err = self._validate_member(g, member_id, b.get("GroupInstanceId"))
        if err:
            return {"ErrorCode": CODE[err]}
        if b["GenerationId"] != g.generation:
            return {"ErrorCode": CODE["ILLEGAL_GENERATION"]}

        def inconsistent(x, y):
            return x is not None and y is not None and x != y
        if inconsistent(b.get("ProtocolType"), g.protocol_type) or inconsistent(b.get("ProtocolName"),
                                                                               g.protocol_name):
            return {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"]}
        if g.state == CG.PREPARING:
            return {"ErrorCode": CODE["REBALANCE_IN_PROGRESS"]}
        m = g.members[member_id]
        if g.state == CG.COMPLETING:
            m.sync_req = req
            g.pending_sync.discard(member_id)
            if member_id == g.leader:
                assignment = {a["MemberId"]: bytes(a["Assignment"]) for a in b.get("Assignments", [])}
                missing = [x for x in g.members if x not in assignment]
                for x in missing:
                    assignment[x] = b""
                if missing:
                    self.cluster.note(f"{g.group_id}: the leader's assignment has no entry for {missing}; "
                                      "they get an empty assignment", group=gid)
                self._write_group_metadata(g, assignment)
                for x, data in assignment.items():
                    if x in g.members:
                        g.members[x].assignment = data
                self._classic_fire(g, "leader-synced")
                for x in g.members.values():
                    if x.sync_req is not None:
                        r, x.sync_req = x.sync_req, None
                        self._answer(r, x, "SyncGroupResponse", self._sync_ok(g, x))
            return self._take_answer(m) if m.sync_req is None else PARKED
        # Stable: the current assignment
        g.pending_sync.discard(member_id)
        return self._sync_ok(g, m)

    @staticmethod
    def _sync_ok(g: ClassicGroup, m: ClassicMember) -> dict:
        return {"ErrorCode": NONE, "ProtocolType": g.protocol_type, "ProtocolName": g.protocol_name,
                "Assignment": m.assignment}

    def _write_group_metadata(self, g: ClassicGroup, assignment: dict) -> None:
        members = [{"memberId": m.member_id, "groupInstanceId": m.instance_id, "clientId": m.client_id,
                    "clientHost": m.client_host, "rebalanceTimeout": m.rebalance_timeout,
                    "sessionTimeout": m.session_timeout, "subscription": m.metadata(g.protocol_name),
                    "assignment": assignment.get(m.member_id, b"")} for m in g.members.values()]
        self._append(g.group_id, "GroupMetadata", {"group": g.group_id},
                     {"protocolType": g.protocol_type or "", "generation": g.generation,
                      "protocol": g.protocol_name, "leader": g.leader, "currentStateTimestamp": self.cluster.now,
                      "members": members}, value_version=GROUP_METADATA_VALUE_VERSION)

    def heartbeat(self, req, b: dict) -> dict:
        """classicGroupHeartbeat."""
        g = self.groups.get(b["GroupId"])
        if g is None or not isinstance(g, ClassicGroup):
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]}
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"]}
        err = self._validate_member(g, b["MemberId"], b.get("GroupInstanceId"))
        if err:
            return {"ErrorCode": CODE[err]}
        if b["GenerationId"] != g.generation:
            return {"ErrorCode": CODE["ILLEGAL_GENERATION"]}
        m = g.members[b["MemberId"]]
        if g.state == CG.EMPTY:
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"]}
        self._reschedule_member(g, m)
        if g.state == CG.PREPARING:
            return {"ErrorCode": CODE["REBALANCE_IN_PROGRESS"]}
        return {"ErrorCode": NONE}

    def leave_group(self, req, members: list[dict], gid: str) -> dict:
        """classicGroupLeave: {"ErrorCode", "Members": [...]} (the handler folds v0-2)."""
        g = self.groups.get(gid)
        if g is None or not isinstance(g, ClassicGroup):
            if isinstance(g, ConsumerGroup):
                return self._leave_consumer_group_classic(g, members)
            return {"ErrorCode": CODE["UNKNOWN_MEMBER_ID"], "Members": []}
        if g.state == CG.DEAD:
            return {"ErrorCode": CODE["COORDINATOR_NOT_AVAILABLE"], "Members": []}
        out = []
        for mi in members:
            mid, iid = mi["MemberId"], mi.get("GroupInstanceId")
            resp = {"MemberId": mid, "GroupInstanceId": iid, "ErrorCode": NONE}
            if mid == UNKNOWN_MEMBER_ID:
                if iid is not None and iid in g.static_members and g.static_members[iid] in g.members:
                    self._remove_member(g, g.members[g.static_members[iid]], notify=True)
                else:
                    resp["ErrorCode"] = CODE["UNKNOWN_MEMBER_ID"]
            elif mid in g.pending_members:
                self._cancel(g.pending_members.pop(mid))
            else:
                err = self._validate_member(g, mid, iid)
                if err:
                    resp["ErrorCode"] = CODE[err]
                else:
                    self._remove_member(g, g.members[mid], notify=True)
            out.append(resp)
        left = [r["MemberId"] or r["GroupInstanceId"] for r in out if r["ErrorCode"] == NONE]
        if left:
            self.cluster.note(f"{left} left classic group {gid}", group=gid, members=left)
            if g.state in (CG.STABLE, CG.COMPLETING):
                self._maybe_prepare_rebalance_or_complete_join(g, "member-left")
            elif g.state == CG.PREPARING:
                self._maybe_complete_join(g)
        return {"ErrorCode": NONE, "Members": out}

    def _leave_consumer_group_classic(self, g: ConsumerGroup, members: list[dict]) -> dict:
        # classic-protocol members never exist in this model's consumer groups
        return {"ErrorCode": NONE, "Members": [{"MemberId": m["MemberId"], "GroupInstanceId": m.get("GroupInstanceId"),
                                                "ErrorCode": CODE["UNKNOWN_MEMBER_ID"]} for m in members]}

    # =============================================================================================
    # consumer groups (KIP-848, GroupMetadataManager.consumerGroupHeartbeat)
    # =============================================================================================
    def _update_group_state(self, g: ConsumerGroup) -> None:
        """ConsumerGroup.maybeUpdateGroupState, run after each replayed record."""
        if g.state == KG.DEAD:
            return
        if not g.members:
            event = "no-members"
        elif g.group_epoch > g.assignment_epoch:
            event = "epoch-ahead-of-assignment"
        elif any(not m.reconciled_to(g.assignment_epoch) for m in g.members.values()):
            event = "member-not-reconciled"
        else:
            event = "all-members-reconciled"
        if KG.CONDITIONS[event][0] != g.state:
            g.machine.fire(event)

    def _subscription_metadata(self, g: ConsumerGroup, members=None) -> dict:
        names = set()
        for m in (members if members is not None else g.members.values()):
            names.update(self._subscribed_names(m))
        out = {}
        for n in sorted(names):
            t = self.cluster.topics.get(n)
            if t is not None:
                out[n] = (t.topic_id, len(t.partitions))
        return out

    def _subscribed_names(self, m: ConsumerMember) -> set[str]:
        names = set(m.subscribed)
        if m.regex:
            try:
                pat = re.compile(m.regex)
            except re.error:
                pat = None
            if pat is not None:
                names.update(n for n, t in self.cluster.topics.by_name.items()
                             if not t.internal and pat.fullmatch(n))
        return names

    def consumer_group_heartbeat(self, req, b: dict) -> dict:
        epoch = b["MemberEpoch"]
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._consumer_leave(b)
        return self._consumer_heartbeat(req, b)

    def _get_or_create_consumer_group(self, gid: str, create: bool):
        g = self.groups.get(gid)
        if g is None:
            if self._share_group(gid) is not None:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")
            if not create:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Consumer group {gid} not found.")
            return None                  # created once the request validated
        if isinstance(g, ConsumerGroup):
            return g
        if create and g.state == CG.EMPTY:
            return "replace-classic"
        raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")

    def _consumer_heartbeat(self, req, b: dict) -> dict:
        gid, member_id, epoch = b["GroupId"], b["MemberId"], b["MemberEpoch"]
        instance_id = b.get("InstanceId")
        owned = b.get("TopicPartitions")
        owned_map = None if owned is None else {tp["TopicId"]: set(tp["Partitions"]) for tp in owned}
        create = epoch == 0
        found = self._get_or_create_consumer_group(gid, create)
        g = found if isinstance(found, ConsumerGroup) else None
        if not member_id:
            member_id = to_kafka_str(random_uuid(self.cluster.rng))    # v0: the coordinator picks it
        regex = b.get("SubscribedTopicRegex")
        if regex is not None and regex != "":
            try:
                re.compile(regex)
            except re.error as e:
                raise GroupError("INVALID_REGULAR_EXPRESSION", f"SubscribedTopicRegex `{regex}` is not a valid "
                                 f"regular expression: {e}.") from None
        # ---- member lookup and epoch validation (nothing is changed before this passes) ----
        replace_static = None
        member = None
        if instance_id is None:
            member = g.members.get(member_id) if g is not None else None
            if member is None and not create:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {gid}.")
            if member is not None:
                self._check_member_epoch(member, epoch, owned)
        else:
            static = g.static_member(instance_id) if g is not None else None
            if create:
                if static is not None and static.member_id != member_id:
                    if static.epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise GroupError("UNRELEASED_INSTANCE_ID",
                                         f"Static member {member_id} with instance id {instance_id} cannot join the "
                                         f"group because the instance id is owned by {static.member_id} member.")
                    replace_static = static
                elif static is not None:
                    member = static
                    self._check_member_epoch(member, epoch, owned)
                else:
                    member = g.members.get(member_id) if g is not None else None
                    if member is not None:
                        self._check_member_epoch(member, epoch, owned)
            else:
                if static is None:
                    raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
                if static.member_id != member_id:
                    raise GroupError("FENCED_INSTANCE_ID", f"Static member {member_id} with instance id "
                                     f"{instance_id} was fenced by member {static.member_id}.")
                member = static
                self._check_member_epoch(member, epoch, owned)
        # ---- the request is valid: create what must exist ----
        if found == "replace-classic":
            self._remove_group(self.groups[gid], "an empty classic group is replaced by a consumer group")
        if g is None:
            g = ConsumerGroup(gid, self._machine(KG.TABLE, gid), self.cluster.now)
            self.groups[gid] = g
            self.cluster.note(f"consumer group {gid} created", group=gid, partition=self.partition_for(gid))
        old_meta = None if member is None else member.metadata_tuple()
        old_subs = None if member is None else (tuple(member.subscribed), member.regex)
        old_assigned = None if member is None else _copy(member.assigned)
        if replace_static is not None:
            member = self._replace_static_member(g, replace_static, member_id)
        if member is None:
            member = ConsumerMember(member_id, self._machine(KM.TABLE, f"{gid}/{member_id}"))
            g.members[member_id] = member
            self.cluster.note(f"{member_id} joins consumer group {gid}", group=gid, member=member_id)
        # ---- 1. update the member; bump the group epoch if subscriptions changed ----
        if instance_id is not None:
            member.instance_id = instance_id
        if b.get("RackId") is not None:
            member.rack_id = b["RackId"]
        if b.get("RebalanceTimeoutMs", -1) != -1:
            member.rebalance_timeout = b["RebalanceTimeoutMs"]
        if b.get("ServerAssignor") is not None:
            member.server_assignor = b["ServerAssignor"]
        if b.get("SubscribedTopicNames") is not None:
            member.subscribed = sorted(b["SubscribedTopicNames"])
        if regex is not None:
            member.regex = regex or None
        member.client_id = req.header.get("ClientId") or ""
        member.client_host = "/127.0.0.1"
        bump = g.group_epoch == 0
        if old_meta is None or member.metadata_tuple() != old_meta:
            self._write_member_metadata(g, member)
            self._update_group_state(g)
            if old_subs is None or (tuple(member.subscribed), member.regex) != old_subs:
                bump = True
        new_meta = self._subscription_metadata(g)
        if new_meta != g.subscription_metadata:
            bump = True
        if bump:
            g.subscription_metadata = new_meta
            g.group_epoch += 1
            self._append(gid, "ConsumerGroupMetadata", {"GroupId": gid},
                         {"Epoch": g.group_epoch, "CreationTimeMs": g.created_ms})
            self._update_group_state(g)
            self.cluster.note(f"{gid}: group epoch {g.group_epoch}", group=gid, epoch=g.group_epoch)
        # ---- 2. a new target assignment for the new group epoch ----
        if g.group_epoch > g.assignment_epoch:
            self._update_target_assignment(g)
        # ---- 3. reconcile this member towards its target ----
        self._reconcile(g, member, owned_map)
        self._schedule_session_timeout(g, member)
        full = epoch == 0 or (b.get("RebalanceTimeoutMs", -1) != -1
                              and (b.get("SubscribedTopicNames") is not None or regex is not None)
                              and owned is not None)
        body = {"ErrorCode": NONE, "ErrorMessage": None, "MemberId": member.member_id,
                "MemberEpoch": member.epoch,
                "HeartbeatIntervalMs": self.cluster.config.group_consumer_heartbeat_interval_ms,
                "Assignment": None}
        if full or old_assigned != _copy(member.assigned):
            body["Assignment"] = {"TopicPartitions": _tp_list(member.assigned)}
        return body

    @staticmethod
    def _check_member_epoch(member: ConsumerMember, received: int, owned) -> None:
        """throwIfConsumerGroupMemberEpochIsInvalid (FACTS (c), 'Consumer (KIP-848) group')."""
        if received > member.epoch:
            raise GroupError("FENCED_MEMBER_EPOCH", f"The consumer group member has a greater member epoch "
                             f"({received}) than the one known by the group coordinator ({member.epoch}). "
                             "The member must abandon all its partitions and rejoin.")
        if received < member.epoch:
            subset = owned is not None and all(
                tp["TopicId"] in member.assigned and set(tp["Partitions"]) <= member.assigned[tp["TopicId"]]
                for tp in owned)
            if received != member.previous_epoch or not subset:
                raise GroupError("FENCED_MEMBER_EPOCH", f"The consumer group member has a smaller member epoch "
                                 f"({received}) than the one known by the group coordinator ({member.epoch}). "
                                 "The member must abandon all its partitions and rejoin.")

    def _replace_static_member(self, g: ConsumerGroup, old: ConsumerMember, new_id: str) -> ConsumerMember:
        gid = g.group_id
        self._cancel(old.session_timer)
        self._cancel(old.rebalance_timer)
        self._member_tombstones(gid, old.member_id)
        del g.members[old.member_id]
        new = ConsumerMember(new_id, self._machine(KM.TABLE, f"{gid}/{new_id}", state=old.state),
                             instance_id=old.instance_id, rack_id=old.rack_id, client_id=old.client_id,
                             client_host=old.client_host, rebalance_timeout=old.rebalance_timeout,
                             subscribed=list(old.subscribed), regex=old.regex, server_assignor=old.server_assignor,
                             epoch=0, previous_epoch=0, assigned=_copy(old.assigned),
                             pending_revocation=_copy(old.pending_revocation))
        g.members[new_id] = new
        g.target[new_id] = g.target.pop(old.member_id, {})
        self._write_member_metadata(g, new)
        self._append(gid, "ConsumerGroupTargetAssignmentMember", {"GroupId": gid, "MemberId": new_id},
                     {"TopicPartitions": _tp_list(g.target[new_id])})
        self._write_current_assignment(g, new)
        self._update_group_state(g)
        self.cluster.note(f"static member {old.instance_id} rejoins {gid}: {new_id} replaces {old.member_id}",
                          group=gid, instance_id=old.instance_id)
        return new

    def _write_member_metadata(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        self._append(g.group_id, "ConsumerGroupMemberMetadata", {"GroupId": g.group_id, "MemberId": m.member_id},
                     {"InstanceId": m.instance_id, "RackId": m.rack_id, "ClientId": m.client_id,
                      "ClientHost": m.client_host, "SubscribedTopicNames": list(m.subscribed),
                      "SubscribedTopicRegex": m.regex, "RebalanceTimeoutMs": m.rebalance_timeout,
                      "ServerAssignor": m.server_assignor, "ClassicMemberMetadata": None})

    def _write_current_assignment(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        self._append(g.group_id, "ConsumerGroupCurrentMemberAssignment",
                     {"GroupId": g.group_id, "MemberId": m.member_id},
                     {"MemberEpoch": m.epoch, "PreviousMemberEpoch": m.previous_epoch,
                      "State": KM.STATE_IDS[m.state], "AssignedPartitions": _tp_list(m.assigned),
                      "PartitionsPendingRevocation": _tp_list(m.pending_revocation)})

    def _member_tombstones(self, gid: str, member_id: str) -> None:
        for rec in ("ConsumerGroupCurrentMemberAssignment", "ConsumerGroupTargetAssignmentMember",
                    "ConsumerGroupMemberMetadata"):
            self._append(gid, rec, {"GroupId": gid, "MemberId": member_id}, None)

    # ---- assignment ----------------------------------------------------------------------------
    def _assign(self, g: ConsumerGroup) -> dict[str, dict]:
        """The server-side assignor: "uniform" (sticky, balanced per topic, the default) or "range"
        (contiguous ranges per topic over members sorted by id). A deterministic simplification of
        Kafka's UniformAssignor/RangeAssignor (group-coordinator/.../assignor/)."""
        assignor = g.preferred_assignor()
        members = sorted(g.members)
        out: dict[str, dict] = {m: {} for m in members}
        for name, (tid, n) in sorted(g.subscription_metadata.items()):
            subs = [m for m in members if name in self._subscribed_names(g.members[m])]
            if not subs:
                continue
            if assignor == "range":
                per, extra = divmod(n, len(subs))
                start = 0
                for i, m in enumerate(subs):
                    cnt = per + (1 if i < extra else 0)
                    if cnt:
                        out[m][tid] = set(range(start, start + cnt))
                    start += cnt
                continue
            quota = {m: n // len(subs) + (1 if i < n % len(subs) else 0) for i, m in enumerate(subs)}
            taken: dict[int, str] = {}
            for m in subs:                               # stickiness: keep the previous target
                keep = sorted(g.target.get(m, {}).get(tid, set()))
                for p in keep:
                    if p < n and p not in taken and sum(1 for v in taken.values() if v == m) < quota[m]:
                        taken[p] = m
            for p in range(n):
                if p in taken:
                    continue
                m = min(subs, key=lambda x: (sum(1 for v in taken.values() if v == x) - quota[x], subs.index(x)))
                taken[p] = m
            for p, m in taken.items():
                out[m].setdefault(tid, set()).add(p)
        return out

    def _update_target_assignment(self, g: ConsumerGroup) -> None:
        gid = g.group_id
        new = self._assign(g)
        for mid in sorted(new):
            if _copy(new[mid]) != _copy(g.target.get(mid, {})):
                self._append(gid, "ConsumerGroupTargetAssignmentMember", {"GroupId": gid, "MemberId": mid},
                             {"TopicPartitions": _tp_list(new[mid])})
        g.target = {m: _copy(a) for m, a in new.items()}
        g.assignment_epoch = g.group_epoch
        self._append(gid, "ConsumerGroupTargetAssignmentMetadata", {"GroupId": gid},
                     {"AssignmentEpoch": g.assignment_epoch, "AssignmentTimestamp": self.cluster.now})
        self.cluster.note(f"{gid}: target assignment for epoch {g.assignment_epoch} computed with "
                          f"{g.preferred_assignor()!r}", group=gid,
                          target={m: {str(t): sorted(p) for t, p in a.items()} for m, a in g.target.items()})
        self._update_group_state(g)

    def _reconcile(self, g: ConsumerGroup, m: ConsumerMember, owned: dict | None) -> None:
        """maybeReconcile + CurrentAssignmentBuilder.build."""
        target_epoch = g.assignment_epoch
        if m.reconciled_to(target_epoch):
            return
        before = (m.state, m.epoch, m.previous_epoch, _copy(m.assigned), _copy(m.pending_revocation))
        if m.state == KM.STABLE:
            result = self._next_assignment(g, m, m.epoch, m.assigned)
        elif m.state == KM.UNREVOKED:
            still = owned is None or any(p in owned.get(t, ()) for t, ps in m.pending_revocation.items() for p in ps)
            result = None if still else self._next_assignment(g, m, m.epoch + 1, m.assigned)
        elif m.state == KM.UNRELEASED:
            result = self._next_assignment(g, m, m.epoch, m.assigned)
        else:     # Unknown
            if owned is None or any(owned.values()):
                raise GroupError("FENCED_MEMBER_EPOCH", "The consumer group member is in a unknown state. "
                                 "The member must abandon all its partitions and rejoin.")
            result = self._next_assignment(g, m, target_epoch, m.assigned)
        if result is None:
            return
        event, epoch, assigned, revoking = result
        if (KM.OUTCOMES[event][0], epoch, _copy(assigned), _copy(revoking)) == (before[0], before[1], before[3],
                                                                                 before[4]):
            return
        if epoch != m.epoch:
            m.previous_epoch, m.epoch = m.epoch, epoch
        m.assigned, m.pending_revocation = _copy(assigned), _copy(revoking)
        m.machine.fire(event)
        self._write_current_assignment(g, m)
        self._update_group_state(g)
        self.cluster.note(f"{m.member_id} of {g.group_id}: {m.state} at epoch {m.epoch}", group=g.group_id,
                          member=m.member_id, epoch=m.epoch,
                          assigned={str(t): sorted(p) for t, p in m.assigned.items()},
                          revoking={str(t): sorted(p) for t, p in m.pending_revocation.items()})
        self._cancel(m.rebalance_timer)
        m.rebalance_timer = None
        if m.state == KM.UNREVOKED and m.rebalance_timeout > 0:
            mid, ep = m.member_id, m.epoch
            m.rebalance_timer = self._schedule(m.rebalance_timeout, lambda: self._revocation_timeout(g, mid, ep))

    def _next_assignment(self, g: ConsumerGroup, m: ConsumerMember, epoch: int, current: dict):
        """CurrentAssignmentBuilder.computeNextAssignment -> (event, epoch, assigned, revoking)."""
        target = g.target.get(m.member_id, {})
        assigned, revoking, pending = {}, {}, {}
        unreleased = False
        for tid in set(target) | set(current):
            tgt = target.get(tid, set())
            cur = current.get(tid, set())
            keep = cur & tgt
            rev = cur - keep
            add = tgt - keep
            blocked = {p for p in add if g.owner_epoch(tid, p, exclude=m.member_id) != -1
                       and p not in m.pending_revocation.get(tid, set())}
            if blocked:
                unreleased = True
            add -= blocked
            if keep:
                assigned[tid] = keep
            if rev:
                revoking[tid] = rev
            if add:
                pending[tid] = add
        if revoking:
            return "must-revoke", epoch, assigned, revoking
        if pending:
            for tid, ps in pending.items():
                assigned.setdefault(tid, set()).update(ps)
            return ("awaiting-unreleased" if unreleased else "reconciled"), g.assignment_epoch, assigned, {}
        if unreleased:
            return "awaiting-unreleased", g.assignment_epoch, assigned, {}
        return "reconciled", g.assignment_epoch, assigned, {}

    def _revocation_timeout(self, g: ConsumerGroup, member_id: str, epoch: int) -> None:
        m = g.members.get(member_id) if self.groups.get(g.group_id) is g else None
        if m is not None and m.state == KM.UNREVOKED and m.epoch == epoch:
            self.cluster.note(f"{member_id} of {g.group_id} did not revoke its partitions within its rebalance "
                              f"timeout ({m.rebalance_timeout} ms) and is fenced", group=g.group_id, member=member_id)
            self._fence_member(g, m)

    def _schedule_session_timeout(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        self._cancel(m.session_timer)
        mid = m.member_id
        m.session_timer = self._schedule(self.cluster.config.group_consumer_session_timeout_ms,
                                         lambda: self._session_expired(g, mid))

    def _session_expired(self, g: ConsumerGroup, member_id: str) -> None:
        m = g.members.get(member_id) if self.groups.get(g.group_id) is g else None
        if m is not None:
            self.cluster.note(f"{member_id} of {g.group_id} missed its session timeout "
                              f"({self.cluster.config.group_consumer_session_timeout_ms} ms) and is fenced",
                              group=g.group_id, member=member_id)
            self._fence_member(g, m)

    def _fence_member(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        """consumerGroupFenceMember: tombstones, then a group epoch bump."""
        gid = g.group_id
        self._cancel(m.session_timer)
        self._cancel(m.rebalance_timer)
        self._member_tombstones(gid, m.member_id)
        del g.members[m.member_id]
        g.target.pop(m.member_id, None)
        self._update_group_state(g)
        g.subscription_metadata = self._subscription_metadata(g)
        g.group_epoch += 1
        self._append(gid, "ConsumerGroupMetadata", {"GroupId": gid},
                     {"Epoch": g.group_epoch, "CreationTimeMs": g.created_ms})
        self._update_group_state(g)

    def _consumer_leave(self, b: dict) -> dict:
        gid, member_id, epoch, instance_id = b["GroupId"], b["MemberId"], b["MemberEpoch"], b.get("InstanceId")
        g = self.groups.get(gid)
        if not isinstance(g, ConsumerGroup):
            if g is None and self._share_group(gid) is None:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} not found.")
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {gid} is not a consumer group.")
        body = {"ErrorCode": NONE, "MemberId": member_id, "MemberEpoch": epoch,
                "HeartbeatIntervalMs": 0, "Assignment": None}
        if instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {gid}.")
            self.cluster.note(f"{member_id} left consumer group {gid}", group=gid, member=member_id)
            self._fence_member(g, m)
            return body
        m = g.static_member(instance_id)
        if m is None:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
        if m.member_id != member_id:
            raise GroupError("FENCED_INSTANCE_ID", f"Static member {member_id} with instance id {instance_id} "
                             f"was fenced by member {m.member_id}.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            m.epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            m.pending_revocation = {}
            self._write_current_assignment(g, m)
            self._update_group_state(g)
            self.cluster.note(f"static member {member_id} ({instance_id}) temporarily left {gid}; it keeps its "
                              "partitions until its session times out", group=gid, member=member_id)
            return body
        self.cluster.note(f"static member {member_id} ({instance_id}) left consumer group {gid}", group=gid)
        self._fence_member(g, m)
        return body

    def consumer_group_describe(self, group_ids: list[str]) -> list[dict]:
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if not isinstance(g, ConsumerGroup):
                msg = f"Group {gid} not found." if g is None and self._share_group(gid) is None \
                    else f"Group {gid} is not a consumer group."
                out.append({"GroupId": gid, "ErrorCode": CODE["GROUP_ID_NOT_FOUND"], "ErrorMessage": msg})
                continue
            out.append({"GroupId": gid, "ErrorCode": NONE, "ErrorMessage": None, "GroupState": g.state,
                        "GroupEpoch": g.group_epoch, "AssignmentEpoch": g.assignment_epoch,
                        "AssignorName": g.preferred_assignor(),
                        "Members": [self._describe_member(g, m) for m in g.members.values()]})
        return out

    def _describe_member(self, g: ConsumerGroup, m: ConsumerMember) -> dict:
        def tps(assign):
            out = []
            for tid, ps in sorted(assign.items(), key=lambda kv: str(kv[0])):
                t = self.cluster.topics.live(tid)
                out.append({"TopicId": tid, "TopicName": t.name if t else "", "Partitions": sorted(ps)})
            return {"TopicPartitions": out}
        return {"MemberId": m.member_id, "InstanceId": m.instance_id, "RackId": m.rack_id,
                "MemberEpoch": m.epoch, "ClientId": m.client_id, "ClientHost": m.client_host,
                "SubscribedTopicNames": list(m.subscribed), "SubscribedTopicRegex": m.regex,
                "Assignment": tps(m.assigned), "TargetAssignment": tps(g.target.get(m.member_id, {})),
                "MemberType": 1}

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
                msg = f"Group {gid} not found." if g is None and self._share_group(gid) is None \
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

    # =============================================================================================
    # offsets (OffsetMetadataManager)
    # =============================================================================================
    def _validate_commit_group(self, g, member_id: str, instance_id, epoch: int, transactional: bool,
                               version: int) -> None:
        """Group.validateOffsetCommit (FACTS (c), 'Group-type checks')."""
        if isinstance(g, ClassicGroup):
            if g.state == CG.DEAD:
                raise GroupError("COORDINATOR_NOT_AVAILABLE")
            if epoch < 0 and g.state == CG.EMPTY:
                return
            if epoch >= 0 or member_id or instance_id is not None:
                err = self._validate_member(g, member_id, instance_id)
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
        if g is None and self._share_group(gid) is not None:
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
            g = self._new_classic_group(gid)
        if isinstance(g, ClassicGroup) and g.state in (CG.STABLE, CG.PREPARING) and b.get("MemberId") in g.members:
            self._reschedule_member(g, g.members[b["MemberId"]])
        retention = b.get("RetentionTimeMs", -1) if 2 <= req.version <= 4 else -1
        expire = -1 if retention == -1 else self.cluster.now + retention
        out = {}
        for t in topics:
            for p in t["partitions"]:
                key = (t["name"], p["PartitionIndex"])
                if java_length(p.get("CommittedMetadata")) > self.cluster.config.offset_metadata_max_bytes:
                    out[key] = CODE["OFFSET_METADATA_TOO_LARGE"]
                    continue
                out[key] = NONE
                c = self._offset_record(gid, t["name"], t["topic_id"], p, expire)
                self.offsets.setdefault(gid, {})[key] = c
        return out

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
        off = self._append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p["PartitionIndex"]},
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
            g = self._new_classic_group(gid)
        pid, pepoch = b["ProducerId"], b["ProducerEpoch"]
        part = self.partition_for(gid)
        out = {}
        for t in topics:
            for p in t["partitions"]:
                key = (t["name"], p["PartitionIndex"])
                if java_length(p.get("CommittedMetadata")) > self.cluster.config.offset_metadata_max_bytes:
                    out[key] = CODE["OFFSET_METADATA_TOO_LARGE"]
                    continue
                out[key] = NONE
                # KIP-1319: the real topic id at v6; Uuid.ZERO_UUID (not written) on the v0-5 path
                tid = t["topic_id"] if req.version >= 6 else ZERO_UUID
                c = self._offset_record(gid, t["name"], tid, p, -1, producer_id=pid, producer_epoch=pepoch)
                self.pending_txn.setdefault((part, pid), {}).setdefault(gid, {})[key] = c
        if any(v == NONE for v in out.values()):
            self.cluster.note(f"{gid}: offsets staged in producer {pid}'s transaction (pending until its "
                              "COMMIT/ABORT marker)", group=gid, producer_id=pid, partition=part,
                              step="offsets-staged")
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
                cur = self.offsets.get(gid, {}).get(key)
                if cur is None or c.record_offset > cur.record_offset:
                    self.offsets.setdefault(gid, {})[key] = c
                else:
                    self.cluster.note(f"{gid} {key[0]}-{key[1]}: transactional offset {c.offset} is older than the "
                                      f"committed offset {cur.offset} (record offset {c.record_offset} < "
                                      f"{cur.record_offset}) and is not materialized", group=gid)
            self.cluster.note(f"{gid}: producer {producer_id}'s transactional offsets "
                              f"{'committed' if commit else 'aborted'}", group=gid, producer_id=producer_id,
                              partitions=sorted(f"{t}-{p}" for t, p in offs), commit=commit,
                              step="offsets-resolved")

    def on_partitions_deleted(self, topic: str, partitions: int) -> None:
        """OffsetMetadataManager.onPartitionsDeleted (KAFKA-16168): a topic was deleted, so every
        group's committed and pending transactional offsets for its partitions get an OffsetCommit
        tombstone (one per offset found, as Kafka appends them). Replaying a tombstone removes the
        committed offset and the pending ones of the group's open transactions."""
        doomed = set(range(partitions))
        found: list[tuple[str, int]] = []
        for gid in sorted(self.offsets):
            found += [(gid, p) for (t, p) in self.offsets[gid] if t == topic and p in doomed]
        for (_, _), groups in self.pending_txn.items():
            for gid, offs in groups.items():
                found += [(gid, p) for (t, p) in offs if t == topic and p in doomed]
        for gid, p in found:
            self._append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p}, None)
            self.offsets.get(gid, {}).pop((topic, p), None)
            for groups in self.pending_txn.values():
                groups.get(gid, {}).pop((topic, p), None)
        if found:
            self.cluster.note(f"topic {topic} deleted: {len(found)} committed offset(s) removed (tombstones)",
                              topic=topic, offsets=sorted({f"{g} {topic}-{p}" for g, p in found}))

    def delete_groups(self, group_ids: list[str]) -> list[dict]:
        """GroupCoordinatorShard.deleteGroups: per group, validateDeleteGroup (a missing or Dead group
        is GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP), then OffsetMetadataManager
        .deleteAllOffsets (a tombstone per committed offset, and per pending transactional offset not
        also committed) and the group's own tombstones. A group known only by its offsets counts as
        Empty (Kafka would hold it as an Empty classic group)."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None and gid not in self.offsets:
                out.append({"GroupId": gid, "ErrorCode": CODE["GROUP_ID_NOT_FOUND"],
                            "ErrorMessage": f"Group {gid} not found."})
                continue
            if g is not None and g.state != "Empty":
                out.append({"GroupId": gid, "ErrorCode": CODE["NON_EMPTY_GROUP"],
                            "ErrorMessage": f"Group {gid} is not empty (state {g.state})."})
                continue
            keys = list(self.offsets.get(gid, {}))
            for groups in self.pending_txn.values():
                keys += [k for k in groups.get(gid, {}) if k not in keys]
            for topic, p in keys:
                self._append(gid, "OffsetCommit", {"group": gid, "topic": topic, "partition": p}, None)
            self.offsets.pop(gid, None)
            for groups in self.pending_txn.values():
                groups.pop(gid, None)
            if g is not None:
                self._remove_group(g, "deleted (DeleteGroups)")
            self.cluster.note(f"group {gid} deleted: {len(keys)} offset tombstone(s)", group=gid,
                              partition=self.partition_for(gid))
            out.append({"GroupId": gid, "ErrorCode": 0, "ErrorMessage": None})
        return out

    def has_pending(self, gid: str, topic: str, partition: int) -> bool:
        part = self.partition_for(gid)
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
        offs = {} if fail_all else self.offsets.get(gid, {})

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
