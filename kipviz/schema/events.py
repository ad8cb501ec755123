"""Everything the model does is recorded as one of these typed events, in order. They are the only
input to sequence diagrams, animations and sample logs.

The envelope (Event: seq, t) and the wire (RequestReceived, ResponseSent), state machines
(StateChanged) and logs (RecordAppended) are below; every other thing that happens is one small
class of its own with typed fields, under Happened (the broker, the coordinators, operators and
workloads) or ClientDid (a client model's decisions). Each says what it is in one sentence
(`text`), built from its fields, and cites the Kafka source it follows. Readers match classes and
read fields; no event carries a free-form dict (a request's or response's body and a record's
decoded value are dicts shaped by the message schemas, kipviz/defs, not by the event)."""
from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Annotated, ClassVar, NamedTuple


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
    # "column": a column of its own in the event log's Parquet (kipviz/sampledata/schema.py EVENT)
    machine: Annotated[str, "column"]      # table name, e.g. "transaction", "classic-group", "consumer-member"
    key: Annotated[str, "column"]          # which instance: a transactional id, a group id, "group/member"
    from_state: Annotated[str, "column"]
    to_state: Annotated[str, "column"]
    cause: Annotated[str, "column"]        # the event of the table row that fired
    status: Annotated[str, "column"] = "released"  # released / accepted / proposed: the row's label


@dataclass(frozen=True, slots=True)
class RecordAppended(Event):
    topic: Annotated[str, "column"]
    partition: Annotated[int, "column", "int32"]
    offset: Annotated[int, "column"]
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
@dataclass(frozen=True, slots=True)
class TopicCreated(Happened):
    """A topic made with a new topic id, KIP-516 (metadata/.../controller/ReplicationControlManager.java
    createTopic)."""
    SAYS: ClassVar[str] = "topic {topic} created"
    topic: str
    topic_id: str             # the new id, in UUID text form
    partitions: int


@dataclass(frozen=True, slots=True)
class TopicDeleted(Happened):
    """A topic and its id gone (metadata/.../controller/ReplicationControlManager.java deleteTopic)."""
    SAYS: ClassVar[str] = "topic {topic} deleted"
    topic: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class TopicAutoCreated(Happened):
    """A topic a Metadata request named, created by the broker (core/.../server/AutoTopicCreationManager.scala)."""
    SAYS: ClassVar[str] = "topic {topic} auto-created by a Metadata request"
    topic: str
    api: str = "Metadata"


@dataclass(frozen=True, slots=True)
class TopicNotAutoCreated(Happened):
    """An auto-creation the kit refuses: the model's partition budget is spent (ClusterConfig;
    Kafka has no such limit, core/.../server/AutoTopicCreationManager.scala)."""
    SAYS: ClassVar[str] = ("topic {topic} not auto-created: the model holds {held} partitions "
                           "(kit limit ClusterConfig.max_cluster_partitions={limit})")
    topic: str
    held: int
    limit: int
    api: str = "Metadata"


@dataclass(frozen=True, slots=True)
class TopicCreationValidated(Happened):
    """CreateTopics with validateOnly: the topic could be made, nothing is
    (core/.../server/ControllerApis.scala handleCreateTopics)."""
    SAYS: ClassVar[str] = "CreateTopics validateOnly: {topic} could be created"
    topic: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True, slots=True)
class PartitionsAdded(Happened):
    """CreatePartitions grew a topic (metadata/.../controller/ReplicationControlManager.java createPartitions)."""
    SAYS: ClassVar[str] = "topic {topic}: {old_count} -> {partitions} partitions (CreatePartitions)"
    topic: str
    old_count: int
    partitions: int
    api: str = "CreatePartitions"


@dataclass(frozen=True, slots=True)
class BrokerCrashed(Happened):
    """A fault a scenario injects: the broker process stops and answers nothing
    (core/.../server/BrokerServer.scala, without its controlled shutdown)."""
    SAYS: ClassVar[str] = "broker {broker} crashed"
    broker: int


@dataclass(frozen=True, slots=True)
class BrokerRestarted(Happened):
    """The crashed broker is back and loads its state again (core/.../server/BrokerServer.scala startup)."""
    SAYS: ClassVar[str] = "broker {broker} restarted"
    broker: int


@dataclass(frozen=True, slots=True)
class LeaderMoved(Happened):
    """A partition's leadership moved, its leader epoch one up
    (metadata/.../controller/PartitionChangeBuilder.java)."""
    SAYS: ClassVar[str] = "{topic}-{partition} leader {old_leader} -> {leader} (epoch {leader_epoch})"
    topic: str
    partition: int
    old_leader: int
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class LeaderElected(Happened):
    """ElectLeaders chose a new leader (metadata/.../controller/ReplicationControlManager.java electLeader)."""
    SAYS: ClassVar[str] = "{topic}-{partition}: {election} leader election elected broker {leader} (ElectLeaders)"
    topic: str
    partition: int
    leader: int
    election: str             # "preferred" or "unclean"
    api: str = "ElectLeaders"


@dataclass(frozen=True, slots=True)
class InternalError(Happened):
    """A handler raised: answered UNKNOWN_SERVER_ERROR (core/.../server/KafkaApis.scala handle ->
    requestHelper.handleError); in the kit, a model bug."""
    SAYS: ClassVar[str] = "internal error in {api}: {error}"
    api: str
    error: str


# why a connection was closed (ConnectionClosed.reason), each with its sentence
CLOSE_REASONS: dict[str, str] = {
    "acks0-error": "{api} v{version}: error with acks=0, connection closed",
    "not-served": "connection closed: {api} v{version} is not served ({why})",
    "unreadable": "connection closed: unreadable {what}: {why}",
    "idle": "connection closed: idle for more than {limit_ms} ms (connections.max.idle.ms)",
    "frame-timeout": ("connection closed: a frame still incomplete after {limit_ms} ms ({size} bytes read; "
                      "the kit's frame_timeout_ms)"),
    "mid-request": "connection closed mid-request: {why}",
    "size-out-of-range": "connection closed: request size {size} out of range",
}


@dataclass(frozen=True, slots=True)
class ConnectionClosed(Happened):
    """The broker closed a connection without an answer (core/.../network/SocketServer.scala:
    Processor.processChannelException for an unserved or unreadable request, the idle-connection
    reaper, KafkaApis closing after an acks=0 Produce error). `reason` is one of CLOSE_REASONS."""
    broker: int
    client: str
    reason: str
    api: str = ""             # the request's API, when it was read that far
    version: int = -1
    correlation_id: int = -1
    why: str = ""             # not-served: the versions served; unreadable: the decode error; mid-request: what was read
    limit_ms: int = -1        # idle, frame-timeout: the limit passed
    size: int = -1            # frame-timeout: the bytes read; size-out-of-range: the size prefix

    @property
    def text(self) -> str:
        what = f"{self.api} v{self.version}" if self.api else "request"
        return CLOSE_REASONS[self.reason].format(api=self.api, version=self.version, why=self.why, what=what,
                                                 limit_ms=self.limit_ms, size=self.size)


@dataclass(frozen=True, slots=True)
class NoResponse(Happened):
    """A Produce with acks=0: nothing goes back on the wire (core/.../server/KafkaApis.scala handleProduceRequest)."""
    SAYS: ClassVar[str] = "{api} v{version} needs no response (acks=0)"
    broker: int
    client: str
    api: str
    version: int
    correlation_id: int


@dataclass(frozen=True, slots=True)
class ApiVersionsRefused(Happened):
    """ApiVersions v5 named another cluster or node, KIP-1242 (clients/.../requests/ApiVersionsRequest.java)."""
    SAYS: ClassVar[str] = "ApiVersions v{version} refused: {why} ({error})"
    broker: int
    client: str
    version: int
    error: str                # the error name answered
    why: str


@dataclass(frozen=True, slots=True)
class DuplicateBatch(Happened):
    """An idempotent producer's batch already in the log: answered with its offset, not written
    again (storage/.../internals/log/ProducerStateEntry.java findDuplicateBatch)."""
    SAYS: ClassVar[str] = ("duplicate batch from producer {producer_id} on {topic}-{partition}: not written "
                           "again, answered with its offset {offset}")
    topic: str
    partition: int
    producer_id: int
    base_sequence: int
    offset: int


