"""The codec's shape fast paths (homogeneous arrays of structs) against the generic code.

Every check builds two fresh plans for the same message version: one with the shape paths
(compiled on first sight here) and one generated without them. Values, spans, bytes and errors
must be identical, whatever the array looks like: homogeneous, a different element first, in the
middle or last, a truncated region, non-canonical varints, tagged fields, bad UTF-8."""
from __future__ import annotations

import random
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.codec import gen_decode, gen_encode
from kipviz.codec.plan import Plan
from kipviz.errors import DecodeError, EncodeError
from kipviz.schema import registry
from kipviz.schema.resolve import resolve

from .strategies import message_values

TXN = "TxnOffsetCommitRequest"


class Pair:
    """A plan with shape paths (compiled the first time a shape is seen) and one without."""

    def __init__(self, name: str, version: int):
        vm = resolve(registry.get(name), version)
        self.fast, self.ref = Plan(vm), Plan(vm)
        saved = gen_decode.SHAPES, gen_encode.SHAPES
        try:
            gen_decode.SHAPES = gen_encode.SHAPES = False
            self.ref._decoder(), self.ref._annotator(), self.ref._encoder()
        finally:
            gen_decode.SHAPES, gen_encode.SHAPES = saved
        assert "_shape" not in self.ref.decode_source

    def shapes(self, kind: str = "decode") -> list:
        fn = {"decode": self.fast._decoder, "annotate": self.fast._annotator, "encode": self.fast._encoder}[kind]()
        return [f for site in fn.shape_sites for f in site.cache.values() if f]

    def decode(self, data: bytes):
        """Fast decode == generic decode == the annotators' values; spans identical; or the same error."""
        results = []
        for p in (self.fast, self.ref):
            try:
                results.append(("ok", p.decode(data)))
            except DecodeError as e:
                results.append(("error", (str(e), e.offset, e.path)))
        assert results[0] == results[1]
        anns = []
        for p in (self.fast, self.ref):
            try:
                value, end, spans = p.annotate_at(data)
                anns.append(("ok", value, end, spans))
            except DecodeError as e:
                anns.append(("error", (str(e), e.offset, e.path)))
        assert anns[0] == anns[1]
        if results[0][0] == "ok" and anns[0][0] == "ok" and anns[0][2] == len(data):
            assert anns[0][1] == results[0][1]
        return results[0]

    def encode(self, value) -> bytes:
        out = []
        for p in (self.fast, self.ref):
            try:
                out.append(("ok", p.encode(value)))
            except EncodeError as e:
                out.append(("error", (e.reason, e.path)))
        assert out[0] == out[1]
        if out[0][0] == "error":
            raise EncodeError(*out[0][1])
        return out[0][1]


@pytest.fixture(autouse=True)
def _compile_shapes_at_once(monkeypatch):
    monkeypatch.setattr(gen_decode, "SHAPE_MIN_SEEN", 1)
    monkeypatch.setattr(gen_encode, "ENC_SHAPE_MIN_SEEN", 1)


def _partition(i: int, meta="", epoch=5):
    return {"PartitionIndex": i, "CommittedOffset": 1_000_000 + i, "CommittedLeaderEpoch": epoch,
            "CommittedMetadata": meta}


def _txn(partitions, topics=1, version=5):
    value = {"TransactionalId": "tx", "GroupId": "g", "ProducerId": 7, "ProducerEpoch": 1,
             "Topics": [{"Name": f"t{t}", "Partitions": partitions} for t in range(topics)]}
    if version >= 3:
        value |= {"GenerationIdOrMemberEpoch": 3, "MemberId": "m", "GroupInstanceId": None}
    if version < 2:
        for p in partitions:
            p.pop("CommittedLeaderEpoch", None)
    return value


