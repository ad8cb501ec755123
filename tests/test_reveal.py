"""An exercise's outcome stays folded until the right answer (kipviz.course.reveal): the fold a
kernel shows for a cell tagged {"kipviz": {"outcome": ID}} (a real kernel, sent the cell's metadata as
JupyterLab sends it), the right answer opening it, the switch that shows everything, and the folds
`kipviz export` puts in. tests/browser/ checks what a learner sees in JupyterLab and in the pages."""
from __future__ import annotations

import queue
import re

import nbformat
import pytest

from kipviz.course import reveal
from kipviz.course.exercises import exercise
from kipviz.course.export import notebook_html

md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
HIDE = ".jp-OutputArea-child:has(details.kv-fold:not([open]))~.jp-OutputArea-child{display:none}"


@pytest.fixture
def published(monkeypatch):
    """What reveal would send to the frontend: (bundle, display id, update), in order."""
    sent: list = []
    monkeypatch.setattr(reveal, "_publish", lambda bundle, did, update: sent.append((bundle, did, update)))
    monkeypatch.setattr(reveal, "_answered", set())
    monkeypatch.setattr(reveal, "_folds", {})
    monkeypatch.setattr(reveal, "_shown", None)
    monkeypatch.delenv(reveal.SHOW_ENV, raising=False)
    return sent


def _is_open(bundle) -> bool:
    return "<details" in bundle["text/html"] and " open>" in bundle["text/html"]


def test_a_fold_hides_the_outputs_after_it_until_it_opens():
    closed, opened = reveal.fold_html("06-4"), reveal.fold_html("06-4", folded=False)
    assert HIDE in closed and HIDE in opened
    assert re.search(r'<details class="kv-fold" data-exercise="06-4"><summary>Outcome of Exercise 4, folded', closed)
    assert '<details class="kv-fold" data-exercise="06-4" open><summary>Outcome of Exercise 4</summary>' in opened


class _Info:
    def __init__(self, meta):
        self.cell_meta = meta


def test_the_right_answer_opens_its_folds_and_a_wrong_one_does_not(published):
    meta = {"kipviz": {"outcome": "03-1"}, "cellId": "03-07"}
    reveal._pre_run_cell(_Info(meta))                        # Run All: the outcome cell runs first
    reveal._pre_run_cell(_Info({"cellId": "03-09"}))         # a cell without the tag: nothing
    reveal._pre_run_cell(_Info(meta))                        # the same cell again: the same fold
    assert [(did, upd, _is_open(b)) for b, did, upd in published] == [("kv-fold-03-1-03-07", False, False)] * 2
    published.clear()
    assert not exercise("03-1").check("UNKNOWN_TOPIC_OR_PARTITION") and published == []
    assert exercise("03-1").check("UNKNOWN_TOPIC_ID")
    assert [(did, upd, _is_open(b)) for b, did, upd in published] == [("kv-fold-03-1-03-07", True, True)]
    published.clear()
    reveal._pre_run_cell(_Info({"kipviz": {"outcome": "03-1"}, "cellId": "03-08"}))   # run after the answer
    assert _is_open(published[0][0])


def test_the_switch_shows_every_outcome(published, monkeypatch):
    reveal._pre_run_cell(_Info({"kipviz": {"outcome": "06-2"}, "cellId": "a"}))
    reveal._pre_run_cell(_Info({"kipviz": {"outcome": "06-3"}, "cellId": "b"}))
    reveal.show_outcomes()
    assert [(upd, _is_open(b)) for b, _, upd in published[2:]] == [(True, True), (True, True)]
    reveal.show_outcomes(False)
    assert [_is_open(b) for b, _, _ in published[4:]] == [False, False]
    monkeypatch.setattr(reveal, "_shown", None)
    monkeypatch.setenv(reveal.SHOW_ENV, "1")
    reveal.fold("06-2", key="c")
    assert _is_open(published[-1][0]) and reveal.outcomes_shown()


def _notebook():
    return nbformat.v4.new_notebook(cells=[
        md("# 99 · X"), code("answer = ...", metadata={"kipviz": {"exercise": "03-1"}}),
        code("exercise('03-1').check(answer)", metadata={"kipviz": {"check": "03-1"}}),
        code("print('UNKNOWN_TOPIC_ID')", metadata={"kipviz": {"outcome": "03-1"}},
             outputs=[nbformat.v4.new_output("stream", text="UNKNOWN_TOPIC_ID\n")]),
        code("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")])])


