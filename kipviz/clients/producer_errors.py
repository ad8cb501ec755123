"""What the producer model raises, and how it classifies the errors of a transaction
(producer/internals/TransactionManager.java)."""
from __future__ import annotations

from ..errors import KipvizError
from ..schema.error_codes import RETRIABLE
from .base import E, error_name_code, error_text

OPERATION_NOT_ATTEMPTED_CODE = E["OPERATION_NOT_ATTEMPTED"]


class ProducerError(KipvizError):
    """A producer call failed with a Kafka error: `.error` is its name, `.code` the number."""

    def __init__(self, error: str | int, message: str = "", *, api: str | None = None):
        name, code = error_name_code(error)
        self.error, self.code, self.api = name, code, api
        super().__init__(error_text(name, api, message))


class AbortableError(ProducerError):
    """The transaction cannot commit: abort it (abort_transaction) and carry on."""


class CommitFailedError(AbortableError):
    """The group rejected the offsets (rebalance, unknown member, stale epoch): abort."""


class FatalError(ProducerError):
    """The producer cannot go on: close it and create a new one."""


class ProducerFencedError(FatalError):
    """Another producer with the same transactional.id (or the coordinator) took over."""


class UnsupportedVersionError(FatalError):
    """The broker serves no version of an API this client can use."""


class RetriesExhaustedError(ProducerError):
    """A retriable error persisted through every retry (Kafka would time out): call again or abort."""


class IllegalStateError(ProducerError):
    """The call is not allowed in the producer's current state (Kafka's IllegalStateException)."""

    def __init__(self, message: str):
        super().__init__("ILLEGAL_STATE", message)



# TxnOffsetCommitHandler's classification (TransactionManager.java, KIP-1319)
COMMIT_FAILED = frozenset(E[n] for n in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "GROUP_ID_NOT_FOUND",
                                          "STALE_MEMBER_EPOCH"))
ABORTABLE_OFFSET_ERRORS = frozenset(E[n] for n in ("GROUP_AUTHORIZATION_FAILED", "FENCED_INSTANCE_ID",
                                                    "TRANSACTION_ABORTABLE"))
FENCED = frozenset((E["PRODUCER_FENCED"], E["INVALID_PRODUCER_EPOCH"]))
COORDINATOR_MOVED = frozenset((E["COORDINATOR_NOT_AVAILABLE"], E["NOT_COORDINATOR"]))


def classify_txn_offset_commit_error(code: int) -> str:
    """"ok", "retriable", "coordinator" (find it again, then retry), "commit-failed",
    "abortable", "fenced" or "fatal" — how the producer treats a TxnOffsetCommit error."""
    if code == 0:
        return "ok"
    if code in COORDINATOR_MOVED:
        return "coordinator"
    if code in FENCED:
        return "fenced"
    if code in COMMIT_FAILED:
        return "commit-failed"
    if code in ABORTABLE_OFFSET_ERRORS:
        return "abortable"
    if code in RETRIABLE or code in (E["UNKNOWN_TOPIC_ID"], E["COORDINATOR_LOAD_IN_PROGRESS"]):
        return "retriable"
    return "fatal"

