"""Annotated hex dumps: every byte coloured by the field it belongs to, with a field tree beside it.

    hexdump_html(data, spans)            -> HTML (str) for any bytes + spans (kipviz.codec.Span)
    hexdump_for(name, version, data)     -> a message body
    hexdump_request(frame)               -> a size-prefixed request with its header
    hexdump_response(frame, api, version)
    hexdump_batches(data)                -> record batches (kipviz.records)

Hover a byte for its path, wire type, value and byte range; click a byte to highlight its field
(click again to climb to the enclosing struct); click a tree node to highlight its bytes. The
few lines of JavaScript are inline and scoped to one element, so several dumps can share a page,
and `standalone=True` gives a complete .html file that works offline.

The returned strings are `HexHTML` (a str) so a notebook shows them rendered."""
from __future__ import annotations

import html as _html
import json
import re
import secrets
import uuid as _uuid
from typing import Iterable

from ..codec import Span, annotate, annotate_request, annotate_response
from ..errors import DecodeError, UnknownMessageError
from ..schema import registry
from ..uuids import to_kafka_str

__all__ = ["hexdump_html", "hexdump_for", "hexdump_request", "hexdump_response", "hexdump_batches",
           "HexHTML", "span_dicts", "format_value", "expand_records", "CORE_JS", "MAX_BYTES"]

MAX_BYTES = 64 * 1024          # bytes drawn as cells; the rest is summarised
_TINT_ROLES = frozenset({"length", "count", "presence", "tag-count", "tag", "tag-size"})
_INDEX = re.compile(r"\[\d+\]")
_LAST_INDEX = re.compile(r"\[(\d+)\]$")
_ESC = _html.escape


class HexHTML(str):
    """An HTML string that Jupyter renders (it has _repr_html_)."""

    def _repr_html_(self) -> str:
        return str(self)


