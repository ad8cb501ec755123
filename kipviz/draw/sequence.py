"""Sequence diagrams of a broker-model scenario, drawn from its events (kipviz.schema.events).

    sequence_diagram(cluster.events)                 -> SVG text
    sequence_diagram(events, title="…", max_events=80)
    sequence_html(events)                            -> a standalone HTML page with the SVG inline
    lifeline_of(api, broker)                         -> which lifeline a request goes to

Lifelines, left to right: every client (RequestReceived.client) in order of appearance, then the
broker roles in order of appearance:

    group coordinator (broker N)        JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
                                        OffsetFetch, TxnOffsetCommit, ConsumerGroup*, ListGroups, ...
    transaction coordinator (broker N)  InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
                                        WriteTxnMarkers, ...
    partition leader (broker N)         Produce, Fetch, ListOffsets (and the share fetches)
    broker N                            Metadata, ApiVersions, FindCoordinator, CreateTopics, others

Rows, top to bottom, one per event: requests are solid arrows labelled "Api vN", responses dashed
arrows back (red, with the error names, when the body carries error codes); the transaction
coordinator's WriteTxnMarkers to partition leaders (MarkerSent, ShareMarkerSent: broker,
coordinator) are dotted purple arrows between the brokers; internal-topic writes
(__consumer_offsets, __transaction_state, __share_group_state) and transaction markers are notes on
the lifeline that wrote them ("__consumer_offsets-12 @5: OffsetCommit orders-3=150382"); state
changes are small notes ("txn tx-1: Ongoing → PrepareCommit"); client decisions are notes on the
client; free-text notes are bands across the diagram. Time (virtual ms) runs down the left edge.

The SVG is written directly (no graphviz): it is self-contained, uses no ids, fonts or styles from
outside, and is laid out for about 1000 px of width. Hovering an arrow shows the message body.

Options for pictures built on this one (kipviz.draw.flows), all off by default:
    marks={seq: "3"}          a step badge in the left gutter where a run of marked events starts
    align={"3": 420.0}        the first row of step "3" starts no higher than y=420 (to line up two diagrams)
    layout={}                 filled: {"steps": {step: y of its first row}, "width": px, "height": px}
    status_labels=True        arrows of accepted / proposed versions say so ("TxnShareAcknowledge v0 · proposed")
    internal_arrows=True      broker-internal AddPartitionsToTxn (PartitionAddedToTxn,
                              ShareStatePartitionsAdded, ShareParticipantsAdded: coordinator N) drawn as a dotted arrow from the lifeline handling the
                              request to the transaction coordinator, instead of a band
    lanes="broker"            one lane per broker ("broker 1 (leader, txn coordinator)") instead of one
                              per role and broker
    on_broker={seq: N}        draw these state changes on broker N (e.g. the share-record moves a
                              KIP-1289 marker made: kipviz.scenarios.flows.resolved_on)
A KIP-1289 marker forwarded by the broker that received it (MarkerForwarded, the kit's
suggestion) is a dotted arrow between the two partition leaders."""
from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..broker.tables import transaction as _txn_table
from ..records.view import field as rfield
from ..records.view import internal_view, marker_type, record_epoch
from ..schema import events as E
from ..schema.coordinators import MEMBERSHIP_APIS, role_of
from ..schema.error_codes import name_of
from ..schema.status import version_status
from ..schema.topics import INTERNAL_TOPICS, OWNER_ROLE
from .clients import client_names
from .render import halo, svg_text, to_html

__all__ = ["sequence_diagram", "sequence_html", "lifeline_of", "record_summary", "state_summary", "error_places",
           "member_names",
           "add_partitions_label"]

# a role of kipviz.schema.coordinators -> its lane's name
LANE_OF_ROLE = {"group": "group coordinator", "transaction": "transaction coordinator",
                "leader": "partition leader", "share": "share coordinator"}

FONT = "Helvetica,Arial,sans-serif"
C_TEXT = "#1a202c"
C_MUTED = "#4a5568"
C_ERROR = "#c53030"
C_CLIENT_BOX, C_CLIENT_LINE = "#e6f0fb", "#2b6cb0"
C_SERVER_BOX, C_SERVER_LINE = "#fdf4d8", "#b7791f"
C_RECORD_BOX, C_RECORD_LINE = "#fff8e1", "#c99a2e"
C_MARKER_BOX, C_MARKER_LINE = "#f3ecfb", "#6b46c1"
C_STATE_BOX, C_STATE_LINE = "#eef7ee", "#2f855a"
C_ACTION_BOX, C_ACTION_LINE = "#eef4fb", "#2b6cb0"
C_BAND = "#f1f1f1"
C_PROPOSED = "#6b46c1"
C_INTERNAL = "#6b46c1"
C_STEP = "#2d3748"

WIDTH = 1000           # target width, px
GUTTER = 70            # time column on the left
HEAD_H = 40
ROW_H = 28
LINE_H = 14
MIN_COL = 100.0        # the narrowest lane (a picture with more lanes than fit its width grows past it)
FS = 11                # font size of labels
FS_NOTE = 10
NOTE_EM = 1.12         # a note's text is estimated this much wider than _tw's average (no spill from its box)
MAX_NOTE_LINES = 8     # consecutive writes of one lifeline share a note, up to this many lines


# ---- which lifeline -----------------------------------------------------------------------------
def lifeline_of(api: str, broker: int) -> str:
    """The server lifeline a request of `api` received by `broker` goes to (the role from
    kipviz.schema.coordinators, the broker model's routing table)."""
    role = role_of(api)
    return f"{LANE_OF_ROLE[role]} (broker {broker})" if role else f"broker {broker}"


def _role_of_machine(machine: str) -> str:
    m = machine.lower()
    if "txn" in m or "transaction" in m:
        return "transaction coordinator"
    if "share-partition" in m or "record" in m:
        return "partition leader"
    return "group coordinator"


