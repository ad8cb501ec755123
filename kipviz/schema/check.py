"""`python -m kipviz.schema.check [FILE...]`: validate kit definitions and compare them with
Kafka's own schema files (from ../shared/kafka or KIPVIZ_KAFKA_REF) at every shared version.
Without FILEs it checks the whole kit and then prints the release matrix: for every request, the
versions each Kafka release serves (min-max), derived from the kit's labels."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import SchemaError
from .compare import wire_differences
from .loader import load_dir, load_file

REF_DIRS = ("message-2024-10", "message-4.3", "records")


def reference_root() -> Path | None:
    """The folder of Kafka's own schema files to check the kit's against (KIPVIZ_KAFKA_REF), or None."""
    env = os.environ.get("KIPVIZ_KAFKA_REF")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    candidates += [p / "shared" / "kafka" for p in here.parents]
    candidates += [p.parent / "shared" / "kafka" for p in here.parents]
    return next((c for c in candidates if (c / "message-4.3").is_dir()), None)


def references() -> dict[str, dict]:
    """{reference folder: {message name: spec}} of Kafka's schema files, {} when none is found."""
    root = reference_root()
    if root is None:
        return {}
    return {d: load_dir(root / d) for d in REF_DIRS if (root / d).is_dir()}


def check_spec(spec, refs: dict[str, dict]) -> list[str]:
    """Where a kit definition disagrees with Kafka's own file of the same message (a problem per line)."""
    problems = []
    for d, specs in refs.items():
        ref = specs.get(spec.name)
        if ref is None:
            continue
        for v in spec.versions:
            if v in ref.valid:
                problems += [f"{spec.name} v{v} vs {d}: {p}" for p in wire_differences(spec, ref, v)]
    return problems


def matrix_text(kind: str = "request") -> str:
    """The release matrix (API x release) as a fixed-width table."""
    from .matrix import matrix_rows
    from .releases import RELEASES
    rows = matrix_rows(kind)
    width = max(len(r["api"]) for r in rows) + 2
    head = f"{'api':<{width}}{'key':>4}  " + "".join(f"{r:>8}" for r in RELEASES)
    lines = [head] + [f"{r['api']:<{width}}{r['api_key'] if r['api_key'] is not None else '':>4}  "
                      + "".join(f"{r[rel]:>8}" for rel in RELEASES) for r in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Check definition files (default: all of the kit's) against Kafka's; the exit status."""
    from . import registry
    files = [Path(a) for a in argv] or sorted(registry.DEFS_DIR.glob("*.json"))
    refs = references()
    if not refs:
        print("warning: no Kafka reference schemas found; only validating", file=sys.stderr)
    bad = 0
    for f in files:
        try:
            spec = load_file(f, require_kit=True)
        except SchemaError as e:
            print(f"ERROR {e}")
            bad += 1
            continue
        problems = check_spec(spec, refs)
        for p in problems:
            print(f"MISMATCH {p}")
        bad += bool(problems)
        if not problems:
            seen = [d for d, s in refs.items() if spec.name in s]
            print(f"ok {spec.name} v{spec.valid} (compared with {', '.join(seen) or 'nothing'})")
    if not argv:
        print("\nversions served per Kafka release (from the kit's labels; '-' = not served):")
        print(matrix_text())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
