"""Turn kipviz pictures (graphviz graphs) into SVG, PNG or standalone HTML.

    to_svg(graph) -> str              the picture as SVG text (what notebooks display)
    to_png(graph) -> bytes
    to_html(svg_or_graph, title="…")  one HTML file, SVG inline, no external resources
    save(graph, "picture.svg")        format chosen by the suffix: .svg, .png or .html

All of them need graphviz's `dot` program; DotNotFoundError says how to get it. In the browser kit
(Pyodide, kipviz lite) SVG comes from Graphviz compiled to WebAssembly instead (draw/wasm.py): the
same DOT, laid out in the page; that choice is made here, in _pipe, for every picture."""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import graphviz

from ..errors import KipvizError
from . import wasm

__all__ = ["to_svg", "to_png", "to_html", "save", "DotNotFoundError", "dot_available", "fit_width", "layout_size",
           "FIT_PX", "MIN_SCALE"]

INSTALL_HINT = ("kipviz draws its pictures with graphviz's `dot` program, which was not found on PATH. "
                "`make lab` (or `make setup`) provides it; otherwise install it yourself: "
                "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
                "or `pip install graphviz-pure` and link its `graphviz-pure` script as `dot` on PATH.")


class DotNotFoundError(KipvizError, RuntimeError):
    """graphviz's `dot` executable is missing."""

    def __init__(self, message: str = INSTALL_HINT):
        super().__init__(message)


def dot_available() -> bool:
    """Whether graphviz pictures can be drawn: the `dot` program, or graphviz in the browser."""
    return shutil.which("dot") is not None or wasm.available()


def prepare() -> None:
    """Start the renderer ahead of the first picture where that takes a while (the browser's)."""
    wasm.prepare()


def _pipe(graph, fmt: str) -> bytes:
    if wasm.available():
        return wasm.render(graph if isinstance(graph, str) else graph.source, fmt)
    if isinstance(graph, str):
        graph = graphviz.Source(graph)
    try:
        return graph.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise DotNotFoundError() from None
    except graphviz.CalledProcessError as e:
        err = (e.stderr or b"").decode("utf-8", "replace").strip()
        raise KipvizError(f"graphviz `dot -T{fmt}` failed: {err or e}") from None


# A notebook's output area in JupyterLab 4.6 at 1280 px, the file browser open (and the right side
# bar's tabs), is 848 px wide (measured in Chromium, 2026-11-29); an image/svg+xml output's box in
# nbconvert's lab template is 12 px narrower (836). A picture wider than FIT_PX is drawn FIT_PX wide
# (its viewBox keeps the proportions) instead of being cut at the right: JupyterLab shows an
# image/svg+xml output as an <img> at the SVG's own size, so the size must be in the SVG (a
# percentage would depend on the container). The diagrams keep their smallest text (10 pt) at
# MIN_SCALE or more of its size by laying out narrower where they can (machines.state_diagram's
# rankdir="auto").
FIT_PX = 830
MIN_SCALE = 0.6
_SIZE = re.compile(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"')


def fit_width(svg: str, max_px: float = FIT_PX) -> str:
    """svg drawn max_px wide when it is wider (graphviz writes sizes in pt: 1 pt = 4/3 px; the
    viewBox it writes keeps the drawing whole); a narrower picture keeps its size."""
    m = _SIZE.search(svg)
    if m is None or float(m.group(1)) * 4 / 3 <= max_px:
        return svg
    w, h = float(m.group(1)) * 4 / 3, float(m.group(2)) * 4 / 3
    return svg[:m.start()] + f'<svg width="{max_px:.0f}px" height="{h * max_px / w:.0f}px"' + svg[m.end():]


def to_svg(graph, *, fit: bool = True) -> str:
    """SVG text for a graphviz graph (a Digraph, or DOT source text); fit: scaled to its container's
    width when wider than FIT_PX (fit_width)."""
    svg = _pipe(graph, "svg").decode("utf-8")
    return fit_width(svg) if fit else svg


def layout_size(graph) -> tuple[float, float]:
    """(width, height) in px of graph as dot lays it out (its `plain` output: inches)."""
    first = _pipe(graph, "plain").split(b"\n", 1)[0].split()
    return float(first[2]) * 96, float(first[3]) * 96


def layout_json(graph) -> dict:
    """graph as dot lays it out: its `json` output (xdot drawing operations of every object), parsed."""
    return json.loads(_pipe(graph, "json"))


def to_png(graph) -> bytes:
    """A graphviz graph as PNG bytes (needs `dot`)."""
    return _pipe(graph, "png")


_PROLOG = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?(<!--.*?-->\s*)*", re.S)


def inline_svg(svg: str) -> str:
    """An SVG document as an element to put inside HTML: its XML prolog, DOCTYPE and leading comments cut."""
    return _PROLOG.sub("", svg, count=1)


def to_html(svg_or_graph, title: str = "kipviz") -> str:
    """A standalone HTML page: the picture's SVG inline, styles inline, nothing fetched."""
    svg = svg_or_graph if isinstance(svg_or_graph, str) and svg_or_graph.lstrip().startswith(("<svg", "<?xml", "<!DOCTYPE")) \
        else to_svg(svg_or_graph)
    t = html.escape(title)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{t}</title>\n<style>body{{font-family:Helvetica,Arial,sans-serif;margin:1.5em;"
            "background:#fff;color:#222}h1{font-size:1.2em}svg{max-width:100%;height:auto}</style>\n"
            f"</head>\n<body>\n<h1>{t}</h1>\n{inline_svg(svg)}\n</body>\n</html>\n")


def save(graph, path, *, title: str | None = None) -> Path:
    """Write the picture to `path`; the suffix picks the format (.svg, .png, .html).

    `graph` is a graphviz graph or DOT source; SVG text is accepted for .svg and .html."""
    path = Path(path)
    suffix = path.suffix.lower()
    is_svg = isinstance(graph, str) and graph.lstrip().startswith(("<svg", "<?xml", "<!DOCTYPE"))
    if suffix == ".svg":
        path.write_text(graph if is_svg else to_svg(graph), encoding="utf-8")
    elif suffix == ".png":
        if is_svg:
            raise ValueError("PNG needs the graph (or DOT source), not SVG text")
        path.write_bytes(to_png(graph))
    elif suffix in (".html", ".htm"):
        path.write_text(to_html(graph, title=title or path.stem), encoding="utf-8")
    else:
        raise ValueError(f"cannot tell the format from {path.name!r}: use a .svg, .png or .html suffix")
    return path


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def svg_text(s) -> str:
    """Text for SVG or HTML: escaped, and characters XML cannot hold shown as U+FFFD."""
    return html.escape(_NOT_XML.sub("\ufffd", str(s)), quote=True)


def halo(color: str = "white", width: float = 3, *, round_joins: bool = False) -> str:
    """A <text>'s attributes for an outline painted under its letters (paint-order="stroke"): the
    text reads over a line or hatching it crosses, which shows again either side of it."""
    return (f' stroke="{color}" stroke-width="{width}"' + (' stroke-linejoin="round"' if round_joins else "")
            + ' paint-order="stroke"')


def label_text(s) -> str:
    """Text for a graphviz HTML-like label: escaped; characters XML cannot hold shown as U+FFFD;
    a "]" right after a tag as an entity (graphviz 2.43's DOT scanner fails on ">]" inside a label);
    whitespace-only text as no-break spaces (graphviz rejects e.g. a lone newline between tags)."""
    text = svg_text(s)
    if text and text.isspace() and text != " ":
        text = "&#160;" * len(text)
    return "&#93;" + text[1:] if text.startswith("]") else text
