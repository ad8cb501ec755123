"""A live cluster's coordinators, followed by a Structured Streaming query while clients run.

    live = LiveMetrics(spark, srv.bootstrap, output_topic="orders-out").start()
    live.view()            # a chart that redraws after each micro-batch (in a notebook)
    ...                    # real clients produce, commit, share-consume
    live.stop()            # the query stops; live.frame() keeps what it measured

One query (format kipviz-kafka) reads __consumer_offsets, __transaction_state,
__share_group_state and the output topic; each micro-batch is decoded with the kit's decoders
(kipviz.spark.decode, inside Spark) and folded into the newest state per group, transactional id
and share partition. Each micro-batch adds one row: commits per second, open transactions, the
output topic's LSO gap (high watermark minus last stable offset: records an open transaction holds
back from read_committed readers), share deliveries per record (delivery_count over the newest
state batches), and consumer lag per partition (high watermark minus the newest committed offset)."""
from __future__ import annotations

import threading
import time

from ..schema.topics import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE

__all__ = ["LiveMetrics", "OPEN_STATES"]

# TransactionLog states of a transaction that has begun and not yet completed
# (core/.../transaction/TransactionState.scala; the kit's table: kipviz.broker.tables.transaction)
OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort"})
COLUMNS = ("t_s", "batch", "records", "commits_per_s", "open_transactions", "lso_gap", "deliveries_per_record",
           "max_lag")


