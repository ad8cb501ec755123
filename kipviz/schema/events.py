"""Everything the model does is recorded as one of these typed events, in order. They are the only
input to sequence diagrams, animations and sample logs.

The envelope (Event: seq, t) and the wire (RequestReceived, ResponseSent), state machines
(StateChanged) and logs (RecordAppended) are below; every other thing that happens is one small
class of its own with typed fields, under Happened (the broker, the coordinators, operators and
workloads) or ClientDid (a client model's decisions). Each says what it is in one sentence
(`text`), built from its fields, and cites the Kafka source it follows. Readers match classes and
read fields; no event carries a free-form dict."""
from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    t: int                    # virtual time, ms

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True, slots=True)
class RequestReceived(Event):
    broker: int
    client: str
    api: str
    version: int
    correlation_id: int
    body: dict
    frame: bytes = field(repr=False, default=b"")


@dataclass(frozen=True, slots=True)
class ResponseSent(Event):
    broker: int
    client: str
    api: str
    version: int
    correlation_id: int
    body: dict
    error_codes: tuple[int, ...] = ()         # distinct non-zero ErrorCodes anywhere in the body
    frame: bytes = field(repr=False, default=b"")


@dataclass(frozen=True, slots=True)
class StateChanged(Event):
    machine: str              # table name, e.g. "transaction", "classic-group", "consumer-member"
    key: str                  # which instance: a transactional id, a group id, "group/member"
    from_state: str
    to_state: str
    cause: str                # the event of the table row that fired
    status: str = "released"  # released / accepted / proposed: the row's label


@dataclass(frozen=True, slots=True)
class RecordAppended(Event):
    topic: str
    partition: int
    offset: int
    record: dict              # decoded view (internal-topic record, data record or control marker)
    key: bytes | None = field(repr=False, default=None)
    value: bytes | None = field(repr=False, default=None)
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False
    control: bool = False
    broker: int = 0


@dataclass(frozen=True, slots=True)
class Happened(Event):
    """Base of the typed things that happen. `SAYS` is the sentence, formatted with the event's
    fields (a class whose sentence needs more overrides `text`)."""
    SAYS: ClassVar[str] = ""

    @property
    def text(self) -> str:
        return self.SAYS.format_map({f.name: getattr(self, f.name) for f in fields(self)})


@dataclass(frozen=True, slots=True)
class ClientDid(Happened):
    """Base of a client model's decisions (a version chosen, a retry, a rebalance step)."""
    client: str


# ---- the broker and the cluster --------------------------------------------------------------------


# ---- groups (classic, consumer, share) and offsets ------------------------------------------------
# Kafka: group-coordinator/src/main/java/org/apache/kafka/coordinator/group/ (GMM below is
# GroupMetadataManager.java, OMM OffsetMetadataManager.java).
@dataclass(frozen=True, slots=True)
class GroupCreated(Happened):
    """A new group in the coordinator's table, Empty (GMM getOrMaybeCreateClassicGroup /
    getOrMaybeCreateConsumerGroup)."""
    SAYS: ClassVar[str] = "{group_type} group {group} created"
    group: str
    group_type: str           # "classic" or "consumer"
    partition: int            # its __consumer_offsets partition


@dataclass(frozen=True, slots=True)
class GroupRemoved(Happened):
    """A group leaves the table: converted to the other type, or deleted (GMM
    maybeDeleteEmptyClassicGroup / createGroupTombstoneRecords)."""
    WHY: ClassVar[dict[str, str]] = {
        "replaced-by-classic": "an empty consumer group is replaced by a classic group (JoinGroup)",
        "replaced-by-consumer": "an empty classic group is replaced by a consumer group",
        "deleted": "deleted (DeleteGroups)"}
    group: str
    cause: str                # a key of WHY

    @property
    def text(self) -> str:
        return f"group {self.group} removed: {self.WHY[self.cause]}"


@dataclass(frozen=True, slots=True)
class ClassicJoinRefused(Happened):
    """A JoinGroup for a consumer group with members: Kafka's classicGroupJoinToConsumerGroup (a
    classic member inside a consumer group, GMM) is not modelled, so it is refused."""
    SAYS: ClassVar[str] = ("JoinGroup for consumer group {group}: classic members in consumer groups "
                           "are not modelled")
    group: str


