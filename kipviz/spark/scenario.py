"""A scenario's logs in Spark, for the corner-case sections of the notebooks: the run is written by
the sample-data writer (exactly what `kipviz sample-data --scenario NAME` writes), read back with
read_samples and decoded.

    logs = scenario_logs("kip1289.case01_broker_crash_tx_pending")     # or a Trace already run
    redeliveries(logs).show()               # input records delivered more than once
    request_errors(logs, "TxnOffsetCommit").show()      # error codes by request version
    tx_pending(logs), kip1289_metrics(logs)             # TX_PENDING residency, lock expiries

The session is kipviz.spark.session()'s (one per notebook): every call reuses it."""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import KipvizError
from .moves import share_moves

__all__ = ["scenario_logs", "redeliveries", "request_errors"]

_TMP: list = []          # temporary directories live as long as the process (Spark reads them lazily)


def scenario_logs(trace_or_name, *, spark=None, seed: int = 0, directory=None):
    """Run (or take) a scenario, write its sample directory (`directory`, default a temporary one
    kept for the process's lifetime) and return its decoded Logs (kipviz.spark.decode_all)."""
    from .. import scenarios
    from ..sampledata.generate import write_trace
    from .logs import decode_all
    from .readers import read_samples
    from .session import session
    if isinstance(trace_or_name, str):
        try:
            trace = scenarios.run(trace_or_name, seed=seed)
        except KeyError as e:
            raise KipvizError(str(e.args[0])) from None
    elif hasattr(trace_or_name, "cluster") and hasattr(trace_or_name, "scenario"):
        trace = trace_or_name
    else:
        raise KipvizError(f"scenario_logs takes a scenario name or a scenarios.Trace, not {type(trace_or_name).__name__}")
    if directory is None:
        tmp = tempfile.TemporaryDirectory(prefix="kipviz-scenario-")
        _TMP.append(tmp)
        directory = Path(tmp.name) / trace.scenario.name
    write_trace(trace, directory, seed=seed)
    return decode_all(read_samples(spark or session(), directory))


def redeliveries(logs, group: str | None = None):
    """Share-group records acquired more than once (KIP-932 delivery count > 1): group, topic,
    partition, offset, deliveries, states (the record's moves in order, "FROM->TO (cause)")."""
    from pyspark.sql import functions as F
    e = logs.events
    cols = "group string, topic string, partition int, offset bigint, deliveries bigint, states array<string>"
    if e is None:
        return logs.spark.createDataFrame([], cols)
    moves = share_moves(e)
    if group:
        moves = moves.filter(F.col("group") == group)
    per = moves.groupBy("group", "topic", "partition", "offset").agg(
        F.sum(((F.col("to_state") == "ACQUIRED") & (F.col("from_state") == "AVAILABLE"))
              .cast("int")).cast("bigint").alias("deliveries"),
        F.transform(F.array_sort(F.collect_list(F.struct("seq", "from_state", "to_state", "cause"))),
                    lambda m: F.concat(m.from_state, F.lit("->"), m.to_state, F.lit(" ("),
                                       F.coalesce(m.cause, F.lit("")), F.lit(")"))).alias("states"))
    return (per.filter(F.col("deliveries") > 1)
            .select("group", "topic", "partition", "offset", "deliveries", "states")
            .orderBy("group", "topic", "partition", "offset"))


def request_errors(logs, api: str | None = None):
    """Responses by api, version and error name (NONE included): api, version, error, responses;
    e.g. request_errors(logs, "TxnOffsetCommit") shows KIP-1319's v5-vs-v6 error codes."""
    from pyspark.sql import functions as F
    r = logs.requests
    if r is None:
        return logs.spark.createDataFrame([], "api string, version int, error string, responses bigint")
    if api:
        r = r.filter(F.col("api") == api)
    names = F.when(F.size("error_names") > 0, F.array_distinct("error_names")).otherwise(F.array(F.lit("NONE")))
    return (r.select("api", "version", F.explode(names).alias("error"))
            .groupBy("api", "version", "error").agg(F.count("*").alias("responses"))
            .orderBy("api", "version", "error"))
