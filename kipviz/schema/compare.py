"""Compare two definitions of one message version, attribute by wire-relevant attribute."""
from __future__ import annotations

from .model import MessageSpec
from .resolve import VField, resolve


def _fields(a: tuple[VField, ...], b: tuple[VField, ...], path: str, names: bool) -> list[str]:
    """Plain fields must match one for one, in order. Tagged fields match by tag number; a tagged
    field only `a` has is allowed (Kafka adds tagged fields to existing versions, and older
    readers skip them), but a tagged field of `b` missing from `a` is a difference."""
    out: list[str] = []
    pa = [f for f in a if not f.tagged]
    pb = [f for f in b if not f.tagged]
    if len(pa) != len(pb):
        out.append(f"{path or '<top>'}: {len(pa)} fields {[f.name for f in pa]} vs {len(pb)} {[f.name for f in pb]}")
    pairs = list(zip(pa, pb, strict=False))
    ta = {f.tag: f for f in a if f.tagged}
    for f in (f for f in b if f.tagged):
        if f.tag in ta:
            pairs.append((ta[f.tag], f))
        else:
            out.append(f"{path or '<top>'}: tagged field {f.name} (tag {f.tag}) missing")
    for fa, fb in pairs:
        out.extend(_pair(fa, fb, f"{path}.{fa.name}" if path else fa.name, names))
    return out


def _pair(fa: VField, fb: VField, p: str, names: bool) -> list[str]:
    """The differences of one matched pair of fields, and of their fields when structs."""
    out: list[str] = []
    if names and fa.name != fb.name and fb.name not in fa.spec.aliases:
        out.append(f"{p}: name {fa.name!r} vs {fb.name!r}")
    if fa.is_array != fb.is_array or fa.is_struct != fb.is_struct or (
            not fa.is_struct and fa.elem != fb.elem):
        out.append(f"{p}: type {fa.type!r} vs {fb.type!r}")
    for attr in ("nullable", "tag", "compact"):
        if getattr(fa, attr) != getattr(fb, attr):
            out.append(f"{p}: {attr} {getattr(fa, attr)!r} vs {getattr(fb, attr)!r}")
    if fa.tagged and fa.spec.default != fb.spec.default:
        # a tagged field is written only when it differs from its default
        out.append(f"{p}: default {fa.spec.default!r} vs {fb.spec.default!r}")
    if fa.is_struct and fb.is_struct:
        out.extend(_fields(fa.fields, fb.fields, p, names))
    return out


def wire_differences(a: MessageSpec, b: MessageSpec, version: int, *, names: bool = True) -> list[str]:
    """Every wire-relevant difference between a and b at one version (empty list: identical)."""
    out: list[str] = []
    if a.api_key != b.api_key:
        out.append(f"apiKey {a.api_key} vs {b.api_key}")
    if a.type != b.type:
        out.append(f"type {a.type} vs {b.type}")
    va, vb = resolve(a, version), resolve(b, version)
    if va.flexible != vb.flexible:
        out.append(f"flexible {va.flexible} vs {vb.flexible}")
    out.extend(_fields(va.fields, vb.fields, "", names))
    return out
