"""`kipviz export`: notebooks, run, as static pages that view offline; the players keep playing
(checked by running the page's own scripts in node over a small DOM stand-in)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from kipviz import cli, scenarios
from kipviz.course.export import external_refs, find_notebooks, notebook_html
from kipviz.course.export_widgets import WIDGET_VIEW, static_widgets
from kipviz.course.runner import MemoryWatch, run_notebook
from kipviz.draw.animate import animation
from kipviz.draw.record_strip import record_strip

ROOT = Path(__file__).resolve().parent.parent
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` not installed")
md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell

PLAYERS = """from kipviz import scenarios
from kipviz.draw.animate import animation
from kipviz.draw.record_strip import record_strip
from kipviz.widgets import player, strip_player
txn = player(animation(scenarios.run("kip1319.stale_member_epoch_v6"), "transaction"), fps=4)
strip = strip_player(record_strip(scenarios.run("kip932.acquire_and_acknowledge").events))
display(txn, strip)"""


def _write(folder: Path, name: str, cells) -> Path:
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    path = folder / name
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("notebooks")
    _write(src, "01_players.ipynb", [md("# 01 · Players\n\nSee [the next one](02_plain.ipynb)."), code(PLAYERS)])
    _write(src, "02_plain.ipynb", [md("# 02 · Plain\n\n**Time to complete:** about 5 minutes."),
                                   code("from kipviz.widgets import Explorer\nExplorer('TxnOffsetCommit', 5)"),
                                   code("print(6 * 7)")])
    return src


@pytest.fixture(scope="module")
def site(sources, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    assert cli.main(["export", str(sources), "-o", str(out), "-q"]) == 0
    return out


def _data(page: str) -> list[dict]:
    return [json.loads(m) for m in re.findall(r'<script[^>]*class="kv-data"[^>]*>(.*?)</script>', page, re.S)]


@needs_dot
def test_pages_view_offline_and_hold_every_frame(site):
    assert sorted(p.name for p in site.iterdir()) == ["01_players.html", "02_plain.html", "index.html"]
    for page in site.iterdir():
        text = page.read_text(encoding="utf-8")
        assert external_refs(text) == [], page.name
        assert WIDGET_VIEW not in text and "embed-amd" not in text and "require.js" not in text
    players = (site / "01_players.html").read_text(encoding="utf-8")
    want = [animation(scenarios.run("kip1319.stale_member_epoch_v6"), "transaction").player_data(),
            record_strip(scenarios.run("kip932.acquire_and_acknowledge").events).player_data()]
    got = _data(players)
    assert [d["frames"] for d in got] == [w["frames"] for w in want]
    assert [d["pictures"] for d in got] == [w["pictures"] for w in want]     # the same SVG, every picture
    assert '<option selected="" value="4">' in players          # the Play widget's speed (fps=4) is kept
    assert 'href="02_plain.html"' in players                   # links between notebooks follow the site


@needs_dot
def test_other_widgets_become_a_snapshot_of_their_state(site):
    page = (site / "02_plain.html").read_text(encoding="utf-8")
    assert "TxnOffsetCommitRequest" in page and "<svg" in page           # the explorer's wire diagram
    assert "tx-orders-001" in page                                        # its example JSON
    assert 'class="kvx' in page                                           # its hex view
    assert ">42\n<" in page or "42\n</pre>" in page                       # plain outputs stay


def test_index_lists_the_pages_with_their_time(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="01_players.html"' in index and 'href="02_plain.html"' in index
    assert "02 · Plain" in index and "5 min" in index


# a DOM just large enough for the player script: elements found by the selectors it uses
PLAYER_DOM = r"""
const vm = require('vm');
const page = JSON.parse(require('fs').readFileSync(0, 'utf8'));
function el(attrs) {
  const e = Object.assign({style: {}, children: [], listeners: {}, attrs: {}, textContent: '', value: ''}, attrs);
  e.getAttribute = k => (k in e.attrs ? e.attrs[k] : null);
  e.setAttribute = (k, v) => { e.attrs[k] = String(v); };
  e.addEventListener = (t, f) => { (e.listeners[t] = e.listeners[t] || []).push(f); };
  e.appendChild = c => { e.children.push(c); return c; };
  e.querySelector = () => null;                 // a picture's highlighted node (none drawn here)
  e.fire = (t, ev) => (e.listeners[t] || []).forEach(f => f(ev || {preventDefault() {}}));
  return e;
}
const roots = page.players.map(p => {
  const buttons = ['first', 'prev', 'play', 'next', 'last'].map(a => el({attrs: {'data-act': a}}));
  const parts = {'script.kv-data': el({textContent: p}), '.kv-stage': el({}), '.kv-caption': el({}),
                 'input[type=range]': el({value: '0'}), '.kv-count': el({}), '[data-act=play]': buttons[2],
                 'select': el({value: '2'})};
  const root = el({buttons, parts});
  root.querySelector = s => parts[s];
  root.querySelectorAll = s => (s === 'button[data-act]' ? buttons : []);
  return root;
});
const ctx = {document: {querySelectorAll: s => (s === '.kv-player' ? roots : []), createElement: () => el({})},
             location: {hash: ''}, JSON, Math, parseInt, parseFloat, setInterval: () => 1, clearInterval: () => {}};
