"""What changed between a version of the baseline and a version of the draft: two definitions,
so kipviz.draw.diff (one definition, two versions) does not apply. Fields are matched by name
or alias, as the compatibility checks match them."""
from __future__ import annotations

from ..schema.model import MessageSpec
from ..schema.resolve import VField
from ..schema.wiretype import wire_type
from .checks import pair_fields, present_fields

__all__ = ["cross_diff"]


def _describe(f: VField) -> str:
    text = wire_type(f)
    if f.nullable:
        text += ", nullable"
    if f.tagged:
        text += f", tagged (tag {f.tag})"
    return text


# size: one comparison of the kit's and Kafka's definitions, a branch per kind of difference: a flat list of checks, one finding each
def cross_diff(base: MessageSpec, a: int, draft: MessageSpec, b: int) -> list[dict]:
    """Rows {path, change, detail}: how the draft's v`b` differs from the baseline's v`a`."""
    rows: list[dict] = []
    if base.is_flexible(a) != draft.is_flexible(b):
        rows.append({"path": "(message)", "change": "flexible",
                     "detail": "flexible" if draft.is_flexible(b) else "no longer flexible"})
    pb, pd = present_fields(base, a), present_fields(draft, b)
    added, removed = set(), set()
    for p in pair_fields(base.fields, draft.fields, "", None):
        inb = p.base is not None and id(p.base) in pb
        ind = p.draft is not None and id(p.draft) in pd
        parent = id(p.parent) if p.parent is not None else None
        if inb and not ind:
            removed.add(id(p))
            if parent not in removed:
                rows.append({"path": p.path, "change": "removed", "detail": _describe(pb[id(p.base)])})
        elif ind and not inb:
            added.add(id(p))
            if parent not in added:
                rows.append({"path": p.path, "change": "added", "detail": _describe(pd[id(p.draft)])})
        elif inb and ind:
            x, y = pb[id(p.base)], pd[id(p.draft)]
            if x.name != y.name:
                rows.append({"path": p.path, "change": "renamed", "detail": f"{x.name} → {y.name}"})
            if (x.is_array, x.is_struct, x.elem if not x.is_struct else None) != \
                    (y.is_array, y.is_struct, y.elem if not y.is_struct else None):
                rows.append({"path": p.path, "change": "type-changed", "detail": f"{x.type} → {y.type}"})
            if x.nullable != y.nullable:
                rows.append({"path": p.path, "change": "nullability-changed",
                             "detail": "nullable" if y.nullable else "no longer nullable"})
            if x.tag != y.tag:
                rows.append({"path": p.path, "change": "tag-changed", "detail": f"tag {x.tag} → {y.tag}"})
    return rows
