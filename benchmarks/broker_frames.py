"""kipviz broker benchmark, pictures part: how fast a state-machine animation renders.

    python benchmarks/broker_frames.py            (median of 7 runs; GIF timed once)
    python benchmarks/broker_frames.py --quick    (3 runs, no GIF)

Scenario: 200 events of a random walk over the model's transaction table
(kipviz.broker.tables.transaction; a stand-in table of the same shape if it is not there yet):
three transactional ids take random rows, rows named after an API wrapped in that request and its
response (kipviz.draw.animate.random_walk, seed 1).

Cases, each timed end to end from the event list (graphviz `dot` included):
  SVG frames, all instances     Animation(table, events).frames_svg(): every StateChanged a frame
  SVG frames, one instance      the same for key="tx-1"
  HTML player                   Animation(...).html(): frames + player page
  dot per frame (reference)     what one `dot` run per frame would cost (10 frames, extrapolated)
  GIF                           Animation(...).to_gif(): PNG per distinct picture from `dot`, Pillow

Target: >= 20 frames/s for the SVG frames (all instances). Each line says PASS or MISS; the
others are for information."""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kipviz.broker.machine import Row, Table
from kipviz.draw.animate import Animation, changes, random_walk
from kipviz.draw.machines import state_diagram, tables
from kipviz.draw.render import dot_available, to_svg

TARGET_FPS = 20.0
N_EVENTS = 200


def stand_in_table() -> Table:
    """The transaction machine's shape (TransactionState.java), for when the model's table is not there."""
    ids = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
           "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}
    prev = {"Empty": ("Empty", "CompleteCommit", "CompleteAbort"),
            "Ongoing": ("Ongoing", "Empty", "CompleteCommit", "CompleteAbort"),
            "PrepareCommit": ("Ongoing",), "PrepareAbort": ("Ongoing", "PrepareEpochFence"),
            "CompleteCommit": ("PrepareCommit",), "CompleteAbort": ("PrepareAbort",),
            "Dead": ("Empty", "CompleteAbort", "CompleteCommit"), "PrepareEpochFence": ("Ongoing",)}
    events = {"Empty": "init-producer-id", "Ongoing": "add-partitions", "PrepareCommit": "end-txn-commit",
              "PrepareAbort": "end-txn-abort", "CompleteCommit": "markers-written",
              "CompleteAbort": "markers-written", "Dead": "expire", "PrepareEpochFence": "timeout-fence"}
    notes = {"init-producer-id": "InitProducerId", "add-partitions": "AddPartitionsToTxn",
             "end-txn-commit": "EndTxn(commit)", "end-txn-abort": "EndTxn(abort)"}
    rows = []
    for to, froms in prev.items():
        for f in froms:
            ev = "fence-abort" if (f, to) == ("PrepareEpochFence", "PrepareAbort") else events[to]
            rows.append(Row(f, ev, to, note=notes.get(ev, "")))
    return Table(name="transaction", states=tuple(ids), initial="Empty", rows=tuple(rows), state_ids=ids,
                 terminal=("Dead",))


def median_s(fn, runs: int) -> float:
    fn()                                   # warm-up: imports, regex compilation
    times = []
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 runs per case and no GIF")
    args = ap.parse_args(argv)
    runs = 3 if args.quick else 7
    if not dot_available():
        print("graphviz `dot` not found: `make lab` provides it (or apt-get install graphviz)")
        return 2

    table = tables().get("transaction")
    which = "kipviz.broker.tables.transaction"
    if table is None:
        table, which = stand_in_table(), "stand-in table (kipviz.broker.tables.transaction not found)"
    events = random_walk(table, N_EVENTS, keys=("tx-1", "tx-2", "tx-3"), seed=1)
    n_all = len(changes(events, table.name))
    n_one = len(changes(events, table.name, "tx-1"))
    probe = Animation(table, events)

    try:
        load = os.getloadavg()[0]
    except OSError:   # pragma: no cover
        load = float("nan")
    print(f"kipviz broker frames benchmark · Python {platform.python_version()} · {platform.machine()} · "
          f"{os.cpu_count()} CPUs · load {load:.2f} · median of {runs} runs")
    print(f"table: {which} ({len(table.states)} states, {len(table.rows)} rows); {len(events)} events, "
          f"{n_all} state changes ({n_one} of tx-1), {len(probe.pictures())} distinct pictures (all instances)")

    results = []   # (label, frames, seconds, target fps or None)
    s = median_s(lambda: Animation(table, events).frames_svg(), runs)
    results.append(("SVG frames, all instances", n_all, s, TARGET_FPS))
    s = median_s(lambda: Animation(table, events, key="tx-1").frames_svg(), runs)
    results.append(("SVG frames, one instance (tx-1)", n_one, s, None))
    s = median_s(lambda: Animation(table, events).html(), runs)
    results.append(("HTML player page, all instances", n_all, s, None))

    sample = probe.frames[:10]
    s = median_s(lambda: [to_svg(state_diagram(table, current=f.state, taken=f.row)) for f in sample],
                 max(1, runs // 2))
    results.append(("dot per frame (reference, 10 frames)", len(sample), s, None))

    if not args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            gif = Path(tmp) / "anim.gif"
            t = time.perf_counter()
            Animation(table, events).to_gif(gif)
            results.append(("GIF, all instances (PNG via dot, once)", n_all, time.perf_counter() - t, None))
            size = gif.stat().st_size

    width = max(len(r[0]) for r in results)
    missed = 0
    for label, frames, secs, target in results:
        fps = frames / secs
        line = f"{label:<{width}}  {frames:4d} frames  {secs * 1000:8.1f} ms  {fps:9.1f} frames/s"
        if target is not None:
            ok = fps >= target
            missed += not ok
            line += f"   target >= {target:.0f} frames/s   {'PASS' if ok else 'MISS'}"
        print(line)
    if not args.quick:
        print(f"(GIF size {size / 1e6:.1f} MB)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
