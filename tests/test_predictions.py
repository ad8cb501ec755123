"""Predictions hold: no expected answer is visible before the learner predicts.

A learner-editable cell is a code cell tagged {"kipviz": {"exercise": ID}} (in its source in
notebooks/src/, the cell header `# %% kipviz={"exercise": ID}`); the cell after it, tagged
{"kipviz": {"check": ID}}, is not editable and computes the answer in kipviz.course.exercises. For every
exercise, its expected answer (computed from the model) is written neither in its hint nor, for a
prediction, in any cell above its check, nor in the sources right under it (tests/answer_text.py says
how an answer is matched: names, their words in a row, numbers, versions). The cells under a
prediction's check are its outcome: tagged {"kipviz": {"outcome": ID}}, folded until it is answered
(kipviz.course.reveal; tests/browser/test_lab_notebooks.py checks the folding in the page)."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from kipviz.course.exercises import EXERCISES, exercise
from kipviz.course.teach import check
from tests import answer_text

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _cells():
    """(notebook, index, cell) for every code cell of the stored notebooks."""
    for path in NOTEBOOKS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code":
                yield path.name, i, cell


def _tag(cell, key):
    return (cell.metadata.get("kipviz") or {}).get(key)


LEARNER = {_tag(c, "exercise"): (nb, i, c) for nb, i, c in _cells() if _tag(c, "exercise")}
CHECKS = {_tag(c, "check"): (nb, i, c) for nb, i, c in _cells() if _tag(c, "check")}


def texts(value) -> list[str]:
    """The texts an answer could be written as: "UNKNOWN_TOPIC_ID", "5", "True"; tuples element-wise."""
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in texts(v)]
    return [value] if isinstance(value, str) else [str(value)]


def occurs(text: str, where: str) -> bool:
    """`text` as a whole token of `where` (not inside a longer word or number)."""
    return re.search(rf"(?<![\w.-]){re.escape(text)}(?![\w-]|\.\d)", where) is not None


def test_occurs_is_a_whole_token_match():
    assert occurs("5", "answer = 5") and occurs("5", "(5)") and occurs("True", "True or False")
    assert not occurs("5", "v5 and 15 and 2.5 and 5.0") and not occurs("3-6", "13-6")
    assert occurs("ACQUIRED", "It reverts to ACQUIRED, then") and not occurs("ACQUIRED", "NOT_ACQUIRED_YET")


def test_every_exercise_cell_is_tagged_and_registered():
    """Each registered exercise has one learner cell followed by its (not editable) check cell, and no
    code cell outside the registry still calls check(answer, ...) with a written-out answer."""
    assert set(LEARNER) == set(EXERCISES), "learner cells and kipviz.course.exercises disagree"
    assert set(CHECKS) == set(EXERCISES)
    for ex_id, (nb, i, cell) in LEARNER.items():
        check_nb, j, check_cell = CHECKS[ex_id]
        assert (check_nb, j) == (nb, i + 1), f"{ex_id}: the check cell must follow the learner cell"
        assert check_cell.metadata.get("editable") is False and check_cell.metadata.get("deletable") is False
        assert f"exercise({ex_id!r}).check(answer" in check_cell.source
        assert "..." in cell.source and "check" not in cell.source, f"{nb} cell {i}: only the blank"
    for nb, i, cell in _cells():
        assert not re.search(r"(?<![.\w])check\(\s*answer", cell.source), f"{nb} cell {i}: an unregistered check(answer, ...)"


def _no_input_ids():
    return sorted(k for k, e in EXERCISES.items() if not e.inputs)


@pytest.mark.parametrize("ex_id", _no_input_ids())
def test_the_answer_is_not_given_away(ex_id):
    ex = exercise(ex_id)
    _assert_hidden(ex_id, ex.expected())


def _notebook(ex_id: str) -> Path:
    return next(p for p in NOTEBOOKS if p.name.startswith(ex_id.split("-")[0] + "_"))


def _assert_hidden(ex_id, expected):
    ex = exercise(ex_id)
    nb, i, cell = LEARNER[ex_id]
    for text in texts(expected):
        assert not occurs(text, cell.source), f"{nb} cell {i}: the answer {text!r} is in the learner's cell"
        assert not occurs(text, ex.hint), f"{ex_id}: the hint gives the answer {text!r} away"
    cells = answer_text.read(_notebook(ex_id))
    problems = answer_text.given_away(ex, expected, cells, answer_text.places(cells)[ex_id])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_outcomes_are_folded_behind_their_exercise(path):
    cells = answer_text.read(path)
    problems = answer_text.fold_problems(cells, answer_text.places(cells), EXERCISES)
    assert not problems, "\n".join(problems)


def test_the_answer_text_matcher_finds_what_it_should():
    pats = answer_text.patterns
    def found(value, text, unit=""):
        return [part for part, _, p in pats(value, unit) if p.search(text)]
    assert found("PRODUCER_FENCED", "a producer fenced while staging") == ["PRODUCER_FENCED"]
    assert found("PRODUCER_FENCED", "run kip1289.case03 ... # the zombie's call: PRODUCER_FENCED")
    assert not found("PRODUCER_FENCED", "the producer is fenced") and not found("ACQUIRED", "NOT_ACQUIRED_YET")
    assert found("STALE_MEMBER_EPOCH", "kip1289.case08_stale_member_epoch") and found("tag-reused", "tag reused")
    assert found(5, "the limit (5)") and found(5, "the fifth delivery") and found(5, "five times")
    assert not found(5, "v5, 15, 2.5, 5.0, KIP-516, 0-5 and 4.5") and found(5, "falls back to v5", "version")
    assert found("3-6", "keep the field for v3–6") and not found("3-6", "13-6") and not found(True, "True/False")
    assert answer_text.in_hint("PRODUCER_FENCED", "An older producer epoch is fenced: which error?")
    assert not answer_text.in_hint("PRODUCER_FENCED", "Like a zombie's call.")
    assert answer_text.comments("x = 5  # five\ny = '# not a comment'") == "# five"


def test_notebook_inputs_exercises_are_hidden_too():
    """Exercises whose answer comes from the notebook's own objects: 04 is run here (fast, no Spark);
    07's are computed from the sample data in tests/test_spark_analyses-style Spark cells (below)."""
    ns = _run_until(ROOT / "notebooks" / "04_consumer_groups.ipynb", "04-2")
    assert {"04-1", "04-2"} <= set(ns["_expected"])
    for ex_id, expected in ns["_expected"].items():
        _assert_hidden(ex_id, expected)
    assert ns["_expected"] == {"04-1": "FENCED_MEMBER_EPOCH", "04-2": "ILLEGAL_GENERATION"}


