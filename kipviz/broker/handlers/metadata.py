"""Topics and metadata: Metadata, CreateTopics, DeleteTopics and FindCoordinator, after released
Kafka (`KafkaApis.handleTopicMetadataRequest` / `getCoordinator`, KRaft `ControllerApis` and
`ReplicationControlManager` for topic creation and deletion), with topic ids (KIP-516's page).

    Metadata         brokers at their advertised listeners (ClusterConfig.advertised_listeners,
                     default "broker-N":9092; crashed ones left out), cluster id, controller id,
                     topics with TopicId (v10+), partitions with leader/epoch/replicas/isr/offline;
                     v12+ may name topics by TopicId (unknown or deleted -> UNKNOWN_TOPIC_ID);
                     v10-11 must send names and zero ids (else INVALID_REQUEST for every topic);
                     AllowAutoTopicCreation only counts when cluster.config.auto_create_topics.
    CreateTopics     a NEW random topic id per creation, also when a deleted name is reused;
                     -1 = default partitions / replication factor; ValidateOnly creates nothing.
    DeleteTopics     by name, and from v6 by TopicId (UNKNOWN_TOPIC_ID for unknown or deleted ids).
    FindCoordinator  key type 0 group, 1 transaction, 2 share ("groupId:topicId:partition", v6+):
                     the leader of the owning internal partition (GroupCoordinatorService / TransactionStateManager /
                     ShareCoordinatorService partitionFor).

Replication is not simulated: a partition's replicas are its leader followed by the next brokers
(replication factor 1 unless CreateTopics asked for more; internal topics min(3, brokers)), the
ISR is the replicas that are not crashed. The helpers at the top are shared with handlers/data.py.
"""
from __future__ import annotations

import hashlib
import re
import uuid
import weakref

from ...codec.fit import fit_body
from ...records import share_coordinator_partition
from ...schema import events as ev
from ...schema.coordinators import GROUP_KEY, SHARE_KEY, TRANSACTION_KEY
from ...schema.error_codes import CODE
from ...schema.topics import INTERNAL_TOPICS, SHARE_GROUP_STATE
from ...uuids import ZERO_UUID, from_kafka_str, to_kafka_str
from .. import log_config
from ..error_rows import kafka_only, rows
from . import Request, handles

# ---- shared helpers (also used by handlers/data.py) -------------------------------------------------
CLUSTER_RESOURCE = "kafka-cluster"          # Kafka's CLUSTER_NAME resource
INT32_MIN = -2**31                          # "authorized operations not requested"
DEFAULT_REPLICATION_FACTOR = 1              # default.replication.factor
METADATA_TOPIC = "__cluster_metadata"

# Errors.java default messages (Errors.message(): the exception's message, "NONE" for no error)
MESSAGES = {
    0: "NONE",
    CODE["UNKNOWN_TOPIC_OR_PARTITION"]: "This server does not host this topic-partition.",
    CODE["UNKNOWN_TOPIC_ID"]: "This server does not host this topic ID.",
    CODE["TOPIC_AUTHORIZATION_FAILED"]: "Topic authorization failed.",
    CODE["GROUP_AUTHORIZATION_FAILED"]: "Group authorization failed.",
    CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]: "Transactional Id authorization failed.",
    CODE["CLUSTER_AUTHORIZATION_FAILED"]: "Cluster authorization failed.",
    CODE["COORDINATOR_NOT_AVAILABLE"]: "The coordinator is not available.",
    CODE["INVALID_REQUEST"]: ("This most likely occurs because of a request being malformed by the client "
                              "library or the message was sent to an incompatible broker. See the broker "
                              "logs for more details."),
}

