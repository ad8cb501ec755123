"""Request/response headers and size-prefixed frames around message bodies."""
from __future__ import annotations

import struct

from ..errors import DecodeError, EncodeError, UnknownMessageError
from ..schema import registry
from ..schema.headers import request_header_version, response_header_version
from ..schema.model import MessageSpec
from .plan import Span, plan_for

_I = struct.Struct(">i")
_HH = struct.Struct(">hh")


def frame(payload: bytes) -> bytes:
    """The payload behind its int32 size prefix, as it goes on the wire."""
    return _I.pack(len(payload)) + payload


def unframe(data: bytes) -> bytes:
    """The payload of one size-prefixed frame; DecodeError if the size is missing, negative or
    disagrees with the bytes that follow."""
    if len(data) < 4:
        raise DecodeError(f"needs 4 bytes for the frame size, only {len(data)} left", 0, "size")
    size, = _I.unpack_from(data, 0)
    if size < 0:
        raise DecodeError(f"negative frame size {size}", 0, "size")
    if size != len(data) - 4:
        what = "more" if size > len(data) - 4 else "fewer"
        raise DecodeError(f"frame size says {size} bytes but {len(data) - 4} follow ({what} than present)", 0, "size")
    return data[4:]


def split_frames(data: bytes) -> tuple[list[bytes], bytes]:
    """Cut a byte stream into whole frames (each with its size prefix) and the unfinished rest."""
    frames, pos, n = [], 0, len(data)
    while n - pos >= 4:
        size, = _I.unpack_from(data, pos)
        if size < 0:
            raise DecodeError(f"negative frame size {size}", pos, "size")
        if n - pos - 4 < size:
            break
        frames.append(data[pos:pos + 4 + size])
        pos += 4 + size
    return frames, data[pos:]


def _spec(api, kind: str) -> MessageSpec:
    if isinstance(api, MessageSpec):
        return api
    if isinstance(api, int) and not isinstance(api, bool):
        return registry.by_api_key(api, kind)
    name = str(api)
    suffix = "Request" if kind == "request" else "Response"
    if not name.endswith(suffix):
        name += suffix
    return registry.get(name)


def _body_version(spec: MessageSpec, version: int, err) -> None:
    if version not in spec.valid:
        raise err(f"{spec.name} has no version {version} (valid: {spec.valid})")


def encode_request(api, version: int, body: dict, *, correlation_id: int = 0,
                   client_id: str | None = "kipviz", framed: bool = True) -> bytes:
    """A request's bytes: the request header (api key, version, correlation id, client id) then
    the body, framed unless framed=False."""
    spec = _spec(api, "request")
    _body_version(spec, version, EncodeError)
    hv = request_header_version(spec, version)
    header = {"RequestApiKey": registry.api_key(spec), "RequestApiVersion": version,
              "CorrelationId": correlation_id}
    if hv >= 1:
        header["ClientId"] = client_id
    w = bytearray()
    plan_for(registry.get("RequestHeader"), hv).encode_into(header, w)
    plan_for(spec, version).encode_into(body, w)
    return frame(bytes(w)) if framed else bytes(w)


def encode_response(api, version: int, body: dict, *, correlation_id: int = 0,
                    framed: bool = True) -> bytes:
    """A response's bytes: the response header (correlation id) then the body, framed unless
    framed=False."""
    spec = _spec(api, "response")
    _body_version(spec, version, EncodeError)
    w = bytearray()
    plan_for(registry.get("ResponseHeader"), response_header_version(spec, version)).encode_into(
        {"CorrelationId": correlation_id}, w)
    plan_for(spec, version).encode_into(body, w)
    return frame(bytes(w)) if framed else bytes(w)


def _payload(data, framed: bool) -> tuple[bytes, int]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"needs bytes, got {type(data).__name__}")
    data = bytes(data)
    return (unframe(data), 4) if framed else (data, 0)


def _shift(err: DecodeError, by: int) -> DecodeError:
    return DecodeError(err.reason, err.offset + by, err.path)


def _request_parts(payload: bytes, base: int):
    if len(payload) < 4:
        raise DecodeError(f"needs 4 bytes for api key and version, only {len(payload)} left", base, "header.RequestApiKey")
    key, version = _HH.unpack_from(payload, 0)
    try:
        spec = registry.by_api_key(key, "request")
    except UnknownMessageError as e:
        raise DecodeError(str(e), base, "header.RequestApiKey") from None
    if version not in spec.valid:
        raise DecodeError(f"{spec.name} has no version {version} (valid: {spec.valid})", base + 2,
                          "header.RequestApiVersion")
    return spec, version, request_header_version(spec, version)


