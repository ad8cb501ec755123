"""A chunk's rows built in a forked child while the run goes on.

A long run spends about a quarter of its time turning events and log batches into rows. On Linux
with a spare core, RunWriter hands each large chunk to a child process made by fork(): the child
sees the chunk copy-on-write (nothing is pickled), builds the Arrow record batches and leaves them
in Arrow IPC files; the parent picks them up at its next chunk (by then the child is done) and
writes them, or hands them to the writer process (kipviz.sampledata.filewriter). The rows and
their order are exactly those built in-process."""
from __future__ import annotations

import gc
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

import pyarrow as pa

from ..errors import KipvizError


def available() -> bool:
    """fork() with copy-on-write is Linux's; with one usable core nothing would overlap.
    KIPVIZ_NO_FORK=1 keeps everything in one process."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and len(os.sched_getaffinity(0)) > 1 \
        and os.environ.get("KIPVIZ_NO_FORK", "") in ("", "0")


def fork(keep=None) -> int:
    """os.fork() for a helper process: the child ignores SIGINT (Ctrl-C reaches the whole process
    group; the generator stops its helpers itself), with SIGINT blocked around the fork so that a
    Ctrl-C at that moment reaches the generator only, never a child still running its code.
    keep(pid) runs in the parent before a Ctrl-C held back meanwhile is raised, so that whoever
    stops the child knows it."""
    block = {signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, block)
    try:
        with warnings.catch_warnings():         # Python 3.12+ warns about fork() next to threads (tqdm's)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            except ValueError:                   # forked from a thread other than the main one
                pass
        elif keep is not None:
            keep(pid)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, block)
    return pid


def write_ipc(path, schema: pa.Schema, batches) -> None:
    """Record batches (empty ones too: their places count) as one Arrow IPC file."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as w:
        for b in batches:
            w.write_batch(b)


def read_ipc(path) -> tuple[pa.Schema, list]:
    """An Arrow IPC file's (schema, [record batches]); the file is removed."""
    with pa.OSFile(str(path), "rb") as src:
        reader = pa.ipc.open_file(src)
        out = reader.schema, [reader.get_batch(i) for i in range(reader.num_record_batches)]
    Path(path).unlink()
    return out


class Offload:
    """At most one child at a time: submit(build) forks it to run build() -> {name: (schema, [record
    batches]) or bytes}; collect() waits for it and returns the same dict (the bytes entries as
    written, the record batches read back; with read=False the Arrow files are left for their
    reader, named by chunk_path(n, name)), or None if nothing was submitted. Chunks are numbered
    from 1 in the order they are made; new_chunk() numbers one built elsewhere."""

    def __init__(self, parts: Path):
        self.parts = Path(parts)
        self._pid: int | None = None
        self._n = 0

    def chunk_path(self, n: int, name: str) -> Path:
        """The file of chunk n named `name` in the parts folder."""
        return self.parts / f"chunk-{n}.{name}"

    def _path(self, name: str) -> Path:
        return self.chunk_path(self._n, name)

    def new_chunk(self) -> int:
        """Start the next chunk; its number."""
        self._n += 1
        return self._n

    def submit(self, build) -> int:
        """Fork the child for the next chunk; returns its number."""
        if self._pid is not None:
            raise RuntimeError("collect() the previous chunk first")
        n = self.new_chunk()
        pid = fork(self._keep)
        if pid == 0:                             # the child: build, write, leave without cleanup handlers
            code = 1
            try:
                gc.disable()                     # it lives for one chunk: a collection would only copy pages
                names = []
                for name, rows in build().items():
                    if isinstance(rows, bytes):
                        self._path(name).write_bytes(rows)
                    else:
                        write_ipc(self._path(name + ".arrow"), *rows)
                        name += ".arrow"
                    names.append(name)
                self._path("done").write_text("\n".join(names))
                code = 0
            except BaseException:
                try:
                    self._path("err").write_text(traceback.format_exc())
                except BaseException:
                    pass
            finally:
                os._exit(code)
        return n

    def _keep(self, pid: int) -> None:
        self._pid = pid

    def collect(self, read: bool = True) -> dict | None:
        """Wait for the child building the last chunk; its result (None when none runs)."""
        if self._pid is None:
            return None
        _, status = os.waitpid(self._pid, 0)     # (interrupted here, cancel() still stops the child)
        self._pid = None
        code, done = os.waitstatus_to_exitcode(status), self._path("done")
        if code != 0 or not done.is_file():
            err = self._path("err")
            why = err.read_text().strip().splitlines()[-1] if err.is_file() else \
                f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise KipvizError(f"building rows in a child process failed: {why}")
        out = {}
        for name in filter(None, done.read_text().split("\n")):
            if name.endswith(".arrow"):
                if read:
                    out[name[:-6]] = read_ipc(self._path(name))
            else:
                out[name] = self._path(name).read_bytes()
                self._path(name).unlink()
        done.unlink()
        return out

    def cancel(self) -> None:
        """Stop and reap a running child (the run failed); its files are left in the parts directory."""
        if self._pid is not None:
            pid, self._pid = self._pid, None
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
