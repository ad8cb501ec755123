"""Coordinator records of __consumer_offsets, __transaction_state and __share_group_state:
definitions vs Kafka's own schema files, round trips, hand-built golden bytes, tombstones, errors,
and the partition each key is stored in."""
from __future__ import annotations

import dataclasses
import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kipviz.errors import DecodeError, EncodeError
from kipviz.records import internal
from kipviz.records.internal import (
    AmbiguousRecordError,
    annotate_internal,
    decode_internal,
    dump_json,
    encode_internal,
)
from kipviz.records.partition import (
    INT_MIN,
    group_coordinator_partition,
    java_string_hash,
    kafka_abs,
    partition_for,
    share_coordinator_key,
    share_coordinator_partition,
    transaction_coordinator_partition,
)
from kipviz.schema.check import check_spec, reference_root, references
from kipviz.schema.compare import wire_differences
from kipviz.schema.loader import load_dir

from .strategies import message_values

DEFS = internal.definitions()
REF_ROOT = reference_root()
needs_ref = pytest.mark.skipif(
    REF_ROOT is None or not (REF_ROOT / "records").is_dir(),
    reason="Kafka reference schemas (../shared/kafka/records) not found; set KIPVIZ_KAFKA_REF to compare")

# Tagged fields Kafka added after the 2024-10 snapshot in ../shared/kafka/records. Tagged fields
# are skipped by readers that do not know them, so the versions did not change; the comparison
# with the snapshot must be clean once these are left out, and they must be the only difference.
LATER_TAGGED = {
    ("OffsetCommitValue", "topicId"): 0,                        # Kafka 4.1, KAFKA-19141 / KIP-1319
    ("ConsumerGroupMetadataValue", "MetadataHash"): 0,          # Kafka 4.1, KIP-1101
    ("ConsumerGroupMetadataValue", "CreationTimeMs"): 1,        # trunk, KIP-1282
    ("ConsumerGroupTargetAssignmentMetadataValue", "AssignmentTimestamp"): 0,   # KIP-1263
    ("ConsumerGroupCurrentMemberAssignmentValue", "AssignmentEpochs"): 0,       # KIP-1251
}
# Kafka 4.1 changed these value layouts in place (version 0 both times); the kit keeps the 2024-10
# layout under Kafka's name and the new one under a second name.
IN_PLACE = {"ShareSnapshotValueKafka41": "ShareSnapshotValue", "ShareUpdateValueKafka41": "ShareUpdateValue"}


def _strip(fields, names):
    return tuple(dataclasses.replace(f, fields=_strip(f.fields, names)) for f in fields if f.name not in names)


def _without_later_tags(spec):
    names = {f for (s, f) in LATER_TAGGED if s == spec.name}
    return dataclasses.replace(spec, fields=_strip(spec.fields, names)) if names else spec


@pytest.fixture(scope="module")
def refs():
    return {"records": references()["records"]}


# ---- definitions -------------------------------------------------------------------------------
def test_every_definition_loads_with_kit_labels():
    specs = load_dir(internal.DEFS_DIR, require_kit=True)
    assert len(specs) == 40
    for spec in specs.values():
        assert spec.type == "data" and spec.api_key is None and spec.kit.about
        assert all(spec.status(v) is not None for v in spec.versions)


def test_record_table_points_at_existing_definitions():
    for rt in internal.RECORD_TYPES:
        key = DEFS[rt.key]
        assert rt.type in key.valid and key.flexible.empty, rt      # keys: version = record type
        for name in rt.values:
            assert name in DEFS
    used = {rt.key for rt in internal.RECORD_TYPES} | {v for rt in internal.RECORD_TYPES for v in rt.values}
    assert used == set(DEFS)
    # record types are unique within a topic
    seen = [(rt.topic, rt.type) for rt in internal.RECORD_TYPES]
    assert len(seen) == len(set(seen))


@needs_ref
def test_every_reference_record_is_defined_with_all_its_versions(refs):
    for name, ref in refs["records"].items():
        assert name in DEFS, name
        assert set(ref.versions) <= set(DEFS[name].versions), name