@dataclass(frozen=True, slots=True)
class MemberJoined(Happened):
    """A member joins a group (GMM addMemberThenRebalanceOrCompleteJoin for a classic group,
    consumerGroupHeartbeat at member epoch 0 for a consumer group)."""
    SAYS: ClassVar[str] = "{member} joins {group_type} group {group}"
    group: str
    member: str
    group_type: str           # "classic" or "consumer"
    reason: str | None = None  # JoinGroupRequest.Reason (classic, v8+)


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced(Happened):
    """A static member (group.instance.id) came back with a new member id, which replaces the old
    one (GMM updateStaticMemberThenRebalanceOrCompleteJoin / updateStaticMember)."""
    group: str
    instance_id: str
    member: str               # the new member id
    old_member: str
    group_type: str           # "classic" or "consumer"

    @property
    def text(self) -> str:
        if self.group_type == "classic":
            return (f"static member {self.instance_id} of {self.group} rejoined: {self.member} replaces "
                    f"{self.old_member}")
        return f"static member {self.instance_id} rejoins {self.group}: {self.member} replaces {self.old_member}"


@dataclass(frozen=True, slots=True)
class MemberIdRequired(Happened):
    """JoinGroup v4+ without a member id: the coordinator hands one out and waits for the member to
    rejoin with it (GMM classicGroupJoinNewDynamicMember, MEMBER_ID_REQUIRED)."""
    SAYS: ClassVar[str] = "{member} must rejoin {group} with its member id (MEMBER_ID_REQUIRED)"
    group: str
    member: str


@dataclass(frozen=True, slots=True)
class JoinSuperseded(Happened):
    """A member's newer JoinGroup replaces its parked one, which is never answered (GMM
    updateMemberThenRebalanceOrCompleteJoin)."""
    SAYS: ClassVar[str] = "{member}'s earlier JoinGroup is superseded and will not be answered"
    group: str
    member: str


@dataclass(frozen=True, slots=True)
class RebalancePrepared(Happened):
    """A classic group moves to PreparingRebalance (GMM prepareRebalance)."""
    SAYS: ClassVar[str] = "{group}: preparing to rebalance ({reason})"
    group: str
    generation: int
    cause: str                # the classic-group table's event, e.g. "member-joined"
    reason: str               # why, in words (kipviz.broker.tables.classic_group.REBALANCE_CAUSES)


@dataclass(frozen=True, slots=True)
class MemberRemoved(Happened):
    """A classic member is removed by a timer (GMM completeClassicGroupJoin: did not rejoin;
    expireClassicGroupMemberHeartbeat: session timeout; the pending-member timeout)."""
    group: str
    member: str
    cause: str                # "rejoin-timeout", "session-timeout" or "pending-timeout"
    timeout_ms: int = -1      # the session timeout, for "session-timeout"

    @property
    def text(self) -> str:
        if self.cause == "rejoin-timeout":
            return f"{self.member} did not rejoin {self.group} in time and is removed"
        if self.cause == "session-timeout":
            return f"{self.member} of {self.group} missed its session timeout ({self.timeout_ms} ms) and is removed"
        return f"pending member {self.member} of {self.group} did not rejoin and is removed"


@dataclass(frozen=True, slots=True)
class GenerationCompleted(Happened):
    """A classic group's join phase ends with members: a new generation, its protocol and leader
    (GMM completeClassicGroupJoin, ClassicGroup.initNextGeneration)."""
    SAYS: ClassVar[str] = "{group}: generation {generation}, protocol {protocol}, leader {leader}"
    group: str
    generation: int
    protocol: str
    leader: str
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GenerationEmpty(Happened):
    """A classic group's join phase ends with no member: the group is Empty at the new generation
    (GMM completeClassicGroupJoin)."""
    SAYS: ClassVar[str] = "{group} is empty at generation {generation}"
    group: str
    generation: int


@dataclass(frozen=True, slots=True)
class SyncExpired(Happened):
    """Members that sent no SyncGroup within the rebalance timeout are removed (GMM expirePendingSync)."""
    group: str
    members: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.group}: {list(self.members)} sent no SyncGroup in time and are removed"


