"""Which notebooks go in the browser site, and what its copies add.

A code cell that needs Spark or a socket carries the tag `kipviz={"needs": "spark"}` (or "socket")
in its source's cell header (notebooks/src/*.py). The site's copy of the notebook is the same file
with `%%needs spark` put above that cell's code: in the browser that cell magic
(kipviz.lite.runtime) says so in one line and shows the desktop kit's output, which the build takes
from a run of the notebook here (saved_outputs) and ships in kipviz-site-data.

    site_notebooks()                    the kit's notebooks minus EXCLUDED
    saved_outputs(paths)                {cell_key(code): [outputs]}, cached by notebook and kit source
    write_site_notebooks(paths, folder) the site's copies"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .fetch import LiteBuildError, cache_dir

__all__ = ["EXCLUDED", "NEEDS", "site_notebooks", "needs", "cell_key", "saved_outputs", "write_site_notebooks"]

KIT = Path(__file__).resolve().parents[2]
# notebooks that are about Spark or a live server from start to end: nothing in them runs in a browser
EXCLUDED = {"07_spark_log_analysis": "Spark's log analyses, every cell",
            "09_live_cluster": "real Kafka clients against kipviz serve on sockets",
            "10_your_own_traffic": "its sections build on a recording of real clients through kipviz serve on sockets"}
NEEDS = ("spark", "socket")


def site_notebooks(sources: Path | None = None) -> list[Path]:
    """The course notebooks the browser site carries; LiteBuildError when there are none."""
    folder = Path(sources) if sources else KIT / "notebooks"
    paths = [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) if p.stem not in EXCLUDED]
    if not paths:
        raise LiteBuildError(f"no notebooks in {folder}")
    return paths


def needs(cell) -> str | None:
    """What a code cell needs that the browser does not have ("spark", "socket"), from its tag."""
    what = (cell.get("metadata", {}).get("kipviz") or {}).get("needs") if cell.get("cell_type") == "code" else None
    if what is not None and what not in NEEDS:
        raise LiteBuildError(f"a cell's kipviz.needs is {what!r}; expected one of {', '.join(NEEDS)}")
    return what


def cell_key(code: str) -> str:
    """The key of a cell's saved outputs: its code (as the magic receives it: stripped) hashed."""
    return hashlib.sha256(code.strip().encode()).hexdigest()[:32]


def _source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def _kit_digest() -> str:
    """A hash of the kit's source (the site builder's own, kipviz/lite/, aside: it changes no output)."""
    h = hashlib.sha256()
    builder = KIT / "kipviz" / "lite"
    for p in sorted((KIT / "kipviz").rglob("*")):
        if p.suffix in (".py", ".json", ".properties") and "__pycache__" not in p.parts and builder not in p.parents:
            h.update(str(p.relative_to(KIT)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def saved_outputs(paths: list[Path], *, timeout: int = 600) -> dict[str, list]:
    """The outputs of every tagged cell, from a run of its notebook with the desktop kit (cached: a
    notebook runs again when it or the kit's source changes)."""
    from ..course.runner import read_notebook, run_notebook
    out: dict[str, list] = {}
    kit = _kit_digest()
    folder = cache_dir() / "saved"
    folder.mkdir(exist_ok=True)
    for path in paths:
        nb = read_notebook(path)
        if not any(needs(c) for c in nb.cells):
            continue
        cached = folder / f"{path.stem}-{hashlib.sha256(path.read_bytes() + kit.encode()).hexdigest()[:20]}.json"
        if not cached.exists():
            try:
                ran = run_notebook(path, timeout=timeout, measure=False).nb
            except Exception as e:
                raise LiteBuildError(f"cannot save the desktop outputs of {path.name} (its Spark cells run "
                                     f"here, with Java 17+): {' '.join(str(e).split())}") from None
            got = {cell_key(_source(c)): [dict(o) for o in c.get("outputs", [])] for c in ran.cells if needs(c)}
            for old in folder.glob(f"{path.stem}-*.json"):
                old.unlink()
            cached.write_text(json.dumps(got))
        out.update(json.loads(cached.read_text()))
    return out


def write_site_notebooks(paths: list[Path], folder: Path) -> None:
    """Copy the notebooks into `folder`, marking each cell the browser kit cannot run (%%needs)."""
    import nbformat
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            what = needs(cell)
            if what:
                cell.source = f"%%needs {what}\n" + _source(cell)
        nbformat.write(nb, folder / path.name)
