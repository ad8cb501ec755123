"""kipviz serve soak: memory stays flat under a steady client load (issue 22).

    python benchmarks/soak.py --minutes 60          # the issue's 1-hour soak
    python benchmarks/soak.py --minutes 1.25 --retention-bytes 2097152 --events-max 5000   (the test's)

Starts `kipviz serve` as a subprocess on 127.0.0.1 (a free port; stopped by its PID with SIGTERM),
runs a steady load through it -- a librdkafka producer (idempotent, acks=all, 1 KB records at
--rate records/s), a consumer-group consumer reading them, and with --share a share consumer --
and samples the server's RSS (/proc/PID/status VmRSS) every --every seconds. Prints the RSS series,
the slope after warm-up (least squares, MiB/min), the growth between the first and the last third
after warm-up (medians), the requests served and the model's held log bytes (the server's stop
line) against the bound retention allows: retention.bytes + one segment + what one retention check
interval (1 s) can add. soak() returns the same as a dict (tests/test_serve_soak.py)."""
from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise OSError(f"no VmRSS for {pid}")


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) in MiB per minute."""
    if len(points) < 2:
        return 0.0
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def _start_server(args: list[str]) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-c", "import sys; from kipviz.cli import main; sys.exit(main())", "serve",
           "--host", "127.0.0.1", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    m = re.search(r"bootstrap\.servers=(\S+)", line)
    if m is None:
        proc.kill()
        raise RuntimeError(f"kipviz serve did not start: {line!r} {proc.stderr.read()[:2000]}")
    return proc, m.group(1)


def soak(minutes: float, *, rate: int = 300, every: float = 5.0, warmup: float | None = None,
         retention_bytes: int = 16 * 1024 * 1024, segment_bytes: int = 1024 * 1024, events_max: int = 50_000,
         share: bool = False, log=print) -> dict:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    duration = minutes * 60
    warmup = min(max(30.0, 0.3 * duration), 600.0) if warmup is None else warmup
    proc, bootstrap = _start_server(["--retention-bytes", str(retention_bytes), "--segment-bytes",
                                     str(segment_bytes), "--events-max", str(events_max)])
    stop = threading.Event()
    errors: list[str] = []
    counts = {"produced": 0, "consumed": 0, "share": 0}
    topic = f"soak-{uuid.uuid4().hex[:6]}"
    threads = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            f.result(30)

        def on_error(e):
            errors.append(str(e))

        def produce():
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                          "linger.ms": 20, "error_cb": on_error})
            value, t0, n = b"x" * 1024, time.monotonic(), 0
            while not stop.is_set():
                due = int((time.monotonic() - t0) * rate)
                while n < due:
                    try:
                        p.produce(topic, value=value, key=b"%d" % n)
                        n += 1
                    except BufferError:
                        break
                p.poll(0.05)
                counts["produced"] = n
            p.flush(10)

        def consume():
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g", "auto.offset.reset": "earliest",
                          "error_cb": on_error})
            c.subscribe([topic])
            while not stop.is_set():
                for m in c.consume(500, 0.5):
                    if m.error() is None:
                        counts["consumed"] += 1
            c.close()

        def share_consume():
            import confluent_kafka as ck
            sc = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-sg", "error_cb": on_error})
            sc.subscribe([topic])
            while not stop.is_set():
                counts["share"] += sum(1 for m in sc.poll(0.5) if m.error() is None)
            sc.close()

        for fn in (produce, consume, *((share_consume,) if share else ())):
            threads.append(threading.Thread(target=fn, daemon=True))
            threads[-1].start()
        series: list[tuple[float, float]] = []
        t0 = time.monotonic()
        while (now := time.monotonic() - t0) < duration:
            if proc.poll() is not None:
                raise RuntimeError(f"kipviz serve exited early: {proc.stderr.read()[:2000]}")
            series.append((round(now, 1), round(rss_mib(proc.pid), 1)))
            log(f"  t={now:7.1f} s  RSS {series[-1][1]:7.1f} MiB  produced {counts['produced']}  "
                f"consumed {counts['consumed']}" + (f"  share {counts['share']}" if share else ""))
            time.sleep(every)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    m = re.search(r"(\d+) request\(s\); log bytes held (\d+) \(largest partition (\d+)", out)
    internal = {k: int(v) for k, v in re.findall(r"(__\w+) (\d+)", out.split("internal topics' log bytes", 1)[-1])} \
        if "internal topics' log bytes" in out else {}
    after = [p for p in series if p[0] >= warmup]
    third = max(len(after) // 3, 1)
    growth = (statistics.median(y for _, y in after[-third:]) - statistics.median(y for _, y in after[:third])
              if after else float("nan"))
    return {"series": series, "warmup_s": warmup, "slope_mib_per_min": slope(after), "growth_mib": growth,
            "requests": int(m.group(1)) if m else None, "log_bytes": int(m.group(2)) if m else None,
            "largest_partition_bytes": int(m.group(3)) if m else None, "internal_log_bytes": internal,
            "log_bound": retention_bytes + segment_bytes + 2 * rate * 1100,
            "retention_bytes": retention_bytes, "counts": dict(counts), "client_errors": errors,
            "returncode": proc.returncode, "server_stderr": err[-2000:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--rate", type=int, default=300, help="records/s the producer sends (1 KB each)")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between RSS samples")
    ap.add_argument("--warmup", type=float, default=None, help="seconds left out of the slope (default 30 %%, "
                                                                "30 s to 10 min)")
    ap.add_argument("--retention-bytes", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--segment-bytes", type=int, default=1024 * 1024)
    ap.add_argument("--events-max", type=int, default=50_000)
    ap.add_argument("--share", action="store_true", help="also run a share consumer (KIP-932)")
    a = ap.parse_args()
    print(f"soak: {a.minutes:g} min, {a.rate} records/s of 1 KB, retention.bytes {a.retention_bytes}, "
          f"segment.bytes {a.segment_bytes}, events-max {a.events_max}")
    r = soak(a.minutes, rate=a.rate, every=a.every, warmup=a.warmup, retention_bytes=a.retention_bytes,
             segment_bytes=a.segment_bytes, events_max=a.events_max, share=a.share)
    print("RSS series (s, MiB):", " ".join(f"{t:g}:{m:g}" for t, m in r["series"]))
    print(f"after {r['warmup_s']:.0f} s warm-up: slope {r['slope_mib_per_min']:+.3f} MiB/min, "
          f"growth first->last third {r['growth_mib']:+.1f} MiB")
    print(f"requests served {r['requests']}; records produced {r['counts']['produced']}, consumed "
          f"{r['counts']['consumed']}" + (f", share {r['counts']['share']}" if a.share else ""))
    print(f"log bytes held {r['log_bytes']} (largest partition {r['largest_partition_bytes']}, bound "
          f"{r['log_bound']} = retention.bytes + one segment + two check intervals of records)")
    print("internal topics' log bytes held:", ", ".join(f"{k} {v}" for k, v in sorted(r["internal_log_bytes"].items()))
          or "n/a")
    if r["client_errors"]:
        print("client errors:", *r["client_errors"][:10], sep="\n  ")


if __name__ == "__main__":
    main()
