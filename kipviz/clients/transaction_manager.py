"""The producer's transactions, as Kafka's producer/internals/TransactionManager.java (KIP-98,
KIP-890 transaction version 2, KIP-1319 for TxnOffsetCommit v6).

InitProducerId (retried on CONCURRENT_TRANSACTIONS), then per transaction: under transaction
version 1 AddPartitionsToTxn before the first write to a partition and AddOffsetsToTxn before
TxnOffsetCommit; under version 2 Produce v12+ and TxnOffsetCommit v5+ add them on the broker and
EndTxn v5 hands back the bumped epoch. A transaction nothing was added to ends without EndTxn."""
from __future__ import annotations

from ..schema import events as ev
from ..schema.error_codes import NAME
from .base import NETWORK_EXCEPTION, E, Retry
from .producer_errors import (
    COORDINATOR_MOVED,
    FENCED,
    OPERATION_NOT_ATTEMPTED_CODE,
    AbortableError,
    CommitFailedError,
    FatalError,
    IllegalStateError,
    ProducerFencedError,
    classify_txn_offset_commit_error,
)


class TransactionManager:
    """The producer's transactional state (the partitions and offsets added, whether anything was)
    and the coordinator calls that move it; its Producer keeps the state name, ids and errors."""

    def __init__(self, producer):
        self.producer = producer
        self.partitions: set[tuple[str, int]] = set()
        self.started = False          # something was added: EndTxn must be sent

    def init_transactions(self) -> tuple[int, int]:
        """InitProducerId: the producer id and epoch (retried on CONCURRENT_TRANSACTIONS, e.g.
        while the coordinator aborts what a previous instance left open)."""
        pr = self.producer
        pr.require("UNINITIALIZED", "READY", what="init transactions")
        api = "InitProducerId"

        def attempt():
            v = pr.version(api)
            broker = pr.txn_coordinator() if pr.transactional_id else pr.bootstrap_broker
            body = {"TransactionalId": pr.transactional_id,
                    "TransactionTimeoutMs": pr.transaction_timeout_ms,
                    "ProducerId": -1, "ProducerEpoch": -1}
            resp = pr.call(api, v, body, broker)
            code = resp["ErrorCode"]
            if code == 0:
                return resp["ProducerId"], resp["ProducerEpoch"]
            if code in COORDINATOR_MOVED:
                raise Retry(code, refresh="coordinator")
            if code in (E["CONCURRENT_TRANSACTIONS"], E["COORDINATOR_LOAD_IN_PROGRESS"], NETWORK_EXCEPTION):
                raise Retry(code)
            if code in FENCED:
                raise pr.fail(ProducerFencedError(code, api=api))
            raise pr.fail(FatalError(code, api=api))
        pid, epoch = pr.retrying(api, attempt)
        self.set_ids(pid, epoch, "InitProducerId")
        self.reset()
        pr.set_state("READY", "initialized")
        return pid, epoch

    def set_ids(self, pid: int, epoch: int, why: str) -> None:
        """The producer id and epoch are now (pid, epoch); sequences restart at 0 (ProducerIdSet)."""
        pr = self.producer
        if (pid, epoch) != (pr.producer_id, pr.producer_epoch):
            pr.did(ev.ProducerIdSet, producer_id=pid, producer_epoch=epoch, previous_id=pr.producer_id,
                    previous_epoch=pr.producer_epoch, reason=why)
            pr.producer_id, pr.producer_epoch = pid, epoch
            pr._sequences.clear()       # a new epoch starts its sequences at 0

    def reset(self) -> None:
        """Nothing added to the transaction."""
        self.partitions.clear()
        self.started = False

    def begin_transaction(self) -> None:
        """Producer.begin_transaction."""
        pr = self.producer
        pr.require("READY", what="begin a transaction")
        if not pr.transactional_id:
            raise IllegalStateError("not a transactional producer (no transactional.id)")
        self.reset()
        pr.set_state("IN_TRANSACTION", "begin_transaction")

    def _txn_error(self, code: int, api: str) -> None:
        """Raise for a coordinator answer the transaction cannot survive (or Retry)."""
        pr = self.producer
        if code in COORDINATOR_MOVED:
            raise Retry(code, refresh="coordinator")
        if code in (E["CONCURRENT_TRANSACTIONS"], E["COORDINATOR_LOAD_IN_PROGRESS"], NETWORK_EXCEPTION,
                    E["UNKNOWN_TOPIC_OR_PARTITION"], OPERATION_NOT_ATTEMPTED_CODE):
            raise Retry(code, refresh="metadata" if code == E["UNKNOWN_TOPIC_OR_PARTITION"] else None)
        if code in FENCED:
            raise pr.fail(ProducerFencedError(code, api=api))
        if code in (E["TOPIC_AUTHORIZATION_FAILED"], E["GROUP_AUTHORIZATION_FAILED"],
                    E["TRANSACTION_ABORTABLE"], E["INVALID_PRODUCER_ID_MAPPING"]):
            raise pr.fail(AbortableError(code, api=api))
        raise pr.fail(FatalError(code, api=api))

    def _add_partition(self, tp: tuple[str, int]) -> None:
        """Transaction version 1: AddPartitionsToTxn before the first write to a partition."""
        pr = self.producer
        api = "AddPartitionsToTxn"

        def attempt():
            v = pr.version(api)
            resp = pr.call(api, v, {"V3AndBelowTransactionalId": pr.transactional_id,
                                     "V3AndBelowProducerId": pr.producer_id,
                                     "V3AndBelowProducerEpoch": pr.producer_epoch,
                                     "V3AndBelowTopics": [{"Name": tp[0], "Partitions": [tp[1]]}]},
                              pr.txn_coordinator())
            codes = [p["PartitionErrorCode"] for t in resp["ResultsByTopicV3AndBelow"]
                     for p in t["ResultsByPartition"]]
            bad = next((c for c in codes if c and c != OPERATION_NOT_ATTEMPTED_CODE), 0) or \
                next((c for c in codes if c), 0)
            if bad:
                self._txn_error(bad, api)
        pr.retrying(api, attempt)
        self.partitions.add(tp)
        self.started = True
        pr.did(ev.PartitionAdded, topic=tp[0], partition=tp[1], via="AddPartitionsToTxn")


    def join(self, tp: tuple) -> tuple:
        """TV1: AddPartitionsToTxn before the first write to tp; TV2: Produce adds it on the broker."""
        pr = self.producer
        if pr.transactional_id and not pr.tv2 and tp not in self.partitions:
            self._add_partition(tp)
        if pr.transactional_id and pr.tv2 and not self.started:
            self.started = True
        return tp

    # ---- offsets --------------------------------------------------------------------------------
    def send_offsets_to_transaction(self, offsets: dict, group_metadata) -> None:
        """Stage consumer offsets in the transaction: {(topic, partition): offset or
        (offset, metadata)}; group_metadata {group_id, generation_id or member_epoch, member_id,
        group_instance_id} (dict or object with those attributes)."""
        pr = self.producer
        pr.require("IN_TRANSACTION", what="send offsets")
        gm = _group_metadata(group_metadata)
        group = gm["group_id"]
        if not pr.tv2:
            self._add_offsets(group)
        else:
            self.started = True
        pending = {tuple(tp): _offset_of(o) for tp, o in offsets.items()}
        pr.retrying("TxnOffsetCommit", lambda: self._txn_offset_commit_once(pending, gm))
        pr.did(ev.OffsetsSent, group_id=group, partitions=tuple(sorted(offsets)))

    def _add_offsets(self, group: str) -> None:
        pr = self.producer
        api = "AddOffsetsToTxn"

        def attempt():
            v = pr.version(api)
            resp = pr.call(api, v, {"TransactionalId": pr.transactional_id, "ProducerId": pr.producer_id,
                                     "ProducerEpoch": pr.producer_epoch, "GroupId": group},
                              pr.txn_coordinator())
            if resp["ErrorCode"]:
                self._txn_error(resp["ErrorCode"], api)
        pr.retrying(api, attempt)
        self.started = True
        pr.did(ev.OffsetsPartitionAdded, group_id=group, via=api)

    def choose_txn_offset_commit_version(self, topics) -> tuple[int, dict]:
        """KIP-1319: (version, {topic: topic id}) — v6 only if the broker serves it and every
        topic has a known topic id, else v5 (or lower) for the whole request."""
        pr = self.producer
        v = pr.version("TxnOffsetCommit")
        ids: dict = {}
        if v >= 6:
            missing = []
            for t in sorted(set(topics)):
                info = pr.topic_info(t)          # cached ids are reused (KIP-1319); refreshed on errors
                tid = info["id"] if info else None
                if tid is None:
                    missing.append(t)
                else:
                    ids[t] = tid
            if missing:
                pr.did(ev.TxnOffsetCommitFallback, version=5, reason="topic id unknown", topics=tuple(missing))
                return 5, {}
            pr.did(ev.TxnOffsetCommitVersionChosen, version=6, reason="broker serves v6, all topic ids known")
            return 6, ids
        pr.did(ev.TxnOffsetCommitVersionChosen, version=v,
                reason=f"broker serves up to v{pr.broker_versions['TxnOffsetCommit'][1]}"
                + ("" if pr.tv2 else ", transaction version 1 caps it at v4"))
        return v, {}

    def _txn_offset_commit_once(self, pending: dict, gm: dict) -> None:
        pr = self.producer
        api = "TxnOffsetCommit"
        group = gm["group_id"]
        broker = pr.group_coordinator(group)
        v, ids = self.choose_txn_offset_commit_version(t for t, _ in pending)
        by_topic: dict[str, list] = {}
        for (t, p), (off, meta, leader_epoch) in pending.items():
            by_topic.setdefault(t, []).append({"PartitionIndex": p, "CommittedOffset": off,
                                               "CommittedLeaderEpoch": leader_epoch, "CommittedMetadata": meta})
        topics = [({"TopicId": ids[t]} if v >= 6 else {"Name": t}) | {"Partitions": ps}
                  for t, ps in by_topic.items()]
        names = {tid: t for t, tid in ids.items()}
        resp = pr.call(api, v, {"TransactionalId": pr.transactional_id, "GroupId": group,
                                 "ProducerId": pr.producer_id, "ProducerEpoch": pr.producer_epoch,
                                 "GenerationIdOrMemberEpoch": gm["generation_id"], "MemberId": gm["member_id"],
                                 "GroupInstanceId": gm["group_instance_id"], "Topics": topics}, broker)
        retry: int | None = None
        refresh = None
        for t in resp["Topics"]:
            name = names.get(t.get("TopicId")) if v >= 6 else t.get("Name")
            for p in t["Partitions"]:
                code = p["ErrorCode"]
                kind = classify_txn_offset_commit_error(code)
                tp = (name, p["PartitionIndex"])
                if kind == "ok":
                    pending.pop(tp, None)
                    continue
                pr.did(ev.TxnOffsetCommitFailed, topic=name, partition=tp[1], error=NAME.get(code, str(code)),
                        handling=kind, version=v)
                if kind == "coordinator":
                    retry, refresh = code, "group:" + group
                elif kind == "retriable":
                    retry = code
                    if code in (E["UNKNOWN_TOPIC_ID"], E["UNKNOWN_TOPIC_OR_PARTITION"]):
                        refresh = refresh or "metadata"
                elif kind == "fenced":
                    raise pr.fail(ProducerFencedError(code, api=api))
                elif kind == "commit-failed":
                    raise pr.fail(CommitFailedError(code, api=api))
                elif kind == "abortable":
                    raise pr.fail(AbortableError(code, api=api))
                else:
                    raise pr.fail(FatalError(code, "unexpected error", api=api))
        if pending:
            # partitions still pending (retriable errors, or missing from the answer): re-enqueue
            raise Retry(E["UNKNOWN_SERVER_ERROR"] if retry is None else retry, refresh=refresh)
    # ---- commit / abort --------------------------------------------------------------------------
    def commit_transaction(self) -> None:
        """Producer.commit_transaction (refused after an abortable error)."""
        pr = self.producer
        if pr.state == "ABORTABLE_ERROR":
            raise AbortableError(pr.last_error.code if pr.last_error else E["TRANSACTION_ABORTABLE"],
                                 "cannot commit after an abortable error: abort the transaction",
                                 api="EndTxn")
        pr.require("IN_TRANSACTION", what="commit")
        self.end(True)

    def abort_transaction(self) -> None:
        """Producer.abort_transaction."""
        pr = self.producer
        pr.require("IN_TRANSACTION", "ABORTABLE_ERROR", what="abort")
        self.end(False)

    def end(self, commit: bool) -> None:
        """EndTxn(commit or abort), or none when nothing was added; READY after."""
        pr = self.producer
        api = "EndTxn"
        what = "commit" if commit else "abort"
        if not self.started:
            # TransactionManager: no partition or offsets were added, so there is nothing to end
            pr.did(ev.EndTxnSkipped, result=what, reason="nothing was added to the transaction")
            self.reset()
            pr.set_state("READY", what)
            return

        def attempt():
            v = pr.version(api)
            resp = pr.call(api, v, {"TransactionalId": pr.transactional_id, "ProducerId": pr.producer_id,
                                     "ProducerEpoch": pr.producer_epoch, "Committed": commit},
                              pr.txn_coordinator())
            code = resp["ErrorCode"]
            if code:
                if code == E["INVALID_TXN_STATE"]:
                    raise pr.fail(FatalError(code, api=api))
                self._txn_error(code, api)
            return v, resp
        v, resp = pr.retrying(api, attempt)
        if v >= 5 and resp.get("ProducerId", -1) >= 0:
            self.set_ids(resp["ProducerId"], resp["ProducerEpoch"], f"EndTxn v{v} ({what})")
        pr.did(ev.TransactionEnded, result=what, version=v)
        self.reset()
        pr.last_error = None
        pr.set_state("READY", what)


def _group_metadata(gm) -> dict:
    get = gm.get if isinstance(gm, dict) else (lambda k, d=None: getattr(gm, k, d))
    group = get("group_id")
    if group is None:
        raise IllegalStateError("group_metadata needs a group_id")
    generation = get("generation_id")
    if generation is None:
        generation = get("member_epoch", -1)
    return {"group_id": group, "generation_id": -1 if generation is None else generation,
            "member_id": get("member_id", "") or "", "group_instance_id": get("group_instance_id")}


def _offset_of(o) -> tuple[int, str | None, int]:
    """offset, or (offset, metadata), or {"offset", "metadata", "leader_epoch"}."""
    if isinstance(o, dict):
        return o["offset"], o.get("metadata", ""), o.get("leader_epoch", -1)
    if isinstance(o, (tuple, list)):
        return o[0], (o[1] if len(o) > 1 else ""), (o[2] if len(o) > 2 else -1)
    return int(o), "", -1
