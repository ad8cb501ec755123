"""Record batch v2: round trips, CRC, control markers, annotations, bad input, and kafka-python."""
from __future__ import annotations

import gzip
import random
import struct
import sys
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.errors import DecodeError, EncodeError, KipvizError
from kipviz.records import (
    annotate_batches,
    control_key,
    end_txn_marker_value,
    read_batches,
    write_batch,
    write_control_batch,
)
from kipviz.records import batch as batch_mod
from kipviz.records import compression as comp

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
HEADER_KEYS = ("base_offset", "partition_leader_epoch", "last_offset_delta", "base_timestamp",
               "max_timestamp", "producer_id", "producer_epoch", "base_sequence")


# ---- an independent CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) --------------------
def crc32c_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def fix_crc(batch: bytes | bytearray, at: int = 0) -> bytes:
    """Recompute the CRC of the batch starting at `at` (after a deliberate edit)."""
    b = bytearray(batch)
    (length,) = struct.unpack_from(">i", b, at + 8)
    end = at + 12 + length
    struct.pack_into(">I", b, at + 17, crc32c_bitwise(bytes(b[at + 21:end])))
    return bytes(b)


def zz(v: int) -> bytes:
    """zigzag varint, written independently of kipviz"""
    u = (v << 1) ^ (v >> 63)
    u &= (1 << 64) - 1
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def hand_batch(record_bodies: list[bytes], *, base_offset=0, leader_epoch=-1, attributes=0,
               last_offset_delta=0, base_ts=0, max_ts=0, pid=-1, epoch=-1, seq=-1, count=None,
               crc=None) -> bytes:
    """A batch laid out by hand from DefaultRecordBatch.java's layout: 61-byte header, then length-prefixed records."""
    recs = b"".join(zz(len(r)) + r for r in record_bodies)
    after_crc = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_ts, max_ts, pid, epoch,
                            seq, len(record_bodies) if count is None else count) + recs
    c = crc32c_bitwise(after_crc) if crc is None else crc
    return struct.pack(">qiibI", base_offset, 49 + len(recs), leader_epoch, 2, c) + after_crc


def body(key, value, headers=(), ts_delta=0, offset_delta=0, attrs=0) -> bytes:
    out = bytes([attrs]) + zz(ts_delta) + zz(offset_delta)
    for blob in (key, value):
        out += zz(-1) if blob is None else zz(len(blob)) + blob
    out += zz(len(headers))
    for hk, hv in headers:
        hk = hk.encode()
        out += zz(len(hk)) + hk + (zz(-1) if hv is None else zz(len(hv)) + hv)
    return out


# ---- strategies ------------------------------------------------------------------------------
blob = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
                   st.one_of(st.none(), st.binary(max_size=12)))
record = st.fixed_dictionaries({
    "key": blob, "value": blob, "headers": st.lists(header, max_size=3),
    "timestamp": st.integers(0, 2**41),
})
batch_header = st.fixed_dictionaries({
    "base_offset": st.integers(0, 2**62),
    "partition_leader_epoch": st.integers(-1, 2**31 - 1),
    "compression": st.sampled_from(CODECS),
    "timestamp_type": st.sampled_from(["CreateTime", "LogAppendTime"]),
    "is_transactional": st.booleans(),
    "producer_id": st.integers(-1, 2**63 - 1),
    "producer_epoch": st.integers(-1, 2**15 - 1),
    "base_sequence": st.integers(-1, 2**31 - 1),
})


def plain(records):
    return [(r["key"], r["value"], [tuple(h) for h in r["headers"]]) for r in records]


def assert_covers(spans, data: bytes):
    spans = sorted(spans, key=lambda s: s.start)
    pos = 0
    for s in spans:
        assert s.start == pos, f"gap or overlap at {pos}: {s}"
        assert s.end > s.start, s
        pos = s.end
    assert pos == len(data)


