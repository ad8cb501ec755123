"""The KIP-1289 page's two read-process-write flows side by side (seed 004: "Flow — Regular Consumer
Group" and "Flow — Share Group (THIS KIP)"), each drawn from a real run's events.

    flow = regular_vs_share_flow()                  # runs both flows (defaults below)
    flow = regular_vs_share_flow(a, b)              # any two Traces, Clusters, event lists or scenario names
    flow.svg                                        # one self-contained SVG, two titled columns
    flow.html                                       # a standalone page: the SVG, then the steps table
    flow.steps                                      # pandas DataFrame: one row per step, both flows
    flow.save("flows.html")                         # or .svg

Each column is a kipviz.draw.sequence diagram with its status (released / accepted / proposed,
from the kit's labels of what the run did) in its heading; arrows of non-released versions say so
("TxnShareAcknowledge v0 · proposed"). The eight steps both flows share are numbered in the left
gutter and start at the same height in both columns:

    1 read the input                  Fetch                      | ShareFetch (AVAILABLE -> ACQUIRED)
    2 write the output                AddPartitionsToTxn (TV1) or Produce's implicit add; Produce
    3 hand the progress to the txn    AddOffsetsToTxn (TV1) or   | TxnShareAcknowledge, broker-internal
      (the group's partition joins)   TxnOffsetCommit's add (TV2) | AddPartitionsToTxn __share_group_state-N
    4 stage the progress              TxnOffsetCommit: offsets   | ACQUIRED -> TX_PENDING (in memory)
                                      pending in __consumer_offsets
    5 EndTxn(COMMIT)                  PrepareCommit
    6 WriteTxnMarkers                 COMMIT markers on the output and __consumer_offsets-N | __share_group_state-N
    7 the marker applies the progress offsets materialise          | TX_PENDING -> ACKNOWLEDGED, ShareUpdate
    8 complete                        CompleteCommit, EndTxn answered

Which events: the first transaction in the run that commits, from the consumer's first read
(Fetch / ShareFetch) after the producer's previous EndTxn, up to that commit's EndTxn response.
compact=True keeps only the events of a step (no ApiVersions / Metadata / FindCoordinator, no
client decisions) and folds repeated Produce exchanges that add nothing (the first per broker is
kept; .steps counts them all). The picture only reads events: nothing here decides what happened.

Defaults: the regular flow is "txn.read_process_write_commit" on a 3-broker Kafka 4.0 model with
transaction.version 1, the path the KIP's text shows (explicit AddPartitionsToTxn and
AddOffsetsToTxn); regular_transaction_version=2 gives Kafka 4.0's default instead (Produce v12 and
TxnOffsetCommit v5 register the partitions on the broker, which is what KIP-1289's broker-internal
registration mirrors). The share flow is "kip1289.happy_commit" when that scenario is registered,
else kipviz.scenarios.kip1289_errors.share_commit_run, at share.version 2 on 3 brokers."""
from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..broker import events as E
from ..broker.error_codes import name_of
from ..errors import KipvizError
from .render import to_html
from .sequence import (
    C_MUTED,
    C_PROPOSED,
    C_TEXT,
    FONT,
    FS,
    INTERNAL_TOPICS,
    add_partitions_label,
    lifeline_of,
    sequence_diagram,
    version_status,
)

__all__ = ["regular_vs_share_flow", "Flow", "FlowError", "STEPS", "classify", "flow_window", "Window"]

STEPS: dict[int, str] = {
    1: "read the input records",
    2: "write the output; the output partition joins the transaction",
    3: "hand the read progress to the transaction; the group's internal partition joins it",
    4: "stage the progress until the marker",
    5: "commit requested: EndTxn(COMMIT), PrepareCommit",
    6: "WriteTxnMarkers: COMMIT markers on every participant",
    7: "the COMMIT marker applies the staged progress",
    8: "transaction complete: CompleteCommit, EndTxn answered",
}
REGULAR_SCENARIO = "txn.read_process_write_commit"
SHARE_SCENARIO = "kip1289.happy_commit"
STATUS_ORDER = ("released", "accepted", "proposed")
C_STATUS = {"released": "#2f855a", "accepted": "#b7791f", "proposed": C_PROPOSED}
READS = ("Fetch", "ShareFetch")
COLUMN_GAP = 24
HEADER_H = 74