# AclOperation codes, for the TopicAuthorizedOperations / ClusterAuthorizedOperations bit fields
ACL_OPERATION = {"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8,
                 "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
TOPIC_OPERATIONS = ("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS",
                    "ALTER_CONFIGS")
CLUSTER_OPERATIONS = ("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
                      "ALTER", "DESCRIBE")

# per-cluster data this module keeps (replica assignments, producer state of the data path)
_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_state(cluster) -> dict:
    st = _STATE.get(cluster)
    if st is None:
        st = _STATE[cluster] = {"replication": {}, "producers": {}}
    return st


def shape(message: str, version: int, values: dict) -> dict:
    """A response body fitted to `message` at `version` (kipviz.codec.fit.fit_body, nulls filled)."""
    return fit_body(message, version, values)


def is_zero(topic_id) -> bool:
    return topic_id is None or topic_id == ZERO_UUID


def node(cluster, broker: int, listener: str = "PLAINTEXT") -> dict:
    """A broker as clients see it: its advertised endpoint on the request's listener
    (ClusterConfig.advertised; KafkaApis asks the metadata cache by request.context.listenerName)."""
    host, port = cluster.config.advertised(broker, listener)
    return {"NodeId": broker, "Host": host, "Port": port, "Rack": None}


NO_NODE = {"NodeId": -1, "Host": "", "Port": -1, "Rack": None}


def live_brokers(cluster) -> list[int]:
    return [b for b in range(cluster.config.brokers) if b not in cluster.down]


def cluster_id(cluster) -> str:
    """The cluster's id (22-character Uuid form). Cluster has none of its own yet, so it is derived
    from a fixed name: the same for every simulated cluster."""
    cid = getattr(cluster, "cluster_id", None)
    if isinstance(cid, str):
        return cid
    return to_kafka_str(uuid.UUID(bytes=hashlib.sha256(b"kipviz-cluster").digest()[:16]))


def controller_id(cluster) -> int:
    """KRaft brokers report some live broker as the controller (clients cannot reach controllers)."""
    live = live_brokers(cluster)
    return live[0] if live else -1


def replicas_of(cluster, topic, log) -> list[int]:
    """The partition's replica list: its leader first, then the next brokers (replication is not
    simulated; the factor is what CreateTopics asked for, 1 by default, min(3, brokers) internal)."""
    n = cluster.config.brokers
    rf = model_state(cluster)["replication"].get(topic.topic_id)
    if isinstance(rf, dict):                    # a manual assignment from CreateTopics
        return list(rf.get(log.partition, [log.leader]))
    if rf is None:
        rf = min(3, n) if topic.internal else DEFAULT_REPLICATION_FACTOR
    rf = max(1, min(rf, n))
    return [(log.leader + i) % n for i in range(rf)]


def pin_replicas(cluster, topic) -> None:
    """Keep `topic`'s replica lists as they are now (model_state 'replication' as a dict), so that a
    leader moving to another of its replicas leaves the list, and its first, preferred, replica,
    where it was (PartitionRegistration.replicas does not change with the leader; its first entry is
    what a preferred election restores, metadata/src/main/java/org/apache/kafka/controller/
    PartitionChangeBuilder.java electPreferredLeader)."""
    rep = model_state(cluster)["replication"]
    if not isinstance(rep.get(topic.topic_id), dict):
        rep[topic.topic_id] = {log.partition: replicas_of(cluster, topic, log) for log in topic.partitions}


def leader_alive(cluster, log) -> bool:
    return log.leader not in cluster.down


def log_of(topic, p):
    """Partition `p`'s log of `topic`, or None (no such topic or partition)."""
    return topic.partitions[p] if topic is not None and 0 <= p < len(topic.partitions) else None


def epoch_error(log, current_leader_epoch: int) -> int:
    """Partition.checkCurrentLeaderEpoch: -1 means 'not given'."""
    if current_leader_epoch is None or current_leader_epoch < 0:
        return CODE["NONE"]
    if current_leader_epoch < log.leader_epoch:
        return CODE["FENCED_LEADER_EPOCH"]
    if current_leader_epoch > log.leader_epoch:
        return CODE["UNKNOWN_LEADER_EPOCH"]
    return CODE["NONE"]


def acl_bits(cluster, principal: str, resource_type: str, name: str, operations) -> int:
    bits = 0
    for op in operations:
        if cluster.authorized(principal, resource_type, name, op):
            bits |= 1 << ACL_OPERATION[op]
    return bits


_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_problem(name) -> str | None:
    """Topic.validate: why a topic name is illegal, or None."""
    if not isinstance(name, str) or name == "":
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > 249:
        return f"Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
    if not _LEGAL.match(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, "
                "'.', '_' and '-'")
    return None


def dedupe(items):
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


# ---- Metadata ---------------------------------------------------------------------------------------
def _partition_md(cluster, topic, log) -> dict:
    replicas = replicas_of(cluster, topic, log)
    isr = [b for b in replicas if b not in cluster.down]
    offline = [b for b in replicas if b in cluster.down]
    alive = leader_alive(cluster, log)
    return {"ErrorCode": 0 if alive else CODE["LEADER_NOT_AVAILABLE"], "PartitionIndex": log.partition,
            "LeaderId": log.leader if alive else -1, "LeaderEpoch": log.leader_epoch,
            "ReplicaNodes": replicas, "IsrNodes": isr, "OfflineReplicas": offline}


def _topic_md(cluster, req: Request, topic, include_ops: bool) -> dict:
    ops = (acl_bits(cluster, req.principal, "TOPIC", topic.name, TOPIC_OPERATIONS) if include_ops
           else INT32_MIN)
    return {"ErrorCode": 0, "Name": topic.name, "TopicId": topic.topic_id, "IsInternal": topic.internal,
            "Partitions": [_partition_md(cluster, topic, log) for log in topic.partitions],
            "TopicAuthorizedOperations": ops}


def _topic_error(code: int, name, topic_id=ZERO_UUID, internal: bool = False) -> dict:
    return {"ErrorCode": code, "Name": name, "TopicId": topic_id, "IsInternal": internal, "Partitions": [],
            "TopicAuthorizedOperations": INT32_MIN}


def _auto_create(cluster, req: Request, name: str) -> dict:
    """Metadata with AllowAutoTopicCreation on a broker with auto.create.topics.enable: the
    topic's creation (num.partitions) goes to the controller and this answer says
    UNKNOWN_TOPIC_OR_PARTITION, as does one while it is in flight (AutoTopicCreationManager,
    kipviz.broker.auto_create); a later Metadata request sees it."""
    if not (cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "CREATE")
            or cluster.authorized(req.principal, "TOPIC", name, "CREATE")):
        return _topic_error(CODE["TOPIC_AUTHORIZATION_FAILED"], name)
    if topic_name_problem(name) or name == METADATA_TOPIC or cluster.topics.colliding(name):
        return _topic_error(CODE["INVALID_TOPIC_EXCEPTION"], name)
    queue = cluster.__dict__.get("auto_creates")
    if queue is None:
        from ..auto_create import AutoCreates
        queue = cluster.auto_creates = AutoCreates(cluster)
    queue.request(name)
    return _topic_error(CODE["UNKNOWN_TOPIC_OR_PARTITION"], name)


