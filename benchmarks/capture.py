"""kipviz capture benchmark: full decode of a real capture next to `tshark -V`, in the same run.

    python benchmarks/capture.py            (a 50 MB and a 500 MB capture)
    python benchmarks/capture.py --quick    (a 50 MB capture only)
    python benchmarks/capture.py --file traffic.pcap --port 9092    (a capture of your own)
    python benchmarks/capture.py --spark [--size 300] [--file F]    (the Spark path against one process)

The capture is real traffic: `kipviz serve --record` with a librdkafka (confluent-kafka)
producer and a group consumer reading everything back, so Produce and Fetch carry the record
batches. kipviz's side is what `kipviz explain` reads (kipviz.capture.read_pcap: TCP reassembly,
every request and response decoded) plus every record batch in every Produce and Fetch
(kipviz.records.read_batches, CRCs checked); then, in a process of its own, explain() of the
same file with every part of the report (the states and the differential replay included).
tshark's side is `tshark -r FILE -V -d tcp.port==PORT,kafka`, output discarded. Each side runs in
its own process; its peak RSS is the process's (GNU time's %M), shown with that of Python with
kipviz imported and nothing read. Targets: kipviz's decode at least tshark's speed; the decode's
and explain's memory at most 2x the capture size.

--spark measures `kipviz explain --spark` (kipviz.spark.capture.capture_to_requests on local[2])
against one process doing the same work on the same file in the same run: read_pcap, then the
same run directory written by the same writer (kipviz.spark.capture.write_run). Each side runs in
its own process; the Spark side's time excludes the JVM's start, which is shown on its own.
Target: the Spark path at least 1.5x one process on 2 cores."""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
TIME = "/usr/bin/time"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_capture(folder: Path, size_mb: int) -> tuple[Path, int]:
    """Record a librdkafka producer and group consumer through `kipviz serve --record` until the
    capture holds about size_mb; returns (traffic.pcap, the broker's port)."""
    from confluent_kafka import Consumer, Producer
    port = _free_port()
    rec = folder / f"rec{size_mb}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    srv = subprocess.Popen([sys.executable, "-m", "kipviz.cli", "serve", "--port", str(port), "--seed", "1",
                            "--retention-bytes", "-1", "--record", str(rec)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        srv.stdout.readline()
        boot = f"127.0.0.1:{port}"
        # produce and read back half each: the capture holds the records twice (Produce, Fetch)
        target = size_mb * MB // 2
        p = Producer({"bootstrap.servers": boot, "linger.ms": 5, "batch.size": 256 * 1024, "acks": "all"})
        value, sent = os.urandom(900), 0
        while sent < target:
            for i in range(2000):
                while True:
                    try:
                        p.produce("bench", key=b"k%d" % i, value=value)
                        break
                    except BufferError:       # librdkafka's queue is full: let it send
                        p.poll(0.05)
            sent += 2000 * 900
            p.poll(0)
        p.flush(60)
        del p                     # its threads end before the server does
        c = Consumer({"bootstrap.servers": boot, "group.id": "bench", "auto.offset.reset": "earliest"})
        c.subscribe(["bench"])
        got, idle = 0, time.monotonic()
        while got * 900 < sent and time.monotonic() - idle < 10:
            msgs = c.consume(10000, 1.0)
            got += sum(1 for m in msgs if not m.error())
            if msgs:
                idle = time.monotonic()
        c.close()
    finally:
        srv.send_signal(signal.SIGINT)
        try:
            srv.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait(10)
    return rec / "traffic.pcap", port


def decode_all(path: str, port: int) -> dict:
    """kipviz's full decode of `path` (run in a child process): exchanges, record batches, records."""
    from kipviz.capture import read_pcap
    from kipviz.records import read_batches
    t0 = time.perf_counter()
    exs = read_pcap(path, ports=(port,))
    batches = records = 0
    for ex in exs:
        for side in ("request", "response"):
            body = (ex.get(side) or {}).get("body") or {}
            for topic in body.get("TopicData") or body.get("Responses") or []:
                for part in topic.get("PartitionData") or topic.get("Partitions") or []:
                    data = part.get("Records")
                    if data:
                        got = read_batches(data)
                        batches += len(got)
                        records += sum(len(b["records"]) for b in got)
    return {"seconds": time.perf_counter() - t0, "exchanges": len(exs), "batches": batches, "records": records}


