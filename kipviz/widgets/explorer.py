"""Explorer: pick a message and version, see its wire diagram, edit an example as JSON, watch the bytes.

    from kipviz.widgets import Explorer
    Explorer()                                   # in a notebook cell

    ex = Explorer("TxnOffsetCommit", version=5)  # also scriptable (tests do this):
    ex.select("FetchRequest", 12)
    ex.set_json('{"ReplicaId": -1, ...}')        # re-encodes; ex.current_bytes, ex.current_spans
    ex.paste_hex("00 00 00 3f 00 1c ...")        # decodes (framed request, request with header,
                                                 # or the selected message's body) and highlights
    ex.error                                     # "" or one readable line

JSON shows Uuids in Kafka's base64 form and bytes/records as hex strings; both are read back.
No callback raises: kipviz errors and unexpected exceptions end up as one line in `error`
(the exception of an unexpected one is kept in `last_exception` for debugging)."""
from __future__ import annotations

import functools
import html
import json
import uuid
from contextlib import contextmanager

import ipywidgets as W

from ..codec import (
    UNKNOWN_TAGS,
    annotate,
    annotate_request,
    annotate_response,
    decode,
    decode_request,
    decode_response,
    encode,
    encode_request,
    encode_response,
    parse_hex,
)
from ..draw.hexdump import expand_records
from ..errors import DecodeError, EncodeError, KipvizError, UnknownMessageError
from ..schema import registry
from ..schema.model import MessageSpec
from ..schema.resolve import resolve
from ..uuids import to_kafka_str
from .hexview import HexView
from .textbox import TextBox

__all__ = ["Explorer", "to_json_text", "from_json_value", "MAX_PASTE_CHARS", "MAX_JSON_CHARS"]

MAX_PASTE_CHARS = 1_000_000      # hex text: about 500 KB of bytes
MAX_JSON_CHARS = 2_000_000
MAX_ERROR_CHARS = 300
MAX_SEARCH_CHARS = 200
MODES = (("size + header + body", "frame"), ("header + body", "header"), ("body only", "body"))
_MODE_TEXT = {v: k for k, v in MODES}


# ---- JSON <-> values ---------------------------------------------------------------------------
def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return to_kafka_str(v)
    return v


def to_json_text(value: dict) -> str:
    """A message value as JSON: Uuids in Kafka's base64 form, bytes and records as hex."""
    return json.dumps(_plain(value), indent=2, ensure_ascii=False)


def _hex_bytes(x, path: str):
    if not isinstance(x, str):
        return x                        # the codec names the type problem
    try:
        return parse_hex(x)
    except DecodeError as e:
        raise EncodeError(f"bytes are written as hex text here ({e.reason})", path) from None


def _revive_struct(fields, obj, path: str):
    if not isinstance(obj, dict):
        return obj
    by = {f.name: f for f in fields}
    for f in fields:
        for a in f.spec.aliases:
            by.setdefault(a, f)
    pre = f"{path}." if path else ""
    out = {}
    for k, x in obj.items():
        if k == UNKNOWN_TAGS and isinstance(x, list):
            out[k] = [(t[0], _hex_bytes(t[1], f"{pre}{k}[{i}]")) if isinstance(t, (list, tuple)) and len(t) == 2
                      else t for i, t in enumerate(x)]
            continue
        f = by.get(k)
        out[k] = x if f is None else _revive_field(f, x, pre + k)
    return out


def _revive_field(f, x, path: str):
    if x is None:
        return None
    if f.is_array:
        if not isinstance(x, list):
            return x
        return [_revive_elem(f, e, f"{path}[{i}]") for i, e in enumerate(x)]
    return _revive_elem(f, x, path)


def _revive_elem(f, x, path: str):
    if f.is_struct:
        return _revive_struct(f.fields, x, path)
    if f.elem in ("bytes", "records"):
        return _hex_bytes(x, path)
    return x


def from_json_value(spec, version: int, obj):
    """Turn parsed JSON back into a codec value: hex strings in bytes/records fields become bytes.
    (Uuid strings are accepted by the codec as they are.)"""
    spec = registry.get(spec)
    return _revive_struct(resolve(spec, version).fields, obj, "")