# ---- round trips -----------------------------------------------------------------------------
@given(st.lists(record, max_size=12), batch_header)
def test_round_trip_property(records, hdr):
    data = write_batch(records, **hdr)
    [b] = read_batches(data)
    assert b["magic"] == 2 and b["crc_valid"]
    assert b["compression"] == hdr["compression"]
    assert b["records_count"] == len(records) == len(b["records"])
    assert b["is_transactional"] == hdr["is_transactional"] and not b["is_control"]
    assert b["timestamp_type"] == hdr["timestamp_type"]
    for k in ("base_offset", "partition_leader_epoch", "producer_id", "producer_epoch", "base_sequence"):
        assert b[k] == hdr[k]
    assert plain(b["records"]) == plain(records)
    base_ts = records[0]["timestamp"] if records else -1
    assert b["base_timestamp"] == base_ts
    assert b["max_timestamp"] == max((r["timestamp"] for r in records), default=-1)
    for j, (got, want) in enumerate(zip(b["records"], records, strict=True)):
        assert got["offset"] == hdr["base_offset"] + j and got["offset_delta"] == j
        assert got["timestamp_delta"] == want["timestamp"] - base_ts
        if hdr["timestamp_type"] == "CreateTime":
            assert got["timestamp"] == want["timestamp"]
        else:  # LogAppendTime: every record reports the batch's max timestamp, as Java does
            assert got["timestamp"] == b["max_timestamp"]
    # the dict read back writes the very same bytes (compression is deterministic here)
    assert write_batch(**b) == data
    assert_covers(annotate_batches(data), data)


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_many_records(codec):
    rng = random.Random(7)
    records = [{"key": None if i % 5 == 0 else b"key-%d" % i,
                "value": None if i % 7 == 0 else bytes(rng.randrange(4) for _ in range(rng.randrange(300))),
                "headers": [("trace", b"%d" % i)] if i % 3 == 0 else [],
                "timestamp": 1_700_000_000_000 + rng.randrange(-5000, 5000)} for i in range(500)]
    data = write_batch(records, base_offset=1_000_000, compression=codec)
    [b] = read_batches(data)
    assert plain(b["records"]) == plain(records)
    assert [r["timestamp"] for r in b["records"]] == [r["timestamp"] for r in records]
    assert [r["offset"] for r in b["records"]] == list(range(1_000_000, 1_000_500))
    assert b["attributes"] & 7 == CODECS.index(codec)
    assert write_batch(**b) == data


def test_several_batches_and_negative_timestamp_delta():
    a = write_batch([{"key": b"a", "value": b"1", "timestamp": 500},
                     {"key": b"b", "value": b"2", "timestamp": 100}], base_offset=10)
    c = write_batch([(b"k", b"v")], base_offset=12, compression="gzip")  # (key, value) tuple form
    bs = read_batches(a + c)
    assert len(bs) == 2 and bs.partial is None and bs.consumed == len(a + c)
    assert [r["timestamp_delta"] for r in bs[0]["records"]] == [0, -400]
    assert bs[0]["max_timestamp"] == 500
    assert bs[1]["records"][0]["offset"] == 12


def test_transactional_producer_fields():
    data = write_batch([{"key": b"k", "value": b"v", "timestamp": 5}], is_transactional=True,
                       producer_id=4242, producer_epoch=7, base_sequence=99, base_offset=3)
    [b] = read_batches(data)
    assert (b["producer_id"], b["producer_epoch"], b["base_sequence"]) == (4242, 7, 99)
    assert b["attributes"] == 0x10 and b["is_transactional"] and not b["is_control"]


# ---- CRC -------------------------------------------------------------------------------------
def test_crc_known_answer_by_hand():
    assert crc32c_bitwise(b"123456789") == 0xE3069283  # the CRC-32C check value
    ts = 1_700_000_000_000
    want = hand_batch([body(b"k", b"v")], base_ts=ts, max_ts=ts)
    assert want.hex() == ("0000000000000000" "0000003a" "ffffffff" "02" "e99b8dd8" "0000" "00000000"
                          "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff"
                          "00000001" "10" "00" "00" "00" "02" "6b" "02" "76" "00")
    assert write_batch([{"key": b"k", "value": b"v", "timestamp": ts}]) == want
    [b] = read_batches(want)
    assert b["crc"] == 0xE99B8DD8 and b["crc_valid"]


