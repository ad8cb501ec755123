"""kipviz drawing benchmark: how long the pictures take.

    python benchmarks/draw.py            (median of 15 runs each)
    python benchmarks/draw.py --quick    (5 runs)

Cases (each timed end to end, from the definition to the SVG text, graphviz `dot` included):
  wire diagram (SVG), TxnOffsetCommitRequest v6   field layout, and example-driven layout
  wire diagram (SVG), MetadataResponse v12        field layout, and example-driven layout
  annotated hex dump (HTML) of a ~2 KB message    only if kipviz/draw/hexdump.py is present

Targets: <= 100 ms per diagram, <= 50 ms per hex dump. Each line says PASS or MISS."""
from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import platform
import statistics
import sys
import time

from kipviz import codec
from kipviz.draw import wire_svg
from kipviz.draw.render import dot_available

TARGET_DIAGRAM_MS = 100.0
TARGET_HEXDUMP_MS = 50.0


def median_ms(fn, runs: int) -> float:
    fn()                                   # warm-up: compiled codec plans, imports
    times = []
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def txn_offset_commit_2kb() -> tuple[bytes, int]:
    """A TxnOffsetCommitRequest v5 body of about 2 KB (topics x partitions)."""
    def value(topics: int) -> dict:
        return {"TransactionalId": "tx-orders-001", "GroupId": "order-processors", "ProducerId": 4001,
                "ProducerEpoch": 12, "GenerationIdOrMemberEpoch": 5, "MemberId": "consumer-1-abc123",
                "GroupInstanceId": None,
                "Topics": [{"Name": f"orders-{t}", "Partitions": [
                    {"PartitionIndex": p, "CommittedOffset": 150382 + p, "CommittedLeaderEpoch": 12,
                     "CommittedMetadata": ""} for p in range(6)]} for t in range(topics)]}
    topics = 1
    while len(codec.encode("TxnOffsetCommitRequest", 5, value(topics))) < 2000:
        topics += 1
    return codec.encode("TxnOffsetCommitRequest", 5, value(topics)), topics


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 runs per case instead of 15")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else 15
    if not dot_available():
        print("graphviz `dot` not found: `make lab` provides it (or apt-get install graphviz)")
        return 2

    print(f"kipviz draw benchmark · Python {platform.python_version()} · {platform.machine()} · "
          f"{os.cpu_count()} CPUs · median of {runs} runs")
    results = []
    for name, version in (("TxnOffsetCommitRequest", 6), ("MetadataResponse", 12)):
        for example, what in ((None, "layout"), (True, "example-driven")):
            ms = median_ms(lambda n=name, v=version, ex=example: wire_svg(n, v, example=ex), runs)
            results.append((f"wire diagram SVG  {name} v{version} ({what})", ms, TARGET_DIAGRAM_MS))

    if importlib.util.find_spec("kipviz.draw.hexdump") is not None:
        from kipviz.draw.hexdump import hexdump_html
        data, topics = txn_offset_commit_2kb()
        spans = codec.annotate("TxnOffsetCommitRequest", 5, data)
        ms = median_ms(lambda: hexdump_html(data, spans), runs)
        results.append((f"hex dump HTML  TxnOffsetCommitRequest v5, {len(data)} B, {len(spans)} spans", ms,
                        TARGET_HEXDUMP_MS))
        ms = median_ms(lambda: hexdump_html(data, codec.annotate("TxnOffsetCommitRequest", 5, data)), runs)
        results.append((f"annotate + hex dump  same {len(data)} B message", ms, TARGET_HEXDUMP_MS))
    else:
        print("(kipviz/draw/hexdump.py not present: hex dump case skipped)")

    width = max(len(r[0]) for r in results)
    missed = 0
    for label, ms, target in results:
        ok = ms <= target
        missed += not ok
        print(f"{label:<{width}}  {ms:7.1f} ms   target <= {target:.0f} ms   {'PASS' if ok else 'MISS'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
