"""The transaction coordinator's marker channel and the partition leader's marker write.

MarkerChannel (cluster.txns.markers) is the coordinator's side, after Kafka's
TransactionMarkerChannelManager.scala: once a transaction is PrepareCommit/PrepareAbort it sends
one WriteTxnMarkers per partition to that partition's leader, retries a leader that is down every
`retry_backoff_ms`, drops a partition that is gone, and completes the transaction when every
marker is written. Markers go at once unless told otherwise: `delay_ms` delays them (the state
then stays PrepareX and clients see CONCURRENT_TRANSACTIONS), `hold = True` keeps them until
`release()`, `hold_for(topic, partition)` keeps back only that partition's markers (the others are
written; the transaction stays PrepareX, retrying every `retry_backoff_ms`, until `release()`).

write_marker is the leader's side (KafkaApis.handleWriteTxnMarkersRequest): append one COMMIT or
ABORT control batch and tell the coordinator whose internal topic it ends a transaction on."""
from __future__ import annotations

from ..records.control import CONTROL_TYPE_IDS, control_key, end_txn_marker_value
from ..schema import events as ev
from ..schema.coordinators import TRANSACTION_KEY
from ..schema.error_codes import CODE
from ..schema.topics import CONSUMER_OFFSETS, SHARE_GROUP_STATE

NONE = 0
NO_PRODUCER_EPOCH = -1        # RecordBatch.NO_PRODUCER_EPOCH
PREPARED = ("PrepareCommit", "PrepareAbort")


class MarkerChannel:
    """The markers of one TransactionCoordinator (`txns`: its transactions and completion)."""

    def __init__(self, txns):
        self.txns = txns
        self.cluster = txns.cluster
        self.delay_ms = 0
        self.hold = False
        self.held_partitions: set[tuple[str, int]] = set()     # hold_for
        self.retry_backoff_ms = 100
        self._timers: dict[str, int] = {}

    def start(self, txn) -> None:
        """A transaction just prepared (`txn`, a TxnMetadata): send its markers, or complete it."""
        if not txn.pending_markers and not txn.pending_share_markers:
            self.txns.complete(txn)
            return
        if self.hold:
            return
        if self.delay_ms > 0:
            self._schedule(txn, self.delay_ms)
        else:
            self._send(txn.transactional_id)

    def hold_for(self, topic: str, partition: int) -> None:
        """Scenario fault: markers for this one partition do not reach its leader (it is cut off
        from the coordinator) until release()."""
        self.held_partitions.add((topic, partition))
        self.cluster.emit(ev.MarkersHeldBack, topic=topic, partition=partition)

    def release(self, transactional_id: str | None = None) -> None:
        """Write the markers held back by `hold` / `hold_for` (for one transactional id or all)."""
        self.hold = False
        self.held_partitions.clear()
        for tid, txn in list(self.txns.transactions.items()):
            if (transactional_id is None or tid == transactional_id) and txn.marker is not None:
                self._send(tid)

    def _schedule(self, txn, delay: int) -> None:
        tid = txn.transactional_id
        if tid in self._timers:
            return
        self._timers[tid] = self.cluster.clock.schedule(self.cluster.now + delay, lambda: self._send(tid, timer=True))

    def _send(self, transactional_id: str, timer: bool = False) -> None:
        if timer:
            self._timers.pop(transactional_id, None)
        txns, cluster = self.txns, self.cluster
        txn = txns.transactions.get(transactional_id)
        if txn is None or txn.marker is None or txn.state not in PREPARED:
            return
        topic, part = cluster.coordinator_partition(TRANSACTION_KEY, transactional_id)
        coordinator_epoch = cluster.topics.partition(topic, part).leader_epoch
        for tp in list(txn.pending_markers):
            log = cluster.topics.partition(*tp)
            if log is None:
                # no leader known, the partition is likely deleted: it is dropped from the transaction
                cluster.emit(ev.MarkerDropped, transactional_id=transactional_id, topic=tp[0], partition=tp[1])
                txn.pending_markers.pop(tp)
                continue
            if log.leader in cluster.down or tp in self.held_partitions:
                continue
            cluster.emit(ev.MarkerSent, broker=log.leader, coordinator=txns.coordinator_broker(transactional_id),
                         transactional_id=transactional_id, topic=tp[0], partition=tp[1], marker=txn.marker,
                         producer_id=txn.marker_producer_id, producer_epoch=txn.marker_epoch)
            write_marker(cluster, tp[0], tp[1], txn.marker_producer_id, txn.marker_epoch, txn.marker == "COMMIT",
                         coordinator_epoch)
            txn.pending_markers.pop(tp)
        txns.share.send_markers(txn)
        if txn.pending_markers or txn.pending_share_markers:
            self._schedule(txn, self.retry_backoff_ms)
            return
        txns.complete(txn)


def write_marker(cluster, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                 coordinator_epoch: int = 0, *, transaction_version: int | None = None,
                 check_epoch: bool = False) -> int:
    """The partition leader's side of WriteTxnMarkers: append one COMMIT/ABORT control batch
    and tell the group (or share) coordinator. Returns the partition's error code."""
    log = cluster.topics.partition(topic, partition)
    if log is None:
        return CODE["UNKNOWN_TOPIC_OR_PARTITION"]
    if check_epoch and _stale_epoch(log, producer_id, producer_epoch, transaction_version):
        return CODE["INVALID_PRODUCER_EPOCH"]
    marker = "COMMIT" if commit else "ABORT"
    offset = log.append_marker(marker, cluster.now, producer_id, producer_epoch, coordinator_epoch,
                               seq=cluster.next_seq)
    cluster.emit(ev.RecordAppended, topic=topic, partition=partition, offset=offset,
                 record={"type": marker, "type_id": CONTROL_TYPE_IDS[marker], "version": 0,
                         "coordinator_epoch": coordinator_epoch, "value_version": 0},
                 key=control_key(marker), value=end_txn_marker_value(coordinator_epoch),
                 producer_id=producer_id, producer_epoch=producer_epoch, transactional=True, control=True,
                 broker=log.leader)
    # the coordinator whose internal topic the marker ends a transaction on learns its outcome
    if topic == CONSUMER_OFFSETS:
        cluster.groups.on_marker(partition, producer_id, commit)
    elif topic == SHARE_GROUP_STATE:      # KIP-1289 filters staged records by epoch too
        cluster.shares.on_marker(partition, producer_id, commit, producer_epoch=producer_epoch)
    return NONE


def _stale_epoch(log, producer_id: int, producer_epoch: int, transaction_version: int | None) -> bool:
    # ProducerStateManager: a marker may not carry an older epoch than the producer's records;
    # under transaction version 2 (WriteTxnMarkers v2) it must be newer than the epoch of the
    # transaction it ends (KIP-1228)
    first = log.open_txns.get(producer_id)
    latest = log.max_epoch(producer_id)
    latest = NO_PRODUCER_EPOCH if latest is None else latest
    if producer_epoch < latest:
        return True
    if transaction_version is not None and transaction_version >= 2 and first is not None:
        txn_epoch = log.max_epoch(producer_id, since=first)
        return txn_epoch is not None and producer_epoch <= txn_epoch
    return False