def test_crc_covers_attributes_to_end_but_not_leader_epoch():
    data = write_batch([{"key": b"k", "value": b"value", "timestamp": 1}])
    epoch_edit = bytearray(data)
    epoch_edit[12:16] = struct.pack(">i", 77)  # PartitionLeaderEpoch is outside the CRC
    [b] = read_batches(bytes(epoch_edit))
    assert b["crc_valid"] and b["partition_leader_epoch"] == 77


def test_crc_mismatch_is_an_error_unless_verify_crc_false():
    first = write_batch([{"key": b"a", "value": b"b", "timestamp": 1}])
    data = bytearray(write_batch([{"key": b"k", "value": b"value", "timestamp": 1}]))
    data[-3] ^= 0xFF  # inside the value
    data = first + bytes(data)
    with pytest.raises(DecodeError) as e:
        read_batches(data)
    assert e.value.offset == len(first) + 17 and e.value.path == "batch[1].CRC"
    assert "CRC" in str(e.value)
    bs = read_batches(data, verify_crc=False)
    assert bs[0]["crc_valid"] and not bs[1]["crc_valid"]
    assert bs[1]["records"][0]["value"] != b"value"
    spans = annotate_batches(data)  # annotating never fails on a CRC: it shows the mismatch
    assert_covers(spans, data)
    crc_span = next(s for s in spans if s.path == "batch[1].CRC")
    assert "mismatch" in crc_span.wire_type


# ---- control batches -------------------------------------------------------------------------
@pytest.mark.parametrize("marker,type_id", [("COMMIT", 1), ("ABORT", 0)])
def test_control_batch_layout(marker, type_id):
    data = write_control_batch(marker, producer_id=4242, producer_epoch=7, coordinator_epoch=12,
                               base_offset=500, timestamp=1_700_000_000_123)
    key = struct.pack(">hh", 0, type_id)
    value = struct.pack(">hi", 0, 12)
    assert len(key) == 4 and len(value) == 6
    want = hand_batch([body(key, value)], base_offset=500, attributes=0x30, base_ts=1_700_000_000_123,
                      max_ts=1_700_000_000_123, pid=4242, epoch=7, seq=-1)
    assert data == want
    assert control_key(marker) == key and end_txn_marker_value(12) == value
    [b] = read_batches(data)
    assert b["is_control"] and b["is_transactional"] and b["base_sequence"] == -1
    assert b["compression"] == "none" and b["records_count"] == 1
    [r] = b["records"]
    assert r["key"] == key and r["value"] == value
    assert r["control"] == {"type": marker, "type_id": type_id, "version": 0, "coordinator_epoch": 12,
                            "value_version": 0}
    assert_covers(annotate_batches(data), data)
    spans = {s.path: s for s in annotate_batches(data)}
    assert spans["batch[0].records[0].key.type"].value == type_id
    assert spans["batch[0].records[0].value.coordinator_epoch"].value == 12


def test_malformed_control_records():
    short_key = hand_batch([body(b"\x00\x00\x01", b"\x00\x00\x00\x00\x00\x01")], attributes=0x30)
    with pytest.raises(DecodeError, match="4 bytes") as e:
        read_batches(short_key)
    assert e.value.path == "batch[0].records[0].key" and e.value.offset == 61 + 1
    short_value = hand_batch([body(b"\x00\x00\x00\x01", b"\x00\x00\x00")], attributes=0x30)
    with pytest.raises(DecodeError, match="6 bytes"):
        read_batches(short_value)
    other = hand_batch([body(b"\x00\x00\x00\x02", b"leader-change")], attributes=0x20)
    assert read_batches(other)[0]["records"][0]["control"]["type"] == "LEADER_CHANGE"
    with pytest.raises(EncodeError):
        write_control_batch("LEADER_CHANGE")


