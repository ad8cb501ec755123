"""The analyses, each a function of a run's Logs (kipviz.spark.logs.decode_all) returning a Spark
DataFrame; kipviz.spark.plots draws each one.

    committed_offsets(logs)    per group and partition: committed offset, topic id resolved to its
                               name, log end offset, lag; KIP-516 deleted / re-created topics flagged
    transactions(logs)         one row per transaction: start, end, duration, outcome, timed out
    transaction_summary(logs)  per transactional id: commits, aborts, timeouts, rates, durations
    tx_pending(logs)           KIP-1289 (proposed): each stay of a record in TX_PENDING (residency)
    tx_pending_series(logs)    TxnPendingRecordsCount and TxnPendingLockExpiredCount over time
    kip1289_metrics(logs)      the KIP's metrics at the end of the run (one row)
    kip1319_errors(logs)       STALE_MEMBER_EPOCH / GROUP_ID_NOT_FOUND / ILLEGAL_GENERATION /
                               UNKNOWN_TOPIC_ID answers by TxnOffsetCommit version (before/after KIP-1319)
    share_state(logs)          per share partition: the share-partition start offset and record
                               counts by delivery state after each persisted snapshot / update

The TX_PENDING analyses read the model's events (share-record state changes) and kip1319_errors its
requests: a live cluster has neither (they are broker metrics and wire traffic there); those
functions then return empty frames. The others work on a live cluster's topics too."""
from __future__ import annotations

from ..errors import KipvizError
from .moves import share_events, split_key

TX_PENDING = "TX_PENDING"
KIP1319_ERRORS = ("STALE_MEMBER_EPOCH", "GROUP_ID_NOT_FOUND", "ILLEGAL_GENERATION", "UNKNOWN_TOPIC_ID")

__all__ = ["committed_offsets", "transactions", "transaction_summary", "tx_pending", "tx_pending_series",
           "kip1289_metrics", "kip1319_errors", "share_state", "ANALYSES"]


def _F():
    from pyspark.sql import functions as F
    return F


