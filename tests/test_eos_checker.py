"""kipviz.eos: the share-group exactly-once checker. Every violation kind on small synthetic event
streams and on tampered real runs (kipviz.workloads.run_share_eos), the at-least-once
classification of KIP-1289 cases 1 / 12 (and 6 only on request), incremental feeding and settling,
summary() and to_frame()."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz.eos import AT_LEAST_ONCE, VIOLATION, ShareEosChecker, check_share_eos, parse_source, source_header
from kipviz.schema.events import RecordAppended, StateChanged, TopicAutoCreated
from kipviz.workloads import Fault, run_share_eos

G, IN, OUT = "sg", "in", "out"


# ---- a tiny stream builder --------------------------------------------------------------------------------
class Stream:
    def __init__(self):
        self.events: list = []
        self.out_offsets: dict[int, int] = {}

    def _add(self, cls, **kw):
        e = cls(seq=len(self.events), t=len(self.events), **kw)
        self.events.append(e)
        return e

    def said(self, topic="x"):
        # a typed sentence that is about no share record
        return self._add(TopicAutoCreated, topic=topic, api="Metadata")

    def inp(self, off, p=0):
        return self._add(RecordAppended, topic=IN, partition=p, offset=off,
                         record={"kind": "data", "key": b"k", "value": b"v", "headers": []})

    def move(self, off, frm, to, cause, p=0, group=G):
        return self._add(StateChanged, machine="share-record", key=f"{group}/{IN}-{p}@{off}", from_state=frm,
                         to_state=to, cause=cause, status="proposed" if "TX_PENDING" in (frm, to) else "released")

    def out(self, src, pid=7, txn=True, p=0, header=True, value=b"V"):
        o = self.out_offsets.get(p, 0)
        self.out_offsets[p] = o + 1
        hs = [("kipviz-source", src.encode() if isinstance(src, str) else src)] if header else []
        return self._add(RecordAppended, topic=OUT, partition=p, offset=o,
                         record={"kind": "data", "key": b"k", "value": value, "headers": hs},
                         producer_id=pid, producer_epoch=0, transactional=txn)

    def marker(self, pid=7, commit=True, p=0):
        o = self.out_offsets.get(p, 0)
        self.out_offsets[p] = o + 1
        t = "COMMIT" if commit else "ABORT"
        return self._add(RecordAppended, topic=OUT, partition=p, offset=o, record={"type": t},
                         producer_id=pid, producer_epoch=1, transactional=True, control=True)

    def acquire(self, off, p=0):
        return self.move(off, "AVAILABLE", "ACQUIRED", "acquire", p)

    def stage(self, off, p=0):
        return self.move(off, "ACQUIRED", "TX_PENDING", "txn-stage", p)

    def commit_ack(self, off, p=0):
        return self.move(off, "TX_PENDING", "ACKNOWLEDGED", "txn-commit-accept", p)

    def happy(self, off, pid=7, p=0):
        """One input processed exactly once: appended, acquired, output, staged, COMMIT, ACKNOWLEDGED."""
        self.inp(off, p)
        self.acquire(off, p)
        self.out(f"{IN}-{p}@{off}", pid)
        self.stage(off, p)
        self.marker(pid)
        self.commit_ack(off, p)


def check(events, **kw):
    kw.setdefault("allowed_at_least_once", False)
    return check_share_eos(events, group=G, input_topic=IN, output_topic=OUT, **kw)


def only(report, kind=None):
    assert len(report.violations) == 1, report.summary()
    v = report.violations[0]
    if kind is not None:
        assert v["kind"] == kind, report.summary()
    return v


# ---- clean streams ----------------------------------------------------------------------------------------
def test_clean_transactional_and_plain_streams_pass_and_count():
    s = Stream()
    s.happy(0)
    s.happy(1, pid=8)
    s.inp(2)                                        # plain (non-transactional) path: accept + plain output
    s.acquire(2)
    s.out("in-0@2", pid=-1, txn=False)
    s.move(2, "ACQUIRED", "ACKNOWLEDGED", "accept")
    s.inp(3)                                        # rejected in the transaction: ARCHIVED, no output
    s.acquire(3)
    s.stage(3)
    s.marker(pid=9)
    s.move(3, "TX_PENDING", "ARCHIVED", "txn-commit-reject")
    r = check(s.events)
    assert r.ok and r.violations == [] and bool(r)
    st_ = r.stats
    assert (st_["inputs"], st_["terminal"], st_["acknowledged"], st_["archived"]) == (4, 4, 3, 1)
    assert (st_["output_records"], st_["visible_records"], st_["aborted_records"], st_["open_records"]) == (3, 3, 0, 0)
    assert st_["events"] == len(s.events) and st_["settled"] == 4


def test_fan_out_in_one_transaction_counts_as_one_visible_output():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    s.out("in-0@0")
    s.out("in-0@0", p=1, value=b"V2")               # a second, different output record of the same attempt
    s.stage(0)
    s.marker()
    s.marker(p=1)
    s.commit_ack(0)
    assert check(s.events).violations == []


@pytest.mark.parametrize("p2", [0, 1])
def test_the_same_output_record_twice_in_one_transaction_is_a_duplicate(p2):
    """A copy (same key, value and headers) inside one committed transaction -- a retried append,
    a corrupted log -- is output appearing twice, unlike fan-out: duplicate-in-transaction."""
    s = Stream()
    s.inp(0)
    s.acquire(0)
    a = s.out("in-0@0")
    b = s.out("in-0@0", p=p2)
    s.stage(0)
    m = s.marker()
    m2 = s.marker(p=1) if p2 else m
    s.commit_ack(0)
    v = only(check(s.events), "duplicate-in-transaction")
    assert v["input"] == ("in", 0, 0) and v["classification"] == VIOLATION
    assert {a.seq, b.seq, m.seq, m2.seq} <= set(v["events"])
    assert f"out-0@{a.offset}, out-{p2}@{b.offset}" in v["detail"]
    # fed in chunks, the record settled in between: the same verdict
    ch = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT)
    for e in s.events:
        ch.feed([e])
    assert [x["kind"] for x in ch.report().violations] == ["duplicate-in-transaction"]


def _txn_rec(tid, pid, epoch, state, parts=()):
    by: dict = {}
    for t, p in parts:
        by.setdefault(t, []).append(p)
    return {"record": "TransactionLog", "key": {"TransactionalId": tid},
            "value": {"ProducerId": pid, "ProducerEpoch": epoch, "TransactionStatus": state,
                      "TransactionPartitions": [{"Topic": t, "PartitionIds": ps} for t, ps in by.items()]}}


def _logged(s: Stream, tid, pid, epoch, state, parts=()):
    return s._add(RecordAppended, topic="__transaction_state", partition=0, offset=len(s.events),
                  record=_txn_rec(tid, pid, epoch, state, parts))


def _logged_happy(s: Stream, off, pid, epoch, marker=True, commit=True, p=0):
    """happy() with its transaction logged as the coordinator logs it (Ongoing, PrepareX with the
    marker's epoch, the marker, CompleteX)."""
    s.inp(off)
    s.acquire(off)
    _logged(s, "t", pid, epoch - 1, 1, [(OUT, p)])
    s.out(f"{IN}-0@{off}", pid, p=p)
    s.stage(off)
    _logged(s, "t", pid, epoch, 2 if commit else 3, [(OUT, p)])
    m = None
    if marker:
        m = s._add(RecordAppended, topic=OUT, partition=p, offset=s.out_offsets.get(p, 0),
                   record={"type": "COMMIT" if commit else "ABORT"}, producer_id=pid, producer_epoch=epoch,
                   transactional=True, control=True)
        s.out_offsets[p] = s.out_offsets.get(p, 0) + 1
    _logged(s, "t", pid, epoch, 4 if commit else 5)
    if commit:
        s.commit_ack(off)
    else:
        s.move(off, "TX_PENDING", "ACQUIRED", "txn-abort")
    return m


def test_transaction_log_agrees_with_the_markers_on_a_clean_stream():
    s = Stream()
    for i in range(3):
        _logged_happy(s, i, 7, i + 1)
    r = check(s.events)
    assert r.ok and r.violations == [], r.summary()


def test_a_commit_marker_removed_mid_partition_is_marker_missing():
    """The next COMMIT of the producer then commits both transactions' records (each visible once),
    but __transaction_state says the first transaction ended earlier: marker-missing, named."""
    s = Stream()
    _logged_happy(s, 0, 7, 1)
    _logged_happy(s, 1, 7, 2, marker=False)
    _logged_happy(s, 2, 7, 3)
    v = only(check(s.events), "marker-missing")
    assert v["transaction"] == "t (producer 7, epoch 2) out-0" and v["input"] is None
    assert "CompleteCommit" in v["detail"] and v["classification"] == VIOLATION


def test_a_marker_of_the_wrong_type_or_unaccounted_for_is_named():
    s = Stream()
    m = _logged_happy(s, 0, 7, 1, commit=False)
    # the aborted transaction's marker rewritten as COMMIT (its output becomes visible too)
    s.events[s.events.index(m)] = dataclasses.replace(m, record={"type": "COMMIT"})
    r = check(s.events)
    mm = [v for v in r.violations if v["kind"] == "marker-mismatch"]
    assert len(mm) == 1 and mm[0]["transaction"] == "t (producer 7, epoch 1) out-0" and m.seq in mm[0]["events"]
    assert "aborted" in mm[0]["detail"]
    s2 = Stream()
    _logged_happy(s2, 0, 7, 1)
    x = s2.marker(pid=99)                            # a marker no transaction of the log accounts for
    v = only(check(s2.events), "marker-unexpected")
    assert v["transaction"] == "producer 99, epoch 1 out-0" and v["events"] == [x.seq]


def test_real_run_transaction_log_matches_its_markers_and_a_removed_marker_is_found(real):
    ev = list(real.cluster.events)
    assert check(ev, allowed_at_least_once=True).ok
    # a COMMIT in the middle of the partition: the producer's next COMMIT there ends both
    marks = [(j, e) for j, e in enumerate(ev) if isinstance(e, RecordAppended) and e.control and e.topic == OUT
             and e.record.get("type") == "COMMIT"]
    i, m = next((j, e) for j, e in marks if any(j2 > j and e2.partition == e.partition
                                                and e2.producer_id == e.producer_id for j2, e2 in marks))
    r = check(ev[:i] + ev[i + 1:], allowed_at_least_once=True)
    assert not r.ok
    v = [v for v in r.violations if v["kind"] == "marker-missing"]
    assert len(v) == 1 and f"epoch {m.producer_epoch}) out-{m.partition}" in v[0]["transaction"]


def test_header_key_and_value_may_be_bytes_or_str():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    s._add(RecordAppended, topic=OUT, partition=0, offset=0, record={"headers": [(b"kipviz-source", "in-0@0")]},
           producer_id=-1, transactional=False)
    s.move(0, "ACQUIRED", "ACKNOWLEDGED", "accept")
    assert check(s.events).violations == []
    assert parse_source(b"in-0@17") == ("in", 0, 17) and parse_source("a-b-3@4") == ("a-b", 3, 4)
    assert parse_source("nope") is None and parse_source(b"\xff") is None and parse_source(None) is None
    assert source_header("in", 2, 5) == ("kipviz-source", b"in-2@5")


# ---- each violation kind ---------------------------------------------------------------------------------
def test_lost_names_the_append_and_the_last_transition():
    s = Stream()
    ra = s.inp(0)
    acq = s.acquire(0)
    v = only(check(s.events), "lost")
    assert v["input"] == ("in", 0, 0) and v["events"] == [ra.seq, acq.seq]
    assert "last state ACQUIRED (acquire)" in v["detail"] and v["classification"] == VIOLATION


def test_lost_never_delivered_and_expect_seen():
    s = Stream()
    ra = s.inp(0)
    v = only(check(s.events), "lost")
    assert v["events"] == [ra.seq] and "never delivered" in v["detail"]
    assert check(s.events, expect="seen").violations == []      # only what the group touched must end
    with pytest.raises(ValueError):
        check(s.events, expect="bogus")


def test_input_of_an_aborted_or_open_input_transaction_need_not_be_processed():
    s = Stream()
    for off, pid in ((0, 3), (1, 4)):
        s._add(RecordAppended, topic=IN, partition=0, offset=off, record={"kind": "data"}, producer_id=pid,
               transactional=True)
    s._add(RecordAppended, topic=IN, partition=0, offset=2, record={"type": "ABORT"}, producer_id=3,
           transactional=True, control=True)
    assert check(s.events).violations == []          # 0 aborted, 1 still open
    s._add(RecordAppended, topic=IN, partition=0, offset=3, record={"type": "COMMIT"}, producer_id=4,
           transactional=True, control=True)
    v = only(check(s.events), "lost")                # 1 committed: now it must be processed
    assert v["input"] == ("in", 0, 1)


def test_terminal_twice():
    s = Stream()
    s.happy(0)
    again = s.move(0, "ACQUIRED", "ARCHIVED", "reject")
    v = only(check(s.events), "terminal-twice")
    first = next(e for e in s.events if getattr(e, "cause", "") == "txn-commit-accept")
    assert v["events"] == [first.seq, again.seq] and "terminal 2 times" in v["detail"]


def test_duplicate_output_without_a_lost_staging_is_a_violation():
    s = Stream()
    s.happy(0)
    o2 = s.out("in-0@0", pid=8)
    m2 = s.marker(pid=8)
    v = only(check(s.events, allowed_at_least_once=True), "duplicate-output")
    assert v["classification"] == VIOLATION and v["case"] is None
    assert {o2.seq, m2.seq} <= set(v["events"]) and "2 attempts" in v["detail"]
    assert "committed" in v["detail"]                # why: the staging committed, yet processed again


def test_ack_without_output_aborted_or_open_or_none():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    o = s.out("in-0@0")
    s.stage(0)
    m = s.marker(commit=False)                      # output aborted ...
    ack = s.commit_ack(0)                           # ... but the acknowledgement committed
    v = only(check(s.events), "ack-without-output")
    assert v["events"] == [o.seq, m.seq, ack.seq] and "1 output record(s) aborted" in v["detail"]
    assert check(s.events, require_output=False).violations == []
    s2 = Stream()
    s2.inp(0)
    s2.acquire(0)
    o2 = s2.out("in-0@0")                           # never ended
    s2.stage(0)
    ack2 = s2.commit_ack(0)
    r = check(s2.events)
    v2 = only(r, "ack-without-output")
    assert v2["events"] == [o2.seq, ack2.seq] and "never ended" in v2["detail"] and r.stats["open_records"] == 1
    s3 = Stream()
    s3.inp(0)
    s3.acquire(0)
    s3.move(0, "ACQUIRED", "ACKNOWLEDGED", "accept")
    assert "no output record at all" in only(check(s3.events), "ack-without-output")["detail"]


def test_output_without_ack():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    o = s.out("in-0@0")
    s.stage(0)
    m = s.marker()
    rej = s.move(0, "TX_PENDING", "ARCHIVED", "txn-commit-reject")
    v = only(check(s.events, allowed_at_least_once=True), "output-without-ack")
    assert v["classification"] == VIOLATION and set(v["events"]) == {o.seq, m.seq, rej.seq}
    assert "ended ARCHIVED (txn-commit-reject)" in v["detail"]


def test_unknown_source_and_unattributed_output():
    s = Stream()
    s.happy(0)
    o = s.out("in-0@99", pid=-1, txn=False)
    u = s.out(None, pid=-1, txn=False, header=False)
    r = check(s.events)
    kinds = {v["kind"]: v for v in r.violations}
    assert set(kinds) == {"unknown-source", "unattributed-output"}
    assert kinds["unknown-source"]["input"] == ("in", 0, 99) and kinds["unknown-source"]["events"] == [o.seq]
    assert kinds["unattributed-output"]["input"] is None and kinds["unattributed-output"]["events"] == [u.seq]
    assert "no 'kipviz-source' header" in kinds["unattributed-output"]["detail"]
    # unattributed sorts last
    assert r.violations[-1]["kind"] == "unattributed-output"


def test_other_groups_machines_and_topics_are_ignored():
    s = Stream()
    s.happy(0)
    s.move(0, "AVAILABLE", "ACQUIRED", "acquire", group="other")
    s._add(StateChanged, machine="consumer-member", key="sg/in-0@0", from_state="A", to_state="B", cause="x")
    s._add(RecordAppended, topic="elsewhere", partition=0, offset=0, record={"headers": []})
    s.said()
    assert check(s.events).violations == []


# ---- classification of the KIP's at-least-once windows ------------------------------------------------
def _window_stream(revert: str) -> tuple[Stream, dict]:
    """Staged in attempt 1, its output commits, the staging is lost in `revert` way, redelivered,
    processed again and committed (attempt 2)."""
    s = Stream()
    ev = {}
    s.inp(0)
    s.acquire(0)
    s.out("in-0@0", pid=7)
    ev["stage"] = s.stage(0)
    if revert == "crash":                            # case 1: state reloaded before the COMMIT
        ev["lost"] = s.move(0, "TX_PENDING", "AVAILABLE", "state-reloaded")
        ev["commit"] = s.marker(pid=7)
    elif revert == "lock-after":                     # case 12: the marker never reached the staging
        ev["commit"] = s.marker(pid=7)
        ev["lost"] = s.move(0, "TX_PENDING", "ACQUIRED", "lock-expired")
        s.move(0, "ACQUIRED", "AVAILABLE", "lock-expired")
    elif revert == "lock-before":                    # case 6: the transaction outlived the lock
        ev["lost"] = s.move(0, "TX_PENDING", "ACQUIRED", "lock-expired")
        s.move(0, "ACQUIRED", "AVAILABLE", "lock-expired")
        ev["commit"] = s.marker(pid=7)
    ev["reacquire"] = s.acquire(0)
    ev["out2"] = s.out("in-0@0", pid=8)
    s.stage(0)
    s.marker(pid=8)
    s.commit_ack(0)
    return s, ev


@pytest.mark.parametrize("revert, case", [("crash", 1), ("lock-after", 12), ("lock-before", 6)])
def test_duplicate_after_a_lost_staging_is_classified_only_when_allowed(revert, case):
    s, ev = _window_stream(revert)
    strict = only(check(s.events), "duplicate-output")
    assert strict["classification"] == VIOLATION and strict["case"] == case     # case named even so
    assert {ev["stage"].seq, ev["lost"].seq, ev["reacquire"].seq, ev["commit"].seq, ev["out2"].seq} \
        <= set(strict["events"])
    assert f"case {case} pattern" in strict["detail"]
    documented = check(s.events, allowed_at_least_once=True)
    if case in (1, 12):
        assert documented.ok and documented.violations[0]["classification"] == AT_LEAST_ONCE
        assert documented.windows() == {case: 1} and documented.by_kind(classified=True) == {"duplicate-output": 1}
    else:
        assert not documented.ok
        six = check(s.events, allowed_at_least_once=[6])
        assert six.ok and six.violations[0]["classification"] == "at-least-once window (KIP-1289 case 6)"
    assert check(s.events, allowed_at_least_once=f"case {case}").ok
    assert check(s.events, allowed_at_least_once={case, 99}).ok


def test_a_duplicate_without_redelivery_or_from_a_plain_output_is_not_a_window():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    s.out("in-0@0", pid=-1, txn=False)               # non-transactional first output
    s.move(0, "ACQUIRED", "ACKNOWLEDGED", "accept")
    s.out("in-0@0", pid=8)
    s.marker(pid=8)
    v = only(check(s.events, allowed_at_least_once=True), "duplicate-output")
    assert v["classification"] == VIOLATION and "non-transactional" in v["detail"]
    s2 = Stream()                                   # lost staging but the record was never acquired again
    s2.inp(0)
    s2.acquire(0)
    s2.out("in-0@0", pid=7)
    s2.stage(0)
    s2.marker(pid=7)
    s2.move(0, "TX_PENDING", "ACQUIRED", "lock-expired")
    s2.out("in-0@0", pid=8)
    s2.marker(pid=8)
    s2.move(0, "ACQUIRED", "ACKNOWLEDGED", "accept")
    v2 = only(check(s2.events, allowed_at_least_once=True), "duplicate-output")
    assert v2["classification"] == VIOLATION and "no redelivery" in v2["detail"]


def test_output_without_ack_after_a_lost_staging_is_a_window_when_allowed():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    s.out("in-0@0", pid=7)
    stage = s.stage(0)
    s.marker(pid=7)
    lost = s.move(0, "TX_PENDING", "ACQUIRED", "lock-expired")
    s.move(0, "ACQUIRED", "ARCHIVED", "lock-expired-at-limit")     # delivery limit: never re-processed
    v = only(check(s.events, allowed_at_least_once=True), "output-without-ack")
    assert v["classification"] == AT_LEAST_ONCE and v["case"] == 12
    assert {stage.seq, lost.seq} <= set(v["events"]) and "acknowledgement was lost" in v["detail"]
    assert only(check(s.events), "output-without-ack")["classification"] == VIOLATION


# ---- incremental feeding, settling ----------------------------------------------------------------------
def _tuples(report):
    return [(v["kind"], v["input"], v["events"], v["classification"], v["case"]) for v in report.violations]


def test_chunks_equal_one_pass_and_settled_records_are_rebuilt_exactly():
    s, _ = _window_stream("crash")
    s.happy(1, pid=9)
    whole = check(s.events, allowed_at_least_once=True)
    for cut in range(len(s.events) + 1):
        ch = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT)
        ch.feed(s.events[:cut]).feed(iter(s.events[cut:]))
        assert _tuples(ch.report(allowed_at_least_once=True)) == _tuples(whole)
    # a record settled as clean, then named again: rebuilt from its settled form, same verdict
    s2 = Stream()
    s2.happy(0)
    ch = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT).feed(s2.events)
    assert ch.settled and not ch.hist
    s2.out("in-0@0", pid=8)
    s2.marker(pid=8)
    later = s2.move(0, "ACKNOWLEDGED", "ARCHIVED", "bogus")
    ch.feed(s2.events[-3:])
    unsettled = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT, settle=False).feed(s2.events)
    assert _tuples(ch.report()) == _tuples(unsettled.report())
    assert {v["kind"] for v in ch.report().violations} == {"duplicate-output", "terminal-twice"}
    assert later.seq in ch.report().violations[0]["events"] + ch.report().violations[1]["events"]


