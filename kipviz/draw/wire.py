"""Wire-layout pictures of any message version, derived from its definition.

    wire_diagram("TxnOffsetCommitRequest", 6)                 -> graphviz.Digraph (field layout)
    wire_diagram("TxnOffsetCommitRequest", 6, example=True)   -> example-driven layout: the kit's
                                                                 example is encoded and every field
                                                                 shows its byte offset, size, value
    wire_diagram(spec, 12, example={...}, header=False)       -> any MessageSpec, your own value
    wire_svg(...)                                              -> the same picture as SVG text

The picture shows, top to bottom: the 4-byte size prefix, the request or response header (which
header version applies and why, including the ApiVersions-response exception), then the body:
every field with its wire type ("int32 · 4B", "string (compact) · varint len", "array · int32
count", ...), "?" for nullable fields, tagged fields with their tag numbers inside the tag buffer
that ends each flexible struct, and nested arrays/structs as nested blocks. The title carries the
version's status label (released in Kafka X / accepted / proposed, with the KIP).

With an example, offsets are counted from the start of the frame (byte 0 = the size prefix) when
the header is shown, else from the start of the body; variable-length encodings (varints, compact
strings, tag buffers) are shown with their true sizes. Of an array's elements the first is shown
in full and the rest are summarised ("… 2 more")."""
from __future__ import annotations

import textwrap
from collections import defaultdict

import graphviz

from .. import codec, uuids
from ..records.examples import example_value
from ..schema import registry
from ..schema.model import MessageSpec
from ..schema.resolve import VField, resolve
from ..schema.wiretype import wire_type
from .render import label_text, to_svg

__all__ = ["wire_diagram", "wire_svg", "header_info", "text_width"]

FONT = "Helvetica"
MONO = "Courier"
C_HEADER, C_HEADER_TITLE = "#e8f1fb", "#c9def5"
C_BODY_TITLE = "#f6e7a8"
C_SIZE = "#eeeeee"
C_TAGS = "#efe6fb"
C_TAGGED = "#f7f2fd"
C_MORE = "#f2f2f2"
C_HEAD_ROW = "#fafafa"
DEPTH_BG = ("#fffdf3", "#f3f8ff", "#f4fbf1", "#fff5ee", "#f7f3fb")
C_ACTIVE, C_INACTIVE = "#2b6cb0", "#eeeeee"
VALUE_WIDTH = 34
TYPE_WRAP = 34                     # characters per line of a wire type
FS_CELL, FS_NOTE = 10, 9          # the node's font size; _small's (8 pt was under 8 px once a wide
                                   # diagram is scaled to a notebook's width: render.FIT_PX)
# graphviz sizes a cell by its own estimate of Helvetica, a browser draws whatever sans font it has
# (DejaVu Sans: ~0.67 em a character on these texts), so the type cell declares a width from this
# rule: 0.7 em per character, plus cell padding and border
EM_PER_CHAR, CELL_PAD = 0.7, 10


def text_width(text: str, size: float = FS_CELL) -> int:
    """Points a line of `text` may need at `size` (the sizing rule of the type cell)."""
    return int(len(text) * size * EM_PER_CHAR + 0.999)


def _e(s) -> str:
    return label_text(s)


def _small(s: str, color: str = "#555555", size: int = 9) -> str:
    if not s:
        return ""
    return f'<FONT POINT-SIZE="{size}" COLOR="{color}">{s}</FONT>'


def _wrap(text: str, width: int = 80) -> str:
    return '<BR ALIGN="LEFT"/>'.join(_e(line) for line in textwrap.wrap(text, width)) + '<BR ALIGN="LEFT"/>'


def _null_note(f: VField) -> str:
    """The second line of the type cell: how lengths and nulls are written."""
    notes = []
    variable = f.is_array or f.elem in ("string", "bytes", "records")
    if variable and f.compact:
        notes.append("varint holds " + ("count" if f.is_array else "length") + " + 1")
        if f.nullable:
            notes.append("0 = null")
    elif variable and f.nullable:
        notes.append("-1 = null")
    elif f.is_struct and not f.is_array and f.nullable:
        notes.append("-1 = null, 1 = present")
    if f.tagged:
        notes.append(f"in the tag buffer as varint tag {f.tag} · varint size · value")
    return "; ".join(notes)


