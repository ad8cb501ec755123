"""The browser kit (`kipviz lite`, issue 36) in Chromium with nothing behind it: the site is built the
way `make lite` builds it, served from 127.0.0.1 by `python -m http.server`, and opened in a fresh
Chromium whose every request not to 127.0.0.1 is aborted (and whose resolver knows no other host).
Each notebook in the site runs to the end with the exercises answered: no error output, the check
cells say Correct, every picture is SVG in the page (Graphviz in WebAssembly for the DOT ones), the
widgets work (an explorer's slider redraws, a player plays), the cells that need Spark say so in one
line and show the desktop kit's saved output; at the end, no request left 127.0.0.1.

KIPVIZ_LITE_SITE=DIR checks a site built before (by `make lite`) instead of building one.
The times measured (page open to notebook shown, kernel ready, first output, last cell done) and the
site's size go to tests/browser/artifacts/lite-times.json (README.md, "The browser kit")."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kipviz import cli
from kipviz.course.exercises import EXERCISES
from kipviz.lite import notebooks as lite_notebooks

from ..test_predictions import KNOWN
from . import folds, pages
from .conftest import ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS, _wait_until_answers, free_port

pytestmark = [pytest.mark.xdist_group("browser"), pytest.mark.slow]     # one worker: one notebook at a time

SITE_NOTEBOOKS = lite_notebooks.site_notebooks()
SITE_MAX_BYTES = 60_000_000
# 04's exercises take their expected answer from the notebook's own objects (workshop.md has them, and 03-3's)
# every exercise the test process can answer (folds.expected), so a new exercise is answered too
ANSWERS = {ex: a for ex in EXERCISES if (a := folds.expected(ex)) is not None} | KNOWN | {"03-3": "INCONSISTENT_TOPIC_ID", "04-1": "FENCED_MEMBER_EPOCH", "04-2": "ILLEGAL_GENERATION"}
# a cell that calls one of these (not in a def) shows a picture (SVG: to_svg's, the kit's own, or a widget's)
DRAWS = ("to_svg(", "sequence_svg(", "player(", "Explorer(", "regular_vs_share_flow(", "share_state_diagrams(",
         "saw(")
TIMES: dict[str, dict] = {}
OUTSIDE: list[str] = []


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if os.environ.get("KIPVIZ_LITE_SITE"):          # a site built before (`make lite`): check that one
        return Path(os.environ["KIPVIZ_LITE_SITE"])
    out = tmp_path_factory.mktemp("lite") / "site"
    t0 = time.monotonic()
    assert cli.main(["lite", "-o", str(out), "-q"]) == 0
    TIMES["build_s"] = round(time.monotonic() - t0, 1)
    return out


@pytest.fixture(scope="module")
def served(site):
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "lite-http.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                 "--directory", str(site)], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    server = type("Served", (), {"url": f"http://127.0.0.1:{port}", "proc": proc,
                                 "log_tail": lambda self: (ARTIFACTS / "lite-http.log").read_text()[-2000:]})()
    try:
        _wait_until_answers(server, "/", 30)
        yield server.url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _local(url: str, base: str) -> bool:
    return url.startswith((base + "/", "data:", "blob:", "about:"))


@pytest.fixture
def offline(served, playwright, tmp_path):
    """A fresh Chromium (its own new profile: each notebook is opened as by a first visitor) that
    reaches only the site: every other request is aborted and recorded, and the resolver maps every
    host name to nothing, so none could leave anyway."""
    ctx = playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True,
        args=[*CHROMIUM_FLAGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
        viewport={"width": 1400, "height": 1000}, ignore_default_args=["--enable-automation"])

    def route(r):
        if _local(r.request.url, served):
            r.continue_()
        else:
            OUTSIDE.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    ctx.on("request", lambda r: OUTSIDE.append(r.url) if not _local(r.url, served) else None)
    yield ctx
    ctx.close()


_CELLS = f"() => {pages._CURRENT}.content.model.toJSON().cells"
_ANSWER = f"""(answers) => {{
  const cells = {pages._CURRENT}.content.model.cells;
  let n = 0;
  for (let i = 0; i < cells.length; i++) {{
    const c = cells.get(i), id = (c.getMetadata('kipviz') || {{}}).exercise;
    if (id && id in answers) {{ c.sharedModel.setSource('answer = ' + answers[id]); n++; }}
  }}
  return n;
}}"""
# each code cell: whether its output area shows an SVG (inline, or as an <img> of one) or a PNG
_PICTURES = f"""() => [...{pages._CURRENT}.content.widgets].filter(w => w.model.type === 'code').map(w => ({{
  svg: w.node.querySelectorAll('.jp-OutputArea svg, .jp-OutputArea img[src^="data:image/svg"]').length,
  png: w.node.querySelectorAll('.jp-OutputArea img[src^="data:image/png"]').length}}))"""


def _py(value) -> str:
    return repr(value)


def _plays(page, player) -> None:
    """Play moves the player's frame slider on (read from the slider handle's aria-valuenow, which
    is there whether or not JupyterLab has painted that output yet); then pause."""
    player.scroll_into_view_if_needed()
    handle = player.locator(".widget-slider .noUi-handle").first
    before = float(handle.get_attribute("aria-valuenow"))
    player.locator(".widget-play button").first.click()
    page.wait_for_function("([h, v]) => parseFloat(h.getAttribute('aria-valuenow')) > v",
                           arg=[handle.element_handle(), before], timeout=30_000)
    player.locator(".widget-play button").first.click()


@pytest.mark.parametrize("path", SITE_NOTEBOOKS, ids=[p.name for p in SITE_NOTEBOOKS])
def test_notebook_runs_in_the_browser_kit(served, offline, path):
    page = offline.new_page()
    page.set_default_timeout(60_000)
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    t0 = time.monotonic()
    try:
        page.goto(f"{served}/lab/index.html?path={path.name}")
        page.wait_for_selector(".jp-NotebookPanel", timeout=120_000)
        shown = time.monotonic() - t0
        page.wait_for_function(
            f"() => {{ const w = {pages._CURRENT}; return w && w.context && w.context.path === {json.dumps(path.name)}"
            " && w.sessionContext.session?.kernel?.status === 'idle'; }", timeout=300_000)
        ready = time.monotonic() - t0
        answered = page.evaluate(_ANSWER, {k: _py(v) for k, v in ANSWERS.items()})
        pages.menu(page, "Run", "runmenu:run-all")
        page.wait_for_selector(".jp-OutputArea-output", timeout=300_000)
        first = time.monotonic() - t0
        page.wait_for_function(pages._RUN_DONE, timeout=pages.RUN_TIMEOUT_MS, polling=250)
        done = time.monotonic() - t0
        TIMES[path.stem] = {"shown_s": round(shown, 1), "kernel_ready_s": round(ready, 1),
                            "first_output_s": round(first, 1), "end_s": round(done, 1)}
        pages.screenshot(page, f"lite-{path.stem}")
        cells = page.evaluate(_CELLS)
        code = [c for c in cells if c["cell_type"] == "code"]
        errors = pages.error_outputs(cells)
        assert not errors, f"{path.name}: error output in the browser kit: {errors}"
        assert all(c["execution_count"] is not None for c in code if "".join(c["source"]).strip()), "a cell did not run"
        tracebacks = [c for c in code for o in c.get("outputs", [])
                      if o.get("output_type") == "stream" and "Traceback" in "".join(o.get("text", ""))]
        assert not tracebacks, tracebacks[:1]

        checks = [c for c in code if (c.get("metadata", {}).get("kipviz") or {}).get("check")]
        assert answered == len(checks), (answered, len(checks))
        for c in checks:
            said = json.dumps(c.get("outputs"))
            assert "Correct." in said, f"{c['metadata']['kipviz']['check']}: {said[:300]}"

        shown_pictures = page.evaluate(_PICTURES)
        assert len(shown_pictures) == len(code)
        for c, got in zip(code, shown_pictures, strict=True):
            src = "".join(c["source"])
            assert got["png"] == 0, f"a PNG picture: {src[:120]}"
            calls = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("def ", "from ", "import ", "#"))]
            if any(d in ln for d in DRAWS for ln in calls) and not src.startswith("%%needs"):
                assert got["svg"] >= 1, f"no SVG shown for: {src[:200]}"

        for c in code:
            src = "".join(c["source"])
            if src.startswith("%%needs"):
                text = json.dumps(c.get("outputs"))
                assert "This cell needs Spark" in text and "desktop kit shows" in text, text[:300]

        pages.assert_widgets_rendered(page, pages.widget_outputs(cells))
        pages.open_folds(page)                      # players and explorers may sit in folded outcomes
        ex, pl = pages.explorers(page), pages.players(page)
        for i in range(ex.count()):            # in view: JupyterLab renders output out of view lazily
            ex.nth(i).scroll_into_view_if_needed()
            pages.move_explorer_slider(page, ex.nth(i))
        for i in range(pl.count()):
            _plays(page, pl.nth(i))
        assert OUTSIDE == [], f"requests that were not to 127.0.0.1: {OUTSIDE[:10]}"
    finally:
        if console:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / f"console-lite-{path.stem}.txt").write_text("\n".join(console) + "\n")
        page.close()


def test_site_size_and_nothing_fetched_outside(site):
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    TIMES["site_bytes"] = size
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "lite-times.json").write_text(json.dumps(TIMES, indent=1))
    assert size <= SITE_MAX_BYTES, f"the site is {size / 1e6:.1f} MB"
    config = json.loads((site / "jupyter-lite.json").read_text())
    kernel = config["jupyter-config-data"]["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"].startswith("./") and kernel["disablePyPIFallback"] is True
    assert OUTSIDE == [], OUTSIDE[:10]
