"""A message's history: every field across every version, with each version's status and KIP.

    version_history("TxnOffsetCommitRequest") -> pandas DataFrame
    history_html("TxnOffsetCommitRequest")    -> a styled HTML table (timeline look)

The DataFrame has one column per version ("v0" … "vN") and one row per field path (dotted, in
schema order), after six rows about the versions themselves:

    status    released / accepted / proposed ("—" for an official schema without kit labels)
    since     the Kafka release that first shipped the version
    removed   the Kafka release that dropped it, if any
    KIP       the KIP that introduced the version
    flexible  "✓" for flexible versions
    header    the header version used with it ("h2": request header v2, "h0": response header v0)

Field cells: a type code ("i32", "str", "uuid", "[]i32"; "[]" an array of structs, "{}" a struct),
then "?" when nullable; "T3 …" when the field is a tagged field with tag 3; "·" absent."""
from __future__ import annotations

import html

from .. import codec
from ..schema import registry
from ..schema.diff import flatten, rename_version, spec_paths
from ..schema.model import MessageSpec
from ..schema.resolve import VField, resolve
from ..schema.wiretype import wire_type

__all__ = ["version_history", "history_html", "cell_code", "META_ROWS", "ABSENT"]

META_ROWS = ("status", "since", "removed", "KIP", "flexible", "header")
ABSENT = "·"
_CODES = {"bool": "bool", "int8": "i8", "int16": "i16", "uint16": "u16", "int32": "i32", "int64": "i64",
          "float64": "f64", "string": "str", "bytes": "bytes", "records": "rec", "uuid": "uuid"}


def cell_code(f: VField | None) -> str:
    """The matrix cell for one field at one version."""
    if f is None:
        return ABSENT
    if f.is_struct:
        code = "[]" if f.is_array else "{}"
    else:
        code = ("[]" if f.is_array else "") + _CODES.get(f.elem, f.elem)
    if f.nullable:
        code += "?"
    return f"T{f.tag} {code}" if f.tagged else code


def _meta(spec: MessageSpec, v: int) -> dict:
    st = spec.status(v)
    if spec.type == "request":
        hv = f"h{codec.request_header_version(spec, v)}"
    elif spec.type == "response":
        hv = f"h{codec.response_header_version(spec, v)}"
    else:
        hv = "—"
    return {"status": st.status if st else "—", "since": (st.since or "") if st else "",
            "removed": (st.removed or "") if st else "", "KIP": (st.kip or "—") if st else "—",
            "flexible": "✓" if spec.is_flexible(v) else ABSENT, "header": hv}


def _grid(spec: MessageSpec) -> tuple[list[int], list[str], dict]:
    versions = spec.versions
    flat = {v: flatten(resolve(spec, v).fields) for v in versions}
    paths = [p for p in spec_paths(spec.fields) if any(p in flat[v] for v in versions)]
    return versions, paths, flat


def version_history(name: str | MessageSpec):
    """Fields x versions matrix (pandas DataFrame), status rows first; see the module docstring."""
    import pandas as pd
    spec = registry.get(name)
    versions, paths, flat = _grid(spec)
    cols = [f"v{v}" for v in versions]
    metas = {v: _meta(spec, v) for v in versions}
    data = [[metas[v][m] for v in versions] for m in META_ROWS]
    for p in paths:
        data.append([cell_code(flat[v][p][0] if p in flat[v] else None) for v in versions])
    df = pd.DataFrame(data, index=pd.Index(list(META_ROWS) + paths, name="field"), columns=cols)
    df.attrs["message"] = spec.name
    return df


