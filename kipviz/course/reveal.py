"""An exercise's outcome stays folded until the exercise is answered.

A code cell tagged {"kipviz": {"outcome": "06-4"}} (its source header in notebooks/src/:
`# %% kipviz={"outcome": "06-4"}`) shows what answers exercise 06-4: the run's findings, checks,
tables, the pictures that show the answer. Its outputs stay folded under one line ("Outcome of
Exercise 4 ...") until the check cell of 06-4 gets the right answer, or the learner clicks that line;
also under Run All, and in the pages `kipviz export` writes. A wrong answer keeps them folded (the
hint is for a second try).

How: the fold is a closed <details class="kv-fold"> shown as the cell's first output, with a CSS rule
that hides every output after it while it is closed. The rule matches the output areas of JupyterLab
and of nbconvert's lab template (what `kipviz export` writes), so no extension is needed.
JupyterLab sends each cell's metadata with its execute request; importing kipviz.course.exercises in
a kernel installs an IPython pre_run_cell hook that shows the fold for a tagged cell. The right
answer replaces every fold of its exercise by an open one (update_display), so its outcome shows.
A headless run (nbclient) sends no cell metadata: `kipviz export` puts the folds in (fold_notebook).
A frontend that sends no cell metadata can call fold("06-4") as the cell's first line.

The switch that shows everything (hosts, headless tests): KIPVIZ_SHOW_OUTCOMES=1 in the environment
of `make lab`, the kernel or `kipviz export`; or, in a notebook, show_outcomes() (show_outcomes(False)
folds again). docs/workshop.md says when to use which.
"""
from __future__ import annotations

import copy
import html
import os
import sys
import uuid

__all__ = ["SHOW_ENV", "fold", "fold_notebook", "answered", "show_outcomes", "outcomes_shown", "outcome_of",
           "fold_html", "install"]

SHOW_ENV = "KIPVIZ_SHOW_OUTCOMES"
_CLASS = "kv-fold"
# the outputs after a closed fold, in JupyterLab / Notebook 7 / nbconvert's lab template
_STYLE = (f"<style>.jp-OutputArea-child:has(details.{_CLASS}:not([open]))~.jp-OutputArea-child{{display:none}}"
          f"details.{_CLASS}>summary{{cursor:pointer;color:#57606a;font-style:italic;margin:.2em 0}}</style>")

_shown: bool | None = None                 # show_outcomes() in this kernel; None: the environment decides
_answered: set[str] = set()
_folds: dict[str, dict[str, None]] = {}    # exercise -> display ids of its folds (ordered, one per cell)


def outcomes_shown() -> bool:
    """Whether outcomes are shown unfolded: show_outcomes(), else KIPVIZ_SHOW_OUTCOMES (1/true/yes)."""
    if _shown is not None:
        return _shown
    return os.environ.get(SHOW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def outcome_of(metadata) -> str | None:
    """The exercise a cell's metadata says it shows the outcome of (None for other cells)."""
    kv = (metadata or {}).get("kipviz") or {}
    ex = kv.get("outcome") if isinstance(kv, dict) else None
    return ex if isinstance(ex, str) else None


def _label(ex_id: str) -> str:
    return f"Exercise {ex_id.split('-', 1)[-1]}"


def fold_html(ex_id: str, folded: bool = True) -> str:
    """The fold line for an outcome of `ex_id`: closed (outputs after it hidden) or open."""
    if folded:
        summary = (f"Outcome of {_label(ex_id)}, folded until you answer it: "
                   "click here to show it now (it gives the answer away)")
    else:
        summary = f"Outcome of {_label(ex_id)}"
    return (f'{_STYLE}<details class="{_CLASS}" data-exercise="{html.escape(ex_id)}"{"" if folded else " open"}>'
            f"<summary>{html.escape(summary)}</summary></details>")


def _folded(ex_id: str) -> bool:
    return not outcomes_shown() and ex_id not in _answered


def _bundle(ex_id: str) -> dict:
    folded = _folded(ex_id)
    plain = f"[{_label(ex_id)}: its outcome follows{', folded until you answer it' if folded else ''}]"
    return {"text/html": fold_html(ex_id, folded), "text/plain": plain}


def _publish(bundle: dict, display_id: str, update: bool) -> None:
    from IPython.display import display
    display(bundle, raw=True, display_id=display_id, update=update)


def fold(ex_id: str, key: str | None = None) -> None:
    """Show the fold of `ex_id`'s outcome here (a cell's first output): closed until the exercise is
    answered. `key` (the cell's id) lets a cell run again reuse its fold."""
    display_id = f"kv-fold-{ex_id}-{key or uuid.uuid4().hex}"
    _folds.setdefault(ex_id, {})[display_id] = None
    _publish(_bundle(ex_id), display_id, update=False)


def _refresh(ex_ids) -> None:
    for ex_id in ex_ids:
        for display_id in _folds.get(ex_id, ()):
            _publish(_bundle(ex_id), display_id, update=True)


def answered(ex_id: str) -> None:
    """`ex_id` got its right answer: open its folds (those shown already, and those to come)."""
    if ex_id not in _answered:
        _answered.add(ex_id)
        _refresh([ex_id])


def show_outcomes(on: bool = True) -> None:
    """Show (or, with False, fold again) every outcome in this kernel: the host's switch."""
    global _shown
    _shown = bool(on)
    _refresh(list(_folds))


def fold_notebook(nb):
    """A copy of `nb` whose outcome cells (those with outputs) start with their closed fold, unless
    KIPVIZ_SHOW_OUTCOMES says to show them; a cell that already starts with a fold (a kernel put it
    there) keeps it."""
    if outcomes_shown():
        return nb
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        ex_id = outcome_of(cell.get("metadata")) if cell.get("cell_type") == "code" else None
        if ex_id is None:
            continue
        outputs = cell.get("outputs") or []
        if not outputs:                          # nothing to fold
            continue
        first = (outputs[0].get("data") or {}).get("text/html", "") if outputs else ""
        if f'class="{_CLASS}"' in ("".join(first) if isinstance(first, list) else first):
            continue
        outputs.insert(0, {"output_type": "display_data", "metadata": {},
                           "data": {"text/html": fold_html(ex_id), "text/plain": f"[{_label(ex_id)}: folded]"}})
    return nb


def _cell_metadata(info) -> dict:
    meta = getattr(info, "cell_meta", None)          # IPython >= 8.? passes the request's metadata
    if meta is None:
        ip = _shell()
        kernel = getattr(ip, "kernel", None)
        parent = kernel.get_parent() if kernel is not None and hasattr(kernel, "get_parent") else {}
        meta = (parent or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def _pre_run_cell(info=None) -> None:
    meta = _cell_metadata(info)
    ex_id = outcome_of(meta)
    if ex_id is not None:
        fold(ex_id, key=str(meta.get("cellId") or "") or None)


def _shell():
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def install() -> bool:
    """Install the pre_run_cell hook in the running IPython kernel (once); False outside one."""
    ip = _shell()
    if ip is None or not hasattr(ip, "kernel"):
        return False
    callbacks = ip.events.callbacks.get("pre_run_cell", [])
    if not any(getattr(cb, "__qualname__", "") == _pre_run_cell.__qualname__
               and getattr(cb, "__module__", "") == __name__ for cb in callbacks):
        ip.events.register("pre_run_cell", _pre_run_cell)
    return True
