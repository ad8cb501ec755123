"""Admin RPCs on topics and the cluster, after released Kafka 4.4:

    CreatePartitions  ControllerApis.createPartitions (duplicates, ALTER on each topic) ->
                      ReplicationControlManager.createPartitions: the new total must grow the topic
                      (INVALID_PARTITIONS), manual assignments one per new partition with the topic's
                      replication factor (INVALID_REPLICA_ASSIGNMENT); ValidateOnly changes nothing.
    DeleteRecords     KafkaApis.handleDeleteRecordsRequest (DELETE on the topic) ->
                      ReplicaManager.deleteRecords -> Partition.deleteRecordsOnLeader: -1 means the
                      high watermark, a negative or past-the-high-watermark offset is
                      OFFSET_OUT_OF_RANGE, a compact-only topic POLICY_VIOLATION, an internal topic
                      INVALID_TOPIC_EXCEPTION; the log start offset moves up (the records below are
                      gone: a consumer fetching there gets OFFSET_OUT_OF_RANGE), answered with the new
                      low watermark.
    DescribeCluster   KafkaApis.handleDescribeCluster -> AuthHelper.computeDescribeClusterResponse
                      (server/src/main/java/org/apache/kafka/server/AuthHelper.java): a broker
                      answers EndpointType 1 only; the controller id is a live broker's.
    DescribeLogDirs   KafkaApis.handleDescribeLogDirsRequest (DESCRIBE on the cluster, else an empty
                      answer with CLUSTER_AUTHORIZATION_FAILED): one log directory per broker, the
                      replicas it holds with their size in bytes (the model's stored batches).

Replication is not simulated (kipviz.broker.handlers.metadata): a broker holds the replicas
replicas_of() lists; every replica is in sync (OffsetLag 0) and DeleteRecords needs no follower to
catch up. Where the kit keeps an open transaction's records whole (kipviz.broker.retention), the
low watermark stops at the last stable offset. ElectLeaders is served by kipviz.broker.handlers.elect_leaders
(a leader moved to another replica keeps the replica list, so its preferred replica can differ)."""
from __future__ import annotations

from ...schema import events as ev
from ...schema.error_codes import CODE
from ..error_rows import kafka_only, rows
from ..retention import held_bytes, move_log_start
from . import Request, handles
from .metadata import (
    CLUSTER_OPERATIONS,
    CLUSTER_RESOURCE,
    INT32_MIN,
    acl_bits,
    cluster_id,
    controller_id,
    dedupe,
    leader_alive,
    live_brokers,
    log_of,
    model_state,
    replicas_of,
    shape,
)

LOG_DIR = "/tmp/kafka-logs"          # log.dir's default (ServerLogConfigs.LOG_DIR_DEFAULT)
HIGH_WATERMARK = -1                  # DeleteRecordsRequest.HIGH_WATERMARK
ERRORS = {}