# ---- HTML ------------------------------------------------------------------------------------------
_CSS = """
.kipviz-history{font-family:Helvetica,Arial,sans-serif;font-size:12px;color:#222}
.kipviz-history table{border-collapse:collapse}
.kipviz-history caption{text-align:left;padding:4px 0 8px 0;font-size:13px}
.kipviz-history caption .about{color:#555;font-size:11px}
.kipviz-history th,.kipviz-history td{padding:3px 6px;border:1px solid #e2e2e2;white-space:nowrap}
.kipviz-history th.v{text-align:center;min-width:42px}
.kipviz-history td.f{text-align:left}
.kipviz-history td.c{text-align:center;font-family:Menlo,Consolas,monospace;font-size:11px}
.kipviz-history td.absent{color:#c8c8c8;background:#fafafa}
.kipviz-history td.present{background:#dbeafe;border-left-color:#dbeafe;border-right-color:#dbeafe}
.kipviz-history td.tagged{background:#e9dffc;border-left-color:#e9dffc;border-right-color:#e9dffc}
.kipviz-history td.chg{border-left:3px solid #d97706;font-weight:bold}
.kipviz-history td.gone{border-left:3px solid #dc2626}
.kipviz-history tr.meta td{background:#f8f8f8;text-align:center;font-size:11px}
.kipviz-history .released{background:#c6f6d5 !important;color:#22543d}
.kipviz-history .accepted{background:#feebc8 !important;color:#7b341e}
.kipviz-history .proposed{background:#e9d8fd !important;color:#44337a}
.kipviz-history td.kips{white-space:normal;font-size:11px;color:#333;min-width:220px;text-align:left}
.kipviz-history .kip{font-weight:bold}
.kipviz-history .alias{color:#2b6cb0;font-size:10px}
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _events(spec: MessageSpec, path: str, versions: list[int], flat: dict) -> list[tuple[int, str]]:
    """(version, what) for every change of one field between consecutive versions."""
    out = []
    prev = None
    for i, v in enumerate(versions):
        cur = flat[v][path][0] if path in flat[v] else None
        if i == 0:
            pass
        elif prev is None and cur is not None:
            out.append((v, "added"))
        elif prev is not None and cur is None:
            out.append((v, "removed"))
        elif prev is not None and cur is not None:
            if prev.nullable != cur.nullable:
                out.append((v, "nullable" if cur.nullable else "not nullable"))
            if prev.tag != cur.tag:
                out.append((v, f"tagged (T{cur.tag})" if cur.tag is not None else "untagged"))
            if cell_code(prev).split()[-1].rstrip("?") != cell_code(cur).split()[-1].rstrip("?"):
                out.append((v, f"type {prev.type} → {cur.type}"))
        prev = cur
    f = next((flat[v][path][0] for v in versions if path in flat[v]), None)
    if f is not None and f.spec.aliases:
        rv = rename_version(spec, f.spec)
        if rv is not None:
            out.append((rv, f"renamed from {f.spec.aliases[0]} (same wire)"))
    return sorted(out, key=lambda e: e[0])


def _version_head(spec, v: int) -> str:
    """A version's header cell with its status colour and the change text as a tooltip."""
    st = spec.status(v)
    tip = spec.status_label(v) + (f" — {st.change}" if st and st.change else "") + (f" ({st.note})" if st and st.note else "")
    cls = f"v {st.status}" if st else "v"
    return f'<th class="{cls}" title="{_e(tip)}">v{v}</th>'


def _meta_row(m: str, versions: list[int], metas: dict) -> str:
    tds = []
    for v in versions:
        val = metas[v][m]
        cls = f' class="{_e(val)}"' if m == "status" and val in ("released", "accepted", "proposed") else ""
        tds.append(f"<td{cls}>{_e(val)}</td>")
    return f'<tr class="meta"><td class="f"><i>{m}</i></td>{"".join(tds)}<td></td></tr>'


def _field_row(spec, p: str, versions: list[int], flat: dict, metas: dict) -> str:
    """One field's row: its name, a cell per version (changes highlighted), its changes with their KIPs."""
    depth = p.count(".")
    f0 = next(flat[v][p][0] for v in versions if p in flat[v])
    alias = (f' <span class="alias">(was {_e(", ".join(f0.spec.aliases))})</span>' if f0.spec.aliases else "")
    name_cell = (f'<td class="f" style="padding-left:{6 + 14 * depth}px" title="{_e(p)}: {_e(f0.spec.about)}">'
                 f"{_e(p.rpartition('.')[2])}{alias}</td>")
    tds, prev = [], None
    for v in versions:
        f = flat[v][p][0] if p in flat[v] else None
        code = cell_code(f)
        cls = ["c", "absent" if f is None else ("tagged" if f.tagged else "present")]
        if prev is not None and code != prev:
            cls.append("gone" if f is None else "chg")
        tip = f"v{v}: " + (wire_type(f) + (", nullable" if f.nullable else "") if f is not None else "absent")
        tds.append(f'<td class="{" ".join(cls)}" title="{_e(tip)}">{_e(code)}</td>')
        prev = code
    events = []
    for v, what in _events(spec, p, versions, flat):
        kip = metas[v]["KIP"]
        kip_html = f' <span class="kip">{_e(kip)}</span>' if kip and kip != "—" else ""
        events.append(f"v{v} {_e(what)}{kip_html}")
    return f"<tr>{name_cell}{''.join(tds)}<td class=\"kips\">{'; '.join(events)}</td></tr>"


def history_html(name: str | MessageSpec) -> str:
    """A styled HTML table of version_history (timeline look, KIPs per change)."""
    spec = registry.get(name)
    versions, paths, flat = _grid(spec)
    metas = {v: _meta(spec, v) for v in versions}
    about = spec.kit.about if spec.kit else ""
    out = [f"<div class=\"kipviz-history\"><style>{_CSS}</style><table>",
           f"<caption><b>{_e(spec.name)}</b> — field history, v{versions[0]}–v{versions[-1]}"
           + (f"<br><span class=\"about\">{_e(about)}</span>" if about else "") + "</caption>"]
    ths = [_version_head(spec, v) for v in versions]
    out.append("<thead><tr><th>field</th>" + "".join(ths) + "<th>changes (KIP)</th></tr></thead><tbody>")
    out += [_meta_row(m, versions, metas) for m in META_ROWS]
    out += [_field_row(spec, p, versions, flat, metas) for p in paths]
    out.append("</tbody></table></div>")
    return "".join(out)
