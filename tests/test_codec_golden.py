"""Golden bytes: the seed's TxnOffsetCommit v5 example, headers and frames, and a byte-for-byte
cross-check with a real Kafka client implementation (kafka-python)."""
from __future__ import annotations

import importlib
import pkgutil
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz import codec
from kipviz.schema import registry

from .strategies import message_values

# Seed 002_e8b481d2dbff68db.txt: the TxnOffsetCommit v5 example, laid out field by field
SEED_EXAMPLE = {
    "TransactionalId": "tx-orders-001", "GroupId": "order-processors", "ProducerId": 0,
    "ProducerEpoch": 12, "GenerationId": 5, "MemberId": "consumer-1-abc123", "GroupInstanceId": None,
    "Topics": [{"Name": "orders", "Partitions": [{"PartitionIndex": 3, "CommittedOffset": 150382,
                                                   "CommittedLeaderEpoch": 12, "CommittedMetadata": None}]}],
}
SEED_BODY = b"".join([
    bytes([13 + 1]), b"tx-orders-001",          # TransactionalId: compact string (length + 1)
    bytes([16 + 1]), b"order-processors",       # GroupId
    struct.pack(">q", 0),                        # ProducerId int64
    struct.pack(">h", 12),                       # ProducerEpoch int16
    struct.pack(">i", 5),                        # GenerationId int32
    bytes([17 + 1]), b"consumer-1-abc123",      # MemberId
    b"\x00",                                     # GroupInstanceId: compact null
    b"\x02",                                     # Topics: compact array of 1
    b"\x07", b"orders",                         #   Name
    b"\x02",                                     #   Partitions: 1
    struct.pack(">iqi", 3, 150382, 12),          #     PartitionIndex, CommittedOffset, CommittedLeaderEpoch
    b"\x00",                                     #     CommittedMetadata: null
    b"\x00",                                     #     partition tagged fields: none
    b"\x00",                                     #   topic tagged fields
    b"\x00",                                     # top-level tagged fields
])


def test_seed_example_encodes_to_the_documented_layout():
    assert codec.encode("TxnOffsetCommitRequest", 5, SEED_EXAMPLE) == SEED_BODY
    back = codec.decode("TxnOffsetCommitRequest", 5, SEED_BODY)
    assert back["GenerationIdOrMemberEpoch"] == 5 and back["Topics"][0]["Name"] == "orders"


def test_seed_example_framed_with_request_header_v2():
    frame = codec.encode_request("TxnOffsetCommit", 5, SEED_EXAMPLE, correlation_id=7, client_id="kipviz")
    header = struct.pack(">hhi", 28, 5, 7) + struct.pack(">h", 6) + b"kipviz" + b"\x00"
    # ClientId keeps its int16 length even in flexible headers (flexibleVersions "none" in Kafka's
    # RequestHeader.json); the seed's diagram calls it "compact", which real Kafka never sends.
    assert frame == struct.pack(">i", len(header) + len(SEED_BODY)) + header + SEED_BODY
    d = codec.decode_request(frame)
    assert (d["api"], d["version"], d["header_version"], d["correlation_id"]) == ("TxnOffsetCommit", 5, 2, 7)
    assert d["header"]["ClientId"] == "kipviz" and d["body"]["MemberId"] == "consumer-1-abc123"


def test_v6_swaps_names_for_topic_ids_and_keeps_the_rest():
    tid = uuid.UUID("5d1c8ac4-1d3b-4e2f-9a6e-1f6c0d9b2a11")
    v6 = dict(SEED_EXAMPLE, Topics=[{"TopicId": tid, "Partitions": SEED_EXAMPLE["Topics"][0]["Partitions"]}])
    b6 = codec.encode("TxnOffsetCommitRequest", 6, v6)
    name_part = b"\x07orders"
    assert b6 == SEED_BODY.replace(name_part, tid.bytes)
    assert len(b6) - len(SEED_BODY) == 16 - len(name_part)