# ---- values as text ------------------------------------------------------------------------
def format_value(v, limit: int = 80) -> str:
    """A short readable form of a span value (bytes as hex, Uuids in Kafka's form)."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        cut = max(4, limit // 3)
        text = b[:cut].hex(" ")
        return f"{text} … ({len(b)} bytes)" if len(b) > cut else (text or "(empty)")
    if isinstance(v, _uuid.UUID):
        return to_kafka_str(v)
    if isinstance(v, str):
        text = repr(v) if len(v) <= limit else repr(v[:limit]) + f"… ({len(v)} chars)"
        return text
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "…"


def _json_safe(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, _uuid.UUID):
        return to_kafka_str(v)
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    return repr(v)


def span_dicts(spans: Iterable) -> list[dict]:
    """Spans as JSON-safe dicts {start, end, path, wire_type, role, value, text} (for widgets)."""
    out = []
    for s in spans:
        if isinstance(s, dict):
            d = dict(s)
            d.setdefault("text", format_value(d.get("value")))
            d["value"] = _json_safe(d.get("value"))
            out.append(d)
            continue
        out.append({"start": s[0], "end": s[1], "path": s[2], "wire_type": s[3], "role": s[5],
                    "value": _json_safe(s[4]), "text": format_value(s[4])})
    return out


def _norm_spans(spans) -> list[tuple]:
    """(start, end, path, wire_type, text, role) for Span tuples or dicts."""
    out = []
    for s in spans:
        if isinstance(s, dict):
            text = s.get("text")
            if text is None:
                text = format_value(s.get("value"))
            out.append((int(s["start"]), int(s["end"]), str(s["path"]), str(s.get("wire_type", "")),
                        str(text), str(s.get("role", "value"))))
        else:
            out.append((s[0], s[1], s[2], s[3], format_value(s[4]), s[5]))
    return out


# ---- tree ------------------------------------------------------------------------------------
def _parent(path: str) -> str:
    if path.endswith("]"):
        return path[:path.rindex("[")]
    i = path.rfind(".")
    return path[:i] if i >= 0 else ""


def _colour_key(path: str) -> str:
    key = _INDEX.sub("[]", path)
    if key.endswith("._tags") or key == "_tags":
        return "_tags"
    return key


class _Node:
    __slots__ = ("n", "path", "parent", "children", "spans", "lo", "hi")

    def __init__(self, n, path, parent):
        self.n, self.path, self.parent = n, path, parent
        self.children: list[_Node] = []
        self.spans: list[int] = []
        self.lo, self.hi = 1 << 62, -1


def _build_tree(norm: list[tuple]):
    root = _Node(-1, "", None)
    nodes: dict[str, _Node] = {"": root}
    order: list[_Node] = []

    def get(path: str) -> _Node:
        node = nodes.get(path)
        if node is None:
            parent = get(_parent(path))
            node = _Node(len(order), path, parent)
            nodes[path] = node
            order.append(node)
            parent.children.append(node)
        return node

    span_node = []
    for i, s in enumerate(norm):
        node = get(s[2])
        node.spans.append(i)
        if s[0] < node.lo:
            node.lo = s[0]
        if s[1] > node.hi:
            node.hi = s[1]
        span_node.append(node.n)
    for node in reversed(order):          # parents were created before their children
        p = node.parent
        if node.lo < p.lo:
            p.lo = node.lo
        if node.hi > p.hi:
            p.hi = node.hi
    return root, order, span_node


def _range_text(lo: int, hi: int) -> str:
    if hi <= lo:
        return f"@{lo} (0 B)"
    if hi - lo == 1:
        return f"{lo} (1 B)"
    return f"{lo}–{hi - 1} ({hi - lo} B)"


def _node_value(node: _Node, norm) -> str:
    first = None
    for i in node.spans:
        s = norm[i]
        role = s[5]
        if role == "value" or role == "unknown":
            return s[4]
        if first is None:
            first = s
    if first is None:
        return ""
    role, text = first[5], first[4]
    if role == "count":
        return "null" if text == "null" else f"{text} item{'s' if text != '1' else ''}"
    if role == "tag-count":
        return f"{text} tagged"
    if role == "length" and text == "null":
        return "null"
    if role == "length" and text == "0":      # an empty value has no bytes of its own
        return "(empty)"
    return text


# ---- HTML ------------------------------------------------------------------------------------
_CSS = """
#{id}{{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:#111;
 background:#fff;color-scheme:light;padding:6px 8px;border:1px solid #ddd;border-radius:4px;text-align:left}}
