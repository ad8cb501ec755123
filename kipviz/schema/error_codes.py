"""Kafka error codes the model returns (clients/.../common/protocol/Errors.java), with retriability."""
from __future__ import annotations

# name -> (code, retriable)
ERRORS: dict[str, tuple[int, bool]] = {
    "UNKNOWN_SERVER_ERROR": (-1, False), "NONE": (0, False), "OFFSET_OUT_OF_RANGE": (1, False),
    "CORRUPT_MESSAGE": (2, True), "NETWORK_EXCEPTION": (13, True), "UNKNOWN_TOPIC_OR_PARTITION": (3, True), "INVALID_FETCH_SIZE": (4, False),
    "LEADER_NOT_AVAILABLE": (5, True), "NOT_LEADER_OR_FOLLOWER": (6, True), "REQUEST_TIMED_OUT": (7, True),
    "MESSAGE_TOO_LARGE": (10, False), "STALE_CONTROLLER_EPOCH": (11, False), "OFFSET_METADATA_TOO_LARGE": (12, False),
    "COORDINATOR_LOAD_IN_PROGRESS": (14, True), "COORDINATOR_NOT_AVAILABLE": (15, True),
    "NOT_COORDINATOR": (16, True), "INVALID_TOPIC_EXCEPTION": (17, False),
    "NOT_ENOUGH_REPLICAS": (19, True), "INVALID_REQUIRED_ACKS": (21, False), "ILLEGAL_GENERATION": (22, False),
    "INCONSISTENT_GROUP_PROTOCOL": (23, False), "INVALID_GROUP_ID": (24, False),
    "UNKNOWN_MEMBER_ID": (25, False), "INVALID_SESSION_TIMEOUT": (26, False),
    "REBALANCE_IN_PROGRESS": (27, False), "INVALID_COMMIT_OFFSET_SIZE": (28, False),
    "TOPIC_AUTHORIZATION_FAILED": (29, False), "GROUP_AUTHORIZATION_FAILED": (30, False),
    "CLUSTER_AUTHORIZATION_FAILED": (31, False), "INVALID_TIMESTAMP": (32, False),
    "UNSUPPORTED_VERSION": (35, False), "TOPIC_ALREADY_EXISTS": (36, False),
    "INVALID_PARTITIONS": (37, False), "INVALID_REPLICATION_FACTOR": (38, False),
    "INVALID_REPLICA_ASSIGNMENT": (39, False), "OUT_OF_ORDER_SEQUENCE_NUMBER": (45, False),
    "POLICY_VIOLATION": (44, False), "DUPLICATE_SEQUENCE_NUMBER": (46, False), "OPERATION_NOT_ATTEMPTED": (55, False),
    "INVALID_REQUEST": (42, False), "INVALID_PRODUCER_EPOCH": (47, False), "INVALID_TXN_STATE": (48, False),
    "INVALID_PRODUCER_ID_MAPPING": (49, False), "INVALID_TRANSACTION_TIMEOUT": (50, False),
    "CONCURRENT_TRANSACTIONS": (51, True), "TRANSACTION_COORDINATOR_FENCED": (52, False),
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": (53, False), "KAFKA_STORAGE_ERROR": (56, True),
    "NON_EMPTY_GROUP": (68, False), "GROUP_ID_NOT_FOUND": (69, False),
    "FETCH_SESSION_ID_NOT_FOUND": (70, True), "INVALID_FETCH_SESSION_EPOCH": (71, True),
    "FENCED_LEADER_EPOCH": (74, True), "UNKNOWN_LEADER_EPOCH": (75, True),
    "UNSUPPORTED_COMPRESSION_TYPE": (76, False), "INVALID_RECORD": (87, False),
    "OFFSET_NOT_AVAILABLE": (78, True), "MEMBER_ID_REQUIRED": (79, False),
    "GROUP_MAX_SIZE_REACHED": (81, False), "FENCED_INSTANCE_ID": (82, False),
    "UNSTABLE_OFFSET_COMMIT": (88, True), "PRODUCER_FENCED": (90, False),
    "UNKNOWN_TOPIC_ID": (100, True), "INCONSISTENT_TOPIC_ID": (103, True),
    "TRANSACTIONAL_ID_NOT_FOUND": (105, False), "FENCED_MEMBER_EPOCH": (110, False),
    "UNRELEASED_INSTANCE_ID": (111, False), "UNSUPPORTED_ASSIGNOR": (112, False),
    "STALE_MEMBER_EPOCH": (113, False), "TRANSACTION_ABORTABLE": (120, False),
    "INVALID_RECORD_STATE": (121, False), "SHARE_SESSION_NOT_FOUND": (122, True),
    "INVALID_SHARE_SESSION_EPOCH": (123, True), "FENCED_STATE_EPOCH": (124, False),
    "INVALID_REGULAR_EXPRESSION": (128, False), "REBOOTSTRAP_REQUIRED": (129, False),
    "SHARE_SESSION_LIMIT_REACHED": (133, True),
    # the admin, ACL and SASL RPCs (issue 34); retriable where the exception is a RetriableException
    # (the InvalidMetadataException family, ThrottlingQuotaExceededException, NotControllerException)
    "UNSUPPORTED_SASL_MECHANISM": (33, False), "ILLEGAL_SASL_STATE": (34, False), "INVALID_CONFIG": (40, False),
    "NOT_CONTROLLER": (41, True), "SECURITY_DISABLED": (54, False), "SASL_AUTHENTICATION_FAILED": (58, False),
    "REASSIGNMENT_IN_PROGRESS": (60, False), "PREFERRED_LEADER_NOT_AVAILABLE": (80, True),
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": (83, True), "ELECTION_NOT_NEEDED": (84, True),
    "GROUP_SUBSCRIBED_TO_TOPIC": (86, False), "THROTTLING_QUOTA_EXCEEDED": (89, True),
    "MISMATCHED_ENDPOINT_TYPE": (114, False), "UNSUPPORTED_ENDPOINT_TYPE": (115, False),
    # Kafka 4.4 (docs/facts.md#kafka-44: KIP-1331, KAFKA-20395). Their exception classes were not in any
    # source the kit could read; none is documented as retriable, so the kit treats them as not.
    "GROUP_DELETION_FAILED": (134, False), "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED": (135, False),
    "CONTROLLER_ID_NOT_REGISTERED": (136, False),
}
CODE = {name: code for name, (code, _) in ERRORS.items()}
NAME = {code: name for name, (code, _) in ERRORS.items()}
RETRIABLE = frozenset(code for code, r in ERRORS.values() if r)


def name_of(code: int) -> str:
    """The name of an error code ("NOT_COORDINATOR"), or "ERROR_N" for one Kafka does not define."""
    return NAME.get(code, f"ERROR_{code}")


def error_codes(body, *, zero: bool = False) -> tuple[int, ...]:
    """Distinct values of the *ErrorCode fields anywhere in a decoded body: a struct's own codes
    before those of its nested structs, depth first; 0 (NONE) only with zero=True. The broker's
    events take the failures (zero=False); a capture lists every code it saw (zero=True)."""
    found: list[int] = []
    stack = [body]      # a stack, not recursion: a capture's body is untrusted and may nest deeply
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        if isinstance(v, dict):
            nested = []
            for k, x in v.items():
                if type(x) is int:          # not bool; hot path (every response the broker sends)
                    if (x or zero) and x not in found and isinstance(k, str) and k.endswith("ErrorCode"):
                        found.append(x)
                elif isinstance(x, (dict, list, tuple)):
                    nested.append(x)
            if nested:
                stack.extend(reversed(nested))
        elif isinstance(v, (list, tuple)):
            for x in reversed(v):
                if isinstance(x, (dict, list, tuple)):
                    push(x)
    return tuple(found)
