"""Servers and a browser for the real-browser tests.

One JupyterLab server, one Voilà server and one headless Chromium (Debian's, driven by Playwright)
for the whole session. The servers run on 127.0.0.1 on free ports, on a temporary copy of the
notebooks (so running them never writes outputs into the repository), with their own runtime,
config, settings and workspace folders. Every server is stopped by its process id in a finalizer,
and so are the kernels it started (found by the connection files in the server's own runtime dir).

Every test module here is in the xdist group "browser" (pytestmark): with `--dist loadgroup` (as
`make test` runs them) they share one worker, so the notebooks (the Spark one's JVM among them)
run one at a time in one JupyterLab server.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "browser" / "artifacts"   # screenshots and logs, kept by CI (.gitignore)
CHROMIUM = os.environ.get("KIPVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# ---- servers -------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen
    runtime_dir: Path
    log: Path

    def get(self, path: str, timeout: float = 10):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return json.loads(r.read() or b"null")

    def request(self, method: str, path: str, timeout: float = 10) -> int:
        req = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def _wait_until_answers(server: Server, path: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.url + path, timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{server.name} did not answer on {server.url}{path} in {timeout:.0f} s:\n{server.log_tail()}")


def _pids_using(marker: str) -> list[int]:
    """Processes whose command line names `marker` (our runtime dir: the kernels we started)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            out.append(int(d.name))
    return out


def _stop(server: Server) -> None:
    """SIGTERM the server's process group (it shuts its kernels down), then SIGKILL what is left:
    the group, and kernels (their own sessions) still holding a connection file of ours."""
    proc = server.proc
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
    for pid in _pids_using(str(server.runtime_dir)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _env(base: Path) -> dict:
    env = dict(os.environ)
    for var, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config"),
                     ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                     ("IPYTHONDIR", "ipython")):
        (base / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / sub)
    env.pop("JUPYTER_TOKEN", None)
    env.pop("KIPVIZ_SHOW_OUTCOMES", None)      # the learner's view: outcomes folded (kipviz.course.reveal)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


KIT_LAB_SETTINGS = ROOT / "tools" / "jupyterlab_overrides.json"    # what `make lab` and Binder give JupyterLab


def _lab_settings(base: Path) -> None:
    """The kit's settings (no news pop-up: tools/jupyterlab_overrides.json, as `make lab` and Binder
    set them), and for the tests no autosave and every cell rendered (not windowed) so the page
    shows all outputs at once."""
    settings = {"@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
                "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"}}
    for plugin, value in json.loads(KIT_LAB_SETTINGS.read_text()).items():    # "pkg/ext:plugin" -> its file
        settings[plugin.replace(":", "/") + ".jupyterlab-settings"] = value
    for rel, value in settings.items():
        p = base / "lab-settings" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(value))


def _work_tree(base: Path) -> Path:
    """A copy of notebooks/ beside links to the rest of the repository (sample_data/ and the like),
    so relative paths in the notebooks resolve as they do in the repository."""
    work = base / "work"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in ("notebooks", ".git", ".venv", "test-artifacts"):
            continue
        (work / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "notebooks", work / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return work


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM it when the process that started it dies, so a test run
    that is killed (a CI timeout, SIGKILL) leaves no server behind; the server then stops its kernels."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)      # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def _start(name: str, cmd: list[str], *, base: Path, env: dict, cwd: Path, url: str, ready: str,
           timeout: float = 120) -> Server:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = ARTIFACTS / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    server = Server(name, url, proc, Path(env["JUPYTER_RUNTIME_DIR"]), log)
    try:
        _wait_until_answers(server, ready, timeout)
    except BaseException:
        _stop(server)
        raise
    return server


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """Every notebook exported once for the session (`kipviz export`: run, then nbconvert's lab
    template), for the checks on the exported pages."""
    from kipviz import cli
    out = tmp_path_factory.mktemp("site")
    assert cli.main(["export", *map(str, sorted((ROOT / "notebooks").glob("*.ipynb"))), "-o", str(out), "-q"]) == 0
    return out


@pytest.fixture(scope="session")
def work_tree(tmp_path_factory) -> Path:
    return _work_tree(tmp_path_factory.mktemp("kipviz-browser"))


@pytest.fixture(scope="session")
def lab(work_tree, tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    env = _env(base)
    _lab_settings(base)
    port = free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={work_tree}", "--LabApp.expose_app_in_browser=True",
           "--ServerApp.disable_check_xsrf=True"]
    server = _start("jupyterlab", cmd, base=base, env=env, cwd=work_tree, url=f"http://127.0.0.1:{port}",
                    ready="/api/status")
    yield server
    _stop(server)


@pytest.fixture(scope="session")
def voila(work_tree, tmp_path_factory):
    base = tmp_path_factory.mktemp("voila")
    env = _env(base)
    port = free_port()
    cmd = [sys.executable, "-m", "voila", "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
           "--strip_sources=True",
           f"--Voila.connection_dir_root={env['JUPYTER_RUNTIME_DIR']}", str(work_tree / "notebooks" / "voila")]
    server = _start("voila", cmd, base=base, env=env, cwd=work_tree / "notebooks" / "voila",
                    url=f"http://127.0.0.1:{port}", ready="/")
    yield server
    _stop(server)


# ---- browser -------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def playwright():
    """The worker's one Playwright: a second sync_playwright() in the same thread refuses to start
    ("Sync API inside the asyncio loop"), so every browser fixture launches from this one."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (as root); "
                    "otherwise install it, or point KIPVIZ_CHROMIUM at a Chromium binary")
    from playwright.sync_api import sync_playwright
    pw = sync_playwright().start()
    yield pw
    pw.stop()


@pytest.fixture(scope="session")
def browser_context(playwright, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    ctx = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
        viewport={"width": 1400, "height": 1000}, ignore_default_args=["--enable-automation"])
    yield ctx
    ctx.close()


@pytest.fixture
def page(browser_context, request):
    page = browser_context.new_page()
    page.set_default_timeout(30_000)
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: console.append(f"request failed: {r.url} ({r.failure})"))
    yield page
    page.close()
    if console:          # kept beside the screenshots, for whoever reads a failure
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"console-{re.sub(r'[^A-Za-z0-9_.-]+', '_', request.node.name)}.txt").write_text(
            "\n".join(console) + "\n")