@needs_ref
@pytest.mark.parametrize("name", sorted(DEFS))
def test_definition_matches_kafka_records(name, refs):
    spec = DEFS[name]
    later = {f for (s, f) in LATER_TAGGED if s == name}
    # apart from tagged fields added later, identical to Kafka's 2024-10 schema at every shared version
    assert check_spec(_without_later_tags(spec), refs) == []
    # and those later fields are tagged, with the tag listed, and unknown to the snapshot
    for f in later:
        fs = next(x for x in _walk(spec.fields) if x.name == f)
        assert fs.tag == LATER_TAGGED[(name, f)] and not fs.tagged.empty
        ref = refs["records"].get(name)
        assert ref is None or all(x.name != f for x in _walk(ref.fields))


def _walk(fields):
    for f in fields:
        yield f
        yield from _walk(f.fields)


@needs_ref
@pytest.mark.parametrize("new,old", sorted(IN_PLACE.items()))
def test_kafka41_share_layouts_differ_from_the_snapshot_only_as_documented(new, old, refs):
    ref = refs["records"][old]
    diffs = wire_differences(DEFS[new], ref, 0, names=False)
    assert any("SnapshotEpoch: type 'int32' vs 'uint16'" in d for d in diffs)
    assert DEFS[old].kit.statuses[0].removed == "4.1" and DEFS[new].kit.statuses[0].since == "4.1"


def test_offset_commit_value_v4_is_the_first_flexible_version():
    spec = DEFS["OffsetCommitValue"]
    assert [v for v in spec.versions if spec.is_flexible(v)] == [4]
    tid = spec.field_at("topicId")
    assert tid.tag == 0 and 4 in tid.tagged and 3 not in tid.versions


# ---- round trips ------------------------------------------------------------------------------
CASES = [(rt, vname, v) for rt in internal.RECORD_TYPES for vname in rt.values for v in DEFS[vname].versions]


@pytest.mark.parametrize("rt,vname,version", CASES,
                         ids=[f"{rt.topic[2:]}-{rt.type}-{vn}-v{v}" for rt, vn, v in CASES])
@given(data=st.data())
def test_round_trip(rt, vname, version, data):
    key = data.draw(message_values(DEFS[rt.key], rt.type))
    value = data.draw(message_values(DEFS[vname], version))
    kb, vb = encode_internal(rt.record, key, value, key_version=rt.type, value_version=version,
                             topic=rt.topic, value_spec=vname)
    assert struct.unpack_from(">h", kb)[0] == rt.type and struct.unpack_from(">h", vb)[0] == version
    d = decode_internal(kb, vb, rt.topic)
    assert (d["topic"], d["record"], d["record_type"], d["key"]) == (rt.topic, rt.record, rt.type, key)
    assert d["value_version"] == version and not d["tombstone"]
    if d["value_spec"] == vname:
        assert d["value"] == value
    else:   # the Kafka 4.0 share layout: these bytes happen to parse as the 4.1 layout as well
        assert vname in IN_PLACE.values()
        assert encode_internal(rt.record, d["key"], d["value"], key_version=rt.type, topic=rt.topic,
                               value_spec=d["value_spec"])[1] == vb
    # the spans cover every byte of key and value once, in order
    a = annotate_internal(kb, vb, rt.topic)
    for spans, wire in ((a["key_spans"], kb), (a["value_spans"], vb)):
        pos = 0
        for s in spans:
            assert s.start == pos
            pos = s.end
        assert pos == len(wire)
    # and a tombstone of the same key
    t = decode_internal(kb, None, rt.topic)
    assert t["tombstone"] and t["value"] is None and t["key"] == key


# ---- golden bytes, built by hand from the layouts -----------------------------------------------
def s16(text: str) -> bytes:          # non-flexible string: int16 length + UTF-8
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def compact(text: str) -> bytes:      # compact string: unsigned varint (length + 1) + UTF-8
    b = text.encode()
    assert len(b) < 127
    return bytes([len(b) + 1]) + b


