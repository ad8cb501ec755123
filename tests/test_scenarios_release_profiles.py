"""The 4.3/4.4 release profile the KIP-1319 fallback scenario plays, and the 4.4 scenario labels."""
from __future__ import annotations

from kipviz import scenarios
from kipviz.broker import served_versions


def test_fallback_old_broker_plays_4_3():
    t = scenarios.run("kip1319.fallback_old_broker")
    assert t.cluster.config.release == "4.3" and served_versions("ApiVersions", t.cluster.config) == (0, 4)
    assert all(c.passed for c in t.checks) and t.result["version_sent"] == 5
    row = {r["name"]: r for r in scenarios.catalog()}
    assert row["kip1242.misrouted_connection"]["status"] == "released"
    assert all(r["status"] == "released" for n, r in row.items() if n.startswith("kip1319."))
