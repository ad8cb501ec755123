"""ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge (KIP-932; v2 KIP-1222).

Share sessions and membership: kipviz/broker/shares.py. Record states: kipviz/broker/share_partition.py.

* ShareFetch: the session epoch is checked first (0 opens, -1 closes, else +1 per request; top-level
  SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH / UNKNOWN_MEMBER_ID); per partition
  UNKNOWN_TOPIC_ID (unknown or deleted id), UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
  (with CurrentLeader) when this broker does not lead it. Piggy-backed acknowledgements are applied
  first (AcknowledgeErrorCode per partition), then up to MaxRecords records are acquired under a lock
  of AcquisitionLockTimeoutMs. Isolation is the share group's share.isolation.level
  (read_uncommitted by default; `cluster.shares.isolation[group] = 1` for read_committed: aborted
  transactional records are archived by the broker). Control records are handed out as offsets
  without a record; the client acknowledges them as gaps (type 0).
* ShareAcknowledge: epoch 0 is INVALID_SHARE_SESSION_EPOCH (it cannot open a session); -1 applies the
  acknowledgements and closes the session. Ack types 0-3; 4 (RENEW, KIP-1222) only at v2.
  Each partition's acknowledgement is all or nothing (INVALID_RECORD_STATE / INVALID_REQUEST)."""
from __future__ import annotations

from ... import records as rec
from ...schema.error_codes import CODE
from ...uuids import ZERO_UUID
from ..deferred import DEFERRED
from ..error_rows import kafka_only, rows
from ..share_partition import AckError
from ..shares import ShareGroupError
from . import Request, handles

# The errors each share RPC can return, by version, declared above its handler (kipviz.broker.api_errors
# reads ERRORS; tests/test_api_errors.py judges them against the code and Kafka's lists). Kafka's
# lists are the "Supported errors" comments of clients/src/main/resources/common/message/
# Share{Fetch,Acknowledge,GroupHeartbeat,GroupDescribe}Response.json (apache/kafka; golden copies
# with commits in tests/test_api_errors.py); UNKNOWN_SERVER_ERROR, which
# they also list, is any handler's answer to a failure (cluster.handle), not declared per API.
ERRORS = {}
_KIP932_FETCH = "KIP-932 ShareFetchResponse.json"
_KIP932_ACK = "KIP-932 ShareAcknowledgeResponse.json"
_NO_DISKS = "the model has no log directories to fail"
# the model's own answer, not in Kafka's list: a session opened (epoch 0) for a member its share
# group does not know (kipviz/broker/shares.ShareCoordinator.session_step)
_KIT_MEMBER = "the kit: shares.session_step opens no session for an unknown member (not in Kafka's list)"


def _err(name: str, message: str | None = None) -> dict:
    return {"ErrorCode": CODE[name], "ErrorMessage": message}


ERRORS["ShareGroupHeartbeat"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "INVALID_REQUEST", "UNKNOWN_MEMBER_ID"),
         "KIP-932 ShareGroupHeartbeatResponse.json")
    + kafka_only(0, ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "KIP-932 ShareGroupHeartbeatResponse.json", "the model's group coordinator is always loaded, on "
                                                            "every broker")
    + kafka_only(0, ("GROUP_MAX_SIZE_REACHED",), "KIP-932 ShareGroupHeartbeatResponse.json",
                 "the model sets no group.share.max.size, so a share group never refuses a member")
    + rows(0, ("FENCED_MEMBER_EPOCH",), "GroupMetadataManager.throwIfShareGroupMemberEpochIsInvalid (KIP-932; "
                                        "not in the schema's list)")
    + rows(0, ("GROUP_ID_NOT_FOUND",), "GroupMetadataManager.getOrMaybeCreatePersistedShareGroup: 'Group ... is "
                                       "not a share group.' (not in the schema's list)"))


@handles("ShareGroupHeartbeat")
def share_group_heartbeat(cluster, req: Request) -> dict:
    b = req.body
    base = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "MemberId": None, "MemberEpoch": 0,
            "HeartbeatIntervalMs": 0, "Assignment": None}
    gid = b.get("GroupId") or ""
    if not cluster.authorized(req.principal, "GROUP", gid, "READ"):
        return {**base, **_err("GROUP_AUTHORIZATION_FAILED")}
    if not gid:
        return {**base, **_err("INVALID_REQUEST", "GroupId can't be empty.")}
    try:
        out = cluster.shares.heartbeat(gid, b.get("MemberId") or "", b.get("MemberEpoch", 0),
                                       b.get("SubscribedTopicNames"), b.get("RackId"), req.client)
    except ShareGroupError as e:
        return {**base, **_err(e.code_name, str(e))}
    return {**base, **out}


