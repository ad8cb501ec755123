"""`kipviz explain`: a capture of real Kafka clients and brokers, explained (docs/explain.md).

    from kipviz.explain import explain
    r = explain("traffic.pcap", ports=(9092,))
    r.who          # connections: client id, software and versions; the broker's release, guessed
    r.story        # one folded sequence diagram of the whole capture
    r.findings     # errors with their meaning, fencing, late commits, open transactions, ...
    r.latency      # p50/p99 per API, with a chart
    r.states       # the coordinators' states rebuilt from the wire, animated as the scenarios are
    r.replay       # the requests replayed into a fresh model: where the broker and the model disagree
    bundled("zombie_producer")   # the path of a bundled capture of a client mistake (MISTAKES)"""
from __future__ import annotations

from pathlib import Path

from .findings import DETECTORS, Finding, Findings
from .replay import Replay
from .report import Report, explain

__all__ = ["explain", "Report", "Replay", "Finding", "Findings", "DETECTORS", "MISTAKES", "bundled"]

# captures of real librdkafka clients making a classic mistake, through `kipviz serve --record`
# (recorded by tools/make_mistake_captures.py, which says what each client does)
MISTAKES = {"zombie_producer": "a transactional producer keeps writing after a newer instance took its id",
            "late_commit": "a consumer commits after it was expelled from its group for polling too slowly"}


def bundled(name: str) -> Path:
    """The path of a bundled mistake capture (MISTAKES)."""
    if name not in MISTAKES:
        raise KeyError(f"no bundled capture {name!r}; there are: {', '.join(MISTAKES)}")
    return Path(__file__).with_name("captures") / f"{name}.pcap"