def _short_machine(machine: str) -> str:
    m = machine.lower()
    if "txn" in m or "transaction" in m:
        return "txn"
    if m.endswith("member"):
        return "member"
    if m.endswith("group"):
        return "group"
    return machine


def state_summary(ev: E.StateChanged) -> str:
    """"txn tx-1: Ongoing → PrepareCommit"."""
    return f"{_short_machine(ev.machine)} {ev.key}: {ev.from_state} → {ev.to_state}"


# ---- internal-topic records ----------------------------------------------------------------------
def _offset_commit_text(key, value, tomb) -> str:
    tp = f"{rfield(key, 'topic')}-{rfield(key, 'partition')}"
    return f"OffsetCommit {tp}" + ("" if tomb else f"={rfield(value, 'offset')}")


def _txn_log_text(key, value, tomb) -> str:
    tid = rfield(key, "TransactionalId")
    status = rfield(value, "TransactionStatus")
    status = _txn_table.STATE_NAMES.get(status, status) if isinstance(status, int) else status
    text = f"TransactionLog {tid}"
    if not tomb:
        text += f": {status} (producer {rfield(value, 'ProducerId')}, epoch {rfield(value, 'ProducerEpoch')})"
        parts = rfield(value, "TransactionPartitions") or []
        tps = [f"{rfield(p, 'Topic')}-{i}" for p in parts if isinstance(p, dict)
               for i in (rfield(p, "PartitionIds") or [])]
        if tps:
            text += " [" + ", ".join(tps[:4]) + (f", +{len(tps) - 4}" if len(tps) > 4 else "") + "]"
    return text


def _group_metadata_text(key, value, tomb) -> str:
    text = f"GroupMetadata {rfield(key, 'group')}"
    if not tomb:
        members = rfield(value, "members") or []
        text += (f": generation {rfield(value, 'generation')}, {len(members)} member"
                 f"{'s' if len(members) != 1 else ''}")
    return text


def _other_record_text(name: str, key, value, tomb) -> str:
    keyvals = [str(v) for v in key.values()] if isinstance(key, dict) else [str(key)]
    text = f"{name} " + "/".join(keyvals)
    epoch = record_epoch(value)
    if epoch is not None and not tomb:
        text += f" epoch {epoch}"
    return text


_RECORD_TEXT = {"OffsetCommit": _offset_commit_text, "TransactionLog": _txn_log_text,
                "GroupMetadata": _group_metadata_text}


def record_summary(ev: E.RecordAppended) -> str:
    """One line for an internal-topic write or a transaction marker:
    "__consumer_offsets-12 @5: OffsetCommit orders-3=150382"."""
    where = f"{ev.topic}-{ev.partition} @{ev.offset}"
    if ev.control:
        who = f" (producer {ev.producer_id}, epoch {ev.producer_epoch})" if ev.producer_id >= 0 else ""
        return f"{where}: {marker_type(ev.key, ev.record)} marker{who}"
    d = internal_view(ev.topic, ev.key, ev.value, ev.record)
    if d is None:
        return f"{where}: record" + (" (transactional)" if ev.transactional else "")
    name = d.get("record") or "record"
    key, value = d.get("key") or {}, d.get("value")
    tomb = d.get("tombstone") or (value is None and ev.value is None and ev.key is not None)
    if name in _RECORD_TEXT:
        text = _RECORD_TEXT[name](key, value, tomb)
    else:
        text = _other_record_text(name, key, value, tomb)
    if tomb:
        text += " (tombstone)"
    return f"{where}: {text}"


# ---- rows ------------------------------------------------------------------------------------------
@dataclass
class _Row:
    kind: str                    # "msg", "note", "band"
    t: int
    src: str = ""
    dst: str = ""
    lines: list = field(default_factory=list)     # [(text, color)]
    color: str = C_TEXT
    dashed: bool = False
    dotted: bool = False         # inter-broker message the model sends itself (no request event)
    box: tuple[str, str] = (C_RECORD_BOX, C_RECORD_LINE)
    style: str = ""
    tip: str = ""
    more: int = 0                # merged records beyond MAX_NOTE_LINES
    mark: str | None = None      # step label (the `marks` option)


TIP_CHARS = 600


def _tip_value(o) -> str:
    # a record batch of megabytes: only its first TIP_CHARS bytes can reach the tip (their repr alone
    # fills it), written in the quotes repr() picks for the whole value (b"..." when it holds ' and no ")
    if not isinstance(o, (bytes, bytearray, memoryview)) or len(o) <= TIP_CHARS:
        return str(bytes(o) if isinstance(o, memoryview) else o)
    o = bytes(o)
    text = repr(o[:TIP_CHARS])
    double = b"'" in o and b'"' not in o
    if double and text.startswith("b'"):          # the prefix holds no quote at all
        return 'b"' + text[2:-1] + '"'
    if not double and text.startswith('b"'):      # the prefix holds ' and no ": escape it as repr would
        return "b'" + text[2:-1].replace("'", "\\'") + "'"
    return text


def _tip(ev) -> str:
    try:
        text = json.dumps(ev.body, default=_tip_value, ensure_ascii=False)
    except Exception:  # noqa: BLE001
        text = str(ev.body)
    return text if len(text) <= TIP_CHARS else text[:TIP_CHARS - 3] + "…"


_ADD_PARTITIONS = (E.PartitionAddedToTxn, E.ShareStatePartitionsAdded, E.ShareParticipantsAdded)


def add_partitions_label(e: E.PartitionAddedToTxn | E.ShareStatePartitionsAdded | E.ShareParticipantsAdded) -> str:
    """"AddPartitionsToTxn v5 (add) out-0" / "AddPartitionsToTxn (broker-internal) __share_group_state-31"."""
    if isinstance(e, E.PartitionAddedToTxn):
        return f"AddPartitionsToTxn v{e.version} ({'verifyOnly' if e.verify_only else 'add'}) {e.topic}-{e.partition}"
    if isinstance(e, E.ShareStatePartitionsAdded):
        parts = [f"{t}-{p}" for t, p in e.partitions]
    else:
        parts = [f"share partition {sp} · kit's suggestion" for sp in e.share_partitions]
    return "AddPartitionsToTxn (broker-internal) " + ", ".join(parts)


