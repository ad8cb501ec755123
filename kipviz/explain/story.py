"""The story of a capture: its exchanges as the broker model's typed events (RequestReceived /
ResponseSent, kipviz/schema/events.py), drawn by the scenarios' own sequence diagram
(kipviz.draw.sequence.sequence_diagram, folded: set-up and repeated runs become bands).

Each exchange is drawn as one unit, its response right after its request (ordered by request
time): concurrent requests on several connections would otherwise interleave and the folds,
which fold runs of whole exchanges, could not see the repeats."""
from __future__ import annotations

from ..draw.render import inline_svg
from ..draw.sequence import sequence_diagram
from ..schema import events as E
from ..schema.error_codes import error_codes

MAX_EVENTS = 800        # a picture, not the whole log: the cut is said in the diagram


def _ms(t) -> int:
    return int(round(t * 1000)) if t is not None else 0


def to_events(exchanges) -> tuple[list[E.Event], dict[str, int]]:
    """The typed events of the decoded exchanges, and broker address -> broker number (lanes)."""
    brokers: dict[str, int] = {}
    events: list[E.Event] = []
    seq = 0
    for ex in exchanges:
        req = ex.get("request")
        if req is None or ex.get("connection") is None:
            continue
        b = brokers.setdefault(ex["server"], len(brokers))
        t = _ms(ex["time"])
        events.append(E.RequestReceived(seq, t, b, ex["client"], req["api"], req["version"],
                                        ex["correlation_id"], req["body"]))
        seq += 1
        resp = ex.get("response")
        if resp is not None:
            codes = tuple(c for c in error_codes(resp["body"]) if c)
            events.append(E.ResponseSent(seq, max(t, _ms(ex["response_time"])), b, ex["client"], req["api"],
                                         req["version"], ex["correlation_id"], resp["body"], codes))
            seq += 1
    return events, brokers


class Story:
    """The `story` part: one folded sequence diagram of the whole capture (`svg`)."""

    def __init__(self, exchanges, lanes: dict[str, str], *, fold: bool = True, title: str | None = None):
        self.events, self.brokers = to_events(exchanges)
        t0 = self.events[0].t if self.events else None
        self.svg = sequence_diagram(self.events, title=title, fold=fold, t0=t0, client_ids=lanes,
                                    max_events=MAX_EVENTS)

    def __str__(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        return f"<div class='kv-story'><h3>The story</h3>{inline_svg(self.svg)}</div>"
