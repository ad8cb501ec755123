"""The kit's own error types: every failure a user can cause is one of these."""
from __future__ import annotations


class KipvizError(Exception):
    """Base class for errors kipviz raises on bad input."""


class SchemaError(KipvizError, ValueError):
    """A schema file is malformed; names the file and the field."""

    def __init__(self, message: str, *, source: str | None = None, path: str | None = None):
        self.source = source
        self.path = path
        where = ", ".join(p for p in (source, f"field {path}" if path else None) if p)
        super().__init__(f"{where}: {message}" if where else message)


class DecodeError(KipvizError, ValueError):
    """Bytes do not decode: names the byte offset and the field path."""

    def __init__(self, message: str, offset: int, path: str = ""):
        self.offset = offset
        self.path = path
        self.reason = message
        at = f" in {path}" if path else ""
        super().__init__(f"at byte {offset}{at}: {message}")


class EncodeError(KipvizError, ValueError):
    """A value does not fit the schema: names the field."""

    def __init__(self, message: str, path: str = ""):
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


class UnknownMessageError(KipvizError, KeyError):
    """No definition with that name (or api key)."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep it readable
        return str(self.args[0]) if self.args else "unknown message"