def test_report_does_not_change_the_state_and_can_be_called_mid_run():
    s = Stream()
    s.inp(0)
    s.acquire(0)
    ch = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT).feed(s.events)
    assert {v["kind"] for v in ch.report().violations} == {"lost"}     # so far
    s.out("in-0@0")
    s.stage(0)
    s.marker()
    s.commit_ack(0)
    ch.feed(s.events[2:])
    assert ch.report().violations == [] and ch.report().ok


# ---- real runs, tampered -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real():
    r = run_share_eos(records=24, consumers=2, partitions=2, seed=4, batch=6)
    assert r.stats["complete"] and r.check(allowed_at_least_once=False).violations == []
    return r


def _renumber(events):
    return [dataclasses.replace(e, seq=i) for i, e in enumerate(events)]


def _out_commit(events):
    """The last COMMIT marker on the output topic that made records visible (no later marker of
    its producer id closes them instead, once it is gone)."""
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if isinstance(e, RecordAppended) and e.topic == OUT and e.control and e.record.get("type") == "COMMIT":
            if any(isinstance(x, RecordAppended) and x.topic == OUT and not x.control and x.producer_id == e.producer_id
                   for x in events[:i]):
                return i, e
    raise AssertionError("no output commit")


def _sources_closed_by(events, idx):
    m = events[idx]
    out = []
    for x in reversed(events[:idx]):
        if isinstance(x, RecordAppended) and x.topic == OUT and x.partition == m.partition \
                and x.producer_id == m.producer_id:
            if x.control:
                break
            out.append(dict(x.record["headers"])["kipviz-source"].decode())
    return sorted(out)