ERRORS["ShareGroupDescribe"] = (
    rows(0, ("GROUP_AUTHORIZATION_FAILED", "GROUP_ID_NOT_FOUND"), "KIP-932 ShareGroupDescribeResponse.json")
    + kafka_only(0, ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "KIP-932 ShareGroupDescribeResponse.json", "the model's group coordinator is always loaded, on "
                                                           "every broker")
    + kafka_only(0, ("INVALID_REQUEST", "INVALID_GROUP_ID"), "KIP-932 ShareGroupDescribeResponse.json",
                 "the model's ShareGroupDescribe checks only the ACL and whether the share group exists"))


@handles("ShareGroupDescribe")
def share_group_describe(cluster, req: Request) -> dict:
    shares = cluster.shares
    out = []
    for gid in req.body.get("GroupIds") or []:
        g = shares.groups.get(gid)
        row = {"ErrorCode": 0, "ErrorMessage": None, "GroupId": gid, "GroupState": "", "GroupEpoch": 0,
               "AssignmentEpoch": 0, "AssignorName": "", "Members": [], "AuthorizedOperations": -2147483648}
        if not cluster.authorized(req.principal, "GROUP", gid, "DESCRIBE"):
            row.update(_err("GROUP_AUTHORIZATION_FAILED"))
        elif g is None:
            other = cluster.__dict__.get("groups")
            msg = f"Group {gid} is not a share group." if other is not None and gid in getattr(other, "groups", {}) \
                else f"Group {gid} not found."
            row.update(_err("GROUP_ID_NOT_FOUND", msg), GroupState="Dead")
        else:
            row.update(GroupState=g.state, GroupEpoch=g.epoch, AssignmentEpoch=g.epoch, AssignorName="simple",
                       Members=[{"MemberId": m.member_id, "RackId": m.rack_id, "MemberEpoch": m.epoch,
                                 "ClientId": m.client_id, "ClientHost": m.client_host,
                                 "SubscribedTopicNames": sorted(m.subscribed),
                                 "Assignment": {"TopicPartitions": [
                                     {"TopicId": tid, "TopicName": name, "Partitions": ps}
                                     for tid, name, ps in shares.assignment(m)]}}
                                for m in g.members.values()])
        out.append(row)
    return {"ThrottleTimeMs": 0, "Groups": out}


def _resolve(cluster, req: Request, tid, p: int):
    """(topic, log, error dict or None) for one requested partition."""
    topic = cluster.topics.live(tid)
    if topic is None:
        return None, None, {"ErrorCode": CODE["UNKNOWN_TOPIC_ID"]}
    if not 0 <= p < len(topic.partitions):
        return topic, None, {"ErrorCode": CODE["UNKNOWN_TOPIC_OR_PARTITION"]}
    log = topic.partitions[p]
    if not cluster.authorized(req.principal, "TOPIC", topic.name, "READ"):
        return topic, log, {"ErrorCode": CODE["TOPIC_AUTHORIZATION_FAILED"]}
    if log.leader != req.broker:
        return topic, log, {"ErrorCode": CODE["NOT_LEADER_OR_FOLLOWER"],
                            "CurrentLeader": {"LeaderId": log.leader, "LeaderEpoch": log.leader_epoch}}
    return topic, log, None


def _ack(sp, member: str, batches: list, renew: bool) -> tuple[int, str | None]:
    if not batches:
        return 0, None
    try:
        sp.acknowledge(member, batches, allow_renew=renew)
    except AckError as e:
        return CODE[e.code_name], str(e)
    return 0, None


def _records(log, offsets: list[int]) -> bytes:
    """Record batches covering the acquired data records (control records are left out): one
    batch per run of consecutive offsets of one producer."""
    out = []
    i, n = 0, len(offsets)
    while i < n:
        j = i + 1                        # offsets[i:j]: consecutive, read with one slice of the log
        while j < n and offsets[j] == offsets[j - 1] + 1:
            j += 1
        run: list = []
        for e in log.entries[offsets[i]:offsets[j - 1] + 1]:
            if e.control is not None:
                _flush(log, run, out)
                continue
            if run and run[-1].producer_id != e.producer_id:
                _flush(log, run, out)
            run.append(e)
        _flush(log, run, out)
        i = j
    return b"".join(out)


def _flush(log, run: list, out: list) -> None:
    """The run of entries (consecutive offsets, one producer) as one batch: record j's offset
    delta is j."""
    if run:
        e0 = run[0]
        out.append(rec.write_batch([(e.key, e.value, e.headers, e.timestamp) for e in run],
                                   base_offset=e0.offset, base_timestamp=e0.timestamp,
                                   producer_id=e0.producer_id, producer_epoch=e0.producer_epoch,
                                   is_transactional=e0.transactional, partition_leader_epoch=log.leader_epoch))
        run.clear()