class FlowError(KipvizError, ValueError):
    """The events hold no read-process-write transaction that commits (or cannot be read)."""


# ---- inputs ------------------------------------------------------------------------------------------
def _run(name: str, seed: int, settings: dict):
    from .. import scenarios
    try:
        scenarios.get(name)
    except KeyError as e:
        raise FlowError(e.args[0] if e.args else str(e)) from None
    return scenarios.run(name, seed=seed, **settings)


def _default_share(seed: int, brokers: int):
    from .. import scenarios
    names = {s["name"] for s in scenarios.catalog()}
    if SHARE_SCENARIO in names:
        return _run(SHARE_SCENARIO, seed, {"brokers": brokers})
    from ..scenarios.kip1289_errors import share_commit_run
    return share_commit_run(seed, brokers=brokers)


def _events_of(x, what: str) -> tuple[list, str]:
    """(events, a label naming where they came from) of a Trace, Cluster or event list."""
    name = getattr(getattr(x, "scenario", None), "name", None)
    evs = getattr(x, "events", x)
    if isinstance(evs, (str, bytes)) or not isinstance(evs, Iterable):
        raise FlowError(f"{what}: expected a Trace, a Cluster, a list of events or a scenario name, "
                        f"not {type(x).__name__}")
    evs = list(evs)
    bad = next((e for e in evs if not isinstance(e, E.Event)), None)
    if bad is not None:
        raise FlowError(f"{what}: {type(bad).__name__} is not a kipviz.broker.events event")
    return evs, name or f"{len(evs)} events"


# ---- which events belong to the flow ----------------------------------------------------------------
class Window(NamedTuple):
    lo: int                 # events[lo:hi] is the flow
    hi: int
    consumer: str           # the client that read the input
    producer: str           # the client whose transaction committed


def flow_window(events: list) -> Window:
    """The first transaction that commits, from the consumer's first read after the producer's
    previous EndTxn up to the commit's EndTxn response."""
    reqs: dict = {}
    commit_req = commit_resp = None
    for e in events:
        if isinstance(e, E.RequestReceived) and e.api == "EndTxn":
            reqs[(e.broker, e.client, e.correlation_id)] = e
        elif isinstance(e, E.ResponseSent) and e.api == "EndTxn" and not e.error_codes:
            req = reqs.get((e.broker, e.client, e.correlation_id))
            if req is not None and (req.body or {}).get("Committed"):
                commit_req, commit_resp = req, e
                break
    if commit_resp is None:
        raise FlowError("no transaction commits in these events (no EndTxn(COMMIT) answered without error)")
    index = {id(e): i for i, e in enumerate(events)}
    hi = index[id(commit_resp)] + 1
    producer = commit_req.client
    start = 0
    for i in range(index[id(commit_req)] - 1, -1, -1):
        e = events[i]
        if isinstance(e, E.ResponseSent) and e.api == "EndTxn" and e.client == producer:
            start = i + 1
            break
    first_write = next((i for i in range(start, hi) if isinstance(events[i], E.RequestReceived)
                        and events[i].client == producer and events[i].api not in
                        ("ApiVersions", "Metadata", "FindCoordinator", "InitProducerId")), hi)
    reads = [i for i in range(start, first_write) if isinstance(events[i], E.RequestReceived)
             and events[i].api in READS and events[i].client != producer]
    if not reads:
        raise FlowError(f"no Fetch / ShareFetch before producer {producer!r}'s transaction: not a "
                        "read-process-write loop")
    consumer = events[reads[-1]].client
    lo = next(i for i in reads if events[i].client == consumer)
    return Window(lo, hi, consumer, producer)


