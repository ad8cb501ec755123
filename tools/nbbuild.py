"""Shared bits of the notebook builders: notebooks are written from these scripts (reviewable
source, stored without outputs)."""
import os
from pathlib import Path

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
# KIPVIZ_NOTEBOOKS_OUT: write elsewhere (tests/test_notebook_structure.py checks the stored notebooks
# are what the scripts write)
NOTEBOOKS = Path(os.environ.get("KIPVIZ_NOTEBOOKS_OUT") or Path(__file__).resolve().parent.parent / "notebooks")


def write_notebook(filename: str, cells: list) -> Path:
    nb = nbf.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    for i, cell in enumerate(nb.cells):     # stable ids: regenerating gives the same file
        cell["id"] = f"{Path(filename).stem[:2]}-{i:02d}"
    out = NOTEBOOKS / filename
    out.parent.mkdir(parents=True, exist_ok=True)
    nbf.write(nb, out)
    print("wrote", out)
    return out