def test_real_run_dropping_an_output_commit_marker_gives_ack_without_output(real):
    ev = list(real.cluster.events)
    i, m = _out_commit(ev)
    srcs = _sources_closed_by(ev, i)
    tampered = ev[:i] + ev[i + 1:]
    r = check(tampered)
    per_record = [v for v in r.violations if v["input"] is not None]
    bad = {f"{v['input'][0]}-{v['input'][1]}@{v['input'][2]}" for v in per_record}
    assert {v["kind"] for v in per_record} == {"ack-without-output"} and bad == set(srcs)
    # and the transaction log names the transaction whose marker is gone
    txn = [v for v in r.violations if v["input"] is None]
    assert [v["kind"] for v in txn] == ["marker-missing"]
    assert txn[0]["transaction"].endswith(f"(producer {m.producer_id}, epoch {m.producer_epoch}) out-{m.partition}")
    for v in per_record:
        src = "{}-{}@{}".format(*v["input"])
        acks = [e.seq for e in tampered if isinstance(e, StateChanged) and e.key == f"{G}/{src}"
                and e.to_state == "ACKNOWLEDGED"]
        outs = [e.seq for e in tampered if isinstance(e, RecordAppended) and e.topic == OUT and not e.control
                and dict(e.record["headers"]).get("kipviz-source") == src.encode()]
        assert set(acks + outs) <= set(v["events"]) and "never ended" in v["detail"]


