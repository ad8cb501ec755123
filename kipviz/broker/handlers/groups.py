"""Group and offset APIs: the KafkaApis layer (ACLs, topic names and ids, version shapes) in front of
the group coordinator (kipviz/broker/groups/).

JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat, ConsumerGroupDescribe,
ListGroups, DescribeGroups, OffsetCommit, OffsetFetch and TxnOffsetCommit. The checks and their
order follow released Kafka's KafkaApis (core/src/main/scala/kafka/server/KafkaApis.scala) and KIP-1319 for
TxnOffsetCommit v6."""
from __future__ import annotations

from ...schema.coordinators import GROUP_KEY
from ...schema.error_codes import CODE
from ..error_rows import kafka_only, rows
from ..groups.model import ASSIGNORS, PARKED, GroupError, shape
from . import Request, handles

GROUP_OPS = (3, 8, 6, 10, 11)   # READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes)
OP_NAMES = {3: "READ", 8: "DESCRIBE", 6: "DELETE", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS"}
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

# The errors each group RPC can return, by version, declared above its handler
# (kipviz.broker.api_errors reads ERRORS; tests/test_api_errors.py judges them against the code).
ERRORS = {}
_LOADED = "the model's group coordinator is always loaded"
_CLASSIC = ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "INVALID_GROUP_ID",
            "UNKNOWN_MEMBER_ID")
_CLASSIC_SRC = "KafkaApis, GroupCoordinatorService and the classic group protocol (GroupMetadataManager)"


def finish(api: str, version: int, body: dict) -> dict:
    """A coordinator body cut to the response's fields at `version`."""
    return shape(api + "Response", version, body)


def _wrong_coordinator(cluster, req: Request, group_id: str) -> bool:
    return cluster.coordinator_broker(GROUP_KEY, group_id) != req.broker


def _authorized_ops(cluster, req: Request, group_id: str) -> int:
    bits = 0
    for op in GROUP_OPS:
        if cluster.authorized(req.principal, "GROUP", group_id, OP_NAMES[op]):
            bits |= 1 << op
    return bits


# ---- classic group protocol -------------------------------------------------------------------------
ERRORS["JoinGroup"] = (
    rows(0, _CLASSIC + ("INVALID_SESSION_TIMEOUT", "INCONSISTENT_GROUP_PROTOCOL"), _CLASSIC_SRC)
    + kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS",), _CLASSIC_SRC, _LOADED)
    + rows(4, ("MEMBER_ID_REQUIRED",), "KIP-394 (JoinGroup v4: JoinGroupRequest.requiresKnownMemberId)")
    + rows(5, ("FENCED_INSTANCE_ID",), "KIP-345 (JoinGroup v5 GroupInstanceId)"))


@handles("JoinGroup")
def join_group(cluster, req: Request) -> dict:
    b = req.body
    cfg = cluster.config
    fail = {"MemberId": b["MemberId"], "GenerationId": -1, "ProtocolName": None, "Leader": ""}
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return finish("JoinGroup", req.version, {**fail, "MemberId": "",
                                                 "ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"]})
    if not b["GroupId"]:
        return finish("JoinGroup", req.version, {**fail, "ErrorCode": CODE["INVALID_GROUP_ID"]})
    if not cfg.group_classic_min_session_timeout_ms <= b["SessionTimeoutMs"] <= cfg.group_classic_max_session_timeout_ms:
        return finish("JoinGroup", req.version, {**fail, "ErrorCode": CODE["INVALID_SESSION_TIMEOUT"]})
    if _wrong_coordinator(cluster, req, b["GroupId"]):
        return finish("JoinGroup", req.version, {**fail, "ErrorCode": CODE["NOT_COORDINATOR"]})
    body = cluster.groups.join_group(req, b)
    if body is PARKED:
        return body
    return finish("JoinGroup", req.version, {**fail, **body})


