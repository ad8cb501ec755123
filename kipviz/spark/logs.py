"""A run's logs decoded once, for every analysis: decode_all(source) -> Logs.

    logs = decode_all(src)
    logs.offsets, logs.transactions, logs.share_state     # decoded rows (kipviz.spark.decode)
    logs.records("out")                                   # a topic's records with their batch flags
    logs.errors                                           # every problem, one row each

Decoded frames are persisted (memory, spilling to disk) so that the analyses do not run the
Python decoders again; logs.unpersist() frees them. Offset commits inside an aborted or unfinished
transaction (TxnOffsetCommit) are not offsets a group has: they are left out of logs.offsets when
the run has the batches of __consumer_offsets."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..schema.topics import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE
from . import decode, txnview

__all__ = ["Logs", "decode_all"]


@dataclass
class Logs:
    """A run's logs decoded in Spark: offsets, transactions and share state, with its events and requests."""
    source: object
    offsets: object
    transactions: object
    share_state: object
    _errors: list = field(default_factory=list)
    _records: dict = field(default_factory=dict)
    _persisted: list = field(default_factory=list)

    @property
    def spark(self):
        """The Spark session."""
        return self.source.spark

    @property
    def events(self):
        """The run's events frame."""
        return self.source.events

    @property
    def requests(self):
        """The run's requests frame."""
        return self.source.requests

    def records(self, topic: str):
        """The topic's records (decode_batches layout, no payload) with batch_seq, marker_offset,
        marker_type, marker_seq, visibility and txn_no (kipviz.spark.txnview); from the
        Kafka-source frame when the run has no batches (everything visible, no transaction
        numbers)."""
        if topic not in self._records:
            from pyspark.sql import functions as F
            batches = self.source.batches_of(topic)
            if batches is None:
                recs = decode.decode_topic(self.source.topic(topic)).withColumns({
                    "batch_seq": F.lit(None).cast("bigint"), "marker_offset": F.lit(None).cast("bigint"),
                    "marker_type": F.lit(None).cast("string"), "marker_seq": F.lit(None).cast("bigint"),
                    "visibility": F.lit("visible"),
                    "txn_no": F.lit(None).cast("bigint")})
                self._records[topic] = recs
            else:
                batches = batches.filter(F.col("topic") == topic)
                # one decode, kept once and without the (null) payload columns, which are added back on
                # top: the view decodes only the (few) control batches itself, and the error rows ride
                # along the left join to be split off the kept frame
                view = txnview.batch_view(batches)
                full = self.keep(txnview.with_visibility(decode.decode_batches_no_payload(batches), view))
                ok, bad = decode.split_errors(full, f"batches/{topic}")
                self._errors.append(bad)
                self._records[topic] = decode.with_null_payload(ok.filter(~F.col("is_control")))
        return self._records[topic]

    @property
    def errors(self):
        """dataset, partition, offset, error_kind (missing-column, missing-file, wrong-type,
        bad-value, corrupt, unknown-version, unknown-record-type), error, error_path: everything
        that did not read or decode, one row per record (or column, or file)."""
        out = self.source.errors
        for e in self._errors:
            out = out.unionByName(e)
        return out

    def keep(self, df):
        """df persisted (memory, spilling to disk) until unpersist()."""
        from pyspark import StorageLevel
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(df)
        return df

    def unpersist(self) -> None:
        """Release every frame cached for these logs."""
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()
        self._records.clear()


def decode_all(src) -> Logs:
    """Decode the three internal topics of a Source (read_samples / read_kafka / from_trace)."""
    from pyspark.sql import functions as F
    logs = Logs(src, None, None, None)
    parts = {}
    for topic, fn in ((CONSUMER_OFFSETS, decode.decode_offsets), (TRANSACTION_STATE, decode.decode_transactions),
                      (SHARE_GROUP_STATE, decode.decode_share_state)):
        decoded = logs.keep(fn(src.topic(topic)))
        ok, bad = decode.split_errors(decoded, topic)
        logs._errors.append(bad)
        parts[topic] = ok
    offsets = parts[CONSUMER_OFFSETS]
    batches = src.batches_of(CONSUMER_OFFSETS)
    if batches is not None:       # TxnOffsetCommit records count once their transaction commits
        view = txnview.batch_view(batches).filter(F.col("visibility").isin("aborted", "open"))
        hidden = view.select(F.col("partition").alias("log_partition"),
                             F.explode(F.sequence("base_offset", "last_offset")).alias("log_offset"))
        offsets = offsets.join(F.broadcast(hidden), ["log_partition", "log_offset"], "left_anti")
    logs.offsets = offsets
    logs.transactions = parts[TRANSACTION_STATE]
    logs.share_state = parts[SHARE_GROUP_STATE]
    return logs
