"""Writes notebooks/*.ipynb and notebooks/voila/*.ipynb from their sources in notebooks/src/.

A source is a jupytext percent-format Python file (`# %%` code cells, `# %% [markdown]` markdown
cells, cell metadata in the cell header), so ruff lints the notebooks' code. The written notebook
keeps only what the course needs: stable cell ids ("03-00", "03-01", ...: rebuilding gives the same
bytes), the kernelspec, and each cell's own metadata (the prediction exercises' tags); no outputs
and no jupytext metadata.

    python tools/build_notebooks.py            # or: make notebooks

KIPVIZ_NOTEBOOKS_OUT writes elsewhere (tests/test_notebook_structure.py checks the stored notebooks
are what this writes)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import jupytext
import nbformat as nbf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strip_outputs import METADATA, kept  # noqa: E402 - what the git filter stores too: one definition

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "notebooks" / "src"
NEW_CELL = {"code": nbf.v4.new_code_cell, "markdown": nbf.v4.new_markdown_cell}


def sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.py"))


def build(source: Path) -> nbf.NotebookNode:
    """The notebook a source describes (cells in order, ids from the file name's first two characters)."""
    text = jupytext.read(source, fmt="py:percent")
    # only the cell metadata the git filter keeps: jupytext's round-trip hints (lines_to_next_cell)
    # would make a freshly built notebook differ from the one git stores
    cells = [NEW_CELL[c.cell_type](c.source, metadata=kept(c.metadata)) for c in text.cells]
    for i, cell in enumerate(cells):
        cell["id"] = f"{source.stem[:2]}-{i:02d}"
    return nbf.v4.new_notebook(cells=cells, metadata=METADATA)


def main() -> int:
    out = Path(os.environ.get("KIPVIZ_NOTEBOOKS_OUT") or ROOT / "notebooks")
    for source in sources():
        target = (out / source.relative_to(SOURCES)).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        nbf.write(build(source), target)
        print("wrote", target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
