"""Errors each version of an RPC can return, collected from the model's handlers: every handler
module declares, next to the code that answers them, `ERRORS = {api: rows(...)}` for the APIs it
handles, one Row per error with the first (and last) version the broker answers it at and the
source. `errors_by_version(api)` turns the rows into {version: [error names]} for the versions the
kit defines; the review, the wire explorer, `kipviz diff` and notebooks read it (one path).

A row marked `kafka_only(..., why)` is an error Kafka answers that the model does not (no disks,
no coordinator loading, ...): it is in the table (Kafka can return it) with the reason.
tests/test_api_errors.py judges the rows: against the handlers' code (every code it can answer is
declared, every declared row is answered or marked), the scenarios' answers, and Kafka's schema
comments and "Supported errors" lists. The row vocabulary the handlers write with (Row, rows,
kafka_only) is kipviz.broker.error_rows, below the handlers; this module reads them."""
from __future__ import annotations

import sys
from collections.abc import Mapping

from ..schema.error_codes import ERRORS
from .error_rows import Row, kafka_only, rows

__all__ = ["Row", "rows", "kafka_only", "declared", "ERROR_ROWS", "PAGE_ONLY", "errors_by_version",
           "new_errors", "error_diff", "source_of", "apis"]


def declared() -> dict[str, list[Row]]:
    """{api: rows} from the handler registry: each API's rows come from its handler's module."""
    from .handlers import HANDLERS, load_all
    load_all()
    out: dict[str, list[Row]] = {}
    owners = {}
    for api, fn in sorted(HANDLERS.items()):
        table = getattr(sys.modules[fn.__module__], "ERRORS", {})
        owners[fn.__module__] = table
        if api in table:
            out[api] = list(table[api])
    for mod, table in owners.items():
        stray = sorted(a for a in table if HANDLERS.get(a) is None or HANDLERS[a].__module__ != mod)
        if stray:
            raise AssertionError(f"{mod}.ERRORS declares APIs it does not handle: {stray}")
    unknown = sorted({r.error for rs in out.values() for r in rs if r.error not in ERRORS})
    if unknown:
        raise AssertionError(f"error names not in error_codes.ERRORS: {unknown}")
    return out


class _Lazy(Mapping):
    """A table read from the handler modules on first use (importing the handlers while
    kipviz.broker itself is importing would be circular)."""

    def __init__(self, load):
        self._load, self._rows = load, None

    def _table(self) -> dict:
        if self._rows is None:
            self._rows = self._load()
        return self._rows

    def __getitem__(self, api):
        return self._table()[api]

    def __iter__(self):
        return iter(self._table())

    def __len__(self):
        return len(self._table())


def _page_only() -> dict[str, tuple]:
    """Errors a proposal's page lists that the model never answers (a departure), from the handler
    modules' PAGE_ONLY."""
    from .handlers import HANDLERS, load_all
    load_all()
    out = {}
    for api, fn in HANDLERS.items():
        page = getattr(sys.modules[fn.__module__], "PAGE_ONLY", {})
        if api in page:
            out[api] = tuple(page[api])
    return out


ERROR_ROWS: Mapping[str, list[Row]] = _Lazy(declared)
PAGE_ONLY: Mapping[str, tuple] = _Lazy(_page_only)


def apis() -> tuple[str, ...]:
    """The APIs whose handlers declare their errors."""
    return tuple(ERROR_ROWS)


def _versions(api: str) -> list[int]:
    from ..schema import registry
    try:
        return list(registry.get(api + "Request").versions)
    except Exception:      # an RPC the kit has no definition of: the versions the rows name
        return list(range(0, max((r.first for r in ERROR_ROWS.get(api, [])), default=0) + 1))


def errors_by_version(api: str) -> dict[int, list[str]]:
    """{version: sorted error names the broker can answer at that version} (NONE not listed).
    An API without rows raises KeyError naming the ones that have them."""
    if api not in ERROR_ROWS:
        raise KeyError(f"no error table for {api!r}; known: {', '.join(apis())}")
    out = {}
    for v in _versions(api):
        out[v] = sorted({r.error for r in ERROR_ROWS[api] if r.first <= v and (r.last is None or v <= r.last)})
    return out


def new_errors(api: str, old: int, new: int) -> dict[str, list[str]]:
    """What changes between two versions: {"added": [...], "removed": [...]}."""
    t = errors_by_version(api)
    a, b = set(t.get(old, ())), set(t.get(new, ()))
    return {"added": sorted(b - a), "removed": sorted(a - b)}


def error_diff(api: str, a: int, b: int) -> list[dict]:
    """Rows {path "(errors)", change "error added"/"error removed", detail "NAME (source)"} for a
    version diff; none for an RPC without an error table."""
    if api not in ERROR_ROWS:
        return []
    d = new_errors(api, a, b)
    return ([{"path": "(errors)", "change": "error added", "detail": f"{n} ({source_of(api, n)})"}
             for n in d["added"]] +
            [{"path": "(errors)", "change": "error removed", "detail": n} for n in d["removed"]])


def source_of(api: str, error: str) -> str:
    return next((r.source for r in ERROR_ROWS.get(api, []) if r.error == error), "")