@dataclass(frozen=True, slots=True)
class ConfigsChanged(Happened):
    """A topic's configs or a broker's dynamic configs after (Incremental)AlterConfigs
    (metadata/.../controller/ConfigurationControlManager.java). resource: the topic, or the broker
    id ("" for the cluster default)."""
    resource_type: str        # "TOPIC" or "BROKER"
    resource: str
    configs: tuple[tuple[str, str | None], ...]
    api: str

    @property
    def text(self) -> str:
        now = dict(self.configs)
        if self.resource_type == "TOPIC":
            return f"topic {self.resource} configs now {now}"
        return f"broker {self.resource or 'cluster default'} dynamic configs now {now}"


@dataclass(frozen=True, slots=True)
class _AclChange(Happened):
    """One ACL binding (metadata/.../controller/AclControlManager.java)."""
    permission: str           # ALLOW or DENY
    principal: str
    operation: str
    resource_type: str
    pattern: str
    resource_name: str
    host: str


@dataclass(frozen=True, slots=True)
class AclAdded(_AclChange):
    """CreateAcls stored a binding (metadata/.../controller/AclControlManager.java createAcls)."""
    SAYS: ClassVar[str] = ("ACL added: {permission} {principal} {operation} on {resource_type} {pattern} "
                           "{resource_name!r} from {host}")


@dataclass(frozen=True, slots=True)
class AclRemoved(_AclChange):
    """DeleteAcls removed a binding (metadata/.../controller/AclControlManager.java deleteAcls)."""
    SAYS: ClassVar[str] = ("ACL removed: {permission} {principal} {operation} on {resource_type} {pattern} "
                           "{resource_name!r}")


@dataclass(frozen=True, slots=True)
class ShareGroupOffsetsAltered(Happened):
    """AlterShareGroupOffsets set a share group's start offsets
    (group-coordinator/.../GroupCoordinatorService.java alterShareGroupOffsets)."""
    SAYS: ClassVar[str] = "share group {group}: start offsets altered (AlterShareGroupOffsets)"
    group: str


@dataclass(frozen=True, slots=True)
class SaslAuthenticated(Happened):
    """A SASL exchange ended with a principal (clients/.../security/authenticator/SaslServerAuthenticator.java)."""
    SAYS: ClassVar[str] = "SASL {mechanism}: {client} authenticated as {principal}"
    broker: int
    client: str
    mechanism: str
    principal: str


@dataclass(frozen=True, slots=True)
class SaslFailed(Happened):
    """A SASL exchange failed and the connection is closed
    (clients/.../security/authenticator/SaslServerAuthenticator.java)."""
    SAYS: ClassVar[str] = "SASL: {why} (connection closed)"
    broker: int
    client: str
    mechanism: str | None     # None: it failed before a mechanism was chosen
    why: str


@dataclass(frozen=True, slots=True)
class LogStartOffsetMoved(Happened):
    """A log's start offset moved up and the batches below it went (storage/.../internals/log/UnifiedLog.java
    maybeIncrementLogStartOffset, deleteOldSegments). by: what moved it, as the sentence says it
    ("log retention (...)", "DeleteRecords", "share coordinator record pruning")."""
    SAYS: ClassVar[str] = "{by}: {topic}-{partition} log start offset {old} -> {log_start_offset}"
    topic: str
    partition: int
    old: int
    log_start_offset: int
    by: str
    reason: str
    batches_deleted: int


@dataclass(frozen=True, slots=True)
class _ReplicaLogEvent(Happened):
    """What a broker's local log of one partition looks like (core/.../cluster/Partition.scala,
    storage/.../internals/log/UnifiedLog.java)."""
    broker: int
    topic: str
    partition: int
    topic_id: str | None      # Kafka's base64 form; None: no partition.metadata
    dir: str
    state: str                # the replica table's state (kipviz/broker/tables/replica.py)
    partition_metadata: str | None
    log_end_offset: int
    leader_epoch: int
    delete_at: int | None


@dataclass(frozen=True, slots=True)
class ReplicaLogSeeded(_ReplicaLogEvent):
    """A log on disk from before topic ids: no partition.metadata, KIP-516 (core/.../server/ReplicaManager.scala)."""
    SAYS: ClassVar[str] = ("broker {broker}: {topic}-{partition} on disk without partition.metadata (written before "
                           "topic ids)")


@dataclass(frozen=True, slots=True)
class ReplicaLogCreated(_ReplicaLogEvent):
    """LeaderAndIsr made a local log (core/.../server/ReplicaManager.scala becomeLeaderOrFollower)."""
    leader: int

    @property
    def text(self) -> str:
        role = "leader" if self.leader == self.broker else "follower"
        return (f"broker {self.broker}: {self.topic}-{self.partition} created ({role}, epoch {self.leader_epoch})"
                + (", partition.metadata written" if self.topic_id else ", no topic id"))


@dataclass(frozen=True, slots=True)
class ReplicaTopicIdAssigned(_ReplicaLogEvent):
    """A log without a topic id got one, partition.metadata written (core/.../cluster/Partition.scala
    checkOrSetTopicId, UnifiedLog.assignTopicId)."""
    SAYS: ClassVar[str] = "broker {broker}: {topic}-{partition} migrated, partition.metadata written"


@dataclass(frozen=True, slots=True)
class ReplicaTopicIdMismatch(_ReplicaLogEvent):
    """LeaderAndIsr's topic id is not the log's: INCONSISTENT_TOPIC_ID, the log stays
    (core/.../server/ReplicaManager.scala becomeLeaderOrFollower)."""
    SAYS: ClassVar[str] = ("ERROR broker {broker}: topic id in memory {topic_id} does not match {request_topic_id} "
                           "for {topic}-{partition}: INCONSISTENT_TOPIC_ID, the old log stays")
    request_topic_id: str


@dataclass(frozen=True, slots=True)
class ReplicaLogDeletionScheduled(_ReplicaLogEvent):
    """A log renamed for deletion, logged at WARN, removed after the delay
    (storage/.../internals/log/LogManager.java asyncDelete)."""
    cause: str                # the replica table's event: stale-topic-id, absent-from-full, ...

    @property
    def text(self) -> str:
        return (f"WARN broker {self.broker}: {self.topic}-{self.partition} ({self.topic_id or 'no topic id'}) "
                f"moved to {self.dir}, deleted at t={self.delete_at}")


@dataclass(frozen=True, slots=True)
class ReplicaLogRemoved(_ReplicaLogEvent):
    """A log's directory removed after file.delete.delay.ms (storage/.../internals/log/LogManager.java
    deleteLogs)."""
    SAYS: ClassVar[str] = "broker {broker}: {dir} removed from disk"


@dataclass(frozen=True, slots=True)
class StrayLogsKept(Happened):
    """A FULL LeaderAndIsr left out local partitions; a ZooKeeper-mode broker keeps them
    (core/.../server/ReplicaManager.scala, KIP-516)."""
    broker: int
    partitions: tuple[str, ...]   # "topic-partition"

    @property
    def text(self) -> str:
        return (f"broker {self.broker}: FULL LeaderAndIsr omits {len(self.partitions)} local partition(s); a "
                "shipped ZooKeeper-mode broker keeps them (stray logs are reconciled only for a KRaft controller "
                "during the migration)")


# ---- groups (classic, consumer, share) and offsets ------------------------------------------------
# Kafka: group-coordinator/src/main/java/org/apache/kafka/coordinator/group/ (GroupMetadataManager.java below is
# GroupMetadataManager.java, OffsetMetadataManager.java OffsetMetadataManager.java).
@dataclass(frozen=True, slots=True)
class GroupCreated(Happened):
    """A new group in the coordinator's table, Empty (GroupMetadataManager.java getOrMaybeCreateClassicGroup /
    getOrMaybeCreateConsumerGroup)."""
    SAYS: ClassVar[str] = "{group_type} group {group} created"
    group: str
    group_type: str           # "classic" or "consumer"
    partition: int            # its __consumer_offsets partition


@dataclass(frozen=True, slots=True)
class GroupRemoved(Happened):
    """A group leaves the table: converted to the other type, or deleted (GroupMetadataManager.java
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
    classic member inside a consumer group, GroupMetadataManager.java) is not modelled, so it is refused."""
    SAYS: ClassVar[str] = ("JoinGroup for consumer group {group}: classic members in consumer groups "
                           "are not modelled")
    group: str


