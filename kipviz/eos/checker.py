"""An exactly-once checker for share-group read-process-write runs, over a run's events only.

    from kipviz.eos import check_share_eos, ShareEosChecker
    report = check_share_eos(cluster.events, group="sg", input_topic="in", output_topic="out",
                             allowed_at_least_once=True)
    report.ok, report.violations, print(report.summary()), report.to_frame()
    report.by_kind(), report.windows()      # Counter of kinds; Counter of classified windows by KIP case

    checker = ShareEosChecker(group="sg", input_topic="in", output_topic="out")
    for chunk in chunks:               # e.g. the workload driver's on_events hand-offs
        checker.feed(chunk)            # one pass over each chunk; chunks of one stream, in order
    report = checker.report(allowed_at_least_once=True)   # at any time; final at the end of the run

THE READ-PROCESS-WRITE CONVENTION (scenarios, tests and kipviz.workloads follow it): every output
record written to `output_topic` carries the header

    ("kipviz-source", b"{topic}-{partition}@{offset}")     e.g. ("kipviz-source", b"in-0@17")

naming the input record it was produced from -- the same "topic-partition@offset" as the tail of
the share-record StateChanged key "{group}/{topic}-{partition}@{offset}". One processing attempt
writes its output inside one producer transaction (or non-transactionally, one record per attempt);
several different output records of one attempt (fan-out, in the same transaction) count as one
visible output; the SAME record (key, value and headers alike) twice in one attempt is output
appearing twice (duplicate-in-transaction). The header value may be bytes or str; the header key
may be bytes or str.

What exists (ground truth): the data RecordAppended events on `input_topic` (control markers are
not records; records of an ABORTed or still-open input transaction need not be processed), plus
every offset of `input_topic` that appears in a "share-record" StateChanged of `group` (needed
when the input was written straight into the log, without events). `expect="seen"` restricts the
"lost" rule to the offsets the group's share partitions ever touched.

Visibility to read_committed consumers: a non-transactional output record is visible when it is
appended; a transactional one when a COMMIT marker of its producer id ends its transaction on its
output partition (matched by producer id, as PartitionLog.open_txns does: under transaction
version 2 the marker carries the bumped epoch); an ABORT marker makes it invisible for ever; no
marker by the end of the run = invisible. A producer id's records appended after one of its
markers belong to its next transaction (the "attempt" id is (producer id, transaction number)).

The rules, per input record (each violation = {kind, input: (topic, partition, offset) or None,
detail, events: [seq, ...], classification, case}):

  lost                 never reached ACKNOWLEDGED/ARCHIVED by the end of the run (rule 1)
  terminal-twice       reached a terminal state more than once (rule 1)
  duplicate-output     its output became visible in more than one attempt (rule 3)
  duplicate-in-transaction  one output record visible twice inside one attempt (rule 3)
  ack-without-output   ACKNOWLEDGED (accept, or TX_PENDING -> ACKNOWLEDGED by a COMMIT marker)
                       but no output visible (rules 2 and 4; off with require_output=False)
  output-without-ack   output visible but the record never went ACKNOWLEDGED (rules 2 and 4)
  unknown-source       visible output whose header names no known input record
  unattributed-output  visible output without a "kipviz-source" header (input None)

and, when the events hold the transaction log (__transaction_state RecordAppended), the log
against the markers of the input and output partitions, the data partitions (kipviz.eos.txnlog:
marker-missing, marker-mismatch, marker-unexpected; input None, `transaction` naming the
transactional id, producer id, epoch and partition).

Classification: "violation", or -- for an outcome that follows the pattern the KIP documents as
its at-least-once window, and only when the caller allows that case -- "at-least-once window
(KIP-1289 case 1/12)". THE PATTERN (a lost staging), for a visible attempt whose COMMIT marker is
event c: the record was staged (-> TX_PENDING) before c; that staging never resolved by a commit
(no txn-commit-accept/-reject, no txn-abort): its TX_PENDING state vanished (the next move does not
start from TX_PENDING: state lost on a broker crash, case 1) or was reverted by the lock timer
after c (the marker never reached the staging: case 12 -- the KIP's case 12 names a share-state
leader change; a COMMIT marker held back past the lock, corner case 13's mechanism applied to a
commit, has the same root cause and the same outcome and is classified with it) or by some other
cause (case 12 if the cause names a leader change, else case 1). A lock expiry BEFORE c is the KIP-1289 page's
corner case 6 (the transaction outlived the lock; the late marker is filtered): reported as case 6,
classified as a window only when 6 is passed explicitly ("at-least-once window (KIP-1289 case
6)") -- the KIP states no guarantee for case 6.
  * duplicate-output: every pair of consecutive visible attempts must show the pattern for the
    earlier one, then a redelivery (acquire) before the later attempt's output.
  * output-without-ack: every visible attempt shows the pattern (the acknowledgement that
    committed with the output was lost; the record was then archived -- delivery limit, reject --
    or is still in flight).
`case` is filled for every outcome that matches a pattern, even when it stays a "violation" (not
allowed by the caller).
NOT CO-LOCATED: when a MarkerUnreached (kipviz.broker.share_txn, KIP-1289 as
written) says the marker on __share_group_state-N went to a broker that never led the record's
share partition, the lock revert after it is that cause, not case 12: always a "violation", case
None, whatever the caller allows (the detail names both brokers). The KIP's case 12 (the
share-state leader moved after a co-located staging) keeps its window.

`allowed_at_least_once`: False (default; every such outcome is a violation), True (the KIP's
documented cases {1, 12}), or a collection of case ids (ints, or strings like "12").

INCREMENTAL USE AND MEMORY. ShareEosChecker.feed() keeps, per input record, only what the rules
need: the share-record StateChanged events of records still in flight, and tuples of ints for
outputs. A record whose whole story is the plain one -- acquire, (txn-stage,) accept/commit, with
one visible attempt (or reject/txn-commit-reject with none) -- is "settled" into one small tuple as
soon as that is known; if a later event names it again, its history is rebuilt exactly from that
tuple. report() does not change the state: it can be called mid-run (then "lost" and
"ack-without-output" describe the stream so far). check_share_eos(events, ...) is
ShareEosChecker(...).feed(events).report(...); events may be any iterable (a concatenation of
chunks of one stream).

Speed: one pass over the events (per event a class test and, for the events that matter, a dict
lookup and an append); the per-record rules run in report() over the unsettled records only.
benchmarks/share.py measures it (target >= 500k events/s)."""
from __future__ import annotations

