"""Group coordinator data: the constants, the error, body shaping and the group and member records
(Kafka: group-coordinator/src/main/java/org/apache/kafka/coordinator/group/classic/ClassicGroup.java,
ClassicGroupMember.java, modern/consumer/ConsumerGroup.java, ConsumerGroupMember.java)."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field

from ...codec.fit import fit_body
from ...records.internal import definitions as record_definitions
from ...schema.error_codes import CODE
from ...uuids import ZERO_UUID
from ..deferred import DEFERRED
from ..machine import Machine
from ..tables import classic_group as CG
from ..tables import consumer_member as KM

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
def shape(message: str, version: int, body: dict) -> dict:
    """`body` cut to exactly the fields of `message` at `version`, missing ones at their defaults and
    nulls in non-nullable fields replaced by the field's default (as Kafka's responses do, e.g.
    JoinGroupResponse v0-6 turns a null ProtocolName into ""): codec.fit.fit_body, the one fitting
    function (a null string becomes ""; no definition gives a string a non-empty default, which
    tests/test_broker_groups.py checks, so that is the field's default)."""
    return fit_body(message, version, body)


def shape_record(spec_name: str, version: int, value: dict) -> dict:
    """A coordinator record value fitted to its definition's version (kipviz.codec.fit)."""
    return fit_body(record_definitions()[spec_name], version, value)


def java_length(s: str | None) -> int:
    """Java's String.length(): UTF-16 code units (what offset.metadata.max.bytes is compared with)."""
    return 0 if s is None else len(s.encode("utf-16-le", "surrogatepass")) // 2


def _java_map_order(keys: list[str]) -> list[str]:
    """Iteration order of a java.util.HashMap holding `keys` (inserted in this order): by bucket
    (hash ^ hash >>> 16) & (capacity - 1), then insertion order."""
    from ...records import java_string_hash
    cap = 16
    while len(keys) > cap * 0.75:
        cap *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)
    return sorted(keys, key=lambda k: (bucket(k), keys.index(k)))


def topic_partitions(assign: dict) -> list[dict]:
    """An assignment {topic id: partitions} as the [{TopicId, Partitions}] list the wire carries."""
    return [{"TopicId": tid, "Partitions": sorted(ps)} for tid, ps in sorted(assign.items(), key=lambda kv: str(kv[0]))
            if ps]


def copy_assignment(assign: dict) -> dict:
    """A copy of an assignment {topic id: set of partitions}, empty topics left out."""
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
    """ClassicGroupMember: a member of a classic group, with its parked JoinGroup/SyncGroup."""
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
    answer: dict | None = None              # a response completed inside the member's own request

    def metadata(self, protocol: str | None) -> bytes:
        """The member's metadata for `protocol` (b"" if it does not name it)."""
        return next((m for n, m in self.protocols if n == protocol), b"")

    def vote(self, candidates: set[str]) -> str:
        """The first of its protocols among `candidates` (ClassicGroupMember.vote)."""
        return next(n for n, _ in self.protocols if n in candidates)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Are these the protocols (names and metadata) it joined with?"""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]


@dataclass
class ClassicGroup:
    """ClassicGroup: generation, protocol, leader and members of a classic group."""
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
        """The state machine's state."""
        return self.machine.state

    def is_empty(self) -> bool:
        """No member and no pending member."""
        return not self.members and not self.pending_members

    def awaiting_join(self) -> int:
        """How many members have a JoinGroup parked."""
        return sum(1 for m in self.members.values() if m.join_req is not None)

    def all_joined(self) -> bool:
        """ClassicGroup.hasAllMembersJoined."""
        return len(self.members) == self.awaiting_join() and not self.pending_members

    def rebalance_timeout(self) -> int:
        """The largest rebalance timeout of the members (the join phase's limit)."""
        return max((m.rebalance_timeout for m in self.members.values()), default=0)

    def validate_member(self, member_id: str, instance_id: str | None) -> str | None:
        """ClassicGroup.validateMember: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, or None."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return "UNKNOWN_MEMBER_ID"
            if existing != member_id:
                return "FENCED_INSTANCE_ID"
        if member_id not in self.members:
            return "UNKNOWN_MEMBER_ID"
        return None

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """ClassicGroup.supportsProtocols: may a member with these protocols join?"""
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
        """ClassicGroup.selectProtocol: the protocol most members vote for."""
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
    """ConsumerGroupMember: a KIP-848 member, its epochs and its partitions."""
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
        """The state machine's state."""
        return self.machine.state

    def reconciled_to(self, epoch: int) -> bool:
        """Stable at `epoch`."""
        return self.state == KM.STABLE and self.epoch == epoch

    def metadata_tuple(self):
        """The fields a ConsumerGroupMemberMetadata record holds, to tell whether they changed."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout,
                tuple(self.subscribed), self.regex, self.server_assignor)


@dataclass
class ConsumerGroup:
    """ConsumerGroup: a KIP-848 group, its epochs, members and target assignment."""
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
        """The state machine's state."""
        return self.machine.state

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        """The member holding `instance_id`, if any."""
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
        """The server assignor most members ask for (the default when none does)."""
        names = [m.server_assignor for m in self.members.values() if m.server_assignor]
        if not names:
            return ASSIGNORS[0]
        return max(sorted(set(names)), key=names.count)
