"""kipviz-kafka: a Kafka source for Spark that needs no JVM connector -- PySpark's Python data
source API with confluent-kafka (librdkafka) reading on the executors.

    spark = kipviz.spark.session()            # registers it
    df = (spark.read.format("kipviz-kafka").option("kafka.bootstrap.servers", srv.bootstrap)
          .option("subscribe", "orders").option("includeHeaders", "true").load())
    stream = spark.readStream.format("kipviz-kafka").option(...).load()

The schema and options are Spark's Kafka source's (kipviz.spark.kafka_options lists them): key,
value, topic, partition, offset, timestamp, timestampType (and headers with includeHeaders). The
driver plans one input partition per topic partition and offset range (from the watermarks: the
LSO under read_committed); each task assigns its partition, seeks to the range's start and reads
until the range's end, handing Spark Arrow record batches. Under read_committed librdkafka drops
aborted records and markers itself (the offsets of a range then have gaps, as with Spark's own
source). A task that gets no record for kafkaConsumer.pollTimeoutMs fails with one line saying
where it waited."""
from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from . import kafka_options as ko
from . import schemas

__all__ = ["KafkaDataSource", "NAME", "check_batch", "read_range", "start_query", "ARROW_SCHEMA",
           "ARROW_SCHEMA_NO_HEADERS", "BATCH_ROWS"]

NAME = ko.NAME
# Spark's Kafka source gives Spark timestamps (microseconds); the records hold milliseconds
ARROW_SCHEMA = pa.schema([f if f.name != "timestamp" else pa.field("timestamp", pa.timestamp("us", tz="UTC"))
                          for f in schemas.KAFKA])
ARROW_SCHEMA_NO_HEADERS = pa.schema([f for f in ARROW_SCHEMA if f.name != "headers"])
BATCH_ROWS = 20_000
_DDL_NO_HEADERS = schemas.KAFKA_DDL.rsplit(", headers", 1)[0]


@dataclass
class KafkaRange(InputPartition):
    """One task's work: the records of topic-partition at offsets [start, end)."""
    topic: str
    partition: int
    start: int
    end: int
    conf: dict
    include_headers: bool
    poll_timeout_ms: int
    fail_on_data_loss: bool = True


def _batch(cols: list[list], headers: bool) -> pa.RecordBatch:
    schema = ARROW_SCHEMA if headers else ARROW_SCHEMA_NO_HEADERS
    # Kafka's TimestampType ids (clients/.../record/TimestampType.java: -1 none, 0 CreateTime,
    # 1 LogAppendTime) are librdkafka's RD_KAFKA_TIMESTAMP_* minus one
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)],
                                      schema=schema)


def _after_error(m, where: str, at: int) -> int:
    """Where reading is after an error message: the end of what is readable at a partition EOF (the
    LSO under read_committed), the same offset after a retriable error; KipvizError otherwise."""
    from confluent_kafka import KafkaError
    err = m.error()
    if err.code() == KafkaError._PARTITION_EOF:
        return max(at, m.offset())
    if err.code() == KafkaError._AUTO_OFFSET_RESET:
        raise ko.source_error(f"{where}: offset {at} is out of range (no longer or not yet in the "
                              f"log; failOnDataLoss=false reads from the earliest instead)")
    if err.fatal() or not err.retriable():
        raise ko.source_error(f"{where}: {err.str()}")
    return at


def read_range(r: KafkaRange, batch_rows: int = BATCH_ROWS):
    """The records of one range as Arrow batches; KipvizError when the range cannot be read (its
    start no longer in the log, no record for pollTimeoutMs, a broker error)."""
    from confluent_kafka import TopicPartition
    if not isinstance(r, KafkaRange):
        # no range at all (every partition empty): Spark still runs one task, on InputPartition(None)
        # (pyspark/sql/worker/plan_data_source_read.py), which reads nothing
        return
    c = ko.consumer({**r.conf, "auto.offset.reset": "error" if r.fail_on_data_loss else "earliest"})
    where = f"{r.topic}-{r.partition}"
    try:
        c.assign([TopicPartition(r.topic, r.partition, r.start)])
        cols: list[list] = [[] for _ in range(8 if r.include_headers else 7)]
        at, waited_since = r.start, time.monotonic()
        while at < r.end:
            msgs = c.consume(num_messages=min(batch_rows, 10_000), timeout=0.2)
            if not msgs:
                if (time.monotonic() - waited_since) * 1000 > r.poll_timeout_ms:
                    raise ko.source_error(f"{where}: no record for {r.poll_timeout_ms / 1000:g} s at offset {at} "
                                    f"(reading up to {r.end}); is the broker up? (kafkaConsumer.pollTimeoutMs)")
                continue
            waited_since = time.monotonic()
            for m in msgs:
                if m.error() is not None:
                    at = _after_error(m, where, at)
                    continue
                off = m.offset()
                if off >= r.end:
                    at = off
                    break
                ts_type, ts = m.timestamp()
                row = (m.key(), m.value(), r.topic, r.partition, off, ts * 1000, ts_type - 1)
                for col, v in zip(cols, row, strict=False):
                    col.append(v)
                if r.include_headers:
                    h = m.headers()
                    cols[7].append([{"key": k, "value": v} for k, v in h] if h else None)
                at = off + 1
            if len(cols[0]) >= batch_rows:
                yield _batch(cols, r.include_headers)
                cols = [[] for _ in cols]
        if cols[0]:
            yield _batch(cols, r.include_headers)
    finally:
        c.close()