# ---- headers -------------------------------------------------------------------------------------
def header_info(spec: MessageSpec, version: int) -> tuple[str, int, list[int], str] | None:
    """(header message name, header version, all header versions, why) for a request/response."""
    if spec.type == "request":
        hv = codec.request_header_version(spec, version)
        if hv == 0:
            why = f"{spec.api} v{version} uses request header v0 (no ClientId): the only API that did"
        elif hv == 2:
            why = (f"{spec.api} v{version} is flexible, so the request header is v2 (adds a tag buffer; "
                   "ClientId keeps its int16 length so any broker can read it)")
        else:
            why = f"{spec.api} v{version} is not flexible, so the request header is v1"
        return "RequestHeader", hv, [0, 1, 2], why
    if spec.type == "response":
        hv = codec.response_header_version(spec, version)
        if spec.api == "ApiVersions":
            why = ("ApiVersions responses always use response header v0, even when the body is flexible: "
                   "the client must read the answer before it knows which versions the broker supports")
        elif hv == 1:
            why = f"{spec.api} v{version} is flexible, so the response header is v1 (adds a tag buffer)"
        else:
            why = f"{spec.api} v{version} is not flexible, so the response header is v0"
        return "ResponseHeader", hv, [0, 1], why
    return None


def _header_value(spec: MessageSpec, version: int, hv: int) -> dict:
    if spec.type == "request":
        value = {"RequestApiKey": registry.api_key(spec) or 0, "RequestApiVersion": version, "CorrelationId": 1}
        if hv >= 1:
            value["ClientId"] = "kipviz"
        return value
    return {"CorrelationId": 1}


# ---- spans ---------------------------------------------------------------------------------------
class _Spans:
    """Spans of one encoded message, by exact path and by extent (a path and all below it)."""

    def __init__(self, spans, base: int):
        self.base = base
        self.exact: dict[str, list] = defaultdict(list)
        self.ext: dict[str, list[int]] = {}
        for s in spans:
            self.exact[s.path].append(s)
            p = s.path
            cuts = [i for i, ch in enumerate(p) if ch in ".["]
            for anc in [p[:i] for i in cuts] + [p]:
                e = self.ext.get(anc)
                if e is None:
                    self.ext[anc] = [s.start, s.end]
                else:
                    if s.start < e[0]:
                        e[0] = s.start
                    if s.end > e[1]:
                        e[1] = s.end

    def extent(self, path: str) -> tuple[int, int] | None:
        e = self.ext.get(path)
        return (e[0] + self.base, e[1] + self.base) if e else None


def _show_prim(t: str, v) -> str:
    if v is None:
        return "null"
    if t == "string":
        s = v if len(v) <= VALUE_WIDTH - 2 else v[: VALUE_WIDTH - 3] + "…"
        return f'"{s}"'
    if t == "bool":
        return "true" if v else "false"
    if t == "uuid":
        return uuids.to_kafka_str(uuids.parse(v))
    if t in ("bytes", "records"):
        b = bytes(v)
        head = " ".join(f"{x:02x}" for x in b[:6]) + (" …" if len(b) > 6 else "")
        kind = "record batch" if t == "records" else "bytes"
        return f"{len(b)} B {kind}: {head}" if b else f"0 {kind}"
    return str(v)


def _prim_value(t: str, spans) -> str:
    vals = [s for s in spans if s.role == "value"]
    if vals:
        return _show_prim(t, vals[-1].value)
    lens = [s for s in spans if s.role == "length"]
    if lens and lens[-1].value is None:
        return "null"
    return '""' if t == "string" else _show_prim(t, b"")


