"""A producer that sends many records per Produce request, as Kafka's RecordAccumulator does after
linger.ms: the sample workloads need millions of records, and kipviz.clients.Producer.send writes
one record per request. Everything else (versions, transactions, offsets, errors, retries) is the
Producer model's own behaviour."""
from __future__ import annotations

from ..clients.base import E, _Retry
from ..clients.producer import (
    DUPLICATE_SEQUENCE_NUMBER,
    FENCED,
    RETRIABLE,
    AbortableError,
    FatalError,
    Producer,
    ProducerFencedError,
)
from ..records import write_batch


class BatchProducer(Producer):
    def send_batch(self, topic: str, partition: int, records: list[tuple]) -> int:
        """Produce (key, value[, headers]) records to one partition as one record batch; returns
        the batch's base offset."""
        if self.transactional_id:
            self._require("IN_TRANSACTION", what="send")
        else:
            self._require("READY", "UNINITIALIZED", what="send")
            if self.producer_id < 0:
                self.init_transactions()
        if self.topic_info(topic) is None:
            self._retrying("Metadata", lambda: self._need_topic(topic))
        tp = (topic, partition)
        if self.transactional_id and not self.tv2 and tp not in self._txn_partitions:
            self._add_partition(tp)
        if self.transactional_id and self.tv2:
            self._transaction_started = True
        return self._retrying("Produce", lambda: self._produce_batch_once(tp, records))

    def _produce_batch_once(self, tp, records) -> int:
        api = "Produce"
        topic, partition = tp
        info = self.topic_info(topic)
        if info is None or partition not in info["partitions"]:
            raise _Retry(E["UNKNOWN_TOPIC_OR_PARTITION"], refresh="metadata")
        v = self.version(api, cap=None if info["id"] is not None else 12)
        seq = self._sequences.get(tp, 0)
        now = self.cluster.now
        batch = write_batch(records, producer_id=self.producer_id, producer_epoch=self.producer_epoch,
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
            self._act("sent", topic=topic, partition=partition, offset=part["BaseOffset"], version=v,
                      records=len(records))
            return part["BaseOffset"]
        if code in (E["NOT_LEADER_OR_FOLLOWER"], E["UNKNOWN_TOPIC_OR_PARTITION"], E["UNKNOWN_TOPIC_ID"]):
            raise _Retry(code, refresh="metadata")
        if code in FENCED:
            raise self._fail(ProducerFencedError(code, api=api))
        if code == E["INVALID_TXN_STATE"]:
            raise self._fail(FatalError(code, api=api))
        if code in RETRIABLE:
            raise _Retry(code)
        raise self._fail(AbortableError(code, api=api))
