"""Record batch v2 (magic 2): read, write and annotate the bytes of Kafka's log format.

    read_batches(data) -> [batch, ...]       one dict per batch (a list subclass, see below)
    write_batch(records, **header) -> bytes  one batch, any compression, transactional or not
    annotate_batches(data) -> [Span, ...]    every byte covered exactly once

Batch layout (61-byte header, big-endian; `DefaultRecordBatch.java`):

    offset size  wire name (span paths)    dict key
    0      8     BaseOffset                base_offset
    8      4     Length                    length          bytes after this field
    12     4     PartitionLeaderEpoch      partition_leader_epoch
    16     1     Magic                     magic           always 2
    17     4     CRC                       crc             CRC-32C of bytes [21, end)
    21     2     Attributes                attributes      raw int16
    23     4     LastOffsetDelta           last_offset_delta
    27     8     BaseTimestamp             base_timestamp
    35     8     MaxTimestamp              max_timestamp
    43     8     ProducerId                producer_id
    51     2     ProducerEpoch             producer_epoch
    53     4     BaseSequence              base_sequence
    57     4     RecordsCount              records_count
    61     ...   records (one compressed blob when compression is on)

Naming: **dict keys are snake_case** (the right-hand column); **span and error paths use the wire
names** of the header fields ("batch[0].CRC", "batch[2].RecordsCount") and the dict keys for
record fields ("batch[0].records[3].value", "batch[0].records[3].headers[1].key").

Each batch dict also carries the attributes decoded: `compression` ("none", "gzip", "snappy",
"lz4", "zstd"), `timestamp_type` ("CreateTime" / "LogAppendTime"), `is_transactional`,
`is_control`, `has_delete_horizon` (bit 6: BaseTimestamp is then the delete horizon), and
`crc_valid`; plus `records`, a list of dicts:

    offset           base_offset + offset_delta
    offset_delta     as on the wire
    timestamp        ms: base_timestamp + timestamp_delta, or for LogAppendTime batches the
                     batch's max_timestamp (what Java's DefaultRecordBatch reports)
    timestamp_delta  as on the wire
    attributes       the record's int8 attributes (unused by Kafka, 0)
    key, value       bytes, or None for a null (length -1)
    headers          [(str, bytes | None), ...]; header keys are UTF-8 (bad bytes replaced,
                     as Java's String constructor does)
    control          control batches only: {"type": "COMMIT", "type_id", "version",
                     "coordinator_epoch", "value_version"} (see kipviz.records.control)

Partial trailing batch: a fetch response may end in a batch cut short by the broker's byte limit.
read_batches stops before it and reports it in the returned list's `.partial` attribute
(None, or {"index", "offset", "available", "needed"}), with `.consumed` the number of bytes in
complete batches. Two cases are errors instead: strict=True, and data whose *first* batch is
already incomplete (no complete batch at all: Kafka's consumer reports that too, as a record
batch too large for the fetch). A Length that is negative or shorter than the header is always
an error.

Errors: every problem is a kipviz DecodeError with the byte offset and path. A CRC mismatch is
an error at the CRC field ("batch[i].CRC") unless verify_crc=False, which keeps the batch with
crc_valid False. Decompressed data is capped at max_decompressed bytes per batch (64 MiB);
errors inside compressed records point at the blob's first byte and give the position inside
the decompressed data in the message.

Limits per call (the work one input can cause; docs/limits.md): besides the per-batch cap, one
call decompresses at most max_total_decompressed bytes in all (256 MiB) and builds at most
max_records records and record headers together (1,000,000; a header counts as one, since a
record of many 2-byte headers would otherwise be the cheaper bomb). Past a limit read_batches
raises RecordLimitError (a DecodeError naming the limit and the keyword that raises it), before
the batch's records are built: a batch's RecordsCount is checked against what is left.
"""
from __future__ import annotations

import struct

from ..codec.plan import Span
from ..codec.varint import read_uvarint, read_uvarlong, write_uvarint
from ..errors import DecodeError, EncodeError
from ..gcpause import gc_paused
from .compression import CODEC_NAMES, MAX_DECOMPRESSED, codec_id, compress, decompress
from .control import parse_control
from .crc import crc32c as _crc32c
from .header import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER,
    HEADER_FIELDS,
    HEADER_KEYS,
    HEADER_SIZE,
    LENGTH,
    LOG_OVERHEAD,
    MIN_LENGTH,
    OFFSET,
    TIMESTAMP_TYPE_MASK,
    TIMESTAMP_TYPES,
    TRANSACTIONAL_MASK,
)

__all__ = ["read_batches", "write_batch", "annotate_batches", "Batches", "RecordLimitError", "MAX_TOTAL_DECOMPRESSED", "MAX_RECORDS"]

# kit limits per read_batches/annotate_batches call (Kafka has no such total: a broker reads what
# one request or one segment holds, bounded by message.max.bytes / fetch.max.bytes)
MAX_TOTAL_DECOMPRESSED = 256 * 1024 * 1024
MAX_RECORDS = 1_000_000
MIN_RECORD_SIZE = 7   # length, attributes, timestamp delta, offset delta, key, value, header count

