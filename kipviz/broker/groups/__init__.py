"""The group coordinator: classic groups, KIP-848 consumer groups and committed offsets.

Models released Kafka's *new* group coordinator (group-coordinator/ module: GroupCoordinatorService.java, GroupMetadataManager.java,
OffsetMetadataManager.java), with
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
# The package splits the coordinator as Kafka does (group-coordinator/src/main/java/org/apache/kafka/
# coordinator/group/): model.py (ClassicGroup, ConsumerGroup, members), metadata.py (GroupMetadataManager:
# the group table), classic.py and consumer.py (the two protocols GroupMetadataManager runs) and offsets.py
# (OffsetMetadataManager). GroupCoordinator holds them as fields, as GroupCoordinatorShard holds its
# managers, and forwards the API the handlers call.
from __future__ import annotations

from .classic import ClassicProtocol
from .consumer import ConsumerProtocol
from .metadata import GroupMetadataManager
from .model import ClassicGroup, Committed, ConsumerGroup
from .offsets import OffsetMetadataManager


class GroupCoordinator:
    """One coordinator (GroupCoordinatorShard): the group table and its helpers (`metadata`), the
    classic and consumer protocols (`classic`, `consumer`) and the committed offsets (`offsets`),
    each an object of its own; the methods below are the API the request handlers call."""
    metadata: GroupMetadataManager
    classic: ClassicProtocol
    consumer: ConsumerProtocol
    offsets: OffsetMetadataManager

    def __init__(self, cluster):
        self.cluster = cluster
        self.metadata = GroupMetadataManager(cluster)
        self.classic = ClassicProtocol(cluster, self.metadata)
        self.consumer = ConsumerProtocol(cluster, self.metadata)
        self.offsets = OffsetMetadataManager(cluster, self.metadata, self.classic)

    # ---- the group table and delayed responses (GroupMetadataManager) ----
    @property
    def groups(self) -> dict[str, ClassicGroup | ConsumerGroup]:
        """The live groups by id."""
        return self.metadata.groups

    @property
    def outbox(self) -> list[tuple[str, int, bytes]]:
        """(client, broker, frame) of delayed responses not yet taken (Cluster.take_completed)."""
        return self.metadata.outbox

    @outbox.setter
    def outbox(self, value: list[tuple[str, int, bytes]]) -> None:
        self.metadata.outbox = value

    def take_responses(self, client: str | None = None) -> list[bytes]:
        """Frames of delayed responses (JoinGroup/SyncGroup) completed since the last call, in order."""
        return self.metadata.take_responses(client)

    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition holding the group."""
        return self.metadata.partition_for(group_id)

    def is_coordinator(self, group_id: str, broker: int) -> bool:
        """Does `broker` coordinate the group?"""
        return self.metadata.is_coordinator(group_id, broker)

    def group(self, group_id: str):
        """The live group, or GroupError GROUP_ID_NOT_FOUND."""
        return self.metadata.group(group_id)

    def group_state(self, group_id: str) -> str | None:
        """The group's state name, or None."""
        return self.metadata.group_state(group_id)

    def list_groups(self, states: list[str], types: list[str]) -> list[dict]:
        """ListGroups: the groups whose state and type pass the filters."""
        return self.metadata.list_groups(states, types)

    def describe_groups(self, group_ids: list[str], version: int) -> list[dict]:
        """DescribeGroups (classic groups)."""
        return self.metadata.describe_groups(group_ids, version)

    # ---- the classic protocol ----
    def join_group(self, req, b: dict):
        """JoinGroup: a response body or PARKED."""
        return self.classic.join_group(req, b)

    def sync_group(self, req, b: dict):
        """SyncGroup: a response body or PARKED."""
        return self.classic.sync_group(req, b)

    def heartbeat(self, req, b: dict) -> dict:
        """Heartbeat (classic groups)."""
        return self.classic.heartbeat(req, b)

    def leave_group(self, req, members: list[dict], gid: str) -> dict:
        """LeaveGroup: {"ErrorCode", "Members": [...]}."""
        return self.classic.leave_group(req, members, gid)

    # ---- the consumer protocol (KIP-848) ----
    def consumer_group_heartbeat(self, req, b: dict) -> dict:
        """ConsumerGroupHeartbeat: a response body (GroupError for a request-level error)."""
        return self.consumer.consumer_group_heartbeat(req, b)

    def consumer_group_describe(self, group_ids: list[str]) -> list[dict]:
        """ConsumerGroupDescribe: one entry per group id."""
        return self.consumer.consumer_group_describe(group_ids)

    # ---- offsets (OffsetMetadataManager) ----
    def committed(self, group_id: str, topic: str, partition: int) -> Committed | None:
        """The offset the group committed for the partition, or None."""
        return self.offsets.committed(group_id, topic, partition)

    def has_pending(self, gid: str, topic: str, partition: int) -> bool:
        """Is a transactional offset of the group for the partition waiting for its marker?"""
        return self.offsets.has_pending(gid, topic, partition)

    def commit_offsets(self, req, b: dict, topics: list[dict]) -> dict[tuple, int]:
        """OffsetCommit: {(topic, partition): error code}."""
        return self.offsets.commit_offsets(req, b, topics)

    def commit_transactional_offsets(self, req, b: dict, topics: list[dict]) -> dict[tuple, int]:
        """TxnOffsetCommit: {(topic, partition): error code}."""
        return self.offsets.commit_transactional_offsets(req, b, topics)

    def fetch_offsets(self, gid: str, member_id, member_epoch: int, topics, require_stable: bool):
        """OffsetFetch for one group: (error, [(topic, [partition dicts])])."""
        return self.offsets.fetch_offsets(gid, member_id, member_epoch, topics, require_stable)

    def delete_offsets(self, gid: str, topics: dict[str, list[int]], subscribed) -> dict[str, dict[int, int]]:
        """OffsetDelete: {topic: {partition: error code}}."""
        return self.offsets.delete_offsets(gid, topics, subscribed)

    def delete_groups(self, group_ids: list[str]) -> list[dict]:
        """DeleteGroups: one result per group id."""
        return self.offsets.delete_groups(group_ids)

    def on_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker for `producer_id` landed on __consumer_offsets-`partition`."""
        self.offsets.on_marker(partition, producer_id, commit)

    def on_partitions_deleted(self, topic: str, partitions: int) -> None:
        """A topic was deleted: its committed and pending offsets are tombstoned."""
        self.offsets.on_partitions_deleted(topic, partitions)
