"""Decoding inside Spark with kipviz's own decoders, one Arrow batch at a time (mapInArrow).

    offsets = decode_offsets(src.topic("__consumer_offsets"))        # OffsetCommit records
    txns    = decode_transactions(src.topic("__transaction_state"))  # TransactionLog records
    share   = decode_share_state(src.topic("__share_group_state"))   # ShareSnapshot / ShareUpdate
    records = decode_batches(src.batches_of("out"))                  # records + transactional flags + markers
    records = decode_batches_no_payload(src.batches_of("out"))       # the same without key, value, headers
    records = decode_topic(src.topic("out"))                         # records of a Kafka-source frame

Each Python worker receives Arrow batches of (key, value, partition, offset, timestamp) and runs
kipviz.records.decode_internal / read_batches over them (without payload, all of an Arrow batch's
record batches at once: kipviz.records.skim_column, then skim / read_batches for what it leaves):
no row-by-row Python UDF, no pickling of rows. A record that does not decode (corrupt bytes, an
unknown record type or value version) gives one row whose `error`, `error_kind` and `error_path`
say what and where, and the data columns null; split_errors() separates them. Nothing a single
bad record holds can stop the job.

The functions named *_arrow are the per-batch decoders themselves, usable without Spark (the
benchmark's single-process baseline runs exactly them)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..eos.checker import SOURCE_HEADER
from ..errors import DecodeError
from ..records import read_batches
from ..records.batch import INT64_RANGE as _INT64
from ..records.header import TIMESTAMP_TYPE_MASK as _LOG_APPEND_TIME
from ..records.header import TRANSACTIONAL_MASK as _TRANSACTIONAL
from ..records.internal import decode_internal
from ..records.skim import skim_batch
from ..records.skim_column import skim_column
from ..schema.topics import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE
from . import schemas

__all__ = ["decode_offsets", "decode_transactions", "decode_share_state", "decode_batches",
           "decode_batches_no_payload", "with_null_payload", "decode_topic", "split_errors", "offsets_arrow",
           "transactions_arrow", "share_state_arrow", "batches_arrow", "error_kind"]

_SOURCE_B = SOURCE_HEADER.encode()


def error_kind(e: Exception) -> str:
    """unknown-version / unknown-record-type / corrupt, from a kipviz DecodeError."""
    msg = str(e)
    if "is unknown to kipviz" in msg:
        return "unknown-version"
    if "record type" in msg and "unknown" in msg:
        return "unknown-record-type"
    return "corrupt"


class _Out:
    """Column lists for one output batch."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.cols = {n: [] for n in schema.names}
        self.names = schema.names

    def add(self, row: dict) -> None:
        for n in self.names:
            self.cols[n].append(row.get(n))

    def batch(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([pa.array(self.cols[n], type=f.type) for n, f in
                                           zip(self.names, self.schema, strict=True)], schema=self.schema)


def _inputs(rb: pa.RecordBatch):
    c = rb.schema.names
    topic = rb.column(c.index("topic")).to_pylist() if "topic" in c else [None] * rb.num_rows
    return (rb.column(c.index("key")).to_pylist(), rb.column(c.index("value")).to_pylist(), topic,
            rb.column(c.index("partition")).to_pylist(), rb.column(c.index("offset")).to_pylist(),
            rb.column(c.index("timestamp_ms")).to_pylist())


def _internal(rb: pa.RecordBatch, topic: str, schema: pa.Schema, convert) -> pa.RecordBatch:
    out = _Out(schema)
    keys, values, topics, parts, offs, tss = _inputs(rb)
    for i in range(len(keys)):
        origin = {"log_topic": topics[i] or topic, "log_partition": parts[i], "log_offset": offs[i],
                  "log_timestamp_ms": tss[i]}
        k = keys[i]
        if k is None:
            out.add({**origin, "error": "null key: every coordinator record has a key",
                     "error_kind": "corrupt", "error_path": "key"})
            continue
        try:
            d = decode_internal(k, values[i], topic)
            row = convert(d)
        except DecodeError as e:
            out.add({**origin, "error": str(e), "error_kind": error_kind(e), "error_path": e.path or None})
            continue
        except (KeyError, TypeError, ValueError) as e:     # decodes, but not with the expected fields
            out.add({**origin, "error": f"{type(e).__name__}: {e}", "error_kind": "corrupt", "error_path": None})
            continue
        if row is not None:
            row.update(origin)
            out.add(row)
    return out.batch()


def _uuid_text(u) -> str | None:
    return None if u is None or u.int == 0 else str(u)


def _offset_row(d: dict) -> dict | None:
    if d["record"] != "OffsetCommit":
        return None                      # group metadata and KIP-848 records: not offsets
    k, v = d["key"], d["value"]
    row = {"group": k["group"], "topic": k["topic"], "partition": k["partition"],
           "record_type": d["record_type"], "value_version": d["value_version"], "tombstone": d["tombstone"]}
    if v is not None:
        row.update(topic_id=_uuid_text(v.get("topicId")), committed_offset=v["offset"],
                   leader_epoch=v.get("leaderEpoch", -1), metadata=v.get("metadata"),
                   commit_timestamp_ms=v["commitTimestamp"], expire_timestamp_ms=v.get("expireTimestamp", -1))
    return row


def _txn_row(d: dict) -> dict:
    k, v = d["key"], d["value"]
    row = {"transactional_id": k["TransactionalId"], "value_version": d["value_version"],
           "tombstone": d["tombstone"]}
    if v is not None:
        sid = v["TransactionStatus"]
        row.update(producer_id=v["ProducerId"], producer_epoch=v["ProducerEpoch"],
                   previous_producer_id=v.get("PreviousProducerId", -1), next_producer_id=v.get("NextProducerId", -1),
                   timeout_ms=v["TransactionTimeoutMs"], state_id=sid,
                   state=schemas.TXN_STATES.get(sid, f"UNKNOWN({sid})"),
                   partitions=[{"topic": t["Topic"], "partition": p} for t in v["TransactionPartitions"] or []
                               for p in t["PartitionIds"]],
                   last_update_ms=v["TransactionLastUpdateTimestampMs"], start_ms=v["TransactionStartTimestampMs"],
                   client_transaction_version=v.get("ClientTransactionVersion", 0))
    return row


def _share_row(d: dict) -> dict:
    k, v = d["key"], d["value"]
    row = {"group": k["GroupId"], "topic_id": _uuid_text(k["TopicId"]), "partition": k["Partition"],
           "record": d["record"], "value_version": d["value_version"], "value_spec": d["value_spec"],
           "tombstone": d["tombstone"]}
    if v is not None:
        row.update(snapshot_epoch=v["SnapshotEpoch"], state_epoch=v.get("StateEpoch"), leader_epoch=v["LeaderEpoch"],
                   start_offset=v["StartOffset"], delivery_complete_count=v.get("DeliveryCompleteCount", -1),
                   create_timestamp_ms=v.get("CreateTimestamp"), write_timestamp_ms=v.get("WriteTimestamp"),
                   state_batches=[{"first_offset": b["FirstOffset"], "last_offset": b["LastOffset"],
                                   "delivery_state": b["DeliveryState"], "delivery_count": b["DeliveryCount"]}
                                  for b in v["StateBatches"]])
    return row


def offsets_arrow(rb: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of __consumer_offsets rows decoded into the offsets table (Arrow)."""
    return _internal(rb, CONSUMER_OFFSETS, schemas.OFFSETS, _offset_row)


def transactions_arrow(rb: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of __transaction_state rows decoded into the transactions table (Arrow)."""
    return _internal(rb, TRANSACTION_STATE, schemas.TRANSACTIONS, _txn_row)


def share_state_arrow(rb: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of __share_group_state rows decoded into the share-state table (Arrow)."""
    return _internal(rb, SHARE_GROUP_STATE, schemas.SHARE_STATE, _share_row)


def _source_of(headers) -> str | None:
    for k, v in headers:
        if k == SOURCE_HEADER or k == _SOURCE_B:
            if v is None:
                return None
            try:
                return v.decode() if isinstance(v, (bytes, bytearray)) else v
            except UnicodeDecodeError:
                return None
    return None


def batches_arrow(rb: pa.RecordBatch, payload: bool = True) -> pa.RecordBatch:
    """One row per record of each batch (control records included, with their marker type), in
    the RECORDS layout. With payload=False the layout is RECORDS_NO_PAYLOAD (no key, value and
    headers columns), and plain data batches and markers (most of a topic) are skimmed, all of
    the Arrow batch's at once (kipviz.records.skim_column: no record dicts, no per-record Python);
    anything the skim does not take goes through skim_batch or read_batches, and the rows keep
    the batches' order."""
    if payload:
        return _each_batch(rb, True)
    got = skim_column(rb.column(rb.schema.get_field_index("batch")), _SOURCE_B)
    fast_at = np.repeat(np.flatnonzero(got.ok), got.counts)          # each skimmed row's input batch
    fast = _skimmed(rb, got, fast_at)
    rest = np.flatnonzero(~got.ok)
    if not len(rest):
        return fast
    slow = _Records(False)
    slow_rows = _each_batch(rb.take(pa.array(rest)), False, slow)
    # both parts in the input's order: each row's input batch, stably sorted
    at = np.concatenate([fast_at, np.repeat(rest[np.asarray(slow.rows, dtype=np.int64)], slow.counts)])
    if not len(at):
        return fast
    both = pa.Table.from_batches([fast, slow_rows]).combine_chunks()
    return both.take(pa.array(np.argsort(at, kind="stable"))).to_batches()[0]


def _skimmed(rb: pa.RecordBatch, got, at: np.ndarray) -> pa.RecordBatch:
    """The rows of the batches skim_column took (RECORDS_NO_PAYLOAD); `at`: each row's input batch."""
    counts = got.counts
    rows = pa.array(at)
    c = rb.schema.names
    attrs = got.attributes
    log_append = np.repeat((attrs & _LOG_APPEND_TIME) != 0, counts)
    base = np.repeat(got.base_offset, counts)
    base_ts = np.repeat(got.base_timestamp, counts)
    cols = {"topic": rb.column(c.index("topic")).take(rows),
            "partition": rb.column(c.index("partition")).take(rows),
            "offset": base + got.offset_delta,
            "timestamp_ms": np.where(log_append, np.repeat(got.max_timestamp, counts), base_ts + got.timestamp_delta),
            "source": got.values,
            "producer_id": np.repeat(got.producer_id, counts),
            "producer_epoch": np.repeat(got.producer_epoch, counts),
            "is_transactional": np.repeat((attrs & _TRANSACTIONAL) != 0, counts),
            "is_control": np.repeat(got.is_control, counts), "control_type": got.control_type,
            "coordinator_epoch": got.coordinator_epoch, "base_offset": base,
            "crc_valid": np.ones(len(at), bool)}
    return _assemble(cols, schemas.RECORDS_NO_PAYLOAD, len(at))


def _assemble(cols: dict, schema: pa.Schema, n: int) -> pa.RecordBatch:
    """`schema`'s record batch of n rows from `cols` (Arrow arrays, numpy arrays or lists, by
    name), every column it lacks null."""
    def typed(x, t):
        if isinstance(x, pa.Array):
            return x if x.type == t else x.cast(t)
        return pa.array(x, t)
    return pa.RecordBatch.from_arrays([typed(cols[f.name], f.type) if f.name in cols else pa.nulls(n, f.type)
                                       for f in schema], schema=schema)


def _each_batch(rb: pa.RecordBatch, payload: bool, out=None) -> pa.RecordBatch:
    """batches_arrow one batch at a time: skim_batch (without payload), else read_batches."""
    out = out if out is not None else _Records(payload)
    c = rb.schema.names
    topics = rb.column(c.index("topic")).to_pylist()
    parts = rb.column(c.index("partition")).to_pylist()
    bases = rb.column(c.index("base_offset")).to_pylist()
    datas = rb.column(c.index("batch")).to_pylist()
    for i in range(len(datas)):
        out.row = i
        topic, part, data = topics[i], parts[i], datas[i]
        got = skim_batch(data, _SOURCE_B) if not payload and data is not None else None
        try:
            if got is not None:
                out.skimmed(topic, part, got)
            elif data is None:
                raise DecodeError("null batch", 0, "batch")
            else:
                out.batches(topic, part, read_batches(data, strict=True))
        except DecodeError as e:
            out.error(topic, part, bases[i], e)
    return out.arrow()


def _int64(offsets: list, timestamps: list, prefix: str = "batch[0]") -> None:
    """Raise DecodeError when a record's offset or timestamp (the batch header's base plus the
    record's delta) does not fit its int64 column: one bad batch gives an error row, it does not
    stop the job."""
    for values, field, at, what in ((offsets, "offset", 0, "BaseOffset + offset delta"),
                                    (timestamps, "timestamp", 27, "BaseTimestamp + timestamp delta")):
        if values and (min(values) < _INT64[0] or max(values) > _INT64[1]):
            j, v = next((j, v) for j, v in enumerate(values) if not _INT64[0] <= v <= _INT64[1])
            raise DecodeError(f"{field} {v} ({what}) is outside int64", at, f"{prefix}.records[{j}].{field}")


_BATCH_COLUMNS = ("topic", "partition", "producer_id", "producer_epoch", "is_transactional", "is_control",
                  "base_offset", "crc_valid", "error", "error_kind", "error_path")
_RECORD_COLUMNS = ("offset", "timestamp_ms", "source", "control_type", "coordinator_epoch")
_PAYLOAD_COLUMNS = ("key", "value", "headers")


class _Records:
    """batches_arrow's rows: the batch-level columns once per batch (spread over its records with
    Arrow's take), the record-level ones per record."""

    def __init__(self, payload: bool):
        self.payload = payload
        self.per_batch = {n: [] for n in _BATCH_COLUMNS}
        self.per_record = {n: [] for n in _RECORD_COLUMNS + (_PAYLOAD_COLUMNS if payload else ())}
        self.counts: list[int] = []
        self.rows: list[int] = []         # the input row of each batch
        self.row = 0

    def _head(self, values: tuple, n: int) -> None:
        for col, v in zip(self.per_batch.values(), values, strict=True):
            col.append(v)
        self.counts.append(n)
        self.rows.append(self.row)

    def skimmed(self, topic, part, got) -> None:
        h, ods, tsds, sources = got
        base, attrs, n = h[0], h[5], len(ods)
        offsets = [base + d for d in ods]
        stamps = [h[8]] * n if attrs & _LOG_APPEND_TIME else [h[7] + d for d in tsds]
        _int64(offsets, stamps)                                              # before anything is added
        self._head((topic, part, h[9], h[10], bool(attrs & _TRANSACTIONAL), False, base, True, None, None, None), n)
        r = self.per_record
        r["offset"].extend(offsets)
        r["timestamp_ms"].extend(stamps)
        r["source"].extend(sources)
        r["control_type"].extend([None] * n)
        r["coordinator_epoch"].extend([None] * n)

    def batches(self, topic, part, decoded: list) -> None:
        """read_batches' batches of one blob; DecodeError, with nothing added, when any record's
        offset or timestamp leaves int64."""
        columns = [([x["offset"] for x in b["records"]], [x["timestamp"] for x in b["records"]]) for b in decoded]
        for k, (offsets, stamps) in enumerate(columns):
            _int64(offsets, stamps, f"batch[{k}]")
        for b, (offsets, stamps) in zip(decoded, columns, strict=True):
            self._batch(topic, part, b, offsets, stamps)

    def _batch(self, topic, part, b: dict, offsets: list, stamps: list) -> None:
        recs = b["records"]
        self._head((topic, part, b["producer_id"], b["producer_epoch"], b["is_transactional"], b["is_control"],
                    b["base_offset"], b["crc_valid"], None, None, None), len(recs))
        r = self.per_record
        r["offset"].extend(offsets)
        r["timestamp_ms"].extend(stamps)
        hs = [x["headers"] for x in recs]
        r["source"].extend([_source_of(h) if h else None for h in hs])
        ctls = [x.get("control") for x in recs]
        r["control_type"].extend([c["type"] if c else None for c in ctls])
        r["coordinator_epoch"].extend([c["coordinator_epoch"] if c else None for c in ctls])
        if self.payload:
            r["key"].extend([x["key"] for x in recs])
            r["value"].extend([x["value"] for x in recs])
            r["headers"].extend([[{"key": k, "value": v} for k, v in h] for h in hs])

    def error(self, topic, part, base_offset, e: DecodeError) -> None:
        self._head((topic, part, None, None, None, None, None, None, str(e), error_kind(e), e.path or None), 1)
        for name, col in self.per_record.items():
            col.append(base_offset if name == "offset" else None)

    def arrow(self) -> pa.RecordBatch:
        schema = schemas.RECORDS if self.payload else schemas.RECORDS_NO_PAYLOAD
        n = sum(self.counts)
        spread = pa.array(np.repeat(np.arange(len(self.counts)), self.counts))
        cols = {name: pa.array(v, schema.field(name).type).take(spread) for name, v in self.per_batch.items()}
        cols.update(self.per_record)
        return _assemble(cols, schema, n)


# ---- Spark wrappers --------------------------------------------------------------------------------
def _kafka_input(df):
    from pyspark.sql import functions as F
    return df.select("key", "value", "topic", "partition", "offset",
                     F.unix_millis("timestamp").alias("timestamp_ms"))


def _map(df, fn, schema: pa.Schema):
    def run(batches):
        for rb in batches:
            if rb.num_rows:
                yield fn(rb)
    return df.mapInArrow(run, schemas.spark_schema(schema))


def decode_offsets(df):
    """__consumer_offsets records (Kafka-source columns) -> one row per OffsetCommit record:
    group, topic (name, from the key), partition, topic_id (from value v4+, KIP-1319; null when
    absent), committed_offset, leader_epoch, metadata, commit_timestamp_ms, expire_timestamp_ms,
    record_type, value_version, tombstone, log_* (where it was), error*."""
    return _map(_kafka_input(df), offsets_arrow, schemas.OFFSETS)


def decode_transactions(df):
    """__transaction_state records -> transactional_id, producer id/epoch, state, partitions,
    timeout, start and last-update timestamps, ..."""
    return _map(_kafka_input(df), transactions_arrow, schemas.TRANSACTIONS)


def decode_share_state(df):
    """__share_group_state records -> one row per ShareSnapshot / ShareUpdate: group, topic_id,
    partition, epochs, start offset (SPSO), state_batches [{first_offset, last_offset,
    delivery_state (0 available, 2 acknowledged, 4 archived), delivery_count}]."""
    return _map(_kafka_input(df), share_state_arrow, schemas.SHARE_STATE)


def decode_batches(df, *, payload: bool = True):
    """Raw record batches (contract columns) -> one row per record with its batch's producer id,
    epoch, transactional and control flags; control records carry their marker type (COMMIT /
    ABORT) and coordinator epoch; `source` is the "kipviz-source" header. payload=False leaves
    key, value and headers null (less memory when only flags and sources matter)."""
    if payload:
        return _map(df.select("topic", "partition", "base_offset", "batch"), batches_arrow, schemas.RECORDS)
    return with_null_payload(decode_batches_no_payload(df))


def decode_batches_no_payload(df):
    """decode_batches(df, payload=False) without its key, value and headers columns at all
    (RECORDS_NO_PAYLOAD): nothing to hand over from Python or to keep for them."""
    return _map(df.select("topic", "partition", "base_offset", "batch"), _no_payload, schemas.RECORDS_NO_PAYLOAD)


def with_null_payload(df):
    """A RECORDS_NO_PAYLOAD frame (and any columns after it) in the RECORDS layout: key, value and
    headers null."""
    from pyspark.sql import functions as F
    types = {f.name: f.dataType for f in schemas.spark_schema(schemas.RECORDS)}
    cols = [F.lit(None).cast(types[n]).alias(n) if n in schemas.PAYLOAD else F.col(n) for n in types]
    return df.select(*cols, *[c for c in df.columns if c not in types])


def _no_payload(rb):
    return batches_arrow(rb, payload=False)


def decode_topic(df):
    """Records of a Kafka-source frame in the decode_batches layout; the Kafka source shows no batch
    attributes, so producer id, epoch, transactional and control columns are null."""
    from pyspark.sql import functions as F
    src = F.expr(f"element_at(transform(filter(headers, h -> h.key = '{SOURCE_HEADER}'), "
                 f"h -> cast(h.value as string)), 1)")
    cols = []
    for f in schemas.RECORDS:
        n = f.name
        if n == "timestamp_ms":
            cols.append(F.unix_millis("timestamp").alias(n))
        elif n in ("topic", "partition", "offset", "key", "value", "headers"):
            cols.append(F.col(n))
        elif n == "source":
            cols.append(src.alias(n))
        elif n == "is_control":
            cols.append(F.lit(False).alias(n))
        else:
            cols.append(F.lit(None).cast(schemas.spark_schema(pa.schema([f]))[0].dataType).alias(n))
    return df.select(*cols)


def split_errors(df, dataset: str):
    """(rows that decoded, error rows in the errors layout) of a decoder's output."""
    from pyspark.sql import functions as F
    ok = df.filter(F.col("error").isNull())
    names = df.columns
    part = "log_partition" if "log_partition" in names else "partition"
    off = "log_offset" if "log_offset" in names else "offset"
    bad = df.filter(F.col("error").isNotNull()).select(
        F.lit(dataset).alias("dataset"), F.col(part).alias("partition"), F.col(off).alias("offset"),
        "error_kind", "error", "error_path")
    return ok, bad