class Batches(list):
    """read_batches' result: a list of batch dicts, plus
    .partial  - None, or {"index", "offset", "available", "needed"} for a cut-off trailing batch
    .consumed - bytes taken by complete batches"""
    partial: dict | None = None
    consumed: int = 0


class RecordLimitError(DecodeError):
    """A read would pass one of the per-call limits (max_records, max_total_decompressed)."""


class _Bad(Exception):
    """The fast record reader gave up; the careful one says what is wrong and where."""


# ---- reading ---------------------------------------------------------------------------------
def read_batches(data, *, verify_crc: bool = True, strict: bool = False,
                 max_decompressed: int = MAX_DECOMPRESSED,
                 max_total_decompressed: int = MAX_TOTAL_DECOMPRESSED,
                 max_records: int = MAX_RECORDS) -> Batches:
    """Decode every v2 record batch in `data` (e.g. the Records field of a fetch response).

    Bounded work: at most max_decompressed bytes per batch, max_total_decompressed bytes in all
    and max_records records plus headers in all; past one of them, RecordLimitError.

    The cyclic garbage collector is paused while the records are built (the record dicts hold no
    cycles, and letting it rescan every new dict roughly halves the speed); it is re-enabled
    before returning, also on errors."""
    data = _as_bytes(data)
    with gc_paused():
        return _walk(data, verify_crc, strict, _Limits(max_decompressed, max_total_decompressed, max_records),
                     None)


def annotate_batches(data, *, strict: bool = False, max_decompressed: int = MAX_DECOMPRESSED,
                     max_total_decompressed: int = MAX_TOTAL_DECOMPRESSED,
                     max_records: int = MAX_RECORDS) -> list[Span]:
    """Spans covering every byte exactly once: each header field; each record field of uncompressed
    batches; one span (role "value", wire type e.g. "gzip records") per compressed blob; one span
    (role "unknown") for a partial trailing batch. CRC mismatches do not raise here: the CRC span's
    wire type says "mismatch" and the computed value."""
    spans: list[Span] = []
    _walk(_as_bytes(data), False, strict, _Limits(max_decompressed, max_total_decompressed, max_records), spans)
    return spans


def _as_bytes(data) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise DecodeError(f"record batches are bytes, not {type(data).__name__}", 0, "")


class _Limits:
    """What one call may still decompress and build."""
    __slots__ = ("per_batch", "total", "records", "bytes_left", "items_left")

    def __init__(self, per_batch: int, total: int, records: int):
        self.per_batch, self.total, self.records = per_batch, total, records
        self.bytes_left, self.items_left = total, records

    def decompress(self, cid: int, blob: bytes, offset: int, path: str) -> bytes:
        if self.bytes_left >= self.per_batch:
            rb = decompress(cid, blob, limit=self.per_batch, offset=offset, path=path)
        else:
            try:
                rb = decompress(cid, blob, limit=self.bytes_left, offset=offset, path=path)
            except DecodeError as e:
                if "bomb guard" not in e.reason:
                    raise
                raise RecordLimitError(
                    f"decompressing this batch passes the {self.total} bytes this read may decompress in "
                    f"all (raise max_total_decompressed to allow it)", offset, path) from None
        self.bytes_left -= len(rb)
        return rb

    def check_count(self, count: int, rb: bytes, at: int, path: str) -> None:
        if count <= self.items_left:
            return
        if count * MIN_RECORD_SIZE > len(rb):   # a RecordsCount the data cannot hold: corrupt
            raise DecodeError(f"RecordsCount says {count} records, which take at least {count * MIN_RECORD_SIZE}"
                              f" bytes; the batch has {len(rb)} bytes of records", at, path)
        raise RecordLimitError(f"RecordsCount {count} passes the {self.items_left} records and headers left "
                               f"of this read's {self.records} (raise max_records to allow more)", at, path)

    def took(self, records: list) -> None:
        n = len(records)
        for r in records:
            if r["headers"]:
                n += len(r["headers"])
        self.items_left -= n