@dataclass(frozen=True, slots=True)
class MemberJoined(Happened):
    """A member joins a group (GroupMetadataManager.java addMemberThenRebalanceOrCompleteJoin for a classic group,
    consumerGroupHeartbeat at member epoch 0 for a consumer group)."""
    SAYS: ClassVar[str] = "{member} joins {group_type} group {group}"
    group: str
    member: str
    group_type: str           # "classic" or "consumer"
    reason: str | None = None  # JoinGroupRequest.Reason (classic, v8+)


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced(Happened):
    """A static member (group.instance.id) came back with a new member id, which replaces the old
    one (GroupMetadataManager.java updateStaticMemberThenRebalanceOrCompleteJoin / updateStaticMember)."""
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
    rejoin with it (GroupMetadataManager.java classicGroupJoinNewDynamicMember, MEMBER_ID_REQUIRED)."""
    SAYS: ClassVar[str] = "{member} must rejoin {group} with its member id (MEMBER_ID_REQUIRED)"
    group: str
    member: str


@dataclass(frozen=True, slots=True)
class JoinSuperseded(Happened):
    """A member's newer JoinGroup replaces its parked one, which is never answered (GroupMetadataManager.java
    updateMemberThenRebalanceOrCompleteJoin)."""
    SAYS: ClassVar[str] = "{member}'s earlier JoinGroup is superseded and will not be answered"
    group: str
    member: str


@dataclass(frozen=True, slots=True)
class RebalancePrepared(Happened):
    """A classic group moves to PreparingRebalance (GroupMetadataManager.java prepareRebalance)."""
    SAYS: ClassVar[str] = "{group}: preparing to rebalance ({reason})"
    group: str
    generation: int
    cause: str                # the classic-group table's event, e.g. "member-joined"
    reason: str               # why, in words (kipviz.broker.tables.classic_group.REBALANCE_CAUSES)


@dataclass(frozen=True, slots=True)
class MemberRemoved(Happened):
    """A classic member is removed by a timer (GroupMetadataManager.java completeClassicGroupJoin: did not rejoin;
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
    (GroupMetadataManager.java completeClassicGroupJoin, ClassicGroup.java initNextGeneration)."""
    SAYS: ClassVar[str] = "{group}: generation {generation}, protocol {protocol}, leader {leader}"
    group: str
    generation: int
    protocol: str
    leader: str
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GenerationEmpty(Happened):
    """A classic group's join phase ends with no member: the group is Empty at the new generation
    (GroupMetadataManager.java completeClassicGroupJoin)."""
    SAYS: ClassVar[str] = "{group} is empty at generation {generation}"
    group: str
    generation: int


@dataclass(frozen=True, slots=True)
class SyncExpired(Happened):
    """Members that sent no SyncGroup within the rebalance timeout are removed
    (GroupMetadataManager.java expirePendingSync)."""
    group: str
    members: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.group}: {list(self.members)} sent no SyncGroup in time and are removed"


@dataclass(frozen=True, slots=True)
class AssignmentMissing(Happened):
    """The leader's SyncGroup left members out; they get an empty assignment
    (GroupMetadataManager.java classicGroupSync)."""
    group: str
    members: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.group}: the leader's assignment has no entry for {list(self.members)}; they get an empty assignment"


@dataclass(frozen=True, slots=True)
class MembersLeft(Happened):
    """LeaveGroup removed members of a classic group (GroupMetadataManager.java classicGroupLeaveToClassicGroup)."""
    group: str
    members: tuple[str, ...]  # member ids (a static member's instance id when it left by it)

    @property
    def text(self) -> str:
        return f"{list(self.members)} left classic group {self.group}"


@dataclass(frozen=True, slots=True)
class GroupEpochBumped(Happened):
    """A consumer group's epoch goes up: a subscription or the subscribed topics changed (GroupMetadataManager.java
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
    owned partitions to revoke (GroupMetadataManager.java consumerGroupFenceMember)."""
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
    partitions until its session times out) (GroupMetadataManager.java consumerGroupLeave)."""
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
    (OffsetMetadataManager.java commitTransactionalOffset, pendingTransactionalOffsets). The flow's step 4."""
    SAYS: ClassVar[str] = ("{group}: offsets staged in producer {producer_id}'s transaction (pending until its "
                           "COMMIT/ABORT marker)")
    group: str
    producer_id: int
    partition: int            # the group's __consumer_offsets partition


@dataclass(frozen=True, slots=True)
class OffsetsResolved(Happened):
    """A marker resolved a producer's pending offsets: committed (materialized) or aborted
    (OffsetMetadataManager.java replayEndTransactionMarker). The flow's step 7."""
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
    is not materialized (OffsetMetadataManager.java replayEndTransactionMarker)."""
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
    """A topic was deleted: every group's offsets for its partitions get tombstones (OffsetMetadataManager.java
    onPartitionsDeleted, KAFKA-16168)."""
    SAYS: ClassVar[str] = "topic {topic} deleted: {removed} committed offset(s) removed (tombstones)"
    topic: str
    removed: int              # tombstones written
    offsets: tuple[tuple[str, int], ...]      # (group, partition), each once


@dataclass(frozen=True, slots=True)
class GroupDeleted(Happened):
    """DeleteGroups removed a group and its offsets (GroupCoordinatorShard.java deleteGroups,
    OffsetMetadataManager.java deleteAllOffsets)."""
    SAYS: ClassVar[str] = "group {group} deleted: {tombstones} offset tombstone(s)"
    group: str
    tombstones: int
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetsDeleted(Happened):
    """OffsetDelete tombstoned a group's offsets (OffsetMetadataManager.java deleteOffsets)."""
    SAYS: ClassVar[str] = "{group}: OffsetDelete removed {removed} committed offset(s) (tombstones)"
    group: str
    removed: int
    partition: int



# ---- transactions and KIP-1289 --------------------------------------------------------------------

_KIT = "share_marker_routing={routing}: kit's suggestion, not KIP-1289"


@dataclass(frozen=True, slots=True)
class ProducerIdRenewed(Happened):
    """InitProducerId found the epoch exhausted and gave the transactional id a new producer id
    (core/.../transaction/TransactionCoordinator.scala: handleInitProducerId)."""
    transactional_id: str
    old_producer_id: int
    new_producer_id: int
    epoch: int
    SAYS: ClassVar[str] = "{transactional_id}: epoch {epoch} exhausted, new producer id {new_producer_id}"


