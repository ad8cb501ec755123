"""Version diffs drawn: the rows come from kipviz.schema.diff (its docstring explains every
`change`, renames and the header version); this module adds the error rows and the pictures.

    version_diff(name, a, b, errors=False) -> [{"path", "change", "detail"}, ...]
    diff_table(name, a, b)    -> pandas DataFrame of the same rows (a kipviz.table.Table without pandas)
    diff_diagram(name, a, b)  -> graphviz Digraph: version a and version b side by side, changes
                                 highlighted (added green, removed red, changed amber, renamed blue)"""
from __future__ import annotations

import graphviz

from ..schema import registry
from ..schema.diff import (
    diff_rows,
    flatten,
    header_version,
    name_at,
    path_at,
    rename_version,
    spec_paths,
)
from ..schema.diff import version_diff as _fields_diff
from ..schema.model import MessageSpec
from ..schema.resolve import VField, resolve
from ..schema.wiretype import wire_type
from ..table import frame
from .render import label_text

__all__ = ["version_diff", "diff_table", "diff_diagram", "rename_version", "name_at", "path_at", "CHANGE_COLORS"]

CHANGE_COLORS = {"added": "#c6f6d5", "removed": "#fed7d7", "changed": "#feebc8", "renamed": "#bee3f8"}


def version_diff(name: str | MessageSpec, a: int, b: int, *, errors: bool = False) -> list[dict]:
    """schema.diff.version_diff's rows; with errors=True also the errors the broker can return at b
    and not at a (kipviz.broker.api_errors.error_diff)."""
    rows = _fields_diff(name, a, b)
    if not errors:
        return rows
    from ..broker.api_errors import error_diff
    return rows + error_diff(registry.get(name).api, a, b)


def diff_table(name: str | MessageSpec, a: int, b: int):
    """version_diff as a pandas DataFrame (columns path, change, detail); a Table where pandas is missing."""
    return frame(version_diff(name, a, b), columns=["path", "change", "detail"])


def _category(change: str) -> str:
    return change if change in ("added", "removed", "renamed") else "changed"


def _e(s) -> str:
    return label_text(s)


def _lines(text: str, width: int = 48) -> str:
    """text wrapped at `width` characters (graphviz lines): a long note makes a narrow column
    rather than a picture too wide for a notebook (render.FIT_PX)."""
    import textwrap
    return "<BR/>".join(_e(line) for line in textwrap.wrap(text, width, break_on_hyphens=False)) or _e(text)


def _cell(f: VField | None, shown_name: str, depth: int, bg: str | None) -> str:
    bga = f' BGCOLOR="{bg}"' if bg else ""
    if f is None:
        return f'<TD{bga} ALIGN="LEFT"><FONT COLOR="#aaaaaa">—</FONT></TD>'
    indent = "&#160;&#160;&#160;&#160;" * depth
    marks = ("?" if f.nullable else "") + (f" T{f.tag}" if f.tagged else "")
    return (f'<TD{bga} ALIGN="LEFT" BALIGN="LEFT">{indent}<B>{_e(shown_name)}</B>{_e(marks)}<BR ALIGN="LEFT"/>'
            f'{indent}<FONT POINT-SIZE="9" COLOR="#555555">{_e(wire_type(f))}</FONT></TD>')


def _meta_rows(spec, a: int, b: int, va, vb, by_path: dict) -> list[str]:
    """The header version and flexible-or-not rows, highlighted when they change."""
    trs = []
    ha, hb = header_version(spec, a), header_version(spec, b)
    meta = []
    if ha and hb:
        meta.append(("(header)", f"{ha[0]} v{ha[1]}", f"{hb[0]} v{hb[1]}"))
    meta.append(("(message)", "flexible" if va.flexible else "not flexible", "flexible" if vb.flexible else "not flexible"))
    for key, left, right in meta:
        changes = by_path.get(key, [])
        bg = f' BGCOLOR="{CHANGE_COLORS["changed"]}"' if changes else ""
        note = "; ".join(c["detail"] for c in changes) or "same"
        trs.append(f'<TR><TD{bg} ALIGN="LEFT"><I>{_e(left)}</I></TD><TD{bg} ALIGN="LEFT"><I>{_e(right)}</I></TD>'
                   f'<TD{bg} ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="9">{_lines(note)}</FONT></TD></TR>')
    return trs


