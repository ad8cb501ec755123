"""The column layouts kipviz.spark reads and writes, as pyarrow schemas and Spark DDL.

Inputs follow the sample-data contract (sample_data/README.md): a topic's records exactly as Spark's
Kafka source gives them (KAFKA), the raw record batches (BATCHES), the model's requests (REQUESTS)
and events (EVENTS). Outputs are the decoders' rows (kipviz.spark.decode) and the errors table."""
from __future__ import annotations

import pyarrow as pa

from ..broker.tables import share_record as _share_record
from ..broker.tables import transaction as _transaction
from ..sampledata.schema import EVENT as _EVENT

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
KAFKA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                   ("partition", pa.int32()), ("offset", pa.int64()),
                   ("timestamp", pa.timestamp("ms", tz="UTC")), ("timestampType", pa.int32()),
                   ("headers", pa.list_(HEADER))])
BATCHES = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("base_offset", pa.int64()),
                     ("last_offset", pa.int64()), ("producer_id", pa.int64()), ("producer_epoch", pa.int32()),
                     ("is_transactional", pa.bool_()), ("is_control", pa.bool_()), ("batch", pa.binary()),
                     ("seq", pa.int64())])
REQUESTS = pa.schema([("seq", pa.int64()), ("time_ms", pa.int64()), ("broker", pa.int32()), ("client", pa.string()),
                      ("api", pa.string()), ("api_key", pa.int32()), ("version", pa.int32()),
                      ("correlation_id", pa.int32()), ("error_codes", pa.list_(pa.int32())),
                      ("error_names", pa.list_(pa.string())), ("request", pa.binary()), ("response", pa.binary())])
EVENTS = _EVENT           # derived from the event classes (kipviz/sampledata/schema.py)

# the same, as Spark DDL (what spark.read.format("kafka") gives, with includeHeaders=true)
KAFKA_DDL = ("key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp, "
             "timestampType int, headers array<struct<key: string, value: binary>>")
BATCHES_DDL = ("topic string, partition int, base_offset bigint, last_offset bigint, producer_id bigint, "
               "producer_epoch int, is_transactional boolean, is_control boolean, batch binary, seq bigint")
REQUESTS_DDL = ("seq bigint, time_ms bigint, broker int, client string, api string, api_key int, version int, "
                "correlation_id int, error_codes array<int>, error_names array<string>, request binary, "
                "response binary")
_DDL_TYPES = {pa.string(): "string", pa.int64(): "bigint", pa.int32(): "int", pa.bool_(): "boolean",
              pa.binary(): "binary", pa.float64(): "double"}


def ddl(schema: pa.Schema) -> str:
    """A flat pyarrow schema as Spark DDL ("name type, ...")."""
    return ", ".join(f"{f.name} {_DDL_TYPES[f.type]}" for f in schema)


EVENTS_DDL = ddl(EVENTS)

# ---- decoder outputs (pyarrow is the source of truth; spark_schema() gives Spark's) ----------------
_S, _I32, _I64, _B, _BIN = pa.string(), pa.int32(), pa.int64(), pa.bool_(), pa.binary()
# where a decoded row came from, and what went wrong (nulls when nothing did)
_ORIGIN = [("log_topic", _S), ("log_partition", _I32), ("log_offset", _I64), ("log_timestamp_ms", _I64)]
_ERROR = [("error", _S), ("error_kind", _S), ("error_path", _S)]

OFFSETS = pa.schema([("group", _S), ("topic", _S), ("partition", _I32), ("topic_id", _S),
                     ("committed_offset", _I64), ("leader_epoch", _I32), ("metadata", _S),
                     ("commit_timestamp_ms", _I64), ("expire_timestamp_ms", _I64), ("record_type", _I32),
                     ("value_version", _I32), ("tombstone", _B)] + _ORIGIN + _ERROR)
PARTITION = pa.struct([("topic", _S), ("partition", _I32)])
TRANSACTIONS = pa.schema([("transactional_id", _S), ("producer_id", _I64), ("producer_epoch", _I32),
                          ("previous_producer_id", _I64), ("next_producer_id", _I64), ("timeout_ms", _I32),
                          ("state", _S), ("state_id", _I32), ("partitions", pa.list_(PARTITION)),
                          ("last_update_ms", _I64), ("start_ms", _I64), ("client_transaction_version", _I32),
                          ("value_version", _I32), ("tombstone", _B)] + _ORIGIN + _ERROR)
STATE_BATCH = pa.struct([("first_offset", _I64), ("last_offset", _I64), ("delivery_state", _I32),
                         ("delivery_count", _I32)])
SHARE_STATE = pa.schema([("group", _S), ("topic_id", _S), ("partition", _I32), ("record", _S),
                         ("snapshot_epoch", _I32), ("state_epoch", _I32), ("leader_epoch", _I32),
                         ("start_offset", _I64), ("delivery_complete_count", _I32), ("create_timestamp_ms", _I64),
                         ("write_timestamp_ms", _I64), ("state_batches", pa.list_(STATE_BATCH)),
                         ("value_version", _I32), ("value_spec", _S), ("tombstone", _B)] + _ORIGIN + _ERROR)
RECORDS = pa.schema([("topic", _S), ("partition", _I32), ("offset", _I64), ("timestamp_ms", _I64),
                     ("key", _BIN), ("value", _BIN), ("headers", pa.list_(HEADER)), ("source", _S),
                     ("producer_id", _I64), ("producer_epoch", _I32), ("is_transactional", _B),
                     ("is_control", _B), ("control_type", _S), ("coordinator_epoch", _I32),
                     ("base_offset", _I64), ("crc_valid", _B)] + _ERROR)
PAYLOAD = ("key", "value", "headers")
# RECORDS without the payload: what the decoder hands over when nobody reads keys and values
RECORDS_NO_PAYLOAD = pa.schema([f for f in RECORDS if f.name not in PAYLOAD])
ERRORS_DDL = "dataset string, partition int, offset bigint, error_kind string, error string, error_path string"


def spark_schema(schema: pa.Schema):
    """The Spark StructType of a pyarrow schema."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(schema)


# Kafka's TransactionStatus ids and share delivery-state ids, read from the broker's tables (one source)
TXN_STATES = dict(_transaction.STATE_NAMES)
DELIVERY_STATES = {i: name for name, i in _share_record.STATE_IDS.items()}