# ---- annotations -----------------------------------------------------------------------------
def test_annotate_paths_and_roles():
    data = write_batch([{"key": None, "value": b"hello", "headers": [("h", None), ("k", b"x")],
                         "timestamp": 3}, {"key": b"k", "value": b"", "timestamp": 9}])
    spans = annotate_batches(data)
    assert_covers(spans, data)
    by = {s.path: s for s in spans}
    for wire in ("BaseOffset", "Length", "PartitionLeaderEpoch", "Magic", "CRC", "Attributes",
                 "LastOffsetDelta", "BaseTimestamp", "MaxTimestamp", "ProducerId", "ProducerEpoch",
                 "BaseSequence", "RecordsCount"):
        assert f"batch[0].{wire}" in by
    assert by["batch[0].RecordsCount"].role == "count" and by["batch[0].Length"].role == "length"
    r0 = "batch[0].records[0]"
    assert by[r0 + ".key_length"].value == -1 and r0 + ".key" not in by
    assert by[r0 + ".value"].value == b"hello" and by[r0 + ".value_length"].role == "length"
    assert by[r0 + ".headers_count"].value == 2
    assert by[r0 + ".headers[0].key"].value == "h" and by[r0 + ".headers[0].value_length"].value == -1
    assert by[r0 + ".headers[1].value"].value == b"x"
    assert by["batch[0].records[1].timestamp_delta"].value == 6
    assert by["batch[0].records[1].value_length"].value == 0


@pytest.mark.parametrize("codec", CODECS[1:])
def test_annotate_compressed_blob_is_one_span(codec):
    data = write_batch([{"key": b"k", "value": b"v" * 100, "timestamp": 1}] * 3, compression=codec)
    spans = annotate_batches(data)
    assert_covers(spans, data)
    blob = spans[-1]
    assert (blob.path, blob.role, blob.wire_type) == ("batch[0].records", "value", f"{codec} records")
    assert (blob.start, blob.end) == (61, len(data))


@given(st.lists(st.tuples(st.lists(record, max_size=4), batch_header), min_size=1, max_size=4),
       st.integers(0, 60))
def test_annotate_covers_every_byte_exactly_once(batches, cut):
    data = b"".join(write_batch(recs, **hdr) for recs, hdr in batches)
    assert_covers(annotate_batches(data), data)
    if len(batches) > 1 and cut:  # a partial trailing batch is one "unknown" span
        trimmed = data[:-cut]
        spans = annotate_batches(trimmed)
        assert_covers(spans, trimmed)
        assert spans[-1].role == "unknown" and spans[-1].wire_type == "partial batch"


# ---- partial trailing batch and bad input ----------------------------------------------------
def test_partial_trailing_batch_stops_and_is_reported():
    a = write_batch([{"key": b"a", "value": b"1", "timestamp": 1}])
    b = write_batch([{"key": b"b", "value": b"2", "timestamp": 2}], base_offset=1)
    for cut in (1, 30, len(b) - 5, len(b) - 11):
        bs = read_batches(a + b[:-cut])
        assert len(bs) == 1 and bs.consumed == len(a)
        assert bs.partial["index"] == 1 and bs.partial["offset"] == len(a)
        assert bs.partial["available"] == len(b) - cut
        assert bs.partial["needed"] in (len(b), None)
        with pytest.raises(DecodeError, match="truncated") as e:
            read_batches(a + b[:-cut], strict=True)
        assert e.value.path.startswith("batch[1]")
    assert read_batches(a + b).partial is None


def test_truncated_first_batch_is_an_error():
    data = write_batch([{"key": b"k", "value": b"v", "timestamp": 1}])
    for cut in (1, 10, len(data) - 12, len(data) - 3):
        with pytest.raises(DecodeError, match="truncated") as e:
            read_batches(data[:-cut])
        assert e.value.path in ("batch[0].Length", "batch[0]")
    assert read_batches(b"") == []


