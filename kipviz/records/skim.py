"""One plain record batch's offsets, timestamps and one header's values, without building record
dicts: the Spark no-payload decode reads millions of output records this way.

    got = skim_batch(data, b"kipviz-source")
    if got is None:              # not a batch the skim takes: read_batches says what it is
        ...
    header, offset_deltas, timestamp_deltas, values = got

It takes exactly one well-formed, uncompressed, non-control v2 batch whose CRC matches and that
fills `data`; anything else (compression, a control batch, a bad CRC, a malformed or trailing
record) gives None, never an error, so that the caller's read_batches decides and reports it.
`header` is the batch header tuple in HEADER_FIELDS order; `values[i]` is record i's first header
with that key (its value as text, None when null or not UTF-8 -- or when the record has none)."""
from __future__ import annotations

from ..codec.varint import read_uvarint, read_uvarlong
from ..errors import DecodeError
from .crc import crc32c as _crc32c
from .header import COMPRESSION_MASK, CONTROL_MASK, HEADER, HEADER_SIZE, LOG_OVERHEAD

__all__ = ["skim_batch"]

_OFF = (COMPRESSION_MASK | CONTROL_MASK)


def skim_batch(data: bytes, key: bytes):
    """(header, offset deltas, timestamp deltas, each record's `key` header value) of one plain
    batch, or None when the skim does not take it (the module docstring)."""
    if len(data) < HEADER_SIZE:
        return None
    h = HEADER.unpack_from(data, 0)
    if h[3] != 2 or LOG_OVERHEAD + h[1] != len(data) or h[5] & _OFF or h[12] < 0 \
            or _crc32c(memoryview(data)[21:]) != h[4]:
        return None
    try:
        got = _walk(data, h[12], key)
    except (IndexError, DecodeError):
        return None
    return None if got is None else (h, *got)


# size: one-byte varints read inline per record: the skimmer's hot loop, where a call per varint would cost most of its speed
def _walk(d: bytes, count: int, key: bytes, uvarint=read_uvarint, uvarlong=read_uvarlong):
    """The records' deltas and header values, or None when a record is not what its lengths say.
    One-byte varints are read inline; longer ones (bounded to 5 / 10 bytes) by the codec's readers."""
    n, klen = len(d), len(key)
    ods, tsds, vals = [], [], []
    p = HEADER_SIZE
    for _ in range(count):
        b = d[p]
        if b < 128:
            p += 1
        else:
            b, p = uvarint(d, p)
        if b & 1:
            return None
        end = p + (b >> 1)
        if end > n:
            return None
        b = d[p + 1]                       # after the record's attributes byte: timestamp delta
        if b < 128:
            p += 2
        else:
            b, p = uvarlong(d, p + 1)
        tsds.append((b >> 1) ^ -(b & 1))
        b = d[p]                           # offset delta: two bytes past the 64th record
        if b < 128:
            p += 1
        elif d[p + 1] < 128:
            b = (b & 127) | (d[p + 1] << 7)
            p += 2
        else:
            b, p = uvarint(d, p)
        ods.append((b >> 1) ^ -(b & 1))
        for _blob in (0, 1):               # key, value: skipped (length -1 is a null)
            b = d[p]
            if b < 128:
                p += 1
            else:
                b, p = uvarint(d, p)
            if b != 1:
                if b & 1:
                    return None
                p += b >> 1
        b = d[p]
        if b < 128:
            p += 1
        else:
            b, p = uvarint(d, p)
        count_h = (b >> 1) ^ -(b & 1)
        if count_h < 0:
            return None
        found, value = False, None
        for _h in range(count_h):
            b = d[p]
            if b < 128:
                p += 1
            else:
                b, p = uvarint(d, p)
            kl = (b >> 1) ^ -(b & 1)
            if kl < 0:
                return None
            hit = not found and kl == klen and d.startswith(key, p)
            p += kl
            b = d[p]
            if b < 128:
                p += 1
            else:
                b, p = uvarint(d, p)
            vl = (b >> 1) ^ -(b & 1)
            if vl < -1:
                return None
            if vl >= 0:
                if hit:
                    try:
                        value = d[p:p + vl].decode()
                    except UnicodeDecodeError:
                        value = None
                p += vl
            found = found or hit
        if p != end:
            return None
        vals.append(value)
    if p != n:
        return None
    return ods, tsds, vals
