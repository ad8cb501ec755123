"""TextBox: a text area (or one-line input) that refuses huge pastes in the browser.

    box = TextBox(max_chars=1_000_000, placeholder="paste hex here")
    box.observe(handler, "value")             # the text, sent when the box loses focus (or Ctrl+Enter)
    box.on_oversize(lambda chars: ...)        # a paste longer than max_chars: only its length arrives

Why: ipywidgets.Textarea sends whatever is typed to the kernel in one websocket message, and
Jupyter's server closes the connection on a message over 10 MiB, so a 12 MB paste used to end
in "connection lost" and no word to the user. Here the browser checks the length first and sends
the kernel only the number of characters, which the Explorer turns into its one-line error.

Styled with ipywidgets' own text classes, so it looks like the Textarea/Text it replaces.
Without anywidget it falls back to ipywidgets.Textarea (no browser-side check)."""
from __future__ import annotations

import ipywidgets as W
import traitlets

__all__ = ["TextBox", "ESM", "HAVE_ANYWIDGET"]

ESM = r"""
function render({ model, el }) {
  const multi = model.get('multiline');
  el.classList.add('jupyter-widgets', 'widget-inline-hbox',
                   multi ? 'jupyter-widget-textarea' : 'jupyter-widget-text',
                   multi ? 'widget-textarea' : 'widget-text');
  const label = document.createElement('label');
  label.className = 'widget-label';
  const box = document.createElement(multi ? 'textarea' : 'input');
  if (!multi) box.type = 'text';
  if (multi) box.style.resize = 'vertical';
  box.spellcheck = false;
  el.append(label, box);
  const sync = () => {
    label.textContent = model.get('description');
    label.style.display = model.get('description') ? '' : 'none';
    box.placeholder = model.get('placeholder');
    if (box.value !== model.get('value')) box.value = model.get('value');
  };
  const send = () => {
    const text = box.value, max = model.get('max_chars');
    if (max > 0 && text.length > max) {
      box.value = model.get('value');            // the kernel never sees the huge text
      model.send({ event: 'oversize', chars: text.length });
      return;
    }
    if (text !== model.get('value')) { model.set('value', text); model.save_changes(); }
  };
  const onInput = () => { if (model.get('continuous_update')) send(); };
  const onKey = (e) => {
    if (e.key === 'Enter' && (!multi || e.ctrlKey || e.metaKey)) { e.preventDefault(); send(); }
  };
  box.addEventListener('change', send);
  box.addEventListener('input', onInput);
  box.addEventListener('keydown', onKey);
  model.on('change', sync);
  sync();
  return () => { model.off('change', sync); };
}
export default { render };
"""

try:
    import anywidget
    _Base = anywidget.AnyWidget
    HAVE_ANYWIDGET = True
except Exception:   # pragma: no cover - anywidget is a dependency; keep working without it
    _Base = W.Textarea
    HAVE_ANYWIDGET = False


class TextBox(_Base):
    """Text the user types or pastes (`value`), at most `max_chars` characters per send; longer
    text stays in the browser and `on_oversize` callbacks get its length. `multiline=False` draws
    a one-line input; `continuous_update=True` sends on every keystroke (still checked)."""

    value = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)
    description = traitlets.Unicode("").tag(sync=True)
    max_chars = traitlets.Int(1_000_000).tag(sync=True)
    multiline = traitlets.Bool(True).tag(sync=True)
    continuous_update = traitlets.Bool(False).tag(sync=True)
    if HAVE_ANYWIDGET:
        _esm = ESM

    def __init__(self, **kw):
        super().__init__(**kw)
        self._oversize_callbacks: list = []
        self.on_msg(self._on_browser_msg)

    def on_oversize(self, callback) -> None:
        """Call `callback(chars)` when the browser refuses a text of `chars` characters."""
        self._oversize_callbacks.append(callback)

    def _on_browser_msg(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict) or content.get("event") != "oversize":
            return
        chars = content.get("chars")
        if isinstance(chars, int) and not isinstance(chars, bool) and chars >= 0:
            for cb in self._oversize_callbacks:
                cb(chars)
