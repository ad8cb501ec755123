"""Docstring coverage of kipviz's public definitions: modules, classes, functions and methods.

    python tools/docstrings.py               # the percent, then the count per package
    python tools/docstrings.py --missing     # every public definition without a docstring (path:line name)
    python tools/docstrings.py kipviz/draw   # one folder

Public: a module whose file name does not start with "_" (a package's __init__.py counts for the
package), and in it the classes, module-level functions and methods (of public classes) whose names
do not start with "_". Dunder methods (__init__, __repr__, ...) and functions nested in functions
are not counted. A property counts as a method. tests/test_docstrings.py holds the percent."""
from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _public(name: str) -> bool:
    return not name.startswith("_")


def definitions(folder: Path = ROOT / "kipviz"):
    """(path, line, qualified name, has a docstring) of every public definition under `folder`."""
    for path in sorted(folder.rglob("*.py")):
        if not (_public(path.stem) or path.name == "__init__.py"):
            continue
        rel = path.relative_to(folder.parent).as_posix()     # "kipviz/draw/flows.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        yield rel, 1, path.stem if path.name != "__init__.py" else path.parent.name, ast.get_docstring(tree) is not None
        yield from _members(rel, tree.body, "")


def _members(rel: str, body, prefix: str):
    for node in body:
        if isinstance(node, ast.ClassDef) and _public(node.name):
            yield rel, node.lineno, prefix + node.name, ast.get_docstring(node) is not None
            yield from _members(rel, node.body, prefix + node.name + ".")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
            yield rel, node.lineno, prefix + node.name, ast.get_docstring(node) is not None


def coverage(folder: Path = ROOT / "kipviz") -> float:
    """Percent of public definitions with a docstring."""
    defs = list(definitions(folder))
    return 100.0 * sum(d[3] for d in defs) / max(1, len(defs))


def main(argv=None) -> int:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=str(ROOT / "kipviz"))
    ap.add_argument("--missing", action="store_true", help="list the definitions without a docstring")
    args = ap.parse_args(argv)
    folder = Path(args.folder).resolve()
    defs = list(definitions(folder))
    done = sum(d[3] for d in defs)
    print(f"{100.0 * done / max(1, len(defs)):.1f} % of {len(defs)} public definitions have a docstring")
    if args.missing:
        for rel, line, name, has in defs:
            if not has:
                print(f"{rel}:{line} {name}")
    else:
        total, with_doc = Counter(), Counter()
        for rel, _line, _name, has in defs:
            pkg = "/".join(rel.split("/")[:2])
            total[pkg] += 1
            with_doc[pkg] += has
        for pkg in sorted(total):
            print(f"  {pkg:28} {with_doc[pkg]:4}/{total[pkg]:<4} {100.0 * with_doc[pkg] / total[pkg]:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
