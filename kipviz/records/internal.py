"""Records of Kafka's internal coordinator topics, decoded the way Kafka's own dump tools do.

    decode_internal(key, value, topic=None) -> {"topic", "record", "record_type", "key", "value", ...}
    encode_internal("OffsetCommit", key={...}, value={...}) -> (key_bytes, value_bytes)
    annotate_internal(key, value) -> {"key": [Span, ...], "value": [Span, ...] or None, ...}
    dump_json(decoded) -> the {"key": {"type", "data"}, "value": {"version", "data"}} shape of
                          kafka-dump-log's coordinator decoders (Kafka 4.x)

The three topics share one framing (Kafka's CoordinatorRecordSerde):

* key   = int16 record type, then the key struct in the old non-flexible encoding;
* value = int16 value version, then the value struct (flexible from some version on);
* value = null is a tombstone: it deletes whatever the key names once the log is compacted.

The record type plays the part of the key's "version": kipviz's key definitions
(kipviz/defs/records/*Key.json) have exactly that one version, e.g. ConsumerGroupMetadataKey is
version 3. Record types are only unique within a topic (0 is OffsetCommit, TransactionLog and
ShareSnapshot); without a topic, decode_internal tries every candidate and keeps the one that
decodes, or raises AmbiguousRecordError naming them.

Kafka 4.1 changed the bytes of ShareSnapshotValue/ShareUpdateValue version 0 in place (share
groups were early access in 4.0). kipviz keeps both layouts: ShareSnapshotValueKafka41 (what 4.1+
writes, tried first) and ShareSnapshotValue (the 4.0 layout of the 2024-10 snapshot)."""
from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import uuids
from ..codec.gen_decode import UNKNOWN_TAGS
from ..codec.plan import Span, plan_for
from ..errors import DecodeError, EncodeError
from ..schema.loader import load_dir
from ..schema.model import MessageSpec
from ..schema.topics import CONSUMER_OFFSETS, INTERNAL_TOPICS, SHARE_GROUP_STATE, TRANSACTION_STATE

DEFS_DIR = Path(__file__).resolve().parent.parent / "defs" / "records"

TOPICS = INTERNAL_TOPICS     # the topics whose records this module decodes

__all__ = ["decode_internal", "encode_internal", "annotate_internal", "dump_json", "definitions",
           "record_types", "RecordType", "AmbiguousRecordError", "TOPICS"]


@dataclass(frozen=True)
class RecordType:
    """One record type of one internal topic."""
    topic: str
    type: int                     # the int16 that starts the key
    record: str                   # Kafka's record name, e.g. "OffsetCommit"
    key: str                      # kit definition of the key
    values: tuple[str, ...]       # kit definitions of the value, the layout Kafka writes today first
    written: bool = True          # False: still read, no longer written (OffsetCommit type 0)


def _co(t: int, name: str, written: bool = True) -> RecordType:
    return RecordType(CONSUMER_OFFSETS, t, name, f"{name}Key", (f"{name}Value",), written)


RECORD_TYPES: tuple[RecordType, ...] = (
    RecordType(CONSUMER_OFFSETS, 0, "OffsetCommit", "OffsetCommitKey", ("OffsetCommitValue",), written=False),
    RecordType(CONSUMER_OFFSETS, 1, "OffsetCommit", "OffsetCommitKey", ("OffsetCommitValue",)),
    _co(2, "GroupMetadata"),
    _co(3, "ConsumerGroupMetadata"),
    _co(4, "ConsumerGroupPartitionMetadata", written=False),
    _co(5, "ConsumerGroupMemberMetadata"),
    _co(6, "ConsumerGroupTargetAssignmentMetadata"),
    _co(7, "ConsumerGroupTargetAssignmentMember"),
    _co(8, "ConsumerGroupCurrentMemberAssignment"),
    _co(9, "ShareGroupPartitionMetadata", written=False),
    _co(10, "ShareGroupMemberMetadata"),
    _co(11, "ShareGroupMetadata"),
    _co(12, "ShareGroupTargetAssignmentMetadata"),
    _co(13, "ShareGroupTargetAssignmentMember"),
    _co(14, "ShareGroupCurrentMemberAssignment"),
    _co(15, "ShareGroupStatePartitionMetadata"),
    _co(16, "ConsumerGroupRegularExpression"),
    RecordType(TRANSACTION_STATE, 0, "TransactionLog", "TransactionLogKey", ("TransactionLogValue",)),
    RecordType(SHARE_GROUP_STATE, 0, "ShareSnapshot", "ShareSnapshotKey",
               ("ShareSnapshotValueKafka41", "ShareSnapshotValue")),
    RecordType(SHARE_GROUP_STATE, 1, "ShareUpdate", "ShareUpdateKey",
               ("ShareUpdateValueKafka41", "ShareUpdateValue")),
)