def _decode_parts(payload: bytes, base: int, header_spec, hv: int, spec, version: int,
                  trailing_ok: bool = False) -> tuple[dict, dict]:
    """Header then body; offsets in errors count from the start of the frame."""
    try:
        header, pos = plan_for(header_spec, hv).decode_at(payload, 0, "header.")
        body, end = plan_for(spec, version).decode_at(payload, pos, "body.")
    except DecodeError as e:
        raise _shift(e, base) from None
    if end != len(payload) and not trailing_ok:
        raise DecodeError(f"{len(payload) - end} trailing bytes after the message", base + end, "")
    return header, body


def decode_request(data, *, framed: bool = True, trailing_ok: bool = False) -> dict:
    """Decode a whole request: {api, message, version, header_version, correlation_id, header, body}.
    trailing_ok: bytes after the body are ignored, as a broker does (Kafka's AbstractRequest
    .parseRequest never checks that the body used them all; librdkafka's all-topics Metadata v9+
    leaves 3: its src/rdkafka_request.c, rd_kafka_MetadataRequest0); by default they are an error, since the kit's own frames never have any."""
    payload, base = _payload(data, framed)
    spec, version, hv = _request_parts(payload, base)
    header, body = _decode_parts(payload, base, registry.get("RequestHeader"), hv, spec, version, trailing_ok)
    return {"api": spec.api, "message": spec.name, "api_key": header["RequestApiKey"],
            "version": version, "header_version": hv, "correlation_id": header["CorrelationId"],
            "header": header, "body": body}


def decode_request_header(data, *, framed: bool = True) -> dict:
    """Only a request's header (RequestApiKey, RequestApiVersion, CorrelationId, ClientId from v1),
    the body left undecoded: who sent a request, e.g. its client.id, without decoding all of it."""
    payload, base = _payload(data, framed)
    _, _, hv = _request_parts(payload, base)
    try:
        return plan_for(registry.get("RequestHeader"), hv).decode_at(payload, 0, "header.")[0]
    except DecodeError as e:
        raise _shift(e, base) from None


def decode_response(data, api, version: int, *, framed: bool = True) -> dict:
    """Decode a response; the api and version come from the request it answers."""
    spec = _spec(api, "response")
    payload, base = _payload(data, framed)
    if version not in spec.valid:
        raise DecodeError(f"{spec.name} has no version {version} (valid: {spec.valid})", base, "")
    hv = response_header_version(spec, version)
    header, body = _decode_parts(payload, base, registry.get("ResponseHeader"), hv, spec, version)
    return {"api": spec.api, "message": spec.name, "api_key": registry.api_key(spec),
            "version": version, "header_version": hv, "correlation_id": header["CorrelationId"],
            "header": header, "body": body}


def _annotate_parts(payload: bytes, base: int, header_spec, hv, spec, version, framed: bool) -> list[Span]:
    spans: list[tuple] = []
    if framed:
        spans.append((0, 4, "size", "int32", len(payload), "value"))
    try:
        _, pos, hs = plan_for(header_spec, hv).annotate_at(payload, 0, "header.")
        _, end, bs = plan_for(spec, version).annotate_at(payload, pos, "body.")
    except DecodeError as e:
        raise _shift(e, base) from None
    if end != len(payload):
        raise DecodeError(f"{len(payload) - end} trailing bytes after the message", base + end, "")
    for s in (*hs, *bs):
        spans.append((s[0] + base, s[1] + base, *s[2:]))
    return [Span._make(s) for s in spans]


def annotate_request(data, *, framed: bool = True) -> list[Span]:
    """The Spans of a whole request, header and body (the api and version read from its header)."""
    payload, base = _payload(data, framed)
    spec, version, hv = _request_parts(payload, base)
    return _annotate_parts(payload, base, registry.get("RequestHeader"), hv, spec, version, framed)


def annotate_response(data, api, version: int, *, framed: bool = True) -> list[Span]:
    """The Spans of a whole response of `api` at `version` (a response does not name its api)."""
    spec = _spec(api, "response")
    payload, base = _payload(data, framed)
    if version not in spec.valid:
        raise DecodeError(f"{spec.name} has no version {version} (valid: {spec.valid})", base, "")
    return _annotate_parts(payload, base, registry.get("ResponseHeader"),
                           response_header_version(spec, version), spec, version, framed)
