"""kipviz.records.skim's work for a whole column of record batches at once, with numpy: the batches
are walked side by side, record i of every batch in one step, so the per-record work is a few
array operations shared by thousands of batches instead of Python bytecode per record.

    got = skim_column(arrow_binary_array, b"kipviz-source")
    got.ok                      # per batch: skimmed here (else: skim_batch / read_batches decide)
    got.counts, got.base_offset, got.attributes, got.base_timestamp, got.max_timestamp,
    got.producer_id, got.producer_epoch, got.is_control     # per skimmed batch, in column order
    got.offset_delta, got.timestamp_delta, got.values,      # per record of the skimmed batches
    got.control_type, got.coordinator_epoch                 # COMMIT / ABORT markers

It takes a subset of what skim_batch takes, and COMMIT / ABORT marker batches as read_batches
reads them; a batch it is unsure of is left to the caller (varints of more than 4 bytes, or 8 for
a timestamp delta; batches still walking when few are left; control records with headers or of
another type; an offset or timestamp outside int64) -- and for every batch it takes gives
exactly their answer (tests/test_records_skim_column).
Nothing is allocated from a length it has not checked against the batch's own size."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from .crc import crc32c
from .header import COMPRESSION_MASK, CONTROL_MASK, HEADER_SIZE, LOG_OVERHEAD, TIMESTAMP_TYPE_MASK, numpy_dtype

__all__ = ["skim_column", "Skimmed"]

# the v2 batch header, big-endian, packed: the fields kipviz.records.batch.HEADER unpacks
_HEADER = numpy_dtype({"partition_leader_epoch": "leader_epoch", "records_count": "count"})
assert _HEADER.itemsize == HEADER_SIZE
MIN_RECORD = 7           # length, attributes, timestamp and offset deltas, key, value, header count
MIN_ACTIVE = 32          # below this many batches still walking, the rest go back to the caller


class Skimmed(NamedTuple):
    """The columns a skim of many batches returns: which batches it read (ok) and their header fields."""
    ok: np.ndarray                # bool per input batch
    counts: np.ndarray            # records per skimmed batch
    base_offset: np.ndarray
    attributes: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    is_control: np.ndarray
    offset_delta: np.ndarray      # per record of the skimmed batches
    timestamp_delta: np.ndarray
    values: pa.Array              # string per record: its first header `key`'s value, or null
    control_type: pa.Array        # COMMIT / ABORT for a control batch's records, else null
    coordinator_epoch: pa.Array


def _offsets_and_data(arr: pa.Array):
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError(f"skim_column needs a binary array, not {arr.type}")
    _, offs, data = arr.buffers()
    width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(offs, dtype=width)[arr.offset:arr.offset + len(arr) + 1].astype(np.int64)
    buf = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return offsets, buf, data


class _Walk:
    """Reads at positions `p`, each bounded by its batch's end `e`: the values, the positions after
    them, and where a read went past the end (or a varint past max_bytes)."""

    def __init__(self, buf: np.ndarray):
        self.buf = buf if len(buf) else np.zeros(1, np.uint8)
        self.last = len(self.buf) - 1

    def uvar(self, p, e, max_bytes: int):
        b = self.buf[np.minimum(p, self.last)]
        bad = p >= e
        val = (b & 127).astype(np.int64)
        q = p + 1
        more = b >= 128
        shift = 7
        for _ in range(1, max_bytes):
            k = np.flatnonzero(more)
            if not len(k):
                return val, q, bad
            qk = q[k]
            b = self.buf[np.minimum(qk, self.last)]
            bad[k] |= qk >= e[k]
            val[k] |= (b & 127).astype(np.int64) << shift
            q[k] = qk + 1
            more[k] = b >= 128
            shift += 7
        return val, q, bad | more


def _zigzag(u):
    return (u >> 1) ^ -(u & 1)


_I64_MIN, _I64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _overflows(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Where base + delta leaves int64 (such a batch is left to the per-batch path, which
    reports it)."""
    up = delta > 0
    return np.where(up, base > _I64_MAX - np.where(up, delta, 0), base < _I64_MIN - np.where(up, 0, delta))


