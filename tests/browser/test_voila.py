"""The Voilà dashboards (notebooks/voila/: the explorer and a transaction animation), served by
Voilà with their code hidden and checked like the notebooks: the page finishes, no code and no
error shows, the widgets render and work, a screenshot under tests/browser/artifacts/."""
from __future__ import annotations

import pytest

from . import pages

pytestmark = pytest.mark.xdist_group("browser")     # one worker: one notebook at a time

DASHBOARDS = pages.DASHBOARDS


def test_the_dashboards_are_there():
    names = {p.stem for p in DASHBOARDS}
    assert "explorer" in names and any("animation" in n for n in names), names
    for p in DASHBOARDS:       # the library's widgets, not dashboard-only code
        text = p.read_text()
        assert "from kipviz.widgets import" in text and "def " not in text, p.name


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.name for p in DASHBOARDS])
def test_dashboard_in_voila(voila, page, path):
    pages.open_dashboard(page, voila, path.name)
    pages.assert_widgets_rendered(page, 1)
    text = page.inner_text("body")
    assert "import" not in text and "kipviz.widgets" not in text, "code is showing"
    assert page.locator(".jp-CodeCell .jp-InputArea, .jp-CodeMirrorEditor").count() == 0
    stderr = [t for t in page.locator('[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()]
    assert not stderr, stderr[:2]
    assert "There was an error when executing" not in text
    pages.screenshot(page, f"voila-{path.stem}")
    ex, pl = pages.explorers(page), pages.players(page)
    assert ex.count() + pl.count() >= 1
    for i in range(ex.count()):
        before, after = pages.move_explorer_slider(page, ex.nth(i))
        assert before.split(" v")[0] == after.split(" v")[0]
    for i in range(pl.count()):
        f0, f1 = pages.play_advances(page, pl.nth(i))
        assert f1 > f0
    pages.screenshot(page, f"voila-{path.stem}-after")
