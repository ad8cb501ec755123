"""The notebooks as a course: what each one says about itself (title, learning objectives,
prerequisites, time, exercises, summary, the seed KIPs it links), read from the notebook files.

    from kipviz import course
    course.contents("notebooks")        # a table of every notebook (links, time, prerequisites, KIPs)
    course.outline("notebooks/03_topic_ids.ipynb").minutes      # 30
    course.problems(course.outline(path))                       # [] when the teaching frame is complete

The welcome notebook's table, `kipviz export`'s index page and the structure test all read this."""
from __future__ import annotations

import ast
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SEED_KIPS", "KIPS", "kip_link", "Outline", "outline", "course", "problems", "contents", "Contents"]

# The KIPs the kit is about (docs/facts.md): the notebooks link each one they mention.
SEED_KIPS: dict[int, tuple[str, str]] = {
    516: ("Topic Identifiers",
          "https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers"),
    848: ("The Next Generation of the Consumer Rebalance Protocol",
          "https://cwiki.apache.org/confluence/display/KAFKA/"
          "KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol"),
    1289: ("Support Transactional Acknowledgments for Share Groups",
           "https://cwiki.apache.org/confluence/display/KAFKA/"
           "KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups"),
    1319: ("Align TxnOffsetCommit API with OffsetCommit API",
           "https://cwiki.apache.org/confluence/display/KAFKA/"
           "KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API"),
}


# ...and the released KIPs the course builds on: a notebook that mentions one links its page, and the
# contents table lists it (share groups, KIP-932, for 06 and 09)
KIPS: dict[int, tuple[str, str]] = {
    **SEED_KIPS,
    932: ("Queues for Kafka", "https://cwiki.apache.org/confluence/display/KAFKA/KIP-932%3A+Queues+for+Kafka"),
}


def kip_link(number: int) -> str:
    """Markdown link to a KIP's page the course names: [KIP-516](https://cwiki...)."""
    return f"[KIP-{number}]({KIPS[number][1]})"


@dataclass
class Outline:
    """What a notebook says about itself: title, objectives, prerequisites, minutes and KIPs."""
    path: Path
    title: str = ""
    objectives: list[str] = field(default_factory=list)
    prerequisites: str = ""
    minutes: int | None = None
    exercises: list[str] = field(default_factory=list)            # exercise headings
    unchecked_exercises: list[str] = field(default_factory=list)  # exercise sections without a check(...)
    checks: int = 0
    hintless_checks: list[str] = field(default_factory=list)      # check(...) calls with no hint (outside solutions)
    summary: bool = False
    kips_mentioned: set[int] = field(default_factory=set)
    kips_linked: set[int] = field(default_factory=set)
    stored_outputs: int = 0

    @property
    def name(self) -> str:
        """The notebook's file name without its suffix ("03_topic_ids")."""
        return self.path.stem

    @property
    def number(self) -> str:
        """The notebook's number ("03")."""
        return self.name.split("_", 1)[0]

    @property
    def seed_kips(self) -> list[int]:
        """Seed KIPs this notebook links, in number order."""
        return sorted(k for k in self.kips_linked if k in SEED_KIPS)

    @property
    def kips(self) -> list[int]:
        """The course's KIPs (KIPS: the seed KIPs and those it builds on) this notebook links."""
        return sorted(k for k in self.kips_linked if k in KIPS)


_HEADING = re.compile(r"^#{1,6}\s+(.*\S)\s*$", re.M)
_MD_LINK = re.compile(r"\[[^\]]*\]\((https?://[^)\s]+)\)")
_KIP = re.compile(r"KIP-(\d+)")
_OBJECTIVE = re.compile(r"^\s*\d+\.\s+(.*\S)")
_PREREQ = re.compile(r"Prerequisites:?\*{0,2}:?\s*(.*?)\s*(?:\*\*|$)", re.M)
_TIME = re.compile(r"Time to complete:?\*{0,2}:?\s*(?:about\s+|~\s*)?(\d+)\s*min", re.I)


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _registered_exercise(f) -> str | None:
    """For `exercise("ID").check`: the registered exercise's hint ("" if it has none or is unknown)."""
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name)
            and f.value.func.id == "exercise" and f.value.args and isinstance(f.value.args[0], ast.Constant)):
        return None
    from .exercises import EXERCISES
    ex = EXERCISES.get(f.value.args[0].value)
    return ex.hint.strip() if ex else ""