@dataclass(frozen=True, slots=True)
class TransactionTimedOut(Happened):
    """An Ongoing transaction ran past transaction.timeout.ms and is aborted
    (core/.../transaction/TransactionStateManager.scala: timedOutTransactions)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    started: int
    SAYS: ClassVar[str] = "{transactional_id}: transaction timed out after {timeout_ms} ms, aborting"


@dataclass(frozen=True, slots=True)
class PartitionAddedToTxn(Happened):
    """A broker's own AddPartitionsToTxn (add, or verifyOnly) for one partition, for a Produce or
    TxnOffsetCommit (core/.../server/AddPartitionsToTxnManager.scala: addOrVerifyTransaction)."""
    version: int
    verify_only: bool
    transactional_id: str | None
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int
    via: str
    error_code: int
    coordinator: int | None

    @property
    def text(self) -> str:
        return (f"AddPartitionsToTxn v{self.version} ({'verifyOnly' if self.verify_only else 'add'}) "
                f"for {self.topic}-{self.partition} from {self.via}")


@dataclass(frozen=True, slots=True)
class MarkersHeldBack(Happened):
    """A scenario's fault: the coordinator's markers for one partition do not reach its leader
    (core/.../transaction/TransactionMarkerChannelManager.scala is where they would queue)."""
    topic: str
    partition: int
    SAYS: ClassVar[str] = "markers for {topic}-{partition} held back"


@dataclass(frozen=True, slots=True)
class MarkerDropped(Happened):
    """No leader for a partition of the transaction (it is gone): its marker is dropped
    (core/.../transaction/TransactionMarkerChannelManager.scala: addTxnMarkersToBrokerQueue)."""
    transactional_id: str
    topic: str
    partition: int
    SAYS: ClassVar[str] = "{transactional_id}: no marker for {topic}-{partition} (partition gone)"


@dataclass(frozen=True, slots=True)
class MarkerSent(Happened):
    """The transaction coordinator's WriteTxnMarkers to one partition's leader
    (core/.../transaction/TransactionMarkerChannelManager.scala)."""
    broker: int
    coordinator: int
    transactional_id: str
    topic: str
    partition: int
    marker: str
    producer_id: int
    producer_epoch: int
    SAYS: ClassVar[str] = "WriteTxnMarkers {marker} -> broker {broker}: {topic}-{partition}"


@dataclass(frozen=True, slots=True)
class ShareAckRejected(Happened):
    """TxnShareAcknowledge failed on a partition: nothing staged, all or nothing (KIP-1289, proposed;
    docs/modelling-a-kip.md)."""
    group: str
    member: str
    transactional_id: str
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = "TxnShareAcknowledge rejected, nothing staged (KIP-1289, proposed)"


@dataclass(frozen=True, slots=True)
class ShareAckStaged(Happened):
    """TxnShareAcknowledge moved acquired records to TX_PENDING under the producer's id and epoch
    (KIP-1289, proposed; the staging side of share-partition leader, kipviz.broker.share_txn)."""
    group: str
    member: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    records: int
    state_partitions: tuple[tuple[str, int], ...]
    broker: int
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = "TxnShareAcknowledge staged {records} record(s) in TX_PENDING (KIP-1289, proposed)"


@dataclass(frozen=True, slots=True)
class ShareStatePartitionsAdded(Happened):
    """The share-partition leader's broker-internal AddPartitionsToTxn of __share_group_state-N
    (KIP-1289, proposed; as AddPartitionsToTxnManager.scala's TV2 implicit add)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[tuple[str, int], ...]
    via: str
    error_code: int
    coordinator: int
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def text(self) -> str:
        return (f"AddPartitionsToTxn (broker-internal, KIP-1289 proposed) for "
                f"{', '.join(f'{t}-{p}' for t, p in self.partitions)} from {self.via}")


@dataclass(frozen=True, slots=True)
class ShareParticipantsAdded(Happened):
    """share_marker_routing "participants" (the kit's suggestion, not KIP-1289): share partitions
    registered as transaction participants (as AddPartitionsToTxnManager.scala's implicit add)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    broker: int
    via: str
    share_participants: tuple[tuple[str, str, int], ...]     # (group, topic id, partition)
    share_partitions: tuple[str, ...]                        # "group/topic-partition"
    error_code: int
    coordinator: int
    suggestion: str = "kit"
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def text(self) -> str:
        return (f"AddPartitionsToTxn (broker-internal) registers share partition(s) "
                f"{', '.join(self.share_partitions)} as participants from {self.via} on broker {self.broker} "
                f"(share_marker_routing=participants: kit's suggestion, not KIP-1289)")


@dataclass(frozen=True, slots=True)
class ShareMarkerSent(Happened):
    """share_marker_routing "participants" (the kit's suggestion, not KIP-1289): the coordinator's
    WriteTxnMarkers to a share partition's leader (as TransactionMarkerChannelManager.scala's)."""
    broker: int
    coordinator: int
    transactional_id: str
    group: str
    topic: str
    partition: int
    marker: str
    producer_id: int
    producer_epoch: int
    suggestion: str = "kit"
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = ("WriteTxnMarkers {marker} -> broker {broker}: share partition {group}/{topic}-{partition} "
                           "(share_marker_routing=participants: kit's suggestion, not KIP-1289)")


@dataclass(frozen=True, slots=True)
class ShareMarkerDropped(Happened):
    """share_marker_routing "participants": the share partition's topic is gone, its marker dropped
    (as TransactionMarkerChannelManager.scala does for a partition with no leader)."""
    transactional_id: str
    group: str
    topic_id: str
    partition: int
    suggestion: str = "kit"
    SAYS: ClassVar[str] = "{transactional_id}: no marker for share partition {group}/{topic_id}-{partition} (partition gone)"


@dataclass(frozen=True, slots=True)
class MarkerForwarded(Happened):
    """share_marker_routing "forward-to-leader" (the kit's suggestion, not KIP-1289): the broker that
    received a marker on __share_group_state-`partition` forwards it to a share partition's leader."""
    partition: int            # of __share_group_state
    marker_broker: int        # the broker that received the marker
    broker: int               # the share partitions' leader it goes to
    share_partitions: str     # "topic-p, ..."
    producer_id: int
    producer_epoch: int | None
    commit: bool
    routing: str = "forward-to-leader"
    suggestion: str = "kit"
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    @property
    def text(self) -> str:
        return (f"broker {self.marker_broker} forwards the {self.marker} marker of __share_group_state-"
                f"{self.partition} to broker {self.broker}, leader of {self.share_partitions} "
                f"({_KIT.format(routing=self.routing)})")


@dataclass(frozen=True, slots=True)
class MarkerResolved(Happened):
    """A KIP-1289 marker reached a broker and resolved `records` TX_PENDING records (0: `reason` says
    why none); the KIP's hook on __share_group_state-N (`participant` False: `partition` is N) or the
    kit's participant marker (True: `partition` is the share partition's) (kipviz.broker.share_txn)."""
    broker: int
    marker_broker: int
    partition: int
    producer_id: int
    producer_epoch: int | None
    commit: bool
    routing: str
    records: int
    share_partitions: str = ""            # the state-partition hook: "topic-p, ..." it reached
    group: str | None = None              # a participant marker: the share partition
    topic: str | None = None
    offsets: tuple[int, ...] = ()
    reason: str = ""                      # why nothing moved
    forwarded_by: int | None = None
    participant: bool = False
    missing: bool = False                 # a participant marker for a share partition that is not there
    topic_id: str = ""
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    @property
    def suggestion(self) -> str | None:
        """"kit" when the kit's suggestion (not KIP-1289) carried the marker here."""
        return "kit" if self.participant or self.forwarded_by is not None else None

    @property
    def text(self) -> str:
        m, b = self.marker, self.broker
        if self.participant:
            how = f"({_KIT.format(routing=self.routing)})"
            if self.missing:
                return (f"{m} marker for share partition {self.group}/{self.topic_id}-{self.partition} on broker "
                        f"{b}: no such share partition {how}")
            name = f"{self.group}/{self.topic}-{self.partition}"
            if self.records:
                return (f"{m} marker for share partition {name}: broker {b}, its leader, resolved {self.records} "
                        f"TX_PENDING record(s) {how} (KIP-1289, proposed)")
            return f"{m} marker for share partition {name} resolved nothing on broker {b}: {self.reason} {how} (KIP-1289, proposed)"
        where = f"__share_group_state-{self.partition}"
        how = "" if self.forwarded_by is None else \
            f" (forwarded by broker {self.forwarded_by}: kit's suggestion, not KIP-1289)"
        if self.records:
            return (f"{m} marker on {where}: broker {b} resolved {self.records} TX_PENDING record(s) of "
                    f"{self.share_partitions}{how} (KIP-1289, proposed)")
        return f"{m} marker on {where} resolved nothing on broker {b}{how}: {self.reason} (KIP-1289, proposed)"


class Unreached(NamedTuple):
    """Records of one share partition a KIP-1289 marker did not reach (MarkerUnreached.unreached)."""
    group: str
    topic: str
    partition: int
    offsets: tuple[int, ...]
    leader: int | None
    reason: str                        # "not-colocated" or "leader-change" (corner case 12)
    staged_state_leader_epoch: int
    state_leader_epoch: int


@dataclass(frozen=True, slots=True)
class MarkerUnreached(Happened):
    """A KIP-1289 marker on __share_group_state-`partition` reached `broker` only, and the records it
    would have resolved are on share partitions led elsewhere (KIP-1289 as written: the hook
    resolves the SharePartition instances of the receiving broker; kipviz.broker.share_txn)."""
    broker: int
    partition: int
    producer_id: int
    producer_epoch: int | None
    commit: bool
    routing: str
    unreached: tuple[Unreached, ...]
    records: int = 0
    status: str = "proposed"
    kip: str = "KIP-1289"

    @property
    def marker(self) -> str:
        return "COMMIT" if self.commit else "ABORT"

    @property
    def text(self) -> str:
        where = f"__share_group_state-{self.partition}"
        said = "; ".join(_unreached_text(u, self.broker, where) for u in self.unreached)
        return f"{self.marker} marker on {where} resolved nothing on broker {self.broker} for {said} (KIP-1289, proposed)"


def _unreached_text(u: Unreached, receiver: int, where: str) -> str:
    head = f"{u.topic}-{u.partition} @{','.join(map(str, u.offsets))}, led by broker {u.leader}"
    if u.reason == "leader-change":
        return (f"{head}: staged under share-state leader epoch {u.staged_state_leader_epoch}, the leader is now "
                f"at {u.state_leader_epoch}: {where}'s leader changed since the staging, the new leader broker "
                f"{receiver} does not hold that TX_PENDING (corner case 12); the records stay TX_PENDING until their "
                "lock expires")
    return (f"{head}, not by broker {receiver}: KIP-1289's hook resolves only the SharePartition instances on "
            "the broker that receives the marker, so these stay TX_PENDING until their lock expires, are "
            "redelivered and processed again (share partition and state partition not co-located: no window "
            "the KIP lists)")


@dataclass(frozen=True, slots=True)
class AcquisitionLockExpired(Happened):
    """Acquired records whose acquisition lock ran out go back to AVAILABLE (TX_PENDING first to
    ACQUIRED, KIP-1289 corner case 6) (core/.../server/share/SharePartition.java: acquisitionLockTimerTask)."""
    group: str
    topic: str
    partition: int
    offsets: tuple[int, ...]
    SAYS: ClassVar[str] = "acquisition lock expired on {topic}-{partition}"


@dataclass(frozen=True, slots=True)
class SharePartitionReloaded(Happened):
    """A share partition rebuilt from __share_group_state (a new leader, a restart): in-flight records
    back to AVAILABLE (core/.../server/share/SharePartition.java: maybeInitialize)."""
    group: str
    topic: str
    partition: int
    why: str
    offsets: tuple[int, ...]           # the records that were in flight (ACQUIRED or TX_PENDING)
    spso: int
    state_epoch: int

    @property
    def text(self) -> str:
        return (f"share partition {self.group}/{self.topic}-{self.partition} reloaded from __share_group_state "
                f"after {self.why}: {len(self.offsets)} in-flight record(s) back to AVAILABLE")


@dataclass(frozen=True, slots=True)
class ShareGroupCreated(Happened):
    """The first ShareGroupHeartbeat of a new group id creates the group
    (group-coordinator/.../GroupMetadataManager.java: shareGroupHeartbeat)."""
    group: str
    SAYS: ClassVar[str] = "share group {group} created"


@dataclass(frozen=True, slots=True)
class ShareMemberJoined(Happened):
    """A member joined a share group; the group epoch is bumped
    (group-coordinator/.../GroupMetadataManager.java: shareGroupHeartbeat)."""
    group: str
    member: str
    group_epoch: int
    SAYS: ClassVar[str] = "{member} joined share group {group}"


@dataclass(frozen=True, slots=True)
class ShareMemberRemoved(Happened):
    """A member left a share group, or its session timed out; the group epoch is bumped
    (group-coordinator/.../GroupMetadataManager.java: shareGroupFenceMember)."""
    group: str
    member: str
    group_epoch: int
    why: str
    SAYS: ClassVar[str] = "{member} removed from share group {group}: {why}"


# ---- clients ---------------------------------------------------------------------------------------
class _Drawn:
    """A client decision's note in the sequence diagram (`label`): the action word, then name=value
    pairs, as the diagram drew them before the events were typed. Sequences show as lists; a field
    in OPTIONAL is left out while it is None."""
    __slots__ = ()
    ACTION: ClassVar[str] = ""
    OPTIONAL: ClassVar[frozenset] = frozenset()

    def _shown(self) -> list[tuple[str, object]]:
        out = []
        for f in fields(self)[3:]:                       # after seq, t, client
            v = getattr(self, f.name)
            if v is None and f.name in self.OPTIONAL:
                continue
            out.append((f.name, list(v) if isinstance(v, tuple) else v))
        return out

    @property
    def label(self) -> str:
        items = ", ".join(f"{k}={v}" for k, v in self._shown())
        return self.ACTION + (f": {items}" if items else "")


def _tps(partitions) -> str:
    return ", ".join(f"{t}-{p}" for t, p in partitions) or "none"


@dataclass(frozen=True, slots=True)
class StateMoved(_Drawn, ClientDid):
    """The client's own state moved (producer: TransactionManager.java's State; consumer: the
    membership state of ConsumerMembershipManager.java / AbstractCoordinator.java)."""
    ACTION = "state"
    SAYS = "{client}: {from_state} -> {to_state} ({reason})"
    from_state: str
    to_state: str
    reason: str


@dataclass(frozen=True, slots=True)
class Retried(_Drawn, ClientDid):
    """A retriable error: back off and send again (clients/.../NetworkClient.java, RetryBackoff)."""
    ACTION = "retry"
    SAYS = "{client} retries {api} after {error} (attempt {attempt}, backoff {backoff_ms} ms)"
    api: str
    error: str
    attempt: int
    backoff_ms: int


@dataclass(frozen=True, slots=True)
class VersionFallback(_Drawn, ClientDid):
    """ApiVersions answered UNSUPPORTED_VERSION: send again at the version the broker named
    (clients/.../NetworkClient.java handleApiVersionsResponse)."""
    ACTION = "version"
    SAYS = "{client}: {api} v{version} unsupported, falls back to v{fallback_to} ({reason})"
    api: str
    version: int
    fallback_to: int
    reason: str


@dataclass(frozen=True, slots=True)
class ApiVersionsLearned(_Drawn, ClientDid):
    """The broker's ApiVersions answer read: its version ranges (and, for a producer, the finalized
    transaction.version) (clients/.../NodeApiVersions.java)."""
    ACTION = "api-versions"
    OPTIONAL = frozenset({"transaction_version"})
    version: int
    transaction_version: int | None
    apis: int

    @property
    def text(self) -> str:
        tv = "" if self.transaction_version is None else f", transaction.version {self.transaction_version}"
        return f"{self.client} learned the broker's versions of {self.apis} APIs (ApiVersions v{self.version}{tv})"


@dataclass(frozen=True, slots=True)
class VersionChosen(_Drawn, ClientDid):
    """min(client max, broker max) for an API (clients/.../NodeApiVersions.java latestUsableVersion)."""
    ACTION = "version"
    SAYS = "{client} uses {api} v{version} (client max v{client_max}, broker max v{broker_max})"
    api: str
    version: int
    client_max: int
    broker_max: int


@dataclass(frozen=True, slots=True)
class CoordinatorFound(_Drawn, ClientDid):
    """FindCoordinator answered: the node coordinating the key (consumer/internals/
    AbstractCoordinator.java, producer/internals/TransactionManager.java FindCoordinatorHandler)."""
    ACTION = "coordinator"
    SAYS = "{client}: the coordinator of {key} (key type {key_type}) is broker {node}"
    key_type: int
    key: str
    node: int


@dataclass(frozen=True, slots=True)
class ClientError(_Drawn, ClientDid):
    """A call failed with a Kafka error, raised to the application as `error_class`
    (producer/internals/TransactionManager.java, consumer/internals/ConsumerUtils.java). A
    synchronous one was raised before any bytes were sent."""
    ACTION = "error"
    error: str
    code: int | None
    api: str | None
    error_class: str
    synchronous: bool = False
    bytes_sent: int | None = None

    def _shown(self) -> list[tuple[str, object]]:
        out = [("error", self.error), ("code", self.code), ("api", self.api), ("kind", self.error_class)]
        if self.synchronous:
            out += [("synchronous", True), ("bytes_sent", self.bytes_sent)]
        return out

    @property
    def text(self) -> str:
        where = f" ({self.api})" if self.api else ""
        sync = f", before sending ({self.bytes_sent} bytes sent)" if self.synchronous else ""
        return f"{self.client} raises {self.error_class}: {self.error}{where}{sync}"


@dataclass(frozen=True, slots=True)
class Subscribed(_Drawn, ClientDid):
    """subscribe(topics) (consumer/internals/SubscriptionState.java subscribe)."""
    ACTION = "subscribe"
    topics: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.client} subscribes to {', '.join(self.topics) or 'nothing'}"


@dataclass(frozen=True, slots=True)
class Assigned(_Drawn, ClientDid):
    """assign(partitions): manual assignment, no group membership (SubscriptionState.java assignFromUser)."""
    ACTION = "assign"
    partitions: tuple[tuple[str, int], ...]

    @property
    def text(self) -> str:
        return f"{self.client} is assigned {_tps(self.partitions)} by hand"


@dataclass(frozen=True, slots=True)
class Seeked(_Drawn, ClientDid):
    """seek(partition, offset) (consumer/internals/SubscriptionState.java seek)."""
    ACTION = "seek"
    SAYS = "{client} seeks {topic}-{partition} to offset {offset}"
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Rewound(_Drawn, ClientDid):
    """Every assigned partition back to its committed offset (an exactly-once loop after an abort;
    consumer/internals/OffsetsRequestManager.java fetches them again)."""
    ACTION = "rewind"
    partitions: tuple[tuple[str, int], ...]

    @property
    def text(self) -> str:
        return f"{self.client} rewinds {_tps(self.partitions)} to the committed offsets"


@dataclass(frozen=True, slots=True)
class PartitionsRevoked(_Drawn, ClientDid):
    """Partitions given up in a rebalance (ConsumerRebalanceListener.onPartitionsRevoked;
    ConsumerCoordinator.java, ConsumerMembershipManager.java)."""
    ACTION = "revoke"
    partitions: tuple[tuple[str, int], ...]
    reason: str

    @property
    def text(self) -> str:
        return f"{self.client} revokes {_tps(self.partitions)} ({self.reason})"


@dataclass(frozen=True, slots=True)
class AssignmentChanged(_Drawn, ClientDid):
    """The assigned partitions changed (ConsumerCoordinator.java onJoinComplete,
    ConsumerMembershipManager.java reconcile)."""
    ACTION = "assignment"
    partitions: tuple[tuple[str, int], ...]
    added: tuple[tuple[str, int], ...]
    revoked: tuple[tuple[str, int], ...]
    reason: str

    @property
    def text(self) -> str:
        return (f"{self.client} now owns {_tps(self.partitions)} (added {_tps(self.added)}, revoked "
                f"{_tps(self.revoked)}; {self.reason})")


@dataclass(frozen=True, slots=True)
class PartitionsLost(_Drawn, ClientDid):
    """Partitions dropped without a commit: fenced, reset, closed (consumer/ConsumerRebalanceListener.java
    onPartitionsLost)."""
    ACTION = "partitions-lost"
    partitions: tuple[tuple[str, int], ...]
    reason: str

    @property
    def text(self) -> str:
        return f"{self.client} loses {_tps(self.partitions)} ({self.reason})"


@dataclass(frozen=True, slots=True)
class MemberEpochBumped(_Drawn, ClientDid):
    """KIP-848: the heartbeat answer carries a new member epoch (ConsumerMembershipManager.java)."""
    ACTION = "member-epoch"
    SAYS = "{client} (member {member_id}) moves from epoch {previous} to {member_epoch}"
    member_id: str
    previous: int
    member_epoch: int


@dataclass(frozen=True, slots=True)
class Joined(_Drawn, ClientDid):
    """KIP-848: the first heartbeat (epoch 0) answered; the member is in the group
    (consumer/internals/ConsumerMembershipManager.java)."""
    ACTION = "joined"
    SAYS = "{client} joined group {group_id} as member {member_id} at epoch {member_epoch} ({protocol} protocol)"
    group_id: str
    member_id: str
    member_epoch: int
    protocol: str


@dataclass(frozen=True, slots=True)
class UnknownTopicId(_Drawn, ClientDid):
    """An assigned topic id the metadata does not name yet: left out until it does
    (consumer/internals/ConsumerMembershipManager.java, the topic-id cache)."""
    ACTION = "unknown-topic-id"
    SAYS = "{client} cannot name assigned topic id {topic_id} yet"
    topic_id: str


@dataclass(frozen=True, slots=True)
class Fenced(_Drawn, ClientDid):
    """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: drop every partition and rejoin at epoch 0
    (consumer/internals/ConsumerMembershipManager.java transitionToFenced)."""
    ACTION = "fenced"
    error: str
    member_id: str
    member_epoch: int
    api: str
    message: str | None

    @property
    def text(self) -> str:
        why = f": {self.message}" if self.message else ""
        return (f"{self.client} (member {self.member_id}, epoch {self.member_epoch}) is fenced by {self.api} "
                f"{self.error}{why}; it rejoins at epoch 0")


@dataclass(frozen=True, slots=True)
class Waiting(_Drawn, ClientDid):
    """The coordinator holds a JoinGroup / SyncGroup until the rebalance completes
    (consumer/internals/AbstractCoordinator.java, the pending request future)."""
    ACTION = "waiting"
    SAYS = "{client} waits for its {api} (correlation id {correlation_id}): {reason}"
    api: str
    correlation_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class Answered(_Drawn, ClientDid):
    """A held JoinGroup / SyncGroup answered (consumer/internals/AbstractCoordinator.java)."""
    ACTION = "answer"
    SAYS = "{client} gets the answer to its held {api} (correlation id {correlation_id})"
    api: str
    correlation_id: int


@dataclass(frozen=True, slots=True)
class GaveUp(_Drawn, ClientDid):
    """A held request never answered within the rebalance timeout: rejoin
    (consumer/internals/AbstractCoordinator.java, the request timeout)."""
    ACTION = "gave-up"
    SAYS = "{client} gives up on its {api} (correlation id {correlation_id}): {reason}"
    api: str
    correlation_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class JoinSent(_Drawn, ClientDid):
    """Classic protocol: JoinGroup sent (consumer/internals/AbstractCoordinator.java sendJoinGroupRequest)."""
    ACTION = "join"
    member_id: str
    generation: int
    reason: str | None

    @property
    def text(self) -> str:
        who = f"as member {self.member_id}" if self.member_id else "with no member id yet"
        return f"{self.client} sends JoinGroup {who} (generation {self.generation}; {self.reason or 'first join'})"


@dataclass(frozen=True, slots=True)
class MemberIdGiven(_Drawn, ClientDid):
    """JoinGroup answered MEMBER_ID_REQUIRED with the id to join again with (KIP-394;
    consumer/internals/AbstractCoordinator.java JoinGroupResponseHandler)."""
    ACTION = "member-id"
    SAYS = "{client} is given member id {member_id} ({reason}) and joins again"
    member_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class GenerationBumped(_Drawn, ClientDid):
    """Classic protocol: JoinGroup answered with a new generation (AbstractCoordinator.java)."""
    ACTION = "generation"
    SAYS = "{client} (member {member_id}) enters generation {generation} (was {previous}); the leader is {leader}"
    previous: int
    generation: int
    leader: str
    member_id: str


@dataclass(frozen=True, slots=True)
class AssignedAsLeader(_Drawn, ClientDid):
    """Classic protocol: the leader runs the assignor over the members' subscriptions
    (consumer/internals/ConsumerCoordinator.java onLeaderElected). plan: (member, ((topic,
    (partition, ...)), ...)) per member."""
    ACTION = "assign-as-leader"
    generation: int
    assignor: str
    plan: tuple[tuple[str, tuple[tuple[str, tuple[int, ...]], ...]], ...]

    def _shown(self) -> list[tuple[str, object]]:
        plan = {m: {t: list(ps) for t, ps in a} for m, a in self.plan}
        return [("generation", self.generation), ("assignor", self.assignor), ("plan", plan)]

    @property
    def text(self) -> str:
        return (f"{self.client}, the leader of generation {self.generation}, assigns the partitions of "
                f"{len(self.plan)} members with the {self.assignor} assignor")


@dataclass(frozen=True, slots=True)
class GenerationReset(_Drawn, ClientDid):
    """Classic protocol: UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION reset the member
    (consumer/internals/AbstractCoordinator.java resetGenerationOnResponseError)."""
    ACTION = "reset-generation"
    SAYS = "{client} (member {member_id}) resets generation {generation} ({reason}) and rejoins"
    member_id: str
    generation: int
    reason: str


@dataclass(frozen=True, slots=True)
class HeartbeatFailed(_Drawn, ClientDid):
    """Classic protocol: a Heartbeat answered with an error (AbstractCoordinator.java HeartbeatResponseHandler)."""
    ACTION = "heartbeat-error"
    SAYS = "{client}'s heartbeat in generation {generation} is answered {error}"
    error: str
    generation: int


@dataclass(frozen=True, slots=True)
class OffsetFetchStaleEpoch(_Drawn, ClientDid):
    """OffsetFetch answered STALE_MEMBER_EPOCH: heartbeat, then fetch again
    (consumer/internals/CommitRequestManager.java)."""
    ACTION = "offset-fetch-stale-epoch"
    SAYS = "{client}'s OffsetFetch at epoch {member_epoch} is stale: it heartbeats and asks again"
    member_epoch: int


@dataclass(frozen=True, slots=True)
class OffsetUnstable(_Drawn, ClientDid):
    """UNSTABLE_OFFSET_COMMIT: a transaction holds offsets for the partition; asked again at the
    next poll (consumer/internals/CommitRequestManager.java)."""
    ACTION = "offset-unstable"
    SAYS = "{client} has no position for {topic}-{partition} yet: {reason}"
    topic: str
    partition: int
    reason: str


@dataclass(frozen=True, slots=True)
class PositionSet(_Drawn, ClientDid):
    """A partition's fetch position, from the committed offset or auto.offset.reset
    (consumer/internals/OffsetsRequestManager.java, SubscriptionState.java)."""
    ACTION = "position"
    SAYS = "{client} starts {topic}-{partition} at offset {offset} ({source})"
    topic: str
    partition: int
    offset: int
    source: str


@dataclass(frozen=True, slots=True)
class FetchFailed(_Drawn, ClientDid):
    """A Fetch answered with an error, for the request or one partition
    (consumer/internals/AbstractFetch.java handleFetchSuccess, FetchCollector.java)."""
    ACTION = "fetch-error"
    OPTIONAL = frozenset({"topic", "partition"})
    topic: str | None
    partition: int | None
    error: str

    @property
    def text(self) -> str:
        where = f" for {self.topic}-{self.partition}" if self.topic is not None else ""
        return f"{self.client}'s Fetch is answered {self.error}{where}"


@dataclass(frozen=True, slots=True)
class Fetched(_Drawn, ClientDid):
    """One Fetch round returned records (consumer/internals/FetchCollector.java collectFetch)."""
    ACTION = "fetched"
    records: int
    partitions: tuple[tuple[str, int], ...]
    isolation: str

    @property
    def text(self) -> str:
        return f"{self.client} fetched {self.records} records from {_tps(self.partitions)} ({self.isolation})"


@dataclass(frozen=True, slots=True)
class AbortedSkipped(_Drawn, ClientDid):
    """read_committed: an aborted transaction's batch dropped (consumer/internals/CompletedFetch.java
    abortedProducerIds)."""
    ACTION = "skip-aborted"
    SAYS = ("{client} skips offsets {first_offset}-{last_offset} of {topic}-{partition}: producer "
            "{producer_id}'s transaction was aborted")
    topic: str
    partition: int
    producer_id: int
    first_offset: int
    last_offset: int

    def _shown(self) -> list[tuple[str, object]]:
        return [("topic", self.topic), ("partition", self.partition), ("producer_id", self.producer_id),
                ("offsets", [self.first_offset, self.last_offset])]


@dataclass(frozen=True, slots=True)
class Committed(_Drawn, ClientDid):
    """OffsetCommit accepted (consumer/internals/CommitRequestManager.java, ConsumerCoordinator.java
    commitOffsetsSync). offsets: (topic, partition, offset) each."""
    ACTION = "committed"
    offsets: tuple[tuple[str, int, int], ...]
    generation: int

    def _shown(self) -> list[tuple[str, object]]:
        return [("offsets", {f"{t}-{p}": o for t, p, o in self.offsets}), ("generation", self.generation)]

    @property
    def text(self) -> str:
        done = ", ".join(f"{t}-{p} at {o}" for t, p, o in self.offsets)
        return f"{self.client} committed {done} (generation or epoch {self.generation})"


@dataclass(frozen=True, slots=True)
class CommitFailed(_Drawn, ClientDid):
    """One partition of an OffsetCommit answered with an error (CommitRequestManager.java,
    ConsumerCoordinator.java OffsetCommitResponseHandler)."""
    ACTION = "commit-error"
    SAYS = "{client}'s OffsetCommit v{version} for {topic}-{partition} is answered {error}"
    topic: str
    partition: int
    error: str
    version: int


@dataclass(frozen=True, slots=True)
class Left(_Drawn, ClientDid):
    """The member left the group: KIP-848 heartbeat at epoch -1 (-2 static) or classic LeaveGroup
    (ConsumerMembershipManager.java leaveGroup, AbstractCoordinator.java maybeLeaveGroup)."""
    ACTION = "leave"
    OPTIONAL = frozenset({"member_epoch", "generation"})
    member_id: str
    member_epoch: int | None
    generation: int | None
    error: str

    @property
    def text(self) -> str:
        at = f"epoch {self.member_epoch}" if self.member_epoch is not None else f"generation {self.generation}"
        return f"{self.client} (member {self.member_id}) leaves the group ({at}): {self.error}"


@dataclass(frozen=True, slots=True)
class LeaveFailed(_Drawn, ClientDid):
    """Leaving the group on close failed; the partitions are dropped anyway (AbstractCoordinator.java close)."""
    ACTION = "leave-failed"
    SAYS = "{client} could not leave the group cleanly: {error}"
    error: str | None


@dataclass(frozen=True, slots=True)
class ProducerIdSet(_Drawn, ClientDid):
    """A new producer id and epoch (InitProducerId, or EndTxn v5+ under transaction version 2;
    producer/internals/TransactionManager.java setProducerIdAndEpoch)."""
    ACTION = "producer-id"
    SAYS = ("{client} has producer id {producer_id} epoch {producer_epoch} (was {previous_id} epoch "
            "{previous_epoch}; {reason})")
    producer_id: int
    producer_epoch: int
    previous_id: int
    previous_epoch: int
    reason: str

    def _shown(self) -> list[tuple[str, object]]:
        return [("producer_id", self.producer_id), ("producer_epoch", self.producer_epoch),
                ("previous", (self.previous_id, self.previous_epoch)), ("reason", self.reason)]


@dataclass(frozen=True, slots=True)
class PartitionAdded(_Drawn, ClientDid):
    """Transaction version 1: a partition added to the transaction before its first write
    (producer/internals/TransactionManager.java AddPartitionsToTxnHandler)."""
    ACTION = "partition-added"
    SAYS = "{client} added {topic}-{partition} to its transaction ({via})"
    topic: str
    partition: int
    via: str


@dataclass(frozen=True, slots=True)
class Sent(_Drawn, ClientDid):
    """A Produce answered: the batch is at `offset` (producer/internals/Sender.java
    handleProduceResponse). records: set for a batch of several records."""
    ACTION = "sent"
    OPTIONAL = frozenset({"records"})
    topic: str
    partition: int
    offset: int
    version: int
    records: int | None

    @property
    def text(self) -> str:
        what = f"{self.records} records" if self.records is not None else "a record"
        return f"{self.client} wrote {what} to {self.topic}-{self.partition} at offset {self.offset} (Produce v{self.version})"


@dataclass(frozen=True, slots=True)
class OffsetsSent(_Drawn, ClientDid):
    """sendOffsetsToTransaction done: TxnOffsetCommit accepted
    (producer/internals/TransactionManager.java TxnOffsetCommitHandler)."""
    ACTION = "offsets-sent"
    group_id: str
    partitions: tuple[tuple[str, int], ...]

    @property
    def text(self) -> str:
        return f"{self.client} staged the offsets of {_tps(self.partitions)} for group {self.group_id} in its transaction"


@dataclass(frozen=True, slots=True)
class OffsetsPartitionAdded(_Drawn, ClientDid):
    """Transaction version 1: the group's __consumer_offsets partition added to the transaction
    (producer/internals/TransactionManager.java AddOffsetsToTxnHandler)."""
    ACTION = "offsets-partition-added"
    SAYS = "{client} added group {group_id}'s offsets partition to its transaction ({via})"
    group_id: str
    via: str


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitFallback(_Drawn, ClientDid):
    """KIP-1319: a topic id is unknown, so the whole TxnOffsetCommit goes at v5 by name
    (producer/internals/TransactionManager.java)."""
    ACTION = "txn-offset-commit-fallback"
    version: int
    reason: str
    topics: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.client} sends TxnOffsetCommit v{self.version}: {self.reason} for {', '.join(self.topics)}"


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitVersionChosen(_Drawn, ClientDid):
    """KIP-1319: the TxnOffsetCommit version and why (producer/internals/TransactionManager.java)."""
    ACTION = "txn-offset-commit-version"
    SAYS = "{client} sends TxnOffsetCommit v{version}: {reason}"
    version: int
    reason: str


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitFailed(_Drawn, ClientDid):
    """One partition of a TxnOffsetCommit answered with an error, and how the producer takes it
    (`handling`: producer/internals/TransactionManager.java TxnOffsetCommitHandler)."""
    ACTION = "txn-offset-commit-error"
    SAYS = "{client}'s TxnOffsetCommit v{version} for {topic}-{partition} is answered {error} ({handling})"
    topic: str
    partition: int
    error: str
    handling: str
    version: int

    def _shown(self) -> list[tuple[str, object]]:
        return [("topic", self.topic), ("partition", self.partition), ("error", self.error),
                ("kind", self.handling), ("version", self.version)]