def explain_all(path: str, port: int) -> dict:
    """kipviz explain of `path` (run in a child process of its own): the report and every part of
    it (states and the differential replay included), as the CLI prints it."""
    from kipviz.explain import explain as run_explain
    t0 = time.perf_counter()
    report = run_explain(path, ports=(port,))
    str(report)
    return {"seconds": time.perf_counter() - t0}


def _timed(cmd: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS bytes, stdout) of one command run under GNU time."""
    t0 = time.perf_counter()
    r = subprocess.run([TIME, "-f", "%M", *cmd], capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"{cmd[0]} failed: {r.stderr.strip().splitlines()[-1:]}")
    return took, int(r.stderr.strip().splitlines()[-1]) * 1024, r.stdout


def _child(call: str, path: Path, port: int) -> tuple[dict, int]:
    """(what capture.<call>(path, port) returned, its process's peak RSS bytes)."""
    code = ("import json, sys; sys.path.insert(0, %r); import capture; "
            "print(json.dumps(capture.%s(%r, %d)))" % (str(Path(__file__).parent), call, str(path), port))
    _, rss, out = _timed([sys.executable, "-c", code])
    return json.loads(out.strip().splitlines()[-1]), rss


def measure(path: Path, port: int, explain: bool) -> dict:
    size = path.stat().st_size
    k, k_rss = _child("decode_all", path, port)
    out = {"size": size, "kipviz": k, "kipviz_rss": k_rss}
    try:
        import kipviz.explain  # noqa: F401
    except ImportError:
        explain = False
    if explain:
        e, e_rss = _child("explain_all", path, port)
        out.update(explain_s=e["seconds"], explain_rss=e_rss)
    _, base_rss, _ = _timed([sys.executable, "-c", "import kipviz.capture, kipviz.explain"])
    t_wall, t_rss, _ = _timed(["sh", "-c", f"tshark -r {path} -V -d tcp.port=={port},kafka > /dev/null 2>&1"])
    return {**out, "base_rss": base_rss, "tshark_s": t_wall, "tshark_rss": t_rss}


def one_process_run(path: str, port: int, out: str) -> dict:
    """read_pcap and the run directory written from its exchanges (run in a child process)."""
    import pyarrow as pa

    from kipviz.capture import read_pcap
    from kipviz.spark.capture import ROWS, exchange_rows, write_run
    t0 = time.perf_counter()
    exs = read_pcap(path, ports=(port,))
    t1 = time.perf_counter()
    rows = pa.table(exchange_rows(exs)).cast(ROWS)
    del exs
    write_run(out, rows, {"status": "capture"})
    return {"read_pcap_s": t1 - t0, "seconds": time.perf_counter() - t0, "rows": rows.num_rows}


def spark_run(path: str, port: int, out: str) -> dict:
    """capture_to_requests on local[2] (run in a child process); the session's start apart."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from kipviz.spark import session
    from kipviz.spark.capture import capture_to_requests
    t0 = time.perf_counter()
    spark = session("local[2]")                 # as `kipviz explain --spark` starts it
    spark.range(1).count()                      # the JVM is up
    t1 = time.perf_counter()
    m = capture_to_requests(spark, path, out, ports=(port,))
    return {"session_s": t1 - t0, "seconds": time.perf_counter() - t1, "rows": m["datasets"]["exchanges.parquet"]["rows"]}


def measure_spark(path: Path, port: int) -> dict:
    here = str(Path(__file__).parent)
    out = {"size": path.stat().st_size}
    for side, fn in (("one", "one_process_run"), ("spark", "spark_run")):
        with tempfile.TemporaryDirectory() as tmp:
            code = ("import json, sys; sys.path.insert(0, %r); import capture; "
                    "print(json.dumps(capture.%s(%r, %d, %r)))" % (here, fn, str(path), port, tmp + "/run"))
            _, rss, text = _timed([sys.executable, "-c", code])
            out[side] = {**json.loads(text.strip().splitlines()[-1]), "rss": rss}
    return out


def report_spark(name: str, m: dict) -> list[tuple[str, bool, str]]:
    size_mb, one, sp = m["size"] / MB, m["one"], m["spark"]
    print(f"{name}: {size_mb:.0f} MB, {sp['rows']:,} exchange rows (one process: {one['rows']:,})")
    print(f"  one process    {one['seconds']:7.2f} s  {size_mb / one['seconds']:7.1f} MB/s  (read_pcap "
          f"{one['read_pcap_s']:.2f} s, then the run directory)  peak RSS {one['rss'] / MB:6.0f} MiB")
    print(f"  Spark local[2] {sp['seconds']:7.2f} s  {size_mb / sp['seconds']:7.1f} MB/s  (+ {sp['session_s']:.2f} s "
          f"to start the session)  driver peak RSS {sp['rss'] / MB:6.0f} MiB")
    ratio = one["seconds"] / sp["seconds"]
    cold = one["seconds"] / (sp["seconds"] + sp["session_s"])
    return [(f"Spark path >= 1.5x one process  {name}", ratio >= 1.5, f"{ratio:.2f}x ({cold:.2f}x with the JVM's start)"),
            (f"same rows  {name}", sp["rows"] >= one["rows"] > 0, f"{sp['rows']} / {one['rows']}")]


def report(name: str, m: dict) -> list[tuple[str, bool, str]]:
    size_mb, k = m["size"] / MB, m["kipviz"]
    print(f"{name}: {size_mb:.0f} MB, {k['exchanges']:,} exchanges, {k['batches']:,} batches, {k['records']:,} records")
    print(f"  kipviz decode   {k['seconds']:7.2f} s  {size_mb / k['seconds']:7.1f} MB/s  "
          f"{k['exchanges'] / k['seconds']:9,.0f} exchanges/s  peak RSS {m['kipviz_rss'] / MB:6.0f} MiB")
    if "explain_s" in m:
        print(f"  kipviz explain  {m['explain_s']:7.2f} s  {size_mb / m['explain_s']:7.1f} MB/s  "
              f"{'':22}peak RSS {m['explain_rss'] / MB:6.0f} MiB  (every part, the replay included; own process)")
    print(f"  tshark -V       {m['tshark_s']:7.2f} s  {size_mb / m['tshark_s']:7.1f} MB/s  "
          f"{k['exchanges'] / m['tshark_s']:9,.0f} exchanges/s  peak RSS {m['tshark_rss'] / MB:6.0f} MiB")
    print(f"  (Python with kipviz imported, nothing read: peak RSS {m['base_rss'] / MB:.0f} MiB)")
    speed, memory = m["tshark_s"] / k["seconds"], m["kipviz_rss"] / m["size"]
    out = [(f"decode >= tshark -V speed  {name}", speed >= 1.0, f"{speed:.2f}x"),
           (f"decode memory <= 2x capture size  {name}", memory <= 2.0, f"{memory:.2f}x")]
    if "explain_rss" in m:
        memory = m["explain_rss"] / m["size"]
        out.append((f"explain memory <= 2x capture size  {name}", memory <= 2.0, f"{memory:.2f}x"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the 50 MB capture only")
    ap.add_argument("--file", help="benchmark this capture instead of recording one")
    ap.add_argument("--port", type=int, default=9092, help="the Kafka port of --file (default 9092)")
    ap.add_argument("--spark", action="store_true", help="the Spark path against one process (not tshark)")
    ap.add_argument("--size", type=int, action="append", help="capture size(s) in MB to record (default 50 and "
                                                              "500; --quick: 50)")
    args = ap.parse_args()
    if args.spark:
        return main_spark(args)
    if shutil.which("tshark") is None or not os.path.exists(TIME):
        print("capture benchmark: needs tshark and GNU time (make test installs tshark)")
        return 0
    print(f"kipviz capture benchmark · Python {platform.python_version()} · {platform.machine()} · "
          f"{os.cpu_count()} CPUs · load {os.getloadavg()[0]:.2f}")
    targets = []
    if args.file:
        targets += report(Path(args.file).name, measure(Path(args.file), args.port, True))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            for size in (50,) if args.quick else (50, 500):
                path, port = make_capture(Path(tmp), size)
                targets += report(f"{size} MB capture", measure(path, port, True))
                path.unlink()
    print("\ntargets")
    for what, ok, value in targets:
        print(f"  {'PASS' if ok else 'MISS'}  {what}: {value}")
    return 0


def main_spark(args) -> int:
    """--spark: the Spark path and one process on the same capture(s)."""
    print(f"kipviz capture benchmark, Spark path · Python {platform.python_version()} · {platform.machine()} · "
          f"{os.cpu_count()} CPUs · load {os.getloadavg()[0]:.2f}")
    targets = []
    if args.file:
        targets += report_spark(Path(args.file).name, measure_spark(Path(args.file), args.port))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            for size in args.size or ((50,) if args.quick else (50, 500)):
                path, port = make_capture(Path(tmp), size)
                targets += report_spark(f"{size} MB capture", measure_spark(path, port))
                path.unlink()
    print(f"\ntargets (load {os.getloadavg()[0]:.2f} at the end)")
    for what, ok, value in targets:
        print(f"  {'PASS' if ok else 'MISS'}  {what}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