import time
from collections import Counter, namedtuple
from dataclasses import dataclass, field

from ..schema.events import MarkerUnreached, RecordAppended, StateChanged
from ..schema.topics import TRANSACTION_STATE
from .txnlog import TXN_KINDS, check_markers

SOURCE_HEADER = "kipviz-source"
_SOURCE_HEADER_B = SOURCE_HEADER.encode()
MACHINE = "share-record"
AVAILABLE, ACQUIRED, TX_PENDING, ACKNOWLEDGED, ARCHIVED = (
    "AVAILABLE", "ACQUIRED", "TX_PENDING", "ACKNOWLEDGED", "ARCHIVED")
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
COMMIT_CAUSES = ("txn-commit-accept", "txn-commit-reject")
VIOLATION = "violation"
AT_LEAST_ONCE = "at-least-once window (KIP-1289 case 1/12)"
DOCUMENTED_CASES = frozenset({1, 12})
# a lost staging whose marker went to a broker that never led the share partition (KIP-1289 as
# written, kipviz.broker.share_txn): no window the KIP documents, always a violation (case None)
NOT_COLOCATED = "not-colocated"
KINDS = ("lost", "terminal-twice", "duplicate-output", "duplicate-in-transaction", "ack-without-output",
         "output-without-ack", "unknown-source", "unattributed-output") + TXN_KINDS

# A rebuilt transition of a settled record (the fields the rules read from a StateChanged).
Transition = namedtuple("Transition", "seq from_state to_state cause")
# settled patterns: the causes of the whole history, and the transitions they stand for
_PATTERNS = {
    ("acquire", "txn-stage", "txn-commit-accept"): ((AVAILABLE, ACQUIRED), (ACQUIRED, TX_PENDING),
                                                    (TX_PENDING, ACKNOWLEDGED)),
    ("acquire", "txn-stage", "txn-commit-reject"): ((AVAILABLE, ACQUIRED), (ACQUIRED, TX_PENDING),
                                                    (TX_PENDING, ARCHIVED)),
    ("acquire", "accept"): ((AVAILABLE, ACQUIRED), (ACQUIRED, ACKNOWLEDGED)),
    ("acquire", "reject"): ((AVAILABLE, ACQUIRED), (ACQUIRED, ARCHIVED)),
}


def _window_label(case: int) -> str:
    return AT_LEAST_ONCE if case in DOCUMENTED_CASES else f"at-least-once window (KIP-1289 case {case})"


def _allowed(spec) -> frozenset:
    if spec is None or spec is False:
        return frozenset()
    if spec is True:
        return DOCUMENTED_CASES
    if isinstance(spec, (int, str)):
        spec = (spec,)
    out = set()
    for x in spec:
        s = str(x).strip().lower().removeprefix("case").strip()
        out.update(int(p) for p in s.replace("/", ",").split(",") if p.strip())
    return frozenset(out)