def _session(cluster, req: Request, gid: str, member: str, epoch: int, fetch: bool):
    try:
        return cluster.shares.session_step(gid, member, epoch, opening_allowed=fetch, broker=req.broker,
                                           client=req.client), None
    except ShareGroupError as e:
        return None, _err(e.code_name, str(e))


def _top_error(api: str, version: int, err: dict) -> dict:
    body = {"ThrottleTimeMs": 0, "Responses": [], "NodeEndpoints": [], **err}
    if api == "ShareFetch" or version >= 2:
        body["AcquisitionLockTimeoutMs"] = 0
    return body


ERRORS["ShareFetch"] = (
    rows(0, ("UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "TOPIC_AUTHORIZATION_FAILED",
             "GROUP_AUTHORIZATION_FAILED", "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH",
             "INVALID_RECORD_STATE", "INVALID_REQUEST"), _KIP932_FETCH)
    + rows(0, ("UNKNOWN_MEMBER_ID",), _KIT_MEMBER)
    + kafka_only(0, ("KAFKA_STORAGE_ERROR",), _KIP932_FETCH, _NO_DISKS)
    + kafka_only(0, ("CORRUPT_MESSAGE",), _KIP932_FETCH, "the model hands out batches as the log holds them; "
                                                         "it reads no corrupt batch"))


def _share_fetch_order(b: dict, parts: list, epoch: int) -> tuple[dict, list]:
    """The session's partitions after this request's forgotten and added ones, and each requested
    partition's acknowledgement batches: (acks by partition, the order the partitions are answered in)."""
    for ft in b.get("ForgottenTopicsData") or []:
        for p in ft.get("Partitions") or []:
            if (ft["TopicId"], p) in parts:
                parts.remove((ft["TopicId"], p))
    requested = []
    for t in b.get("Topics") or []:
        for pd in t.get("Partitions") or []:
            k = (t["TopicId"], pd.get("PartitionIndex", 0))
            requested.append((k, pd.get("AcknowledgementBatches") or []))
            if k not in parts and epoch != -1:
                parts.append(k)
    acks = dict(requested)
    order = list(parts) if epoch != -1 else [k for k, _ in requested]
    for k, _ in requested:
        if k not in order:
            order.append(k)
    return acks, order


def _share_fetch_partition(cluster, req: Request, gid: str, member: str, tid, p: int, batches, budget: int,
                           isolation: int) -> tuple[tuple, list]:
    """One partition: its acknowledgements, then up to `budget` records acquired right after them.
    ((tid, response partition, share partition or None, log), the records acquired)."""
    pr = {"PartitionIndex": p, "ErrorCode": 0, "ErrorMessage": None, "AcknowledgeErrorCode": 0,
          "AcknowledgeErrorMessage": None, "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1},
          "Records": b"", "AcquiredRecords": []}
    topic, log, perr = _resolve(cluster, req, tid, p)
    sp, got = None, []
    if perr:
        pr.update(perr)
    else:
        sp = cluster.shares.share_partition(gid, topic, p)
        if batches:
            pr["AcknowledgeErrorCode"], pr["AcknowledgeErrorMessage"] = _ack(sp, member, batches, req.version >= 2)
        if budget > 0:
            got = sp.acquire(member, budget, isolation)
            pr["AcquiredRecords"] = sp.acquired_ranges(got)
            pr["Records"] = _records(log, got)
    return (tid, pr, sp, log), got


@handles("ShareFetch")
def share_fetch(cluster, req: Request) -> dict:
    """ShareFetch in SharePartitionManager's order: the session, then per partition its
    acknowledgements and acquisition, then (nothing acquired) a DelayedShareFetch."""
    b, v = req.body, req.version
    gid, member, epoch = b.get("GroupId") or "", b.get("MemberId") or "", b.get("ShareSessionEpoch", 0)
    if not gid or not member:
        return _top_error("ShareFetch", v, _err("INVALID_REQUEST", "GroupId and MemberId are required."))
    if not cluster.authorized(req.principal, "GROUP", gid, "READ"):
        return _top_error("ShareFetch", v, _err("GROUP_AUTHORIZATION_FAILED"))
    session, err = _session(cluster, req, gid, member, epoch, True)
    if err:
        return _top_error("ShareFetch", v, err)
    shares = cluster.shares
    isolation = getattr(shares, "isolation", {}).get(gid, 0)
    max_records = b.get("MaxRecords", 500) if v >= 1 else 500
    if max_records <= 0:
        max_records = 500
    renew_only = bool(b.get("IsRenewAck")) if v >= 2 else False
    acks, order = _share_fetch_order(b, session["parts"], epoch)
    rows = []          # (tid, response partition, share partition and log or None)
    fetching = epoch != -1 and not renew_only
    budget, got_any = max_records, False
    for tid, p in order:
        row, got = _share_fetch_partition(cluster, req, gid, member, tid, p, acks.get((tid, p)),
                                          budget if fetching else 0, isolation)
        budget -= len(got)
        got_any = got_any or bool(got)
        rows.append(row)
    if epoch == -1:
        shares.close_session(gid, member, req.broker)
    if fetching and not got_any:
        return _share_fetch_wait(cluster, req, rows, gid, member, max_records, isolation)
    return _share_body(cluster, rows)


