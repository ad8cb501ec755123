"""A large run's files written by a process of their own.

Compressing the events' and requests' row groups and appending the partition logs' part files take
about a tenth of a long run's time. When chunks are offloaded (kipviz.sampledata.offload), RunWriter
forks this writer at the first large chunk, before any file is open. From then on every chunk's
rows arrive as Arrow IPC files in the parts directory, named by the chunk's number (built by a
chunk child or in the generator's process); `chunk(n)` hands one over and the writer appends it to
the same TableWriters and part streams the in-process path uses, so the bytes are the same.
The writer exits at close() with the row counts, or when the generator's end of its pipe closes."""
from __future__ import annotations

import gc
import json
import os
import traceback
from pathlib import Path

import pyarrow as pa

from ..errors import KipvizError
from .files import PartStream
from .offload import fork, read_ipc
from .parquet import TableWriter
from .schema import BATCH, TOPIC

STREAMS = ("events", "requests")       # chunk files appended to events.parquet / requests.parquet
PART_SCHEMAS = {"batches": BATCH, "records": TOPIC}


def write_part(parts: Path, writer, stem: str, schema: pa.Schema, rows, private: bool = False):
    """Append rows to the part stream `stem` (opened on its first rows); returns the stream."""
    if rows is None or not rows.num_rows:
        return writer
    if writer is None:
        writer = PartStream(parts / stem, schema, private)
    writer.write_batch(rows)
    return writer


class FileWriterProcess:
    """A child process writing the sample's Parquet files from the parts handed to it."""
    def __init__(self, out: Path, parts: Path, private: bool = False):
        self.out, self.parts = Path(out), Path(parts)
        read, self._pipe = os.pipe()
        self._pid: int | None = None
        pid = fork(self._keep)
        if pid == 0:
            os.close(self._pipe)
            code = 1
            try:
                gc.freeze()                     # what it inherited is never collected (nor copied by a scan)
                _serve(read, self.out, self.parts, private)
                code = 0
            except BaseException:
                try:
                    (self.parts / "writer.err").write_text(traceback.format_exc())
                except BaseException:
                    pass
            finally:
                os._exit(code)
        os.close(read)

    def _keep(self, pid: int) -> None:
        self._pid = pid

    def chunk(self, n: int, stems: list[str]) -> None:
        """Chunk n's files are complete: `stems` are the part streams its batches/records rows go to."""
        (self.parts / f"chunk-{n}.stems").write_text("\n".join(stems))
        self._send(f"chunk {n}\n")

    def close(self) -> dict:
        """Finish the files; returns {"events": rows, "requests": rows}."""
        self._send("close\n")
        os.close(self._pipe)
        self._wait(0)
        return json.loads((self.parts / "writer.rows").read_text())

    def cancel(self) -> None:
        """Stop the child at once (killed): its files are left unfinished."""
        if self._pid is not None:
            pid, self._pid = self._pid, None
            try:
                os.close(self._pipe)
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except (OSError, ChildProcessError):
                pass

    def _send(self, line: str) -> None:
        if self._pid is None:
            raise KipvizError("writing the sample in a child process failed: it was stopped")
        try:
            os.write(self._pipe, line.encode())
        except BrokenPipeError:
            self._wait(0)
            raise KipvizError("writing the sample in a child process failed: it stopped") from None
        self._wait(os.WNOHANG)

    def _wait(self, flags: int) -> None:
        """Reap the writer if it ended (flags=WNOHANG) or wait for it; a failure is one KipvizError."""
        if self._pid is None:
            raise KipvizError("writing the sample in a child process failed: it was stopped")
        pid, status = os.waitpid(self._pid, flags)
        if pid == 0:
            return
        self._pid = None
        code = os.waitstatus_to_exitcode(status)
        if code == 0 and not flags:
            return
        err = self.parts / "writer.err"
        why = err.read_text().strip().splitlines()[-1] if err.is_file() else \
            f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        raise KipvizError(f"writing the sample in a child process failed: {why}")


def _serve(read_fd: int, out: Path, parts: Path, private: bool) -> None:
    tables = {"events": TableWriter(out / "events.parquet", "event", private),
              "requests": TableWriter(out / "requests.parquet", "request", private)}
    streams: dict[str, object] = {}
    with os.fdopen(read_fd) as commands:
        for line in commands:
            cmd = line.split()
            if cmd[0] == "close":
                break
            n = int(cmd[1])
            for name in STREAMS:
                path = parts / f"chunk-{n}.{name}.arrow"
                if path.is_file():
                    for b in read_ipc(path)[1]:
                        tables[name].write_batch(b)
            stems_file = parts / f"chunk-{n}.stems"
            stems = list(filter(None, stems_file.read_text().split("\n")))
            stems_file.unlink()
            for kind, schema in PART_SCHEMAS.items():
                path = parts / f"chunk-{n}.{kind}.arrow"
                rows = read_ipc(path)[1] if path.is_file() else []
                for stem, rb in zip(stems, rows, strict=True):
                    key = f"{stem}.{kind}"
                    streams[key] = write_part(parts, streams.get(key), key, schema, rb, private)
        else:
            return                                  # the generator went away without close()
    for w in streams.values():
        if w is not None:
            w.close()
    rows = {name: t.close() for name, t in tables.items()}
    (parts / "writer.rows").write_text(json.dumps(rows))
