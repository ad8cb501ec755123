"""What the consumer model raises, and the error codes its parts treat alike."""
from __future__ import annotations

from ..errors import KipvizError
from .base import NETWORK_EXCEPTION, E, error_name_code, error_text

# find the coordinator again, then retry (consumer/internals/AbstractCoordinator.java markCoordinatorUnknown)
COORDINATOR_ERRORS = frozenset((E["NOT_COORDINATOR"], E["COORDINATOR_NOT_AVAILABLE"],
                                E["COORDINATOR_LOAD_IN_PROGRESS"], NETWORK_EXCEPTION))
# refresh the metadata, then retry (consumer/internals/AbstractFetch.java, OffsetsRequestManager.java)
METADATA_ERRORS = frozenset((E["NOT_LEADER_OR_FOLLOWER"], E["UNKNOWN_TOPIC_OR_PARTITION"], E["UNKNOWN_TOPIC_ID"],
                             E["FENCED_LEADER_EPOCH"], E["UNKNOWN_LEADER_EPOCH"], E["LEADER_NOT_AVAILABLE"]))


class ConsumerError(KipvizError):
    """A consumer call failed with a Kafka error: `.error` is its name, `.code` the number."""

    def __init__(self, error: str | int, message: str = "", *, api: str | None = None, partitions=()):
        name, code = error_name_code(error)
        self.error, self.code, self.api, self.partitions = name, code, api, tuple(partitions)
        super().__init__(error_text(name, api, message))


class CommitFailedError(ConsumerError):
    """The group refused the commit: the member left, was fenced or is of an old generation."""


class RebalanceInProgressError(ConsumerError):
    """Classic protocol: the group is rebalancing; poll (rejoin), then commit again."""