def _abbrev_id(value) -> str:
    from ..uuids import to_kafka_str
    text = to_kafka_str(value) if hasattr(value, "bytes") else str(value)
    return text[:8] + "…" if len(text) > 12 else text


def _node_topic(node: dict, topic):
    """The topic a body node names (Name / Topic / TopicName, else its TopicId abbreviated), or the
    enclosing one."""
    for key in ("Name", "Topic", "TopicName"):
        if isinstance(node.get(key), str) and ("Partitions" in node or "PartitionIndex" in node
                                               or "Partition" in node or key != "Name"):
            topic = node[key]
    if node.get("TopicId") is not None and topic is None or (node.get("TopicId") is not None
                                                             and "Partitions" in node):
        topic = _abbrev_id(node["TopicId"])
    return topic


def _node_partition(node: dict, partition):
    for key in ("PartitionIndex", "Partition", "PartitionId"):
        if isinstance(node.get(key), int):
            partition = node[key]
    return partition


def error_places(body) -> list[tuple[str, int]]:
    """[(topic-partition, error code)] for every non-zero ErrorCode in a response body, named by the
    nearest enclosing topic (Name / Topic / TopicId, IDs abbreviated) and partition (PartitionIndex /
    Partition); consecutive partitions of one topic with one error are joined ("orders-0,1").
    [] when no error sits under a topic (the error is the response's own)."""
    found: list[tuple[str, str, int]] = []

    def walk(node, topic, partition):
        if isinstance(node, list):
            for item in node:
                walk(item, topic, partition)
            return
        if not isinstance(node, dict):
            return
        topic, partition = _node_topic(node, topic), _node_partition(node, partition)
        code = node.get("ErrorCode")
        if isinstance(code, int) and code and topic is not None:
            found.append((topic, "" if partition is None else str(partition), code))
        for value in node.values():
            if isinstance(value, (list, dict)):
                walk(value, topic, partition)

    walk(body, None, None)
    out: list[tuple[str, int]] = []
    last: tuple | None = None
    for topic, part, code in found:
        if last is not None and last[0] == topic and last[2] == code and part:
            out[-1] = (out[-1][0] + f",{part}", code)
        else:
            out.append((f"{topic}-{part}" if part else topic, code))
        last = (topic, part, code)
    return out


def member_names(events, client_ids: Mapping[str, str] | None = None) -> dict[str, str]:
    """member id -> the client lane that uses it (from the heartbeats' answers), so that notes name
    members as the lanes do (consumer-1, not a 22-character id)."""
    names: dict[str, str] = {}
    events = list(events)
    clients = client_names(events, client_ids)
    for ev in events:
        if isinstance(ev, E.ResponseSent) and ev.api.endswith("Heartbeat") and isinstance(ev.body, dict):
            mid = ev.body.get("MemberId")
            if isinstance(mid, str) and len(mid) >= 8 and mid not in names:
                names[mid] = clients.get(ev.client, ev.client)
    return names


def _rename(text: str, names: dict[str, str]) -> str:
    for mid, client in names.items():
        if mid in text:
            text = text.replace(mid, client)
    return text


