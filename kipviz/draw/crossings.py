"""Where a graphviz layout draws a line through text: read from dot's `json` output (xdot drawing
operations: text runs, Bézier edges, arrowheads, node outlines), so a layout can be chosen that has
none before it is ever shown (machines.auto_layout).

dot places each edge label beside its own edge but not clear of the others: in the classic-group
table drawn top to bottom, the edge Empty -> Dead enters Dead across the label of Dead's self-loop.
The browser check (tests/browser/fit.py) measures each letter's ink; this measures each text run's
box (cap height above the baseline, descenders below), so it is a little stricter."""
from __future__ import annotations

import math
from collections.abc import Iterator

__all__ = ["crossings", "graph_crossings"]

STEP_PT = 0.5            # strokes are sampled this finely (points): finer than any letter
INSET_PT = 0.5           # a stroke may touch a text's box; inside it by more crosses it
ASCENT, DESCENT = 0.73, 0.21       # Helvetica's cap height and descender, in font sizes

Box = tuple[float, float, float, float]          # x0, y0, x1, y1 (graphviz points, y up)


def _texts(obj: dict) -> Iterator[tuple[str, Box]]:
    size = 14.0
    for key in ("_ldraw_", "_hldraw_", "_tldraw_"):
        for op in obj.get(key, ()):
            if op["op"] == "F":
                size = op["size"]
            elif op["op"] == "T" and op["text"].strip():
                x, y = op["pt"]
                w = op["width"]
                x0 = {"l": x, "c": x - w / 2, "r": x - w}[op["align"]]
                yield op["text"], (x0, y - DESCENT * size, x0 + w, y + ASCENT * size)


def _line(a, b) -> Iterator[tuple[float, float]]:
    n = max(1, int(math.dist(a, b) / STEP_PT))
    for k in range(n + 1):
        t = k / n
        yield a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t


def _bezier(p) -> Iterator[tuple[float, float]]:
    n = max(2, int(sum(math.dist(p[k], p[k + 1]) for k in range(3)) / STEP_PT))
    for k in range(n + 1):
        t = k / n
        u = 1 - t
        a, b, c, d = u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t
        yield (a * p[0][0] + b * p[1][0] + c * p[2][0] + d * p[3][0],
               a * p[0][1] + b * p[1][1] + c * p[2][1] + d * p[3][1])


def _strokes(obj: dict) -> Iterator[tuple[float, float]]:
    """Points along what obj strokes: its edge's Bézier, its arrowheads, its node's outline."""
    for key in ("_draw_", "_hdraw_", "_tdraw_"):
        for op in obj.get(key, ()):
            kind = op["op"]
            if kind == "b":
                pts = op["points"]
                for i in range(0, len(pts) - 3, 3):
                    yield from _bezier(pts[i:i + 4])
            elif kind in "PpL":
                pts = op["points"] + ([op["points"][0]] if kind != "L" else [])
                for a, b in zip(pts, pts[1:], strict=False):
                    yield from _line(a, b)
            elif kind in "Ee":
                cx, cy, rx, ry = op["rect"]
                n = max(8, int(2 * math.pi * max(rx, ry) / STEP_PT))
                for k in range(n):
                    yield cx + rx * math.cos(2 * math.pi * k / n), cy + ry * math.sin(2 * math.pi * k / n)


def crossings(layout: dict) -> list[tuple[str, str]]:
    """(text, what crosses it) for every text run a stroke passes through, in a layout (dot -Tjson,
    parsed). A node's own outline is its label's box, not a crossing; the graph's own label counts."""
    objs = [layout, *layout.get("objects", ()), *layout.get("edges", ())]
    labels = [(k, text, box) for k, o in enumerate(objs) for text, box in _texts(o)]
    out = []
    for k, o in enumerate(objs[1:], 1):
        pts = list(_strokes(o))
        if not pts:
            continue
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        reach = (min(xs), min(ys), max(xs), max(ys))
        node = "tail" not in o
        for owner, text, (x0, y0, x1, y1) in labels:
            if node and owner == k:
                continue
            x0, y0, x1, y1 = x0 + INSET_PT, y0 + INSET_PT, x1 - INSET_PT, y1 - INSET_PT
            if reach[0] > x1 or reach[2] < x0 or reach[1] > y1 or reach[3] < y0:
                continue
            if any(x0 < x < x1 and y0 < y < y1 for x, y in pts):
                out.append((text, str(o.get("id") or o.get("name") or k)))
    return out


def graph_crossings(graph) -> list[tuple[str, str]]:
    """crossings() of a graphviz graph as dot lays it out."""
    from .render import layout_json
    return crossings(layout_json(graph))
