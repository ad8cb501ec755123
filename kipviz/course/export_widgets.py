"""Widgets in a static page: each widget output of an executed notebook becomes plain HTML drawn from
the widget state the notebook kept (nb.metadata.widgets), so nothing needs a kernel or a widget
manager script from the internet.

An animation player (kipviz.widgets.player / strip_player: a model holding `frames` and
`pictures`) becomes the standalone player of kipviz.draw.animate (buttons, slider, captions; all
frames inline, playing in the browser). Other widgets become a snapshot of their last state:
boxes keep their children, HTML keeps its HTML, inputs show their value."""
from __future__ import annotations

import copy
import functools
import html
import re

from ..draw.animate import player_fragment

__all__ = ["static_widgets", "widget_html", "WIDGET_VIEW", "WIDGET_STATE"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_REF = re.compile(r"^IPY_MODEL_(.+)$")
_CSS = ("<style>.kv-w{font-family:var(--jp-ui-font-family,Helvetica,Arial,sans-serif);font-size:13px}"
        ".kv-w .kv-row{display:flex;flex-flow:row wrap;gap:.6em;align-items:flex-start}"
        ".kv-w .kv-col{display:flex;flex-direction:column;gap:.3em}"
        ".kv-w .kv-val{font-family:var(--jp-code-font-family,monospace);background:#f3f3f3;padding:0 .3em}"
        ".kv-w pre.kv-text{max-height:24em;overflow:auto;background:#f7f7f7;padding:.4em;margin:0}"
        ".kv-w svg{max-width:100%;height:auto}</style>")


def _model_id(ref) -> str | None:
    m = _REF.match(ref) if isinstance(ref, str) else None
    return m.group(1) if m else None


def _is_player(state: dict) -> bool:
    return isinstance(state.get("frames"), list) and isinstance(state.get("pictures"), list)


def _tree(models: dict, mid: str, seen: set) -> list[str]:
    """Every model reachable from mid through `children` (the widget tree), mid first."""
    if mid in seen or mid not in models:
        return []
    seen.add(mid)
    out = [mid]
    for ref in models[mid].get("state", {}).get("children", []) or []:
        child = _model_id(ref)
        if child:
            out += _tree(models, child, seen)
    return out


def _label(state: dict) -> str:
    d = state.get("description") or ""
    return f"<b>{html.escape(d)}</b> " if d else ""


def _output_html(out: dict) -> str:
    """One output of an Output widget, by the usual mimetype preference."""
    if out.get("output_type") == "stream":
        return f'<pre class="kv-text">{html.escape("".join(out.get("text", "")))}</pre>'
    if out.get("output_type") == "error":
        return f'<pre class="kv-text">{html.escape(out.get("ename", ""))}: {html.escape(out.get("evalue", ""))}</pre>'
    data = out.get("data", {})
    for mime in ("text/html", "image/svg+xml"):
        if mime in data:
            v = data[mime]
            return "".join(v) if isinstance(v, list) else v
    for mime in ("image/png", "image/jpeg", "image/gif"):
        if mime in data:
            return f'<img src="data:{mime};base64,{"".join(data[mime]).strip()}" alt="">'
    if "text/plain" in data:
        v = data["text/plain"]
        return f'<pre class="kv-text">{html.escape("".join(v) if isinstance(v, list) else v)}</pre>'
    return ""


def _text_leaf(name: str, st: dict) -> str | None:
    """A widget showing text (HTML, Label, Text...) as HTML; None when `name` is none of them."""
    if name in ("HTMLModel", "HTMLMathModel"):
        return f"<div>{_label(st)}{st.get('value', '')}</div>"
    if name == "LabelModel":
        return f"<div>{html.escape(str(st.get('value', '')))}</div>"
    if name in ("TextModel", "TextareaModel", "PasswordModel", "ComboboxModel"):
        value = "" if name == "PasswordModel" else str(st.get("value", ""))
        if not value:
            return ""
        return f'<div>{_label(st)}<pre class="kv-text">{html.escape(value)}</pre></div>'
    return None


def _control_leaf(name: str, st: dict, hide_controls: bool) -> str | None:
    """A control (choice, slider, checkbox, button) as its value in HTML; None when `st` is none of them."""
    if "_options_labels" in st:                 # Dropdown, Select, ToggleButtons, RadioButtons, ...
        labels = st.get("_options_labels") or []
        idx = st.get("index")
        chosen = [labels[i] for i in (idx if isinstance(idx, list) else [idx])
                  if isinstance(i, int) and 0 <= i < len(labels)]
        return f'<div>{_label(st)}<span class="kv-val">{html.escape(", ".join(chosen) or "-")}</span></div>'
    if name.endswith(("SliderModel", "TextModel", "ProgressModel")):      # IntSlider, FloatText, ...
        if hide_controls:
            return ""
        return f'<div>{_label(st)}<span class="kv-val">{html.escape(str(st.get("value", "")))}</span></div>'
    if name in ("CheckboxModel", "ToggleButtonModel", "ValidModel"):
        mark = "✓" if st.get("value") else "✗"
        return f"<div>{_label(st)}{mark}</div>"
    if name == "ButtonModel":
        return f"<button disabled>{html.escape(st.get('description', ''))}</button>"
    return None


class _Renderer:
    def __init__(self, models: dict):
        self.models = models

    def render(self, mid: str, *, hide_controls: bool, depth: int = 0) -> str:
        m = self.models.get(mid)
        if m is None or depth > 50:
            return ""
        name = m.get("model_name", "")
        st = m.get("state", {})
        if _is_player(st):
            return self.player(mid, st)
        if name in ("PlayModel",):
            return ""
        if "children" in st:
            return self._box(mid, name, st, hide_controls, depth)
        if name == "OutputModel":                    # its outputs; a widget shown inside it is drawn too
            return "".join(self.render(view["model_id"], hide_controls=hide_controls, depth=depth + 1)
                           if isinstance(view := o.get("data", {}).get(WIDGET_VIEW), dict) and "model_id" in view
                           else _output_html(o) for o in st.get("outputs", []))
        leaf = _text_leaf(name, st)
        if leaf is None:
            leaf = _control_leaf(name, st, hide_controls)
        if leaf is not None:
            return leaf
        if isinstance(st.get("html"), str):          # e.g. kipviz.widgets.HexView: its HTML as last drawn
            return f"<div>{st['html']}</div>"
        if isinstance(st.get("value"), str) and st["value"]:    # e.g. kipviz.widgets.TextBox
            return f'<div>{_label(st)}<pre class="kv-text">{html.escape(st["value"])}</pre></div>'
        return ""

    def _box(self, mid: str, name: str, st: dict, hide_controls: bool, depth: int) -> str:
        # a box holding a player: the player has its own controls
        hide = hide_controls or any(_is_player(self.models[t].get("state", {}))
                                    for t in _tree(self.models, mid, set()))
        kids = [self.render(c, hide_controls=hide, depth=depth + 1)
                for c in (_model_id(r) for r in st.get("children") or []) if c]
        kids = [k for k in kids if k]
        if name in ("TabModel", "AccordionModel", "StackModel"):
            titles = list(st.get("titles") or [])
            kids = [f"<div><b>{html.escape(titles[i] if i < len(titles) and titles[i] else f'#{i + 1}')}"
                    f"</b>{k}</div>" for i, k in enumerate(kids)]
        cls = "kv-row" if name in ("HBoxModel", "GridBoxModel") else "kv-col"
        return f'<div class="{cls}">{"".join(kids)}</div>' if kids else ""

    def player(self, mid: str, st: dict) -> str:
        fps = 2.0
        for play_id, other in self.models.items():    # the Play jslinked to this view sets the speed
            s = other.get("state", {})
            if other.get("model_name") == "PlayModel" and s.get("interval"):
                if self._play_drives(play_id, mid):
                    fps = 1000 / float(s["interval"])
                    break
        data = {"title": "", "pictures": st["pictures"], "frames": st["frames"]}
        return player_fragment(data, fps=round(fps, 3))

    @functools.cached_property
    def _links(self) -> list[tuple[str | None, str | None]]:
        """(source, target) model ids of every jslink."""
        return [(_model_id(s.get("source", [None])[0]), _model_id(s.get("target", [None])[0]))
                for m in self.models.values() if m.get("model_name") in ("LinkModel", "DirectionalLinkModel")
                for s in [m.get("state", {})] if s.get("source") and s.get("target")]

    def _play_drives(self, play_id: str, view: str) -> bool:
        """Is this Play linked (directly or through one slider) to the frame view?"""
        links = self._links
        near = {play_id}
        for _ in range(3):
            near |= {b for a, b in links if a in near} | {a for a, b in links if b in near}
        return view in near


def widget_html(models: dict, model_id: str) -> str:
    """Static HTML for widget `model_id` given the notebook's widget models (state by model id)."""
    body = _Renderer(models).render(model_id, hide_controls=False)
    return f'{_CSS}<div class="kv-w">{body}</div>' if body else ""


def _models(nb) -> dict:
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {k: v for k, v in state.items() if isinstance(v, dict)}


def static_widgets(nb):
    """A copy of executed notebook `nb` in which every widget output is static HTML (from the saved
    widget state, or the output's plain-text form if the state is missing), and no widget state
    is left for a page to load a widget manager for."""
    nb = copy.deepcopy(nb)
    models = _models(nb)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data")
            if not data or WIDGET_VIEW not in data:
                continue
            view = data.pop(WIDGET_VIEW)
            mid = view.get("model_id") if isinstance(view, dict) else None
            page = widget_html(models, mid) if mid else ""
            if page:                       # else the output's text/plain form stays
                data["text/html"] = page
    nb.metadata.pop("widgets", None)
    return nb