def parse_source(s) -> tuple[str, int, int] | None:
    """b"in-0@17" / "in-0@17" -> ("in", 0, 17); None when malformed."""
    if isinstance(s, (bytes, bytearray, memoryview)):
        try:
            s = bytes(s).decode()
        except UnicodeDecodeError:
            return None
    if not isinstance(s, str):
        return None
    tp, at, off = s.rpartition("@")
    topic, dash, p = tp.rpartition("-")
    if not at or not dash or not topic:
        return None
    try:
        return topic, int(p), int(off)
    except ValueError:
        return None


def source_header(topic: str, partition: int, offset: int) -> tuple[str, bytes]:
    """The header an output record carries under the convention."""
    return SOURCE_HEADER, f"{topic}-{partition}@{offset}".encode()


def _source_of(record) -> str | None:
    hs = record.get("headers") if isinstance(record, dict) else None
    if not hs:
        return None
    for h in hs:
        k, v = h[0], h[1]
        if k == SOURCE_HEADER or k == _SOURCE_HEADER_B:
            if isinstance(v, (bytes, bytearray)):
                try:
                    return v.decode()
                except UnicodeDecodeError:
                    return None
            return v if isinstance(v, str) else None
    return None


def content_key(record) -> int | None:
    """What makes two output records the same record: key, value and headers (header keys as
    text, values as bytes), so that a copy is told from a fan-out record."""
    if not isinstance(record, dict):
        return None
    hs = tuple((k.decode("utf-8", "replace") if isinstance(k, (bytes, bytearray)) else k, _b(v))
               for k, v in (record.get("headers") or ()))
    return hash((_b(record.get("key")), _b(record.get("value")), hs))      # an int: kept per settled record


def _b(v):
    return v.encode() if isinstance(v, str) else bytes(v) if isinstance(v, (bytearray, memoryview)) else v


def _marker_is_commit(e) -> bool:
    rec = e.record
    t = None
    if isinstance(rec, dict):
        t = rec.get("type", rec.get("marker", rec.get("control_type")))
    if isinstance(t, str):
        return t.upper() == "COMMIT"
    if isinstance(t, int):
        return t == 1
    k = e.key
    if k is not None and len(k) >= 4:                  # control key: version int16, type int16
        return int.from_bytes(k[2:4], "big", signed=True) == 1
    return False


