"""Every notebook has the teaching frame (kipviz.course reads it): title, learning objectives,
prerequisites, time, exercises whose check(...) gives a hint, a summary, links to the seed KIPs it
mentions, and no stored outputs. The workshop guide's agenda and solutions agree with the notebooks."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from kipviz import course

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KNOWN = {p.stem for p in NOTEBOOKS}
GUIDE = (ROOT / "docs" / "workshop.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_has_the_teaching_frame(path):
    o = course.outline(path)
    assert course.problems(o, known=KNOWN) == [], path.name
    assert o.title.startswith(o.number), "the title starts with the notebook's number"


def _notebook(tmp_path, cells, name="09_x.ipynb") -> Path:
    path = tmp_path / name
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
GOOD = [
    md("# 09 · X\n\n**Learning objectives** — after this notebook you can\n1. one;\n2. two.\n\n"
       "**Prerequisites:** `00_welcome`. **Time to complete:** about 20 minutes.\n"
       "**Seeds:** " + course.kip_link(516) + "."),
    md("### Exercise 1\nWhat?"),
    code("answer = None\ncheck(answer, 3, hint='count them')"),
    md("### Solutions"),
    code("print(check(3, 3))"),
    md("## Summary\n\n* done"),
]


def test_a_complete_notebook_has_no_problems(tmp_path):
    o = course.outline(_notebook(tmp_path, GOOD))
    assert course.problems(o, known={"00_welcome"}) == []
    assert (o.title, o.minutes, o.prerequisites, o.objectives) == ("09 · X", 20, "`00_welcome`", ["one;", "two."])
    assert o.exercises == ["Exercise 1"] and o.checks == 1 and o.seed_kips == [516]


def test_each_missing_piece_is_named(tmp_path):
    cells = [md("Some text about KIP-1319 and KIP-848."), code("x = 1")]
    cells[1].outputs = [nbformat.v4.new_output("stream", text="1")]
    problems = course.problems(course.outline(_notebook(tmp_path, cells)), known=set())
    for expected in ("no title", "learning objectives", "Prerequisites", "Time to complete", "no exercise",
                     "Summary", "links no seed KIP page", "mentions KIP-848 without linking",
                     "mentions KIP-1319 without linking", "stored with outputs"):
        assert any(expected in p for p in problems), (expected, problems)


def test_an_exercise_needs_a_check_with_a_hint(tmp_path):
    cells = [*GOOD[:2], code("answer = None\ncheck(answer, 3)"), md("### Exercise 2\nAnd?"), code("answer = 2"),
             *GOOD[3:]]
    problems = course.problems(course.outline(_notebook(tmp_path, cells)), known={"00_welcome"})
    assert problems == ["exercise 'Exercise 2' has no check(...) cell", "check without a hint: check(answer, 3)"]


def test_a_prerequisite_must_be_a_notebook(tmp_path):
    o = course.outline(_notebook(tmp_path, GOOD))
    assert course.problems(o, known={"01_wire_format"}) == ["prerequisite `00_welcome` is not a notebook here"]


def test_contents_table_links_every_notebook():
    table = course.contents(ROOT / "notebooks")
    html = table._repr_html_()
    for path in NOTEBOOKS:
        assert f'href="{path.name}"' in html
    assert table.minutes == sum(course.outline(p).minutes for p in NOTEBOOKS)
    assert f"{table.minutes} min" in html and f"{table.minutes} min" in repr(table)
    # the share-group notebooks name KIP-932, which they build on (issue 31), with a link to its page
    kips = {r["notebook"]: r["KIPs"].split(", ") for r in table.rows()}
    assert "KIP-932" in kips["06_share_group_eos"] and "KIP-932" in kips["09_live_cluster"]
    assert html.count(course.KIPS[932][1]) == 2


# ---- the workshop guide -----------------------------------------------------------------------------
PLANS = {"2 hours": 120, "half day": 240}


def _agenda(plan: str = "2 hours") -> list[tuple[int, str]]:
    part = GUIDE.split(f"## Agenda: {plan}\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\|\s*\d:\d\d\s*\|\s*(\d+)\s*\|\s*([^|]*?)\s*\|", part, re.M)
    return [(int(m), nb) for m, nb in rows]


def _section(name: str) -> str | None:
    m = re.search(rf"^### {re.escape(name)} — about (\d+) minutes self-paced\n(.*?)(?=^##)", GUIDE, re.M | re.S)
    return m and m.group(0)


@pytest.mark.parametrize("plan", PLANS)
def test_workshop_plans_cover_04_05_06_and_live_clients_in_course_order(plan):
    agenda = _agenda(plan)
    assert sum(m for m, _ in agenda) == PLANS[plan]
    assert f"Total: {PLANS[plan]} minutes." in GUIDE.split(f"## Agenda: {plan}\n", 1)[1].split("\n## ", 1)[0]
    notebooks = [nb for _, nb in agenda if nb != "—"]
    assert notebooks and set(notebooks) <= KNOWN
    assert notebooks == sorted(notebooks)            # in course order
    assert {"04_consumer_groups", "05_txn_offset_commit_v6", "06_share_group_eos", "09_live_cluster"} <= set(notebooks)
    part = GUIDE.split(f"## Agenda: {plan}\n", 1)[1].split("\n## ", 1)[0]
    assert "kipviz serve" in part                    # the live-client segment
    starts = re.findall(r"^\|\s*(\d):(\d\d)\s*\|\s*(\d+)", part, re.M)
    t = 0
    for h, mm, minutes in starts:                    # each row starts where the previous one ended
        assert int(h) * 60 + int(mm) == t
        t += int(minutes)


def test_workshop_guide_names_only_existing_notebooks_and_commands():
    from kipviz.cli import build_parser
    named = set(re.findall(r"\b(\d\d_[a-z0-9_]+[a-z0-9])\b", GUIDE))
    assert named and named <= KNOWN, named - KNOWN
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = set(re.findall(r"`(?:\.venv/bin/)?kipviz ([a-z-]+)", GUIDE))
    assert {"serve", "export"} <= commands and commands <= set(sub.choices), commands - set(sub.choices)


def test_workshop_guide_has_facilitator_notes_discussion_prompts_and_measured_times():
    notes = GUIDE.split("## Facilitator notes and discussion prompts", 1)[1].split("\n## ", 1)[0]
    for plan in PLANS:
        for nb in {nb for _, nb in _agenda(plan) if nb != "—"}:
            item = re.search(rf"^\* \*\*{re.escape(nb)}\.?\*\*.*?(?=^\* |\Z)", notes, re.M | re.S)
            assert item and "*Discuss:*" in item.group(0), nb
    times = GUIDE.split("## Measured run times", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d\d_[a-z0-9_]+) \|(.*)$", times, re.M))
    assert set(rows) == KNOWN, KNOWN ^ set(rows)
    assert "TIMES_TABLE" not in GUIDE


def test_workshop_guide_has_solutions_for_every_notebook_it_covers():
    for nb in {nb for _, nb in _agenda() if nb != "—"}:
        assert _section(nb), f"docs/workshop.md has no section for {nb}"
    for path in NOTEBOOKS:
        assert path.stem in GUIDE, f"docs/workshop.md does not mention {path.stem}"
        section = _section(path.stem)
        if section is None:
            continue
        o = course.outline(path)
        minutes = int(re.search(r"about (\d+) minutes", section).group(1))
        assert minutes == o.minutes, f"{path.stem}: the guide says {minutes} min, the notebook {o.minutes}"
        assert section.count("**Solution:**") == len(o.exercises), path.stem
        assert section.count("Teaches:") == len(o.exercises), path.stem


def test_workshop_guide_says_what_to_do_when_binder_is_slow():
    slow = GUIDE.split("## When Binder is slow or full", 1)[1]
    assert "kipviz export" in slow and "make lab" in slow and "Binder is full" in slow
    assert "kipviz export -o site" in GUIDE


# ---- the notebooks are what their sources write -----------------------------------------------------
def test_stored_notebooks_are_what_their_sources_build(tmp_path):
    """Every notebook (and dashboard) is built from its source in notebooks/src/ by
    tools/build_notebooks.py, unchanged: an edit made in JupyterLab and saved, or a source changed
    without rebuilding, shows up here."""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_notebooks.py")], capture_output=True, text=True,
                       env=dict(os.environ, KIPVIZ_NOTEBOOKS_OUT=str(tmp_path)), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.ipynb"))
    stored = sorted(p.relative_to(ROOT / "notebooks") for p in (ROOT / "notebooks").rglob("*.ipynb")
                    if ".ipynb_checkpoints" not in p.parts)
    assert written == stored, "a notebook without a source in notebooks/src/, or a source whose notebook is missing"
    stale = [str(p) for p in written if (tmp_path / p).read_bytes() != (ROOT / "notebooks" / p).read_bytes()]
    assert stale == [], f"rebuild (python tools/build_notebooks.py, or make notebooks): {stale}"


def test_notebook_sources_pass_ruff():
    """The notebooks' code is linted like the library's (pyproject.toml's notebook ignores only)."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "notebooks/src"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