@dataclass(frozen=True, slots=True)
class ShareAcksSent(_Drawn, ClientDid):
    """KIP-1289 (proposed): share-group acknowledgements staged in the transaction with
    TxnShareAcknowledge (the KIP's TransactionManager.sendShareAcknowledgementsToTransaction)."""
    ACTION = "share-acks-sent"
    STATUS: ClassVar[str] = "proposed"
    KIP: ClassVar[str] = "KIP-1289"
    SAYS = ("{client} staged {records} acknowledgements of share group {group_id} (member {member_id}, epoch "
            "{member_epoch}) in its transaction (KIP-1289, proposed)")
    group_id: str
    member_id: str
    member_epoch: int
    records: int

    def _shown(self) -> list[tuple[str, object]]:
        return [("group_id", self.group_id), ("member_id", self.member_id), ("member_epoch", self.member_epoch),
                ("records", self.records), ("status", self.STATUS), ("kip", self.KIP)]


@dataclass(frozen=True, slots=True)
class ShareAcksFailed(_Drawn, ClientDid):
    """KIP-1289 (proposed): staging share-group acknowledgements failed (the KIP's TransactionManager)."""
    ACTION = "share-acks-failed"
    SAYS = "{client} could not stage {records} acknowledgements of share group {group_id}: {error} (KIP-1289, proposed)"
    group_id: str
    error: str
    records: int