# size: the batch reader's hot loop: per-batch checks are inline to keep decode speed (benchmarks/codec.py)
def _walk(data: bytes, verify_crc: bool, strict: bool, limits: _Limits, spans) -> Batches:
    out = Batches()
    n = len(data)
    pos = 0
    i = 0
    unpack = HEADER.unpack_from
    while pos < n:
        prefix = f"batch[{i}]"
        avail = n - pos
        if avail < LOG_OVERHEAD:
            _partial(out, i, pos, avail, None, strict, spans, prefix)
            break
        (length,) = LENGTH.unpack_from(data, pos + 8)
        if length < MIN_LENGTH:
            raise DecodeError(f"Length {length} is less than the {MIN_LENGTH} bytes of batch header "
                              f"that follow it", pos + 8, prefix + ".Length")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            _partial(out, i, pos, avail, LOG_OVERHEAD + length, strict, spans, prefix)
            break
        h = unpack(data, pos)
        if h[3] != 2:
            what = " (a legacy message set, magic 0/1)" if h[3] in (0, 1) else ""
            raise DecodeError(f"magic {h[3]}{what}: only record batch v2 (magic 2) is supported",
                              pos + 16, prefix + ".Magic")
        computed = _crc32c(memoryview(data)[pos + 21:end])
        crc_ok = computed == h[4]
        if not crc_ok and verify_crc:
            raise DecodeError(f"CRC mismatch: the batch says 0x{h[4]:08x}, CRC-32C of bytes "
                              f"{pos + 21}..{end - 1} is 0x{computed:08x}", pos + 17, prefix + ".CRC")
        attrs = h[5]
        cid = attrs & COMPRESSION_MASK
        if cid >= len(CODEC_NAMES):
            raise DecodeError(f"unknown compression codec {cid} in attributes 0x{attrs & 0xffff:04x}",
                              pos + 21, prefix + ".Attributes")
        count = h[12]
        if count < 0:
            raise DecodeError(f"negative RecordsCount {count}", pos + OFFSET["records_count"], prefix + ".RecordsCount")
        batch = dict(zip(HEADER_KEYS, h, strict=True))
        is_control = bool(attrs & CONTROL_MASK)
        lat = h[8] if attrs & TIMESTAMP_TYPE_MASK else None
        batch["compression"] = CODEC_NAMES[cid]
        batch["timestamp_type"] = TIMESTAMP_TYPES[1 if lat is not None else 0]
        batch["is_transactional"] = bool(attrs & TRANSACTIONAL_MASK)
        batch["is_control"] = is_control
        batch["has_delete_horizon"] = bool(attrs & DELETE_HORIZON_MASK)
        batch["crc_valid"] = crc_ok
        if spans is not None:
            _header_spans(spans, pos, h, prefix, computed)
        rstart = pos + HEADER_SIZE
        if cid == 0:
            rb = data[rstart:end]
            blob_at = None
        else:
            blob = data[rstart:end]
            if not blob and count == 0:
                rb = b""  # an emptied (compacted) batch keeps its header only
            else:
                rb = limits.decompress(cid, blob, rstart, prefix + ".records")
            blob_at = rstart
            if spans is not None and end > rstart:
                spans.append(Span(rstart, end, prefix + ".records", f"{CODEC_NAMES[cid]} records",
                                  f"{count} records, {len(rb)} bytes uncompressed", "value"))
        limits.check_count(count, rb, pos + OFFSET["records_count"], prefix + ".RecordsCount")
        ctx = (h[0], h[7], lat, prefix, rstart, blob_at, is_control,
               spans if (spans is not None and cid == 0) else None)
        headers_left = limits.items_left - count
        if is_control or spans is not None:
            records = _careful(rb, count, ctx, headers_left)
        else:
            done, at = [], [0, headers_left]
            try:
                records = _fast(rb, count, h[0], h[7], lat, headers_left, recs=done, at=at)
            except Exception:
                # the careful reader goes on from the record the fast one stopped at (a batch bad near
                # its end costs one careful record, not a second reading of the whole batch)
                if lat is not None:
                    for r in done:
                        r["timestamp"] = lat
                records = _careful(rb, count, ctx, at[1], done, at[0])
        limits.took(records)
        batch["records"] = records
        out.append(batch)
        pos = end
        i += 1
    out.consumed = pos if out.partial is None else out.partial["offset"]
    return out


def _partial(out: Batches, i: int, pos: int, avail: int, needed, strict: bool, spans, prefix: str):
    what = (f"{avail} bytes left, too few for a batch's BaseOffset and Length" if needed is None
            else f"Length says the batch takes {needed} bytes, only {avail} are left")
    if strict or i == 0:
        hint = "" if strict else " (no complete batch in the data)"
        raise DecodeError(f"truncated record batch: {what}{hint}",
                          pos + 8 if needed is not None else pos,
                          prefix + (".Length" if needed is not None else ""))
    out.partial = {"index": i, "offset": pos, "available": avail, "needed": needed}
    if spans is not None:
        spans.append(Span(pos, pos + avail, prefix, "partial batch", what, "unknown"))


def _header_spans(spans: list, pos: int, h: tuple, prefix: str, computed: int) -> None:
    for (wire, _key, off, size, wtype, role), v in zip(HEADER_FIELDS, h, strict=True):
        if wire == "CRC":
            wtype = "uint32 crc32c" if v == computed else f"uint32 crc32c (mismatch: computed 0x{computed:08x})"
        spans.append(Span(pos + off, pos + off + size, f"{prefix}.{wire}", wtype, v, role))


def _zz32(buf, p):
    u, p = read_uvarint(buf, p)
    return (u >> 1) ^ -(u & 1), p


def _zz64(buf, p):
    u, p = read_uvarlong(buf, p)
    return (u >> 1) ^ -(u & 1), p