# Record types Kafka uses that the kit does not define (named so the error can say what they are).
_NOT_DEFINED = {(CONSUMER_OFFSETS, t): "a Streams group record (KIP-1071)" for t in range(17, 25)}


class AmbiguousRecordError(DecodeError):
    """No topic was given and the bytes decode as more than one record type (or as none)."""

    def __init__(self, message: str, candidates: list[RecordType], offset: int = 0, path: str = "key"):
        super().__init__(message, offset, path)
        self.candidates = candidates


@lru_cache(maxsize=1)
def _defs() -> dict[str, MessageSpec]:
    return load_dir(DEFS_DIR, require_kit=True)


def definitions() -> dict[str, MessageSpec]:
    """Every coordinator-record definition of the kit, by name."""
    return dict(_defs())


def record_types(topic: str | None = None) -> list[RecordType]:
    """The internal record types kipviz decodes, of one internal topic or of all."""
    if topic is not None:
        _check_topic(topic, DecodeError, 0, "topic")
    return [rt for rt in RECORD_TYPES if topic is None or rt.topic == topic]


def _check_topic(topic, err, *where):
    if topic not in TOPICS:
        msg = f"not an internal topic kipviz decodes: {topic!r} (known: {', '.join(TOPICS)})"
        raise err(msg, *where)


def _as_bytes(data, what: str) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    hint = " (for hex text use kipviz.codec.parse_hex)" if isinstance(data, str) else ""
    raise DecodeError(f"{what} must be bytes, got {type(data).__name__}{hint}", 0, what)


def _list(rts) -> str:
    return ", ".join(f"{rt.record} ({rt.topic})" for rt in rts)


def _known_types(topic: str | None) -> str:
    rts = [rt for rt in RECORD_TYPES if topic is None or rt.topic == topic]
    return "; ".join(f"{rt.type} {rt.record}" + ("" if topic else f" ({rt.topic})") for rt in rts)


# ---- decoding --------------------------------------------------------------------------------
def _decode_key(rt: RecordType, key: bytes, base: int = 0, prefix: str = "key.") -> dict:
    spec = _defs()[rt.key]
    value, end = plan_for(spec, rt.type).decode_at(key, base + 2, prefix)
    if end != len(key):
        raise DecodeError(f"{len(key) - end} trailing bytes after the {spec.name}", end, prefix.rstrip("."))
    return value


def _value_spec(rt: RecordType, version: int) -> list[MessageSpec]:
    specs = [_defs()[n] for n in rt.values]
    fits = [s for s in specs if version in s.valid]
    if not fits:
        known = sorted({v for s in specs for v in s.versions})
        raise DecodeError(f"{rt.record} value version {version} is unknown to kipviz "
                          f"(it knows version{'s' if len(known) > 1 else ''} "
                          f"{', '.join(map(str, known))})", 0, "value")
    return fits


def _decode_value(rt: RecordType, value: bytes, prefix: str = "value.") -> tuple[int, MessageSpec, dict]:
    if len(value) < 2:
        raise DecodeError("value too short: it starts with an int16 version", len(value), prefix.rstrip("."))
    version = struct.unpack_from(">h", value)[0]
    first_error = None
    for spec in _value_spec(rt, version):
        try:
            v, end = plan_for(spec, version).decode_at(value, 2, prefix)
            if end != len(value):
                raise DecodeError(f"{len(value) - end} trailing bytes after the {spec.name}", end,
                                  prefix.rstrip("."))
            return version, spec, v
        except DecodeError as e:
            first_error = first_error or e
    raise first_error