class _Builder:
    """Events to diagram rows: one method per event kind, sharing the lifelines found so far and the
    request being handled (the model takes one at a time)."""

    def __init__(self, marks: dict, status_labels: bool, internal_arrows: bool, on_broker: dict,
                 names: dict | None = None):
        self.marks, self.status_labels = marks, status_labels
        self.names = names or {}                # connection -> client.id (kipviz.draw.clients)
        self.internal_arrows, self.on_broker = internal_arrows, on_broker
        self.rows: list[_Row] = []
        self.clients: list[str] = []
        self.servers: list[str] = []
        self.open_req: dict[tuple, str] = {}    # (broker, client, correlation id) -> server lifeline
        self.handling: list[tuple] = []         # the request being handled
        self.handling_t = 0                     # ... and when: time moving on ends it too
        self.role_broker: dict[str, int] = {}
        self.now = 0

    def client_line(self, connection: str) -> str:
        """The lane of a connection: its client.id (a live server names connections by address)."""
        name = self.names.get(connection, connection)
        if name not in self.clients:
            self.clients.append(name)
        return name

    def server_line(self, name: str) -> str:
        if name not in self.servers:
            self.servers.append(name)
        return name

    def role_line(self, role: str, broker: int | None) -> str:
        if broker is None:
            if (self.handling and self.handling_t == self.now
                    and self.open_req.get(self.handling[-1], "").startswith(role)):
                return self.open_req[self.handling[-1]]
            broker = self.role_broker.get(role, 0)
        self.role_broker[role] = broker
        return self.server_line(f"{role} (broker {broker})")

    def _status(self, ev) -> str | None:
        return version_status(ev.api, ev.version) if self.status_labels else None

    def add(self, ev) -> None:
        self.now = ev.t
        before = len(self.rows)
        handler = self._HANDLERS.get(type(ev))
        if handler is None:
            handler = next((h for kind, h in self._HANDLERS.items() if isinstance(ev, kind)), None)
        if handler is not None:
            handler(self, ev)
        if len(self.rows) > before:
            self.rows[-1].mark = self.marks.get(ev.seq)

    def request(self, ev: E.RequestReceived) -> None:
        c = self.client_line(ev.client)
        s = self.server_line(lifeline_of(ev.api, ev.broker))
        for role in ("group coordinator", "transaction coordinator", "partition leader"):
            if s.startswith(role):
                self.role_broker[role] = ev.broker
        k = (ev.broker, ev.client, ev.correlation_id)
        self.open_req[k] = s
        self.handling[:] = [k]          # one request at a time; an unanswered one is over
        self.handling_t = ev.t
        label, lcolor = f"{ev.api} v{ev.version}", C_TEXT
        status = self._status(ev)
        if status not in (None, "released"):
            label, lcolor = f"{label} · {status}", C_PROPOSED
        self.rows.append(_Row("msg", ev.t, c, s, [(label, lcolor)], tip=_tip(ev)))

    def response(self, ev: E.ResponseSent) -> None:
        k = (ev.broker, ev.client, ev.correlation_id)
        s = self.open_req.pop(k, None) or self.server_line(lifeline_of(ev.api, ev.broker))
        if k in self.handling:
            self.handling.remove(k)
        c = self.client_line(ev.client)
        label = f"{ev.api} v{ev.version}"
        status = self._status(ev)
        if status not in (None, "released"):
            label += f" · {status}"
        if ev.error_codes:
            lines, color = _error_lines(label, ev), C_ERROR
        else:
            lines, color = [(label, C_PROPOSED if status not in (None, "released") else C_TEXT)], C_MUTED
        self.rows.append(_Row("msg", ev.t, s, c, lines, color=color, dashed=True, tip=_tip(ev)))

    def state(self, ev: E.StateChanged) -> None:
        line = self.role_line(_role_of_machine(ev.machine), self.on_broker.get(ev.seq))
        text = state_summary(ev)
        color = C_TEXT
        if ev.status not in ("released", "", None):
            text += f" ({ev.status})"
            color = C_PROPOSED
        self.rows.append(_Row("note", ev.t, line, lines=[(text, color)], box=(C_STATE_BOX, C_STATE_LINE),
                              style="state", tip=f"cause: {ev.cause}"))

    def record(self, ev: E.RecordAppended) -> None:
        if ev.control:
            line = self.role_line("partition leader", ev.broker)
            box, style = (C_MARKER_BOX, C_MARKER_LINE), "marker"
        elif ev.topic in INTERNAL_TOPICS:
            line = self.role_line(LANE_OF_ROLE[OWNER_ROLE[ev.topic]], ev.broker)
            box, style = (C_RECORD_BOX, C_RECORD_LINE), "record"
        else:
            return                       # data records: the Produce arrow already shows them
        text = record_summary(ev)
        prev = self.rows[-1] if self.rows else None
        if (prev is not None and prev.kind == "note" and prev.style == style and prev.src == line
                and prev.mark == self.marks.get(ev.seq)):
            if len(prev.lines) < MAX_NOTE_LINES:
                prev.lines.append((text, C_TEXT))
            else:
                prev.more += 1
            return
        self.rows.append(_Row("note", ev.t, line, lines=[(text, C_TEXT)], box=box, style=style))

    def client_did(self, ev: E.ClientDid) -> None:
        # a typed client decision, drawn as a note on the client's lifeline
        self.rows.append(_Row("note", ev.t, self.client_line(ev.client), lines=[(getattr(ev, "label", ev.text), C_TEXT)],
                              box=(C_ACTION_BOX, C_ACTION_LINE), style="action"))

    def happened(self, ev: E.Happened) -> None:
        """A typed thing that happened: the coordinator's and leaders' own requests as inter-broker
        arrows, anything else a band with its sentence."""
        if isinstance(ev, (E.MarkerSent, E.ShareMarkerSent)):
            self._marker_arrow(ev)
        elif isinstance(ev, E.MarkerForwarded):
            self._forward_arrow(ev)
        elif (self.internal_arrows and isinstance(ev, _ADD_PARTITIONS) and isinstance(ev.coordinator, int)
              and self.handling and self.handling_t == ev.t and self.handling[-1] in self.open_req):
            self._add_partitions_arrow(ev)
        else:
            self.rows.append(_Row("band", ev.t, lines=[(ev.text, C_MUTED)]))

    def _internal(self, ev: E.Happened, src: str, dst: str, label: str) -> None:
        self.rows.append(_Row("msg", ev.t, src, dst, [(label, C_INTERNAL)], color=C_INTERNAL, dotted=True,
                              tip=ev.text))

    def _marker_arrow(self, ev: E.MarkerSent | E.ShareMarkerSent) -> None:
        # the coordinator's own request to a partition leader: an inter-broker arrow
        src = self.role_line("transaction coordinator", ev.coordinator)
        dst = self.role_line("partition leader", ev.broker)
        label = " ".join(str(x) for x in ("WriteTxnMarkers", ev.marker, f"{ev.topic}-{ev.partition}") if x)
        if isinstance(ev, E.ShareMarkerSent):      # KIP-1289, share_marker_routing "participants"
            label += f" (share group {ev.group}) · kit's suggestion"
        self._internal(ev, src, dst, label)

    def _forward_arrow(self, ev: E.MarkerForwarded) -> None:
        # KIP-1289 with the kit's suggestion: the marker's recipient forwards it to a share
        # partition's leader (kipviz.broker.share_txn)
        src = self.role_line("partition leader", ev.marker_broker)
        dst = self.role_line("partition leader", ev.broker)
        label = f"forward {ev.marker} marker __share_group_state-{ev.partition} · kit's suggestion"
        self._internal(ev, src, dst, label)

    def _add_partitions_arrow(self, ev) -> None:
        # a broker asks the transaction coordinator itself, while handling a client's request
        src = self.open_req[self.handling[-1]]
        dst = self.role_line("transaction coordinator", ev.coordinator)
        label = add_partitions_label(ev)
        status = getattr(ev, "status", None)
        if status not in (None, "released"):
            label += f" · {status}"
        self._internal(ev, src, dst, label)

    _HANDLERS = {E.RequestReceived: request, E.ResponseSent: response, E.StateChanged: state,
                 E.RecordAppended: record, E.ClientDid: client_did,
                 E.Happened: happened}     # last: a more special subclass's handler (ClientDid) matches first