# size: the records' fast decoder: one flat loop over the batch bytes with varints read inline is the codec's hot path (benchmarks/codec.py)
def _fast(rb: bytes, count: int, base_offset: int, base_ts: int, lat, headers_left: int = 1 << 62,
          _zz32=_zz32, _zz64=_zz64, len=len, recs: list | None = None, at: list | None = None):
    """Tight loop for well-formed records; raises on anything odd (the caller then runs _careful).
    `recs` gets the records read so far and `at` [byte, headers left] where the record being read
    starts, so that after a failure the careful reader can go on from there (_walk).

    Varints of one and two bytes (the common case) are decoded inline; longer ones call _zz32/_zz64,
    which enforce the 5- and 10-byte limits."""
    recs = [] if recs is None else recs
    at = [0, 0] if at is None else at
    append = recs.append
    n = len(rb)
    p = 0
    for _ in range(count):
        at[0], at[1] = p, headers_left
        # record length
        b = rb[p]
        if b < 128:
            p += 1
        else:
            c = rb[p + 1]
            if c < 128:
                b = (b & 127) | (c << 7)
                p += 2
            else:
                b, p = read_uvarint(rb, p)
        if b & 1:
            raise _Bad  # negative record length
        end = p + (b >> 1)
        if end > n:
            raise _Bad
        attrs = rb[p]
        if attrs:
            attrs = attrs - 256 if attrs > 127 else attrs
        # timestamp delta (varlong; three bytes cover deltas up to about 17 minutes)
        b = rb[p + 1]
        if b < 128:
            p += 2
        else:
            c = rb[p + 2]
            if c < 128:
                b = (b & 127) | (c << 7)
                p += 3
            else:
                d = rb[p + 3]
                if d < 128:
                    b = (b & 127) | ((c & 127) << 7) | (d << 14)
                    p += 4
                else:
                    b, p = read_uvarlong(rb, p + 1)
        tsd = (b >> 1) ^ -(b & 1)
        # offset delta
        b = rb[p]
        if b < 128:
            p += 1
        else:
            c = rb[p + 1]
            if c < 128:
                b = (b & 127) | (c << 7)
                p += 2
            else:
                b, p = read_uvarint(rb, p)
        od = (b >> 1) ^ -(b & 1)
        # key
        b = rb[p]
        if b == 1:
            key = None
            p += 1
        else:
            if b < 128:
                p += 1
            else:
                c = rb[p + 1]
                if c < 128:
                    b = (b & 127) | (c << 7)
                    p += 2
                else:
                    b, p = read_uvarint(rb, p)
            if b & 1:
                raise _Bad  # negative length other than -1
            b >>= 1
            key = rb[p:p + b]
            p += b
        # value
        b = rb[p]
        if b == 1:
            value = None
            p += 1
        else:
            if b < 128:
                p += 1
            else:
                c = rb[p + 1]
                if c < 128:
                    b = (b & 127) | (c << 7)
                    p += 2
                else:
                    b, p = read_uvarint(rb, p)
            if b & 1:
                raise _Bad
            b >>= 1
            value = rb[p:p + b]
            p += b
        # headers
        b = rb[p]
        p += 1
        if b == 0:
            headers = []
        else:
            if b < 128:
                hc = (b >> 1) ^ -(b & 1)
            else:
                hc, p = _zz32(rb, p - 1)
            headers_left -= hc
            if hc < 0 or headers_left < 0:
                raise _Bad
            headers = []
            for _h in range(hc):
                b = rb[p]
                if b < 128:
                    hkl = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    hkl, p = _zz32(rb, p)
                if hkl < 0:
                    raise _Bad
                hk = rb[p:p + hkl].decode()
                p += hkl
                b = rb[p]
                if b < 128:
                    hvl = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    hvl, p = _zz32(rb, p)
                if hvl >= 0:
                    hv = rb[p:p + hvl]
                    p += hvl
                elif hvl == -1:
                    hv = None
                else:
                    raise _Bad
                headers.append((hk, hv))
        if p != end:
            raise _Bad
        append({"offset": base_offset + od, "offset_delta": od, "timestamp": base_ts + tsd,
                "timestamp_delta": tsd, "attributes": attrs, "key": key, "value": value,
                "headers": headers})
    if p != n:
        at[0], at[1] = p, headers_left
        raise _Bad
    if lat is not None:
        for r in recs:
            r["timestamp"] = lat
    return recs


