"""The story of a capture: its exchanges as the broker model's typed events (RequestReceived /
ResponseSent, kipviz/schema/events.py), drawn by the scenarios' own sequence diagram
(kipviz.draw.sequence.sequence_diagram, folded: set-up and repeated runs become bands).

Each exchange is drawn as one unit, its response right after its request (ordered by request
time): concurrent requests on several connections would otherwise interleave and the folds,
which fold runs of whole exchanges, could not see the repeats.

Lanes: one per client -- its client id and host; a client's several connections (bootstrap, one
per broker, the coordinator's) are one lane -- and one per broker, its roles under its name. The
picture stays as wide as its output area (its text is never scaled under 8 px): clients beyond the
lanes that fit share one lane, "other clients (N)", and the title says so."""
from __future__ import annotations

from ..draw.render import inline_svg
from ..draw.sequence import lanes_that_fit, sequence_diagram
from ..schema import events as E
from ..schema.error_codes import error_codes

MAX_EVENTS = 800        # a picture, not the whole log: the cut is said in the diagram


def _ms(t) -> int:
    return int(round(t * 1000)) if t is not None else 0


def client_lanes(exchanges, room: int) -> dict[str, str]:
    """Connection ("ip:port") -> its lane: the client id (with the host where one id comes from
    several hosts), at most `room` lanes, the rest "other clients (N)"."""
    ids: dict[str, tuple[str, str]] = {}
    for ex in exchanges:
        conn = ex.get("client")
        if conn is None or ex.get("connection") is None or conn in ids and ids[conn][0]:
            continue
        cid = ((ex.get("request") or {}).get("header") or {}).get("ClientId") or ""
        ids[conn] = (cid, conn.rsplit(":", 1)[0])
    hosts: dict[str, set] = {}
    for cid, host in ids.values():
        hosts.setdefault(cid, set()).add(host)
    named = {conn: (f"{cid} @{host}" if len(hosts[cid]) > 1 else cid) if cid else conn
             for conn, (cid, host) in ids.items()}
    order = list(dict.fromkeys(named.values()))
    if len(order) <= room:
        return named
    kept = set(order[:room - 1])
    other = f"other clients ({len(order) - len(kept)})"
    return {conn: lane if lane in kept else other for conn, lane in named.items()}


def to_events(exchanges, lanes: dict[str, str] | None = None) -> tuple[list[E.Event], dict[str, int]]:
    """The typed events of the decoded exchanges (their `client` the connection's lane, when
    `lanes` names one), and broker address -> broker number."""
    brokers: dict[str, int] = {}
    events: list[E.Event] = []
    seq = 0
    for ex in exchanges:
        req = ex.get("request")
        if req is None or ex.get("connection") is None:
            continue
        b = brokers.setdefault(ex["server"], len(brokers))
        t = _ms(ex["time"])
        lane = (lanes or {}).get(ex["client"], ex["client"])
        events.append(E.RequestReceived(seq, t, b, lane, req["api"], req["version"],
                                        ex["correlation_id"], req["body"]))
        seq += 1
        resp = ex.get("response")
        if resp is not None:
            codes = tuple(c for c in error_codes(resp["body"]) if c)
            events.append(E.ResponseSent(seq, max(t, _ms(ex["response_time"])), b, lane, req["api"],
                                         req["version"], ex["correlation_id"], resp["body"], codes))
            seq += 1
    return events, brokers


class Story:
    """The `story` part: one folded sequence diagram of the whole capture (`svg`)."""

    def __init__(self, exchanges, *, fold: bool = True, title: str | None = None):
        brokers = len({ex["server"] for ex in exchanges if ex.get("request") and ex.get("connection") is not None})
        self.lanes = client_lanes(exchanges, max(1, lanes_that_fit() - max(1, brokers)))
        self.events, self.brokers = to_events(exchanges, self.lanes)
        t0 = self.events[0].t if self.events else None
        self.svg = sequence_diagram(self.events, title=title, fold=fold, t0=t0, lanes="broker",
                                    client_ids={lane: lane for lane in self.lanes.values()}, max_events=MAX_EVENTS)

    def __str__(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        return f"<div class='kv-story'><h3>The story</h3>{inline_svg(self.svg)}</div>"