def expect_error(data: bytes, path: str | None = None, offset: int | None = None, match: str | None = None):
    with pytest.raises(DecodeError) as e:
        read_batches(data)
    if path is not None:
        assert e.value.path == path, e.value
    if offset is not None:
        assert e.value.offset == offset, e.value
    if match is not None:
        assert match in str(e.value), e.value
    with pytest.raises(DecodeError) as e2:  # annotate reports the same problem
        annotate_batches(data)
    assert (e2.value.path, e2.value.offset) == (e.value.path, e.value.offset)
    return e.value


def test_bad_lengths():
    good = hand_batch([body(b"k", b"v")])
    neg = bytearray(good)
    neg[8:12] = struct.pack(">i", -5)
    expect_error(bytes(neg), "batch[0].Length", 8, "less than")
    small = bytearray(good)
    small[8:12] = struct.pack(">i", 48)
    expect_error(bytes(small), "batch[0].Length", 8)
    expect_error(hand_batch([body(b"k", b"v")[:-1] + b"\x00\x00"]), "batch[0].records[0].length", 61)
    rec = body(b"k", b"v")
    # rec: attributes, timestamp_delta, offset_delta, key_length, key...; data[61] is its length
    expect_error(hand_batch([rec[:3] + zz(-2) + rec[4:]]), "batch[0].records[0].key_length", 65, "negative")
    expect_error(hand_batch([rec[:3] + zz(30) + rec[4:]]), "batch[0].records[0].key", 66, "runs past")
    expect_error(hand_batch([rec[:-1] + zz(-1)]), "batch[0].records[0].headers_count", 61 + 1 + 7)
    bad_hkey = body(b"k", b"v")[:-1] + zz(1) + zz(-1) + zz(-1)
    expect_error(hand_batch([bad_hkey]), "batch[0].records[0].headers[0].key_length", match="null")
    # a record whose length varint is negative
    b = hand_batch([rec])
    b = b[:61] + zz(-3) + b[62:]
    expect_error(fix_crc(b), "batch[0].records[0].length", 61, "negative")


def test_varint_over_its_limit():
    rec = body(b"k", b"v")
    six_bytes = b"\x80\x80\x80\x80\x80\x00"  # 6-byte varint: over the 5-byte limit of an int32
    expect_error(hand_batch([rec[:2] + six_bytes + rec[3:]]), "batch[0].records[0].offset_delta",
                 61 + 1 + 2, "varint")
    eleven = b"\x80" * 10 + b"\x00"  # 11-byte varlong timestamp delta
    expect_error(hand_batch([rec[:1] + eleven + rec[2:]]), "batch[0].records[0].timestamp_delta",
                 61 + 1 + 1, "varlong")


def test_record_count_mismatch_and_magic_and_codec():
    recs = [body(b"a", b"1", offset_delta=0), body(b"b", b"2", offset_delta=1)]
    expect_error(hand_batch(recs, count=3), "batch[0].records[2]", match="RecordsCount says 3")
    expect_error(hand_batch(recs, count=1), "batch[0].RecordsCount", match="bytes left after")
    expect_error(hand_batch(recs, count=-1), "batch[0].RecordsCount", 57, "negative")
    expect_error(hand_batch(recs, attributes=5), "batch[0].Attributes", 21, "codec 5")
    legacy = bytearray(hand_batch(recs))
    legacy[16] = 1
    expect_error(bytes(legacy), "batch[0].Magic", 16, "magic 1")
    with pytest.raises(DecodeError):
        read_batches("not bytes")


def test_errors_inside_compressed_records_point_at_the_blob():
    good = write_batch([{"key": b"k", "value": b"v", "timestamp": 1}])
    short = good[61:-1]  # drop the headers count: the record is one byte short
    for codec in CODECS[1:]:
        data = compressed_batch(codec, short, 1)
        e = expect_error(data, "batch[0].records[0].length", 61)
        assert "decompressed" in str(e)
        garbage = fix_crc(data[:61] + b"\x00garbage!" + data[70:])
        with pytest.raises(DecodeError) as e:
            read_batches(garbage)
        assert e.value.offset == 61 and e.value.path == "batch[0].records"


