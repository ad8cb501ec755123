"""kipviz-kafka, the Python data source for Kafka (kipviz.spark.kafka_source): its options as
Spark's Kafka source reads them; read_kafka's frames equal read_samples' for the same records; bad
input as one clear line, in bounded time. What it reads on local[2], a standalone cluster and
Spark Connect: tests/test_spark_clusters.py."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.errors import KipvizError
from kipviz.spark import kafka_options as ko
from tests.spark_cluster import kafka_cluster  # noqa: F401
from tests.spark_session import spark  # noqa: F401

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9"}


# ---- options, without Spark --------------------------------------------------------------------
@pytest.mark.parametrize("opts, says", [
    ({}, "kafka.bootstrap.servers is required"),
    (BOOT, "exactly one of the options subscribe"),
    ({**BOOT, "subscribe": "a", "assign": '{"a":[0]}'}, "got subscribe, assign"),
    ({**BOOT, "assign": '{"a":"0"}'}, 'assign must be JSON like {"topicA":[0,1]}'),
    ({**BOOT, "subscribe": "a", "startingOffsets": "latest"}, "not allowed for a batch query"),
    ({**BOOT, "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "endingOffsets earliest (or -2) is not allowed"),
    ({**BOOT, "subscribe": "a", "startingOffsets": "{oops"}, "startingOffsets is not JSON"),
    ({**BOOT, "subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "use startingOffsets"),
    ({**BOOT, "subscribe": "a", "includeHeaders": "yes"}, "includeHeaders must be true or false"),
    ({**BOOT, "subscribe": "a", "maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger must be 1 or more"),
    ({**BOOT, "subscribe": "a", "kafka.isolation.level": "serializable"}, "read_uncommitted or read_committed"),
])
def test_bad_options_are_one_line(opts, says):
    with pytest.raises(KipvizError) as e:
        ko.parse(opts, streaming=False)
    assert says in str(e.value) and str(e.value).startswith("kipviz-kafka: ") and "\n" not in str(e.value)


def test_options_as_spark_reads_them():
    o = ko.parse({**BOOT, "SUBSCRIBE": "a, b", "startingOffsets": '{"a":{"0":5,"1":-2}}', "includeHeaders": "TRUE",
                  "kafka.isolation.level": "read_committed", "kafka.client.id": "me"}, streaming=False)
    assert o.subscribe == ["a", "b"] and o.starting == {("a", 0): 5, ("a", 1): ko.EARLIEST} and o.ending == "latest"
    assert o.include_headers and o.read_committed and o.conf["client.id"] == "me"
    assert o.conf["isolation.level"] == "read_committed" and o.conf["group.id"].startswith("spark-kafka-source-")
    # librdkafka reads committed by default; Spark's (Java) consumer does not: always spelled out
    assert ko.parse({**BOOT, "subscribe": "a"}, streaming=False).conf["isolation.level"] == "read_uncommitted"
    s = ko.parse({**BOOT, "assign": '{"b":[1,0]}'}, streaming=True)
    assert s.assign == [("b", 0), ("b", 1)] and s.starting == "latest"     # streaming starts at the end


def test_offsets_resolve_within_the_log():
    tps, marks = [("a", 0), ("a", 1)], {("a", 0): (2, 10), ("a", 1): (0, 0)}
    assert ko.resolve("earliest", tps, marks, "startingOffsets") == {("a", 0): 2, ("a", 1): 0}
    assert ko.resolve({("a", 0): ko.LATEST}, tps, marks, "startingOffsets") == {("a", 0): 10, ("a", 1): 0}
    with pytest.raises(KipvizError, match=r"offset 1 of a-0 is out of range: the log holds \[2, 10\)"):
        ko.resolve({("a", 0): 1}, tps, marks, "startingOffsets")
    assert ko.resolve({("a", 0): 1}, tps, marks, "startingOffsets", fail_on_data_loss=False)[("a", 0)] == 2
    with pytest.raises(KipvizError, match="names partitions the query does not read: b-0"):
        ko.resolve({("b", 0): 0}, tps, marks, "startingOffsets")
    assert ko.ranges({("a", 0): 2, ("a", 1): 0}, {("a", 0): 10, ("a", 1): 0}) == [("a", 0, 2, 10)]
    assert ko.ranges({("a", 0): 0}, {("a", 0): 10}, min_partitions=3) == [("a", 0, 0, 4), ("a", 0, 4, 8),
                                                                        ("a", 0, 8, 10)]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 20), st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1),
       st.integers(1, 500))
def test_rate_limit_splits_the_limit_as_spark_does(parts, limit):
    start = {("t", p): min(a, b) for p, (a, b) in parts.items()}
    latest = {("t", p): max(a, b) for p, (a, b) in parts.items()}
    end = ko.rate_limit(limit, start, latest)
    waiting = [tp for tp in latest if latest[tp] > start[tp]]
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in latest)
    assert all(end[tp] > start[tp] for tp in waiting)             # no partition with records starves
    # each share is floored, or 1 where it is under one offset: at most the limit plus one per partition
    assert sum(end[tp] - start[tp] for tp in latest) <= max(limit, 0) + len(waiting)
    if sum(latest[tp] - start[tp] for tp in latest) <= limit:
        assert end == latest


# ---- a batch read with nothing to read --------------------------------------------------------
@pytest.mark.spark
def test_a_topic_with_no_records_reads_as_an_empty_frame(spark, kafka_cluster):  # noqa: F811
    # no offset range at all: Spark still runs one task, on an InputPartition(None), that reads nothing
    from tests.kafka_checks import _admin_topics
    _admin_topics(kafka_cluster[0], {"nothing": 2})
    df = spark.read.format("kipviz-kafka").option("kafka.bootstrap.servers", kafka_cluster[0]) \
        .option("subscribe", "nothing").load()
    assert df.collect() == [] and df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                                                 "timestampType"]


# ---- timestamps: the producer's (CreateTime) or the broker's (LogAppendTime) ------------------
@pytest.mark.spark
def test_timestamps_and_their_type_as_the_topic_keeps_them(spark, kafka_cluster):  # noqa: F811
    # Kafka keeps the producer's timestamp in a CreateTime topic and stamps its own append time in
    # a LogAppendTime one (LogValidator); Spark's type ids: 0 CreateTime, 1 LogAppendTime
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    boot = kafka_cluster[0]
    admin = AdminClient({"bootstrap.servers": boot, "log_level": 3})
    for f in admin.create_topics([NewTopic("stamped-ct", 1, 1), NewTopic(
            "stamped-lat", 1, 1, config={"message.timestamp.type": "LogAppendTime"})]).values():
        f.result(10)
    sent = (int(time.time()) - 600) * 1000
    p = Producer({"bootstrap.servers": boot, "log_level": 3})
    for topic in ("stamped-ct", "stamped-lat"):
        p.produce(topic, value=b"x", timestamp=sent)
    assert p.flush(10) == 0
    rows = {r.topic: r for r in spark.read.format("kipviz-kafka").option("kafka.bootstrap.servers", boot)
            .option("subscribe", "stamped-ct,stamped-lat").load()
            .selectExpr("topic", "unix_millis(timestamp) AS ms", "timestampType").collect()}
    assert (rows["stamped-ct"].ms, rows["stamped-ct"].timestampType) == (sent, 0)
    assert rows["stamped-lat"].timestampType == 1 and rows["stamped-lat"].ms > sent + 500_000


# ---- read_kafka: the same frames as read_samples ------------------------------------------------
@pytest.mark.spark
def test_read_kafka_equals_read_samples_on_the_same_records(spark):  # noqa: F811
    """The sample run's input topic produced into a kipviz serve cluster (its partitions, keys,
    values, headers), read back with read_kafka (no JVM connector here: kipviz-kafka)."""
    from pathlib import Path

    from confluent_kafka import Producer
    from pyspark.sql import functions as F

    from kipviz.serve import Server
    from kipviz.spark import read_kafka, read_samples
    from kipviz.spark.readers import kafka_format
    from tests.kafka_checks import _admin_topics

    sample = read_samples(spark, Path(__file__).resolve().parent.parent / "sample_data" / "regular_eos")
    want = sample.topic("orders")
    rows = want.orderBy("partition", "offset").collect()
    parts = max(r.partition for r in rows) + 1
    with Server(brokers=1, log=lambda line: None) as srv:
        _admin_topics(srv.bootstrap, {"orders": parts})
        p = Producer({"bootstrap.servers": srv.bootstrap, "log_level": 3, "linger.ms": 20})
        for r in rows:
            p.produce("orders", key=r.key, value=r.value, partition=r.partition,
                      headers=[(h.key, h.value) for h in r.headers] or None)
        assert p.flush(30) == 0
        assert kafka_format(spark) == "kipviz-kafka"
        src = read_kafka(spark, srv.bootstrap, ["orders"])
        got = src.topic("orders")
        assert got.schema == want.schema                   # the same DataFrame layout
        cols = ["key", "value", "topic", "partition", "offset", "timestampType"]
        # no headers: Spark's source gives null where the sample files hold an empty list
        norm = F.coalesce("headers", F.array().cast(got.schema["headers"].dataType)).alias("headers")
        a, b = got.select(*cols, norm), want.select(*cols, norm)
        assert got.count() == len(rows) and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
        assert src.errors.count() == 0


# ---- bad input: one clear line, in bounded time -------------------------------------------------
def _read(spark, **opts):  # noqa: F811
    r = spark.read.format("kipviz-kafka")
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def _fails(fn, timeout_s: float) -> str:
    from kipviz.spark.session import error_line
    t0 = time.monotonic()
    with pytest.raises(Exception) as e:
        fn()
    assert time.monotonic() - t0 < timeout_s
    line = str(e.value) if isinstance(e.value, KipvizError) else error_line(e.value)
    assert line and "\n" not in line and "Traceback" not in line, line
    return line


@pytest.mark.spark
def test_bad_input_is_one_clear_line(spark, kafka_cluster):  # noqa: F811
    from kipviz.spark import read_kafka
    boot = kafka_cluster[0]
    quick = {"metadataTimeoutMs": "2000"}
    line = _fails(lambda: read_kafka(spark, "127.0.0.1:9", ["plain"], options=quick), 20)
    assert line.startswith("kipviz-kafka: no broker of 127.0.0.1:9 answered within 2 s")
    line = _fails(lambda: read_kafka(spark, boot, ["no-such-topic"]), 20)
    assert line.startswith(f"kipviz-kafka: topic 'no-such-topic' does not exist on {boot}")
    line = _fails(lambda: read_kafka(spark, boot, ["plain"], starting_offsets='{"plain":{"0":500}}'), 20)
    assert line == "kipviz-kafka: startingOffsets: offset 500 of plain-0 is out of range: the log holds [0, 20)"
    # the same through Spark itself (the planner runs in Spark's Python worker): its traceback's last line
    line = _fails(lambda: _read(spark, **{"kafka.bootstrap.servers": boot, "subscribe": "no-such-topic"}).count(), 120)
    assert line.startswith("kipviz-kafka: topic 'no-such-topic' does not exist")


@pytest.mark.spark
def test_a_broker_that_dies_mid_stream_fails_the_query_in_bounded_time(spark):  # noqa: F811
    from confluent_kafka import Producer

    from kipviz.serve import Server
    from kipviz.spark.kafka_source import start_query
    from kipviz.spark.session import error_line
    from tests.kafka_checks import _admin_topics
    srv = Server(brokers=1, log=lambda line: None).start()
    try:
        _admin_topics(srv.bootstrap, {"dying": 1})
        q = start_query(lambda: spark.readStream.format("kipviz-kafka").option("kafka.bootstrap.servers", srv.bootstrap)
                        .option("subscribe", "dying").option("startingOffsets", "earliest")
                        .option("metadataTimeoutMs", "2000").option("kafkaConsumer.pollTimeoutMs", "2000").load()
                        .writeStream.format("memory").queryName("kipviz_dying")
                        .trigger(processingTime="300 milliseconds").start())
        p = Producer({"bootstrap.servers": srv.bootstrap, "log_level": 3})
        p.produce("dying", value=b"x")
        assert p.flush(10) == 0
        end = time.monotonic() + 60
        while spark.sql("SELECT count(*) FROM kipviz_dying").collect()[0][0] < 1 and time.monotonic() < end:
            time.sleep(0.3)
        del p
    finally:
        srv.stop()
    t0 = time.monotonic()
    try:
        q.awaitTermination(60)
    except Exception:  # noqa: BLE001 - the query's failure is read below
        pass
    took = time.monotonic() - t0
    assert not q.isActive and took < 60, took
    line = error_line(q.exception())
    assert line and "\n" not in line
    assert line.startswith("kipviz-kafka: no broker of") or "no record for 2 s" in line, line
