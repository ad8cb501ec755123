"""Git clean filter for notebooks/*.ipynb (installed by `make lab`, see .gitattributes): what git
stores is the notebook without outputs, execution counts, widget state or the front end's own cell
metadata, so saving a notebook in JupyterLab does not change the tracked file.

    git config filter.kipviz-strip.clean "python3 tools/strip_outputs.py"     # what `make lab` runs

Reads a notebook on stdin, writes it stripped on stdout (in nbformat's own layout: one-space indent,
sorted keys). Anything that is not a notebook passes through unchanged, so the filter never blocks a
commit. Standard library only: it runs with any Python 3."""
from __future__ import annotations

import json
import sys

# cell metadata the notebooks' sources carry (notebooks/src/, built by tools/build_notebooks.py); the rest is the
# front end's
KEEP_CELL = ("deletable", "editable", "kipviz", "tags")


def strip(nb: dict) -> dict:
    meta = nb.get("metadata", {})
    nb["metadata"] = {k: v for k, v in meta.items() if k in ("kernelspec", "language_info")}
    if isinstance(meta.get("language_info"), dict) and "name" in meta["language_info"]:
        nb["metadata"]["language_info"] = {"name": meta["language_info"]["name"]}
    for cell in nb.get("cells", []):
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k in KEEP_CELL}
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def main() -> int:
    text = sys.stdin.read()
    try:
        nb = json.loads(text)
        if not isinstance(nb, dict) or "cells" not in nb:
            raise ValueError("not a notebook")
    except ValueError:
        sys.stdout.write(text)
        return 0
    out = json.dumps(strip(nb), sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": "))
    sys.stdout.write(out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
