"""The classic group protocol's opaque bytes for protocol type "consumer" (Kafka's
clients/.../consumer/internals/ConsumerProtocol.java), and the range assignor both sides run.

    encode_subscription(["in", "out"]) -> bytes       decode_subscription(bytes) -> ["in", "out"]
    encode_assignment({"in": [0, 1]}) -> bytes         decode_assignment(bytes) -> {("in", 0), ("in", 1)}
    range_assign({member: [topic, ...]}, {topic: partitions}) -> {member: {topic: [partition, ...]}}
    range_of_topic(partitions, members) -> [(member, range), ...]     (one topic)

Each is an int16 version, then the struct of the kit's own definitions (kipviz/defs/consumer),
version 0 here."""
from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path

from .. import codec
from ..schema.loader import load_dir

PROTOCOL_VERSION = 0
_PREFIX = struct.Struct(">h")


@lru_cache(maxsize=None)
def _protocol_spec(name: str):
    return load_dir(Path(__file__).resolve().parent.parent / "defs" / "consumer", require_kit=True)[name]


def encode_subscription(topics) -> bytes:
    """ConsumerProtocolSubscription v0: version, [topic], user data (null)."""
    return _PREFIX.pack(PROTOCOL_VERSION) + codec.encode(
        _protocol_spec("ConsumerProtocolSubscription"), PROTOCOL_VERSION, {"Topics": sorted(topics), "UserData": None})


def decode_subscription(data: bytes) -> list[str]:
    """The topics of a ConsumerProtocolSubscription v0."""
    return codec.decode(_protocol_spec("ConsumerProtocolSubscription"), PROTOCOL_VERSION, data[2:])["Topics"]


def encode_assignment(assignment: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [topic, [partition]], user data (null)."""
    parts = [{"Topic": t, "Partitions": sorted(assignment[t])} for t in sorted(assignment)]
    return _PREFIX.pack(PROTOCOL_VERSION) + codec.encode(
        _protocol_spec("ConsumerProtocolAssignment"), PROTOCOL_VERSION, {"AssignedPartitions": parts, "UserData": None})


def decode_assignment(data: bytes) -> set[tuple[str, int]]:
    """The (topic, partition) pairs of a ConsumerProtocolAssignment v0 (none for empty bytes)."""
    if not data:
        return set()
    body = codec.decode(_protocol_spec("ConsumerProtocolAssignment"), PROTOCOL_VERSION, data[2:])
    return {(tp["Topic"], p) for tp in body["AssignedPartitions"] for p in tp["Partitions"]}


def range_of_topic(partitions: int, members: list[str]) -> list[tuple[str, range]]:
    """RangeAssignor for one topic (consumer/RangeAssignor.java; the group coordinator's
    group-coordinator/.../assignor/RangeAssignor.java): contiguous ranges of its partitions over
    `members` in the order given (sorted by member id), the first `partitions % len(members)` one
    partition larger; a member left with none is not listed."""
    if not members:
        return []
    per, extra = divmod(partitions, len(members))
    out, start = [], 0
    for i, m in enumerate(members):
        cnt = per + (1 if i < extra else 0)
        if cnt:
            out.append((m, range(start, start + cnt)))
        start += cnt
    return out


def range_assign(members: dict[str, list[str]], partitions: dict[str, int]) -> dict[str, dict[str, list[int]]]:
    """RangeAssignor over every subscribed topic: {member: {topic: [partition, ...]}}, per topic
    range_of_topic over its subscribers sorted by member id."""
    out: dict[str, dict[str, list[int]]] = {m: {} for m in members}
    for topic in sorted({t for ts in members.values() for t in ts}):
        for m, ps in range_of_topic(partitions.get(topic, 0), sorted(m for m, ts in members.items() if topic in ts)):
            out[m][topic] = list(ps)
    return out
