"""kipviz.records.skim (the no-payload fast path of the Spark batch decoder) against read_batches:
the same offsets, timestamps and source headers for every plain batch, None (never an error) for
anything else, and batches_arrow's rows the same with and without it."""
from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.errors import DecodeError
from kipviz.records import read_batches, write_batch
from kipviz.records.markers import write_control_batch
from kipviz.records.skim import skim_batch
from kipviz.spark import decode
from tests.test_records_batch import CODECS, body, fix_crc, hand_batch

KEY = b"kipviz-source"
_values = st.one_of(st.none(), st.binary(max_size=10), st.sampled_from([b"in-0@5", b"\xff\xfe", b""]))
_header = st.tuples(st.sampled_from(["kipviz-source", "kipviz-sourc", "kipviz-sourcex", "other", "", "é"]),
                    _values)
_record = st.fixed_dictionaries({
    "key": st.one_of(st.none(), st.binary(max_size=80)), "value": st.one_of(st.none(), st.binary(max_size=300)),
    "headers": st.lists(_header, max_size=3), "timestamp": st.integers(0, 2**41)})
_batch = st.fixed_dictionaries({
    "base_offset": st.integers(0, 2**62), "compression": st.sampled_from(CODECS),
    "timestamp_type": st.sampled_from(["CreateTime", "LogAppendTime"]), "is_transactional": st.booleans(),
    "producer_id": st.integers(-1, 2**63 - 1), "producer_epoch": st.integers(-1, 2**15 - 1)})


def _expected(data: bytes):
    """(offsets, timestamps, first source header as text) per record, from read_batches."""
    (b,) = read_batches(data, strict=True)
    out = []
    for r in b["records"]:
        hit = next((v for k, v in r["headers"] if k == KEY.decode()), None)
        try:
            hit = hit.decode() if hit is not None else None
        except UnicodeDecodeError:
            hit = None
        out.append((r["offset"], r["timestamp"], hit))
    return b, out


def _skimmed(got):
    h, ods, tsds, vals = got
    lat = h[5] & 0x08
    return [(h[0] + od, h[8] if lat else h[7] + td, v) for od, td, v in zip(ods, tsds, vals, strict=True)]


@settings(max_examples=300)
@given(st.lists(_record, max_size=150), _batch)
def test_a_plain_batch_skims_to_what_read_batches_reads(records, hdr):
    data = write_batch(records, **hdr)
    got = skim_batch(data, KEY)
    if hdr["compression"] != "none":
        assert got is None                       # compressed: left to read_batches
        return
    b, want = _expected(data)
    assert got is not None
    assert _skimmed(got) == want
    assert (got[0][9], got[0][10]) == (b["producer_id"], b["producer_epoch"])


@settings(max_examples=400)
@given(st.lists(_record, min_size=1, max_size=6), st.data())
def test_damaged_bytes_skim_to_none_or_to_what_read_batches_reads(records, data):
    good = write_batch(records, base_offset=7)
    at = data.draw(st.integers(21, len(good) - 1))       # attributes onwards: header and records
    b = bytearray(good)
    b[at] = data.draw(st.integers(0, 255))
    bad = fix_crc(bytes(b))                      # a valid CRC, so that the walk itself is tested
    try:
        want = _expected(bad)[1]
    except DecodeError:
        want = None
    got = skim_batch(bad, KEY)
    if got is not None:
        assert _skimmed(got) == want
    for cut in (bad[:-1], bad + b"\x00", b[:60]):
        assert skim_batch(bytes(cut), KEY) is None


def test_what_the_skim_leaves_to_read_batches():
    plain = write_batch([{"key": b"k", "value": b"v", "headers": [("kipviz-source", b"in-0@1")]}])
    assert skim_batch(plain, KEY) is not None
    flipped = bytearray(plain)
    flipped[-1] ^= 1
    assert skim_batch(bytes(flipped), KEY) is None                                   # CRC mismatch
    assert skim_batch(write_control_batch("COMMIT", producer_id=5, producer_epoch=1), KEY) is None
    assert skim_batch(plain + plain, KEY) is None                                    # two batches
    assert skim_batch(hand_batch([body(b"k", b"v")], count=2), KEY) is None         # fewer records
    assert skim_batch(hand_batch([body(b"k", b"v") + b"\x00"]), KEY) is None        # trailing byte


def test_batches_arrow_rows_are_the_same_with_and_without_payload():
    rows = [write_batch([{"key": b"k%d" % i, "value": b"v", "headers": [("kipviz-source", b"in-0@%d" % i)]}
                         for i in range(70)], base_offset=100, is_transactional=True, producer_id=9,
                        producer_epoch=2),
            write_control_batch("COMMIT", base_offset=170, producer_id=9, producer_epoch=2),
            write_batch([{"key": None, "value": b"x", "headers": [("kipviz-source", b"\xff")]}], base_offset=171,
                        compression="zstd"),
            write_batch([{"key": None, "value": b"x", "headers": [("kipviz-source", None)]}], base_offset=172,
                        timestamp_type="LogAppendTime"),
            b"\x00\x01garbage",
            None,
            write_batch([{"key": b"k", "value": None}], base_offset=174)]
    rb = pa.RecordBatch.from_pydict({"topic": ["out"] * len(rows), "partition": [3] * len(rows),
                                     "base_offset": [100, 170, 171, 172, 173, 173, 174], "batch": rows})
    with_payload = decode.batches_arrow(rb, payload=True)
    without = decode.batches_arrow(rb, payload=False)
    assert without.schema.names == [n for n in with_payload.schema.names if n not in ("key", "value", "headers")]
    assert without.equals(with_payload.select(without.schema.names))
    got = without.to_pylist()
    assert [r["source"] for r in got[:2]] == ["in-0@0", "in-0@1"] and got[70]["control_type"] == "COMMIT"
    assert [r["error_kind"] for r in got if r["error"]] == ["corrupt", "corrupt"]
    assert got[71]["source"] is None and got[72]["source"] is None
