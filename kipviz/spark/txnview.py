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
over batches, not records."""
from __future__ import annotations

from . import decode

__all__ = ["batch_view", "with_visibility", "with_event_seq"]


def _base_timestamp(col):
    from pyspark.sql import functions as F
    return F.conv(F.hex(F.substring(col, 28, 8)), 16, 10).cast("bigint")    # BaseTimestamp, bytes 27..34


def batch_view(batches, records=None):
    """One row per batch: topic, partition, base_offset, last_offset, producer_id, producer_epoch,
    is_transactional, is_control, control_type, seq, base_ts, marker_offset, marker_type,
    marker_epoch, marker_seq, visibility (visible / aborted / open / marker), txn_no. `records`:
    the batches already decoded (decode_batches), else the control batches are decoded here."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    meta = batches.select("topic", "partition", "base_offset", "last_offset", "producer_id", "producer_epoch",
                          "is_transactional", "is_control", "seq", _base_timestamp("batch").alias("base_ts"))
    if records is None:
        records = decode.decode_batches_no_payload(batches.filter("is_control"))
    ctl = (records.filter(F.col("is_control") & F.col("error").isNull())
           .select("topic", "partition", "base_offset", "control_type"))
    # the metadata is one row per batch and markers are fewer still: a broadcast join, one window
    # per ordering, so the few rows go through few stages
    meta = meta.join(F.broadcast(ctl), ["topic", "partition", "base_offset"], "left")
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
