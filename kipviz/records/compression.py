"""The compression codecs of record batch v2 (attribute bits 0-2), as Kafka's Java client writes them.

    id  name    format on the wire
    0   none    records as they are
    1   gzip    a gzip stream (RFC 1952; Python's stdlib zlib, several members allowed)
    2   snappy  the *xerial* block framing Java's SnappyOutputStream writes: a 16-byte header
                (0x82 "SNAPPY" 0x00, int32 version 1, int32 compatible 1) then blocks of
                int32 big-endian length + raw snappy, each holding at most 32 KiB of input.
                librdkafka and some other clients write one *raw* snappy block instead; both
                are read.
    3   lz4     the LZ4 *frame* format (magic 04 22 4D 18) with independent blocks: Java's
                Lz4BlockInputStream refuses linked blocks, so kipviz writes them independent.
    4   zstd    zstd frames (several frames allowed)

snappy, lz4 and zstd go through the `cramjam` package; if it is missing, kipviz says so
(`pip install cramjam`). Decompression is capped (`MAX_DECOMPRESSED`, 64 MiB per batch by
default) so that a small "decompression bomb" fails with a clear error instead of eating memory.
"""
from __future__ import annotations

import gzip
import struct
import zlib

from ..errors import DecodeError, EncodeError

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: i for i, name in enumerate(CODEC_NAMES)}
MAX_DECOMPRESSED = 64 * 1024 * 1024

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
XERIAL_MAGIC = XERIAL_HEADER[:8]
XERIAL_BLOCK = 32 * 1024
LZ4_MAGIC = b"\x04\x22\x4d\x18"

_cramjam = None


def _need_cramjam(codec: str, err_type, offset: int = 0, path: str = ""):
    global _cramjam
    if _cramjam is None:
        try:
            import cramjam
        except ImportError:
            msg = (f"{codec} compression needs the cramjam package, which is not installed: "
                   f"pip install cramjam")
            if err_type is DecodeError:
                raise DecodeError(msg, offset, path) from None
            raise EncodeError(msg, path) from None
        _cramjam = cramjam
    return _cramjam


def codec_id(compression) -> int:
    """'gzip' -> 1; accepts a name (any case), an id 0-4 or None (= none)."""
    if compression is None:
        return 0
    if isinstance(compression, bool):
        raise EncodeError(f"unknown compression {compression!r}", "compression")
    if isinstance(compression, int):
        if 0 <= compression < len(CODEC_NAMES):
            return compression
    elif isinstance(compression, str) and compression.lower() in CODEC_IDS:
        return CODEC_IDS[compression.lower()]
    raise EncodeError(f"unknown compression {compression!r} (one of {', '.join(CODEC_NAMES)})",
                      "compression")


def codec_name(cid: int) -> str:
    """The name of a compression codec id ("gzip", ...), "unknown(N)" for an id Kafka does not define."""
    return CODEC_NAMES[cid] if 0 <= cid < len(CODEC_NAMES) else f"unknown({cid})"


# ---- compress --------------------------------------------------------------------------------
def compress(compression, data: bytes, level: int | None = None) -> bytes:
    """Compress `data` the way Kafka's Java producer would for this codec."""
    cid = codec_id(compression)
    data = bytes(data)
    if cid == 0:
        return data
    if cid == 1:
        return gzip.compress(data, compresslevel=6 if level is None else level, mtime=0)
    cj = _need_cramjam(CODEC_NAMES[cid], EncodeError, path="compression")
    if cid == 2:
        out = bytearray(XERIAL_HEADER)
        for i in range(0, len(data), XERIAL_BLOCK):
            block = bytes(cj.snappy.compress_raw(data[i:i + XERIAL_BLOCK]))
            out += struct.pack(">i", len(block))
            out += block
        return bytes(out)
    if cid == 3:
        c = cj.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        c.compress(data)
        return bytes(c.finish())
    return bytes(cj.zstd.compress(data, level=3 if level is None else level))


# ---- decompress ------------------------------------------------------------------------------
def _bomb(cname: str, limit: int, offset: int, path: str):
    return DecodeError(f"{cname} data decompresses to more than {limit} bytes "
                       f"(decompression bomb guard; raise max_decompressed to allow it)", offset, path)