vm.createContext(ctx);
page.scripts.forEach(s => vm.runInContext(s, ctx));
const click = (r, act) => roots[r].buttons.find(b => b.attrs['data-act'] === act).fire('click');
const state = () => roots.map(r => ({caption: r.parts['.kv-caption'].textContent,
  count: r.parts['.kv-count'].textContent,
  shown: r.parts['.kv-stage'].children.filter(c => c.style.display !== 'none').map(c => c.innerHTML)}));
const out = {start: state()};
click(0, 'next'); click(0, 'next'); out.next2 = state();
click(1, 'last'); out.last = state();
click(0, 'prev'); out.prev = state();
console.log(JSON.stringify(out));
"""


@needs_dot
@pytest.mark.skipif(shutil.which("node") is None, reason="node (to run the page's scripts) not installed")
def test_players_on_one_page_play_independently(site):
    page = (site / "01_players.html").read_text(encoding="utf-8")
    scripts = [s for s in re.findall(r"<script>(.*?)</script>", page, re.S) if "kv-player" in s]
    players = re.findall(r'<script[^>]*class="kv-data"[^>]*>(.*?)</script>', page, re.S)
    assert len(scripts) == len(players) == 2                  # each fragment carries the script; it runs twice
    r = subprocess.run(["node", "-e", PLAYER_DOM], input=json.dumps({"players": players, "scripts": scripts}),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    data = [json.loads(p) for p in players]
    n = [len(d["frames"]) for d in data]

    def at(k, i):
        return {"caption": data[k]["frames"][i]["caption"], "count": f"{i + 1} / {n[k]}",
                "shown": [data[k]["pictures"][data[k]["frames"][i]["p"]]]}
    assert out["start"] == [at(0, 0), at(1, 0)]
    assert out["next2"] == [at(0, 2), at(1, 0)]               # two clicks, two frames: set up once, not twice
    assert out["last"] == [at(0, 2), at(1, n[1] - 1)]
    assert out["prev"] == [at(0, 1), at(1, n[1] - 1)]


def test_no_execute_exports_run_notebooks_as_they_are(sources, tmp_path, capsys):
    run = run_notebook(sources / "02_plain.ipynb")
    done = tmp_path / "done"
    done.mkdir()
    nbformat.write(run.nb, done / "02_plain.ipynb")
    shutil.copy(sources / "01_players.ipynb", done / "01_players.ipynb")      # never run
    out = tmp_path / "site"
    assert cli.main(["export", str(done), "-o", str(out), "--no-execute"]) == 0
    err = capsys.readouterr().err
    assert "01_players: not run (no outputs); exported as it is" in err
    assert "peak memory" not in err                                          # nothing ran
    assert 'class="kvx' in (out / "02_plain.html").read_text(encoding="utf-8")
    assert _data((out / "01_players.html").read_text(encoding="utf-8")) == []


def test_progress_names_each_notebook_with_its_time_and_memory(tmp_path, capsys):
    src = tmp_path / "nb"
    src.mkdir()
    _write(src, "03_x.ipynb", [md("# 03 · X"), code("x = bytes(50 * 2**20)")])
    assert cli.main(["export", str(src), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    m = re.search(r"03_x: \d+ s, peak memory (\d+) MB", err)
    assert m and int(m.group(1)) >= 50
    assert "export" in err and "wrote 1 page(s)" in err


def test_only_picks_notebooks_by_name(sources):
    assert [p.name for p in find_notebooks(sources, only=("plain",))] == ["02_plain.ipynb"]
    assert [p.name for p in find_notebooks(sources, only=("02", "01"))] == ["01_players.ipynb", "02_plain.ipynb"]
    assert [p.name for p in find_notebooks([sources / "02_plain.ipynb"])] == ["02_plain.ipynb"]


def test_the_same_notebook_twice_is_refused(sources, tmp_path, capsys):
    assert cli.main(["export", str(sources / "02_plain.ipynb"), str(sources), "-q", "-o", str(tmp_path)]) == 2
    assert "two notebooks have the same name" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--only", "99"], "no notebook matches '99'; notebooks: 01_players, 02_plain"),
    (["--timeout", "0"], "--timeout must be a positive number of seconds"),
])
def test_bad_options_give_one_line(sources, tmp_path, capsys, argv, message):
    assert cli.main(["export", str(sources), "-o", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_bad_sources_give_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken.ipynb").write_text("{not json")
    cases = [([str(tmp_path / "nope")], "no such notebook or folder"),
             ([str(tmp_path / "notes.txt")], "is not a notebook (.ipynb) or a folder"),
             ([str(tmp_path / "empty")], "no notebooks (.ipynb) in"),
             ([str(tmp_path / "broken.ipynb"), "--no-execute"], "cannot read notebook")]
    for argv, message in cases:
        assert cli.main(["export", *argv, "-q", "-o", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (argv, err)


def test_output_that_is_a_file_is_refused(sources, tmp_path, capsys):
    (tmp_path / "site").write_text("x")
    assert cli.main(["export", str(sources), "-q", "-o", str(tmp_path / "site")]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_a_failing_cell_is_named(tmp_path, capsys):
    src = tmp_path / "nb"
    src.mkdir()
    _write(src, "bad.ipynb", [code("x = 1"), code("1 / 0")])
    assert cli.main(["export", str(src), "-q", "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "kipviz: error: bad.ipynb: cell 1 raised ZeroDivisionError: division by zero"


def test_a_kernel_that_dies_is_reported(tmp_path, capsys):
    src = tmp_path / "nb"
    src.mkdir()
    _write(src, "die.ipynb", [code("import os\nos._exit(3)")])
    assert cli.main(["export", str(src), "-q", "-o", str(tmp_path / "o")]) == 2
    assert "die.ipynb: the kernel died in cell 0" in capsys.readouterr().err


def test_widget_outputs_without_saved_state_keep_their_text():
    nb = nbformat.v4.new_notebook(cells=[code("w")])
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "VBox(children=(...))", WIDGET_VIEW: {"model_id": "abc", "version_major": 2}})]
    static = static_widgets(nb)
    assert static.cells[0].outputs[0]["data"] == {"text/plain": "VBox(children=(...))"}
    assert nb.cells[0].outputs[0]["data"][WIDGET_VIEW]                       # the input is left alone
    page = notebook_html(nb, title="t")
    assert "VBox(children=(...))" in page and external_refs(page) == []


def test_memory_watch_counts_the_children_of_the_process():
    child = ("import subprocess, sys, time\n"
             "p = subprocess.Popen([sys.executable, '-c', 'import time; b = b\"x\" * (120 * 2**20); time.sleep(3)'])\n"
             "a = b'y' * (60 * 2**20); p.wait()")
    proc = subprocess.Popen([sys.executable, "-c", child])
    watch = MemoryWatch(proc.pid, interval=0.02).start()
    proc.wait(timeout=60)
    time.sleep(0.05)
    m = watch.stop()
    assert len(m.processes) >= 2
    assert m.peak >= 180 * 2**20                    # parent's 60 MB and the child's 120 MB at once
    assert m.bound >= m.peak - 5 * 2**20 and max(h for _, h in m.processes.values()) >= 120 * 2**20


def test_widget_snapshot_draws_boxes_outputs_and_a_player_inside_an_output():
    from kipviz.course.export_widgets import widget_html

    def model(name, **state):
        return {"model_name": name, "model_module": "@jupyter-widgets/controls", "state": state}
    models = {
        "out": model("OutputModel", outputs=[
            {"output_type": "stream", "name": "stdout", "text": "hello <world>\n"},
            {"output_type": "display_data", "data": {WIDGET_VIEW: {"model_id": "box"}, "text/plain": "HBox()"}}]),
        "box": model("HBoxModel", children=["IPY_MODEL_s", "IPY_MODEL_d", "IPY_MODEL_view"]),
        "s": model("IntSliderModel", description="version", value=5),
        "d": model("DropdownModel", description="kind", _options_labels=["request", "response"], index=1),
        "view": {"model_name": "AnyModel", "model_module": "anywidget", "state": {
            "frames": [{"p": 0, "caption": "one"}, {"p": 0, "caption": "two"}], "pictures": ["<svg>p</svg>"]}},
    }
    page = widget_html(models, "out")
    assert "hello &lt;world&gt;" in page and "HBox()" not in page
    assert '<b>kind</b> <span class="kv-val">response</span>' in page
    assert "version" not in page                   # a slider beside a player is the player's own control
    assert _data(page) == [{"title": "", "pictures": ["<svg>p</svg>"],
                            "frames": [{"p": 0, "caption": "one"}, {"p": 0, "caption": "two"}]}]
    models["view"]["state"] = {}                   # no player: the slider shows its value
    assert '<b>version</b> <span class="kv-val">5</span>' in widget_html(models, "out")


def test_memory_watch_counts_pages_shared_by_forked_children_once():
    """Spark's Python workers are forked from one daemon: what they share counts once (PSS), as a
    container's memory limit counts it, while the plain sum of resident sets counts it each time."""
    forker = ("import os, time\n"
              "a = b'x' * (150 * 2**20)\n"                      # 150 MB, written, then shared by 3 forks
              "kids = []\n"
              "for _ in range(3):\n"
              "    k = os.fork()\n"
              "    if k == 0:\n"
              "        time.sleep(2.5); os._exit(0)\n"
              "    kids.append(k)\n"
              "time.sleep(2.5); [os.waitpid(k, 0) for k in kids]")
    proc = subprocess.Popen([sys.executable, "-c", forker])
    watch = MemoryWatch(proc.pid, interval=0.05).start()
    proc.wait(timeout=60)
    m = watch.stop()
    assert len(m.processes) >= 4
    assert m.peak_rss >= 4 * 150 * 2**20 * 0.9              # four processes each map the 150 MB
    assert 150 * 2**20 <= m.peak <= 2 * 150 * 2**20          # but it is there once (plus interpreters)


