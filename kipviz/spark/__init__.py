"""kipviz's log analyses on Spark (PySpark): the same jobs on the bundled samples, a Spark cluster
or a live Kafka topic.

    from kipviz import spark as ks
    spark = ks.session()                              # local[2], small and quiet; KIPVIZ_SPARK_MASTER etc.
    src = ks.read_samples(spark, "sample_data/regular_eos")
    logs = ks.decode_all(src)                         # decoded internal topics + errors
    ks.table(ks.transaction_summary(logs))            # an HTML table in a notebook
    ks.verify_eos(ks.read_samples(spark, "sample_data/share_eos")).summary()

    logs = ks.scenario_logs("kip1289.case01_broker_crash")   # a scenario's logs, written and read back
    ks.recreated_offsets(ks.scenario_logs("kip516.stale_read"), "orders").show()   # offsets per topic id

pyspark is imported only when a function needs it."""
from __future__ import annotations

from .analyses import (
    ANALYSES,
    committed_offsets,
    kip1289_metrics,
    kip1319_errors,
    share_state,
    transaction_summary,
    transactions,
    tx_pending,
    tx_pending_series,
)
from .display import Table, table
from .eos import EosResult, verify_eos
from .logs import Logs, decode_all
from .readers import Source, from_kafka_frame, from_trace, read_kafka, read_samples
from .recreated import recreated_offsets
from .scenario import redeliveries, request_errors, scenario_logs
from .session import session, stop

__all__ = ["session", "stop", "Source", "read_samples", "read_kafka", "from_kafka_frame", "from_trace", "Logs",
           "decode_all", "committed_offsets", "transactions", "transaction_summary", "tx_pending",
           "tx_pending_series", "kip1289_metrics", "kip1319_errors", "share_state", "ANALYSES", "verify_eos",
           "EosResult", "scenario_logs", "redeliveries", "request_errors", "table", "Table", "recreated_offsets"]
