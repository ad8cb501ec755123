"""The tools a learner uses on a hanging transaction (KIP-664): DescribeProducers, ListTransactions
and DescribeTransactions, after released Kafka 4.4 (core/src/main/scala/kafka/server/KafkaApis.scala
handleDescribeProducersRequest / handleListTransactionsRequest / handleDescribeTransactionsRequest,
core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala and
TransactionStateManager.listTransactionStates).

    DescribeProducers     per partition leader: each producer it has state for, with the first
                          offset of its open transaction (CurrentTxnStartOffset; -1 if none): the
                          transaction holding the last stable offset back.
    ListTransactions      per transaction coordinator: the transactional ids of the __transaction_state
                          partitions it leads, filtered by state, producer id, age (v1) and a regular
                          expression (v2); only ids the caller may DESCRIBE.
    DescribeTransactions  per transactional id, from its coordinator: state, timeout, start time,
                          producer id and epoch, and the partitions in the transaction the caller may
                          DESCRIBE.

The state comes from the transaction coordinator (kipviz.broker.transactions) and the data path's
producer table (handlers/data.py); nothing here changes it."""
from __future__ import annotations

import re

from ...schema.error_codes import CODE
from ..error_rows import kafka_only, rows
from . import Request, handles
from .metadata import MESSAGES, leader_alive, log_of, model_state, shape, topic_name_problem

ERRORS = {}
_LOADED = "the model's transaction coordinator is always loaded and available"


# ---- DescribeProducers ------------------------------------------------------------------------------
def active_producers(cluster, log) -> list[dict]:
    """ProducerStateManager.activeProducers of one partition, as DescribeProducers lists them."""
    out = []
    for (tid, p, pid), entry in sorted(model_state(cluster)["producers"].items(), key=lambda kv: kv[0][2]):
        if tid != log.topic_id or p != log.partition:
            continue
        epoch, coordinator_epoch = entry["epoch"], -1
        newest = log.last_epoch(pid)                # a marker after the data counts (TV2 bumps the epoch)
        if newest is not None:
            epoch = newest
        if log.has_marker(pid):
            coordinator_epoch = 0                   # the kit's markers are written at coordinator epoch 0
        batches = entry["batches"]
        out.append({"ProducerId": pid, "ProducerEpoch": epoch, "LastSequence": batches[-1][1] if batches else -1,
                    "LastTimestamp": entry.get("t", -1), "CoordinatorEpoch": coordinator_epoch,
                    "CurrentTxnStartOffset": log.open_txns.get(pid, -1)})
    return out


ERRORS["DescribeProducers"] = rows(0, (
    "INVALID_TOPIC_EXCEPTION", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),
    "KafkaApis.handleDescribeProducersRequest, ReplicaManager.activeProducerState")


@handles("DescribeProducers")
def describe_producers(cluster, req: Request) -> dict:
    topics = []
    for t in req.body.get("Topics") or []:
        name = t.get("Name") or ""
        topic = cluster.topics.get(name)
        problem = topic_name_problem(name)
        if problem:
            error = ("INVALID_TOPIC_EXCEPTION", problem)
        elif not cluster.authorized(req.principal, "TOPIC", name, "READ"):
            error = ("TOPIC_AUTHORIZATION_FAILED", MESSAGES[CODE["TOPIC_AUTHORIZATION_FAILED"]])
        elif topic is None:
            error = ("UNKNOWN_TOPIC_OR_PARTITION", MESSAGES[CODE["UNKNOWN_TOPIC_OR_PARTITION"]])
        else:
            error = None
        parts = []
        for idx in t.get("PartitionIndexes") or []:
            log = log_of(topic, idx) if error is None else None
            if error is not None:
                code, message = CODE[error[0]], error[1]
            elif log is None:
                code, message = CODE["UNKNOWN_TOPIC_OR_PARTITION"], MESSAGES[CODE["UNKNOWN_TOPIC_OR_PARTITION"]]
            elif log.leader != req.broker or not leader_alive(cluster, log):
                code, message = CODE["NOT_LEADER_OR_FOLLOWER"], None
            else:
                parts.append({"PartitionIndex": idx, "ErrorCode": 0, "ErrorMessage": None,
                              "ActiveProducers": active_producers(cluster, log)})
                continue
            parts.append({"PartitionIndex": idx, "ErrorCode": code, "ErrorMessage": message, "ActiveProducers": []})
        topics.append({"Name": name, "Partitions": parts})
    return shape("DescribeProducersResponse", req.version, {"ThrottleTimeMs": 0, "Topics": topics})


