"""An exactly-once checker for share-group read-process-write runs, over a run's events only.

    from kipviz.eos import check_share_eos
    report = check_share_eos(cluster.events, group="sg", input_topic="in", output_topic="out",
                             allowed_at_least_once=True)
    report.ok, report.violations, print(report.summary()), report.to_frame()

THE READ-PROCESS-WRITE CONVENTION (scenarios and tests follow it): every output record written to
`output_topic` carries the header

    ("kipviz-source", b"{topic}-{partition}@{offset}")     e.g. ("kipviz-source", b"in-0@17")

naming the input record it was produced from -- the same "topic-partition@offset" as the tail of
the share-record StateChanged key "{group}/{topic}-{partition}@{offset}". One processing attempt
writes its output inside one producer transaction (or non-transactionally, one record per attempt);
several output records of one attempt (fan-out, in the same transaction) count as one visible
output. The header value may be bytes or str; the header key may be bytes or str.

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
  ack-without-output   ACKNOWLEDGED (accept, or TX_PENDING -> ACKNOWLEDGED by a COMMIT marker)
                       but no output visible (rules 2 and 4; off with require_output=False)
  output-without-ack   output visible but the record never went ACKNOWLEDGED (rules 2 and 4)
  unknown-source       visible output whose header names no known input record
  unattributed-output  visible output without a "kipviz-source" header (input None)

Classification: "violation", or -- for a duplicate-output that follows the pattern the KIP
documents as its at-least-once window, and only when the caller allows that case -- "at-least-once
window (KIP-1289 case 1/12)". The pattern, checked for each pair of consecutive visible attempts:
the record was staged (-> TX_PENDING) before the earlier attempt's COMMIT; that staging never
resolved by a commit (no txn-commit-accept/-reject, no txn-abort): its TX_PENDING state vanished
(the next move does not start from TX_PENDING: state lost on a broker crash, case 1) or was
reverted by the lock timer after the COMMIT (the marker never reached the staging, case 12) or by
some other cause (case 12 if the cause names a leader change, else case 1); then the record was
acquired again and processed again. A lock expiry BEFORE the COMMIT is seed 004 corner case 6 (the
transaction outlived the lock; the late marker is filtered): reported as case 6, classified as a
window only when 6 is passed explicitly ("at-least-once window (KIP-1289 case 6)") -- the KIP
states no guarantee for case 6. `case` is filled for every duplicate that matches a pattern, even
when it stays a "violation" (not allowed by the caller).

`allowed_at_least_once`: False (default; every duplicate is a violation), True (the KIP's
documented cases {1, 12}), or a collection of case ids (ints, or strings like "12").

Speed: one pass over the events with dicts (the per-event work is a class test and, for the events
that matter, a dict lookup and an append); the per-record rules run afterwards over the records
only. benchmarks/share_checker.py measures it (target >= 500k events/s)."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from ..broker.events import RecordAppended, StateChanged

SOURCE_HEADER = "kipviz-source"
_SOURCE_HEADER_B = SOURCE_HEADER.encode()
MACHINE = "share-record"
TX_PENDING, ACKNOWLEDGED, ARCHIVED = "TX_PENDING", "ACKNOWLEDGED", "ARCHIVED"
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
COMMIT_CAUSES = ("txn-commit-accept", "txn-commit-reject")
VIOLATION = "violation"
AT_LEAST_ONCE = "at-least-once window (KIP-1289 case 1/12)"
DOCUMENTED_CASES = frozenset({1, 12})
KINDS = ("lost", "terminal-twice", "duplicate-output", "ack-without-output", "output-without-ack",
         "unknown-source", "unattributed-output")


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
        return Counter(v["kind"] for v in self.violations
                       if classified is None or (v["classification"] != VIOLATION) == classified)

    def summary(self, limit: int = 20) -> str:
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
            inp = "-" if v["input"] is None else "{}-{}@{}".format(*v["input"])
            lines.append(f"  [{v['classification']}] {v['kind']} {inp}: {v['detail']} (events {v['events']})")
        if len(self.violations) > limit:
            lines.append(f"  ... {len(self.violations) - limit} more")
        if "seconds" in s:
            lines.append(f"  checked in {s['seconds'] * 1000:.1f} ms ({s.get('events_per_s', 0):,.0f} events/s)")
        return "\n".join(lines)

    def to_frame(self):
        import pandas as pd
        rows = [{"kind": v["kind"],
                 "topic": v["input"][0] if v["input"] else None,
                 "partition": v["input"][1] if v["input"] else None,
                 "offset": v["input"][2] if v["input"] else None,
                 "classification": v["classification"], "case": v["case"],
                 "detail": v["detail"], "events": list(v["events"])} for v in self.violations]
        cols = ["kind", "topic", "partition", "offset", "classification", "case", "detail", "events"]
        df = pd.DataFrame(rows, columns=cols)
        for c in ("partition", "offset", "case"):
            df[c] = df[c].astype("Int64")
        return df


def check_share_eos(events, *, group: str, input_topic: str, output_topic: str,
                    allowed_at_least_once=False, expect: str = "appended",
                    require_output: bool = True) -> Report:
    """Check a run's events (a list of kipviz.broker.events, or anything with .events) for
    exactly-once read-process-write through share group `group`. See the module docstring."""
    if expect not in ("appended", "seen"):
        raise ValueError("expect must be 'appended' or 'seen'")
    allowed = _allowed(allowed_at_least_once)
    events = getattr(events, "events", events)
    t0 = time.perf_counter()

    SC, RA = StateChanged, RecordAppended
    gpref = group + "/"
    glen = len(gpref)
    hist: dict[str, list] = {}            # "topic-p@o" -> the record's share-record StateChanged events
    appended: dict[str, object] = {}      # input "topic-p@o" -> its RecordAppended
    in_pending: dict[tuple, list] = {}    # (partition, pid) -> input ids of an open input transaction
    in_aborted: set = set()
    in_control: set = set()
    out_pending: dict[tuple, list] = {}   # (partition, pid) -> [(source, event, attempt)]
    visible: dict = {}                    # source -> [(attempt, record event, marker event or None)]
    invisible: dict = {}                  # source -> [(attempt, record event, marker event)] (aborted)
    unattributed: list = []
    txn_no: dict[int, int] = {}
    closed: dict[int, bool] = {}
    n_out = n_vis = n_abort = 0
    n = 0
    for e in events:
        n += 1
        c = e.__class__
        if c is SC:
            if e.machine != MACHINE:
                continue
            k = e.key
            if not k.startswith(gpref):
                continue
            rid = k[glen:]
            h = hist.get(rid)
            if h is None:
                hist[rid] = [e]
            else:
                h.append(e)
        elif c is RA:
            t = e.topic
            if t == input_topic:
                if e.control:
                    in_control.add(f"{t}-{e.partition}@{e.offset}")
                    lst = in_pending.pop((e.partition, e.producer_id), None)
                    if lst and not _marker_is_commit(e):
                        in_aborted.update(lst)
                else:
                    rid = f"{t}-{e.partition}@{e.offset}"
                    appended[rid] = e
                    if e.transactional:
                        kk = (e.partition, e.producer_id)
                        lst = in_pending.get(kk)
                        if lst is None:
                            in_pending[kk] = [rid]
                        else:
                            lst.append(rid)
            elif t == output_topic:
                pid = e.producer_id
                if e.control:
                    closed[pid] = True
                    lst = out_pending.pop((e.partition, pid), None)
                    if lst:
                        if _marker_is_commit(e):
                            n_vis += len(lst)
                            for src, re_, att in lst:
                                v = visible.get(src)
                                if v is None:
                                    visible[src] = [(att, re_, e)]
                                else:
                                    v.append((att, re_, e))
                        else:
                            n_abort += len(lst)
                            for src, re_, att in lst:
                                invisible.setdefault(src, []).append((att, re_, e))
                    continue
                n_out += 1
                src = _source_of(e.record)
                if e.transactional:
                    if closed.get(pid, True):
                        txn_no[pid] = txn_no.get(pid, 0) + 1
                        closed[pid] = False
                    kk = (e.partition, pid)
                    item = (src, e, (pid, txn_no[pid]))
                    lst = out_pending.get(kk)
                    if lst is None:
                        out_pending[kk] = [item]
                    else:
                        lst.append(item)
                else:
                    n_vis += 1
                    att = ("non-transactional", e.seq)
                    v = visible.get(src)
                    if v is None:
                        visible[src] = [(att, e, None)]
                    else:
                        v.append((att, e, None))
    t_pass = time.perf_counter()

    # ---- per record ------------------------------------------------------------------------------
    in_open = set()
    for lst in in_pending.values():
        in_open.update(lst)
    open_out: dict = {}
    for lst in out_pending.values():
        for src, re_, att in lst:
            open_out.setdefault(src, []).append(re_)

    seen_in = set()
    ipref = input_topic + "-"
    for rid in hist:
        if rid.startswith(ipref) and rid not in in_control:
            p = parse_source(rid)
            if p is not None and p[0] == input_topic:
                seen_in.add(rid)
    if expect == "appended":
        must = (set(appended) - in_aborted - in_open) | seen_in
    else:
        must = seen_in
    known = set(appended) | seen_in
    considered = must | (set(visible) & known)

    viol: list[dict] = []

    def add(kind, rid, detail, evs, classification=VIOLATION, case=None):
        viol.append({"kind": kind, "input": parse_source(rid) if rid is not None else None, "detail": detail,
                     "events": sorted(set(evs)), "classification": classification, "case": case})

    n_ack = n_arch = 0
    for rid in considered:
        h = hist.get(rid, ())
        terms = [x for x in h if x.to_state in TERMINAL]
        acks = [x for x in terms if x.to_state == ACKNOWLEDGED]
        if acks:
            n_ack += 1
        elif terms:
            n_arch += 1
        ra = appended.get(rid)
        ra_seq = [ra.seq] if ra is not None else []
        if not terms and rid in must:
            if h:
                last = h[-1]
                add("lost", rid, f"never terminal: last state {last.to_state} ({last.cause})",
                    ra_seq + [last.seq])
            else:
                add("lost", rid, "never delivered to the group (no share-record state change)", ra_seq)
        if len(terms) > 1:
            add("terminal-twice", rid,
                "terminal " + str(len(terms)) + " times: "
                + ", ".join(f"{x.from_state}->{x.to_state} ({x.cause})" for x in terms),
                [x.seq for x in terms])
        vis = visible.get(rid)
        atts: dict = {}
        if vis:
            for att, re_, me in vis:
                if att not in atts:
                    atts[att] = (re_, me)
        if len(atts) > 1:
            _duplicate(add, rid, h, atts, allowed)
        if acks and not atts and require_output:
            why = []
            evs = [x.seq for x in acks]
            if rid in invisible:
                why.append(f"{len(invisible[rid])} output record(s) aborted")
                evs += [y for _, re_, me in invisible[rid] for y in (re_.seq, me.seq)]
            if rid in open_out:
                why.append(f"{len(open_out[rid])} output record(s) in a transaction never ended")
                evs += [re_.seq for re_ in open_out[rid]]
            add("ack-without-output", rid,
                f"ACKNOWLEDGED ({acks[-1].cause}) but no output visible to read_committed"
                + (": " + "; ".join(why) if why else ": no output record at all"), evs)
        if atts and not acks:
            state = (f"ended {terms[-1].to_state} ({terms[-1].cause})" if terms
                     else f"last state {h[-1].to_state}" if h else "never delivered")
            evs = [x.seq for x in terms[-1:]] or [x.seq for x in h[-1:]]
            for re_, me in atts.values():
                evs.append(re_.seq)
                if me is not None:
                    evs.append(me.seq)
            add("output-without-ack", rid,
                f"output visible ({len(atts)} attempt(s)) but never ACKNOWLEDGED: {state}", evs)

    for src, lst in visible.items():
        if src is None:
            for att, re_, me in lst:
                unattributed.append((re_, me))
        elif src not in known:
            evs = [y for _, re_, me in lst for y in (re_.seq, me.seq if me is not None else re_.seq)]
            add("unknown-source", src if parse_source(src) else None,
                f"visible output names {src!r}, which is no record of {input_topic} known to this run", evs)
    for re_, me in unattributed:
        add("unattributed-output", None,
            f"visible output {output_topic}-{re_.partition}@{re_.offset} has no {SOURCE_HEADER!r} header",
            [re_.seq] + ([me.seq] if me is not None else []))

    viol.sort(key=lambda v: (v["input"] is None, v["input"] or ("", 0, 0), KINDS.index(v["kind"])))
    t1 = time.perf_counter()
    secs = t1 - t0
    stats = {"events": n, "inputs": len(considered), "terminal": n_ack + n_arch, "acknowledged": n_ack,
             "archived": n_arch, "output_records": n_out, "visible_records": n_vis, "aborted_records": n_abort,
             "open_records": sum(len(v) for v in open_out.values()), "seconds": secs,
             "pass_seconds": t_pass - t0, "events_per_s": n / secs if secs > 0 else float("inf")}
    return Report(group, input_topic, output_topic, viol, stats)


def _duplicate(add, rid, h, atts: dict, allowed: frozenset) -> None:
    """Classify a duplicate-output: every consecutive pair of visible attempts must follow the
    at-least-once window pattern (module docstring) for it to be a window."""
    ordered = sorted(atts.items(), key=lambda kv: (kv[1][1] or kv[1][0]).seq)
    evs = []
    for _, (re_, me) in ordered:
        evs.append(re_.seq)
        if me is not None:
            evs.append(me.seq)
    cases, why = [], ""
    for (_, (re_a, me_a)), (_, (re_b, me_b)) in zip(ordered, ordered[1:]):
        case, proof, why = _window(h, me_a, re_b.seq)
        if case is None:
            cases = []
            break
        cases.append(case)
        evs += proof
    n = len(ordered)
    if cases:
        case = max(cases, key=lambda c: (c not in allowed, c))     # the least-allowed decides
        ok = all(c in allowed for c in cases)
        label = _window_label(case) if ok else VIOLATION
        add("duplicate-output", rid,
            f"output visible in {n} attempts; earlier acknowledgement lost after its output committed "
            f"(KIP-1289 case {case} pattern), record redelivered and processed again", evs, label, case)
    else:
        add("duplicate-output", rid, f"output visible in {n} attempts" + (f": {why}" if why else ""), evs)


def _window(h, commit, next_output: int):
    """(case, proof seqs, reason) for one earlier visible attempt whose COMMIT marker is `commit`
    and the later attempt's first output record at seq `next_output`; case None when the pattern
    does not hold (reason says why)."""
    if commit is None:
        return None, [], "the earlier output was non-transactional"
    c = commit.seq
    si = -1
    for i, x in enumerate(h):
        if x.seq > c:
            break
        if x.to_state == TX_PENDING:
            si = i
    if si < 0:
        return None, [], "the record was not staged (TX_PENDING) before the earlier commit"
    stage = h[si]
    nxt = h[si + 1] if si + 1 < len(h) else None
    if nxt is None:
        return None, [], "the staging never resolved"
    if nxt.from_state == TX_PENDING:
        if nxt.cause in COMMIT_CAUSES:
            return None, [], f"the staging committed ({nxt.cause}) yet the record was processed again"
        if nxt.cause == "txn-abort":
            return None, [], "the staging aborted while an output of the record committed"
        if nxt.cause.startswith("lock-expired"):
            case = 12 if nxt.seq > c else 6
        else:
            case = 12 if "leader" in nxt.cause else 1
    else:
        case = 1                                    # TX_PENDING vanished: in-memory state lost
    # redelivered: acquired again after the staging was lost, before the later output
    re_acq = next((x for x in h[si + 1:] if x.cause == "acquire" and nxt.seq <= x.seq < next_output),
                  None)
    if re_acq is None:
        return None, [], "no redelivery (acquire) between the lost staging and the later output"
    return case, [stage.seq, nxt.seq, re_acq.seq], ""
