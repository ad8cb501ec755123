"""What changed on the wire between two versions of a message.

    version_diff("TxnOffsetCommitRequest", 5, 6) -> [{"path", "change", "detail"}, ...]
    diff_table(name, a, b)    -> pandas DataFrame of the same rows
    diff_diagram(name, a, b)  -> graphviz Digraph: version a and version b side by side, changes
                                 highlighted (added green, removed red, changed amber, renamed blue)

Field paths are dotted schema names without indices ("Topics.Partitions.CommittedOffset").
`change` is one of:

    added, removed            the field exists in only one of the two versions (a whole added or
                              removed struct is one row; its fields are not listed again)
    type-changed              same path, different type ("string" -> "uuid")
    nullability-changed       null allowed in one version only
    moved-to-tagged, moved-from-tagged, tag-changed
    compact-changed           the field's own length encoding changed although the message's
                              flexibility did not explain it (field-level flexibleVersions)
    renamed                   same wire, new name (see below)
    flexible                  (path "(message)") the message became, or stopped being, flexible:
                              compact strings/arrays and a tag buffer in every struct
    header-version            (path "(header)") the request/response header version changed

Renames. A kit field keeps one FieldSpec across versions, with its earlier names in "aliases";
the bytes do not change, only the name in the source. The definition's "renamedIn" says which
version first used the current name (TxnOffsetCommit's GenerationIdOrMemberEpoch: 6, KIP-1319).
A diff whose range crosses that version reports "renamed (source only, same wire)". A field whose
rename is not tied to a version (LeaderAndIsr's ZkVersion) is never reported.
Independently, a field removed and another added at the same position of the same struct with the
same wire type, nullability and tagging is reported as one "renamed" row (same position and wire
type), because the bytes cannot tell them apart."""
from __future__ import annotations

import graphviz

from .. import codec
from ..schema import registry
from ..schema.model import FieldSpec, MessageSpec
from ..schema.resolve import VField, resolve
from .render import label_text
from .wire import wire_type

__all__ = ["version_diff", "diff_table", "diff_diagram", "rename_version", "name_at", "path_at", "CHANGE_COLORS"]

CHANGE_COLORS = {"added": "#c6f6d5", "removed": "#fed7d7", "changed": "#feebc8", "renamed": "#bee3f8"}


def rename_version(spec: MessageSpec, f: FieldSpec) -> int | None:
    """The first version that uses the field's current name instead of its alias (the
    definition's "renamedIn"), or None when the rename is not tied to a version."""
    return f.renamed_in if f.aliases else None


def name_at(spec: MessageSpec, f: FieldSpec, v: int) -> str:
    """The field's name as version v knew it (its alias before the rename version)."""
    rv = rename_version(spec, f)
    return f.aliases[0] if rv is not None and v < rv else f.name


def path_at(spec: MessageSpec, path: str, v: int) -> str:
    """A dotted path with every component named as version v knew it."""
    fields, out = spec.fields, []
    for part in path.split("."):
        f = next((x for x in fields if x.name == part and x.present(v)), None) \
            or next((x for x in fields if x.name == part), None)
        if f is None:
            return path
        out.append(name_at(spec, f, v))
        fields = f.fields
    return ".".join(out)


def _flatten(fields: tuple[VField, ...], prefix: str = "", out: dict | None = None) -> dict:
    """path -> (VField, parent prefix, position among the parent's untagged fields or None)."""
    out = {} if out is None else out
    pos = 0
    for f in fields:
        path = prefix + f.name
        out[path] = (f, prefix, None if f.tagged else pos)
        if not f.tagged:
            pos += 1
        if f.is_struct:
            _flatten(f.fields, path + ".", out)
    return out


def _spec_paths(fields: tuple[FieldSpec, ...], prefix: str = "", out: list | None = None) -> list[str]:
    """Every path of every version, in schema order (a path named twice is listed once)."""
    out = [] if out is None else out
    for f in fields:
        path = prefix + f.name
        if path not in out:
            out.append(path)
        if f.is_struct:
            _spec_paths(f.fields, path + ".", out)
    return out


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _describe(f: VField) -> str:
    text = wire_type(f)
    if f.nullable:
        text += ", nullable"
    if f.tagged:
        text += f", tagged (tag {f.tag})"
    if f.is_struct:
        text += f", {len(f.fields)} field{'s' if len(f.fields) != 1 else ''}"
    return text


def _same_wire(x: VField, y: VField) -> bool:
    if (x.elem if not x.is_struct else None) != (y.elem if not y.is_struct else None):
        return False
    if x.is_array != y.is_array or x.is_struct != y.is_struct or x.nullable != y.nullable or x.tag != y.tag:
        return False
    if x.is_struct:
        return len(x.fields) == len(y.fields) and all(_same_wire(p, q) and p.name == q.name
                                                      for p, q in zip(x.fields, y.fields, strict=True))
    return True


