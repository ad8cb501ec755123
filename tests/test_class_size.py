"""Issue 32: no class in kipviz/ over MAX_LINES lines. A coordinator holds its parts as fields
(Kafka's GroupCoordinatorShard holds its managers; kipviz.broker.transactions holds
txn_markers.MarkerChannel), rather than growing one class that owns every concern."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500


def class_sizes(source: str, where: str) -> list[tuple[int, str]]:
    """(lines, where:Class) of every class in `source`, nested ones included."""
    return [(n.end_lineno - n.lineno + 1, f"{where}:{n.lineno} {n.name}")
            for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)]


def test_the_measure_counts_a_class_from_its_line_to_its_end():
    src = "x = 1\nclass A:\n    a = 1\n\n    def f(self):\n        return 2\nclass B: pass\n"
    assert sorted(class_sizes(src, "m")) == [(1, "m:7 B"), (5, "m:2 A")]


def test_no_class_is_over_the_limit():
    sizes = [s for p in sorted((ROOT / "kipviz").rglob("*.py"))
             for s in class_sizes(p.read_text(), str(p.relative_to(ROOT)))]
    assert len(sizes) > 100, "the scan found the package's classes"
    big = sorted((s for s in sizes if s[0] > MAX_LINES), reverse=True)
    assert not big, f"classes over {MAX_LINES} lines: {big}"
