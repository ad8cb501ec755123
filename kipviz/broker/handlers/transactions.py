"""Transaction RPCs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers.

The front-door checks follow KafkaApis (authorization, topic existence, version-dependent error
rewrites); the state changes are the transaction coordinator's (kipviz.broker.transactions)."""
from __future__ import annotations

from ...codec.fit import complete_body
from ...schema.coordinators import GROUP_KEY
from ...schema.error_codes import CODE
from ..error_rows import kafka_only, rows
from ..transactions import OPERATION_NOT_ATTEMPTED
from ..txn_markers import write_marker
from . import Request, handles

E = CODE
NONE_ = 0

# The errors each transaction RPC can return, by version, declared above its handler
# (kipviz.broker.api_errors reads ERRORS; tests/test_api_errors.py judges them against the code).
ERRORS = {}
_NO_LOADING = "the model's transaction coordinator is always loaded and available"


def _fenced_for(version: int, first_with_fenced: int, code: int) -> int:
    """KIP-588: versions before PRODUCER_FENCED existed get INVALID_PRODUCER_EPOCH instead."""
    if code == E["PRODUCER_FENCED"] and version < first_with_fenced:
        return E["INVALID_PRODUCER_EPOCH"]
    return code


def _can_write_some_topic(cluster, principal: str) -> bool:
    """authorizeByResourceType(WRITE, TOPIC): some ACL lets the principal write some topic."""
    return cluster.authorizer.authorize_by_resource_type(principal, "TOPIC", "WRITE", cluster.request_host)


def _not_coordinator(cluster, req: Request, transactional_id) -> bool:
    return bool(transactional_id) and cluster.txns.coordinator_broker(transactional_id) != req.broker


# ---- InitProducerId ---------------------------------------------------------------------------
ERRORS["InitProducerId"] = (
    rows(0, ("NOT_COORDINATOR", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CONCURRENT_TRANSACTIONS",
             "INVALID_TRANSACTION_TIMEOUT"), "InitProducerIdResponse.json")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"), "InitProducerIdResponse.json",
                 _NO_LOADING)
    + rows(0, ("CLUSTER_AUTHORIZATION_FAILED",), "KafkaApis.handleInitProducerIdRequest: an idempotent producer "
                                                 "with neither IDEMPOTENT_WRITE nor WRITE on some topic")
    + rows(0, ("INVALID_REQUEST",), "TransactionCoordinator.handleInitProducerId: an empty transactional id; "
                                    "v3+ one of ProducerId/ProducerEpoch -1 and not the other")
    + rows(3, ("INVALID_PRODUCER_EPOCH",), "KIP-360 (InitProducerId v3)")
    + rows(4, ("PRODUCER_FENCED",), "InitProducerIdResponse.json (KIP-588, v4)")
    + kafka_only(5, ("TRANSACTION_ABORTABLE",), "KIP-890 (InitProducerId v5)",
                 "no InitProducerId path of the model's coordinator answers it"))