# ---- homogeneous arrays ---------------------------------------------------------------------------
@pytest.mark.parametrize("meta", ["", None, "abc", "é" * 10])
def test_homogeneous_partitions_take_the_shape_path(meta):
    pair = Pair(TXN, 5)
    value = _txn([_partition(i, meta) for i in range(10)], topics=3)
    wire = pair.encode(value)
    assert pair.decode(wire) == ("ok", value)
    assert len(pair.shapes("decode")) == 1 and len(pair.shapes("annotate")) == 1
    assert pair.shapes("encode")
    spans = pair.fast.annotate(wire)
    starts = [s.start for s in spans]
    assert [(s.start, s.end) for s in spans] == list(zip(starts, starts[1:] + [len(wire)], strict=True))
    assert spans[-3].path == "Topics[2].Partitions[9]._tags"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_non_flexible_versions_int16_lengths_and_int32_counts(version):
    pair = Pair(TXN, version)
    for meta in ("", None, "xyz"):
        value = _txn([_partition(i, meta) for i in range(6)], version=version)
        wire = pair.encode(value)
        assert pair.decode(wire) == ("ok", value)
    assert pair.shapes("decode")


@pytest.mark.parametrize("where", [0, 4, 9])
@pytest.mark.parametrize("odd", [dict(meta="x"), dict(meta=None), dict(meta="é"), dict(epoch=-1)])
def test_one_different_element_first_middle_or_last(where, odd):
    pair = Pair(TXN, 5)
    parts = [_partition(i) for i in range(10)]
    parts[where] = _partition(where, **{"meta": "", **odd})
    value = _txn(parts, topics=2)
    wire = pair.encode(value)
    assert pair.decode(wire) == ("ok", value)


def test_unknown_tagged_field_in_one_element():
    pair = Pair(TXN, 5)
    parts = [_partition(i) for i in range(5)]
    parts[3] = parts[3] | {"_unknownTaggedFields": [(9, b"\x01\x02")]}
    value = _txn(parts)
    wire = pair.encode(value)
    assert pair.decode(wire) == ("ok", value)


def test_non_canonical_varint_lengths_fall_back():
    pair = Pair(TXN, 5)
    value = _txn([_partition(i) for i in range(4)])
    wire = pair.encode(value)
    plen = struct.calcsize(">iqi")
    start = wire.index(struct.pack(">iqi", 0, 1_000_000, 5))
    for k in (0, 2, 3):                      # CommittedMetadata "" written as 0x81 0x00 (= 1)
        at = start + k * (plen + 2) + plen
        assert wire[at] == 1
        odd = wire[:at] + b"\x81\x00" + wire[at + 1:]
        status, got = pair.decode(odd)
        assert status == "ok" and got == value


def test_empty_and_single_element_arrays():
    pair = Pair(TXN, 5)
    for parts in ([], [_partition(0)], [_partition(0), _partition(1)]):
        value = _txn(parts)
        assert pair.decode(pair.encode(value)) == ("ok", value)


# ---- bad bytes inside the speculative region --------------------------------------------------------
def test_truncated_region_reports_what_the_generic_decoder_reports():
    pair = Pair(TXN, 5)
    wire = pair.encode(_txn([_partition(i) for i in range(8)], topics=2))
    pair.decode(wire)                        # compile the shape
    for cut in range(len(wire)):
        status, _ = pair.decode(wire[:cut])
        assert status == "error"


def test_inflated_counts_and_bad_structural_bytes():
    pair = Pair(TXN, 5)
    wire = pair.encode(_txn([_partition(i, "ab") for i in range(6)], topics=2))
    pair.decode(wire)
    rnd = random.Random(7)
    for i in range(len(wire)):
        for b in (0x00, 0x01, 0x7F, 0x80, 0xFF, rnd.randrange(256)):
            pair.decode(wire[:i] + bytes([b]) + wire[i + 1:])


def test_invalid_utf8_in_a_middle_element_names_the_byte():
    pair = Pair(TXN, 5)
    wire = bytearray(pair.encode(_txn([_partition(i, "ab") for i in range(6)])))
    at = [i for i in range(len(wire) - 1) if wire[i:i + 2] == b"ab"][3]
    wire[at] = 0xFF
    status, (msg, offset, path) = pair.decode(bytes(wire))
    assert status == "error" and "UTF-8" in msg and offset == at and path == "Topics[0].Partitions[3].CommittedMetadata"