def test_real_run_replaying_an_output_gives_a_duplicate_naming_both_attempts(real):
    ev = list(real.cluster.events)
    i, m = _out_commit(ev)
    src = _sources_closed_by(ev, i)[0]
    orig = next(e for e in ev[:i] if isinstance(e, RecordAppended) and e.topic == OUT and not e.control
                and dict(e.record["headers"])["kipviz-source"] == src.encode())
    n = len(ev)
    copy = dataclasses.replace(orig, seq=n, offset=10_000, producer_id=4242)
    mark = dataclasses.replace(m, seq=n + 1, offset=10_001, producer_id=4242)
    r = check(ev + [copy, mark], allowed_at_least_once=True)
    assert [(x["kind"], x["events"]) for x in r.violations if x["input"] is None] == [("marker-unexpected", [mark.seq])]
    r.violations = [x for x in r.violations if x["input"] is not None]     # the forged marker: not in the log
    v = only(r, "duplicate-output")
    assert v["input"] == parse_source(src) and {orig.seq, m.seq, copy.seq, mark.seq} <= set(v["events"])
    assert v["classification"] == VIOLATION


def test_real_run_removing_transitions_gives_lost_and_terminal_twice_and_output_without_ack(real):
    ev = list(real.cluster.events)
    term = next(e for e in ev if isinstance(e, StateChanged) and e.machine == "share-record"
                and e.to_state == "ACKNOWLEDGED")
    rid = term.key.split("/", 1)[1]
    # 1. the terminal transition vanishes: the record is never terminal, yet its output is visible
    r = check(_renumber([e for e in ev if e is not term]))
    assert {v["kind"] for v in r.violations} == {"lost", "output-without-ack"}
    assert all(v["input"] == parse_source(rid) for v in r.violations)
    # 2. a second terminal transition
    extra = dataclasses.replace(term, seq=len(ev), from_state="ACQUIRED", cause="accept")
    v = only(check(ev + [extra]), "terminal-twice")
    assert v["events"] == [term.seq, extra.seq]
    # 3. every transition of the record vanishes: never delivered, output from nowhere it knows of
    gone = _renumber([e for e in ev if not (isinstance(e, StateChanged) and e.key == term.key)])
    r3 = check(gone)
    assert {v["kind"] for v in r3.violations} == {"lost", "output-without-ack"}
    lost = next(v for v in r3.violations if v["kind"] == "lost")
    assert "never delivered" in lost["detail"]
    # 4. ACKNOWLEDGED turned into ARCHIVED (reject) while the output is visible
    rej = dataclasses.replace(term, to_state="ARCHIVED", cause="txn-commit-reject")
    v4 = only(check([rej if e is term else e for e in ev]), "output-without-ack")
    assert term.seq in v4["events"]


