"""The record strip of a share partition (KIP-932): its offsets as a row of cells, over time.

    strip = record_strip(cluster.events)                       # every share partition in the run
    strip = record_strip(events, group="sg", topic="t", partition=0)
    len(strip)                 one frame per request (all record-state changes while handling one
                               RequestReceived), or per timer step (a lock expiry at one instant);
                               by="change": one frame per StateChanged
    strip.frames[i]            a dict: t, request, changes, lanes (one per share partition: spso and
                               cells of offset, state, delivery_count, owner, owner_client), caption
    strip.missed               the frames where a KIP-1289 marker resolved nothing (a MarkerUnreached
                               event: the records it left TX_PENDING drawn dashed red)
    strip.svg(i)               the frame as SVG text (caption on top, legend under the cells)
    strip.html() / to_html(p)  a standalone player (buttons, slider, keyboard; no CDN, no kernel)
    strip.to_gif(p, fps=2)     an animated GIF drawn with Pillow (no `dot`, no SVG renderer)
    kipviz.widgets.strip_player.strip_player(strip)   the same frames in a notebook widget
    share_state_diagrams()     the share-record table without / with KIP-1289's TX_PENDING

Everything is reconstructed from the events only -- no access to the SharePartition objects:

* the cells: StateChanged events of machine "share-record", key "group/topic-partition@offset";
  offsets of a share partition from the first to the last one ever seen are drawn in every frame
  (an offset not yet fetched into the share partition is an empty dashed cell);
* delivery count: the number of changes so far whose cause is an acquisition, i.e. the events of
  the table's rows AVAILABLE -> ACQUIRED (in share_record.py only "acquire"; KIP-1289's
  TX_PENDING -> ACQUIRED rows give the record back to the same lock and do not count);
* lock owner: the MemberId (and client id) of the request being handled when the record was
  acquired (a held ShareFetch answered later: the one whose answer follows at that instant); kept through TX_PENDING and back, cleared by a move to AVAILABLE, ACKNOWLEDGED or
  ARCHIVED (release, acknowledgement, lock expiry, member leaving);
* the share-partition start offset (SPSO): the first offset that is not ACKNOWLEDGED/ARCHIVED
  (offsets below it have left the in-flight cache: drawn faded);
* TX_PENDING (KIP-1289, proposed) is drawn hatched with a dashed outline, and the legend then says
  "KIP-1289 (proposed)".

The request being handled is followed as in kipviz.draw.animate: from its RequestReceived to its
ResponseSent; a change outside any request is a timer (acquisition lock, session timeout)."""
from __future__ import annotations

import hashlib
import html
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..broker.tables import share_record as sr
from ..schema import events as E
from .animate import caption_font, player_html, wrap_caption
from .clients import client_names
from .machines import state_diagram
from .render import halo, svg_text

__all__ = ["record_strip", "RecordStrip", "share_state_diagrams", "parse_key", "ACQUIRE_CAUSES",
           "STATE_COLORS", "PROPOSED_LEGEND", "CELL_W", "FS_STATE", "label_width"]

MACHINE = sr.TABLE.name
# the events that hand a record out: the rows AVAILABLE -> ACQUIRED of the table
ACQUIRE_CAUSES = frozenset(r.event for r in sr.TABLE.rows
                           if r.from_state == sr.AVAILABLE and r.to_state == sr.ACQUIRED)
PROPOSED_STATES = frozenset(s for s in sr.TABLE.states
                            if all(r.status == "proposed" for r in sr.TABLE.rows if s in (r.from_state, r.to_state)))
PROPOSED_LEGEND = "KIP-1289 (proposed)"

# fill, outline, text
STATE_COLORS = {
    sr.AVAILABLE: ("#f0fff4", "#38a169", "#1a202c"),
    sr.ACQUIRED: ("#63b3ed", "#1a4f8b", "#1a202c"),
    sr.ACKNOWLEDGED: ("#48bb78", "#276749", "#1a202c"),
    sr.ARCHIVED: ("#a0aec0", "#4a5568", "#1a202c"),
    sr.TX_PENDING: ("#e9d8fd", "#6b46c1", "#1a202c"),
}
C_CHANGED = "#e53e3e"
C_MISSED = "#c53030"       # a KIP-1289 marker that resolved nothing for these records (dashed)
C_SPSO = "#c05621"
C_HATCH = "#6b46c1"
C_TEXT = "#1a202c"
C_MUTED = "#718096"
NOT_FETCHED = ("#ffffff", "#a0aec0", "#a0aec0")
FADE = 0.45           # cells below the SPSO (out of the in-flight cache)

