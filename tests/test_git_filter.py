"""`make lab` installs a git clean filter so a notebook saved in JupyterLab (outputs, execution
counts, widget state) is stored without them: checked in a temporary repository configured by the
Makefile's own git-filter target."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "03_topic_ids.ipynb"

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("make")), reason="needs git and make")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          timeout=60).stdout


def _saved_by_jupyterlab(nb: dict) -> dict:
    """What JupyterLab writes after Run All and Save: outputs, counts, widget state, its own metadata."""
    nb = json.loads(json.dumps(nb))
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": 1}}}
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.12.3", "mimetype": "text/x-python"}
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    for n, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = n + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["x" * 80 + "\n"] * 50}]
        cell["metadata"]["scrolled"] = True
        cell["metadata"]["execution"] = {"iopub.status.idle": "2026-11-26T22:00:00Z"}
    return nb


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "clone"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "tools").mkdir()
    for rel in ("Makefile", ".gitattributes", "tools/strip_outputs.py"):
        shutil.copy(ROOT / rel, repo / rel)
    _git(repo, "init", "-q")
    for _ in range(2):                               # idempotent: running it again changes nothing
        subprocess.run(["make", "-s", "-C", str(repo), "git-filter"], check=True, capture_output=True, timeout=60)
    return repo


def test_make_lab_configures_the_filter_once(repo):
    assert "git-filter" in (ROOT / "Makefile").read_text().split("\nlab:", 1)[1].splitlines()[0]
    clean = _git(repo, "config", "--get-all", "filter.kipviz-strip.clean").splitlines()
    assert len(clean) == 1 and clean[0].endswith("tools/strip_outputs.py")
    assert _git(repo, "check-attr", "filter", "notebooks/03_topic_ids.ipynb").strip().endswith("kipviz-strip")


def test_git_add_stores_a_saved_notebook_without_outputs(repo):
    stored = NOTEBOOK.read_text(encoding="utf-8")
    saved = _saved_by_jupyterlab(json.loads(stored))
    path = repo / "notebooks" / NOTEBOOK.name
    path.write_text(json.dumps(saved, indent=1), encoding="utf-8")
    _git(repo, "add", "notebooks")
    in_git = _git(repo, "show", f":notebooks/{NOTEBOOK.name}")
    assert in_git == stored                          # exactly the generated notebook, outputs gone
    nb = json.loads(in_git)
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in nb["cells"])
    assert "widgets" not in nb["metadata"]
    assert any((c["metadata"].get("kipviz") or {}).get("exercise") for c in nb["cells"])   # the kit's tags stay
    assert "x" * 80 in path.read_text(encoding="utf-8")                                      # the working copy keeps them
    assert _git(repo, "diff", "--stat") == ""        # git sees no change to commit


def test_the_filter_passes_anything_else_through():
    for text in ("not json at all", '{"no": "cells"}', ""):
        out = subprocess.run(["python3", str(ROOT / "tools" / "strip_outputs.py")], input=text, text=True,
                             capture_output=True, check=True, timeout=60).stdout
        assert out == text