# ---- CreatePartitions -------------------------------------------------------------------------------
def _grow_error(cluster, topic, t: dict) -> tuple[str, str | None] | None:
    """ReplicationControlManager.createPartitions' checks for one topic: (error, message) or None."""
    if topic is None:
        return "UNKNOWN_TOPIC_OR_PARTITION", None
    have, count = len(topic.partitions), t.get("Count", -1)
    if count == have:
        return "INVALID_PARTITIONS", f"Topic already has {have} partition(s)."
    if count < have:
        return "INVALID_PARTITIONS", (f"The topic {topic.name} currently has {have} partition(s); {count} would not "
                                      "be an increase.")
    assignments = t.get("Assignments")
    if assignments is not None:
        if len(assignments) != count - have:
            return "INVALID_REPLICA_ASSIGNMENT", (f"Attempted to add {count - have} additional partition(s), but "
                                                  f"only {len(assignments)} assignment(s) were specified.")
        rf = len(replicas_of(cluster, topic, topic.partitions[0]))
        for a in assignments:
            ids = a.get("BrokerIds") or []
            if not ids:
                return "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list."
            if len(set(ids)) != len(ids):
                return "INVALID_REPLICA_ASSIGNMENT", ("The manual partition assignment includes the broker "
                                                      f"{next(b for b in ids if ids.count(b) > 1)} more than once.")
            if len(ids) != rf:
                return "INVALID_REPLICA_ASSIGNMENT", (f"The manual partition assignment includes a partition with "
                                                      f"{len(ids)} replica(s), but this is not consistent with "
                                                      f"previous partitions, which have {rf} replica(s).")
            unknown = [b for b in ids if not 0 <= b < cluster.config.brokers]
            if unknown:
                return "INVALID_REPLICA_ASSIGNMENT", ("The manual partition assignment includes broker "
                                                      f"{unknown[0]}, but no such broker is registered.")
            if all(b in cluster.down for b in ids):
                return "INVALID_REPLICA_ASSIGNMENT", ("All brokers specified in the manual partition assignment "
                                                      "for partition are fenced or in controlled shutdown.")
    elif not live_brokers(cluster):
        return "INVALID_REPLICATION_FACTOR", ("Unable to replicate the partition time(s): All brokers are currently "
                                              "fenced or in controlled shutdown.")
    return None


def grow_topic(cluster, topic, count: int, assignments: list | None) -> None:
    """Add partitions to `topic` up to `count`: new logs (leader: the assignment's first broker, or
    round robin), the replica lists kept beside the topic's (model_state 'replication')."""
    rep = model_state(cluster)["replication"]
    current = rep.get(topic.topic_id)
    if assignments is not None and not isinstance(current, dict):
        # a manual assignment for the new partitions: keep every partition's list explicitly
        current = rep[topic.topic_id] = {log.partition: replicas_of(cluster, topic, log) for log in topic.partitions}
    n = cluster.config.brokers
    for i, p in enumerate(range(len(topic.partitions), count)):
        leader = assignments[i]["BrokerIds"][0] if assignments is not None else p % n
        topic.partitions.append(cluster.topics.new_log(topic.name, p, topic.topic_id, leader))
        if isinstance(current, dict):
            # without an assignment, the topic's replication factor (that of partition 0's list)
            rf = len(current.get(0) or [leader])
            current[p] = (list(assignments[i]["BrokerIds"]) if assignments is not None
                          else [(leader + k) % n for k in range(rf)])


ERRORS["CreatePartitions"] = (
    rows(0, ("INVALID_REQUEST", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_PARTITIONS",
             "INVALID_REPLICA_ASSIGNMENT", "INVALID_REPLICATION_FACTOR"),
         "ControllerApis.createPartitions, ReplicationControlManager.createPartitions")
    + kafka_only(0, ("POLICY_VIOLATION",), "ReplicationControlManager: create.topic.policy.class.name",
                 "the model has no create-topic policy")
    + kafka_only(3, ("THROTTLING_QUOTA_EXCEEDED",), "KIP-599 (CreatePartitions v3)",
                 "the model has no controller mutation quota"))


@handles("CreatePartitions")
def create_partitions(cluster, req: Request) -> dict:
    topics = req.body.get("Topics") or []
    validate_only = bool(req.body.get("ValidateOnly"))
    names = [t.get("Name") for t in topics]
    duplicates = dedupe(n for n in names if names.count(n) > 1)
    results = [{"Name": n, "ErrorCode": CODE["INVALID_REQUEST"], "ErrorMessage": "Duplicate topic name."}
               for n in duplicates]
    todo = []
    for t in {t.get("Name"): t for t in topics if t.get("Name") not in duplicates}.values():
        if cluster.authorized(req.principal, "TOPIC", t.get("Name") or "", "ALTER"):
            todo.append(t)
        else:
            results.append({"Name": t.get("Name"), "ErrorCode": CODE["TOPIC_AUTHORIZATION_FAILED"],
                            "ErrorMessage": None})
    for t in todo:
        topic = cluster.topics.get(t["Name"])
        problem = _grow_error(cluster, topic, t)
        if problem is None:
            if not validate_only:
                old = len(topic.partitions)
                grow_topic(cluster, topic, t["Count"], t.get("Assignments"))
                cluster.emit(ev.PartitionsAdded, topic=topic.name, old_count=old, partitions=t["Count"])
            results.append({"Name": t["Name"], "ErrorCode": 0, "ErrorMessage": None})
        else:
            results.append({"Name": t["Name"], "ErrorCode": CODE[problem[0]], "ErrorMessage": problem[1]})
    return shape("CreatePartitionsResponse", req.version, {"ThrottleTimeMs": 0, "Results": results})