# ---- tables --------------------------------------------------------------------------------------
class _Table:
    def __init__(self, spec: MessageSpec, version: int, spans: _Spans | None, flexible: bool):
        self.spec = spec
        self.version = version
        self.spans = spans
        self.flexible = flexible
        self.ncols = 5 if spans is not None else 3

    # cells
    def head_row(self) -> str:
        names = ("offset", "bytes", "field", "wire type", "example value") if self.spans is not None \
            else ("field", "wire type", "notes")
        return "<TR>" + "".join(f'<TD BGCOLOR="{C_HEAD_ROW}" ALIGN="LEFT">{_small(n, "#777777")}</TD>'
                                for n in names) + "</TR>"

    def _row(self, path: str | None, name: str, wtype: str, note: str, value: str, bg: str | None,
             parts: str = "", ext=None) -> str:
        bga = f' BGCOLOR="{bg}"' if bg else ""
        # long types and notes wrap (a narrower table keeps its text readable once a notebook
        # scales the picture to its width: render.FIT_PX)
        tlines = textwrap.wrap(wtype, TYPE_WRAP, break_on_hyphens=False) or [wtype]
        nlines = textwrap.wrap(note, TYPE_WRAP + 6, break_on_hyphens=False) if note else []
        type_cell = '<BR ALIGN="LEFT"/>'.join(_e(x) for x in tlines) + "".join(
            f'<BR ALIGN="LEFT"/>{_small(_e(x))}' for x in nlines)
        cells = []
        if self.spans is not None:
            if ext is None and path is not None:
                ext = self.spans.extent(path)
            if ext:
                off = f'<FONT FACE="{MONO}">{ext[0]}</FONT>'
                size = f'<FONT FACE="{MONO}">{ext[1] - ext[0]}</FONT>' + (f" {_small(_e('= ' + parts))}" if parts else "")
            else:
                off = size = "—"
            cells += [off, size]
        cells += [name, type_cell]
        if value:
            cells.append(f'<FONT FACE="{MONO}">{_e(value)}</FONT>' if self.spans is not None else _small(_e(value), "#444444", 9))
        else:
            cells.append("")
        width = max([text_width(x) for x in tlines] + [text_width(x, FS_NOTE) for x in nlines]) + CELL_PAD
        kind = len(cells) - 2          # the type cell
        return "<TR>" + "".join(f'<TD{bga} ALIGN="LEFT" BALIGN="LEFT"' + (f' WIDTH="{width}"' if k == kind else "")
                                + f">{c}</TD>" for k, c in enumerate(cells)) + "</TR>"

    def _block(self, rows: list[str], bg: str) -> str:
        inner = "".join(rows)
        return (f'<TR><TD COLSPAN="{self.ncols}" BGCOLOR="{bg}" ALIGN="LEFT" CELLPADDING="2">'
                f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3" BGCOLOR="{bg}">'
                f"{inner}</TABLE></TD></TR>")

    def _note_row(self, text: str, bg: str, ext=None) -> str:
        if self.spans is not None and ext:
            lead = (f'<TD BGCOLOR="{bg}" ALIGN="LEFT"><FONT FACE="{MONO}">{ext[0]}</FONT></TD>'
                    f'<TD BGCOLOR="{bg}" ALIGN="LEFT"><FONT FACE="{MONO}">{ext[1] - ext[0]}</FONT></TD>')
            span = self.ncols - 2
        else:
            lead, span = "", self.ncols
        return f'<TR>{lead}<TD COLSPAN="{span}" BGCOLOR="{bg}" ALIGN="LEFT"><I>{_e(text)}</I></TD></TR>'

    # fields
    def struct_rows(self, fields: tuple[VField, ...], prefix: str, depth: int, with_spans: bool) -> list[str]:
        rows = []
        for f in fields:
            if not f.tagged:
                rows += self.field_rows(f, prefix, depth, with_spans)
        if self.flexible:
            rows += self.tag_buffer_rows([f for f in fields if f.tagged], prefix, depth, with_spans)
        return rows

    def _name(self, f: VField) -> str:
        from ..schema.diff import rename_version
        name = f.name
        note = ""
        rv = rename_version(self.spec, f.spec) if f.spec.aliases else None
        if rv is not None:
            if self.version < rv:
                name = f.spec.aliases[0]
                note = f"renamed {f.name} in v{rv} (same bytes)"
            else:
                note = f"called {f.spec.aliases[0]} before v{rv} (same bytes)"
        text = f"<B>{_e(name)}</B>" + (' <FONT COLOR="#c05621">?</FONT>' if f.nullable else "")
        if f.tagged:
            text = f'<FONT COLOR="#6b46c1"><B>T{f.tag}</B></FONT> ' + text
        if note:
            text += '<BR ALIGN="LEFT"/>' + _small(_e(note), "#2b6cb0")
        return text

    def _notes(self, f: VField) -> str:
        notes = []
        if f.nullable:
            notes.append("nullable")
        if f.tagged:
            notes.append(f"tagged, tag {f.tag}")
            d = f.spec.default_text
            notes.append(f"default {d}" if d is not None else "default 0/empty")
        if f.spec.map_key:
            notes.append("map key")
        return ", ".join(notes)

    def field_rows(self, f: VField, prefix: str, depth: int, with_spans: bool) -> list[str]:
        path = prefix + f.name
        sp = self.spans if with_spans else None
        bg = C_TAGGED if f.tagged else None
        exact = sp.exact.get(path, ()) if sp else ()
        ext = sp.extent(path) if sp else None
        value = self._cell_value(f, path, sp, exact, ext)
        parts = "+".join(str(s.end - s.start) for s in exact) if len(exact) > 1 and not (f.is_array or f.is_struct) else ""
        row = self._row(path if sp else None, self._name(f), wire_type(f), _null_note(f), value, bg, parts,
                        ext=ext if sp else ())
        rows = [row]
        if f.is_struct:
            nbg = DEPTH_BG[(depth + 1) % len(DEPTH_BG)]
            if f.is_array:
                inner = self._array_rows(f, path, depth, sp, exact, nbg)
            else:
                present = sp is not None and not any(s.role == "presence" and s.value == -1 for s in exact) and ext
                inner = self.struct_rows(f.fields, f"{path}.", depth + 1, bool(present))
            rows.append(self._block(inner, nbg))
        return rows

    def _cell_value(self, f: VField, path: str, sp, exact, ext) -> str:
        """The value column: notes without an example, else the example's value (or why none)."""
        if sp is None:
            return self._notes(f) if self.spans is None else ""
        if ext is None:
            return "not sent (default)" if f.tagged else ""
        return self._value(f, path, exact)

    def _array_rows(self, f: VField, path: str, depth: int, sp, exact, nbg: str) -> list[str]:
        """An array of structs: its first element's rows and how many more there are (with an
        example), else one element's layout."""
        count = next((s.value for s in exact if s.role == "count"), None) if sp else None
        if sp is not None and count:
            inner = self.struct_rows(f.fields, f"{path}[0].", depth + 1, True)
            title = f"{f.name}[0] · {f.elem}" + (f" (first of {count})" if count > 1 else "")
            inner.insert(0, self._note_row(title, nbg, sp.extent(f"{path}[0]")))
            if count > 1:
                a, b = sp.extent(f"{path}[1]"), sp.extent(f"{path}[{count - 1}]")
                rng = "[1]" if count == 2 else f"[1]–[{count - 1}]"
                more = f"… {count - 1} more element{'s' if count > 2 else ''} {rng}, same layout"
                inner.append(self._note_row(more, C_MORE, (a[0], b[1]) if a and b else None))
            return inner
        why = ""
        if sp is not None:
            why = " (null in the example)" if count is None else " (empty in the example)"
        inner = [self._note_row(f"each element: {f.elem}{why}", nbg)]
        inner += self.struct_rows(f.fields, f"{path}[0].", depth + 1, False)
        return inner

    def _value(self, f: VField, path: str, exact) -> str:
        if f.is_array:
            count = next((s.value for s in exact if s.role == "count"), None)
            if count is None:
                return "null"
            if f.is_struct:
                return f"{count} element{'s' if count != 1 else ''}"
            items = [_prim_value(f.elem, self.spans.exact.get(f"{path}[{i}]", ())) for i in range(min(count, 4))]
            return "[" + ", ".join(items) + (f", … {count - 4} more" if count > 4 else "") + "]"
        if f.is_struct:
            if any(s.role == "presence" and s.value == -1 for s in exact):
                return "null"
            return "present" if f.nullable else ""
        return _prim_value(f.elem, exact)

    def tag_buffer_rows(self, tagged: list[VField], prefix: str, depth: int, with_spans: bool) -> list[str]:
        sp = self.spans if with_spans else None
        path = prefix + "_tags"
        ext = None
        value = ""
        if sp is not None:
            tc = next((s for s in sp.exact.get(path, ()) if s.role == "tag-count"), None)
            if tc is not None:
                end = tc.end
                for f in tagged:
                    e = sp.ext.get(prefix + f.name)
                    if e and e[1] > end:
                        end = e[1]
                ext = (tc.start + sp.base, end + sp.base)
                n = tc.value
                value = f"{n} tagged field{'s' if n != 1 else ''} sent"
        elif self.spans is None:
            value = f"{len(tagged)} tagged field{'s' if len(tagged) != 1 else ''} defined" if tagged else "none defined"
        row = self._row(None, "<I>tagged fields</I>", "tag buffer · varint count",
                        "then per field: varint tag · varint size · value", value, C_TAGS, ext=ext or ())
        rows = [row]
        if tagged:
            inner = []
            for f in sorted(tagged, key=lambda f: f.tag):
                inner += self.field_rows(f, prefix, depth + 1, with_spans)
            rows.append(self._block(inner, C_TAGGED))
        return rows


