"""The kit's own definitions, loaded once, looked up by name or api key."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..errors import UnknownMessageError
from .loader import load_dir
from .model import MessageSpec

DEFS_DIR = Path(__file__).resolve().parent.parent / "defs" / "messages"


@lru_cache(maxsize=1)
def _kit() -> dict[str, MessageSpec]:
    return load_dir(DEFS_DIR, require_kit=True)


def messages() -> dict[str, MessageSpec]:
    """All kit definitions by name."""
    return dict(_kit())


def get(name: str) -> MessageSpec:
    if isinstance(name, MessageSpec):
        return name
    specs = _kit()
    spec = specs.get(name)
    if spec is None:
        close = [n for n in specs if n.lower().startswith(str(name).lower()[:6])]
        hint = f"; did you mean {', '.join(sorted(close)[:4])}?" if close else ""
        raise UnknownMessageError(f"no message named {name!r}{hint}")
    return spec
