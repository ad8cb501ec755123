"""The transaction coordinator (KIP-98, KIP-890), driven by requests and the virtual clock.

    cluster.txns                        # created on first use (kipviz.broker.cluster)
    cluster.txns.transactions["tx-1"]   # TxnMetadata: producer id/epoch, state, partitions
    cluster.txns.check_produce(...)     # hook for the Produce handler (KIP-890 verification / TV2 add)
    cluster.txns.verify_txn_offset_commit(...)   # hook for the TxnOffsetCommit handler

What it does, after released Kafka (`TransactionCoordinator.scala`,
`TransactionMetadata.scala`, `TransactionStateManager.scala`, `AddPartitionsToTxnManager.scala`):

* InitProducerId: producer ids come in blocks of 1000 per broker (like the KRaft controller
  hands them out); a transactional id gets epoch+1 on every call, a new producer id when the epoch
  is exhausted (>= 32766). An Ongoing transaction is fenced (PrepareEpochFence, epoch+1), aborted,
  and the call answers CONCURRENT_TRANSACTIONS so the client retries.
* AddPartitionsToTxn / AddOffsetsToTxn -> Ongoing, written to `__transaction_state`.
* EndTxn -> PrepareCommit/PrepareAbort (written), the answer goes back, then the coordinator
  writes COMMIT/ABORT control batches to every partition of the transaction itself, and when all
  are written -> CompleteCommit/CompleteAbort (written). `__consumer_offsets` partitions are
  reported to the group coordinator (`cluster.groups.on_marker`).
* Transaction version 2 (EndTxn v5): the epoch is bumped on every end of transaction, and
  Produce v12+ / TxnOffsetCommit v5+ add their partition to the transaction implicitly.
* Timeout: every 10 s (transaction.abort.timed.out.transaction.cleanup.interval.ms) the
  coordinator fences (epoch+1) and aborts every Ongoing transaction whose
  txnStartTimestamp + transaction.timeout.ms < now.
* Transactional ids idle for transactional.id.expiration.ms (7 days) become Dead (a tombstone).

The markers themselves go through `cluster.txns.markers` (kipviz.broker.txn_markers: delays,
held partitions, retries of a leader that is down)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..records import encode_internal
from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY, TRANSACTION_KEY
from ..schema.error_codes import CODE
from .machine import Machine
from .share_txn_coordinator import ShareTransactions
from .tables import transaction as table
from .txn_markers import NO_PRODUCER_EPOCH, MarkerChannel

NO_PRODUCER_ID = -1
SHORT_MAX = 32767
PRODUCER_ID_BLOCK = 1000
TRANSACTIONAL_ID_EXPIRATION_MS = 7 * 24 * 3600 * 1000       # transactional.id.expiration.ms
EXPIRATION_SCAN_MS = 3600 * 1000     # transaction.remove.expired.transaction.cleanup.interval.ms

NONE = 0
E = CODE
OPERATION_NOT_ATTEMPTED = CODE["OPERATION_NOT_ATTEMPTED"]
NETWORK_EXCEPTION = CODE["NETWORK_EXCEPTION"]         # Errors.NETWORK_EXCEPTION


class InitProducerIdResult(NamedTuple):
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    ongoing_producer_id: int = NO_PRODUCER_ID       # InitProducerId v6 (KIP-939, accepted)
    ongoing_producer_epoch: int = NO_PRODUCER_EPOCH


def is_epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: epoch >= Short.MaxValue - 1."""
    return epoch >= SHORT_MAX - 1


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    last_update_ms: int
    machine: Machine | None = None
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: dict = field(default_factory=dict)       # (topic, partition) -> None, insertion order
    start_ms: int = -1
    client_tv: int = 0                                   # ClientTransactionVersion: 0 or 2
    two_phase_commit: bool = False                       # InitProducerId v6 Enable2Pc (KIP-939)
    marker: str | None = None                            # "COMMIT"/"ABORT" while markers are pending
    pending_markers: dict = field(default_factory=dict)  # (topic, partition) -> None
    marker_epoch: int = NO_PRODUCER_EPOCH
    marker_producer_id: int = NO_PRODUCER_ID
    # KIP-1289 with share_marker_routing "participants" (the kit's suggestion, not the KIP's):
    # share partitions (group, topic id, partition) -> None, and those whose marker is not yet sent
    share_participants: dict = field(default_factory=dict)
    pending_share_markers: dict = field(default_factory=dict)

    @property
    def state(self) -> str:
        return self.machine.state

    @property
    def tv2(self) -> bool:
        return self.client_tv >= 2

    def describe(self) -> dict:
        return {"transactional_id": self.transactional_id, "state": self.state,
                "state_id": table.STATE_IDS[self.state], "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "last_producer_epoch": self.last_producer_epoch,
                "previous_producer_id": self.previous_producer_id,
                "next_producer_id": self.next_producer_id, "timeout_ms": self.timeout_ms,
                "partitions": sorted(self.partitions), "start_ms": self.start_ms,
                "last_update_ms": self.last_update_ms, "client_transaction_version": self.client_tv,
                "pending_markers": sorted(self.pending_markers),
                # only with share_marker_routing "participants" (the kit's suggestion)
                **({"share_participants": [(g, str(t), p) for g, t, p in self.share_participants]}
                   if self.share_participants else {})}