# ---- DeleteRecords ----------------------------------------------------------------------------------
def delete_records_on_leader(cluster, topic, log, offset: int, broker: int) -> tuple[int, int]:
    """Partition.deleteRecordsOnLeader and UnifiedLog.maybeIncrementLogStartOffset: (error code, low
    watermark). The one place DeleteRecords moves a log start (retention.move_log_start)."""
    from ..log_config import cleanup_policy
    if log.leader != broker or not leader_alive(cluster, log):
        return CODE["NOT_LEADER_OR_FOLLOWER"], -1
    policy = cleanup_policy(cluster, topic)
    if "delete" not in policy and "compact" in policy:
        return CODE["POLICY_VIOLATION"], -1
    hw = log.log_end_offset
    target = hw if offset == HIGH_WATERMARK else offset
    if target < 0 or target > hw:
        return CODE["OFFSET_OUT_OF_RANGE"], -1
    move_log_start(cluster, topic.name, log, target, "DeleteRecords", "DeleteRecords")
    return 0, log.log_start_offset


ERRORS["DeleteRecords"] = (
    rows(0, ("TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER",
             "OFFSET_OUT_OF_RANGE", "POLICY_VIOLATION", "INVALID_TOPIC_EXCEPTION"),
         "KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecordsOnLocalLog, "
         "Partition.deleteRecordsOnLeader")
    + kafka_only(0, ("REQUEST_TIMED_OUT",), "DelayedDeleteRecords", "no followers to wait for")
    + kafka_only(0, ("KAFKA_STORAGE_ERROR",), "ReplicaManager.deleteRecordsOnLocalLog",
                 "the model has no log directories to fail"))


@handles("DeleteRecords")
def delete_records(cluster, req: Request) -> dict:
    out = []
    for t in req.body.get("Topics") or []:
        name = t.get("Name")
        allowed = cluster.authorized(req.principal, "TOPIC", name or "", "DELETE")
        topic = cluster.topics.get(name)
        parts = []
        for p in t.get("Partitions") or []:
            idx = p.get("PartitionIndex", -1)
            log = log_of(topic, idx)
            if not allowed:
                code, low = CODE["TOPIC_AUTHORIZATION_FAILED"], -1
            elif log is None:
                code, low = CODE["UNKNOWN_TOPIC_OR_PARTITION"], -1
            elif topic.internal:
                code, low = CODE["INVALID_TOPIC_EXCEPTION"], -1
            else:
                code, low = delete_records_on_leader(cluster, topic, log, p.get("Offset", 0), req.broker)
            parts.append({"PartitionIndex": idx, "LowWatermark": low, "ErrorCode": code})
        out.append({"Name": name, "Partitions": parts})
    return shape("DeleteRecordsResponse", req.version, {"ThrottleTimeMs": 0, "Topics": out})


# ---- DescribeCluster --------------------------------------------------------------------------------
BROKER_ENDPOINT = 1                  # EndpointType.BROKER (2: CONTROLLER; 0: UNKNOWN)

ERRORS["DescribeCluster"] = (
    rows(0, ("INVALID_REQUEST",), "AuthHelper.computeDescribeClusterResponse: a v0 request for another endpoint type")
    + rows(1, ("MISMATCHED_ENDPOINT_TYPE", "UNSUPPORTED_ENDPOINT_TYPE"),
           "KIP-919 (DescribeCluster v1): EndpointType 2 (controllers) sent to a broker, or an unknown type"))


