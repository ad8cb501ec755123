"""Differential replay: the clients' requests of a capture, in order, into a fresh broker model
playing the release the broker advertised; every answer compared field by field with the observed
one (docs/explain.md, "Differential replay").

What each side chooses for itself is mapped, not compared: topic ids (KIP-516), producer ids,
member ids the coordinator generates, the cluster id and fetch session ids. A mapping is learned
the first time both sides answer with a value (the observed value stands for the model's from then
on; a second observed value for the same model value is a difference), and requests are rewritten
with it before the model reads them -- also the ProducerId inside each record batch, whose CRC is
computed again (kipviz.records.header.with_producer). Producer epochs, member epochs, offsets and
error codes are compared as they are: a fresh broker gives them deterministically.

Set-up the capture does not show is taken from what it does show: the brokers (NodeId, Host, Port
of the first Metadata answer become the model's advertised listeners), and each topic a Metadata
answer lists before any CreateTopics named it is created in the model, with as many partitions,
just before that exchange. The model's clock follows the capture's timestamps (each request at its
own time; due timers fire in between, so held Fetch and JoinGroup answers come when they would)."""
from __future__ import annotations

import html
import tempfile
from dataclasses import dataclass, field

from ..broker.cluster import Cluster
from ..broker.segments import cluster_log_dir
from ..codec import framing
from ..errors import DecodeError, EncodeError
from ..records.header import (
    CONTROL_MASK,
    HEADER_KEYS,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    batch_size,
    header_field,
    read_header,
    split_batches,
    with_producer,
)
from ..schema import releases
from ..uuids import ZERO_UUID

# field name -> the kind of id each side chooses for itself (LeaderId: only a string is a member id)
ID_KINDS = {"TopicId": "topic id", "ProducerId": "producer id", "MemberId": "member id", "LeaderId": "member id",
            "Leader": "member id", "ClusterId": "cluster id", "SessionId": "fetch session id"}
# readings of the broker's clock: a capture's timestamps are the capture host's, so these agree within
# `clock_tolerance_ms` (also the timestamps of control batches and LogAppendTime batches)
BROKER_CLOCK = {"LogAppendTimeMs", "TransactionStartTimeMs"}
CLOCK_TOLERANCE_MS = 1000
UNSET = {"topic id": {ZERO_UUID, None}, "producer id": {-1}, "member id": {"", None}, "cluster id": {"", None},
         "fetch session id": {0}}
# lists of dicts are paired by the first of these keys their items have (Kafka and the model may order them apart)
LIST_KEYS = ("Name", "Topic", "TopicId", "PartitionIndex", "Partition", "NodeId", "ApiKey", "GroupId",
             "TransactionalId", "MemberId", "Index")
SKIP_APIS = {"SaslHandshake", "SaslAuthenticate"}     # the model is replayed as PLAINTEXT
MAX_SHOWN = 40
# set-up a capture may ask for, bounded: a damaged or hostile capture must not make a huge model
MAX_BROKERS, MAX_PARTITIONS = 64, 10_000


def _kind(name: str, value) -> str | None:
    kind = ID_KINDS.get(name)
    if kind == "member id" and name in ("LeaderId", "Leader") and not isinstance(value, str):
        return None
    return kind


class IdMap:
    """Observed id <-> model id, per kind of id."""

    def __init__(self):
        self.to_model: dict[tuple[str, object], object] = {}
        self.to_observed: dict[tuple[str, object], object] = {}

    def model_value(self, kind: str, observed):
        """The model's value for an observed one (the same value when none is learned)."""
        return self.to_model.get((kind, observed), observed)

    def match(self, kind: str, observed, model) -> bool:
        """Do the two values stand for the same id? Learns the pair the first time both are set."""
        unset = UNSET[kind]
        if observed in unset or model in unset:
            return observed == model
        known = self.to_model.get((kind, observed))
        if known is not None:
            return known == model
        if (kind, model) in self.to_observed:
            return False                   # the model's value already stands for another observed id
        self.to_model[(kind, observed)], self.to_observed[(kind, model)] = model, observed
        return True

    def learned(self) -> dict[str, int]:
        """How many ids of each kind were mapped to a different value."""
        out: dict[str, int] = {}
        for (kind, obs), mod in self.to_model.items():
            if obs != mod:
                out[kind] = out.get(kind, 0) + 1
        return out


def _rewrite_records(raw: bytes, ids: IdMap) -> bytes:
    parts = []
    for b in split_batches(raw):
        if len(b) >= HEADER_SIZE and len(b) == batch_size(b):
            pid = header_field(b, "producer_id")
            new = ids.model_value("producer id", pid)
            if new != pid:
                b = with_producer(b, new)
        parts.append(b)
    return b"".join(parts)