class LiveMetrics:
    """See the module docstring. trigger_s: the micro-batch interval; options: more kipviz-kafka
    options (e.g. {"kafkaConsumer.pollTimeoutMs": "5000"})."""

    def __init__(self, spark, bootstrap: str, output_topic: str, *, trigger_s: float = 1.0,
                 options: dict | None = None, name: str = "kipviz_live"):
        self.spark, self.bootstrap, self.output_topic = spark, bootstrap, output_topic
        self.trigger_s, self.options, self.name = trigger_s, dict(options or {}), name
        self.rows: list[dict] = []
        self.committed: dict = {}         # (group, topic, partition) -> newest committed offset
        self.txn_state: dict = {}         # transactional id -> newest state
        self.share: dict = {}             # (group, topic id, partition) -> newest state batches
        self.lag: dict = {}               # partition -> lag of the newest row
        self.error: str | None = None
        self.query = None
        self._t0 = None
        self._last = None
        self._handle = None
        self._lock = threading.Lock()

    # ---- the query --------------------------------------------------------------------------------
    def start(self) -> LiveMetrics:
        """Start the query; returns once its first micro-batch ran (kafka_source.start_query)."""
        topics = ",".join((CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE, self.output_topic))
        reader = (self.spark.readStream.format("kipviz-kafka").option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", topics).option("startingOffsets", "earliest"))
        for k, v in self.options.items():
            reader = reader.option(k, str(v))
        from .kafka_source import start_query
        self._t0 = self._last = time.monotonic()
        self.query = start_query(lambda: reader.load().writeStream.queryName(self.name).foreachBatch(self._batch)
                                 .trigger(processingTime=f"{int(self.trigger_s * 1000)} milliseconds").start())
        return self

    def stop(self, timeout_s: float = 30) -> None:
        """Stop the query (the micro-batch under way finishes first, at most timeout_s)."""
        if self.query is not None and self.query.isActive:
            self.query.stop()
            self.query.awaitTermination(timeout_s)
        if self.query is not None and self.query.exception() is not None and self.error is None:
            from .session import error_line
            self.error = error_line(self.query.exception())

    def wait_for(self, batches: int, timeout_s: float = 60, *, with_records: bool = True) -> bool:
        """Wait until `batches` micro-batches (with records, unless with_records=False) have been
        measured; False at the timeout or when the query stopped."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if sum(r["records"] > 0 or not with_records for r in self.rows) >= batches:
                return True
            if self.query is not None and not self.query.isActive:
                return False
            time.sleep(0.2)
        return False

    # ---- one micro-batch --------------------------------------------------------------------------
    def _batch(self, df, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from . import decode
        df = df.persist()
        try:
            n = df.count()
            offsets = decode.decode_offsets(df.filter(F.col("topic") == CONSUMER_OFFSETS)).filter(
                F.col("error").isNull()).select("group", "topic", "partition", "committed_offset", "tombstone",
                                                "log_offset").collect()
            txns = decode.decode_transactions(df.filter(F.col("topic") == TRANSACTION_STATE)).filter(
                F.col("error").isNull()).select("transactional_id", "state", "tombstone", "log_offset").collect()
            share = decode.decode_share_state(df.filter(F.col("topic") == SHARE_GROUP_STATE)).filter(
                F.col("error").isNull()).select("group", "topic_id", "partition", "state_batches",
                                                "log_offset").collect()
        finally:
            df.unpersist()
        self._fold(batch_id, n, offsets, txns, share)

    def _fold(self, batch_id: int, n: int, offsets, txns, share) -> None:
        now = time.monotonic()
        commits = 0
        for r in sorted(offsets, key=lambda r: r.log_offset):
            key = (r.group, r.topic, r.partition)
            if r.tombstone:
                self.committed.pop(key, None)
            elif r.committed_offset is not None:
                self.committed[key] = r.committed_offset
                commits += 1
        for r in sorted(txns, key=lambda r: r.log_offset):
            if r.tombstone:
                self.txn_state.pop(r.transactional_id, None)
            else:
                self.txn_state[r.transactional_id] = r.state
        for r in sorted(share, key=lambda r: r.log_offset):
            self.share[(r.group, r.topic_id, r.partition)] = r.state_batches or []
        gap, lag = self._watermarks()
        records = deliveries = 0
        for batches in self.share.values():
            for b in batches:
                k = b.last_offset - b.first_offset + 1
                records += k
                deliveries += k * b.delivery_count
        with self._lock:
            self.lag = lag
            self.rows.append({"t_s": round(now - self._t0, 2), "batch": batch_id, "records": n,
                              "commits_per_s": round(commits / max(now - self._last, 1e-3), 2),
                              "open_transactions": sum(s in OPEN_STATES for s in self.txn_state.values()),
                              "lso_gap": gap, "deliveries_per_record": round(deliveries / records, 3) if records else 0.0,
                              "max_lag": max(lag.values(), default=0)})
        self._last = now
        if self._handle is not None:
            self._handle.update(self._html())

    def _watermarks(self) -> tuple[int, dict]:
        """(LSO gap summed over the output topic's partitions, lag per partition of the newest
        committed offsets on it), from the two watermarks of each partition."""
        from confluent_kafka import Consumer, TopicPartition
        marks = {}
        # the LSO first, then the high watermark: both only grow and LSO <= high watermark at any
        # moment, so read in this order the gap is never negative (read the other way round, a
        # transaction committed between the two reads drew the gap below the chart's axis)
        for level in ("read_committed", "read_uncommitted"):
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "kipviz-live-watermarks",
                          "isolation.level": level, "log_level": 3})
            try:
                md = c.list_topics(self.output_topic, timeout=5).topics.get(self.output_topic)
                for p in sorted(md.partitions) if md is not None and md.error is None else ():
                    marks.setdefault(p, {})[level] = c.get_watermark_offsets(TopicPartition(self.output_topic, p),
                                                                             timeout=5, cached=False)[1]
            finally:
                c.close()
        gap = sum(m["read_uncommitted"] - m["read_committed"] for m in marks.values()
                  if "read_uncommitted" in m and "read_committed" in m)
        lag = {}
        for (_group, topic, p), off in self.committed.items():
            if topic == self.output_topic and "read_uncommitted" in marks.get(p, {}):
                lag[p] = max(lag.get(p, 0), marks[p]["read_uncommitted"] - off)
        return gap, lag

    # ---- what it shows ----------------------------------------------------------------------------
    def frame(self):
        """The measurements so far, one row per micro-batch (pandas)."""
        import pandas as pd
        with self._lock:
            return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def charts(self) -> tuple[str, str]:
        """(the metrics over time, consumer lag per partition) as SVG."""
        from .plots import bar_chart, step_chart
        with self._lock:
            rows, lag = list(self.rows), dict(self.lag)
        xs = [r["t_s"] for r in rows]
        over_time = step_chart(xs, {"commits/s": [r["commits_per_s"] for r in rows],
                                    "open transactions": [r["open_transactions"] for r in rows],
                                    "LSO gap (records)": [r["lso_gap"] for r in rows],
                                    "share deliveries / record": [r["deliveries_per_record"] for r in rows]},
                               title="The cluster's coordinators, one point per micro-batch", ylabel="value",
                               xlabel="seconds since the query started", empty="no micro-batch yet",
                               integer=False)
        parts = sorted(lag)
        lags = bar_chart([f"{self.output_topic}-{p}" for p in parts], {"lag": [lag[p] for p in parts]},
                         title="Consumer lag per partition (newest committed offset)", ylabel="records",
                         empty="no committed offset yet")
        return over_time, lags

    def _html(self):
        from IPython.display import HTML
        a, b = self.charts()
        last = self.rows[-1] if self.rows else None
        note = (f"<p>micro-batch {last['batch']}: {last['records']} records; "
                f"{len(self.committed)} committed offsets, {len(self.txn_state)} transactional ids, "
                f"{len(self.share)} share partitions</p>" if last else "<p>waiting for the first micro-batch</p>")
        return HTML(f"<div>{a}</div><div>{b}</div>{note}")

    def view(self):
        """Show the charts; they redraw after every micro-batch until stop()."""
        from IPython.display import display
        self._handle = display(self._html(), display_id=True)
