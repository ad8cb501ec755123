"""The browser kit's kernel side (Pyodide, in the site kipviz.lite builds): an IPython extension that
the kernel's profile loads at start (kipviz_site_data/ipython).

    %%needs spark        (the site's copy of a cell tagged kipviz={"needs": "spark"})
    <the cell's code>

does not run the code: it says in one line what the cell needs, then shows the output the desktop
kit gave this code when the site was built (kipviz_site_data/saved.json). It also starts the
in-page Graphviz (kipviz.draw.render.prepare), so that it is ready by the first picture."""
from __future__ import annotations

import json
import sys
from functools import cache

__all__ = ["load_ipython_extension", "needs", "WHAT"]

WHAT = {"spark": "Spark (a Java VM)", "socket": "a network socket (a live server)"}


@cache
def _saved() -> dict:
    from importlib.resources import files
    try:
        return json.loads(files("kipviz_site_data").joinpath("saved.json").read_text())
    except (ModuleNotFoundError, FileNotFoundError):
        return {}


def _show(outputs: list[dict]) -> None:
    from IPython.display import publish_display_data
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            text = o.get("text", "")
            (sys.stderr if o.get("name") == "stderr" else sys.stdout).write("".join(text) if isinstance(text, list)
                                                                          else text)
        elif kind in ("display_data", "execute_result"):
            data = {k: "".join(v) if isinstance(v, list) else v for k, v in o.get("data", {}).items()}
            publish_display_data(data, o.get("metadata") or {})


def needs(line: str, cell: str) -> None:
    """The %%needs cell magic: say what a cell needs that the browser kit lacks, and show its saved output."""
    from .notebooks import cell_key
    what = line.strip() or "spark"
    saved = _saved().get(cell_key(cell))
    head = f"This cell needs {WHAT.get(what, what)}, which the browser kit does not have: "
    if saved is None:
        print(head + "the desktop kit's output is saved only for the cell as it was written (run it there).")
        return
    print(head + "below is what the desktop kit shows (saved when this site was built).")
    _show(saved)


def load_ipython_extension(ip) -> None:
    """Register %%needs and start the browser's graphviz (`%load_ext kipviz.lite.runtime`)."""
    ip.register_magic_function(needs, magic_kind="cell", magic_name="needs")
    from ..draw import render
    render.prepare()
