"""OffsetForLeaderEpoch (KIP-101, KIP-320): where did a leader epoch end?

Consumers (librdkafka, the Java client) send it after a leader change or when they resume from a
committed offset carrying a leader epoch, to detect log truncation. After released Kafka's
`ReplicaManager.lastOffsetForLeaderEpoch` -> `Partition.lastOffsetForLeaderEpoch`: NOT_LEADER_OR_FOLLOWER
off the leader, the CurrentLeaderEpoch check (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), then
`LeaderEpochFileCache.endOffsetFor`: the largest epoch <= the requested one and the offset where it
ended (the log end offset for the current epoch); (-1, -1) when the log has no epoch that old.
The model keeps no epoch history (no replication): every stored record belongs to the current
leader epoch, so an older epoch on a non-empty log ends where the current one started (0)."""
from __future__ import annotations

from ...schema.error_codes import CODE
from ..error_rows import rows
from . import Request, handles
from .metadata import epoch_error, leader_alive, log_of

UNDEFINED = -1


def _partition(cluster, req: Request, topic, op: dict, allowed: bool) -> dict:
    out = {"Partition": op.get("Partition", -1), "ErrorCode": 0, "LeaderEpoch": UNDEFINED, "EndOffset": UNDEFINED}
    if not allowed:
        out["ErrorCode"] = CODE["TOPIC_AUTHORIZATION_FAILED"]
        return out
    log = log_of(topic, out["Partition"])
    if log is None:
        out["ErrorCode"] = CODE["UNKNOWN_TOPIC_OR_PARTITION"]
        return out
    if log.leader != req.broker or not leader_alive(cluster, log):
        out["ErrorCode"] = CODE["NOT_LEADER_OR_FOLLOWER"]
        return out
    code = epoch_error(log, op.get("CurrentLeaderEpoch", -1))
    if code:
        out["ErrorCode"] = code
        return out
    wanted = op.get("LeaderEpoch", UNDEFINED)
    if wanted >= log.leader_epoch:
        out.update(LeaderEpoch=log.leader_epoch, EndOffset=log.log_end_offset)
    elif wanted >= 0 and log.log_end_offset > 0:
        out.update(LeaderEpoch=wanted, EndOffset=0)
    return out


# The errors OffsetForLeaderEpoch can return (kipviz.broker.api_errors reads ERRORS)
ERRORS = {"OffsetForLeaderEpoch": (
    rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "TOPIC_AUTHORIZATION_FAILED"),
         "KafkaApis.handleOffsetForLeaderEpochRequest")
    + rows(2, ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH"), "KIP-320 (OffsetForLeaderEpoch v2 CurrentLeaderEpoch)"))}


@handles("OffsetForLeaderEpoch")
def offset_for_leader_epoch(cluster, req: Request) -> dict:
    topics = []
    # KafkaApis.handleOffsetForLeaderEpochRequest: CLUSTER_ACTION (a follower) allows every topic, else
    # DESCRIBE per topic by name -- before its existence is looked at
    follower = cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "CLUSTER_ACTION")
    for t in req.body.get("Topics") or []:
        name = t.get("Topic")
        topic = cluster.topics.get(name)
        allowed = follower or cluster.authorized(req.principal, "TOPIC", name or "", "DESCRIBE")
        topics.append({"Topic": name, "Partitions": [_partition(cluster, req, topic, op, allowed)
                                                     for op in t.get("Partitions") or []]})
    return {"ThrottleTimeMs": 0, "Topics": topics}