class TransactionCoordinator:
    def __init__(self, cluster):
        self.cluster = cluster
        self.transactions: dict[str, TxnMetadata] = {}
        self._next_block = 0
        self._blocks: dict[int, list[int]] = {}       # broker -> [next id, end of block)
        cfg = cluster.config
        self.abort_interval_ms = cfg.transaction_abort_timed_out_interval_ms
        self.expiration_ms = getattr(cfg, "transactional_id_expiration_ms", TRANSACTIONAL_ID_EXPIRATION_MS)
        self.expiration_scan_ms = getattr(cfg, "transaction_remove_expired_interval_ms", EXPIRATION_SCAN_MS)
        self._scans = {"abort": None, "expire": None}      # pending timer ids of the two scans
        # KIP-1289 (proposed): the share side, a part of its own (kipviz.broker.share_txn_coordinator)
        self.share = ShareTransactions(self)
        # the WriteTxnMarkers it sends (TransactionMarkerChannelManager.scala)
        self.markers = MarkerChannel(self)

    # ---- plumbing ---------------------------------------------------------------------------
    def _ensure_scan(self, which: str) -> None:
        """Kafka's scheduler runs both scans every interval from startup; the model only keeps
        the timer while a scan could find something (an Ongoing or an idle transaction), on the
        same grid of multiples of the interval, so long idle stretches cost nothing."""
        if self._scans[which] is not None:
            return
        interval, action, needed = {
            "abort": (self.abort_interval_ms, self._abort_timed_out,
                      lambda: any(t.state == "Ongoing" for t in self.transactions.values())),
            "expire": (self.expiration_scan_ms, self._expire_transactional_ids,
                       lambda: any(t.state in table.EXPIRABLE for t in self.transactions.values())),
        }[which]
        clock = self.cluster.clock

        def run():
            self._scans[which] = None
            action()
            if needed():
                self._ensure_scan(which)
        self._scans[which] = clock.schedule((clock.now // interval + 1) * interval, run)

    @property
    def server_tv2(self) -> bool:
        return self.cluster.features.level("transaction.version") >= 2

    def allocate_producer_id(self, broker: int = 0) -> int:
        """Producer ids come in blocks of 1000 per broker, as the controller hands them out."""
        block = self._blocks.get(broker)
        if block is None or block[0] >= block[1]:
            start = self._next_block * PRODUCER_ID_BLOCK
            self._next_block += 1
            block = self._blocks[broker] = [start, start + PRODUCER_ID_BLOCK]
        pid = block[0]
        block[0] += 1
        return pid

    def coordinator_broker(self, transactional_id: str) -> int:
        return self.cluster.coordinator_broker(TRANSACTION_KEY, transactional_id)

    def _fire(self, txn: TxnMetadata, event: str) -> None:
        state = txn.machine.fire(event)
        txn.last_update_ms = self.cluster.now
        if state == "Ongoing":
            self._ensure_scan("abort")
        elif state in table.EXPIRABLE:
            self._ensure_scan("expire")

    def _persist(self, txn: TxnMetadata) -> None:
        """Write the transaction's state to its __transaction_state partition (TransactionLog)."""
        topic, part = self.cluster.coordinator_partition(TRANSACTION_KEY, txn.transactional_id)
        state = txn.state
        key_fields = {"TransactionalId": txn.transactional_id}
        if state == "Dead":
            value = None
            key, value_bytes = encode_internal("TransactionLog", key_fields, None)
        else:
            parts: list[dict] | None = None
            if state != "Empty":            # Kafka writes null partitions for Empty (TransactionLog.scala)
                by_topic: dict[str, list[int]] = {}
                for t, p in txn.partitions:
                    by_topic.setdefault(t, []).append(p)
                parts = [{"Topic": t, "PartitionIds": ps} for t, ps in by_topic.items()]
            value = {"ProducerId": txn.producer_id, "PreviousProducerId": txn.previous_producer_id,
                     "NextProducerId": txn.next_producer_id, "ProducerEpoch": txn.producer_epoch,
                     "TransactionTimeoutMs": txn.timeout_ms, "TransactionStatus": table.STATE_IDS[state],
                     "TransactionPartitions": parts, "TransactionLastUpdateTimestampMs": txn.last_update_ms,
                     "TransactionStartTimestampMs": txn.start_ms, "ClientTransactionVersion": txn.client_tv}
            # transaction.version >= 1 writes the flexible value (version 1), TransactionLog.scala
            key, value_bytes = encode_internal("TransactionLog", key_fields, value, value_version=1)
        # the decoded view, as kipviz.records.decode_internal gives it (built, not re-decoded)
        view = {"topic": topic, "record": "TransactionLog", "record_type": 0, "key_version": 0,
                "key_spec": "TransactionLogKey", "key": key_fields, "tombstone": value is None,
                "value_version": None if value is None else 1,
                "value_spec": None if value is None else "TransactionLogValue", "value": value}
        self.cluster.append_internal(topic, part, key, value_bytes, view)

    def _new_txn(self, transactional_id: str, timeout_ms: int, broker: int) -> TxnMetadata:
        txn = TxnMetadata(transactional_id, self.allocate_producer_id(broker), timeout_ms, self.cluster.now)
        txn.machine = Machine(table.TABLE, transactional_id, self.cluster.transition,
                              enabled=table.enabled_for(txn))
        self.transactions[transactional_id] = txn
        return txn

    # ---- InitProducerId -----------------------------------------------------------------------
    # size: InitProducerId's cases (new id, epoch bump, fencing, KIP-939 keep-prepared) in handleInitProducerId's order, side by side
    def init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                         expected: tuple[int, int] | None = None, *, broker: int = 0,
                         enable_2pc: bool = False, keep_prepared: bool = False) -> InitProducerIdResult:
        """As TransactionCoordinator.handleInitProducerId."""
        if transactional_id is None:
            return InitProducerIdResult(NONE, self.allocate_producer_id(broker), 0)
        if transactional_id == "":
            return InitProducerIdResult(E["INVALID_REQUEST"])
        if not 0 < timeout_ms <= self.cluster.config.transaction_max_timeout_ms:
            return InitProducerIdResult(E["INVALID_TRANSACTION_TIMEOUT"])
        if self.coordinator_broker(transactional_id) != broker:
            return InitProducerIdResult(E["NOT_COORDINATOR"])
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = self._new_txn(transactional_id, timeout_ms, broker)

        if expected is not None:
            epid, eepoch = expected
            valid = (txn.producer_epoch == NO_PRODUCER_EPOCH or epid == txn.producer_id
                     or (epid == txn.previous_producer_id and is_epoch_exhausted(eepoch)))
            if not valid:
                return InitProducerIdResult(E["PRODUCER_FENCED"])
        state = txn.state
        if state in ("PrepareCommit", "PrepareAbort"):
            return InitProducerIdResult(E["CONCURRENT_TRANSACTIONS"])
        if state in ("Empty", "CompleteCommit", "CompleteAbort"):
            if is_epoch_exhausted(txn.producer_epoch) and (expected is None or expected[1] == txn.producer_epoch):
                new_pid = self.allocate_producer_id(self.coordinator_broker(transactional_id))
                self.cluster.emit(ev.ProducerIdRenewed, transactional_id=transactional_id,
                                  old_producer_id=txn.producer_id, new_producer_id=new_pid, epoch=txn.producer_epoch)
                txn.last_producer_epoch = txn.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
                txn.previous_producer_id = txn.producer_id
                txn.producer_id, txn.producer_epoch = new_pid, 0
            else:
                bumped = txn.producer_epoch + 1
                if expected is None:
                    nxt, last = bumped, NO_PRODUCER_EPOCH
                elif txn.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == txn.producer_epoch:
                    nxt, last = bumped, txn.producer_epoch
                elif expected[1] == txn.last_producer_epoch:
                    nxt, last = txn.producer_epoch, txn.last_producer_epoch   # retry of a successful call
                else:
                    return InitProducerIdResult(E["PRODUCER_FENCED"])
                if nxt > SHORT_MAX - 1:     # cannot happen through the exhaustion check above
                    return InitProducerIdResult(E["PRODUCER_FENCED"])
                txn.producer_epoch, txn.last_producer_epoch = nxt, last
            txn.timeout_ms = timeout_ms
            txn.partitions.clear()
            txn.start_ms = -1
            txn.two_phase_commit = enable_2pc
            self._fire(txn, "init-producer-id")
            self._persist(txn)
            return InitProducerIdResult(NONE, txn.producer_id, txn.producer_epoch)
        if state == "Ongoing":
            if keep_prepared and enable_2pc:
                # KIP-939 (accepted, not released): keep the open transaction for an external
                # transaction manager; the epoch moves on so the old instance is fenced.
                ongoing = (txn.producer_id, txn.producer_epoch)
                txn.last_producer_epoch = txn.producer_epoch
                txn.producer_epoch = min(txn.producer_epoch + 1, SHORT_MAX)
                txn.two_phase_commit = True
                self._fire(txn, "init-producer-id-keep-prepared")
                self._persist(txn)
                return InitProducerIdResult(NONE, txn.producer_id, txn.producer_epoch, *ongoing)
            err = self._fence_and_abort(txn, "init-producer-id")
            return InitProducerIdResult(err or E["CONCURRENT_TRANSACTIONS"])
        # Dead / PrepareEpochFence never stay in the cache (Kafka throws IllegalStateException)
        return InitProducerIdResult(E["CONCURRENT_TRANSACTIONS"])

    def _fence_and_abort(self, txn: TxnMetadata, event: str) -> int:
        """prepareFenceProducerEpoch (epoch+1, not written) then endTransaction(ABORT) from the
        coordinator itself, with the server's transaction version."""
        if txn.producer_epoch >= SHORT_MAX:
            return E["CONCURRENT_TRANSACTIONS"]
        txn.producer_epoch += 1
        txn.last_producer_epoch = NO_PRODUCER_EPOCH
        self._fire(txn, event)
        err, _, _ = self.end_transaction(txn.transactional_id, txn.producer_id, txn.producer_epoch, False,
                                         tv2=self.server_tv2, from_client=False)
        return err

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions, *, cause: str = "add-partitions", tv2: bool | None = None) -> int:
        """handleAddPartitionsToTransaction: one error for all the partitions."""
        if not transactional_id:
            return E["INVALID_REQUEST"]
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return E["INVALID_PRODUCER_ID_MAPPING"]
        if txn.producer_epoch != producer_epoch:
            return E["PRODUCER_FENCED"]
        if txn.state in ("PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            return E["CONCURRENT_TRANSACTIONS"]
        tps = [tuple(tp) for tp in partitions]
        if txn.state == "Ongoing" and all(tp in txn.partitions for tp in tps):
            return NONE                     # already there: answered without a write
        if txn.state in ("Empty", "CompleteCommit", "CompleteAbort"):
            txn.start_ms = self.cluster.now
        for tp in tps:
            txn.partitions.setdefault(tp, None)
        if tv2 is not None:
            txn.client_tv = 2 if tv2 else 0
        self._fire(txn, cause)
        self._persist(txn)
        return NONE

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions) -> dict:
        """handleVerifyPartitionsInTransaction: {(topic, partition): error}."""
        tps = [tuple(tp) for tp in partitions]
        if not transactional_id:
            return dict.fromkeys(tps, E["INVALID_REQUEST"])
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return dict.fromkeys(tps, E["INVALID_PRODUCER_ID_MAPPING"])
        if txn.producer_epoch != producer_epoch:
            return dict.fromkeys(tps, E["PRODUCER_FENCED"])
        if txn.state in ("PrepareCommit", "PrepareAbort"):
            return dict.fromkeys(tps, E["CONCURRENT_TRANSACTIONS"])
        return {tp: (NONE if tp in txn.partitions else E["TRANSACTION_ABORTABLE"]) for tp in tps}

    # ---- hooks for the Produce and TxnOffsetCommit handlers ----------------------------------
    def _verify_or_add(self, transactional_id, producer_id, producer_epoch, tp, operation: str,
                       via: str) -> int:
        """AddPartitionsToTxnManager.addOrVerifyTransaction for one partition, with its error
        mapping: PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH always; TRANSACTION_ABORTABLE ->
        INVALID_TXN_STATE for clients that predate it ("default" operation)."""
        add = operation == "add"
        if add:
            err = self.add_partitions(transactional_id, producer_id, producer_epoch, [tp], cause="implicit-add",
                                      tv2=True)
        else:
            err = self.verify_partitions(transactional_id, producer_id, producer_epoch, [tp])[tuple(tp)]
        version = 5
        self.cluster.emit(ev.PartitionAddedToTxn, version=version, verify_only=not add,
                          transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
                          topic=tp[0], partition=tp[1], via=via, error_code=err,
                          coordinator=self.coordinator_broker(transactional_id) if transactional_id else None)
        if err == E["PRODUCER_FENCED"]:
            return E["INVALID_PRODUCER_EPOCH"]
        if err == E["TRANSACTION_ABORTABLE"] and operation == "default":
            return E["INVALID_TXN_STATE"]
        return err

    @staticmethod
    def _operation(version: int | None, add_from: int, generic_from: int, tv2: bool) -> str:
        """AddPartitionsToTxnManager.*VersionToTransactionSupportedOperation."""
        if version is None:
            return "add" if tv2 else "default"
        if version >= add_from and tv2:
            return "add"
        if version >= generic_from:
            return "generic"
        return "default"

    def check_produce(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                      topic: str, partition: int, version: int | None = None) -> int:
        """For the Produce handler, before a transactional batch is appended: 0 or the error the
        partition gets. Produce v12+ under transaction version 2 adds the partition to the
        transaction (KIP-890 part 2); older versions only verify it is already there (part 1):
        a partition never added gets INVALID_TXN_STATE (v0-10) or TRANSACTION_ABORTABLE (v11+); a
        stale epoch INVALID_PRODUCER_EPOCH. Retriable coordinator errors become
        NOT_ENOUGH_REPLICAS, which old clients retry (ReplicaManager). `version` None means the
        newest Produce the cluster's transaction version allows."""
        if not transactional_id:
            return NONE
        log = self.cluster.topics.partition(topic, partition)
        if log is not None and producer_id in log.open_txns:
            # UnifiedLog.hasOngoingTransaction: the leader already holds this producer's open
            # transaction at this epoch, so it does not ask the coordinator again
            if log.last_epoch(producer_id) == producer_epoch:
                return NONE
        op = self._operation(version, 12, 11, self.server_tv2)
        err = self._verify_or_add(transactional_id, producer_id, producer_epoch, (topic, partition), op,
                                  via="Produce" + (f" v{version}" if version is not None else ""))
        if err in (E["CONCURRENT_TRANSACTIONS"], NETWORK_EXCEPTION, E["COORDINATOR_LOAD_IN_PROGRESS"],
                   E["COORDINATOR_NOT_AVAILABLE"], E["NOT_COORDINATOR"]):
            return E["NOT_ENOUGH_REPLICAS"]
        return err

    def verify_txn_offset_commit(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 group_id: str, version: int) -> int:
        """For the TxnOffsetCommit handler (group coordinator: group-coordinator/.../GroupCoordinatorService.java): verify
        the group's __consumer_offsets partition is in the transaction (KIP-890 part 1), or add it
        (v5+ under transaction version 2). apiVersion >= 4 gets TRANSACTION_ABORTABLE, older
        versions INVALID_TXN_STATE; PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH; the result
        goes through CoordinatorOperationExceptionHelper's mapping."""
        tp = self.cluster.coordinator_partition(GROUP_KEY, group_id)
        op = self._operation(version, 5, 4, self.server_tv2)
        err = self._verify_or_add(transactional_id, producer_id, producer_epoch, tp, op,
                                  via=f"TxnOffsetCommit v{version}")
        if err == NETWORK_EXCEPTION:
            return E["COORDINATOR_LOAD_IN_PROGRESS"]
        if err in (E["UNKNOWN_TOPIC_OR_PARTITION"], E["NOT_ENOUGH_REPLICAS"], E["REQUEST_TIMED_OUT"]):
            return E["COORDINATOR_NOT_AVAILABLE"]
        if err in (E["NOT_LEADER_OR_FOLLOWER"], E["KAFKA_STORAGE_ERROR"]):
            return E["NOT_COORDINATOR"]
        return err

    # ---- EndTxn ---------------------------------------------------------------------------------
    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                        *, tv2: bool = False, from_client: bool = True) -> tuple[int, int, int]:
        """(error, producer id, epoch) as endTransaction / endTransactionWithTV1."""
        if not transactional_id:
            return E["INVALID_REQUEST"], NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return E["INVALID_PRODUCER_ID_MAPPING"], NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not tv2:
            return self._end_tv1(txn, producer_id, producer_epoch, commit, from_client)
        return self._end_tv2(txn, producer_id, producer_epoch, commit, from_client)

    def _end_tv1(self, txn: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
                 from_client: bool) -> tuple[int, int, int]:
        """endTransactionWithTV1 (TransactionCoordinator.scala), in its order of errors."""
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        state = txn.state
        fence = state == "PrepareEpochFence"
        same = (state == "CompleteCommit") == commit
        if txn.producer_id != producer_id:
            return E["INVALID_PRODUCER_ID_MAPPING"], *fail
        if (from_client and producer_epoch != txn.producer_epoch) or producer_epoch < txn.producer_epoch:
            return E["PRODUCER_FENCED"], *fail
        if state in ("Ongoing", "PrepareEpochFence"):
            if fence and commit:
                return E["INVALID_TXN_STATE"], *fail
            return self._prepare(txn, commit, tv2=False, fence=fence, no_partitions=False)
        if state in ("CompleteCommit", "CompleteAbort"):
            return (NONE, txn.producer_id, txn.producer_epoch) if same else (E["INVALID_TXN_STATE"], *fail)
        if state in ("PrepareCommit", "PrepareAbort"):
            same_prep = (state == "PrepareCommit") == commit
            return (E["CONCURRENT_TRANSACTIONS"] if same_prep else E["INVALID_TXN_STATE"]), *fail
        return E["INVALID_TXN_STATE"], *fail          # Empty

    def _end_tv2(self, txn: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
                 from_client: bool) -> tuple[int, int, int]:
        """Transaction version 2 (TransactionCoordinator.endTransaction, Kafka 4.x): the producer id and
        epoch checks (a retry after an epoch bump or overflow is valid), then the state's answer."""
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        state = txn.state
        fence = state == "PrepareEpochFence"
        retry_on_overflow = (not fence and txn.previous_producer_id == producer_id
                             and producer_epoch == SHORT_MAX - 1 and txn.producer_epoch == 0)
        retry_on_bump = not fence and txn.producer_epoch == producer_epoch + 1
        if fence:
            valid_epoch = (not from_client or producer_epoch == txn.producer_epoch) \
                and producer_epoch >= txn.producer_epoch
        elif state in ("Ongoing", "Empty", "Dead"):
            valid_epoch = producer_epoch == txn.producer_epoch
        elif state in ("PrepareCommit", "PrepareAbort"):
            valid_epoch = retry_on_bump
        else:
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == txn.producer_epoch
        if txn.producer_id != producer_id and not retry_on_overflow:
            return E["INVALID_PRODUCER_ID_MAPPING"], *fail
        if not valid_epoch:
            return E["PRODUCER_FENCED"], *fail
        return self._end_tv2_state(txn, commit, fence, retry_on_bump or retry_on_overflow)

    def _end_tv2_state(self, txn: TxnMetadata, commit: bool, fence: bool, is_retry: bool) -> tuple[int, int, int]:
        """endTransaction's match on the state, once the id and epoch passed (TV2)."""
        fail = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        state = txn.state
        if state in ("Ongoing", "PrepareEpochFence"):
            if fence and commit:
                return E["INVALID_TXN_STATE"], *fail
            return self._prepare(txn, commit, tv2=True, fence=fence, no_partitions=False)
        if state == "CompleteCommit":
            if commit:
                return (NONE, txn.producer_id, txn.producer_epoch) if is_retry else (E["INVALID_TXN_STATE"], *fail)
            if is_retry:
                return E["INVALID_TXN_STATE"], *fail
            return self._prepare(txn, False, tv2=True, fence=False, no_partitions=True)
        if state == "CompleteAbort":
            if not commit:
                if is_retry:
                    return NONE, txn.producer_id, txn.producer_epoch
                return self._prepare(txn, False, tv2=True, fence=False, no_partitions=True)
            return E["INVALID_TXN_STATE"], *fail
        if state in ("PrepareCommit", "PrepareAbort"):
            same_prep = (state == "PrepareCommit") == commit
            return (E["CONCURRENT_TRANSACTIONS"] if same_prep else E["INVALID_TXN_STATE"]), *fail
        if state == "Empty":
            if not commit:
                return self._prepare(txn, False, tv2=True, fence=False, no_partitions=True)
            return E["INVALID_TXN_STATE"], *fail
        return E["INVALID_TXN_STATE"], *fail

    def _prepare(self, txn: TxnMetadata, commit: bool, *, tv2: bool, fence: bool,
                 no_partitions: bool) -> tuple[int, int, int]:
        """prepareAbortOrCommit, the PrepareX write, then the markers."""
        if tv2:
            if not fence and is_epoch_exhausted(txn.producer_epoch):
                txn.next_producer_id = self.allocate_producer_id(self.coordinator_broker(txn.transactional_id))
            if txn.producer_epoch < SHORT_MAX:
                txn.last_producer_epoch = txn.producer_epoch
                txn.producer_epoch += 1
            elif txn.next_producer_id == NO_PRODUCER_ID:
                # fencing already took the last epoch: rotate the producer id (later Kafka fix)
                txn.next_producer_id = self.allocate_producer_id(self.coordinator_broker(txn.transactional_id))
            txn.client_tv = 2
        elif txn.client_tv and not fence:
            txn.client_tv = 0
        if no_partitions:
            txn.start_ms = self.cluster.now
        if fence:
            event = "fence-abort"
        elif commit:
            event = "end-txn-commit"
        else:
            event = "end-txn-abort"
        self._fire(txn, event)
        self._persist(txn)
        txn.marker = "COMMIT" if commit else "ABORT"
        txn.pending_markers = dict.fromkeys(txn.partitions)
        txn.pending_share_markers = dict.fromkeys(txn.share_participants)
        txn.marker_epoch, txn.marker_producer_id = txn.producer_epoch, txn.producer_id
        if txn.next_producer_id != NO_PRODUCER_ID:
            answer = (NONE, txn.next_producer_id, 0)
        else:
            answer = (NONE, txn.producer_id, txn.producer_epoch)
        self.markers.start(txn)
        return answer

    # ---- markers (the channel: kipviz.broker.txn_markers) ----------------------------------------
    def complete(self, txn: TxnMetadata) -> None:
        """prepareComplete: CompleteCommit/CompleteAbort, no partitions; after an epoch overflow
        the producer id moves to the next one with epoch 0."""
        txn.marker = None
        txn.partitions.clear()
        txn.share_participants.clear()
        if txn.tv2 and txn.next_producer_id != NO_PRODUCER_ID:
            txn.previous_producer_id = txn.producer_id
            txn.producer_id, txn.producer_epoch = txn.next_producer_id, 0
            txn.last_producer_epoch = SHORT_MAX - 1
        txn.next_producer_id = NO_PRODUCER_ID
        self._fire(txn, "markers-written")
        self._persist(txn)

    # ---- timers ---------------------------------------------------------------------------------
    def _abort_timed_out(self) -> None:
        """TransactionStateManager.timedOutTransactions + abortTimedOutTransactions."""
        now = self.cluster.now
        for txn in list(self.transactions.values()):
            if (txn.state == "Ongoing" and not txn.two_phase_commit
                    and txn.start_ms + txn.timeout_ms < now):
                self.cluster.emit(ev.TransactionTimedOut, transactional_id=txn.transactional_id,
                                  producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                                  timeout_ms=txn.timeout_ms, started=txn.start_ms)
                self._fence_and_abort(txn, "timeout-fence")

    def _expire_transactional_ids(self) -> None:
        now = self.cluster.now
        for tid, txn in list(self.transactions.items()):
            if txn.state in table.EXPIRABLE and txn.marker is None \
                    and txn.last_update_ms <= now - self.expiration_ms:
                self._fire(txn, "transactional-id-expired")
                self._persist(txn)
                del self.transactions[tid]

    # ---- views ----------------------------------------------------------------------------------
    def state_of(self, transactional_id: str) -> str | None:
        txn = self.transactions.get(transactional_id)
        return None if txn is None else txn.state

    def describe(self, transactional_id: str) -> dict | None:
        txn = self.transactions.get(transactional_id)
        return None if txn is None else txn.describe()