_VARIABLE = ("string", "bytes", "records")


def _header_version(spec: MessageSpec, v: int) -> tuple[str, int] | None:
    if spec.type == "request":
        return "request header", codec.request_header_version(spec, v)
    if spec.type == "response":
        return "response header", codec.response_header_version(spec, v)
    return None


def _diff_rows(spec: MessageSpec, a: int, b: int) -> list[dict]:
    """version_diff's rows plus, for renames, "_also": the other path the diagram highlights."""
    va, vb = resolve(spec, a), resolve(spec, b)
    rows: list[dict] = []

    ha, hb = _header_version(spec, a), _header_version(spec, b)
    if ha and hb and ha[1] != hb[1]:
        rows.append({"path": "(header)", "change": "header-version",
                     "detail": f"{ha[0]} v{ha[1]} → v{hb[1]}"})
    if va.flexible != vb.flexible:
        detail = (f"v{b} is flexible: compact strings, bytes and arrays (varint lengths) and a tag buffer "
                  "at the end of every struct" if vb.flexible
                  else f"v{b} is not flexible: int16/int32 lengths and counts, no tagged fields")
        rows.append({"path": "(message)", "change": "flexible", "detail": detail})

    fa, fb = _flatten(va.fields), _flatten(vb.fields)
    lo, hi = min(a, b), max(a, b)
    for path in _spec_paths(spec.fields):
        parent = _parent(path)
        if path in fa and path in fb:
            x, y = fa[path][0], fb[path][0]
            rv = rename_version(spec, y.spec) if x.spec is y.spec else None
            if rv is not None and lo < rv <= hi:
                old, new = y.spec.aliases[0], y.name
                rows.append({"path": path, "change": "renamed",
                             "detail": f"{old} → {new} (source only, same wire)" if a < b
                             else f"{new} → {old} (source only, same wire)"})
            if (x.is_array, x.is_struct, None if x.is_struct else x.elem) != \
                    (y.is_array, y.is_struct, None if y.is_struct else y.elem):
                rows.append({"path": path, "change": "type-changed", "detail": f"{x.type} → {y.type}"})
            if x.nullable != y.nullable:
                rows.append({"path": path, "change": "nullability-changed",
                             "detail": f"nullable in v{b}" if y.nullable else f"no longer nullable in v{b}"})
            if x.tag is None and y.tag is not None:
                rows.append({"path": path, "change": "moved-to-tagged", "detail": f"tagged field, tag {y.tag}"})
            elif x.tag is not None and y.tag is None:
                rows.append({"path": path, "change": "moved-from-tagged",
                             "detail": f"was tagged (tag {x.tag}); now a regular field"})
            elif x.tag != y.tag:
                rows.append({"path": path, "change": "tag-changed", "detail": f"tag {x.tag} → {y.tag}"})
            if (x.compact != y.compact and (x.is_array or x.is_struct or x.elem in _VARIABLE)
                    and not (x.compact == va.flexible and y.compact == vb.flexible)):
                rows.append({"path": path, "change": "compact-changed",
                             "detail": f"{wire_type(x)} → {wire_type(y)}"})
        elif path in fb:
            if not parent or parent in fa:          # inside a new struct: covered by the struct's row
                rows.append({"path": path_at(spec, path, b), "change": "added",
                             "detail": _describe(fb[path][0]), "_key": path})
        elif path in fa:
            if not parent or parent in fb:
                rows.append({"path": path_at(spec, path, a), "change": "removed",
                             "detail": _describe(fa[path][0]), "_key": path})

    # same position, same wire, different name: one "renamed" row instead of removed + added
    for r in [r for r in rows if r["change"] == "added"]:
        y, py, posy = fb[r["_key"]]
        for xr in [q for q in rows if q["change"] == "removed"]:
            x, px, posx = fa[xr["_key"]]
            if px == py and posx is not None and posx == posy and _same_wire(x, y):
                rows.remove(xr)
                r.update(change="renamed", _also=xr["_key"],
                         detail=f"{x.name} → {y.name} (same position and wire type: same bytes)")
                break
    return rows


def version_diff(name: str | MessageSpec, a: int, b: int, *, errors: bool = False) -> list[dict]:
    """Rows {path, change, detail} describing how version b differs from version a; with
    errors=True also the errors the broker can return at b and not at a (error_diff)."""
    spec = registry.get(name)
    rows = [{k: r[k] for k in ("path", "change", "detail")} for r in _diff_rows(spec, a, b)]
    return rows + (error_diff(spec, a, b) if errors else [])


