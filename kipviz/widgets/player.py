"""player(animation): a notebook widget that plays a state-machine Animation in the browser.

    from kipviz.draw.animate import Animation
    from kipviz.widgets.player import player
    player(Animation("transaction", cluster.events))

A Play button, a slider and a speed choice, jslink'ed to each other and to the frame view, over
frames rendered beforehand: the distinct pictures (SVG) and the per-frame captions are sent to the
browser once, and the browser switches frames itself. Playing needs no kernel (no round trip per
frame, and it keeps playing in a notebook exported with its widget state). The slider counts frames
from 1, as the caption does ("6/6" on the last frame, slider at 6); `Player.index` is 0-based.

Without anywidget it falls back to an ipywidgets.HTML that Python redraws when the slider moves."""
from __future__ import annotations

import ipywidgets as W
import traitlets

from ..draw.animate import FOCUS_JS, SPEEDS

__all__ = ["player", "Player", "FrameView", "Speed", "ESM", "SPEED_ESM", "HAVE_ANYWIDGET"]

ESM = FOCUS_JS + r"""
function render({ model, el }) {
  const cap = document.createElement('div');
  cap.className = 'kv-anim-caption';
  cap.style.cssText = 'white-space:pre-wrap;font-family:Helvetica,Arial,sans-serif;font-size:13px;' +
    'background:#f7f7f7;border-left:4px solid #e53e3e;padding:4px 8px;margin:4px 0;min-height:4.2em';
  const stage = document.createElement('div');
  stage.className = 'kv-anim-stage';
  stage.style.cssText = 'max-height:60vh;overflow:auto';
  el.append(cap, stage);
  let nodes = [], shown = -1;
  const reset = () => { stage.innerHTML = ''; nodes = []; shown = -1; };
  const draw = () => {
    const frames = model.get('frames'), pictures = model.get('pictures');
    if (!frames.length) { cap.textContent = 'no transitions'; reset(); return; }
    const i = Math.max(0, Math.min(frames.length - 1, model.get('frame') - 1));
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
    focus(stage, nodes[p], frames[i].focus);
    cap.textContent = frames[i].caption;
  };
  const redraw = () => { reset(); draw(); };
  model.on('change:frame', draw);
  model.on('change:frames', redraw);
  model.on('change:pictures', redraw);
  draw();
  return () => {
    model.off('change:frame', draw); model.off('change:frames', redraw); model.off('change:pictures', redraw);
  };
}
export default { render };
"""

# the speed choice: its `interval` (ms per frame) is jslink'ed to the Play's, so it works without a kernel
SPEED_ESM = r"""
function render({ model, el }) {
  const label = document.createElement('label');
  label.className = 'kv-speed';
  label.style.cssText = 'font-family:Helvetica,Arial,sans-serif;font-size:13px;margin-left:8px;white-space:nowrap';
  label.append('speed ');
  const sel = document.createElement('select');
  sel.setAttribute('aria-label', 'speed');
  label.append(sel);
  el.append(label);
  const fill = () => {
    const now = 1000 / model.get('interval');
    const speeds = [...new Set([...model.get('speeds'), now])].sort((a, b) => a - b);
    sel.innerHTML = '';
    for (const s of speeds) {
      const o = document.createElement('option');
      o.value = String(s); o.textContent = `${+s.toFixed(3)} fps`; o.selected = Math.abs(s - now) < 1e-9;
      sel.append(o);
    }
  };
  sel.addEventListener('change', () => { model.set('interval', Math.round(1000 / parseFloat(sel.value))); model.save_changes(); });
  model.on('change:interval', fill);
  fill();
  return () => model.off('change:interval', fill);
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
    frame = traitlets.Int(1).tag(sync=True)             # the frame shown, counted from 1 (as the slider)
    if HAVE_ANYWIDGET:
        _esm = ESM

    def __init__(self, **kw):
        super().__init__(**kw)
        if not HAVE_ANYWIDGET:   # pragma: no cover - fallback: Python draws the frame
            self.observe(lambda _: self._fallback(), names=["frame", "frames", "pictures"])
            self._fallback()

    def _fallback(self) -> None:   # pragma: no cover
        import html
        if not self.frames:
            self.value = "<p>no transitions</p>"
            return
        f = self.frames[max(0, min(len(self.frames) - 1, self.frame - 1))]
        self.value = (f'<pre style="white-space:pre-wrap">{html.escape(f["caption"])}</pre>'
                      + self.pictures[f["p"]])


class Speed(_Base):
    """A speed choice (frames per second); `interval` is the Play's, in ms per frame."""

    interval = traitlets.Int(500).tag(sync=True)
    speeds = traitlets.List(traitlets.Float(), list(map(float, SPEEDS))).tag(sync=True)
    if HAVE_ANYWIDGET:
        _esm = SPEED_ESM


class Player(W.VBox):
    """Play + IntSlider (frames 1..n) + speed + FrameView; `links` holds the jslinks
    (play<->slider, slider<->view, speed<->play)."""

    def __init__(self, animation, *, fps: float = 2, **kw):
        data = animation.player_data()
        n = len(data["frames"])
        self.animation = animation
        interval = int(round(1000 / fps))
        self.play = W.Play(value=1, min=1, max=max(n, 1), step=1, interval=interval,
                           description="play", disabled=n == 0)
        self.slider = W.IntSlider(value=1, min=1, max=max(n, 1), step=1, description="frame",
                                  continuous_update=True, readout=True, disabled=n == 0,
                                  layout=W.Layout(width="60%"))
        self.speed = Speed(interval=interval)
        self.view = FrameView(pictures=data["pictures"], frames=data["frames"], frame=1)
        self.links = (W.jslink((self.play, "value"), (self.slider, "value")),
                      W.jslink((self.slider, "value"), (self.view, "frame")),
                      W.jslink((self.speed, "interval"), (self.play, "interval")))
        self.title = W.HTML(_title(data, n))
        super().__init__([self.title, W.HBox([self.play, self.slider, self.speed]), self.view], **kw)
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
            w.max, w.disabled = max(n, 1), n == 0
        self.title.value = _title(data, n)
        if at_end or self.slider.value > n:
            self.index = max(n - 1, 0)

    @property
    def index(self) -> int:
        """The frame shown, 0-based (the slider and the caption count from 1)."""
        return self.slider.value - 1

    @index.setter
    def index(self, i: int) -> None:
        """Go to frame i (0-based) from Python (the browser follows through the links)."""
        self.slider.value = i + 1
        self.play.value = i + 1
        self.view.frame = i + 1


def _title(data: dict, n: int) -> str:
    return f"<b>{_escape(data['title'])}</b> · {n} frame{'s' if n != 1 else ''}"


def _escape(s: str) -> str:
    import html
    return html.escape(s)


def player(animation, *, fps: float = 2) -> Player:
    """A widget that plays `animation` (a kipviz.draw.animate.Animation) client-side."""
    return Player(animation, fps=fps)
