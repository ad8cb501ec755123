"""LeaderAndIsr and StopReplica: the ZooKeeper-mode controller's requests to brokers (Kafka
0.8-3.9, removed with ZooKeeper in 4.0, so no release the kit plays serves them; a scenario that
plays a 2.8-3.9 ZooKeeper-mode broker turns them on with ClusterConfig.api_versions). The broker
side lives in kipviz.broker.replicas (KafkaApis.handleLeaderAndIsrRequest / handleStopReplicaRequest
-> ReplicaManager). Only the controller may send them (CLUSTER_ACTION on the cluster)."""
from __future__ import annotations

from ...schema.error_codes import CODE
from ..error_rows import rows
from ..respond import error_response
from . import Request, handles

# The errors each controller request can return (kipviz.broker.api_errors reads ERRORS)
ERRORS = {
    "LeaderAndIsr": (
        rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "STALE_CONTROLLER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION"),
             "KafkaApis.handleLeaderAndIsrRequest, ReplicaManager.becomeLeaderOrFollower")
        + rows(5, ("INCONSISTENT_TOPIC_ID",), "KIP-516 (LeaderAndIsr v5 topic ids; Partition.checkTopicId)")),
    "StopReplica": (
        rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "STALE_CONTROLLER_EPOCH"),
             "KafkaApis.handleStopReplicaRequest, ReplicaManager.stopReplicas")
        + rows(3, ("FENCED_LEADER_EPOCH",), "KIP-570 (StopReplica v3 leader epochs)")),
}


@handles("LeaderAndIsr", "StopReplica")
def controller_request(cluster, req: Request) -> dict:
    if not cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "CLUSTER_ACTION"):
        return error_response(req.api, req.version, req.body, CODE["CLUSTER_AUTHORIZATION_FAILED"])
    if req.api == "LeaderAndIsr":
        return cluster.replicas.leader_and_isr(req.broker, req.version, req.body)
    return cluster.replicas.stop_replica(req.broker, req.version, req.body)
