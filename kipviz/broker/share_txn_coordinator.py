"""KIP-1289 (PROPOSED) at the transaction coordinator: what a share-group acknowledgement staged in a
transaction asks of it. Nothing here is in released Kafka; TransactionCoordinator holds one of these
as `share` (cluster.txns.share) and calls `send_markers` from its marker loop.

- `check_producer`: the read-only fencing check TxnShareAcknowledge runs before staging;
- `add_state_partitions`: the share-partition leader's broker-internal AddPartitionsToTxn of the
  __share_group_state-N partition(s), so EndTxn writes markers there (the KIP as written);
- `add_participants` and `send_markers`: share_marker_routing "participants", the kit's
  suggestion (not the KIP's): the share partitions themselves are transaction participants, and
  their markers go to each one's current leader.

The staging itself (the share-partition leader's side) is kipviz.broker.share_txn."""
from __future__ import annotations

from ..schema import events as ev
from ..schema.error_codes import CODE

NONE = 0
E = CODE


class ShareTransactions:
    """The KIP-1289 side of one TransactionCoordinator (`txns`: its transactions, partitions and markers)."""

    def __init__(self, txns):
        self.txns = txns
        self.cluster = txns.cluster

    def check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int) -> int:
        """Read-only fencing check for TxnShareAcknowledge (KIP-1289 corner cases 3 and 14): the
        producer id/epoch must be the transactional id's current ones. Unknown id ->
        TRANSACTIONAL_ID_NOT_FOUND; other producer id -> INVALID_PRODUCER_ID_MAPPING; older epoch
        -> PRODUCER_FENCED; newer epoch -> INVALID_PRODUCER_EPOCH; a transaction that is already
        ending (Prepare*) -> INVALID_TXN_STATE. (Interpretation of the KIP's error list.)"""
        txn = self.txns.transactions.get(transactional_id)
        if txn is None or txn.state == "Dead":
            return E["TRANSACTIONAL_ID_NOT_FOUND"]
        if txn.producer_id != producer_id:
            return E["INVALID_PRODUCER_ID_MAPPING"]
        if producer_epoch < txn.producer_epoch:
            return E["PRODUCER_FENCED"]
        if producer_epoch > txn.producer_epoch:
            return E["INVALID_PRODUCER_EPOCH"]
        if txn.state in ("PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            return E["INVALID_TXN_STATE"]
        return NONE

    def add_state_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions, *, via: str = "TxnShareAcknowledge") -> int:
        """The share-partition leader registers the __share_group_state-N partition(s) in the
        transaction with a broker-internal AddPartitionsToTxn (TV2 implicit add), so EndTxn sends
        WriteTxnMarkers there. Written to __transaction_state like any partition
        (TransactionLogValue unchanged). Returns 0 or the error (fencing errors mapped as
        check_producer does)."""
        txns = self.txns
        tps = [tuple(tp) for tp in partitions]
        err = self.check_producer(transactional_id, producer_id, producer_epoch)
        if not err:     # (through the cluster, as every part reaches the coordinator)
            err = self.cluster.txns.add_partitions(transactional_id, producer_id, producer_epoch, tps,
                                                   cause="implicit-add", tv2=True)
        self.cluster.emit(ev.ShareStatePartitionsAdded, transactional_id=transactional_id, producer_id=producer_id,
                          producer_epoch=producer_epoch, partitions=tuple(tps), via=via, error_code=err,
                          coordinator=txns.coordinator_broker(transactional_id))
        return err

    def add_participants(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         participants, *, broker: int, via: str = "TxnShareAcknowledge") -> int:
        """share_marker_routing "participants" -- THE KIT'S SUGGESTION, NOT KIP-1289 (its page says
        the coordinator "does NOT need to track share-partitions as transaction participants"): the
        share-partition leader registers each share partition it is about to stage on, keyed
        (group, topic id, partition), with the same broker-internal AddPartitionsToTxn it sends for
        __share_group_state-N (a share partition is one group's view of a topic partition, so the
        group is part of the key; the suggestion would carry it in new AddPartitionsToTxn and
        WriteTxnMarkers fields). Why the leader and not the client: it is the broker that stages,
        so registration and staging are one step there (an error -> nothing staged, corner case 2),
        the TV2 way Produce v12 adds its partition implicitly, and no client change or extra round
        trip. Kept in TxnMetadata only (not in TransactionLogValue: the model does not fail the
        transaction coordinator over; a real design would persist them as a tagged field).
        Returns 0 or the error (fencing as check_producer)."""
        keys = [tuple(k) for k in participants]
        err = self.check_producer(transactional_id, producer_id, producer_epoch)
        txn = self.txns.transactions.get(transactional_id)
        if not err:
            for k in keys:
                txn.share_participants.setdefault(k, None)
        self.cluster.emit(ev.ShareParticipantsAdded, transactional_id=transactional_id, producer_id=producer_id,
                          producer_epoch=producer_epoch, broker=broker, via=via,
                          share_participants=tuple((g, str(t), p) for g, t, p in keys),
                          share_partitions=tuple(f"{g}/{self._name(t, p)}" for g, t, p in keys),
                          error_code=err, coordinator=self.txns.coordinator_broker(transactional_id))
        return err

    def send_markers(self, txn) -> None:
        """share_marker_routing "participants" (the kit's suggestion, not KIP-1289): one
        WriteTxnMarkers per share participant of `txn` (a TxnMetadata) to the share partition's
        leader as it is NOW (the metadata at EndTxn, as for any partition). No control batch: a
        share partition has no log of its own; its leader resolves the TX_PENDING records
        (share_txn.on_participant_marker) and persists the outcome as a ShareUpdate. A leader that
        is down (or a partition held back by markers.hold_for) is retried, like a data
        partition's; a topic that is gone drops the participant."""
        from . import share_txn
        cluster, txns, tid = self.cluster, self.txns, txn.transactional_id
        for key in list(txn.pending_share_markers):
            group, topic_id, p = key
            topic = cluster.topics.live(topic_id)
            if topic is None or not 0 <= p < len(topic.partitions):
                cluster.emit(ev.ShareMarkerDropped, transactional_id=tid, group=group, topic_id=str(topic_id), partition=p)
                txn.pending_share_markers.pop(key)
                continue
            leader = topic.partitions[p].leader
            if leader in cluster.down or (topic.name, p) in txns.markers.held_partitions:
                continue
            cluster.emit(ev.ShareMarkerSent, broker=leader, coordinator=txns.coordinator_broker(tid),
                         transactional_id=tid, group=group, topic=topic.name, partition=p, marker=txn.marker,
                         producer_id=txn.marker_producer_id, producer_epoch=txn.marker_epoch)
            share_txn.on_participant_marker(cluster, group, topic_id, p, txn.marker_producer_id,
                                            txn.marker == "COMMIT", txn.marker_epoch, broker=leader)
            txn.pending_share_markers.pop(key)

    def _name(self, topic_id, partition: int) -> str:
        topic = self.cluster.topics.live(topic_id)
        return f"{topic.name if topic is not None else topic_id}-{partition}"