def rewrite(value, ids: IdMap):
    """A request body with the observed ids replaced by the model's (a copy; the input is kept)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            kind = _kind(k, v)
            if kind is not None and not isinstance(v, (list, dict)):
                out[k] = ids.model_value(kind, v)
            elif k == "Records" and isinstance(v, (bytes, bytearray, memoryview)):
                out[k] = _rewrite_records(bytes(v), ids)
            else:
                out[k] = rewrite(v, ids)
        return out
    if isinstance(value, list):
        return [rewrite(v, ids) for v in value]
    return value


@dataclass
class Difference:
    """One field where the model's answer is not the observed one."""
    exchange: int
    api: str
    path: str
    observed: object
    model: object

    def __str__(self) -> str:
        return f"#{self.exchange} {self.api} {self.path}: observed {_short(self.observed)}, model {_short(self.model)}"


def _short(v, n: int = 60) -> str:
    text = repr(bytes(v[:n]) if isinstance(v, memoryview) else v)      # a capture's Records: a view of its frame
    return text if len(text) <= n else text[:n - 3] + "..."


def _compare_records(path, obs: bytes, mod: bytes, ids: IdMap, out: list, tol: int) -> None:
    ob, mb = split_batches(obs), split_batches(mod)
    if len(ob) != len(mb):
        out.append((f"{path} batches", len(ob), len(mb)))
    for i, (o, m) in enumerate(zip(ob, mb, strict=False)):
        if len(o) < HEADER_SIZE or len(m) < HEADER_SIZE or len(o) != batch_size(o) or len(m) != batch_size(m):
            if o != m:
                out.append((f"{path}[{i}] (a partial batch)", o, m))
            continue
        oh, mh = read_header(o, 0), read_header(m, 0)
        broker_time = header_field(o, "attributes") & (CONTROL_MASK | TIMESTAMP_TYPE_MASK)
        for key, ov, mv in zip(HEADER_KEYS, oh, mh, strict=True):
            if key == "crc":
                continue
            if key == "producer_id":
                same = ids.match("producer id", ov, mv)
            elif broker_time and key in ("base_timestamp", "max_timestamp"):
                same = abs(ov - mv) <= tol
            else:
                same = ov == mv
            if not same:
                out.append((f"{path}[{i}].{key}", ov, mv))
        if o[HEADER_SIZE:] != m[HEADER_SIZE:]:
            out.append((f"{path}[{i}] records", o[HEADER_SIZE:], m[HEADER_SIZE:]))


def _pair_key(items: list) -> str | None:
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    return next((k for k in LIST_KEYS if all(k in x for x in items) and _kind(k, items[0][k]) is None), None)


# size: one walk over dicts, lists and leaves, the id, record and clock fields told apart at their key; split, each part would recurse into the others
def compare(obs, mod, ids: IdMap, path: str = "", out: list | None = None,
            tol: int = CLOCK_TOLERANCE_MS) -> list[tuple[str, object, object]]:
    """The (path, observed, model) of every field that differs, ids compared through `ids`, readings
    of the broker's clock within `tol` ms."""
    out = [] if out is None else out
    if isinstance(obs, dict) and isinstance(mod, dict):
        for k in obs.keys() | mod.keys():
            p = f"{path}.{k}" if path else k
            o, m = obs.get(k), mod.get(k)
            kind = _kind(k, o if o is not None else m)
            if kind is not None and not isinstance(o, (list, dict)):
                if not ids.match(kind, o, m):
                    out.append((p, o, m))
            elif k == "Records" and isinstance(o, (bytes, bytearray, memoryview)) and isinstance(m, (bytes, bytearray, memoryview)):
                _compare_records(p, bytes(o), bytes(m), ids, out, tol)
            elif k in BROKER_CLOCK and isinstance(o, int) and isinstance(m, int) and o >= 0 and m >= 0:
                if abs(o - m) > tol:
                    out.append((p, o, m))
            else:
                compare(o, m, ids, p, out, tol)
    elif isinstance(obs, list) and isinstance(mod, list):
        key = _pair_key(obs)
        key = key if key == _pair_key(mod) else None
        if key is not None:
            mods = {x[key]: x for x in mod}
            for x in obs:
                compare(x, mods.get(x[key]), ids, f"{path}[{key}={x[key]!r}]", out, tol)
            for k2 in mods.keys() - {x[key] for x in obs}:
                out.append((f"{path}[{key}={k2!r}]", None, mods[k2]))
        else:
            if len(obs) != len(mod):
                out.append((f"{path} length", len(obs), len(mod)))
            for i, (o, m) in enumerate(zip(obs, mod, strict=False)):
                compare(o, m, ids, f"{path}[{i}]", out, tol)
    elif obs != mod:
        out.append((path, obs, mod))
    return out


