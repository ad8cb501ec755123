"""Round trips and byte coverage for every kit definition and version (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kipviz import codec
from kipviz.codec.plan import plan_for
from kipviz.schema import registry

from .strategies import message_values

CASES = [(name, v) for name, spec in sorted(registry.messages().items()) for v in spec.versions]


def _equal(a, b) -> bool:
    """Values equal after a round trip (floats: -0.0 == 0.0 is fine, NaN excluded by strategy)."""
    return a == b


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@given(data=st.data())
def test_round_trip_and_annotate(name, version, data):
    spec = registry.get(name)
    value = data.draw(message_values(spec, version))
    wire = codec.encode(name, version, value)
    assert _equal(codec.decode(name, version, wire), value)
    # the spans cover every byte exactly once, in order
    spans = codec.annotate(name, version, wire)
    pos = 0
    for s in spans:
        assert s.start == pos and s.end >= s.start
        pos = s.end
    assert pos == len(wire)
    assert all(s.end > s.start for s in spans)
    # bytes -> value -> bytes is the identity too
    assert codec.encode(name, version, codec.decode(name, version, wire)) == wire


@pytest.mark.parametrize("name,version", CASES[::7], ids=[f"{n}-v{v}" for n, v in CASES[::7]])
@given(data=st.data())
def test_annotate_values_match_decode(name, version, data):
    spec = registry.get(name)
    value = data.draw(message_values(spec, version))
    wire = codec.encode(name, version, value)
    for s in codec.annotate(name, version, wire):
        if s.role == "value":
            node = value
            for part in s.path.replace("]", "").replace("[", ".").split("."):
                node = node[int(part)] if part.isdigit() else node[part]
            assert node == s.value


def test_every_plan_compiles():
    for name, v in CASES:
        p = plan_for(registry.get(name), v)
        p._decoder(), p._annotator(), p._encoder()