def compressed_batch(codec: str, payload_records: bytes, count: int) -> bytes:
    blob = comp.compress(codec, payload_records)
    b = bytearray(hand_batch([], attributes=CODECS.index(codec), count=count)[:61] + blob)
    b[8:12] = struct.pack(">i", 49 + len(blob))
    return fix_crc(b)


@pytest.mark.parametrize("codec", CODECS[1:])
def test_decompression_bomb_is_capped(codec):
    rec = body(None, b"\x00" * 200_000)
    data = compressed_batch(codec, zz(len(rec)) + rec, 1)
    assert len(data) < 20_000
    assert read_batches(data)[0]["records"][0]["value"] == b"\x00" * 200_000
    with pytest.raises(DecodeError, match="bomb") as e:
        read_batches(data, max_decompressed=100_000)
    assert e.value.offset == 61 and e.value.path == "batch[0].records"


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_default_cap_is_64_mib(codec):
    zeros = bytes(comp.MAX_DECOMPRESSED + 1024)
    blob = gzip.compress(zeros, 1, mtime=0) if codec == "gzip" else comp.compress(codec, zeros)
    b = bytearray(hand_batch([], attributes=CODECS.index(codec), count=1)[:61] + blob)
    b[8:12] = struct.pack(">i", 49 + len(blob))
    with pytest.raises(DecodeError, match="bomb"):
        read_batches(fix_crc(b))


def test_large_but_legitimate_payload_grows_the_buffer():
    value = b"abc" * 1_000_000  # 3 MB, compresses to very little: several buffer sizes are tried
    for codec in ("lz4", "zstd", "snappy", "gzip"):
        data = write_batch([{"key": None, "value": value, "timestamp": 0}], compression=codec)
        assert read_batches(data)[0]["records"][0]["value"] == value


def test_snappy_raw_and_xerial_both_read():
    rec = body(b"k", b"snappy!" * 50)
    raw_records = zz(len(rec)) + rec
    import cramjam
    raw = bytes(cramjam.snappy.compress_raw(raw_records))
    b = bytearray(hand_batch([], attributes=2, count=1)[:61] + raw)
    b[8:12] = struct.pack(">i", 49 + len(raw))
    [got] = read_batches(fix_crc(b))
    assert got["records"][0]["value"] == b"snappy!" * 50
    xerial = comp.compress("snappy", raw_records)
    assert xerial[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    assert comp.decompress(2, xerial) == raw_records


def test_lz4_blocks_are_independent_as_java_requires():
    blob = comp.compress("lz4", b"x" * 300_000)
    assert blob[:4] == b"\x04\x22\x4d\x18"
    flg = blob[4]
    assert flg >> 6 == 1 and flg & 0x20, "version 01 and block-independence bit"


def test_missing_cramjam_names_the_package(monkeypatch):
    data = write_batch([{"key": b"k", "value": b"v", "timestamp": 1}], compression="zstd")
    monkeypatch.setattr(comp, "_cramjam", None)
    monkeypatch.setitem(sys.modules, "cramjam", None)  # import cramjam -> ImportError
    with pytest.raises(DecodeError, match="pip install cramjam") as e:
        read_batches(data)
    assert e.value.path == "batch[0].records" and e.value.offset == 61
    with pytest.raises(EncodeError, match="pip install cramjam"):
        write_batch([{"key": b"k", "value": b"v"}], compression="lz4")
    # gzip and none need nothing beyond the standard library
    assert read_batches(write_batch([{"key": b"k", "value": b"v"}], compression="gzip"))


def test_encode_errors():
    with pytest.raises(EncodeError):
        write_batch([{"key": "not bytes", "value": None}])
    with pytest.raises(EncodeError):
        write_batch([{"key": None, "value": None}], compression="brotli")
    with pytest.raises(EncodeError):
        write_batch([], producer_epoch=2**15)
    with pytest.raises(EncodeError):
        write_batch([], bogus=1)
    with pytest.raises(EncodeError):
        write_batch([{"key": None, "value": None, "headers": [(1, b"x")]}])


# ---- fuzz: nothing but kipviz errors ---------------------------------------------------------
def _sample_batches() -> list[bytes]:
    recs = [{"key": b"k%d" % i, "value": b"v" * (i * 7), "headers": [("h", b"x")] if i % 2 else [],
             "timestamp": 1000 + i} for i in range(6)]
    out = [write_batch(recs, compression=c) for c in CODECS]
    out.append(write_control_batch("COMMIT", producer_id=1, producer_epoch=0, coordinator_epoch=2))
    return out


SAMPLES = _sample_batches()


def _consistent(data: bytes, verify_crc: bool):
    """read_batches and annotate_batches agree: both fail, or both succeed on the same records."""
    try:
        got = read_batches(data, verify_crc=verify_crc)
    except KipvizError:
        got = None
    try:
        spans = annotate_batches(data)
        assert_covers(spans, data)
    except KipvizError:
        spans = None
    if verify_crc is False:
        assert (got is None) == (spans is None)
    return got


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data):
    _consistent(data, True)
    _consistent(data, False)


