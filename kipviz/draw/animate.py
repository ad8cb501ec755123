"""Animations of a state machine, played from a scenario's events.

    anim = Animation("transaction", cluster.events)             # every instance (transactional id)
    anim = Animation(table, events, key="tx-1")                  # one instance
    len(anim)                        one frame per StateChanged of that machine (and key)
    anim.frames[i]                   Frame: the event, the row taken, the request that caused it, caption
    anim.frames_svg()                every frame as SVG text (diagram + caption), rendered once, cached
    anim.to_html("txn.html")         a standalone player: buttons, slider, keyboard; no CDN, no kernel
    anim.to_gif("txn.gif", fps=2)    an animated GIF (PNG frames from `dot`, put together by Pillow)
    kipviz.widgets.player(anim)      the same frames in a notebook widget (Play + slider, client-side)

Each frame is kipviz.draw.machines.state_diagram of the table with the instance's new state
filled and the row just taken in bold red; following every instance, the states the other
instances are in are filled lightly and carry their keys. The caption says when (virtual ms),
what changed, the row's event, and the request being handled when it happened (or that none was:
a timer or a coordinator-internal step).

Speed: `dot` runs once per animation. The picture's layout does not depend on the highlighting
(only colours and line widths change), so every frame is the one rendered SVG with the node's and
the edge's colour attributes replaced (machines.py gives them stable ids; an edge carrying several
rows of one source and target reddens only the taken row's lines of its label); the result is the same
text `dot` writes for state_diagram(table, current=..., taken=...). Distinct pictures are cached:
most frames of a long scenario repeat one of a few (state, edge) pairs. GIF frames are PNGs from
`dot`, one per distinct picture, also cached."""
from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..broker.machine import Row, Table
from ..errors import KipvizError
from ..schema import events as E
from . import machines as M
from .clients import client_names
from .render import DotNotFoundError, halo, inline_svg, to_svg
from .render import svg_text as _xml

__all__ = ["Animation", "Frame", "player_html", "player_fragment", "changes", "render_many", "random_walk",
           "SPEEDS"]

C_BADGE = "#1a4f8b"
SPEEDS = (0.5, 1, 2, 4, 8)          # frames per second a player's speed choice offers (page and widget)


@dataclass(frozen=True)
class Frame:
    """One step of an animation: a state change, the table row it took, and every followed state after it."""
    index: int
    event: E.StateChanged
    row: Row | None                       # the table row taken (None: the table has no such row)
    request: E.RequestReceived | None     # the request being handled when the state changed
    states: tuple[tuple[str, str], ...]   # (key, state) of every followed instance after the change
    caption: str
    picture: int                          # index into Animation.pictures()

    @property
    def key(self) -> str:
        """The key of the instance that changed ("tx-1", "group/topic-0@3")."""
        return self.event.key

    @property
    def state(self) -> str:
        """The state it changed to."""
        return self.event.to_state

    @property
    def t(self) -> int:
        """When it changed (virtual ms)."""
        return self.event.t


@dataclass(frozen=True)
class _Pic:
    current: str
    taken: int | None
    occupied: tuple[tuple[str, tuple[str, ...]], ...]     # (state, keys of other instances there)