@dataclass(frozen=True, slots=True)
class AssignmentMissing(Happened):
    """The leader's SyncGroup left members out; they get an empty assignment (GMM classicGroupSync)."""
    group: str
    members: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.group}: the leader's assignment has no entry for {list(self.members)}; they get an empty assignment"


@dataclass(frozen=True, slots=True)
class MembersLeft(Happened):
    """LeaveGroup removed members of a classic group (GMM classicGroupLeaveToClassicGroup)."""
    group: str
    members: tuple[str, ...]  # member ids (a static member's instance id when it left by it)

    @property
    def text(self) -> str:
        return f"{list(self.members)} left classic group {self.group}"


@dataclass(frozen=True, slots=True)
class GroupEpochBumped(Happened):
    """A consumer group's epoch goes up: a subscription or the subscribed topics changed (GMM
    consumerGroupHeartbeat, ConsumerGroupMetadataValue)."""
    SAYS: ClassVar[str] = "{group}: group epoch {epoch}"
    group: str
    epoch: int


@dataclass(frozen=True, slots=True)
class TargetAssignmentComputed(Happened):
    """The assignor's new target for a consumer group's epoch (modern/TargetAssignmentBuilder.java)."""
    group: str
    epoch: int
    assignor: str
    # member -> ((topic id as text, partitions), ...), as pairs
    target: tuple[tuple[str, tuple[tuple[str, tuple[int, ...]], ...]], ...]

    @property
    def text(self) -> str:
        return f"{self.group}: target assignment for epoch {self.epoch} computed with {self.assignor!r}"


@dataclass(frozen=True, slots=True)
class MemberReconciled(Happened):
    """A consumer member's next state, epoch and partitions (modern/consumer/CurrentAssignmentBuilder.java)."""
    SAYS: ClassVar[str] = "{member} of {group}: {state} at epoch {epoch}"
    group: str
    member: str
    state: str
    epoch: int
    assigned: tuple[tuple[str, tuple[int, ...]], ...]     # (topic id as text, partitions)
    revoking: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class MemberFenced(Happened):
    """A consumer member is fenced by a timer: its session, or its rebalance timeout while it still
    owned partitions to revoke (GMM consumerGroupFenceMember)."""
    group: str
    member: str
    cause: str                # "session-timeout" or "revocation-timeout"
    timeout_ms: int

    @property
    def text(self) -> str:
        if self.cause == "revocation-timeout":
            return (f"{self.member} of {self.group} did not revoke its partitions within its rebalance "
                    f"timeout ({self.timeout_ms} ms) and is fenced")
        return f"{self.member} of {self.group} missed its session timeout ({self.timeout_ms} ms) and is fenced"


@dataclass(frozen=True, slots=True)
class ConsumerMemberLeft(Happened):
    """ConsumerGroupHeartbeat with epoch -1 (left) or -2 (a static member left for now and keeps its
    partitions until its session times out) (GMM consumerGroupLeave)."""
    group: str
    member: str
    instance_id: str | None = None
    temporary: bool = False   # epoch -2

    @property
    def text(self) -> str:
        if self.instance_id is None:
            return f"{self.member} left consumer group {self.group}"
        if self.temporary:
            return (f"static member {self.member} ({self.instance_id}) temporarily left {self.group}; it keeps its "
                    "partitions until its session times out")
        return f"static member {self.member} ({self.instance_id}) left consumer group {self.group}"


@dataclass(frozen=True, slots=True)
class OffsetsStaged(Happened):
    """TxnOffsetCommit wrote transactional offsets, pending until the producer's COMMIT/ABORT marker
    (OMM commitTransactionalOffset, pendingTransactionalOffsets). The flow's step 4."""
    SAYS: ClassVar[str] = ("{group}: offsets staged in producer {producer_id}'s transaction (pending until its "
                           "COMMIT/ABORT marker)")
    group: str
    producer_id: int
    partition: int            # the group's __consumer_offsets partition


@dataclass(frozen=True, slots=True)
class OffsetsResolved(Happened):
    """A marker resolved a producer's pending offsets: committed (materialized) or aborted
    (OMM replayEndTransactionMarker). The flow's step 7."""
    group: str
    producer_id: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]    # (topic, partition) of the offsets

    @property
    def text(self) -> str:
        return f"{self.group}: producer {self.producer_id}'s transactional offsets {'committed' if self.commit else 'aborted'}"


