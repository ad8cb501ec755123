"""What the kipviz-kafka source must show, as functions of a SparkSession, so that the same checks
run on local[2] (in the test process), on the standalone cluster and on Spark Connect (each in a
subprocess: one Python process holds one kind of session):

    python -m tests.kafka_checks (--master URL | --remote sc://...) BOOTSTRAP --out FILE \
        [--sample DIR --cli analyze --cli verify-eos]       # the CLI on the same driver first

produce() writes the records into a `kipviz serve` cluster and returns what a reader must see."""
from __future__ import annotations

import argparse
import json
import sys
import time
import uuid

WAIT_S = 10
PLAIN, TXN = "plain", "txn"
# the records' own CreateTime timestamps, from an hour ago: the log keeps them as sent, and its
# time retention (retention.ms, 7 days) would delete records stamped longer ago (as Kafka does)
T0_MS = (int(time.time()) - 3600) * 1000


def _admin_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        f.result(WAIT_S)


def produce(bootstrap: str) -> dict:
    """PLAIN: 40 records over 2 partitions, keys, values, headers (none on every fifth: a null
    column, as Spark's source gives), own timestamps. TXN (1 partition): 3 committed, 2 aborted,
    2 committed. Returns the rows a reader must see: {"plain": [...], "txn_all": [...], "txn_committed": [...]}."""
    from confluent_kafka import Producer
    _admin_topics(bootstrap, {PLAIN: 2, TXN: 1})
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "linger.ms": 5})
    plain = []
    for i in range(40):
        part, headers = i % 2, ([("n", b"%d" % i), ("kind", b"even" if i % 2 == 0 else b"odd")] if i % 5 else None)
        p.produce(PLAIN, key=b"k%02d" % i, value=b"value-%d" % i, partition=part, headers=headers,
                  timestamp=T0_MS + i * 1000)
        plain.append({"key": "k%02d" % i, "value": "value-%d" % i, "partition": part, "offset": i // 2,
                      "timestamp_ms": T0_MS + i * 1000, "timestampType": 0,
                      "headers": [[k, v.decode()] for k, v in headers] if headers else None})
    assert p.flush(WAIT_S) == 0
    tx = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "transactional.id": f"checks-{uuid.uuid4()}"})
    tx.init_transactions(WAIT_S)
    everything, committed, offset = [], [], 0
    for values, commit in ((["c0", "c1", "c2"], True), (["a0", "a1"], False), (["c3", "c4"], True)):
        tx.begin_transaction()
        for v in values:
            tx.produce(TXN, value=v.encode(), partition=0)
        tx.flush(WAIT_S)
        (tx.commit_transaction if commit else tx.abort_transaction)(WAIT_S)
        for v in values:
            everything.append([v, offset])
            if commit:
                committed.append([v, offset])
            offset += 1
        offset += 1                                   # the marker takes an offset
    plain.sort(key=lambda r: (r["partition"], r["offset"]))
    return {"plain": plain, "txn_all": everything, "txn_committed": committed}


def _rows(df) -> list[dict]:
    from pyspark.sql import functions as F
    out = (df.select(F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"),
                     "topic", "partition", "offset", F.unix_millis("timestamp").alias("timestamp_ms"),
                     "timestampType", "headers")
           .orderBy("topic", "partition", "offset").collect())
    return [{"key": r.key, "value": r.value, "partition": r.partition, "offset": r.offset,
             "timestamp_ms": r.timestamp_ms, "timestampType": r.timestampType,
             "headers": [[h.key, h.value.decode() if h.value is not None else None] for h in r.headers]
             if r.headers is not None else None} for r in out]


