"""Every notebook in notebooks/, in JupyterLab in a real browser: Run All through the menu, wait
for the kernel to go idle, no error output; no exercise's outcome on screen before it is answered
and no output above an unanswered prediction showing its answer (folds.py); answering one exercise
in the page (typed into its cell, run with Shift+Enter) opens its outcome; clicking the other folds
opens theirs; then every widget rendered and working (an explorer's version slider moves and its
diagram changes; an animation's Play advances frames). Screenshots under tests/browser/artifacts/
(lab-NN-folded, lab-NN-answered). New notebooks are picked up by the glob."""
from __future__ import annotations

import re

import nbformat
import pytest

from tests import answer_text

from . import fit, folds, pages

pytestmark = pytest.mark.xdist_group("browser")     # one worker: one notebook at a time

NOTEBOOKS = pages.NOTEBOOKS


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab(lab, page, path):
    rel = f"notebooks/{path.name}"
    page.set_viewport_size({"width": 1280, "height": 900})      # a newcomer's window (issue 31)
    try:
        pages.open_notebook(page, lab, rel)
        took = pages.run_all(page)
        cells = pages.cells(page)
        stem = path.stem
        pages.screenshot(page, f"lab-{stem}")
        errors = pages.error_outputs(cells)
        assert not errors, f"{path.name}: error output after Run All ({took:.0f} s): {errors}"
        assert all(c["execution_count"] is not None for c in cells
                   if c["cell_type"] == "code" and "".join(c["source"]).strip()), "a cell did not run"
        _outcomes_folded_until_answered(page, path)

        n_widgets = pages.widget_outputs(cells)
        pages.assert_widgets_rendered(page, n_widgets)
        ex, pl = pages.explorers(page), pages.players(page)
        for i in range(ex.count()):
            before, after = pages.move_explorer_slider(page, ex.nth(i))
            assert before.split(" v")[0] == after.split(" v")[0]      # same message, another version
            pages.screenshot(page, f"lab-{stem}-explorer{i}", ex.nth(i))
        for i in range(pl.count()):
            f0, f1 = pages.play_advances(page, pl.nth(i))
            assert f1 > f0
            if i == 0:
                pages.screenshot(page, f"lab-{stem}-player{i}", pl.nth(i))
            bad = pages.lab_player_problems(page, pl.nth(i))
            if bad:
                pages.screenshot(page, f"lab-{stem}-player{i}-unreadable", pl.nth(i))
            assert not bad, f"{path.name}: player {i}: {bad}"
            if i == 0:
                assert pages.speed_changes_the_rate(page, pl.nth(i)), "the speed choice does not change the rate"
        # what a newcomer could not read (issue 31): tables and pictures in JupyterLab's own rendering
        unreadable = fit.table_problems(page) + fit.picture_problems(page)
        assert not unreadable, f"{path.name}: {len(unreadable)} problem(s):\n" + "\n".join(unreadable[:30])
        news = page.locator(".Toastify__toast, .jp-Notification-Toast").filter(has_text=re.compile("news", re.I))
        assert news.count() == 0, "JupyterLab's news pop-up covers the notebook"
    finally:
        pages.shutdown_sessions(lab, rel)


def _outcomes_folded_until_answered(page, path):
    nb_cells = nbformat.read(path, as_version=4).cells
    stem = path.stem
    state = folds.lab_cells(page)
    assert len(state) == len(nb_cells)
    problems = folds.folded_problems(state) + folds.visible_answers(nb_cells, state)
    assert not problems, f"{path.name} after Run All:\n" + "\n".join(problems)
    ex_id = folds.to_answer(nb_cells)
    if ex_id is not None:
        place = answer_text.places(nb_cells)[ex_id]
        check = page.locator(".jp-Notebook .jp-Cell").nth(place.check)
        pages.screenshot(page, f"lab-{stem}-folded", check)
        pages.answer_exercise(page, place.learner, f"answer = {folds.expected(ex_id)!r}")
        said = "".join(str(o.get("data", {}).get("text/plain", "")) for o in pages.cells(page)[place.check]["outputs"])
        assert "Correct" in said, said
        state = folds.lab_cells(page)
        problems = folds.folded_problems(state, answered={ex_id})
        assert not problems, f"{path.name} after answering {ex_id}:\n" + "\n".join(problems)
        assert any(c["kv"].get("outcome") == ex_id and len(c["outputs"]) > 1 for c in state)
        pages.screenshot(page, f"lab-{stem}-answered", check)
    pages.open_folds(page)                                # the learner opens the rest
    assert not [i for i, c in enumerate(folds.lab_cells(page)) if any(not o["shown"] for o in c["outputs"])]