@pytest.mark.parametrize("ask_kernel", [True, False], ids=["kcmp", "counters"])
def test_memory_watch_counts_a_spawn_before_its_exec_once(tmp_path, monkeypatch, ask_kernel):
    """posix_spawn clones the parent's address space (CLONE_VM) until the child execs: the JVM
    starts Spark's Python workers so. Read through the child's pid the same pages look like a second
    copy; counted twice, one such moment put notebook 07 at 1,555 MB in CI (the JVM's 559 MB twice)."""
    from kipviz.course import runner
    if not ask_kernel:                                    # where kcmp(2) is not allowed: the counters decide
        monkeypatch.setattr(runner, "_KCMP", None)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    spawner = ("import os\n"
               "a = b'x' * (150 * 2**20)\n"
               # the child blocks opening the fifo (a file action runs before exec) until we write
               f"k = os.posix_spawn('/bin/true', ['true'], dict(os.environ), file_actions=[(os.POSIX_SPAWN_OPEN, 3, {str(fifo)!r}, os.O_RDONLY, 0)])\n"
               "os.waitpid(k, 0)")
    proc = subprocess.Popen([sys.executable, "-c", spawner])
    watch = MemoryWatch(proc.pid, interval=0.02).start()
    try:
        import psutil
        deadline = time.monotonic() + 30
        while not psutil.Process(proc.pid).children() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert psutil.Process(proc.pid).children(), "the spawned child never appeared"
        time.sleep(0.3)                                   # several samples while the child shares the parent's memory
    finally:
        with open(fifo, "w"):                             # lets the child open it and exec
            pass
        proc.wait(timeout=60)
    m = watch.stop()
    assert m.samples >= 10
    assert 150 * 2**20 <= m.peak <= 1.5 * 150 * 2**20   # once, not twice
    assert len(m.processes) == 1 or max(h for pid, (_, h) in m.processes.items() if pid != proc.pid) < 100 * 2**20


