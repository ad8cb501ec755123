"""Default values of fields, as Kafka's generated classes initialise them."""
from __future__ import annotations

from ..schema.resolve import VField
from ..uuids import ZERO_UUID

_ZERO = {"bool": False, "int8": 0, "int16": 0, "uint16": 0, "int32": 0, "int64": 0,
         "float64": 0.0, "string": "", "bytes": b"", "uuid": ZERO_UUID, "records": None}


def default_value(f: VField):
    """A fresh default value for a field (lists and dicts are new objects each call)."""
    s = f.spec
    if s.default_text == "null":
        return None
    if f.is_array:
        return []
    if f.is_struct:
        return struct_default(f.fields)
    if s.default is not None:
        return s.default
    return _ZERO[f.elem]


def struct_default(fields: tuple[VField, ...]) -> dict:
    """A struct's value with every field at its default."""
    return {f.name: default_value(f) for f in fields}
