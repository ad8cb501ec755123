"""KIP-1242 scenario and the 4.3/4.4 release profile the KIP-1319 fallback scenario plays."""
from __future__ import annotations

from kipviz import scenarios
from kipviz.broker import served_versions


def test_misrouted_connection_checks_pass_and_say_what_came_back():
    t = scenarios.run("kip1242.misrouted_connection")
    assert t.checks and all(c.passed for c in t.checks), [c for c in t.checks if not c.passed]
    assert t.result["answers"] == {"bootstrap (ids unknown)": "NONE", "other cluster": "REBOOTSTRAP_REQUIRED",
                                   "other node": "REBOOTSTRAP_REQUIRED", "right node": "NONE",
                                   "other cluster at v4": "NONE"}
    assert t.result["cluster_a"] != t.result["cluster_b"]


def test_fallback_old_broker_plays_4_3():
    t = scenarios.run("kip1319.fallback_old_broker")
    assert t.cluster.config.release == "4.3" and served_versions("ApiVersions", t.cluster.config) == (0, 4)
    assert all(c.passed for c in t.checks) and t.result["version_sent"] == 5
    row = {r["name"]: r for r in scenarios.catalog()}
    assert row["kip1242.misrouted_connection"]["status"] == "released"
    assert all(r["status"] == "released" for n, r in row.items() if n.startswith("kip1319."))
