"""Bad input gets a DecodeError/EncodeError naming offset and field: never a hang, never a raw
struct.error/IndexError, never an allocation larger than the input."""
from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz import codec
from kipviz.codec import DecodeError, EncodeError
from kipviz.schema import registry

from .strategies import message_values
from .test_codec_golden import SEED_BODY, SEED_EXAMPLE

NAME = "TxnOffsetCommitRequest"
CASES = [(n, v) for n, s in sorted(registry.messages().items()) for v in s.versions]


def _decode_or_error(name, version, data):
    try:
        return codec.decode(name, version, data)
    except DecodeError as e:
        assert 0 <= e.offset <= len(data) and isinstance(e.path, str)
        return e


def test_every_truncation_names_offset_and_field():
    for cut in range(len(SEED_BODY)):
        with pytest.raises(DecodeError) as e:
            codec.decode(NAME, 5, SEED_BODY[:cut])
        assert e.value.offset <= cut
    with pytest.raises(DecodeError, match="truncated varint|needs"):
        codec.decode(NAME, 5, SEED_BODY[:35])


def test_specific_errors():
    cases = [
        (SEED_BODY + b"\x00", "1 trailing bytes", len(SEED_BODY), ""),
        (b"\x00" + SEED_BODY[14:], "non-nullable", 0, "TransactionalId"),          # null TransactionalId
        (b"\x7f" + SEED_BODY[1:], "exceeds", 0, "TransactionalId"),                 # length beyond the data
        (b"\x03\xff\xfe" + SEED_BODY[14:], "invalid UTF-8", 1, "TransactionalId"),
        (b"\xff\xff\xff\xff\xff\x01" + SEED_BODY[1:], "longer than 5 bytes", 0, "TransactionalId"),
    ]
    for data, needle, offset, path in cases:
        with pytest.raises(DecodeError) as e:
            codec.decode(NAME, 5, data)
        assert needle in str(e.value) and e.value.offset == offset and e.value.path == path, str(e.value)


def test_huge_array_count_is_refused_before_allocating():
    at = SEED_BODY.index(b"\x02\x07orders")
    data = SEED_BODY[:at] + b"\xff\xff\xff\xff\x0f" + SEED_BODY[at + 1:]    # ~4 billion topics
    with pytest.raises(DecodeError, match="array count .* exceeds") as e:
        codec.decode(NAME, 5, data)
    assert e.value.offset == at and e.value.path == "Topics"
    # non-flexible: int32 count
    v1 = codec.encode(NAME, 1, {k: SEED_EXAMPLE[k] for k in ("TransactionalId", "GroupId", "ProducerId", "ProducerEpoch")} | {"Topics": []})
    with pytest.raises(DecodeError, match="exceeds"):
        codec.decode(NAME, 1, v1[:-4] + struct.pack(">i", 2**31 - 1))
    with pytest.raises(DecodeError, match="invalid array count -2"):
        codec.decode(NAME, 1, v1[:-4] + struct.pack(">i", -2))


def test_unknown_versions_and_names():
    with pytest.raises(DecodeError, match="no version 99"):
        codec.decode(NAME, 99, SEED_BODY)
    with pytest.raises(EncodeError, match="no version -1"):
        codec.encode(NAME, -1, SEED_EXAMPLE)
    with pytest.raises(DecodeError, match="no message named 'NoSuchRequest'"):
        codec.decode("NoSuchRequest", 0, b"")
    with pytest.raises(DecodeError, match="api key 12345"):
        codec.decode_request(struct.pack(">ihhi", 8, 12345, 0, 1))
    with pytest.raises(DecodeError, match="frame size"):
        codec.decode_request(struct.pack(">i", 100) + b"\x00" * 10)


@pytest.mark.parametrize("change,path,needle", [
    ({"ProducerEpoch": 40000}, "ProducerEpoch", "out of range for int16"),
    ({"ProducerId": "7"}, "ProducerId", "expected an integer"),
    ({"GroupId": None}, "GroupId", "null is not allowed"),
    ({"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0}]}]}, "Topics[0].Partitions[0].CommittedOffset", "missing field"),
    ({"Topics": [{"Name": 5, "Partitions": []}]}, "Topics[0].Name", "expected a string"),
    ({"Topics": "orders"}, "Topics", "expected a list"),
    ({"Bogus": 1}, "Bogus", "unknown field"),
])
def test_encode_errors_name_the_field(change, path, needle):
    with pytest.raises(EncodeError) as e:
        codec.encode(NAME, 5, SEED_EXAMPLE | change)
    assert e.value.path == path and needle in str(e.value)


def test_encode_missing_field_and_version_rules():
    value = dict(SEED_EXAMPLE)
    del value["MemberId"]
    with pytest.raises(EncodeError, match="missing field") as e:
        codec.encode(NAME, 5, value)
    assert e.value.path == "MemberId"
    # a non-ignorable field cannot silently vanish at an older version
    with pytest.raises(EncodeError, match="not part of this version"):
        codec.encode(NAME, 2, SEED_EXAMPLE)
    # the renamed field is accepted under both names, never twice
    with pytest.raises(EncodeError, match="given twice"):
        codec.encode(NAME, 5, SEED_EXAMPLE | {"GenerationIdOrMemberEpoch": 5})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CASES), st.binary(max_size=64))
def test_random_buffers_never_crash(case, data):
    _decode_or_error(*case, data)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CASES), st.data())
def test_byte_edits_and_inflated_lengths_never_crash(case, data):
    name, version = case
    wire = codec.encode(name, version, data.draw(message_values(registry.get(name), version)))
    if not wire:
        return
    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    buf = bytearray(wire)
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randrange(len(buf))
        buf[i] = rnd.choice([0x00, 0x7F, 0x80, 0xFF, rnd.randrange(256)])
    _decode_or_error(name, version, bytes(buf))
    # inflate every length/count prefix the annotator found, one at a time
    for s in codec.annotate(name, version, wire):
        if s.role in ("length", "count", "tag-size", "tag-count"):
            big = bytearray(wire)
            big[s.start:s.end] = b"\xff" * (s.end - s.start)
            _decode_or_error(name, version, bytes(big))
            break


def test_memory_stays_bounded_by_input():
    # a 40-byte input that claims gigabytes must not allocate them
    data = b"\x01\x01" + b"\xff\xff\xff\xff\x07" * 7
    tracemalloc.start()
    for name, v in CASES[::5]:
        _decode_or_error(name, v, data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