# The errors each metadata RPC can return, declared above its handler (kipviz.broker.api_errors
# reads ERRORS).
ERRORS = {}
ERRORS["Metadata"] = (
    rows(0, ("UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "INVALID_TOPIC_EXCEPTION",
             "TOPIC_AUTHORIZATION_FAILED"), "KafkaApis.handleTopicMetadataRequest (with auto-creation)")
    + rows(10, ("INVALID_REQUEST",), "KafkaApis: 'Topic IDs are not supported in requests for version 10/11' "
                                     "(v10 adds TopicId)")
    + rows(12, ("UNKNOWN_TOPIC_ID",), "KIP-516 (Metadata v12: topics by id)"))


# size: Metadata's topic selection and per-topic errors in KafkaApis.handleTopicMetadataRequest's order, kept whole so the two read side by side
@handles("Metadata")
def metadata(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    requested = body.get("Topics")
    all_topics = requested is None or (v == 0 and not requested)
    include_ops = v >= 8 and bool(body.get("IncludeTopicAuthorizedOperations"))
    topics: list[dict] = []
    top = {"ThrottleTimeMs": 0, "Brokers": [node(cluster, b, req.listener) for b in live_brokers(cluster)],
           "ClusterId": cluster_id(cluster), "ControllerId": controller_id(cluster), "Topics": topics,
           "ClusterAuthorizedOperations": INT32_MIN, "ErrorCode": 0}
    if v >= 8 and body.get("IncludeClusterAuthorizedOperations"):
        top["ClusterAuthorizedOperations"] = acl_bits(cluster, req.principal, "CLUSTER", CLUSTER_RESOURCE,
                                                      CLUSTER_OPERATIONS)

    if not all_topics and v < 12 and any(t.get("Name") is None or not is_zero(t.get("TopicId"))
                                         for t in requested):
        # KafkaApis: "Topic IDs are not supported in requests for version 10/11" (and names can't be
        # null): InvalidRequestException, answered by MetadataRequest.getErrorResponse
        for t in requested:
            topics.append(_topic_error(CODE["INVALID_REQUEST"], t.get("Name"), t.get("TopicId") or ZERO_UUID))
        return shape("MetadataResponse", v, top)

    if all_topics:
        # unauthorized topics are left out silently
        for name in sorted(cluster.topics.by_name):
            t = cluster.topics.get(name)
            if cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE"):
                topics.append(_topic_md(cluster, req, t, include_ops))
        return shape("MetadataResponse", v, top)

    ids = dedupe([t["TopicId"] for t in requested if v >= 12 and not is_zero(t.get("TopicId"))])
    if ids:
        # by topic id (v12+): names in the same request are ignored, as in KafkaApis
        for tid in ids:
            t = cluster.topics.live(tid)
            if t is None:
                topics.append(_topic_error(CODE["UNKNOWN_TOPIC_ID"], None, tid))
            elif not cluster.authorized(req.principal, "TOPIC", t.name, "DESCRIBE"):
                # topic ids are not sensitive: the id is echoed, the name is not
                topics.append(_topic_error(CODE["TOPIC_AUTHORIZATION_FAILED"], None, tid))
            else:
                topics.append(_topic_md(cluster, req, t, include_ops))
        return shape("MetadataResponse", v, top)

    allow_auto = body.get("AllowAutoTopicCreation", True) if v >= 4 else True
    for name in dedupe(t.get("Name") for t in requested):
        t = cluster.topics.get(name) if name is not None else None
        if name is not None and not cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE"):
            # existence is not disclosed to a principal that may not describe the topic
            topics.append(_topic_error(CODE["TOPIC_AUTHORIZATION_FAILED"], name))
        elif t is not None:
            topics.append(_topic_md(cluster, req, t, include_ops))
        elif name is not None and allow_auto and cluster.config.auto_create_topics:
            topics.append(_auto_create(cluster, req, name))
        else:
            topics.append(_topic_error(CODE["UNKNOWN_TOPIC_OR_PARTITION"], name))
    return shape("MetadataResponse", v, top)


# ---- CreateTopics -----------------------------------------------------------------------------------
def _collision(cluster, name: str) -> str | None:
    """Topic.hasCollision: '.' and '_' collide in metric names."""
    return cluster.topics.colliding(name)


# size: CreateTopics' validation rules for one topic, first failing rule wins: the order of the checks is the answer
def _creation_error(cluster, t: dict, live: int) -> tuple[int, str | None, int, int]:
    """ReplicationControlManager.createTopics/createTopic checks, in order. Returns (code,
    message, partitions, replication factor)."""
    name = t["Name"]
    if cluster.topics.get(name) is not None:
        return CODE["TOPIC_ALREADY_EXISTS"], f"Topic '{name}' already exists.", -1, -1
    problem = topic_name_problem(name)
    if problem:
        return CODE["INVALID_TOPIC_EXCEPTION"], problem, -1, -1
    other = _collision(cluster, name)
    if other:
        return CODE["INVALID_TOPIC_EXCEPTION"], f"Topic '{name}' collides with existing topic: {other}", -1, -1
    try:
        # computeConfigChanges, then ConfigurationControlManager -> ControllerConfigurationValidator ->
        # LogConfig.validate, before any partition or replication check (ReplicationControlManager.createTopics)
        log_config.validate_topic(_requested_configs(t))
    except log_config.ConfigError as e:
        return CODE["INVALID_CONFIG"], str(e), -1, -1
    assignments = t.get("Assignments") or []
    if assignments:
        if t["NumPartitions"] != -1:
            return (CODE["INVALID_REQUEST"], "A manual partition assignment was specified, but numPartitions "
                    "was not set to -1.", -1, -1)
        if t["ReplicationFactor"] != -1:
            return (CODE["INVALID_REQUEST"], "A manual partition assignment was specified, but "
                    "replicationFactor was not set to -1.", -1, -1)
        indexes = sorted(a["PartitionIndex"] for a in assignments)
        if indexes != list(range(len(indexes))):
            return (CODE["INVALID_REPLICA_ASSIGNMENT"], "Partitions must be numbered consecutively from 0.",
                    -1, -1)
        sizes = {len(a["BrokerIds"]) for a in assignments}
        for a in assignments:
            ids = a["BrokerIds"]
            if not ids or len(set(ids)) != len(ids) or len(sizes) != 1:
                return (CODE["INVALID_REPLICA_ASSIGNMENT"], f"Invalid replica assignment for partition "
                        f"{a['PartitionIndex']}.", -1, -1)
            if any(not 0 <= b < cluster.config.brokers for b in ids):
                return (CODE["INVALID_REPLICA_ASSIGNMENT"], "The manual partition assignment includes broker "
                        f"ids that are not registered: {ids}", -1, -1)
        return 0, None, len(assignments), sizes.pop()
    partitions = cluster.config.default_partitions if t["NumPartitions"] == -1 else t["NumPartitions"]
    rf = DEFAULT_REPLICATION_FACTOR if t["ReplicationFactor"] == -1 else t["ReplicationFactor"]
    if partitions <= 0:
        return CODE["INVALID_PARTITIONS"], "Number of partitions was set to an invalid non-positive value.", -1, -1
    if rf <= 0:
        return (CODE["INVALID_REPLICATION_FACTOR"], "Replication factor must be larger than 0, or -1 to use the "
                "default value.", -1, -1)
    if rf > live:
        return (CODE["INVALID_REPLICATION_FACTOR"], f"Unable to replicate the partition {rf} time(s): The target "
                f"replication factor of {rf} cannot be reached because only {live} broker(s) are registered.",
                -1, -1)
    return 0, None, partitions, rf


# ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: createTopics first calls
# validateTotalNumberOfPartitions, which throws PolicyViolationException when the request's topics
# (NumPartitions, the default for -1, or the number of manual assignments) add up to more; the
# controller fails the whole request, and ControllerApis.handleCreateTopics answers every topic
# with that error (CreateTopicsRequest.getErrorResponse).
MAX_PARTITIONS_PER_BATCH = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


def _requested_partitions(t: dict, default: int) -> int:
    """validateTotalNumberOfPartitions' count for one topic."""
    if t.get("Assignments"):
        return len(t["Assignments"])
    n = t.get("NumPartitions", -1)
    return default if n == -1 else max(n, 0)


def _refuse_all(v: int, requested: list, code: int, message: str) -> dict:
    return shape("CreateTopicsResponse", v, {"ThrottleTimeMs": 0, "Topics": [
        {"Name": t["Name"], "TopicId": ZERO_UUID, "ErrorCode": code, "ErrorMessage": message,
         "NumPartitions": -1, "ReplicationFactor": -1, "Configs": None} for t in requested]})


def _model_capacity(cluster, partitions: int) -> tuple[int, str | None]:
    """The kit's cap on the partitions the model holds (ClusterConfig.max_cluster_partitions; Kafka
    has none): a topic that would pass it is refused as a create-topic policy would refuse it."""
    held = sum(len(t.partitions) for t in cluster.topics.by_name.values())
    cap = cluster.config.max_cluster_partitions
    if held + partitions > cap:
        return CODE["POLICY_VIOLATION"], (f"kipviz limit: the cluster model holds {held} partitions; {partitions} "
                                         f"more would pass max_cluster_partitions={cap} (a ClusterConfig field)")
    return 0, None


ERRORS["CreateTopics"] = rows(0, (
    "TOPIC_ALREADY_EXISTS", "INVALID_TOPIC_EXCEPTION", "INVALID_PARTITIONS", "INVALID_REPLICATION_FACTOR",
    "INVALID_REPLICA_ASSIGNMENT", "INVALID_REQUEST", "TOPIC_AUTHORIZATION_FAILED", "INVALID_CONFIG"),
    "KIP-4 CreateTopics: ControllerApis.createTopics, ReplicationControlManager.createTopics; INVALID_CONFIG from "
    "LogConfig.validate (ControllerConfigurationValidator)") \
    + rows(0, ("POLICY_VIOLATION",), "the kit's cap on the partitions the model holds "
                                     "(ClusterConfig.max_cluster_partitions); Kafka answers it when "
                                     "create.topic.policy.class.name rejects a topic (KIP-108)")


# size: CreateTopics per topic (validate, create, answer) as the controller's createTopics, kept whole so the two read side by side
@handles("CreateTopics")
def create_topics(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    validate_only = bool(body.get("validateOnly", False))
    requested = body.get("Topics") or []
    default = cluster.config.default_partitions
    if sum(_requested_partitions(t, default) for t in requested) > MAX_PARTITIONS_PER_BATCH:
        return _refuse_all(v, requested, CODE["POLICY_VIOLATION"], TOO_MANY_PARTITIONS)
    names = [t["Name"] for t in requested]
    duplicates = {n for n in names if names.count(n) > 1}
    may_create_any = cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "CREATE")
    live = len(live_brokers(cluster))
    results, done = [], set()
    for t in requested:
        name = t["Name"]
        if name in done:
            continue
        done.add(name)
        res = {"Name": name, "TopicId": ZERO_UUID, "ErrorCode": 0, "ErrorMessage": None,
               "TopicConfigErrorCode": 0, "NumPartitions": -1, "ReplicationFactor": -1, "Configs": None}
        results.append(res)
        if name in duplicates:
            res.update(ErrorCode=CODE["INVALID_REQUEST"], ErrorMessage="Duplicate topic name.")
            continue
        if name == METADATA_TOPIC:
            res.update(ErrorCode=CODE["INVALID_REQUEST"],
                       ErrorMessage=f"Creation of internal topic {METADATA_TOPIC} is prohibited.")
            continue
        if not (may_create_any or cluster.authorized(req.principal, "TOPIC", name, "CREATE")):
            res.update(ErrorCode=CODE["TOPIC_AUTHORIZATION_FAILED"], ErrorMessage="Authorization failed.")
            continue
        code, message, partitions, rf = _creation_error(cluster, t, live)
        if not code and not validate_only:
            code, message = _model_capacity(cluster, partitions)
        if code:
            res.update(ErrorCode=code, ErrorMessage=message)
            continue
        if validate_only:
            # nothing is created, so no topic id is handed out
            cluster.emit(ev.TopicCreationValidated, topic=name, partitions=partitions, replication_factor=rf)
        else:
            res["TopicId"] = tid = cluster.create_topic(name, partitions)
            # kept as given (validated above): DescribeConfigs, retention and Produce read them (log_config)
            cluster.topics.get(name).configs.update(_requested_configs(t))
            assignments = {a["PartitionIndex"]: list(a["BrokerIds"]) for a in t.get("Assignments") or []}
            if assignments:
                # the first replica of a manual assignment is the preferred, and so the first, leader
                for log in cluster.topics.get(name).partitions:
                    log.leader = assignments[log.partition][0]
            model_state(cluster)["replication"][tid] = assignments or rf
        if cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE_CONFIGS"):
            res.update(NumPartitions=partitions, ReplicationFactor=rf,
                       Configs=log_config.effective_topic_configs(cluster, _requested_configs(t)))
        else:
            res["TopicConfigErrorCode"] = CODE["TOPIC_AUTHORIZATION_FAILED"]
    return shape("CreateTopicsResponse", v, {"ThrottleTimeMs": 0, "Topics": results})


def _requested_configs(t: dict) -> dict[str, str | None]:
    """A CreatableTopic's Configs by name (the request keys them by name: the last one wins)."""
    return {c["Name"]: c.get("Value") for c in t.get("Configs") or []}


# ---- DeleteTopics -----------------------------------------------------------------------------------
ERRORS["DeleteTopics"] = (
    rows(0, ("TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST"),
         "ControllerApis.deleteTopics: unauthorized, unknown or duplicate topics; v6 neither or both of name and id")
    + rows(6, ("UNKNOWN_TOPIC_ID",), "KIP-516 (DeleteTopics v6 topic ids)"))


# size: DeleteTopics by name or id with each topic's error as the controller's deleteTopics, kept whole so the two read side by side
@handles("DeleteTopics")
def delete_topics(cluster, req: Request) -> dict:
    """ControllerApis.deleteTopics: names (v0-5 TopicNames, v6 Topics[].Name) and ids (v6)."""
    v, body, who = req.version, req.body, req.principal
    out: list[dict] = []

    def answer(name, tid, code=0, message=None):
        out.append({"Name": name, "TopicId": tid or ZERO_UUID, "ErrorCode": code,
                    "ErrorMessage": message if code else None})

    names, ids = [], []
    if v < 6:
        names = list(body.get("TopicNames") or [])
    else:
        for t in body.get("Topics") or []:
            name, tid = t.get("Name"), t.get("TopicId")
            if name is None and is_zero(tid):
                answer(None, ZERO_UUID, CODE["INVALID_REQUEST"], "Neither topic name nor id were specified.")
            elif name is not None and not is_zero(tid):
                answer(name, tid, CODE["INVALID_REQUEST"], "You may not specify both topic name and topic id.")
            elif name is not None:
                names.append(name)
            else:
                ids.append(tid)
    dup_names = {n for n in names if names.count(n) > 1}
    dup_ids = {i for i in ids if ids.count(i) > 1}
    for n in dedupe(n for n in names if n in dup_names):
        answer(n, ZERO_UUID, CODE["INVALID_REQUEST"], "Duplicate topic name.")
    for i in dedupe(i for i in ids if i in dup_ids):
        answer(None, i, CODE["INVALID_REQUEST"], "Duplicate topic id.")
    names = [n for n in names if n not in dup_names]
    ids = [i for i in ids if i not in dup_ids]

    to_delete: list[tuple[str, uuid.UUID]] = []
    for tid in ids:
        t = cluster.topics.live(tid)
        if t is None:
            answer(None, tid, CODE["UNKNOWN_TOPIC_ID"], MESSAGES[CODE["UNKNOWN_TOPIC_ID"]])
        elif not cluster.authorized(who, "TOPIC", t.name, "DELETE"):
            shown = t.name if cluster.authorized(who, "TOPIC", t.name, "DESCRIBE") else None
            answer(shown, tid, CODE["TOPIC_AUTHORIZATION_FAILED"], MESSAGES[CODE["TOPIC_AUTHORIZATION_FAILED"]])
        else:
            to_delete.append((t.name, tid))
    by_id = {n for n, _ in to_delete}
    for name in names:
        t = cluster.topics.get(name)
        if not cluster.authorized(who, "TOPIC", name, "DESCRIBE"):
            answer(name, ZERO_UUID, CODE["TOPIC_AUTHORIZATION_FAILED"], MESSAGES[CODE["TOPIC_AUTHORIZATION_FAILED"]])
        elif t is None:
            answer(name, ZERO_UUID, CODE["UNKNOWN_TOPIC_OR_PARTITION"], MESSAGES[CODE["UNKNOWN_TOPIC_OR_PARTITION"]])
        elif name in by_id:
            answer(name, t.topic_id, CODE["INVALID_REQUEST"],
                   "The provided topic name maps to an ID that was already supplied.")
        elif not cluster.authorized(who, "TOPIC", name, "DELETE"):
            answer(name, ZERO_UUID, CODE["TOPIC_AUTHORIZATION_FAILED"], MESSAGES[CODE["TOPIC_AUTHORIZATION_FAILED"]])
        else:
            to_delete.append((name, t.topic_id))
    for name, tid in to_delete:
        if name in INTERNAL_TOPICS:
            # kipviz: the coordinators live on these topics, so the model refuses to delete them
            answer(name, tid, CODE["INVALID_REQUEST"],
                   f"kipviz does not delete the internal topic {name} (its coordinator depends on it).")
            continue
        cluster.delete_topic(name)
        answer(name, tid)
    return shape("DeleteTopicsResponse", v, {"ThrottleTimeMs": 0, "Responses": out})


# ---- FindCoordinator --------------------------------------------------------------------------------
def parse_share_key(key: str) -> tuple[str, uuid.UUID, int] | None:
    """SharePartitionKey.getInstance: "groupId:topicId:partition" (topic id in base64 form)."""
    parts = key.split(":") if isinstance(key, str) else []
    if len(parts) != 3 or not parts[0]:
        return None
    if not (parts[2].isascii() and parts[2].isdigit()):
        return None
    try:
        tid = from_kafka_str(parts[1])
    except ValueError:
        return None
    partition = int(parts[2])
    if partition >= 2**31 or is_zero(tid):
        return None
    return parts[0], tid, partition


def coordinator(cluster, req: Request, key_type: int, key: str) -> tuple[int, dict]:
    """KafkaApis.getCoordinator: (error code, node)."""
    who = req.principal
    if key_type == GROUP_KEY and not cluster.authorized(who, "GROUP", key, "DESCRIBE"):
        return CODE["GROUP_AUTHORIZATION_FAILED"], NO_NODE
    if key_type == TRANSACTION_KEY and not cluster.authorized(who, "TRANSACTIONAL_ID", key, "DESCRIBE"):
        return CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"], NO_NODE
    if key_type == SHARE_KEY and req.version < 6:
        return CODE["INVALID_REQUEST"], NO_NODE
    if key_type == SHARE_KEY and not cluster.authorized(who, "CLUSTER", CLUSTER_RESOURCE, "CLUSTER_ACTION"):
        return CODE["CLUSTER_AUTHORIZATION_FAILED"], NO_NODE
    if key_type in (GROUP_KEY, TRANSACTION_KEY):
        topic, p = cluster.coordinator_partition(key_type, key)
    elif key_type == SHARE_KEY:
        if cluster.features.level("share.version") < 1:
            return CODE["COORDINATOR_NOT_AVAILABLE"], NO_NODE
        parsed = parse_share_key(key)
        if parsed is None:
            return CODE["INVALID_REQUEST"], NO_NODE
        topic = SHARE_GROUP_STATE
        p = share_coordinator_partition(*parsed, n=cluster.config.share_state_topic_partitions)
    else:   # CoordinatorType.forId: "Unknown coordinator type received"
        return CODE["INVALID_REQUEST"], NO_NODE
    log = cluster.topics.partition(topic, p)
    if log is None or not leader_alive(cluster, log):
        return CODE["COORDINATOR_NOT_AVAILABLE"], NO_NODE
    return 0, node(cluster, log.leader, req.listener)


ERRORS["FindCoordinator"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "COORDINATOR_NOT_AVAILABLE"), "KafkaApis.handleFindCoordinatorRequest")
    + rows(1, ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED",), "KIP-98 (FindCoordinator v1 KeyType)")
    + rows(1, ("INVALID_REQUEST",), "CoordinatorType.forId: an unknown KeyType; a share key before v6 or "
                                    "not 'group:topicId:partition'")
    + kafka_only(5, ("TRANSACTION_ABORTABLE",), "FindCoordinatorResponse.json (KIP-890, v5)",
                 "no FindCoordinator path of the model answers it")
    + rows(6, ("CLUSTER_AUTHORIZATION_FAILED",), "KIP-932 (FindCoordinator v6: the share key type needs "
                                                 "CLUSTER_ACTION)"))


@handles("FindCoordinator")
def find_coordinator(cluster, req: Request) -> dict:
    v, body = req.version, req.body
    key_type = body.get("KeyType", GROUP_KEY)
    if v >= 4:
        coordinators = []
        for key in body.get("CoordinatorKeys") or []:
            code, n = coordinator(cluster, req, key_type, key)
            coordinators.append({"Key": key, "NodeId": n["NodeId"], "Host": n["Host"], "Port": n["Port"],
                                 "ErrorCode": code, "ErrorMessage": None})
        return shape("FindCoordinatorResponse", v, {"ThrottleTimeMs": 0, "Coordinators": coordinators})
    code, n = coordinator(cluster, req, key_type, body.get("Key", ""))
    return shape("FindCoordinatorResponse", v, {
        "ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": MESSAGES.get(code, None),
        "NodeId": n["NodeId"], "Host": n["Host"], "Port": n["Port"]})