@dataclass
class Report:
    """What a share-group exactly-once check found: the violations (each classified) and the counts."""
    group: str
    input_topic: str
    output_topic: str
    violations: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No violation left unclassified (documented at-least-once windows allowed by the caller
        do not count)."""
        return all(v["classification"] != VIOLATION for v in self.violations)

    def __bool__(self) -> bool:
        return self.ok

    def by_kind(self, classified: bool | None = None) -> Counter:
        """How many violations of each kind (classified=True / False: only the windows / only the rest)."""
        return Counter(v["kind"] for v in self.violations
                       if classified is None or (v["classification"] != VIOLATION) == classified)

    def windows(self) -> Counter:
        """Classified outcomes by KIP case: Counter({1: n, 12: m})."""
        return Counter(v["case"] for v in self.violations if v["classification"] != VIOLATION)

    def summary(self, limit: int = 20) -> str:
        """The report in words: the verdict, the counts, and up to `limit` violations."""
        s = self.stats
        bad = [v for v in self.violations if v["classification"] == VIOLATION]
        head = (f"share EOS check, group {self.group!r}: {self.input_topic} -> {self.output_topic}: "
                f"{'OK' if self.ok else 'FAIL'}")
        lines = [head,
                 f"  {s.get('events', 0)} events, {s.get('inputs', 0)} input records "
                 f"({s.get('terminal', 0)} terminal: {s.get('acknowledged', 0)} ACKNOWLEDGED, "
                 f"{s.get('archived', 0)} ARCHIVED), {s.get('output_records', 0)} output records "
                 f"({s.get('visible_records', 0)} visible, {s.get('aborted_records', 0)} aborted, "
                 f"{s.get('open_records', 0)} in open transactions)",
                 f"  {len(bad)} violation(s), {len(self.violations) - len(bad)} classified as documented "
                 f"at-least-once window(s)"]
        for kind, n in sorted(self.by_kind().items()):
            lines.append(f"    {kind}: {n}")
        for v in self.violations[:limit]:
            inp = "{}-{}@{}".format(*v["input"]) if v["input"] else f"transaction {v['transaction']}" \
                if v.get("transaction") else "-"
            lines.append(f"  [{v['classification']}] {v['kind']} {inp}: {v['detail']} (events {v['events']})")
        if len(self.violations) > limit:
            lines.append(f"  ... {len(self.violations) - limit} more")
        if "seconds" in s:
            lines.append(f"  checked in {s['seconds'] * 1000:.1f} ms ({s.get('events_per_s', 0):,.0f} events/s)")
        return "\n".join(lines)

    def to_frame(self):
        """The violations as a pandas DataFrame, one row each."""
        import pandas as pd
        rows = [{"kind": v["kind"],
                 "topic": v["input"][0] if v["input"] else None,
                 "partition": v["input"][1] if v["input"] else None,
                 "offset": v["input"][2] if v["input"] else None,
                 "classification": v["classification"], "case": v["case"],
                 "transaction": v.get("transaction"),
                 "detail": v["detail"], "events": list(v["events"])} for v in self.violations]
        cols = ["kind", "topic", "partition", "offset", "classification", "case", "transaction", "detail", "events"]
        df = pd.DataFrame(rows, columns=cols)
        for c in ("partition", "offset", "case"):
            df[c] = df[c].astype("Int64")
        return df


class ShareEosChecker:
    """The checker's state over one event stream, fed in chunks (module docstring)."""

    def __init__(self, *, group: str, input_topic: str, output_topic: str, settle: bool = True):
        self.group, self.input_topic, self.output_topic = group, input_topic, output_topic
        self.settle = settle
        self.hist: dict[str, list] = {}           # input "t-p@o" -> its share-record transitions (in flight)
        self.settled: dict[str, tuple] = {}       # input -> (causes, seqs, visible entry or None)
        self.appended: dict[str, int] = {}        # input -> seq of its RecordAppended (unsettled only)
        self.in_pending: dict[tuple, list] = {}   # (partition, pid) -> inputs of an open input transaction
        self.in_aborted: set = set()
        self.in_control: set = set()
        self.out_pending: dict[tuple, list] = {}  # (partition, pid) -> [(source, seq, partition, offset, attempt, content)]
        # source -> [(attempt, seq, marker seq or None, partition, offset, content)]; content: content_key()
        self.visible: dict = {}
        self.txn_log: list = []                   # (tid, pid, epoch, state id, [(topic, p)]) of __transaction_state
        self.markers: list = []                   # (topic, p, offset, pid, epoch, type) of every marker
        self.marker_seq: dict = {}                # (topic, p, offset) -> seq of the marker's RecordAppended
        self.last_marker: dict = {}               # (topic, p, pid) -> (epoch, type) of its last marker; None after data
        self.invisible: dict = {}                 # source -> [(seq, marker seq)] (aborted)
        # source -> [(seq, marker broker, share-partition leader, N)]: a COMMIT/ABORT marker on
        # __share_group_state-N that did not reach the broker holding the record's TX_PENDING
        # because the two partitions were never co-located (a MarkerUnreached)
        self.unreached: dict = {}
        self.txn_no: dict[int, int] = {}
        self.closed: dict[int, bool] = {}
        self.n_events = self.n_out = self.n_vis = self.n_abort = 0
        self.seconds = 0.0

    # ---- settling ---------------------------------------------------------------------------------------
    def _try_settle(self, rid: str, h: list) -> None:
        if len(h) > 3:
            return
        causes = tuple(x.cause for x in h)
        if causes not in _PATTERNS:
            return
        vis = self.visible.get(rid)
        if h[-1].to_state == ACKNOWLEDGED:
            if not vis or len(vis) > 1:         # fan-out or a duplicate: the rules decide
                return
            entry = vis[0]
        else:
            if vis:
                return
            entry = None
        self.settled[rid] = (causes, tuple(x.seq for x in h), entry)
        del self.hist[rid]
        self.visible.pop(rid, None)
        self.appended.pop(rid, None)

    def _unsettle(self, rid: str) -> list:
        causes, seqs, entry = self.settled.pop(rid)
        h = [Transition(s, a, b, cause) for s, (a, b), cause in zip(seqs, _PATTERNS[causes], causes, strict=True)]
        self.hist[rid] = h
        if entry is not None:
            self.visible[rid] = [entry] + self.visible.get(rid, [])
        return h

    def _marker(self, e) -> None:
        t = "COMMIT" if _marker_is_commit(e) else "ABORT"
        k = (e.topic, e.partition, e.producer_id)
        self.markers.append((e.topic, e.partition, e.offset, e.producer_id, e.producer_epoch, t,
                             self.last_marker.get(k) == (e.producer_epoch, t)))
        self.last_marker[k] = (e.producer_epoch, t)
        self.marker_seq[(f"{e.topic}-{e.partition}", e.offset)] = e.seq

    def _unreached(self, e) -> None:
        for u in e.unreached:
            if u.reason != "not-colocated" or u.group != self.group or u.topic != self.input_topic:
                continue
            for o in u.offsets:
                rid = f"{u.topic}-{u.partition}@{o}"
                if rid in self.settled:
                    self._unsettle(rid)
                self.unreached.setdefault(rid, []).append((e.seq, e.broker, u.leader, e.partition))

    def _txn_record(self, rec) -> None:
        if not isinstance(rec, dict) or rec.get("record") != "TransactionLog":
            return
        v = rec.get("value")
        if v is None:                             # a tombstone: the transactional id expired
            return
        parts = [(t["Topic"], p) for t in v.get("TransactionPartitions") or () for p in t["PartitionIds"]]
        self.txn_log.append((rec["key"]["TransactionalId"], v["ProducerId"], v["ProducerEpoch"],
                             v["TransactionStatus"], parts))

    # ---- one pass -----------------------------------------------------------------------------------------
    # size: one loop over the event stream with its lookups bound to locals is the checker's hot path (events/s)
    def feed(self, events) -> "ShareEosChecker":
        """Take the next events of the stream (a list, a Trace/Cluster with .events, any iterable)."""
        events = getattr(events, "events", events)
        t0 = time.perf_counter()
        SC, RA = StateChanged, RecordAppended
        gpref = self.group + "/"
        glen = len(gpref)
        input_topic, output_topic = self.input_topic, self.output_topic
        hist, settled, appended, visible = self.hist, self.settled, self.appended, self.visible
        in_pending, out_pending, closed, txn_no = self.in_pending, self.out_pending, self.closed, self.txn_no
        settle = self.settle
        try_settle = self._try_settle
        n = 0
        for e in events:
            n += 1
            c = e.__class__
            if c is MarkerUnreached:
                self._unreached(e)
                continue
            if c is SC:
                if e.machine != MACHINE:
                    continue
                k = e.key
                if not k.startswith(gpref):
                    continue
                rid = k[glen:]
                h = hist.get(rid)
                if h is None:
                    if rid in settled:
                        self._unsettle(rid).append(e)
                    else:
                        hist[rid] = [e]
                    continue
                h.append(e)
                if settle and (e.to_state == ACKNOWLEDGED or e.to_state == ARCHIVED):
                    try_settle(rid, h)
            elif c is RA:
                t = e.topic
                if e.control:
                    self._marker(e)
                elif e.transactional:
                    self.last_marker[(t, e.partition, e.producer_id)] = None
                elif t == TRANSACTION_STATE:
                    self._txn_record(e.record)
                    continue
                if t == output_topic:
                    pid = e.producer_id
                    if e.control:
                        closed[pid] = True
                        lst = out_pending.pop((e.partition, pid), None)
                        if lst:
                            if _marker_is_commit(e):
                                self.n_vis += len(lst)
                                ms = e.seq
                                for src, seq, p, o, att, ck in lst:
                                    if src in settled:
                                        self._unsettle(src)
                                    v = visible.get(src)
                                    if v is None:
                                        visible[src] = [(att, seq, ms, p, o, ck)]
                                    else:
                                        v.append((att, seq, ms, p, o, ck))
                                    if settle:
                                        h = hist.get(src)
                                        if h is not None and h[-1].to_state == ACKNOWLEDGED:
                                            try_settle(src, h)
                            else:
                                self.n_abort += len(lst)
                                for src, seq, _p, _o, _att, _ck in lst:
                                    self.invisible.setdefault(src, []).append((seq, e.seq))
                        continue
                    self.n_out += 1
                    src = _source_of(e.record)
                    if e.transactional:
                        if closed.get(pid, True):
                            txn_no[pid] = txn_no.get(pid, 0) + 1
                            closed[pid] = False
                        kk = (e.partition, pid)
                        item = (src, e.seq, e.partition, e.offset, (pid, txn_no[pid]), content_key(e.record))
                        lst = out_pending.get(kk)
                        if lst is None:
                            out_pending[kk] = [item]
                        else:
                            lst.append(item)
                    else:
                        self.n_vis += 1
                        if src in settled:
                            self._unsettle(src)
                        item = (("non-transactional", e.seq), e.seq, None, e.partition, e.offset, None)
                        v = visible.get(src)
                        if v is None:
                            visible[src] = [item]
                        else:
                            v.append(item)
                        if settle:
                            h = hist.get(src)
                            if h is not None and h[-1].to_state == ACKNOWLEDGED:
                                try_settle(src, h)
                elif t == input_topic:
                    if e.control:
                        self.in_control.add(f"{t}-{e.partition}@{e.offset}")
                        lst = in_pending.pop((e.partition, e.producer_id), None)
                        if lst and not _marker_is_commit(e):
                            self.in_aborted.update(lst)
                    else:
                        rid = f"{t}-{e.partition}@{e.offset}"
                        if rid in settled:          # (appended after its story ended: nothing to add)
                            continue
                        appended[rid] = e.seq
                        if e.transactional:
                            kk = (e.partition, e.producer_id)
                            lst = in_pending.get(kk)
                            if lst is None:
                                in_pending[kk] = [rid]
                            else:
                                lst.append(rid)
        self.n_events += n
        self.seconds += time.perf_counter() - t0
        return self

    # ---- the rules ----------------------------------------------------------------------------------------
    def _open_and_seen(self) -> tuple[set, dict, set]:
        """Input records in a transaction never ended, output records likewise (by source), and the
        input records the group was seen handing out (share-record states, not control records)."""
        in_open = set()
        for lst in self.in_pending.values():
            in_open.update(lst)
        open_out: dict = {}
        for lst in self.out_pending.values():
            for src, seq, *_ in lst:
                open_out.setdefault(src, []).append(seq)
        ipref = self.input_topic + "-"
        seen_in = set()
        for rid in self.hist:
            if rid.startswith(ipref) and rid not in self.in_control:
                p = parse_source(rid)
                if p is not None and p[0] == self.input_topic:
                    seen_in.add(rid)
        return in_open, open_out, seen_in

    def _judge(self, rid: str, add, must: set, allowed: frozenset, open_out: dict, require_output: bool):
        """The per-input rules for one record; returns its terminal state (None when it never was)."""
        h = self.hist.get(rid, ())
        terms = [x for x in h if x.to_state in TERMINAL]
        acks = [x for x in terms if x.to_state == ACKNOWLEDGED]
        if not terms and rid in must:
            ra = self.appended.get(rid)
            ra_seq = [ra] if ra is not None else []
            if h:
                last = h[-1]
                add("lost", rid, f"never terminal: last state {last.to_state} ({last.cause})", ra_seq + [last.seq])
            else:
                add("lost", rid, "never delivered to the group (no share-record state change)", ra_seq)
        if len(terms) > 1:
            add("terminal-twice", rid,
                "terminal " + str(len(terms)) + " times: "
                + ", ".join(f"{x.from_state}->{x.to_state} ({x.cause})" for x in terms),
                [x.seq for x in terms])
        atts = self._copies(rid, add, h, allowed)
        if acks and not atts and require_output:
            self._ack_without_output(rid, add, acks, open_out)
        if atts and not acks:
            _output_without_ack(add, rid, h, terms, atts, allowed, self.unreached.get(rid, ()))
        return ACKNOWLEDGED if acks else (terms[-1].to_state if terms else None)

    def _copies(self, rid: str, add, h, allowed: frozenset) -> dict:
        """The visible output of one input: duplicates across attempts and within one transaction.
        Returns {attempt: (first seq, marker seq)}."""
        atts: dict = {}
        within: dict = {}
        for att, seq, ms, p, o, ck in self.visible.get(rid, ()):
            if att not in atts:
                atts[att] = (seq, ms)
            if ck is not None:
                within.setdefault((att, ck), []).append((seq, ms, p, o))
        if len(atts) > 1:
            _duplicate(add, rid, h, atts, allowed, self.unreached.get(rid, ()))
        for copies in within.values():
            if len(copies) > 1:
                copies.sort(key=lambda c: (c[2], c[3]))
                names = ", ".join(f"{self.output_topic}-{p}@{o}" for _, _, p, o in copies)
                add("duplicate-in-transaction", rid,
                    f"the same output record visible {len(copies)} times in one transaction: {names}",
                    [x for seq, ms, _, _ in copies for x in (seq, ms) if x is not None])
        return atts

    def _ack_without_output(self, rid: str, add, acks: list, open_out: dict) -> None:
        why = []
        evs = [x.seq for x in acks]
        if rid in self.invisible:
            why.append(f"{len(self.invisible[rid])} output record(s) aborted")
            evs += [y for pair in self.invisible[rid] for y in pair]
        if rid in open_out:
            why.append(f"{len(open_out[rid])} output record(s) in a transaction never ended")
            evs += open_out[rid]
        add("ack-without-output", rid,
            f"ACKNOWLEDGED ({acks[-1].cause}) but no output visible to read_committed"
            + (": " + "; ".join(why) if why else ": no output record at all"), evs)

    def _stray_output(self, add, known) -> None:
        """Visible output that names no input (no header) or an input this run never had."""
        for src, lst in self.visible.items():
            if src is None:
                for _, seq, ms, p, o, _ck in lst:
                    add("unattributed-output", None,
                        f"visible output {self.output_topic}-{p}@{o} has no {SOURCE_HEADER!r} header",
                        [seq] + ([ms] if ms is not None else []))
            elif not known(src):
                evs = [y for _, seq, ms, *_ in lst for y in (seq, ms if ms is not None else seq)]
                add("unknown-source", src if parse_source(src) else None,
                    f"visible output names {src!r}, which is no record of {self.input_topic} known to this run",
                    evs)

    def report(self, *, allowed_at_least_once=False, expect: str = "appended",
               require_output: bool = True) -> Report:
        """Check the events fed so far: every input record settled once with its output (the module
        docstring's rules); a Report."""
        if expect not in ("appended", "seen"):
            raise ValueError("expect must be 'appended' or 'seen'")
        t0 = time.perf_counter()
        allowed = _allowed(allowed_at_least_once)
        input_topic, output_topic = self.input_topic, self.output_topic
        settled, appended, visible = self.settled, self.appended, self.visible
        in_open, open_out, seen_in = self._open_and_seen()
        if expect == "appended":
            must = (set(appended) - self.in_aborted - in_open) | seen_in
        else:
            must = seen_in

        def known(rid) -> bool:
            return rid in appended or rid in seen_in or rid in settled

        considered = must | {s for s in visible if s is not None and known(s)}
        viol: list[dict] = []

        def add(kind, rid, detail, evs, classification=VIOLATION, case=None, transaction=None):
            viol.append({"kind": kind, "input": parse_source(rid) if rid is not None else None, "detail": detail,
                         "events": sorted(set(evs)), "classification": classification, "case": case,
                         "transaction": transaction})

        n_ack = sum(causes[-1] in ("txn-commit-accept", "accept") for causes, _, _ in settled.values())
        n_arch = len(settled) - n_ack
        for rid in considered:
            state = self._judge(rid, add, must, allowed, open_out, require_output)
            if state == ACKNOWLEDGED:
                n_ack += 1
            elif state is not None:
                n_arch += 1
        self._stray_output(add, known)
        if self.txn_log:                 # the transaction log against the markers (kipviz.eos.txnlog)
            # the data partitions' markers (not __share_group_state's: KIP-1289 makes a stale marker
            # there a no-op by epoch, and the kit's scenarios send such late markers on purpose)
            for v in check_markers(self.txn_log, self.markers, (input_topic, output_topic)):
                ms = self.marker_seq.get((v["partition"], v["offset"]))
                add(v["kind"], None, v["detail"], [ms] if ms is not None else [],
                    transaction=f"{v['transaction']} {v['partition']}")
        viol.sort(key=lambda v: (v["input"] is None, v["input"] or ("", 0, 0), KINDS.index(v["kind"]),
                                 v["transaction"] or ""))
        rules_s = time.perf_counter() - t0
        secs = self.seconds + rules_s
        stats = {"events": self.n_events, "inputs": len(considered) + len(settled), "terminal": n_ack + n_arch,
                 "acknowledged": n_ack, "archived": n_arch, "output_records": self.n_out,
                 "visible_records": self.n_vis, "aborted_records": self.n_abort,
                 "open_records": sum(len(v) for v in open_out.values()), "settled": len(settled),
                 "seconds": secs, "pass_seconds": self.seconds, "rules_seconds": rules_s,
                 "events_per_s": self.n_events / secs if secs > 0 else float("inf")}
        return Report(self.group, input_topic, output_topic, viol, stats)