# ---- the command from anywhere, its output folder, SIGTERM ------------------------------------------------
def _kipviz(*argv: str, cwd: Path, **kw) -> subprocess.Popen:
    run = "import sys; from kipviz.cli import main; sys.exit(main(sys.argv[1:]))"      # the console script
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", run, *argv], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_missing_output_parents_are_created_and_said(sources, tmp_path, capsys):
    out = tmp_path / "a" / "b" / "c"
    assert cli.main(["export", str(sources / "02_plain.ipynb"), "--no-execute", "-q", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"kipviz export: created {out} and 2 missing parent folder(s)"
    assert (out / "02_plain.html").is_file() and (out / "index.html").is_file()
    assert cli.main(["export", str(sources / "02_plain.ipynb"), "--no-execute", "-q", "-o", str(out)]) == 0
    assert "created" not in capsys.readouterr().err                 # an existing folder: nothing to say


def test_bad_options_create_no_output_folder(sources, tmp_path):
    assert cli.main(["export", str(sources), "--only", "99", "-o", str(tmp_path / "x" / "y")]) == 2
    assert not (tmp_path / "x").exists()


def test_export_runs_from_any_directory(tmp_path):
    """Without NOTEBOOK it exports the kit's notebooks, wherever it is started."""
    from kipviz.cli.export import default_sources
    assert default_sources() == [ROOT / "notebooks"]
    proc = _kipviz("export", "--only", "00", "--no-execute", "-q", "-o", "site", cwd=tmp_path)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert (tmp_path / "site" / "00_welcome.html").is_file()


def test_sigterm_stops_with_one_line_and_no_kernel_left(tmp_path):
    src = tmp_path / "nb"
    src.mkdir()
    pid_file = tmp_path / "kernel.pid"
    _write(src, "slow.ipynb", [code(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                    "time.sleep(120)")])
    (tmp_path / "o").mkdir()
    proc = _kipviz("export", str(src), "-q", "-o", str(tmp_path / "o"), cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pid_file.exists(), "the kernel never ran the cell"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert err.strip().splitlines() == ["kipviz: export stopped (SIGTERM); the site may be incomplete"]
    kernel = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while psutil.pid_exists(kernel) and psutil.Process(kernel).status() != psutil.STATUS_ZOMBIE \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(kernel) or psutil.Process(kernel).status() == psutil.STATUS_ZOMBIE


def test_a_prediction_exports_with_its_solution_folded(tmp_path):
    """The check's "Show solution" is a closed <details> in the static page, as in JupyterLab."""
    src = tmp_path / "nb"
    src.mkdir()
    _write(src, "predict.ipynb", [code("answer = ..."),
                                  code("from kipviz.course.exercises import exercise\nexercise('03-1').check(answer)")])
    assert cli.main(["export", str(src), "-q", "-o", str(tmp_path / "o")]) == 0
    page = (tmp_path / "o" / "predict.html").read_text(encoding="utf-8")
    folded = re.search(r'<details class="kipviz-solution"><summary>Show solution</summary>(.*?)</details>', page, re.S)
    assert folded and "UNKNOWN_TOPIC_ID" in folded.group(1)
    assert "Not answered yet" in page and "<details open" not in page