def _table(title_cells: list[str], rows: list[str], bg: str) -> str:
    return (f'<TABLE BORDER="1" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4" BGCOLOR="{bg}" COLOR="#777777">'
            + "".join(title_cells) + "".join(rows) + "</TABLE>")


def _title(spec: MessageSpec, version: int, example: bool, header: bool, nbytes: int | None) -> str:
    status = spec.status(version)
    key = registry.api_key(spec) if spec.kit else spec.api_key
    kind = f"{spec.type}" + (f" · api key {key}" if key is not None else "")
    lines = [f'<FONT POINT-SIZE="16"><B>{_e(spec.name)} v{version}</B></FONT>  {_small(_e(kind), "#555555", 10)}<BR ALIGN="LEFT"/>',
             f'<FONT POINT-SIZE="12" COLOR="{_status_color(status.status if status else None)}">'
             f"<B>{_e(spec.status_label(version))}</B></FONT>"
             '<BR ALIGN="LEFT"/>']
    if status and status.change:
        lines.append(f'<FONT POINT-SIZE="10" COLOR="#333333">{_wrap(status.change)}</FONT>')
    flex = ("flexible version: compact strings, bytes and arrays (varint lengths), a tag buffer ends every struct"
            if spec.is_flexible(version) else "not flexible: int16 string lengths, int32 array counts, no tagged fields")
    lines.append(_small(_e(flex), "#555555", 9) + '<BR ALIGN="LEFT"/>')
    if example:
        where = "the frame (byte 0 = size prefix)" if header else "the body"
        lines.append(_small(_e(f"example-driven layout: {nbytes} bytes; offsets in bytes from the start of {where}"),
                            "#555555", 9) + '<BR ALIGN="LEFT"/>')
    return "<" + "".join(lines) + ">"


