"""Kafka's variable-length integers: unsigned varints for lengths and tags, zigzag varints in records."""
from __future__ import annotations

from ..errors import DecodeError


def read_uvarint(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (a Java int); returns (value, new position)."""
    n = len(buf)
    value = shift = 0
    start = pos
    while True:
        if pos >= n:
            raise DecodeError("truncated varint", start, path)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise DecodeError("varint longer than 5 bytes", start, path)
    if value > 0xFFFFFFFF:
        raise DecodeError("varint exceeds 32 bits", start, path)
    return value, pos


def read_uvarlong(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Unsigned varint of at most 10 bytes (a Java long)."""
    n = len(buf)
    value = shift = 0
    start = pos
    while True:
        if pos >= n:
            raise DecodeError("truncated varlong", start, path)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise DecodeError("varlong longer than 10 bytes", start, path)
    if value > 0xFFFFFFFFFFFFFFFF:
        raise DecodeError("varlong exceeds 64 bits", start, path)
    return value, pos


def read_varint(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Zigzag-encoded signed 32-bit varint."""
    u, pos = read_uvarint(buf, pos, path)
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Zigzag-encoded signed 64-bit varint."""
    u, pos = read_uvarlong(buf, pos, path)
    return (u >> 1) ^ -(u & 1), pos


def write_uvarint(w: bytearray, value: int) -> None:
    while value >= 0x80:
        w.append((value & 0x7F) | 0x80)
        value >>= 7
    w.append(value)


def uvarint_bytes(value: int) -> bytes:
    w = bytearray()
    write_uvarint(w, value)
    return bytes(w)


def write_varint(w: bytearray, value: int) -> None:
    write_uvarint(w, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(w: bytearray, value: int) -> None:
    write_uvarint(w, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def uvarint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size