def classify(events: list, clients: Iterable[str] | None = None) -> dict[int, int]:
    """{event seq: step (1-8, see STEPS)} for one flow's events; events in no step are left out.
    A request sets the step its inner events (state changes, records, notes) inherit, unless
    they say more themselves (a marker, a TX_PENDING move, an internal-partition registration).
    clients: only these clients' requests belong to the flow (others, e.g. a checking reader,
    and what happens while they are handled, are in no step)."""
    only = None if clients is None else set(clients)
    steps: dict[int, int] = {}
    of_request: dict = {}
    cur: int | None = None
    offsets_added = False
    for e in events:
        s: int | None = None
        if isinstance(e, E.RequestReceived):
            api = e.api
            if only is not None and e.client not in only:
                api = None
            if api in READS:
                s = 1
            elif api in ("Produce", "AddPartitionsToTxn"):
                s = 2
            elif api == "AddOffsetsToTxn":
                s, offsets_added = 3, True
            elif api == "TxnOffsetCommit":
                s = 4 if offsets_added else 3        # TV2: its broker-side add is step 3
            elif api == "TxnShareAcknowledge":
                s = 3
            elif api == "EndTxn":
                s = 5
            elif api == "WriteTxnMarkers":
                s = 6
            of_request[(e.broker, e.client, e.correlation_id)] = s
            cur = s
        elif isinstance(e, E.ResponseSent):
            s = of_request.pop((e.broker, e.client, e.correlation_id), None)
            if s == 5:
                s = 8
            elif s == 3 and e.api in ("TxnOffsetCommit", "TxnShareAcknowledge"):
                s = 4
            cur = None
        elif isinstance(e, E.StateChanged):
            if e.machine == "share-record":
                s = {"ACQUIRED": 1, "TX_PENDING": 4}.get(e.to_state) if e.from_state != "TX_PENDING" else 7
                s = s or cur
            elif e.machine == "transaction":
                s = {"PrepareCommit": 5, "CompleteCommit": 8}.get(e.to_state, cur)
            else:
                s = cur
        elif isinstance(e, E.RecordAppended):
            if e.control:
                s = 6
            elif e.topic == "__consumer_offsets" and e.transactional:
                s = 4
            elif e.topic == "__share_group_state" and cur in (6, 7):
                s = 7
            else:
                s = cur
        elif isinstance(e, E.Note):
            d = e.detail or {}
            text = e.text or ""
            if d.get("api") == "WriteTxnMarkers":
                s = 6
            elif d.get("api") == "AddPartitionsToTxn" and not d.get("verify_only"):
                targets = [t for t, _ in d.get("partitions") or []] + ([d["topic"]] if "topic" in d else [])
                s = 3 if any(t in INTERNAL_TOPICS for t in targets) else 2
            elif "state_partitions" in d or ("staged" in text and "producer_id" in d):
                s = 4
            elif ("commit" in d and "records" in d) or ("committed" in text and "partitions" in d):
                s = 7
            else:
                s = cur
        if s is not None and cur is not None and not isinstance(e, (E.RequestReceived, E.ResponseSent)):
            cur = s                              # what follows inside the request belongs to the new step
        if s is not None:
            steps[e.seq] = s
    return steps


def _compact(events: list, steps: dict) -> tuple[list, int]:
    """Only the events of a step; Produce exchanges holding nothing but data records folded
    (the first per client and broker kept). Returns (events, how many exchanges were folded)."""
    kept: list = []
    seen: set = set()
    folded = 0
    i = 0
    while i < len(events):
        e = events[i]
        if isinstance(e, E.RequestReceived) and e.api == "Produce" and e.seq in steps:
            j = next((k for k in range(i + 1, len(events)) if isinstance(events[k], E.ResponseSent)
                      and (events[k].broker, events[k].client, events[k].correlation_id)
                      == (e.broker, e.client, e.correlation_id)), None)
            if j is not None:
                inner = [x for x in events[i + 1:j] if not isinstance(x, E.ClientAction)]
                plain = all(isinstance(x, E.RecordAppended) and not x.control and x.topic not in INTERNAL_TOPICS
                            for x in inner)
                if plain and (e.client, e.broker) in seen and not events[j].error_codes:
                    folded += 1
                    i = j + 1
                    continue
                seen.add((e.client, e.broker))
        if e.seq in steps and not isinstance(e, E.ClientAction):
            kept.append(e)
        i += 1
    return kept, folded