def _check_calls(code: str) -> list[tuple[str, bool]]:
    """(call text, has a hint) for every check(...) call in a code cell."""
    try:
        tree = ast.parse(code)
    except SyntaxError:                       # IPython magics: fall back to a plain search
        return [(m.group(0), "hint" in code[m.start():m.start() + 400])
                for m in re.finditer(r"\bcheck\(", code)]
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if not ((isinstance(f, ast.Name) and f.id == "check") or (isinstance(f, ast.Attribute) and f.attr == "check")):
            continue
        registered = _registered_exercise(f)
        if registered is not None:          # exercise("03-1").check(answer): the hint is in kipviz.course.exercises
            out.append((ast.get_source_segment(code, node) or "check(...)", bool(registered)))
            continue
        hint = node.args[2] if len(node.args) > 2 else next((k.value for k in node.keywords if k.arg == "hint"), None)
        empty = hint is None or (isinstance(hint, ast.Constant) and not str(hint.value).strip())
        out.append((ast.get_source_segment(code, node) or "check(...)", not empty))
    return out


def outline(path) -> Outline:
    """What notebook `path` says about itself."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    o = Outline(path=path)
    section: str | None = None            # the exercise heading we are under, if any
    solution = False                      # under a "Solution(s)" heading: checks there need no hint
    checked: dict[str, bool] = {}
    for cell in nb.get("cells", []):
        text = _source(cell)
        if cell.get("cell_type") == "markdown":
            _front_matter(o, text)
            section, solution = _headings(o, text, checked, section, solution)
            o.kips_mentioned |= {int(k) for k in _KIP.findall(text)}
            o.kips_linked |= {int(k) for url in _MD_LINK.findall(text) for k in _KIP.findall(url)}
        elif cell.get("cell_type") == "code":
            if cell.get("outputs") or cell.get("execution_count"):
                o.stored_outputs += 1
            calls = [] if solution else _check_calls(text)
            o.checks += len(calls)
            o.hintless_checks += [c for c, hinted in calls if not hinted]
            if calls and section is not None:
                checked[section] = True
    o.unchecked_exercises = [h for h, ok in checked.items() if not ok]
    return o


def _front_matter(o: Outline, text: str) -> None:
    """The title, objectives, prerequisites and time, each from the first markdown cell that has it."""
    if not o.title:
        m = re.search(r"^#\s+(.*\S)", text, re.M)
        o.title = m.group(1) if m else ""
    if "Learning objectives" in text and not o.objectives:
        after = text.split("Learning objectives", 1)[1]
        o.objectives = [m.group(1) for line in after.splitlines() if (m := _OBJECTIVE.match(line))]
    if not o.prerequisites and (m := _PREREQ.search(text)):
        o.prerequisites = m.group(1).rstrip(". ")
    if o.minutes is None and (m := _TIME.search(text)):
        o.minutes = int(m.group(1))


def _headings(o: Outline, text: str, checked: dict, section: str | None, solution: bool) -> tuple[str | None, bool]:
    """A markdown cell's headings: exercises, solutions, the summary. Returns the exercise heading
    we are now under (if any) and whether under a solution heading."""
    for heading in _HEADING.findall(text):
        solution = bool(re.search(r"\bsolution", heading, re.I))
        if re.search(r"\bexercise", heading, re.I):
            section = heading
            o.exercises.append(heading)
            checked.setdefault(heading, False)
        elif not re.search(r"\bhint", heading, re.I):
            section = None
        if re.match(r"summary\b", heading, re.I):
            o.summary = True
    return section, solution


def course(directory="notebooks") -> list[Outline]:
    """Every notebook in `directory`, in file-name order."""
    return [outline(p) for p in sorted(Path(directory).glob("*.ipynb"))]


def problems(o: Outline, known: set[str] | None = None) -> list[str]:
    """What notebook `o` lacks of the teaching frame (objectives, prerequisites, time, exercises with
    hinted checks, summary, links to the seed KIPs it mentions, no stored outputs); [] if nothing.
    `known`: the notebook names a prerequisite may name."""
    p = []
    if not o.title:
        p.append("no title (a '# ' heading in the first markdown cell)")
    if len(o.objectives) < 2:
        p.append("fewer than two numbered learning objectives after 'Learning objectives'")
    if not o.prerequisites:
        p.append("no '**Prerequisites:**' line")
    if o.minutes is None:
        p.append("no '**Time to complete:** about N minutes'")
    if not o.exercises:
        p.append("no exercise (a heading with 'Exercise')")
    p += [f"exercise {h!r} has no check(...) cell" for h in o.unchecked_exercises]
    p += [f"check without a hint: {c}" for c in o.hintless_checks]
    if not o.summary:
        p.append("no '## Summary' section")
    if not o.seed_kips:
        p.append("links no seed KIP page (" + ", ".join(f"KIP-{k}" for k in SEED_KIPS) + ")")
    p += [f"mentions KIP-{k} without linking its page" for k in sorted(o.kips_mentioned & set(KIPS))
          if k not in o.kips_linked]
    if o.stored_outputs:
        p.append(f"{o.stored_outputs} code cell(s) stored with outputs or execution counts")
    if known is not None:
        p += [f"prerequisite `{name}` is not a notebook here"
              for name in re.findall(r"`(\d\d_[A-Za-z0-9_]+)`", o.prerequisites) if name not in known]
    return p


class Contents:
    """The course as a table (HTML in a notebook, text elsewhere)."""

    def __init__(self, outlines: list[Outline], link_suffix: str = ".ipynb"):
        self.outlines = outlines
        self.link_suffix = link_suffix

    @property
    def minutes(self) -> int:
        """The course's minutes, every notebook's summed."""
        return sum(o.minutes or 0 for o in self.outlines)

    def rows(self) -> list[dict]:
        """One row per notebook: name, title, minutes, prerequisites and KIPs."""
        return [{"notebook": o.name, "title": o.title, "minutes": o.minutes, "prerequisites": o.prerequisites,
                 "KIPs": ", ".join(f"KIP-{k}" for k in o.kips)} for o in self.outlines]

    def __repr__(self) -> str:
        lines = [f"{o.name:<28} {o.minutes or '?':>3} min  {o.title}" for o in self.outlines]
        return "\n".join(lines + [f"{'total':<28} {self.minutes:>3} min"])

    def _prerequisites_html(self, text: str) -> str:
        """Markdown code spans as HTML: a notebook name links to it, anything else is <code>."""
        def span(m):
            inner = html.escape(m.group(1))
            if re.fullmatch(r"\d\d_[A-Za-z0-9_]+", m.group(1)):
                return f'<a href="{inner}{html.escape(self.link_suffix)}"><code>{inner}</code></a>'
            return f"<code>{inner}</code>"
        return re.sub(r"`([^`]+)`", span, html.escape(text, quote=False).replace("&#x27;", "'"))

    def _repr_html_(self) -> str:
        def kips(o):
            return ", ".join(f'<a href="{html.escape(KIPS[k][1])}">KIP-{k}</a>' for k in o.kips)
        rows = "".join(
            f'<tr><td><a href="{html.escape(o.name + self.link_suffix)}">{html.escape(o.name)}</a></td>'
            f"<td>{html.escape(o.title)}</td><td>{o.minutes or '?'} min</td>"
            f"<td>{self._prerequisites_html(o.prerequisites)}</td><td>{kips(o)}</td></tr>" for o in self.outlines)
        return ("<table><thead><tr><th>notebook</th><th>title</th><th>time</th><th>prerequisites</th>"
                f"<th>KIPs</th></tr></thead><tbody>{rows}</tbody>"
                f"<tfoot><tr><td></td><td>total</td><td>{self.minutes} min</td><td></td><td></td></tr></tfoot>"
                "</table>")


def contents(directory="notebooks", *, link_suffix: str = ".ipynb") -> Contents:
    """Every notebook in `directory` as a table with links (to .ipynb, or .html for an exported site)."""
    return Contents(course(directory), link_suffix)
