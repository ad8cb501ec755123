"""The bounded event buffer of a long-running cluster (`kipviz serve`): Cluster.events keeps at
most ClusterConfig.events_max events and about ClusterConfig.events_max_bytes bytes of them.

An event's bytes are estimated from what it holds: a request or response its frame and its
decoded body (about the frame's size again, twice for safety: a decoded body is dicts), a record
its key and value. Past the byte bound, the oldest events give way until the buffer is at half
the bound: with a recording (ClusterConfig.events_spill) they are handed to it whole (it writes
their frames to requests.parquet) and leave memory; without one they are *slimmed* -- the frame
dropped, every bytes value longer than 64 bytes in the body (and a record's key and value)
replaced by its length ("<N bytes>", the same text the sample writer shows for it), at most
SLIM_PER_CALL per call so the work after one request stays small -- and when that does not bring
them under the bound the oldest are dropped. So one 64 MiB request is not
pinned after its answer, while the newest events, the ones a live view draws, stay whole."""
from __future__ import annotations

from array import array

from ..schema import events as ev

SLIM_PER_CALL = 256      # events slimmed at most per bound() call (then the oldest are dropped instead)
EVENT_BYTES = 240        # an event object and its small fields
RECORD_BYTES = 480       # a RecordAppended: the event, its record dict, the key and value objects
SHORT_BYTES = 64         # bytes up to this size stay (kipviz.sampledata.rows.SHORT_BYTES shows them in full)
_WIRE = (ev.RequestReceived, ev.ResponseSent)


class Elided(str):
    """A bytes value taken out of a slimmed event: its length, as "<N bytes>"."""
    __slots__ = ()

    @classmethod
    def of(cls, n: int) -> Elided:
        return cls(f"<{n} bytes>")


def _len(b) -> int:
    return len(b) if isinstance(b, (bytes, bytearray, memoryview)) else 0


def size_of(e) -> int:
    """The estimated bytes event `e` keeps alive."""
    t = type(e)
    if t is ev.RecordAppended:
        return RECORD_BYTES + _len(e.key) + _len(e.value)
    if t in _WIRE:
        return EVENT_BYTES + 3 * len(e.frame) if e.frame else EVENT_BYTES + _body_bytes(e.body)
    if t is ev.LogCleaned:          # its kept runs: one per run of offsets a pass left
        return EVENT_BYTES + _body_bytes(e.kept)
    return EVENT_BYTES


def _body_bytes(body, depth: int = 0) -> int:
    """Bytes of a slimmed body: its own bytes values and ~64 per container or scalar."""
    if isinstance(body, dict):
        return 64 + sum(_body_bytes(v, depth + 1) for v in body.values()) if depth < 32 else 64
    if isinstance(body, (list, tuple)):
        return 64 + sum(_body_bytes(v, depth + 1) for v in body) if depth < 32 else 64
    return 16 + _len(body)


def _elide(o, gone: list, depth: int = 0):
    """A copy of `o` with bytes longer than SHORT_BYTES elided; their sizes are added to gone[0]."""
    if isinstance(o, (bytes, bytearray, memoryview)):
        if len(o) > SHORT_BYTES:
            gone[0] += len(o)
            return Elided.of(len(o))
        return o
    if depth >= 32:
        return o
    if isinstance(o, dict):
        return {k: _elide(v, gone, depth + 1) for k, v in o.items()}
    if isinstance(o, list):
        return [_elide(v, gone, depth + 1) for v in o]
    if isinstance(o, tuple):
        return tuple(_elide(v, gone, depth + 1) for v in o)
    return o


def slim(e) -> tuple[object, int]:
    """`e` without what makes it big (see the module docstring), and the bytes it still keeps
    (a wire event's decoded body: about twice what is left of its frame); small events come back
    as they are."""
    t, gone = type(e), [0]
    if t in _WIRE:
        fields = {f: getattr(e, f) for f in t.__dataclass_fields__}
        fields.update(body=_elide(e.body, gone), frame=b"")
        return t(**fields), EVENT_BYTES + 2 * max(len(e.frame) - gone[0], 0) if e.frame else size_of(e)
    if t is ev.RecordAppended and (_len(e.key) > SHORT_BYTES or _len(e.value) > SHORT_BYTES):
        fields = {f: getattr(e, f) for f in t.__dataclass_fields__}
        fields.update(key=_elide(e.key, gone), value=_elide(e.value, gone), record=_elide(e.record, [0]))
        return t(**fields), RECORD_BYTES
    return e, size_of(e)


class EventBuffer:
    """Bytes of the cluster's events, counted as they come (`sizes` runs parallel to
    cluster.events; `slimmed` marks the ones already slimmed)."""

    def __init__(self):
        self.sizes = array("q")
        self.slimmed = bytearray()
        self.total = 0
        self.cursor = 0                  # events before this index are slimmed (or small) already
        self.slimmed_total = 0           # events slimmed so far (all time)
        self.dropped_total = 0           # events dropped or spilled because of the byte bound

    def reset(self) -> None:
        self.sizes, self.slimmed, self.total, self.cursor = array("q"), bytearray(), 0, 0

    def forget_front(self, n: int) -> None:
        """The oldest n events left the buffer (the count bound, take_events)."""
        if n <= 0:
            return
        self.total -= sum(self.sizes[:n])
        del self.sizes[:n], self.slimmed[:n]
        self.cursor = max(0, self.cursor - n)

    def count_new(self, events: list) -> None:
        k = len(self.sizes)
        if len(events) > k:
            new = array("q", map(size_of, events[k:]))
            self.sizes.extend(new)
            self.slimmed.extend(bytes(len(new)))
            self.total += sum(new)

    def bound(self, cluster, max_bytes: int) -> None:
        """Bring the buffer under max_bytes (to half of it) if it passed it."""
        events = cluster.events
        self.count_new(events)
        if self.total <= max_bytes:
            return
        goal = max_bytes // 2
        spill = cluster.config.events_spill
        if spill is None:                # the oldest events not yet slimmed, a bounded number per call
            sizes, flags, i = self.sizes, self.slimmed, self.cursor
            end = min(len(events), i + SLIM_PER_CALL)
            while i < end and self.total > goal:
                if not flags[i]:
                    events[i], n = slim(events[i])
                    self.total += n - sizes[i]
                    sizes[i], flags[i] = n, 1
                    self.slimmed_total += 1
                i += 1
            self.cursor = i
            if self.total <= max_bytes:
                return
        # spilled whole to a recording, or (slimmed) dropped: the oldest events until at the goal
        n, left = 0, self.total
        while n < len(events) and left > goal:
            left -= self.sizes[n]
            n += 1
        out = events[:n]
        del events[:n]
        cluster.events_taken += n
        self.forget_front(n)
        self.dropped_total += n
        if spill is not None:
            spill(out)
