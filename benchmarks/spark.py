"""kipviz Spark benchmark: sample generation of a share-group EOS workload, then decode + every
analysis on local[1] and local[2], and a single-process pyarrow/pandas baseline of the same decode.

    python benchmarks/spark.py                       (10M input records: generation takes minutes)
    python benchmarks/spark.py --records 1000000     (smaller; the 10M generation time is extrapolated)
    python benchmarks/spark.py --dir DIR             (reuse a sample directory already generated)
    python benchmarks/spark.py --strict              (exit status 1 when a target is missed)
    python benchmarks/spark.py --kafka               (the kipviz-kafka source: benchmarks/spark_kafka.py)

Generation. `kipviz.sampledata.generate("share_eos", DIR, records=N, seed=5)`: the KIP-1289
(proposed) share-group read-process-write workload with its seeded fault schedule, written as the
sample-data Parquet files (topics, batches, requests, events). Timed: wall clock of the whole call.

Spark. Each master runs in a fresh Python process (its own driver JVM, the CLI's session:
kipviz.spark.session(batch=True, large=...), i.e. BATCH_JAVA_OPTIONS, and LARGE_LOCAL_DEFAULTS
from 5M topic records on, with a 1 GB heap: --java-options, --driver-memory, --shuffle-partitions,
--conf KEY=VALUE). Start-up (not in the rate): the JVM, the session and the
Python workers (a two-row job that imports kipviz there). Then, timed: read_samples, then
  decode:   decode_all (the three internal topics, mapInArrow) + the output topic's batches with
            read_committed visibility (logs.records), each materialised (count);
  analyses: every analysis as `kipviz analyze` runs them (kipviz.spark.analyses.frames), each
            computed in full (written to Spark's "noop" sink), + verify_eos.
Records = the rows of every topic dataset of the run (input, output, internal topics: what
Spark's Kafka source would deliver) -- the unit of "records/s decoded and analysed".

Baseline. One Python process, no Spark: the same per-batch decoders (kipviz.spark.decode's
*_arrow functions, which the Spark jobs run inside mapInArrow) over pyarrow record batches of the
same files, then pandas for the read_committed view of the output (marker per producer). It is
compared with Spark's decode phase.

Targets: >= 200,000 records/s decoded and analysed on local[2]; local[2] >= 1.6x local[1];
Spark local[2] decode at least as fast as the single-process baseline; generation of 10M records
<= 3 minutes (extrapolated linearly when --records is smaller). Each line says PASS or MISS.
The first and last lines give the machine's speed (machine_speed), for comparing runs of different
days."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RPS = 200_000.0
TARGET_SCALING = 1.6
TARGET_GEN_S = 180.0
FULL = 10_000_000
SEED = 5


def generate(records: int, out: Path) -> float:
    from kipviz.sampledata import generate as gen
    t0 = time.perf_counter()
    gen("share_eos", out, records=records, seed=SEED, progress=sys.stderr.isatty())
    return time.perf_counter() - t0


def machine_speed() -> float:
    """Microseconds for one fixed piece of the model's hot path (a 500-record batch encoded and
    read back, best of 5): this machine's Python speed at the time of the run. It moves by up to
    2x between days on a shared machine; comparing it tells a slower machine from slower code."""
    import timeit

    from kipviz.records import read_batches, write_batch
    recs = [(b"k%d" % i, b"v%d" % i, [("kipviz-source", b"in-0@%d" % i)], 1_700_000_000_000) for i in range(500)]
    one = lambda: read_batches(write_batch(recs, base_timestamp=1_700_000_000_000))    # noqa: E731
    return min(timeit.repeat(one, number=20, repeat=5)) / 20 * 1e6


def _cpu_seconds() -> float | None:
    """CPU time used so far by the whole machine, all cores (Linux /proc/stat; None elsewhere): with
    nothing else running, (after - before) / wall time is how many cores a run kept busy."""
    try:
        with open("/proc/stat") as fh:
            f = fh.readline().split()
    except OSError:
        return None
    busy = sum(int(x) for x in f[1:4] + f[6:9])       # user nice system, irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


def _warm(batches):
    from kipviz.spark import decode  # noqa: F401 - what the first decoding task imports
    yield from batches


# ---- one Spark master, in its own process ------------------------------------------------------------
def spark_worker(master: str, d: Path, driver_memory: str, shuffle: int, java_options: str | None,
                 conf: dict | None = None) -> dict:
    from kipviz import spark as ks
    from kipviz.spark import analyses
    t0 = time.perf_counter()
    from kipviz.spark.readers import topic_records
    from kipviz.spark.session import LARGE_ROWS
    conf = {**({"spark.sql.shuffle.partitions": str(shuffle)} if shuffle else {}), **(conf or {})}
    spark = ks.session(master, driver_memory=driver_memory, conf=conf, java_options=java_options, batch=True,
                       large=topic_records(d) >= LARGE_ROWS)        # as the CLI picks them
    spark.range(1).count()
    # the Python workers start (and import kipviz) once per session: part of start-up, as the
    # baseline's own imports are not timed either
    spark.range(0, 2, numPartitions=2).mapInArrow(_warm, "id long").count()
    startup = time.perf_counter() - t0
    steps = {}

    def timed(name, fn):
        t = time.perf_counter()
        out = fn()
        steps[name] = round(time.perf_counter() - t, 2)
        return out
    t1, cpu1 = time.perf_counter(), _cpu_seconds()
    src = ks.read_samples(spark, d)
    logs = ks.decode_all(src)
    # the decoded frames are kept (persisted): counting one builds the whole cached frame
    decoded = {"offsets": timed("offsets", logs.offsets.count),
               "transactions": timed("transactions", logs.transactions.count),
               "share_state": timed("share_state", logs.share_state.count),
               "output_records": timed("output_records", logs.records(src.output_topic).count)}
    t2 = time.perf_counter()
    # every analysis computed in full (a count alone lets Spark skip the columns nobody reads)
    for name, df in analyses.frames(logs).items():
        timed("a:" + name, lambda df=df: df.write.format("noop").mode("overwrite").save())
    res = timed("verify_eos", lambda: ks.verify_eos(logs, allowed_at_least_once=True))   # as `kipviz verify-eos`
    t3, cpu3 = time.perf_counter(), _cpu_seconds()
    return {"master": master, "startup_s": startup, "decode_s": t2 - t1, "analyses_s": t3 - t2,
            "total_s": t3 - t1, "cores_busy": None if cpu1 is None else (cpu3 - cpu1) / (t3 - t1),
            "decoded": decoded, "steps": steps, "eos_ok": res.ok, "eos_rows": len(res.rows)}


def run_master(master: str, d: Path, driver_memory: str, shuffle: int, java_options: str | None,
               conf: list[str]) -> dict:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run([sys.executable, __file__, "--worker", master, "--dir", str(d), "--driver-memory",
                          driver_memory, "--shuffle-partitions", str(shuffle)]
                         + (["--java-options", java_options] if java_options is not None else [])
                         + [x for kv in conf for x in ("--conf", kv)], env=env,
                         capture_output=True, text=True, check=False)
    line = [x for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode or not line:
        raise SystemExit(f"{master} failed:\n{out.stderr[-3000:]}")
    return json.loads(line[-1])


# ---- the single-process baseline ------------------------------------------------------------------------
def baseline(d: Path) -> dict:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from kipviz.spark import decode
    m = json.loads((d / "manifest.json").read_text())
    files = {t["name"]: t for t in m["topics"] if not t["deleted"]}
    t0 = time.perf_counter()
    counts = {}
    for name, fn in (("__consumer_offsets", decode.offsets_arrow), ("__transaction_state", decode.transactions_arrow),
                     ("__share_group_state", decode.share_state_arrow)):
        n = 0
        for rb in pq.ParquetFile(d / files[name]["dataset"]).iter_batches(batch_size=20_000):
            ts = pc.cast(rb.column(rb.schema.get_field_index("timestamp")), pa.int64())
            rb = pa.RecordBatch.from_arrays([rb.column(i) for i in range(rb.num_columns)] + [ts],
                                            names=rb.schema.names + ["timestamp_ms"])
            n += fn(rb).num_rows
        counts[name] = n
    out = m["output_topic"]
    parts = []
    for rb in pq.ParquetFile(d / files[out]["batches"]).iter_batches(batch_size=2_000):
        parts.append(decode.batches_arrow(rb, payload=False).to_pandas())
    recs = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    # read_committed: each producer's data batches end at its next marker on the partition
    recs = recs.sort_values(["partition", "producer_id", "offset"])
    marker = recs["control_type"].where(recs["is_control"])
    recs["marker"] = marker.groupby([recs["partition"], recs["producer_id"]]).bfill()
    visible = recs[~recs["is_control"] & ((~recs["is_transactional"]) | (recs["marker"] == "COMMIT"))]
    counts["output_records"] = len(recs[~recs["is_control"]])
    counts["visible"] = len(visible)
    return {"decode_s": time.perf_counter() - t0, "decoded": counts}


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=FULL)
    ap.add_argument("--dir", help="sample directory to use (generated there first unless it has a manifest)")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--driver-memory", default="1g", help="driver heap of each Spark run (default 1g)")
    ap.add_argument("--shuffle-partitions", type=int, default=0,
                    help="spark.sql.shuffle.partitions (default: the CLI's; for 5M+ topic records "
                         "LARGE_LOCAL_DEFAULTS, 32 with adaptive execution merging small ones)")
    ap.add_argument("--java-options", help="the driver JVM's flags (default: BATCH_JAVA_OPTIONS, as the CLI)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="more Spark configuration for each run (repeatable)")
    ap.add_argument("--masters", default="local[1],local[2]", help="comma-separated (default local[1],local[2])")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--kafka", action="store_true", help="benchmark the kipviz-kafka source instead "
                                                         "(benchmarks/spark_kafka.py)")
    ap.add_argument("--kafka-records", type=int, default=1_000_000, help="records for --kafka (default 1M)")
    ap.add_argument("--where", default="local[2],standalone,connect",
                    help="for --kafka: comma-separated local[N], standalone, connect")
    a = ap.parse_args(argv)
    if a.kafka:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from spark_kafka import run
        return run(a.kafka_records, a.where.split(","))
    if a.worker:
        conf = dict(kv.split("=", 1) for kv in a.conf)
        print(json.dumps(spark_worker(a.worker, Path(a.dir), a.driver_memory, a.shuffle_partitions, a.java_options,
                                      conf)))
        return 0
    tmp = None
    d = Path(a.dir) if a.dir else Path(tmp := tempfile.mkdtemp(prefix="kipviz-spark-bench-")) / "share_eos"
    print(f"kipviz Spark benchmark - Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {_load()}; machine speed: {machine_speed():,.0f} us per reference "
          "batch (lower is faster)")
    gen_s = None
    if not (d / "manifest.json").is_file():
        gen_s = generate(a.records, d)
    m = json.loads((d / "manifest.json").read_text())
    from kipviz.spark.readers import topic_records
    records = topic_records(d)
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    print(f"sample: share_eos, {m['records']:,} input records, seed {m['seed']}: {records:,} topic records, "
          f"{m['datasets']['events.parquet']['rows']:,} events, {size / 2**20:,.0f} MB in {d}")
    if gen_s is not None:
        rate = m["records"] / gen_s
        print(f"generation: {gen_s:.1f} s ({rate:,.0f} input records/s; 10M records: "
              f"{FULL / rate:,.0f} s{' extrapolated' if m['records'] != FULL else ''})")
    base = baseline(d)
    print(f"baseline (one process, pyarrow/pandas): decode {base['decode_s']:.1f} s "
          f"({records / base['decode_s']:,.0f} records/s) {base['decoded']}")
    runs = {}
    for master in a.masters.split(","):
        r = runs[master] = run_master(master, d, a.driver_memory, a.shuffle_partitions, a.java_options, a.conf)
        print(f"{master}: start {r['startup_s']:.1f} s, decode {r['decode_s']:.1f} s, analyses + verify_eos "
              f"{r['analyses_s']:.1f} s, total {r['total_s']:.1f} s = {records / r['total_s']:,.0f} records/s; "
              f"eos ok={r['eos_ok']} ({r['eos_rows']} rows) {r['decoded']}")
        if r.get("cores_busy") is not None:
            print(f"    cores busy (whole machine, /proc/stat): {r['cores_busy']:.2f} of {os.cpu_count()}")
        print("    steps (s): " + ", ".join(f"{k} {v}" for k, v in r["steps"].items()))
    if not {"local[1]", "local[2]"} <= runs.keys():
        print("targets: need both local[1] and local[2] (--masters)")
        return 0
    one, two = runs["local[1]"], runs["local[2]"]
    rps = records / two["total_s"]
    scaling = one["total_s"] / two["total_s"]
    vs_base = base["decode_s"] / two["decode_s"]
    same = two["decoded"]["output_records"] == base["decoded"]["output_records"] and all(
        two["decoded"][k] >= 0 for k in two["decoded"])
    print("targets")
    ok = {"rps": rps >= TARGET_RPS, "scaling": scaling >= TARGET_SCALING, "base": vs_base >= 1.0}
    print(f"  {'PASS' if ok['rps'] else 'MISS'}  >= {TARGET_RPS:,.0f} records/s decoded and analysed on local[2]: "
          f"{rps:,.0f}")
    print(f"  {'PASS' if ok['scaling'] else 'MISS'}  local[2] >= {TARGET_SCALING}x local[1]: {scaling:.2f}x")
    print(f"  {'PASS' if ok['base'] else 'MISS'}  local[2] decode at least as fast as the single-process baseline: "
          f"{vs_base:.2f}x")
    if gen_s is not None:
        full_s = FULL / (m["records"] / gen_s)
        ok["gen"] = full_s <= TARGET_GEN_S
        print(f"  {'PASS' if ok['gen'] else 'MISS'}  generation of 10M records <= {TARGET_GEN_S:.0f} s: "
              f"{full_s:,.0f} s{' (extrapolated from ' + format(m['records'], ',') + ')' if m['records'] != FULL else ''}")
    print(f"  {'PASS' if same else 'FAIL'}  Spark and the baseline decode the same output records")
    print(f"machine speed at the end: {machine_speed():,.0f} us per reference batch")
    if tmp:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if a.strict and not (all(ok.values()) and same) else 0


if __name__ == "__main__":
    sys.exit(main())