def _error_lines(label: str, ev: E.ResponseSent) -> list[tuple[str, str]]:
    places = error_places(ev.body)
    if len({code for _, code in places}) > 1:      # each error with the partitions it answers
        return [(label, C_ERROR)] + [(f"{p}: {name_of(code)}", C_ERROR) for p, code in places]
    if places:                                      # one error: where it applies, muted
        return [(f"{label} · {name_of(places[0][1])}", C_ERROR), ("at " + ", ".join(p for p, _ in places), C_MUTED)]
    return [(f"{label} · {', '.join(name_of(code) for code in ev.error_codes)}", C_ERROR)]


def _build(events, marks: dict | None = None, status_labels: bool = False, internal_arrows: bool = False,
           on_broker: dict | None = None, client_ids: Mapping[str, str] | None = None
           ) -> tuple[list[_Row], list[str], list[str]]:
    names = member_names(events, client_ids)
    b = _Builder(marks or {}, status_labels, internal_arrows, on_broker or {}, client_names(events, client_ids))
    for ev in events:
        b.add(ev)
    if names:
        for r in b.rows:
            if r.kind != "msg":
                r.lines = [(_rename(t, names), c) for t, c in r.lines]
    return b.rows, b.clients, b.servers


_LANE = re.compile(r"^(.*) \(broker (\d+)\)$")
_BARE = re.compile(r"^broker (\d+)()$")
_SHORT_ROLE = {"partition leader": "leader", "transaction coordinator": "txn coordinator",
               "group coordinator": "group coordinator", "share coordinator": "share coordinator"}


def _by_broker(rows: list[_Row], servers: list[str]) -> tuple[list[_Row], list[str]]:
    """lanes="broker": one lane per broker, named "broker N (its roles in this picture)"."""
    roles: dict[int, list[str]] = {}
    of: dict[str, int] = {}
    for name in servers:
        m = _LANE.match(name) or _BARE.match(name)
        if m:
            b = int(m.group(2) if m.re is _LANE else m.group(1))
            of[name] = b
            roles.setdefault(b, [])
            role = _SHORT_ROLE.get(m.group(1), m.group(1)) if m.re is _LANE else None
            if role and role not in roles[b]:
                roles[b].append(role)
    lane = {b: f"broker {b} ({', '.join(r)})" if r else f"broker {b}" for b, r in roles.items()}
    rename = {name: lane[b] for name, b in of.items()}
    for r in rows:
        r.src, r.dst = rename.get(r.src, r.src), rename.get(r.dst, r.dst)
    return rows, [lane[b] for b in sorted(roles)] + [n for n in servers if n not in of]


# ---- folding -----------------------------------------------------------------------------------------
SETUP_APIS = frozenset({"ApiVersions", "FindCoordinator", "Metadata", "InitProducerId", "CreateTopics"})


def _api(r: _Row) -> str:
    return r.lines[0][0].split(" v", 1)[0]


def _exchange(rows: list[_Row], i: int) -> int | None:
    """If rows[i] starts a request answered without an error by rows[i + 1], the index after the
    exchange (its client's own notes that follow it included); else None."""
    if i + 1 >= len(rows):
        return None
    q, a = rows[i], rows[i + 1]
    if not (q.kind == a.kind == "msg" and not q.dashed and not q.dotted and a.dashed and a.src == q.dst
            and a.dst == q.src and a.color != C_ERROR and _api(q) == _api(a) and q.mark == a.mark):
        return None
    j = i + 2
    while j < len(rows) and rows[j].kind == "note" and rows[j].style == "action" and rows[j].src == q.src \
            and rows[j].mark == q.mark:
        j += 1
    return j


def _member_exchange(rows: list[_Row], i: int) -> int | None:
    """If rows[i] starts a group-membership request answered without an error, the coordinator's
    own rows in between (notes, bands: the group's records and state changes), the index after the
    exchange (its client's notes that follow included); else None."""
    q = rows[i]
    if not (q.kind == "msg" and not q.dashed and not q.dotted and _api(q) in MEMBERSHIP_APIS):
        return None
    j = i + 1
    while j < len(rows) and rows[j].kind != "msg" and rows[j].mark == q.mark:
        j += 1
    if j >= len(rows):
        return None
    a = rows[j]
    if not (a.dashed and a.src == q.dst and a.dst == q.src and a.color != C_ERROR and _api(a) == _api(q)):
        return None
    j += 1
    while j < len(rows) and rows[j].kind == "note" and rows[j].style == "action" and rows[j].src == q.src \
            and rows[j].mark == q.mark:
        j += 1
    return j


def _fold_members(rows: list[_Row]) -> list[_Row]:
    """A run of two or more group-membership exchanges (heartbeats, joins: the group forming, with
    its coordinator's records and state changes) becomes one band naming its clients."""
    out: list[_Row] = []
    i = 0
    while i < len(rows):
        j, n, apis, clients = i, 0, {}, []
        while (end := _member_exchange(rows, j)) is not None and rows[j].mark == rows[i].mark:
            apis[_api(rows[j])] = apis.get(_api(rows[j]), 0) + 1
            if rows[j].src not in clients:
                clients.append(rows[j].src)
            j, n = end, n + 1
        if n >= 2:
            what = ", ".join(f"{k}× {a}" if k > 1 else a for a, k in apis.items())
            out.append(_Row("band", rows[i].t, lines=[(f"group membership folded: {what} of {', '.join(clients)} "
                                                       "(sequence_svg(fold=False) shows every event)", C_MUTED)],
                            mark=rows[i].mark))
            i = j
            continue
        out.append(rows[i])
        i += 1
    return out


def _setup_band(r: _Row) -> bool:
    return r.kind == "band" and r.lines[0][0].startswith("topic ") and r.lines[0][0].endswith(" created")