@dataclass
class Outcome:
    """One exchange's replay: "agree", "differ" or "not compared" (with the reason)."""
    exchange: int
    api: str
    version: int
    status: str
    reason: str = ""
    differences: list[Difference] = field(default_factory=list)


def _topics_listed(body: dict) -> list[tuple[str, int, object]]:
    return [(t["Name"], len(t.get("Partitions") or ()), t.get("TopicId"))
            for t in body.get("Topics") or () if t.get("Name") and not t.get("ErrorCode") and t.get("Partitions")]


class Replayer:
    """Feeds a capture's requests to a fresh Cluster and compares its answers (see the module)."""

    def __init__(self, exchanges, release: str | None):
        self.exchanges = exchanges
        self.order = sorted((i for i, ex in enumerate(exchanges)
                             if ex.get("request") and ex.get("kind") == "exchange" and ex.get("time") is not None),
                            key=lambda i: exchanges[i]["time"])
        self.ids = IdMap()
        self.release = release
        self.outcomes: dict[int, Outcome] = {}
        self.held: dict[tuple[str, int], int] = {}         # (client, correlation id) -> exchange held by the model
        self.created: set[str] = set()
        nodes = self._nodes()
        t0 = int(exchanges[self.order[0]]["time"] * 1000) if self.order else 0
        self.cluster = Cluster(brokers=max(1, len(nodes)), start_ms=t0, release=release,
                               advertised_listeners={i: (h, p) for i, (_, h, p) in enumerate(nodes)} or None)
        # the replayed logs on disk, as `kipviz serve` keeps them: a capture's records are not held
        # again in memory (close() removes them)
        self.log_dir = cluster_log_dir(self.cluster, tempfile.mkdtemp(prefix="kipviz-replay-"))
        self.cluster.topics.use_log_dir(self.log_dir)
        self.broker_of = {f"{h}:{p}": i for i, (_, h, p) in enumerate(nodes)}

    def _nodes(self) -> list[tuple[int, str, int]]:
        for i in self.order:
            ex = self.exchanges[i]
            if ex["api"] == "Metadata" and ex.get("response"):
                brokers = ex["response"]["body"].get("Brokers") or ()
                if brokers:
                    return sorted((b["NodeId"], b["Host"], b["Port"]) for b in brokers)[:MAX_BROKERS]
        return []

    def run(self) -> None:
        """Feed every request at its time, then let the clock run to the capture's last answer."""
        for i in self.order:
            ex = self.exchanges[i]
            self._step_to(int(ex["time"] * 1000))
            self._feed(i, ex)
            self.cluster.take_events()      # the replay reads answers only: the model's trace would hold every record again
        ends = [ex["response_time"] for ex in self.exchanges if ex.get("response_time") is not None]
        if ends:
            self._step_to(int(max(ends) * 1000) + 1)
        for i in self.held.values():
            ex = self.exchanges[i]
            if ex.get("response"):
                self._set(i, "differ", diffs=[Difference(i, ex["api"], "(response)", "answered",
                                                         "still held when the capture ends")])

    def _step_to(self, target: int) -> None:
        c = self.cluster
        while target > c.now:
            due = c.clock.next_due()
            c.advance((min(due, target) if due is not None and due > c.now else target) - c.now)
            self._collect()
        self._collect()

    def _collect(self) -> None:
        for client, _broker, frame in self.cluster.take_completed():
            cid = int.from_bytes(frame[4:8], "big", signed=True)
            i = self.held.pop((client, cid), None)
            if i is not None:
                self._compare(i, frame)

    def _feed(self, i: int, ex: dict) -> None:
        req = ex["request"]
        api = req["api"]
        if api in SKIP_APIS:
            self._set(i, "not compared", "authentication is not replayed (the model plays PLAINTEXT)")
            return
        self._create_listed_topics(ex)
        if api == "CreateTopics":
            self.created.update(t.get("Name") for t in req["body"].get("Topics") or ())
        body = rewrite(req["body"], self.ids)
        if body == req["body"]:
            frame = bytes(ex["request_frame"])
        else:
            try:
                frame = framing.encode_request(api, req["version"], body, correlation_id=req["correlation_id"],
                                               client_id=req["header"].get("ClientId"))
            except EncodeError as e:
                self._set(i, "not compared", f"the request could not be rewritten with the model's ids: {e}")
                return
        broker = self.broker_of.get(ex["server"], 0)
        kind, out = self.cluster.dispatch(frame, broker=broker, client=ex["client"])
        if kind == "send":
            self._compare(i, out)
        elif kind == "held":
            self.held[(ex["client"], req["correlation_id"])] = i
        elif kind == "none":
            if ex.get("response"):
                self._set(i, "differ", diffs=[Difference(i, api, "(response)", "answered", "no answer (acks=0)")])
            else:
                self._set(i, "agree")
        else:
            self._set(i, "differ" if ex.get("response") else "agree",
                      diffs=[Difference(i, api, "(response)", "answered", "the connection closed")]
                      if ex.get("response") else [])

    def _create_listed_topics(self, ex: dict) -> None:
        if ex["api"] != "Metadata" or not ex.get("response"):
            return
        for name, n, _ in _topics_listed(ex["response"]["body"]):
            if name not in self.created and self.cluster.topics.get(name) is None and n <= MAX_PARTITIONS:
                self.cluster.create_topic(name, n)
                self.created.add(name)

    def _compare(self, i: int, frame: bytes) -> None:
        ex = self.exchanges[i]
        req, resp = ex["request"], ex.get("response")
        if resp is None:
            self._set(i, "not compared", "the capture holds no answer to compare with")
            return
        try:
            model = framing.decode_response(frame, req["api"], req["version"])["body"]
        except DecodeError as e:
            self._set(i, "differ", diffs=[Difference(i, req["api"], "(response)", "decodable", f"undecodable: {e}")])
            return
        diffs = [Difference(i, req["api"], p, o, m) for p, o, m in compare(resp["body"], model, self.ids)]
        self._set(i, "differ" if diffs else "agree", diffs=diffs)

    def _set(self, i: int, status: str, reason: str = "", diffs=()) -> None:
        ex = self.exchanges[i]
        self.outcomes[i] = Outcome(i, ex["api"], ex["version"], status, reason, list(diffs))