def _decode_one(rt: RecordType, key: bytes, value: bytes | None) -> dict:
    kv = _decode_key(rt, key)
    out = {"topic": rt.topic, "record": rt.record, "record_type": rt.type, "key_version": rt.type,
           "key_spec": rt.key, "key": kv, "tombstone": value is None,
           "value_version": None, "value_spec": None, "value": None}
    if value is not None:
        version, spec, vv = _decode_value(rt, value)
        out.update(value_version=version, value_spec=spec.name, value=vv)
    return out


def _candidates(key: bytes, topic: str | None) -> tuple[int, list[RecordType]]:
    if len(key) < 2:
        raise DecodeError("key too short: it starts with an int16 record type", len(key), "key")
    rtype = struct.unpack_from(">h", key)[0]
    if topic is not None:
        _check_topic(topic, DecodeError, 0, "topic")
    cands = [rt for rt in RECORD_TYPES if rt.type == rtype and (topic is None or rt.topic == topic)]
    if not cands:
        where = topic or "any internal topic"
        extra = _NOT_DEFINED.get((topic or CONSUMER_OFFSETS, rtype))
        what = f" ({CONSUMER_OFFSETS} uses it for {extra}, which kipviz does not define)" if extra else ""
        raise DecodeError(f"record type {rtype} is unknown in {where}{what}; known types: "
                          f"{_known_types(topic)}", 0, "key")
    return rtype, cands


def decode_internal(key, value, topic: str | None = None) -> dict:
    """Decode one record of __consumer_offsets, __transaction_state or __share_group_state.

    Returns {"topic", "record", "record_type" (= "key_version"), "key_spec", "key",
    "value_version", "value_spec", "value", "tombstone"}; value fields are None for a tombstone.
    Raises DecodeError (offset, path such as "key.group" or "value.offset") on bad bytes, and
    AmbiguousRecordError when topic is None and the bytes fit several topics or none."""
    key = _as_bytes(key, "key")
    value = None if value is None else _as_bytes(value, "value")
    rtype, cands = _candidates(key, topic)
    if len(cands) == 1:
        return _decode_one(cands[0], key, value)
    results, errors = [], []
    for rt in cands:
        try:
            results.append(_decode_one(rt, key, value))
        except DecodeError as e:
            errors.append((rt, e))
    if len(results) == 1:
        return results[0]
    if results:
        fits = [rt for rt in cands if any(r["topic"] == rt.topic for r in results)]
        raise AmbiguousRecordError(
            f"record type {rtype} decodes as {_list(fits)}; pass topic= to choose", fits)
    why = "; ".join(f"{rt.record} ({rt.topic}): {e}" for rt, e in errors)
    raise AmbiguousRecordError(f"record type {rtype} could be {_list(cands)}, but none decodes: {why}",
                               cands, *max(((e.offset, e.path) for _, e in errors), key=lambda t: t[0]))


# ---- encoding --------------------------------------------------------------------------------
def _find(record: str, key_version: int | None, topic: str | None) -> RecordType:
    if topic is not None:
        _check_topic(topic, EncodeError, "topic")
    if not isinstance(record, str):
        raise EncodeError(f"record must be a record name such as 'OffsetCommit', got {record!r}", "record")
    name = record
    matches = [rt for rt in RECORD_TYPES
               if name in (rt.record, rt.key, *rt.values) and (topic is None or rt.topic == topic)]
    if not matches:
        where = f" in {topic}" if topic else ""
        names = sorted({rt.record for rt in RECORD_TYPES if topic is None or rt.topic == topic})
        raise EncodeError(f"no record named {record!r}{where}; known: {', '.join(names)}", "record")
    if key_version is not None:
        chosen = [rt for rt in matches if rt.type == key_version]
        if not chosen:
            types = " or ".join(str(rt.type) for rt in matches)
            raise EncodeError(f"{matches[0].record} keys use record type {types}, not {key_version!r}", "key")
        return chosen[0]
    written = [rt for rt in matches if rt.written]
    return (written or matches)[0]


def _encode_part(spec: MessageSpec, version: int, value, part: str) -> bytes:
    if not isinstance(value, dict):
        raise EncodeError(f"{part} must be a dict of {spec.name} fields, got {type(value).__name__}", part)
    try:
        body = plan_for(spec, version).encode(value)
    except EncodeError as e:
        raise EncodeError(e.reason, f"{part}.{e.path}" if e.path else part) from None
    return struct.pack(">h", version) + body


