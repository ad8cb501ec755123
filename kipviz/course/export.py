"""`kipviz export`: the notebooks, run, as a static HTML site that needs neither a kernel nor the
internet to view: every script and style is inline, images are embedded, and widgets become HTML
drawn from their saved state (animation players keep playing: kipviz.course.export_widgets). Each
exercise's outcome stays folded under one line until clicked, as in JupyterLab before the answer
(kipviz.course.reveal; KIPVIZ_SHOW_OUTCOMES=1 exports them unfolded, for a host's copy).

    from kipviz.course.export import export_site
    site = export_site("notebooks", "site")              # runs each notebook, writes site/*.html
    site = export_site(["run/03_topic_ids.ipynb"], "site", execute=False)   # already-run notebooks
"""
from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KipvizError
from . import outlines as course
from .export_widgets import static_widgets
from .reveal import fold_notebook
from .runner import MB, Memory, read_notebook, run_notebook

__all__ = ["Page", "Site", "export_site", "notebook_html", "external_refs", "find_notebooks"]

# lab's page without the pieces it would fetch from a CDN (require.js, MathJax, mermaid, the
# widget manager): widgets are already static HTML when this template sees them.
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""

_INDEX_CSS = """body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.35em .7em;text-align:left;
vertical-align:top}th{background:#f4f4f4}tfoot td{font-weight:bold}.note{color:#555}"""


@dataclass
class Page:
    """One exported notebook page: its name, file, whether it ran, and how long it took."""
    name: str
    path: Path
    executed: bool
    seconds: float = 0.0
    memory: Memory | None = None


@dataclass
class Site:
    """An exported course site: its folder, index page and pages."""
    out: Path
    index: Path
    pages: list[Page] = field(default_factory=list)


def find_notebooks(sources, only=()) -> list[Path]:
    """The .ipynb files named by `sources` (files or folders), narrowed to those whose name contains
    one of `only` ("03", "topic_ids"); each pattern must match something."""
    if isinstance(sources, (str, Path)):
        sources = [sources]
    found: list[Path] = []
    for src in map(Path, sources):
        if src.is_dir():
            found += sorted(p for p in src.glob("*.ipynb") if not p.name.startswith("."))
        elif src.is_file() and src.suffix == ".ipynb":
            found.append(src)
        elif src.exists():
            raise KipvizError(f"{src} is not a notebook (.ipynb) or a folder")
        else:
            raise KipvizError(f"no such notebook or folder: {src}")
    if not found:
        raise KipvizError("no notebooks (.ipynb) in " + ", ".join(map(str, sources)))
    names = {p.stem for p in found}
    if len(names) != len(found):
        raise KipvizError("two notebooks have the same name; export them to different folders")
    return _narrow(found, only) if only else found


def _narrow(found: list[Path], only) -> list[Path]:
    """The notebooks whose name contains one of `only`; each pattern must match something."""
    missing = [o for o in only if not any(o in p.stem for p in found)]
    if missing:
        raise KipvizError(f"no notebook matches {', '.join(map(repr, missing))}; notebooks: "
                          + ", ".join(p.stem for p in found))
    return [p for p in found if any(o in p.stem for o in only)]


_EXTERNAL = [
    re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']?([^\"'\s>]+)", re.I),
    re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?([^\"'\s>]+)", re.I),
    re.compile(r"@import\s+(?:url\()?\s*[\"']?([^\"')\s;]+)", re.I),
    re.compile(r"url\(\s*[\"']?((?:https?:)?//[^\"')\s]+)", re.I),
    re.compile(r"\bimport\s*\(\s*[\"']((?:https?:)?//[^\"']+)", re.I),
    re.compile(r"<(?:img|iframe|embed|source)\b[^>]*\bsrc\s*=\s*[\"']?((?:https?:)?//[^\"'\s>]+)", re.I),
]


def external_refs(page: str) -> list[str]:
    """Everything `page` would load from elsewhere: script/stylesheet files, @import, url(),
    dynamic imports and images from the network. An empty list means it views offline."""
    return [m.group(1) for rx in _EXTERNAL for m in rx.finditer(page)]


def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    return HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"kipviz-static.html.j2": _TEMPLATE})],
                        template_file="kipviz-static.html.j2", embed_images=True)


def notebook_html(nb, *, title: str, names: set[str] = frozenset(), exporter=None) -> str:
    """One run notebook as a self-contained page. `names`: the other pages of the site, so that a
    link to "03_topic_ids.ipynb" becomes "03_topic_ids.html". Outcome cells start folded (reveal)."""
    nb = static_widgets(fold_notebook(nb))
    nb.metadata["title"] = title
    page, _ = (exporter or _exporter()).from_notebook_node(nb)

    def relink(m):
        return f'href="{m.group(1)}.html' if m.group(1) in names else m.group(0)
    return re.sub(r'href="(?:\./)?([0-9][0-9A-Za-z_.-]*)\.ipynb', relink, page)


def _ran(nb) -> bool:
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    return not cells or any(c.get("execution_count") or c.get("outputs") for c in cells)


def _index_page(outlines, pages: list[Page]) -> str:
    table = course.Contents(outlines, link_suffix=".html")._repr_html_()
    runs = [p for p in pages if p.executed]
    note = (f"Run by kipviz export: {sum(p.seconds for p in runs):.0f} s in all." if runs else
            "Exported from notebooks that were already run.")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>kipviz notebooks</title>\n<style>{_INDEX_CSS}</style>\n</head>\n<body>\n"
            "<h1>kipviz notebooks</h1>\n<p>Apache Kafka's wire protocol and coordinators, notebook by notebook. "
            "Every page was produced by running the notebook; animations play in the browser.</p>\n"
            f"{table}\n<p class=\"note\">{html.escape(note)}</p>\n</body>\n</html>\n")


def export_site(sources="notebooks", out="site", *, execute: bool = True, only=(), timeout: int = 600,
                progress: bool = True, env: dict | None = None) -> Site:
    """Write one HTML page per notebook and an index.html into `out`. With `execute`, each notebook
    runs first (a fresh kernel in its own folder); without, notebooks are taken as they are."""
    from tqdm.auto import tqdm

    paths = find_notebooks(sources, only)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise KipvizError(f"{out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    names = {p.stem for p in paths}
    exporter = _exporter()
    site = Site(out=out, index=out / "index.html")
    outlines = []
    bar = tqdm(paths, desc="export", unit="notebook", disable=not progress, file=sys.stderr)
    for path in bar:
        bar.set_postfix_str(path.stem)
        if execute:
            run = run_notebook(path, timeout=timeout, env=env)
            nb, page = run.nb, Page(path.stem, out / f"{path.stem}.html", True, run.seconds, run.memory)
            if progress:
                tqdm.write(f"{path.stem}: {run.seconds:.0f} s, peak memory {run.memory.peak / MB:.0f} MB",
                           file=sys.stderr)
        else:
            nb = read_notebook(path)
            page = Page(path.stem, out / f"{path.stem}.html", False)
            if not _ran(nb) and progress:
                tqdm.write(f"{path.stem}: not run (no outputs); exported as it is", file=sys.stderr)
        outlines.append(course.outline(path))
        title = outlines[-1].title or path.stem
        page.path.write_text(notebook_html(nb, title=title, names=names, exporter=exporter), encoding="utf-8")
        site.pages.append(page)
    site.index.write_text(_index_page(outlines, site.pages), encoding="utf-8")
    return site
