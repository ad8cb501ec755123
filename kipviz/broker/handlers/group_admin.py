"""Group admin RPCs: OffsetDelete and KIP-932's DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets, after released Kafka 4.4 (core/src/main/scala/kafka/server/KafkaApis.scala
handleOffsetDeleteRequest and handle*ShareGroupOffsetsRequest; group-coordinator/.../
GroupCoordinatorService.java, OffsetMetadataManager.deleteOffsets, GroupMetadataManager
.alterShareGroupOffsets and sharePartitionsEligibleForOffsetDeletion).

    OffsetDelete                DELETE on the group (else GROUP_AUTHORIZATION_FAILED for all), READ on
                                each topic; the coordinator refuses topics the group reads
                                (GROUP_SUBSCRIBED_TO_TOPIC) and a classic group with members that does
                                not use the consumer protocol (NON_EMPTY_GROUP).
    DescribeShareGroupOffsets   DESCRIBE on each group, DESCRIBE on the topics shown; per share
                                partition its start offset (-1: no state) and, from v1, its lag.
    AlterShareGroupOffsets      READ on the group and topics; the group must have no members; each
                                share partition starts again at the offset given (a new state epoch).
    DeleteShareGroupOffsets     DELETE on the group, READ on the topics; the group must have no
                                members; the group's state for the topics goes.

All four go to the group coordinator (NOT_COORDINATOR elsewhere); the share RPCs need share.version
>= 1 (UNSUPPORTED_VERSION otherwise). The state is the group coordinator's (kipviz.broker.groups)
and the share coordinator's (kipviz.broker.shares)."""
from __future__ import annotations

from ...codec.plan import plan_for
from ...schema import events as ev
from ...schema.coordinators import GROUP_KEY
from ...schema.error_codes import CODE
from ...schema.loader import load_dir
from ...uuids import ZERO_UUID
from ..error_rows import kafka_only, rows
from ..groups.model import GroupError
from ..tables import share_record as sr
from . import Request, handles
from .metadata import MESSAGES, log_of, shape

ERRORS = {}
_LOADED = "the model's group coordinator is always loaded and available"
_SUBSCRIPTION = []          # ConsumerProtocolSubscription, loaded on first use


def _subscription_topics(metadata: bytes) -> list[str]:
    """ConsumerProtocol.deserializeConsumerProtocolSubscription at v0, the prefix of every version
    (ClassicGroup.computeSubscribedTopics); ValueError when the bytes are not one."""
    if not _SUBSCRIPTION:
        from ...schema import registry
        _SUBSCRIPTION.append(load_dir(registry.DEFS_DIR.parent / "consumer", require_kit=True)
                             ["ConsumerProtocolSubscription"])
    try:
        value, _ = plan_for(_SUBSCRIPTION[0], 0).decode_at(bytes(metadata), 2)   # later versions' fields follow
        return list(value["Topics"])
    except Exception as e:  # noqa: BLE001 - any malformed subscription: the coordinator does not know it
        raise ValueError(str(e)) from None


def group_reads_topic(g, topic: str) -> bool:
    """Group.isSubscribedToTopic: a consumer-protocol group, the topics its members subscribe to; a
    classic group, the topics in its members' subscriptions (unknown: true if it uses the consumer
    protocol); a group known only by its committed offsets reads nothing."""
    if g is None:
        return False
    if getattr(g, "type", "") == "consumer":
        return topic in g.subscription_metadata or any(topic in m.subscribed for m in g.members.values())
    if g.protocol_type != "consumer":
        return False
    if not g.members:
        return False
    if g.protocol_name is None:
        return True
    try:
        return any(topic in _subscription_topics(m.metadata(g.protocol_name)) for m in g.members.values())
    except ValueError:
        return True


# ---- OffsetDelete -----------------------------------------------------------------------------------
ERRORS["OffsetDelete"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION",
             "NOT_COORDINATOR", "INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND", "NON_EMPTY_GROUP",
             "GROUP_SUBSCRIBED_TO_TOPIC"),
         "KafkaApis.handleOffsetDeleteRequest, GroupCoordinatorService.deleteOffsets, "
         "OffsetMetadataManager.deleteOffsets")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "GroupCoordinatorService.deleteOffsets", _LOADED))


