"""Output files the commands write, checked before the work that leads to them (every command
module uses this; it imports none of them)."""
from __future__ import annotations

import os

from ..errors import KipvizError


def check_out(path: str) -> None:
    """KipvizError unless `path` can be written, found out before the work that leads to it: a
    file there is opened for appending (its bytes untouched), a new one created and removed."""
    p = os.path.abspath(path)
    if os.path.isdir(p):
        raise KipvizError(f"{path}: is a directory, not a file to write")
    if not os.path.isdir(os.path.dirname(p)):
        raise KipvizError(f"no such directory for {path!r}")
    try:
        if os.path.exists(p):
            open(p, "ab").close()
        else:
            open(p, "xb").close()
            os.unlink(p)
    except OSError as e:
        raise KipvizError(f"cannot write {path}: {e.strerror or e}") from None
