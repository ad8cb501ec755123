"""Bad data in a run's files is counted, never dropped silently and never a failed job: a column
of the wrong type, values that do not convert, junk record batches -- each an error row with its
reason, the other rows read as usual (kipviz.spark.readers)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crc32c import crc32c

from kipviz import spark as ks
from kipviz.spark import txnview
from kipviz.spark.report import analyze
from tests.spark_session import spark  # noqa: F401 - the shared session fixture

pytestmark = pytest.mark.spark
SHARE = Path(__file__).resolve().parent.parent / "sample_data" / "share_eos"


def _rewrite(path: Path, change) -> list[dict]:
    """Rewrite a Parquet file through change(rows) -> (rows, schema); the rows as read before."""
    t = pq.read_table(path)
    before = t.to_pylist()
    rows, schema = change([dict(r) for r in before], t.schema)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return before


def _errors(src, dataset: str) -> list[dict]:
    return [r.asDict() for r in src.errors.filter(f"dataset = '{dataset}'").collect()]


def test_wrong_types_and_values_become_error_rows_and_the_rest_reads(spark, tmp_path):  # noqa: F811
    d = tmp_path / "run"
    shutil.copytree(SHARE, d)
    txn = "topics/internal/transaction_state.parquet"

    def partition_as_text(rows, schema):       # a string partition column, every fifth value not a number
        for i, r in enumerate(rows):
            r["partition"] = "abc" if i % 5 == 0 else str(r["partition"])
            del r["timestamp"]                 # and no timestamp column at all
        fields = [pa.field("partition", pa.string()) if f.name == "partition" else f for f in schema
                  if f.name != "timestamp"]
        return rows, pa.schema(fields)
    before = _rewrite(d / txn, partition_as_text)

    def batch_as_int(rows, schema):            # batches whose `batch` column holds numbers
        for r in rows:
            r["batch"] = len(r["batch"])
        return rows, pa.schema([pa.field("batch", pa.int64()) if f.name == "batch" else f for f in schema])
    out_batches = _rewrite(d / "batches/out.parquet", batch_as_int)

    def value_as_text(rows, schema):           # a string value column: Spark converts it to binary
        for r in rows:
            r["value"] = None if r["value"] is None else r["value"].hex()
        return rows, pa.schema([pa.field("value", pa.string()) if f.name == "value" else f for f in schema])
    _rewrite(d / "topics/out.parquet", value_as_text)

    src = ks.read_samples(spark, d)
    bad = _errors(src, txn)
    kinds = sorted({(r["error_kind"], r["error_path"]) for r in bad})
    assert kinds == [("bad-value", "partition"), ("missing-column", "timestamp")]
    values = [r for r in bad if r["error_kind"] == "bad-value"]
    assert sorted(r["offset"] for r in values) == sorted(r["offset"] for i, r in enumerate(before) if i % 5 == 0)
    assert values[0]["error"] == "column 'partition': the value (string) is not a int"
    kept = src.topic("__transaction_state")
    assert kept.count() + len(values) == len(before)          # each row either read or counted
    assert {r["partition"] for r in kept.collect()} == {r["partition"] for i, r in enumerate(before) if i % 5}

    batch = _errors(src, "batches/out.parquet")
    assert [r for r in batch if r["error_kind"] == "wrong-type"] == [
        {"dataset": "batches/out.parquet", "partition": None, "offset": None, "error_kind": "wrong-type",
         "error": "column 'batch' is bigint, expected binary; read as nulls", "error_path": "batch"}]
    nulls = [r for r in batch if r["error_kind"] == "corrupt"]
    assert len(nulls) == len(out_batches) and {r["error"] for r in nulls} == {"null batch"}
    assert src.batches_of("out").count() == 0

    assert _errors(src, "topics/out.parquet") == []          # string hex digits convert to binary
    assert src.topic("out").filter("value is not null").count() > 0

    logs = ks.decode_all(src)                                # the analyses run on what read
    assert logs.errors.filter("error_kind = 'bad-value'").count() == len(values)
    rep = analyze(src, plot=False)
    assert f"bad-value: {len(values)}" in rep.summary() and f"corrupt: {len(nulls)}" in rep.summary()


def _junk(rows: list[dict]) -> tuple[list[dict], dict]:
    """Junk in three of every four `batch` values, another topic (or none) in half the rest; what
    each should be reported as."""
    why = {}
    for i, r in enumerate(rows):
        b = r["batch"]
        if i % 4 == 0:
            r["batch"] = b"junk"
            why[r["base_offset"], r["partition"]] = "4 bytes, shorter than a record batch header (61)"
        elif i % 4 == 1:
            r["batch"] = b[:16] + b"\x01" + b[17:]
            why[r["base_offset"], r["partition"]] = "magic 1, not 2 (a v2 record batch)"
        elif i % 4 == 2:
            r["batch"] = b + b"\x00" * 3
            why[r["base_offset"], r["partition"]] = (f"the batch length field says {len(b)} bytes, the value "
                                                     f"holds {len(b) + 3}")
        elif i % 8 == 3:
            r["topic"] = None if i % 16 == 3 else "in"
            why[r["base_offset"], r["partition"]] = f"a batch of topic {r['topic'] or 'null'} in the batches of 'out'"
    return rows, why


def test_junk_batches_are_error_rows_and_never_reach_the_batch_view(spark, tmp_path):  # noqa: F811
    d = tmp_path / "run"
    shutil.copytree(SHARE, d)
    why = {}

    def junk(rows, schema):
        rows, w = _junk(rows)
        why.update(w)
        return rows, schema
    before = _rewrite(d / "batches/out.parquet", junk)
    src = ks.read_samples(spark, d)
    bad = _errors(src, "batches/out.parquet")
    assert {(r["offset"], r["partition"]): r["error"] for r in bad} == why
    assert {r["error_kind"] for r in bad} == {"corrupt"} and {r["error_path"] for r in bad} == {"batch", "topic"}
    assert src.batches_of("out").count() + len(bad) == len(before)
    view = txnview.batch_view(src.batches_of("out")).collect()          # no CAST_INVALID_INPUT
    assert len(view) == len(before) - len(bad)


def _with_base_timestamp(batch: bytes, ts: int) -> bytes:
    """The batch with BaseTimestamp (bytes 27..34) set and its CRC-32C (bytes 17..20) made right."""
    b = bytearray(batch)
    struct.pack_into(">q", b, 27, ts)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def test_a_batch_with_no_timestamp_has_a_batch_view(spark, tmp_path):  # noqa: F811
    d = tmp_path / "run"
    shutil.copytree(SHARE, d)

    def no_timestamp(rows, schema):            # Kafka's RecordBatch.NO_TIMESTAMP
        rows[0]["batch"] = _with_base_timestamp(rows[0]["batch"], -1)
        return rows, schema
    _rewrite(d / "batches/out.parquet", no_timestamp)
    src = ks.read_samples(spark, d)
    assert _errors(src, "batches/out.parquet") == []
    assert len(txnview.batch_view(src.batches_of("out")).collect()) == pq.read_metadata(d / "batches/out.parquet") \
        .num_rows


def test_a_kafka_frame_with_values_that_do_not_convert(spark):  # noqa: F811
    rows = [("k", "v", "t", "1", 10), ("k", "v", "t", "x", 11), ("k", "v", "t", "99999999999", 12)]
    df = spark.createDataFrame(rows, "key string, value string, topic string, partition string, offset long")
    src = ks.from_kafka_frame(spark, df, ["t"])
    assert [(r["partition"], r["offset"]) for r in src.topic("t").collect()] == [(1, 10)]
    bad = {(r["offset"], r["error_kind"], r["error_path"]) for r in src.errors.collect()}
    assert {(11, "bad-value", "partition"), (12, "bad-value", "partition")} <= bad
    assert (None, "missing-column", "timestamp") in bad