def test_real_run_foreign_and_headerless_outputs(real):
    ev = list(real.cluster.events)
    n = len(ev)
    foreign = RecordAppended(seq=n, t=0, topic=OUT, partition=0, offset=9_000,
                             record={"headers": [("kipviz-source", b"in-1@5000")]})
    bare = RecordAppended(seq=n + 1, t=0, topic=OUT, partition=0, offset=9_001, record={"headers": []})
    r = check(ev + [foreign, bare])
    assert [(v["kind"], v["events"]) for v in r.violations] == [("unknown-source", [n]), ("unattributed-output", [n + 1])]


def test_real_runs_with_faults_are_classified_as_case_1_and_case_12():
    crash = run_share_eos(records=12, consumers=2, partitions=2, seed=2, batch=4,
                          faults=[Fault(1, "broker-crash", {"broker": 0, "point": "after-stage"})])
    r1 = crash.check(allowed_at_least_once=True)
    assert r1.ok and r1.windows() and set(r1.windows()) == {1}
    assert not crash.check(allowed_at_least_once=False).ok
    reloaded = [e for e in crash.cluster.events if isinstance(e, StateChanged) and e.cause == "state-reloaded"
                and e.from_state == "TX_PENDING"]
    for v in r1.violations:
        assert any(x.seq in v["events"] for x in reloaded)
    move = run_share_eos(records=12, consumers=2, partitions=2, seed=2, batch=4,
                         faults=[Fault(1, "share-state-leader-change")])
    r12 = move.check(allowed_at_least_once=True)
    assert r12.ok and set(r12.windows()) == {12}
    assert all(v["kind"] == "duplicate-output" and v["case"] == 12 for v in r12.violations)


