"""What a learner sees of the exercises' outcomes (kipviz.course.reveal), read from the page: in
JupyterLab after Run All, and in the pages `kipviz export` writes. An outcome cell's outputs after its
fold must not be on screen until its exercise is answered (or the fold clicked), and no output above an
unanswered prediction may show its answer's name (tests/answer_text.py: how a name is matched).
Used by test_lab_notebooks.py and test_export_offline.py."""
from __future__ import annotations

from kipviz.course.exercises import EXERCISES
from tests import answer_text

# every cell of the notebook in JupyterLab, in order: its kipviz tags, and of each output (the
# output area's children) whether it holds a fold, whether the fold is open, and whether it is on screen
_LAB_CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => {
  const area = c.node.querySelector('.jp-Cell-outputArea');
  const kids = area ? [...area.querySelectorAll(':scope > .jp-OutputArea-child')] : [];
  return {kv: (c.model.getMetadata && c.model.getMetadata('kipviz')) || {},
          outputs: kids.map(k => ({fold: !!k.querySelector('details.kv-fold'),
                                   open: !!k.querySelector('details.kv-fold[open]'),
                                   shown: k.getClientRects().length > 0})),
          text: area ? area.innerText : ''};
})"""


def lab_cells(page) -> list[dict]:
    return page.evaluate(_LAB_CELLS)


def expected(ex_id: str):
    """The answer of an exercise the test process can compute (None: it needs the notebook's objects)."""
    ex = EXERCISES[ex_id]
    return None if ex.inputs else ex.expected()


def folded_problems(state: list[dict], answered=frozenset()) -> list[str]:
    """Outcome cells whose outputs are on screen although their exercise is not answered (or whose
    outputs stay hidden although it is)."""
    problems = []
    for i, cell in enumerate(state):
        ex_id = cell["kv"].get("outcome")
        if not ex_id or not cell["outputs"]:
            continue
        first, rest = cell["outputs"][0], cell["outputs"][1:]
        if ex_id in answered:
            if any(not o["shown"] for o in rest):
                problems.append(f"cell {i}: {ex_id} is answered but its outcome is still hidden")
        elif not first["fold"] or first["open"]:
            problems.append(f"cell {i}: the outcome of {ex_id} does not start with a closed fold: {first}")
        elif any(o["shown"] for o in rest):
            problems.append(f"cell {i}: the outcome of {ex_id} is on screen before it is answered")
    return problems


def visible_answers(cells, state: list[dict], answered=frozenset()) -> list[str]:
    """Answers of unanswered predictions that an output on screen above their check shows by name."""
    problems = []
    for ex_id, place in answer_text.places(cells).items():
        ex = EXERCISES[ex_id]
        value = expected(ex_id)
        if ex.kind == "read" or ex_id in answered or value is None:
            continue
        skip = {str(v) for v in (ex.vocabulary() if ex.vocabulary else ())}
        names = [(part, p) for part, kind, p in answer_text.patterns(value, ex.unit, skip) if kind == "name"]
        for i in range(place.check + 1):
            for part, p in names:
                m = p.search(state[i]["text"])
                if m:
                    problems.append(f"{ex_id}: the output of cell {i}, above its check, shows {part!r}: "
                                    f"...{state[i]['text'][max(0, m.start() - 60):m.end() + 20]!r}...")
    return problems


def to_answer(cells) -> str | None:
    """The first prediction of a notebook with folded outcome cells whose answer the test can type."""
    folded = {answer_text.tag(c, "outcome") for c in cells}
    for ex_id in answer_text.places(cells):
        ex = EXERCISES[ex_id]
        if ex_id in folded and ex.kind != "read" and not ex.inputs:
            return ex_id
    return None


# ---- the exported page: nbconvert's lab template (kipviz/course/export.py) --------------------------
_PAGE_FOLDS = """() => [...document.querySelectorAll('details.kv-fold')].map(d => {
  const child = d.closest('.jp-OutputArea-child');
  const after = [];
  for (let k = child.nextElementSibling; k; k = k.nextElementSibling) after.push(k.getClientRects().length > 0);
  return {exercise: d.dataset.exercise, open: d.open, after};
})"""


def page_folds(page) -> list[dict]:
    return page.evaluate(_PAGE_FOLDS)
