"""kipviz share-group EOS benchmark: record-state transitions simulated per second in a long
KIP-1289 (proposed) run, and EOS-checker events per second.

    python benchmarks/share.py               (10 consumers, 100k records, 20 random faults; checker x3)
    python benchmarks/share.py --quick       (20k records, 5 faults)
    python benchmarks/share.py --profile     (also prints the top of a cProfile of the run)
    python benchmarks/share.py --strict      (exit status 1 when a target is missed)

Simulation. kipviz.workloads.run_share_eos: 10 workers, each a ShareConsumer + transactional
producer (read-process-write: ShareFetch, one Produce per output partition, TxnShareAcknowledge,
EndTxn with its WriteTxnMarkers), 10 input partitions, batches of 100, and a random schedule of
the seed's corner-case faults (kipviz.workloads.random_faults, DEFAULT_KINDS: crashes, fencing,
stale epochs, leader moves, held markers, ...). Everything goes through real request frames.
Timed: the whole run (set-up and input loading included), wall clock. Transitions: the
share-record StateChanged events of the run (acquire, txn-stage, txn-commit-accept, the faults'
reverts and redeliveries). transitions/s = transitions / wall seconds.

Checker. kipviz.eos over the run's events, twice: check_share_eos over the whole list (one call),
and ShareEosChecker fed in chunks of 50k events (as a long run's on_events hand-offs would); each
timed 3 times, median. events/s = events / seconds (the one pass and the rules).

Targets: >= 200,000 transitions/s simulated; >= 500,000 events/s checked. Each target line says
PASS or MISS. The run must also pass the check (no violation but the KIP's documented windows)."""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import statistics
import sys
import time

from kipviz.eos import ShareEosChecker, check_share_eos
from kipviz.workloads import random_faults, run_share_eos

TARGET_TPS = 200_000.0
TARGET_EPS = 500_000.0
SEED = 5


def simulate(records: int, consumers: int, partitions: int, batch: int, faults: int, profile: bool):
    steps = records // batch
    schedule = random_faults(SEED, steps=steps, count=faults, brokers=3, consumers=consumers)
    kw = dict(records=records, consumers=consumers, partitions=partitions, seed=SEED, batch=batch,
              faults=schedule, brokers=3)
    prof = None
    if profile:
        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_share_eos(**kw)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        prof.disable()
    return result, wall, cpu, prof


def _rss_mb() -> float:
    try:
        import resource
    except ImportError:          # not on Windows
        return float("nan")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


def check_speed(events, group, inp, out, repeats: int = 3, chunk: int = 50_000):
    whole, chunked = [], []
    report = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        report = check_share_eos(events, group=group, input_topic=inp, output_topic=out, allowed_at_least_once=True)
        whole.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ch = ShareEosChecker(group=group, input_topic=inp, output_topic=out)
        for i in range(0, len(events), chunk):
            ch.feed(events[i:i + chunk])
        ch.report(allowed_at_least_once=True)
        chunked.append(time.perf_counter() - t0)
    return report, statistics.median(whole), statistics.median(chunked)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--records", type=int)
    ap.add_argument("--consumers", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--faults", type=int)
    a = ap.parse_args(argv)
    records = a.records or (20_000 if a.quick else 100_000)
    faults = a.faults if a.faults is not None else (5 if a.quick else 20)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"kipviz share EOS benchmark - Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {load:.2f}")
    print(f"workload: {records:,} records, {a.consumers} consumers, {a.partitions} input partitions, batch "
          f"{a.batch}, {faults} random faults (seed {SEED}), 3 brokers")
    result, wall, cpu, prof = simulate(records, a.consumers, a.partitions, a.batch, faults, a.profile)
    s = result.stats
    events = result.cluster.events
    tps = s["transitions"] / wall
    print(f"simulated in {wall:.2f} s wall ({cpu:.2f} s CPU, peak RSS {_rss_mb():,.0f} MB): "
          f"{s['transitions']:,} share-record transitions, {s['events']:,} events, "
          f"{s['transactions_committed']:,} transactions committed, {s.get('transactions_aborted', 0):,} aborted, "
          f"{s['virtual_ms'] / 1000:,.1f} s virtual; complete={bool(s['complete'])}")
    print(f"  faults fired: {sum(r['applied'] for r in result.faults)}/{len(result.faults)}: "
          + ", ".join(sorted({r['kind'] for r in result.faults if r['applied']})))
    print(f"  {tps:,.0f} transitions/s, {s['events'] / wall:,.0f} events/s simulated "
          f"({s['transitions'] / cpu:,.0f} transitions/s of CPU time; "
          f"{s['transitions'] / (wall - s.get('input_s', 0)):,.0f}/s leaving out the {s.get('input_s', 0):.2f} s "
          f"spent writing the input)")
    report, whole, chunked = check_speed(events, result.group, result.input_topic, result.output_topic)
    eps, eps_chunked = len(events) / whole, len(events) / chunked
    print(f"checker: {len(events):,} events in {whole * 1000:.0f} ms ({eps:,.0f} events/s) in one call, "
          f"{chunked * 1000:.0f} ms ({eps_chunked:,.0f} events/s) fed in 50k chunks; median of 3")
    print("  " + report.summary(limit=3).replace("\n", "\n  "))
    ok_tps, ok_eps = tps >= TARGET_TPS, min(eps, eps_chunked) >= TARGET_EPS
    print("targets")
    print(f"  {'PASS' if ok_tps else 'MISS'}  >= {TARGET_TPS:,.0f} transitions/s simulated: {tps:,.0f}")
    print(f"  {'PASS' if ok_eps else 'MISS'}  >= {TARGET_EPS:,.0f} events/s checked: {min(eps, eps_chunked):,.0f}")
    print(f"  {'PASS' if report.ok and s['complete'] else 'FAIL'}  the run is exactly-once but for the "
          f"KIP's documented windows ({dict(report.windows())})")
    if prof is not None:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue())
    return 1 if a.strict and not (ok_tps and ok_eps and report.ok) else 0


if __name__ == "__main__":
    sys.exit(main())