@handles("InitProducerId")
def init_producer_id(cluster, req: Request) -> dict:
    b, v = req.body, req.version

    def answer(code: int, pid: int = -1, epoch: int = -1, opid: int = -1, oepoch: int = -1) -> dict:
        return complete_body("InitProducerIdResponse", v, {
            "ThrottleTimeMs": 0, "ErrorCode": _fenced_for(v, 4, code), "ProducerId": pid, "ProducerEpoch": epoch,
            "OngoingTxnProducerId": opid, "OngoingTxnProducerEpoch": oepoch})

    tid = b["TransactionalId"]
    if tid is not None:
        # KafkaApis: WRITE on the transactional id, then TWO_PHASE_COMMIT for a 2PC producer (KIP-939)
        if not cluster.authorized(req.principal, "TRANSACTIONAL_ID", tid, "WRITE") or (
                b.get("Enable2Pc") and not cluster.authorized(req.principal, "TRANSACTIONAL_ID", tid, "TWO_PHASE_COMMIT")):
            return answer(E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
    elif not (cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE")
              or _can_write_some_topic(cluster, req.principal)):
        return answer(E["CLUSTER_AUTHORIZATION_FAILED"])
    expected = None
    if v >= 3:
        pid, epoch = b["ProducerId"], b["ProducerEpoch"]
        if (pid == -1) != (epoch == -1):
            return answer(E["INVALID_REQUEST"])
        if pid != -1:
            expected = (pid, epoch)
    enable_2pc = bool(b.get("Enable2Pc", False))
    keep = bool(b.get("KeepPreparedTxn", False))
    if keep and not enable_2pc:
        return answer(E["INVALID_REQUEST"])
    r = cluster.txns.init_producer_id(tid, b["TransactionTimeoutMs"], expected, broker=req.broker,
                                      enable_2pc=enable_2pc, keep_prepared=keep)
    return answer(r.error, r.producer_id, r.producer_epoch, r.ongoing_producer_id, r.ongoing_producer_epoch)


# ---- AddPartitionsToTxn -----------------------------------------------------------------------
def _topic_errors(cluster, req: Request, topics: list[dict]) -> tuple[dict, list]:
    """KafkaApis: unauthorized topics -> TOPIC_AUTHORIZATION_FAILED, unknown topics or partitions
    -> UNKNOWN_TOPIC_OR_PARTITION; if any partition failed, the others OPERATION_NOT_ATTEMPTED."""
    errors: dict = {}
    ok: list = []
    for t in topics:
        name = t["Name"]
        for p in t["Partitions"]:
            tp = (name, p)
            if not cluster.authorized(req.principal, "TOPIC", name, "WRITE"):
                errors[tp] = E["TOPIC_AUTHORIZATION_FAILED"]
            elif cluster.topics.partition(name, p) is None:
                errors[tp] = E["UNKNOWN_TOPIC_OR_PARTITION"]
            else:
                ok.append(tp)
    if errors:
        errors.update(dict.fromkeys(ok, OPERATION_NOT_ATTEMPTED))
        ok = []
    return errors, ok


def _topic_results(topics: list[dict], error_of) -> list[dict]:
    out: dict[str, list] = {}
    for t in topics:
        res = out.setdefault(t["Name"], [])
        for p in t["Partitions"]:
            res.append({"PartitionIndex": p, "PartitionErrorCode": error_of((t["Name"], p))})
    return [{"Name": n, "ResultsByPartition": r} for n, r in out.items()]


def _add_one(cluster, req: Request, tid, pid, epoch, topics, verify_only: bool) -> list[dict]:
    v = req.version
    if not cluster.authorized(req.principal, "TRANSACTIONAL_ID", tid or "", "WRITE"):
        return _topic_results(topics, lambda tp: E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
    errors, ok = _topic_errors(cluster, req, topics)
    if errors:
        return _topic_results(topics, lambda tp: errors.get(tp, NONE_))
    if _not_coordinator(cluster, req, tid):
        return _topic_results(topics, lambda tp: E["NOT_COORDINATOR"])
    if verify_only:
        res = cluster.txns.verify_partitions(tid, pid, epoch, ok)

        def err(tp):
            code = _fenced_for(v, 2, res.get(tp, 0))
            if code == E["TRANSACTION_ABORTABLE"] and v < 5:
                code = E["INVALID_TXN_STATE"]
            return code
        return _topic_results(topics, err)
    code = cluster.txns.add_partitions(tid, pid, epoch, ok, cause="add-partitions")
    code = _fenced_for(v, 2, code)
    if code == E["TRANSACTION_ABORTABLE"] and v < 5:
        code = E["INVALID_TXN_STATE"]
    return _topic_results(topics, lambda tp: code)



ERRORS["AddPartitionsToTxn"] = (
    rows(0, ("NOT_COORDINATOR", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CONCURRENT_TRANSACTIONS",
             "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE", "TOPIC_AUTHORIZATION_FAILED",
             "OPERATION_NOT_ATTEMPTED", "UNKNOWN_TOPIC_OR_PARTITION"), "AddPartitionsToTxnResponse.json")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"), "AddPartitionsToTxnResponse.json",
                 _NO_LOADING)
    + rows(0, ("INVALID_REQUEST",), "TransactionCoordinator.handleAddPartitionsToTransaction: an empty "
                                    "transactional id")
    + rows(2, ("PRODUCER_FENCED",), "KIP-588 (AddPartitionsToTxn v2)")
    + rows(4, ("CLUSTER_AUTHORIZATION_FAILED",), "KafkaApis.handleAddPartitionsToTxnRequest: the v4+ batched "
                                                 "form needs CLUSTER_ACTION (KIP-890)")
    + rows(5, ("TRANSACTION_ABORTABLE",), "KIP-890 (AddPartitionsToTxn v5)"))


@handles("AddPartitionsToTxn")
def add_partitions_to_txn(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    if v < 4:
        results = _add_one(cluster, req, b["V3AndBelowTransactionalId"], b["V3AndBelowProducerId"],
                           b["V3AndBelowProducerEpoch"], b["V3AndBelowTopics"], verify_only=False)
        return complete_body("AddPartitionsToTxnResponse", v, {"ThrottleTimeMs": 0,
                                                                "ResultsByTopicV3AndBelow": results})
    # v4+: the broker-to-coordinator batched form (KIP-890), needs CLUSTER_ACTION
    if not cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "CLUSTER_ACTION"):
        return complete_body("AddPartitionsToTxnResponse", v, {
            "ThrottleTimeMs": 0, "ErrorCode": E["CLUSTER_AUTHORIZATION_FAILED"], "ResultsByTransaction": []})
    out = []
    for t in b["Transactions"]:
        out.append({"TransactionalId": t["TransactionalId"],
                    "TopicResults": _add_one(cluster, req, t["TransactionalId"], t["ProducerId"],
                                             t["ProducerEpoch"], t["Topics"], bool(t["VerifyOnly"]))})
    return complete_body("AddPartitionsToTxnResponse", v, {"ThrottleTimeMs": 0, "ErrorCode": 0,
                                                            "ResultsByTransaction": out})


# ---- AddOffsetsToTxn ----------------------------------------------------------------------------
ERRORS["AddOffsetsToTxn"] = (
    rows(0, ("NOT_COORDINATOR", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"),
         "KafkaApis.handleAddOffsetsToTxnRequest")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"),
                 "TransactionCoordinator.handleAddPartitionsToTransaction", _NO_LOADING)
    + rows(0, ("CONCURRENT_TRANSACTIONS", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING", "INVALID_REQUEST"),
           "TransactionCoordinator.handleAddPartitionsToTransaction (the group's __consumer_offsets partition)")
    + rows(2, ("PRODUCER_FENCED",), "AddOffsetsToTxnResponse.json (KIP-588, v2)")
    + kafka_only(4, ("TRANSACTION_ABORTABLE",), "AddOffsetsToTxnResponse.json (KIP-890, v4)",
                 "no AddOffsetsToTxn path of the model's coordinator answers it"))


@handles("AddOffsetsToTxn")
def add_offsets_to_txn(cluster, req: Request) -> dict:
    b, v = req.body, req.version

    def answer(code: int) -> dict:
        return complete_body("AddOffsetsToTxnResponse", v, {"ThrottleTimeMs": 0,
                                                             "ErrorCode": _fenced_for(v, 2, code)})
    tid, group = b["TransactionalId"], b["GroupId"]
    if not cluster.authorized(req.principal, "TRANSACTIONAL_ID", tid, "WRITE"):
        return answer(E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
    if not cluster.authorized(req.principal, "GROUP", group, "READ"):
        return answer(E["GROUP_AUTHORIZATION_FAILED"])
    if _not_coordinator(cluster, req, tid):
        return answer(E["NOT_COORDINATOR"])
    offsets_partition = cluster.coordinator_partition(GROUP_KEY, group)
    return answer(cluster.txns.add_partitions(tid, b["ProducerId"], b["ProducerEpoch"], [offsets_partition],
                                              cause="add-offsets"))


# ---- EndTxn ---------------------------------------------------------------------------------------
ERRORS["EndTxn"] = (
    rows(0, ("NOT_COORDINATOR", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "CONCURRENT_TRANSACTIONS",
             "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE"), "EndTxnResponse.json")
    + kafka_only(0, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"), "EndTxnResponse.json", _NO_LOADING)
    + rows(0, ("INVALID_REQUEST",), "TransactionCoordinator.endTransaction: an empty transactional id")
    + rows(2, ("PRODUCER_FENCED",), "KIP-588 (EndTxn v2)")
    + kafka_only(4, ("TRANSACTION_ABORTABLE",), "KIP-890 (EndTxn v4)",
                 "no EndTxn path of the model's coordinator answers it"))


@handles("EndTxn")
def end_txn(cluster, req: Request) -> dict:
    b, v = req.body, req.version

    def answer(code: int, pid: int = -1, epoch: int = -1) -> dict:
        return complete_body("EndTxnResponse", v, {"ThrottleTimeMs": 0, "ErrorCode": _fenced_for(v, 2, code),
                                                    "ProducerId": pid, "ProducerEpoch": epoch})
    tid = b["TransactionalId"]
    if not cluster.authorized(req.principal, "TRANSACTIONAL_ID", tid, "WRITE"):
        return answer(E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
    if _not_coordinator(cluster, req, tid):
        return answer(E["NOT_COORDINATOR"])
    # KafkaApis: an EndTxn request version > 4 comes from a transaction-version-2 client
    code, pid, epoch = cluster.txns.end_transaction(tid, b["ProducerId"], b["ProducerEpoch"], bool(b["Committed"]),
                                                    tv2=v >= 5)
    return answer(code, pid, epoch)


# ---- WriteTxnMarkers (coordinator -> partition leader) --------------------------------------------
ERRORS["WriteTxnMarkers"] = (
    rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),
         "KafkaApis.handleWriteTxnMarkersRequest (CLUSTER_ACTION; ReplicaManager.appendRecords)")
    + rows(0, ("INVALID_PRODUCER_EPOCH",), "ProducerStateManager: a marker with an older producer epoch"))


@handles("WriteTxnMarkers")
def write_txn_markers(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    allowed = (cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "ALTER")    # KafkaApis: ALTER,
               or cluster.authorized(req.principal, "CLUSTER", "kafka-cluster", "CLUSTER_ACTION"))   # else this
    markers = []
    for m in b["Markers"]:
        topics = []
        for t in m["Topics"]:
            parts = []
            for p in t["PartitionIndexes"]:
                if not allowed:
                    code = E["CLUSTER_AUTHORIZATION_FAILED"]
                else:
                    log = cluster.topics.partition(t["Name"], p)
                    if log is None:
                        code = E["UNKNOWN_TOPIC_OR_PARTITION"]
                    elif log.leader != req.broker:
                        code = E["NOT_LEADER_OR_FOLLOWER"]
                    else:
                        code = write_marker(
                            cluster, t["Name"], p, m["ProducerId"], m["ProducerEpoch"], bool(m["TransactionResult"]),
                            m["CoordinatorEpoch"], transaction_version=m.get("TransactionVersion"),
                            check_epoch=True)
                parts.append({"PartitionIndex": p, "ErrorCode": code})
            topics.append({"Name": t["Name"], "Partitions": parts})
        markers.append({"ProducerId": m["ProducerId"], "Topics": topics})
    return complete_body("WriteTxnMarkersResponse", v, {"Markers": markers})