KEY = {"group": "my-group", "topic": "orders", "partition": 3}
KEY_BYTES = struct.pack(">h", 1) + s16("my-group") + s16("orders") + struct.pack(">i", 3)
TOPIC_ID = uuid.UUID("5d1c8ac4-1d3b-4e2f-9a6e-1f6c0d9b2a11")


def test_offset_commit_key_v1_golden():
    kb, vb = encode_internal("OffsetCommit", KEY, None)
    assert kb == KEY_BYTES and vb is None
    # type 1 is also ShareUpdate in __share_group_state, but these bytes only fit OffsetCommit
    assert decode_internal(KEY_BYTES, None)["key"] == KEY


def test_offset_commit_key_type_0_is_still_read():
    kb, _ = encode_internal("OffsetCommit", KEY, None, key_version=0)
    assert kb == b"\x00\x00" + KEY_BYTES[2:]
    d = decode_internal(kb, None, "__consumer_offsets")
    assert d["record"] == "OffsetCommit" and d["record_type"] == 0 and d["key"] == KEY


def test_offset_commit_value_v3_golden():
    value = {"offset": 150382, "leaderEpoch": 12, "metadata": "hi", "commitTimestamp": 1_700_000_000_000}
    wire = (struct.pack(">h", 3) + struct.pack(">q", 150382) + struct.pack(">i", 12) + s16("hi")
            + struct.pack(">q", 1_700_000_000_000))
    assert encode_internal("OffsetCommit", KEY, value, value_version=3)[1] == wire
    d = decode_internal(KEY_BYTES, wire, "__consumer_offsets")
    assert d["value_version"] == 3 and d["value"] == value


def test_offset_commit_value_v1_has_expire_timestamp_and_no_leader_epoch():
    value = {"offset": 7, "metadata": "", "commitTimestamp": 1000, "expireTimestamp": 2000}
    wire = struct.pack(">hq", 1, 7) + s16("") + struct.pack(">qq", 1000, 2000)
    assert encode_internal("OffsetCommit", KEY, value, value_version=1)[1] == wire
    assert decode_internal(KEY_BYTES, wire, "__consumer_offsets")["value"] == value


def test_offset_commit_value_v4_with_topic_id_golden():
    value = {"offset": 150382, "leaderEpoch": 12, "metadata": "hi", "commitTimestamp": 1_700_000_000_000,
             "topicId": TOPIC_ID}
    wire = (struct.pack(">h", 4) + struct.pack(">q", 150382) + struct.pack(">i", 12)
            + compact("hi")                                  # flexible: compact string
            + struct.pack(">q", 1_700_000_000_000)
            + b"\x01"                                        # tag buffer: one tagged field
            + b"\x00" + b"\x10" + TOPIC_ID.bytes)            # tag 0, size 16, the Uuid
    kb, vb = encode_internal("OffsetCommit", KEY, value)     # v4 is the default (highest)
    assert (kb, vb) == (KEY_BYTES, wire)
    d = decode_internal(KEY_BYTES, wire, "__consumer_offsets")
    assert d["value"] == value and d["value_spec"] == "OffsetCommitValue"
    assert dump_json(d) == {
        "key": {"type": 1, "data": {"group": "my-group", "topic": "orders", "partition": 3}},
        "value": {"version": 4, "data": {"offset": 150382, "leaderEpoch": 12, "metadata": "hi",
                                         "commitTimestamp": 1_700_000_000_000,
                                         "topicId": "XRyKxB07Ti-abh9sDZsqEQ"}}}


def test_offset_commit_value_v4_zero_topic_id_is_not_written():
    value = {"offset": 1, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 2, "topicId": uuid.UUID(int=0)}
    wire = struct.pack(">hqi", 4, 1, -1) + b"\x01" + struct.pack(">q", 2) + b"\x00"
    assert encode_internal("OffsetCommit", KEY, value)[1] == wire
    assert decode_internal(KEY_BYTES, wire)["value"]["topicId"] == uuid.UUID(int=0)