class Replay:
    """The `replay` part: per exchange agree / differ / not compared, each difference with both values."""

    def __init__(self, exchanges, release: str | None = None):
        self.release = release or releases.NEWEST
        r = Replayer(exchanges, self.release)
        try:
            r.run()
        finally:
            r.log_dir.close(remove=True)
        self.outcomes = [r.outcomes[i] for i in sorted(r.outcomes)]
        self.mapped = r.ids.learned()
        self.model_errors = list(r.cluster.internal_errors)
        mid = [c["client"] for c in getattr(exchanges, "connections", ()) if not c.get("handshake_seen")]
        # what the model did not see: a difference on these connections may come from their unseen start
        self.notes = ([f"the capture starts in the middle of {len(mid)} connection(s) ({', '.join(mid[:4])}): "
                       "the model never saw their earlier requests"] if mid else [])

    def count(self, status: str) -> int:
        """How many exchanges have this status."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def differences(self) -> list[Difference]:
        """Every difference, in exchange order."""
        return [d for o in self.outcomes for d in o.differences]

    def summary(self) -> str:
        """One line: what was replayed into what, and how it came out."""
        ids = ", ".join(f"{n} {k}(s)" for k, n in sorted(self.mapped.items()))
        return (f"replayed {len(self.outcomes)} exchanges into a fresh model playing Kafka {self.release}: "
                f"{self.count('agree')} agree, {self.count('differ')} differ, {self.count('not compared')} "
                f"not compared" + (f"; ids mapped: {ids}" if ids else ""))

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  {d}" for d in self.differences[:MAX_SHOWN]]
        if len(self.differences) > MAX_SHOWN:
            lines.append(f"  ... and {len(self.differences) - MAX_SHOWN} more")
        reasons = sorted({o.reason for o in self.outcomes if o.status == "not compared"})
        lines += [f"  not compared: {r}" for r in reasons]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(f"<tr><td>#{d.exchange}</td><td>{e(d.api)}</td><td><code>{e(d.path)}</code></td>"
                       f"<td>{e(_short(d.observed))}</td><td>{e(_short(d.model))}</td></tr>"
                       for d in self.differences[:MAX_SHOWN])
        table = ("<table><tr><th>exchange</th><th>API</th><th>field</th><th>observed</th><th>model</th></tr>"
                 f"{rows}</table>") if rows else "<p>The model answered every compared request as the broker did.</p>"
        notes = "".join(f"<p><small>{e(n)}</small></p>" for n in self.notes)
        return f"<div class='kv-replay'><h3>Differential replay</h3><p>{e(self.summary())}</p>{table}{notes}</div>"
