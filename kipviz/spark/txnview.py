"""What a read_committed reader sees of a topic, worked out per record batch in Spark.

    view = batch_view(src.batches_of("out"))
    records = with_visibility(decode_batches(...), view)     # + visibility, marker_*, txn_no

A producer's transactional batches on a partition end at the next COMMIT/ABORT marker of the same
producer id on that partition (kipviz.broker.topics.PartitionLog: markers are matched by
producer id, since under transaction version 2 the marker carries the bumped epoch): visible after
a COMMIT, invisible for ever after an ABORT, `open` with no marker yet. Non-transactional batches
are visible at once.

`txn_no` numbers a producer's transactions as kipviz.eos numbers its attempts: a producer id's
transactional data after one of its markers on the topic starts its next transaction. The order
across partitions is the model's event order (the batch's `seq`: its first record's
RecordAppended event) where the batches have it, else (batch timestamp, partition, offset).

Transactions are decided per batch (a batch is all in or all out), so the window functions run
over batches, not records.

Every fact about a batch comes from its bytes (batch_headers: the v2 header, its Length and CRC,
and a marker's type from its control record), never from the file's other columns, which are a
copy a writer may get wrong: a batch whose header does not read is an error row (`error`), left
out of the view and reported by whoever depends on it (kipviz.spark.eos: "cannot verify")."""
from __future__ import annotations

import pyarrow as pa
from crc32c import crc32c

from ..errors import DecodeError
from ..records.batch import read_batches
from ..records.header import CONTROL_MASK, HEADER, HEADER_SIZE, LOG_OVERHEAD, OFFSET, TRANSACTIONAL_MASK

__all__ = ["batch_view", "batch_headers", "headers_arrow", "with_visibility", "with_event_seq", "HEADERS"]

HEADERS = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("row_offset", pa.int64()),
                     ("base_offset", pa.int64()), ("last_offset", pa.int64()), ("producer_id", pa.int64()),
                     ("producer_epoch", pa.int32()), ("is_transactional", pa.bool_()), ("is_control", pa.bool_()),
                     ("records_count", pa.int32()), ("base_ts", pa.int64()), ("control_type", pa.string()),
                     ("seq", pa.int64()), ("error", pa.string())])


def _header(data) -> dict:
    """One batch's facts from its bytes (DefaultRecordBatch.java's header; the CRC covers bytes
    21.. of the batch, so a header that passes it says what the writer wrote). DecodeError when
    the bytes are no whole, intact v2 batch."""
    if data is None:
        raise DecodeError("null batch", 0, "batch")
    n = len(data)
    if n < HEADER_SIZE:
        raise DecodeError(f"{n} bytes: shorter than a batch header ({HEADER_SIZE})", 0, "batch[0]")
    (base, length, _le, magic, crc, attrs, last_delta, base_ts, _max_ts, pid, epoch, _bseq,
     count) = HEADER.unpack_from(data, 0)
    if magic != 2:
        raise DecodeError(f"magic {magic}: not a v2 record batch", 16, "batch[0].Magic")
    if LOG_OVERHEAD + length != n:
        raise DecodeError(f"Length {length} says {LOG_OVERHEAD + length} bytes, the batch holds {n}", 8,
                          "batch[0].Length")
    got = crc32c(memoryview(data)[21:])
    if got != crc:
        raise DecodeError(f"CRC mismatch: header {crc:#010x}, bytes {got:#010x}", 17, "batch[0].CRC")
    if last_delta < 0 or count < 0:
        raise DecodeError(f"LastOffsetDelta {last_delta}, RecordsCount {count}: negative", 23,
                          "batch[0].LastOffsetDelta")
    h = {"base_offset": base, "last_offset": base + last_delta, "producer_id": pid, "producer_epoch": epoch,
         "is_transactional": bool(attrs & TRANSACTIONAL_MASK), "is_control": bool(attrs & CONTROL_MASK),
         "records_count": count, "base_ts": base_ts, "control_type": None}
    if h["is_control"]:                     # one small record: its type says COMMIT or ABORT
        recs = read_batches(data, strict=True)[0]["records"]
        if len(recs) != 1 or not recs[0].get("control"):
            raise DecodeError(f"a control batch of {len(recs)} records (a marker is one)", OFFSET["records_count"],
                              "batch[0].RecordsCount")
        h["control_type"] = recs[0]["control"]["type"]
    return h


def headers_arrow(rb: pa.RecordBatch) -> pa.RecordBatch:
    """batch_headers' work on one Arrow batch (topic, partition, base_offset, batch, seq)."""
    c = rb.schema.names
    cols = {n: [] for n in HEADERS.names}
    topics, parts, rows, datas = (rb.column(c.index(n)).to_pylist() for n in ("topic", "partition", "base_offset",
                                                                              "batch"))
    seqs = rb.column(c.index("seq")).to_pylist()
    for i, data in enumerate(datas):
        try:
            h = _header(data)
            h["error"] = None
        except DecodeError as e:
            h = {"error": str(e)}
        h.update(topic=topics[i], partition=parts[i], row_offset=rows[i], seq=seqs[i])
        for n in HEADERS.names:
            cols[n].append(h.get(n))
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in HEADERS], schema=HEADERS)


