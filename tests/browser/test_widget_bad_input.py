"""Bad input typed and pasted into the widgets in a real browser.

The Explorer: invalid hex, a request of a version that does not exist, broken JSON, and pastes
of 10 MB and 12 MB (the latter is over the 10 MiB a Jupyter websocket message may carry). Each
must give one readable line in the widget, and the kernel must still answer afterwards (a new
cell runs `1+1` on the same kernel, in Voilà the version slider still redraws the diagram).

An animation player (its only input is the frame number, typed into the slider's readout): not a
number, out of range, negative, a 10 MB paste. The frame stays a valid one, Play still plays, and
the kernel still answers.

Every notebook in notebooks/ (and every Voilà dashboard) that shows an Explorer or a player is
opened; the other notebooks show no widget that takes input."""
from __future__ import annotations

import pytest

from kipviz import codec
from kipviz.records.examples import example_value
from kipviz.widgets.explorer import MAX_ERROR_CHARS

from . import pages

pytestmark = pytest.mark.xdist_group("browser")     # one worker: one notebook at a time

WITH_EXPLORER = [p for p in pages.NOTEBOOKS if "Explorer(" in p.read_text()]
WITH_PLAYER_ONLY = [p for p in pages.NOTEBOOKS if "player(" in p.read_text() and p not in WITH_EXPLORER]
DASHBOARDS_WITH_EXPLORER = [p for p in pages.DASHBOARDS if "Explorer(" in p.read_text()]

TEN_MB = 10_000_000
TWELVE_MB = 12_000_000


def _version_99_frame() -> str:
    frame = bytearray(codec.encode_request("Heartbeat", 4, example_value("HeartbeatRequest", 4)))
    frame[6:8] = (99).to_bytes(2, "big")                 # RequestApiVersion
    return frame.hex(" ")


def _good_frame() -> str:
    return codec.encode_request("Heartbeat", 4, example_value("HeartbeatRequest", 4), correlation_id=7).hex(" ")


# (what, which box, text, a word the error line must hold)
BAD_INPUTS = [
    ("invalid hex", "paste", "00 1c zz 11", "hex"),
    ("odd hex digits", "paste", "00 1c 0", "odd"),
    ("wrong version", "paste", _version_99_frame(), "no version 99"),
    ("broken JSON", "json", '{"TransactionalId": ', "JSON"),
    ("JSON of the wrong shape", "json", "[1, 2, 3]", "object"),
    ("10 MB paste of hex", "paste", "0" * TEN_MB, "10.0 MB"),
    ("12 MB paste of hex (over the websocket limit)", "paste", "0" * TWELVE_MB, "12.0 MB"),
    ("10 MB paste into the JSON box", "json", "{" * TEN_MB, "10.0 MB"),
    ("10 MB paste into the filter", "search", "x" * TEN_MB, "filter text"),
]


def _box(explorer, which: str):
    return explorer.locator(f".kipviz-{which} " + ("input" if which == "search" else "textarea"))


def _assert_one_readable_line(explorer, text: str) -> None:
    assert text.startswith("⚠ "), text
    assert "\n" not in text and "Traceback" not in text and len(text) <= MAX_ERROR_CHARS + 2, text
    box = explorer.locator(".kipviz-error").bounding_box()
    assert box and box["height"] < 40, f"error line is {box} high"


def feed_bad_input(page, explorer, name: str) -> list[str]:
    """Type or paste each bad input, leave the box (Tab), and wait for the error line."""
    lines = []
    for what, which, text, expect in BAD_INPUTS:
        box = _box(explorer, which)
        box.fill(text, timeout=120_000)                  # 10 MB takes the browser a few seconds
        box.press("Tab")
        line = pages.wait_error(page, explorer, expect)
        _assert_one_readable_line(explorer, line)
        assert len(_box(explorer, which).input_value()) < 2_000_000, f"{what}: the huge text stayed in the box"
        lines.append(f"{what}: {line}")
        if what.startswith("wrong version"):
            pages.screenshot(page, f"bad-input-{name}", explorer)
    # the explorer recovers: a good paste clears the line and shows the pasted request
    box = _box(explorer, "paste")
    box.fill(_good_frame())
    box.press("Tab")
    explorer.locator(".kipviz-status").get_by_text("HeartbeatRequest").wait_for(timeout=30_000)
    assert pages.wait_error_cleared(page, explorer) == ""
    return lines