def error_diff(name: str | MessageSpec, a: int, b: int) -> list[dict]:
    """Rows {path "(errors)", change "error added"/"error removed", detail "NAME (source)"} from
    kipviz.broker.api_errors; none for an RPC the model declares no error table for."""
    from ..broker.api_errors import ERROR_ROWS, new_errors, source_of
    spec = registry.get(name)
    if spec.api not in ERROR_ROWS:
        return []
    d = new_errors(spec.api, a, b)
    return ([{"path": "(errors)", "change": "error added", "detail": f"{n} ({source_of(spec.api, n)})"}
             for n in d["added"]] +
            [{"path": "(errors)", "change": "error removed", "detail": n} for n in d["removed"]])


def diff_table(name: str | MessageSpec, a: int, b: int):
    """version_diff as a pandas DataFrame (columns path, change, detail)."""
    import pandas as pd
    return pd.DataFrame(version_diff(name, a, b), columns=["path", "change", "detail"])


def _category(change: str) -> str:
    return change if change in ("added", "removed", "renamed") else "changed"


def _e(s) -> str:
    return label_text(s)


def _lines(text: str, width: int = 48) -> str:
    """text wrapped at `width` characters (graphviz lines): a long note makes a narrow column
    rather than a picture too wide for a notebook (render.FIT_PX)."""
    import textwrap
    return "<BR/>".join(_e(line) for line in textwrap.wrap(text, width, break_on_hyphens=False)) or _e(text)


def diff_diagram(name: str | MessageSpec, a: int, b: int) -> graphviz.Digraph:
    """Version a and version b side by side, one row per field, changes highlighted."""
    spec = registry.get(name)
    va, vb = resolve(spec, a), resolve(spec, b)
    fa, fb = _flatten(va.fields), _flatten(vb.fields)
    rows = _diff_rows(spec, a, b)
    by_path: dict[str, list[dict]] = {}
    for r in rows:
        by_path.setdefault(r.get("_key", r["path"]), []).append(r)
        if "_also" in r:
            by_path.setdefault(r["_also"], []).append(r)

    def cell(f: VField | None, shown_name: str, depth: int, bg: str | None) -> str:
        bga = f' BGCOLOR="{bg}"' if bg else ""
        if f is None:
            return f'<TD{bga} ALIGN="LEFT"><FONT COLOR="#aaaaaa">—</FONT></TD>'
        indent = "&#160;&#160;&#160;&#160;" * depth
        marks = ("?" if f.nullable else "") + (f" T{f.tag}" if f.tagged else "")
        return (f'<TD{bga} ALIGN="LEFT" BALIGN="LEFT">{indent}<B>{_e(shown_name)}</B>{_e(marks)}<BR ALIGN="LEFT"/>'
                f'{indent}<FONT POINT-SIZE="9" COLOR="#555555">{_e(wire_type(f))}</FONT></TD>')

    trs = []
    sa, sb = spec.status_label(a), spec.status_label(b)
    trs.append(f'<TR><TD COLSPAN="3" BGCOLOR="#f6e7a8" ALIGN="LEFT"><FONT POINT-SIZE="14"><B>{_e(spec.name)}'
               f" v{a} → v{b}</B></FONT></TD></TR>")
    trs.append(f'<TR><TD BGCOLOR="#fafafa" ALIGN="LEFT"><B>v{a}</B><BR ALIGN="LEFT"/><FONT POINT-SIZE="9">{_lines(sa, 40)}</FONT></TD>'
               f'<TD BGCOLOR="#fafafa" ALIGN="LEFT"><B>v{b}</B><BR ALIGN="LEFT"/><FONT POINT-SIZE="9">{_lines(sb, 40)}</FONT></TD>'
               f'<TD BGCOLOR="#fafafa" ALIGN="LEFT"><B>change</B></TD></TR>')
    ha, hb = _header_version(spec, a), _header_version(spec, b)
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

    for path in _spec_paths(spec.fields):
        x = fa[path][0] if path in fa else None
        y = fb[path][0] if path in fb else None
        if x is None and y is None:
            continue
        depth = path.count(".")
        changes = by_path.get(path, [])
        cats = {_category(c["change"]) for c in changes}
        cat = next((c for c in ("renamed", "added", "removed", "changed") if c in cats), None)
        bg = CHANGE_COLORS[cat] if cat else None
        name_a = name_at(spec, x.spec, a) if x is not None else ""
        name_b = name_at(spec, y.spec, b) if y is not None else ""
        note = "; ".join(f'{c["change"]}: {c["detail"]}' for c in changes)
        bga = f' BGCOLOR="{bg}"' if bg else ""
        trs.append("<TR>" + cell(x, name_a, depth, bg if x is not None else None)
                   + cell(y, name_b, depth, bg if y is not None else None)
                   + f'<TD{bga} ALIGN="LEFT" BALIGN="LEFT">'
                   + (f'<FONT POINT-SIZE="9">{_lines(note)}</FONT>' if note else "") + "</TD></TR>")

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