def _run_until(path: Path, last: str) -> dict:
    """Execute a notebook's code cells in one namespace up to the check cell of exercise `last`,
    recording each exercise's expected answer (the learner's blank stays ...)."""
    from kipviz.course.exercises import Exercise
    expected: dict = {}
    real = Exercise.check

    def recording(self, answer, **inputs):
        expected[self.id] = self.expected(**inputs)
        return real(self, answer, **inputs)
    ns: dict = {"_expected": expected}
    Exercise.check = recording
    try:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            exec(compile(cell.source, f"{path.name}", "exec"), ns)
            if _tag(cell, "check") == last:
                break
    finally:
        Exercise.check = real
    return ns


# The answers as the KIPs and Kafka give them: the registry computes them from the model, and these
# pin the model's behaviour (a change in the model that changes an answer must be a deliberate one).
KNOWN = {"00-1": 9, "01-1": 202, "01-2": 39, "01-3": 16, "02-1": 40, "02-2": "ILLEGAL_GENERATION",
         "03-1": "UNKNOWN_TOPIC_ID", "03-2": "UNKNOWN_TOPIC_ID", "05-1": ("ILLEGAL_GENERATION", "GROUP_ID_NOT_FOUND"),
         "05-2": ("UNKNOWN_TOPIC_ID", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION"),
         "05-3": 5, "06-1": 5, "06-2": True, "06-3": False, "06-4": "PRODUCER_FENCED", "06-5": False,
         "06-6": "ACQUIRED", "06-7": False, "06-8": "STALE_MEMBER_EPOCH", "06-9": False,
         "06-10": "INVALID_RECORD_STATE", "06-11": False, "06-12": True, "06-13": True, "06-14": "PRODUCER_FENCED",
         "08-1": "StreamsGroupTopologyDescriptionUpdate", "08-2": 8, "08-3": "3-6", "08-4": "tag-reused",
         "09-1": "latest", "10-1": "writer-old", "10-2": "UNKNOWN_MEMBER_ID"}


@pytest.mark.parametrize("ex_id", sorted(KNOWN))
def test_computed_answers_are_the_known_ones(ex_id):
    assert exercise(ex_id).expected() == KNOWN[ex_id]


def test_the_check_reveals_the_answer_only_in_a_closed_solution():
    ex = exercise("03-1")
    blank = ex.check(...)
    assert not blank and "Not answered yet" in repr(blank) and "UNKNOWN_TOPIC_ID" not in repr(blank)
    page = blank._repr_html_()
    assert "<details" in page and "<details open" not in page and "Show solution</summary>" in page
    assert "UNKNOWN_TOPIC_ID" in page.split("<details", 1)[1]        # only inside the folded element
    wrong = ex.check("UNKNOWN_TOPIC_OR_PARTITION")
    assert not wrong and ex.hint in repr(wrong) and "UNKNOWN_TOPIC_ID" not in repr(wrong)
    assert ex.check("UNKNOWN_TOPIC_ID")
    assert not exercise("05-1").check(("ILLEGAL_GENERATION", ...))       # half answered is not answered
    assert not check(None, 3) and check(3, 3)


def test_the_live_notebooks_spark_exercise_is_hidden():
    """09-2's answer comes from the recording of real clients; the notebook aborts one transaction
    of shop-1 (notebooks/src/09_live_cluster.py), so the answer is 1 and must not be given away."""
    src = next(c.source for c in nbformat.read(ROOT / "notebooks" / "09_live_cluster.ipynb", as_version=4).cells
               if "abort_transaction" in c.source)
    assert src.count("abort_transaction(") == 1
    _assert_hidden("09-2", 1)
    with pytest.raises(TypeError, match="txns"):
        exercise("09-2").expected()


def test_an_exercise_needing_notebook_objects_says_so():
    with pytest.raises(TypeError, match="orders"):
        exercise("07-1").expected()
    with pytest.raises(KeyError, match="no exercise"):
        exercise("99-1")


@pytest.mark.spark
def test_spark_exercises_are_hidden(spark):  # noqa: F811
    import kipviz.spark as ks
    samples = ROOT / "sample_data"
    regular = ks.read_samples(spark, samples / "regular_eos")
    kip516 = ks.decode_all(ks.read_samples(spark, samples / "kip516"))
    txns = ks.transactions(ks.decode_all(regular))
    errs = ks.kip1319_errors(ks.decode_all(ks.read_samples(spark, samples / "kip1319")))
    values = {"07-1": exercise("07-1").expected(orders=regular.topic("orders")),
              "07-2": exercise("07-2").expected(kip516=kip516),
              "07-3": exercise("07-3").expected(txns=txns),
              "07-4": exercise("07-4").expected(errs=errs),
              "07-5": "duplicate-output"}     # the kind kipviz.eos names a twice-committed output
    for ex_id, value in values.items():
        _assert_hidden(ex_id, value)
    assert values["07-1"] == 8 and values["07-4"] == "ILLEGAL_GENERATION"


from tests.spark_session import spark  # noqa: E402,F401