def encode_internal(record: str, key: dict, value: dict | None, *, key_version: int | None = None,
                    value_version: int | None = None, topic: str | None = None,
                    value_spec: str | None = None) -> tuple[bytes, bytes | None]:
    """Build the key and value bytes of one coordinator record.

    record: "OffsetCommit", "GroupMetadata", "ShareSnapshot", ... (or a key/value definition name).
    key_version: the record type; only OffsetCommit has a choice (0 or 1, default 1, what Kafka writes).
    value_version: default the highest version the kit knows. value=None gives a tombstone (None).
    value_spec: for ShareSnapshot/ShareUpdate, "ShareSnapshotValue" picks the Kafka 4.0 layout."""
    rt = _find(record, key_version, topic)
    key_bytes = _encode_part(_defs()[rt.key], rt.type, key, "key")
    if value is None:
        return key_bytes, None
    if value_spec is not None and value_spec not in rt.values:
        raise EncodeError(f"{rt.record} values are {' or '.join(rt.values)}, not {value_spec!r}", "value")
    spec = _defs()[value_spec or rt.values[0]]
    if value_version is None:
        value_version = spec.valid.hi
    elif isinstance(value_version, bool) or not isinstance(value_version, int) or value_version not in spec.valid:
        raise EncodeError(f"{spec.name} has no version {value_version!r} (kipviz knows {spec.valid})", "value")
    return key_bytes, _encode_part(spec, value_version, value, "value")


# ---- annotating ------------------------------------------------------------------------------
def annotate_internal(key, value, topic: str | None = None, *, prefix: str = "",
                      key_offset: int = 0, value_offset: int = 0) -> dict:
    """Decode like decode_internal and add byte spans: {"key_spans": [...], "value_spans": [...] or
    None, **decoded}. Span paths start with prefix + "key." / "value."; the int16 in front is
    "key.type" (record type) or "value.version". Offsets are shifted by key_offset/value_offset so
    that the spans can be placed inside a larger buffer (e.g. a record batch)."""
    d = decode_internal(key, value, topic)
    key = _as_bytes(key, "key")
    rt = next(r for r in RECORD_TYPES if r.topic == d["topic"] and r.type == d["record_type"])
    kp = f"{prefix}key"
    _, _, kspans = plan_for(_defs()[rt.key], rt.type).annotate_at(key, 2, kp + ".")
    key_spans = [Span(0, 2, kp + ".type", "int16", rt.type, "value")] + [Span._make(s) for s in kspans]
    value_spans = None
    if value is not None:
        value = _as_bytes(value, "value")
        vp = f"{prefix}value"
        _, _, vspans = plan_for(_defs()[d["value_spec"]], d["value_version"]).annotate_at(value, 2, vp + ".")
        value_spans = ([Span(0, 2, vp + ".version", "int16", d["value_version"], "value")]
                       + [Span._make(s) for s in vspans])
        value_spans = [s._replace(start=s.start + value_offset, end=s.end + value_offset) for s in value_spans]
    key_spans = [s._replace(start=s.start + key_offset, end=s.end + key_offset) for s in key_spans]
    return {**d, "key_spans": key_spans, "value_spans": value_spans}


# ---- Kafka's dump format ---------------------------------------------------------------------
def _json_name(name: str) -> str:
    return name[:1].lower() + name[1:]


def _jsonable(v):
    if isinstance(v, dict):
        return {(k if k == UNKNOWN_TAGS else _json_name(k)): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, uuid.UUID):
        return uuids.to_kafka_str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    return v


def dump_json(decoded: dict) -> dict:
    """The shape Kafka 4.x's kafka-dump-log coordinator decoders print for one record:
    {"key": {"type": 1, "data": {...}}, "value": {"version": 4, "data": {...}} or null}, with
    field names starting lower-case, topic ids in Kafka's base64 form and bytes as base64."""
    value = None if decoded["tombstone"] else {"version": decoded["value_version"],
                                                "data": _jsonable(decoded["value"])}
    return {"key": {"type": decoded["record_type"], "data": _jsonable(decoded["key"])}, "value": value}
