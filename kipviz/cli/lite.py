"""`kipviz lite [-o SITE] [--notebooks DIR]`: the browser kit, a JupyterLite site of the notebooks
that run without Spark or a socket (kipviz.lite.site.build_site, what `make lite` runs). Built from
PyPI and npm (downloads cached: KIPVIZ_LITE_CACHE, default ~/.cache/kipviz-lite); the site then
works offline from any static host: `python -m http.server -d SITE`. Prints a line per step on
stderr; exit 0, or 2 with one line (a registry out of reach, a package it does not have, a
notebook whose Spark cells cannot run here to save their output)."""
from __future__ import annotations

import sys
from pathlib import Path


def cmd_lite(args) -> int:
    """`kipviz lite`: build the JupyterLite site that runs the notebooks in the browser."""
    from ..lite.site import build_site
    site = build_site(args.output, sources=Path(args.notebooks) if args.notebooks else None,
                      progress=None if not args.quiet else (lambda line: None))
    print(f"serve it: python -m http.server -d {args.output}   (then open http://localhost:8000/)", file=sys.stderr)
    return 0 if site.notebooks else 2


def add_lite(sub) -> None:
    """Add the `lite` command to the parser's sub-commands."""
    p = sub.add_parser("lite", help="the notebooks as a JupyterLite site that runs in the browser with no server "
                                    "(Pyodide; built from PyPI and npm, then works offline)")
    p.add_argument("-o", "--output", default="site", metavar="DIR",
                   help="folder to write (default: site); a previous site there is replaced")
    p.add_argument("--notebooks", metavar="DIR", help="the notebooks' folder (default: the kit's notebooks/)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_lite)