def test_some_notebook_shows_an_explorer():
    assert WITH_EXPLORER and DASHBOARDS_WITH_EXPLORER


@pytest.mark.parametrize("path", WITH_EXPLORER, ids=[p.name for p in WITH_EXPLORER])
def test_bad_input_in_jupyterlab(lab, page, path):
    rel = f"notebooks/{path.name}"
    try:
        pages.open_notebook(page, lab, rel)
        pages.run_all(page)
        assert not pages.error_outputs(pages.cells(page))
        kernel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id")
        counts = [c["execution_count"] for c in pages.cells(page) if c["cell_type"] == "code"]
        explorers = pages.explorers(page)
        assert explorers.count() >= 1
        for i in range(explorers.count()):
            lines = feed_bad_input(page, explorers.nth(i), f"{path.stem}-{i}")
            print("\n".join(lines))
        cell = pages.run_code_in_new_cell(page, "1+1")
        assert cell["outputs"] and cell["outputs"][0]["data"]["text/plain"] == "2", cell["outputs"]
        # the same kernel, not a restarted one (whose count would start again at 1)
        assert cell["execution_count"] == max(c for c in counts if c) + 1
        assert page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id") \
            == kernel_id
        assert not pages.error_outputs(pages.cells(page))
    finally:
        pages.shutdown_sessions(lab, rel)


@pytest.mark.parametrize("path", DASHBOARDS_WITH_EXPLORER, ids=[p.name for p in DASHBOARDS_WITH_EXPLORER])
def test_bad_input_in_voila(voila, page, path):
    pages.open_dashboard(page, voila, path.name)
    explorer = pages.explorers(page).first
    feed_bad_input(page, explorer, f"voila-{path.stem}")
    pages.move_explorer_slider(page, explorer)          # the kernel still answers


# typed into a player's frame readout: (what, text); a valid frame (0..n-1) must result
BAD_FRAMES = [("not a number", "abc"), ("out of range", "999999"), ("negative", "-5"),
              ("10 MB paste", "9" * TEN_MB)]


def feed_bad_frames(page, player) -> None:
    readout = player.locator(".widget-slider .widget-readout")
    handle = player.locator(".widget-slider .noUi-handle")
    top = int(float(handle.get_attribute("aria-valuemax")))
    for what, text in BAD_FRAMES:
        readout.click()
        page.keyboard.press("Control+A")
        if len(text) > 100:                              # paste, as a person would
            readout.evaluate("(el, t) => { el.textContent = t; }", text)
        else:
            page.keyboard.type(text)
        page.keyboard.press("Enter")
        page.wait_for_timeout(300)
        shown = readout.inner_text().strip()
        assert shown.isdigit() and 0 <= int(shown) <= top, f"{what}: the readout shows {shown[:40]!r}"
        assert int(float(handle.get_attribute("aria-valuenow"))) == int(shown), what
    readout.click()                                       # a good number still works
    page.keyboard.press("Control+A")
    page.keyboard.type("1")
    page.keyboard.press("Enter")
    page.wait_for_function("el => el.textContent.trim() === '1'", arg=readout.element_handle(), timeout=10_000)
    f0, f1 = pages.play_advances(page, player)            # and Play still plays
    assert f1 > f0


def test_some_notebook_shows_a_player():
    assert WITH_PLAYER_ONLY


@pytest.mark.parametrize("path", WITH_PLAYER_ONLY, ids=[p.name for p in WITH_PLAYER_ONLY])
def test_bad_frame_numbers_in_jupyterlab(lab, page, path):
    rel = f"notebooks/{path.name}"
    try:
        pages.open_notebook(page, lab, rel)
        pages.run_all(page)
        assert not pages.error_outputs(pages.cells(page))
        kernel_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id")
        pages.open_folds(page)                            # a player may sit in a folded outcome
        players = pages.players(page)
        assert players.count() >= 1
        players.first.scroll_into_view_if_needed()      # every player is the same widget: the first will do
        feed_bad_frames(page, players.first)
        pages.screenshot(page, f"bad-frames-{path.stem}", players.first)
        cell = pages.run_code_in_new_cell(page, "1+1")
        assert cell["outputs"] and cell["outputs"][0]["data"]["text/plain"] == "2", cell["outputs"]
        assert page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id") \
            == kernel_id
    finally:
        pages.shutdown_sessions(lab, rel)