# ---- what each step did, in words --------------------------------------------------------------------
def _status_of(e) -> str | None:
    if isinstance(e, (E.RequestReceived, E.ResponseSent)):
        return version_status(e.api, e.version)
    if isinstance(e, E.StateChanged):
        return e.status or None
    if isinstance(e, E.Note):
        return (e.detail or {}).get("status")
    return None


def _worst(statuses: Iterable) -> str:
    ranks = [STATUS_ORDER.index(s) for s in statuses if s in STATUS_ORDER]
    return STATUS_ORDER[max(ranks)] if ranks else "released"


def _tag(status: str | None) -> str:
    return f" ({status})" if status not in (None, "", "released") else ""


def _item(e) -> str | None:
    if isinstance(e, E.RequestReceived):
        return f"{e.api} v{e.version}{_tag(version_status(e.api, e.version))} → {lifeline_of(e.api, e.broker)}"
    if isinstance(e, E.ResponseSent):
        return f"{e.api} answered {', '.join(name_of(c) for c in e.error_codes)}" if e.error_codes else None
    if isinstance(e, E.StateChanged):
        return f"{e.machine} {e.from_state} → {e.to_state}{_tag(e.status)}"
    if isinstance(e, E.RecordAppended):
        where = f"{e.topic}-{e.partition}"
        if e.control:
            t = (e.record or {}).get("type", "control") if isinstance(e.record, dict) else "control"
            return f"{t} marker on {where}"
        if e.topic in INTERNAL_TOPICS:
            rec = e.record if isinstance(e.record, dict) else {}
            return f"{where}: {rec.get('record') or rec.get('type') or 'record'}" + (
                " (transactional)" if e.transactional else "")
        return f"{where}: data record" + (" (transactional)" if e.transactional else "")
    if isinstance(e, E.Note):
        d = e.detail or {}
        if d.get("api") == "WriteTxnMarkers":
            return f"WriteTxnMarkers {d.get('marker', '')} → broker {d.get('broker')}: {d.get('topic')}-{d.get('partition')}"
        if d.get("api") == "AddPartitionsToTxn":
            return add_partitions_label(d) + _tag(d.get("status"))
        return e.text
    return None


def _summaries(events: list, steps: dict) -> dict[int, dict]:
    """{step: {"text": "a; b ×3; ...", "status": worst status, "seqs": [...]}}."""
    out: dict[int, dict] = {n: {"items": [], "statuses": [], "seqs": []} for n in STEPS}
    for e in events:
        n = steps.get(e.seq)
        if n is None:
            continue
        o = out[n]
        o["seqs"].append(e.seq)
        o["statuses"].append(_status_of(e))
        item = _item(e)
        if item is None:
            continue
        for pair in o["items"]:
            if pair[0] == item:
                pair[1] += 1
                break
        else:
            o["items"].append([item, 1])
    return {n: {"text": "; ".join(t + (f" ×{c}" if c > 1 else "") for t, c in o["items"]) or "—",
                "status": _worst(o["statuses"]) if o["seqs"] else None, "seqs": o["seqs"]}
            for n, o in out.items()}


# ---- the picture -----------------------------------------------------------------------------------------
@dataclass
class _Side:
    key: str                     # "regular" / "share"
    title: str
    subtitle: str
    events: list                 # drawn (compact or the whole window)
    window: list                 # the whole window
    steps: dict                  # seq -> step
    folded: int
    source: str

    @property
    def status(self) -> str:
        return _worst(_status_of(e) for e in self.window)