@settings(max_examples=400)
@given(st.sampled_from(range(len(SAMPLES))), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                       min_size=1, max_size=4),
       st.booleans(), st.integers(0, 3))
def test_fuzz_edits_of_valid_batches(which, edits, recrc, chop):
    data = bytearray(SAMPLES[which])
    for at, v in edits:
        data[at % len(data)] = v
    data = bytes(data)
    if recrc and len(data) >= 21 and struct.unpack_from(">i", data, 8)[0] == len(data) - 12:
        data = fix_crc(data)  # get past the CRC so the record parser sees the damage
    if chop:
        data = data[:-chop]
    _consistent(data, False)
    _consistent(data, True)


def test_fast_and_careful_readers_agree():
    rng = random.Random(3)
    for _ in range(300):
        recs = [{"key": rng.choice([None, rng.randbytes(rng.randrange(200))]),
                 "value": rng.choice([None, rng.randbytes(rng.randrange(300))]),
                 "headers": [(rng.choice(["a", "é", "key"]), rng.choice([None, b"", b"v" * rng.randrange(200)]))
                             for _ in range(rng.randrange(3))],
                 "timestamp": rng.randrange(-2**40, 2**40), "offset_delta": rng.randrange(-2**31, 2**31)}
                for _ in range(rng.randrange(1, 6))]
        data = write_batch(recs)
        rb = data[61:]
        fast = batch_mod._fast(rb, len(recs), 0, 0, None)
        careful = batch_mod._careful(rb, len(recs), (0, 0, None, "batch[0]", 61, None, False, None))
        assert fast == careful


# ---- cross-check with kafka-python -----------------------------------------------------------
try:
    import kafka.codec as kcodec
    import kafka.record.default_records as kdefault
    import kafka.record.memory_records as kafka_records
except ImportError:  # the rest of this file still runs; only the cross-checks need kafka-python
    kcodec = kdefault = kafka_records = None
needs_kafka_python = pytest.mark.skipif(kafka_records is None, reason="kafka-python is not installed")