# ---- committed offsets and lag -------------------------------------------------------------------------
def log_end_offsets(logs):
    """topic, partition, log_end_offset: from the batches (markers included) where the run has
    them, else from the records."""
    F = _F()
    src = logs.source
    parts = []
    for name in src.topics:
        if name.startswith("__"):
            continue
        b = src.batches_of(name)
        if b is not None:
            parts.append(b.groupBy("topic", "partition").agg((F.max("last_offset") + 1).alias("log_end_offset")))
        else:
            parts.append(src.topic(name).groupBy("topic", "partition")
                         .agg((F.max("offset") + 1).alias("log_end_offset")))
    if not parts:
        return logs.spark.createDataFrame([], "topic string, partition int, log_end_offset bigint")
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def committed_offsets(logs):
    """One row per (group, topic, partition) with a committed offset at the end of the run:
    group, topic, partition, topic_id, resolved_name (the name the id belongs to), committed_offset,
    commit_timestamp_ms, value_version, log_end_offset, lag, status:
      ok                the offset belongs to the live topic of that name (lag = log end - offset)
      deleted           KIP-516: the topic id is of a deleted topic, no topic of that name now
      recreated         KIP-516: the topic id is of a deleted topic, the name now has another id --
                        an offset a name-only view would wrongly apply to the new topic
      unknown-topic-id  no topic ever had that id
      unknown-topic     no id in the record (value v0-3) and no live topic of that name
      before-recreation no id in the record, committed before the live topic of that name was
                        created: it belongs to a deleted incarnation (by time; KIP-516)
    incarnations (how many topic ids the name had in the run) and recreated_topic (more than
    one) flag names that were deleted and re-created, whatever the status."""
    from pyspark.sql import Window
    F = _F()
    o = logs.offsets
    w = Window.partitionBy("group", "topic", "partition").orderBy(F.desc("log_partition"), F.desc("log_offset"))
    latest = o.withColumn("_n", F.row_number().over(w)).filter((F.col("_n") == 1) & ~F.col("tombstone"))
    ids = logs.source.topic_ids()
    have_ids = bool(logs.source.manifest.get("topics"))
    by_id = ids.select("topic_id", F.col("name").alias("id_name"), F.col("deleted").alias("id_deleted"))
    live = ids.filter(~F.col("deleted")).select(F.col("name").alias("topic"), F.col("topic_id").alias("live_id"),
                                                F.col("created_ms").alias("live_created_ms"))
    incarnations = ids.groupBy(F.col("name").alias("topic")).agg(F.count("*").alias("incarnations"))
    j = (latest.join(F.broadcast(by_id), "topic_id", "left").join(F.broadcast(live), "topic", "left")
         .join(F.broadcast(incarnations), "topic", "left")
         .join(log_end_offsets(logs), ["topic", "partition"], "left"))
    has_id = F.col("topic_id").isNotNull()
    status = (F.when(F.lit(not have_ids), F.lit("ok"))
              .when(has_id & F.col("id_name").isNull(), F.lit("unknown-topic-id"))
              .when(has_id & F.col("id_deleted") & F.col("live_id").isNotNull(), F.lit("recreated"))
              .when(has_id & F.col("id_deleted"), F.lit("deleted"))
              .when(~has_id & F.col("live_id").isNull(), F.lit("unknown-topic"))
              .when(~has_id & (F.col("commit_timestamp_ms") < F.col("live_created_ms")), F.lit("before-recreation"))
              .otherwise(F.lit("ok")))
    j = j.withColumn("status", status)
    return j.select("group", "topic", "partition", "topic_id", F.coalesce("id_name", "topic").alias("resolved_name"),
                    "committed_offset", "commit_timestamp_ms", "value_version", "log_end_offset",
                    F.when(F.col("status") == "ok", F.col("log_end_offset") - F.col("committed_offset"))
                    .alias("lag"), "status", F.coalesce("incarnations", F.lit(1)).alias("incarnations"),
                    (F.coalesce("incarnations", F.lit(1)) > 1).alias("recreated_topic")) \
        .orderBy("group", "topic", "partition")


# ---- transactions -------------------------------------------------------------------------------------------
_ENDS = ("CompleteCommit", "CompleteAbort")


def transactions(logs):
    """One row per transaction of each transactional id, in log order: transactional_id, txn (1, 2,
    ...), producer_id, producer_epoch (at the end), start_ms, prepare_ms, end_ms, duration_ms
    (start to CompleteCommit/CompleteAbort), outcome (commit / abort / committing / aborting /
    open), timeout_ms, timed_out (aborted after start + transaction.timeout.ms had passed: the
    coordinator's timeout abort), partitions."""
    from pyspark.sql import Window
    F = _F()
    t = logs.transactions.filter(~F.col("tombstone"))
    w = Window.partitionBy("transactional_id").orderBy("log_partition", "log_offset")
    ends = F.sum(F.col("state").isin(*_ENDS).cast("int")).over(w.rowsBetween(Window.unboundedPreceding, -1))
    t = t.withColumn("txn", F.coalesce(ends, F.lit(0)) + 1).filter(~F.col("state").isin("Empty", "Dead"))

    def at(state_col_values, col):
        return F.max(F.when(F.col("state").isin(*state_col_values), F.col(col)))
    g = t.groupBy("transactional_id", "txn").agg(
        F.max_by("producer_id", "log_offset").alias("producer_id"),
        F.max_by("producer_epoch", "log_offset").alias("producer_epoch"),
        F.min(F.when(F.col("start_ms") >= 0, F.col("start_ms"))).alias("start_ms"),
        at(("PrepareCommit", "PrepareAbort"), "last_update_ms").alias("prepare_ms"),
        at(("CompleteCommit", "CompleteAbort"), "last_update_ms").alias("end_ms"),
        F.max_by("state", "log_offset").alias("last_state"),
        F.max("timeout_ms").alias("timeout_ms"),
        F.array_distinct(F.flatten(F.collect_list("partitions"))).alias("partitions"))
    outcome = (F.when(F.col("last_state") == "CompleteCommit", "commit")
               .when(F.col("last_state") == "CompleteAbort", "abort")
               .when(F.col("last_state") == "PrepareCommit", "committing")
               .when(F.col("last_state") == "PrepareAbort", "aborting").otherwise("open"))
    g = g.withColumn("outcome", outcome)
    timed_out = (F.col("outcome").isin("abort", "aborting")
                 & (F.coalesce("prepare_ms", "end_ms") - F.col("start_ms") > F.col("timeout_ms")))
    return g.select("transactional_id", "txn", "producer_id", "producer_epoch", "start_ms", "prepare_ms", "end_ms",
                    (F.col("end_ms") - F.col("start_ms")).alias("duration_ms"), "outcome", "timeout_ms",
                    F.coalesce(timed_out, F.lit(False)).alias("timed_out"), "partitions") \
        .orderBy("transactional_id", "txn")


