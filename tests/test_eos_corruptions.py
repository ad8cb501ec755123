"""Issue 21 item 1: every corruption of a clean share_eos sample's Parquet files is caught by
Spark's verify_eos and NAMED (the violation kind and the record or transaction), or -- when an
input the verdict depends on does not read -- the verdict is "cannot verify: N batches
unreadable" naming them; never "OK".

One small sample (kipviz sample-data --scenario share_eos --records 200 --seed 1, through the
library function) is generated once per session; each test corrupts a copy of it. The event-based
checker gets the cases that apply to events in tests/test_eos_checker.py."""
from __future__ import annotations

import shutil
import struct

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crc32c import crc32c

from kipviz import spark as ks
from kipviz.cli import main
from kipviz.records.batch import read_batches, write_batch
from kipviz.records.markers import write_control_batch
from kipviz.sampledata.generate import generate
from tests.spark_session import spark  # noqa: F401 - the shared session fixture

pytestmark = pytest.mark.spark
OUT_B = "batches/out.parquet"


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    d = tmp_path_factory.mktemp("share_eos") / "s"
    generate("share_eos", d, records=200, seed=1)
    return d


class Copy:
    """A copy of the sample whose batch files are edited as pandas frames (rows in file order)."""

    def __init__(self, src, dst):
        shutil.copytree(src, dst)
        self.dir = dst

    def frame(self, rel=OUT_B) -> pd.DataFrame:
        return pq.read_table(self.dir / rel).to_pandas()

    def save(self, df, rel=OUT_B) -> None:
        schema = pq.read_schema(self.dir / rel)
        pq.write_table(pa.Table.from_pandas(df.reset_index(drop=True), schema=schema, preserve_index=False),
                       self.dir / rel)

    def verify(self, spark):  # noqa: F811
        return ks.verify_eos(ks.read_samples(spark, self.dir), allowed_at_least_once=True)


@pytest.fixture
def copy(sample, tmp_path):
    return Copy(sample, tmp_path / "c")


# ---- batch surgery ------------------------------------------------------------------------------------
def rebase(data: bytes, base: int) -> bytes:
    """The batch at another base offset (BaseOffset is outside the CRC)."""
    return struct.pack(">q", base) + data[8:]


def recrc(data: bytes) -> bytes:
    """The batch with its CRC made right again (a writer that computes it over garbage)."""
    return data[:17] + struct.pack(">I", crc32c(data[21:])) + data[21:]


def insert(df, after: int, blob: bytes, **row) -> pd.DataFrame:
    """Insert batch `blob` after row `after` of the same partition; the partition's later batches
    move up by its record span (their bytes and rows rebased), as a log would hold it."""
    prev = df.loc[after]
    b = read_batches(blob)[0]
    n = b["last_offset_delta"] + 1
    base = prev.last_offset + 1
    later = (df.partition == prev.partition) & (df.base_offset > prev.base_offset)
    df = df.copy()
    df.loc[later, "batch"] = [rebase(x, o + n) for x, o in zip(df.loc[later, "batch"], df.loc[later, "base_offset"],
                                                               strict=True)]
    df.loc[later, "base_offset"] += n
    df.loc[later, "last_offset"] += n
    new = {"topic": prev.topic, "partition": prev.partition, "base_offset": base, "last_offset": base + n - 1,
           "producer_id": b["producer_id"], "producer_epoch": b["producer_epoch"],
           "is_transactional": b["is_transactional"], "is_control": b["is_control"],
           "batch": rebase(blob, base), "seq": prev.seq}
    new.update(row)
    return pd.concat([df.loc[:after], pd.DataFrame([new]), df.loc[after + 1:]], ignore_index=True)


def data_batch(records, pid=-1, epoch=-1, txn=False, **kw) -> bytes:
    return write_batch([{"key": r["key"], "value": r["value"], "headers": r["headers"], "timestamp": r["timestamp"],
                         "offset_delta": i} for i, r in enumerate(records)],
                       producer_id=pid, producer_epoch=epoch, is_transactional=txn, **kw)


