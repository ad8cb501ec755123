"""The servers the browser tests start are stopped by process id: with the kernels they started,
when the server never comes up, and when the test process itself is killed. A stand-in server
(http.server, which starts a "kernel": a child in its own session naming the runtime dir) keeps
this quick."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import ROOT, _env, _pids_using, _start, _stop, free_port

pytestmark = pytest.mark.xdist_group("browser")

FAKE_SERVER = textwrap.dedent("""
    import http.server, os, signal, subprocess, sys
    runtime = os.environ["JUPYTER_RUNTIME_DIR"]
    kernel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", runtime + "/kernel-1.json"],
                              start_new_session=True)       # like a kernel: out of the server's group
    def term(*_):                                           # like Jupyter: SIGTERM shuts its kernels down
        kernel.kill(); kernel.wait(); os._exit(0)
    signal.signal(signal.SIGTERM, term)
    print("kernel", kernel.pid, flush=True)
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                       # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _gone(pid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _kernel_pid(server) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in server.log_tail().splitlines():
            if line.startswith("kernel "):
                return int(line.split()[1])
        time.sleep(0.1)
    raise AssertionError(server.log_tail())


def test_stop_ends_the_server_and_its_kernels(tmp_path):
    env = _env(tmp_path)
    port = free_port()
    server = _start("fake-server", [sys.executable, "-c", FAKE_SERVER, str(port)], base=tmp_path, env=env,
                    cwd=tmp_path, url=f"http://127.0.0.1:{port}", ready="/", timeout=30)
    kernel = _kernel_pid(server)
    assert _alive(server.proc.pid) and _alive(kernel)
    _stop(server)
    assert _gone(server.proc.pid) and _gone(kernel)


def test_a_server_that_never_answers_is_stopped(tmp_path):
    env = _env(tmp_path)
    cmd = [sys.executable, "-c", "import time; time.sleep(600)", str(tmp_path / "silent")]
    with pytest.raises(RuntimeError, match="did not answer"):
        _start("silent-server", cmd, base=tmp_path, env=env, cwd=tmp_path, url=f"http://127.0.0.1:{free_port()}",
               ready="/", timeout=2)
    assert [pid for pid in _pids_using(str(tmp_path / "silent")) if _alive(pid)] == []


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_test_process_takes_its_server_with_it(tmp_path):
    runner = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from tests.browser.conftest import _env, _start, free_port
        base = Path({str(tmp_path)!r}); port = free_port()
        s = _start("orphan-server", [sys.executable, "-c", {FAKE_SERVER!r}, str(port)], base=base, env=_env(base),
                   cwd=base, url=f"http://127.0.0.1:{{port}}", ready="/", timeout=30)
        print(s.proc.pid, flush=True)
        for line in iter(lambda: s.log_tail(), ""):
            if "kernel " in line:
                print(line.split("kernel ")[1].split()[0], flush=True); break
            time.sleep(0.1)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", runner], stdout=subprocess.PIPE, text=True)
    try:
        server_pid, kernel = int(proc.stdout.readline()), int(proc.stdout.readline())
        assert _alive(server_pid) and _alive(kernel)
    finally:
        proc.send_signal(signal.SIGKILL)          # no finalizer runs: only the death signal can help
        proc.wait(timeout=10)
    try:
        assert _gone(server_pid) and _gone(kernel)
    finally:                                      # if not, do not leave them running
        for pid in (server_pid, kernel):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
