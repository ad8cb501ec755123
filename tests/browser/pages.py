"""Driving JupyterLab and Voilà pages the way a person does: menus, sliders, buttons, typing.

Reading what happened uses the page itself (the DOM) and, in JupyterLab, the notebook model the
page holds (the server runs with expose_app_in_browser, so `window.jupyterapp` is there)."""
from __future__ import annotations

import re
import time
import urllib.parse
from itertools import count
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError

from .conftest import ARTIFACTS, ROOT

RUN_TIMEOUT_MS = 600_000          # one notebook, top to bottom (the Spark one starts a JVM)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))               # new ones are covered as they come
DASHBOARDS = sorted((ROOT / "notebooks" / "voila").glob("*.ipynb"))
_workspaces = count()

_CURRENT = "window.jupyterapp.shell.currentWidget"
_MODEL_CELLS = f"() => {_CURRENT}.content.model.toJSON().cells"


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def screenshot(page, name: str, element=None) -> Path:
    """Save a screenshot under tests/browser/artifacts/ (the element scrolled to the top, if given)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{safe_name(name)}.png"
    if element is not None:
        element.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(path))
    return path


# ---- JupyterLab ----------------------------------------------------------------------------------
def open_notebook(page, lab, relpath: str) -> None:
    """Open `relpath` (under the server root) in a fresh workspace and wait for an idle kernel."""
    ws = f"kipviz-test-{next(_workspaces)}-{int(time.time())}"
    page.goto(f"{lab.url}/lab/workspaces/{ws}/tree/{urllib.parse.quote(relpath)}")
    page.wait_for_selector(".jp-NotebookPanel", timeout=90_000)
    page.wait_for_function(
        f"(p) => {{ const w = {_CURRENT}; return w && w.context && w.context.path === p"
        " && w.sessionContext.session?.kernel?.status === 'idle'; }", arg=relpath, timeout=120_000)


def menu(page, top: str, command: str) -> None:
    """Click a top menu (e.g. "Run") and one of its items, named by its command id."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').click()


_RUN_DONE = f"""() => {{
  const w = {_CURRENT};
  const kernel = w.sessionContext.session?.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  const prompts = [...w.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
  if (prompts.some(p => p.includes('*'))) return false;
  const cells = w.content.model.toJSON().cells.filter(c => c.cell_type === 'code');
  const src = c => Array.isArray(c.source) ? c.source.join('') : c.source;
  const failed = cells.some(c => (c.outputs || []).some(o => o.output_type === 'error'));
  const done = cells.every(c => !src(c).trim() || c.execution_count !== null);
  return failed || done;
}}"""


def run_all(page, timeout_ms: int = RUN_TIMEOUT_MS) -> float:
    """Run > Run All Cells, then wait until the kernel is idle with every cell run (or one failed).
    Returns the seconds it took."""
    t = time.monotonic()
    menu(page, "Run", "runmenu:run-all")
    page.wait_for_function(_RUN_DONE, timeout=timeout_ms, polling=250)
    return time.monotonic() - t


def cells(page) -> list[dict]:
    return page.evaluate(_MODEL_CELLS)


def error_outputs(cell_list: list[dict]) -> list[str]:
    out = []
    for i, c in enumerate(cell_list):
        for o in c.get("outputs", []) if c.get("cell_type") == "code" else []:
            if o.get("output_type") == "error":
                out.append(f"cell {i}: {o.get('ename')}: {o.get('evalue')}")
    return out


def widget_outputs(cell_list: list[dict]) -> int:
    return sum(1 for c in cell_list if c.get("cell_type") == "code" for o in c.get("outputs", [])
               if WIDGET_MIME in (o.get("data") or {}))


def run_code_in_new_cell(page, code: str, timeout_ms: int = 60_000) -> dict:
    """Select the last cell, insert a cell below it (command mode `b`), type `code`, Shift+Enter;
    return that cell (from the model) once it has run."""
    last = page.locator(".jp-Notebook .jp-Cell").last
    last.locator(".jp-InputPrompt, .jp-Cell-inputCollapser").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.wait_for_function(f"() => {_CURRENT}.content.activeCell.model.sharedModel.getSource() === ''")
    index = page.evaluate(f"() => {_CURRENT}.content.activeCellIndex")
    page.keyboard.press("Enter")
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        f"""(i) => {{ const w = {_CURRENT}; const c = w.content.model.toJSON().cells[i];
             return w.sessionContext.session?.kernel?.status === 'idle' && c.execution_count !== null; }}""",
        arg=index, timeout=timeout_ms)
    cell = cells(page)[index]
    assert "".join(cell["source"]) == code, cell
    return cell


def shutdown_sessions(lab, relpath: str | None = None) -> None:
    """Shut down the kernels of `relpath` (or all) through the server's REST API."""
    for s in lab.get("/api/sessions") or []:
        if relpath is None or s.get("path") == relpath:
            lab.request("DELETE", f"/api/sessions/{s['id']}")