class _Cursor:
    """Careful reader over one slice: every read is bounded, every failure a DecodeError."""
    __slots__ = ("buf", "p", "base", "blob_at", "spans")

    def __init__(self, buf: bytes, base: int, blob_at, spans):
        self.buf = buf
        self.p = 0
        self.base = base        # absolute offset of buf[0] (uncompressed) ...
        self.blob_at = blob_at  # ... or the compressed blob's offset, for errors inside it
        self.spans = spans

    def error(self, msg: str, at: int, path: str) -> DecodeError:
        if self.blob_at is None:
            return DecodeError(msg, self.base + at, path)
        return DecodeError(f"{msg} (byte {self.base + at} of the decompressed records)", self.blob_at, path)

    def span(self, start: int, path: str, wire_type: str, value, role: str) -> None:
        if self.spans is not None and self.p > start:
            b = self.base
            self.spans.append(Span(b + start, b + self.p, path, wire_type, value, role))

    def varint(self, path: str, role: str = "value", long: bool = False) -> int:
        start = self.p
        try:
            u, self.p = (read_uvarlong if long else read_uvarint)(self.buf, start, path)
        except DecodeError as e:
            raise self.error(e.reason, start, path) from None
        v = (u >> 1) ^ -(u & 1)
        self.span(start, path, "varlong" if long else "varint", v, role)
        return v

    def take(self, n: int, path: str, what: str | None = None):
        start = self.p
        if start + n > len(self.buf):
            left = len(self.buf) - start
            raise self.error(what or f"length {n} runs past the end of the record ({left} bytes left)",
                             start, path)
        self.p = start + n
        return self.buf[start:self.p]

    def nullable(self, path: str, wire_type: str = "bytes"):
        at = self.p
        n = self.varint(path + "_length", "length")
        if n == -1:
            return None
        if n < -1:
            raise self.error(f"negative length {n} (only -1, null, is allowed)", at, path + "_length")
        start = self.p
        v = self.take(n, path)
        self.span(start, path, wire_type, v, "value")
        return v


def _careful(rb: bytes, count: int, ctx, headers_left: int = 1 << 62, done: list | None = None,
             at: int = 0) -> list:
    """`done`: records already read (by _fast) up to byte `at`; reading goes on from there."""
    base_offset, base_ts, lat, prefix, base, blob_at, is_control, spans = ctx
    outer = _Cursor(rb, base, blob_at, None)
    outer.p = at
    recs = done if done is not None else []
    n = len(rb)
    for j in range(len(recs), count):
        rp = f"{prefix}.records[{j}]"
        start = outer.p
        if start >= n:
            raise outer.error(f"RecordsCount says {count} records, the data ends after {j}", start, rp)
        outer.spans = spans
        ln = outer.varint(rp + ".length", "length")
        outer.spans = None
        if ln < 0:
            raise outer.error(f"negative record length {ln}", start, rp + ".length")
        body = outer.p
        if body + ln > n:
            raise outer.error(f"record length {ln} runs past the end of the records ({n - body} bytes left)",
                              start, rp + ".length")
        c = _Cursor(rb[body:body + ln], base + body, blob_at, spans)
        outer.p = body + ln
        rec = _careful_record(c, rp, base_offset, base_ts, lat, headers_left)
        headers_left -= len(rec["headers"])
        if c.p != ln:
            raise outer.error(f"record length says {ln} bytes, its fields take {c.p}", start, rp + ".length")
        if is_control:
            rec["control"] = parse_control(rec["key"], rec["value"],
                                           (base + body) if blob_at is None else blob_at, rp)
            if spans is not None:
                _split_control_spans(spans, rp)
        recs.append(rec)
    if outer.p != n:
        raise outer.error(f"{n - outer.p} bytes left after the {count} records RecordsCount announces",
                          outer.p, prefix + ".RecordsCount")
    return recs


def _careful_record(c: _Cursor, rp: str, base_offset: int, base_ts: int, lat, headers_left: int) -> dict:
    attrs = c.take(1, rp + ".attributes", "the record ends before its attributes byte")[0]
    if attrs > 127:
        attrs -= 256
    c.span(c.p - 1, rp + ".attributes", "int8", attrs, "value")
    tsd = c.varint(rp + ".timestamp_delta", long=True)
    od = c.varint(rp + ".offset_delta")
    key = c.nullable(rp + ".key")
    value = c.nullable(rp + ".value")
    hc_at = c.p
    hc = c.varint(rp + ".headers_count", "count")
    if hc < 0:
        raise c.error(f"negative header count {hc}", hc_at, rp + ".headers_count")
    if hc > headers_left:
        left = len(c.buf) - c.p
        if hc * 2 > left:   # each header takes at least 2 bytes: corrupt, said before any is built
            raise c.error(f"headers_count says {hc} headers, which take at least {hc * 2} bytes; the record "
                          f"has {left} left", hc_at, rp + ".headers_count")
        e = c.error(f"headers_count {hc} passes the records and headers left of this read "
                    f"(raise max_records to allow more)", hc_at, rp + ".headers_count")
        raise RecordLimitError(e.reason, e.offset, e.path)
    headers = []
    for k in range(hc):
        hp = f"{rp}.headers[{k}]"
        if c.p >= len(c.buf):
            raise c.error(f"headers_count says {hc} headers, the record ends after {k}", c.p, hp)
        kl_at = c.p
        kl = c.varint(hp + ".key_length", "length")
        if kl < 0:
            raise c.error(f"negative header key length {kl} (header keys cannot be null)", kl_at,
                          hp + ".key_length")
        start = c.p
        hk = c.take(kl, hp + ".key").decode("utf-8", "replace")
        c.span(start, hp + ".key", "string", hk, "value")
        hv = c.nullable(hp + ".value")
        headers.append((hk, hv))
    return {"offset": base_offset + od, "offset_delta": od,
            "timestamp": base_ts + tsd if lat is None else lat, "timestamp_delta": tsd,
            "attributes": attrs, "key": key, "value": value, "headers": headers}


