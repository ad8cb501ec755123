"""Held requests (Kafka's purgatory: DelayedFetch, DelayedShareFetch), sans-IO.

A handler that has nothing to return yet registers the request here and returns DEFERRED. After
every request the cluster handles and whenever virtual time moves, `poke()` retries the held ones
(a produce or a transaction marker may have made data available); a held request whose MaxWaitMs
passes on the virtual clock is answered with whatever there is then. Completed frames wait in
`outbox` as (client, broker, frame) until the edge (kipviz.serve) takes them with
`Cluster.take_completed()`. Only used with ClusterConfig.long_poll."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .handlers import Request


@dataclass
class Held:
    request: Request
    deadline: int
    attempt: Callable[[bool], dict | None]     # attempt(final) -> body, or None while not ready
    timer: int | None = None
    done: bool = field(default=False)
    # key(cluster) -> what the request's readiness depends on; poke() tries again only when it
    # changed (DelayedOperationPurgatory completes an operation on its watch keys' changes only)
    key: Callable[[object], object] | None = None
    last_key: object = None


class Delayed:
    def __init__(self, cluster):
        self.cluster = cluster
        self.held: list[Held] = []
        self.outbox: list[tuple[str, int, bytes]] = []

    def hold(self, request: Request, max_wait_ms: int, attempt: Callable[[bool], dict | None],
             key: Callable[[object], object] | None = None) -> None:
        h = Held(request, self.cluster.now + max(0, max_wait_ms), attempt, key=key)
        if key is not None:
            h.last_key = key(self.cluster)
        self.held.append(h)
        h.timer = self.cluster.clock.schedule(h.deadline, lambda: self._finish(h, True))

    def poke(self) -> None:
        """Retry the held requests whose key changed (all of those without a key): with a thousand
        consumers waiting, a request costs a thousand cheap key checks, not a thousand fetches."""
        keys: dict = {}                  # each key function once per poke
        for h in list(self.held):
            if h.done:
                continue
            if h.key is not None:
                k = keys.get(h.key)
                if k is None:
                    k = keys[h.key] = h.key(self.cluster)
                if k == h.last_key:
                    continue
                h.last_key = k
            self._finish(h, False)

    def drop(self, client: str, broker: int | None = None) -> int:
        """Forget the held requests of a closed connection (nothing is sent); returns how many."""
        gone = [h for h in self.held if h.request.client == client
                and (broker is None or h.request.broker == broker)]
        for h in gone:
            h.done = True
            if h.timer is not None:
                self.cluster.clock.cancel(h.timer)
        self.held = [h for h in self.held if not h.done]
        return len(gone)

    def _finish(self, h: Held, final: bool) -> None:
        if h.done:
            return
        body = h.attempt(final)
        if body is None:
            return
        h.done = True
        if not final and h.timer is not None:
            self.cluster.clock.cancel(h.timer)
        self.held = [x for x in self.held if x is not h]
        if h.request.broker in self.cluster.down:
            return
        frame = self.cluster.complete(h.request, body)
        self.outbox.append((h.request.client, h.request.broker, frame))
