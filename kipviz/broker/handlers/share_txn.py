"""TxnShareAcknowledge (KIP-1289, PROPOSED): a transactional producer stages share-group
acknowledgements at the share-partition leader. Served only at share.version >= 2 (cluster.handle
answers UNSUPPORTED_VERSION otherwise, before this handler). The logic is
kipviz/broker/share_txn.py; this module only shapes the answer: a top-level error comes with no
Responses; otherwise one entry per requested partition, in request order."""
from __future__ import annotations

from ..share_txn import stage
from ..transactions import complete_body
from . import Request, handles


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