def _split_control_spans(spans: list, rp: str) -> None:
    """Show a control record's key (version, type) and marker value (version, coordinator_epoch)."""
    out = []
    for s in spans[-8:]:
        if s.path == rp + ".key" and s.end - s.start == 4:
            ver, tid = struct.unpack(">hh", s.value)
            out.append((s, [Span(s.start, s.start + 2, rp + ".key.version", "int16", ver, "value"),
                            Span(s.start + 2, s.end, rp + ".key.type", "int16", tid, "value")]))
        elif s.path == rp + ".value" and s.end - s.start == 6:
            ver, epoch = struct.unpack(">hi", s.value)
            out.append((s, [Span(s.start, s.start + 2, rp + ".value.version", "int16", ver, "value"),
                            Span(s.start + 2, s.end, rp + ".value.coordinator_epoch", "int32", epoch,
                                 "value")]))
    for s, parts in out:
        k = len(spans) - 1 - spans[::-1].index(s)
        spans[k:k + 1] = parts


# ---- writing ---------------------------------------------------------------------------------
_READ_ONLY = frozenset({"length", "magic", "crc", "attributes", "records_count", "crc_valid"})
_HEADER_ARGS = frozenset({"base_offset", "partition_leader_epoch", "compression", "compression_level",
                          "timestamp_type", "is_transactional", "is_control", "has_delete_horizon",
                          "producer_id", "producer_epoch", "base_sequence", "base_timestamp",
                          "max_timestamp", "last_offset_delta"})
_INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
               "int64": (-2**63, 2**63 - 1)}


def _int(v, kind: str, path: str) -> int:
    lo, hi = _INT_RANGES[kind]
    if type(v) is not int or not lo <= v <= hi:
        raise EncodeError(f"expected an {kind} ({lo}..{hi}), got {v!r}", path)
    return v


def _blob(v, path: str):
    if v is None or type(v) is bytes:
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    raise EncodeError(f"expected bytes or None, got {type(v).__name__}", path)


# size: the header arguments checked in their documented order and packed once; the write path the model's logs take (benchmarks/codec.py)
def write_batch(records=(), **header) -> bytes:
    """One record batch v2. records: dicts with key, value (bytes or None), headers
    ([(str, bytes | None)]), timestamp (absolute ms) or timestamp_delta, offset_delta or offset
    (absolute); when both forms are given the delta wins, so write_batch(**read_batches(b)[0])
    gives back the same bytes. (key, value[, headers[, timestamp]]) tuples work too.

    header (all optional): base_offset=0, partition_leader_epoch=-1, compression="none"
    (name or id), compression_level, timestamp_type="CreateTime" ("LogAppendTime" or 0/1),
    is_transactional=False, is_control=False, has_delete_horizon=False, producer_id=-1,
    producer_epoch=-1, base_sequence=-1, base_timestamp (default: the first record's timestamp),
    max_timestamp (default: the largest record timestamp), last_offset_delta (default: the last
    record's offset delta). The fields read_batches derives (length, magic, crc, attributes,
    records_count, crc_valid) are accepted and ignored: they are computed."""
    for k in header:
        if k not in _HEADER_ARGS and k not in _READ_ONLY:
            raise EncodeError(f"unknown batch header field {k!r}", k)
    if header.get("magic", 2) != 2:
        raise EncodeError("only record batch v2 (magic 2) can be written", "magic")
    g = header.get
    base_offset = _int(g("base_offset", 0), "int64", "base_offset")
    leader_epoch = _int(g("partition_leader_epoch", -1), "int32", "partition_leader_epoch")
    cid = codec_id(g("compression", "none"))
    ts_type = g("timestamp_type", "CreateTime")
    if ts_type in (0, "CreateTime"):
        ts_bit = 0
    elif ts_type in (1, "LogAppendTime"):
        ts_bit = 1
    else:
        raise EncodeError(f"timestamp_type must be CreateTime or LogAppendTime, got {ts_type!r}",
                          "timestamp_type")
    flags = {k: g(k, False) for k in ("is_transactional", "is_control", "has_delete_horizon")}
    for k, v in flags.items():
        if type(v) is not bool:
            raise EncodeError(f"expected True or False, got {v!r}", k)
    producer_id = _int(g("producer_id", -1), "int64", "producer_id")
    producer_epoch = _int(g("producer_epoch", -1), "int16", "producer_epoch")
    base_sequence = _int(g("base_sequence", -1), "int32", "base_sequence")

    if type(records) is not list and type(records) is not tuple:
        records = list(records)
    base_ts = g("base_timestamp")
    fast = _encode_tuples(records, base_ts) if type(base_ts) is int and _I64[0] <= base_ts <= _I64[1] else None
    if fast is not None:
        body, max_ts, last_od = fast
    else:       # any other form, or something to report: checked record by record
        recs = [_plain_fields(r) or _record_fields(r, j) for j, r in enumerate(records)]
        if base_ts is None:
            base_ts = -1 if not recs else (recs[0][1] if recs[0][1] is not None else 0)
        base_ts = _int(base_ts, "int64", "base_timestamp")
        body, max_ts, last_od = _encode_records(recs, base_ts, base_offset)

    if g("max_timestamp") is not None:
        max_ts = g("max_timestamp")
    elif max_ts is None:
        max_ts = -1
    max_ts = _int(max_ts, "int64", "max_timestamp")
    lod = g("last_offset_delta")
    if lod is None:
        lod = 0 if last_od is None else last_od
    lod = _int(lod, "int32", "last_offset_delta")

    payload = compress(cid, bytes(body), g("compression_level")) if cid else body
    attributes = (cid | (ts_bit << 3) | (TRANSACTIONAL_MASK if flags["is_transactional"] else 0)
                  | (CONTROL_MASK if flags["is_control"] else 0)
                  | (DELETE_HORIZON_MASK if flags["has_delete_horizon"] else 0))
    out = bytearray(HEADER_SIZE)
    out += payload
    HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, leader_epoch, 2, 0, attributes,
                     lod, base_ts, max_ts, producer_id, producer_epoch, base_sequence, len(records))
    struct.pack_into(">I", out, 17, _crc32c(memoryview(out)[21:]))
    return bytes(out)