# ---- widgets, in either page -----------------------------------------------------------------------
def assert_widgets_rendered(page, expected: int) -> None:
    """At least `expected` outputs show a live widget view, and no widget shows an error
    ("Error displaying widget", a model that failed to load)."""
    page.wait_for_function(
        """(n) => [...document.querySelectorAll('.jp-OutputArea-output')]
                    .filter(o => o.querySelector('.jupyter-widgets')).length >= n""",
        arg=expected, timeout=60_000)
    problems = page.evaluate(
        """() => [...document.querySelectorAll('.jupyter-widgets-error-widget, .jupyter-widgets')]
              .map(e => e.innerText || '')
              .filter(t => /Error displaying widget|Failed to load model|model not found/.test(t))""")
    assert not problems, problems[:3]


def explorers(page):
    return page.locator(".kipviz-explorer")


def players(page):
    return page.locator(".kipviz-player")


def move_explorer_slider(page, explorer) -> tuple[str, str]:
    """Press an arrow key on the version slider's handle; wait for the wire diagram to change.
    Returns (status before, status after)."""
    diagram = explorer.locator(".kipviz-diagram")
    status = explorer.locator(".kipviz-status")
    before_svg, before = diagram.inner_html(), status.inner_text()
    handle = explorer.locator(".kipviz-version .noUi-handle")
    vmin = float(handle.get_attribute("aria-valuemin"))
    vnow = float(handle.get_attribute("aria-valuenow"))
    handle.focus()
    handle.press("ArrowLeft" if vnow > vmin else "ArrowRight")
    explorer.locator(".kipviz-diagram").evaluate(
        """(el, before) => new Promise((ok, fail) => {
             const t0 = Date.now();
             const tick = () => el.innerHTML !== before ? ok() :
               Date.now() - t0 > 30000 ? fail(new Error('diagram did not change')) : setTimeout(tick, 100);
             tick(); })""", before_svg)
    after = status.inner_text()
    assert after != before, (before, after)
    assert "<svg" in diagram.inner_html() or "not available" in diagram.inner_text()
    return before, after


def play_advances(page, player) -> tuple[int, int]:
    """Click Play and wait until the frame number and the caption move on; then pause.
    Returns (frame before, frame after)."""
    readout = player.locator(".widget-slider .widget-readout")
    caption = player.locator(".kv-anim-caption")
    before, cap0 = int(readout.inner_text()), caption.inner_text()
    player.locator(".widget-play button").first.click()
    page.wait_for_function(
        """([el, f0, c0]) => parseInt(el.querySelector('.widget-slider .widget-readout').textContent) > f0
             && el.querySelector('.kv-anim-caption').textContent !== c0""",
        arg=[player.element_handle(), before, cap0], timeout=20_000)
    after = int(readout.inner_text())
    player.locator(".widget-play button").first.click()          # pause (keeps the frame)
    return before, after


def error_line(explorer) -> str:
    return explorer.locator(".kipviz-error").inner_text().strip()


def wait_error(page, explorer, contains: str, timeout_ms: int = 60_000) -> str:
    """Wait for the explorer's error line to contain `contains` (case-insensitive); return it."""
    explorer.locator(".kipviz-error").evaluate(
        """(el, want) => new Promise((ok, fail) => {
             const t0 = Date.now();
             const tick = () => el.innerText.toLowerCase().includes(want) ? ok() :
               Date.now() - t0 > %d ? fail(new Error('no error line with ' + want + ': ' + el.innerText)) :
               setTimeout(tick, 100);
             tick(); })""" % timeout_ms, contains.lower())
    return error_line(explorer)


def wait_error_cleared(page, explorer, timeout_ms: int = 30_000) -> str:
    """Wait (up to `timeout_ms`) for the explorer's error line to be empty; return what it shows."""
    try:
        explorer.locator(".kipviz-error").evaluate(
            """(el, ms) => new Promise((ok, fail) => {
                 const t0 = Date.now();
                 const tick = () => !el.innerText.trim() ? ok() :
                   Date.now() - t0 > ms ? fail(new Error('still shown')) : setTimeout(tick, 100);
                 tick(); })""", timeout_ms)
    except PlaywrightError:             # the caller's assertion names what is still shown
        pass
    return error_line(explorer)


# ---- Voilà -----------------------------------------------------------------------------------------
def open_dashboard(page, voila, name: str) -> None:
    """Open a dashboard and wait until Voilà has run every cell and shown the page."""
    page.goto(f"{voila.url}/voila/render/{urllib.parse.quote(name)}", timeout=120_000)
    page.wait_for_function("() => document.querySelector('#rendered_cells')?.style.display !== 'none'"
                           " && !document.querySelector('#loading')?.offsetParent", timeout=300_000)


