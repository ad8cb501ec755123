"""DOT laid out in the browser kit (Pyodide, no `dot` program): Graphviz compiled to WebAssembly
(npm's @viz-js/viz), run in the kernel's own worker. KIPVIZ_GRAPHVIZ_JS names its script (the site
kipviz.lite builds ships it in kipviz_site_data and sets the variable).

    available()            in Pyodide, with the script named
    prepare()              start it (WebAssembly compiles asynchronously); the kernel does this at start
    render(dot, "svg")     the output as bytes, as `dot -Tsvg` gives it ("svg", "plain" and "json" only)

A picture drawn before the start has finished waits for it where the browser lets Python wait for a
promise (WebAssembly JS Promise Integration: Chromium 137+); elsewhere it asks to run the cell again."""
from __future__ import annotations

import os
import sys

from ..errors import KipvizError

__all__ = ["available", "prepare", "render", "FORMATS"]

FORMATS = ("svg", "plain", "json")
_state: dict = {"viz": None, "promise": None}


def available() -> bool:
    """Whether graphviz runs in the browser here (Pyodide, with the kit's graphviz script)."""
    return sys.platform == "emscripten" and bool(os.environ.get("KIPVIZ_GRAPHVIZ_JS"))


def prepare() -> None:
    """Start loading the browser's graphviz ahead of the first picture (once)."""
    if not available() or _state["promise"] is not None:
        return
    import js
    from pyodide.code import run_js
    from pyodide.ffi import create_once_callable
    with open(os.environ["KIPVIZ_GRAPHVIZ_JS"], encoding="utf-8") as fh:
        run_js(fh.read())                                # defines globalThis.Viz
    promise = js.Viz.instance()
    promise.then(create_once_callable(lambda viz: _state.update(viz=viz)))
    _state["promise"] = promise


def _viz():
    prepare()
    if _state["viz"] is None:
        from pyodide.ffi import can_run_sync, run_sync
        if not can_run_sync():
            raise KipvizError("the in-page Graphviz is still starting: run this cell again in a moment")
        _state["viz"] = run_sync(_state["promise"])
    return _state["viz"]


def render(source: str, fmt: str) -> bytes:
    """A DOT source drawn by the browser's graphviz, in one of FORMATS; KipvizError for another format."""
    if fmt not in FORMATS:
        raise KipvizError(f"the browser kit draws {', '.join(FORMATS)}; {fmt.upper()} needs graphviz's "
                          "`dot` program (the desktop kit)")
    import js
    from pyodide.ffi import to_js
    result = _viz().render(source, to_js({"format": fmt}, dict_converter=js.Object.fromEntries))
    if result.status != "success":
        errors = "; ".join(str(e.message).strip() for e in result.errors) or result.status
        raise KipvizError(f"Graphviz (in the page) failed: {errors}")
    return str(result.output).encode("utf-8")
