"""Kafka's variable-length integers: unsigned varints for lengths and tags, zigzag varints in records."""
from __future__ import annotations

from ..errors import DecodeError


def _read_unsigned(buf: bytes, pos: int, path: str, max_bytes: int, bits: int, what: str) -> tuple[int, int]:
    n = len(buf)
    value = shift = 0
    start = pos
    while True:
        if pos >= n:
            raise DecodeError(f"truncated {what}", start, path)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 7 * max_bytes:
            raise DecodeError(f"{what} longer than {max_bytes} bytes", start, path)
    if value >> bits:
        raise DecodeError(f"{what} exceeds {bits} bits", start, path)
    return value, pos


def read_uvarint(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (a Java int); returns (value, new position)."""
    return _read_unsigned(buf, pos, path, 5, 32, "varint")


def read_uvarlong(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Unsigned varint of at most 10 bytes (a Java long)."""
    return _read_unsigned(buf, pos, path, 10, 64, "varlong")


def read_varint(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Zigzag-encoded signed 32-bit varint."""
    u, pos = read_uvarint(buf, pos, path)
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes, pos: int, path: str = "") -> tuple[int, int]:
    """Zigzag-encoded signed 64-bit varint."""
    u, pos = read_uvarlong(buf, pos, path)
    return (u >> 1) ^ -(u & 1), pos


def write_uvarint(w: bytearray, value: int) -> None:
    """Append an unsigned varint (7 bits a byte, low first)."""
    while value >= 0x80:
        w.append((value & 0x7F) | 0x80)
        value >>= 7
    w.append(value)


def uvarint_bytes(value: int) -> bytes:
    """An unsigned varint's bytes."""
    w = bytearray()
    write_uvarint(w, value)
    return bytes(w)


def write_varint(w: bytearray, value: int) -> None:
    """Append a signed int32 as a zigzag varint."""
    write_uvarint(w, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(w: bytearray, value: int) -> None:
    """Append a signed int64 as a zigzag varint."""
    write_uvarint(w, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def uvarint_size(value: int) -> int:
    """How many bytes an unsigned varint of `value` takes."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size
