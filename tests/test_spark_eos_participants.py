"""Spark's verify_eos on KIP-1289 with share_marker_routing "participants" (the kit's suggestion):
it reads no routing name, only the event log (Notes of step marker-unreached, which this routing
never writes), so it agrees with kipviz.eos as it does for "forward-to-leader": exactly once when the
share partition keeps its leader, case 1's window when the share partition's leader changed."""
from __future__ import annotations

import pytest

from kipviz import scenarios
from kipviz import spark as ks
from kipviz.eos import check_share_eos
from tests.spark_session import spark  # noqa: F401 - the shared session fixture

pytestmark = pytest.mark.spark
NAMES = dict(group="sg", input_topic="in", output_topic="out", allowed_at_least_once=True)


@pytest.mark.parametrize("name, windows", [("kip1289.marker_participants", {}),
                                           ("kip1289.marker_participants_state_leader_change", {}),
                                           ("kip1289.marker_participants_leader_change", {1: 4})])
def test_verify_eos_agrees_with_kipviz_eos_on_participants(spark, name, windows):  # noqa: F811
    trace = scenarios.run(name)
    report = check_share_eos(trace.events, **NAMES)
    res = ks.verify_eos(ks.scenario_logs(trace, spark=spark), **NAMES)
    assert dict(report.windows()) == windows and report.ok
    assert res.ok and res.unchecked == [], res.summary()
    assert res.keys() == {(v["kind"], v["input"], v["classification"], v["case"], v["transaction"])
                          for v in report.violations}
    assert sorted(r["case"] for r in res.rows if r["kind"] == "duplicate-output") == [1] * sum(windows.values())