@dataclass(frozen=True, slots=True)
class TxnShareAckFailed(_Drawn, ClientDid):
    """KIP-1289 (proposed): a TxnShareAcknowledge answered with an error by a share-partition leader."""
    ACTION = "txn-share-ack-error"
    SAYS = "{client}'s TxnShareAcknowledge v{version} to broker {broker} is answered {error} (KIP-1289, proposed)"
    error: str
    version: int
    broker: int


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataTaken(_Drawn, ClientDid):
    """KIP-1289 (proposed): the share consumer's ShareGroupMetadata snapshot, for a transactional producer."""
    ACTION = "share-group-metadata"
    STATUS: ClassVar[str] = "proposed"
    KIP: ClassVar[str] = "KIP-1289"
    SAYS = ("{client} hands out its share group metadata: group {group_id}, member {member_id}, epoch "
            "{member_epoch} (KIP-1289, proposed)")
    group_id: str
    member_id: str
    member_epoch: int

    def _shown(self) -> list[tuple[str, object]]:
        return [("group_id", self.group_id), ("member_id", self.member_id), ("member_epoch", self.member_epoch),
                ("status", self.STATUS), ("kip", self.KIP)]


@dataclass(frozen=True, slots=True)
class EndTxnSkipped(_Drawn, ClientDid):
    """Nothing was added to the transaction, so no EndTxn is sent (producer/internals/
    TransactionManager.java beginCommit / beginAbort with no partitions)."""
    ACTION = "end-txn-skipped"
    SAYS = "{client} ends its transaction ({result}) without EndTxn: {reason}"
    result: str
    reason: str


