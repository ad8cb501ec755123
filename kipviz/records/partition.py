"""Which partition of an internal topic owns a group, a transactional id or a share partition.

Kafka's coordinators all use  Utils.abs(key.hashCode()) % numPartitions  where hashCode is Java's
String.hashCode (h = 31*h + c over UTF-16 code units, int32 overflow) and Utils.abs maps
Integer.MIN_VALUE to 0 (it is not n & 0x7fffffff, which is Utils.toPositive, used by the
producer's default partitioner). The partition's leader is the coordinator.

    group_coordinator_partition("my-group")                   -> 12   (__consumer_offsets)
    transaction_coordinator_partition("my-txn")                      (__transaction_state)
    share_coordinator_partition("my-group", topic_id, 0)             (__share_group_state)
"""
from __future__ import annotations

import uuid

from .. import uuids

__all__ = ["java_string_hash", "kafka_abs", "partition_for", "group_coordinator_partition",
           "transaction_coordinator_partition", "share_coordinator_partition", "share_coordinator_key",
           "DEFAULT_PARTITIONS", "INT_MIN"]

DEFAULT_PARTITIONS = 50     # offsets.topic.num.partitions, transaction.state.log.num.partitions,
#                             share.coordinator.state.topic.num.partitions
INT_MIN = -2**31


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: 31*h + c over UTF-16 code units, wrapped to a signed int32.

    A character outside the Basic Multilingual Plane (an emoji, for example) counts as its two
    surrogate code units, exactly as in Java."""
    if not isinstance(s, str):
        raise TypeError(f"expected a str, got {type(s).__name__}")
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except that Integer.MIN_VALUE (whose Math.abs is itself,
    negative) becomes 0."""
    return 0 if n == INT_MIN else abs(n)


def _check_n(partitions: int) -> int:
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ValueError(f"the number of partitions must be a positive integer, got {partitions!r}")
    return partitions


def partition_for(key: str, partitions: int = DEFAULT_PARTITIONS) -> int:
    """Utils.abs(key.hashCode()) % partitions."""
    return kafka_abs(java_string_hash(key)) % _check_n(partitions)


def group_coordinator_partition(group_id: str, n: int = DEFAULT_PARTITIONS) -> int:
    """The __consumer_offsets partition holding a group's offsets and metadata (classic, consumer
    and share groups alike)."""
    return partition_for(group_id, n)


def transaction_coordinator_partition(transactional_id: str, n: int = DEFAULT_PARTITIONS) -> int:
    """The __transaction_state partition holding a transactional id's state."""
    return partition_for(transactional_id, n)


def share_coordinator_key(group_id: str, topic_id, partition: int) -> str:
    """The string a share partition is routed by: "groupId:topicId:partition" with the topic id in
    Kafka's base64 form (SharePartitionKey.asCoordinatorKey; also the FindCoordinator key of type
    SHARE). topic_id may be a uuid.UUID, Kafka's 22-character form, the canonical form or 16 bytes."""
    if not isinstance(group_id, str):
        raise TypeError(f"group_id must be a str, got {type(group_id).__name__}")
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise TypeError(f"partition must be an int, got {type(partition).__name__}")
    tid = topic_id if isinstance(topic_id, uuid.UUID) else uuids.parse(topic_id)
    return f"{group_id}:{uuids.to_kafka_str(tid)}:{partition}"


def share_coordinator_partition(group_id: str, topic_id, partition: int, n: int = DEFAULT_PARTITIONS) -> int:
    """The __share_group_state partition holding one share partition's state."""
    return partition_for(share_coordinator_key(group_id, topic_id, partition), n)
