"""`kipviz export [NOTEBOOK|FOLDER ...] [-o SITE] [--only NAME ...] [--no-execute]`: the notebooks as a
static HTML site (kipviz.export). Prints one line per notebook (time, peak memory) under a progress
bar; exit 0, or 2 with one line on stderr (a notebook that fails names its cell)."""
from __future__ import annotations

import sys

from .errors import KipvizError


def cmd_export(args) -> int:
    from .export import export_site
    if args.timeout <= 0:
        raise KipvizError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    site = export_site(args.sources or ["notebooks"], args.output, execute=not args.no_execute,
                       only=tuple(args.only or ()), timeout=args.timeout, progress=not args.quiet)
    print(f"wrote {len(site.pages)} page(s) and {site.index}", file=sys.stderr)
    return 0


def add_export(sub) -> None:
    ex = sub.add_parser("export", help="the notebooks as a static HTML site (run, with outputs; animations play "
                                       "without a kernel; nothing fetched from the internet)")
    ex.add_argument("sources", nargs="*", metavar="NOTEBOOK",
                    help="notebooks or folders of notebooks (default: notebooks)")
    ex.add_argument("-o", "--output", default="site", metavar="DIR", help="folder to write (default: site)")
    ex.add_argument("--only", action="append", metavar="NAME",
                    help="only notebooks whose name contains NAME (e.g. 03 or topic_ids); repeatable")
    ex.add_argument("--no-execute", action="store_true",
                    help="take the notebooks as they are (already run, e.g. saved with widget state from "
                         "JupyterLab) instead of running each in a fresh kernel")
    ex.add_argument("--timeout", type=int, default=600, metavar="S", help="seconds one cell may take (default 600)")
    ex.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ex.set_defaults(func=cmd_export)