def _carry(fields, cur, ex):
    """Keep what the user had for fields the new version also has; take the rest from the example."""
    if not isinstance(cur, dict) or not isinstance(ex, dict):
        return ex
    out = {}
    for f in fields:
        key = next((a for a in (f.name, *f.spec.aliases) if a in cur), None)
        if key is None:
            out[f.name] = ex.get(f.name)
            continue
        x = cur[key]
        if f.is_struct and f.is_array and isinstance(x, list):
            exs = ex.get(f.name) or [None]
            x = [_carry(f.fields, e, exs[min(i, len(exs) - 1)] or e) for i, e in enumerate(x)]
        elif f.is_struct and isinstance(x, dict):
            x = _carry(f.fields, x, ex.get(f.name) or x)
        out[f.name] = x
    return out


# ---- the widget --------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


def _safe(fn):
    """Run a callback; turn any exception into the error line (never a traceback in the notebook)."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kw):
        try:
            return fn(self, *args, **kw)
        except KipvizError as e:
            self._fail(str(e))
        except RecursionError:
            self._fail("input nested too deeply")
        except MemoryError:
            self._fail("input too large to handle")
        except Exception as e:
            self.last_exception = e
            self._fail(f"unexpected {type(e).__name__}: {e}")
        return False
    return wrapper


def _apis(kind: str) -> list[tuple[str, str]]:
    out = []
    for spec in registry.messages().values():
        if spec.type == kind:
            out.append((spec.api, registry.api_key(spec)))
    return sorted(out, key=lambda r: (r[0].lower()))


def _default_version(spec: MessageSpec) -> int:
    released = [v for v in spec.versions if (st := spec.status(v)) is not None and st.status == "released"]
    return max(released) if released else max(spec.versions)


class Explorer(W.VBox):
    """Message + version picker, wire diagram, example JSON, paste box and annotated hex dump."""

    def __init__(self, message: str = "TxnOffsetCommit", version: int | None = None, *, kind: str = "request"):
        self.error = ""
        self.last_exception: BaseException | None = None
        self.current_bytes = b""
        self.current_spans: list = []
        self.value: dict = {}
        self.spec: MessageSpec | None = None
        self.version: int | None = None
        self._header = {"correlation_id": 1, "client_id": "kipviz"}
        self._syncing = 0
        self._diagrams: dict = {}

        self._make_widgets()
        self._observe()
        super().__init__(self._layout())
        # stable names for the page (browser tests and custom CSS find the parts by these)
        for w, name in ((self, "explorer"), (self.version_slider, "version"), (self.status, "status"),
                        (self.error_html, "error"), (self.diagram, "diagram"), (self.json_area, "json"),
                        (self.paste_area, "paste"), (self.message_select, "messages"), (self.search, "search")):
            w.add_class(f"kipviz-{name}")
        with self._sync():
            self._fill_options()
        self.kind_toggle.value = kind if kind in ("request", "response") else "request"
        if not self.select(message, version, kind=kind):
            problem = self.error
            self.select("TxnOffsetCommit")
            self._fail(problem)

    def _make_widgets(self) -> None:
        # TextBox: a huge paste is refused in the browser (only its length reaches the kernel)
        self.search = TextBox(placeholder="filter: name or api key", description="find", multiline=False,
                              continuous_update=True, max_chars=MAX_SEARCH_CHARS, layout=W.Layout(width="230px"))
        self.message_select = W.Select(options=[], rows=8, layout=W.Layout(width="230px"))
        self.kind_toggle = W.ToggleButtons(options=["request", "response"], value="request",
                                           style={"button_width": "80px"})
        self.version_slider = W.IntSlider(min=0, max=1, value=0, description="version",
                                          continuous_update=False)
        self.mode_select = W.Dropdown(options=list(MODES), value="frame", description="bytes",
                                      layout=W.Layout(width="260px"))
        self.status = W.HTML()
        self.errors_html = W.HTML(layout=W.Layout(max_width="460px"))
        self.errors_text = ""        # "errors this version can return", one line (kipviz.broker.errors_by_version)
        self.error_html = W.HTML()
        # as wide as the notebook (or the Voila page): the diagram takes a row of its own, the editor
        # and the hex view wrap below it; the picture shrinks with a narrower page (max-width)
        self.diagram = W.HTML(layout=W.Layout(width="100%", overflow="auto"))
        self.json_area = TextBox(max_chars=MAX_JSON_CHARS, layout=W.Layout(width="380px", height="340px"))
        self.paste_area = TextBox(placeholder="paste hex here (a whole request with size and header, "
                                  "a request without size, or a body of the selected message)",
                                  max_chars=MAX_PASTE_CHARS, layout=W.Layout(width="380px", height="90px"))
        self.hex_view = HexView()

    def _observe(self) -> None:
        self.search.observe(self._on_search, "value")
        self.message_select.observe(self._on_message, "value")
        self.kind_toggle.observe(self._on_kind, "value")
        self.version_slider.observe(self._on_version, "value")
        self.mode_select.observe(self._on_mode, "value")
        self.json_area.observe(self._on_json, "value")
        self.paste_area.observe(self._on_paste, "value")
        self.search.on_oversize(self._search_too_long)
        self.json_area.on_oversize(self._json_too_long)
        self.paste_area.on_oversize(self._paste_too_long)

    def _layout(self) -> list:
        """The rows: controls, the error line, then diagram, editor and hex view (wrapping)."""
        controls = W.HBox([W.VBox([self.search, self.message_select]),
                           W.VBox([self.kind_toggle, self.version_slider, self.mode_select, self.status,
                                   self.errors_html])])
        editor = W.VBox([W.HTML("<b>value (JSON)</b> — edit, then click outside to re-encode"), self.json_area,
                         W.HTML("<b>paste hex</b>"), self.paste_area])
        panes = W.HBox([W.VBox([W.HTML("<b>wire diagram</b>"), self.diagram], layout=W.Layout(width="100%")),
                        editor, self.hex_view],
                       layout=W.Layout(flex_flow="row wrap", align_items="flex-start"))
        return [controls, self.error_html, panes]

    # ---- public ------------------------------------------------------------------------------
    @property
    def message(self) -> str | None:
        """The message shown (its definition's name), or None."""
        return self.spec.name if self.spec else None

    @property
    def kind(self) -> str:
        """Request or response, as the toggle says."""
        return self.kind_toggle.value

    @property
    def mode(self) -> str:
        """The view chosen in the mode menu."""
        return self.mode_select.value

    @property
    def json_text(self) -> str:
        """The value being edited, as JSON text."""
        return self.json_area.value

    @property
    def diagram_html(self) -> str:
        """The diagram shown, as HTML."""
        return self.diagram.value

    @_safe
    def select(self, name, version: int | None = None, *, kind: str | None = None) -> bool:
        """Show message `name` ("TxnOffsetCommit", "TxnOffsetCommitRequest", a MessageSpec or an api
        key) at `version` (default: the newest released one) with its example value."""
        spec = self._find(name, kind or self.kind_toggle.value)
        if version is None:
            version = _default_version(spec)
        if isinstance(version, bool) or not isinstance(version, int) or version not in spec.valid:
            raise UnknownMessageError(f"{spec.name} has no version {version!r} (valid: {spec.valid})")
        from ..records.examples import example_value
        value = example_value(spec, version)
        self._show(spec, version, value)
        return True

    @_safe
    def show_frame(self, data: bytes, name, version: int, *, kind: str = "request") -> bool:
        """Show one framed request or response (a capture's frame) as message `name` at `version`:
        read as that message only (a response carries no api key, so guessing could misread it)."""
        self.select(name, version, kind=kind)
        spec = self.spec
        try:
            if spec.type == "request":
                d, spans = decode_request(data), annotate_request(data)
            else:
                d, spans = decode_response(data, spec, version), annotate_response(data, spec, version)
        except DecodeError as e:
            self._fail(f"could not decode {len(data)} bytes as {spec.name} v{version}: {e.reason} — at byte {e.offset}")
            return False
        if spec.type == "request":
            self._header = {"correlation_id": d["correlation_id"], "client_id": d["header"].get("ClientId", "kipviz")}
        self._show(spec, version, d["body"], data=data, spans=expand_records(spans), mode="frame")
        return True

    @_safe
    def set_json(self, text: str) -> bool:
        """Re-encode from JSON text (the body of the selected message)."""
        if not isinstance(text, str):
            raise EncodeError(f"expected JSON text, got {type(text).__name__}")
        if len(text) > MAX_JSON_CHARS:
            self._json_too_long(len(text))
            return False
        if self.json_area.value != text:
            with self._sync():
                self.json_area.value = text
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            self._fail(f"JSON: {e.msg} at line {e.lineno} column {e.colno}")
            return False
        except (ValueError, RecursionError) as e:      # e.g. an integer with thousands of digits
            self._fail(f"JSON: {e}" if isinstance(e, ValueError) else "JSON: nested too deeply")
            return False
        if not isinstance(obj, dict):
            raise EncodeError(f"the value must be a JSON object {{...}}, not {type(obj).__name__}")
        value = from_json_value(self.spec, self.version, obj)
        try:
            self._encode_show(value)
        except EncodeError as e:
            self._fail(f"does not fit {self.spec.name} v{self.version}: {e}")
            return False
        return True

    @_safe
    def paste_hex(self, text: str) -> bool:
        """Decode pasted hex: a framed request, a request with header but no size, a response of the
        selected message (framed or not), or a plain body of the selected message."""
        if not isinstance(text, str):
            raise DecodeError(f"expected hex text, got {type(text).__name__}", 0, "")
        if len(text) > MAX_PASTE_CHARS:
            with self._sync():
                self.paste_area.value = ""
            self._paste_too_long(len(text))
            return False
        if self.paste_area.value != text:
            with self._sync():
                self.paste_area.value = text
        if not text.strip():
            self._ok()
            return True
        try:
            data = parse_hex(text)
        except DecodeError as e:
            self._fail(f"cannot read the paste as hex: {e.reason} (near byte {e.offset})")
            return False
        found, problems = self._detect(data)
        if found is None:
            where, err = max(problems, key=lambda p: p[1].offset)
            # the reason first: the line is cut at the widget's width
            at = f"byte {err.offset}" + (f" ({err.path})" if err.path else "")
            self._fail(f"could not decode {len(data)} bytes: {err.reason} — at {at}, read as {where}")
            return False
        spec, version, body, mode, spans, header = found
        if header:
            self._header = header
        self._show(spec, version, body, data=data, spans=spans, mode=mode)
        return True

    # ---- internals -----------------------------------------------------------------------------
    @contextmanager
    def _sync(self):
        self._syncing += 1
        try:
            yield
        finally:
            self._syncing -= 1

    def _fail(self, text: str) -> None:
        self.error = _one_line(text)
        self.error_html.value = (f'<div style="color:#b00020;font-family:monospace;white-space:nowrap;'
                                 f'overflow:hidden;text-overflow:ellipsis" title="{html.escape(self.error)}">'
                                 f"⚠ {html.escape(self.error)}</div>")

    def _paste_too_long(self, chars: int) -> None:
        self._fail(f"pasted text is {chars / 1e6:.1f} MB; the explorer takes at most "
                   f"{MAX_PASTE_CHARS / 1e6:.0f} MB of hex ({MAX_PASTE_CHARS // 2000:,} KB of bytes)")

    def _json_too_long(self, chars: int) -> None:
        self._fail(f"JSON text is {chars / 1e6:.1f} MB ({chars:,} characters); the explorer takes at most "
                   f"{MAX_JSON_CHARS:,}")

    def _search_too_long(self, chars: int) -> None:
        self._fail(f"filter text is {chars:,} characters; at most {MAX_SEARCH_CHARS} are used")

    def _ok(self) -> None:
        self.error = ""
        self.error_html.value = ""

    def _find(self, name, kind: str) -> MessageSpec:
        if isinstance(name, MessageSpec):
            spec = name
        elif isinstance(name, int) and not isinstance(name, bool):
            spec = registry.by_api_key(name, kind)
        else:
            name = str(name)
            specs = registry.messages()
            if name in specs:
                spec = specs[name]
            else:
                suffix = "Request" if kind == "request" else "Response"
                spec = registry.get(name + suffix) if name + suffix in specs else registry.get(name)
        if spec.type not in ("request", "response"):
            raise UnknownMessageError(f"{spec.name} is a {spec.type}, not a request or response")
        return spec

    def _fill_options(self) -> None:
        q = self.search.value.strip().lower()
        rows = _apis(self.kind_toggle.value)
        opts = [(f"{api} ({key})", api) for api, key in rows
                if not q or q in api.lower() or q == str(key)]
        cur = self.spec.api if self.spec else None
        with self._sync():
            self.message_select.options = opts
            if cur in [v for _, v in opts]:
                self.message_select.value = cur
        return opts

    def _set_version_bounds(self, spec: MessageSpec, version: int) -> None:
        s = self.version_slider
        lo, hi = min(spec.versions), max(spec.versions)
        with self._sync():
            if lo > s.max:
                s.max = hi
                s.min = lo
            else:
                s.min = lo
                s.max = hi
            s.value = version

    def _encode(self, spec, version, value, mode) -> tuple[bytes, list]:
        if mode == "body":
            data = encode(spec, version, value)
            spans = annotate(spec, version, data)
        elif spec.type == "request":
            data = encode_request(spec, version, value, correlation_id=self._header["correlation_id"],
                                  client_id=self._header["client_id"], framed=mode == "frame")
            spans = annotate_request(data, framed=mode == "frame")
        else:
            data = encode_response(spec, version, value, correlation_id=self._header["correlation_id"],
                                   framed=mode == "frame")
            spans = annotate_response(data, spec, version, framed=mode == "frame")
        return data, expand_records(spans)

    def _encode_show(self, value) -> None:
        data, spans = self._encode(self.spec, self.version, value, self.mode)
        self.value = value
        self._set_bytes(data, spans)
        self._ok()

    def _set_bytes(self, data: bytes, spans: list) -> None:
        self.current_bytes = data
        self.current_spans = spans
        title = f"{self.spec.name} v{self.version} — {_MODE_TEXT[self.mode]}: {len(data):,} bytes"
        self.hex_view.update(data, spans, title=title)

    def _show(self, spec, version, value, *, data=None, spans=None, mode=None) -> None:
        """Make spec/version/value current and update every pane (encoding unless bytes are given)."""
        if data is None:
            data, spans = self._encode(spec, version, value, mode or self.mode)
        with self._sync():
            self.spec, self.version = spec, version
            if self.kind_toggle.value != spec.type:
                self.kind_toggle.value = spec.type
            opts = self._fill_options()
            if spec.api not in [v for _, v in opts]:
                self.search.value = ""
                self._fill_options()
            self.message_select.value = spec.api
            self._set_version_bounds(spec, version)
            if mode is not None:
                self.mode_select.value = mode
            self.json_area.value = to_json_text(value)
        self.value = value
        self._ok()                      # before the slow diagram: no stale error beside the new status
        self._set_bytes(data, spans)
        self._status()
        self._draw_diagram()

    def _status(self) -> None:
        spec, v = self.spec, self.version
        label = spec.status_label(v)
        flex = "flexible (tagged fields, compact lengths)" if spec.is_flexible(v) else "not flexible"
        self.status.value = (f"<small><b>{html.escape(spec.name)}</b> v{v} (api key {registry.api_key(spec)}, "
                             f"versions {spec.valid}): {html.escape(label)}; {flex}</small>")
        self._errors()

    def _errors(self) -> None:
        """Errors this version can return, and those new since the version before (per version)."""
        from ..broker.api_errors import ERROR_ROWS, errors_by_version, new_errors
        spec, v = self.spec, self.version
        if spec.api not in ERROR_ROWS:
            self.errors_text = f"errors: the model declares no error table for {spec.api}"
        else:
            table = errors_by_version(spec.api)
            names = table.get(v, [])
            added = new_errors(spec.api, v - 1, v)["added"] if v - 1 in table else []
            self.errors_text = (f"errors {spec.api} v{v} can return: {', '.join(names) or 'none declared'}"
                                + (f"; new in v{v}: {', '.join(added)}" if added else ""))
        self.errors_html.value = f"<small>{html.escape(self.errors_text)}</small>"

    def _draw_diagram(self) -> None:
        key = (self.spec.name, self.version, self.mode != "body")
        svg = self._diagrams.get(key)
        if svg is None:
            try:
                from ..draw.wire import wire_svg
                svg = wire_svg(self.spec, self.version, header=key[2]).replace(
                    "<svg ", '<svg style="max-width:100%;height:auto" ', 1)
            except Exception as e:        # no graphviz `dot`, or drawing not available: not the user's fault
                svg = f"<i>diagram not available: {html.escape(_one_line(f'{type(e).__name__}: {e}'))}</i>"
            if len(self._diagrams) > 64:
                self._diagrams.clear()
            self._diagrams[key] = svg
        self.diagram.value = svg

    def _detect(self, data: bytes):
        """(spec, version, body, mode, spans, header) for the first reading that works, and the
        problems of the ones that did not."""
        problems = []
        for framed, mode in ((True, "frame"), (False, "header")):
            try:
                d = decode_request(data, framed=framed)
                spans = annotate_request(data, framed=framed)
            except DecodeError as e:
                problems.append((f"a request {'with size and header' if framed else 'with header'}", e))
                continue
            spec = registry.get(d["message"])
            hdr = {"correlation_id": d["correlation_id"], "client_id": d["header"].get("ClientId", "kipviz")}
            return (spec, d["version"], d["body"], mode, expand_records(spans), hdr), problems
        spec, v = self.spec, self.version
        if spec.type == "response":
            for framed, mode in ((True, "frame"), (False, "header")):
                try:
                    d = decode_response(data, spec, v, framed=framed)
                    spans = annotate_response(data, spec, v, framed=framed)
                except DecodeError as e:
                    problems.append((f"a {spec.name} v{v} {'with size and header' if framed else 'with header'}", e))
                    continue
                return (spec, v, d["body"], mode, expand_records(spans),
                        {"correlation_id": d["correlation_id"], "client_id": self._header["client_id"]}), problems
        try:
            body = decode(spec, v, data)
            spans = annotate(spec, v, data)
        except DecodeError as e:
            problems.append((f"a {spec.name} v{v} body", e))
            return None, problems
        return (spec, v, body, "body", expand_records(spans), None), problems

    # ---- widget callbacks ----------------------------------------------------------------------
    @_safe
    def _on_search(self, change):
        if self._syncing:
            return
        opts = self._fill_options()
        if not opts:
            self.status.value = f"<small>no message matches {html.escape(self.search.value)}</small>"
        elif self.spec and self.spec.api not in [v for _, v in opts]:
            self.select(opts[0][1])
        else:
            self._status()

    @_safe
    def _on_message(self, change):
        if self._syncing or not change["new"]:
            return
        self.select(change["new"], kind=self.kind_toggle.value)

    @_safe
    def _on_kind(self, change):
        if self._syncing or self.spec is None:
            return
        other = self._find(self.spec.api, change["new"])
        v = self.version if self.version in other.valid else None
        self.select(other, v)

    @_safe
    def _on_version(self, change):
        if self._syncing or self.spec is None:
            return
        v = change["new"]
        if v not in self.spec.valid:
            raise UnknownMessageError(f"{self.spec.name} has no version {v}")
        from ..records.examples import example_value
        example = example_value(self.spec, v)
        carried = _carry(resolve(self.spec, v).fields, self.value, example)
        try:
            self._encode(self.spec, v, carried, self.mode)
            value = carried
        except EncodeError:
            value = example
        self._show(self.spec, v, value)

    @_safe
    def _on_mode(self, change):
        if self._syncing or self.spec is None:
            return
        data, spans = self._encode(self.spec, self.version, self.value, change["new"])
        self._ok()
        self._set_bytes(data, spans)
        self._draw_diagram()

    def _on_json(self, change):
        if not self._syncing:
            self.set_json(change["new"])

    def _on_paste(self, change):
        if not self._syncing:
            self.paste_hex(change["new"])
