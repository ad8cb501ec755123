"""What an error code means, in a sentence a learner understands, and where the kit's per-version
error tables (kipviz.broker.api_errors, declared next to each handler) say Kafka answers it.
Sentences follow the javadoc of clients/src/main/java/org/apache/kafka/common/protocol/Errors.java."""
from __future__ import annotations

from ..broker.api_errors import ERROR_ROWS
from ..schema.error_codes import NAME, RETRIABLE

MEANING = {
    "UNKNOWN_SERVER_ERROR": "the broker failed in a way it did not expect",
    "OFFSET_OUT_OF_RANGE": "the offset asked for is not in the partition's log (deleted or not written yet)",
    "UNKNOWN_TOPIC_OR_PARTITION": "this broker does not know the topic or partition (not created yet, or deleted)",
    "LEADER_NOT_AVAILABLE": "the partition has no leader right now (an election is under way)",
    "NOT_LEADER_OR_FOLLOWER": "the request went to a broker that is not the partition's leader: metadata was stale",
    "REQUEST_TIMED_OUT": "the broker gave up waiting (for replicas, or for the request's timeout)",
    "MESSAGE_TOO_LARGE": "a batch is larger than the broker or topic accepts",
    "COORDINATOR_LOAD_IN_PROGRESS": "the coordinator is still loading its state; the client retries",
    "COORDINATOR_NOT_AVAILABLE": "no coordinator is available for this group or transactional id yet",
    "NOT_COORDINATOR": "this broker is not (or no longer) the coordinator: the client looks it up again",
    "ILLEGAL_GENERATION": "the member's generation is not the group's current one: a rebalance happened",
    "UNKNOWN_MEMBER_ID": "the coordinator does not know this member (it left, or was expelled after a timeout)",
    "REBALANCE_IN_PROGRESS": "the group is rebalancing: the member must rejoin",
    "TOPIC_AUTHORIZATION_FAILED": "the principal may not use this topic (ACLs)",
    "GROUP_AUTHORIZATION_FAILED": "the principal may not use this group (ACLs)",
    "UNSUPPORTED_VERSION": "the broker does not serve this version of the API",
    "TOPIC_ALREADY_EXISTS": "a topic of that name exists already",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "the broker expected another sequence number from this producer: a batch "
                                    "is missing",
    "DUPLICATE_SEQUENCE_NUMBER": "the broker already has this batch from this producer (a retry)",
    "INVALID_PRODUCER_EPOCH": "the producer's epoch is older than the coordinator's: a newer producer with the "
                              "same transactional id fenced this one (a zombie)",
    "PRODUCER_FENCED": "a newer producer with the same transactional id took over: this one is fenced",
    "INVALID_TXN_STATE": "the request does not fit the transaction's state (e.g. EndTxn with no transaction open)",
    "CONCURRENT_TRANSACTIONS": "the previous transaction of this id is still being completed; the client retries",
    "INVALID_PRODUCER_ID_MAPPING": "the producer id does not belong to this transactional id",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "the principal may not use this transactional id (ACLs)",
    "FENCED_MEMBER_EPOCH": "the member's epoch is fenced: it must rejoin the group with epoch 0",
    "STALE_MEMBER_EPOCH": "the member's epoch is older than the group's: its assignment changed",
    "UNKNOWN_TOPIC_ID": "the broker does not know this topic id",
    "GROUP_ID_NOT_FOUND": "no group has this id",
    "MEMBER_ID_REQUIRED": "the first JoinGroup gets a member id to join again with (KIP-394): normal",
    "THROTTLING_QUOTA_EXCEEDED": "a quota was exceeded: the request was refused and the client must wait",
    "UNSTABLE_OFFSET_COMMIT": "a transaction holding offsets for this group is still open",
    "TRANSACTION_ABORTABLE": "the transaction failed and must be aborted (KIP-890)",
    "FETCH_SESSION_ID_NOT_FOUND": "the broker dropped the fetch session: the client starts a new one",
    "INVALID_FETCH_SESSION_EPOCH": "the fetch session's epoch does not match: the client starts a new one",
    "FENCED_LEADER_EPOCH": "the client's leader epoch is older than the broker's: it refreshes metadata",
    "UNKNOWN_LEADER_EPOCH": "the client's leader epoch is newer than the broker's: the broker lags",
    "INVALID_REQUEST": "the broker could not accept the request as sent",
}


def sentence(api: str, version: int, code: int) -> str:
    """The meaning of `code` answered to `api` v`version`, with the kit's table's word on it."""
    name = NAME.get(code, f"error {code}")
    text = MEANING.get(name, "see Errors.java for its meaning")
    if code in RETRIABLE:
        text += " (retriable)"
    return f"{name} ({code}): {text}. {_table_word(api, version, name)}"


def _table_word(api: str, version: int, name: str) -> str:
    """Where the kit's error table (kipviz.broker.api_errors.ERROR_ROWS) has this error."""
    rows = [r for r in ERROR_ROWS.get(api, ()) if r.error == name]
    hit = [r for r in rows if r.first <= version and (r.last is None or version <= r.last)]
    if hit:
        r = hit[0]
        return f"Kafka answers it to {api} from v{r.first} ({r.source})."
    if rows:
        return f"The kit's table lists it for {api} only at other versions (from v{rows[0].first})."
    return f"The kit's table does not list it for {api}."