# ---- MetadataResponse: arrays of numbers, uuids, bools inside elements -------------------------------------
def _metadata(nparts=6, replicas=3):
    return {
        "ThrottleTimeMs": 0,
        "Brokers": [{"NodeId": b, "Host": f"h{b}", "Port": 9092, "Rack": None} for b in range(3)],
        "ClusterId": None, "ControllerId": 1,
        "Topics": [{"ErrorCode": 0, "Name": f"topic-{t}", "TopicId": uuid.UUID(int=t + 1), "IsInternal": t == 1,
                    "Partitions": [{"ErrorCode": 0, "PartitionIndex": p, "LeaderId": 1, "LeaderEpoch": 2,
                                    "ReplicaNodes": list(range(replicas)), "IsrNodes": list(range(replicas)),
                                    "OfflineReplicas": []} for p in range(nparts)],
                    "TopicAuthorizedOperations": -2147483648} for t in range(3)],
        "ClusterAuthorizedOperations": -2147483648, "ErrorCode": 0,
    }


@pytest.mark.parametrize("version", [1, 5, 9, 12, 13])
def test_metadata_arrays_of_numbers(version):
    pair = Pair("MetadataResponse", version)
    spec = registry.get("MetadataResponse")
    value = pair.fast.normalize({k: v for k, v in _metadata().items()
                                 if any(f.name == k for f in resolve(spec, version).fields)})
    wire = pair.encode(value)
    assert pair.decode(wire) == ("ok", value)
    assert pair.shapes("decode")
    # a partition with another replica count in the middle, and one at the end
    for where in (2, 5):
        v2 = pair.fast.normalize(value)
        v2["Topics"][0]["Partitions"][where]["ReplicaNodes"] = [7, 8, 9, 10]
        v2["Topics"][1]["Partitions"][where]["IsrNodes"] = []
        assert pair.decode(pair.encode(v2)) == ("ok", v2)


# ---- encode ------------------------------------------------------------------------------------------
def test_encode_shapes_keep_errors_and_fallbacks():
    pair = Pair(TXN, 5)
    parts = [_partition(i) for i in range(5)]
    for bad, path in ((dict(CommittedOffset="x"), "Topics[0].Partitions[2].CommittedOffset"),
                      (dict(CommittedMetadata=5), "Topics[0].Partitions[2].CommittedMetadata"),
                      (dict(PartitionIndex=2**40), "Topics[0].Partitions[2].PartitionIndex")):
        p2 = list(parts)
        p2[2] = parts[2] | bad
        with pytest.raises(EncodeError) as e:
            pair.encode(_txn(p2))
        assert e.value.path == path
    # long strings need multi-byte lengths; aliases and missing tagged fields go through normalize
    long = [_partition(i, "m" * 200) for i in range(3)]
    assert pair.decode(pair.encode(_txn(long))) == ("ok", _txn(long))
    aliased = _txn(parts)
    aliased["GenerationId"] = aliased.pop("GenerationIdOrMemberEpoch")
    assert pair.encode(aliased) == pair.encode(_txn(parts))


def test_encode_packed_runs_of_top_level_fields():
    pair = Pair(TXN, 5)
    parts = [_partition(i) for i in range(3)]
    for change in ({}, {"TransactionalId": "t" * 300}, {"GroupInstanceId": "static-1"},
                   {"MemberId": ""}, {"GroupId": "g" * 126}, {"GroupId": "g" * 127}):
        value = _txn(parts) | change
        assert pair.decode(pair.encode(value)) == ("ok", value)
    for bad, path in (({"ProducerId": "x"}, "ProducerId"), ({"GroupId": None}, "GroupId"),
                      ({"GroupInstanceId": 3}, "GroupInstanceId"), ({"ProducerEpoch": 2**15}, "ProducerEpoch")):
        with pytest.raises(EncodeError) as e:
            pair.encode(_txn(parts) | bad)
        assert e.value.path == path


def test_encode_arrays_of_numbers_of_every_size():
    pair = Pair("MetadataResponse", 12)
    value = pair.fast.normalize(_metadata(nparts=2))
    for n in (0, 1, 63, 64, 200):
        value["Topics"][0]["Partitions"][1]["ReplicaNodes"] = list(range(n))
        assert pair.decode(pair.encode(value)) == ("ok", value)