def test_offset_commit_value_v4_bytes_from_a_kafka_4_1_broker():
    # A value read from __consumer_offsets of a Kafka 4.1.0 cluster, quoted in twmb/franz-go issue
    # #1105 (the v4 switch broke clients that assumed an int16 metadata length).
    wire = bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600")
    d = decode_internal(KEY_BYTES, wire)
    assert d["value"] == {"offset": 2217128, "leaderEpoch": -1, "metadata": "",
                          "commitTimestamp": 1758335260726, "topicId": uuid.UUID(int=0)}


def test_group_metadata_value_v3_golden():
    value = {"protocolType": "consumer", "generation": 5, "protocol": "range", "leader": "m1",
             "currentStateTimestamp": 99,
             "members": [{"memberId": "m1", "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
                          "rebalanceTimeout": 300000, "sessionTimeout": 45000, "subscription": b"\x01",
                          "assignment": b""}]}
    wire = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 5) + s16("range") + s16("m1")
            + struct.pack(">q", 99) + struct.pack(">i", 1)
            + s16("m1") + struct.pack(">h", -1) + s16("c") + s16("/h") + struct.pack(">ii", 300000, 45000)
            + struct.pack(">i", 1) + b"\x01" + struct.pack(">i", 0))
    kb, vb = encode_internal("GroupMetadata", {"group": "g"}, value, value_version=3)
    assert kb == struct.pack(">h", 2) + s16("g") and vb == wire
    assert decode_internal(kb, vb)["value"] == value


def test_transaction_log_value_v1_golden_with_tagged_fields():
    value = {"ProducerId": 1000, "PreviousProducerId": -1, "NextProducerId": -1, "ProducerEpoch": 3,
             "TransactionTimeoutMs": 60000, "TransactionStatus": 1,
             "TransactionPartitions": [{"Topic": "out", "PartitionIds": [0, 2]}],
             "TransactionLastUpdateTimestampMs": 5, "TransactionStartTimestampMs": 4,
             "ClientTransactionVersion": 2}
    wire = (struct.pack(">hqhib", 1, 1000, 3, 60000, 1)
            + b"\x02" + compact("out") + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"
            + struct.pack(">qq", 5, 4)
            + b"\x01" + b"\x02\x02" + struct.pack(">h", 2))          # tag 2 (ClientTransactionVersion)
    kb, vb = encode_internal("TransactionLog", {"TransactionalId": "tx-1"}, value)
    assert kb == b"\x00\x00" + s16("tx-1") and vb == wire
    d = decode_internal(kb, vb)                  # type 0 + this key: only __transaction_state fits
    assert d["topic"] == "__transaction_state" and d["value"] == value


def test_share_snapshot_kafka41_layout_golden():
    key = {"GroupId": "sg", "TopicId": TOPIC_ID, "Partition": 0}
    value = {"SnapshotEpoch": 3, "StateEpoch": 2, "LeaderEpoch": 4, "StartOffset": 10,
             "DeliveryCompleteCount": 5, "CreateTimestamp": 1000, "WriteTimestamp": 2000,
             "StateBatches": [{"FirstOffset": 10, "LastOffset": 19, "DeliveryState": 0, "DeliveryCount": 1}]}
    wire = (struct.pack(">hiiiq", 0, 3, 2, 4, 10) + struct.pack(">qq", 1000, 2000)
            + b"\x02" + struct.pack(">qqbh", 10, 19, 0, 1) + b"\x00"
            + b"\x01\x00\x04" + struct.pack(">i", 5))                 # tag 0: DeliveryCompleteCount
    kb, vb = encode_internal("ShareSnapshot", key, value)
    assert kb == b"\x00\x00" + s16("sg") + TOPIC_ID.bytes + struct.pack(">i", 0) and vb == wire
    d = decode_internal(kb, vb, "__share_group_state")
    assert d["value_spec"] == "ShareSnapshotValueKafka41" and d["value"] == value