@handles("OffsetDelete")
def offset_delete(cluster, req: Request) -> dict:
    b = req.body
    gid = b.get("GroupId") or ""

    def top(code, topics=()):
        return shape("OffsetDeleteResponse", req.version, {"ErrorCode": code, "ThrottleTimeMs": 0,
                                                          "Topics": list(topics)})
    if not cluster.authorized(req.principal, "GROUP", gid, "DELETE"):
        return top(CODE["GROUP_AUTHORIZATION_FAILED"])
    early: dict[str, dict[int, int]] = {}
    todo: dict[str, list[int]] = {}
    for t in b.get("Topics") or []:
        name = t.get("Name")
        parts = [p.get("PartitionIndex") for p in t.get("Partitions") or []]
        topic = cluster.topics.get(name)
        if not cluster.authorized(req.principal, "TOPIC", name or "", "READ"):
            early[name] = dict.fromkeys(parts, CODE["TOPIC_AUTHORIZATION_FAILED"])
        elif topic is None:
            early[name] = dict.fromkeys(parts, CODE["UNKNOWN_TOPIC_OR_PARTITION"])
        else:
            for p in parts:
                if log_of(topic, p) is None:
                    early.setdefault(name, {})[p] = CODE["UNKNOWN_TOPIC_OR_PARTITION"]
                else:
                    todo.setdefault(name, []).append(p)
    if not gid:
        return top(CODE["INVALID_GROUP_ID"])
    if cluster.coordinator_broker(GROUP_KEY, gid) != req.broker:
        return top(CODE["NOT_COORDINATOR"])
    try:
        done = cluster.groups.delete_offsets(gid, todo, group_reads_topic)
    except GroupError as e:
        return top(e.code)
    merged = {n: dict(ps) for n, ps in early.items()}
    for n, ps in done.items():
        merged.setdefault(n, {}).update(ps)
    return top(0, [{"Name": n, "Partitions": [{"PartitionIndex": p, "ErrorCode": c} for p, c in ps.items()]}
                   for n, ps in merged.items()])


# ---- the share-group offset RPCs (KIP-932) ----------------------------------------------------------
def _share_group_problem(cluster, req: Request, gid: str, must_exist: bool) -> tuple[str, str | None] | None:
    """The coordinator's checks of a share group for alter/delete: (error, message) or None."""
    if not gid:
        return "INVALID_GROUP_ID", None
    if cluster.coordinator_broker(GROUP_KEY, gid) != req.broker:
        return "NOT_COORDINATOR", None
    if gid in cluster.groups.groups:
        return "GROUP_ID_NOT_FOUND", f"Group {gid} is not a share group."
    g = cluster.shares.groups.get(gid)
    if g is None and must_exist:
        return "GROUP_ID_NOT_FOUND", f"Group {gid} not found."
    if g is not None and g.members:
        return "NON_EMPTY_GROUP", None        # GroupNotEmptyException(Errors.NON_EMPTY_GROUP.message()): no own text
    return None


def _share_partition_row(cluster, gid: str, topic, p: int) -> dict:
    sp = cluster.shares.partitions.get((gid, topic.topic_id, p))
    log = log_of(topic, p)
    row = {"PartitionIndex": p, "StartOffset": -1, "LeaderEpoch": -1, "Lag": -1, "ErrorCode": 0, "ErrorMessage": None}
    if log is None:
        row.update(ErrorCode=CODE["UNKNOWN_TOPIC_OR_PARTITION"], ErrorMessage=MESSAGES[CODE["UNKNOWN_TOPIC_OR_PARTITION"]])
    elif sp is not None:
        done = sum(1 for o, r in sp.records.items() if o >= sp.spso and r.state in sr.TERMINAL)
        row.update(StartOffset=sp.spso, LeaderEpoch=log.leader_epoch,
                   Lag=max(log.log_end_offset - sp.spso - done, 0))     # KIP-1226: not yet delivered and done
    return row


_NOT_LISTED = "not in the schema's Supported errors list"
ERRORS["DescribeShareGroupOffsets"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "NOT_COORDINATOR"),
         "DescribeShareGroupOffsetsResponse.json")
    + rows(0, ("UNSUPPORTED_VERSION", "INVALID_GROUP_ID", "UNKNOWN_TOPIC_OR_PARTITION"),
           "KafkaApis.handleDescribeShareGroupOffsetsRequest (share groups off), GroupCoordinatorService "
           "(an empty group id), a partition the topic lacks: " + _NOT_LISTED)
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "DescribeShareGroupOffsetsResponse.json", _LOADED)
    + kafka_only(0, ("GROUP_ID_NOT_FOUND", "INVALID_REQUEST"), "DescribeShareGroupOffsetsResponse.json",
                 "a group without share state is answered with start offset -1 per partition"))


