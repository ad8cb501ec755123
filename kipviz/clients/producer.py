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

The Producer keeps the wire, versions, sequences and Produce (Sender.java's part) and its state;
its transactions are in clients/transaction_manager.py (TransactionManager.java) and KIP-1289's
proposed share acknowledgements in clients/txn_share_acks.py; errors in clients/producer_errors.py.

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

from ..records import write_batch
from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY, TRANSACTION_KEY
from ..schema.error_codes import RETRIABLE
from .base import (
    ClientBase,
    E,
    Retry,
)
from .producer_errors import (
    FENCED,
    AbortableError,
    FatalError,
    IllegalStateError,
    ProducerError,
    ProducerFencedError,
    RetriesExhaustedError,
    UnsupportedVersionError,
)
from .transaction_manager import TransactionManager
from .txn_share_acks import TxnShareAcks

DUPLICATE_SEQUENCE_NUMBER = E["DUPLICATE_SEQUENCE_NUMBER"]

TV1_MAX = {"EndTxn": 4, "TxnOffsetCommit": 4, "Produce": 11}


class RecordMetadata(NamedTuple):
    """Where send() wrote a record."""
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



# ---- the producer --------------------------------------------------------------------------------
class Producer(ClientBase):
    """The producer's public API: sending (Sender.java's part) here, transactions in its
    TransactionManager (`.transactions`), KIP-1289's share acknowledgements in `.share_acks`."""

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
        self._sequences: dict[tuple[str, int], int] = {}
        self._round_robin = itertools.count()
        self.transactions = TransactionManager(self)
        self.share_acks = TxnShareAcks(self)

    # ---- ClientBase hooks --------------------------------------------------------------------------
    def _unsupported(self, api: str, message: str) -> ProducerError:
        return self.fail(UnsupportedVersionError("UNSUPPORTED_VERSION", message, api=api))

    def _api_versions_failed(self, code: int) -> ProducerError:
        return FatalError(code, api="ApiVersions")

    def _retries_exhausted(self, code: int, message: str, api: str) -> ProducerError:
        return RetriesExhaustedError(code, message, api=api)

    def _coordinator_error(self, code: int, api: str) -> ProducerError:
        if code == E["GROUP_AUTHORIZATION_FAILED"]:
            return self.fail(AbortableError(code, api=api))
        return self.fail(FatalError(code, api=api))      # TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...

    def _transaction_version(self, resp: dict) -> int:
        tv = 0
        for f in resp.get("FinalizedFeatures") or []:
            if f["Name"] == "transaction.version":
                tv = f["MaxVersionLevel"]
        self.tv2 = tv >= 2
        return tv

    def metadata_extra(self, version: int) -> dict:
        """The Metadata version each cached topic came from."""
        return {"metadata_version": version}

    def _refresh(self, refresh: str | None) -> None:
        if refresh and refresh.startswith("group:"):
            self._group_coordinators.pop(refresh[6:], None)
        else:
            super()._refresh(refresh)

    # ---- state ----------------------------------------------------------------------------------
    def fail(self, err: ProducerError) -> ProducerError:
        """Move to the error state the exception's class implies and return it for raising."""
        self.last_error = err
        if isinstance(err, FatalError):
            self.set_state("FATAL_ERROR", err.error)
        elif isinstance(err, AbortableError) and self.state == "IN_TRANSACTION":
            self.set_state("ABORTABLE_ERROR", err.error)
        self.did(ev.ClientError, error=err.error, code=err.code, api=err.api, error_class=type(err).__name__)
        return err

    def require(self, *states: str, what: str) -> None:
        """IllegalStateError unless the producer is in one of `states`."""
        if self.state == "FATAL_ERROR":
            raise IllegalStateError(f"cannot {what}: the producer hit a fatal error ({self.last_error})")
        if self.state not in states:
            raise IllegalStateError(f"cannot {what} in state {self.state}")

    # ---- versions ------------------------------------------------------------------------------
    def client_max(self, api: str) -> int:
        """This producer's newest usable version of `api` (transaction version 1 caps EndTxn,
        TxnOffsetCommit, Produce)."""
        if api == "TxnShareAcknowledge":     # only proposed versions exist (KIP-1289): v0
            return self._client_max_share_ack()
        mine = super().client_max(api)
        if not self.tv2 and api in TV1_MAX:
            mine = min(mine, TV1_MAX[api])
        return mine

    def _client_max_share_ack(self) -> int:
        return self.client_versions.get("TxnShareAcknowledge", 0)

    def version(self, api: str, cap: int | None = None) -> int:
        """min(client max, broker max), or UnsupportedVersionError."""
        return self.choose_version(api, cap=cap)

    # ---- coordinators and metadata ----------------------------------------------------------------
    def txn_coordinator(self) -> int:
        """The transaction coordinator of the transactional id (FindCoordinator once)."""
        if self._coordinator is None:
            self._coordinator = self._find_coordinator(TRANSACTION_KEY, self.transactional_id)
        return self._coordinator

    def group_coordinator(self, group: str) -> int:
        """The coordinator of `group` (for TxnOffsetCommit)."""
        if group not in self._group_coordinators:
            self._group_coordinators[group] = self._find_coordinator(GROUP_KEY, group)
        return self._group_coordinators[group]


    # ---- transactions (TransactionManager, KIP-1289's share acknowledgements) -----------------------
    def init_transactions(self) -> tuple[int, int]:
        """InitProducerId: the producer id and epoch (retried on CONCURRENT_TRANSACTIONS, e.g.
        while the coordinator aborts what a previous instance left open)."""
        return self.transactions.init_transactions()

    def begin_transaction(self) -> None:
        """Start a transaction (nothing is sent until the first write or offsets)."""
        self.transactions.begin_transaction()

    def send_offsets_to_transaction(self, offsets: dict, group_metadata) -> None:
        """Stage consumer offsets in the transaction: {(topic, partition): offset or
        (offset, metadata)}; group_metadata {group_id, generation_id or member_epoch, member_id,
        group_instance_id} (dict or object with those attributes)."""
        self.transactions.send_offsets_to_transaction(offsets, group_metadata)

    def choose_txn_offset_commit_version(self, topics) -> tuple[int, dict]:
        """KIP-1319: (version, {topic: topic id}) — v6 only if the broker serves it and every
        topic has a known topic id, else v5 (or lower) for the whole request."""
        return self.transactions.choose_txn_offset_commit_version(topics)

    def send_share_acknowledgements_to_transaction(self, acknowledgements: dict, share_group_metadata) -> None:
        """KIP-1289 (proposed): stage share-group acknowledgements in this transaction
        (clients/txn_share_acks.py, TxnShareAcks.send, says how)."""
        self.share_acks.send(acknowledgements, share_group_metadata)

    def commit_transaction(self) -> None:
        """EndTxn(commit), or no request when nothing was added."""
        self.transactions.commit_transaction()

    def abort_transaction(self) -> None:
        """EndTxn(abort), or no request when nothing was added."""
        self.transactions.abort_transaction()

    # ---- sending -----------------------------------------------------------------------------------
    def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None,
             headers=None) -> RecordMetadata:
        """Produce one record (one batch) and wait for the leader's answer."""
        self._ready_to_send()
        info = self.topic_info(topic)
        if info is None:
            info = self.retrying("Metadata", lambda: self._need_topic(topic))
        if partition is None:
            n = len(info["partitions"])
            partition = default_partition(key, n) if key is not None else next(self._round_robin) % n
        tp = self.transactions.join((topic, partition))
        return self.retrying("Produce", lambda: self._produce_once(tp, [(key, value, headers)]))

    def send_batch(self, topic: str, partition: int, records) -> RecordMetadata | None:
        """Produce (key, value[, headers]) records to one partition as ONE record batch in one Produce
        request, as Kafka's RecordAccumulator batches per partition after linger.ms (long workloads
        need that); returns the first record's metadata, None for no records. Errors as send()."""
        records = list(records)
        if not records:
            return None
        self._ready_to_send()
        # (a Metadata round trip that fails is retried like any other, also the first one)
        self.retrying("Metadata", lambda: self.topic_info(topic) or self._need_topic(topic))
        tp = self.transactions.join((topic, partition))
        return self.retrying("Produce", lambda: self._produce_once(tp, records, batched=True))

    def _ready_to_send(self) -> None:
        if self.transactional_id:
            self.require("IN_TRANSACTION", what="send")
        else:
            self.require("READY", "UNINITIALIZED", what="send")
            if self.producer_id < 0:
                self.init_transactions()


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
        resp = self.call(api, v, {"TransactionalId": self.transactional_id, "Acks": -1, "TimeoutMs": 30000,
                                   "TopicData": [topic_entry]}, info["partitions"][partition])
        part = next((p for t in resp["Responses"] for p in t["PartitionResponses"] if p["Index"] == partition),
                    None)
        code = E["UNKNOWN_SERVER_ERROR"] if part is None else part["ErrorCode"]
        if code in (0, DUPLICATE_SEQUENCE_NUMBER):
            self._sequences[tp] = seq + len(records)
            self.did(ev.Sent, topic=topic, partition=partition, offset=part["BaseOffset"], version=v,
                      records=len(records) if batched else None)
            return RecordMetadata(topic, partition, part["BaseOffset"])
        if code in (E["NOT_LEADER_OR_FOLLOWER"], E["UNKNOWN_TOPIC_OR_PARTITION"], E["UNKNOWN_TOPIC_ID"]):
            raise Retry(code, refresh="metadata")
        if code in FENCED:
            raise self.fail(ProducerFencedError(code, api=api))
        if code == E["INVALID_TXN_STATE"]:
            raise self.fail(FatalError(code, api=api))
        if code in RETRIABLE:
            raise Retry(code)
        raise self.fail(AbortableError(code, api=api))

