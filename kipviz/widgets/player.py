"""player(animation): a notebook widget that plays a state-machine Animation in the browser.

    from kipviz.draw.animate import Animation
    from kipviz.widgets.player import player
    player(Animation("transaction", cluster.events))

A Play button and a slider, jslink'ed to each other and to the frame view, over frames rendered
beforehand: the distinct pictures (SVG) and the per-frame captions are sent to the browser once,
and the browser switches frames itself. Playing needs no kernel (no round trip per frame, and it
keeps playing in a notebook exported with its widget state).

Without anywidget it falls back to an ipywidgets.HTML that Python redraws when the slider moves."""
from __future__ import annotations

import ipywidgets as W
import traitlets

__all__ = ["player", "Player", "FrameView", "ESM", "HAVE_ANYWIDGET"]

ESM = r"""
function render({ model, el }) {
  const cap = document.createElement('div');
  cap.className = 'kv-anim-caption';
  cap.style.cssText = 'white-space:pre-wrap;font-family:Helvetica,Arial,sans-serif;font-size:13px;' +
    'background:#f7f7f7;border-left:4px solid #e53e3e;padding:4px 8px;margin:4px 0;min-height:4.2em';
  const stage = document.createElement('div');
  stage.className = 'kv-anim-stage';
  el.append(cap, stage);
  let nodes = [], shown = -1;
  const reset = () => { stage.innerHTML = ''; nodes = []; shown = -1; };
  const draw = () => {
    const frames = model.get('frames'), pictures = model.get('pictures');
    if (!frames.length) { cap.textContent = 'no transitions'; reset(); return; }
    const i = Math.max(0, Math.min(frames.length - 1, model.get('index')));
    const p = frames[i].p;
    if (p !== shown) {
      if (shown >= 0 && nodes[shown]) nodes[shown].style.display = 'none';
      if (!nodes[p]) {
        const d = document.createElement('div');
        d.innerHTML = pictures[p];
        const svg = d.querySelector('svg');
        if (svg) { svg.style.maxWidth = '100%'; svg.style.height = 'auto'; }
        stage.appendChild(d);
        nodes[p] = d;
      }
      nodes[p].style.display = '';
      shown = p;
    }
    cap.textContent = frames[i].caption;
  };
  const redraw = () => { reset(); draw(); };
  model.on('change:index', draw);
  model.on('change:frames', redraw);
  model.on('change:pictures', redraw);
  draw();
  return () => {
    model.off('change:index', draw); model.off('change:frames', redraw); model.off('change:pictures', redraw);
  };
}
export default { render };
"""

try:
    import anywidget
    _Base = anywidget.AnyWidget
    HAVE_ANYWIDGET = True
except Exception:   # pragma: no cover - anywidget is a dependency; keep working without it
    _Base = W.HTML
    HAVE_ANYWIDGET = False


class FrameView(_Base):
    """Shows frame `index`: pictures (distinct SVGs) and frames ({"p": picture, "caption": text})
    go to the browser once; changing `index` (from the slider, in the browser) switches frames."""

    pictures = traitlets.List(traitlets.Unicode()).tag(sync=True)
    frames = traitlets.List(traitlets.Dict()).tag(sync=True)
    index = traitlets.Int(0).tag(sync=True)
    if HAVE_ANYWIDGET:
        _esm = ESM

    def __init__(self, **kw):
        super().__init__(**kw)
        if not HAVE_ANYWIDGET:   # pragma: no cover - fallback: Python draws the frame
            self.observe(lambda _: self._fallback(), names=["index", "frames", "pictures"])
            self._fallback()

    def _fallback(self) -> None:   # pragma: no cover
        import html
        if not self.frames:
            self.value = "<p>no transitions</p>"
            return
        f = self.frames[max(0, min(len(self.frames) - 1, self.index))]
        self.value = (f'<pre style="white-space:pre-wrap">{html.escape(f["caption"])}</pre>'
                      + self.pictures[f["p"]])


class Player(W.VBox):
    """Play + IntSlider + FrameView; `links` holds the two jslinks (play<->slider, slider<->view)."""

    def __init__(self, animation, *, fps: float = 2, **kw):
        data = animation.player_data()
        n = len(data["frames"])
        self.animation = animation
        self.play = W.Play(value=0, min=0, max=max(n - 1, 0), step=1, interval=int(round(1000 / fps)),
                           description="play", disabled=n == 0)
        self.slider = W.IntSlider(value=0, min=0, max=max(n - 1, 0), step=1, description="frame",
                                  continuous_update=True, readout=True, disabled=n == 0,
                                  layout=W.Layout(width="70%"))
        self.view = FrameView(pictures=data["pictures"], frames=data["frames"], index=0)
        self.links = (W.jslink((self.play, "value"), (self.slider, "value")),
                      W.jslink((self.slider, "value"), (self.view, "index")))
        self.title = W.HTML(_title(data, n))
        super().__init__([self.title, W.HBox([self.play, self.slider]), self.view], **kw)
        self.add_class("kipviz-player")

    def follow(self, animation) -> None:
        """Show `animation` (the same source, grown: a live cluster's newer events) in place. A viewer
        on the last frame stays on the (new) last frame; one who went back keeps their frame."""
        data = animation.player_data()
        n = len(data["frames"])
        at_end = self.slider.value >= self.slider.max
        self.animation = animation
        with self.view.hold_sync():
            self.view.pictures, self.view.frames = data["pictures"], data["frames"]
        for w in (self.play, self.slider):
            w.max, w.disabled = max(n - 1, 0), n == 0
        self.title.value = _title(data, n)
        if at_end or self.slider.value > n - 1:
            self.index = max(n - 1, 0)

    @property
    def index(self) -> int:
        return self.slider.value

    @index.setter
    def index(self, i: int) -> None:
        """Go to frame i from Python (the browser follows through the links)."""
        self.slider.value = i
        self.play.value = i
        self.view.index = i


def _title(data: dict, n: int) -> str:
    return f"<b>{_escape(data['title'])}</b> · {n} frame{'s' if n != 1 else ''}"


def _escape(s: str) -> str:
    import html
    return html.escape(s)


def player(animation, *, fps: float = 2) -> Player:
    """A widget that plays `animation` (a kipviz.draw.animate.Animation) client-side."""
    return Player(animation, fps=fps)
