"""Releasing the part of a partition log that is already written out, so a run of millions of
records keeps memory and the model's per-request log scans flat (Kafka's log start offset moving
up by retention, seen from the generator's side). The mechanism is the broker's own
(kipviz.broker.retention.release, PartitionLog.release), which log retention uses too."""
from __future__ import annotations

from ..broker.retention import release

__all__ = ["release"]
