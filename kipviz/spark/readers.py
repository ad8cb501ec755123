"""Where the data comes from: sample files, a live cluster, or a model run in memory. Each reader
gives a Source whose topic DataFrames have exactly the columns of Spark's Kafka source.

    src = read_samples(spark, "sample_data/share_eos")         # the files of `kipviz sample-data`
    src = read_kafka(spark, "broker:9092", ["__consumer_offsets", "__transaction_state",
                                            "__share_group_state", "out"])   # a live cluster
    src = from_trace(spark, scenarios.run("kip1289.case02_coordinator_unavailable"))

    src.topic("__consumer_offsets")   # key, value, topic, partition, offset, timestamp, timestampType, headers
    src.batches_of("out")             # raw record batches (sample files and model runs only)
    src.requests, src.events          # the model's requests and events (None for a live cluster)
    src.errors                        # problems met while reading: missing columns, files, ...

A live cluster: Spark needs the Kafka connector, which is not part of PySpark. Add it when the
session starts, matching your Spark version (Scala 2.13 for Spark 4):

    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0 job.py
    session(conf={"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"})

read_kafka reads every record between the starting and ending offsets (a batch query, not a
stream), headers included. A read_committed view of a topic: options={"kafka.isolation.level":
"read_committed"}. The Kafka source gives no control records and no batch attributes, so
transaction markers (and with them the exactly-once check's visibility rules) need the batch
files; the internal-topic decoders and their analyses work the same on both."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KipvizError
from . import schemas, txnview

__all__ = ["Source", "read_samples", "read_kafka", "from_trace", "from_tables", "kafka_frame", "KAFKA_COLUMNS",
           "topic_records"]


def _ddl_types(ddl: str) -> dict[str, str]:
    out, depth, cur = {}, 0, ""
    for ch in ddl + ",":
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            name, typ = cur.strip().split(" ", 1)
            out[name] = typ.strip()
            cur = ""
        else:
            cur += ch
    return out


KAFKA_COLUMNS = list(_ddl_types(schemas.KAFKA_DDL))


def conform(df, ddl: str, dataset: str, errors: list[dict]):
    """df with exactly the columns of `ddl`, in order: a missing column becomes nulls (and an
    error row), a column of another type is cast, extra columns are dropped."""
    from pyspark.sql import functions as F
    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    cols = []
    for name, typ in _ddl_types(ddl).items():
        want = typ.replace(" ", "")
        if name not in have:
            errors.append({"dataset": dataset, "partition": None, "offset": None, "error_kind": "missing-column",
                           "error": f"column {name!r} ({typ}) is missing; read as nulls", "error_path": name})
            cols.append(F.lit(None).cast(typ).alias(name))
        elif have[name].replace(" ", "") != want:
            cols.append(F.col(name).cast(typ).alias(name))
        else:
            cols.append(F.col(name))
    return df.select(*cols)


def kafka_frame(df, dataset: str = "topic", errors: list[dict] | None = None):
    """A DataFrame with the Kafka source's columns and types (see conform)."""
    return conform(df, schemas.KAFKA_DDL, dataset, errors if errors is not None else [])


@dataclass
class Source:
    """One run's data as Spark DataFrames; see the module docstring."""
    spark: object
    topics: dict = field(default_factory=dict)          # name -> DataFrame (Kafka source columns)
    batches: dict = field(default_factory=dict)         # name -> DataFrame (contract batch columns)
    requests: object = None
    events: object = None
    manifest: dict = field(default_factory=dict)
    read_errors: list = field(default_factory=list)
    origin: str = ""

    @property
    def group(self) -> str | None:
        return self.manifest.get("group")

    @property
    def input_topic(self) -> str | None:
        return self.manifest.get("input_topic")

    @property
    def output_topic(self) -> str | None:
        return self.manifest.get("output_topic")

    def topic(self, name: str):
        """The topic's records (Kafka source columns); an empty frame when the source has none."""
        df = self.topics.get(name)
        if df is None:
            return self.spark.createDataFrame([], schemas.KAFKA_DDL)
        return df

    def batches_of(self, name: str):
        return self.batches.get(name)

    @property
    def errors(self):
        """Problems met while reading, as a DataFrame (schemas.ERRORS_DDL)."""
        return self.spark.createDataFrame(self.read_errors, schemas.ERRORS_DDL)

    def topic_ids(self):
        """name, topic_id (canonical UUID text), topic_id_b64 (Kafka's form), partitions, deleted,
        created_ms, deleted_ms: every topic the run ever had (KIP-516: a re-created name has two ids)."""
        from .. import uuids
        rows = []
        for t in self.manifest.get("topics") or []:
            tid = t.get("topic_id") or t.get("topic_id_b64")
            try:
                u = uuids.parse(tid) if tid else None
            except ValueError:
                u = None
            rows.append({"name": t.get("name"), "topic_id": str(u) if u else None,
                         "topic_id_b64": uuids.to_kafka_str(u) if u else None,
                         "partitions": t.get("partitions"), "deleted": bool(t.get("deleted")),
                         "created_ms": t.get("created_ms"), "deleted_ms": t.get("deleted_ms")})
        return self.spark.createDataFrame(rows, TOPIC_IDS_DDL)


TOPIC_IDS_DDL = ("name string, topic_id string, topic_id_b64 string, partitions int, deleted boolean, "
                 "created_ms bigint, deleted_ms bigint")


