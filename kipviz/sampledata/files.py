"""Creating a run directory's files and folders safely.

Every file is created exclusively and without following a symbolic link (O_CREAT|O_EXCL|O_NOFOLLOW):
a name already taken -- a file left there, or a link planted in the folder -- is an error, never a
write through the link to its target. A private run (`kipviz serve --record`: the pcap holds every
byte of the traffic) has 0700 folders and 0600 files; others get the usual 0777/0666 less the umask.
Clearing an earlier run removes links as links (never what they point to)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa

from ..errors import KipvizError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def new_file(path, private: bool = False, *, buffered: bool = True):
    """A new file opened for writing (binary; unbuffered: each write is in the file at once)."""
    try:
        fd = os.open(path, _FLAGS, 0o600 if private else 0o666)
    except FileExistsError:
        raise KipvizError(f"{path}: already exists (or is a link): the run's files are created new, never "
                          "written through a link or over another file") from None
    return os.fdopen(fd, "wb", buffering=-1 if buffered else 0)


def new_dirs(base: Path, rel, private: bool = False) -> Path:
    """base/rel with every missing folder of rel created (0700 when private); a part of rel that
    exists must be a folder, not a link to one."""
    p = Path(base)
    for part in Path(rel).parts:
        p = p / part
        try:
            os.mkdir(p, 0o700 if private else 0o777)
        except FileExistsError:
            if p.is_symlink() or not p.is_dir():
                raise KipvizError(f"{p}: exists and is not a folder (a link or a file)") from None
    return p


def remove(path: Path) -> None:
    """Remove a file, a link (not its target) or a folder tree (shutil.rmtree never follows links)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


class PartStream:
    """An Arrow IPC stream into a new file (the writer's temporary per-log parts)."""

    def __init__(self, path, schema: pa.Schema, private: bool = False):
        self._file = new_file(path, private)
        self._writer = pa.ipc.new_stream(self._file, schema)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append a record batch to the part file."""
        self._writer.write_batch(batch)

    def close(self) -> None:
        """Finish the part file."""
        self._writer.close()
        self._file.close()