FS, FS_SMALL, LINE = 13, 11, 17
FS_STATE = 10         # the state name in a cell (bold, full name: never cut)
# Helvetica-Bold advance widths (1/1000 em, Adobe AFM) of the characters of state names; others 0.78 em
_BOLD_EM = dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789",
                    (722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722,
                     667, 611, 722, 667, 944, 667, 667, 611, 556, *[556] * 10), strict=True))


def label_width(text: str, size: float = FS_STATE) -> float:
    """Width in px of `text` in bold Helvetica at `size` (the sizing rule of a cell's state name)."""
    return sum(_BOLD_EM.get(ch, 780) for ch in text) * size / 1000


# a cell is as wide as the longest state name of the table, plus a margin either side
CELL_W = max(66, int(max(label_width(s) for s in sr.TABLE.states)) + 2 * 6 + 1)
CELL_H, GAP, PAD = 56, 6, 16


def parse_key(key: str) -> tuple[str, str, int, int]:
    """ "group/topic-partition@offset" -> (group, topic, partition, offset). Topic names cannot
    hold "/" or "@"; a group id may, so the group is everything before the last "/"."""
    left, off = key.rsplit("@", 1)
    group, tp = left.rsplit("/", 1)
    topic, part = tp.rsplit("-", 1)
    return group, topic, int(part), int(off)


@dataclass
class _Cell:
    state: str | None = None          # None: not fetched yet
    delivery_count: int = 0
    owner: str | None = None          # member id
    owner_client: str | None = None


def _ranges(offsets) -> str:
    offs = sorted(set(offsets))
    out, i = [], 0
    while i < len(offs):
        j = i
        while j + 1 < len(offs) and offs[j + 1] == offs[j] + 1:
            j += 1
        out.append(f"@{offs[i]}" if i == j else f"@{offs[i]}-{offs[j]}")
        i = j + 1
    return ",".join(out)


def _mix(color: str, alpha: float) -> str:
    """`color` drawn at opacity alpha over white, as a plain colour (same in SVG and in the GIF)."""
    c = color.lstrip("#")
    rgb = [int(c[k:k + 2], 16) for k in (0, 2, 4)]
    return "#" + "".join(f"{round(255 - (255 - v) * alpha):02x}" for v in rgb)