@dataclass(frozen=True, slots=True)
class StaleTransactionalOffset(Happened):
    """A committed transactional offset older (by record offset) than the offset already committed
    is not materialized (OMM replayEndTransactionMarker)."""
    group: str
    topic: str
    partition: int
    offset: int
    committed_offset: int
    record_offset: int
    committed_record_offset: int

    @property
    def text(self) -> str:
        return (f"{self.group} {self.topic}-{self.partition}: transactional offset {self.offset} is older than the "
                f"committed offset {self.committed_offset} (record offset {self.record_offset} < "
                f"{self.committed_record_offset}) and is not materialized")


@dataclass(frozen=True, slots=True)
class DeletedTopicOffsetsRemoved(Happened):
    """A topic was deleted: every group's offsets for its partitions get tombstones (OMM
    onPartitionsDeleted, KAFKA-16168)."""
    SAYS: ClassVar[str] = "topic {topic} deleted: {removed} committed offset(s) removed (tombstones)"
    topic: str
    removed: int              # tombstones written
    offsets: tuple[tuple[str, int], ...]      # (group, partition), each once


@dataclass(frozen=True, slots=True)
class GroupDeleted(Happened):
    """DeleteGroups removed a group and its offsets (GroupCoordinatorShard.deleteGroups, OMM deleteAllOffsets)."""
    SAYS: ClassVar[str] = "group {group} deleted: {tombstones} offset tombstone(s)"
    group: str
    tombstones: int
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetsDeleted(Happened):
    """OffsetDelete tombstoned a group's offsets (OMM deleteOffsets)."""
    SAYS: ClassVar[str] = "{group}: OffsetDelete removed {removed} committed offset(s) (tombstones)"
    group: str
    removed: int
    partition: int



# ---- transactions and KIP-1289 --------------------------------------------------------------------


# ---- clients ---------------------------------------------------------------------------------------


# ---- operators, scenarios and workloads ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientAction(Event):
    """A decision a client model took (version chosen, fallback, retry, abort)."""
    client: str
    action: str
    detail: dict


@dataclass(frozen=True, slots=True)
class Note(Event):
    text: str
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LogCleaned(Event):
    """One pass of the log cleaner over a partition (kipviz.broker.cleaner): the batches held below
    offset rewritten_end (whole segments) were rewritten as batches_after batches; the offset map
    covered the dirty offsets [first_dirty_offset, end_offset); kept: the offsets below
    rewritten_end holding a record (or marker) after the pass, as (first, last) runs."""
    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int
    batches_before: int
    batches_after: int
    bytes_before: int
    bytes_after: int
    records_before: int
    records_removed: int
    log_start_offset: int
    rewritten_end: int = 0
    kept: tuple = ()


class _Factory:
    """The default of a field with a default_factory (dataclasses' own __init__ marks it alike)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _slot_init(cls):
    """An __init__ for frozen slotted event class `cls` that fills each slot through its
    descriptor. The one @dataclass writes calls object.__setattr__ by name for every field, which
    made up about 40 % of creating an event; events are created several times per record. The
    instances stay frozen: assignment still raises FrozenInstanceError."""
    env, params, body = {"_FACTORY": _FACTORY}, [], []
    for i, f in enumerate(fields(cls)):
        env[f"_s{i}"] = getattr(cls, f.name).__set__       # the slot's member descriptor
        if f.default is not MISSING:
            env[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        elif f.default_factory is not MISSING:
            env[f"_f{i}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _f{i}()")
        else:
            params.append(f.name)
        body.append(f"    _s{i}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body), env)   # noqa: S102 - built from field names
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def event_classes() -> dict[str, type[Event]]:
    """Every event class of this module by its kind (the class name), the envelope and the bases
    left out. (Read from the module, not __subclasses__: a slotted dataclass is a copy of the class
    first defined, which stays among the subclasses.)"""
    return {name: cls for name, cls in sorted(globals().items()) if not name.startswith("_")
            and isinstance(cls, type) and issubclass(cls, Event) and cls not in (Event, Happened, ClientDid)}


for _cls in (Event, Happened, ClientDid, *event_classes().values()):
    _cls.__init__ = _slot_init(_cls)
del _cls
