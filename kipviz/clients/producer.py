"""A sans-IO model of Kafka's transactional producer, talking to a kipviz Cluster in real frames.

    p = Producer(cluster, "tx-1", client_id="app")
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"k", b"v")
    p.send_offsets_to_transaction({("in", 0): 42}, {"group_id": "g", "generation_id": 3,
                                                     "member_id": "m-1", "group_instance_id": None})
    p.commit_transaction()          # or p.abort_transaction()

Every request is encoded with kipviz.codec and answered by `cluster.handle(frame)`: bytes in,
bytes out. Decisions are recorded as typed ClientDid events (schema/events.py: VersionChosen,
Retried, ClientError, ProducerIdSet, Sent, TransactionEnded, ...). Waiting (retry backoff) moves the cluster's virtual clock.

What it follows (Kafka's `TransactionManager`, KIP-890, KIP-1319 for TxnOffsetCommit v6):

* versions: ApiVersions first, then min(client max, broker max) per API. The client max is the
  kit's newest version that is not *proposed* (AddPartitionsToTxn stops at v3: v4+ is the
  broker form). Without transaction version 2 (the `transaction.version` finalized feature),
  EndTxn stops at v4, TxnOffsetCommit at v4 and Produce at v11, and the producer adds partitions
  and offsets explicitly (AddPartitionsToTxn / AddOffsetsToTxn). With TV2 it does neither: Produce
  v12+ and TxnOffsetCommit v5+ add them, and EndTxn v5 hands back the bumped epoch.
* KIP-1319: TxnOffsetCommit v6 only when the broker serves it AND every topic of the offsets has a
  known topic id (Metadata v10+); otherwise v5 for the whole request. v6 answers come back by
  topic id and are mapped to names through the ids this request sent.
* errors: retriable ones (CONCURRENT_TRANSACTIONS, COORDINATOR_*, NOT_COORDINATOR,
  UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID, ...) are retried after `retry_backoff_ms`;
  GROUP_ID_NOT_FOUND / STALE_MEMBER_EPOCH / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID raise
  CommitFailedError (abortable); PRODUCER_FENCED / INVALID_PRODUCER_EPOCH raise
  ProducerFencedError (fatal)."""
from __future__ import annotations

import itertools
from typing import NamedTuple

from ..codec.fit import complete_body  # noqa: F401 - re-exported
from ..errors import KipvizError
from ..records import write_batch
from ..schema import events as ev
from ..schema.error_codes import NAME, RETRIABLE
from .base import (  # noqa: F401 - re-exported
    CLIENT_MAX,
    NETWORK_EXCEPTION,
    ClientBase,
    E,
    Retry,
    client_max_version,
    client_min_version,
    error_name_code,
    error_text,
)

DUPLICATE_SEQUENCE_NUMBER = 46

TV1_MAX = {"EndTxn": 4, "TxnOffsetCommit": 4, "Produce": 11}


# ---- errors -------------------------------------------------------------------------------------
class ProducerError(KipvizError):
    """A producer call failed with a Kafka error: `.error` is its name, `.code` the number."""

    def __init__(self, error: str | int, message: str = "", *, api: str | None = None):
        name, code = error_name_code(error)
        self.error, self.code, self.api = name, code, api
        super().__init__(error_text(name, api, message))


class AbortableError(ProducerError):
    """The transaction cannot commit: abort it (abort_transaction) and carry on."""


class CommitFailedError(AbortableError):
    """The group rejected the offsets (rebalance, unknown member, stale epoch): abort."""


class FatalError(ProducerError):
    """The producer cannot go on: close it and create a new one."""


class ProducerFencedError(FatalError):
    """Another producer with the same transactional.id (or the coordinator) took over."""


class UnsupportedVersionError(FatalError):
    """The broker serves no version of an API this client can use."""


class RetriesExhaustedError(ProducerError):
    """A retriable error persisted through every retry (Kafka would time out): call again or abort."""


class IllegalStateError(ProducerError):
    """The call is not allowed in the producer's current state (Kafka's IllegalStateException)."""

    def __init__(self, message: str):
        super().__init__("ILLEGAL_STATE", message)


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int


