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
# (OffsetMetadataManager). GroupCoordinator joins them, as GroupCoordinatorShard joins the managers.
from __future__ import annotations

from .classic import ClassicProtocol
from .consumer import ConsumerProtocol
from .metadata import GroupMetadataManager
from .model import (  # noqa: F401 - the names importers use
    ASSIGNORS,
    CLASSIC_NEW_MEMBER_JOIN_TIMEOUT_MS,
    CONSUMER_PROTOCOL_TYPE,
    GROUP_METADATA_VALUE_VERSION,
    INVALID_OFFSET,
    INVALID_REGULAR_EXPRESSION,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    NONE,
    PARKED,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    Committed,
    ConsumerGroup,
    ConsumerMember,
    GroupError,
    java_length,
    shape,
)
from .offsets import OffsetMetadataManager


class GroupCoordinator(ClassicProtocol, ConsumerProtocol, OffsetMetadataManager, GroupMetadataManager):
    """One coordinator: the group table, both protocols and the offsets (GroupCoordinatorShard)."""
