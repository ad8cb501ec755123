"""Every notebook executes headless, top to bottom, without an error; stays within Binder's memory
(kernel + Spark's JVM, measured while it runs); and, run, exports to a page that views offline.

Each notebook runs once, in a kernel started the way Binder starts it (binder/start's settings).
Peak memory per notebook is written to test-artifacts/notebook-memory/<name>.json."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kipviz.course.export import external_refs, notebook_html
from kipviz.course.export_widgets import WIDGET_VIEW
from kipviz.course.runner import BINDER_LIMIT, MB, run_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ARTIFACTS = ROOT / "test-artifacts" / "notebook-memory"


def _binder_env() -> dict:
    """This process's environment as binder/start leaves it (Spark's quiet, small defaults)."""
    base = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([str(ROOT / "binder" / "start"), sys.executable, "-c",
                          "import json, os; print(json.dumps(dict(os.environ)))"],
                         capture_output=True, env=base, check=True, text=True).stdout
    return json.loads(out)


def _players(nb) -> int:
    """Animation player views (frames + pictures) in the widget outputs, counted per output's subtree."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    views = {k for k, m in state.items() if "frames" in m.get("state", {}) and "pictures" in m.get("state", {})}
    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            mid = out.get("data", {}).get(WIDGET_VIEW, {}).get("model_id")
            if mid:
                seen, todo = set(), [mid]
                while todo:                       # the player's subtree holds its frame view
                    m = todo.pop()
                    if m in seen or m not in state:
                        continue
                    seen.add(m)
                    todo += [c.removeprefix("IPY_MODEL_") for c in state[m]["state"].get("children", []) or []]
                n += len(seen & views)           # a widget may hold several players (09's LiveView)
    return n


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    run = run_notebook(path, timeout=300, env=_binder_env())      # a cell that raises fails here, named
    errors = [o for c in run.nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{path.stem}.json").write_text(json.dumps({
        "peak_mb": round(run.memory.peak / MB, 1), "peak_rss_mb": round(run.memory.peak_rss / MB, 1),
        "bound_mb": round(run.memory.bound / MB, 1),
        "seconds": round(run.seconds, 1), "samples": run.memory.samples,
        "processes": {str(pid): [name, round(hwm / MB, 1)] for pid, (name, hwm) in run.memory.processes.items()}},
        indent=1))
    assert run.memory.samples > 0
    assert run.memory.peak <= BINDER_LIMIT, f"{path.name}: {run.memory.describe()}; Binder's budget is 1536 MB"

    page = notebook_html(run.nb, title=path.stem)
    assert external_refs(page) == []
    assert WIDGET_VIEW not in page
    assert len(re.findall(r'<div class="kv-player"', page)) == _players(run.nb)

