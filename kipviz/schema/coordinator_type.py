"""The kinds of coordinator key: FindCoordinator's KeyType, and what Cluster.coordinator_partition
and coordinator_broker are asked about (Kafka:
clients/src/main/java/org/apache/kafka/common/requests/FindCoordinatorRequest.java, CoordinatorType).

    CoordinatorType.GROUP          -> 0   a group id: __consumer_offsets
    CoordinatorType.TRANSACTION    -> 1   a transactional id: __transaction_state
    CoordinatorType.SHARE          -> 2   "group:topicId:partition": __share_group_state (KIP-932)

An IntEnum: each member equals its wire number, so a request body may carry either."""
from __future__ import annotations

from enum import IntEnum


class CoordinatorType(IntEnum):
    """FindCoordinatorRequest.CoordinatorType: the key type a coordinator is found by."""
    GROUP = 0
    TRANSACTION = 1
    SHARE = 2
