"""The record-batch v2 header (61 bytes, big-endian; clients/.../common/record/DefaultRecordBatch.java):
its layout and the one set of readers every caller uses (records' readers and skims, the broker's
log and Produce/Fetch handlers, the sample-data rows).

    read_header(buf, pos)      -> the 13 header values in HEADER_FIELDS order (HEADER.unpack_from)
    batch_size(raw)            -> LOG_OVERHEAD + Length (the bytes the batch says it spans)
    batch_bounds(raw)          -> (base offset, last offset)
    batch_summary(raw)         -> (base, last, producer id, producer epoch, transactional, control, LogAppendTime)
    is_transactional(raw)      -> a magic-2 batch with the transactional bit (False for anything shorter)
    restamp(raw, base, epoch[, max_timestamp, log_append_time]) -> the same batch with its base offset
                                  and partition leader epoch (and max timestamp and type) assigned in place
    with_producer(raw, pid, pos)  -> the batch at `pos` with another producer id, its CRC computed again
    split_batches(raw)         -> the batches of a Records field, each as bytes (a partial last one too)
    records_count(raw, pos)    -> the RecordsCount field
    header_field(raw, "attributes", pos) -> any one field, by its HEADER_KEYS name
    numpy_dtype(names)         -> the header as a packed numpy dtype (the columnar skim)
    OFFSET["magic"]            -> a field's byte offset in the header (16)

The one home of the layout: other modules read a header through these names, never its offsets."""
from __future__ import annotations

import struct

from .crc import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12          # BaseOffset + Length
MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
LENGTH = struct.Struct(">i")   # the Length field (bytes 8..11)

# (wire name, dict key, offset, size, wire type, span role)
HEADER_FIELDS = (
    ("BaseOffset", "base_offset", 0, 8, "int64", "value"),
    ("Length", "length", 8, 4, "int32", "length"),
    ("PartitionLeaderEpoch", "partition_leader_epoch", 12, 4, "int32", "value"),
    ("Magic", "magic", 16, 1, "int8", "value"),
    ("CRC", "crc", 17, 4, "uint32", "value"),
    ("Attributes", "attributes", 21, 2, "int16", "value"),
    ("LastOffsetDelta", "last_offset_delta", 23, 4, "int32", "value"),
    ("BaseTimestamp", "base_timestamp", 27, 8, "int64", "value"),
    ("MaxTimestamp", "max_timestamp", 35, 8, "int64", "value"),
    ("ProducerId", "producer_id", 43, 8, "int64", "value"),
    ("ProducerEpoch", "producer_epoch", 51, 2, "int16", "value"),
    ("BaseSequence", "base_sequence", 53, 4, "int32", "value"),
    ("RecordsCount", "records_count", 57, 4, "int32", "count"),
)
HEADER_KEYS = tuple(f[1] for f in HEADER_FIELDS)
_AT = {f[1]: f[2] for f in HEADER_FIELDS}
OFFSET = dict(_AT)         # dict key -> the field's byte offset in the header
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

COMPRESSION_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, CONTROL_MASK, DELETE_HORIZON_MASK = (
    0x07, 0x08, 0x10, 0x20, 0x40)

# narrower views of the same layout, for callers that need a few fields of many batches
_BOUNDS_BASE, _BOUNDS_DELTA = struct.Struct(">q"), struct.Struct(">i")
_SUMMARY = struct.Struct(">q13xhi8xqqh")   # base offset, attributes, last offset delta, max ts, pid, epoch
_ATTRS = struct.Struct(">h")
_EPOCH = struct.Struct(">i")
_MAX_TS = struct.Struct(">q")
_CRC = struct.Struct(">I")
assert (_AT["attributes"], _AT["last_offset_delta"], _AT["max_timestamp"], _AT["producer_id"],
        _AT["producer_epoch"]) == (8 + 13, 8 + 13 + 2, 8 + 13 + 2 + 4 + 8, 8 + 13 + 2 + 4 + 8 + 8,
                                   8 + 13 + 2 + 4 + 8 + 8 + 8)

read_header = HEADER.unpack_from


MAGIC_OFFSET = _AT["magic"]   # 16


def batch_size(raw, pos: int = 0) -> int:
    """The whole batch's size from its Length field (LOG_OVERHEAD + Length); needs 12 bytes."""
    return LOG_OVERHEAD + LENGTH.unpack_from(raw, pos + _AT["length"])[0]


def records_count(raw, pos: int = 0) -> int:
    """The RecordsCount field of the batch at `pos` (needs HEADER_SIZE bytes)."""
    return LENGTH.unpack_from(raw, pos + _AT["records_count"])[0]


_FIELD = {k: (off, struct.Struct({"int64": ">q", "int32": ">i", "int16": ">h", "int8": ">b", "uint32": ">I"}[w]))
          for _n, k, off, _s, w, _r in HEADER_FIELDS}


