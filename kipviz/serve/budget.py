"""What a served cluster holds in memory, and the pool that bounds the request bytes it reads.

    pool = RequestPool(64 * 2**20)      # queued.max.request.bytes
    pool.try_allocate(size)             # a frame's size prefix was read: its bytes, or False (wait)
    pool.release(size)                  # the request was handled
    lines(server.budget())              # the budget as text (`kipviz serve -v`, the live view)

RequestPool is Kafka's MemoryPool as the broker uses it (SocketServer: `queued.max.request.bytes`
> 0 makes a SimpleMemoryPool, non-strict; clients/.../common/memory/SimpleMemoryPool.java): a
connection whose next frame's size prefix has been read asks the pool for that many bytes
(NetworkReceive.readFrom -> MemoryPool.tryAllocate); the allocation succeeds while any memory is
left, even if it takes the pool below zero (non-strict, so one frame of any allowed size can
always be read), and otherwise the connection is not read from until memory comes back
(Selector: an out-of-memory channel is muted and retried when the pool has room). Kafka's default
is -1 (no pool); a teaching server uses the kit's bound, DEFAULT_QUEUED_MAX_REQUEST_BYTES."""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

DEFAULT_QUEUED_MAX_REQUEST_BYTES = 64 * 1024 * 1024
DEFAULT_EVENTS_MAX_BYTES = 64 * 1024 * 1024


class RequestPool:
    """The memory requests may hold at once, in bytes: allocations wait when it is spent."""
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.available = capacity
        self.waiting: deque[Callable[[], bool]] = deque()     # retried in order when memory returns
        self.denied = 0                                       # allocations that had to wait (all time)

    @property
    def in_use(self) -> int:
        """Bytes held now."""
        return self.capacity - self.available

    def try_allocate(self, n: int) -> bool:
        """Take n bytes if any are left (the pool may go below zero once); False when it is spent."""
        if self.available <= 0:
            self.denied += 1
            return False
        self.available -= n
        return True

    def release(self, n: int) -> None:
        """Give n bytes back and retry the waiting allocations in order."""
        self.available += n
        while self.waiting and self.available > 0:
            retry = self.waiting.popleft()
            retry()


def mib(n: float) -> str:
    """A byte count in MiB, one decimal ("1.5 MiB")."""
    return f"{n / 2**20:.1f} MiB"


def lines(b: dict) -> list[str]:
    """The budget snapshot (Server.budget()) as a few lines of text."""
    r, e, h, lg, c = b["requests"], b["events"], b["held"], b["logs"], b["connections"]
    return [
        f"requests read: {mib(r['in_use'])} of {mib(r['limit'])} (queued.max.request.bytes) in "
        f"{r['frames']} frame(s), {r['waiting']} connection(s) waiting for memory; {mib(r['buffered'])} buffered",
        f"held requests: {h['count']} ({mib(h['bytes'])}); unsent responses {mib(b['responses']['unsent'])}",
        f"events: {e['count']:,} of {e['limit_count'] or '-'} kept, ~{mib(e['bytes'])} of {mib(e['limit_bytes'] or 0)}"
        f" ({e['slimmed']:,} slimmed, {e['dropped']:,} dropped or spilled for bytes)",
        f"logs: {mib(lg['bytes'])} of batches ({mib(lg['in_memory'])} in memory"
        + (f", the rest in {lg['dir']}" if lg["dir"] else "") + f"), {lg['batches']:,} batches indexed",
        f"connections: {c['open']} open; closed idle {c['idle_closed']}, slow frames {c['slow_closed']}",
    ]
