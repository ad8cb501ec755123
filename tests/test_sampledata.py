"""`kipviz sample-data` and the bundled sample_data/: byte-for-byte reproducible, Kafka-source
shaped, and faithful to the model run that wrote it. No Spark here (pyarrow only)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kipviz.cli import main
from kipviz.cli.spark import BUNDLED
from kipviz.errors import KipvizError
from kipviz.sampledata import generate
from kipviz.sampledata.schema import BATCH, EVENT, REQUEST, TOPIC

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_data"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _files(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): _sha(p) for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["share_eos", "kip516"])
def test_bundled_set_regenerates_byte_for_byte(tmp_path, name):
    scenario, records, seed = BUNDLED[name]
    generate(scenario, tmp_path / name, records=records, seed=seed)
    shipped = _files(SAMPLES / name)
    assert _files(tmp_path / name) == shipped
    assert "manifest.json" in shipped and len(shipped) > 10


def test_every_bundled_set_matches_its_manifest_and_readme():
    readme = (SAMPLES / "README.md").read_text()
    assert set(BUNDLED) == {p.name for p in SAMPLES.iterdir() if p.is_dir()}
    total = 0
    for name, (scenario, records, seed) in BUNDLED.items():
        d = SAMPLES / name
        m = json.loads((d / "manifest.json").read_text())
        assert (m["scenario"], m["records"], m["seed"]) == (scenario, records, seed)
        assert m["generator"]["command"] in readme
        for rel, info in m["datasets"].items():
            assert _sha(d / rel) == info["sha256"], rel
            assert pq.ParquetFile(d / rel).metadata.num_rows == info["rows"], rel
        total += sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    assert total < 8 * 2**20, "a few MB"
    for schema in (TOPIC, BATCH, REQUEST, EVENT):      # every column is documented
        for f in schema:
            assert f"| `{f.name}` |" in readme, f.name


def test_bytes_do_not_depend_on_how_the_run_was_chunked(tmp_path):
    generate("regular_eos", tmp_path / "a", records=600, seed=3)
    generate("regular_eos", tmp_path / "b", records=600, seed=3, drain_every=500)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    generate("regular_eos", tmp_path / "c", records=600, seed=4)
    assert _files(tmp_path / "c")["topics/orders.parquet"] != _files(tmp_path / "a")["topics/orders.parquet"]


def test_parquet_footers_hold_no_wall_clock():
    for p in (SAMPLES / "share_eos").rglob("*.parquet"):
        meta = pq.ParquetFile(p).metadata
        kv = meta.metadata or {}
        assert not any(b"time" in k.lower() and k != b"ARROW:schema" for k in kv), p
        assert all(meta.row_group(i).num_rows > 0 for i in range(meta.num_row_groups))


def test_topic_files_have_the_kafka_source_columns_and_no_markers():
    d = SAMPLES / "regular_eos"
    m = json.loads((d / "manifest.json").read_text())
    orders = pq.read_table(d / "topics" / "orders.parquet")
    assert orders.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                   "headers"]
    assert orders.num_rows == m["records"]
    internal = {t["name"]: t for t in m["topics"] if t["internal"]}
    assert internal["__consumer_offsets"]["dataset"] == "topics/internal/consumer_offsets.parquet"
    out = pq.read_table(d / "topics" / "orders-enriched.parquet").to_pandas()
    batches = pq.read_table(d / "batches" / "orders-enriched.parquet").to_pandas()
    data = batches[~batches.is_control]
    assert len(out) == int((data.last_offset - data.base_offset + 1).sum())      # markers: batches only
    assert batches.is_control.sum() > 0
    markers = batches[batches.is_control]
    assert set(zip(out.partition, out.offset, strict=True)) & set(
        zip(markers.partition, markers.base_offset, strict=True)) == set()
    # every output record names its input in the kipviz-source header
    assert all(any(h["key"] == "kipviz-source" for h in hs) for hs in out.headers)


def test_events_and_requests_are_the_model_run(tmp_path):
    from kipviz import scenarios
    m = generate("txn.read_process_write_abort", tmp_path / "s")
    trace = scenarios.run("txn.read_process_write_abort")
    ev = pq.read_table(tmp_path / "s" / "events.parquet").to_pandas()
    assert list(ev.seq) == [e.seq for e in trace.events]
    assert list(ev.kind) == [type(e).__name__ for e in trace.events]
    req = pq.read_table(tmp_path / "s" / "requests.parquet").to_pandas()
    received = [e for e in trace.events if type(e).__name__ == "RequestReceived"]
    assert len(req) == len(received)
    assert [bytes(r) for r in req.request] == [bytes(e.frame) for e in received]
    assert m["summary"]["checks"] == m["summary"]["checks_passed"] > 0


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_every_batch_names_the_event_that_appended_it(name):
    """A batch's seq is its first record's RecordAppended event (deleted topics too: the model
    stamps it, nothing is matched by name), its other records' events follow one by one, and a
    log's batches are in event order."""
    d = SAMPLES / name
    ev = pq.read_table(d / "events.parquet", columns=["seq", "kind", "topic", "partition", "offset"]).to_pandas()
    appended = ev[ev.kind == "RecordAppended"]
    by_seq = dict(zip(appended.seq, zip(appended.topic, appended.partition, appended.offset, strict=True),
                      strict=True))
    m = json.loads((d / "manifest.json").read_text())
    n = 0
    for t in m["topics"]:
        b = pq.read_table(d / t["batches"]).to_pandas()
        assert b.seq.notna().all(), t["batches"]
        for r in b.itertuples():
            for i in range(r.last_offset - r.base_offset + 1):
                assert by_seq[r.seq + i] == (t["name"], r.partition, r.base_offset + i), (t["batches"], r.base_offset)
        for _, part in b.groupby("partition"):
            assert part.seq.is_monotonic_increasing and part.seq.is_unique
        n += len(b)
    assert n > 100


