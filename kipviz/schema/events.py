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
from typing import Annotated, ClassVar


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
