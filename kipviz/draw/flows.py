"""The KIP-1289 page's two read-process-write flows (its "Flow — Regular Consumer Group" and
"Flow — Share Group (THIS KIP)", docs/facts.md), one above the other, each drawn from a real run's events.

    regular, share = flow_runs()                    # kipviz.scenarios.flows: the default runs
    flow = regular_vs_share_flow(regular, share)    # any two Traces, Clusters or event lists
    flow = share_flow(share_run("kip1289.marker_forwarded"))   # the share flow alone (the regular one drawn once)
    flow.svg                                        # one self-contained SVG, two titled flows stacked
    flow.html                                       # a standalone page: the SVG, then the steps table
    flow.steps                                      # pandas DataFrame (a kipviz.table.Table without pandas)
    flow.save("flows.html")                         # or .svg

Each flow (a "column" in the SVG's classes) is a kipviz.draw.sequence diagram with its status
(released / accepted / proposed, from the kit's labels of what the run did) in its heading; arrows
of non-released versions say so ("TxnShareAcknowledge v0 · proposed"). The flows are stacked, each
drawn at `width` (820 px: a notebook's output area at 1280 px with the file browser open), not side
by side: two 900 px columns were scaled into that area with 5-7 px text (issue 25). The eight steps
both flows share are numbered in the left gutter of each:

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
kept; .steps counts them all). The picture only draws: which events form the flow, which step
each belongs to and on which broker a marker's share-record moves happened are decided in
kipviz.scenarios.flows (from typed event fields), which also runs the scenarios (the drawing runs
nothing).
One lane per broker (its roles under its name): each step is drawn on the broker where it
happened -- the staging on the share partition's leader, the marker on __share_group_state-N's
leader, the resolution on the broker whose hook resolved it.

Defaults (kipviz.scenarios.flows.flow_runs): the regular flow is "txn.read_process_write_commit" on
a 3-broker Kafka 4.0 model with transaction.version 1, the path the KIP's text shows (explicit
AddPartitionsToTxn and AddOffsetsToTxn); regular_transaction_version=2 gives Kafka 4.0's default
instead (Produce v12 and TxnOffsetCommit v5 register the partitions on the broker, which is what
KIP-1289's broker-internal registration mirrors). The share flow is "kip1289.marker_not_colocated"
on 3 brokers, KIP-1289 as written with the share partition and its state partition on different
leaders: the records are staged on broker 0 and the COMMIT marker for __share_group_state-N goes to
broker 1, which does not lead in-0 -- step 7 shows the records left TX_PENDING. Pass
share="kip1289.marker_forwarded" (the kit's suggestion) or "kip1289.marker_colocated" for the flows
that resolve; share_flow(share=...) draws such a run alone, below a regular_vs_share_flow() already
shown, instead of the same regular flow again."""
from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..scenarios.flows import STEPS, FlowError, classify, events_of, flow_window, resolved_on
from ..schema import events as E
from ..schema.error_codes import name_of
from ..schema.status import version_status
from ..schema.topics import INTERNAL_TOPICS
from ..table import frame
from .render import to_html
from .sequence import (
    C_MUTED,
    C_PROPOSED,
    C_TEXT,
    FONT,
    FS,
    add_partitions_label,
    lifeline_of,
    sequence_diagram,
    wrap_text,
)

__all__ = ["regular_vs_share_flow", "share_flow", "Flow"]

STATUS_ORDER = ("released", "accepted", "proposed")
C_STATUS = {"released": "#2f855a", "accepted": "#b7791f", "proposed": C_PROPOSED}
FLOW_GAP = 18             # between the two stacked flows
HEADER_H = 74
WIDTH = 820


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
                inner = [x for x in events[i + 1:j] if not isinstance(x, E.ClientDid)]
                plain = all(isinstance(x, E.RecordAppended) and not x.control and x.topic not in INTERNAL_TOPICS
                            for x in inner)
                if plain and (e.client, e.broker) in seen and not events[j].error_codes:
                    folded += 1
                    i = j + 1
                    continue
                seen.add((e.client, e.broker))
        if e.seq in steps and not isinstance(e, E.ClientDid):
            kept.append(e)
        i += 1
    return kept, folded


# ---- what each step did, in words --------------------------------------------------------------------
def _status_of(e) -> str | None:
    if isinstance(e, (E.RequestReceived, E.ResponseSent)):
        return version_status(e.api, e.version)
    if isinstance(e, E.StateChanged):
        return e.status or None
    if isinstance(e, E.Happened):
        return getattr(e, "status", None)
    return None


def _worst(statuses: Iterable) -> str:
    ranks = [STATUS_ORDER.index(s) for s in statuses if s in STATUS_ORDER]
    return STATUS_ORDER[max(ranks)] if ranks else "released"


