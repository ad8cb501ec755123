"""explain(capture) -> Report: who is talking, the story (one sequence diagram), the findings, the
latency per API and the differential replay, each part with `_repr_html_` for a notebook and `str()`
for a terminal."""
from __future__ import annotations

import html
from functools import cached_property
from pathlib import Path

from ..capture import DEFAULT_PORTS, CaptureError, read_pcap
from .coordinators import States
from .findings import Findings, find
from .latency import Latency
from .replay import Replay
from .story import Story
from .who import Who, who

STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:1200px} table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:13px}")


class Report:
    """What a capture shows. Parts: who, story, findings, latency, states and replay (these two made
    when first read); exchanges: the decoded capture."""

    def __init__(self, source: str, exchanges):
        self.source, self.exchanges = source, exchanges
        self.who = Who(*who(exchanges))
        self.findings: Findings = find(exchanges)
        self.latency = Latency(exchanges)
        self.story = Story(exchanges,
                           title=f"{Path(source).name}: {len(exchanges)} exchanges")

    @cached_property
    def states(self) -> States:
        """The coordinators' states rebuilt from the wire, with the scenarios' animations (kipviz.explain.states)."""
        return States(self.exchanges, {c.client: c.name for c in self.who.connections})

    @cached_property
    def replay(self) -> Replay:
        """The clients' requests replayed into a fresh model playing the release the (first) broker
        advertised, each answer compared with the observed one (kipviz.explain.replay)."""
        release = next((b.release for b in self.who.brokers if b.release), None)
        return Replay(self.exchanges, release)

    def summary(self) -> str:
        """One line: the capture, its exchanges, connections and findings."""
        return (f"{self.source}: {len(self.exchanges)} exchanges on {len(self.who.connections)} connection(s), "
                f"{len(self.findings)} finding(s)")

    def __str__(self) -> str:
        parts = [self.summary(), "", "who is talking", str(self.who), "", "findings", str(self.findings)]
        if self.latency.rows:
            parts += ["", "latency per API", str(self.latency)]
        parts += ["", "the coordinators' states", str(self.states), "", "differential replay", str(self.replay)]
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        return (f"<div class='kv-explain'><p>{html.escape(self.summary())}</p>{self.who._repr_html_()}"
                f"{self.findings._repr_html_()}{self.story._repr_html_()}{self.states._repr_html_()}"
                f"{self.latency._repr_html_()}{self.replay._repr_html_()}</div>")

    def to_html(self) -> str:
        """A standalone page of the whole report."""
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>kipviz explain: "
                f"{html.escape(Path(self.source).name)}</title><style>{STYLE}</style></head><body>"
                f"<h2>kipviz explain</h2>{self._repr_html_()}</body></html>")


def explain(source, *, ports=DEFAULT_PORTS) -> Report:
    """Read a pcap/pcapng capture of plaintext Kafka traffic and explain it. Raises CaptureError
    (one readable line) for a file that is not a capture, holds no Kafka exchange on `ports`, or
    holds only TLS-encrypted traffic."""
    exchanges = read_pcap(source, ports=ports)
    if not any(ex.get("request") or ex.get("response") for ex in exchanges):
        if any("TLS" in e for e in exchanges.errors):
            raise CaptureError("the capture holds TLS-encrypted traffic, not plaintext Kafka: capture a PLAINTEXT "
                               "or SASL_PLAINTEXT listener, or decrypt it first")
        hint = f" ({exchanges.notes[0]})" if exchanges.notes else ""
        raise CaptureError(f"no Kafka exchange on port(s) {', '.join(map(str, ports))}{hint}")
    name = str(source) if isinstance(source, (str, Path)) else "capture"
    return Report(name, exchanges)
