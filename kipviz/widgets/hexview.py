"""HexView: the annotated hex dump as a Jupyter widget, with the selection synced both ways.

    HexView(data=b"...", spans=codec.annotate(...))   # data: bytes or hex text
    view.selected = "body.Topics[0].Name"             # highlights in the browser
    view.selected                                     # what the user clicked last

The HTML comes from kipviz.draw.hexdump (rendered in Python, so the widget and the static dump
look the same); a small ES module attaches the click/hover behaviour and syncs `selected`.
Without anywidget it falls back to an ipywidgets.HTML (hover titles, no click sync)."""
from __future__ import annotations

import traitlets

from ..codec import annotate, annotate_request, parse_hex
from ..draw.hexdump import CORE_JS, hexdump_html, span_dicts

__all__ = ["HexView", "show_hex", "ESM", "HAVE_ANYWIDGET"]

ESM = CORE_JS + r"""
function render({ model, el }) {
  let api = null;
  const onClick = (path) => {
    if (model.get('selected') !== path) { model.set('selected', path); model.save_changes(); }
  };
  const draw = () => {
    el.innerHTML = model.get('html');
    const root = el.querySelector('.kvx');
    api = root ? kvxAttach(root, onClick) : null;
    const s = model.get('selected');
    if (api && s) api.selectPath(s, false);
  };
  const follow = () => { if (api && api.selected() !== model.get('selected')) api.selectPath(model.get('selected'), true); };
  model.on('change:html', draw);
  model.on('change:selected', follow);
  draw();
  return () => { model.off('change:html', draw); model.off('change:selected', follow); };
}
export default { render };
"""

try:
    import anywidget
    _Base = anywidget.AnyWidget
    HAVE_ANYWIDGET = True
except Exception:   # pragma: no cover - anywidget is a dependency; keep working without it
    import ipywidgets
    _Base = ipywidgets.HTML
    HAVE_ANYWIDGET = False


def _to_hex(value) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if value is None:
        return ""
    if isinstance(value, str):
        return parse_hex(value).hex()
    raise traitlets.TraitError(f"data must be bytes or hex text, not {type(value).__name__}")


class HexData(traitlets.Unicode):
    """Hex text; bytes (and hex with spaces, colons, 0x...) are accepted and normalised."""

    info_text = "bytes or hex text"

    def validate(self, obj, value):
        """Bytes (or hex text) as the trait's hex text; TraitError for anything else."""
        try:
            return _to_hex(value)
        except Exception as e:
            raise traitlets.TraitError(f"data: {e}") from None


class HexView(_Base):
    """Annotated hex dump widget. Traits: data (hex text; bytes accepted), spans (list of dicts,
    Span tuples accepted), selected (a span path, "" for none; synced both ways), title, html
    (rendered from the others and synced to the browser: read it rather than set it)."""

    # data and spans stay in Python (they can be large); the browser gets the rendered html
    data = HexData("")
    spans = traitlets.List()
    selected = traitlets.Unicode("").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    html = traitlets.Unicode("").tag(sync=True)
    max_bytes = traitlets.Int(16 * 1024)      # bytes drawn; the rest is summarised
    if HAVE_ANYWIDGET:
        _esm = ESM

    def __init__(self, data=b"", spans=(), **kw):
        self._quiet = True
        super().__init__(data=_to_hex(data), spans=span_dicts(spans or ()), **kw)
        self._quiet = False
        self._render()

    @traitlets.validate("spans")
    def _valid_spans(self, proposal):
        return span_dicts(proposal["value"] or ())

    @traitlets.observe("data", "spans", "title", "max_bytes")
    def _changed(self, change):
        if not self._quiet:
            self._render()

    @traitlets.observe("selected")
    def _selected(self, change):
        if not HAVE_ANYWIDGET and not self._quiet:   # pragma: no cover - fallback: redraw with the selection
            self._render()

    @property
    def bytes(self) -> bytes:
        """The bytes shown."""
        return bytes.fromhex(self.data)

    def update(self, data, spans, title: str | None = None, selected: str = "") -> None:
        """Replace bytes, spans (and title) at once: one redraw instead of three."""
        self._quiet = True
        try:
            self.data = data
            self.spans = spans
            if title is not None:
                self.title = title
            self.selected = selected
        finally:
            self._quiet = False
        self._render()

    def _render(self) -> None:
        html = hexdump_html(self.bytes, self.spans, title=self.title or None, max_bytes=self.max_bytes,
                            script=False, selected=self.selected or None)
        self.html = str(html)
        if not HAVE_ANYWIDGET:   # pragma: no cover
            self.value = self.html


def show_hex(data, spans=None, *, name=None, version: int | None = None, title: str | None = None,
             framed: bool = True) -> HexView:
    """A HexView for bytes (or hex text). Spans: given; else annotate(name, version, data) when a
    message is named; else the bytes are tried as a request with header. Returns the widget
    (the last expression of a cell displays it)."""
    raw = bytes.fromhex(_to_hex(data))
    if spans is None:
        if name is not None:
            if version is None:
                raise ValueError("show_hex: pass version= together with name=")
            spans = annotate(name, version, raw)
        else:
            spans = []
            for fr in ((True, False) if framed else (False,)):
                try:
                    spans = annotate_request(raw, framed=fr)
                    break
                except Exception:
                    continue
    return HexView(data=raw, spans=spans, title=title or "")
