"""The rows a handler module declares its errors with (`ERRORS = {api: rows(...) + kafka_only(...)}`):
one Row per error, the first (and last) version the broker answers it at, and the source.
kipviz.broker.api_errors collects them from the handlers; this module imports neither."""
from __future__ import annotations

from typing import NamedTuple


class Row(NamedTuple):
    error: str
    first: int
    last: int | None
    source: str
    unmodelled: str | None = None      # why the model never answers it (Kafka does), or None


def rows(since: int, names, source: str, until: int | None = None) -> list[Row]:
    """Rows for errors the model's handler answers from version `since` (to `until`)."""
    return [Row(n, since, until, source) for n in names]


def kafka_only(since: int, names, source: str, why: str, until: int | None = None) -> list[Row]:
    """Rows for errors Kafka answers but the model does not, with the reason."""
    return [Row(n, since, until, source, why) for n in names]
