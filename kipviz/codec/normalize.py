"""The careful path of encode: check a value against one version's fields, naming any problem,
and return a complete value (aliases renamed, absent tagged fields defaulted)."""
from __future__ import annotations

from .. import uuids
from ..errors import EncodeError
from ..schema.resolve import VField
from .defaults import default_value
from .gen_decode import UNKNOWN_TAGS

INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
              "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def _name(v) -> str:
    return type(v).__name__


# size: one dispatch on the primitive type; each branch is that type's range and shape check with its own message
def _prim(f: VField, x, path: str, compact: bool, nullable: bool):
    et = f.elem
    if x is None:
        if nullable:
            return None
        raise EncodeError(f"null is not allowed here ({f.type} is not nullable at this version)", path)
    if et in INT_RANGES:
        if isinstance(x, bool) or not isinstance(x, int):
            raise EncodeError(f"expected an integer ({et}), got {_name(x)} {x!r}", path)
        lo, hi = INT_RANGES[et]
        if not lo <= x <= hi:
            raise EncodeError(f"{x} is out of range for {et} [{lo}, {hi}]", path)
        return x
    if et == "bool":
        if not isinstance(x, bool):
            raise EncodeError(f"expected true/false, got {_name(x)} {x!r}", path)
        return x
    if et == "float64":
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise EncodeError(f"expected a number (float64), got {_name(x)} {x!r}", path)
        return float(x)
    if et == "string":
        if not isinstance(x, str):
            raise EncodeError(f"expected a string, got {_name(x)} {x!r}", path)
        try:
            b = x.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EncodeError(f"string cannot be encoded as UTF-8 ({e.reason})", path) from None
        if not compact and len(b) > 0x7FFF:
            raise EncodeError(f"string of {len(b)} bytes is longer than 32767 (int16 length)", path)
        return x
    if et in ("bytes", "records"):
        if isinstance(x, (bytearray, memoryview)):
            x = bytes(x)
        if not isinstance(x, bytes):
            raise EncodeError(f"expected bytes, got {_name(x)}", path)
        if len(x) > 0x7FFFFFFE:
            raise EncodeError("bytes too long", path)
        return x
    if et == "uuid":
        try:
            return uuids.parse(x)
        except ValueError as e:
            raise EncodeError(str(e), path) from None
    raise EncodeError(f"unsupported type {et}", path)   # pragma: no cover - schema layer forbids


def _value(f: VField, x, path: str, compact: bool, nullable: bool):
    if f.is_struct:
        if x is None:
            if nullable:
                return None
            raise EncodeError("null is not allowed here (struct is not nullable at this version)", path)
        return normalize_struct(f.fields, x, path, compact, absent_fields(f.spec.fields, f.version))
    return _prim(f, x, path, compact, nullable)


def _field(f: VField, x, path: str):
    compact = f.compact
    if f.is_array:
        if x is None:
            if f.nullable:
                return None
            raise EncodeError("null is not allowed here (array is not nullable at this version)", path)
        if not isinstance(x, (list, tuple)):
            raise EncodeError(f"expected a list, got {_name(x)}", path)
        return [_value(f, e, f"{path}[{i}]", compact, False) for i, e in enumerate(x)]
    return _value(f, x, path, compact, f.nullable)


def _check_unknown(x, path: str):
    if not isinstance(x, (list, tuple)):
        raise EncodeError("expected a list of (tag, bytes) pairs", path)
    out = []
    for i, item in enumerate(x):
        if (not isinstance(item, (list, tuple)) or len(item) != 2 or isinstance(item[0], bool)
                or not isinstance(item[0], int) or not 0 <= item[0] <= 0xFFFFFFFF
                or not isinstance(item[1], (bytes, bytearray, memoryview))):
            raise EncodeError("expected a (tag, bytes) pair", f"{path}[{i}]")
        out.append((item[0], bytes(item[1])))
    return out


def _check_absent(spec, x, where: str) -> None:
    # like Kafka: an ignorable field may be dropped; others only when left at the default
    if not spec.ignorable and x is not None and x != spec.default and x not in ([], "", 0, b"", uuids.ZERO_UUID):
        raise EncodeError("this field is not part of this version; a non-default value cannot be written", where)


def normalize_struct(fields: tuple[VField, ...], value, path: str, flexible: bool,
                     absent: dict | None = None) -> dict:
    """`absent`: fields of the message that are not in this version (name -> spec), for messages."""
    if not isinstance(value, dict):
        raise EncodeError(f"expected an object (dict), got {_name(value)}", path or "<message>")
    by_name = {f.name: f for f in fields}
    alias = {a: f.name for f in fields for a in f.spec.aliases}
    pre = f"{path}." if path else ""
    given: dict = {}
    for key, x in value.items():
        if key == UNKNOWN_TAGS:
            if not flexible:
                raise EncodeError("unknown tagged fields need a flexible version", pre + key)
            if x:
                given[key] = _check_unknown(x, pre + key)
            continue
        name = alias.get(key, key)
        if name in by_name:
            if name in given:
                raise EncodeError(f"given twice (as {name} and an alias)", pre + key)
            given[name] = x
        elif absent is not None and key in absent:
            _check_absent(absent[key], x, pre + key)
        else:
            hint = ", ".join(by_name) or "none"
            raise EncodeError(f"unknown field (fields at this version: {hint})", pre + str(key))
    out: dict = {}
    for f in fields:
        p = pre + f.name
        if f.name in given:
            out[f.name] = _field(f, given[f.name], p)
        elif f.tagged:
            out[f.name] = default_value(f)
        else:
            raise EncodeError("missing field (required at this version)", p)
    if UNKNOWN_TAGS in given:
        out[UNKNOWN_TAGS] = given[UNKNOWN_TAGS]
    return out


def absent_fields(spec_fields, version: int) -> dict:
    """Top-level fields not present at this version, by name and alias, for friendlier errors."""
    out = {}
    for f in spec_fields:
        if not f.present(version):
            out[f.name] = f
            for a in f.aliases:
                out[a] = f
    return out
