"""kipviz.records.skim_column (the Spark no-payload decoder's column-at-once walk) against the
per-batch path it stands in for: for every batch it takes, exactly skim_batch's offsets, timestamps
and source headers, or read_batches's COMMIT / ABORT markers; whatever it leaves, batches_arrow
still reads one batch at a time, so its rows, in their order, are those of the per-batch path."""
from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.errors import DecodeError
from kipviz.records import read_batches, write_batch
from kipviz.records import skim_column as sc
from kipviz.records.markers import write_control_batch
from kipviz.records.skim import skim_batch
from kipviz.spark import decode
from tests.test_records_batch import body, fix_crc, hand_batch
from tests.test_records_skim import KEY, _batch, _record

_marker = st.fixed_dictionaries({
    "marker": st.sampled_from(["COMMIT", "ABORT"]), "producer_id": st.integers(-1, 2**40),
    "producer_epoch": st.integers(-1, 2**15 - 1), "coordinator_epoch": st.integers(-2**31, 2**31 - 1),
    "base_offset": st.integers(0, 2**40), "timestamp": st.integers(0, 2**41),
    "timestamp_type": st.sampled_from(["CreateTime", "LogAppendTime"])})


def _odd_control(key: bytes | None, value: bytes | None, headers=()) -> bytes:
    """A control batch whose one record has this key and value (other types, sizes, versions)."""
    return hand_batch([body(key, value, headers)], attributes=0x30, pid=4, epoch=0)


_odd = st.builds(_odd_control,
                 st.one_of(st.none(), st.binary(max_size=6),
                           st.builds(struct.pack, st.just(">hh"), st.integers(-2, 2), st.integers(-1, 7))),
                 st.one_of(st.none(), st.binary(max_size=8),
                           st.builds(struct.pack, st.just(">hi"), st.integers(-2, 2), st.integers(-5, 5))),
                 st.sampled_from([(), (("kipviz-source", b"in-0@1"),)]))


def _column(rows):
    return pa.array(rows, pa.binary())


def _check(arr: pa.Array) -> None:
    """skim_column's answer for each batch it took equals the per-batch decoders'."""
    got = sc.skim_column(arr, KEY, min_active=1)
    vals, ctl_types, epochs = got.values.to_pylist(), got.control_type.to_pylist(), got.coordinator_epoch.to_pylist()
    j = at = 0
    for i, data in enumerate(arr.to_pylist()):
        if not got.ok[i]:
            continue
        n = int(got.counts[j])
        (b,) = read_batches(data, strict=True)
        head = (b["base_offset"], b["producer_id"], b["producer_epoch"], b["is_control"])
        assert (got.base_offset[j], got.producer_id[j], got.producer_epoch[j], got.is_control[j]) == head
        lat = b["timestamp_type"] == "LogAppendTime"
        assert bool(got.attributes[j] & 0x08) == lat
        recs = [(got.base_offset[j] + got.offset_delta[at + k],
                 b["max_timestamp"] if lat else b["base_timestamp"] + got.timestamp_delta[at + k])
                for k in range(n)]
        assert recs == [(r["offset"], r["timestamp"]) for r in b["records"]]
        if b["is_control"]:
            assert ctl_types[at:at + n] == [r["control"]["type"] for r in b["records"]]
            assert epochs[at:at + n] == [r["control"]["coordinator_epoch"] for r in b["records"]]
            assert vals[at:at + n] == [None] * n
        else:
            assert vals[at:at + n] == skim_batch(data, KEY)[3]
            assert ctl_types[at:at + n] == [None] * n
        j += 1
        at += n
    assert j == len(got.counts) and at == len(vals)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.lists(_record, max_size=40), _batch), _marker, _odd), max_size=12))
