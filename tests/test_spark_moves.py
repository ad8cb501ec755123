"""kipviz.spark.moves splits share-record keys as kipviz.eos reads them (group ids with "/", topics
whose names start alike), and the exactly-once check reads source headers by their exact text."""
from __future__ import annotations

import pyarrow as pa
import pytest

from kipviz import spark as ks
from kipviz.spark import schemas
from kipviz.spark.moves import share_moves
from kipviz.spark.tables import run_tables
from kipviz.workloads import run_share_eos
from tests.spark_session import spark  # noqa: F401 - the shared session fixture

pytestmark = pytest.mark.spark


def _events(spark, keys):  # noqa: F811
    rows = [{"seq": i, "time_ms": 0, "kind": "StateChanged", "machine": "share-record", "key": k,
             "from_state": "AVAILABLE", "to_state": "ACQUIRED", "cause": "fetch"} for i, k in enumerate(keys)]
    rows.append({"seq": 99, "time_ms": 0, "kind": "StateChanged", "machine": "transaction", "key": "sg/in-0@1",
                 "from_state": "Empty", "to_state": "Ongoing", "cause": "x"})
    cols = {f.name: [r.get(f.name) for r in rows] for f in schemas.EVENTS}
    return spark.createDataFrame(pa.table(cols, schema=schemas.EVENTS))


def test_keys_split_into_group_topic_partition_offset(spark):  # noqa: F811
    ev = _events(spark, ["sg/in-0@5", "team/a/in-1-2@7", "sg/in-1-0@9", "sg/broken"])
    got = sorted((r["group"], r["topic"], r["partition"], r["offset"]) for r in share_moves(ev).collect()
                 if r["partition"] is not None)
    assert got == [("sg", "in", 0, 5), ("sg", "in-1", 0, 9), ("team/a", "in-1", 2, 7)]
    broken = [r for r in share_moves(ev).collect() if r["partition"] is None]
    assert len(broken) == 1 and broken[0]["offset"] is None          # kept, not dropped


def test_one_group_and_topic_leaves_out_topics_that_start_alike(spark):  # noqa: F811
    ev = _events(spark, ["sg/in-0@5", "sg/in-1-0@9", "sgx/in-0@6", "team/a/in-1-2@7"])
    assert [(r["partition"], r["offset"]) for r in share_moves(ev, group="sg", topic="in").collect()] == [(0, 5)]
    assert [(r["partition"], r["offset"]) for r in share_moves(ev, group="team/a", topic="in-1").collect()] \
        == [(2, 7)]


def test_a_source_header_spelled_otherwise_is_an_unknown_source(spark):  # noqa: F811
    """kipviz.eos compares the header's text: "in-00@3" names no record even though it parses to
    in-0@3; the Spark check must say the same."""
    run = run_share_eos(records=40, consumers=1, partitions=1, seed=2, batch=20)
    t = run_tables(run)
    out = t.topics["out"].to_pandas()
    b = t.batches["out"].to_pandas()
    assert run.check().ok
    # re-spell one committed output record's header in its batch: the batch bytes are rewritten
    from kipviz.records import read_batches, write_batch
    row = b[~b.is_control & b.is_transactional].iloc[0]
    batch = read_batches(row.batch)[0]
    rec = batch["records"][0]
    p, o = dict(rec["headers"])["kipviz-source"].decode().rsplit("-", 1)[1].split("@")
    rec["headers"] = [("kipviz-source", f"in-0{p}@{o}".encode())]
    b.at[row.name, "batch"] = write_batch(**batch)
    t.batches["out"] = pa.Table.from_pandas(b, schema=t.batches["out"].schema, preserve_index=False)
    res = ks.verify_eos(ks.readers.from_tables(spark, t))
    got = sorted((r["kind"], r["detail"]) for r in res.rows)
    assert got == [("ack-without-output", "ACKNOWLEDGED (txn-commit-accept) but no output visible to "
                    "read_committed: no output record at all"),
                   ("unknown-source", f"visible output names 'in-0{p}@{o}', which is no record of in known to "
                    "this run")]
    assert not res.ok and len(out)