def _fold(rows: list[_Row]) -> list[_Row]:
    """A run of set-up (ApiVersions, FindCoordinator, Metadata, InitProducerId, CreateTopics
    exchanges, "topic … created") of two or more steps becomes one band; a run of three or more
    identical error-free exchanges (same client, lane and api) keeps its first and says how many
    more it folded."""
    out: list[_Row] = []
    i = 0
    while i < len(rows):
        j, apis = i, {}
        while j < len(rows):
            end = _exchange(rows, j)
            if end is not None and _api(rows[j]) in SETUP_APIS and rows[j].mark == rows[i].mark:
                apis[_api(rows[j])] = apis.get(_api(rows[j]), 0) + 1
            elif _setup_band(rows[j]) and rows[j].mark == rows[i].mark:
                apis["topic created"] = apis.get("topic created", 0) + 1
                end = j + 1
            else:
                break
            j = end
        if j - i >= 3 and sum(apis.values()) >= 2:
            what = ", ".join(f"{n}× {a}" if n > 1 else a for a, n in apis.items())
            out.append(_Row("band", rows[i].t, lines=[(f"set-up folded: {what} (sequence_svg(fold=False) "
                                                       "shows every event)", C_MUTED)], mark=rows[i].mark))
            i = j
            continue
        end = _exchange(rows, i)
        if end is not None:
            key = (rows[i].src, rows[i].dst, rows[i].lines[0][0])
            j, n = end, 1
            while (nxt := _exchange(rows, j)) is not None and (rows[j].src, rows[j].dst, rows[j].lines[0][0]) == key:
                j, n = nxt, n + 1
            if n >= 3:
                out += rows[i:end]
                out.append(_Row("band", rows[end].t, lines=[(f"… {n - 1} more {key[2]} exchanges of {key[0]} "
                                                             "folded", C_MUTED)], mark=rows[i].mark))
                i = j
                continue
        out.append(rows[i])
        i += 1
    return out


# ---- SVG ---------------------------------------------------------------------------------------------
_e = svg_text       # text for SVG (kipviz.draw.render)


def _tw(text: str, size: float = FS) -> float:
    """Estimated width of text in px (Helvetica averages a little over half an em)."""
    return len(text) * size * 0.55


def wrap_text(text: str, max_px: float, size: float, *, break_words: bool = True) -> list[str]:
    """Text cut into lines of about `max_px` at font `size` (estimated widths), between words
    unless break_words."""
    chars = max(12, int(max_px / (size * 0.55)))
    return textwrap.wrap(text, chars, break_long_words=break_words, break_on_hyphens=False) or [""]


def wrap_name(text: str, max_px: float, size: float) -> list[str]:
    """A name's lines: broken at spaces, then after its own hyphens ("enricher-" / "consumer"); a
    part still too long is cut with a hyphen added at the end of each line ("127.0.0.1:4245-" / "4")."""
    chars = max(6, int(max_px / (size * 0.55)))
    out: list[str] = []
    for line in textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=True) or [""]:
        while len(line) > chars:
            out.append(line[:chars - 1] + "-")
            line = line[chars - 1:]
        out.append(line)
    return out


# a message label crosses the lifelines between its ends: a halo hides the dashed line under it
HALO = halo(width=4, round_joins=True)


def _text(x, y, s, *, size=FS, color=C_TEXT, anchor="middle", weight=None, italic=False, halo=False) -> str:
    extra = (f' font-weight="{weight}"' if weight else "") + (' font-style="italic"' if italic else "") \
        + (HALO if halo else "")
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{color}" text-anchor="{anchor}"{extra}>'
            f"{_e(s)}</text>")


def _head_parts(name: str, w: float) -> list[tuple[str, int, str | None, str]]:
    """A lane title's lines, wrapped to its box (a long title wraps rather than spilling out)."""
    a, b = (name.split(" (", 1) if " (" in name else (name, None))
    size = 12 if b is None else 11
    # a smaller size before a hyphen added inside a word ("reader-" / "uncommitted", not "uncommitt-")
    longest = max(re.split(r"(?<=-)|\s+", a), key=len)
    while size > 10 and _tw(longest, size * 1.12) > w - 8:
        size -= 1
    parts = [(t, size, "bold", C_TEXT) for t in wrap_name(a, w - 8, size * 1.12)]
    if b is not None:
        parts += [(t, 10, None, C_MUTED) for t in wrap_name("(" + b, w - 8, 10)]
    return parts


def _head_h(names, w: float) -> int:
    """Height of the head row: tall enough for the longest wrapped title."""
    most = max((len(_head_parts(n, w)) for n in names), default=1)
    return max(HEAD_H, 13 * most + 14)


def _head(x, y, w, name, is_client, head_h: int = HEAD_H) -> str:
    fill, line = (C_CLIENT_BOX, C_CLIENT_LINE) if is_client else (C_SERVER_BOX, C_SERVER_LINE)
    parts = _head_parts(name, w)
    kind = "kv-head kv-client" if is_client else "kv-head kv-server"
    out = [f'<g class="{kind}"><title>{_e(name)}</title>'
           f'<rect x="{x - w / 2:.1f}" y="{y}" width="{w:.1f}" height="{head_h - 6}" rx="4" '
           f'fill="{fill}" stroke="{line}"/>']
    top = y + (head_h - 6 - 13 * len(parts)) / 2 + 10
    for j, (text, size, weight, color) in enumerate(parts):
        out.append(_text(x, top + 13 * j, text, size=size, color=color, weight=weight))
    out.append("</g>")
    return "".join(out)


def _step_badge(mark: str, yy: float, placed: set, align: dict | None, layout: dict | None, total_w: int,
                body: list[str]) -> float:
    """A step starts: push it down to its aligned position, badge it in the gutter; the row's new y."""
    if mark not in placed:
        yy = max(yy, float((align or {}).get(mark, 0)))
        if layout is not None:
            layout.setdefault("steps", {})[mark] = yy
        placed.add(mark)
    body.append(f'<g class="kv-step" data-step="{_e(mark)}">'
                f'<line x1="4" x2="{total_w - 4}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#cbd5e0" '
                f'stroke-dasharray="1,3"/>'
                f'<circle cx="14" cy="{yy + 14:.1f}" r="9" fill="{C_STEP}"/>'
                + _text(14, yy + 17.5, mark, size=10, color="white", weight="bold") + "</g>")
    return yy