def test_each_batch_it_takes_reads_as_the_per_batch_decoders_read_it(items):
    rows = [write_control_batch(**x) if isinstance(x, dict) else x if isinstance(x, bytes)
            else write_batch(x[0], **x[1]) for x in items]
    arr = _column(rows)
    got = sc.skim_column(arr, KEY, min_active=1)
    for i, data in enumerate(rows):           # what it takes: every plain uncompressed batch and marker
        if skim_batch(data, KEY) is not None or _marker_batch(data):
            assert got.ok[i], i
    _check(arr)


def _marker_batch(data: bytes) -> bool:
    """A control batch of COMMIT / ABORT records as kipviz writes them (4-byte key, 6-byte value,
    no headers)."""
    if not data[22] & 0x20:
        return False
    try:
        recs = read_batches(data, strict=True)[0]["records"]
    except DecodeError:
        return False
    return all(r["control"]["type"] in ("COMMIT", "ABORT") and not r["headers"] and len(r["key"]) == 4
               and len(r["value"] or b"") == 6 for r in recs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.lists(_record, min_size=1, max_size=5), _marker), min_size=1, max_size=5), st.data())
def test_damaged_batches_are_left_or_read_as_the_per_batch_decoders_read_them(items, data):
    rows = []
    for x in items:
        good = write_control_batch(**x) if isinstance(x, dict) else write_batch(x, base_offset=7)
        b = bytearray(good)
        b[data.draw(st.integers(21, len(good) - 1))] = data.draw(st.integers(0, 255))
        rows.append(fix_crc(bytes(b)) if data.draw(st.booleans()) else bytes(b))
    arr = _column(rows + [rows[0][:-1], rows[0] + b"\x00", rows[0][:60]])
    got = sc.skim_column(arr, KEY, min_active=1)
    assert not got.ok[-3:].any()                 # truncated, trailing byte, no whole header
    for i, d in enumerate(rows):
        if got.ok[i] and not d[22] & 0x20:
            assert skim_batch(d, KEY) is not None
    _check(arr)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.lists(_record, max_size=30), _batch), _marker, _odd,
                          st.sampled_from([b"\x00\x01garbage", b"", None])), max_size=10),
       st.integers(1, 4))
def test_batches_arrow_rows_are_the_per_batch_rows_in_order(items, min_active):
    rows = [x if x is None or isinstance(x, bytes) else write_control_batch(**x) if isinstance(x, dict)
            else write_batch(x[0], **x[1]) for x in items]
    rb = pa.RecordBatch.from_pydict({"topic": ["out"] * len(rows), "partition": list(range(len(rows))),
                                     "base_offset": [5] * len(rows), "batch": pa.array(rows, pa.binary())})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sc, "MIN_ACTIVE", min_active)
        fast = decode.batches_arrow(rb, payload=False)
    assert fast.equals(decode._each_batch(rb, False))


def test_few_batches_left_walking_go_back_to_the_caller():
    long = write_batch([{"key": None, "value": b"v", "headers": [("kipviz-source", b"in-0@%d" % i)]}
                        for i in range(50)])
    short = write_batch([{"key": None, "value": b"v"}])
    arr = pa.array([short] * 40 + [long], pa.binary())
    got = sc.skim_column(arr, KEY)                    # the long one walks on alone after record 1
    assert got.ok[:40].all() and not got.ok[40]
    assert sc.skim_column(arr, KEY, min_active=1).ok.all()


def test_what_it_leaves_and_why():
    plain = write_batch([{"key": b"k", "value": b"v", "headers": [("kipviz-source", b"in-0@1")]}])
    flipped = bytearray(plain)
    flipped[-1] ^= 1
    commit = write_control_batch("COMMIT", producer_id=5, producer_epoch=1, coordinator_epoch=3)
    rows = [plain, bytes(flipped), plain + plain, write_batch([{"key": b"k", "value": b"v"}], compression="gzip"),
            hand_batch([body(b"k", b"v")], count=2), commit,
            _odd_control(struct.pack(">hh", 0, 2), b""),              # LEADER_CHANGE: not a marker
            _odd_control(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 1), (("h", b"x"),)),
            hand_batch([body(b"k", b"v", ts_delta=2**60)]),           # a timestamp delta of 9 bytes
            None, b"short"]
    got = sc.skim_column(pa.array(rows, pa.binary()), KEY, min_active=1)
    assert got.ok.tolist() == [True, False, False, False, False, True, False, False, False, False, False]
    assert got.control_type.to_pylist() == [None, "COMMIT"] and got.coordinator_epoch.to_pylist() == [None, 3]
    assert got.values.to_pylist() == ["in-0@1", None]