#{id} .ti{{font-weight:bold;margin:0 0 4px}}
#{id} .inf{{min-height:1.4em;margin:0 0 4px;color:#333;white-space:pre-wrap;word-break:break-all}}
#{id} .wr{{display:flex;gap:14px;align-items:flex-start;flex-wrap:wrap}}
#{id} .dm,#{id} .tr{{max-height:540px;overflow:auto}}
#{id} table{{border-collapse:separate;border-spacing:0}}
#{id} th{{color:#999;font-weight:normal;padding:0 8px 0 0;text-align:right;user-select:none}}
#{id} td{{padding:1px 3px;border:0}}
#{id} td.b{{cursor:pointer}}
#{id} td.f{{box-shadow:inset 2px 0 0 #fff}}
#{id} td.sp{{padding:0 3px}}
#{id} td.a{{padding-left:12px;color:#666;white-space:pre}}
#{id} td.g{{background:#eee;color:#999}}
#{id} td.u{{background-image:repeating-linear-gradient(45deg,#0001 0 3px,transparent 3px 6px)}}
#{id} td.hv{{box-shadow:inset 0 -2px 0 #333}}
#{id} td.sel{{box-shadow:inset 0 0 0 2px #c00;font-weight:bold}}
#{id} .tr{{min-width:280px}}
#{id} .tr details>div,#{id} .tr details>details{{margin-left:14px}}
#{id} .tr .lf{{padding-left:14px}}
#{id} summary{{cursor:pointer}}
#{id} .nd{{cursor:pointer;padding:0 2px;border-radius:2px}}
#{id} .nd.sel{{background:#ffe08a}}
#{id} .nd b{{font-weight:normal;color:#05622e}}
#{id} .nd small{{color:#888}}
#{id} .sw{{display:inline-block;width:9px;height:9px;margin-right:4px;border:1px solid #0003;vertical-align:-1px}}
#{id} .lg{{margin-top:6px;color:#444;display:flex;flex-wrap:wrap;gap:2px 12px}}
#{id} .lg span{{white-space:nowrap}}
#{id} .more{{color:#a40;margin-top:4px}}
"""

# Classic script inside an IIFE for plain HTML, and the same text in the widget's ES module.
CORE_JS = r"""
function kvxAttach(root, onSelect) {
  var cells = root.querySelectorAll('td.b');
  var nodes = {}, byPath = {};
  var list = root.querySelectorAll('.nd');
  for (var i = 0; i < list.length; i++) { nodes[list[i].getAttribute('data-n')] = list[i];
    byPath[list[i].getAttribute('data-path')] = list[i]; }
  var info = root.querySelector('.inf');
  var tipsEl = root.querySelector('script.kvx-tips'), tips = null;
  try { tips = tipsEl ? JSON.parse(tipsEl.textContent) : null; } catch (err) { tips = null; }
  var cur = null, selCells = [], hovCells = [];
  function mark(e, cls) {
    var out = [], lo = +e.getAttribute('data-lo'), hi = Math.min(+e.getAttribute('data-hi'), cells.length);
    for (var j = lo; j < hi; j++) { cells[j].classList.add(cls); out.push(cells[j]); }
    return out;
  }
  function unmark(arr, cls) { for (var j = 0; j < arr.length; j++) arr[j].classList.remove(cls); }
  function select(e, scroll, quiet) {
    unmark(selCells, 'sel'); selCells = [];
    if (cur) cur.classList.remove('sel');
    cur = e || null;
    if (info) info.textContent = cur ? (cur.getAttribute('title') || cur.getAttribute('data-path') + ': ' + cur.textContent) : '';
    if (!quiet && onSelect) onSelect(cur ? cur.getAttribute('data-path') : '');
    if (!cur) return;
    cur.classList.add('sel');
    selCells = mark(cur, 'sel');
    for (var p = cur.parentElement; p && p !== root; p = p.parentElement) if (p.tagName === 'DETAILS') p.open = true;
    if (scroll) {
      try { cur.scrollIntoView({block: 'nearest'}); if (selCells[0]) selCells[0].scrollIntoView({block: 'nearest'}); } catch (err) {}
    }
  }
  root.addEventListener('click', function (ev) {
    var t = ev.target.closest ? ev.target.closest('[data-n]') : null;
    if (!t || !root.contains(t)) return;
    var e = nodes[t.getAttribute('data-n')];
    if (t.tagName === 'TD') {
      var off = Array.prototype.indexOf.call(cells, t);
      // clicking inside the current selection again climbs to the enclosing node
      if (cur && off >= +cur.getAttribute('data-lo') && off < +cur.getAttribute('data-hi')) {
        var up = nodes[cur.getAttribute('data-p')];
        e = (up && up !== cur) ? up : e;
        if (!up && cur === e) e = null;
      }
      select(e, true, false);
    } else {
      ev.preventDefault();
      select(e === cur ? null : e, true, false);
    }
  });
  root.addEventListener('mouseover', function (ev) {
    var t = ev.target;
    if (t.tagName !== 'TD' || !t.hasAttribute('data-n')) return;
    if (tips && !t.title && t.hasAttribute('data-s')) t.title = tips[+t.getAttribute('data-s')] || '';
    unmark(hovCells, 'hv');
    var e = nodes[t.getAttribute('data-n')];
    hovCells = e ? mark(e, 'hv') : [];
  });
  root.addEventListener('mouseleave', function () { unmark(hovCells, 'hv'); hovCells = []; });
  return {
    selectPath: function (path, scroll) { select(path ? byPath[path] : null, scroll, true); },
    selected: function () { return cur ? cur.getAttribute('data-path') : ''; }
  };
}
"""


def _colour_css(uid: str, k: int) -> str:
    hue = (k * 137.508 + 20) % 360
    light = (80, 72, 86)[k % 3]
    sat = (72, 60, 80)[(k // 3) % 3]
    tint = min(light + 11, 95)
    return (f"#{uid} .c{k}{{background:hsl({hue:.0f},{sat}%,{light}%)}}"
            f"#{uid} .c{k}.t{{background:hsl({hue:.0f},{sat}%,{tint}%)}}")


def _ascii(chunk: bytes) -> str:
    return _ESC("".join(chr(b) if 32 <= b < 127 else "." for b in chunk), quote=False)


def hexdump_html(data: bytes, spans, *, title: str | None = None, standalone: bool = False,
                 max_bytes: int = MAX_BYTES, uid: str | None = None, script: bool = True,
                 selected: str | None = None, titles: str = "auto") -> HexHTML:
    """An annotated hex dump of `data` using `spans` (Span tuples or dicts from span_dicts).

    Bytes no span covers are grey; where spans overlap the shortest wins. Only the first
    `max_bytes` bytes are drawn. `script=False` leaves out the <script> (widgets attach their
    own); `standalone=True` returns a complete HTML document.

    titles: "cells" puts the hover text in every byte's title attribute (works even where scripts
    do not run); "lazy" keeps one copy per span in a JSON block and the script fills titles in on
    hover (a fraction of the size for big dumps); "auto" is "cells" up to 4 KB drawn, else "lazy"."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"hexdump_html needs bytes, got {type(data).__name__}")
    uid = uid or "kvx-" + secrets.token_hex(5)
    n = len(data)
    shown = min(n, max(0, int(max_bytes)))
    norm = _norm_spans(spans)
    if shown < n:   # keep the tree to what is drawn
        norm = [s for s in norm if s[0] < shown]
    root, order, span_node = _build_tree(norm)

    keys, key_of_node = _colour_keys(order)
    owner = _owners(norm, shown)
    if titles not in ("auto", "cells", "lazy"):
        raise ValueError(f"titles must be 'auto', 'cells' or 'lazy', not {titles!r}")
    lazy = titles == "lazy" or (titles == "auto" and shown > 4096)
    first_pre, cont_pre, tips = _cell_starts(norm, span_node, key_of_node, lazy)

    hx = data[:shown].hex()
    out: list[str] = []
    add = out.append
    add(f'<div class="kvx" id="{uid}"><style>{_CSS.format(id=uid)}')
    add("".join(_colour_css(uid, k) for k in range(len(keys))))
    add("</style>")
    if title:
        add(f'<div class="ti">{_ESC(title)}</div>')
    if lazy:
        add(_tips_json(tips))
    add('<div class="inf"></div><div class="wr"><div class="dm"><table>')
    _hex_rows(add, data, hx, shown, owner, norm, first_pre, cont_pre)
    add("</table>")
    if shown < n:
        add(f'<div class="more">showing the first {shown:,} of {n:,} bytes</div>')
    add('</div><div class="tr">')
    _tree_html(root, norm, key_of_node, add, not lazy)
    add("</div></div>")
    if keys:
        add(_legend(keys))
    if script:
        add(_attach_script(uid, selected))
    add("</div>")
    body = "".join(out)
    if standalone:
        head = _ESC(title or "kipviz hex dump")
        body = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f"<title>{head}</title></head><body>{body}</body></html>\n")
    return HexHTML(body)