def topic_records(directory) -> int:
    """How many records a sample directory's topic datasets hold (input, output and internal
    topics: what Spark's Kafka source would deliver), from its manifest; 0 when the manifest is
    missing or unreadable (read_samples says what is wrong with it)."""
    try:
        sets = json.loads((Path(directory) / "manifest.json").read_text()).get("datasets", {})
        return sum(v.get("rows", 0) for k, v in sets.items() if k.startswith("topics/"))
    except (OSError, ValueError, AttributeError, TypeError):
        return 0


def read_samples(spark, directory) -> Source:
    """A run directory written by `kipviz sample-data` (manifest.json, topics/, batches/,
    requests.parquet, events.parquet)."""
    d = Path(directory)
    mpath = d / "manifest.json"
    if not mpath.is_file():
        raise KipvizError(f"{d}: no manifest.json here; expected a sample-data run directory "
                          f"(e.g. sample_data/share_eos)")
    try:
        manifest = json.loads(mpath.read_text())
    except ValueError as e:
        raise KipvizError(f"{mpath}: not JSON ({e})") from None
    if not str(manifest.get("format", "")).startswith("kipviz-sample/"):
        raise KipvizError(f"{mpath}: format {manifest.get('format')!r} is not a kipviz-sample format "
                          f"(kipviz-sample/1 or /2)")
    src = Source(spark, manifest=manifest, origin=str(d))
    for attr, ddl in (("requests", schemas.REQUESTS_DDL), ("events", schemas.EVENTS_DDL)):
        p = d / f"{attr}.parquet"
        if p.is_file():
            setattr(src, attr, conform(spark.read.parquet(str(p)), ddl, p.name, src.read_errors))
        else:
            src.read_errors.append({"dataset": p.name, "partition": None, "offset": None,
                                    "error_kind": "missing-file", "error": f"{p} not found",
                                    "error_path": None})
    for t in manifest.get("topics") or []:
        if t.get("deleted"):
            continue                 # a deleted topic's files stay in topics/deleted/ (by id)
        for rel, ddl, into in ((t.get("dataset"), schemas.KAFKA_DDL, src.topics),
                               (t.get("batches"), schemas.BATCHES_DDL, src.batches)):
            p = d / rel if rel else None
            if p is None or not p.is_file():
                src.read_errors.append({"dataset": rel or t.get("name"), "partition": None, "offset": None,
                                        "error_kind": "missing-file", "error": f"{p or rel} not found",
                                        "error_path": None})
                continue
            df = spark.read.parquet(str(p))
            if into is src.batches and "seq" not in df.columns and src.events is not None:
                df = txnview.with_event_seq(df, src.events)      # kipviz-sample/1: no seq column yet
            into[t["name"]] = conform(df, ddl, rel, src.read_errors)
    if not src.topics:
        raise KipvizError(f"{d}: no topic files (manifest.json lists none that exist)")
    return src


def read_kafka(spark, bootstrap_servers: str, topics, *, starting_offsets: str = "earliest",
               ending_offsets: str = "latest", options: dict | None = None, manifest: dict | None = None) -> Source:
    """Topics of a live cluster through spark.read.format("kafka") (needs spark-sql-kafka; see the
    module docstring). `manifest` may name the group and topics (and topic ids) like a sample run's."""
    topics = [topics] if isinstance(topics, str) else list(topics)
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
              .option("subscribe", ",".join(topics)).option("startingOffsets", starting_offsets)
              .option("endingOffsets", ending_offsets).option("includeHeaders", "true"))
    for k, v in (options or {}).items():
        reader = reader.option(k, v)
    return from_kafka_frame(spark, reader.load(), topics, manifest=manifest, origin=bootstrap_servers)


def from_kafka_frame(spark, df, topics=None, *, manifest: dict | None = None, origin: str = "kafka") -> Source:
    """A Source over one DataFrame with the Kafka source's columns (what read_kafka loads): one
    topic frame per topic name."""
    from pyspark.sql import functions as F
    src = Source(spark, manifest=dict(manifest or {}), origin=origin)
    df = conform(df, schemas.KAFKA_DDL, "kafka", src.read_errors)
    if topics is None:
        topics = [r[0] for r in df.select("topic").distinct().collect() if r[0] is not None]
    for t in topics:
        src.topics[t] = df.filter(F.col("topic") == t)
    return src


def from_tables(spark, tables) -> Source:
    """A Source over in-memory sample tables (kipviz.spark.tables.RunTables)."""
    src = Source(spark, manifest=dict(tables.manifest), origin="memory")

    def frame(table, ddl):
        return spark.createDataFrame(table) if table.num_rows else spark.createDataFrame([], ddl)
    for name, t in tables.topics.items():
        src.topics[name] = frame(t, schemas.KAFKA_DDL)
    for name, t in tables.batches.items():
        src.batches[name] = frame(t, schemas.BATCHES_DDL)
    if tables.requests is not None:
        src.requests = frame(tables.requests, schemas.REQUESTS_DDL)
    if tables.events is not None:
        src.events = frame(tables.events, schemas.EVENTS_DDL)
    return src


def from_trace(spark, run, *, group: str | None = None, input_topic: str | None = None,
               output_topic: str | None = None) -> Source:
    """A scenario trace (or a Cluster) as a Source, without writing files: the same DataFrames
    read_samples gives for the files of that run."""
    from .tables import run_tables
    return from_tables(spark, run_tables(run, group=group, input_topic=input_topic, output_topic=output_topic))