def marker_of(df, i) -> str:
    return read_batches(df.loc[i, "batch"])[0]["records"][0]["control"]["type"]


def committed(df):
    """Row indexes of the data batches a later COMMIT of their producer ends, and that marker's."""
    out = []
    for i, r in df[~df.is_control].iterrows():
        nxt = df[(df.partition == r.partition) & (df.producer_id == r.producer_id) & df.is_control
                 & (df.base_offset > r.base_offset)]
        if len(nxt) and marker_of(df, nxt.index[0]) == "COMMIT":
            out.append((i, nxt.index[0]))
    return out


def mid_commit(df):
    """(data row, marker row) of a committed transaction whose producer's next marker on the
    partition is a COMMIT too."""
    def next_marker(m):
        later = df[(df.partition == df.loc[m, "partition"]) & (df.producer_id == df.loc[m, "producer_id"])
                   & df.is_control & (df.base_offset > df.loc[m, "base_offset"])].index
        return marker_of(df, later[0]) if len(later) else None
    return next((i, m) for i, m in committed(df) if next_marker(m) == "COMMIT")


def aborted_markers(df):
    return [i for i in df[df.is_control].index if marker_of(df, i) == "ABORT"]


def sources(blob) -> list[str]:
    return [dict(r["headers"])["kipviz-source"].decode() for r in read_batches(blob)[0]["records"]]


def names(res, kind) -> set:
    return {f"{r['topic']}-{r['partition']}@{r['offset']}" if r["topic"] else r["transaction"]
            for r in res.rows if r["kind"] == kind}


def failed(res):
    head = res.summary().splitlines()[0]
    assert not res.ok and head.endswith(": FAIL") and res.unreadable == [], res.summary()
    return res


# ---- the clean sample -----------------------------------------------------------------------------------
def test_the_clean_sample_verifies_ok_and_its_log_matches_its_markers(spark, copy):  # noqa: F811
    res = copy.verify(spark)
    assert res.ok and res.rows == [] and res.unreadable == [], res.summary()
    assert res.verdict == "OK"


def test_row_columns_that_lie_change_nothing_the_bytes_decide(spark, copy):  # noqa: F811
    """Producer id, epoch, flags and offsets are read from the batch bytes, not the file's columns."""
    df = copy.frame()
    df["producer_id"] = -1
    df["is_transactional"] = False
    df["is_control"] = ~df["is_control"]
    df["last_offset"] = df["base_offset"]
    copy.save(df)
    res = copy.verify(spark)
    assert res.ok, res.summary()


# ---- corruptions caught and named -------------------------------------------------------------------------
def test_dropped_committed_output(spark, copy):  # noqa: F811
    df = copy.frame()
    i, _ = committed(df)[0]
    gone = sources(df.loc[i, "batch"])
    copy.save(df.drop(index=i))
    res = failed(copy.verify(spark))
    assert names(res, "ack-without-output") == set(gone)


def test_duplicate_inside_the_same_committed_transaction(spark, copy):  # noqa: F811
    """(a) one output record copied into its own committed transaction: duplicate-in-transaction."""
    df = copy.frame()
    i, _ = committed(df)[1]
    b = read_batches(df.loc[i, "batch"])[0]
    dup = data_batch(b["records"][:1], b["producer_id"], b["producer_epoch"], True)
    copy.save(insert(df, i, dup))
    res = failed(copy.verify(spark))
    assert {r["kind"] for r in res.rows} == {"duplicate-in-transaction"}
    assert names(res, "duplicate-in-transaction") == {sources(df.loc[i, "batch"])[0]}
    assert len(res.rows[0]["outputs"]) == 2