# ---- ListTransactions -------------------------------------------------------------------------------
def _coordinated_here(cluster, broker: int) -> list:
    """The transactions whose __transaction_state partition `broker` leads, by transactional id."""
    txns = cluster.txns
    return [txns.transactions[t] for t in sorted(txns.transactions) if txns.coordinator_broker(t) == broker]


ERRORS["ListTransactions"] = (
    kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"), "TransactionStateManager."
               "listTransactionStates", _LOADED)
    + rows(2, ("INVALID_REGULAR_EXPRESSION",), "KIP-1152 (ListTransactions v2 TransactionalIdPattern): a pattern "
                                              "that does not compile"))


@handles("ListTransactions")
def list_transactions(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    states = b.get("StateFilters") or []
    pids = set(b.get("ProducerIdFilters") or [])
    duration = b.get("DurationFilter", -1) if v >= 1 else -1
    pattern = b.get("TransactionalIdPattern") if v >= 2 else None
    known = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
             "PrepareEpochFence")
    regex = None
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error:        # InvalidRegularExpression fails the whole request
            return shape("ListTransactionsResponse", v, {"ThrottleTimeMs": 0, "ErrorCode":
                                                         CODE["INVALID_REGULAR_EXPRESSION"],
                                                         "UnknownStateFilters": [], "TransactionStates": []})
    out = []
    for txn in _coordinated_here(cluster, req.broker):
        if txn.state == "Dead" or (pids and txn.producer_id not in pids) or (states and txn.state not in states):
            continue
        if duration >= 0 and cluster.now - txn.start_ms <= duration:
            continue
        if regex is not None and not regex.fullmatch(txn.transactional_id):
            continue
        if cluster.authorized(req.principal, "TRANSACTIONAL_ID", txn.transactional_id, "DESCRIBE"):
            out.append({"TransactionalId": txn.transactional_id, "ProducerId": txn.producer_id,
                        "TransactionState": txn.state})
    return shape("ListTransactionsResponse", v, {
        "ThrottleTimeMs": 0, "ErrorCode": 0, "UnknownStateFilters": [s for s in states if s not in known],
        "TransactionStates": out})


# ---- DescribeTransactions ---------------------------------------------------------------------------
ERRORS["DescribeTransactions"] = (
    rows(0, ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "INVALID_REQUEST", "NOT_COORDINATOR",
             "TRANSACTIONAL_ID_NOT_FOUND"), "KafkaApis.handleDescribeTransactionsRequest, "
                                            "TransactionCoordinator.handleDescribeTransactions")
    + kafka_only(0, ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"),
                 "TransactionCoordinator.handleDescribeTransactions", _LOADED))


@handles("DescribeTransactions")
def describe_transactions(cluster, req: Request) -> dict:
    out = []
    for tid in req.body.get("TransactionalIds") or []:
        state = {"ErrorCode": 0, "TransactionalId": tid, "TransactionState": "", "TransactionTimeoutMs": 0,
                 "TransactionStartTimeMs": -1, "ProducerId": -1, "ProducerEpoch": -1, "Topics": []}
        out.append(state)
        if not cluster.authorized(req.principal, "TRANSACTIONAL_ID", tid, "DESCRIBE"):
            state["ErrorCode"] = CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]
            continue
        if not tid:
            state["ErrorCode"] = CODE["INVALID_REQUEST"]
            continue
        if cluster.txns.coordinator_broker(tid) != req.broker:
            state["ErrorCode"] = CODE["NOT_COORDINATOR"]
            continue
        txn = cluster.txns.transactions.get(tid)
        if txn is None or txn.state == "Dead":
            state["ErrorCode"] = CODE["TRANSACTIONAL_ID_NOT_FOUND"]
            continue
        topics: dict[str, list[int]] = {}
        for topic, p in txn.partitions:
            # only the partitions the caller may DESCRIBE are shown
            if cluster.authorized(req.principal, "TOPIC", topic, "DESCRIBE"):
                topics.setdefault(topic, []).append(p)
        state.update(TransactionState=txn.state, TransactionTimeoutMs=txn.timeout_ms,
                     TransactionStartTimeMs=txn.start_ms, ProducerId=txn.producer_id,
                     ProducerEpoch=txn.producer_epoch,
                     Topics=[{"Topic": t, "Partitions": ps} for t, ps in topics.items()])
    return shape("DescribeTransactionsResponse", req.version, {"ThrottleTimeMs": 0, "TransactionStates": out})