def transaction_summary(logs, txns=None):
    """Per transactional id: transactions, commits, aborts, timeouts, unfinished, span_s (first
    start to last end), commit_rate / abort_rate (per second of that span, at least 1 ms),
    duration_ms mean / p50 / p99 / max of the finished ones."""
    F = _F()
    t = txns if txns is not None else transactions(logs)
    done = F.col("outcome").isin("commit", "abort")
    g = t.groupBy("transactional_id").agg(
        F.count("*").alias("transactions"), F.sum((F.col("outcome") == "commit").cast("int")).alias("commits"),
        F.sum((F.col("outcome") == "abort").cast("int")).alias("aborts"),
        F.sum(F.col("timed_out").cast("int")).alias("timeouts"), F.sum((~done).cast("int")).alias("unfinished"),
        ((F.greatest(F.max("end_ms") - F.min("start_ms"), F.lit(1))) / 1000.0).alias("span_s"),
        F.avg(F.when(done, F.col("duration_ms"))).alias("duration_mean_ms"),
        F.expr("percentile_disc(0.5) within group (order by duration_ms)").cast("bigint").alias("duration_p50_ms"),
        F.expr("percentile_disc(0.99) within group (order by duration_ms)").cast("bigint").alias("duration_p99_ms"),
        F.max(F.when(done, F.col("duration_ms"))).alias("duration_max_ms"))
    return g.withColumn("commit_rate", F.col("commits") / F.col("span_s")) \
        .withColumn("abort_rate", F.col("aborts") / F.col("span_s")).orderBy("transactional_id")


# ---- KIP-1289: TX_PENDING ------------------------------------------------------------------------------------
def _pending_moves(logs):
    """Share-record events into or out of TX_PENDING (key unsplit): key, seq, time_ms, _exit (out
    of TX_PENDING), and to_state and cause of the exits (null for the entries: nobody reads them)."""
    F = _F()
    e = logs.events
    if e is None:
        return None
    into, out = F.col("to_state") == TX_PENDING, F.col("from_state") == TX_PENDING
    return share_events(e).filter((into & ~out) | (out & ~into)).select(
        "key", "seq", "time_ms", out.alias("_exit"), F.when(out, F.col("to_state")).alias("to_state"),
        F.when(out, F.col("cause")).alias("cause"))