@dataclass
class Flow:
    """Two flows, laid out side by side; .svg / .html / .steps / .save()."""
    regular: _Side
    share: _Side
    width: int = 900
    _svg: str | None = field(default=None, repr=False)

    @property
    def sides(self) -> tuple[_Side, _Side]:
        return self.regular, self.share

    # ---- steps table ----
    @property
    def steps(self):
        import pandas as pd
        a, b = (_summaries(s.window, s.steps) for s in self.sides)
        rows = [{"step": n, "what": STEPS[n],
                 "regular": a[n]["text"], "regular_status": a[n]["status"],
                 "share": b[n]["text"], "share_status": b[n]["status"],
                 "regular_events": a[n]["seqs"], "share_events": b[n]["seqs"]} for n in STEPS]
        return pd.DataFrame(rows)

    # ---- SVG ----
    def _column(self, side: _Side, align: dict, layout: dict) -> str:
        marks = {seq: str(n) for seq, n in side.steps.items()}
        return sequence_diagram(side.events, marks=marks, align=align, layout=layout, status_labels=True,
                                internal_arrows=True, width=self.width)

    @property
    def svg(self) -> str:
        if self._svg is None:
            self._svg = self._draw()
        return self._svg

    def _draw(self) -> str:
        align: dict = {}
        for _ in range(len(STEPS) + 2):          # push steps down until both columns agree
            la, lb = {}, {}
            sa, sb = self._column(self.regular, align, la), self._column(self.share, align, lb)
            ya, yb = la.get("steps", {}), lb.get("steps", {})
            moved = False
            for k in ya.keys() & yb.keys():
                target = max(ya[k], yb[k])
                if abs(ya[k] - yb[k]) > 0.5 and align.get(k, 0) < target:
                    align[k] = target
                    moved = True
            if not moved:
                break
        xa, xb = 0, la["width"] + COLUMN_GAP
        total_w = xb + lb["width"]
        total_h = HEADER_H + max(la["height"], lb["height"]) + 26
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
                 f'viewBox="0 0 {total_w} {total_h}" font-family="{FONT}" class="kipviz-flows">',
                 f'<rect x="0" y="0" width="{total_w}" height="{total_h}" fill="white"/>']
        for side, x, inner in ((self.regular, xa, sa), (self.share, xb, sb)):
            status = side.status
            color = C_STATUS.get(status, C_MUTED)
            pill_w = 8 + len(status) * 7
            parts.append(f'<g class="kv-flow-column" data-side="{side.key}" data-status="{status}">')
            parts.append(f'<g class="kv-flow-head"><text x="{x + 10}" y="24" font-size="16" font-weight="bold" '
                         f'fill="{C_TEXT}">{_x(side.title)}</text>'
                         f'<rect class="kv-status" x="{x + 10}" y="32" width="{pill_w}" height="17" rx="8" '
                         f'fill="{color}"/><text x="{x + 10 + pill_w / 2}" y="44.5" font-size="11" fill="white" '
                         f'font-weight="bold" text-anchor="middle">{_x(status)}</text>'
                         f'<text x="{x + 18 + pill_w}" y="45" font-size="11" fill="{C_MUTED}">{_x(side.subtitle)}'
                         f'</text><text x="{x + 10}" y="64" font-size="10" fill="{C_MUTED}">{_x(side.source)}'
                         f'</text></g>')
            parts.append(_embed(inner, x, HEADER_H))
            parts.append("</g>")
        parts.append(f'<line x1="{xb - COLUMN_GAP / 2}" x2="{xb - COLUMN_GAP / 2}" y1="8" y2="{total_h - 8}" '
                     f'stroke="#cbd5e0"/>')
        parts.append(f'<text x="10" y="{total_h - 9}" font-size="10" fill="{C_MUTED}">Numbered circles mark the same '
                     f'step in both flows (Flow.steps). Arrows of versions that are not released are labelled '
                     f'accepted / proposed; dotted arrows are broker-to-broker calls.</text>')
        parts.append("</svg>")
        return "".join(parts)

    # ---- HTML ----
    def _table_html(self) -> str:
        df = self.steps[["step", "what", "regular", "regular_status", "share", "share_status"]]
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                       for row in df.itertuples(index=False))
        a, b = self.sides
        table = (f'<h2 style="font:bold 15px {FONT}">The steps, side by side: {html.escape(a.title)} '
                 f'({a.status}) and {html.escape(b.title)} ({b.status})</h2>'
                 f'<table class="kv-flow-steps" style="border-collapse:collapse;font:12px {FONT}">'
                 f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                 "<style>.kv-flow-steps td,.kv-flow-steps th{border:1px solid #cbd5e0;padding:4px 6px;"
                 "vertical-align:top;text-align:left}</style>")
        return table

    @property
    def html(self) -> str:
        a, b = self.sides
        return to_html(self.svg + self._table_html(), title=f"{a.title} vs {b.title}")

    def _repr_html_(self) -> str:
        return self.svg + self._table_html()

    def save(self, path: str) -> str:
        """Write .html (the page) or .svg (the picture); returns the path."""
        text = self.html if str(path).lower().endswith((".html", ".htm")) else self.svg
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return str(path)


