"""kipviz-kafka benchmark (`python benchmarks/spark.py --kafka`): the Python Kafka source's batch
read of N records from a `kipviz serve` cluster, against confluent-kafka reading the same
partitions in one process, and a streaming run's latency from produce to chart; the same job on
local[2], a standalone cluster (master + two 1-core workers from the wheel) and Spark Connect, as
ratios.

    python benchmarks/spark.py --kafka                          (1M records, local[2] + standalone + connect)
    python benchmarks/spark.py --kafka --kafka-records 200000 --where local[2]

Load. One kipviz serve broker, topic `bench` of 2 partitions, N records of a 16-byte key, a 100-byte
value and one header, produced by confluent-kafka before anything is timed (the model keeps them
in memory). Batch read: spark.read.format("kipviz-kafka") ... .write.format("noop") (every column
materialised), run twice in each session -- the first starts Spark's Python workers -- and the
second timed. Baseline: one Python process, a confluent-kafka Consumer per partition reading it to
its end (key, value, headers, offset and timestamp touched per record), the partitions one after
the other. Streaming: a query (trigger 500 ms) whose foreachBatch stamps each record's arrival
and redraws the notebook's chart (kipviz.spark.plots.step_chart); records produced at 20/s for
10 s, each carrying its produce time: latency = chart drawn - produced, p50 and max."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "bench"


def produce(bootstrap: str, n: int) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for f in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "linger.ms": 50, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 200000})
    value = b"v" * 100
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, key=b"key-%012d" % i, value=value, partition=i % 2, headers=[("h", b"1")])
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0
    return time.perf_counter() - t0


def baseline(bootstrap: str, n: int) -> float:
    """confluent-kafka reading both partitions to their ends in this one process."""
    from confluent_kafka import Consumer, TopicPartition
    t0 = time.perf_counter()
    got = 0
    for part in (0, 1):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "log_level": 3,
                      "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
        c.assign([TopicPartition(TOPIC, part, 0)])
        done = False
        while not done:
            for m in c.consume(10000, 1.0):
                if m.error() is not None:
                    done = True
                    break
                m.key(), m.value(), m.headers(), m.offset(), m.timestamp()
                got += 1
        c.close()
    assert got == n, (got, n)
    return time.perf_counter() - t0


def worker(bootstrap: str, n: int, master: str | None, remote: str | None) -> dict:
    """In a fresh process: the batch read (warm-up, then timed) and the streaming latency."""
    from kipviz.spark import session
    t0 = time.perf_counter()
    spark = session(master, batch=True) if master else session(remote=remote)
    out = {"startup_s": time.perf_counter() - t0}

    def read():
        (spark.read.format("kipviz-kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
         .option("includeHeaders", "true").load().write.format("noop").mode("overwrite").save())
    t0 = time.perf_counter()
    read()
    out["first_read_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    read()
    out["read_s"] = time.perf_counter() - t0
    out["rate"] = n / out["read_s"]
    if remote is None:                     # foreachBatch runs the chart here only in a classic session
        out["latency"] = latency(spark, bootstrap)
    return out


def latency(spark, bootstrap: str, rate: int = 20, seconds: float = 10) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kipviz.spark.kafka_source import start_query
    from kipviz.spark.plots import step_chart
    topic = f"latency-{os.getpid()}"          # each session's own: the runs share one server
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    lat: list[float] = []
    xs: list[float] = []

    def batch(df, _id):
        rows = df.select("value").collect()
        drawn = time.time()
        xs.append(drawn)
        step_chart(xs, {"records": list(range(len(xs)))}, title="latency", ylabel="n", xlabel="t")
        lat.extend(drawn - float(r.value.decode()) for r in rows)
    q = start_query(lambda: spark.readStream.format("kipviz-kafka").option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", topic).option("startingOffsets", "earliest").load()
                    .writeStream.foreachBatch(batch).trigger(processingTime="500 milliseconds").start())
    end = time.monotonic() + 180
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "linger.ms": 0})
    total = int(rate * seconds)
    for _ in range(total):
        p.produce(topic, value=repr(time.time()).encode())
        p.poll(0)
        time.sleep(1 / rate)
    p.flush(10)
    while len(lat) < total and time.monotonic() < end:
        time.sleep(0.2)
    q.stop()
    lat.sort()
    return {"records": len(lat), "p50_s": lat[len(lat) // 2] if lat else None, "max_s": lat[-1] if lat else None}


def run(n: int, where: list[str]) -> int:
    from kipviz.serve import Server
    sys.path.insert(0, str(ROOT))
    from tests import spark_cluster as sc
    print(f"kipviz-kafka benchmark: {n:,} records, load {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    srv = Server(brokers=1, log=lambda line: None).start()
    procs, results = [], {}
    try:
        print(f"produced {n:,} records in {produce(srv.bootstrap, n):.1f} s")
        b = baseline(srv.bootstrap, n)
        print(f"baseline (confluent-kafka, one process): {b:.1f} s = {n / b:,.0f} records/s")
        tmp = Path(tempfile.mkdtemp(prefix="kipviz-kafka-bench-"))
        for w in where:
            master = remote = None
            if w.startswith("local"):
                master = w
            elif w == "standalone":
                master, ps, _ = sc.start_standalone(tmp)
                procs += ps
            elif w == "connect":
                remote, p, _ = sc.start_connect(tmp)
                procs.append(p)
            args = [sys.executable, __file__, "--worker", srv.bootstrap, str(n)] + (
                ["--master", master] if master else ["--remote", remote])
            done = subprocess.run(args, env=sc.env(), capture_output=True, text=True, timeout=3600, cwd=ROOT)
            if done.returncode:
                print(f"{w}: failed: {done.stderr[-800:]}")
                continue
            r = results[w] = json.loads(done.stdout.strip().splitlines()[-1])
            lat = r.get("latency")
            print(f"{w}: start {r['startup_s']:.1f} s, first read {r['first_read_s']:.1f} s, read {r['read_s']:.1f} s "
                  f"= {r['rate']:,.0f} records/s ({r['rate'] * b / n:.2f}x the baseline)"
                  + (f"; streaming produce -> chart p50 {lat['p50_s']:.2f} s, max {lat['max_s']:.2f} s over "
                     f"{lat['records']} records" if lat and lat["p50_s"] is not None else ""))
            if w == "standalone":
                sc.stop(procs)
                procs = []
        if "local[2]" in results:
            for w, r in results.items():
                print(f"  {w} / local[2] read time: {r['read_s'] / results['local[2]']['read_s']:.2f}")
    finally:
        sc.stop(procs)
        srv.stop()
    print(f"load at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--worker":
    sys.path.insert(0, str(ROOT))
    boot, count = sys.argv[2], int(sys.argv[3])
    m = sys.argv[5] if sys.argv[4] == "--master" else None
    rm = sys.argv[5] if sys.argv[4] == "--remote" else None
    print(json.dumps(worker(boot, count, m, rm)))
