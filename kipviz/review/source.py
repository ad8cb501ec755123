"""The schema under review: read it (a file, schema text or a loaded spec), validate it, and point
at the line of the text that a field path or error names."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import SchemaError
from ..schema import jsonc
from ..schema.loader import parse_spec
from ..schema.model import MessageSpec

__all__ = ["Draft", "read", "locate", "excerpt"]


@dataclass
class Draft:
    """What was given for review: its text (None for a spec object), where it came from, and the
    loaded spec, or the SchemaError that stopped loading (with the line it points at)."""

    source: str
    text: str | None
    spec: MessageSpec | None
    error: SchemaError | None = None
    line: int | None = None
    column: int | None = None


def _looks_like_text(s: str) -> bool:
    head = s.lstrip()
    return head.startswith(("{", "//", "/*")) or "\n" in s


def read(what, source: str | None = None, *, max_bytes: int = jsonc.MAX_BYTES,
         max_depth: int = jsonc.MAX_DEPTH) -> Draft:
    """A Draft from a path, schema text (a str starting with "{" or "//", or holding a newline)
    or a MessageSpec. A file that cannot be read raises SchemaError (the one unreadable-input
    case); everything wrong inside the text is returned in Draft.error.

    Bounded: at most max_bytes + 1 bytes are read from a file (so /dev/zero or a FIFO ends), and
    text larger than max_bytes or nested deeper than max_depth is an error (docs/limits.md)."""
    if isinstance(what, MessageSpec):
        return Draft(source or what.source or what.name, None, what)
    if isinstance(what, str) and _looks_like_text(what):
        return load(what, source or "<draft>", max_bytes=max_bytes, max_depth=max_depth)
    if not isinstance(what, (str, Path)):
        raise SchemaError(f"cannot review a {type(what).__name__}: give a file path, schema text or a MessageSpec")
    p = Path(what)
    try:
        with p.open("rb") as f:
            raw = f.read(max_bytes + 1)
        problem = jsonc.too_large(len(raw), max_bytes)
        if problem:
            raise SchemaError(problem, source=str(p))
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SchemaError(f"cannot read: {reason}", source=str(p)) from None
    return load(text, source or p.name, max_bytes=max_bytes, max_depth=max_depth)


def load(text: str, source: str, *, max_bytes: int = jsonc.MAX_BYTES, max_depth: int = jsonc.MAX_DEPTH) -> Draft:
    """Validate schema text; the error, if any, is kept with the line it points at."""
    try:
        obj = jsonc.loads(text, max_bytes=max_bytes, max_depth=max_depth)
    except json.JSONDecodeError as e:
        err = SchemaError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source=source)
        return Draft(source, text, None, err, e.lineno, e.colno)
    try:
        spec = parse_spec(obj, source)
    except SchemaError as e:
        return Draft(source, text, None, e, locate(text, e.path, str(e)))
    return Draft(source, text, spec)


_QUOTED = re.compile(r"'([A-Za-z][A-Za-z0-9_]*)'")


def _name_at(text: str, name: str, start: int) -> re.Match | None:
    return re.compile(r'"name"\s*:\s*"' + re.escape(name) + '"').search(text, start)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def locate(text: str | None, path: str | None, message: str = "") -> int | None:
    """The 1-based line of `text` holding the field at dotted `path` (the field's "name" entry,
    each component searched after its parent's), or, without a path, the first key the message
    quotes ('apiKey'). None when it cannot be found."""
    if not text:
        return None
    clean = jsonc.strip_comments(text)        # comments out, line numbers kept
    if path and not path.startswith("kipviz."):
        parts = [p for p in path.split(".") if p]
        if parts and parts[0] == "commonStructs":
            parts = parts[1:]
        pos, m = 0, None
        for i, part in enumerate(parts):
            m = _name_at(clean, part, pos)
            if m is None:
                break
            if i == len(parts) - 1 and "duplicate" in message:
                again = _name_at(clean, part, m.end())     # the second definition is the culprit
                m = again or m
            pos = m.end()
        if m is not None:
            return _line(clean, m.start())
    if path and path.startswith("kipviz."):
        m = re.search(r'"kipviz"\s*:', clean)
        return _line(clean, m.start()) if m else None
    for key in _QUOTED.findall(message):
        m = re.search(r'"' + re.escape(key) + r'"\s*:', clean)
        if m:
            return _line(clean, m.start())
    return None


def excerpt(text: str | None, line: int | None, context: int = 2) -> list[tuple[int, str, bool]]:
    """(line number, line text, is the line pointed at) around `line`."""
    if not text or not line:
        return []
    lines = text.splitlines()
    lo, hi = max(1, line - context), min(len(lines), line + context)
    return [(n, lines[n - 1], n == line) for n in range(lo, hi + 1)]