def _colour_keys(order) -> tuple[dict[str, int], list[int]]:
    """Colours: one per path with indices removed, in order of first appearance (and each node's)."""
    keys: dict[str, int] = {}
    key_of_node: list[int] = []
    for node in order:
        k = _colour_key(node.path)
        if k not in keys:
            keys[k] = len(keys)
        key_of_node.append(keys[k])
    return keys, key_of_node


def _owners(norm, shown: int) -> list[int]:
    """Which span owns each drawn byte (-1: none): shorter spans win where they overlap."""
    owner = [-1] * shown
    for i in sorted(range(len(norm)), key=lambda i: norm[i][0] - norm[i][1]):
        s, e = norm[i][0], min(norm[i][1], shown)
        if e > s >= 0:
            owner[s:e] = [i] * (e - s)
    return owner


def _cell_starts(norm, span_node: list[int], key_of_node: list[int], lazy: bool):
    """Each span's opening <td> for its first byte and for the bytes after (the last entry: bytes no
    span covers), and the hover texts kept aside when `lazy`."""
    first_pre: list[str] = []
    cont_pre: list[str] = []
    tips: list[str] = []
    for i, (s, e, path, wt, text, role) in enumerate(norm):
        nn = span_node[i]
        cls = f"b c{key_of_node[nn]}"
        if role in _TINT_ROLES:
            cls += " t"
        elif role == "unknown":
            cls += " u"
        rtext = "" if role == "value" else f" ({role})"
        tip = f"{path}\n{wt}{rtext} = {text}\nbytes {_range_text(s, e)}"
        if lazy:
            tips.append(tip)
            attrs = f'data-n="{nn}" data-s="{i}"'
        else:
            attrs = f'data-n="{nn}" title="{_ESC(tip)}"'
        cont_pre.append(f'<td class="{cls}" {attrs}>')
        first_pre.append(f'<td class="{cls} f" {attrs}>')
    cont_pre.append('<td class="b g" title="not annotated">')
    first_pre.append(cont_pre[-1])
    return first_pre, cont_pre, tips