def test_check_accepts_anything_with_events_and_iterables(real):
    a = check(real.cluster)
    b = check(iter(real.cluster.events))
    assert _tuples(a) == _tuples(b) == [] and a.stats["events"] == b.stats["events"] == len(real.cluster.events)


# ---- summary and frame ------------------------------------------------------------------------------------
def test_summary_and_to_frame():
    s, _ = _window_stream("crash")
    s.inp(5)                                        # plus a lost record
    r = check(s.events, allowed_at_least_once=True)
    text = r.summary()
    assert text.splitlines()[0] == "share EOS check, group 'sg': in -> out: FAIL"
    assert "1 violation(s), 1 classified as documented at-least-once window(s)" in text
    assert "duplicate-output: 1" in text and "lost: 1" in text and "[at-least-once window (KIP-1289 case 1/12)]" in text
    assert "events/s" in text
    assert "... 1 more" in r.summary(limit=1)
    df = r.to_frame()
    assert list(df.columns) == ["kind", "topic", "partition", "offset", "classification", "case", "transaction",
                               "detail", "events"]
    assert list(df["kind"]) == ["duplicate-output", "lost"] and list(df["offset"]) == [0, 5]
    assert str(df["case"].dtype) == "Int64" and df["case"].isna().tolist() == [False, True]
    assert check([]).to_frame().empty and check([]).summary().startswith("share EOS check")