def test_spark_reads_the_layouts_the_writer_writes():
    """kipviz.spark spells the sample contract again (as pyarrow schemas and Spark DDL): the same
    columns and types as the writer's, so a column added to one (like the batches' seq) is not
    forgotten in the other."""
    from kipviz.spark import schemas as spark_schemas
    from kipviz.spark.readers import _ddl_types
    for ours, written, ddl in ((spark_schemas.KAFKA, TOPIC, spark_schemas.KAFKA_DDL),
                               (spark_schemas.BATCHES, BATCH, spark_schemas.BATCHES_DDL),
                               (spark_schemas.REQUESTS, REQUEST, spark_schemas.REQUESTS_DDL),
                               (spark_schemas.EVENTS, EVENT, spark_schemas.EVENTS_DDL)):
        assert ours.equals(written), written.names
        assert list(_ddl_types(ddl)) == written.names


def test_bad_input_is_refused_clearly(tmp_path):
    with pytest.raises(KipvizError, match="unknown scenario"):
        generate("nope", tmp_path / "x")
    with pytest.raises(KipvizError, match="--records"):
        generate("regular_eos", tmp_path / "x", records=0)
    with pytest.raises(KipvizError, match="fixed scenario"):
        generate("kip516.stale_read", tmp_path / "x", records=10)
    with pytest.raises(KipvizError, match="--seed"):
        generate("regular_eos", tmp_path / "x", seed=-1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(KipvizError, match="not empty"):
        generate("regular_eos", mine, records=10)
    assert (mine / "notes.txt").read_text() == "keep me"


def test_cli_sample_data(tmp_path, capsys):
    assert main(["sample-data", "--scenario", "kip516", "--records", "300", "--seed", "2", "-o",
                 str(tmp_path / "k"), "--no-progress"]) == 0
    assert "300 records" in capsys.readouterr().out
    assert json.loads((tmp_path / "k" / "manifest.json").read_text())["seed"] == 2
    assert main(["sample-data", "--scenario", "nope", "-o", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kipviz: error: unknown scenario") and err.count("\n") == 1
    assert main(["sample-data", "-o", str(tmp_path / "n")]) == 2
    assert main(["sample-data", "--all", "--records", "5", "-o", str(tmp_path / "n")]) == 2