@pytest.mark.parametrize("other_partition", [False, True])
def test_duplicate_in_another_transaction_or_partition(spark, copy, other_partition):  # noqa: F811
    df = copy.frame()
    i, _ = committed(df)[0]
    b = read_batches(df.loc[i, "batch"])[0]
    part = (df.loc[i, "partition"] + 1) % 4 if other_partition else df.loc[i, "partition"]
    last = df[df.partition == part].index[-1]
    df = insert(df, last, data_batch(b["records"], 4242, 0, True))
    df = insert(df, last + 1, write_control_batch("COMMIT", producer_id=4242, producer_epoch=0), is_control=True)
    copy.save(df)
    res = failed(copy.verify(spark))
    assert names(res, "duplicate-output") == set(sources(df.loc[i, "batch"]))
    # the copy's marker is in no transaction of the coordinator's log
    assert names(res, "marker-unexpected") == {f"producer 4242, epoch 0 out-{part}"}


def test_commit_marker_removed_mid_partition(spark, copy):  # noqa: F811
    """(b) the producer's next COMMIT then commits the records (each visible once), while
    __transaction_state says that transaction ended earlier: marker-missing, named."""
    df = copy.frame()
    i, m = mid_commit(df)
    pid, epoch, p = df.loc[m, "producer_id"], df.loc[m, "producer_epoch"], df.loc[m, "partition"]
    copy.save(df.drop(index=m))
    res = failed(copy.verify(spark))
    assert {r["kind"] for r in res.rows} == {"marker-missing"}, res.summary()
    (t,) = names(res, "marker-missing")
    assert t.endswith(f"(producer {pid}, epoch {epoch}) out-{p}") and t.startswith("sg-worker-")


def test_last_commit_removed(spark, copy):  # noqa: F811
    df = copy.frame()
    i, m = committed(df)[-1]
    copy.save(df.drop(index=m))
    res = failed(copy.verify(spark))
    assert names(res, "ack-without-output") == set(sources(df.loc[i, "batch"]))
    assert len(names(res, "marker-missing")) == 1


def _retype(df, m, to):
    b = read_batches(df.loc[m, "batch"])[0]
    df = df.copy()
    df.at[m, "batch"] = write_control_batch(to, producer_id=b["producer_id"], producer_epoch=b["producer_epoch"],
                                            base_offset=b["base_offset"],
                                            coordinator_epoch=b["records"][0]["control"]["coordinator_epoch"],
                                            timestamp=b["base_timestamp"])
    return df


def test_commit_marker_rewritten_as_abort(spark, copy):  # noqa: F811
    df = copy.frame()
    i, m = committed(df)[0]
    copy.save(_retype(df, m, "ABORT"))
    res = failed(copy.verify(spark))
    assert names(res, "ack-without-output") == set(sources(df.loc[i, "batch"]))
    (t,) = names(res, "marker-mismatch")
    assert t.endswith(f"epoch {df.loc[m, 'producer_epoch']}) out-{df.loc[m, 'partition']}")


def test_aborted_transaction_marker_written_as_commit_in_one_partition(spark, copy):  # noqa: F811
    df = copy.frame()
    m = aborted_markers(df)[0]
    copy.save(_retype(df, m, "COMMIT"))
    res = failed(copy.verify(spark))
    (t,) = names(res, "marker-mismatch")
    assert t.endswith(f"epoch {df.loc[m, 'producer_epoch']}) out-{df.loc[m, 'partition']}")
    # its records become visible: each is now output twice, or output of a record never acknowledged
    assert {r["kind"] for r in res.rows} - {"marker-mismatch"} <= {"duplicate-output", "output-without-ack"}


def test_aborted_record_copied_into_committed_output(spark, copy):  # noqa: F811
    df = copy.frame()
    m = aborted_markers(df)[0]
    ab = df[(df.partition == df.loc[m, "partition"]) & (df.producer_id == df.loc[m, "producer_id"]) & ~df.is_control
            & (df.base_offset < df.loc[m, "base_offset"])].index[-1]
    rec = read_batches(df.loc[ab, "batch"])[0]["records"][:1]
    i, _ = committed(df)[0]
    b = read_batches(df.loc[i, "batch"])[0]
    copy.save(insert(df, i, data_batch(rec, b["producer_id"], b["producer_epoch"], True)))
    res = failed(copy.verify(spark))
    src = dict(rec[0]["headers"])["kipviz-source"].decode()
    assert src in names(res, "duplicate-output") | names(res, "output-without-ack")