def decompress(cid: int, data: bytes, *, limit: int = MAX_DECOMPRESSED, offset: int = 0,
               path: str = "") -> bytes:
    """Inverse of compress(); any failure is a DecodeError at `offset` (the blob's first byte)."""
    if cid == 0:
        return bytes(data)
    cname = codec_name(cid)
    if cid == 1:
        return _gunzip(data, limit, offset, path)
    if not 1 <= cid <= 4:
        raise DecodeError(f"unknown compression codec {cid}", offset, path)
    cj = _need_cramjam(cname, DecodeError, offset, path)
    data = bytes(data)
    try:
        if cid == 2:
            return _unsnappy(cj, data, limit, offset, path)
        if not data:
            raise DecodeError(f"empty {cname} data", offset, path)
        mod = cj.lz4 if cid == 3 else cj.zstd
        return _bounded(mod, data, limit, cname, offset, path)
    except (DecodeError, KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except BaseException as e:  # cramjam's DecompressionError, ValueError, or a Rust panic
        raise DecodeError(f"bad {cname} data: {type(e).__name__}: {e}", offset, path) from None


def _bounded(mod, data: bytes, limit: int, cname: str, offset: int, path: str) -> bytes:
    """cramjam's decompress_into stops when the output buffer is full ("failed to write whole
    buffer"), so a second try gets a buffer of limit + 1 bytes: a bomb costs two decompressions,
    not one per growth step."""
    size = min(limit + 1, max(1 << 18, 8 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = mod.decompress_into(data, out)
        except Exception as e:  # "failed to write whole buffer": the output did not fit
            if "whole buffer" not in str(e):
                raise
            if size > limit:
                raise _bomb(cname, limit, offset, path) from None
            size = limit + 1
            continue
        if n > limit:
            raise _bomb(cname, limit, offset, path)
        del out[n:]
        return bytes(out)


def _gunzip(data: bytes, limit: int, offset: int, path: str) -> bytes:
    out = []
    total = 0
    rest = bytes(data)
    if not rest:
        raise DecodeError("empty gzip data", offset, path)
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, limit + 1 - total)
        except zlib.error as e:
            raise DecodeError(f"bad gzip data: {e}", offset, path) from None
        total += len(chunk)
        out.append(chunk)
        if total > limit:
            raise _bomb("gzip", limit, offset, path)
        if not d.eof:
            raise DecodeError("truncated gzip data", offset, path)
        rest = d.unused_data
        if rest and not rest.startswith(b"\x1f\x8b"):
            raise DecodeError(f"{len(rest)} bytes after the end of the gzip stream", offset, path)
    return b"".join(out)


def _unsnappy(cj, data: bytes, limit: int, offset: int, path: str) -> bytes:
    if len(data) >= 16 and data[:8] == XERIAL_MAGIC:
        # version and compatible-version fields are ignored, as Java and kafka-python do
        # (some producers write them little-endian)
        out = []
        total = 0
        pos, n = 16, len(data)
        while pos < n:
            if pos + 4 > n:
                raise DecodeError(f"truncated xerial snappy block length at blob byte {pos}", offset, path)
            (blen,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if blen < 0 or pos + blen > n:
                raise DecodeError(f"xerial snappy block length {blen} at blob byte {pos - 4} "
                                  f"runs past the data ({n - pos} bytes left)", offset, path)
            block = data[pos:pos + blen]
            pos += blen
            total += _snappy_len(cj, block, offset, path)
            if total > limit:
                raise _bomb("snappy", limit, offset, path)
            out.append(bytes(cj.snappy.decompress_raw(block)))
        return b"".join(out)
    if _snappy_len(cj, data, offset, path) > limit:
        raise _bomb("snappy", limit, offset, path)
    return bytes(cj.snappy.decompress_raw(data))


def _snappy_len(cj, block: bytes, offset: int, path: str) -> int:
    try:
        return cj.snappy.decompress_raw_len(block)
    except Exception as e:
        raise DecodeError(f"bad snappy data: {e}", offset, path) from None
