"""The exactly-once and consumer-group scenarios (kipviz/scenarios/transactions.py, groups.py): every
check passes for several seeds, the model records no internal error, every response frame decodes,
and the traces draw."""
from __future__ import annotations

import pytest

from kipviz import codec, scenarios
from kipviz.draw.animate import animation
from kipviz.draw.sequence import sequence_svg

NAMES = ["txn.read_process_write_commit", "txn.read_process_write_abort", "txn.timeout_abort",
         "txn.zombie_fencing", "txn.tv1_vs_tv2", "kip848.consumer_group_join_and_rebalance",
         "classic.join_sync_generations"]


def test_the_scenarios_are_in_the_catalog_as_released():
    cat = {s["name"]: s for s in scenarios.catalog()}
    for name in NAMES:
        assert name in cat, name
        assert cat[name]["status"] == "released" and cat[name]["summary"] and cat[name]["title"]


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("name", NAMES)
def test_every_check_passes(name, seed):
    trace = scenarios.run(name, seed=seed)
    assert trace.checks, "a scenario must check something"
    assert trace.passed, "\n".join(f"{c.description}: {c.detail}" for c in trace.failures())
    assert trace.cluster.internal_errors == []
    for e in trace.events:
        if e.kind == "ResponseSent" and e.frame:
            codec.decode_response(e.frame, e.api, e.version)


def test_a_scenario_is_deterministic_for_a_seed():
    a, b = scenarios.run("txn.read_process_write_commit", seed=3), scenarios.run("txn.read_process_write_commit", seed=3)
    assert [e.frame for e in a.events if e.kind == "ResponseSent"] == \
        [e.frame for e in b.events if e.kind == "ResponseSent"]


def test_results_expose_what_a_notebook_shows():
    t = scenarios.run("txn.read_process_write_commit")
    assert t.result["offsets"] == {("orders", 0): 3, ("orders", 1): 3}
    assert t.result["member_epoch"] == 1 and t.result["producer_id"] >= 0
    t = scenarios.run("txn.tv1_vs_tv2")
    assert t.result["tv1"]["epochs"] == [0, 0, 0] and t.result["tv2"]["epochs"] == [1, 2, 3]
    t = scenarios.run("classic.join_sync_generations")
    assert t.result["generations"] == [1, 2, 3]


def test_the_request_table_and_the_transaction_animation_come_from_the_events():
    t = scenarios.run("txn.timeout_abort")
    table = t.requests()
    assert {"InitProducerId", "ConsumerGroupHeartbeat", "TxnOffsetCommit", "EndTxn", "Fetch"} <= set(table["api"])
    assert "PRODUCER_FENCED" in set(table["errors"])
    anim = animation(t, "transaction", key="enricher-tx")
    assert [f.state for f in anim.frames][-1] == "CompleteAbort"


def test_a_sequence_diagram_draws():
    svg = sequence_svg(scenarios.run("kip848.consumer_group_join_and_rebalance"))
    assert svg.lstrip().startswith("<") and "ConsumerGroupHeartbeat" in svg