def test_rewritten_source_header(spark, copy):  # noqa: F811
    df = copy.frame()
    i, _ = committed(df)[0]
    b = read_batches(df.loc[i, "batch"])[0]
    recs = [dict(r) for r in b["records"]]
    was = dict(recs[0]["headers"])["kipviz-source"].decode()
    other = sources(df.loc[committed(df)[1][0], "batch"])[0]
    recs[0]["headers"] = [("kipviz-source", other.encode())]
    df.at[i, "batch"] = data_batch(recs, b["producer_id"], b["producer_epoch"], True, base_offset=b["base_offset"])
    copy.save(df)
    res = failed(copy.verify(spark))
    assert names(res, "ack-without-output") == {was}
    assert names(res, "duplicate-output") == {other}


def test_headerless_records_under_columns_that_claim_an_aborted_producer(spark, copy):  # noqa: F811
    """(e) the file's columns say transactional and of an aborted producer; the bytes say a plain
    batch of records without the source header: visible, unattributed."""
    df = copy.frame()
    m = aborted_markers(df)[0]
    ab = df[(df.partition == df.loc[m, "partition"]) & (df.producer_id == df.loc[m, "producer_id"]) & ~df.is_control
            & (df.base_offset < df.loc[m, "base_offset"])].index[-1]
    blob = write_batch([{"key": None, "value": b"x", "offset_delta": k, "timestamp": 0} for k in range(500)],
                       compression="gzip")
    df = insert(df, ab, blob, producer_id=df.loc[ab, "producer_id"], producer_epoch=df.loc[ab, "producer_epoch"],
                is_transactional=True)
    copy.save(df)
    res = failed(copy.verify(spark))
    assert {r["kind"] for r in res.rows} == {"unattributed-output"} and len(res.rows) == 500


def test_ack_moved_to_another_record(spark, copy):  # noqa: F811
    """The events: one record's ACKNOWLEDGED move rewritten onto another record's key."""
    rel = "events.parquet"
    ev = copy.frame(rel)
    acks = ev[(ev.kind == "StateChanged") & (ev.machine == "share-record") & (ev.to_state == "ACKNOWLEDGED")]
    a, b = acks.index[0], acks.index[-1]
    frm, to = ev.loc[a, "key"].split("/", 1)[1], ev.loc[b, "key"].split("/", 1)[1]
    ev.at[a, "key"] = ev.loc[b, "key"]
    copy.save(ev, rel)
    res = failed(copy.verify(spark))
    assert names(res, "lost") == {frm} and names(res, "terminal-twice") == {to}
    assert frm in names(res, "output-without-ack")


# ---- inputs that do not read: "cannot verify", never OK ---------------------------------------------------
def _cannot(res, n, where):
    assert not res.ok and res.verdict.startswith(f"cannot verify: {n} batches"), res.summary()
    assert [(u["dataset"], u["partition"], u["offset"]) for u in res.unreadable] == where
    return res


def test_byte_flipped_committed_batch(spark, copy):  # noqa: F811
    """(d) the decode error is the verdict, not "no output record at all"."""
    df = copy.frame()
    i, _ = committed(df)[0]
    data = bytearray(df.loc[i, "batch"])
    data[70] ^= 0xFF
    df.at[i, "batch"] = bytes(data)
    copy.save(df)
    res = _cannot(copy.verify(spark), 1, [("batches/out", df.loc[i, "partition"], df.loc[i, "base_offset"])])
    assert "CRC" in res.unreadable[0]["error"]


def test_decompression_bomb_in_place_of_an_output_batch(spark, copy):  # noqa: F811
    """(c) the error no longer hides in logs.errors."""
    df = copy.frame()
    i, _ = committed(df)[0]
    b = read_batches(df.loc[i, "batch"])[0]
    bomb = write_batch([{"key": None, "value": bytes(70 << 20), "headers": [], "offset_delta": 0, "timestamp": 0}],
                       compression="gzip", producer_id=b["producer_id"], producer_epoch=b["producer_epoch"],
                       is_transactional=True, base_offset=b["base_offset"], last_offset_delta=b["last_offset_delta"])
    assert len(bomb) < 200_000
    df.at[i, "batch"] = bomb
    copy.save(df)
    res = _cannot(copy.verify(spark), 1, [("batches/out", df.loc[i, "partition"], df.loc[i, "base_offset"])])
    assert "decompress" in res.unreadable[0]["error"] or "MiB" in res.unreadable[0]["error"]


