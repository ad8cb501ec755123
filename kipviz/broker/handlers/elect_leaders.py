"""ElectLeaders (api key 43), after released Kafka 4.4. A KRaft broker forwards it to the controller
(KafkaApis: ELECT_LEADERS -> forwardToController); the model answers on the broker it reached:

    ControllerApis.handleElectLeaders     ALTER on the cluster, else ElectLeadersRequest.getErrorResponse:
                                          the top-level ErrorCode (v1+) and every requested partition
                                          with CLUSTER_AUTHORIZATION_FAILED (v0 has only the latter);
                                          an unknown ElectionType is INVALID_REQUEST the same way.
    ReplicationControlManager.electLeaders TopicPartitions null: every topic, listing only the
                                          partitions whose answer is not ELECTION_NOT_NEEDED; else
                                          each requested partition, in the request's order.
    ReplicationControlManager.electLeader  UNKNOWN_TOPIC_OR_PARTITION; ELECTION_NOT_NEEDED when the
                                          preferred replica leads (PREFERRED) or there is a leader
                                          (UNCLEAN); else PartitionChangeBuilder elects, or nothing
                                          changes: PREFERRED_LEADER_NOT_AVAILABLE /
                                          ELIGIBLE_LEADERS_NOT_AVAILABLE.

(all under metadata/src/main/java/org/apache/kafka/controller/ and core/src/main/scala/kafka/server/)

PartitionChangeBuilder.electPreferredLeader: the first replica if it is in the ISR and alive, else
the current leader if it still may lead (no change), else another live ISR member. electAnyLeader
(UNCLEAN): the first live ISR member, else (unclean) the first live replica. In the model the ISR is
the live replicas (kipviz.broker.handlers.metadata._partition_md: replication is not simulated), so
the unclean step finds no one the clean one missed, and a crashed leader stays the partition's
leader (no leader, for clients) until an election moves it (Cluster.move_partition_leader: leader
epoch + 1). Eligible leader replicas (KIP-966) are not modelled."""
from __future__ import annotations

from ...schema import events as ev
from ...schema.error_codes import CODE
from ..error_rows import kafka_only, rows
from . import Request, handles
from .metadata import CLUSTER_RESOURCE, METADATA_TOPIC, leader_alive, log_of, replicas_of, shape

PREFERRED, UNCLEAN = 0, 1            # org.apache.kafka.common.ElectionType
# new ApiError(Errors.X) carries Errors.X.message() (clients/.../common/requests/ApiError.java, Errors.java)
DEFAULT_MESSAGE = {
    "ELECTION_NOT_NEEDED": "Leader election not needed for topic partition.",
    "PREFERRED_LEADER_NOT_AVAILABLE": "The preferred leader was not available.",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": "Eligible topic partition leaders are not available.",
}

ERRORS = {"ElectLeaders": (
    rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "INVALID_REQUEST", "UNKNOWN_TOPIC_OR_PARTITION",
             "ELECTION_NOT_NEEDED", "PREFERRED_LEADER_NOT_AVAILABLE"),
         "ControllerApis.handleElectLeaders, ReplicationControlManager.electLeaders / electLeader")
    + rows(1, ("ELIGIBLE_LEADERS_NOT_AVAILABLE",), "KIP-460 (ElectLeaders v1: unclean elections)")
    + kafka_only(0, ("REQUEST_TIMED_OUT", "NOT_CONTROLLER"), "ControllerApis.handleElectLeaders (TimeoutMs, "
                 "forwarding)", "the model's controller answers at once and is never moved"))}


def _choose(cluster, replicas: list[int], leader: int, kind: int) -> int | None:
    """PartitionChangeBuilder's election: the new leader, or None where nothing changes."""
    isr = [b for b in replicas if b not in cluster.down]
    if kind == PREFERRED:
        if replicas[:1] and replicas[0] in isr:
            return replicas[0]
        if leader in isr:
            return None                        # the current leader may stay: no change
    # another live ISR member; unclean: any live replica, the same set in the model
    return isr[0] if isr else None


def elect_leader(cluster, topic_name: str, partition: int, kind: int) -> tuple[str, str | None]:
    """ReplicationControlManager.electLeader for one partition: (error name, message)."""
    topic = cluster.topics.get(topic_name) if topic_name != METADATA_TOPIC else None
    if topic is None:
        return "UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {topic_name}"
    log = log_of(topic, partition)
    if log is None:
        return "UNKNOWN_TOPIC_OR_PARTITION", f"No such partition as {topic_name}-{partition}"
    replicas = replicas_of(cluster, topic, log)
    alive = leader_alive(cluster, log)          # a crashed leader is no leader (LeaderId -1 in Metadata)
    if (kind == PREFERRED and alive and replicas[:1] == [log.leader]) or (kind == UNCLEAN and alive):
        return "ELECTION_NOT_NEEDED", DEFAULT_MESSAGE["ELECTION_NOT_NEEDED"]
    new = _choose(cluster, replicas, log.leader, kind)
    if new is None:
        error = "PREFERRED_LEADER_NOT_AVAILABLE" if kind == PREFERRED else "ELIGIBLE_LEADERS_NOT_AVAILABLE"
        return error, DEFAULT_MESSAGE[error]
    cluster.move_partition_leader(topic_name, partition, new)
    cluster.emit(ev.LeaderElected, topic=topic_name, partition=partition, leader=new,
                 election="preferred" if kind == PREFERRED else "unclean")
    return "NONE", None


def _refused(version: int, asked, error: str, message: str | None) -> dict:
    """ElectLeadersRequest.getErrorResponse: the error on every requested partition and on top (v1+)."""
    results = [{"Topic": t.get("Topic"), "PartitionResult": [
        {"PartitionId": p, "ErrorCode": CODE[error], "ErrorMessage": message} for p in t.get("Partitions") or []]}
        for t in asked or []]
    return shape("ElectLeadersResponse", version, {"ThrottleTimeMs": 0, "ErrorCode": CODE[error],
                                                   "ReplicaElectionResults": results})


def _result(partition: int, answer: tuple[str, str | None]) -> dict:
    return {"PartitionId": partition, "ErrorCode": CODE[answer[0]], "ErrorMessage": answer[1]}


@handles("ElectLeaders")
def elect_leaders(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    asked = body.get("TopicPartitions")
    if not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "ALTER"):
        # AuthHelper.authorizeClusterOperation's ClusterAuthorizationException
        return _refused(v, asked, "CLUSTER_AUTHORIZATION_FAILED",
                        f"Request ElectLeaders v{v} from {req.principal} is not authorized.")
    kind = body.get("ElectionType", PREFERRED) if v >= 1 else PREFERRED
    if kind not in (PREFERRED, UNCLEAN):
        return _refused(v, asked, "INVALID_REQUEST", f"Unknown election type {kind}")
    out = []
    if asked is None:
        for name in sorted(n for n in cluster.topics.by_name if n != METADATA_TOPIC):
            parts = []
            for log in cluster.topics.get(name).partitions:
                answer = elect_leader(cluster, name, log.partition, kind)
                if answer[0] != "ELECTION_NOT_NEEDED":
                    parts.append(_result(log.partition, answer))
            out.append({"Topic": name, "PartitionResult": parts})
    else:
        for t in asked:
            out.append({"Topic": t.get("Topic"), "PartitionResult": [
                _result(p, elect_leader(cluster, t.get("Topic"), p, kind)) for p in t.get("Partitions") or []]})
    return shape("ElectLeadersResponse", v, {"ThrottleTimeMs": 0, "ErrorCode": 0, "ReplicaElectionResults": out})
