"""Kafka's Uuid (KIP-516 topic ids): 16 bytes on the wire, URL-safe base64 without padding as text."""
from __future__ import annotations

import base64
import random as _random
import uuid

ZERO_UUID = uuid.UUID(int=0)
ONE_UUID = uuid.UUID(int=1)
METADATA_TOPIC_ID = ONE_UUID
RESERVED = frozenset({ZERO_UUID, ONE_UUID})


def to_kafka_str(u: uuid.UUID) -> str:
    """The 22-character form Kafka prints (Uuid.toString)."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def from_kafka_str(text: str) -> uuid.UUID:
    """Parse Kafka's 22-character form (Uuid.fromString); ValueError if it is not one."""
    if not isinstance(text, str) or len(text) > 24:
        raise ValueError(f"not a Kafka Uuid string: {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"not a Kafka Uuid string: {text!r}") from None
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid string (decodes to {len(raw)} bytes, need 16): {text!r}")
    return uuid.UUID(bytes=raw)


def parse(value: object) -> uuid.UUID:
    """Accept a uuid.UUID, Kafka's base64 form, the 36-character canonical form, or 16 bytes."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return uuid.UUID(bytes=bytes(value))
    if isinstance(value, str):
        if len(value) == 36:
            return uuid.UUID(value)
        return from_kafka_str(value)
    raise ValueError(f"not a Uuid: {value!r}")


def random_uuid(rng: _random.Random | None = None) -> uuid.UUID:
    """Like Uuid.randomUuid(): never a reserved value, never a string that starts with '-'."""
    rng = rng or _random.Random()
    while True:
        u = uuid.UUID(int=rng.getrandbits(128), version=4)
        if u not in RESERVED and not to_kafka_str(u).startswith("-"):
            return u