def _x(s) -> str:
    return html.escape(str(s), quote=True)


def _embed(svg: str, x: float, y: float) -> str:
    """A sequence diagram's content moved to (x, y) inside the combined picture (a group, not a
    nested <svg>: page CSS such as `svg{height:auto}` would resize a nested one)."""
    head_end = svg.index(">") + 1
    return (f'<g transform="translate({x},{y})" font-family="{FONT}" font-size="{FS}" class="kipviz-sequence">'
            f"{svg[head_end:-len('</svg>')]}</g>")


def _side(key: str, x, *, title: str, subtitle: str, compact: bool) -> _Side:
    events, source = _events_of(x, key)
    w = flow_window(events)
    window = events[w.lo:w.hi]
    steps = classify(window, clients=(w.consumer, w.producer))
    drawn, folded = _compact(window, steps) if compact else (window, 0)
    what = f"{source}: events {window[0].seq}–{window[-1].seq}, {len(drawn)} drawn"
    if folded:
        what += f", {folded} repeated Produce exchange{'s' if folded != 1 else ''} folded"
    return _Side(key, title, subtitle, drawn, window, steps, folded, what)


def regular_vs_share_flow(regular=None, share=None, *, seed: int = 0, brokers: int = 3,
                          regular_transaction_version: int = 1, compact: bool = True, width: int = 900,
                          titles: tuple[str, str] = ("Regular consumer group", "Share group (KIP-1289)")) -> Flow:
    """The regular and the share-group read-process-write flows side by side.

    regular, share: a Trace, a Cluster, a list of events, or a scenario name (run with `seed`);
    None runs the defaults (module docstring). A name or default is run on `brokers` brokers; the
    regular one on the Kafka 4.0 model at `regular_transaction_version`."""
    if regular is None or isinstance(regular, str):
        regular = _run(regular or REGULAR_SCENARIO, seed, {"brokers": brokers, "release": "4.0",
                                                            "transaction_version": regular_transaction_version})
    if share is None:
        share = _default_share(seed, brokers)
    elif isinstance(share, str):
        share = _run(share, seed, {"brokers": brokers})
    return Flow(
        _side("regular", regular, title=titles[0], compact=compact,
              subtitle="sendOffsetsToTransaction: TxnOffsetCommit, markers to __consumer_offsets"),
        _side("share", share, title=titles[1], compact=compact,
              subtitle="sendShareAcknowledgementsToTransaction: TxnShareAcknowledge, markers to __share_group_state"),
        width=width)
