"""Generic responses: an error response shaped like the request (Kafka's getErrorResponse), and
the error codes found in a response body."""
from __future__ import annotations

from ..codec.defaults import struct_default
from ..schema import registry
from ..schema.resolve import resolve

# fields that identify an element and are copied from the request into the mirrored response
_KEYS = ("Name", "TopicId", "PartitionIndex", "Partition", "GroupId", "Topic", "TransactionalId",
         "ProducerId", "MemberId", "Key", "Index")
# request arrays that a response answers under another name (Produce: TopicData -> Responses, ...)
_SOURCES = ("Topics", "TopicData", "Partitions", "PartitionData", "Groups", "Transactions", "CoordinatorKeys",
            "V3AndBelowTopics")
# request fields that become another response field (Fetch's Partition -> PartitionIndex)
_RENAMES = {"PartitionIndex": ("Partition", "Index"), "Name": ("Topic",)}


def _mirror(resp_fields, req_value, code: int) -> dict:
    out = struct_default(resp_fields)
    for f in resp_fields:
        if f.name.endswith("ErrorCode") and f.elem == "int16":
            out[f.name] = code
        elif f.name in _KEYS and isinstance(req_value, dict) and f.name in req_value:
            out[f.name] = req_value[f.name]
        elif f.name in _RENAMES and isinstance(req_value, dict) and any(k in req_value for k in _RENAMES[f.name]):
            out[f.name] = next(req_value[k] for k in _RENAMES[f.name] if k in req_value)
        elif f.is_array and f.is_struct and isinstance(req_value, dict):
            rows = _mirror_rows(f, req_value, code)
            if rows is not None:
                out[f.name] = rows
    return out


def _mirror_rows(f, req_value: dict, code: int) -> list | None:
    """An array of structs in the response, one element per element of the request's matching
    array (or per partition index it lists); None when the request has none."""
    src = next((req_value[n] for n in (f.name, *_SOURCES)
                if isinstance(req_value.get(n), list) and req_value.get(n)
                and isinstance(req_value[n][0], dict)), None)
    if f.name in req_value and isinstance(req_value[f.name], list):
        src = req_value[f.name]
    if src and isinstance(src[0], dict):
        return [_mirror(f.fields, e, code) for e in src]
    if any(x.name == "PartitionIndex" for x in f.fields):
        idx = next((req_value[n] for n in ("PartitionIndexes", "Partitions", f.name) if isinstance(req_value.get(n), list)
                    and req_value[n] and not isinstance(req_value[n][0], dict)), None)
        if idx:
            return [_mirror(f.fields, {"PartitionIndex": p}, code) for p in idx]
    return None


def error_response(api: str, version: int, request_body: dict | None, code: int) -> dict:
    """A response body carrying `code` everywhere it has an ErrorCode, mirroring the request's
    topics/partitions/groups so each gets its error (like Kafka's AbstractRequest.getErrorResponse)."""
    spec = registry.get(api + "Response")
    return _mirror(resolve(spec, version).fields, request_body or {}, code)