# ---- helpers ------------------------------------------------------------------------------------
def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (the default partitioner's hash), as a signed int32."""
    m, r = 0x5BD1E995, 24
    n = len(data)
    h = (0x9747B28C ^ n) & 0xFFFFFFFF
    for i in range(n // 4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest, idx = n % 4, n & ~3
    if rest == 3:
        h ^= data[idx + 2] << 16
    if rest >= 2:
        h ^= data[idx + 1] << 8
    if rest >= 1:
        h ^= data[idx]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def default_partition(key: bytes, partitions: int) -> int:
    """BuiltInPartitioner for keyed records: toPositive(murmur2(key)) % partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


# TxnOffsetCommitHandler's classification (TransactionManager.java, KIP-1319)
COMMIT_FAILED = frozenset(E[n] for n in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "GROUP_ID_NOT_FOUND",
                                          "STALE_MEMBER_EPOCH"))
ABORTABLE_OFFSET_ERRORS = frozenset(E[n] for n in ("GROUP_AUTHORIZATION_FAILED", "FENCED_INSTANCE_ID",
                                                    "TRANSACTION_ABORTABLE"))
FENCED = frozenset((E["PRODUCER_FENCED"], E["INVALID_PRODUCER_EPOCH"]))
COORDINATOR_MOVED = frozenset((E["COORDINATOR_NOT_AVAILABLE"], E["NOT_COORDINATOR"]))


def classify_txn_offset_commit_error(code: int) -> str:
    """"ok", "retriable", "coordinator" (find it again, then retry), "commit-failed",
    "abortable", "fenced" or "fatal" — how the producer treats a TxnOffsetCommit error."""
    if code == 0:
        return "ok"
    if code in COORDINATOR_MOVED:
        return "coordinator"
    if code in FENCED:
        return "fenced"
    if code in COMMIT_FAILED:
        return "commit-failed"
    if code in ABORTABLE_OFFSET_ERRORS:
        return "abortable"
    if code in RETRIABLE or code in (E["UNKNOWN_TOPIC_ID"], E["COORDINATOR_LOAD_IN_PROGRESS"]):
        return "retriable"
    return "fatal"


# ---- the producer --------------------------------------------------------------------------------
class Producer(ClientBase):
    SOFTWARE_NAME = "kipviz-producer"
    STATES = ("UNINITIALIZED", "READY", "IN_TRANSACTION", "ABORTABLE_ERROR", "FATAL_ERROR")

    def __init__(self, cluster, transactional_id: str | None = None, *, client_id: str = "producer-1",
                 transaction_timeout_ms: int = 60000, bootstrap_broker: int = 0,
                 principal: str = "User:ANONYMOUS", retries: int = 20, retry_backoff_ms: int = 100,
                 client_versions: dict[str, int] | None = None):
        super().__init__(cluster, client_id, bootstrap_broker=bootstrap_broker, principal=principal,
                         retries=retries, retry_backoff_ms=retry_backoff_ms, client_versions=client_versions)
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = "UNINITIALIZED"
        self.producer_id = -1
        self.producer_epoch = -1
        self.tv2 = False
        self.last_error: ProducerError | None = None
        self._group_coordinators: dict[str, int] = {}
        self._txn_partitions: set[tuple[str, int]] = set()
        self._transaction_started = False
        self._sequences: dict[tuple[str, int], int] = {}
        self._round_robin = itertools.count()

    # ---- ClientBase hooks --------------------------------------------------------------------------
    def _unsupported(self, api: str, message: str) -> ProducerError:
        return self._fail(UnsupportedVersionError("UNSUPPORTED_VERSION", message, api=api))

    def _api_versions_failed(self, code: int) -> ProducerError:
        return FatalError(code, api="ApiVersions")

    def _retries_exhausted(self, code: int, message: str, api: str) -> ProducerError:
        return RetriesExhaustedError(code, message, api=api)

    def _coordinator_error(self, code: int, api: str) -> ProducerError:
        if code == E["GROUP_AUTHORIZATION_FAILED"]:
            return self._fail(AbortableError(code, api=api))
        return self._fail(FatalError(code, api=api))      # TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...

    def _transaction_version(self, resp: dict) -> int:
        tv = 0
        for f in resp.get("FinalizedFeatures") or []:
            if f["Name"] == "transaction.version":
                tv = f["MaxVersionLevel"]
        self.tv2 = tv >= 2
        return tv

    def _metadata_extra(self, version: int) -> dict:
        return {"metadata_version": version}

    def _refresh(self, refresh: str | None) -> None:
        if refresh and refresh.startswith("group:"):
            self._group_coordinators.pop(refresh[6:], None)
        else:
            super()._refresh(refresh)

    # ---- state ----------------------------------------------------------------------------------
    def _fail(self, err: ProducerError) -> ProducerError:
        """Move to the error state the exception's class implies and return it for raising."""
        self.last_error = err
        if isinstance(err, FatalError):
            self._set_state("FATAL_ERROR", err.error)
        elif isinstance(err, AbortableError) and self.state == "IN_TRANSACTION":
            self._set_state("ABORTABLE_ERROR", err.error)
        self._did(ev.ClientError, error=err.error, code=err.code, api=err.api, error_class=type(err).__name__)
        return err

    def _require(self, *states: str, what: str) -> None:
        if self.state == "FATAL_ERROR":
            raise IllegalStateError(f"cannot {what}: the producer hit a fatal error ({self.last_error})")
        if self.state not in states:
            raise IllegalStateError(f"cannot {what} in state {self.state}")

    # ---- versions ------------------------------------------------------------------------------
    def _client_max(self, api: str) -> int:
        if api == "TxnShareAcknowledge":     # only proposed versions exist (KIP-1289): v0
            return self._client_max_share_ack()
        mine = super()._client_max(api)
        if not self.tv2 and api in TV1_MAX:
            mine = min(mine, TV1_MAX[api])
        return mine

    def _client_max_share_ack(self) -> int:
        return self.client_versions.get("TxnShareAcknowledge", 0)

    def version(self, api: str, cap: int | None = None) -> int:
        """min(client max, broker max), or UnsupportedVersionError."""
        return self._choose_version(api, cap=cap)

    # ---- coordinators and metadata ----------------------------------------------------------------
    def _txn_coordinator(self) -> int:
        if self._coordinator is None:
            self._coordinator = self._find_coordinator(1, self.transactional_id)
        return self._coordinator

    def _group_coordinator(self, group: str) -> int:
        if group not in self._group_coordinators:
            self._group_coordinators[group] = self._find_coordinator(0, group)
        return self._group_coordinators[group]

    # ---- transactions ------------------------------------------------------------------------------
    def init_transactions(self) -> tuple[int, int]:
        """InitProducerId: the producer id and epoch (retried on CONCURRENT_TRANSACTIONS, e.g.
        while the coordinator aborts what a previous instance left open)."""
        self._require("UNINITIALIZED", "READY", what="init transactions")
        api = "InitProducerId"

        def attempt():
            v = self.version(api)
            broker = self._txn_coordinator() if self.transactional_id else self.bootstrap_broker
            body = {"TransactionalId": self.transactional_id,
                    "TransactionTimeoutMs": self.transaction_timeout_ms,
                    "ProducerId": -1, "ProducerEpoch": -1}
            resp = self._call(api, v, body, broker)
            code = resp["ErrorCode"]
            if code == 0:
                return resp["ProducerId"], resp["ProducerEpoch"]
            if code in COORDINATOR_MOVED:
                raise Retry(code, refresh="coordinator")
            if code in (E["CONCURRENT_TRANSACTIONS"], E["COORDINATOR_LOAD_IN_PROGRESS"], NETWORK_EXCEPTION):
                raise Retry(code)
            if code in FENCED:
                raise self._fail(ProducerFencedError(code, api=api))
            raise self._fail(FatalError(code, api=api))
        pid, epoch = self._retrying(api, attempt)
        self._set_ids(pid, epoch, "InitProducerId")
        self._reset_transaction()
        self._set_state("READY", "initialized")
        return pid, epoch

    def _set_ids(self, pid: int, epoch: int, why: str) -> None:
        if (pid, epoch) != (self.producer_id, self.producer_epoch):
            self._did(ev.ProducerIdSet, producer_id=pid, producer_epoch=epoch, previous_id=self.producer_id,
                      previous_epoch=self.producer_epoch, reason=why)
            self.producer_id, self.producer_epoch = pid, epoch
            self._sequences.clear()       # a new epoch starts its sequences at 0

    def _reset_transaction(self) -> None:
        self._txn_partitions.clear()
        self._transaction_started = False

    def begin_transaction(self) -> None:
        self._require("READY", what="begin a transaction")
        if not self.transactional_id:
            raise IllegalStateError("not a transactional producer (no transactional.id)")
        self._reset_transaction()
        self._set_state("IN_TRANSACTION", "begin_transaction")

    def _txn_error(self, code: int, api: str) -> None:
        """Raise for a coordinator answer the transaction cannot survive (or Retry)."""
        if code in COORDINATOR_MOVED:
            raise Retry(code, refresh="coordinator")
        if code in (E["CONCURRENT_TRANSACTIONS"], E["COORDINATOR_LOAD_IN_PROGRESS"], NETWORK_EXCEPTION,
                    E["UNKNOWN_TOPIC_OR_PARTITION"], OPERATION_NOT_ATTEMPTED_CODE):
            raise Retry(code, refresh="metadata" if code == E["UNKNOWN_TOPIC_OR_PARTITION"] else None)
        if code in FENCED:
            raise self._fail(ProducerFencedError(code, api=api))
        if code in (E["TOPIC_AUTHORIZATION_FAILED"], E["GROUP_AUTHORIZATION_FAILED"],
                    E["TRANSACTION_ABORTABLE"], E["INVALID_PRODUCER_ID_MAPPING"]):
            raise self._fail(AbortableError(code, api=api))
        raise self._fail(FatalError(code, api=api))

    def _add_partition(self, tp: tuple[str, int]) -> None:
        """Transaction version 1: AddPartitionsToTxn before the first write to a partition."""
        api = "AddPartitionsToTxn"

        def attempt():
            v = self.version(api)
            resp = self._call(api, v, {"V3AndBelowTransactionalId": self.transactional_id,
                                       "V3AndBelowProducerId": self.producer_id,
                                       "V3AndBelowProducerEpoch": self.producer_epoch,
                                       "V3AndBelowTopics": [{"Name": tp[0], "Partitions": [tp[1]]}]},
                              self._txn_coordinator())
            codes = [p["PartitionErrorCode"] for t in resp["ResultsByTopicV3AndBelow"]
                     for p in t["ResultsByPartition"]]
            bad = next((c for c in codes if c and c != OPERATION_NOT_ATTEMPTED_CODE), 0) or \
                next((c for c in codes if c), 0)
            if bad:
                self._txn_error(bad, api)
        self._retrying(api, attempt)
        self._txn_partitions.add(tp)
        self._transaction_started = True
        self._did(ev.PartitionAdded, topic=tp[0], partition=tp[1], via="AddPartitionsToTxn")

    def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers=None) -> RecordMetadata:
        """Produce one record (one batch) and wait for the leader's answer."""
        self._ready_to_send()
        info = self.topic_info(topic)
        if info is None:
            info = self._retrying("Metadata", lambda: self._need_topic(topic))
        if partition is None:
            n = len(info["partitions"])
            partition = default_partition(key, n) if key is not None else next(self._round_robin) % n
        tp = self._join_transaction((topic, partition))
        return self._retrying("Produce", lambda: self._produce_once(tp, [(key, value, headers)]))

    def send_batch(self, topic: str, partition: int, records) -> RecordMetadata | None:
        """Produce (key, value[, headers]) records to one partition as ONE record batch in one Produce
        request, as Kafka's RecordAccumulator batches per partition after linger.ms (long workloads
        need that); returns the first record's metadata, None for no records. Errors as send()."""
        records = list(records)
        if not records:
            return None
        self._ready_to_send()
        # (a Metadata round trip that fails is retried like any other, also the first one)
        self._retrying("Metadata", lambda: self.topic_info(topic) or self._need_topic(topic))
        tp = self._join_transaction((topic, partition))
        return self._retrying("Produce", lambda: self._produce_once(tp, records, batched=True))

    def _ready_to_send(self) -> None:
        if self.transactional_id:
            self._require("IN_TRANSACTION", what="send")
        else:
            self._require("READY", "UNINITIALIZED", what="send")
            if self.producer_id < 0:
                self.init_transactions()

    def _join_transaction(self, tp: tuple) -> tuple:
        """TV1: AddPartitionsToTxn before the first write to tp; TV2: Produce adds it on the broker."""
        if self.transactional_id and not self.tv2 and tp not in self._txn_partitions:
            self._add_partition(tp)
        if self.transactional_id and self.tv2 and not self._transaction_started:
            self._transaction_started = True
        return tp

    def _need_topic(self, topic: str) -> dict:
        info = self.topic_info(topic, refresh=True)
        if info is None:
            raise Retry(E["UNKNOWN_TOPIC_OR_PARTITION"])
        return info

    def _produce_once(self, tp, records: list, batched: bool = False) -> RecordMetadata:
        api = "Produce"
        topic, partition = tp
        info = self.topic_info(topic)
        if info is None or partition not in info["partitions"]:
            raise Retry(E["UNKNOWN_TOPIC_OR_PARTITION"], refresh="metadata")
        v = self.version(api, cap=None if info["id"] is not None else 12)
        seq = self._sequences.get(tp, 0)
        now = self.cluster.now
        batch = write_batch([(r[0], r[1], (r[2] if len(r) > 2 else None) or (), now) for r in records],
                            producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                            base_sequence=seq if self.producer_id >= 0 else -1,
                            is_transactional=bool(self.transactional_id), base_timestamp=now)
        topic_entry = {"TopicId": info["id"]} if v >= 13 else {"Name": topic}
        topic_entry["PartitionData"] = [{"Index": partition, "Records": batch}]
        resp = self._call(api, v, {"TransactionalId": self.transactional_id, "Acks": -1, "TimeoutMs": 30000,
                                   "TopicData": [topic_entry]}, info["partitions"][partition])
        part = next((p for t in resp["Responses"] for p in t["PartitionResponses"] if p["Index"] == partition),
                    None)
        code = E["UNKNOWN_SERVER_ERROR"] if part is None else part["ErrorCode"]
        if code in (0, DUPLICATE_SEQUENCE_NUMBER):
            self._sequences[tp] = seq + len(records)
            self._did(ev.Sent, topic=topic, partition=partition, offset=part["BaseOffset"], version=v,
                      records=len(records) if batched else None)
            return RecordMetadata(topic, partition, part["BaseOffset"])
        if code in (E["NOT_LEADER_OR_FOLLOWER"], E["UNKNOWN_TOPIC_OR_PARTITION"], E["UNKNOWN_TOPIC_ID"]):
            raise Retry(code, refresh="metadata")
        if code in FENCED:
            raise self._fail(ProducerFencedError(code, api=api))
        if code == E["INVALID_TXN_STATE"]:
            raise self._fail(FatalError(code, api=api))
        if code in RETRIABLE:
            raise Retry(code)
        raise self._fail(AbortableError(code, api=api))

    # ---- offsets --------------------------------------------------------------------------------
    def send_offsets_to_transaction(self, offsets: dict, group_metadata) -> None:
        """Stage consumer offsets in the transaction: {(topic, partition): offset or
        (offset, metadata)}; group_metadata {group_id, generation_id or member_epoch, member_id,
        group_instance_id} (dict or object with those attributes)."""
        self._require("IN_TRANSACTION", what="send offsets")
        gm = _group_metadata(group_metadata)
        group = gm["group_id"]
        if not self.tv2:
            self._add_offsets(group)
        else:
            self._transaction_started = True
        pending = {tuple(tp): _offset_of(o) for tp, o in offsets.items()}
        self._retrying("TxnOffsetCommit", lambda: self._txn_offset_commit_once(pending, gm))
        self._did(ev.OffsetsSent, group_id=group, partitions=tuple(sorted(offsets)))

    def _add_offsets(self, group: str) -> None:
        api = "AddOffsetsToTxn"

        def attempt():
            v = self.version(api)
            resp = self._call(api, v, {"TransactionalId": self.transactional_id, "ProducerId": self.producer_id,
                                       "ProducerEpoch": self.producer_epoch, "GroupId": group},
                              self._txn_coordinator())
            if resp["ErrorCode"]:
                self._txn_error(resp["ErrorCode"], api)
        self._retrying(api, attempt)
        self._transaction_started = True
        self._did(ev.OffsetsPartitionAdded, group_id=group, via=api)

    def choose_txn_offset_commit_version(self, topics) -> tuple[int, dict]:
        """KIP-1319: (version, {topic: topic id}) — v6 only if the broker serves it and every
        topic has a known topic id, else v5 (or lower) for the whole request."""
        v = self.version("TxnOffsetCommit")
        ids: dict = {}
        if v >= 6:
            missing = []
            for t in sorted(set(topics)):
                info = self.topic_info(t)          # cached ids are reused (KIP-1319); refreshed on errors
                tid = info["id"] if info else None
                if tid is None:
                    missing.append(t)
                else:
                    ids[t] = tid
            if missing:
                self._did(ev.TxnOffsetCommitFallback, version=5, reason="topic id unknown", topics=tuple(missing))
                return 5, {}
            self._did(ev.TxnOffsetCommitVersionChosen, version=6, reason="broker serves v6, all topic ids known")
            return 6, ids
        self._did(ev.TxnOffsetCommitVersionChosen, version=v,
                  reason=f"broker serves up to v{self.broker_versions['TxnOffsetCommit'][1]}"
                  + ("" if self.tv2 else ", transaction version 1 caps it at v4"))
        return v, {}

    def _txn_offset_commit_once(self, pending: dict, gm: dict) -> None:
        api = "TxnOffsetCommit"
        group = gm["group_id"]
        broker = self._group_coordinator(group)
        v, ids = self.choose_txn_offset_commit_version(t for t, _ in pending)
        by_topic: dict[str, list] = {}
        for (t, p), (off, meta, leader_epoch) in pending.items():
            by_topic.setdefault(t, []).append({"PartitionIndex": p, "CommittedOffset": off,
                                               "CommittedLeaderEpoch": leader_epoch, "CommittedMetadata": meta})
        topics = [({"TopicId": ids[t]} if v >= 6 else {"Name": t}) | {"Partitions": ps}
                  for t, ps in by_topic.items()]
        names = {tid: t for t, tid in ids.items()}
        resp = self._call(api, v, {"TransactionalId": self.transactional_id, "GroupId": group,
                                   "ProducerId": self.producer_id, "ProducerEpoch": self.producer_epoch,
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
                self._did(ev.TxnOffsetCommitFailed, topic=name, partition=tp[1], error=NAME.get(code, str(code)),
                          handling=kind, version=v)
                if kind == "coordinator":
                    retry, refresh = code, "group:" + group
                elif kind == "retriable":
                    retry = code
                    if code in (E["UNKNOWN_TOPIC_ID"], E["UNKNOWN_TOPIC_OR_PARTITION"]):
                        refresh = refresh or "metadata"
                elif kind == "fenced":
                    raise self._fail(ProducerFencedError(code, api=api))
                elif kind == "commit-failed":
                    raise self._fail(CommitFailedError(code, api=api))
                elif kind == "abortable":
                    raise self._fail(AbortableError(code, api=api))
                else:
                    raise self._fail(FatalError(code, "unexpected error", api=api))
        if pending:
            # partitions still pending (retriable errors, or missing from the answer): re-enqueue
            raise Retry(E["UNKNOWN_SERVER_ERROR"] if retry is None else retry, refresh=refresh)

    # ---- KIP-1289 (PROPOSED): share-group acknowledgements in the transaction --------------------
    def send_share_acknowledgements_to_transaction(self, acknowledgements: dict, share_group_metadata) -> None:
        """KIP-1289 (proposed, voting): stage share-group acknowledgements in this transaction.

        acknowledgements: {(topic name or topic id, partition): [(offset, type), ...]} or
        {(..., partition): {offset: type}} (the share consumer's pending acks, e.g.
        ShareConsumer.transactional_acknowledgements()), or lists of AcknowledgementBatch dicts.
        Only ACCEPT (1) and REJECT (3) are valid; the broker answers INVALID_RECORD_STATE otherwise.
        share_group_metadata: ShareConsumer.share_group_metadata() ({group_id, member_id,
        member_epoch}, dict or object).

        One TxnShareAcknowledge per share-partition leader (found through Metadata). If the
        broker does not advertise TxnShareAcknowledge (share.version 1, old broker) this raises
        UnsupportedVersionError at once, with no bytes sent and the transaction still open, so the
        caller can abort it (seed 004 corner case 9). Model simplification: the call waits for the
        answers (Kafka's Sender would report errors at commit/abort); STALE_MEMBER_EPOCH /
        UNKNOWN_MEMBER_ID raise CommitFailedError and INVALID_RECORD_STATE AbortableError
        (abortable), PRODUCER_FENCED / INVALID_PRODUCER_EPOCH ProducerFencedError (fatal)."""
        api = "TxnShareAcknowledge"
        if not self.transactional_id:
            raise IllegalStateError("not a transactional producer (no transactional.id)")
        self._require("IN_TRANSACTION", what="send share acknowledgements")
        gm = _share_group_metadata(share_group_metadata)
        self._api_versions()
        theirs = self.broker_versions.get(api)
        if theirs is None or self._client_max(api) < theirs[0]:
            err = UnsupportedVersionError("UNSUPPORTED_VERSION", f"the broker does not advertise {api} "
                                          "(share.version < 2 or an old broker); KIP-1289 is proposed", api=api)
            self.last_error = err
            self._did(ev.ClientError, error=err.error, code=err.code, api=api, error_class=type(err).__name__,
                      synchronous=True, bytes_sent=0)
            raise err
        pending = {(tp[0], tp[1]): _ack_map(v) for tp, v in acknowledgements.items()}
        pending = {k: v for k, v in pending.items() if v}
        if not pending:
            return
        n = sum(len(v) for v in pending.values())
        try:
            self._retrying(api, lambda: self._txn_share_ack_once(pending, gm))
        except ProducerError as e:
            self._did(ev.ShareAcksFailed, group_id=gm["group_id"], error=e.error, records=n)
            raise
        self._transaction_started = True
        self._did(ev.ShareAcksSent, group_id=gm["group_id"], member_id=gm["member_id"],
                  member_epoch=gm["member_epoch"], records=n)

    def _topic_by_key(self, key) -> tuple[str, object] | None:
        """(name, topic id) for a topic given by name or id (Metadata for all topics if an id is new)."""
        if isinstance(key, str):
            info = self.topic_info(key)
            return (key, info["id"]) if info and info["id"] is not None else None
        if key not in self._names:
            v = self._choose_version("Metadata")
            resp = self._call("Metadata", v, {"Topics": None, "AllowAutoTopicCreation": False,
                                              "IncludeClusterAuthorizedOperations": False,
                                              "IncludeTopicAuthorizedOperations": False}, self.bootstrap_broker)
            for t in resp["Topics"]:
                if t["ErrorCode"] or t.get("Name") is None or t.get("TopicId") is None:
                    continue
                self._names[t["TopicId"]] = t["Name"]
                self._metadata[t["Name"]] = {"id": t["TopicId"], "partitions": {
                    p["PartitionIndex"]: p["LeaderId"] for p in t["Partitions"]}, **self._metadata_extra(v)}
        name = self._names.get(key)
        return (name, key) if name is not None and self.topic_info(name) is not None else None

    def _share_acks_by_leader(self, pending: dict) -> dict[int, dict]:
        """The pending acknowledgements' partitions by leader ({leader: {key: topic id}}); a partition
        the metadata does not know: Retry after a metadata refresh."""
        by_leader: dict[int, dict] = {}
        for key in list(pending):
            found = self._topic_by_key(key[0])
            info = self.topic_info(found[0]) if found else None
            if info is None or key[1] not in info["partitions"]:
                raise Retry(E["UNKNOWN_TOPIC_OR_PARTITION"], refresh="metadata")
            by_leader.setdefault(info["partitions"][key[1]], {})[key] = found[1]
        return by_leader

    def _txn_share_ack_once(self, pending: dict, gm: dict) -> None:
        api = "TxnShareAcknowledge"
        v = self._choose_version(api)
        retry = None
        for leader, keys in sorted(self._share_acks_by_leader(pending).items()):
            topics: dict = {}
            for key, tid in keys.items():
                topics.setdefault(tid, []).append({"PartitionIndex": key[1],
                                                   "AcknowledgementBatches": _ack_batches(pending[key])})
            resp = self._call(api, v, {"TransactionalId": self.transactional_id, "GroupId": gm["group_id"],
                                       "ProducerId": self.producer_id, "ProducerEpoch": self.producer_epoch,
                                       "MemberId": gm["member_id"], "MemberEpoch": gm["member_epoch"],
                                       "Topics": [{"TopicId": tid, "Partitions": ps} for tid, ps in topics.items()]},
                              leader)
            code = resp["ErrorCode"]
            if code:
                self._share_ack_error(code, api)
            codes = [p["ErrorCode"] for t in resp["Responses"] for p in t["Partitions"]]
            real = [c for c in codes if c and c != OPERATION_NOT_ATTEMPTED_CODE]
            if not real and not any(codes):
                for key in keys:
                    pending.pop(key, None)
                continue
            bad = real[0] if real else OPERATION_NOT_ATTEMPTED_CODE
            self._did(ev.TxnShareAckFailed, error=NAME.get(bad, str(bad)), version=v, broker=leader)
            if bad in (E["NOT_LEADER_OR_FOLLOWER"], E["UNKNOWN_TOPIC_OR_PARTITION"], E["UNKNOWN_TOPIC_ID"]):
                retry = bad
                continue
            if bad in RETRIABLE:
                retry = bad
                continue
            raise self._fail(AbortableError(bad, api=api))
        if pending:
            raise Retry(E["UNKNOWN_SERVER_ERROR"] if retry is None else retry, refresh="metadata")

    def _share_ack_error(self, code: int, api: str) -> None:
        if code in FENCED:
            raise self._fail(ProducerFencedError(code, api=api))
        if code in (E["STALE_MEMBER_EPOCH"], E["UNKNOWN_MEMBER_ID"]):
            raise self._fail(CommitFailedError(code, api=api))
        if code in (E["CONCURRENT_TRANSACTIONS"], E["COORDINATOR_LOAD_IN_PROGRESS"], E["COORDINATOR_NOT_AVAILABLE"],
                    E["NOT_COORDINATOR"], NETWORK_EXCEPTION):
            raise Retry(code)
        if code in (E["GROUP_AUTHORIZATION_FAILED"], E["TOPIC_AUTHORIZATION_FAILED"], E["TRANSACTION_ABORTABLE"],
                    E["INVALID_PRODUCER_ID_MAPPING"], E["INVALID_RECORD_STATE"]):
            raise self._fail(AbortableError(code, api=api))
        raise self._fail(FatalError(code, api=api))

    # ---- commit / abort --------------------------------------------------------------------------
    def commit_transaction(self) -> None:
        if self.state == "ABORTABLE_ERROR":
            raise AbortableError(self.last_error.code if self.last_error else E["TRANSACTION_ABORTABLE"],
                                 "cannot commit after an abortable error: abort the transaction",
                                 api="EndTxn")
        self._require("IN_TRANSACTION", what="commit")
        self._end(True)

    def abort_transaction(self) -> None:
        self._require("IN_TRANSACTION", "ABORTABLE_ERROR", what="abort")
        self._end(False)

    def _end(self, commit: bool) -> None:
        api = "EndTxn"
        what = "commit" if commit else "abort"
        if not self._transaction_started:
            # TransactionManager: no partition or offsets were added, so there is nothing to end
            self._did(ev.EndTxnSkipped, result=what, reason="nothing was added to the transaction")
            self._reset_transaction()
            self._set_state("READY", what)
            return

        def attempt():
            v = self.version(api)
            resp = self._call(api, v, {"TransactionalId": self.transactional_id, "ProducerId": self.producer_id,
                                       "ProducerEpoch": self.producer_epoch, "Committed": commit},
                              self._txn_coordinator())
            code = resp["ErrorCode"]
            if code:
                if code == E["INVALID_TXN_STATE"]:
                    raise self._fail(FatalError(code, api=api))
                self._txn_error(code, api)
            return v, resp
        v, resp = self._retrying(api, attempt)
        if v >= 5 and resp.get("ProducerId", -1) >= 0:
            self._set_ids(resp["ProducerId"], resp["ProducerEpoch"], f"EndTxn v{v} ({what})")
        self._did(ev.TransactionEnded, result=what, version=v)
        self._reset_transaction()
        self.last_error = None
        self._set_state("READY", what)


OPERATION_NOT_ATTEMPTED_CODE = 55


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


def _share_group_metadata(gm) -> dict:
    """ShareGroupMetadata (KIP-1289, proposed): {group_id, member_id, member_epoch}."""
    get = gm.get if isinstance(gm, dict) else (lambda k, d=None: getattr(gm, k, d))
    if get("group_id") is None:
        raise IllegalStateError("share_group_metadata needs a group_id")
    return {"group_id": get("group_id"), "member_id": get("member_id", "") or "",
            "member_epoch": get("member_epoch", 0)}


def _ack_map(acks) -> dict[int, int] | list[dict]:
    """{offset: type} from [(offset, type)], {offset: type}; AcknowledgementBatch dicts pass through."""
    if isinstance(acks, dict):
        return {int(o): int(t) for o, t in acks.items()}
    acks = list(acks)
    if acks and isinstance(acks[0], dict):
        return acks
    return {int(o): int(t) for o, t in acks}


def _ack_batches(acks) -> list[dict]:
    """Runs of consecutive offsets with one type -> AcknowledgementBatches (one type per batch)."""
    if isinstance(acks, list):
        return acks
    out: list[dict] = []
    for o, t in sorted(acks.items()):
        if out and out[-1]["LastOffset"] == o - 1 and out[-1]["AcknowledgeTypes"] == [t]:
            out[-1]["LastOffset"] = o
        else:
            out.append({"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [t]})
    return out