def test_shape_caches_stay_bounded(monkeypatch):
    monkeypatch.setattr(gen_decode, "SHAPE_CACHE_MAX", 8)
    pair = Pair(TXN, 5)
    for k in range(40):
        pair.decode(pair.encode(_txn([_partition(i, "x" * k) for i in range(3)])))
    for site in pair.fast._decoder().shape_sites:
        assert len(site.cache) <= 8


def test_shapes_wait_for_a_second_sighting(monkeypatch):
    monkeypatch.setattr(gen_decode, "SHAPE_MIN_SEEN", 2)
    monkeypatch.setattr(gen_encode, "ENC_SHAPE_MIN_SEEN", 2)
    pair = Pair(TXN, 5)
    value = _txn([_partition(i, "x" * i) for i in range(4)])      # every element a new length
    wire = pair.encode(value)
    assert not pair.shapes("encode")
    assert pair.encode(value) == wire
    assert len(pair.shapes("encode")) >= 4
    value = _txn([_partition(i) for i in range(4)])
    wire = pair.encode(value)
    pair.fast.decode(wire)
    assert not pair.shapes("decode")
    pair.fast.decode(wire)
    assert pair.shapes("decode")


def test_a_shape_that_keeps_missing_is_retired():
    pair = Pair(TXN, 5)
    parts = [_partition(0)] + [_partition(i, "zz") for i in range(1, 6)]   # first element unlike the rest
    value = _txn(parts)
    wire = pair.encode(value)
    for _ in range(gen_decode.SHAPE_RETIRE_AFTER + 2):
        assert pair.fast.decode(wire) == value
    site = pair.fast._decoder().shape_sites[0]
    assert site.cache == {1: False}
    assert pair.decode(wire) == ("ok", value)


def test_a_site_that_keeps_meeting_new_shapes_stops_compiling(monkeypatch):
    monkeypatch.setattr(gen_decode, "SHAPE_MAX_COMPILES", 5)
    pair = Pair(TXN, 5)
    for k in range(12):
        value = _txn([_partition(i, "y" * k) for i in range(3)])
        assert pair.decode(pair.encode(value)) == ("ok", value)
    site = pair.fast._decoder().shape_sites[0]
    assert site.compiles == 5 and len([f for f in site.cache.values() if f]) <= 5


# ---- random messages, arrays made homogeneous ----------------------------------------------------------
CASES = [(n, v) for n, s in sorted(registry.messages().items()) for v in s.versions]
_PAIRS: dict = {}


def _pair(name, version) -> Pair:
    if (name, version) not in _PAIRS:
        _PAIRS[(name, version)] = Pair(name, version)
    return _PAIRS[(name, version)]


def _homogenize(fields, value, rnd):
    """Repeat the first element of every array of structs (sometimes with one other element)."""
    for f in fields:
        x = value.get(f.name)
        if not f.is_struct or x is None:
            continue
        if f.is_array:
            for e in x:
                _homogenize(f.fields, e, rnd)
            if x:
                rep = [x[0]] * rnd.randint(2, 6)
                if len(x) > 1 and rnd.random() < 0.5:
                    rep[rnd.randrange(len(rep))] = x[1]
                value[f.name] = rep
        else:
            _homogenize(f.fields, x, rnd)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CASES), st.data())
def test_random_homogeneous_messages(case, data):
    name, version = case
    pair = _pair(name, version)
    value = data.draw(message_values(registry.get(name), version))
    _homogenize(pair.fast.vm.fields, value, random.Random(data.draw(st.integers(0, 2**32))))
    wire = pair.encode(value)
    status, got = pair.decode(wire)
    assert status == "ok" and got == value
    assert pair.encode(got) == wire
    # and the same bytes with one byte changed
    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    if wire:
        i = rnd.randrange(len(wire))
        pair.decode(wire[:i] + bytes([rnd.choice([0, 1, 0x7F, 0x80, 0xFF])]) + wire[i + 1:])