@handles("DescribeCluster")
def describe_cluster(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    top = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "EndpointType": BROKER_ENDPOINT,
           "ClusterId": cluster_id(cluster), "ControllerId": -1, "Brokers": [],
           "ClusterAuthorizedOperations": INT32_MIN}
    kind = body.get("EndpointType", BROKER_ENDPOINT)
    if kind not in (1, 2):
        top.update(ErrorCode=CODE["INVALID_REQUEST" if v == 0 else "UNSUPPORTED_ENDPOINT_TYPE"],
                   ErrorMessage=f"Unsupported endpoint type {kind}")
        return shape("DescribeClusterResponse", v, top)
    if kind != BROKER_ENDPOINT:
        top.update(ErrorCode=CODE["INVALID_REQUEST" if v == 0 else "MISMATCHED_ENDPOINT_TYPE"],
                   ErrorMessage="The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
                                "of type CONTROLLER")
        return shape("DescribeClusterResponse", v, top)
    if body.get("IncludeClusterAuthorizedOperations"):
        top["ClusterAuthorizedOperations"] = (
            acl_bits(cluster, req.principal, "CLUSTER", CLUSTER_RESOURCE, CLUSTER_OPERATIONS)
            if cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "DESCRIBE") else 0)
    fenced = bool(body.get("IncludeFencedBrokers"))
    # a crashed broker is fenced once its heartbeats stop; listed only when asked for
    for b in range(cluster.config.brokers):
        if b in cluster.down and not fenced:
            continue
        host, port = cluster.config.advertised(b, req.listener)
        top["Brokers"].append({"BrokerId": b, "Host": host, "Port": port, "Rack": None, "IsFenced": b in cluster.down})
    cid = controller_id(cluster)
    top["ControllerId"] = cid if any(x["BrokerId"] == cid for x in top["Brokers"]) else -1
    return shape("DescribeClusterResponse", v, top)


# ---- DescribeLogDirs --------------------------------------------------------------------------------
ERRORS["DescribeLogDirs"] = (
    rows(0, ("CLUSTER_AUTHORIZATION_FAILED",), "KafkaApis.handleDescribeLogDirsRequest: DESCRIBE on the cluster "
                                               "(the top-level ErrorCode from v3; before it, an empty answer)")
    + kafka_only(0, ("KAFKA_STORAGE_ERROR",), "DescribeLogDirsResponse.json", "the model has no log directories "
                                                                               "to fail"))


@handles("DescribeLogDirs")
def describe_log_dirs(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    if not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "DESCRIBE"):
        return shape("DescribeLogDirsResponse", v, {"ThrottleTimeMs": 0, "Results": [],
                                                    "ErrorCode": CODE["CLUSTER_AUTHORIZATION_FAILED"]})
    wanted = body.get("Topics")
    asked = None if wanted is None else {(t.get("Topic"), p) for t in wanted for p in t.get("Partitions") or []}
    by_topic: dict[str, list] = {}
    for name in sorted(cluster.topics.by_name):
        topic = cluster.topics.get(name)
        for log in topic.partitions:
            if req.broker not in replicas_of(cluster, topic, log):
                continue
            if asked is not None and (name, log.partition) not in asked:
                continue
            by_topic.setdefault(name, []).append({"PartitionIndex": log.partition, "PartitionSize": held_bytes(log),
                                                  "OffsetLag": 0, "IsFutureKey": False})
    result = {"ErrorCode": 0, "LogDir": LOG_DIR, "TotalBytes": -1, "UsableBytes": -1, "IsCordoned": False,
              "Topics": [{"Name": n, "Partitions": ps} for n, ps in by_topic.items()]}
    return shape("DescribeLogDirsResponse", v, {"ThrottleTimeMs": 0, "ErrorCode": 0, "Results": [result]})