def batch_headers(batches):
    """One row per batch (HEADERS): topic, partition and row_offset (the file's base_offset) as
    the file has them, everything else read from the batch's bytes; `error` names a batch whose
    bytes do not read (then the rest is null)."""
    from pyspark.sql import functions as F

    from . import schemas
    seq = F.col("seq").cast("bigint") if "seq" in batches.columns else F.lit(None).cast("bigint")
    df = batches.select("topic", "partition", "base_offset", "batch", seq.alias("seq"))

    def run(it):
        for rb in it:
            if rb.num_rows:
                yield headers_arrow(rb)
    return df.mapInArrow(run, schemas.spark_schema(HEADERS))


def batch_view(batches, headers=None):
    """One row per readable batch: topic, partition, base_offset, last_offset, producer_id,
    producer_epoch, is_transactional, is_control, control_type, seq, base_ts, marker_offset,
    marker_type, marker_epoch, marker_seq, visibility (visible / aborted / open / marker), txn_no.
    Everything from the batch's bytes (batch_headers; `headers`: already read)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    hdr = headers if headers is not None else batch_headers(batches)
    meta = hdr.filter(F.col("error").isNull()).select(
        "topic", "partition", "base_offset", "last_offset", "producer_id", "producer_epoch",
        "is_transactional", "is_control", "seq", "base_ts", "control_type")
    order = ["seq", "base_ts", "partition", "base_offset"]      # seq null: by time
    # the producer's next marker at or after the batch: walked from the end of the partition, so
    # that the frame grows (Spark updates it row by row; a shrinking "to unbounded following" frame
    # is recomputed for every row, quadratic in a producer's batches per partition)
    ahead = (Window.partitionBy("topic", "partition", "producer_id").orderBy(F.desc("base_offset"))
             .rowsBetween(Window.unboundedPreceding, 0))
    marker = F.last(F.when(F.col("is_control"), F.struct(
        F.col("base_offset").alias("offset"), F.col("control_type").alias("type"),
        F.col("producer_epoch").alias("epoch"), F.col("seq").alias("seq"))), ignorenulls=True).over(ahead)
    meta = meta.withColumn("_m", marker)
    vis = (F.when(F.col("is_control"), F.lit("marker"))
           .when(~F.col("is_transactional"), F.lit("visible"))
           .when(F.col("_m").isNull(), F.lit("open"))
           .when(F.col("_m.type") == "COMMIT", F.lit("visible"))
           .otherwise(F.lit("aborted")))
    # transactional batches are numbered among themselves (non-transactional ones get no number)
    by_pid = Window.partitionBy("topic", "producer_id", "is_transactional").orderBy(*order)
    prev_ctl = F.lag("is_control").over(by_pid)
    start = (F.col("is_transactional") & ~F.col("is_control")
             & (prev_ctl.isNull() | prev_ctl)).cast("int")
    # a run of data batches after a marker starts a transaction: number them per producer id
    txn_no = F.when(F.col("is_transactional"), F.sum(start).over(by_pid.rowsBetween(Window.unboundedPreceding, 0)))
    return meta.select("topic", "partition", "base_offset", "last_offset", "producer_id", "producer_epoch",
                       "is_transactional", "is_control", "control_type", "seq", "base_ts",
                       F.col("_m.offset").alias("marker_offset"), F.col("_m.type").alias("marker_type"),
                       F.col("_m.epoch").alias("marker_epoch"), F.col("_m.seq").alias("marker_seq"),
                       vis.alias("visibility"),
                       txn_no.cast("bigint").alias("txn_no"))


def with_visibility(records, view):
    """Decoded records (decode_batches) + their batch's batch_seq, visibility, marker_offset,
    marker_type, marker_seq and txn_no columns (producer_id and txn_no together name a
    transactional record's attempt)."""
    from pyspark.sql import functions as F
    v = view.select("topic", "partition", "base_offset", F.col("seq").alias("batch_seq"), "marker_offset",
                    "marker_type", "marker_seq", "visibility", "txn_no")
    return records.join(F.broadcast(v), ["topic", "partition", "base_offset"], "left").select(
        *records.columns, "batch_seq", "marker_offset", "marker_type", "marker_seq", "visibility", "txn_no")


def with_event_seq(batches, events):
    """Batches without a `seq` column (kipviz-sample/1 files) with it taken from the run's events:
    the seq of the RecordAppended event of each batch's first record (null where there is none).
    The events name topics, not topic ids: of a re-created topic's incarnations at one offset the
    latest, the live one, is taken (the batch files hold only live topics)."""
    from pyspark.sql import functions as F
    keys = ["topic", "partition", "base_offset"]
    seqs = (events.filter(F.col("kind") == "RecordAppended")
            .select("topic", "partition", F.col("offset").alias("base_offset"), "seq")
            .join(F.broadcast(batches.select(*keys)), keys)
            .groupBy(*keys).agg(F.max("seq").alias("seq")))
    return batches.join(F.broadcast(seqs), keys, "left")