def check_share_eos(events, *, group: str, input_topic: str, output_topic: str,
                    allowed_at_least_once=False, expect: str = "appended",
                    require_output: bool = True) -> Report:
    """Check a run's events (a list of kipviz.schema.events, anything with .events, or any
    iterable of events -- e.g. the chunks of one stream chained) for exactly-once
    read-process-write through share group `group`. See the module docstring."""
    if expect not in ("appended", "seen"):
        raise ValueError("expect must be 'appended' or 'seen'")
    checker = ShareEosChecker(group=group, input_topic=input_topic, output_topic=output_topic)
    return checker.feed(events).report(allowed_at_least_once=allowed_at_least_once, expect=expect,
                                       require_output=require_output)


def _lost_staging(h, commit: int | None, unreached=()):
    """(case, proof seqs, index of the next move, reason) for a visible attempt whose COMMIT
    marker has seq `commit`: was the record's last staging before it lost (module docstring)?
    case None when not (reason says why). NOT_COLOCATED when the lock reverted a staging that a
    marker on __share_group_state-N did not reach because its leader never led the share
    partition (`unreached`: [(note seq, marker broker, share-partition leader, N)])."""
    if commit is None:
        return None, [], -1, "the output was non-transactional"
    si = -1
    for i, x in enumerate(h):
        if x.seq > commit:
            break
        if x.to_state == TX_PENDING:
            si = i
    if si < 0:
        return None, [], -1, "the record was not staged (TX_PENDING) before the commit"
    stage = h[si]
    nxt = h[si + 1] if si + 1 < len(h) else None
    if nxt is None:
        return None, [], -1, "the staging never resolved"
    if nxt.from_state == TX_PENDING:
        if nxt.cause in COMMIT_CAUSES:
            return None, [], -1, f"the staging committed ({nxt.cause})"
        if nxt.cause == "txn-abort":
            return None, [], -1, "the staging aborted while an output of the record committed"
        if nxt.cause.startswith("lock-expired"):
            case = 12 if nxt.seq > commit else 6
            miss = next((u for u in unreached if stage.seq < u[0] < nxt.seq), None)
            if miss is not None:
                return NOT_COLOCATED, [stage.seq, miss[0], nxt.seq], si + 1, _not_colocated(miss)
        else:
            case = 12 if "leader" in nxt.cause else 1
    else:
        case = 1                                    # TX_PENDING vanished: in-memory state lost
    return case, [stage.seq, nxt.seq], si + 1, ""


