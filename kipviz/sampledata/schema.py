"""The sample-data format "kipviz-sample/2": one Arrow schema per dataset and the fixed Parquet
settings that make a regenerated set byte-identical (sample_data/README.md documents each column).

The topic datasets have exactly the columns and types of Spark's Kafka source (with
includeHeaders=true), so `spark.read.parquet("DIR/topics/orders.parquet")` looks like
`spark.read.format("kafka")` on the same log."""
from __future__ import annotations

import dataclasses
from typing import Annotated, get_args, get_origin, get_type_hints

import pyarrow as pa

from ..schema import events as ev

FORMAT = "kipviz-sample/2"

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])

TOPIC = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", pa.list_(HEADER)),
])

BATCH = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("base_offset", pa.int64()),
    pa.field("last_offset", pa.int64()),
    pa.field("producer_id", pa.int64()),
    pa.field("producer_epoch", pa.int32()),
    pa.field("is_transactional", pa.bool_()),
    pa.field("is_control", pa.bool_()),
    pa.field("batch", pa.binary()),
    pa.field("seq", pa.int64()),
])

REQUEST = pa.schema([
    pa.field("seq", pa.int64()),
    pa.field("time_ms", pa.int64()),
    pa.field("broker", pa.int32()),
    pa.field("client", pa.string()),
    pa.field("api", pa.string()),
    pa.field("api_key", pa.int32()),
    pa.field("version", pa.int32()),
    pa.field("correlation_id", pa.int32()),
    pa.field("error_codes", pa.list_(pa.int32())),
    pa.field("error_names", pa.list_(pa.string())),
    pa.field("request", pa.binary()),
    pa.field("response", pa.binary()),
])

# ---- the event log: derived from the event classes (kipviz/schema/events.py) ---------------------
# The two kinds most rows are have columns of their own: their fields marked Annotated[..., "column"]
# (an int is int64 unless marked "int32"); every other field of every kind is in the detail JSON.
COLUMN_KINDS: tuple[type[ev.Event], ...] = (ev.StateChanged, ev.RecordAppended)
_ARROW_TYPES = {str: pa.string(), int: pa.int64(), bool: pa.bool_(), bytes: pa.binary(), float: pa.float64()}
_MARKED_TYPES = {"int32": pa.int32(), "int64": pa.int64()}


def column_fields(cls: type[ev.Event]) -> list[pa.Field]:
    """The Parquet columns of `cls`'s own: its fields marked "column", in declaration order, typed
    from their annotations."""
    hints = get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if get_origin(hint) is not Annotated or "column" not in hint.__metadata__:
            continue
        marked = [_MARKED_TYPES[m] for m in hint.__metadata__ if m in _MARKED_TYPES]
        out.append(pa.field(f.name, marked[0] if marked else _ARROW_TYPES[get_args(hint)[0]]))
    return out


COLUMNS: dict[type[ev.Event], tuple[str, ...]] = {
    cls: tuple(f.name for f in column_fields(cls)) for cls in COLUMN_KINDS}

EVENT = pa.schema([
    pa.field("seq", pa.int64()),
    pa.field("time_ms", pa.int64()),          # Event.t
    pa.field("kind", pa.string()),            # the class name
    *(f for cls in COLUMN_KINDS for f in column_fields(cls)),
    pa.field("detail", pa.string()),          # the other fields, as JSON (kipviz.sampledata.rows.event_detail)
])

# Parquet settings: fixed, so the same rows always give the same bytes (no wall clock is written;
# created_by names the pyarrow version, which therefore has to match for a byte-identical file).
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 3
ROW_GROUP_ROWS = {"topic": 65536, "batch": 1024, "request": 512, "event": 65536}
DICTIONARY = {  # dictionary-encode only the low-cardinality text columns
    "topic": ["topic"],
    "batch": ["topic"],
    "request": ["client", "api"],
    "event": ["kind", "machine", "from_state", "to_state", "cause", "status", "topic"],
}
SCHEMAS = {"topic": TOPIC, "batch": BATCH, "request": REQUEST, "event": EVENT}
