"""Run a notebook headless (nbclient, in the notebook's own folder) and measure its memory.

    run = run_notebook("notebooks/00_welcome.ipynb")
    run.nb                 # the executed notebook, widget state included
    run.memory.peak        # bytes: kernel + every process it started (Spark's JVM), at their highest

Memory is sampled from a thread while the cells run: the kernel and all its descendants, summed.
Each process counts its proportional set size (Linux /proc/PID/smaps_rollup "Pss": a page shared
by n processes counts 1/n in each), so Spark's forked Python workers, which share most of their
pages with the daemon they fork from, are counted once -- as a container's memory limit (Binder's)
counts them. Where PSS cannot be read, the resident set is used. The plain sum of resident sets
(which counts shared pages once per process) is kept too, as peak_rss. Each process's own
high-water mark (VmHWM) is read at every sample, so a spike shorter than the sampling interval
still counts for that process. A child that still shares its parent's address space (between
posix_spawn's clone(CLONE_VM) and its exec: how the JVM starts Spark's Python workers) is the
parent's memory, not more of it, and is not counted again."""
from __future__ import annotations

import ctypes
import platform
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KipvizError

__all__ = ["Memory", "MemoryWatch", "Run", "read_notebook", "run_notebook", "BINDER_LIMIT", "MB"]

MB = 2 ** 20
BINDER_LIMIT = 1536 * MB        # Binder gives 2 GB; the server and the browser's websocket need the rest


@dataclass
class Memory:
    """peak: highest sampled total of proportional set sizes (never below one process's own
    high-water mark); peak_rss: highest sampled sum of resident sets (shared pages counted once per
    process: an overestimate); bound: the sum of every process's high-water mark (an upper bound:
    peaks need not coincide)."""
    peak: int = 0
    bound: int = 0
    samples: int = 0
    peak_rss: int = 0
    processes: dict[int, tuple[str, int]] = field(default_factory=dict)   # pid -> (name, high-water mark)

    def describe(self) -> str:
        """The run's memory in words: the peak, the sum of resident sets, and per process."""
        procs = ", ".join(f"{name} {hwm / MB:.0f}" for name, hwm in
                          sorted(self.processes.values(), key=lambda p: -p[1]))
        return (f"peak {self.peak / MB:.0f} MB (sum of resident sets {self.peak_rss / MB:.0f} MB; "
                f"per process, MB: {procs or 'none'})")


def _proc_kb(path: str, key: bytes) -> int | None:
    """The value of line `key` (in kB) of a /proc file, in bytes; None where it cannot be read."""
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _hwm(pid: int) -> int | None:
    """The process's peak resident set (VmHWM) in bytes, where /proc has it."""
    return _proc_kb(f"/proc/{pid}/status", b"VmHWM:")


def _pss(pid: int) -> int | None:
    """The process's proportional set size in bytes (Linux 4.14+ smaps_rollup), else None."""
    return _proc_kb(f"/proc/{pid}/smaps_rollup", b"Pss:")


_KCMP = {"x86_64": 312, "aarch64": 272}.get(platform.machine())     # kcmp(2)'s syscall number
_KCMP_VM = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
_VM_KEYS = (b"VmSize:", b"VmRSS:", b"RssAnon:", b"RssFile:", b"VmPTE:")