def _status_color(status: str | None) -> str:
    return {"released": "#2f855a", "accepted": "#b7791f", "proposed": "#6b46c1"}.get(status, "#555555")


def _header_nodes(g: graphviz.Digraph, spec: MessageSpec, hinfo: tuple, hvm, head_spans, nbytes: int | None) -> None:
    """The frame's size and the request/response header (its version chips, why that version) as two
    nodes of g; nbytes is the frame's length when an example is drawn."""
    hname, hv, all_hv, why = hinfo
    t = _Table(hvm.spec, hv, head_spans, hvm.flexible)
    if nbytes is not None:
        size_row = t._row(None, "<B>size</B>", "int32 · 4B", "frame length: the bytes that follow",
                          str(nbytes - 4), C_SIZE, ext=(0, 4))
    else:
        size_row = t._row(None, "<B>size</B>", "int32 · 4B", "frame length: the bytes that follow",
                          "length of header + body", C_SIZE, ext=())
    g.node("size", "<" + _table([t.head_row()], [size_row], C_SIZE) + ">")
    chips = "".join(
        f'<TD BGCOLOR="{C_ACTIVE if v == hv else C_INACTIVE}">'
        f'<FONT COLOR="{"#ffffff" if v == hv else "#999999"}"><B>v{v}</B></FONT></TD>' for v in all_hv)
    chip_table = f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" CELLPADDING="2"><TR>{chips}</TR></TABLE>'
    label = "request header" if spec.type == "request" else "response header"
    titles = [
        f'<TR><TD COLSPAN="{t.ncols}" BGCOLOR="{C_HEADER_TITLE}" ALIGN="LEFT">'
        f"<B>{label} v{hv}</B> {_small(_e(f'({hname} v{hv})'))}</TD></TR>",
        f'<TR><TD COLSPAN="{t.ncols}" BGCOLOR="{C_HEADER}" ALIGN="LEFT" BALIGN="LEFT">'
        f'<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD>{_small("header version:", "#333333", 9)}</TD>'
        f'<TD>{chip_table}</TD></TR></TABLE></TD></TR>',
        f'<TR><TD COLSPAN="{t.ncols}" BGCOLOR="{C_HEADER}" ALIGN="LEFT" BALIGN="LEFT">'
        f'{_small(_wrap(why, 80), "#333333", 9)}</TD></TR>',
        t.head_row(),
    ]
    rows = t.struct_rows(hvm.fields, "", 0, head_spans is not None)
    g.node("header", "<" + _table(titles, rows, C_HEADER) + ">")
    g.edge("size", "header")