_I32, _I64 = (-2**31, 2**31 - 1), (-2**63, 2**63 - 1)
INT64_RANGE = _I64   # public: spark/decode checks timestamps against it


def _zigzag_varint(v: int, bits: int = 32) -> bytes:
    """Zigzag varint of a signed int32 (bits=32) or int64 (bits=64), as Kafka's ByteUtils writes it."""
    w = bytearray()
    write_uvarint(w, ((v << 1) ^ (v >> (bits - 1))) & ((1 << bits) - 1))
    return bytes(w)


# The varints of ordinary records (lengths, offset deltas, small timestamp deltas: 0 .. 8191, one or
# two bytes) are looked up in a table instead of being encoded byte by byte; _VARINT[v] is the
# zigzag varint of v (the same bytes for int32 and int64).
_SMALL = 1 << 13
_VARINT = tuple(_zigzag_varint(v) for v in range(_SMALL))
_BYTE = tuple(bytes((b,)) for b in range(256))
_NULL = b"\x01"                     # zigzag(-1): a null key, value or header value


def _length(n: int) -> bytes:
    """The zigzag varint of a length (never negative)."""
    return _VARINT[n] if n < _SMALL else _zigzag_varint(n)


def _encode_records(recs: list, base_ts: int, base_offset: int) -> tuple[bytes, int | None, int | None]:
    """The records section: -> (bytes, max timestamp, last offset delta). The hot loop of every
    produce, log append and fetch in the model: each record is joined from table-looked-up varints
    and its blobs, and error paths are only formatted when a value is out of range."""
    parts = []
    add = parts.append
    varint, small = _VARINT, _SMALL
    max_ts = last_od = None
    for j, (attrs, ts, tsd, od, off, key, value, headers) in enumerate(recs):    # headers: encoded
        if tsd is None:
            tsd = (base_ts if ts is None else ts) - base_ts
        if type(tsd) is not int or not _I64[0] <= tsd <= _I64[1]:
            _int(tsd, "int64", f"records[{j}].timestamp_delta")
        if od is None:
            od = j if off is None else off - base_offset
        if type(od) is not int or not _I32[0] <= od <= _I32[1]:
            _int(od, "int32", f"records[{j}].offset_delta")
        abs_ts = base_ts + tsd
        if max_ts is None or abs_ts > max_ts:
            max_ts = abs_ts
        last_od = od
        kn, key = _blob_field(key, j)
        vn, value = _blob_field(value, j)
        rec = b"".join((_BYTE[attrs & 0xFF], varint[tsd] if 0 <= tsd < small else _zigzag_varint(tsd, 64),
                        varint[od] if 0 <= od < small else _zigzag_varint(od), kn, key, vn, value, headers))
        n = len(rec)
        if n > _I32[1]:
            _int(n, "int32", f"records[{j}].length")
        add(varint[n] if n < small else _zigzag_varint(n))
        add(rec)
    return b"".join(parts), max_ts, last_od


def _blob_field(blob: bytes | None, j: int) -> tuple[bytes, bytes]:
    """(length varint, bytes) of record j's key or value; null is length -1."""
    if blob is None:
        return _NULL, b""
    n = len(blob)
    if n > _I32[1]:
        _int(n, "int32", f"records[{j}]")
    return _length(n), blob


def _headers(headers) -> bytes | None:
    """A record's header count and headers, encoded, from a list or tuple of (str | bytes key,
    bytes | None value) pairs; None for anything else (the careful path, _record_fields, then
    says what is wrong). Every path of write_batch encodes its headers here."""
    if type(headers) is not list and type(headers) is not tuple:
        return None
    parts = [_length(len(headers))]
    for h in headers:
        if type(h) is not tuple and type(h) is not list or len(h) != 2:
            return None
        hk, hv = h
        if type(hk) is str:
            hk = hk.encode("utf-8")
        elif type(hk) is not bytes:
            return None
        if hv is None:
            parts += (_length(len(hk)), hk, _NULL)
        elif type(hv) is bytes:
            parts += (_length(len(hk)), hk, _length(len(hv)), hv)
        else:
            return None
    return b"".join(parts)