def _tag(status: str | None) -> str:
    return f" ({status})" if status not in (None, "", "released") else ""


def _record_item(e: E.RecordAppended) -> str:
    where = f"{e.topic}-{e.partition}"
    if e.control:
        t = (e.record or {}).get("type", "control") if isinstance(e.record, dict) else "control"
        return f"{t} marker on {where}"
    if e.topic in INTERNAL_TOPICS:
        rec = e.record if isinstance(e.record, dict) else {}
        return f"{where}: {rec.get('record') or rec.get('type') or 'record'}" + (
            " (transactional)" if e.transactional else "")
    return f"{where}: data record" + (" (transactional)" if e.transactional else "")


def _happened_item(e: E.Happened) -> str:
    if isinstance(e, (E.MarkerSent, E.ShareMarkerSent)):
        return (f"WriteTxnMarkers {e.marker} → broker {e.broker}: {e.topic}-{e.partition}"
                + (f" (share group {e.group}) · kit's suggestion" if isinstance(e, E.ShareMarkerSent) else ""))
    if isinstance(e, (E.PartitionAddedToTxn, E.ShareStatePartitionsAdded, E.ShareParticipantsAdded)):
        return add_partitions_label(e) + _tag(getattr(e, "status", None))
    return e.text


def _item(e) -> str | None:
    if isinstance(e, E.RequestReceived):
        return f"{e.api} v{e.version}{_tag(version_status(e.api, e.version))} → {lifeline_of(e.api, e.broker)}"
    if isinstance(e, E.ResponseSent):
        return f"{e.api} answered {', '.join(name_of(c) for c in e.error_codes)}" if e.error_codes else None
    if isinstance(e, E.StateChanged):
        return f"{e.machine} {e.from_state} → {e.to_state}{_tag(e.status)}"
    if isinstance(e, E.RecordAppended):
        return _record_item(e)
    if isinstance(e, E.Happened):
        return _happened_item(e)
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
    where: dict = field(default_factory=dict)     # seq of a marker's share-record move -> broker

    @property
    def status(self) -> str:
        return _worst(_status_of(e) for e in self.window)