def test_share_update_kafka40_layout_is_still_decoded():
    key = {"GroupId": "sg", "TopicId": TOPIC_ID, "Partition": 1}
    old = {"SnapshotEpoch": 7, "LeaderEpoch": 1, "StartOffset": -1,
           "StateBatches": [{"FirstOffset": 5, "LastOffset": 5, "DeliveryState": 2, "DeliveryCount": 1}]}
    wire = (struct.pack(">hHiq", 0, 7, 1, -1) + b"\x02" + struct.pack(">qqbh", 5, 5, 2, 1) + b"\x00" + b"\x00")
    kb, vb = encode_internal("ShareUpdate", key, old, value_spec="ShareUpdateValue")
    assert vb == wire
    d = decode_internal(kb, vb, "__share_group_state")
    assert d["value_spec"] == "ShareUpdateValue" and d["value"] == old
    new = encode_internal("ShareUpdate", key, dict(old, DeliveryCompleteCount=-1))[1]
    assert new == struct.pack(">hiiq", 0, 7, 1, -1) + wire[2 + 2 + 4 + 8:]   # 2 more bytes of SnapshotEpoch
    assert decode_internal(kb, new, "__share_group_state")["value_spec"] == "ShareUpdateValueKafka41"


def test_consumer_group_current_assignment_with_assignment_epochs():
    value = {"MemberEpoch": 5, "PreviousMemberEpoch": 4, "State": 0,
             "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": [0, 1], "AssignmentEpochs": [3, 5]}],
             "PartitionsPendingRevocation": []}
    kb, vb = encode_internal("ConsumerGroupCurrentMemberAssignment", {"GroupId": "g", "MemberId": "m"}, value)
    assert kb == struct.pack(">h", 8) + s16("g") + s16("m")
    assert vb == (struct.pack(">hiib", 0, 5, 4, 0) + b"\x02" + TOPIC_ID.bytes + b"\x03" + struct.pack(">ii", 0, 1)
                  + b"\x01" + b"\x00\x09" + b"\x03" + struct.pack(">ii", 3, 5)    # tag 0: compact []int32
                  + b"\x01" + b"\x00")
    assert decode_internal(kb, vb)["value"] == value


# ---- tombstones -------------------------------------------------------------------------------
def test_tombstones():
    kb, vb = encode_internal("ConsumerGroupMetadata", {"GroupId": "g"}, None)
    assert vb is None
    d = decode_internal(kb, None)
    assert d["tombstone"] and d["record"] == "ConsumerGroupMetadata" and d["value"] is None
    assert d["value_version"] is None and d["value_spec"] is None
    assert dump_json(d) == {"key": {"type": 3, "data": {"groupId": "g"}}, "value": None}
    a = annotate_internal(kb, None)
    assert a["value_spans"] is None and a["key_spans"][0].path == "key.type"


# ---- topic inference --------------------------------------------------------------------------
def test_record_types_above_1_need_no_topic():
    kb, vb = encode_internal("ShareGroupStatePartitionMetadata", {"GroupId": "g"},
                             {"InitializingTopics": [], "InitializedTopics": [], "DeletingTopics": []})
    d = decode_internal(kb, vb)
    assert d["topic"] == "__consumer_offsets" and d["record_type"] == 15


def test_ambiguous_key_lists_the_candidates():
    # type 1: OffsetCommit (group, topic, partition) or ShareUpdate (group, 16-byte topic id, partition).
    # A 14-byte topic name makes the two layouts the same length, so a tombstone fits both.
    kb = struct.pack(">h", 1) + s16("g") + s16("abcdefghijklmn") + struct.pack(">i", 0)
    with pytest.raises(AmbiguousRecordError) as e:
        decode_internal(kb, None)
    assert {c.record for c in e.value.candidates} == {"OffsetCommit", "ShareUpdate"}
    assert "topic=" in str(e.value) and isinstance(e.value, DecodeError)
    assert decode_internal(kb, None, "__consumer_offsets")["key"]["topic"] == "abcdefghijklmn"
    assert decode_internal(kb, None, "__share_group_state")["key"]["TopicId"].bytes[2:] == b"abcdefghijklmn"