KAFKA_CODEC = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.fixture
def kafka_codecs(monkeypatch):
    """kafka-python with snappy/lz4/zstd: its own libraries when installed, else shims over cramjam
    (kafka-python's framing code - xerial blocks for snappy - still runs; only the raw codec is swapped)."""
    import cramjam
    if not kcodec.has_snappy():
        shim = types.SimpleNamespace(compress=lambda b: bytes(cramjam.snappy.compress_raw(b)),
                                     decompress=lambda b: bytes(cramjam.snappy.decompress_raw(b)))
        monkeypatch.setattr(kcodec, "snappy", shim)
    if not kcodec.has_lz4():
        def lz4_encode(b):
            c = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
            c.compress(bytes(b))
            return bytes(c.finish())
        monkeypatch.setattr(kcodec, "lz4", types.SimpleNamespace())
        monkeypatch.setattr(kdefault, "lz4_encode", lz4_encode)
        monkeypatch.setattr(kdefault, "lz4_decode", lambda b: bytes(cramjam.lz4.decompress(bytes(b))))
    if not kcodec.has_zstd():
        monkeypatch.setattr(kcodec, "zstd", types.SimpleNamespace())
        monkeypatch.setattr(kdefault, "zstd_encode", lambda b: bytes(cramjam.zstd.compress(bytes(b))))
        monkeypatch.setattr(kdefault, "zstd_decode", lambda b: bytes(cramjam.zstd.decompress(bytes(b))))


def kafka_write(records, codec: str, **kw) -> bytes:
    b = kafka_records.MemoryRecordsBuilder(magic=2, compression_type=KAFKA_CODEC[codec], batch_size=1 << 24,
                                           **kw)
    for r in records:
        assert b.append(timestamp=r["timestamp"], key=r["key"], value=r["value"], headers=r["headers"])
    b.close()
    return bytes(b.buffer())


def kafka_read(data: bytes):
    out = []
    mr = kafka_records.MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        out.append((batch, list(batch)))
    return out


@needs_kafka_python
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_writes_kipviz_reads(codec, kafka_codecs):
    recs = [{"key": None if i % 4 == 0 else b"key-%d" % i, "value": b"value %d " % i * 20,
             "headers": [("h%d" % i, b"x"), ("n", None)] if i % 2 else [], "timestamp": 1_000 + 3 * i}
            for i in range(40)]
    data = kafka_write(recs, codec, offset=0, transactional=True, producer_id=77, producer_epoch=2,
                       base_sequence=5)
    [b] = read_batches(data)
    assert b["compression"] == codec and b["crc_valid"]
    assert (b["producer_id"], b["producer_epoch"], b["base_sequence"], b["is_transactional"]) == (77, 2, 5, True)
    assert plain(b["records"]) == plain(recs)
    assert [r["timestamp"] for r in b["records"]] == [r["timestamp"] for r in recs]
    assert_covers(annotate_batches(data), data)


@needs_kafka_python
@pytest.mark.parametrize("codec", CODECS)
def test_kipviz_writes_kafka_python_reads(codec, kafka_codecs):
    recs = [{"key": b"k%d" % i, "value": None if i == 3 else b"v" * i, "headers": [("a", b"1")] * (i % 3),
             "timestamp": 5_000 - i} for i in range(30)]
    data = write_batch(recs, base_offset=900, compression=codec, is_transactional=True, producer_id=9,
                       producer_epoch=1, base_sequence=0)
    data += write_control_batch("ABORT", producer_id=9, producer_epoch=1, coordinator_epoch=4, base_offset=930)
    [(batch, got), (ctrl, markers)] = kafka_read(data)
    assert batch.compression_type == KAFKA_CODEC[codec] and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 0)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (900 + i, r["timestamp"], r["key"], r["value"], r["headers"]) for i, r in enumerate(recs)]
    assert ctrl.is_control_batch and markers[0].abort and markers[0].offset == 930


@needs_kafka_python
@settings(max_examples=40)
@given(st.lists(record, min_size=1, max_size=8), st.sampled_from(["none", "gzip"]))
def test_kafka_python_cross_check_property(records, codec):
    """Random records both ways, with the codecs kafka-python has without extra libraries."""
    kdata = kafka_write(records, codec)
    [b] = read_batches(kdata)
    assert plain(b["records"]) == plain(records)
    assert [r["timestamp"] for r in b["records"]] == [r["timestamp"] for r in records]
    [(_, got)] = kafka_read(write_batch(records, compression=codec))
    assert [(r.key, r.value, [tuple(h) for h in r.headers], r.timestamp) for r in got] == [
        (r["key"], r["value"], [tuple(h) for h in r["headers"]], r["timestamp"]) for r in records]