def test_export_folds_each_outcome_cell_once(monkeypatch):
    monkeypatch.setattr(reveal, "_shown", None)
    monkeypatch.delenv(reveal.SHOW_ENV, raising=False)
    nb = _notebook()
    folded = reveal.fold_notebook(nb)
    assert [len(c.get("outputs", [])) for c in folded.cells] == [0, 0, 0, 2, 1]
    assert 'data-exercise="03-1"' in folded.cells[3].outputs[0]["data"]["text/html"]
    assert len(nb.cells[3].outputs) == 1                                  # the caller's notebook is untouched
    assert reveal.fold_notebook(folded).cells[3].outputs == folded.cells[3].outputs      # not twice
    page = notebook_html(nb, title="x")
    fold_at, answer_at = page.index('class="kv-fold"'), page.index("<pre>UNKNOWN_TOPIC_ID")     # the output
    assert fold_at < answer_at and page.count('class="kv-fold"') == 1 and HIDE in page
    assert page[:answer_at].rfind('class="jp-OutputArea-child') > fold_at      # a later output of the same area
    monkeypatch.setenv(reveal.SHOW_ENV, "1")
    assert 'class="kv-fold"' not in notebook_html(nb, title="x")


def test_a_kernel_folds_a_cell_jupyterlab_sends_with_its_metadata():
    """A real ipykernel, sent execute requests the way JupyterLab sends them (the cell's metadata in
    the request's metadata, kipviz/course/reveal.py): the tagged cell's first output is a closed fold,
    and after the right answer the kernel updates that fold to an open one."""
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        def run(src, meta=None):
            msg = kc.session.msg("execute_request", {"code": src, "silent": False, "store_history": True,
                                                     "user_expressions": {}, "allow_stdin": False,
                                                     "stop_on_error": True}, metadata=meta or {})
            kc.shell_channel.send(msg)
            out = []
            while True:
                try:
                    m = kc.get_iopub_msg(timeout=60)
                except queue.Empty:
                    raise AssertionError(f"no idle after {src!r}: {out}") from None
                if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                    continue
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    return out
                if m["msg_type"] in ("display_data", "update_display_data", "execute_result", "stream", "error"):
                    out.append(m)

        assert not [m for m in run("from kipviz.course.exercises import exercise") if m["msg_type"] == "error"]
        outputs = run("print('the run')", {"kipviz": {"outcome": "03-1"}, "cellId": "c7"})
        assert [m["msg_type"] for m in outputs] == ["display_data", "stream"]
        first = outputs[0]["content"]
        assert 'class="kv-fold"' in first["data"]["text/html"] and " open>" not in first["data"]["text/html"]
        assert first["transient"]["display_id"] == "kv-fold-03-1-c7"
        assert [m["msg_type"] for m in run("print('a cell of no exercise')", {"cellId": "c8"})] == ["stream"]
        updates = [m for m in run("exercise('03-1').check('UNKNOWN_TOPIC_ID')") if m["msg_type"] == "update_display_data"]
        assert [u["content"]["transient"]["display_id"] for u in updates] == ["kv-fold-03-1-c7"]
        assert " open>" in updates[0]["content"]["data"]["text/html"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_page_checks_catch_an_outcome_on_screen_and_an_answer_above():
    """tests/browser/folds.py's verdicts on a page, given what the page would report."""
    from pathlib import Path

    from tests import answer_text
    from tests.browser import folds
    cells = answer_text.read(Path(__file__).resolve().parent.parent / "notebooks" / "03_topic_ids.ipynb")
    state = [{"kv": c.metadata.get("kipviz") or {}, "outputs": [], "text": ""} for c in cells]
    i = next(j for j, c in enumerate(cells) if answer_text.tag(c, "outcome") == "03-1")
    state[i]["outputs"] = [{"fold": True, "open": False, "shown": True}, {"fold": False, "open": False, "shown": False}]
    assert folds.folded_problems(state) == [] and folds.visible_answers(cells, state) == []
    assert "still hidden" in folds.folded_problems(state, answered={"03-1"})[0]
    state[i]["outputs"][1]["shown"] = True
    assert "on screen before it is answered" in folds.folded_problems(state)[0]
    assert folds.folded_problems(state, answered={"03-1"}) == []
    state[0]["text"] = "a stale Fetch gets UNKNOWN_TOPIC_ID"
    assert [p.split(":")[0] for p in folds.visible_answers(cells, state)] == ["03-1", "03-2"]
    assert folds.to_answer(cells) == "03-1"
