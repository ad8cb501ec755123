"""A recreated topic's offsets by topic id (KIP-516): one row per incarnation of a name, oldest
first, from a run's sample directory (the deleted incarnations' files stay in topics/deleted/).

    logs = scenario_logs("kip516.stale_read")
    recreated_offsets(logs, "orders").show()
    # generation topic_id_b64  deleted partition first_offset last_offset records restarted
    #          1 <id A>        true            0            0           2       3     false
    #          2 <id B>        false           0            0           4       5      true

Offsets restart at 0 under the new id: by name the two logs look like one whose offsets went back,
which is what a by-name client sees (kip516.stale_state); by id they are two topics."""
from __future__ import annotations

from pathlib import Path

from ..errors import KipvizError
from . import schemas
from .readers import conform

__all__ = ["recreated_offsets", "RECREATED_DDL"]

RECREATED_DDL = ("name string, generation int, topic_id_b64 string, deleted boolean, created_ms bigint, "
                 "deleted_ms bigint, partition int, first_offset bigint, last_offset bigint, records bigint, "
                 "restarted boolean")


def recreated_offsets(logs, name: str):
    """Every incarnation of topic `name` in the run (Logs or Source from read_samples /
    scenario_logs): its generation (1 = first created), topic id, whether it was deleted, and per
    partition the first and last offset and the record count; `restarted` marks a later
    generation whose offsets began again at 0. An incarnation whose file is missing or empty has
    one row with partition and offsets null and records 0. A name the run never had: KipvizError."""
    src = getattr(logs, "source", logs)
    if not isinstance(name, str) or not name:
        raise KipvizError(f"recreated_offsets needs a topic name, not {name!r}")
    topics = [t for t in src.manifest.get("topics") or [] if t.get("name") == name]
    if not topics:
        known = sorted({t.get("name") for t in src.manifest.get("topics") or [] if not t.get("internal")})
        raise KipvizError(f"no topic {name!r} in this run; topics: {', '.join(known) or 'none'}")
    topics.sort(key=lambda t: (t.get("created_ms") or 0, bool(not t.get("deleted"))))
    base = Path(src.origin) if src.origin else None
    rows = []
    for gen, t in enumerate(topics, 1):
        head = {"name": name, "generation": gen, "topic_id_b64": t.get("topic_id_b64"),
                "deleted": bool(t.get("deleted")), "created_ms": t.get("created_ms"), "deleted_ms": t.get("deleted_ms")}
        path = base / t["dataset"] if base is not None and t.get("dataset") else None
        stats = []
        if path is not None and path.is_file():
            stats = _offset_stats(conform(src.spark.read.parquet(str(path)), schemas.KAFKA_DDL, t["dataset"],
                                          src.read_errors))
        elif not t.get("deleted"):
            stats = _offset_stats(src.topic(name))
        rows += _incarnation_rows(head, stats, gen)
    return src.spark.createDataFrame(rows, RECREATED_DDL)


def _offset_stats(df) -> list:
    """Per partition of one incarnation's records: first and last offset and the count."""
    from pyspark.sql import functions as F
    return df.groupBy("partition").agg(F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
                                       F.count("*").alias("records")).orderBy("partition").collect()


def _incarnation_rows(head: dict, stats: list, gen: int) -> list[dict]:
    """One row per partition of an incarnation; a missing or empty one: one row, partition null."""
    if not stats:
        return [{**head, "partition": None, "first_offset": None, "last_offset": None, "records": 0,
                 "restarted": None}]
    return [{**head, "partition": s["partition"], "first_offset": s["first_offset"],
             "last_offset": s["last_offset"], "records": s["records"],
             "restarted": gen > 1 and s["first_offset"] == 0} for s in stats]
