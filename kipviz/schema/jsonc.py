"""Kafka's schema files are JSON with // line comments (and the odd /* */).

Limits (docs/limits.md): a schema text is at most MAX_BYTES (1 MiB; Kafka's largest, Fetch, is
about 8 KB) and nests at most MAX_DEPTH (64) arrays and objects deep; deeper text would make
Python's json parser raise RecursionError, so it is refused first as invalid JSON at the
bracket that goes too deep. Both are keyword arguments of loads()."""
from __future__ import annotations

import json
import re

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
_TOKENS = re.compile(r'\\.|[\[\]{}"]', re.S)


def strip_comments(text: str) -> str:
    """Remove comments outside strings, keeping line numbers for error messages."""
    out: list[str] = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
        elif c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            chunk = text[i: n if j < 0 else j + 2]
            out.append("\n" * chunk.count("\n"))
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def too_large(size: int, max_bytes: int = MAX_BYTES) -> str | None:
    """The complaint about a schema text of `size` bytes (None when it is within max_bytes)."""
    if size > max_bytes:
        return f"larger than {max_bytes} bytes (schema files are a few KB; raise max_bytes to allow it)"
    return None


def check_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """JSONDecodeError at the first bracket nested deeper than max_depth (strings skipped)."""
    depth, in_str = 0, False
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c[0] == "\\":
            continue                      # an escaped character (inside a string)
        if in_str:
            in_str = c != '"'
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > max_depth:
                raise json.JSONDecodeError(f"nested more than {max_depth} deep (raise max_depth to allow it)",
                                           text, m.start())
        else:
            depth -= 1


def loads(text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> object:
    """Parse schema text; too large or too deep is a JSONDecodeError like any other bad JSON."""
    if len(text) > max_bytes // 4:           # a str of n chars takes at most 4n bytes
        problem = too_large(len(text.encode("utf-8", "surrogatepass")), max_bytes)
        if problem:
            raise json.JSONDecodeError(problem, text, 0)
    clean = strip_comments(text)
    check_depth(clean, max_depth)
    return json.loads(clean)
