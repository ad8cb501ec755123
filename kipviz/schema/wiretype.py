"""How a resolved field is written on the wire, in words ("int32 · 4B", "array (compact) · varint
count of …"): a schema fact the wire and diff drawings and the review's cross-diff print."""
from __future__ import annotations

from .model import FIXED_SIZES
from .resolve import VField


def prim_type(t: str, compact: bool) -> str:
    """How a primitive is written: "int32 · 4B", "string (compact) · varint len", ..."""
    if t in FIXED_SIZES:
        return f"{t} · {FIXED_SIZES[t]}B"
    if t == "string":
        return "string (compact) · varint len" if compact else "string · int16 len"
    if t in ("bytes", "records"):
        return f"{t} (compact) · varint len" if compact else f"{t} · int32 len"
    return t


def wire_type(f: VField) -> str:
    """How a resolved field is written: "int32 · 4B", "array (compact) · varint count of …"."""
    if f.is_array:
        head = "array (compact) · varint count" if f.compact else "array · int32 count"
        return f"{head} of {f.elem if f.is_struct else prim_type(f.elem, f.compact)}"
    if f.is_struct:
        return f"struct {f.elem}" + (" · int8 presence" if f.nullable else "")
    return prim_type(f.elem, f.compact)
