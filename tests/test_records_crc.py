"""CRC-32C both ways: the C library `crc32c` where it is installed, kipviz.records.crc.pure_crc32c
where it is not (Pyodide, the browser kit), with the same results."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import crc32c as c_crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.records import crc


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.binary(max_size=300))
def test_pure_crc32c_is_the_c_one(a, b):
    assert crc.pure_crc32c(a) == c_crc32c.crc32c(a)
    assert crc.pure_crc32c(memoryview(a + b)[len(a):]) == c_crc32c.crc32c(b)
    # continuing a running checksum, as the C library's second argument does
    assert crc.pure_crc32c(b, crc.pure_crc32c(a)) == c_crc32c.crc32c(b, c_crc32c.crc32c(a)) == c_crc32c.crc32c(a + b)


def test_check_value_and_the_installed_one():
    assert crc.pure_crc32c(b"123456789") == 0xE3069283        # CRC-32C's published check value
    assert crc.pure_crc32c(b"") == 0
    assert crc.IMPLEMENTATION == "crc32c" and crc.crc32c is c_crc32c.crc32c


def test_records_without_the_c_library():
    """With `crc32c` not importable, kipviz.records takes the pure one: a batch it writes is the
    C library's batch byte for byte, and a corrupted one is still refused."""
    code = textwrap.dedent("""
        import sys
        sys.modules["crc32c"] = None                 # as on Pyodide: no such module
        from kipviz.records import crc, read_batches, write_batch
        assert crc.IMPLEMENTATION == "pure", crc.IMPLEMENTATION
        data = write_batch([{"key": b"k", "value": b"v" * 100, "headers": [("h", b"1")]}] * 3,
                           base_offset=5, producer_id=7, producer_epoch=1)
        assert [r["value"] for r in read_batches(data)[0]["records"]] == [b"v" * 100] * 3
        bad = bytearray(data); bad[-1] ^= 1
        try:
            read_batches(bytes(bad))
        except ValueError as e:
            assert "crc" in str(e).lower(), e
        else:
            raise AssertionError("a corrupted batch was read")
        sys.stdout.write(data.hex())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    from kipviz.records import write_batch
    same = write_batch([{"key": b"k", "value": b"v" * 100, "headers": [("h", b"1")]}] * 3,
                       base_offset=5, producer_id=7, producer_epoch=1)
    assert bytes.fromhex(out.stdout) == same