ERRORS["SyncGroup"] = (
    rows(0, _CLASSIC + ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"), _CLASSIC_SRC)
    + kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS",), _CLASSIC_SRC, _LOADED)
    + rows(3, ("FENCED_INSTANCE_ID",), "KIP-345 (SyncGroup v3 GroupInstanceId)")
    + rows(5, ("INCONSISTENT_GROUP_PROTOCOL",), "KIP-559 (SyncGroup v5 ProtocolType/ProtocolName)"))


@handles("SyncGroup")
def sync_group(cluster, req: Request) -> dict:
    b = req.body
    if req.version >= 5 and (b.get("ProtocolType") is None or b.get("ProtocolName") is None):
        return finish("SyncGroup", req.version, {"ErrorCode": CODE["INCONSISTENT_GROUP_PROTOCOL"]})
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return finish("SyncGroup", req.version, {"ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"]})
    if not b["GroupId"]:
        return finish("SyncGroup", req.version, {"ErrorCode": CODE["INVALID_GROUP_ID"]})
    if _wrong_coordinator(cluster, req, b["GroupId"]):
        return finish("SyncGroup", req.version, {"ErrorCode": CODE["NOT_COORDINATOR"]})
    body = cluster.groups.sync_group(req, b)
    if body is PARKED:
        return body
    return finish("SyncGroup", req.version, body)


ERRORS["Heartbeat"] = (
    rows(0, _CLASSIC + ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"), _CLASSIC_SRC)
    + kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS",), _CLASSIC_SRC, _LOADED)
    + rows(3, ("FENCED_INSTANCE_ID",), "KIP-345 (Heartbeat v3 GroupInstanceId)"))


@handles("Heartbeat")
def heartbeat(cluster, req: Request) -> dict:
    b = req.body
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return finish("Heartbeat", req.version, {"ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"]})
    if not b["GroupId"]:
        return finish("Heartbeat", req.version, {"ErrorCode": CODE["INVALID_GROUP_ID"]})
    if _wrong_coordinator(cluster, req, b["GroupId"]):
        return finish("Heartbeat", req.version, {"ErrorCode": CODE["NOT_COORDINATOR"]})
    return finish("Heartbeat", req.version, cluster.groups.heartbeat(req, b))


ERRORS["LeaveGroup"] = (
    rows(0, _CLASSIC, _CLASSIC_SRC)
    + kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS",), _CLASSIC_SRC, _LOADED)
    + rows(3, ("FENCED_INSTANCE_ID",), "KIP-345 (LeaveGroup v3 batch of members with GroupInstanceId)"))


@handles("LeaveGroup")
def leave_group(cluster, req: Request) -> dict:
    b = req.body
    members = b.get("Members") if req.version >= 3 else [{"MemberId": b["MemberId"], "GroupInstanceId": None}]
    members = members or []

    def respond(err: int, member_results: list[dict]) -> dict:
        if req.version <= 2:     # LeaveGroupResponse folds the member error into the top level
            if err == 0:
                err = next((m["ErrorCode"] for m in member_results if m["ErrorCode"]), 0)
            return finish("LeaveGroup", req.version, {"ErrorCode": err})
        return finish("LeaveGroup", req.version, {"ErrorCode": err, "Members": member_results})
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return respond(CODE["GROUP_AUTHORIZATION_FAILED"], [])
    if not b["GroupId"]:
        return respond(CODE["INVALID_GROUP_ID"], [])
    if _wrong_coordinator(cluster, req, b["GroupId"]):
        return respond(CODE["NOT_COORDINATOR"], [])
    out = cluster.groups.leave_group(req, members, b["GroupId"])
    return respond(out["ErrorCode"], out["Members"])


