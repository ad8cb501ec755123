"""State machines as data. Each machine's transitions are one table of rows in one module; the
model executes the table and the diagram code reads the same table (h11's design)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class InvalidTransition(RuntimeError):
    """The model tried a move its table does not allow: a bug in the model, never bad input."""


@dataclass(frozen=True, slots=True)
class Row:
    from_state: str
    event: str
    to_state: str
    status: str = "released"      # released / accepted / proposed
    kip: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Table:
    name: str                     # "transaction", "classic-group", ...
    states: tuple[str, ...]
    initial: str
    rows: tuple[Row, ...]
    state_ids: dict | None = None  # Kafka's numeric ids where they exist (TransactionState)
    source: str = ""               # where released Kafka defines it
    terminal: tuple[str, ...] = ()

    def __post_init__(self):
        seen = set()
        for r in self.rows:
            if r.from_state not in self.states or r.to_state not in self.states:
                raise ValueError(f"{self.name}: row {r} uses an unknown state")
            if (r.from_state, r.event) in seen:
                raise ValueError(f"{self.name}: two rows for ({r.from_state}, {r.event})")
            seen.add((r.from_state, r.event))

    def rows_for(self, enabled: Callable[[Row], bool] | None = None) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if enabled is None or enabled(r))

    def next_state(self, state: str, event: str, enabled: Callable[[Row], bool] | None = None) -> Row:
        for r in self.rows:
            if r.from_state == state and r.event == event and (enabled is None or enabled(r)):
                return r
        raise InvalidTransition(f"{self.name}: no transition from {state} on {event}")

    def allows(self, state: str, event: str, enabled: Callable[[Row], bool] | None = None) -> bool:
        return any(r.from_state == state and r.event == event and (enabled is None or enabled(r))
                   for r in self.rows)


class Machine:
    """One instance of a table (one transactional id, one group, one member...)."""

    def __init__(self, table: Table, key: str, emit: Callable[..., None],
                 enabled: Callable[[Row], bool] | None = None, state: str | None = None):
        self.table = table
        self.key = key
        self.state = state or table.initial
        self._emit = emit
        self._enabled = enabled

    def can(self, event: str) -> bool:
        return self.table.allows(self.state, event, self._enabled)

    def fire(self, event: str) -> str:
        row = self.table.next_state(self.state, event, self._enabled)
        old, self.state = self.state, row.to_state
        self._emit(machine=self.table.name, key=self.key, from_state=old, to_state=row.to_state,
                   cause=event, status=row.status)
        return self.state
