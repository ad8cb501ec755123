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


def predict(exercise_id: str, blank: str = "answer = ...", *, setup: str = "", inputs: str = "") -> list:
    """A prediction exercise as two cells: the learner's (only the blank; tagged
    {"kipviz": {"exercise": id}}), then the check (not editable; the expected answer is computed by
    kipviz.exercises, never written in the notebook). tests/test_predictions.py relies on the tags."""
    learner = code(blank)
    learner.metadata["kipviz"] = {"exercise": exercise_id}
    args = "answer" + (f", {inputs}" if inputs else "")
    checker = code((setup + "\n" if setup else "") + f"exercise({exercise_id!r}).check({args})")
    checker.metadata.update({"editable": False, "deletable": False, "kipviz": {"check": exercise_id}})
    return [learner, checker]