# ---- property: chunking and settling never change the verdict ------------------------------------------
@settings(max_examples=40, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_any_split_and_settling_give_the_verdict_of_one_unsettled_pass(data):
    s = Stream()
    ops = data.draw(st.lists(st.sampled_from(["happy", "window", "lost", "dup", "abort", "plain"]),
                             min_size=1, max_size=6))
    for i, op in enumerate(ops):
        if op == "happy":
            s.happy(i, pid=100 + i)
        elif op == "window":
            base = _window_stream(data.draw(st.sampled_from(["crash", "lock-after", "lock-before"])))[0]
            for e in base.events:           # re-key onto offset i, fresh producer ids
                kw = {}
                if isinstance(e, StateChanged):
                    kw["key"] = f"{G}/{IN}-0@{i}"
                elif e.topic == IN:
                    kw["offset"] = i
                else:
                    kw["producer_id"] = e.producer_id * 1000 + i
                    if not e.control:
                        kw["record"] = {"headers": [("kipviz-source", f"in-0@{i}".encode())]}
                s.events.append(dataclasses.replace(e, seq=len(s.events), **kw))
        elif op == "lost":
            s.inp(i)
            s.acquire(i)
        elif op == "dup":
            s.happy(i, pid=100 + i)
            s.out(f"in-0@{i}", pid=500 + i)
            s.marker(pid=500 + i)
        elif op == "abort":
            s.inp(i)
            s.acquire(i)
            s.out(f"in-0@{i}", pid=100 + i)
            s.stage(i)
            s.marker(pid=100 + i, commit=False)
            s.move(i, "TX_PENDING", "ACQUIRED", "txn-abort")
            s.out(f"in-0@{i}", pid=600 + i)
            s.stage(i)
            s.marker(pid=600 + i)
            s.commit_ack(i)
        else:
            s.inp(i)
            s.acquire(i)
            s.out(f"in-0@{i}", pid=-1, txn=False)
            s.move(i, "ACQUIRED", "ACKNOWLEDGED", "accept")
    allowed = data.draw(st.sampled_from([False, True, [6], [1, 6, 12]]))
    ref = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT, settle=False).feed(s.events)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(s.events)), max_size=4)))
    ch = ShareEosChecker(group=G, input_topic=IN, output_topic=OUT)
    prev = 0
    for c in cuts + [len(s.events)]:
        ch.feed(s.events[prev:c])
        prev = c
    assert _tuples(ch.report(allowed_at_least_once=allowed)) == _tuples(ref.report(allowed_at_least_once=allowed))