def _field_row(spec, path: str, x: VField | None, y: VField | None, a: int, b: int, by_path: dict) -> str:
    """One field in both versions, coloured by its strongest change, with the changes' text."""
    depth = path.count(".")
    changes = by_path.get(path, [])
    cats = {_category(c["change"]) for c in changes}
    cat = next((c for c in ("renamed", "added", "removed", "changed") if c in cats), None)
    bg = CHANGE_COLORS[cat] if cat else None
    name_a = name_at(spec, x.spec, a) if x is not None else ""
    name_b = name_at(spec, y.spec, b) if y is not None else ""
    note = "; ".join(f'{c["change"]}: {c["detail"]}' for c in changes)
    bga = f' BGCOLOR="{bg}"' if bg else ""
    return ("<TR>" + _cell(x, name_a, depth, bg if x is not None else None)
            + _cell(y, name_b, depth, bg if y is not None else None)
            + f'<TD{bga} ALIGN="LEFT" BALIGN="LEFT">'
            + (f'<FONT POINT-SIZE="9">{_lines(note)}</FONT>' if note else "") + "</TD></TR>")


def diff_diagram(name: str | MessageSpec, a: int, b: int) -> graphviz.Digraph:
    """Version a and version b side by side, one row per field, changes highlighted."""
    spec = registry.get(name)
    va, vb = resolve(spec, a), resolve(spec, b)
    fa, fb = flatten(va.fields), flatten(vb.fields)
    rows = diff_rows(spec, a, b)
    by_path: dict[str, list[dict]] = {}
    for r in rows:
        by_path.setdefault(r.get("_key", r["path"]), []).append(r)
        if "_also" in r:
            by_path.setdefault(r["_also"], []).append(r)

    trs = []
    sa, sb = spec.status_label(a), spec.status_label(b)
    trs.append(f'<TR><TD COLSPAN="3" BGCOLOR="#f6e7a8" ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{_e(spec.name)}'
               f" v{a} → v{b}</B></FONT></TD></TR>")
    trs.append(f'<TR><TD BGCOLOR="#fafafa" ALIGN="LEFT"><B>v{a}</B><BR ALIGN="LEFT"/><FONT POINT-SIZE="9">{_lines(sa, 40)}</FONT></TD>'
               f'<TD BGCOLOR="#fafafa" ALIGN="LEFT"><B>v{b}</B><BR ALIGN="LEFT"/><FONT POINT-SIZE="9">{_lines(sb, 40)}</FONT></TD>'
               f'<TD BGCOLOR="#fafafa" ALIGN="LEFT"><B>change</B></TD></TR>')
    trs += _meta_rows(spec, a, b, va, vb, by_path)
    for path in spec_paths(spec.fields):
        x = fa[path][0] if path in fa else None
        y = fb[path][0] if path in fb else None
        if x is None and y is None:
            continue
        trs.append(_field_row(spec, path, x, y, a, b, by_path))

    legend = "".join(f'<TD BGCOLOR="{CHANGE_COLORS[k]}"><FONT POINT-SIZE="9">{k}</FONT></TD>'
                     for k in ("added", "removed", "changed", "renamed"))
    trs.append(f'<TR><TD COLSPAN="3" ALIGN="LEFT"><TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3">'
               f"<TR>{legend}</TR></TABLE></TD></TR>")
    label = ('<<TABLE BORDER="1" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4" COLOR="#777777" BGCOLOR="#ffffff">'
             + "".join(trs) + "</TABLE>>")
    g = graphviz.Digraph(name=f"{spec.name}_v{a}_v{b}", graph_attr={"pad": "0.2"},
                         node_attr={"shape": "plaintext", "fontname": "Helvetica", "fontsize": "10", "margin": "0"})
    g.node("diff", label)
    return g
