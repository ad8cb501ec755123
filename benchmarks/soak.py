"""kipviz serve soak: memory stays flat under a steady client load (issues 22 and 30).

    python benchmarks/soak.py --minutes 60 --mixed     # the issue's 1-hour mixed soak
    python benchmarks/soak.py --minutes 1.25 --retention-bytes 2097152 --events-max 5000   (the test's)
    python benchmarks/soak.py --volume 1               # 1 GB produced through librdkafka (also --volume 10)

Starts `kipviz serve` as a subprocess on 127.0.0.1 (a free port; stopped by its PID with SIGTERM),
runs a steady load through it -- a librdkafka producer (idempotent, acks=all, 1 KB records at
--rate records/s), a consumer-group consumer reading them, and with --share a share consumer;
--mixed adds a KIP-848 group consumer (group.protocol=consumer), a transactional
read-process-write loop (read_committed consumer, transactional producer, offsets sent to the
transaction) and the share consumer -- and samples the server's RSS (/proc/PID/status VmRSS)
every --every seconds. Prints the RSS series, the slope after warm-up (least squares, MiB/min),
the growth between the first and the last third after warm-up (medians), the requests served and
the model's held log bytes (the server's stop line) against the bound retention allows:
retention.bytes + one segment + what one retention check interval (1 s) can add. soak() returns
the same as a dict (tests/test_serve_soak.py).

--volume G: produce G gigabytes of 900 KB records (librdkafka, linger 5 ms) into a server with the
default bounds and report its RSS at the end (after 5 s idle), its peak, and RSS over bytes
produced. Target (issue 30): at most 400 MB RSS whatever is produced."""
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


