"""`kipviz export [NOTEBOOK|FOLDER ...] [-o SITE] [--only NAME ...] [--no-execute]`: the notebooks as a
static HTML site (kipviz.course.export). Prints one line per notebook (time, peak memory) under a progress
bar; exit 0, or 2 with one line on stderr (a notebook that fails names its cell). Runs from any
directory: without a NOTEBOOK it exports the kit's own notebooks (the repository's notebooks/, next
to the kipviz package). A missing output folder is created; missing parents too, with a line saying so. SIGTERM
stops it with one line and exit status 143."""
from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from ..errors import KipvizError

# the repository's notebooks/ folder (kipviz installed editable, or run from a clone)
KIT_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"      # kipviz/cli/export.py -> the repo


def default_sources() -> list[Path]:
    """The kit's own notebooks folder; KipvizError when the package has none beside it."""
    if not KIT_NOTEBOOKS.is_dir():
        raise KipvizError(f"no notebooks folder next to the kipviz package ({KIT_NOTEBOOKS}); "
                          "name the notebooks or their folder: kipviz export PATH ...")
    return [KIT_NOTEBOOKS]


def prepare_output(output: str) -> Path:
    """The site folder: refuse a file; create a missing one, and say so when its parents were missing too."""
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise KipvizError(f"-o {output}: exists and is not a folder")
    if not out.exists():
        parents = [p for p in out.parents if not p.exists()]
        out.mkdir(parents=True)
        if parents:                          # `-o site` is the usual case; a new tree is worth a line
            print(f"kipviz export: created {out} and {len(parents)} missing parent folder(s)", file=sys.stderr)
    return out


class _Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread by the handler)."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def _stop(code: int) -> None:
    """One line, stop the kernels (and their JVMs) this export started, exit `code` at once: the export
    thread is mid-notebook, and unwinding it through nbclient prints screens of tracebacks."""
    print("kipviz: export stopped (SIGTERM); the site may be incomplete", file=sys.stderr)
    try:
        import psutil
        children = psutil.Process().children(recursive=True)
        for child in children:
            child.terminate()
        psutil.wait_procs(children, timeout=5)
    except Exception:                       # best effort: ipykernel also exits when its parent is gone
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def cmd_export(args) -> int:
    """`kipviz export`: the notebooks run and written as a static HTML site."""
    from ..course.export import export_site, find_notebooks
    if args.timeout <= 0:
        raise KipvizError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    sources = args.sources or default_sources()
    find_notebooks(sources, only=tuple(args.only or ()))      # bad sources or --only: one line, nothing created
    out = prepare_output(args.output)
    # The notebooks run in a worker thread: nbclient takes over SIGTERM/SIGINT only in the main thread
    # (its handler kills the kernel mid-cell), so here SIGTERM reaches _on_sigterm.
    result: dict = {}

    def work():
        try:
            result["site"] = export_site(sources, out, execute=not args.no_execute, only=tuple(args.only or ()),
                                         timeout=args.timeout, progress=not args.quiet)
        except BaseException as e:          # re-raised in the main thread: main() reports it
            result["error"] = e

    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        worker = threading.Thread(target=work, name="kipviz-export", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.2)
    except _Terminated:
        _stop(128 + signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if "error" in result:
        raise result["error"]
    site = result["site"]
    print(f"wrote {len(site.pages)} page(s) and {site.index}", file=sys.stderr)
    return 0


def add_export(sub) -> None:
    """Add the `export` command to the parser's sub-commands."""
    ex = sub.add_parser("export", help="the notebooks as a static HTML site (run, with outputs; animations play "
                                       "without a kernel; nothing fetched from the internet)")
    ex.add_argument("sources", nargs="*", metavar="NOTEBOOK",
                    help="notebooks or folders of notebooks (default: the kit's notebooks/, from any directory)")
    ex.add_argument("-o", "--output", default="site", metavar="DIR",
                    help="folder to write (default: site); created if missing, with its missing parents (said on stderr)")
    ex.add_argument("--only", action="append", metavar="NAME",
                    help="only notebooks whose name contains NAME (e.g. 03 or topic_ids); repeatable")
    ex.add_argument("--no-execute", action="store_true",
                    help="take the notebooks as they are (already run, e.g. saved with widget state from "
                         "JupyterLab) instead of running each in a fresh kernel")
    ex.add_argument("--timeout", type=int, default=600, metavar="S", help="seconds one cell may take (default 600)")
    ex.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ex.set_defaults(func=cmd_export)