def _draw_msg(r: _Row, x1: float, x2: float, yy: float, body: list[str]) -> float:
    """An arrow with its label above; the y below it."""
    label, color = r.lines[0]
    span = abs(x2 - x1) - 10
    # arrow labels wrap between words only (a topic name stays whole, even past a short arrow)
    label_lines = [(part, c) for text, c in r.lines
                   for part in ([text] if _tw(text) <= max(span, 60) else wrap_text(text, max(span, 120), FS,
                                                                                 break_words=False))]
    extra = LINE_H * (len(label_lines) - 1)
    ly = yy + 19 + extra
    d = 1 if x2 >= x1 else -1
    tip = f"<title>{_e(r.tip)}</title>" if r.tip else ""
    dash = ' stroke-dasharray="6,4"' if r.dashed else ""
    sw = "1.4" if color == C_ERROR else "1.2"
    kind = ("kv-resp kv-error" if color == C_ERROR else "kv-resp") if r.dashed else "kv-req"
    if r.dotted:
        kind, dash = "kv-internal", ' stroke-dasharray="2,3"'
    body.append(f'<g class="{kind}">{tip}')
    body.append(f'<line x1="{x1:.1f}" y1="{ly:.1f}" x2="{x2 - d * 7:.1f}" y2="{ly:.1f}" '
                f'stroke="{r.color}" stroke-width="{sw}"{dash}/>')
    body.append(f'<polygon points="{x2:.1f},{ly:.1f} {x2 - d * 8:.1f},{ly - 4:.1f} '
                f'{x2 - d * 8:.1f},{ly + 4:.1f}" fill="{r.color}"/>')
    mid = (x1 + x2) / 2
    for j, (part, pc) in enumerate(label_lines):
        body.append(_text(mid, ly - 5 - LINE_H * (len(label_lines) - 1 - j), part, color=pc,
                          weight="bold" if pc == C_ERROR else None, halo=True))
    body.append("</g>")
    return yy + ROW_H + extra


def _draw_note(r: _Row, x: float, yy: float, note_max: float, total_w: int, body: list[str]) -> float:
    """A note box on a lifeline; the y below it."""
    # measured a little wide (NOTE_EM): capitals and "_" run past Helvetica's average width
    wrapped = [(part, color) for text, color in r.lines
               for part in wrap_text(text, note_max - 12, FS_NOTE * NOTE_EM)]
    if r.more:
        wrapped.append((f"… {r.more} more", C_MUTED))
    w = min(note_max, max(_tw(t, FS_NOTE * NOTE_EM) for t, _ in wrapped) + 14)
    h = LINE_H * len(wrapped) + 8
    left = max(min(x - w / 2, total_w - 4 - w), GUTTER - 4)
    fill, stroke = r.box
    tip = f"<title>{_e(r.tip)}</title>" if r.tip else ""
    body.append(f'<g class="kv-note kv-{r.style}">{tip}'
                f'<rect x="{left:.1f}" y="{yy + 3:.1f}" width="{w:.1f}" height="{h:.1f}" rx="3" '
                f'fill="{fill}" stroke="{stroke}"/>')
    for j, (part, color) in enumerate(wrapped):
        body.append(_text(left + 7, yy + 3 + 4 + LINE_H * (j + 1) - 3, part, size=FS_NOTE, color=color,
                          anchor="start"))
    body.append("</g>")
    return yy + h + 8


def _draw_band(r: _Row, yy: float, total_w: int, body: list[str]) -> float:
    """A grey band across every lane; the y below it."""
    wrapped = [(part, color) for text, color in r.lines for part in wrap_text(text, total_w - GUTTER - 40, FS)]
    h = LINE_H * len(wrapped) + 8
    body.append(f'<g class="kv-band"><rect x="{GUTTER:.1f}" y="{yy + 3:.1f}" '
                f'width="{total_w - GUTTER - 6:.1f}" height="{h:.1f}" fill="{C_BAND}"/>')
    for j, (part, color) in enumerate(wrapped):
        body.append(_text((GUTTER + total_w) / 2, yy + 3 + 4 + LINE_H * (j + 1) - 3, part, color=color,
                          italic=True))
    body.append("</g>")
    return yy + h + 8


def _heads(lines: list[str], clients: list[str], xs: dict, head_y: float, foot_y: float, body_top: float,
           colw: float, head_h: int) -> list[str]:
    """The lifelines, with their heads at the top and repeated at the foot."""
    heads = []
    for name in lines:
        x = xs[name]
        heads.append(f'<line class="kv-lifeline" x1="{x:.1f}" y1="{body_top - 6}" x2="{x:.1f}" y2="{foot_y:.1f}" '
                     f'stroke="#a0aec0" stroke-dasharray="4,4"/>')
    for name in lines:
        heads.append(_head(xs[name], head_y, colw - 14, name, name in clients, head_h))
        heads.append(_head(xs[name], foot_y, colw - 14, name, name in clients, head_h))
    return heads


def _draw_rows(rows: list[_Row], xs: dict, yy: float, note_max: float, total_w: int, align: dict | None,
               layout: dict | None, when) -> tuple[list[str], float]:
    """Every row top to bottom, with the time in the gutter when it moves on; the y below the last."""
    body: list[str] = []
    last_t = None
    prev_mark: str | None = None
    placed: set = set()
    for r in rows:
        if r.mark is not None and r.mark != prev_mark:
            yy = _step_badge(r.mark, yy, placed, align, layout, total_w, body)
        prev_mark = r.mark
        if r.t != last_t:
            body.append(_text(GUTTER - 8, yy + 16, when(r.t), size=10, color=C_MUTED, anchor="end"))
            body.append(f'<line x1="4" x2="{total_w - 4}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#f0f0f0"/>')
            last_t = r.t
        if r.kind == "msg":
            yy = _draw_msg(r, xs[r.src], xs[r.dst], yy, body)
        elif r.kind == "note":
            yy = _draw_note(r, xs[r.src], yy, note_max, total_w, body)
        else:
            yy = _draw_band(r, yy, total_w, body)
    return body, yy


