"""Issue 23: no function in kipviz/ over MAX_LINES lines or over MAX_CC cyclomatic complexity
(radon's count) without a reason written next to it: a comment line `# size: <reason>` directly
above the def (above its decorators). A marker on a function under both limits fails too, so the
reasons do not outlive the code they excuse. Run with -s to see the totals."""
import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

radon_complexity = pytest.importorskip("radon.complexity", reason="radon is a dev dependency (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 60
MAX_CC = 20
MARKER = re.compile(r"^\s*# size: \S.*\S")


@dataclass(frozen=True)
class Func:
    where: str          # path:line of the def
    name: str
    lines: int          # end_lineno - lineno + 1 of the def (decorators not counted)
    cc: int             # radon's cyclomatic complexity (closures are counted on their own)
    marked: bool

    @property
    def big(self) -> bool:
        return self.lines > MAX_LINES or self.cc > MAX_CC

    def __str__(self) -> str:
        return f"{self.where} {self.name}: {self.lines} lines, complexity {self.cc}"


def _radon_blocks(blocks):
    # radon nests methods under classes and closures under functions; flatten to (lineno, cc)
    stack = list(blocks)
    while stack:
        b = stack.pop()
        stack.extend(getattr(b, "methods", ()))
        stack.extend(getattr(b, "closures", ()))
        stack.extend(getattr(b, "inner_classes", ()))
        if not hasattr(b, "methods"):
            yield b.lineno, b.complexity


def measure(source: str, name: str) -> list[Func]:
    lines = source.splitlines()
    cc = dict(_radon_blocks(radon_complexity.cc_visit(source)))
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        top = min([node.lineno] + [d.lineno for d in node.decorator_list])
        above = lines[top - 2] if top >= 2 else ""
        if node.lineno not in cc:   # radon does not descend into a class defined inside a function
            seg = textwrap.dedent("\n".join(lines[node.lineno - 1:node.end_lineno]))
            cc[node.lineno] = max(c for _, c in _radon_blocks(radon_complexity.cc_visit(seg)))
        out.append(Func(f"{name}:{node.lineno}", node.name, node.end_lineno - node.lineno + 1,
                        cc[node.lineno], bool(MARKER.match(above))))
    return out


@pytest.fixture(scope="module")
def funcs() -> list[Func]:
    out = []
    for path in sorted((ROOT / "kipviz").rglob("*.py")):
        out += measure(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return out


def _totals(funcs: list[Func]) -> str:
    return (f"{len(funcs)} functions; {sum(f.lines > MAX_LINES for f in funcs)} over {MAX_LINES} lines, "
            f"{sum(f.cc > MAX_CC for f in funcs)} over complexity {MAX_CC}, "
            f"{sum(f.marked for f in funcs)} kept whole with a `# size:` reason")


def test_totals(funcs, record_property):
    print("\n" + _totals(funcs))
    for label, key in (("longest", lambda f: f.lines), ("most complex", lambda f: f.cc)):
        print(f"{label}:")
        for f in sorted(funcs, key=key, reverse=True)[:10]:
            print(f"  {f}{'  [size: marked]' if f.marked else ''}")
    record_property("complexity_totals", _totals(funcs))
    assert all(f.cc > 0 for f in funcs)


def test_big_functions_carry_a_reason(funcs):
    unmarked = [f for f in funcs if f.big and not f.marked]
    assert not unmarked, (f"{len(unmarked)} functions over {MAX_LINES} lines or complexity {MAX_CC} without a "
                          "`# size: <reason>` comment directly above the def (split them, or say why not):\n  "
                          + "\n  ".join(map(str, unmarked)) + "\n" + _totals(funcs))


def test_reasons_sit_on_big_functions(funcs):
    stale = [f for f in funcs if f.marked and not f.big]
    assert not stale, ("`# size:` reasons on functions now under both limits (remove the comment):\n  "
                       + "\n  ".join(map(str, stale)))


def test_the_check_sees_size_complexity_and_markers():
    # the measure itself: a long function, a branchy decorated one with its reason above the
    # decorator, a marker too far up, and a small one
    branchy = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(MAX_CC))
    long_body = "\n".join(f"    y = {i}" for i in range(MAX_LINES))
    src = (f"def long():\n{long_body}\n\n"
           f"# size: a flat table of cases reads best as one\n@staticmethod\ndef branchy(x):\n{branchy}\n\n"
           f"# size: stale\n\ndef small():\n    return 1\n")
    got = {f.name: f for f in measure(src, "t.py")}
    assert got["long"].lines == MAX_LINES + 1 and got["long"].big and not got["long"].marked
    assert got["branchy"].cc == MAX_CC + 1 and got["branchy"].big and got["branchy"].marked
    assert got["small"].lines == 2 and got["small"].cc == 1 and not got["small"].big and not got["small"].marked
