"""Released share-group scenarios (KIP-932): what the notebook's first section runs."""
import pytest

from kipviz import scenarios


def _moves(trace, offset):
    return [(e.from_state, e.to_state, e.cause) for e in trace.events
            if e.kind == "StateChanged" and e.machine == "share-record" and e.key.endswith(f"@{offset}")]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_acquire_and_acknowledge(seed):
    t = scenarios.run("kip932.acquire_and_acknowledge", seed=seed)
    assert t.passed, t.failures()
    assert t.scenario.status == "released" and t.scenario.kip == "KIP-932"
    released = t.result["redelivered"]
    to_states = [m[1] for m in _moves(t, released)]
    assert to_states == ["ACQUIRED", "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED"]
    assert [m[1] for m in _moves(t, t.result["a"][3])] == ["ACQUIRED", "ARCHIVED"]


def test_lock_expiry_to_archived_at_limit():
    t = scenarios.run("kip932.lock_expiry_delivery_limit")
    assert t.passed, t.failures()
    assert t.result["delivery_counts"] == [1, 2, 3, 4, 5]
    moves = _moves(t, 0)
    assert [m[1] for m in moves] == ["ACQUIRED", "AVAILABLE"] * 4 + ["ACQUIRED", "ARCHIVED"]
    # every release happened exactly when the 30 s lock ran out, never by session timeout
    expiries = [e.t for e in t.events if e.kind == "StateChanged" and e.machine == "share-record"
                and e.from_state == "ACQUIRED"]
    acquired = [e.t for e in t.events if e.kind == "StateChanged" and e.machine == "share-record"
                and e.to_state == "ACQUIRED"]
    assert [b - a for a, b in zip(acquired, expiries, strict=True)] == [30000] * 5