class Animation:
    """Frames of one state machine over a scenario (see the module docstring).

    table: a kipviz.broker.machine.Table, or a table name found by machines.tables().
    events: a list of events, or anything with `.events` (a Cluster).
    key: follow one instance (a transactional id, a group id, "group/member"); None follows all.
    machine: the StateChanged.machine to follow (default: the table's name).
    t0: the run's start, in the events' clock: captions give times from it (a model run's virtual
    clock starts at 0; a live server's is epoch milliseconds).
    client_ids: connection -> client.id beyond what the events say (a live Cluster.client_ids)."""

    def __init__(self, table: Table | str, events, *, key: str | None = None, machine: str | None = None,
                 show_proposed: bool = True, title: str | None = None, t0: int = 0,
                 client_ids: Mapping[str, str] | None = None):
        if isinstance(table, str):
            found = M.tables()
            if table not in found:
                raise ValueError(f"no state table named {table!r}; tables: {', '.join(found) or 'none'}")
            table = found[table]
        self.table = table
        self.key = key
        self.machine = machine or table.name
        self.show_proposed = show_proposed
        self.title = title or (f"{table.name} · {key}" if key else f"{table.name} (all instances)")
        self._rows = {(r.from_state, r.event, r.to_state): i for i, r in enumerate(table.rows)}
        self._pics: list[_Pic] = []
        self._pic_index: dict[_Pic, int] = {}
        self.t0 = t0
        events = list(getattr(events, "events", events))
        self._clients = client_names(events, client_ids)
        self.frames: list[Frame] = self._frames(events)
        self._base: str | None = None
        self._segments: list[tuple[str | None, str]] | None = None
        self._svg_cache: dict[int, str] = {}
        self._frames_svg: list[str] | None = None
        self._png_cache: dict[tuple, bytes] = {}

    def __len__(self) -> int:
        return len(self.frames)

    def __repr__(self) -> str:
        return f"<Animation {self.title!r}: {len(self.frames)} frames, {len(self._pics)} distinct pictures>"

    # ---- frames ----------------------------------------------------------------------------------
    # size: one pass over the state changes building each frame from the last, the frames sharing its running state
    def _frames(self, events: list) -> list[Frame]:
        frames: list[Frame] = []
        handling: list[E.RequestReceived] = []
        states: dict[str, str] = {}
        changes = [ev for ev in events if isinstance(ev, E.StateChanged) and ev.machine == self.machine
                   and (self.key is None or ev.key == self.key)]
        n = len(changes)
        for ev in events:
            # the model handles one request at a time, at one instant: a request is being handled
            # from its RequestReceived to its ResponseSent (or, unanswered, until the next request
            # or until time moves on)
            if isinstance(ev, E.RequestReceived):
                handling = [ev]
            elif isinstance(ev, E.ResponseSent):
                handling = [r for r in handling
                            if (r.broker, r.client, r.correlation_id) != (ev.broker, ev.client, ev.correlation_id)]
            elif isinstance(ev, E.StateChanged) and ev.machine == self.machine and \
                    (self.key is None or ev.key == self.key):
                for s in (ev.from_state, ev.to_state):
                    if s not in self.table.states:
                        raise ValueError(f"{self.table.name}: event #{ev.seq} names state {s!r}, "
                                         f"which the table does not have")
                states[ev.key] = ev.to_state
                ri = self._rows.get((ev.from_state, ev.cause, ev.to_state))
                row = self.table.rows[ri] if ri is not None else None
                request = handling[-1] if handling and handling[-1].t == ev.t else None
                others: dict[str, list[str]] = {}
                if self.key is None:
                    for k, s in states.items():
                        if k != ev.key:
                            others.setdefault(s, []).append(k)
                pic = _Pic(ev.to_state, ri, tuple(sorted((s, tuple(ks)) for s, ks in others.items())))
                pi = self._pic_index.get(pic)
                if pi is None:
                    pi = self._pic_index[pic] = len(self._pics)
                    self._pics.append(pic)
                snapshot = tuple(states.items())
                frames.append(Frame(len(frames), ev, row, request, snapshot,
                                    self._caption(len(frames), n, ev, row, request, snapshot), pi))
        return frames

    def _caption(self, i: int, n: int, ev: E.StateChanged, row: Row | None, req, states) -> str:
        lines = [f"{i + 1}/{n} · t={ev.t - self.t0} ms · {ev.machine} {ev.key}: {ev.from_state} → {ev.to_state}"]
        cause = f"event: {ev.cause}"
        if row is not None and row.status not in ("released", ""):
            cause += f" ({', '.join(p for p in (row.kip, row.status) if p)})"
        elif row is None:
            cause += " (no such row in the table)"
        lines.append(cause)
        if req is not None:
            lines.append(f"request: {req.api} v{req.version} from {self._clients.get(req.client, req.client)} "
                         f"to broker {req.broker} "
                         f"(correlation id {req.correlation_id})")
        else:
            lines.append("no request: a timer or a coordinator-internal step")
        if self.key is None and len(states) > 1:
            lines.append("instances: " + " · ".join(f"{k} {s}" for k, s in states))
        return "\n".join(lines)

    # ---- pictures ----------------------------------------------------------------------------------
    def _graph(self, pic: _Pic | None, rankdir: str | None = None):
        include_rows = self._taken_rows()
        include_states = sorted({p.current for p in self._pics} | {s for p in self._pics for s, _ in p.occupied})
        if pic is None and rankdir is None:     # one direction for every frame: state_diagram's "auto"
            g = M.auto_layout(lambda d: self._graph(None, d))
            self.__dict__["_rankdir"] = getattr(g, "kipviz_layout", g.graph_attr["rankdir"])
            return g
        if rankdir is None and "_rankdir" not in self.__dict__:
            self._graph(None)
        d = rankdir or self.__dict__["_rankdir"]
        if pic is None:
            return M.state_graph(self.table, [], None, self.show_proposed, set(), include_rows, include_states,
                            True, d)
        return M.state_graph(self.table, [pic.current], pic.taken, self.show_proposed, {s for s, _ in pic.occupied},
                        include_rows, include_states, True, d)

    def base_svg(self) -> str:
        """The un-highlighted picture: the one `dot` run of this animation."""
        if self._base is None:
            self._base = to_svg(self._graph(None))
        return self._base

    def _split(self) -> list[tuple[str | None, str]]:
        if self._segments is None:
            self._segments = _segments(self.base_svg())
        return self._segments

    def _badge(self, seg: str, keys: tuple[str, ...]) -> str:
        m = re.search(r'<ellipse[^>]* cx="([-\d.]+)" cy="([-\d.]+)" rx="([-\d.]+)" ry="([-\d.]+)"', seg)
        if not m:
            return seg
        cx, cy, _, ry = (float(v) for v in m.groups())
        text = ", ".join(keys[:3]) + (f" +{len(keys) - 3}" if len(keys) > 3 else "")
        # doublecircle: the outer ring is the last ellipse
        rings = re.findall(r'<ellipse[^>]* ry="([-\d.]+)"', seg)
        ry = max(float(r) for r in rings) if rings else ry
        badge = (f'<text text-anchor="middle" x="{cx:.2f}" y="{cy + ry + 10:.2f}" font-family="Helvetica,sans-Serif" '
                 f'font-size="10.00" fill="{C_BADGE}"{halo()}>'
                 f"{_xml(text)}</text>\n")
        cut = seg.rfind("</g>")
        return seg[:cut] + badge + seg[cut:]

    def picture_svg(self, p: int) -> str:
        """Distinct picture p as SVG (no caption)."""
        got = self._svg_cache.get(p)
        if got is not None:
            return got
        pic = self._pics[p]
        t = self.table
        cur_id = M.node_id(t, pic.current)
        occ = dict(pic.occupied)
        occ_ids = {M.node_id(t, s): keys for s, keys in occ.items()}
        edge = M.edge_id(t, pic.taken) if pic.taken is not None else None
        out = []
        fill, line = f'fill="{M.C_NODE_FILL}"', f'stroke="{M.C_NODE_LINE}" stroke-width="1.2"'
        missed = False      # a colour attribute that is not where graphviz's own `dot` writes it
        for ident, seg in self._split():
            if ident is None:
                pass
            elif ident == cur_id:
                missed |= fill not in seg or line not in seg
                seg = seg.replace(fill, f'fill="{M.C_CURRENT_FILL}"').replace(
                    line, f'stroke="{M.C_CURRENT_LINE}" stroke-width="{M.CURRENT_WIDTH}"')
            elif ident in occ_ids:
                missed |= fill not in seg
                seg = seg.replace(fill, f'fill="{M.C_OCCUPIED_FILL}"')
            elif ident == edge:
                seg, bad = self._taken_edge(seg, pic.taken)
                missed |= bad
            out.append(seg)
        found = {ident for ident, _ in self._split()}
        missed |= bool(({cur_id, edge} | set(occ_ids)) - {None} - found)
        if missed:
            # this `dot` writes its SVG differently (not graphviz's own?): let it draw the picture
            own = _segments(to_svg(self._graph(pic)))
            out = [seg for _, seg in own]
            idents = [ident for ident, _ in own]
        else:
            idents = [ident for ident, _ in self._split()]
        for i, ident in enumerate(idents):
            keys = occ_ids.get(ident)
            if keys:
                out[i] = self._badge(out[i], keys)
        svg = "".join(out)
        self._svg_cache[p] = svg
        return svg

    def _taken_edge(self, seg: str, taken: int) -> tuple[str, bool]:
        """The arrow of row `taken` in red: its line and arrowhead, and the label lines of that row
        (the arrow may carry other rows of the same source and target: their lines keep their colour).
        Also says whether the segment is not what graphviz's `dot` writes (then `dot` draws it)."""
        t = self.table
        if "_rankdir" not in self.__dict__:
            self._graph(None)
        group = M.edge_rows(t, M.shown_rows(t, self.show_proposed, self._taken_rows()))[M.edge_id(t, taken)]
        owners = M.label_rows(t, group, self.__dict__["_rankdir"].endswith("-compact"))
        line, row_color = M.edge_color(t, group), M.status_color(t.rows[taken].status)
        parts = _TEXT.split(seg)             # [outside, text, outside, text, ..., outside]
        texts = parts[1::2]
        missed = (len(texts) != len(owners) or f'stroke="{line}"' not in seg
                  or any(f'fill="{row_color}"' not in x for x, o in zip(texts, owners, strict=False) if o == taken))
        out = []
        for k, part in enumerate(parts):
            if k % 2 == 0:
                part = part.replace(f'stroke="{line}"', f'stroke="{M.C_TAKEN}" stroke-width="{M.TAKEN_WIDTH}"')
                part = part.replace(f'fill="{line}"', f'fill="{M.C_TAKEN}"')
            elif k // 2 < len(owners) and owners[k // 2] == taken:
                part = part.replace(f'fill="{row_color}"', f'fill="{M.C_TAKEN}"')
            out.append(part)
        return "".join(out), missed

    def _taken_rows(self) -> list[int]:
        return sorted({p.taken for p in self._pics if p.taken is not None})

    def pictures(self) -> list[str]:
        """Every distinct picture (SVG without caption), in order of first appearance."""
        return [self.picture_svg(p) for p in range(len(self._pics))]

    def picture_graph(self, p: int):
        """Distinct picture p as a graphviz Digraph (what the PNG frames are rendered from)."""
        return self._graph(self._pics[p])

    # ---- frames as SVG ----------------------------------------------------------------------------------
    def frame_svg(self, i: int, caption: bool = True) -> str:
        """Frame i as SVG text, with its caption unless caption=False."""
        fr = self.frames[i]
        svg = self.picture_svg(fr.picture)
        return _with_caption(svg, fr.caption) if caption else svg

    def frames_svg(self, caption: bool = True) -> list[str]:
        """Every frame as SVG text; computed once and cached (with captions)."""
        if not caption:
            return [self.picture_svg(f.picture) for f in self.frames]
        if self._frames_svg is None:
            self._frames_svg = [self.frame_svg(i) for i in range(len(self.frames))]
        return self._frames_svg

    # ---- HTML player ------------------------------------------------------------------------------------
    def player_data(self) -> dict:
        """What a player needs: distinct pictures and, per frame, its picture, caption and the id of
        the highlighted state's node (`focus`: a player scrolls a tall picture to it)."""
        return {"title": self.title, "pictures": [_COMMENT.sub("", inline_svg(s)) for s in self.pictures()],
                "frames": [{"p": f.picture, "caption": f.caption, "focus": M.node_id(self.table, f.state)}
                           for f in self.frames]}

    def html(self, *, title: str | None = None, fps: float = 2) -> str:
        """The standalone player page as text."""
        return player_html(self.player_data(), title=title or self.title, fps=fps)

    def to_html(self, path, *, title: str | None = None, fps: float = 2) -> Path:
        """Write the standalone HTML player (buttons, slider, keyboard; everything inline)."""
        path = Path(path)
        path.write_text(self.html(title=title, fps=fps), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        if not self.frames:
            return f"<p>{html.escape(self.title)}: no transitions</p>"
        return inline_svg(self.frame_svg(len(self.frames) - 1))

    # ---- GIF ---------------------------------------------------------------------------------------------
    def _png_key(self, p: int, dpi: float) -> tuple:
        pic = self._pics[p]
        return (pic.current, pic.taken, tuple(s for s, _ in pic.occupied), round(dpi, 2))

    def _dpi(self, max_width: int | None) -> float:
        """96 dpi, or less so the picture is at most max_width pixels wide."""
        m = _VIEWBOX.search(self.base_svg())        # pt, whatever size render.fit_width gave it
        if not max_width or not m:
            return 96.0
        return round(min(96.0, max_width * 72.0 / float(m.group(1))), 2)

    def picture_png(self, p: int, *, max_width: int | None = None) -> bytes:
        """Distinct picture p as PNG, from `dot` (cached by what `dot` draws: state, edge, filled states;
        the other instances' keys are drawn on top by to_gif)."""
        dpi = self._dpi(max_width)
        self._render_pngs([p], dpi)
        return self._png_cache[self._png_key(p, dpi)]

    def _render_pngs(self, ps: Iterable[int], dpi: float) -> None:
        todo: dict[tuple, int] = {}
        for p in ps:
            k = self._png_key(p, dpi)
            if k not in self._png_cache and k not in todo:
                todo[k] = p
        if todo:
            sources = []
            for p in todo.values():
                g = self.picture_graph(p)
                g.graph_attr["dpi"] = f"{dpi:g}"
                sources.append(g.source)
            self._png_cache.update(zip(todo, render_many(sources, "png"), strict=True))

    def to_gif(self, path, fps: float = 2, *, max_width: int | None = 1200) -> Path:
        """An animated GIF: one frame per transition, the caption under the picture.

        PNGs come from `dot` (one per distinct picture, cached, rendered in a few batched runs) at
        96 dpi, or less to keep them within max_width pixels (None: no limit); Pillow puts each
        over its caption. All frames share one palette."""
        from PIL import Image, ImageDraw
        if not self.frames:
            raise ValueError(f"{self.title}: no transitions, nothing to animate")
        used = list(dict.fromkeys(f.picture for f in self.frames))
        dpi = self._dpi(max_width)
        self._render_pngs(used, dpi)
        rgb = {p: self._png_badges(Image.open(io.BytesIO(self._png_cache[self._png_key(p, dpi)])).convert("RGB"), p)
               for p in used}
        font = caption_font(max(11, round(15 * dpi / 96)))
        width = max(im.width for im in rgb.values())
        pic_h = max(im.height for im in rgb.values())
        line_h = round(font.size * 1.35) if hasattr(font, "size") else 20
        wrapped = [wrap_caption(f.caption, width, font) for f in self.frames]
        cap_h = max(len(w) for w in wrapped) * line_h + 16

        def caption_strip(lines: list[str]):
            strip = Image.new("RGB", (width, cap_h), "white")
            d = ImageDraw.Draw(strip)
            d.line([(0, 0), (width, 0)], fill="#cccccc")
            for j, line in enumerate(lines):
                d.text((12, 8 + j * line_h), line, fill="#000000" if j == 0 else "#2d3748", font=font)
            return strip

        # one palette for every frame (no flicker, and mapping to a given palette is fast)
        sample = [rgb[p] for p in used[:6]] + [caption_strip(wrapped[0])]
        montage = Image.new("RGB", (width, sum(im.height for im in sample)), "white")
        y = 0
        for im in sample:
            montage.paste(im, (0, y))
            y += im.height
        palette = montage.quantize(colors=255, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        white = Image.new("RGB", (1, 1), "white").quantize(palette=palette).getpixel((0, 0))
        indexed = {p: im.quantize(palette=palette, dither=Image.Dither.NONE) for p, im in rgb.items()}
        images = []
        for f, lines in zip(self.frames, wrapped, strict=True):
            canvas = Image.new("P", (width, pic_h + cap_h), white)
            canvas.putpalette(palette.getpalette())
            canvas.paste(indexed[f.picture], (0, 0))
            canvas.paste(caption_strip(lines).quantize(palette=palette, dither=Image.Dither.NONE), (0, pic_h))
            images.append(canvas)
        path = Path(path)
        images[0].save(path, format="GIF", save_all=True, append_images=images[1:],
                       duration=int(round(1000 / fps)), loop=0, optimize=False)
        return path

    def _png_badges(self, img, p: int):
        """Draw the other instances' keys under their nodes (positions from the rendered SVG)."""
        pic = self._pics[p]
        if not pic.occupied:
            return img
        from PIL import ImageDraw
        svg = self.base_svg()
        m = _VIEWBOX.search(svg)
        tr = re.search(r'translate\(([-\d.]+) ([-\d.]+)\)', svg)
        if not m or not tr:
            return img
        scale = img.width / float(m.group(1))
        tx, ty = float(tr.group(1)), float(tr.group(2))
        segs = dict((i, s) for i, s in self._split() if i is not None)
        d = ImageDraw.Draw(img)
        font = caption_font(max(10, int(10 * scale)))
        for state, keys in pic.occupied:
            seg = segs.get(M.node_id(self.table, state), "")
            ell = re.findall(r'<ellipse[^>]* cx="([-\d.]+)" cy="([-\d.]+)" rx="([-\d.]+)" ry="([-\d.]+)"', seg)
            if not ell:
                continue
            cx, cy = float(ell[0][0]), float(ell[0][1])
            ry = max(float(e[3]) for e in ell)
            text = ", ".join(keys[:3]) + (f" +{len(keys) - 3}" if len(keys) > 3 else "")
            x, y = (cx + tx) * scale, (cy + ry + 3 + ty) * scale
            w = d.textlength(text, font=font)
            d.text((x - w / 2, y), text, fill=C_BADGE, font=font, stroke_width=2, stroke_fill="white")
        return img


# ---- helpers -------------------------------------------------------------------------------------------
def _segments(svg: str) -> list[tuple[str | None, str]]:
    """The SVG cut at every node and edge group: [(None, head), (id, group), ..., (None, tail)]."""
    starts = [(m.start(), m.group(1)) for m in _GROUP.finditer(svg)]
    segs: list[tuple[str | None, str]] = []
    pos = 0
    for j, (st, ident) in enumerate(starts):
        if j == 0:
            segs.append((None, svg[:st]))
        end = starts[j + 1][0] if j + 1 < len(starts) else svg.rfind("</g>")
        segs.append((ident, svg[st:end]))
        pos = end
    segs.append((None, svg[pos:]))
    return segs


_TEXT = re.compile(r"(<text\b[^>]*>.*?</text>)", re.S)
_GROUP = re.compile(r'<g id="(kv[se]_[^"]*)" class="(?:node|edge)">')
_COMMENT = re.compile(r"<!--.*?-->\n?", re.S)
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def render_many(sources: list[str], fmt: str = "png", workers: int | None = None) -> list[bytes]:
    """Render many DOT sources with few `dot` processes (a process per picture costs more than the
    picture): the sources are split into one batch per CPU (at most 4), each batch is one `dot`
    run whose output is the pictures back to back. PNG only (its end marker splits the output)."""
    if fmt != "png":
        raise ValueError("render_many: only png output can be split")
    if not sources:
        return []
    exe = shutil.which("dot")
    if exe is None:
        raise DotNotFoundError()
    n = max(1, min(workers or os.cpu_count() or 1, 4, len(sources)))
    size = -(-len(sources) // n)
    batches = [sources[i:i + size] for i in range(0, len(sources), size)]

    def run(batch: list[str]) -> list[bytes]:
        proc = subprocess.run([exe, "-Tpng"], input="\n".join(batch).encode("utf-8"), capture_output=True,
                              check=False)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise KipvizError(f"graphviz `dot -Tpng` failed: {err or proc.returncode}")
        parts = proc.stdout.split(_PNG_END)
        pngs = [p + _PNG_END for p in parts[:-1]]
        if len(pngs) != len(batch):
            raise KipvizError(f"graphviz `dot -Tpng` wrote {len(pngs)} pictures for {len(batch)} graphs")
        return pngs

    if len(batches) == 1:
        return run(batches[0])
    with ThreadPoolExecutor(len(batches)) as pool:
        return [png for result in pool.map(run, batches) for png in result]


_VIEWBOX = re.compile(r'<svg [^>]*?viewBox="[-\d.]+ [-\d.]+ ([\d.]+) ([\d.]+)"')


def _with_caption(svg: str, caption: str) -> str:
    """The SVG with the caption under the picture (the drawing area grows downwards)."""
    m = re.search(r'<svg width="([\d.]+)(pt|px)" height="([\d.]+)(?:pt|px)"\s+viewBox="([-\d.]+) ([-\d.]+) '
                  r'([\d.]+) ([\d.]+)"', svg)
    if not m:
        return svg
    w, h = float(m.group(6)), float(m.group(7))
    unit = m.group(2)                   # pt as dot writes it; px once render.fit_width scaled it
    size, line_h = 12, 16
    chars = max(40, int((w - 16) / (size * 0.55)))
    lines = [part for line in caption.split("\n") for part in (textwrap.wrap(line, chars) or [""])]
    cap_h = line_h * len(lines) + 14
    nh = h + cap_h
    head = (f'<svg width="{float(m.group(1)):.0f}{unit}" height="{float(m.group(3)) * nh / h:.0f}{unit}"\n '
            f'viewBox="{m.group(4)} {m.group(5)} {m.group(6)} {nh:.2f}"')
    texts = "".join(
        f'<text x="10" y="{h + 8 + line_h * (j + 1) - 4:.1f}" font-family="Helvetica,sans-Serif" '
        f'font-size="{size}" fill="{"#000000" if j == 0 else "#2d3748"}"'
        + (' font-weight="bold"' if j == 0 else "") + f">{_xml(line)}</text>"
        for j, line in enumerate(lines))
    block = (f'<g class="kv-caption"><rect x="0" y="{h:.2f}" width="{w:.2f}" height="{cap_h:.2f}" fill="white"/>'
             f'<line x1="0" x2="{w:.2f}" y1="{h + 2:.2f}" y2="{h + 2:.2f}" stroke="#cccccc"/>{texts}</g>\n')
    end = svg.rfind("</svg>")
    return svg[:m.start()] + head + svg[m.end():end] + block + svg[end:]


def caption_font(size: int):
    """A PIL font of `size` px for captions in PNG/GIF frames (the first of a few common faces found)."""
    from PIL import ImageFont
    for name in ("DejaVuSans.ttf", "Arial.ttf", "LiberationSans-Regular.ttf", "Helvetica.ttc"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    try:
        return ImageFont.load_default(size=size)
    except TypeError:   # pragma: no cover - Pillow < 10.1
        return ImageFont.load_default()


def wrap_caption(caption: str, width: int, font) -> list[str]:
    """`caption` broken into lines that fit `width` px in `font` (anything with getlength)."""
    out = []
    for line in caption.split("\n"):
        words, cur = line.split(" "), ""
        for w in words:
            trial = f"{cur} {w}" if cur else w
            if cur and font.getlength(trial) > width - 24:
                out.append(cur)
                cur = w
            else:
                cur = trial
        out.append(cur)
    return out


_PAGE_CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:1.5em;background:#fff;color:#222}
h1{font-size:1.2em}
"""

_PLAYER_CSS = """
.kv-player{max-width:100%}
.kv-controls{display:flex;gap:.4em;align-items:center;flex-wrap:wrap;margin:.4em 0}
.kv-controls button{font-size:1em;min-width:2.4em;padding:.2em .5em;cursor:pointer}
.kv-controls input[type=range]{flex:1;min-width:12em}
.kv-count{font-variant-numeric:tabular-nums;min-width:5em;text-align:right}
.kv-caption{white-space:pre-wrap;font-family:Helvetica,Arial,sans-serif;background:#f7f7f7;
  border-left:4px solid #e53e3e;padding:.4em .7em;margin:.4em 0;min-height:4.5em}
.kv-stage{max-height:60vh;overflow:auto}
.kv-stage svg{max-width:100%;height:auto}
"""

# a picture taller than its stage (60% of the window) scrolls inside it, to the highlighted state:
# the caption above and that state are on screen together (shared with kipviz.widgets.player)
FOCUS_JS = r"""
function focus(stage, pic, id) {
  var el = id && pic.querySelector('[id="' + id + '"]');
  if (!el) return;
  var s = stage.getBoundingClientRect(), r = el.getBoundingClientRect();
  if (!s.height || (r.top >= s.top && r.bottom <= s.bottom)) return;
  stage.scrollTop += (r.top + r.bottom) / 2 - (s.top + s.bottom) / 2;
}
"""

_PLAYER_JS = FOCUS_JS + r"""
(function () {
  document.querySelectorAll('.kv-player').forEach(function (root) {
    if (root.getAttribute('data-kv-ready')) return;   // several players on one page: set up each once
    root.setAttribute('data-kv-ready', '1');
    var data = JSON.parse(root.querySelector('script.kv-data').textContent);
    var frames = data.frames, pictures = data.pictures, n = frames.length;
    var stage = root.querySelector('.kv-stage'), cap = root.querySelector('.kv-caption');
    var slider = root.querySelector('input[type=range]'), count = root.querySelector('.kv-count');
    var playBtn = root.querySelector('[data-act=play]'), speed = root.querySelector('select');
    var nodes = [], shown = -1, i = 0, timer = null;
    function show(k) {
      if (!n) { cap.textContent = 'no transitions'; return; }
      i = Math.max(0, Math.min(n - 1, k));
      var p = frames[i].p;
      if (p !== shown) {
        if (shown >= 0) nodes[shown].style.display = 'none';
        if (!nodes[p]) {
          var d = document.createElement('div');
          d.innerHTML = pictures[p];
          stage.appendChild(d);
          nodes[p] = d;
        }
        nodes[p].style.display = '';
        shown = p;
      }
      focus(stage, nodes[p], frames[i].focus);
      cap.textContent = frames[i].caption;
      slider.value = i;
      count.textContent = (i + 1) + ' / ' + n;
    }
    function stop() { if (timer) { clearInterval(timer); timer = null; } playBtn.textContent = '\u25B6 play'; }
    function play() {
      if (timer) { stop(); return; }
      if (i >= n - 1) show(0);
      playBtn.textContent = '\u275A\u275A pause';
      timer = setInterval(function () { if (i >= n - 1) { stop(); } else { show(i + 1); } },
                          1000 / parseFloat(speed.value));
    }
    root.querySelectorAll('button[data-act]').forEach(function (b) {
      b.addEventListener('click', function () {
        var a = b.getAttribute('data-act');
        if (a === 'play') { play(); return; }
        stop();
        if (a === 'first') show(0); else if (a === 'prev') show(i - 1);
        else if (a === 'next') show(i + 1); else if (a === 'last') show(n - 1);
      });
    });
    slider.addEventListener('input', function () { stop(); show(parseInt(slider.value, 10)); });
    speed.addEventListener('change', function () { if (timer) { stop(); play(); } });
    root.addEventListener('keydown', function (e) {
      if (e.key === 'ArrowRight') { stop(); show(i + 1); e.preventDefault(); }
      else if (e.key === 'ArrowLeft') { stop(); show(i - 1); e.preventDefault(); }
      else if (e.key === ' ') { play(); e.preventDefault(); }
    });
    var m = /frame=(\d+)/.exec(location.hash || '');
    show(m ? parseInt(m[1], 10) - 1 : 0);
  });
})();
"""


def _json_for_script(obj) -> str:
    """JSON that can sit inside <script>: no "</" (or "<!--") can end the element early."""
    return json.dumps(obj, ensure_ascii=False).replace("<!--", "\\u003c!--").replace("</", "<\\/")


def player_fragment(data: dict, *, fps: float = 2) -> str:
    """The player as an HTML fragment (its own CSS and JS inline) to place inside another page,
    e.g. a notebook exported to static HTML; several fragments on one page play independently."""
    n = len(data["frames"])
    speeds = sorted({*SPEEDS, float(fps)})
    options = "".join(f'<option value="{s:g}"{" selected" if s == float(fps) else ""}>{s:g} fps</option>'
                      for s in speeds)
    return (f"<style>{_PLAYER_CSS}</style>\n"
            f'<div class="kv-player" tabindex="0">\n'
            f'<div class="kv-controls"><button data-act="first" title="first">|&#x25C0;</button>'
            f'<button data-act="prev" title="previous (&#x2190;)">&#x25C0;</button>'
            f'<button data-act="play" title="play/pause (space)">&#x25B6; play</button>'
            f'<button data-act="next" title="next (&#x2192;)">&#x25B6;</button>'
            f'<button data-act="last" title="last">&#x25B6;|</button>'
            f'<input type="range" min="0" max="{max(n - 1, 0)}" value="0" step="1" aria-label="frame">'
            f'<span class="kv-count">{1 if n else 0} / {n}</span>'
            f'<label>speed <select>{options}</select></label></div>\n'
            f'<div class="kv-caption"></div>\n<div class="kv-stage"></div>\n'
            f'<script type="application/json" class="kv-data">{_json_for_script(data)}</script>\n'
            f"</div>\n<script>{_PLAYER_JS}</script>\n")


def player_html(data: dict, *, title: str = "kipviz animation", fps: float = 2) -> str:
    """A standalone page that plays `data` (Animation.player_data()): inline SVG, CSS and JS only."""
    t = html.escape(title)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{t}</title>\n<style>{_PAGE_CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n"
            + player_fragment(data, fps=fps) + "</body>\n</html>\n")


def changes(events: Iterable, machine: str, key: str | None = None) -> list[E.StateChanged]:
    """The StateChanged events of one machine (and key), in order."""
    return [ev for ev in events if isinstance(ev, E.StateChanged) and ev.machine == machine
            and (key is None or ev.key == key)]



def _api_of(row: Row) -> str | None:
    """The API a row's event (or, failing that, its note) starts with: "EndTxn(commit)" ->
    "EndTxn", note "AddPartitionsToTxn: ..." -> "AddPartitionsToTxn"; None for timers and steps."""
    from ..schema import registry
    for text in (row.event, row.note):
        name = re.split(r"[^A-Za-z0-9]", text.strip(), maxsplit=1)[0] if text else ""
        if not name[:1].isupper():
            continue
        try:
            registry.get(name + "Request")
        except Exception:  # noqa: BLE001 - not an API name
            continue
        return name
    return None


def random_walk(table: Table, n_events: int = 200, *, keys: Iterable[str] = ("tx-1", "tx-2", "tx-3"),
                seed: int = 0, client: str = "client-1", step_ms: tuple[int, int] = (1, 50)) -> list[E.Event]:
    """A synthetic scenario for benchmarks and demos: instances walk the table's rows at random.

    A row whose event names an API ("EndTxn(commit)") is wrapped in that request and its response;
    other rows (timers, internal steps) stand alone. An instance stuck in a state without rows is
    replaced by a fresh one. Exactly n_events events, seq 0..n-1, time in virtual ms."""
    import random
    rng = random.Random(seed)
    state = {k: table.initial for k in keys}
    fresh = 0
    out: list[E.Event] = []
    t, cid = 0, 0

    def add(cls, **kw):
        out.append(cls(seq=len(out), t=t, **kw))

    while len(out) < n_events:
        k = rng.choice(sorted(state))
        options = [r for r in table.rows if r.from_state == state[k]]
        if not options:
            del state[k]
            fresh += 1
            state[f"{k.rsplit('#', 1)[0]}#{fresh}"] = table.initial
            continue
        r = rng.choice(options)
        t += rng.randint(*step_ms)
        api = _api_of(r)
        if api:
            cid += 1
            add(E.RequestReceived, broker=0, client=client, api=api, version=0, correlation_id=cid, body={})
        add(E.StateChanged, machine=table.name, key=k, from_state=r.from_state, to_state=r.to_state,
            cause=r.event, status=r.status)
        if api:
            add(E.ResponseSent, broker=0, client=client, api=api, version=0, correlation_id=cid, body={})
        state[k] = r.to_state
    return out[:n_events]


def animation(trace, machine: str, key: str | None = None, **kwargs) -> Animation:
    """Frames of one state machine over a scenario run (a kipviz.scenarios.Trace) or any object
    with `.events`."""
    return Animation(machine, trace.events, key=key, **kwargs)