def test_header_versions_follow_flexible_versions():
    api = registry.get("ApiVersionsResponse")
    assert codec.response_header_version(api, 3) == 0          # the ApiVersions exception
    assert codec.response_header_version(registry.get("MetadataResponse"), 9) == 1
    assert codec.response_header_version(registry.get("MetadataResponse"), 8) == 0
    assert codec.request_header_version(registry.get("MetadataRequest"), 8) == 1
    assert codec.request_header_version(registry.get("MetadataRequest"), 9) == 2
    body = {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}], "ThrottleTimeMs": 0}
    frame = codec.encode_response("ApiVersions", 3, body, correlation_id=1)
    assert frame[4:8] == struct.pack(">i", 1) and frame[8:11] == b"\x00\x00\x02"   # no header tag buffer
    assert codec.decode_response(frame, "ApiVersions", 3)["body"]["ApiKeys"][0]["MaxVersion"] == 4


def test_unknown_tagged_fields_survive_a_round_trip():
    body = SEED_BODY[:-1] + b"\x02" + b"\x05\x03abc" + b"\x07\x01\xff"     # two tags Kafka does not know
    value = codec.decode("TxnOffsetCommitRequest", 5, body)
    assert value["_unknownTaggedFields"] == [(5, b"abc"), (7, b"\xff")]
    assert codec.encode("TxnOffsetCommitRequest", 5, value) == body
    spans = codec.annotate("TxnOffsetCommitRequest", 5, body)
    assert [s.role for s in spans[-7:]] == ["tag-count", "tag", "tag-size", "unknown", "tag", "tag-size", "unknown"]


def test_annotated_frame_covers_size_header_and_body():
    frame = codec.encode_request("TxnOffsetCommit", 5, SEED_EXAMPLE, correlation_id=9)
    spans = codec.annotate_request(frame)
    assert spans[0].path == "size" and spans[0].end == 4
    assert spans[1].path == "header.RequestApiKey" and spans[1].value == 28
    assert any(s.path == "body.Topics[0].Partitions[0].CommittedOffset" and s.value == 150382 for s in spans)
    assert [s.start for s in spans[1:]] == [s.end for s in spans[:-1]] and spans[-1].end == len(frame)


# ---- cross-check with kafka-python (a real client; dev dependency) ---------------------------
def _kafka_python_classes():
    kp = pytest.importorskip("kafka.protocol", reason="kafka-python not installed (pip install -e '.[dev]')")
    classes = {}
    for mod in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
        if ".old" in mod.name or "generate" in mod.name:
            continue
        try:
            m = importlib.import_module(mod.name)
        except Exception:
            continue
        for obj in vars(m).values():
            j = getattr(obj, "_json", None)
            if isinstance(obj, type) and isinstance(j, dict) and j.get("type") in ("request", "response"):
                classes.setdefault(j["name"], obj)
    return classes


KP = None


def _kp():
    global KP
    if KP is None:
        KP = _kafka_python_classes()
    return KP


def _kp_cases():
    from kipviz.schema.versions import Versions
    cases = []
    for name, cls in sorted(_kp().items()):
        if name not in registry.messages():
            continue
        valid = Versions.parse(cls._json["validVersions"])
        cases += [(name, v) for v in registry.get(name).versions if v in valid]
    return cases


@pytest.mark.parametrize("name,version", _kp_cases())
@settings(max_examples=15)
@given(data=st.data())
def test_kafka_python_reads_and_rewrites_kipviz_bytes_identically(name, version, data):
    value = data.draw(message_values(registry.get(name), version))
    if name == "ApiVersionsResponse":
        value["ErrorCode"] = 0      # on an error kafka-python re-reads the body as v0 (Kafka's fallback)
    wire = codec.encode(name, version, value)
    cls = _kp()[name]
    obj = cls.decode(wire, version=version)
    obj._header = None          # kafka-python leaves this slot unset after decode
    assert obj.encode(version=version) == wire