# size: DescribeShareGroupOffsets per group (enabled, authorized, all partitions or some), as KafkaApis branches
@handles("DescribeShareGroupOffsets")
def describe_share_group_offsets(cluster, req: Request) -> dict:
    v = req.version
    out = []
    for grp in req.body.get("Groups") or []:
        gid = grp.get("GroupId") or ""
        res = {"GroupId": gid, "Topics": [], "ErrorCode": 0, "ErrorMessage": None}
        out.append(res)
        if cluster.features.level("share.version") < 1:
            res["ErrorCode"] = CODE["UNSUPPORTED_VERSION"]
            continue
        if not cluster.authorized(req.principal, "GROUP", gid, "DESCRIBE"):
            res["ErrorCode"] = CODE["GROUP_AUTHORIZATION_FAILED"]
            continue
        if not gid:
            res["ErrorCode"] = CODE["INVALID_GROUP_ID"]
            continue
        if cluster.coordinator_broker(GROUP_KEY, gid) != req.broker:
            res.update(ErrorCode=CODE["NOT_COORDINATOR"], ErrorMessage=MESSAGES.get(CODE["NOT_COORDINATOR"]))
            continue
        asked = grp.get("Topics")
        if asked is None:          # every partition the group has state for, on topics the caller may describe
            wanted: dict[str, list[int]] = {}
            for (g, tid, p) in sorted(cluster.shares.partitions, key=lambda k: (str(k[1]), k[2])):
                topic = cluster.topics.live(tid)
                if g == gid and topic is not None and cluster.authorized(req.principal, "TOPIC", topic.name, "DESCRIBE"):
                    wanted.setdefault(topic.name, []).append(p)
            asked = [{"TopicName": n, "Partitions": ps} for n, ps in wanted.items()]
        for t in asked:
            name = t.get("TopicName")
            topic = cluster.topics.get(name)
            if not cluster.authorized(req.principal, "TOPIC", name or "", "DESCRIBE"):
                res["Topics"].append({"TopicName": name, "TopicId": ZERO_UUID, "Partitions": [
                    {"PartitionIndex": p, "StartOffset": -1, "LeaderEpoch": -1, "Lag": -1,
                     "ErrorCode": CODE["TOPIC_AUTHORIZATION_FAILED"],
                     "ErrorMessage": MESSAGES[CODE["TOPIC_AUTHORIZATION_FAILED"]]} for p in t.get("Partitions") or []]})
            elif topic is None:
                res["Topics"].append({"TopicName": name, "TopicId": ZERO_UUID, "Partitions": [
                    {"PartitionIndex": p, "StartOffset": -1, "LeaderEpoch": -1, "Lag": -1, "ErrorCode": 0,
                     "ErrorMessage": None} for p in t.get("Partitions") or []]})
            else:
                res["Topics"].append({"TopicName": name, "TopicId": topic.topic_id, "Partitions": [
                    _share_partition_row(cluster, gid, topic, p) for p in t.get("Partitions") or []]})
    return shape("DescribeShareGroupOffsetsResponse", v, {"ThrottleTimeMs": 0, "Groups": out})


def _share_admin_rows(api: str, listed: tuple, unlisted: tuple, where: str) -> list:
    """The rows of Alter/DeleteShareGroupOffsets: Kafka's list, the model's other answers, the
    coordinator and persister failures the model never has."""
    schema = f"{api}Response.json"
    return (rows(0, listed, schema) + rows(0, unlisted, f"{where}: {_NOT_LISTED}")
            + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"), schema, _LOADED)
            + kafka_only(0, ("KAFKA_STORAGE_ERROR", "INVALID_REQUEST"), schema,
                         "the persister's failures; the model's share coordinator always writes"))


def _whole(req: Request, code: int, message: str | None = None) -> dict:
    """An answer for the whole request (Alter/DeleteShareGroupOffsetsRequest.getErrorResponse)."""
    return shape(req.api + "Response", req.version, {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message,
                                                     "Responses": []})


def _share_gate(cluster, req: Request, gid: str, op: str) -> dict | None:
    """KafkaApis' first checks of Alter/DeleteShareGroupOffsets: share groups on, then `op` on the group."""
    if cluster.features.level("share.version") < 1:
        return _whole(req, CODE["UNSUPPORTED_VERSION"])
    if not cluster.authorized(req.principal, "GROUP", gid, op):
        return _whole(req, CODE["GROUP_AUTHORIZATION_FAILED"], MESSAGES[CODE["GROUP_AUTHORIZATION_FAILED"]])
    return None