def _hex_rows(add, data: bytes, hx: str, shown: int, owner: list[int], norm, first_pre, cont_pre) -> None:
    """The dump's rows, 16 bytes each with their offset and ASCII column."""
    prev = -2
    for row in range(0, shown, 16):
        add(f"<tr><th>{row:06x}</th>")
        end = min(row + 16, shown)
        for o in range(row, end):
            i = owner[o]
            if o == row + 8:
                add('<td class="sp"></td>')
            add(first_pre[i] if i != prev or (i >= 0 and norm[i][0] == o) else cont_pre[i])
            add(hx[2 * o:2 * o + 2])
            add("</td>")
            prev = i
        if end - row < 16:
            add('<td></td>' * (16 - (end - row) + (1 if end - row <= 8 else 0)))
        add(f'<td class="a">{_ascii(data[row:end])}</td></tr>')


def _tips_json(tips: list[str]) -> str:
    """The hover texts as one JSON block the script reads ("lazy" titles); nothing in it closes the tag."""
    return ('<script type="application/json" class="kvx-tips">'
            + json.dumps(tips).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            + "</script>")


def _legend(keys: dict[str, int]) -> str:
    return ('<div class="lg">' + "".join(f'<span><i class="sw c{i}"></i>{_ESC(k)}</span>' for k, i in keys.items())
            + "<span>(lighter: length / count / tag bytes; grey: not annotated)</span></div>")


def _attach_script(uid: str, selected: str | None) -> str:
    pick = f"a.selectPath({_js_str(selected)},true);" if selected else ""
    return ("<script>(function(){" + CORE_JS +
            "var s=document.currentScript,r=s&&s.parentNode&&s.parentNode.id===" + _js_str(uid) +
            "?s.parentNode:document.getElementById(" + _js_str(uid) + ");if(r){var a=kvxAttach(r,null);"
            + pick + "}})();</script>")


def _js_str(s: str) -> str:
    return json.dumps(s).replace("</", "<\\/")


