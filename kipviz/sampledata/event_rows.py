"""events.parquet rows back into event objects: the inverse of rows.event_columns for a reader
(kipviz.spark) that hands a few rows to the model's own checkers (kipviz.eos).

A row's kind names the class (schema/events.py event_classes), its detail JSON holds the fields
without a column of their own (rows.event_detail), the columns the rest. What the JSON could not
keep comes back as the JSON has it: bytes as "0x<hex>", UUIDs as Kafka's base64 text; tuples,
written as lists, are tuples again."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from ..schema import events as ev
from .schema import COLUMNS

_ENVELOPE = {"seq", "t"}


def _tuples(v):
    """Lists (the JSON of tuples) as tuples, nested ones too."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _is_tuple(f: dataclasses.Field) -> bool:
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    return t.startswith(("tuple", "Annotated[tuple"))


def event_from_row(kind: str, detail: str | Mapping | None, seq: int = 0, t: int = 0, **columns) -> ev.Event:
    """The `kind` event of one events.parquet row: `detail` is its detail column (JSON text, or
    already parsed), `columns` the values of its own columns (a StateChanged's machine, key, ...;
    a RecordAppended's topic, partition, offset). A field found in neither takes its default;
    one without a default is an error (the row is not of this kind's shape)."""
    cls = ev.event_classes().get(kind)
    if cls is None:
        raise ValueError(f"no event kind {kind!r}")
    d = json.loads(detail) if isinstance(detail, str) else dict(detail or {})
    own = set(COLUMNS.get(cls, ()))
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in _ENVELOPE:
            continue
        if f.name in own and f.name in columns:
            v = columns[f.name]
        elif f.name in d:
            v = d[f.name]
        elif f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        else:
            raise ValueError(f"a {kind} row without its field {f.name!r}")
        values[f.name] = _tuples(v) if _is_tuple(f) else v
    return cls(seq=seq, t=t, **values)