def _not_colocated(miss) -> str:
    return (f"the COMMIT marker on __share_group_state-{miss[3]} reached broker {miss[1]}, the share partition is led by "
            f"broker {miss[2]}: not co-located, KIP-1289's hook resolves only the share partitions on the broker "
            "that receives the marker -- no at-least-once window the KIP documents")


def _label(cases: list, allowed: frozenset) -> tuple[int | None, str]:
    if NOT_COLOCATED in cases:                    # never a window, whatever the caller allows
        return None, VIOLATION
    case = max(cases, key=lambda c: (c not in allowed, c))     # the least-allowed decides
    return case, (_window_label(case) if all(c in allowed for c in cases) else VIOLATION)


def _evidence(atts: dict) -> tuple[list, list]:
    ordered = sorted(atts.items(), key=lambda kv: kv[1][1] if kv[1][1] is not None else kv[1][0])
    evs = []
    for _, (seq, ms) in ordered:
        evs.append(seq)
        if ms is not None:
            evs.append(ms)
    return ordered, evs


def _duplicate(add, rid, h, atts: dict, allowed: frozenset, unreached=()) -> None:
    """Classify a duplicate-output: every consecutive pair of visible attempts must follow the
    pattern (module docstring) for it to be a window."""
    ordered, evs = _evidence(atts)
    cases, why, nc = [], "", ""
    for (_, (_, ms_a)), (_, (seq_b, _)) in zip(ordered, ordered[1:], strict=False):
        case, proof, ni, why = _lost_staging(h, ms_a, unreached)
        if case == NOT_COLOCATED:
            nc = nc or why
        if case is not None:
            nxt = h[ni]
            re_acq = next((x for x in h[ni:] if x.cause == "acquire" and nxt.seq <= x.seq < seq_b), None)
            if re_acq is None:
                case, why = None, "no redelivery (acquire) between the lost staging and the later output"
            else:
                proof.append(re_acq.seq)
        if case is None:
            cases = []
            break
        cases.append(case)
        evs += proof
    n = len(ordered)
    if cases and nc:
        add("duplicate-output", rid, f"output visible in {n} attempts; earlier acknowledgement lost after its output "
                                     f"committed: {nc}; record redelivered and processed again", evs)
    elif cases:
        case, label = _label(cases, allowed)
        add("duplicate-output", rid,
            f"output visible in {n} attempts; earlier acknowledgement lost after its output committed "
            f"(KIP-1289 case {case} pattern), record redelivered and processed again", evs, label, case)
    else:
        add("duplicate-output", rid, f"output visible in {n} attempts" + (f": {why}" if why else ""), evs)


def _output_without_ack(add, rid, h, terms, atts: dict, allowed: frozenset, unreached=()) -> None:
    state = (f"ended {terms[-1].to_state} ({terms[-1].cause})" if terms
             else f"last state {h[-1].to_state}" if h else "never delivered")
    ordered, evs = _evidence(atts)
    evs += [x.seq for x in terms[-1:]] or [x.seq for x in h[-1:]]
    cases, why, nc = [], "", ""
    for _, (_, ms) in ordered:
        case, proof, _, why = _lost_staging(h, ms, unreached)
        if case == NOT_COLOCATED:
            nc = nc or why
        if case is None:
            cases = []
            break
        cases.append(case)
        evs += proof
    detail = f"output visible ({len(atts)} attempt(s)) but never ACKNOWLEDGED: {state}"
    if cases and nc:
        add("output-without-ack", rid, f"{detail}; its acknowledgement was lost after the output committed: {nc}", evs)
    elif cases:
        case, label = _label(cases, allowed)
        add("output-without-ack", rid, f"{detail}; its acknowledgement was lost after the output committed "
                                       f"(KIP-1289 case {case} pattern)", evs, label, case)
    else:
        add("output-without-ack", rid, detail + (f" ({why})" if why and h else ""), evs)
