"""Memory per workshop participant, two ways (docs/workshop.md, "Workshop mode with Spark Connect"):
each participant's kernel with its own Spark JVM (local[2], kipviz.spark.session()), or every
kernel a thin client of one Spark Connect server.

    python benchmarks/workshop_memory.py                 (1, 2 and 4 participants, both ways)
    python benchmarks/workshop_memory.py --kernels 1,2

A participant is a Python process (standing in for a kernel) that opens its session, runs
notebook 07's first job -- read_samples + decode_all + transaction_summary of
sample_data/regular_eos -- and then holds. Once all of them hold, the proportional set size (PSS:
shared pages counted once across processes) of every participant's process tree, plus the Connect
server's tree, is summed."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
JOB = r"""
import sys, time
from kipviz import spark as ks
spark = ks.session() if sys.argv[1] == "-" else ks.session(remote=sys.argv[1])
logs = ks.decode_all(ks.read_samples(spark, "sample_data/regular_eos"))
ks.transaction_summary(logs).count()
print("ready", flush=True)
time.sleep(600)
"""


def pss_tree(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def measure(n: int, remote: str | None, env: dict) -> tuple[float, float]:
    """(MB in all, seconds until every participant held) for n participants."""
    t0 = time.monotonic()
    ps = [subprocess.Popen([sys.executable, "-c", JOB, remote or "-"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True) for _ in range(n)]
    try:
        for p in ps:
            line = p.stdout.readline()
            assert line.startswith("ready"), f"a participant failed ({p.poll()})"
        took = time.monotonic() - t0
        return sum(pss_tree(p.pid) for p in ps) / 2**20, took
    finally:
        for p in ps:
            p.kill()
            p.wait(10)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="1,2,4")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests import spark_cluster as sc
    env = sc.env()
    print(f"load {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    counts = [int(x) for x in a.kernels.split(",")]
    for n in counts:
        mb, s = measure(n, None, env)
        print(f"JVM per kernel, {n} participant(s): {mb:,.0f} MB in all, {mb / n:,.0f} MB each ({s:.0f} s)")
    url, server, _ = sc.start_connect(Path(tempfile.mkdtemp(prefix="kipviz-ws-")))
    try:
        idle = pss_tree(server.pid) / 2**20
        print(f"Connect server alone: {idle:,.0f} MB")
        for n in counts:
            ps = [subprocess.Popen([sys.executable, "-c", JOB, url], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True) for _ in range(n)]
            t0 = time.monotonic()
            try:
                for p in ps:
                    assert p.stdout.readline().startswith("ready"), f"a participant failed ({p.poll()})"
                took = time.monotonic() - t0
                clients = sum(pss_tree(p.pid) for p in ps) / 2**20
                srv = pss_tree(server.pid) / 2**20
            finally:
                for p in ps:
                    p.kill()
                    p.wait(10)
            print(f"Connect, {n} participant(s): clients {clients:,.0f} MB + server {srv:,.0f} MB = "
                  f"{clients + srv:,.0f} MB, {(clients + srv) / n:,.0f} MB each ({took:.0f} s)")
    finally:
        sc.stop([server])
    print(f"load at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