def test_record_count_that_differs_from_the_records(spark, copy):  # noqa: F811
    df = copy.frame()
    i, _ = committed(df)[0]
    data = bytearray(df.loc[i, "batch"])
    data[57:61] = struct.pack(">i", struct.unpack(">i", data[57:61])[0] + 1)
    df.at[i, "batch"] = recrc(bytes(data))
    copy.save(df)
    _cannot(copy.verify(spark), 1, [("batches/out", df.loc[i, "partition"], df.loc[i, "base_offset"])])


def test_junk_batches_marker_and_input(spark, copy):  # noqa: F811
    """Junk bytes (once a CAST_INVALID_INPUT stack trace) in an output data batch, a marker and an
    input batch: each named."""
    df = copy.frame()
    i, m = committed(df)[0]
    df.at[i, "batch"] = b"junk"
    df.at[m, "batch"] = b"\0" * 61
    copy.save(df)
    din = copy.frame("batches/in.parquet")
    din.at[0, "batch"] = b"junk"
    copy.save(din, "batches/in.parquet")
    res = _cannot(copy.verify(spark), 3, sorted([("batches/in", din.loc[0, "partition"], din.loc[0, "base_offset"]),
                                                 ("batches/out", df.loc[i, "partition"], df.loc[i, "base_offset"]),
                                                 ("batches/out", df.loc[m, "partition"], df.loc[m, "base_offset"])],
                                                key=lambda t: tuple(map(str, t))))
    assert res.verdict == "cannot verify: 3 batches unreadable"


def test_garbled_transaction_log_record(spark, copy):  # noqa: F811
    rel = "topics/internal/transaction_state.parquet"
    t = copy.frame(rel)
    t.at[5, "value"] = b"\x00\x01\xff"
    copy.save(t, rel)
    res = copy.verify(spark)
    assert not res.ok and res.verdict == "cannot verify: 1 __transaction_state records unreadable"
    assert [(u["dataset"], u["partition"], u["offset"]) for u in res.unreadable] == [
        ("__transaction_state", t.loc[5, "partition"], t.loc[5, "offset"])]


def test_missing_output_batches_file(spark, copy):  # noqa: F811
    """Without the output's batches nothing says which output committed: a dataset unreadable."""
    (copy.dir / OUT_B).unlink()
    res = copy.verify(spark)
    assert not res.ok and res.verdict == "cannot verify: 1 datasets unreadable", res.summary()
    assert [(u["dataset"], u["partition"]) for u in res.unreadable] == [(OUT_B, None)]


def test_cli_verdicts(spark, copy, capsys):  # noqa: F811
    assert main(["verify-eos", str(copy.dir)]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": OK (0 violation(s), 0 at-least-once window(s))")
    df = copy.frame()
    i, m = committed(df)[0]
    data = bytearray(df.loc[i, "batch"])
    data[70] ^= 0xFF
    df.at[i, "batch"] = bytes(data)
    copy.save(df.drop(index=committed(df)[1][1]))
    assert main(["verify-eos", str(copy.dir)]) == 1
    out = capsys.readouterr().out.splitlines()
    # the verdict first, then the unreadable input, then the violations
    assert ": cannot verify: 1 batches unreadable (" in out[0]
    unreadable = [x for x in out if x.startswith("[unreadable]")]
    assert unreadable[0].startswith(f"[unreadable] batches/out partition {df.loc[i, 'partition']} offset "
                                    f"{df.loc[i, 'base_offset']}: ")
    assert any(x.startswith("[violation] marker-missing transaction sg-worker-") for x in out)
    assert out.index(unreadable[0]) < min(i for i, x in enumerate(out) if x.startswith("[violation]"))
