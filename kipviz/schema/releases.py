"""The Apache Kafka releases the kit models, oldest first; the newest is what the model plays
unless told otherwise (FACTS.md (h): Kafka 4.4 is the newest release)."""
from __future__ import annotations

RELEASES: tuple[str, ...] = ("4.0", "4.1", "4.2", "4.3", "4.4")
NEWEST = RELEASES[-1]