def test_key_that_fits_no_candidate():
    kb = struct.pack(">h", 0) + s16("g") + b"\x01"
    with pytest.raises(AmbiguousRecordError) as e:
        decode_internal(kb, None)
    assert len(e.value.candidates) == 3
    for name in ("OffsetCommit", "TransactionLog", "ShareSnapshot"):
        assert name in str(e.value)


# ---- errors -----------------------------------------------------------------------------------
def test_unknown_record_type():
    with pytest.raises(DecodeError) as e:
        decode_internal(struct.pack(">h", 99) + s16("g"), None)
    assert e.value.path == "key" and "record type 99" in str(e.value) and "OffsetCommit" in str(e.value)
    with pytest.raises(DecodeError, match="Streams group"):
        decode_internal(struct.pack(">h", 17) + s16("g"), None, "__consumer_offsets")
    with pytest.raises(DecodeError, match="record type 2 is unknown in __transaction_state"):
        decode_internal(struct.pack(">h", 2) + s16("g"), None, "__transaction_state")


def test_unknown_value_version():
    with pytest.raises(DecodeError) as e:
        decode_internal(KEY_BYTES, struct.pack(">hq", 5, 0), "__consumer_offsets")
    assert e.value.path == "value" and e.value.offset == 0
    assert "OffsetCommit value version 5" in str(e.value) and "0, 1, 2, 3, 4" in str(e.value)
    with pytest.raises(DecodeError, match="version -1"):
        decode_internal(KEY_BYTES, struct.pack(">h", -1))


def test_truncated_and_overlong_bytes_name_offset_and_path():
    with pytest.raises(DecodeError) as e:
        decode_internal(KEY_BYTES[:-6], None, "__consumer_offsets")           # topic cut short
    assert e.value.path == "key.topic" and e.value.offset == 12
    with pytest.raises(DecodeError) as e:
        decode_internal(KEY_BYTES + b"\x00", None, "__consumer_offsets")
    assert e.value.path == "key" and e.value.offset == len(KEY_BYTES) and "trailing" in str(e.value)
    v3 = struct.pack(">hqi", 3, 1, 0) + s16("") + struct.pack(">q", 1)
    with pytest.raises(DecodeError) as e:
        decode_internal(KEY_BYTES, v3[:-3], "__consumer_offsets")
    assert e.value.path == "value.commitTimestamp" and e.value.offset == 16
    with pytest.raises(DecodeError) as e:
        decode_internal(KEY_BYTES, v3 + b"\xff", "__consumer_offsets")
    assert e.value.offset == len(v3) and "trailing" in str(e.value)
    with pytest.raises(DecodeError, match="int16 record type"):
        decode_internal(b"\x00", None)
    with pytest.raises(DecodeError, match="int16 version"):
        decode_internal(KEY_BYTES, b"\x00")
    with pytest.raises(DecodeError, match="parse_hex"):
        decode_internal(KEY_BYTES.hex(), None)
    with pytest.raises(DecodeError, match="not an internal topic"):
        decode_internal(KEY_BYTES, None, "orders")


def test_encode_errors_name_the_field():
    with pytest.raises(EncodeError) as e:
        encode_internal("OffsetCommit", dict(KEY, group=5), None)
    assert e.value.path == "key.group"
    with pytest.raises(EncodeError) as e:
        encode_internal("OffsetCommit", KEY, {"offset": "x", "leaderEpoch": 0, "metadata": "", "commitTimestamp": 0})
    assert e.value.path == "value.offset"
    with pytest.raises(EncodeError, match="no record named 'Offsets'"):
        encode_internal("Offsets", KEY, None)
    with pytest.raises(EncodeError, match="record type 0 or 1, not 5"):
        encode_internal("OffsetCommit", KEY, None, key_version=5)
    with pytest.raises(EncodeError, match="no version 7"):
        encode_internal("OffsetCommit", KEY, {}, value_version=7)
    with pytest.raises(EncodeError, match="no record named 'OffsetCommit' in __share_group_state"):
        encode_internal("OffsetCommit", KEY, None, topic="__share_group_state")
    with pytest.raises(EncodeError) as e:
        encode_internal("ShareSnapshot", {"GroupId": "g", "TopicId": "not-a-uuid", "Partition": 0}, None)
    assert e.value.path == "key.TopicId"