def _plan(o: ko.Options, streaming: bool = False):
    """(partitions, watermarks) of the options' subscription, read on the driver."""
    cl = ko.Cluster(o)
    try:
        tps = cl.partitions()
        return tps, cl.watermarks(tps)
    finally:
        cl.close()


def _tasks(o: ko.Options, start: dict, end: dict) -> list[KafkaRange]:
    return [KafkaRange(t, p, f, u, o.conf, o.include_headers, o.poll_timeout_ms, o.fail_on_data_loss)
            for t, p, f, u in ko.ranges(start, end, o.min_partitions)]


def check_batch(options) -> list[KafkaRange]:
    """The input partitions a batch read of `options` would have, planned here (KipvizError when
    it cannot be: a bad option, no broker, no such topic, an offset out of range)."""
    return KafkaBatchReader(options).partitions()


class KafkaBatchReader(DataSourceReader):
    """The batch reader of the Python Kafka source: one task per partition range."""
    def __init__(self, options):
        self.o = ko.parse(options, streaming=False)

    def partitions(self):
        """The read tasks: each partition from its starting to its ending offset."""
        tps, marks = _plan(self.o)
        start = ko.resolve(self.o.starting, tps, marks, "startingOffsets", fail_on_data_loss=self.o.fail_on_data_loss)
        end = ko.resolve(self.o.ending, tps, marks, "endingOffsets")
        return _tasks(self.o, start, end)

    def read(self, partition):
        """The rows of one task's offset range."""
        yield from read_range(partition)


class KafkaStreamReader(DataSourceStreamReader):
    """Micro-batches: offsets are Spark's Kafka offset JSON ({"topic": {"0": 42}}); the latest
    offset is each partition's high watermark (the LSO under read_committed), cut down to
    maxOffsetsPerTrigger; a partition that appears later starts at its earliest offset."""

    def __init__(self, options):
        self.o = ko.parse(options, streaming=True)
        self._latest: dict | None = None

    def initialOffset(self):
        """The starting offsets, as JSON."""
        tps, marks = _plan(self.o, streaming=True)
        return ko.to_json(ko.resolve(self.o.starting, tps, marks, "startingOffsets",
                                     fail_on_data_loss=self.o.fail_on_data_loss))

    def getDefaultReadLimit(self):
        """maxOffsetsPerTrigger as a read limit, else everything available."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
        return ReadMaxRows(self.o.max_offsets) if self.o.max_offsets else ReadAllAvailable()

    def latestOffset(self, start, limit):
        """The offsets the next micro-batch reads up to (within `limit`), as JSON."""
        from pyspark.sql.streaming.datasource import ReadMaxRows
        tps, marks = _plan(self.o, streaming=True)
        frm = ko.from_json(start)
        for tp in tps:
            frm.setdefault(tp, marks[tp][0])            # a new partition: from its earliest offset
        latest = {tp: max(marks[tp][1], frm[tp]) for tp in tps}
        self._latest = ko.to_json(latest)
        if isinstance(limit, ReadMaxRows):
            latest = ko.rate_limit(limit.max_rows, frm, latest)      # (its docstring says maxRows)
        return ko.to_json(latest)

    def reportLatestOffset(self):
        """The latest offsets seen, for Spark's progress report."""
        return self._latest

    def partitions(self, start, end):
        """The read tasks of a micro-batch, from `start` to `end` (new partitions from their start)."""
        frm, until = ko.from_json(start), ko.from_json(end)
        new = [tp for tp in until if tp not in frm]
        if new:
            _, marks = _plan(self.o, streaming=True)
            frm.update({tp: marks[tp][0] for tp in new if tp in marks})
        return _tasks(self.o, frm, until)

    def read(self, partition):
        """The rows of one task's offset range."""
        yield from read_range(partition)

    def commit(self, end):
        """Nothing to do: like Spark's Kafka source, the query's checkpoint holds the offsets."""


# Spark runs a Python streaming source's driver side (initialOffset, latestOffset, ...) in a fresh
# Python process that must connect back within a fixed 10 s (PythonWorkerFactory.createSimpleWorker,
# not configurable); on an overloaded machine it can miss that, and the query dies initialising
_CONNECT_BACK = "Python worker failed to connect back"


def start_query(start, *, attempts: int = 3, timeout_s: float = 180.0):
    """start() -> a started StreamingQuery over kipviz-kafka, once its first micro-batch ran (or
    it stopped, or timeout_s passed). A query whose Python side did not connect back in time
    (see _CONNECT_BACK) is started again, up to `attempts` times in all; any other failure is
    left on the query (q.exception()) for the caller to report."""
    for attempt in range(1, attempts + 1):
        q = start()
        end = time.monotonic() + timeout_s
        while q.isActive and not q.recentProgress and time.monotonic() < end:
            time.sleep(0.2)
        failed = None if q.isActive else q.exception()
        if failed is None or _CONNECT_BACK not in str(failed) or attempt == attempts:
            return q
    raise AssertionError("unreachable")


class KafkaDataSource(DataSource):
    """spark.read / spark.readStream .format("kipviz-kafka"); see the module docstring."""

    @classmethod
    def name(cls):
        """The source's format name."""
        return NAME

    def schema(self):
        """The rows' schema: Spark's Kafka source columns (headers with includeHeaders)."""
        opts = {str(k).lower(): v for k, v in self.options.items()}
        return schemas.KAFKA_DDL if ko.bool_option(opts, "includeHeaders", False) else _DDL_NO_HEADERS

    def reader(self, schema):
        """The batch reader."""
        return KafkaBatchReader(self.options)

    def streamReader(self, schema):
        """The streaming reader."""
        return KafkaStreamReader(self.options)