def _share_fetch_wait(cluster, req: Request, rows: list, gid: str, member: str, max_records: int,
                      isolation: int):
    """Nothing acquired: the answer now, or (long poll, no error, a share partition to wait on)
    DEFERRED until records arrive or MaxWaitMs passes."""
    wait = req.body.get("MaxWaitMs", 0)
    errors = any(pr["ErrorCode"] or pr["AcknowledgeErrorCode"] for _, pr, _, _ in rows)
    if not errors and cluster.config.long_poll and wait > 0 and any(sp is not None for _, _, sp, _ in rows):
        # DelayedShareFetch: nothing acquirable now; acknowledgements are already applied, the
        # acquisition is retried when records arrive, else answered empty after MaxWaitMs
        shares = cluster.shares

        def attempt(final: bool):
            if shares.member(gid, member) is None:
                return _share_body(cluster, rows)
            if _acquire(rows, member, max_records, isolation) or final:
                return _share_body(cluster, rows)
            return None
        cluster.delayed.hold(req, wait, attempt)
        return DEFERRED
    return _share_body(cluster, rows)


def _acquire(rows, member: str, max_records: int, isolation: int) -> bool:
    budget, any_ = max_records, False
    for _, pr, sp, log in rows:
        if sp is not None and budget > 0:
            got = sp.acquire(member, budget, isolation)
            if got:
                budget -= len(got)
                any_ = True
                pr["AcquiredRecords"] = sp.acquired_ranges(got)
                pr["Records"] = _records(log, got)
    return any_


def _share_body(cluster, rows) -> dict:
    responses: dict = {}
    for tid, pr, _, _ in rows:
        responses.setdefault(tid, []).append(pr)
    return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None,
            "AcquisitionLockTimeoutMs": cluster.config.group_share_record_lock_duration_ms,
            "Responses": [{"TopicId": tid, "Partitions": ps} for tid, ps in responses.items()],
            "NodeEndpoints": []}


ERRORS["ShareAcknowledge"] = (
    rows(0, ("UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "TOPIC_AUTHORIZATION_FAILED",
             "GROUP_AUTHORIZATION_FAILED", "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH",
             "INVALID_RECORD_STATE", "INVALID_REQUEST"), _KIP932_ACK)
    + kafka_only(0, ("KAFKA_STORAGE_ERROR",), _KIP932_ACK, _NO_DISKS))


@handles("ShareAcknowledge")
def share_acknowledge(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    gid, member, epoch = b.get("GroupId") or "", b.get("MemberId") or "", b.get("ShareSessionEpoch", 0)
    if not gid or not member:
        return _top_error("ShareAcknowledge", v, _err("INVALID_REQUEST", "GroupId and MemberId are required."))
    if not cluster.authorized(req.principal, "GROUP", gid, "READ"):
        return _top_error("ShareAcknowledge", v, _err("GROUP_AUTHORIZATION_FAILED"))
    _, err = _session(cluster, req, gid, member, epoch, False)
    if err:
        return _top_error("ShareAcknowledge", v, err)
    shares = cluster.shares
    out = []
    for t in b.get("Topics") or []:
        parts = []
        for pd in t.get("Partitions") or []:
            p = pd.get("PartitionIndex", 0)
            pr = {"PartitionIndex": p, "ErrorCode": 0, "ErrorMessage": None,
                  "CurrentLeader": {"LeaderId": -1, "LeaderEpoch": -1}}
            topic, _, perr = _resolve(cluster, req, t["TopicId"], p)
            if perr:
                pr.update(perr)
            else:
                sp = shares.share_partition(gid, topic, p)
                pr["ErrorCode"], pr["ErrorMessage"] = _ack(sp, member, pd.get("AcknowledgementBatches") or [], v >= 2)
            parts.append(pr)
        out.append({"TopicId": t["TopicId"], "Partitions": parts})
    if epoch == -1:
        shares.close_session(gid, member, req.broker)
    body = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Responses": out, "NodeEndpoints": []}
    if v >= 2:
        body["AcquisitionLockTimeoutMs"] = cluster.config.group_share_record_lock_duration_ms
    return body


__all__ = ["ZERO_UUID"]