class RecordStrip:
    """Per-partition record states of share groups over a run (see the module docstring)."""

    def __init__(self, events, *, group: str | None = None, topic: str | None = None,
                 partition: int | None = None, by: str = "request", show_proposed: bool | None = None,
                 title: str | None = None, t0: int = 0, client_ids: Mapping[str, str] | None = None):
        if by not in ("request", "change"):
            raise ValueError(f"by must be 'request' or 'change', not {by!r}")
        self.group, self.topic, self.partition, self.by = group, topic, partition, by
        self.t0 = t0
        events = list(getattr(events, "events", events))
        self._clients = client_names(events, client_ids)
        self.frames: list[dict] = self._frames(events)
        # the frames of a KIP-1289 marker that resolved nothing for records it should have
        self.missed = [f["index"] for f in self.frames if f["marker"]]
        self.has_missed = bool(self.missed)
        seen = {c["state"] for f in self.frames for ln in f["lanes"] for c in ln["cells"]}
        self.has_proposed = bool(seen & PROPOSED_STATES)
        self.show_proposed = self.has_proposed if show_proposed is None else show_proposed
        lanes = list(self.frames[-1]["lanes"]) if self.frames else []
        self.title = title or ("share-record strip · " + (", ".join(ln["lane"] for ln in lanes) or "no share partitions"))

    def __len__(self) -> int:
        return len(self.frames)

    def __repr__(self) -> str:
        return f"<RecordStrip {self.title!r}: {len(self.frames)} frames>"

    # ---- frames --------------------------------------------------------------------------------------
    def _wanted(self, group: str, topic: str, partition: int) -> bool:
        return ((self.group is None or group == self.group) and (self.topic is None or topic == self.topic)
                and (self.partition is None or partition == self.partition))

    # size: two passes over the events (lane bounds, then frames) sharing their maps; split, the maps would be passed back and forth
    def _frames(self, events: list) -> list[dict]:
        # pass 1: which offsets each lane shows (first .. last ever seen)
        bounds: dict[str, list[int]] = {}
        meta: dict[str, tuple[str, str, int]] = {}
        for ev in events:
            if isinstance(ev, E.StateChanged) and ev.machine == MACHINE:
                g, t, p, o = parse_key(ev.key)
                if self._wanted(g, t, p):
                    lane = f"{g}/{t}-{p}"
                    meta[lane] = (g, t, p)
                    b = bounds.setdefault(lane, [o, o])
                    b[0], b[1] = min(b[0], o), max(b[1], o)
        order = sorted(bounds, key=lambda ln: (meta[ln][0], meta[ln][1], meta[ln][2]))
        cells = {ln: {o: _Cell() for o in range(bounds[ln][0], bounds[ln][1] + 1)} for ln in order}
        spso = {ln: bounds[ln][0] for ln in order}

        answered_by = _answered_by(events)
        # pass 2: replay, one group of changes per frame
        groups: list[tuple[E.RequestReceived | None, list[E.StateChanged]]] = []
        handling: E.RequestReceived | None = None
        last_key = None
        for ev in events:
            if isinstance(ev, E.RequestReceived):
                handling = ev
            elif isinstance(ev, E.ResponseSent):
                if handling is not None and (handling.broker, handling.client, handling.correlation_id) == \
                        (ev.broker, ev.client, ev.correlation_id):
                    handling = None
            elif isinstance(ev, E.MarkerUnreached):
                missed = _missed(ev, self._wanted, bounds)
                if missed:                  # a marker that resolved nothing here: a frame of its own
                    groups.append((None, [ev]))
                    last_key = None
            elif isinstance(ev, E.StateChanged) and ev.machine == MACHINE:
                g, t, p, o = parse_key(ev.key)
                if not self._wanted(g, t, p):
                    continue
                req = handling if handling is not None and handling.t == ev.t else answered_by.get(ev.seq)
                gkey = (req.seq if req is not None else None, ev.t)
                if self.by == "request" and groups and gkey == last_key:
                    groups[-1][1].append(ev)
                else:
                    groups.append((req, [ev]))
                last_key = gkey

        frames: list[dict] = []
        n = len(groups)
        for req, evs in groups:
            before = dict(spso)
            changed: dict[str, set[int]] = {}
            chg = []
            note = evs[0] if isinstance(evs[0], E.MarkerUnreached) else None
            missed = _missed(note, self._wanted, bounds) if note is not None else {}
            for ev in evs if note is None else ():
                g, t, p, o = parse_key(ev.key)
                lane = f"{g}/{t}-{p}"
                c = cells[lane][o]
                c.state = ev.to_state
                if ev.cause in ACQUIRE_CAUSES:
                    c.delivery_count += 1
                    c.owner = (req.body or {}).get("MemberId") if req is not None else None
                    c.owner_client = self._clients.get(req.client, req.client) if req is not None else None
                elif ev.to_state in (sr.AVAILABLE, sr.ACKNOWLEDGED, sr.ARCHIVED):
                    c.owner = c.owner_client = None
                changed.setdefault(lane, set()).add(o)
                chg.append({"seq": ev.seq, "lane": lane, "offset": o, "from": ev.from_state, "to": ev.to_state,
                            "cause": ev.cause, "status": ev.status})
            for lane in changed:
                s, end = spso[lane], bounds[lane][1]
                while s <= end and cells[lane][s].state in sr.TERMINAL:
                    s += 1
                spso[lane] = s
            request = None if req is None else {
                "api": req.api, "version": req.version, "client": self._clients.get(req.client, req.client),
                "broker": req.broker,
                "correlation_id": req.correlation_id, "member": (req.body or {}).get("MemberId"), "seq": req.seq}
            lanes = [{"lane": ln, "group": meta[ln][0], "topic": meta[ln][1], "partition": meta[ln][2],
                      "spso": spso[ln], "spso_before": before[ln],
                      "cells": [{"offset": o, "state": c.state, "delivery_count": c.delivery_count,
                                 "owner": c.owner, "owner_client": c.owner_client,
                                 "changed": o in changed.get(ln, ()), "missed": o in missed.get(ln, ())}
                                for o, c in cells[ln].items()]}
                     for ln in order]
            f = {"index": len(frames), "t": evs[0].t, "seqs": [ev.seq for ev in evs], "request": request,
                 "changes": chg, "lanes": lanes, "marker": _marker_of(note, missed) if note is not None else None}
            f["caption"] = _caption(f, n, self.t0)
            frames.append(f)
        return frames

    def final(self) -> dict[str, dict[int, tuple]]:
        """{lane: {offset: (state, delivery_count, owner)}} after the last frame."""
        if not self.frames:
            return {}
        return {ln["lane"]: {c["offset"]: (c["state"], c["delivery_count"], c["owner"]) for c in ln["cells"]}
                for ln in self.frames[-1]["lanes"]}

    # ---- drawing ---------------------------------------------------------------------------------------
    def _ops(self, i: int, caption: bool, font=None) -> tuple[int, int, list[tuple]]:
        """The frame as drawing operations (shared by the SVG and the Pillow renderers):
        ("rect", x, y, w, h, fill, stroke, width, dashed, hatched), ("text", x, y, s, size, anchor,
        color, bold[, halo colour]), ("line", x1, y1, x2, y2, color, width, dashed)."""
        f = self.frames[i]
        ops: list[tuple] = []
        ncell = max((len(ln["cells"]) for ln in f["lanes"]), default=0)
        width = max(2 * PAD + ncell * (CELL_W + GAP) + 40, 720)
        y = PAD
        if caption:
            lines = (wrap_caption(f["caption"], width, font) if font is not None
                     else _wrap_svg(f["caption"], width))
            for j, line in enumerate(lines):
                y += LINE
                ops.append(("text", PAD, y, line, FS, "start", C_TEXT if j == 0 else "#2d3748", j == 0))
            y += 10
            ops.append(("line", 0, y, width, y, "#cccccc", 1, False))
            y += 8
        for ln in f["lanes"]:
            y += LINE
            ops.append(("text", PAD, y, f"{ln['group']} · {ln['topic']}-{ln['partition']}", FS, "start", C_TEXT, True))
            moved = f" (was {ln['spso_before']})" if ln["spso"] != ln["spso_before"] else ""
            ops.append(("text", PAD + 220, y, f"SPSO {ln['spso']}{moved}", FS, "start", C_SPSO, True))
            y += 8
            top = y + LINE
            x0 = PAD + 10
            for k, c in enumerate(ln["cells"]):
                _cell_ops(ops, c, x0 + k * (CELL_W + GAP), top, ln["spso"])
            # the SPSO: a bar in front of the first non-terminal offset
            sx = x0 + (ln["spso"] - ln["cells"][0]["offset"]) * (CELL_W + GAP) - GAP / 2 if ln["cells"] else x0
            ops.append(("line", sx, top - 16, sx, top + CELL_H + 6, C_SPSO, 3, False))
            ops.append(("text", sx, top + CELL_H + 18, "SPSO", FS_SMALL, "middle", C_SPSO, True))
            y = top + CELL_H + 26
        y = _legend_ops(ops, y + 10, self.show_proposed, self.has_missed)
        return int(width), int(y), ops

    def svg(self, i: int = -1, *, caption: bool = True) -> str:
        """Frame i as standalone SVG text."""
        if not self.frames:
            raise ValueError(f"{self.title}: no share-record changes")
        i = range(len(self.frames))[i]
        w, h, ops = self._ops(i, caption)
        body = []
        for op in ops:
            if op[0] == "rect":
                _, x, y, rw, rh, fill, stroke, sw, dashed, hatched = op
                body.append(f'<rect x="{x:g}" y="{y:g}" width="{rw:g}" height="{rh:g}" rx="3" '
                            f'fill="{"url(#HATCH)" if hatched else fill}" stroke="{stroke}" stroke-width="{sw:g}"'
                            + (' stroke-dasharray="5,3"' if dashed else "")
                            + (' class="kv-proposed"' if hatched else "") + "/>")
            elif op[0] == "text":
                _, x, y, s, size, anchor, color, bold, *outline = op
                body.append(f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" fill="{color}"'
                            + (' font-weight="bold"' if bold else "")
                            + (halo(outline[0]) if outline and outline[0] else "")
                            + f">{_x(s)}</text>")
            else:
                _, x1, y1, x2, y2, color, sw, dashed = op
                body.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{color}" '
                            f'stroke-width="{sw:g}"' + (' stroke-dasharray="5,3"' if dashed else "") + "/>")
        fill, _, _ = STATE_COLORS[sr.TX_PENDING]
        text = "\n".join(body)
        # a pattern id per distinct picture: several pictures sit in one page (the player, a notebook)
        pid = "kv-hatch-" + hashlib.sha1(text.encode()).hexdigest()[:10]
        defs = (f'<defs><pattern id="{pid}" patternUnits="userSpaceOnUse" width="8" height="8" '
                f'patternTransform="rotate(45)"><rect width="8" height="8" fill="{fill}"/>'
                f'<line x1="0" y1="0" x2="0" y2="8" stroke="{C_HATCH}" stroke-width="3"/></pattern></defs>')
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
                f'font-family="Helvetica,Arial,sans-serif">\n{defs}\n'
                f'<rect width="{w}" height="{h}" fill="#ffffff"/>\n' + text.replace("#HATCH", "#" + pid) + "\n</svg>\n")

    # ---- HTML player ---------------------------------------------------------------------------------------
    def player_data(self) -> dict:
        """Distinct pictures (no caption) and per frame its picture and caption (the format of
        kipviz.draw.animate.player_html and kipviz.widgets.player)."""
        pictures: list[str] = []
        index: dict[str, int] = {}
        frames = []
        for i, f in enumerate(self.frames):
            s = self.svg(i, caption=False)
            p = index.get(s)
            if p is None:
                p = index[s] = len(pictures)
                pictures.append(s)
            frames.append({"p": p, "caption": f["caption"]})
        return {"title": self.title, "pictures": pictures, "frames": frames}

    def html(self, *, title: str | None = None, fps: float = 2) -> str:
        """A standalone page playing the strip frame by frame (`fps` frames a second)."""
        return player_html(self.player_data(), title=title or self.title, fps=fps)

    def to_html(self, path, *, title: str | None = None, fps: float = 2) -> Path:
        """Write html() to `path`; returns the path."""
        path = Path(path)
        path.write_text(self.html(title=title, fps=fps), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        if not self.frames:
            return f"<p>{html.escape(self.title)}: no share-record changes</p>"
        return self.svg(-1)

    # ---- GIF ---------------------------------------------------------------------------------------------------
    def frame_image(self, i: int, *, scale: float = 1.0, width: int | None = None, height: int | None = None):
        """Frame i as a Pillow RGB image, drawn directly (rectangles, lines, text)."""
        from PIL import Image, ImageDraw
        fonts = {}

        def font(size, bold=False):
            k = (size, bold)
            if k not in fonts:
                fonts[k] = caption_font(max(8, round(size * scale)))
            return fonts[k]
        w, h, ops = self._ops(i, True, caption_font(FS))   # wrap the caption at scale 1, like the SVG
        img = Image.new("RGB", (width or round(w * scale), height or round(h * scale)), "white")
        d = ImageDraw.Draw(img)
        S = lambda v: round(v * scale)  # noqa: E731
        for op in ops:
            if op[0] == "rect":
                _, x, y, rw, rh, fill, stroke, sw, dashed, hatched = op
                box = [S(x), S(y), S(x + rw), S(y + rh)]
                d.rectangle(box, fill=fill)
                if hatched:
                    _hatch(d, box, C_HATCH, max(1, S(2)))
                if dashed:
                    _dashed_rect(d, box, stroke, max(1, S(sw)))
                else:
                    d.rectangle(box, outline=stroke, width=max(1, S(sw)))
            elif op[0] == "text":
                _, x, y, s, size, anchor, color, bold, *outline = op
                extra = {"stroke_width": max(1, S(2)), "stroke_fill": outline[0]} if outline and outline[0] else {}
                d.text((S(x), S(y)), s, fill=color, font=font(size, bold), anchor="ms" if anchor == "middle" else "ls",
                       **extra)
            else:
                _, x1, y1, x2, y2, color, sw, dashed = op
                d.line([(S(x1), S(y1)), (S(x2), S(y2))], fill=color, width=max(1, S(sw)))
        return img

    def to_gif(self, path, fps: float = 2, *, scale: float = 1.0) -> Path:
        """An animated GIF, one frame per strip frame, caption on top; drawn with Pillow."""
        from PIL import Image
        if not self.frames:
            raise ValueError(f"{self.title}: no share-record changes, nothing to animate")
        fnt = caption_font(FS)
        sizes = [self._ops(i, True, fnt)[:2] for i in range(len(self.frames))]
        W, H = round(max(s[0] for s in sizes) * scale), round(max(s[1] for s in sizes) * scale)
        rgb = [self.frame_image(i, scale=scale, width=W, height=H) for i in range(len(self.frames))]
        sample = Image.new("RGB", (W, H * min(len(rgb), 4)), "white")
        for k, im in enumerate(rgb[:4]):
            sample.paste(im, (0, k * H))
        legend = Image.new("RGB", (len(STATE_COLORS) * 8 + 8, 8), "white")
        for k, (fill, stroke, _) in enumerate(STATE_COLORS.values()):
            legend.paste(fill, (k * 8, 0, k * 8 + 4, 8))
            legend.paste(stroke, (k * 8 + 4, 0, k * 8 + 8, 8))
        montage = Image.new("RGB", (max(W, legend.width), sample.height + 8), "white")
        montage.paste(sample, (0, 0))
        montage.paste(legend, (0, sample.height))
        palette = montage.quantize(colors=255, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        images = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in rgb]
        path = Path(path)
        images[0].save(path, format="GIF", save_all=True, append_images=images[1:],
                       duration=int(round(1000 / fps)), loop=0, optimize=False)
        return path


def _answered_by(events: list) -> dict[int, E.RequestReceived]:
    """StateChanged seq -> the held request whose answer follows it at the same instant: a held
    ShareFetch acquires its records when it is answered, after its RequestReceived is long past."""
    asked: dict[tuple, E.RequestReceived] = {}
    out: dict[int, E.RequestReceived] = {}
    pending: list[E.StateChanged] = []
    for ev in events:
        if isinstance(ev, E.RequestReceived):
            asked[(ev.broker, ev.client, ev.correlation_id)] = ev
            pending = []
        elif isinstance(ev, E.StateChanged) and ev.machine == MACHINE and ev.cause in ACQUIRE_CAUSES:
            pending = [p for p in pending if p.t == ev.t] + [ev]
        elif isinstance(ev, E.ResponseSent):
            req = asked.pop((ev.broker, ev.client, ev.correlation_id), None)
            if req is not None and req.t != ev.t:
                out.update((p.seq, req) for p in pending if p.t == ev.t)
            pending = []
    return out


C_PROPOSED_TEXT = "#553c9a"


def record_strip(events, *, group: str | None = None, topic: str | None = None, partition: int | None = None,
                 by: str = "request", show_proposed: bool | None = None, title: str | None = None,
                 t0: int = 0, client_ids: Mapping[str, str] | None = None) -> RecordStrip:
    """The record strip of the share partitions in `events` (a list, or anything with .events),
    optionally only one share group / topic / partition. t0: the run's start in the events'
    clock (captions say times from it). client_ids: connection -> client.id beyond what the events
    say (a live Cluster.client_ids). See the module docstring."""
    return RecordStrip(events, group=group, topic=topic, partition=partition, by=by,
                       show_proposed=show_proposed, title=title, t0=t0, client_ids=client_ids)


def share_state_diagrams(**kw):
    """(released Kafka, with KIP-1289): state_diagram of the share-record table with
    show_proposed=False and True -- the side-by-side of the notebook. kw go to state_diagram
    (current=, taken=, rankdir=...)."""
    return (state_diagram(sr.TABLE, show_proposed=False, **kw), state_diagram(sr.TABLE, show_proposed=True, **kw))


def _cell_ops(ops: list[tuple], c: dict, x: float, top: float, spso: int) -> None:
    """One offset's cell: its offset above, its state colours (faded below the SPSO, hatched when
    proposed), state, delivery count and lock owner."""
    ops.append(("text", x + CELL_W / 2, top - 4, f"@{c['offset']}", FS_SMALL, "middle", C_MUTED, False))
    st = c["state"]
    fill, stroke, tcol = STATE_COLORS.get(st, NOT_FETCHED) if st else NOT_FETCHED
    if st is not None and c["offset"] < spso:
        fill, stroke, tcol = _mix(fill, FADE), _mix(stroke, FADE), _mix(tcol, FADE)
    hatched = st in PROPOSED_STATES
    dashed = st is None or hatched
    if c["changed"]:
        stroke = C_CHANGED
    if c.get("missed"):
        stroke, dashed = C_MISSED, True
    ops.append(("rect", x, top, CELL_W, CELL_H, fill, stroke, 3 if c["changed"] or c.get("missed") else 1.5,
                dashed, hatched))
    if st is None:
        ops.append(("text", x + CELL_W / 2, top + 32, "not fetched", FS_STATE, "middle", tcol, False))
        return
    halo = STATE_COLORS[st][0] if hatched else None     # readable over the hatching
    ops.append(("text", x + CELL_W / 2, top + 17, st, FS_STATE, "middle", tcol, True, halo))
    ops.append(("text", x + CELL_W / 2, top + 33, f"dc {c['delivery_count']}", FS_SMALL, "middle", tcol,
                False, halo))
    if c["owner"] or c["owner_client"]:
        who = c["owner_client"] or c["owner"]
        ops.append(("text", x + CELL_W / 2, top + 49, _fit(who, CELL_W - 6, 10), 10, "middle", tcol, False, halo))


def _legend_ops(ops: list[tuple], y: float, show_proposed: bool, missed: bool = False) -> float:
    """The legend under the lanes (the states, changed, not fetched); the y below it."""
    x = PAD
    items = [(s, s) for s in (sr.AVAILABLE, sr.ACQUIRED, sr.ACKNOWLEDGED, sr.ARCHIVED)]
    if show_proposed:
        items.append((sr.TX_PENDING, f"{sr.TX_PENDING} — {PROPOSED_LEGEND}"))
    for st, label in items:
        fill, stroke, _ = STATE_COLORS[st]
        hatched = st in PROPOSED_STATES
        ops.append(("rect", x, y, 18, 14, fill, stroke, 1.5, hatched, hatched))
        ops.append(("text", x + 24, y + 11, label, FS_SMALL, "start", C_PROPOSED_TEXT if hatched else C_TEXT, False))
        x += 24 + int(len(label) * 7.4) + 14
    y += 22
    x = PAD
    ops.append(("rect", x, y, 18, 14, "#ffffff", C_CHANGED, 3, False, False))
    ops.append(("text", x + 24, y + 11, "changed in this step", FS_SMALL, "start", C_TEXT, False))
    x += 160
    ops.append(("rect", x, y, 18, 14, *NOT_FETCHED[:2], 1.5, True, False))
    ops.append(("text", x + 24, y + 11, "not fetched yet", FS_SMALL, "start", C_TEXT, False))
    x += 130
    if missed:
        ops.append(("rect", x, y, 18, 14, "#ffffff", C_MISSED, 3, True, False))
        ops.append(("text", x + 24, y + 11, "a marker resolved nothing", FS_SMALL, "start", C_TEXT, False))
        y += 22
        x = PAD
    ops.append(("text", x, y + 11, "dc = delivery count · name = lock owner · faded = below the SPSO",
                FS_SMALL, "start", C_MUTED, False))
    y += 14 + PAD
    return y


# ---- helpers -----------------------------------------------------------------------------------------------
# what moved records when no request did (causes of the share-record table and the model's faults)
_TRIGGERS = {"lock-expired": "the acquisition lock expired", "lock-expired-at-limit": "the acquisition lock expired",
             "state-reloaded": "state reloaded after a broker restart",
             "member-left": "the member left (session timeout or leave)",
             "member-left-at-limit": "the member left (session timeout or leave)",
             "txn-abort": "an ABORT marker", "txn-commit-accept": "a COMMIT marker", "txn-commit-reject": "a COMMIT marker"}


def _caption(f: dict, n: int, t0: int = 0) -> str:
    req = f["request"]
    head = f"{f['index'] + 1}/{n} · t={f['t'] - t0} ms · "
    if f.get("marker"):
        return head + f["marker"]
    if req is not None:
        m = req.get("member") or ""
        member = f" (member {m[:8]}{'…' if len(m) > 8 else ''})" if m else ""
        head += f"{req['api']} v{req['version']} from {req['client']}{member}"
    else:
        causes = {c["cause"] for c in f["changes"]}
        head += "no request: " + ("; ".join(sorted({_TRIGGERS[c] for c in causes if c in _TRIGGERS}))
                                  or "a coordinator-internal step")
    lines = [head]
    summary: dict[tuple, list[int]] = {}
    for c in f["changes"]:
        summary.setdefault((c["lane"], c["cause"], c["from"], c["to"], c["status"]), []).append(c["offset"])
    multi = len({c["lane"] for c in f["changes"]}) > 1
    for (lane, cause, a, b, status), offs in summary.items():
        tag = f" [{PROPOSED_LEGEND}]" if status == "proposed" else ""
        where = f"{lane} " if multi else ""
        lines.append(f"{cause}{tag}: {where}{_ranges(offs)} {a} → {b}")
    spso = [f"{ln['lane']} {ln['spso_before']} → {ln['spso']}" for ln in f["lanes"] if ln["spso"] != ln["spso_before"]]
    if spso:
        lines.append("SPSO advanced: " + " · ".join(spso))
    return "\n".join(lines)


def _missed(note, wanted, bounds: dict) -> dict[str, set[int]]:
    """{lane: offsets} a KIP-1289 marker left TX_PENDING (a MarkerUnreached, kipviz.broker.share_txn),
    for the lanes this strip draws."""
    out: dict[str, set[int]] = {}
    for u in note.unreached:
        lane = f"{u.group}/{u.topic}-{u.partition}"
        if wanted(u.group, u.topic, u.partition) and lane in bounds:
            out.setdefault(lane, set()).update(u.offsets)
    return {ln: offs for ln, offs in out.items() if offs}


_UNREACHED = {"not-colocated": "broker {b} does not lead {tp} (broker {leader} does): the KIP's hook resolves "
                                "only the share partitions of the broker the marker reaches",
              "leader-change": "{state}'s leader changed since the staging: broker {b} does not hold the "
                               "TX_PENDING of {tp} (corner case 12)"}


def _marker_of(note, missed: dict) -> str:
    """The caption of a marker frame: where the marker went and which records it left TX_PENDING."""
    state = f"__share_group_state-{note.partition}"
    lines = [f"{note.marker} marker on {state} reached broker {note.broker} and resolved nothing [{PROPOSED_LEGEND}]"]
    for u in note.unreached:
        lane = f"{u.group}/{u.topic}-{u.partition}"
        if lane in missed:
            why = _UNREACHED.get(u.reason, "broker {b} holds no staging of {tp}")
            lines.append(why.format(b=note.broker, tp=f"{u.topic}-{u.partition}", leader=u.leader, state=state))
            lines.append(f"{_ranges(missed[lane])} stay TX_PENDING (dashed red) until their lock expires")
    return "\n".join(lines)


def _fit(text: str, width: float, size: float) -> str:
    """`text` cut with an ellipsis to about `width` px at `size` (Helvetica: ~0.56 em a character)."""
    n = max(3, int(width / (size * 0.56)))
    return text if len(text) <= n else text[:n - 1] + "…"


def _wrap_svg(caption: str, width: int) -> list[str]:
    class _Est:   # Helvetica averages a little over half an em
        @staticmethod
        def getlength(s: str) -> float:
            return len(s) * FS * 0.56
    return wrap_caption(caption, width, _Est)


def _x(s) -> str:
    return svg_text(s)


def _hatch(d, box, color, width) -> None:
    x0, y0, x1, y1 = box
    step = max(6, (x1 - x0) // 8)
    for k in range(-(y1 - y0), x1 - x0, step):
        # the line x - x0 = k + (y1 - y), clipped to the box
        pts = []
        for y in (y1, y0):
            x = x0 + k + (y1 - y)
            pts.append((x, y))
        (ax, ay), (bx, by) = pts
        if ax < x0:
            ay -= x0 - ax
            ax = x0
        if bx > x1:
            by += bx - x1
            bx = x1
        if ax <= bx:
            d.line([(ax, ay), (bx, by)], fill=color, width=width)


def _dashed_rect(d, box, color, width, dash=5, gap=3) -> None:
    x0, y0, x1, y1 = box
    for (ax, ay, bx, by) in ((x0, y0, x1, y0), (x1, y0, x1, y1), (x1, y1, x0, y1), (x0, y1, x0, y0)):
        length = abs(bx - ax) + abs(by - ay)
        dx, dy = (bx - ax) / (length or 1), (by - ay) / (length or 1)
        p = 0
        while p < length:
            q = min(p + dash, length)
            d.line([(ax + dx * p, ay + dy * p), (ax + dx * q, ay + dy * q)], fill=color, width=width)
            p = q + gap
