"""A model run as the sample-data tables, in memory (pyarrow), without writing files.

    t = run_tables(trace)            # a scenarios.Trace, or a broker.Cluster
    t.topics["out"], t.batches["out"], t.requests, t.events, t.manifest

The rows are made by the sample-data writer's own functions (kipviz.sampledata.rows), so they are
exactly what `kipviz sample-data` would write for the same run; kipviz.spark.from_trace turns them
into Spark DataFrames. Like the files, the topic tables hold the live topics (a deleted topic
stays in the manifest's topic list, with its id)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .. import uuids
from . import schemas

__all__ = ["RunTables", "run_tables"]


@dataclass
class RunTables:
    """A run's sample data as Arrow tables: its manifest, topics, batches, requests and events."""
    manifest: dict
    topics: dict[str, pa.Table] = field(default_factory=dict)
    batches: dict[str, pa.Table] = field(default_factory=dict)
    requests: pa.Table | None = None
    events: pa.Table | None = None


def _table(cols: dict, schema: pa.Schema) -> pa.Table:
    return pa.table({f.name: pa.array(cols[f.name], f.type) for f in schema}, schema=schema)


def run_tables(run, *, group: str | None = None, input_topic: str | None = None,
               output_topic: str | None = None) -> RunTables:
    """The tables of a scenario trace, a workload result or a cluster (see the module docstring).
    group / input_topic / output_topic go to the manifest (the exactly-once check reads them)."""
    from ..sampledata.rows import RequestLog, event_columns, log_rows
    from ..sampledata.schema import FORMAT
    cluster = getattr(run, "cluster", run)
    topics_meta = []
    out = RunTables(manifest={"format": FORMAT, "scenario": getattr(run, "name", None),
                              "workload": "memory", "seed": getattr(run, "seed", None),
                              "group": group or getattr(run, "group", None),
                              "input_topic": input_topic or getattr(run, "input_topic", None),
                              "output_topic": output_topic or getattr(run, "output_topic", None),
                              "topics": topics_meta})
    for t in cluster.topics.by_id.values():
        topics_meta.append({"name": t.name, "topic_id": str(t.topic_id), "topic_id_b64": uuids.to_kafka_str(t.topic_id),
                            "partitions": len(t.partitions), "internal": t.internal, "deleted": t.deleted_at is not None,
                            "created_ms": t.created_at, "deleted_ms": t.deleted_at})
    for name, topic in cluster.topics.by_name.items():
        brows, trows = [], []
        for log in topic.partitions:
            b, r = log_rows(name, log)
            if b is not None:
                brows.append(b)
            if r is not None:
                trows.append(r)
        out.batches[name] = pa.Table.from_batches(brows, schema=schemas.BATCHES)
        out.topics[name] = pa.Table.from_batches(trows, schema=schemas.KAFKA)
    log = RequestLog()
    req = log.add(cluster.events)
    tail = log.finish()
    out.requests = _table({k: req[k] + tail[k] for k in req}, schemas.REQUESTS)
    out.events = _table(event_columns(cluster.events), schemas.EVENTS)
    out.manifest["records"] = sum(t.num_rows for t in out.topics.values())
    return out