def _vm_signature(pid: int) -> tuple | None:
    """A process's address-space counters; one mm read through two pids gives the same ones."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            sig = tuple(line for line in fh if line.startswith(_VM_KEYS))
    except OSError:
        return None
    return sig if len(sig) == len(_VM_KEYS) else None


def _same_vm(a: int, b: int) -> bool:
    """Whether processes a and b share one address space: kcmp(2)'s KCMP_VM where the kernel lets
    us ask, else identical memory counters (a forked copy's page tables and file pages differ)."""
    if _KCMP is not None:
        r = _LIBC.syscall(_KCMP, a, b, _KCMP_VM, 0, 0)
        if r >= 0:
            return r == 0
    sa = _vm_signature(a)
    return sa is not None and sa == _vm_signature(b)


class MemoryWatch:
    """Samples a process tree every `interval` seconds until stop(); `memory` holds the result."""

    def __init__(self, pid: int, interval: float = 0.05):
        import psutil
        self._psutil = psutil
        self.root = psutil.Process(pid)
        self.interval = interval
        self.memory = Memory()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="kipviz-memory", daemon=True)

    def start(self) -> MemoryWatch:
        """Take a first sample and start sampling in the background; returns the watch."""
        self.sample()
        self._thread.start()
        return self

    def sample(self) -> None:
        """Sample the resident memory of the process and its children once."""
        ps = self._psutil
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except ps.Error:
            return
        total = total_rss = 0
        seen: dict[int, tuple[str, int]] = {}
        pids = {p.pid for p in procs}
        for p in procs:
            try:
                with p.oneshot():       # name and parent from one read of /proc/PID/stat
                    rss = p.memory_info().rss
                    name = p.name()
                    parent = p.ppid() if p is not self.root else None
            except ps.Error:          # exited between listing and reading
                continue
            if parent in pids and _same_vm(p.pid, parent):     # a spawn before its exec
                continue
            pss = _pss(p.pid)
            total += rss if pss is None else pss
            total_rss += rss
            seen[p.pid] = (name, max(rss, _hwm(p.pid) or 0))
        with self._lock:
            m = self.memory
            m.samples += 1
            for pid, (name, hwm) in seen.items():
                old = m.processes.get(pid, (name, 0))[1]
                m.processes[pid] = (name, max(old, hwm))
            m.bound = sum(h for _, h in m.processes.values())
            m.peak = max(m.peak, total, *(h for _, h in seen.values()))
            m.peak_rss = max(m.peak_rss, total_rss)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> Memory:
        """Stop sampling; the Memory measured."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.memory


@dataclass
class Run:
    """A notebook run: the executed notebook, its memory and its seconds."""
    nb: object                  # nbformat.NotebookNode
    memory: Memory
    seconds: float


def _kernel_pid(client) -> int | None:
    prov = getattr(client.km, "provisioner", None)
    proc = getattr(prov, "process", None)
    return getattr(proc, "pid", None) or getattr(prov, "pid", None)


def _first_error(nb) -> str | None:
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                return f"cell {i} raised {out.get('ename')}: {out.get('evalue')}"
    return None


def read_notebook(path: Path):
    """The notebook at `path` (nbformat 4); a KipvizError names it if it cannot be read."""
    import nbformat
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as e:       # missing file, not JSON, not a notebook
        raise KipvizError(f"cannot read notebook {path}: {e}") from None


def run_notebook(notebook, *, cwd: str | Path | None = None, timeout: int = 600, env: dict | None = None,
                 kernel_name: str = "python3", interval: float = 0.05, measure: bool = True) -> Run:
    """Execute `notebook` (a path or an nbformat notebook) top to bottom in a fresh kernel started in
    `cwd` (default: the notebook's folder) with environment `env` (default: this process's).
    A cell that raises stops the run with a KipvizError naming the notebook and the cell."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    name = "notebook"
    if isinstance(notebook, (str, Path)):
        path = Path(notebook)
        name = path.name
        nb = read_notebook(path)
        cwd = cwd or path.parent
    else:
        nb = notebook
    cwd = Path(cwd or ".").resolve()
    watch: list[MemoryWatch] = []

    def started(**_):
        pid = _kernel_pid(client)
        if measure and pid:
            watch.append(MemoryWatch(pid, interval).start())

    current = [0]

    def cell_start(cell_index=0, **_):
        current[0] = cell_index

    def cell_done(**_):                          # the last sample is taken while the kernel still lives
        if watch:
            watch[0].sample()

    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, store_widget_state=True,
                            resources={"metadata": {"path": str(cwd)}},
                            on_notebook_start=started, on_cell_start=cell_start,
                            on_cell_executed=cell_done)
    t0 = time.perf_counter()
    # the kernel's own log lines (the cells' stderr goes to their outputs) are not ours to print
    try:
        client.execute(cwd=str(cwd), stderr=subprocess.DEVNULL, **({"env": env} if env is not None else {}))
    except CellTimeoutError as e:
        raise KipvizError(f"{name}: a cell ran longer than {timeout} s ({str(e).splitlines()[0]})") from None
    except CellExecutionError as e:
        where = _first_error(nb) or str(e).strip().splitlines()[-1]
        raise KipvizError(f"{name}: {where}") from None
    except DeadKernelError:
        raise KipvizError(f"{name}: the kernel died in cell {current[0]} (out of memory, or a crash)") from None
    finally:
        memory = watch[0].stop() if watch else Memory()
    return Run(nb=nb, memory=memory, seconds=time.perf_counter() - t0)
