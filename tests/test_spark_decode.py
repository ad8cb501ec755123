"""kipviz.spark readers and decoders: the Kafka-source frame gives what the sample files give, the
decoders run vectorised (mapInArrow) and agree with kipviz's codec, and bad data becomes error
rows instead of failed jobs."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kipviz import spark as ks
from kipviz.records.internal import decode_internal
from kipviz.spark import decode
from tests.spark_session import spark  # noqa: F401 - the shared session fixture

pytestmark = pytest.mark.spark
SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"


def _file(run: str, topic: str, kind: str = "dataset") -> Path:
    m = json.loads((SAMPLES / run / "manifest.json").read_text())
    return SAMPLES / run / next(t[kind] for t in m["topics"] if t["name"] == topic and not t["deleted"])


def _kafka_frame(spark, run: str):  # noqa: F811
    """Every live topic of a run as ONE DataFrame with the Kafka source's schema, as
    spark.read.format("kafka") would load it."""
    m = json.loads((SAMPLES / run / "manifest.json").read_text())
    tables = [pq.read_table(SAMPLES / run / t["dataset"]) for t in m["topics"] if not t["deleted"]]
    df = spark.createDataFrame(pa.concat_tables(tables).to_pandas(), ks.readers.schemas.KAFKA_DDL)
    return df, m


def _rows(df, *cols):
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def test_kafka_source_frame_gives_the_same_results_as_the_files(spark):  # noqa: F811
    df, manifest = _kafka_frame(spark, "kip1319")
    assert df.columns == ks.readers.KAFKA_COLUMNS
    live = ks.decode_all(ks.from_kafka_frame(spark, df, manifest=manifest))
    files = ks.decode_all(ks.read_samples(spark, SAMPLES / "kip1319"))
    cols = ("transactional_id", "txn", "outcome", "start_ms", "end_ms", "producer_id")
    assert _rows(ks.transactions(live), *cols) == _rows(ks.transactions(files), *cols)
    oc = ("group", "topic", "partition", "committed_offset", "topic_id", "status")
    assert _rows(ks.committed_offsets(live), *oc) == _rows(ks.committed_offsets(files), *oc)
    assert live.errors.count() == 0


def test_a_kafka_source_frame_gives_the_output_records_without_batch_flags(spark):  # noqa: F811
    df, manifest = _kafka_frame(spark, "share_eos")
    out = manifest["output_topic"]
    live = ks.decode_all(ks.from_kafka_frame(spark, df, manifest=manifest)).records(out)
    files = ks.decode_all(ks.read_samples(spark, SAMPLES / "share_eos")).records(out)
    assert live.columns == files.columns
    assert _rows(live, "partition", "offset", "source") == _rows(files, "partition", "offset", "source")
    # the Kafka source shows no batches: every record counts as visible, with no producer or transaction
    assert _rows(live.groupBy("visibility", "producer_id", "txn_no").count(), "visibility", "producer_id",
                 "txn_no") == [("visible", None, None)]


def test_decoders_are_vectorised_map_in_arrow(spark):  # noqa: F811
    src = ks.read_samples(spark, SAMPLES / "share_eos")
    for df in (decode.decode_offsets(src.topic("__consumer_offsets")),
               decode.decode_transactions(src.topic("__transaction_state")),
               decode.decode_share_state(src.topic("__share_group_state")),
               decode.decode_batches(src.batches_of("out"))):
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "MapInArrow" in plan, plan
        assert "BatchEvalPython" not in plan and "ArrowEvalPython" not in plan


def _python_decode(path: Path, topic: str):
    t = pq.read_table(path).to_pylist()
    return [decode_internal(r["key"], r["value"], topic) for r in t]


def test_consumer_offsets_decode_like_the_codec(spark):  # noqa: F811
    path = _file("kip1319", "__consumer_offsets")
    src = ks.read_samples(spark, SAMPLES / "kip1319")
    got = _rows(decode.decode_offsets(src.topic("__consumer_offsets")).filter("not tombstone"),
                "group", "topic", "partition", "committed_offset", "value_version", "topic_id")
    want = []
    for d in _python_decode(path, "__consumer_offsets"):
        if d["record"] == "OffsetCommit" and d["value"] is not None:
            tid = d["value"].get("topicId")
            want.append((d["key"]["group"], d["key"]["topic"], d["key"]["partition"], d["value"]["offset"],
                         d["value_version"], None if tid is None or tid.int == 0 else str(tid)))
    assert got == sorted(want, key=repr) and len(got) > 50
    assert {v for *_, v in got} - {None}, "KIP-1319: v6 commits persist the real topic id"


def test_transaction_state_decodes_every_record(spark):  # noqa: F811
    src = ks.read_samples(spark, SAMPLES / "regular_eos")
    got = decode.decode_transactions(src.topic("__transaction_state"))
    want = _python_decode(_file("regular_eos", "__transaction_state"), "__transaction_state")
    assert _rows(got, "log_partition", "log_offset", "transactional_id", "state") == sorted((
        (r["log_partition"], r["log_offset"], d["key"]["TransactionalId"],
         ks.readers.schemas.TXN_STATES[d["value"]["TransactionStatus"]])
        for r, d in zip(pq.read_table(_file("regular_eos", "__transaction_state")).to_pylist(), want, strict=True)
        for r in [{"log_partition": r["partition"], "log_offset": r["offset"]}]), key=repr)
    assert got.filter("error is not null").count() == 0


def test_share_group_state_snapshots_and_updates(spark):  # noqa: F811
    src = ks.read_samples(spark, SAMPLES / "share_eos")
    got = decode.decode_share_state(src.topic("__share_group_state"))
    want = _python_decode(_file("share_eos", "__share_group_state"), "__share_group_state")
    assert _rows(got, "record", "partition", "start_offset") == sorted(
        ((d["record"], d["key"]["Partition"], d["value"]["StartOffset"]) for d in want), key=repr)
    assert {r[0] for r in _rows(got, "record")} == {"ShareSnapshot", "ShareUpdate"}
    # at the end every input record is acknowledged: the last persisted SPSO is each partition's end
    inp = pq.read_table(_file("share_eos", "in")).to_pandas().groupby("partition").offset.max() + 1
    last = {r["partition"]: r["s"] for r in got.groupBy("partition").agg({"start_offset": "max"})
            .withColumnRenamed("max(start_offset)", "s").collect()}
    assert last == inp.to_dict()


def test_output_batches_decode_to_records_flags_and_markers(spark):  # noqa: F811
    src = ks.read_samples(spark, SAMPLES / "regular_eos")
    recs = decode.decode_batches(src.batches_of("orders-enriched")).persist()
    data = recs.filter("not is_control")
    assert data.count() == src.topic("orders-enriched").count()
    assert data.filter("not is_transactional or source is null or producer_id < 0").count() == 0
    markers = {r["control_type"]: r["count"] for r in recs.filter("is_control").groupBy("control_type").count().collect()}
    assert set(markers) == {"COMMIT", "ABORT"}
    # the same key/value bytes as the Kafka-source file
    assert _rows(data, "partition", "offset", "key", "value") == _rows(
        src.topic("orders-enriched"), "partition", "offset", "key", "value")
    recs.unpersist()


@pytest.mark.parametrize("run, topic", [("share_eos", None), ("kip516", "clicks")])
def test_a_format_1_run_without_batch_seqs_reads_the_same(spark, tmp_path, run, topic):  # noqa: F811
    """kipviz-sample/1 batch files have no seq column: it is taken from the event log, and the
    read_committed view (visibility, transaction numbers across partitions) comes out the same,
    for a re-created topic too (kip516's clicks: three incarnations share its name)."""
    import shutil
    d = tmp_path / "v1"
    shutil.copytree(SAMPLES / run, d)
    m = json.loads((d / "manifest.json").read_text())
    for p in (d / "batches").rglob("*.parquet"):
        pq.write_table(pq.read_table(p).drop_columns(["seq"]), p)
    (d / "manifest.json").write_text(json.dumps(dict(m, format="kipviz-sample/1")))
    cols = ("partition", "offset", "batch_seq", "visibility", "txn_no", "marker_offset", "producer_id")
    topic = topic or m["output_topic"]
    old, new = ks.read_samples(spark, d), ks.read_samples(spark, SAMPLES / run)
    assert old.errors.count() == 0
    assert "seq" in old.batches_of(topic).columns
    recs = _rows(ks.decode_all(new).records(topic), *cols)
    assert _rows(ks.decode_all(old).records(topic), *cols) == recs
    assert len(recs) == new.topic(topic).count()
    assert all(r[2] is not None for r in recs)
    if run == "share_eos":
        assert {r[3] for r in recs} >= {"visible", "aborted"}
        assert len({(r[6], r[4]) for r in recs if r[4] is not None}) > 10      # many transactions numbered


@pytest.mark.parametrize("run, topic", [("kip516", "clicks"), ("kip1319", "promos")])
def test_a_recreated_topic_gives_each_live_record_once(spark, run, topic):  # noqa: F811
    """Each batch carries the seq of the event that appended it, so a name shared by deleted
    incarnations matches nothing twice (ordering by a join on the name tripled kip516's clicks)."""
    src = ks.read_samples(spark, SAMPLES / run)
    assert any(t["name"] == topic and t["deleted"] for t in src.manifest["topics"])
    recs = ks.decode_all(src).records(topic)
    assert _rows(recs, "partition", "offset") == _rows(src.topic(topic), "partition", "offset")


def test_bad_records_and_missing_columns_become_error_rows(spark):  # noqa: F811
    t = pq.read_table(_file("kip1319", "__consumer_offsets")).to_pylist()
    good = [r for r in t if r["value"] is not None][:20]
    corrupt = dict(good[0], offset=10_001, value=good[0]["value"][:5])               # truncated value
    unknown = dict(good[1], offset=10_002, value=b"\x00\x63" + good[1]["value"][2:])   # value version 99
    nokey = dict(good[2], offset=10_003, key=None)
    rows = good + [corrupt, unknown, nokey]
    df = spark.createDataFrame(pa.Table.from_pylist(rows, schema=ks.readers.schemas.KAFKA).to_pandas(),
                               ks.readers.schemas.KAFKA_DDL).drop("timestamp")      # a missing column
    src = ks.from_kafka_frame(spark, df, ["__consumer_offsets"])
    logs = ks.decode_all(src)
    errors = {(r["error_kind"], r["offset"]) for r in logs.errors.collect()}
    assert ("missing-column", None) in errors
    assert ("corrupt", 10_001) in errors and ("corrupt", 10_003) in errors
    assert ("unknown-version", 10_002) in errors
    assert logs.offsets.count() == sum(1 for r in good if decode_internal(r["key"], r["value"],
                                                                          "__consumer_offsets")["record"]
                                       == "OffsetCommit")
    assert ks.committed_offsets(logs).count() > 0           # the job goes on with the good records


def test_missing_files_are_reported_not_fatal(spark, tmp_path):  # noqa: F811
    import shutil
    d = tmp_path / "run"
    shutil.copytree(SAMPLES / "kip516", d)
    (d / "requests.parquet").unlink()
    (d / "batches" / "clicks.parquet").unlink()
    src = ks.read_samples(spark, d)
    kinds = {(r["error_kind"], r["dataset"]) for r in src.errors.collect()}
    assert ("missing-file", "requests.parquet") in kinds and ("missing-file", "batches/clicks.parquet") in kinds
    assert ks.kip1319_errors(ks.decode_all(src)).count() == 0          # no requests: an empty frame
    with pytest.raises(ks.readers.KipvizError, match="manifest.json"):
        ks.read_samples(spark, tmp_path)