def _reader(spark, bootstrap: str, **opts):
    r = spark.read.format("kipviz-kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def batch_rows(spark, bootstrap: str) -> list[dict]:
    return _rows(_reader(spark, bootstrap, subscribe=PLAIN, includeHeaders="true"))


def txn_values(spark, bootstrap: str, level: str) -> list:
    df = _reader(spark, bootstrap, subscribe=TXN, **{"kafka.isolation.level": level})
    return [[r.value.decode(), r.offset] for r in df.orderBy("offset").collect()]


def streaming_pickup(spark, bootstrap: str, n: int = 6, timeout_s: float = 90) -> dict:
    """A streaming query over a new topic, started before any record exists; n records produced
    once its first (empty) micro-batch ran; the values it saw, and how long they took to show."""
    from confluent_kafka import Producer

    from kipviz.spark.kafka_source import start_query
    topic, name = f"stream-{uuid.uuid4().hex[:8]}", f"kipviz_stream_{uuid.uuid4().hex[:8]}"
    _admin_topics(bootstrap, {topic: 2})
    q = start_query(lambda: spark.readStream.format("kipviz-kafka").option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", topic).option("startingOffsets", "latest").option("maxOffsetsPerTrigger", "4")
                    .load().selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
                    .writeStream.format("memory").queryName(name).trigger(processingTime="500 milliseconds").start(),
                    timeout_s=timeout_s)
    try:
        end = time.monotonic() + timeout_s
        before = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
        p = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
        for i in range(n):
            p.produce(topic, value=b"s%d" % i, partition=i % 2)
        assert p.flush(WAIT_S) == 0
        t0 = time.monotonic()
        seen: list = []
        while len(seen) < n and time.monotonic() < end:
            time.sleep(0.3)
            seen = sorted(r.value for r in spark.sql(f"SELECT value FROM {name}").collect())
        took = time.monotonic() - t0
        # the property, not pr["numInputRows"]: a Connect client's progress (from JSON) has only the sources' counts
        def counted():
            return [pr.numInputRows for pr in q.recentProgress if pr.numInputRows]
        # a micro-batch's rows reach the memory sink before its progress is posted (a Connect client
        # once saw all six rows and one batch's progress of two): wait, bounded, for every row's
        while sum(counted()) < len(seen) and q.isActive and time.monotonic() < end:
            time.sleep(0.3)
        batches = counted()
        return {"before": before, "seen": seen, "seconds": round(took, 2), "batches_with_rows": len(batches),
                "max_rows_per_batch": max(batches, default=0),
                "exception": None if q.exception() is None else str(q.exception())[-3000:]}
    finally:
        q.stop()


def run_all(spark, bootstrap: str) -> dict:
    return {"plain": batch_rows(spark, bootstrap), "txn_all": txn_values(spark, bootstrap, "read_uncommitted"),
            "txn_committed": txn_values(spark, bootstrap, "read_committed"),
            "stream": streaming_pickup(spark, bootstrap)}


def run_cli(argv: list[str]) -> dict:
    """`kipviz ARGV` in this process (kipviz.cli.main, what the console script calls): its exit
    status, stdout and stderr. Several commands in one process share its driver (the CLI
    reuses the session running), so a cluster's driver and executors start once for all."""
    import contextlib
    import io

    from kipviz.cli import main as cli_main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli_main(argv)
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main(argv=None) -> int:
    """Each --cli COMMAND on --sample (`kipviz COMMAND SAMPLE --master/--remote URL`), then the
    source's checks, in one driver; the results as JSON in --out (a failure is recorded, not
    raised, so that one does not hide the others)."""
    import traceback
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--master")
    where.add_argument("--remote")
    ap.add_argument("--cli", action="append", default=[], help="a kipviz command to run on --sample first")
    ap.add_argument("--sample")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    at = ["--master", a.master] if a.master else ["--remote", a.remote]
    res: dict = {"cli": {}, "checks": None, "error": None, "seconds": {}}
    for cmd in a.cli:
        t0 = time.monotonic()
        res["cli"][cmd] = run_cli([cmd, a.sample, *at])
        res["seconds"][cmd] = round(time.monotonic() - t0, 1)
    try:
        from kipviz.spark import session
        t0 = time.monotonic()
        spark = session(a.master) if a.master else session(remote=a.remote)
        res["checks"] = run_all(spark, a.bootstrap)
        res["seconds"]["checks"] = round(time.monotonic() - t0, 1)
    except Exception:  # noqa: BLE001 - written into the results, read by the test
        res["error"] = traceback.format_exc()[-4000:]
    with open(a.out, "w") as fh:
        json.dump(res, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
