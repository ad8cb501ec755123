"""Hypothesis strategies: random values for any message version, straight from its definition."""
from __future__ import annotations

import uuid

from hypothesis import strategies as st

from kipviz.codec.normalize import INT_RANGES
from kipviz.schema.resolve import VField, resolve

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_blob = st.binary(max_size=12)
PRIM = {
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    "string": _text,
    "bytes": _blob,
    "records": _blob,
    "uuid": st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
    **{k: st.integers(lo, hi) for k, (lo, hi) in INT_RANGES.items()},
}


def _value(f: VField, nullable: bool):
    base = struct_strategy(f.fields) if f.is_struct else PRIM[f.elem]
    return st.one_of(st.none(), base) if nullable else base


def field_strategy(f: VField):
    if f.is_array:
        arr = st.lists(_value(f, False), max_size=3)
        return st.one_of(st.none(), arr) if f.nullable else arr
    return _value(f, f.nullable)


def struct_strategy(fields: tuple[VField, ...]):
    return st.fixed_dictionaries({f.name: field_strategy(f) for f in fields})


def message_values(spec, version: int):
    return struct_strategy(resolve(spec, version).fields)