@dataclass(frozen=True, slots=True)
class TransactionEnded(_Drawn, ClientDid):
    """EndTxn answered: the transaction committed or aborted (producer/internals/TransactionManager.java
    EndTxnHandler)."""
    ACTION = "transaction-ended"
    SAYS = "{client}'s transaction ended: {result} (EndTxn v{version})"
    result: str
    version: int



# ---- operators, scenarios and workloads ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeatureLevelChanged(Happened):
    """A finalized feature level changed (metadata/.../controller/FeatureControlManager.java:
    updateFeatures); `by` the operator (kafka-features.sh upgrade) or a workload's fault ending;
    `how` is the parenthesis of the sentence."""
    feature: str
    level: int
    previous: int
    by: str                    # "operator" or "workload"
    how: str
    status: str = "released"
    kip: str = ""

    @property
    def text(self) -> str:
        if self.by == "operator":
            return f"operator: {self.feature} finalized at {self.level} ({self.how})"
        return f"{self.feature} {self.previous} -> {self.level} ({self.how})"


@dataclass(frozen=True, slots=True)
class FaultInjected(Happened):
    """A workload's or scenario's fault fired (kipviz.workloads.share_eos: the KIP-1289 corner case
    it exercises, `case`, and what happened, `outcome`; docs/modelling-a-kip.md)."""
    fault: str
    case: int
    outcome: str
    worker: str | None = None
    params: tuple[tuple[str, object], ...] = ()
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = "fault: {fault} (KIP-1289 corner case {case}): {outcome}"


