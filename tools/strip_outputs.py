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
# the notebook metadata the kit stores (tools/build_notebooks.py writes the same): JupyterLab saves its
# own kernelspec ("Python 3 (ipykernel)", or the kernel a learner picked) and language_info, which
# would show every saved notebook as modified in `git status`
METADATA = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}}


def kept(metadata: dict) -> dict:
    """The cell metadata git stores (KEEP_CELL's keys); tools/build_notebooks.py writes the same."""
    return {k: v for k, v in metadata.items() if k in KEEP_CELL}


def strip(nb: dict) -> dict:
    nb["metadata"] = json.loads(json.dumps(METADATA))
    for cell in nb.get("cells", []):
        cell["metadata"] = kept(cell.get("metadata", {}))
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