# ---- a player in JupyterLab, read as a learner reads it (issue 31) ---------------------------------------
_LAB_PLAYER = r"""(el) => {
  const out = [];
  const readout = el.querySelector('.widget-slider .widget-readout'), cap = el.querySelector('.kv-anim-caption');
  if (!el.querySelector('.kv-speed select')) out.push('no speed choice');
  const m = cap && /^(\d+)\/(\d+)/.exec(cap.textContent);
  if (m && readout && readout.textContent.trim() !== m[1])
    out.push(`the slider reads ${readout.textContent.trim()} while the caption reads ${m[0]}`);
  return out;
}"""

# with the player at the top of the notebook panel: its caption and the highlighted state (a graphviz
# node filled as the current state) inside the window and the stage, for the frame shown
_LAB_FOCUS = r"""(el, fill) => {
  const shown = [...el.querySelectorAll('.kv-anim-stage > div')].find(d => d.style.display !== 'none');
  const node = shown && [...shown.querySelectorAll('g.node')].find(g => g.querySelector(`[fill="${fill}"]`));
  if (!node) return null;
  const c = el.querySelector('.kv-anim-caption').getBoundingClientRect(), s = node.getBoundingClientRect();
  const stage = el.querySelector('.kv-anim-stage').getBoundingClientRect();
  return c.top >= 0 && s.bottom <= Math.min(innerHeight, stage.bottom) + 1 && s.top >= stage.top - 1 ? '' :
    `caption at ${Math.round(c.top)} px, highlighted state at ${Math.round(s.top)}-${Math.round(s.bottom)} px ` +
    `(window ${innerHeight} px, stage to ${Math.round(stage.bottom)} px)`;
}"""


def lab_player_problems(page, player) -> list[str]:
    """A JupyterLab player: a speed choice, the slider counting as the caption does, and in every frame
    the caption and the highlighted state on screen together (the player scrolled to the panel's top)."""
    from kipviz.draw.machines import C_CURRENT_FILL
    out = player.evaluate(_LAB_PLAYER)
    readout = player.locator(".widget-slider .widget-readout")
    handle = player.locator(".widget-slider .noUi-handle, .widget-slider .ui-slider-handle").first
    last = int(float(handle.get_attribute("aria-valuemax") or readout.inner_text()))
    player.evaluate("e => e.scrollIntoView({block: 'start'})")
    handle.focus()
    handle.press("Home")
    for i in range(1, last + 2):
        if i > 1:
            handle.press("ArrowRight")
        try:
            page.wait_for_function("([el, i]) => el.querySelector('.kv-anim-caption').textContent.startsWith(i + '/')",
                                   arg=[player.element_handle(), i], timeout=10_000)
        except PlaywrightError:         # the last frame (a 0-based slider ends a frame early)
            break
        player.evaluate("e => e.scrollIntoView({block: 'start'})")
        bad = [f"frame {i}: {b}" for b in [player.evaluate(_LAB_FOCUS, C_CURRENT_FILL), *player.evaluate(_LAB_PLAYER)]
               if b and b != "no speed choice"]
        if bad:
            return out + bad
    handle.press("Home")           # back to the first frame: another view of the same widget may be checked next
    return out


def speed_changes_the_rate(page, player) -> bool:
    """At 0.5 fps, Play has not moved two frames on after 1.5 s (at the default 2 fps it moves three)."""
    select = player.locator(".kv-speed select")
    select.select_option("0.5")
    handle = player.locator(".widget-slider .noUi-handle, .widget-slider .ui-slider-handle").first
    handle.focus()
    handle.press("Home")
    readout = player.locator(".widget-slider .widget-readout")
    before = int(readout.inner_text())
    player.locator(".widget-play button").first.click()
    page.wait_for_timeout(1500)
    moved = int(readout.inner_text()) - before
    player.locator(".widget-play button").first.click()          # pause
    select.select_option("2")
    return moved <= 1


def open_folds(page) -> int:
    """Open every folded outcome of an exported page (kipviz.course.reveal), as a reader who clicks each
    fold; returns how many were closed."""
    return page.evaluate("() => [...document.querySelectorAll('details.kv-fold:not([open])')]"
                         ".map(d => { d.open = true; return 1; }).length")


def answer_exercise(page, index: int, code: str, timeout_ms: int = 120_000) -> None:
    """Type `code` into the learner's cell `index` as a person does (click, select all, type), run it
    with Shift+Enter, then the check cell below it with Shift+Enter; wait until the check has run."""
    before = cells(page)[index + 1]["execution_count"]
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.type(code)
    assert "".join(cells(page)[index]["source"]) == code
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        f"""([i, before]) => {{ const w = {_CURRENT}; const c = w.content.model.toJSON().cells[i];
             return w.sessionContext.session?.kernel?.status === 'idle' && c.execution_count !== null
                    && c.execution_count !== before; }}""",
        arg=[index + 1, before], timeout=timeout_ms)


def open_folds(page) -> None:
    """Open every folded outcome (kipviz.course.reveal) as a learner would, one click each."""
    closed = page.locator("details.kv-fold:not([open]) > summary")
    for _ in range(closed.count()):
        closed.first.click()
