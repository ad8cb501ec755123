"""Releasing the part of a partition log that is already written out, so a run of millions of
records keeps memory and the model's per-request log scans flat (Kafka's log start offset moving
up by retention, seen from the generator's side).

The model addresses entries by absolute offset (`log.entries[offset]`, `len(log.entries)` is the
log end offset), so the released prefix is replaced by a count: `Tail` is a list of the remaining
entries whose indexing, slicing and len() work in absolute offsets. Iteration (`for e in
log.entries`, `reversed(...)`) sees the remaining entries only, which is what the model's scans
(aborted transactions, a producer's last epoch) need once the prefix is settled."""
from __future__ import annotations

from .rows import batch_header


class Tail(list):
    """Log entries from offset `base` on, addressed by absolute offset."""
    __slots__ = ("base",)

    def __init__(self, entries=(), base: int = 0):
        super().__init__(entries)
        self.base = base

    def __len__(self) -> int:
        return self.base + list.__len__(self)

    def __getitem__(self, i):
        b = self.base
        if type(i) is int and i >= b:       # the common case first: one offset still in the log
            return list.__getitem__(self, i - b)
        if isinstance(i, slice):
            if i.step not in (None, 1) or (i.start is not None and i.start < 0) or (i.stop is not None and i.stop < 0):
                raise IndexError("released log: only forward slices by absolute offset")
            start = 0 if i.start is None else max(i.start - b, 0)
            stop = None if i.stop is None else max(i.stop - b, 0)
            return list.__getitem__(self, slice(start, stop))
        if i < 0:
            return list.__getitem__(self, i)
        if i < b:
            raise IndexError(f"offset {i} was released (log starts at {b})")
        return list.__getitem__(self, i - b)

    def release(self, upto: int) -> int:
        """Forget the entries below offset `upto`; returns how many were dropped."""
        n = min(upto - self.base, list.__len__(self))
        if n <= 0:
            return 0
        list.__delitem__(self, slice(0, n))
        self.base += n
        return n


def release(log, upto: int) -> int:
    """Drop `log`'s entries below `upto` and the batches that end below it; returns the number of
    batches dropped. The caller makes sure nothing still needs them: written out and behind every
    reader (`upto` is capped at the last stable offset here: open transactions stay whole)."""
    upto = min(upto, log.last_stable_offset, log.log_end_offset)
    if not isinstance(log.entries, Tail):
        log.entries = Tail(log.entries)
    log.entries.release(upto)
    k = 0
    for raw in log.batches:
        if batch_header(raw)[1] >= upto:
            break
        k += 1
    if k:
        del log.batches[:k]
        del log.batch_seqs[:k]
    return k
