"""kipviz broker benchmark: requests handled per second, and animation frames per second.

    python benchmarks/broker.py              (median of 5 replays, 200 loop iterations; frames: 7 runs)
    python benchmarks/broker.py --quick      (3 replays, 100 iterations; frames: 3 runs)
    python benchmarks/broker.py --profile    (also prints the top of a cProfile of one replay)

Requests. A realistic exactly-once loop is recorded once by driving the client models
(kipviz.clients.Consumer with KIP-848 and kipviz.clients.Producer) against a Cluster: per iteration
one ConsumerGroupHeartbeat (5 s pass between iterations, the heartbeat interval), one Fetch (2
records), AddPartitionsToTxn, Produce per record, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, after
one InitProducerId. The request frames are kept with the virtual time they arrived at. Timed: the
replay of exactly those bytes into a fresh cluster (same seed, same topics, same input), one
`cluster.handle(frame)` per request, bytes in and bytes out: decode, handler, events, encode. Every
replayed response is compared byte for byte with the recorded one, so the epochs, sequence numbers
and member epochs in the frames are the right ones. Two mixes: transaction version 1 (explicit
AddPartitionsToTxn / AddOffsetsToTxn, EndTxn v4) and transaction version 2 (Produce v13 and
TxnOffsetCommit v6 add partitions on the broker, EndTxn v5 bumps the epoch).

Frames. The measurement of benchmarks/broker_frames.py (SVG frames of an Animation over 200
events of the transaction table, all instances), reused from that script.

Targets: >= 5,000 requests/s (transaction version 1 mix) and >= 20 frames/s. Each target line
says PASS or MISS."""
from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from kipviz.broker import Cluster
from kipviz.clients import Consumer, Producer

TARGET_RPS = 5000.0
SEED = 11


def _setup(cluster: Cluster) -> None:
    cluster.create_topic("in", 2)
    cluster.create_topic("out", 2)


def record(iterations: int, tv: int) -> tuple[list[tuple], list[tuple]]:
    """Drive the models; returns (setup frames, loop frames), each (t, frame, broker, client, response)."""
    c = Cluster(seed=SEED, transaction_version=tv)
    _setup(c)
    loader = Producer(c, None, client_id="loader")
    for i in range(2 * iterations):
        loader.send("in", b"k%d" % i, b"order %d" % i, partition=i % 2)
    mark = len(c.events)
    consumer = Consumer(c, "bench-group", client_id="app-consumer")
    consumer.subscribe(["in"])
    producer = Producer(c, "bench-tx", client_id="app-producer")
    producer.init_transactions()
    for _ in range(iterations):
        c.advance(5000)
        records = consumer.poll(2)
        producer.begin_transaction()
        for r in records:
            producer.send("out", r.key, r.value.upper(), partition=r.partition)
        offsets = {(r.topic, r.partition): r.offset + 1 for r in records}
        producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
        producer.commit_transaction()
    assert not c.internal_errors, c.internal_errors
    answers = {}
    for e in c.events:
        if e.kind == "ResponseSent":
            answers[(e.client, e.correlation_id)] = e.frame
    frames = [(e.t, e.frame, e.broker, e.client, answers.get((e.client, e.correlation_id)), e.api)
              for e in c.events if e.kind == "RequestReceived"]
    setup_n = sum(1 for e in c.events[:mark] if e.kind == "RequestReceived")
    return frames[:setup_n], frames[setup_n:]


def replay(setup_frames, loop_frames, iterations: int, tv: int, per_api=None) -> float:
    """Seconds spent in cluster.handle for the loop frames (checked byte for byte)."""
    c = Cluster(seed=SEED, transaction_version=tv)
    _setup(c)
    for t, frame, broker, client, _, _ in setup_frames:
        if t > c.now:
            c.advance(t - c.now)
        c.handle(frame, broker=broker, client=client)
    handle, clock = c.handle, time.perf_counter
    total = 0.0
    mismatches = 0
    for t, frame, broker, client, expected, api in loop_frames:
        if t > c.now:
            c.advance(t - c.now)
        t0 = clock()
        out = handle(frame, broker=broker, client=client)
        dt = clock() - t0
        total += dt
        if per_api is not None:
            per_api[api].append(dt)
        if out != expected:
            mismatches += 1
    if mismatches or c.internal_errors:
        raise SystemExit(f"replay diverged: {mismatches} responses differ, internal errors {c.internal_errors[:3]}")
    return total


def frames_measurement(runs: int):
    """(frames, seconds) of benchmarks/broker_frames.py's SVG-frames case, or None without dot."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import broker_frames as bf

    from kipviz.draw.animate import Animation, changes, random_walk
    from kipviz.draw.machines import tables
    from kipviz.draw.render import dot_available
    if not dot_available():
        return None
    table = tables().get("transaction") or bf.stand_in_table()
    events = random_walk(table, bf.N_EVENTS, keys=("tx-1", "tx-2", "tx-3"), seed=1)
    n = len(changes(events, table.name))
    return n, bf.median_s(lambda: Animation(table, events).frames_svg(), runs), bf.TARGET_FPS, bf.N_EVENTS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 replays of 100 iterations, 3 frame runs")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one TV1 replay")
    ap.add_argument("--iterations", type=int, default=None)
    args = ap.parse_args(argv)
    iterations = args.iterations or (100 if args.quick else 200)
    runs = 3 if args.quick else 5
    try:
        load = os.getloadavg()[0]
    except OSError:   # pragma: no cover
        load = float("nan")
    print(f"kipviz broker benchmark · Python {platform.python_version()} · {platform.machine()} · "
          f"{os.cpu_count()} CPUs · load {load:.2f} · median of {runs} replays, {iterations} loop iterations")
    missed = 0
    for tv in (1, 2):
        setup_frames, loop_frames = record(iterations, tv)
        per_api: dict[str, list[float]] = defaultdict(list)
        times = []
        for i in range(runs):
            gc.collect()
            times.append(replay(setup_frames, loop_frames, iterations, tv, per_api if i == 0 else None))
        secs = statistics.median(times)
        rps = len(loop_frames) / secs
        mix = ", ".join(f"{api} {len(v)}" for api, v in sorted(per_api.items(), key=lambda kv: -len(kv[1])))
        line = (f"TV{tv} read-process-write mix: {len(loop_frames):5d} requests  {secs * 1000:8.1f} ms  "
                f"{rps:9.0f} requests/s")
        if tv == 1:
            ok = rps >= TARGET_RPS
            missed += not ok
            line += f"   target >= {TARGET_RPS:,.0f} requests/s   {'PASS' if ok else 'MISS'}"
        print(line)
        print(f"    mix: {mix}")
        print("    mean µs per request: " + ", ".join(
            f"{api} {statistics.mean(v) * 1e6:.0f}" for api, v in sorted(per_api.items())))
        if args.profile and tv == 1:
            prof = cProfile.Profile()
            prof.enable()
            replay(setup_frames, loop_frames, iterations, tv)
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
            print(s.getvalue())
    fm = frames_measurement(3 if args.quick else 7)
    if fm is None:
        print("animation frames: graphviz `dot` not found (make lab provides it): n/a   MISS")
        missed += 1
    else:
        n, secs, target, n_events = fm
        fps = n / secs
        ok = fps >= target
        missed += not ok
        print(f"animation frames ({n_events} events, broker_frames.py): {n:4d} frames  {secs * 1000:8.1f} ms  "
              f"{fps:9.1f} frames/s   target >= {target:.0f} frames/s   {'PASS' if ok else 'MISS'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
