"""Bad input typed and pasted into the Explorer in a real browser: invalid hex, a request of a
version that does not exist, broken JSON, and pastes of 10 MB and 12 MB (the latter is over the
10 MiB a Jupyter websocket message may carry). Each must give one readable line in the widget,
and the kernel must still answer afterwards (a new cell runs `1+1` on the same kernel, in Voilà
the version slider still redraws the diagram).

Every notebook in notebooks/ (and every Voilà dashboard) that shows an Explorer is opened."""
from __future__ import annotations

import pytest

from kipviz import codec
from kipviz.draw.examples import example_value
from kipviz.widgets.explorer import MAX_ERROR_CHARS

from . import pages

pytestmark = pytest.mark.xdist_group("browser")     # one worker: one notebook at a time

WITH_EXPLORER = [p for p in pages.NOTEBOOKS if "Explorer(" in p.read_text()]
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
    assert pages.error_line(explorer) == ""
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
