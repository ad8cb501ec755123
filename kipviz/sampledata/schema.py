"""The sample-data format "kipviz-sample/2": one Arrow schema per dataset and the fixed Parquet
settings that make a regenerated set byte-identical (sample_data/README.md documents each column).

The topic datasets have exactly the columns and types of Spark's Kafka source (with
includeHeaders=true), so `spark.read.parquet("DIR/topics/orders.parquet")` looks like
`spark.read.format("kafka")` on the same log."""
from __future__ import annotations

import pyarrow as pa

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

EVENT = pa.schema([
    pa.field("seq", pa.int64()),
    pa.field("time_ms", pa.int64()),
    pa.field("kind", pa.string()),
    pa.field("machine", pa.string()),
    pa.field("key", pa.string()),
    pa.field("from_state", pa.string()),
    pa.field("to_state", pa.string()),
    pa.field("cause", pa.string()),
    pa.field("status", pa.string()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("detail", pa.string()),
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