@dataclass
class Flow:
    """Two flows, the regular one above the share one (or the share one alone: share_flow());
    .svg / .html / .steps / .save()."""
    regular: _Side | None
    share: _Side
    width: int = WIDTH
    _svg: str | None = field(default=None, repr=False)

    @property
    def sides(self) -> tuple[_Side, ...]:
        """The flows drawn, top to bottom: (regular, share), or (share,) alone."""
        return (self.share,) if self.regular is None else (self.regular, self.share)

    # ---- steps table ----
    def _step_rows(self) -> list[dict]:
        done = {s.key: _summaries(s.window, s.steps) for s in self.sides}
        return [{"step": n, "what": STEPS[n],
                 **{k: v for s in self.sides for k, v in ((s.key, done[s.key][n]["text"]),
                                                          (f"{s.key}_status", done[s.key][n]["status"]))},
                 **{f"{s.key}_events": done[s.key][n]["seqs"] for s in self.sides}} for n in STEPS]

    @property
    def steps(self):
        """The steps table: a row per step, what each flow did in it and its status."""
        return frame(self._step_rows())

    # ---- SVG ----
    def _column(self, side: _Side, layout: dict) -> str:
        marks = {seq: str(n) for seq, n in side.steps.items()}
        return sequence_diagram(side.events, marks=marks, layout=layout, status_labels=True,
                                internal_arrows=True, width=self.width, lanes="broker", on_broker=side.where)

    @property
    def svg(self) -> str:
        """The picture: the flows stacked, each a sequence diagram under its heading (drawn once)."""
        if self._svg is None:
            self._svg = self._draw()
        return self._svg

    def _draw(self) -> str:
        drawn = []
        for side in self.sides:
            layout: dict = {}
            drawn.append((side, self._column(side, layout), layout))
        total_w = max(self.width, *(layout["width"] for _, _, layout in drawn))
        where = "the same step in both flows" if self.regular is not None else "the steps both flows share"
        note = wrap_text(f"Numbered circles mark {where} (Flow.steps). Arrows of versions that are "
                     "not released are labelled accepted / proposed; dotted arrows are broker-to-broker calls.",
                     total_w - 20, 10, break_words=False)
        parts, y = [], 0
        for k, (side, inner, layout) in enumerate(drawn):
            status = side.status
            color = C_STATUS.get(status, C_MUTED)
            pill_w = 8 + len(status) * 7
            if k:
                parts.append(f'<line x1="8" x2="{total_w - 8}" y1="{y - FLOW_GAP / 2}" y2="{y - FLOW_GAP / 2}" '
                             f'stroke="#cbd5e0"/>')
            parts.append(f'<g class="kv-flow-column" data-side="{side.key}" data-status="{status}">')
            parts.append(f'<g class="kv-flow-head"><text x="10" y="{y + 24}" font-size="16" font-weight="bold" '
                         f'fill="{C_TEXT}">{_x(side.title)}</text>'
                         f'<rect class="kv-status" x="10" y="{y + 32}" width="{pill_w}" height="17" rx="8" '
                         f'fill="{color}"/><text x="{10 + pill_w / 2}" y="{y + 44.5}" font-size="11" fill="white" '
                         f'font-weight="bold" text-anchor="middle">{_x(status)}</text>'
                         f'<text x="{18 + pill_w}" y="{y + 45}" font-size="11" fill="{C_MUTED}">{_x(side.subtitle)}'
                         f'</text><text x="10" y="{y + 64}" font-size="10" fill="{C_MUTED}">{_x(side.source)}'
                         f'</text></g>')
            parts.append(_embed(inner, 0, y + HEADER_H))
            parts.append("</g>")
            y += HEADER_H + layout["height"] + FLOW_GAP
        total_h = y - FLOW_GAP + 14 * len(note) + 12
        for j, line in enumerate(note):
            parts.append(f'<text x="10" y="{total_h - 9 - 14 * (len(note) - 1 - j)}" font-size="10" '
                         f'fill="{C_MUTED}">{_x(line)}</text>')
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
                f'viewBox="0 0 {total_w} {total_h}" font-family="{FONT}" class="kipviz-flows">'
                f'<rect x="0" y="0" width="{total_w}" height="{total_h}" fill="white"/>' + "".join(parts) + "</svg>")

    # ---- HTML ----
    def _table_html(self) -> str:
        cols = ["step", "what", *(c for s in self.sides for c in (s.key, f"{s.key}_status"))]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in cols) + "</tr>"
                       for row in self._step_rows())
        which = " and ".join(f"{html.escape(s.title)} ({s.status})" for s in self.sides)
        table = (f'<h2 style="font:bold 15px {FONT}">The steps of {"both flows" if self.regular else "the flow"}: '
                 f'{which}</h2>'
                 f'<table class="kv-flow-steps" style="border-collapse:collapse;font:12px {FONT}">'
                 f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                 "<style>.kv-flow-steps td,.kv-flow-steps th{border:1px solid #cbd5e0;padding:4px 6px;"
                 "vertical-align:top;text-align:left!important}</style>")   # over JupyterLab's right-aligned cells
        return table

    @property
    def html(self) -> str:
        """A standalone page: the picture, then the steps table."""
        return to_html(self.svg + self._table_html(), title=" vs ".join(s.title for s in self.sides))

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
    if x is None or isinstance(x, str):
        raise FlowError(f"{key}: expected a Trace, a Cluster or a list of events, not {x!r} (the drawing "
                        "runs nothing: kipviz.scenarios.flows.flow_runs runs a scenario by name)")
    events, source = events_of(x, key)
    w = flow_window(events)
    window = events[w.lo:w.hi]
    steps = classify(window, clients=(w.consumer, w.producer))
    drawn, folded = _compact(window, steps) if compact else (window, 0)
    what = f"{source}: events {window[0].seq}–{window[-1].seq}, {len(drawn)} drawn"
    if folded:
        what += f", {folded} repeated Produce exchange{'s' if folded != 1 else ''} folded"
    return _Side(key, title, subtitle, drawn, window, steps, folded, what, resolved_on(window))


def regular_vs_share_flow(regular, share, *, compact: bool = True, width: int = WIDTH,
                          titles: tuple[str, str] = ("Regular consumer group", "Share group (KIP-1289)")) -> Flow:
    """The regular and the share-group read-process-write flows, one above the other.

    regular, share: a Trace, a Cluster or a list of events; the runs of the defaults (or of any
    scenario's name) come from kipviz.scenarios.flows.flow_runs: regular_vs_share_flow(*flow_runs())."""
    return Flow(
        _side("regular", regular, title=titles[0], compact=compact,
              subtitle="sendOffsetsToTransaction: TxnOffsetCommit, markers to __consumer_offsets"),
        _share_side(share, titles[1], compact), width=width)


def _share_side(share, title: str, compact: bool) -> _Side:
    return _side("share", share, title=title, compact=compact,
                 subtitle="sendShareAcknowledgementsToTransaction: TxnShareAcknowledge, markers to __share_group_state")


def share_flow(share, *, compact: bool = True, width: int = WIDTH, title: str = "Share group (KIP-1289)") -> Flow:
    """The share-group flow alone, numbered with the steps both flows share: another run to set
    beside a regular_vs_share_flow() already shown (the regular flow drawn once, not again per run).
    share: a Trace, a Cluster or a list of events (kipviz.scenarios.flows.share_run runs one)."""
    return Flow(None, _share_side(share, title, compact), width=width)