def test_definition_names_are_accepted_as_record_names():
    a = encode_internal("OffsetCommitKey", KEY, None)
    b = encode_internal("OffsetCommit", KEY, None)
    assert a == b


def test_annotate_offsets_and_prefix():
    value = {"offset": 1, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 2}
    kb, vb = encode_internal("OffsetCommit", KEY, value, value_version=3)
    a = annotate_internal(kb, vb, prefix="records[0].", key_offset=100, value_offset=200)
    assert a["key_spans"][0][:5] == (100, 102, "records[0].key.type", "int16", 1)
    assert a["value_spans"][0][:5] == (200, 202, "records[0].value.version", "int16", 3)
    paths = [s.path for s in a["value_spans"]]
    assert "records[0].value.offset" in paths and a["value_spans"][-1].end == 200 + len(vb)


# ---- partitions -------------------------------------------------------------------------------
@pytest.mark.parametrize("key,hash_,partition", [
    ("my-group", -1906497762, 12),
    ("test-group", 627841412, 12),
    ("group1", -1237460590, 40),
    ("", 0, 0),
    ("hello", 99162322, 22),
    ("polygenelubricants", INT_MIN, 0),          # Math.abs(MIN_VALUE) < 0; Utils.abs gives 0
])
def test_worked_partition_values(key, hash_, partition):
    assert java_string_hash(key) == hash_
    assert group_coordinator_partition(key) == partition
    assert transaction_coordinator_partition(key) == partition
    assert partition_for(key, 50) == partition


def _java_hash_by_hand(s: str) -> int:
    h = 0
    for ch in s:
        cp = ord(ch)
        units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
        for u in units:
            h = (31 * h + u) % 2**32
    return h - 2**32 if h >= 2**31 else h


def test_non_bmp_characters_hash_as_two_utf16_code_units():
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00 == 1772899
    assert java_string_hash("😀") != ord("😀")                 # not the code point
    for s in ("grüppe", "组-1", "a😀b", "🎉🎉🎉🎉🎉🎉🎉🎉", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"):
        assert java_string_hash(s) == _java_hash_by_hand(s)
    assert group_coordinator_partition("😀") == 1772899 % 50 == 49


@given(st.text(max_size=40))
def test_hash_matches_the_definition(s):
    h = java_string_hash(s)
    assert -2**31 <= h < 2**31 and h == _java_hash_by_hand(s)
    assert 0 <= partition_for(s, 7) < 7


def test_kafka_abs():
    assert kafka_abs(INT_MIN) == 0 and kafka_abs(-5) == 5 and kafka_abs(5) == 5 and kafka_abs(0) == 0
    assert partition_for("polygenelubricants", 7) == 0


def test_share_coordinator_key_and_partition():
    one = uuid.UUID(int=1)
    assert share_coordinator_key("g", one, 3) == "g:AAAAAAAAAAAAAAAAAAAAAQ:3"
    assert share_coordinator_key("g", "AAAAAAAAAAAAAAAAAAAAAQ", 3) == "g:AAAAAAAAAAAAAAAAAAAAAQ:3"
    key = share_coordinator_key("my-group", TOPIC_ID, 0)
    assert key == "my-group:XRyKxB07Ti-abh9sDZsqEQ:0"
    assert share_coordinator_partition("my-group", TOPIC_ID, 0) == partition_for(key)
    assert share_coordinator_partition("my-group", "XRyKxB07Ti-abh9sDZsqEQ", 0, n=7) == partition_for(key, 7)
    with pytest.raises(ValueError):
        share_coordinator_partition("g", "nope", 0)
    with pytest.raises(ValueError):
        partition_for("g", 0)