def wire_diagram(name_or_spec: str | MessageSpec, version: int, *, header: bool = True,
                 example: None | bool | dict = None) -> graphviz.Digraph:
    """The wire layout of one message version as a graphviz Digraph (see module docstring)."""
    spec = registry.get(name_or_spec)
    vm = resolve(spec, version)
    if example is True:
        example = example_value(spec, version)
    elif example is False:
        example = None
    hinfo = header_info(spec, version) if header else None

    body_spans = head_spans = None
    hvm = None
    nbytes = None
    base = 0
    if hinfo is not None:
        hvm = resolve(registry.get(hinfo[0]), hinfo[1])
    if example is not None:
        body = codec.encode(spec, version, example)
        if hinfo is not None:
            hbytes = codec.encode(hvm.spec, hinfo[1], _header_value(spec, version, hinfo[1]))
            head_spans = _Spans(codec.annotate(hvm.spec, hinfo[1], hbytes), 4)
            base = 4 + len(hbytes)
        body_spans = _Spans(codec.annotate(spec, version, body), base)
        nbytes = base + len(body)

    g = graphviz.Digraph(
        name=f"{spec.name}_v{version}",
        graph_attr={"rankdir": "TB", "labelloc": "t", "labeljust": "l", "fontname": FONT,
                    "label": _title(spec, version, example is not None, hinfo is not None, nbytes),
                    "nodesep": "0.2", "ranksep": "0.25", "pad": "0.2"},
        node_attr={"shape": "plaintext", "fontname": FONT, "fontsize": str(FS_CELL), "margin": "0"},
        edge_attr={"arrowsize": "0.6", "color": "#999999"},
    )

    if hinfo is not None:
        _header_nodes(g, spec, hinfo, hvm, head_spans, nbytes)

    t = _Table(spec, version, body_spans, vm.flexible)
    size_note = f" · {nbytes - base} bytes" if example is not None else ""
    titles = [f'<TR><TD COLSPAN="{t.ncols}" BGCOLOR="{C_BODY_TITLE}" ALIGN="LEFT">'
              f"<B>body</B> {_small(_e(f'{spec.name} v{version}{size_note}'))}</TD></TR>", t.head_row()]
    rows = t.struct_rows(vm.fields, "", 0, body_spans is not None)
    if not rows:
        rows = [t._note_row("no fields", DEPTH_BG[0])]
    g.node("body", "<" + _table(titles, rows, DEPTH_BG[0]) + ">")
    if hinfo is not None:
        g.edge("header", "body")
    return g


def wire_svg(name_or_spec: str | MessageSpec, version: int, **kwargs) -> str:
    """wire_diagram(...) rendered to SVG text."""
    return to_svg(wire_diagram(name_or_spec, version, **kwargs))