@dataclass(frozen=True, slots=True)
class RegistrationFailed(Happened):
    """A fault: the transaction coordinator answers the broker-internal AddPartitionsToTxn of
    KIP-1289's staging with `error` (corner case 2, proposed; kipviz.broker.share_txn)."""
    error: str
    case: int = 2
    status: str = "proposed"
    kip: str = "KIP-1289"
    SAYS: ClassVar[str] = ("fault: the transaction coordinator answers the broker-internal AddPartitionsToTxn "
                           "with {error} (KIP-1289 corner case 2, proposed)")


@dataclass(frozen=True, slots=True)
class WorkloadLayout(Happened):
    """Where ShareEosWorkload placed its partitions: the input and its __share_group_state-N led by one
    broker, co-located on purpose (kipviz.workloads.share_eos). The kit's own, not Kafka's
    (docs/architecture.md, "The event vocabulary")."""
    input: str
    partitions: int
    share_leader: int
    state_partitions: tuple[int, ...]
    routing: str

    @property
    def text(self) -> str:
        return (f"workload layout: {self.input}-0..{self.partitions - 1} and "
                f"{', '.join(f'__share_group_state-{q}' for q in self.state_partitions)} led by broker "
                f"{self.share_leader} (co-located on purpose; marker routing {self.routing!r})")


@dataclass(frozen=True, slots=True)
class ScenarioLayout(Happened):
    """Where a KIP-1289 scenario placed its input partition and its __share_group_state-N
    (kipviz.scenarios.kip1289_errors)."""
    input: str
    state_partition: int
    share_leader: int
    state_leader: int
    colocated: bool

    @property
    def text(self) -> str:
        return (f"layout for this scenario: {self.input}-0 led by broker {self.share_leader}, __share_group_state-"
                f"{self.state_partition} by broker {self.state_leader} "
                f"({'co-located' if self.colocated else 'not co-located'}, placed on purpose)")


@dataclass(frozen=True, slots=True)
class ClientCrashed(Happened):
    """A scenario stops a client process: its clients send nothing more (no heartbeats, no commit).
    The kit's own fault, not Kafka's (docs/architecture.md, "The event vocabulary")."""
    client: str
    how: str
    SAYS: ClassVar[str] = "{client} crashed ({how})"


@dataclass(frozen=True, slots=True)
class LogCleaned(Event):
    """One pass of the log cleaner over a partition (kipviz.broker.cleaner, after Cleaner.java
    doClean): the batches held below offset rewritten_end (whole segments) were rewritten as
    batches_after batches; the offset map covered the dirty offsets [first_dirty_offset,
    end_offset); kept: the offsets below rewritten_end holding a record (or marker) after the
    pass, as (first, last) runs."""
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


def _slot_init(cls):
    """An __init__ for frozen slotted event class `cls` that fills each slot through its
    descriptor. The one @dataclass writes calls object.__setattr__ by name for every field, which
    made up about 40 % of creating an event; events are created several times per record. The
    instances stay frozen: assignment still raises FrozenInstanceError. An event's fields are
    immutable values, so a default_factory (a mutable default) is refused."""
    env, params, body = {}, [], []
    for i, f in enumerate(fields(cls)):
        env[f"_s{i}"] = getattr(cls, f.name).__set__       # the slot's member descriptor
        if f.default is not MISSING:
            env[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        elif f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: an event field takes an immutable default, not a factory")
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