def _tree_html(root: _Node, norm, key_of_node, add, titles: bool = True) -> None:
    def node_html(node: _Node):
        label = node.path.rsplit(".", 1)[-1]
        val = _node_value(node, norm)
        wts = sorted({norm[i][3] for i in node.spans})
        tip = f"{node.path}\n{', '.join(wts) or 'struct'}" + (f" = {val}" if val else "") + \
            f"\nbytes {_range_text(node.lo, node.hi)}"
        tip = f' title="{_ESC(tip)}"' if titles else ""
        p = node.parent.n
        head = (f'<span class="nd" data-n="{node.n}" data-p="{p}" data-lo="{node.lo}" data-hi="{node.hi}" '
                f'data-path="{_ESC(node.path)}"{tip}><i class="sw c{key_of_node[node.n]}"></i>'
                f'{_ESC(label)}' + (f" <b>{_ESC(val)}</b>" if val else "") +
                f" <small>{_range_text(node.lo, node.hi)}</small></span>")
        if node.children:
            # the first few elements of an array start open; the rest open when selected
            m = _LAST_INDEX.search(label)
            add(f"<details{'' if m and int(m.group(1)) >= 3 else ' open'}><summary>{head}</summary>")
            for c in node.children:
                node_html(c)
            add("</details>")
        else:
            add(f'<div class="lf">{head}</div>')

    for c in root.children:
        node_html(c)


# ---- helpers for the kit's messages ------------------------------------------------------------
def expand_records(spans: list[Span]) -> list[Span]:
    """Replace each records blob span by the record-batch spans inside it (when they decode)."""
    try:
        from ..records.batch import annotate_batches
    except Exception:          # records support not available
        return list(spans)
    out: list[Span] = []
    for s in spans:
        if s.role == "value" and s.wire_type == "records" and isinstance(s.value, (bytes, bytearray)) and s.value:
            try:
                inner = annotate_batches(bytes(s.value))
            except Exception:
                out.append(s)
                continue
            base, pre = s.start, s.path + "."
            out.extend(Span(x.start + base, x.end + base, pre + x.path, x.wire_type, x.value, x.role)
                       for x in inner)
        else:
            out.append(s)
    return out


def hexdump_for(name, version: int, data: bytes, *, title: str | None = None, records: bool = True,
                **kw) -> HexHTML:
    """A message body (no header, no size prefix)."""
    spec = registry.get(name)
    spans = annotate(spec, version, data)
    if records:
        spans = expand_records(spans)
    return hexdump_html(data, spans, title=title or f"{spec.name} v{version}: {len(data)} bytes", **kw)


def hexdump_request(frame: bytes, *, framed: bool = True, title: str | None = None, records: bool = True,
                    **kw) -> HexHTML:
    """A whole request: size prefix (when framed), request header and body."""
    spans = annotate_request(frame, framed=framed)
    if records:
        spans = expand_records(spans)
    if title is None:
        title = f"request: {len(frame)} bytes"
        vals = {s.path: s.value for s in spans if s.path in ("header.RequestApiKey", "header.RequestApiVersion")}
        try:
            spec = registry.by_api_key(vals["header.RequestApiKey"], "request")
            title = f"{spec.name} v{vals['header.RequestApiVersion']} with header: {len(frame)} bytes"
        except (KeyError, UnknownMessageError):
            pass
    return hexdump_html(frame, spans, title=title, **kw)


def hexdump_response(frame: bytes, api, version: int, *, framed: bool = True, title: str | None = None,
                     records: bool = True, **kw) -> HexHTML:
    """A whole response (responses do not name their api: pass the api and version)."""
    spans = annotate_response(frame, api, version, framed=framed)
    if records:
        spans = expand_records(spans)
    if title is None:
        name = api.name if hasattr(api, "name") else str(api)
        title = f"{name}{'' if name.endswith('Response') else 'Response'} v{version} with header: {len(frame)} bytes"
    return hexdump_html(frame, spans, title=title, **kw)


def hexdump_batches(data: bytes, *, title: str | None = None, **kw) -> HexHTML:
    """Record batches (v2), e.g. the Records field of a produce request or fetch response."""
    try:
        from ..records.batch import annotate_batches
    except ImportError as e:          # pragma: no cover - records ship with the kit
        raise DecodeError(f"record batch support is not available ({e})", 0, "") from None
    spans = annotate_batches(data)
    return hexdump_html(bytes(data), spans, title=title or f"record batches: {len(data)} bytes", **kw)
