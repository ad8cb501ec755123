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

A live cluster: read_kafka uses Spark's own Kafka connector (format "kafka") when it is on the
classpath -- it is not part of PySpark; add it when the session starts, matching your Spark version:

    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0 job.py
    session(conf={"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0"})

-- and kipviz's own source otherwise (format "kipviz-kafka", kipviz.spark.kafka_source: a Python
data source reading with confluent-kafka, the same columns and options). Either way it reads every
record between the starting and ending offsets (a batch query, not a stream), headers included. A read_committed view of a topic: options={"kafka.isolation.level":
"read_committed"}. The Kafka source gives no control records and no batch attributes, so
transaction markers (and with them the exactly-once check's visibility rules) need the batch
files; the internal-topic decoders and their analyses work the same on both."""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KipvizError
from ..records.header import HEADER_SIZE, LOG_OVERHEAD, OFFSET
from . import schemas, txnview

__all__ = ["Source", "read_samples", "read_kafka", "from_trace", "from_tables", "kafka_frame", "KAFKA_COLUMNS",
           "topic_records", "kafka_format", "load_manifest", "validate_manifest", "check_files", "checked_batches", "conform"]


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


def _error(dataset, kind: str, error: str, path: str | None = None, partition=None, offset=None) -> dict:
    return {"dataset": dataset, "partition": partition, "offset": offset, "error_kind": kind, "error": error,
            "error_path": path}


@contextmanager
def _quiet_query_errors():
    """PySpark logs every query error it raises to stderr as JSON (PySparkLogger's
    DataFrameQueryContextLogger); an error conform expects and handles is not news."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        yield
        return
    loggers = [PySparkLogger.getLogger(n) for n in ("DataFrameQueryContextLogger", "SQLQueryContextLogger")]
    was = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, w in zip(loggers, was, strict=True):
            lg.disabled = w


def conform(df, ddl: str, dataset: str, errors: list):
    """df with exactly the columns of `ddl`, in order: a missing column becomes nulls (and an
    error row), extra columns are dropped, a column of another type is converted where Spark can
    (string digits to int, int to bigint, ...) and read as nulls with a `wrong-type` error row
    where it cannot (an int `batch`); a row whose value does not convert (an int column holding
    "abc", a bigint out of int's range) is taken out of the data and becomes a `bad-value` error
    row. `errors` gets dicts and DataFrames of error rows (schemas.ERRORS_DDL), see Source.errors."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F
    have = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    cols, converted = [], []
    for name, typ in _ddl_types(ddl).items():
        if name not in have:
            errors.append(_error(dataset, "missing-column", f"column {name!r} ({typ}) is missing; read as nulls",
                                 name))
            cols.append(F.lit(None).cast(typ).alias(name))
        elif have[name].replace(" ", "") != typ.replace(" ", ""):
            try:
                with _quiet_query_errors():
                    df.select(F.col(name).try_cast(typ))     # analysis only: can Spark convert it at all?
            except AnalysisException:
                errors.append(_error(dataset, "wrong-type", f"column {name!r} is {have[name]}, expected {typ}; "
                                                            f"read as nulls", name))
                cols.append(F.lit(None).cast(typ).alias(name))
                continue
            cols.append(F.col(name).try_cast(typ).alias(name))
            converted.append((name, typ))
        else:
            cols.append(F.col(name))
    if not converted:
        return df.select(*cols)
    why = F.coalesce(*[F.when(F.col(n).isNotNull() & F.col(n).try_cast(t).isNull(),
                              F.lit(f"column {n!r}: the value ({have[n]}) is not a {t}")) for n, t in converted])
    out = df.select(*cols, why.alias("_why"), F.coalesce(*[F.when(F.col(n).isNotNull() & F.col(n).try_cast(t)
                                                                  .isNull(), F.lit(n)) for n, t in converted])
                    .alias("_where"))
    names = list(_ddl_types(ddl))
    offset = next((c for c in ("offset", "base_offset", "seq") if c in names), None)
    errors.append(out.filter(F.col("_why").isNotNull()).select(
        F.lit(dataset).alias("dataset"),
        (F.col("partition") if "partition" in names else F.lit(None)).cast("int").alias("partition"),
        (F.col(offset) if offset else F.lit(None)).cast("bigint").alias("offset"),
        F.lit("bad-value").alias("error_kind"), F.col("_why").alias("error"), F.col("_where").alias("error_path")))
    return out.filter(F.col("_why").isNull()).select(*names)


# Kafka's DefaultRecordBatch: RECORD_BATCH_OVERHEAD bytes of header (kipviz.records.header)
BATCH_HEADER = HEADER_SIZE


def checked_batches(df, dataset: str, errors: list, topic: str | None = None):
    """A batches frame (BATCHES_DDL) without the rows whose `batch` is not one whole v2 record
    batch (null, shorter than its header, another magic, a length field that disagrees with the
    bytes) or, given `topic`, whose topic column names another: those become `corrupt` error rows
    in `errors`, so no analysis reads a header out of them or leaves them out unsaid."""
    from pyspark.sql import functions as F
    b = F.col("batch")
    n = F.length(b)
    # Spark's substring counts from 1
    magic = F.conv(F.hex(F.substring(b, OFFSET["magic"] + 1, 1)), 16, 10)
    length = F.conv(F.hex(F.substring(b, OFFSET["length"] + 1, 4)), 16, 10).cast("bigint") + LOG_OVERHEAD
    why = F.when(F.lit(False), F.lit(None))
    if topic is not None:
        why = why.when(~F.col("topic").eqNullSafe(topic),
                       F.format_string(f"a batch of topic %s in the batches of {topic!r}",
                                       F.coalesce(F.col("topic"), F.lit("null"))))
    why = (why.when(b.isNull(), F.lit("null batch"))
           .when(n < BATCH_HEADER, F.format_string(f"%d bytes, shorter than a record batch header ({BATCH_HEADER})", n))
           .when(magic != "2", F.format_string("magic %s, not 2 (a v2 record batch)", magic))
           .when(length != n, F.format_string("the batch length field says %d bytes, the value holds %d", length, n)))
    out = df.withColumn("_why", why)
    errors.append(out.filter(F.col("_why").isNotNull()).select(
        F.lit(dataset).alias("dataset"), "partition", F.col("base_offset").alias("offset"),
        F.lit("corrupt").alias("error_kind"), F.col("_why").alias("error"),
        F.when(F.col("_why").startswith("a batch of topic"), F.lit("topic")).otherwise(F.lit("batch"))
        .alias("error_path")))
    return out.filter(F.col("_why").isNull()).drop("_why")


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
        """The run's consumer or share group, from its manifest."""
        return self.manifest.get("group")

    @property
    def input_topic(self) -> str | None:
        """The run's input topic, from its manifest."""
        return self.manifest.get("input_topic")

    @property
    def output_topic(self) -> str | None:
        """The run's output topic, from its manifest."""
        return self.manifest.get("output_topic")

    def topic(self, name: str):
        """The topic's records (Kafka source columns); an empty frame when the source has none."""
        df = self.topics.get(name)
        if df is None:
            return self.spark.createDataFrame([], schemas.KAFKA_DDL)
        return df

    def batches_of(self, name: str):
        """The topic's record batches frame, or None."""
        return self.batches.get(name)

    @property
    def errors(self):
        """Problems met while reading, as a DataFrame (schemas.ERRORS_DDL): missing files and
        columns, and the rows taken out of the data (bad values, corrupt batches), one row each.
        read_errors holds them as dicts and as DataFrames of error rows."""
        out = self.spark.createDataFrame([e for e in self.read_errors if isinstance(e, dict)], schemas.ERRORS_DDL)
        for e in self.read_errors:
            if not isinstance(e, dict):
                out = out.unionByName(e)
        return out

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


# the manifest fields kipviz reads (sample_data/README.md), each JSON null or of this type; others
# are left alone
_STR, _INT, _BOOL, _LIST, _OBJ = "a string", "an integer", "true or false", "a list", "an object"
MANIFEST_FIELDS = {"format": _STR, "group": _STR, "input_topic": _STR, "output_topic": _STR, "scenario": _STR,
                   "workload": _STR, "release": _STR, "status": _STR, "kipviz_version": _STR, "seed": _INT,
                   "records": _INT, "share_version": _INT, "topics": _LIST, "datasets": _OBJ, "summary": _OBJ,
                   "generator": _OBJ}
TOPIC_FIELDS = {"name": _STR, "dataset": _STR, "batches": _STR, "deleted": _BOOL, "internal": _BOOL,
                "partitions": _INT, "topic_id": _STR, "topic_id_b64": _STR, "created_ms": _INT, "deleted_ms": _INT}
_TYPES = {_STR: (str,), _INT: (int,), _BOOL: (bool,), _LIST: (list,), _OBJ: (dict,)}


def _is(value, kind: str) -> bool:
    return isinstance(value, _TYPES[kind]) and not (kind == _INT and isinstance(value, bool))


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def validate_manifest(manifest, where: str = "manifest.json") -> dict:
    """The manifest, or KipvizError naming the first field that is not what kipviz reads (its
    path, what it should be and what it is). Dataset paths must stay inside the run directory."""
    def bad(path: str, want: str, value) -> KipvizError:
        return KipvizError(f"{where}: field {path}: expected {want}, got {_shown(value)}")
    if not isinstance(manifest, dict):
        raise bad("(top level)", _OBJ, manifest)
    for name, kind in MANIFEST_FIELDS.items():
        v = manifest.get(name)
        if v is not None and not _is(v, kind):
            raise bad(name, kind, v)
    fmt = manifest.get("format")
    if not (isinstance(fmt, str) and fmt.startswith("kipviz-sample/")):
        raise KipvizError(f"{where}: field format: {fmt!r} is not a kipviz-sample format (kipviz-sample/1 or /2)")
    live: dict[str, int] = {}
    for i, t in enumerate(manifest.get("topics") or []):
        _check_topic(t, i, bad)
        if not t.get("deleted"):
            if t["name"] in live:
                raise KipvizError(f"{where}: field topics[{i}].name: topic {t['name']!r} is listed twice "
                                  f"(topics[{live[t['name']]}] too) and neither is deleted")
            live[t["name"]] = i
    for k, v in (manifest.get("datasets") or {}).items():
        if not isinstance(v, dict):
            raise bad(f"datasets[{k!r}]", _OBJ, v)
        rows = v.get("rows")
        if rows is not None and not (_is(rows, _INT) and rows >= 0):
            raise bad(f"datasets[{k!r}].rows", "a count (an integer, 0 or more)", rows)
    return manifest


def _check_topic(t, i: int, bad) -> None:
    """One entry of the manifest's topics: an object with a name, typed fields, paths inside the run."""
    if not isinstance(t, dict):
        raise bad(f"topics[{i}]", _OBJ, t)
    if not (isinstance(t.get("name"), str) and t["name"]):
        raise bad(f"topics[{i}].name", "a topic name", t.get("name"))
    for name, kind in TOPIC_FIELDS.items():
        v = t.get(name)
        if v is not None and not _is(v, kind):
            raise bad(f"topics[{i}].{name}", kind, v)
    for name in ("dataset", "batches"):
        rel = t.get(name)
        if rel is not None and (not rel or Path(rel).is_absolute() or ".." in Path(rel).parts):
            raise bad(f"topics[{i}].{name}", "a path inside the run directory", rel)


# the largest manifest.json kipviz reads (the bundled ones are under 10 kB); raise it for a run of
# very many topics
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


def load_manifest(directory) -> dict:
    """A run directory's manifest.json, read and validated (validate_manifest); KipvizError with
    one line saying what is wrong: no such directory, no manifest, not JSON, a field."""
    d = Path(directory)
    if not d.is_dir():
        raise KipvizError(f"{d}: no such directory" if not d.exists() else f"{d}: not a directory")
    mpath = d / "manifest.json"
    if not mpath.is_file():
        raise KipvizError(f"{d}: no manifest.json here; expected a sample-data run directory "
                          f"(kipviz sample-data -o DIR; e.g. sample_data/share_eos)")
    try:
        with open(mpath, "rb") as fh:
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
        if len(raw) > MAX_MANIFEST_BYTES:
            raise KipvizError(f"{mpath}: larger than {MAX_MANIFEST_BYTES} bytes (MAX_MANIFEST_BYTES); a "
                              f"manifest lists a run's datasets in a few kB")
        manifest = json.loads(raw)
    except ValueError as e:
        raise KipvizError(f"{mpath}: not JSON ({e})") from None
    except RecursionError:
        raise KipvizError(f"{mpath}: not a manifest (JSON nested too deeply)") from None
    except OSError as e:
        raise KipvizError(f"{mpath}: cannot read: {e.strerror or e}") from None
    return validate_manifest(manifest, str(mpath))


def _files(d: Path, manifest: dict) -> list[tuple[str, str, dict | None]]:
    """(relative path, DDL, the topic or None) of every Parquet file read_samples reads."""
    out = [(f"{a}.parquet", ddl, None) for a, ddl in (("requests", schemas.REQUESTS_DDL),
                                                     ("events", schemas.EVENTS_DDL))]
    for t in manifest.get("topics") or []:
        if not t.get("deleted"):     # a deleted topic's files stay in topics/deleted/ (by id)
            out += [(t.get("dataset"), schemas.KAFKA_DDL, t), (t.get("batches"), schemas.BATCHES_DDL, t)]
    return out


def check_files(directory, manifest: dict) -> None:
    """KipvizError when a file the run's manifest names is there but is not Parquet (its footer
    does not read: a truncated or overwritten file); read before any JVM starts. A missing file
    is not an error here (read_samples reports it in `errors`)."""
    import pyarrow.parquet as pq
    d = Path(directory)
    if not any(t and ddl is schemas.KAFKA_DDL and rel and (d / rel).is_file() for rel, ddl, t in _files(d, manifest)):
        raise KipvizError(f"{d}: no topic files (manifest.json lists none that exist)")
    for rel, _, _ in _files(d, manifest):
        p = d / rel if rel else None
        if p is None or not p.exists():
            continue
        if not p.is_file():
            raise KipvizError(f"{p}: not a file")
        try:
            pq.read_schema(p)
        except (OSError, ValueError) as e:        # pyarrow's ArrowInvalid is a ValueError
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise KipvizError(f"{p}: not a readable Parquet file ({first})") from None


def read_samples(spark, directory) -> Source:
    """A run directory written by `kipviz sample-data` (manifest.json, topics/, batches/,
    requests.parquet, events.parquet). A bad manifest or a file that is not Parquet: KipvizError;
    missing files and columns, values of another type and corrupt batches: rows of `errors`."""
    d = Path(directory)
    manifest = load_manifest(d)
    check_files(d, manifest)
    src = Source(spark, manifest=manifest, origin=str(d))
    for rel, ddl, t in _files(d, manifest):
        p = d / rel if rel else None
        if p is None or not p.is_file():
            src.read_errors.append(_error(rel or t["name"], "missing-file", f"{p or rel} not found"))
            continue
        df = _read_parquet(spark, p, ddl)
        if t is None:
            setattr(src, rel.removesuffix(".parquet"), conform(df, ddl, rel, src.read_errors))
        elif ddl is schemas.KAFKA_DDL:
            src.topics[t["name"]] = conform(df, ddl, rel, src.read_errors)
        else:
            if "seq" not in df.columns and src.events is not None:     # kipviz-sample/1: no seq column yet
                df = txnview.with_event_seq(conform(df, _BATCHES_NO_SEQ, rel, src.read_errors), src.events)
            df = conform(df, ddl, rel, src.read_errors)
            src.batches[t["name"]] = checked_batches(df, rel, src.read_errors, t["name"])
    if not src.topics:
        raise KipvizError(f"{d}: no topic files (manifest.json lists none that exist)")
    return src


_BATCHES_NO_SEQ = schemas.BATCHES_DDL.removesuffix(", seq bigint")
_ARROW = {schemas.KAFKA_DDL: schemas.KAFKA, schemas.BATCHES_DDL: schemas.BATCHES, schemas.REQUESTS_DDL: schemas.REQUESTS,
          schemas.EVENTS_DDL: schemas.EVENTS}


def _read_parquet(spark, path: Path, ddl: str):
    """The file as a DataFrame. A file in exactly the writer's schema (its footer, read locally by
    pyarrow) is read with that schema given, which spares Spark a job per file to infer it (twelve
    per run read: ~1 s of a notebook's corner-case cell); any other file is inferred, so conform
    sees its real columns and types."""
    import pyarrow.parquet as pq
    want = _ARROW.get(ddl)
    try:
        have = pq.read_schema(path)
    except (OSError, ValueError):
        have = None
    # absolute: a Spark Connect server resolves a relative path against its own working directory
    where = str(path.absolute())
    if want is not None and have is not None and have.remove_metadata().equals(want):
        return spark.read.schema(ddl).parquet(where)
    return spark.read.parquet(where)


# Spark's own Kafka source (spark-sql-kafka-0-10), when it is on the classpath
KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def kafka_format(spark) -> str:
    """"kafka" when Spark's Kafka connector is on the session's classpath, else kipviz's own
    source ("kipviz-kafka"). A classic session is asked for the class; a Spark Connect session
    (no JVM here) is asked to plan a Kafka read, which needs no broker."""
    from .kafka_options import NAME
    try:
        jvm = spark._jvm
    except Exception:                    # noqa: BLE001 - Spark Connect: no JVM on this side
        jvm = None
    try:
        if jvm is not None:
            jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(KAFKA_PROVIDER)
        else:
            with _quiet_query_errors():
                probe = (spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
                         .option("subscribe", "kipviz-probe").load())
                probe.schema                 # noqa: B018 - planning it is the question
        return "kafka"
    except Exception:                    # noqa: BLE001 - py4j's or Spark's "class not found"
        return NAME


def read_kafka(spark, bootstrap_servers: str, topics, *, starting_offsets: str = "earliest",
               ending_offsets: str = "latest", options: dict | None = None, manifest: dict | None = None,
               format: str | None = None, check: bool = True) -> Source:
    """Topics of a live cluster, read by Spark's Kafka connector when the session has it and by
    kipviz's own source (kipviz-kafka) otherwise (`format` picks one), with the same columns
    either way. `manifest` may name the group and topics (and topic ids) like a sample run's.
    With kipviz's source and check=True, an unreachable cluster, a topic that does not exist or
    an offset out of range is one KipvizError here, before Spark plans anything."""
    from . import kafka_options as ko
    topics = [topics] if isinstance(topics, str) else list(topics)
    fmt = format or kafka_format(spark)
    opts = {"kafka.bootstrap.servers": bootstrap_servers, "subscribe": ",".join(topics),
            "startingOffsets": starting_offsets, "endingOffsets": ending_offsets, "includeHeaders": "true",
            **(options or {})}
    if fmt == ko.NAME and check:
        from .kafka_source import check_batch
        check_batch(opts)
    df = spark.read.format(fmt).options(**{k: str(v) for k, v in opts.items()}).load()
    return from_kafka_frame(spark, df, topics, manifest=manifest, origin=bootstrap_servers)


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
