"""A sequence diagram's tooltip (kipviz.draw.sequence._tip) reads only the first TIP_CHARS bytes of a
bytes value, so a megabyte record batch costs nothing, yet every tip is what the whole value's
repr would give, quotes and escapes included."""
from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.draw.sequence import TIP_CHARS, _tip, _tip_value
from kipviz.schema import events as E


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"'", b'"', b"a", b"\\", b"\x00", b"\n", b"\xff"]), min_size=0, max_size=1500))
def test_a_cut_value_reads_as_the_whole_ones_repr(parts):
    o = b"".join(parts)
    assert _tip_value(o)[:TIP_CHARS] == str(o)[:TIP_CHARS]


def test_a_megabyte_batch_is_not_rendered_whole():
    body = {"Records": b"'" + b"\x00" * (8 << 20)}
    ev = E.RequestReceived(0, 0, 0, "c", "Produce", 9, 1, body)
    t = time.perf_counter()
    tip = _tip(ev)
    assert time.perf_counter() - t < 0.5 and len(tip) == TIP_CHARS - 2 and tip.startswith('{"Records": "b\\"\'')
