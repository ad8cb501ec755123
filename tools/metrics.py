"""Size, complexity and import-graph numbers of the kipviz package (issue 23's before/after table).

    python tools/metrics.py [ROOT]     ROOT: a checkout (default: this one)

Prints: lines and modules; the largest files and functions; blocks over complexity 20 (radon) and
functions over 60 lines; cycles between kipviz's subpackages (grimp, counting imports inside
functions); imports of another module's private names."""
from __future__ import annotations

import ast
import sys
from pathlib import Path


def _functions(path: Path, tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{path}:{node.name}", node.end_lineno - node.lineno + 1


def _private_imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("kipviz")):
            found += [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def _cycles(root: Path) -> list[tuple[str, str]]:
    import grimp
    sys.path.insert(0, str(root))
    graph = grimp.build_graph("kipviz", cache_dir=None)
    packages = sorted(m for m in graph.find_children("kipviz"))
    pairs = []
    for i, a in enumerate(packages):
        for b in packages[i + 1:]:
            if graph.direct_import_exists(importer=a, imported=b, as_packages=True) and \
                    graph.direct_import_exists(importer=b, imported=a, as_packages=True):
                pairs.append((a, b))
    return pairs


def main(root: Path) -> None:
    from radon.complexity import cc_visit
    pkg = root / "kipviz"
    files = sorted(p for p in pkg.rglob("*.py") if "defs" not in p.parts)
    sizes, funcs, blocks, private = {}, [], [], 0
    for p in files:
        text = p.read_text(encoding="utf-8")
        rel = p.relative_to(root)
        sizes[rel] = text.count("\n")
        tree = ast.parse(text)
        funcs += list(_functions(rel, tree))
        private += len(_private_imports(tree))
        blocks += [(f"{rel}:{b.name}", b.complexity) for b in cc_visit(text)
                   for b in [b, *getattr(b, "methods", [])]]
    blocks = sorted(set(blocks), key=lambda x: -x[1])
    print(f"lines {sum(sizes.values())} in {len(files)} modules")
    print("largest files:", ", ".join(f"{k} {v}" for k, v in sorted(sizes.items(), key=lambda x: -x[1])[:8]))
    funcs.sort(key=lambda x: -x[1])
    print("longest functions:", ", ".join(f"{k} {v}" for k, v in funcs[:8]))
    print("most complex:", ", ".join(f"{k} {v}" for k, v in blocks[:8]))
    print(f"functions over 60 lines: {sum(1 for _, n in funcs if n > 60)}; "
          f"blocks over complexity 20: {sum(1 for _, c in blocks if c > 20)}")
    print(f"private-name imports across modules: {private}")
    cycles = _cycles(root)
    print(f"cycles between subpackages: {len(cycles)}" + (": " + ", ".join(f"{a}<->{b}" for a, b in cycles)
                                                         if cycles else ""))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve())
