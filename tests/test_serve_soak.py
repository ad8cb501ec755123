"""A short soak of `kipviz serve` (benchmarks/soak.py, the 1-hour one's little sibling): a subprocess
server on 127.0.0.1 with a steady idempotent acks=all producer and a group consumer for ~75 s; after
warm-up its RSS stays flat and the model holds no more log than retention allows.

Tolerances are for a loaded 2-core machine: without retention the log alone grows ~18 MiB/min at
this rate (300 records/s of 1 KB), so a slope bound of 4 MiB/min and a median-to-median growth
bound of 6 MiB still catch unbounded growth while ignoring allocator noise. The run includes a share
consumer (--share): the share coordinator's pruning keeps __share_group_state to about one
snapshot period (500 updates) however long the run (kipviz.broker.shares)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")

SOAK = Path(__file__).resolve().parent.parent / "benchmarks" / "soak.py"


def _soak_module():
    spec = importlib.util.spec_from_file_location("kipviz_bench_soak", SOAK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_short_soak_memory_stays_flat_and_the_log_stays_within_retention():
    soak = _soak_module()
    r = soak.soak(1.25, rate=300, every=3.0, warmup=30.0, retention_bytes=2 * 1024 * 1024,
                  segment_bytes=1024 * 1024, events_max=5000, share=True, log=lambda line: None)
    assert r["returncode"] == 0, r["server_stderr"]
    assert r["client_errors"] == []
    series = r["series"]
    assert len(series) >= 20
    assert r["counts"]["produced"] > 10_000 and r["counts"]["consumed"] > 10_000 and r["counts"]["share"] > 10_000
    assert r["requests"] and r["requests"] > 1000
    # the log kept is bounded by retention (2 MiB here), not by what was produced (> 10 MiB)
    assert r["largest_partition_bytes"] <= r["log_bound"]
    assert r["log_bytes"] < r["counts"]["produced"] * 1024 / 3
    # every acknowledgement writes a share-state record (~135 bytes); unpruned the log keeps them
    # all, pruning keeps one snapshot period: at most 501 records of at most ~250 bytes
    assert 0 < r["internal_log_bytes"]["__share_group_state"] <= 501 * 250, r["internal_log_bytes"]
    assert r["slope_mib_per_min"] < 4.0, series
    assert r["growth_mib"] < 6.0, series
