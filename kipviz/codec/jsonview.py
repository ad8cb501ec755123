"""Decoded values as JSON text: UUIDs in Kafka's base64 form, bytes as hex (CLI and review reports)."""
from __future__ import annotations

import json
import uuid

from .. import uuids


def json_default(o):
    """JSON for what json cannot write: a Uuid in Kafka's base64 form, bytes as hex."""
    if isinstance(o, uuid.UUID):
        return uuids.to_kafka_str(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return o.hex()
    raise TypeError(type(o).__name__)


def to_json(value) -> str:
    """A decoded value as indented JSON text."""
    return json.dumps(value, indent=2, default=json_default)
