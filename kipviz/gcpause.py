"""The cyclic garbage collector, kept out of the way of bulk work.

gc_paused: off while building many small acyclic objects (decoded dicts, lists, spans): letting it
rescan every new container roughly halves decoding speed.

rare_collections: for a long simulation run, which allocates millions of short-lived, acyclic
objects (events, records, frames) beside a large live model. With the default thresholds the
collector rescans that live set so often that it takes a third of the time; it now runs only when
the tracked objects grew by YOUNG_LIMIT since the last collection, which a run that leaves no
cyclic garbage does not reach, and which bounds the memory any future cycle could hold."""
from __future__ import annotations

import gc
from contextlib import contextmanager

YOUNG_LIMIT = 2_000_000


@contextmanager
def gc_paused():
    """A block run with the cyclic garbage collector off (as it was before, after it)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextmanager
def rare_collections():
    """A block run with young-generation collections at most every YOUNG_LIMIT allocations."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], YOUNG_LIMIT), old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)