def test_a_value_that_is_not_utf8_is_null():
    rows = [write_batch([{"key": None, "value": b"v", "headers": [("kipviz-source", v)]}])
            for v in (b"in-0@1", b"\xed\xa0\x80", b"\xc0\x80", "é".encode())]
    got = sc.skim_column(pa.array(rows, pa.binary()), KEY, min_active=1)
    assert got.values.to_pylist() == ["in-0@1", None, None, "é"]
    assert got.values.to_pylist() == [skim_batch(r, KEY)[3][0] for r in rows]


def test_a_sliced_column_and_an_empty_one():
    rows = [write_batch([{"key": None, "value": b"v", "headers": [("kipviz-source", b"in-0@%d" % i)]}])
            for i in range(6)]
    got = sc.skim_column(pa.array(rows, pa.binary()).slice(2, 3), KEY, min_active=1)
    assert got.values.to_pylist() == ["in-0@2", "in-0@3", "in-0@4"]
    empty = sc.skim_column(pa.array([], pa.binary()), KEY)
    assert len(empty.ok) == 0 and len(empty.values) == 0
    with pytest.raises(TypeError):
        sc.skim_column(pa.array(["x"]), KEY)


def test_a_marker_cut_short_at_the_end_of_the_column_is_left_without_reading_past_it():
    from tests.test_records_batch import zz
    # a 4-byte key with 1 byte left, which would also read as a 6-byte value's length (7 bytes in
    # all: the fewest a record takes)
    cut = hand_batch([b"\x00" + zz(1000) + b"\x00" + zz(4) + zz(6)], attributes=0x30)
    got = sc.skim_column(pa.array([write_control_batch("ABORT"), cut], pa.binary()), KEY, min_active=1)
    assert got.ok.tolist() == [True, False] and got.control_type.to_pylist() == ["ABORT"]


@pytest.mark.parametrize("payload", [True, False])
def test_an_offset_or_timestamp_outside_int64_is_an_error_row_not_a_dead_job(payload):
    """BaseOffset / BaseTimestamp plus a record's delta past int64: that batch's error row, the
    others decode (a log-append-time batch takes MaxTimestamp, so its deltas cannot overflow)."""
    top = 2**63 - 10
    rows = [hand_batch([body(b"k", b"v", ts_delta=100)], base_ts=5),
            hand_batch([body(b"k", b"v", ts_delta=100)], base_ts=top),
            hand_batch([body(b"k", b"v", offset_delta=100)], base_offset=top),
            hand_batch([body(b"k", b"v", ts_delta=-100)], base_ts=-top),
            hand_batch([body(b"k", b"v", ts_delta=100)], attributes=0x08, base_ts=top, max_ts=7)]
    rb = pa.RecordBatch.from_pydict({"topic": ["out"] * 5, "partition": [0] * 5, "base_offset": [0] * 5,
                                     "batch": pa.array(rows, pa.binary())})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sc, "MIN_ACTIVE", 1)
        got = decode.batches_arrow(rb, payload=payload).to_pylist()
    assert [r["timestamp_ms"] for r in got] == [105, None, None, None, 7]
    assert [bool(r["error"]) for r in got] == [False, True, True, True, False]
    assert "outside int64" in got[1]["error"] and got[2]["error_path"] == "batch[0].records[0].offset"
    assert not sc.skim_column(pa.array(rows, pa.binary()), KEY, min_active=1).ok[1:4].any()
