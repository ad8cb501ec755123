"""Which broker role answers each API: the group coordinator, the transaction coordinator, the share
coordinator or a partition's leader (anything else: any broker). One table, read by the broker
model's routing (kipviz.broker.cluster: a request sent with broker=None goes to its coordinator,
as a client does after FindCoordinator) and by the pictures' lifelines (kipviz.draw.sequence).

    role_of("JoinGroup")            -> "group"
    role_of("Produce")              -> "leader"
    role_of("Metadata")             -> None

Kafka's own routing: core/src/main/scala/kafka/server/KafkaApis.scala hands each API to
GroupCoordinator, TransactionCoordinator, ShareCoordinator or the ReplicaManager; the coordinator
key types are FindCoordinatorRequest's (clients/.../requests/FindCoordinatorRequest.java,
CoordinatorType: GROUP 0, TRANSACTION 1, SHARE 2)."""
from __future__ import annotations

from .coordinator_type import CoordinatorType

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = CoordinatorType.GROUP, CoordinatorType.TRANSACTION, CoordinatorType.SHARE

GROUP_APIS = frozenset({
    "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "TxnOffsetCommit",
    "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ListGroups", "DescribeGroups", "DeleteGroups",
    "OffsetDelete", "ShareGroupHeartbeat", "ShareGroupDescribe", "StreamsGroupHeartbeat",
    "StreamsGroupDescribe", "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets"})
# the group-protocol families: a new API of one of them is the group coordinator's too
GROUP_PREFIXES = ("ConsumerGroup", "ShareGroup", "StreamsGroup")
TXN_APIS = frozenset({"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers",
                      "DescribeTransactions", "ListTransactions"})
LEADER_APIS = frozenset({"Produce", "Fetch", "ListOffsets", "ShareFetch", "ShareAcknowledge",
                         "TxnShareAcknowledge", "DeleteRecords", "OffsetForLeaderEpoch"})
SHARE_STATE_APIS = frozenset({"InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
                              "DeleteShareGroupState", "ReadShareGroupStateSummary"})

# a member's own exchanges with its group coordinator (joining, syncing, heartbeating: the group forming)
MEMBERSHIP_APIS = frozenset({"ConsumerGroupHeartbeat", "ShareGroupHeartbeat", "StreamsGroupHeartbeat", "JoinGroup",
                             "SyncGroup", "Heartbeat"})
ROLE_KEY_TYPES = {"group": GROUP_KEY, "transaction": TRANSACTION_KEY, "share": SHARE_KEY}


def role_of(api: str) -> str | None:
    """"group", "transaction", "share" or "leader": the role answering `api`; None for any broker."""
    if api in GROUP_APIS or api.startswith(GROUP_PREFIXES):
        return "group"
    if api in TXN_APIS:
        return "transaction"
    if api in LEADER_APIS:
        return "leader"
    if api in SHARE_STATE_APIS:
        return "share"
    return None


def coordinator_key_type(api: str) -> int | None:
    """The FindCoordinator key type (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY) of the coordinator answering `api`,
    or None when any broker or a partition's leader answers it."""
    return ROLE_KEY_TYPES.get(role_of(api))
