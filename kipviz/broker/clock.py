"""A virtual clock with timers: time moves only when the model is told to advance."""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class VirtualClock:
    def __init__(self, start_ms: int = 0):
        self.now = start_ms
        self._timers: list[tuple[int, int, Callable[[], None]]] = []
        self._ids = itertools.count()
        self._cancelled: set[int] = set()

    def schedule(self, at_ms: int, action: Callable[[], None]) -> int:
        tid = next(self._ids)
        heapq.heappush(self._timers, (at_ms, tid, action))
        return tid

    def cancel(self, tid: int) -> None:
        self._cancelled.add(tid)

    def next_due(self) -> int | None:
        """When the next live timer fires (None: no timer), so a driver can sleep until then."""
        while self._timers and self._timers[0][1] in self._cancelled:
            self._cancelled.discard(heapq.heappop(self._timers)[1])
        return self._timers[0][0] if self._timers else None

    def advance(self, ms: int) -> None:
        """Move time forward, firing due timers in time order (each at its own time)."""
        if ms < 0:
            raise ValueError("time only moves forward")
        end = self.now + ms
        while self._timers and self._timers[0][0] <= end:
            at, tid, action = heapq.heappop(self._timers)
            if tid in self._cancelled:
                self._cancelled.discard(tid)
                continue
            self.now = max(self.now, at)
            action()
        self.now = end