def _stop_server(proc: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    """SIGTERM (it prints its stop line), then its output; killed if it does not end in `timeout`."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def soak(minutes: float, *, rate: int = 300, every: float = 5.0, warmup: float | None = None,
         retention_bytes: int = 16 * 1024 * 1024, segment_bytes: int = 1024 * 1024, events_max: int = 50_000,
         share: bool = False, mixed: bool = False, log=print) -> dict:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    duration = minutes * 60
    warmup = min(max(30.0, 0.3 * duration), 600.0) if warmup is None else warmup
    proc, bootstrap = _start_server(["--retention-bytes", str(retention_bytes), "--segment-bytes",
                                     str(segment_bytes), "--events-max", str(events_max)])
    stop = threading.Event()
    errors: list[str] = []
    counts = {"produced": 0, "consumed": 0, "share": 0, "consumed_848": 0, "transactions": 0}
    topic = f"soak-{uuid.uuid4().hex[:6]}"
    threads = []
    share = share or mixed
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, 1, 1), NewTopic(topic + "-out", 1, 1)]).values():
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

        def consume(protocol: str = "classic", key: str = "consumed"):
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g-{protocol}",
                          "auto.offset.reset": "earliest", "group.protocol": protocol, "error_cb": on_error})
            c.subscribe([topic])
            while not stop.is_set():
                for m in c.consume(500, 0.5):
                    if m.error() is None:
                        counts[key] += 1
            c.close()

        def consume_848():
            consume("consumer", "consumed_848")

        def read_process_write():
            from confluent_kafka import TopicPartition
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-rpw", "auto.offset.reset": "earliest",
                          "enable.auto.commit": False, "isolation.level": "read_committed", "error_cb": on_error})
            c.subscribe([topic])
            tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx",
                           "transaction.timeout.ms": 30000, "error_cb": on_error})
            tx.init_transactions(30)
            while not stop.is_set():
                batch = [m for m in c.consume(200, 0.5) if m.error() is None]
                if not batch:
                    continue
                tx.begin_transaction()
                for m in batch:
                    tx.produce(topic + "-out", value=m.value(), key=m.key())
                tx.send_offsets_to_transaction([TopicPartition(tp.topic, tp.partition, tp.offset)
                                                for tp in c.position(c.assignment())],
                                               c.consumer_group_metadata(), 30)
                tx.commit_transaction(30)
                counts["transactions"] += 1
            c.close()

        def share_consume():
            import confluent_kafka as ck
            sc = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-sg", "error_cb": on_error})
            sc.subscribe([topic])
            while not stop.is_set():
                counts["share"] += sum(1 for m in sc.poll(0.5) if m.error() is None)
            sc.close()

        extra = (consume_848, read_process_write) if mixed else ()
        for fn in (produce, consume, *((share_consume,) if share else ()), *extra):
            threads.append(threading.Thread(target=fn, daemon=True))
            threads[-1].start()
        series: list[tuple[float, float]] = []
        t0 = time.monotonic()
        while (now := time.monotonic() - t0) < duration:
            if proc.poll() is not None:
                raise RuntimeError(f"kipviz serve exited early: {proc.stderr.read()[:2000]}")
            series.append((round(now, 1), round(rss_mib(proc.pid), 1)))
            log(f"  t={now:7.1f} s  RSS {series[-1][1]:7.1f} MiB  produced {counts['produced']}  "
                f"consumed {counts['consumed']}" + (f"  share {counts['share']}" if share else "")
                + (f"  kip848 {counts['consumed_848']}  transactions {counts['transactions']}" if mixed else ""))
            time.sleep(every)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        out, err = _stop_server(proc)
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


def volume(gigabytes: float, *, value_size: int = 900_000, every: float = 2.0, server_args: tuple = (),
           log=print) -> dict:
    """Produce `gigabytes` of `value_size`-byte records through librdkafka into `kipviz serve` with
    its defaults (plus server_args); the server's RSS sampled every `every` s, then 5 s idle."""
    from confluent_kafka import Producer
    proc, bootstrap = _start_server(list(server_args))
    errors: list[str] = []
    series: list[tuple[float, float]] = []
    target = int(gigabytes * 1e9)
    value = b"x" * value_size
    t0 = time.monotonic()
    try:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "error_cb": lambda e: errors.append(str(e))})
        sent, next_sample = 0, 0.0
        while sent < target:
            try:
                p.produce("volume", value=value)
                sent += value_size
            except BufferError:
                p.poll(0.05)
            p.poll(0)
            now = time.monotonic() - t0
            if now >= next_sample:
                next_sample = now + every
                series.append((round(now, 1), round(rss_mib(proc.pid), 1)))
                log(f"  t={now:7.1f} s  produced {sent / 1e9:6.2f} GB  RSS {series[-1][1]:7.1f} MiB")
        assert p.flush(120) == 0, "records left unsent"
        took = time.monotonic() - t0
        del p                                # the client goes before the server does
        time.sleep(5)
        end = rss_mib(proc.pid)
        series.append((round(time.monotonic() - t0, 1), round(end, 1)))
    finally:
        out, err = _stop_server(proc)
    m = re.search(r"log bytes held (\d+)", out)
    peak = max(r for _, r in series)
    return {"produced_bytes": sent, "seconds": took, "rss_end_mib": end, "rss_peak_mib": peak,
            "ratio_end": end * 2**20 / sent, "series": series, "log_bytes": int(m.group(1)) if m else None,
            "client_errors": errors, "returncode": proc.returncode, "server_stderr": err[-2000:]}


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
    ap.add_argument("--mixed", action="store_true", help="also a KIP-848 consumer, a transactional "
                                                         "read-process-write loop and a share consumer")
    ap.add_argument("--volume", type=float, default=None, metavar="GB",
                    help="instead: produce GB gigabytes of 900 KB records and report the server's RSS")
    a = ap.parse_args()
    if a.volume is not None:
        print(f"volume: {a.volume:g} GB of 900 KB records through librdkafka into kipviz serve (defaults)")
        r = volume(a.volume)
        print(f"produced {r['produced_bytes'] / 1e9:.2f} GB in {r['seconds']:.1f} s "
              f"({r['produced_bytes'] / 1e6 / r['seconds']:.0f} MB/s); RSS peak {r['rss_peak_mib']:.0f} MiB, "
              f"at the end {r['rss_end_mib']:.0f} MiB ({r['ratio_end']:.4f} of the bytes produced); "
              f"log bytes held {r['log_bytes']}")
        print(f"target at most 400 MB RSS: {'PASS' if r['rss_peak_mib'] * 2**20 <= 400e6 else 'MISS'}")
        if r["client_errors"]:
            print("client errors:", *r["client_errors"][:10], sep="\n  ")
        return
    print(f"soak: {a.minutes:g} min, {a.rate} records/s of 1 KB, retention.bytes {a.retention_bytes}, "
          f"segment.bytes {a.segment_bytes}, events-max {a.events_max}")
    r = soak(a.minutes, rate=a.rate, every=a.every, warmup=a.warmup, retention_bytes=a.retention_bytes,
             segment_bytes=a.segment_bytes, events_max=a.events_max, share=a.share, mixed=a.mixed)
    print("RSS series (s, MiB):", " ".join(f"{t:g}:{m:g}" for t, m in r["series"]))
    print(f"after {r['warmup_s']:.0f} s warm-up: slope {r['slope_mib_per_min']:+.3f} MiB/min, "
          f"growth first->last third {r['growth_mib']:+.1f} MiB")
    print(f"requests served {r['requests']}; records produced {r['counts']['produced']}, consumed "
          f"{r['counts']['consumed']}" + (f", share {r['counts']['share']}" if a.share or a.mixed else "")
          + (f", KIP-848 {r['counts']['consumed_848']}, transactions {r['counts']['transactions']}" if a.mixed else ""))
    if a.mixed:
        print(f"target slope <= 1 MiB/min after warm-up: {'PASS' if r['slope_mib_per_min'] <= 1.0 else 'MISS'}")
    print(f"log bytes held {r['log_bytes']} (largest partition {r['largest_partition_bytes']}, bound "
          f"{r['log_bound']} = retention.bytes + one segment + two check intervals of records)")
    print("internal topics' log bytes held:", ", ".join(f"{k} {v}" for k, v in sorted(r["internal_log_bytes"].items()))
          or "n/a")
    if r["client_errors"]:
        print("client errors:", *r["client_errors"][:10], sep="\n  ")


if __name__ == "__main__":
    main()