# ---- KIP-848 consumer groups --------------------------------------------------------------------------
def _validate_consumer_heartbeat(b: dict, version: int) -> GroupError | None:
    """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    epoch = b["MemberEpoch"]
    if (version >= 1 or epoch > 0 or epoch == -1) and b["MemberId"] == "":
        return GroupError("INVALID_REQUEST", "MemberId can't be empty.")
    if b["GroupId"] == "":
        return GroupError("INVALID_REQUEST", "GroupId can't be empty.")
    if b.get("InstanceId") == "":
        return GroupError("INVALID_REQUEST", "InstanceId can't be empty.")
    if b.get("RackId") == "":
        return GroupError("INVALID_REQUEST", "RackId can't be empty.")
    if epoch == 0:
        if b.get("RebalanceTimeoutMs", -1) == -1:
            return GroupError("INVALID_REQUEST", "RebalanceTimeoutMs must be provided in first request.")
        if b.get("TopicPartitions") is None or b["TopicPartitions"]:
            return GroupError("INVALID_REQUEST", "TopicPartitions must be empty when (re-)joining.")
        if b.get("SubscribedTopicNames") is None and b.get("SubscribedTopicRegex") is None:
            return GroupError("INVALID_REQUEST", "Either SubscribedTopicNames or SubscribedTopicRegex must be "
                                                 "non-null when (re-)joining.")
    elif epoch == -2:
        if b.get("InstanceId") is None:
            return GroupError("INVALID_REQUEST", "InstanceId can't be null.")
    elif epoch < -2:
        return GroupError("INVALID_REQUEST", "MemberEpoch is invalid.")
    if b.get("ServerAssignor") is not None and b["ServerAssignor"] not in ASSIGNORS:
        return GroupError("UNSUPPORTED_ASSIGNOR", f"ServerAssignor {b['ServerAssignor']} is not supported. "
                                                  f"Supported assignors: {', '.join(ASSIGNORS)}.")
    return None


ERRORS["ConsumerGroupHeartbeat"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "INVALID_REQUEST", "UNKNOWN_MEMBER_ID",
             "FENCED_MEMBER_EPOCH", "UNSUPPORTED_ASSIGNOR", "UNRELEASED_INSTANCE_ID"),
         "KIP-848 ConsumerGroupHeartbeatResponse.json")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "KIP-848 ConsumerGroupHeartbeatResponse.json", _LOADED)
    + kafka_only(0, ("GROUP_MAX_SIZE_REACHED",), "KIP-848 ConsumerGroupHeartbeatResponse.json",
                 "the model sets no group.consumer.max.size, so a consumer group never refuses a member")
    + rows(0, ("FENCED_INSTANCE_ID",), "GroupMetadataManager.throwIfInstanceIdIsFenced (not in the schema's list)")
    + rows(0, ("GROUP_ID_NOT_FOUND",), "GroupMetadataManager: 'Group ... is not a consumer group.' (not in the "
                                       "schema's list)")
    + rows(0, ("TOPIC_AUTHORIZATION_FAILED",), "KafkaApis.handleConsumerGroupHeartbeat: a subscribed topic the "
                                               "principal may not DESCRIBE (not in the schema's list)")
    # the schema's list calls it INVALID_SUBSCRIPTION_REGEX; the error code is INVALID_REGULAR_EXPRESSION
    + rows(1, ("INVALID_REGULAR_EXPRESSION",), "KIP-848 (ConsumerGroupHeartbeat v1 SubscribedTopicRegex)"))


@handles("ConsumerGroupHeartbeat")
def consumer_group_heartbeat(cluster, req: Request) -> dict:
    b = req.body

    def error(code: int, message: str | None = None) -> dict:
        return finish("ConsumerGroupHeartbeat", req.version, {"ErrorCode": code, "ErrorMessage": message})
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return error(CODE["GROUP_AUTHORIZATION_FAILED"])
    names = b.get("SubscribedTopicNames") or []
    if any(not cluster.authorized(req.principal, "TOPIC", n, "DESCRIBE") for n in names):
        return error(CODE["TOPIC_AUTHORIZATION_FAILED"])
    bad = _validate_consumer_heartbeat(b, req.version)
    if bad is not None:
        return error(bad.code, bad.message)
    if _wrong_coordinator(cluster, req, b["GroupId"]):
        return error(CODE["NOT_COORDINATOR"])
    try:
        body = cluster.groups.consumer_group_heartbeat(req, b)
    except GroupError as e:
        return error(e.code, e.message)
    return finish("ConsumerGroupHeartbeat", req.version, body)


ERRORS["ConsumerGroupDescribe"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND"),
         "KIP-848 ConsumerGroupDescribeResponse.json")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "KIP-848 ConsumerGroupDescribeResponse.json", _LOADED)
    + kafka_only(0, ("INVALID_REQUEST",), "KIP-848 ConsumerGroupDescribeResponse.json",
                 "the model's ConsumerGroupDescribe rejects only an empty group id (INVALID_GROUP_ID)")
    + rows(0, ("TOPIC_AUTHORIZATION_FAILED",), "KafkaApis.handleConsumerGroupDescribe: 'The group has described "
                                               "topic(s) that the client is not authorized to describe.' (not in "
                                               "the schema's list)"))


@handles("ConsumerGroupDescribe")
def consumer_group_describe(cluster, req: Request) -> dict:
    b = req.body
    out, todo = [], []
    for gid in b["GroupIds"]:
        if not cluster.authorized(req.principal, "GROUP", gid, "DESCRIBE"):
            out.append({"GroupId": gid, "ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"]})
        elif not gid:
            out.append({"GroupId": gid, "ErrorCode": CODE["INVALID_GROUP_ID"]})
        elif _wrong_coordinator(cluster, req, gid):
            out.append({"GroupId": gid, "ErrorCode": CODE["NOT_COORDINATOR"]})
        else:
            todo.append(gid)
    for d in cluster.groups.consumer_group_describe(todo):
        if d["ErrorCode"] == 0:
            topics = {tp["TopicName"] for m in d["Members"]
                      for a in (m["Assignment"], m["TargetAssignment"]) for tp in a["TopicPartitions"]}
            topics |= {n for m in d["Members"] for n in m["SubscribedTopicNames"]}
            if any(not cluster.authorized(req.principal, "TOPIC", t, "DESCRIBE") for t in topics if t):
                d = {"GroupId": d["GroupId"], "ErrorCode": CODE["TOPIC_AUTHORIZATION_FAILED"],
                     "ErrorMessage": "The group has described topic(s) that the client is not authorized to describe."}
            elif b.get("IncludeAuthorizedOperations"):
                d["AuthorizedOperations"] = _authorized_ops(cluster, req, d["GroupId"])
        out.append(d)
    return finish("ConsumerGroupDescribe", req.version, {"Groups": out})


# ---- listing and describing ---------------------------------------------------------------------------
ERRORS["ListGroups"] = kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                                  "GroupCoordinatorService.listGroups", _LOADED)


@handles("ListGroups")
def list_groups(cluster, req: Request) -> dict:
    b = req.body
    groups = cluster.groups.list_groups(b.get("StatesFilter") or [] if req.version >= 4 else [],
                                        b.get("TypesFilter") or [] if req.version >= 5 else [])
    groups = [g for g in groups if cluster.coordinator_broker(GROUP_KEY, g["GroupId"]) == req.broker]
    if not cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "DESCRIBE"):
        groups = [g for g in groups if cluster.authorized(req.principal, "GROUP", g["GroupId"], "DESCRIBE")]
    return finish("ListGroups", req.version, {"ErrorCode": 0, "Groups": groups})


ERRORS["DescribeGroups"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR"), "KafkaApis.handleDescribeGroupsRequest, "
                                                              "GroupCoordinatorService.describeGroups")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "GroupCoordinatorService.describeGroups", "the model's group coordinator is always loaded")
    + rows(6, ("GROUP_ID_NOT_FOUND",), "DescribeGroupsResponse.json: 'Version 6 returns error code GROUP_ID_NOT_FOUND' "
                                       "(KIP-1043)"))


@handles("DescribeGroups")
def describe_groups(cluster, req: Request) -> dict:
    b = req.body
    errors, todo = [], []
    for gid in b["Groups"]:
        if not cluster.authorized(req.principal, "GROUP", gid, "DESCRIBE"):
            errors.append({"GroupId": gid, "ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"], "GroupState": ""})
        elif _wrong_coordinator(cluster, req, gid):
            errors.append({"GroupId": gid, "ErrorCode": CODE["NOT_COORDINATOR"], "GroupState": ""})
        else:
            todo.append(gid)
    results = cluster.groups.describe_groups(todo, req.version)
    if b.get("IncludeAuthorizedOperations"):
        for d in results:
            if d["ErrorCode"] == 0:
                d["AuthorizedOperations"] = _authorized_ops(cluster, req, d["GroupId"])
    return finish("DescribeGroups", req.version, {"Groups": errors + results})


ERRORS["DeleteGroups"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND",
             "NON_EMPTY_GROUP"), "KIP-229: KafkaApis.handleDeleteGroupsRequest, GroupCoordinatorService.deleteGroups")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "GroupCoordinatorService.deleteGroups", "the model's group coordinator is always loaded"))


@handles("DeleteGroups")
def delete_groups(cluster, req: Request) -> dict:
    """KafkaApis.handleDeleteGroupsRequest: DELETE on each group or GROUP_AUTHORIZATION_FAILED; then
    GroupCoordinatorService.deleteGroups: only a null id is INVALID_GROUP_ID ("For backwards
    compatibility, we support DeleteGroups for the empty group id": "" goes to its coordinator like
    any id), a group this broker does not coordinate NOT_COORDINATOR, the rest go to the shard."""
    results, todo = [], []
    for gid in req.body["GroupsNames"]:
        if not cluster.authorized(req.principal, "GROUP", gid or "", "DELETE"):
            results.append({"GroupId": gid, "ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"]})
        elif gid is None:
            results.append({"GroupId": gid, "ErrorCode": CODE["INVALID_GROUP_ID"]})
        elif _wrong_coordinator(cluster, req, gid):
            results.append({"GroupId": gid, "ErrorCode": CODE["NOT_COORDINATOR"]})
        else:
            todo.append(gid)
    results += cluster.groups.delete_groups(todo)
    return finish("DeleteGroups", req.version, {"ThrottleTimeMs": 0, "Results": results})


# ---- offsets ---------------------------------------------------------------------------------------------
class _Builder:
    """OffsetCommitResponse.Builder / TxnOffsetCommit's equivalent: topics in the order they first got
    a partition, partitions appended."""

    def __init__(self, by_id: bool):
        self.by_id = by_id
        self.topics: dict = {}

    def add(self, name: str, topic_id, partition: int, code: int) -> None:
        key = topic_id if self.by_id else name
        t = self.topics.setdefault(key, {"Name": name, "TopicId": topic_id, "Partitions": []})
        t["Partitions"].append({"PartitionIndex": partition, "ErrorCode": code})

    def body(self) -> list[dict]:
        return list(self.topics.values())


def _split_topics(cluster, req: Request, topics: list[dict], by_id: bool, operation: str,
                  builder: _Builder) -> list[dict]:
    """Per-topic checks of KafkaApis (and KIP-1319's order at v6 / OffsetCommit v10): the unknown id
    (UNKNOWN_TOPIC_ID, whole topic), no ACL (TOPIC_AUTHORIZATION_FAILED, whole topic), unknown topic
    (UNKNOWN_TOPIC_OR_PARTITION, whole topic), unknown partition (that partition only). Returns the
    valid topics as {"name", "topic_id", "partitions"}."""
    valid = []
    for t in topics:
        if by_id:
            live = cluster.topics.live(t["TopicId"])
            name, tid = (live.name if live else ""), t["TopicId"]
            if not name:
                for p in t["Partitions"]:
                    builder.add("", tid, p["PartitionIndex"], CODE["UNKNOWN_TOPIC_ID"])
                continue
        else:
            name = t["Name"]
            live = cluster.topics.get(name)
            tid = live.topic_id if live else None
        if not cluster.authorized(req.principal, "TOPIC", name, operation):
            for p in t["Partitions"]:
                builder.add(name, tid, p["PartitionIndex"], CODE["TOPIC_AUTHORIZATION_FAILED"])
            continue
        if live is None:
            for p in t["Partitions"]:
                builder.add(name, tid, p["PartitionIndex"], CODE["UNKNOWN_TOPIC_OR_PARTITION"])
            continue
        ok = []
        for p in t["Partitions"]:
            if 0 <= p["PartitionIndex"] < len(live.partitions):
                ok.append(p)
            else:
                builder.add(name, tid, p["PartitionIndex"], CODE["UNKNOWN_TOPIC_OR_PARTITION"])
        if ok:
            valid.append({"name": name, "topic_id": live.topic_id, "partitions": ok})
    return valid


def _merge(builder: _Builder, valid: list[dict], results: dict) -> None:
    for t in valid:
        for p in t["partitions"]:
            builder.add(t["name"], t["topic_id"], p["PartitionIndex"], results[(t["name"], p["PartitionIndex"])])


def _everywhere(topics: list[dict], code: int, by_id: bool) -> list[dict]:
    return [{"Name": t.get("Name", ""), "TopicId": t.get("TopicId"),
             "Partitions": [{"PartitionIndex": p["PartitionIndex"], "ErrorCode": code} for p in t["Partitions"]]}
            for t in topics]


ERRORS["OffsetCommit"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"), "OffsetCommitResponse.json")
    + kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS",), "OffsetCommitResponse.json",
                 "the model's group coordinator is always loaded")
    + kafka_only(0, ("INVALID_COMMIT_OFFSET_SIZE",), "OffsetCommitResponse.json",
                 "the model appends an offset record of any size (Kafka 4's coordinator answers a too large "
                 "one UNKNOWN_SERVER_ERROR: group-coordinator/.../CoordinatorOperationExceptionHelper.java)")
    + rows(0, ("TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION"),
           "KafkaApis.handleOffsetCommitRequest: per topic, by name (core/.../server/KafkaApis.scala)")
    + rows(0, ("OFFSET_METADATA_TOO_LARGE",), "OffsetMetadataManager: metadata over offset.metadata.max.bytes "
                                              "(group-coordinator/.../OffsetMetadataManager.java)")
    + rows(0, ("REBALANCE_IN_PROGRESS",), "ClassicGroup.validateOffsetCommit: a commit while the group completes "
                                          "its rebalance (group-coordinator/.../classic/ClassicGroup.java)")
    # a consumer-protocol member must commit with v9+ (ConsumerGroup.validateOffsetCommit)
    + rows(0, ("UNSUPPORTED_VERSION",), "ConsumerGroup.validateOffsetCommit: 'OffsetCommit version 9 or above "
                                        "must be used by members using the consumer group protocol'", until=8)
    + rows(1, ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"), "OffsetCommitResponse.json")
    + rows(7, ("FENCED_INSTANCE_ID",), "KIP-345 (OffsetCommit v7 adds GroupInstanceId)")
    + kafka_only(7, ("FENCED_MEMBER_EPOCH",), "OffsetCommitResponse.json",
                 "the schema lists it, but Kafka's coordinator answers a stale epoch STALE_MEMBER_EPOCH, never "
                 "FENCED_MEMBER_EPOCH, for an offset commit (group-coordinator/.../modern/consumer/ConsumerGroup.java)")
    + rows(9, ("GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH"), "OffsetCommitResponse.json (KIP-848, v9)")
    + rows(10, ("UNKNOWN_TOPIC_ID",), "OffsetCommitResponse.json (KIP-848, v10)"))


@handles("OffsetCommit")
def offset_commit(cluster, req: Request) -> dict:
    b = req.body
    by_id = req.version >= 10
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return finish("OffsetCommit", req.version,
                      {"Topics": _everywhere(b["Topics"], CODE["GROUP_AUTHORIZATION_FAILED"], by_id)})
    builder = _Builder(by_id)
    valid = _split_topics(cluster, req, b["Topics"], by_id, "READ", builder)
    if valid:
        if _wrong_coordinator(cluster, req, b["GroupId"]):
            results = {(t["name"], p["PartitionIndex"]): CODE["NOT_COORDINATOR"]
                       for t in valid for p in t["partitions"]}
        else:
            results = cluster.groups.commit_offsets(req, b, valid)
        _merge(builder, valid, results)
    return finish("OffsetCommit", req.version, {"Topics": builder.body()})


ERRORS["TxnOffsetCommit"] = (
    rows(0, ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
             "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
             "INVALID_PRODUCER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION", "OFFSET_METADATA_TOO_LARGE"),
         "TxnOffsetCommitResponse.json")
    + kafka_only(0, ("INVALID_COMMIT_OFFSET_SIZE",), "TxnOffsetCommitResponse.json",
                 "the model appends an offset record of any size (Kafka 4's coordinator answers a too large "
                 "one UNKNOWN_SERVER_ERROR: group-coordinator/.../CoordinatorOperationExceptionHelper.java)")
    + rows(0, ("INVALID_GROUP_ID",), "GroupCoordinatorService.commitTransactionalOffsets: a null or empty group "
                                     "id (group-coordinator/.../GroupCoordinatorService.java)")
    + rows(0, ("CONCURRENT_TRANSACTIONS", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE", "INVALID_REQUEST"),
           "KIP-890 verification (AddPartitionsToTxnManager), passed through CoordinatorOperationExceptionHelper "
           "(group-coordinator/.../OffsetMetadataManager.java)")
    + rows(3, ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID"), "KIP-447 (TxnOffsetCommit v3)")
    + rows(4, ("TRANSACTION_ABORTABLE",), "KIP-890 (TxnOffsetCommit v4)")
    + rows(6, ("GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_ID"), "KIP-1319 (TxnOffsetCommit v6)"))


@handles("TxnOffsetCommit")
def txn_offset_commit(cluster, req: Request) -> dict:
    b = req.body
    by_id = req.version >= 6

    def done(topics: list[dict]) -> dict:
        if req.version < 2:       # for 0.11-2.0 clients (KafkaApis.handleTxnOffsetCommitRequest)
            for t in topics:
                for p in t["Partitions"]:
                    if p["ErrorCode"] == CODE["COORDINATOR_LOAD_IN_PROGRESS"]:
                        p["ErrorCode"] = CODE["COORDINATOR_NOT_AVAILABLE"]
        return finish("TxnOffsetCommit", req.version, {"Topics": topics})
    if not cluster.authorized(req.principal, "TRANSACTIONAL_ID", b["TransactionalId"], "WRITE"):
        return done(_everywhere(b["Topics"], CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"], by_id))
    if not cluster.authorized(req.principal, "GROUP", b["GroupId"], "READ"):
        return done(_everywhere(b["Topics"], CODE["GROUP_AUTHORIZATION_FAILED"], by_id))
    builder = _Builder(by_id)
    valid = _split_topics(cluster, req, b["Topics"], by_id, "READ", builder)
    if valid:
        every = [(t["name"], p["PartitionIndex"]) for t in valid for p in t["partitions"]]
        if not b["GroupId"]:
            results = dict.fromkeys(every, CODE["INVALID_GROUP_ID"])
        elif _wrong_coordinator(cluster, req, b["GroupId"]):
            results = dict.fromkeys(every, CODE["NOT_COORDINATOR"])
        else:
            results = cluster.groups.commit_transactional_offsets(req, b, valid)
        _merge(builder, valid, results)
    return done(builder.body())


ERRORS["OffsetFetch"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "GROUP_ID_NOT_FOUND"), "OffsetFetchResponse.json")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"), "OffsetFetchResponse.json",
                 "the model's group coordinator is always loaded")
    + rows(0, ("TOPIC_AUTHORIZATION_FAILED",), "KafkaApis.handleOffsetFetchRequest: a topic the principal may not "
                                               "DESCRIBE")
    + rows(7, ("UNSTABLE_OFFSET_COMMIT",), "OffsetFetchResponse.json (KIP-447, v7 RequireStable)")
    + rows(9, ("STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"), "OffsetFetchResponse.json (KIP-848, v9)")
    + rows(10, ("UNKNOWN_TOPIC_ID",), "OffsetFetchResponse.json (KIP-848, v10)"))


@handles("OffsetFetch")
def offset_fetch(cluster, req: Request) -> dict:
    b = req.body
    v = req.version
    if v >= 8:
        groups = b["Groups"]
    else:
        groups = [{"GroupId": b["GroupId"], "MemberId": None, "MemberEpoch": -1, "Topics": b["Topics"]}]
    require_stable = bool(b.get("RequireStable")) if v >= 7 else False
    results = [_fetch_group(cluster, req, g, require_stable) for g in groups]
    if v >= 8:
        return finish("OffsetFetch", v, {"Groups": results})
    r = results[0]
    topics = r["Topics"]
    if r["ErrorCode"] and v < 2:     # no top-level error before v2: put it on every requested partition
        topics = [{"Name": t["Name"], "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": -1, "CommittedLeaderEpoch": -1, "Metadata": "",
             "ErrorCode": r["ErrorCode"]} for p in t["PartitionIndexes"]]} for t in (b["Topics"] or [])]
    return finish("OffsetFetch", v, {"Topics": topics, "ErrorCode": r["ErrorCode"]})


def _fetch_group(cluster, req: Request, g: dict, require_stable: bool) -> dict:
    gid = g["GroupId"]
    by_id = req.version >= 10
    if not cluster.authorized(req.principal, "GROUP", gid, "DESCRIBE"):
        return {"GroupId": gid, "ErrorCode": CODE["GROUP_AUTHORIZATION_FAILED"], "Topics": []}
    if _wrong_coordinator(cluster, req, gid):
        return {"GroupId": gid, "ErrorCode": CODE["NOT_COORDINATOR"], "Topics": []}
    member_id = g.get("MemberId") if req.version >= 9 else None
    member_epoch = g.get("MemberEpoch", -1) if req.version >= 9 else -1
    coordinator = cluster.groups
    if g["Topics"] is None:
        err, topics = coordinator.fetch_offsets(gid, member_id, member_epoch, None, require_stable)
        out = []
        for name, parts in topics:
            if not cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE"):
                continue
            entry = {"Name": name, "Partitions": parts}
            if by_id:
                live = cluster.topics.get(name)
                if live is None:
                    continue
                entry["TopicId"] = live.topic_id
            out.append(entry)
        return {"GroupId": gid, "ErrorCode": err, "Topics": [] if err else out}
    asked, extra = [], []
    for t in g["Topics"]:
        idx = t["PartitionIndexes"]
        if by_id:
            live = cluster.topics.live(t["TopicId"])
            if live is None:
                extra.append({"Name": "", "TopicId": t["TopicId"],
                              "Partitions": [_part_error(p, CODE["UNKNOWN_TOPIC_ID"]) for p in idx]})
                continue
            name = live.name
        else:
            name = t["Name"]
        if not cluster.authorized(req.principal, "TOPIC", name, "DESCRIBE"):
            extra.append({"Name": name, "TopicId": t.get("TopicId"),
                          "Partitions": [_part_error(p, CODE["TOPIC_AUTHORIZATION_FAILED"]) for p in idx]})
            continue
        asked.append((name, t.get("TopicId"), idx))
    err, topics = coordinator.fetch_offsets(gid, member_id, member_epoch, [(n, idx) for n, _, idx in asked],
                                            require_stable)
    if err:
        return {"GroupId": gid, "ErrorCode": err, "Topics": []}
    out = [{"Name": name, "TopicId": tid, "Partitions": parts}
           for (name, parts), (_, tid, _) in zip(topics, asked, strict=True)]
    return {"GroupId": gid, "ErrorCode": 0, "Topics": out + extra}


def _part_error(p: int, code: int) -> dict:
    return {"PartitionIndex": p, "CommittedOffset": -1, "CommittedLeaderEpoch": -1, "Metadata": "", "ErrorCode": code}


__all__ = ["finish", "PARKED"]