def header_field(raw, key: str, pos: int = 0) -> int:
    """One header field of the batch at `pos` by its dict key ("attributes", "base_timestamp",
    "last_offset_delta", ...: HEADER_KEYS), read at its offset with its wire type."""
    off, st = _FIELD[key]
    return st.unpack_from(raw, pos + off)[0]


def batch_bounds(raw, pos: int = 0) -> tuple[int, int]:
    """(base offset, last offset) of the batch at `pos`."""
    base, = _BOUNDS_BASE.unpack_from(raw, pos + _AT["base_offset"])
    delta, = _BOUNDS_DELTA.unpack_from(raw, pos + _AT["last_offset_delta"])
    return base, base + delta


def batch_summary(raw) -> tuple[int, int, int, int, bool, bool, bool]:
    """(base offset, last offset, producer id, producer epoch, transactional, control, LogAppendTime)."""
    base, attrs, delta, _max_ts, pid, epoch = _SUMMARY.unpack_from(raw, 0)
    return (base, base + delta, pid, epoch, bool(attrs & TRANSACTIONAL_MASK), bool(attrs & CONTROL_MASK),
            bool(attrs & TIMESTAMP_TYPE_MASK))


def is_transactional(raw) -> bool:
    """A magic-2 batch whose attributes carry the transactional bit (RequestUtils.hasTransactionalRecords
    reads the first batch); bytes too short to hold the attributes are not."""
    return (len(raw) > _AT["attributes"] + 1 and raw[_AT["magic"]] == 2
            and bool(_ATTRS.unpack_from(raw, _AT["attributes"])[0] & TRANSACTIONAL_MASK))


def restamp(raw: bytes, base_offset: int, leader_epoch: int, max_timestamp: int | None = None,
            log_append_time: bool = False) -> bytes:
    """The batch with its base offset and partition leader epoch replaced, as Kafka's LogValidator
    assigns them in place (neither is covered by the CRC). With `max_timestamp`, also
    DefaultRecordBatch.setMaxTimestamp: the timestamp type bit set for `log_append_time`
    (LogAppendTime) or cleared (CreateTime) and MaxTimestamp set, the CRC computed again only when
    either changes."""
    out = bytearray(raw)
    _BOUNDS_BASE.pack_into(out, _AT["base_offset"], base_offset)
    _EPOCH.pack_into(out, _AT["partition_leader_epoch"], leader_epoch)
    if max_timestamp is not None:
        attrs, = _ATTRS.unpack_from(out, _AT["attributes"])
        old, = _MAX_TS.unpack_from(out, _AT["max_timestamp"])
        new = (attrs | TIMESTAMP_TYPE_MASK) if log_append_time else (attrs & ~TIMESTAMP_TYPE_MASK)
        if new != attrs or old != max_timestamp:
            _ATTRS.pack_into(out, _AT["attributes"], new)
            _MAX_TS.pack_into(out, _AT["max_timestamp"], max_timestamp)
            _CRC.pack_into(out, _AT["crc"], crc32c(memoryview(out)[_AT["attributes"]:]))
    return bytes(out)


def split_batches(raw) -> list[bytes]:
    """The batches one after another in `raw` (a Records field), by their Length fields; a partial
    batch at the end (a Fetch answer cut at its byte limit) is the last item, shorter than it says."""
    out, pos = [], 0
    while len(raw) - pos >= LOG_OVERHEAD:
        n = max(batch_size(raw, pos), LOG_OVERHEAD)
        out.append(bytes(raw[pos:pos + n]))
        pos += n
    if pos < len(raw):
        out.append(bytes(raw[pos:]))
    return out


def with_producer(raw, producer_id: int, pos: int = 0) -> bytes:
    """The batch at `pos` (batch_size bytes) with its ProducerId replaced and its CRC computed again
    (the CRC covers Attributes to the end: DefaultRecordBatch.java, computeChecksum)."""
    out = bytearray(raw[pos:pos + batch_size(raw, pos)])
    struct.pack_into(">q", out, _AT["producer_id"], producer_id)
    _CRC.pack_into(out, _AT["crc"], crc32c(memoryview(out)[_AT["attributes"]:]))
    return bytes(out)


_NUMPY = {"int64": ">i8", "int32": ">i4", "int16": ">i2", "int8": "i1", "uint32": ">u4"}


def numpy_dtype(names: dict[str, str] | None = None):
    """The header as a packed numpy dtype, one field per HEADER_FIELDS entry (keys renamed by `names`)."""
    import numpy as np
    names = names or {}
    return np.dtype([(names.get(k, k), _NUMPY[w]) for _n, k, _o, _s, w, _r in HEADER_FIELDS])
