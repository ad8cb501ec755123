"""kipviz's wire codec: encode, decode and annotate any message version from its definition.

    encode("TxnOffsetCommitRequest", 5, value) -> bytes
    decode("TxnOffsetCommitRequest", 5, data)  -> dict
    annotate("TxnOffsetCommitRequest", 5, data) -> [Span(start, end, path, wire_type, value, role)]

`name` may also be a MessageSpec (for example one loaded from an official schema directory)."""
from __future__ import annotations

import re

from ..errors import DecodeError, EncodeError, UnknownMessageError
from ..schema import registry
from ..schema.model import MessageSpec
from .framing import (
    annotate_request,
    annotate_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame,
    request_header_version,
    response_header_version,
    split_frames,
    unframe,
)
from .gen_decode import UNKNOWN_TAGS
from .plan import Plan, Span, plan_for

__all__ = ["encode", "decode", "annotate", "DecodeError", "EncodeError", "Span", "plan",
           "encode_request", "encode_response", "decode_request", "decode_response",
           "annotate_request", "annotate_response", "frame", "unframe", "split_frames",
           "request_header_version", "response_header_version", "parse_hex", "UNKNOWN_TAGS"]


def plan(name: str | MessageSpec, version: int) -> Plan:
    """The compiled plan of message `name` at `version`; UnknownMessageError for a version it lacks."""
    spec = registry.get(name)
    if isinstance(version, bool) or not isinstance(version, int) or version not in spec.valid:
        raise UnknownMessageError(f"{spec.name} has no version {version!r} (valid: {spec.valid})")
    return plan_for(spec, version)


def encode(name: str | MessageSpec, version: int, value: dict) -> bytes:
    """A message value's bytes at `version` (no header, no frame)."""
    try:
        p = plan(name, version)
    except UnknownMessageError as e:
        raise EncodeError(str(e)) from None
    return p.encode(value)


def decode(name: str | MessageSpec, version: int, data: bytes) -> dict:
    """A message's value from its bytes at `version`; DecodeError names the offset and field."""
    try:
        p = plan(name, version)
    except UnknownMessageError as e:
        raise DecodeError(str(e), 0, "") from None
    return p.decode(data)


def annotate(name: str | MessageSpec, version: int, data: bytes) -> list[Span]:
    """Every byte range of an encoded message, as Spans (offset, field path, wire type, value)."""
    try:
        p = plan(name, version)
    except UnknownMessageError as e:
        raise DecodeError(str(e), 0, "") from None
    return p.annotate(data)


_HEX_NOISE = re.compile(r"0x|[\s:,_\-]|\\x", re.IGNORECASE)


def parse_hex(text: str) -> bytes:
    """Hex as people paste it: spaces, newlines, colons, 0x or \\x prefixes are ignored."""
    if not isinstance(text, str):
        raise DecodeError("expected hex text", 0, "")
    clean = _HEX_NOISE.sub("", text)
    bad = re.search(r"[^0-9a-fA-F]", clean)
    if bad:
        raise DecodeError(f"not hex: {bad.group()!r}", bad.start() // 2, "")
    if len(clean) % 2:
        raise DecodeError("odd number of hex digits", len(clean) // 2, "")
    return bytes.fromhex(clean)
