"""Where an exercise's answer may not be written, and how an answer is written in text.

A learner sees, before answering exercise E: every cell above E's check cell (markdown as written,
code with its comments), E's hint, and the sources of the cells right under the check (up to the
next heading or exercise: the outputs there are E's folded outcome, their sources are not folded).
An answer is written as
* a name ("PRODUCER_FENCED", "tag-reused", "latest"): the name itself or its words in a row
  ("producer fenced", also inside a longer snake_case name: "case08_stale_member_epoch"), any case --
  searched in all of that text;
* a number (5): as a whole number ("(5)", not "v5", "15" or "2.5"), as a word ("five", "fifth"), and
  for a version answer as "v5" / "version 5" -- searched in E's own section (from its "#"/"##"
  heading) and only in markdown and code comments (code is full of small numbers);
* True/False: not searched (every yes/no question says "True/False").
The names of an exercise's vocabulary (the choices its question offers, e.g. the share-record states)
may be written above it, never in its hint. A hint also must not hold every word of a name answer.
Used by tests/test_predictions.py (the sources) and tests/browser/test_lab_notebooks.py (the page)."""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
ORDINALS = ["zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]


def tag(cell, key):
    return (cell.get("metadata", {}).get("kipviz") or {}).get(key)


def heading_level(cell) -> int:
    """The level of the heading a markdown cell starts with (0: it does not start with one)."""
    if cell.cell_type != "markdown":
        return 0
    m = re.match(r"\s*(#{1,6})\s", cell.source)
    return len(m.group(1)) if m else 0


@dataclass
class Place:
    """Where an exercise sits in its notebook: cell indexes."""
    learner: int
    check: int
    section: int                                        # its "#"/"##" heading (or 0)
    region: list[int] = field(default_factory=list)     # under the check, to the next heading or exercise


def places(cells) -> dict[str, Place]:
    out: dict[str, Place] = {}
    for i, cell in enumerate(cells):
        ex_id = tag(cell, "exercise")
        if not ex_id:
            continue
        check = next(j for j in range(i + 1, len(cells)) if tag(cells[j], "check") == ex_id)
        section = next((j for j in range(i, -1, -1) if 0 < heading_level(cells[j]) <= 2), 0)
        region = []
        for j in range(check + 1, len(cells)):
            if heading_level(cells[j]) or tag(cells[j], "exercise"):
                break
            region.append(j)
        out[ex_id] = Place(i, check, section, region)
    return out


def read(path: Path):
    return nbformat.read(path, as_version=4).cells


def comments(code: str) -> str:
    """The comments of a code cell (what a learner reads as prose in it)."""
    try:
        return "\n".join(t.string for t in tokenize.generate_tokens(io.StringIO(code).readline)
                         if t.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return code


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[\s_\-]+", name) if w]


def _name_pattern(name: str) -> re.Pattern:
    if re.fullmatch(r"\d+-\d+", name):                 # a version range "3-6": also "3–6", "v3-6"
        a, b = name.split("-")
        return re.compile(rf"(?<![\w.]){a}\s*[-–]\s*{b}(?![\w.])|(?<![\w.])v{a}\s*[-–]\s*{b}(?![\w.])")
    words = _words(name)
    phrase = r"[\s_\-]+".join(map(re.escape, words))
    if len(words) > 1:          # inside a longer snake_case name too: case08_stale_member_epoch
        return re.compile(rf"(?<![A-Za-z0-9]){phrase}(?![A-Za-z0-9])", re.I)
    return re.compile(rf"(?<![\w-]){phrase}(?![\w-])", re.I)


def _number_patterns(n: int, unit: str) -> list[re.Pattern]:
    pats = [re.compile(rf"(?<![\w.\-–]){n}(?![\w\-–]|\.\d)")]
    if 0 <= n < len(NUMBER_WORDS):
        pats.append(re.compile(rf"\b{NUMBER_WORDS[n]}\b", re.I))
    if 0 <= n < len(ORDINALS):
        pats.append(re.compile(rf"\b(?:{ORDINALS[n]}|{n}(?:st|nd|rd|th))\b", re.I))
    if unit == "version":
        pats.append(re.compile(rf"\bv{n}\b|\bversion {n}\b", re.I))
    return pats


def answer_parts(value) -> list:
    """The parts of an answer a text could give away: a tuple's elements; True/False none."""
    if isinstance(value, (tuple, list)):
        return [p for v in value for p in answer_parts(v)]
    if isinstance(value, bool) or value is None:
        return []
    return [value]


def patterns(value, unit: str = "", skip=frozenset()) -> list[tuple[str, str, re.Pattern]]:
    """(part, kind, pattern) for each way the answer is written; kind "name" or "number".
    Parts in `skip` (the exercise's vocabulary) are left out."""
    out = []
    for part in answer_parts(value):
        if str(part) in skip:
            continue
        if isinstance(part, int):
            out += [(str(part), "number", p) for p in _number_patterns(part, unit)]
        else:
            out.append((str(part), "name", _name_pattern(str(part))))
    return out


def in_hint(value, hint: str, unit: str = "") -> list[str]:
    """How the hint gives the answer away: a pattern, or every word of a name of several words."""
    found = [f"{part!r} ({p.pattern})" for part, _, p in patterns(value, unit) if p.search(hint)]
    for part in answer_parts(value):
        words = _words(str(part)) if isinstance(part, str) else []
        if len(words) > 1 and all(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", hint, re.I) for w in words):
            found.append(f"{part!r} (all its words)")
    return found


def given_away(ex, expected, cells, place: Place) -> list[str]:
    """Every cell text a learner sees before answering `ex` that writes its answer, and the hint."""
    problems = [f"{ex.id}: the hint gives {w} away" for w in in_hint(expected, ex.hint, ex.unit)]
    if ex.kind == "read":
        return problems
    skip = {str(v) for v in (ex.vocabulary() if ex.vocabulary else ())}
    pats = patterns(expected, ex.unit, skip)
    scopes = [(i, "above its check") for i in range(place.check + 1)] + [(i, "under its check") for i in place.region]
    for i, where in scopes:
        cell = cells[i]
        for part, kind, p in pats:
            if kind == "number":
                if where == "above its check" and i < place.section:
                    continue
                text = cell.source if cell.cell_type == "markdown" else comments(cell.source)
            else:
                text = cell.source
            m = p.search(text)
            if m:
                line = next(ln for ln in text.splitlines() if p.search(ln)).strip()
                problems.append(f"{ex.id}: cell {i} ({where}) writes the answer {part!r}: {line[:120]!r}")
    return problems


def fold_problems(cells, places_: dict[str, Place], exercises) -> list[str]:
    """Outcome cells that are not folded behind their exercise: a code cell under a predict exercise's
    check (to the next heading) without the outcome tag of that exercise, and an outcome tag that
    names no exercise or sits above that exercise's check."""
    problems = []
    for ex_id, place in places_.items():
        if exercises[ex_id].kind == "read":
            continue
        for i in place.region:
            cell = cells[i]
            if cell.cell_type == "code" and tag(cell, "outcome") != ex_id:
                problems.append(f"{ex_id}: cell {i} under its check is not folded behind it "
                                f"(tag it kipviz={{\"outcome\": \"{ex_id}\"}}): {cell.source.splitlines()[0][:80]!r}")
    for i, cell in enumerate(cells):
        ex_id = tag(cell, "outcome")
        if ex_id is None:
            continue
        if cell.cell_type != "code" or ex_id not in places_:
            problems.append(f"cell {i}: outcome tag {ex_id!r} on a {cell.cell_type} cell of no exercise here")
        elif i <= places_[ex_id].check:
            problems.append(f"cell {i}: the outcome of {ex_id} sits above its check (cell {places_[ex_id].check})")
    return problems
