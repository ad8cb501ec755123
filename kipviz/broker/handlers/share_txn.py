"""TxnShareAcknowledge (KIP-1289, PROPOSED): a transactional producer stages share-group
acknowledgements at the share-partition leader. Served only at share.version >= 2 (cluster.handle
answers UNSUPPORTED_VERSION otherwise, before this handler). The logic is
kipviz/broker/share_txn.py; this module only shapes the answer: a top-level error comes with no
Responses; otherwise one entry per requested partition, in request order."""
from __future__ import annotations

from ...codec.fit import complete_body
from ..error_rows import kafka_only, rows
from ..share_txn import stage
from . import Request, handles

# KIP-1289 (PROPOSED): the codes broker/share_txn.stage can answer (the page lists them), plus
# UNSUPPORTED_VERSION below share.version 2 (cluster.handle); rows marked kafka_only are on the
# page but never answered by the model. Read by kipviz.broker.api_errors.
ERRORS = {"TxnShareAcknowledge": rows(0, (
    "INVALID_REQUEST", "UNSUPPORTED_VERSION", "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_NOT_FOUND", "INVALID_PRODUCER_ID_MAPPING", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH",
    "INVALID_TXN_STATE", "UNKNOWN_MEMBER_ID", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER", "INVALID_RECORD_STATE", "OPERATION_NOT_ATTEMPTED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"), "broker/share_txn.stage (KIP-1289 page)")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "KIP-1289 page", "the page lists them; the model's transaction coordinator is always loaded "
                                  "and stage's broker-internal add never misses it")}
#: errors KIP-1289's page lists that the model never answers (a departure)
PAGE_ONLY = {"TxnShareAcknowledge": ("TRANSACTION_ABORTABLE", "KAFKA_STORAGE_ERROR")}


@handles("TxnShareAcknowledge")
def txn_share_acknowledge(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    res = stage(cluster, broker=req.broker, principal=req.principal,
                transactional_id=b.get("TransactionalId"), group_id=b.get("GroupId") or "",
                producer_id=b.get("ProducerId", -1), producer_epoch=b.get("ProducerEpoch", -1),
                member_id=b.get("MemberId") or "", member_epoch=b.get("MemberEpoch", 0),
                topics=b.get("Topics") or [])
    responses = []
    if not res.error:
        by_topic: dict = {}
        for (tid, p), out in res.partitions.items():
            by_topic.setdefault(tid, []).append({"PartitionIndex": p, **out})
        responses = [{"TopicId": tid, "Partitions": ps} for tid, ps in by_topic.items()]
    return complete_body("TxnShareAcknowledgeResponse", v, {
        "ThrottleTimeMs": 0, "ErrorCode": res.error, "Responses": responses, "NodeEndpoints": []})