# size: one vectorised (numpy) walk over every batch at once; its arrays are shared by each step of the loop
def skim_column(arr: pa.Array, key: bytes, min_active: int | None = None) -> Skimmed:
    """See the module docstring. min_active: MIN_ACTIVE unless given."""
    min_active = MIN_ACTIVE if min_active is None else min_active
    n_in = len(arr)
    offsets, buf, data = _offsets_and_data(arr)
    start, end = offsets[:-1], offsets[1:]
    size = end - start
    ok = size >= HEADER_SIZE
    if arr.null_count:
        ok &= arr.is_valid().to_numpy(zero_copy_only=False)
    cand = np.flatnonzero(ok)
    h = np.zeros(n_in, _HEADER)
    if len(cand):
        h[cand] = _bytes_at(buf, start[cand], HEADER_SIZE).view(_HEADER).ravel()
    count = h["count"].astype(np.int64)
    ok &= (h["magic"] == 2) & (LOG_OVERHEAD + h["length"].astype(np.int64) == size)
    ok &= (h["attributes"] & COMPRESSION_MASK) == 0
    is_ctl = (h["attributes"] & CONTROL_MASK) != 0
    ok &= (count >= 0) & (count <= (size - HEADER_SIZE) // MIN_RECORD)
    view = memoryview(data) if data is not None else None
    for i in np.flatnonzero(ok):
        if crc32c(view[start[i] + 21:end[i]]) != h["crc"][i]:
            ok[i] = False
    count = np.where(ok, count, 0)
    first = np.cumsum(count) - count                 # each batch's first record slot
    total = int(count.sum())
    od = np.zeros(total, np.int64)
    tsd = np.zeros(total, np.int64)
    v_at = np.full(total, -1, np.int64)              # header value start, -1: no value (null)
    v_len = np.zeros(total, np.int64)
    # control records: where their key and value are (-1: null), in slots of their own
    ccount = np.where(is_ctl, count, 0)
    cfirst = np.cumsum(ccount) - ccount
    blobs = np.full((2, 2, int(ccount.sum())), -1, np.int64)      # key/value, at/length
    base_offset, base_ts = h["base_offset"].astype(np.int64), h["base_timestamp"].astype(np.int64)
    create_time = (h["attributes"] & TIMESTAMP_TYPE_MASK) == 0
    w = _Walk(buf)
    klen = len(key)
    keyv = np.frombuffer(key, np.uint8)
    idx = np.flatnonzero(ok)
    p = start[idx] + HEADER_SIZE
    r = 0
    while len(idx):
        done = count[idx] == r
        if done.any():                               # all its records read: it must end exactly there
            fin = idx[done]
            ok[fin] = p[done] == end[fin]
            idx, p = idx[~done], p[~done]
            if not len(idx):
                break
        if len(idx) < min_active:
            ok[idx] = False
            break
        e = end[idx]
        u, p, bad = w.uvar(p, e, 4)
        bad |= (u & 1).astype(bool)
        rend = p + (u >> 1)
        bad |= rend > e
        u, p, b = w.uvar(p + 1, e, 8)                # past the attributes byte
        bad |= b
        slot = first[idx] + r
        tsd[slot] = d = _zigzag(u)
        bad |= create_time[idx] & _overflows(base_ts[idx], d)
        u, p, b = w.uvar(p, e, 4)
        od[slot] = d = _zigzag(u)
        bad |= b | _overflows(base_offset[idx], d)
        ctl = np.flatnonzero(is_ctl[idx])
        for blob in (0, 1):                          # key, value: skipped; 1 is length -1, null
            u, p, b = w.uvar(p, e, 4)
            bad |= b | ((u != 1) & (u & 1).astype(bool))
            if len(ctl):
                null = u[ctl] == 1
                cslot = cfirst[idx[ctl]] + r
                blobs[blob, 0, cslot] = np.where(null, -1, p[ctl])
                blobs[blob, 1, cslot] = np.where(null, -1, u[ctl] >> 1)
            p = p + np.where(u != 1, u >> 1, 0)
        u, p, b = w.uvar(p, e, 4)
        hcount = _zigzag(u)
        # each header takes two bytes at least: more than the record holds cannot be; control
        # records with headers are left to read_batches
        bad |= b | (hcount < 0) | (hcount * 2 > rend - p)
        if len(ctl):
            bad[ctl] |= hcount[ctl] != 0
        found = np.zeros(len(idx), bool)
        for j in range(int(hcount.max(initial=0))):
            k = np.flatnonzero((hcount > j) & ~bad)
            if not len(k):
                break
            ek = e[k]
            u, q, b = w.uvar(p[k], ek, 4)
            kl = _zigzag(u)
            bad[k] |= b | (kl < 0)
            hit = ~found[k] & (kl == klen) & (q + klen <= ek)
            if klen and hit.any():
                hk = np.flatnonzero(hit)
                hit[hk] = (_bytes_at(w.buf, q[hk], klen) == keyv).all(axis=1)
            u, q, b = w.uvar(q + np.maximum(kl, 0), ek, 4)
            vl = _zigzag(u)
            bad[k] |= b | (vl < -1)
            take = hit & (vl >= 0)
            v_at[slot[k[take]]] = q[take]
            v_len[slot[k[take]]] = vl[take]
            found[k] |= hit
            p[k] = q + np.maximum(vl, 0)
        bad |= p != rend
        if bad.any():
            ok[idx[bad]] = False
            idx, p = idx[~bad], p[~bad]
        r += 1
    type_id, epoch, ctl_ok = _markers(ok & is_ctl, ccount, cfirst, blobs, buf)
    ok &= ~is_ctl | ctl_ok
    return _result(ok, h, count, first, od, tsd, v_at, v_len, buf, is_ctl, cfirst, type_id, epoch)


def _bytes_at(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """(len(at), width) bytes from each position (clipped to the buffer: callers mask the rest)."""
    if not len(at):
        return np.zeros((0, width), np.uint8)
    return buf[np.minimum(at[:, None] + np.arange(width), len(buf) - 1)]


def _markers(ctl_ok, ccount, cfirst, blobs, buf):
    """COMMIT / ABORT markers as kipviz.records.control.parse_control reads them: (type id,
    coordinator epoch) per control record slot; a control batch holding anything else (another
    control type, a key or marker value of another size) is no longer ok (ctl_ok: updated)."""
    (k_at, k_len), (v_at, v_len) = blobs
    owner = np.repeat(np.arange(len(ccount)), ccount)
    # only the records of batches still ok were read whole: their keys and values lie in the buffer
    fine = ctl_ok[owner] & (k_len == 4) & (v_len == 6)
    k, v = _bytes_at(buf, np.where(fine, k_at, 0), 4), _bytes_at(buf, np.where(fine, v_at, 0), 6)
    key_version = k[:, :2].copy().view(">i2").ravel()
    type_id = k[:, 2:].copy().view(">i2").ravel().astype(np.int64)
    value_version = v[:, :2].copy().view(">i2").ravel()
    epoch = v[:, 2:].copy().view(">i4").ravel().astype(np.int64)
    fine &= (key_version >= 0) & ((type_id == 0) | (type_id == 1)) & (value_version >= 0)
    ctl_ok[owner[~fine]] = False
    return type_id, epoch, ctl_ok


def _result(ok, h, count, first, od, tsd, v_at, v_len, buf, is_ctl, cfirst, type_id, epoch) -> Skimmed:
    sel = np.flatnonzero(ok)
    counts = count[sel]
    n = int(counts.sum())
    within = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
    slots = np.repeat(first[sel], counts) + within
    ctl = is_ctl[sel]
    rec_ctl = np.repeat(ctl, counts)
    if rec_ctl.any():
        cslot = np.where(rec_ctl, np.repeat(cfirst[sel], counts) + within, 0)
        control_type = pa.array(["ABORT", "COMMIT"]).take(pa.array(type_id[cslot] if len(type_id) else cslot,
                                                                    mask=~rec_ctl))
        coordinator_epoch = pa.array((epoch[cslot] if len(epoch) else cslot).astype(np.int32), mask=~rec_ctl)
    else:
        control_type, coordinator_epoch = pa.nulls(n, pa.string()), pa.nulls(n, pa.int32())
    hs = h[sel]
    return Skimmed(ok, counts, hs["base_offset"].astype(np.int64), hs["attributes"].astype(np.int64),
                   hs["base_timestamp"].astype(np.int64), hs["max_timestamp"].astype(np.int64),
                   hs["producer_id"].astype(np.int64), hs["producer_epoch"].astype(np.int64), ctl,
                   od[slots], tsd[slots], _values(v_at[slots], v_len[slots], buf), control_type, coordinator_epoch)


_PIECE = 1 << 20         # header values gathered this many at a time: bounded index arrays


def _values(at: np.ndarray, ln: np.ndarray, buf: np.ndarray) -> pa.Array:
    """The header values as a string array (null where none, or not UTF-8)."""
    pieces = []
    for i in range(0, len(at), _PIECE):
        a, n = at[i:i + _PIECE], ln[i:i + _PIECE]
        has = a >= 0
        n = np.where(has, n, 0)
        offsets = np.zeros(len(a) + 1, np.int64)
        np.cumsum(n, out=offsets[1:])
        total = int(offsets[-1])
        gather = np.repeat(a - offsets[:-1], n) + np.arange(total) if total else np.zeros(0, np.int64)
        raw = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(a),
                                               [pa.py_buffer(np.packbits(has, bitorder="little")),
                                                pa.py_buffer(offsets), pa.py_buffer(buf[gather])],
                                               null_count=int(len(a) - has.sum()))
        try:
            pieces.append(raw.cast(pa.large_string()).cast(pa.string()))
        except pa.ArrowInvalid:                   # some value is not UTF-8: that one is null
            pieces.append(pa.array([_text(x) for x in raw.to_pylist()], pa.string()))
    if not pieces:
        return pa.array([], pa.string())
    return pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)


def _text(b):
    if b is None:
        return None
    try:
        return b.decode()
    except UnicodeDecodeError:
        return None