# size: checks and encodes the model's record tuples in one pass: the write hot path measured by benchmarks/codec.py
def _encode_tuples(records, base_ts: int) -> tuple[bytes, int | None, int | None] | None:
    """_encode_records for the form the model's clients and logs use: (key, value, headers,
    timestamp) tuples of bytes or None, (str, bytes | None) header pairs and an int or None
    timestamp; offset deltas 0, 1, 2, ... Checks and encodes in one pass; None as soon as a record
    is anything else or out of range, and write_batch then takes the careful path (which also says
    what is wrong)."""
    parts = []
    add = parts.append
    varint, small, null = _VARINT, _SMALL, _NULL
    lo, hi = _I64
    max_ts = last_od = None
    for j, r in enumerate(records):
        if type(r) is not tuple or len(r) != 4:
            return None
        key, value, headers, ts = r
        if ts is None:
            ts = base_ts
        elif type(ts) is not int or not lo <= ts <= hi or not lo <= ts - base_ts <= hi:
            return None
        if max_ts is None or ts > max_ts:
            max_ts = ts
        last_od = j
        if key is None:
            kn, key = null, b""
        elif type(key) is bytes:
            kn = varint[len(key)] if len(key) < small else _size(len(key))
        else:
            return None
        if value is None:
            vn, value = null, b""
        elif type(value) is bytes:
            vn = varint[len(value)] if len(value) < small else _size(len(value))
        else:
            return None
        hb = _headers(headers) if headers else varint[0]
        if kn is None or vn is None or hb is None:
            return None
        tsd = ts - base_ts
        rec = b"".join((b"\x00", varint[tsd] if 0 <= tsd < small else _zigzag_varint(tsd, 64),
                        varint[j] if j < small else _zigzag_varint(j), kn, key, vn, value, hb))
        n = len(rec)
        if n >= small and _size(n) is None:
            return None
        add(varint[n] if n < small else _zigzag_varint(n))
        add(rec)
    return b"".join(parts), max_ts, last_od


def _size(n: int) -> bytes | None:
    """The zigzag varint of a length, None for one past int32 (the careful path reports it)."""
    return _zigzag_varint(n) if n <= _I32[1] else None


def _plain_fields(r):
    """_record_fields for the common case (a dict of bytes, headers as (str|bytes, bytes|None)
    pairs, int timestamp/offset), without building error paths; None for anything else, which
    _record_fields then checks and explains. Both give the headers encoded (_headers)."""
    if type(r) is not dict:
        return None
    g = r.get
    key, value = g("key"), g("value")
    if (key is not None and type(key) is not bytes) or (value is not None and type(value) is not bytes):
        return None
    ts, attrs = g("timestamp"), g("attributes", 0)
    if type(attrs) is not int or not -128 <= attrs <= 127 or (
            ts is not None and (type(ts) is not int or not _I64[0] <= ts <= _I64[1])):
        return None
    hs = _headers(g("headers") or ())
    if hs is None:
        return None
    return (attrs, ts, g("timestamp_delta"), g("offset_delta"), g("offset"), key, value, hs)


def _record_fields(r, j: int):
    """-> (attributes, timestamp, timestamp_delta, offset_delta, offset, key, value, headers)"""
    rp = f"records[{j}]"
    if isinstance(r, dict):
        key, value, headers = r.get("key"), r.get("value"), r.get("headers") or ()
        ts, tsd = r.get("timestamp"), r.get("timestamp_delta")
        od, off = r.get("offset_delta"), r.get("offset")
        attrs = r.get("attributes", 0)
    elif isinstance(r, (tuple, list)) and 2 <= len(r) <= 4:
        key, value = r[0], r[1]
        headers = (r[2] if len(r) > 2 else None) or ()
        ts = r[3] if len(r) > 3 else None
        tsd = od = off = None
        attrs = 0
    else:
        raise EncodeError("a record is a dict (key, value, headers, timestamp, ...) or a "
                          "(key, value[, headers[, timestamp]]) tuple", rp)
    _int(attrs, "int8", rp + ".attributes")
    if ts is not None:
        _int(ts, "int64", rp + ".timestamp")
    hs = []
    if isinstance(headers, dict):
        headers = list(headers.items())
    for k, h in enumerate(headers):
        hp = f"{rp}.headers[{k}]"
        if not isinstance(h, (tuple, list)) or len(h) != 2:
            raise EncodeError("a header is a (key, value) pair", hp)
        hk, hv = h
        if isinstance(hk, str):
            hk = hk.encode("utf-8")
        elif not isinstance(hk, (bytes, bytearray)):
            raise EncodeError(f"header key must be str, got {type(hk).__name__}", hp + ".key")
        hs.append((bytes(hk), _blob(hv, hp + ".value")))
    return (attrs, ts, tsd, od, off, _blob(key, rp + ".key"), _blob(value, rp + ".value"), _headers(hs))