def tx_pending(logs):
    """KIP-1289 (proposed): one row per stay of a record in TX_PENDING: group, topic, partition,
    offset, enter_ms, exit_ms, residency_ms, exit_state (ACKNOWLEDGED / ARCHIVED / ACQUIRED ...),
    exit_cause (txn-commit-accept, txn-abort, lock-expired, ...; null while still pending)."""
    from pyspark.sql import Window
    F = _F()
    m = _pending_moves(logs)
    cols = ("group string, topic string, partition int, offset bigint, enter_ms bigint, exit_ms bigint, "
            "residency_ms bigint, exit_state string, exit_cause string, status string")
    if m is None:
        return logs.spark.createDataFrame([], cols)
    # each entry and the record's next move: an exit ends the stay (another entry would leave it open)
    w = Window.partitionBy("key").orderBy("seq")
    nxt = F.lead(F.struct("time_ms", "_exit", "to_state", "cause")).over(w)
    m = split_key(m.select("key", "time_ms", "_exit", nxt.alias("_next")).filter(~F.col("_exit")))
    left = F.col("_next._exit")
    return m.select("group", "topic", "partition", "offset",
                    F.col("time_ms").alias("enter_ms"), F.when(left, F.col("_next.time_ms")).alias("exit_ms"),
                    F.when(left, F.col("_next.time_ms") - F.col("time_ms")).alias("residency_ms"),
                    F.when(left, F.col("_next.to_state")).alias("exit_state"),
                    F.when(left, F.col("_next.cause")).alias("exit_cause"),
                    F.lit("proposed").alias("status"))


def tx_pending_series(logs, stays=None):
    """KIP-1289 (proposed) gauges over time: time_ms, TxnPendingRecordsCount (records in
    TX_PENDING after every change; several changes at one instant keep the last value) and
    TxnPendingLockExpiredCount (TX_PENDING -> ACQUIRED moves by lock-expired, so far). Counted from
    the stays (tx_pending, or `stays` already worked out): +1 at each entry, -1 at each exit."""
    from pyspark.sql import Window
    F = _F()
    if logs.events is None:
        return logs.spark.createDataFrame([], "time_ms bigint, TxnPendingRecordsCount bigint, "
                                              "TxnPendingLockExpiredCount bigint")
    s = stays if stays is not None else tx_pending(logs)
    enters = s.select(F.col("enter_ms").alias("time_ms"), F.lit(1).alias("d"), F.lit(0).alias("x"))
    exits = s.filter(F.col("exit_ms").isNotNull()).select(
        F.col("exit_ms").alias("time_ms"), F.lit(-1).alias("d"),
        (F.col("exit_cause") == "lock-expired").cast("int").alias("x"))
    per_t = enters.unionByName(exits).groupBy("time_ms").agg(F.sum("d").alias("d"), F.sum("x").alias("x"))
    w = Window.orderBy("time_ms").rowsBetween(Window.unboundedPreceding, 0)
    return per_t.select("time_ms", F.sum("d").over(w).alias("TxnPendingRecordsCount"),
                        F.sum("x").over(w).alias("TxnPendingLockExpiredCount")).orderBy("time_ms")


def kip1289_metrics(logs, stays=None):
    """KIP-1289 (proposed) metrics at the end of the run, as kipviz.broker.share_metrics computes
    them from the events: TxnPendingRecordsCount, TxnPendingLockExpiredCount and
    TxnPendingResidencyMs (count, max, p99) -- one row."""
    F = _F()
    s = stays if stays is not None else tx_pending(logs)
    return s.agg(F.coalesce(F.sum(F.col("exit_ms").isNull().cast("int")), F.lit(0)).alias("TxnPendingRecordsCount"),
                 F.coalesce(F.sum((F.col("exit_cause") == "lock-expired").cast("int")), F.lit(0))
                 .alias("TxnPendingLockExpiredCount"),
                 F.count("residency_ms").alias("TxnPendingResidencyMs_count"),
                 F.coalesce(F.max("residency_ms"), F.lit(0)).alias("TxnPendingResidencyMs_max"),
                 F.coalesce(F.expr("percentile_disc(0.99) within group (order by residency_ms)").cast("bigint"),
                            F.lit(0)).alias("TxnPendingResidencyMs_p99"),
                 F.lit("proposed").alias("status"), F.lit("KIP-1289").alias("kip"))


# ---- KIP-1319: errors by TxnOffsetCommit version ----------------------------------------------------
def _version_label(api: str, version: int) -> str:
    from ..schema import registry
    try:
        return registry.get(api + "Request").status_label(version)
    except Exception:  # noqa: BLE001 - a version the kit does not define keeps no label
        return ""