def _title_block(title: str | None, events: list, hidden: int, t0: int | None, when,
                 total_w: int = WIDTH) -> tuple[list[str], int]:
    """The title (wrapped to the picture: a narrow one of few lanes) and the line under it (how many
    events, over what time); the y below them."""
    out: list[str] = []
    y = 12
    for line in wrap_text(title, total_w - 20, 15 * 1.1, break_words=False) if title else ():
        out.append(_text(10, y + 12, line, size=15, anchor="start", weight="bold"))
        y += 22
    if events:
        sub = (f"{len(events)} events · t = {events[0].t} … {events[-1].t} ms (virtual time)" if t0 is None else
               f"{len(events)} events · {when(events[0].t)} … {when(events[-1].t)} from the run's start")
        if hidden:
            sub += f" · {hidden} more not shown"
        out.append(_text(10, y + 10, sub, size=10, color=C_MUTED, anchor="start"))
        y += 18
    return out, y


def _lanes_and_rows(events, hidden, marks, status_labels, internal_arrows, on_broker, lanes, fold, fold_groups,
                    client_ids):
    """The rows to draw and the client and server lanes, after the lanes' grouping and the folds."""
    rows, clients, servers = _build(events, marks, status_labels, internal_arrows, on_broker, client_ids)
    if lanes == "broker":
        rows, servers = _by_broker(rows, servers)
    if fold_groups:
        rows = _fold_members(rows)
        used = {r.src for r in rows} | {r.dst for r in rows}
        clients = [c for c in clients if c in used]      # a client seen only in a folded group: no lane
    if fold:
        rows = _fold(rows)
    if hidden:
        rows.append(_Row("band", events[-1].t if events else 0,
                         lines=[(f"… {hidden} more event{'s' if hidden != 1 else ''} not shown", C_MUTED)]))
    return rows, clients, servers


def lanes_that_fit(width: float = WIDTH) -> int:
    """How many lanes a sequence diagram `width` px wide holds at its narrowest lane (MIN_COL)."""
    return max(2, int((width - GUTTER - 10) // MIN_COL))


def sequence_diagram(events, *, title: str | None = None, max_events: int | None = None,
                     width: int = WIDTH, marks: dict | None = None, align: dict | None = None,
                     layout: dict | None = None, status_labels: bool = False,
                     internal_arrows: bool = False, lanes: str = "role", on_broker: dict | None = None,
                     fold: bool = False, fold_groups: bool = False, t0: int | None = None,
                     client_ids: Mapping[str, str] | None = None) -> str:
    """SVG text of a scenario's events (a list of events, or anything with an `.events` list,
    such as a Cluster). max_events cuts the picture after that many events and says so.
    fold: set-up and repeated exchanges become one band each (Trace.sequence_svg folds by default).
    fold_groups: so does each run of group-membership exchanges (a group forming: heartbeats and
    joins with the coordinator's records and state changes between them).
    marks / align / layout / status_labels / internal_arrows: see the module docstring.
    t0: times are shown as seconds from t0 (a live cluster's clock is epoch milliseconds: thirteen
    digits would not fit the time column).
    client_ids: connection -> client.id beyond what the events' own requests say (a live cluster's
    Cluster.client_ids: the newest events may not hold a connection's first request)."""
    def when(t) -> str:
        return f"{(t - t0) / 1000:.3f} s" if t0 is not None else f"{t} ms"

    events = list(getattr(events, "events", events))
    hidden = 0
    if max_events is not None and len(events) > max_events:
        hidden = len(events) - max_events
        events = events[:max_events]
    rows, clients, servers = _lanes_and_rows(events, hidden, marks, status_labels, internal_arrows, on_broker,
                                             lanes, fold, fold_groups, client_ids)
    lines = clients + servers
    n = max(1, len(lines))
    # lanes narrow (their titles wrap) rather than the picture widening past `width`: a wider picture is
    # scaled down in a notebook's output area (about 830 px) and its smallest text (10 px) would drop
    # under 8 px (tests/browser/test_pictures_fit.py)
    colw = max(MIN_COL, min(240.0, (width - GUTTER - 10) / n))
    total_w = int(GUTTER + colw * n + 10)
    xs = {name: GUTTER + colw * (i + 0.5) for i, name in enumerate(lines)}

    out, y = _title_block(title, events, hidden, t0, when, total_w)
    head_y = y + 4
    head_h = _head_h(lines, colw - 14)
    body_top = head_y + head_h

    # rows: first lay out (heights), then draw
    body, yy = _draw_rows(rows, xs, body_top + 6, max(240.0, min(colw * 2.3, 380.0)), total_w, align, layout, when)
    if not rows:
        body.append(_text(total_w / 2, yy + 16, "no events", color=C_MUTED, italic=True))
        yy += ROW_H
    body_bottom = yy + 8
    foot_y = body_bottom
    total_h = int(foot_y + head_h + 6)
    if layout is not None:
        layout["height"] = total_h
        layout["width"] = total_w
    heads = _heads(lines, clients, xs, head_y, foot_y, body_top, colw, head_h)

    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
            f'viewBox="0 0 {total_w} {total_h}" font-family="{FONT}" font-size="{FS}" class="kipviz-sequence">'
            f'<rect x="0" y="0" width="{total_w}" height="{total_h}" fill="white"/>'
            + "".join(out) + "".join(heads) + "".join(body) + "</svg>")


def sequence_html(events, *, title: str = "kipviz sequence", max_events: int | None = None) -> str:
    """A standalone HTML page with the sequence diagram inline (nothing fetched)."""
    return to_html(sequence_diagram(events, title=None, max_events=max_events), title=title)


def sequence_svg(trace, *, fold: bool = True, **kwargs) -> str:
    """A scenario run's sequence diagram (a kipviz.scenarios.Trace): set-up and repeated exchanges
    folded into bands; fold=False draws every event."""
    return sequence_diagram(trace.events, title=trace.scenario.title, fold=fold, **kwargs)
