"""CRC-32C (Castagnoli), the checksum of Kafka's record batches v2 (DefaultRecordBatch.java's
Crc32C.compute over everything after the CRC field).

    crc32c(data, value=0) -> int      the C library `crc32c` when it is installed, else pure_crc32c

pure_crc32c is a table-driven version for where the C one has no wheel (Pyodide, the browser kit:
docs/workshop.md); it gives the same results (tests/test_records_crc.py) at ~4 MB/s, plenty for the
notebooks' batches. `value` continues a running checksum, as the C library's second argument does."""
from __future__ import annotations

__all__ = ["crc32c", "pure_crc32c", "IMPLEMENTATION"]

_POLY = 0x82F63B78          # the Castagnoli polynomial 0x1EDC6F41, bit-reversed (CRC-32C reads bits low first)


def _table() -> tuple[int, ...]:
    out = []
    for i in range(256):
        r = i
        for _ in range(8):
            r = (r >> 1) ^ _POLY if r & 1 else r >> 1
        out.append(r)
    return tuple(out)


_TABLE = _table()


def pure_crc32c(data, value: int = 0) -> int:
    """The CRC-32C of `data` (bytes, bytearray or memoryview), continuing from `value`."""
    t = _TABLE
    crc = value ^ 0xFFFFFFFF
    for b in bytes(data):
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    from crc32c import crc32c
    IMPLEMENTATION = "crc32c"
except ImportError:          # no wheel for this platform (Pyodide)
    crc32c = pure_crc32c
    IMPLEMENTATION = "pure"