ERRORS["AlterShareGroupOffsets"] = _share_admin_rows(
    "AlterShareGroupOffsets", ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "NOT_COORDINATOR",
                               "GROUP_ID_NOT_FOUND", "NON_EMPTY_GROUP"),
    ("UNSUPPORTED_VERSION", "INVALID_GROUP_ID", "UNKNOWN_TOPIC_OR_PARTITION"),
    "KafkaApis.handleAlterShareGroupOffsetsRequest (share groups off; a topic or partition not in the metadata), "
    "GroupCoordinatorService (an empty group id)")


@handles("AlterShareGroupOffsets")
def alter_share_group_offsets(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    gid = b.get("GroupId") or ""
    early = _share_gate(cluster, req, gid, "READ")
    if early is not None:
        return early
    problem = _share_group_problem(cluster, req, gid, must_exist=False)
    if problem:
        return _whole(req, CODE[problem[0]], problem[1])
    shares = cluster.shares
    if gid not in shares.groups:          # getOrMaybeCreateShareGroup: a new, empty share group
        from ..shares import ShareGroup
        shares.groups[gid] = ShareGroup(gid)
    out = []
    for t in b.get("Topics") or []:
        name = t.get("TopicName")
        topic = cluster.topics.get(name)
        rows_ = []
        for p in t.get("Partitions") or []:
            idx = p.get("PartitionIndex", -1)
            if not cluster.authorized(req.principal, "TOPIC", name or "", "READ"):
                code = CODE["TOPIC_AUTHORIZATION_FAILED"]
            elif topic is None or log_of(topic, idx) is None:
                code = CODE["UNKNOWN_TOPIC_OR_PARTITION"]
            else:
                shares.initialize_state(gid, topic, idx, p.get("StartOffset", 0))
                code = 0
            rows_.append({"PartitionIndex": idx, "ErrorCode": code, "ErrorMessage": MESSAGES.get(code) if code else None})
        out.append({"TopicName": name, "TopicId": topic.topic_id if topic else ZERO_UUID, "Partitions": rows_})
    cluster.emit(ev.ShareGroupOffsetsAltered, group=gid)
    return shape("AlterShareGroupOffsetsResponse", v, {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None,
                                                      "Responses": out})


ERRORS["DeleteShareGroupOffsets"] = _share_admin_rows(
    "DeleteShareGroupOffsets", ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "NOT_COORDINATOR",
                                "GROUP_ID_NOT_FOUND", "NON_EMPTY_GROUP", "UNKNOWN_TOPIC_OR_PARTITION"),
    ("UNSUPPORTED_VERSION", "INVALID_GROUP_ID"),
    "KafkaApis.handleDeleteShareGroupOffsetsRequest (share groups off), GroupCoordinatorService (an empty group id)")


@handles("DeleteShareGroupOffsets")
def delete_share_group_offsets(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    gid = b.get("GroupId") or ""
    early = _share_gate(cluster, req, gid, "DELETE")
    if early is not None:
        return early
    out, allowed = [], []
    for t in b.get("Topics") or []:
        name = t.get("TopicName")
        if cluster.authorized(req.principal, "TOPIC", name or "", "READ"):
            allowed.append(name)
        else:
            out.append({"TopicName": name, "TopicId": ZERO_UUID, "ErrorCode": CODE["TOPIC_AUTHORIZATION_FAILED"],
                        "ErrorMessage": MESSAGES[CODE["TOPIC_AUTHORIZATION_FAILED"]]})
    problem = _share_group_problem(cluster, req, gid, must_exist=True)
    if problem:
        return _whole(req, CODE[problem[0]], problem[1])
    for name in allowed:
        topic = cluster.topics.get(name)
        if topic is None:
            out.append({"TopicName": name, "TopicId": ZERO_UUID, "ErrorCode": CODE["UNKNOWN_TOPIC_OR_PARTITION"],
                        "ErrorMessage": MESSAGES[CODE["UNKNOWN_TOPIC_OR_PARTITION"]]})
        elif cluster.shares.delete_state(gid, topic):
            out.append({"TopicName": name, "TopicId": topic.topic_id, "ErrorCode": 0, "ErrorMessage": None})
        else:
            out.append({"TopicName": name, "TopicId": topic.topic_id, "ErrorCode": CODE["UNKNOWN_TOPIC_OR_PARTITION"],
                        "ErrorMessage": "There is no offset information to delete."})
    return shape("DeleteShareGroupOffsetsResponse", v, {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None,
                                                       "Responses": out})