def kip1319_errors(logs, apis=("TxnOffsetCommit",), errors=KIP1319_ERRORS):
    """api, version, era (before KIP-1319 for v0-5, KIP-1319 for v6+), label (the kit's status of
    the version), error, answers (responses carrying it), requests (of that version), share."""
    F = _F()
    r = logs.requests
    cols = ("api string, version int, era string, label string, error string, answers bigint, "
            "requests bigint, share double")
    if r is None:
        return logs.spark.createDataFrame([], cols)
    r = r.filter(F.col("api").isin(*apis))
    totals = r.groupBy("api", "version").agg(F.count("*").alias("requests"))
    hits = (r.select("api", "version", F.explode(F.array_distinct("error_names")).alias("error"))
            .filter(F.col("error").isin(*errors)).groupBy("api", "version", "error").agg(F.count("*").alias("answers")))
    grid = totals.crossJoin(logs.spark.createDataFrame([(e,) for e in errors], "error string"))
    out = grid.join(hits, ["api", "version", "error"], "left").fillna({"answers": 0})
    labels = [(a, v, _version_label(a, v)) for a, v in
              {(row["api"], row["version"]) for row in totals.collect()}]
    lab = logs.spark.createDataFrame(labels, "api string, version int, label string")
    era = F.when(F.col("version") >= 6, F.lit("KIP-1319")).otherwise(F.lit("before KIP-1319"))
    return (out.join(lab, ["api", "version"], "left")
            .select("api", "version", era.alias("era"), "label", "error", "answers", "requests",
                    (F.col("answers") / F.col("requests")).alias("share"))
            .orderBy("api", "version", "error"))


# ---- share-group state ---------------------------------------------------------------------------------------
def share_state(logs):
    """Per share partition and persisted record (in log order): group, topic_id, topic (resolved),
    partition, record (ShareSnapshot / ShareUpdate), log_offset, start_offset (SPSO; -1 in an
    update = unchanged), batches, and the offsets the record marks available / acknowledged /
    archived."""
    F = _F()
    s = logs.share_state.filter(~F.col("tombstone"))
    names = logs.source.topic_ids().select("topic_id", F.col("name").alias("topic"))

    def count(state):
        return F.aggregate(F.filter("state_batches", lambda b: b.delivery_state == state), F.lit(0).cast("bigint"),
                           lambda acc, b: acc + b.last_offset - b.first_offset + 1)
    return (s.join(F.broadcast(names), "topic_id", "left")
            .select("group", "topic_id", "topic", "partition", "record", "log_partition", "log_offset",
                    "start_offset", F.size("state_batches").alias("batches"), count(0).alias("available"),
                    count(2).alias("acknowledged"), count(4).alias("archived"))
            .orderBy("group", "topic_id", "partition", "log_offset"))


ANALYSES = ("committed_offsets", "transactions", "transaction_summary", "tx_pending", "tx_pending_series",
            "kip1289_metrics", "kip1319_errors", "share_state")


def frames(logs) -> dict:
    """Every analysis of ANALYSES by name, as `kipviz analyze` runs them: transactions and the
    TX_PENDING stays are kept (logs.unpersist() frees them) and reused by the summary, the series
    and the KIP-1289 metrics instead of being worked out again."""
    txns = logs.keep(transactions(logs))
    stays = logs.keep(tx_pending(logs))
    made = {"transactions": txns, "tx_pending": stays, "transaction_summary": transaction_summary(logs, txns),
            "tx_pending_series": tx_pending_series(logs, stays), "kip1289_metrics": kip1289_metrics(logs, stays)}
    return {name: made[name] if name in made else by_name(name)(logs) for name in ANALYSES}


def by_name(name: str):
    """The analysis function named `name`; KipvizError lists the known ones."""
    if name not in ANALYSES:
        raise KipvizError(f"no analysis {name!r}; known: {', '.join(ANALYSES)}")
    return globals()[name]
