"""Random schedules of KIP-1289 (proposed) corner-case faults over small share-group
read-process-write workloads (kipviz.workloads.run_share_eos), checked by kipviz.eos.

* the property: whatever the schedule of the faults the KIP promises exactly-once for
  (workloads.DEFAULT_KINDS), the run completes and the only outcomes the checker reports are the
  KIP's documented at-least-once windows (cases 1 and 12), classified as such;
* the KIP's own case 6 (a lock that expires while TX_PENDING, then a commit) yields duplicates the
  checker names case 6 -- not a documented window (see the workload docstring);
* negative controls: a deliberately broken model (ABORT markers commit staged acknowledgements)
  and tampered event streams are caught;
* the driver: each fault kind does what it says, runs are reproducible, events can be handed off
  in chunks and checked incrementally.

Each run takes a few ms of CPU (a handful of records, 1-3 workers); hypothesis is derandomized with
no example database so CI sees the same schedules every time."""
from __future__ import annotations

import dataclasses
from collections import Counter
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import event as _event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from kipviz.broker.share_partition import SharePartition
from kipviz.eos import SOURCE_HEADER, VIOLATION, ShareEosChecker, check_share_eos
from kipviz.schema import events as ev
from kipviz.schema.events import BrokerCrashed, BrokerRestarted, ClientError, RecordAppended, StateChanged
from kipviz.workloads import DEFAULT_KINDS, FAULT_KINDS, Fault, random_faults, run_share_eos

SETTINGS = dict(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PARAMS = {
    "broker-crash": st.fixed_dictionaries({"broker": st.integers(0, 2),
                                           "point": st.sampled_from(["after-stage", "after-poll", "idle"]),
                                           "down_ms": st.sampled_from([50, 300, 1500, 5000])}),
    "coordinator-unavailable": st.fixed_dictionaries({"count": st.sampled_from([1, 2, 3, 30])}),
    "zombie-producer": st.fixed_dictionaries({"point": st.sampled_from(["after-produce", "after-stage"])}),
    "duplicate-marker": st.fixed_dictionaries({"when": st.sampled_from(["now", "next-stage"])}),
    "lock-expiry": st.fixed_dictionaries({"point": st.sampled_from(["after-poll", "after-produce"])}),
    "lock-expiry-tx-pending": st.just({}),
    "transaction-timeout": st.just({}),
    "rebalance": st.just({}),
    "old-broker": st.fixed_dictionaries({"steps": st.integers(1, 10)}),
    "invalid-ack-type": st.fixed_dictionaries({"type": st.sampled_from([0, 2, 4])}),
    "partial-failure": st.just({}),
    "share-state-leader-change": st.fixed_dictionaries({"to_broker": st.integers(0, 2)}),
    "marker-never-arrives": st.fixed_dictionaries({"outcome": st.sampled_from(["commit", "abort"])}),
    "concurrent-epochs": st.just({}),
}
assert set(PARAMS) == set(FAULT_KINDS)


@st.composite
def workloads(draw, kinds=DEFAULT_KINDS, max_faults=6, consumers=(1, 3)):
    records = draw(st.integers(4, 14))
    consumers = draw(st.integers(*consumers))
    batch = draw(st.integers(2, 5))
    steps = records // batch + consumers + 1
    faults = []
    for _ in range(draw(st.integers(0, max_faults))):
        kind = draw(st.sampled_from(sorted(kinds)))
        params = dict(draw(PARAMS[kind]))
        if draw(st.booleans()):
            params["worker"] = draw(st.integers(0, consumers - 1))
        faults.append(Fault(draw(st.integers(0, steps)), kind, params))
    return dict(records=records, consumers=consumers, batch=batch, partitions=draw(st.integers(1, 3)),
                brokers=draw(st.integers(1, 3)), seed=draw(st.integers(0, 10_000)),
                reject_rate=draw(st.sampled_from([0.0, 0.0, 0.3])), faults=faults)


def event(text: str) -> None:
    """hypothesis statistics (pytest --hypothesis-show-statistics); a no-op outside @given."""
    try:
        _event(text)
    except InvalidArgument:
        pass


def _verdict(report):
    return [(v["kind"], v["input"], v["events"], v["case"]) for v in report.violations]


def _assert_sound_run(r):
    assert r.stats["complete"], (r.stats, r.faults)
    assert r.stats["internal_errors"] == []
    for row in r.faults:
        if row["applied"]:
            event(f"fault fired: {row['kind']}")


# ---- the property ------------------------------------------------------------------------------------------
def _random_schedules_leave_only_the_documented_windows(w):
    r = run_share_eos(**w)
    _assert_sound_run(r)
    documented = r.check(allowed_at_least_once=True)
    assert documented.ok, documented.summary()
    assert set(documented.windows()) <= {1, 12}
    strict = r.check(allowed_at_least_once=False)
    # the same outcomes; only the classification differs -- and only for cases 1 and 12
    assert _verdict(strict) == _verdict(documented)
    for v in strict.violations:
        assert v["kind"] in ("duplicate-output", "output-without-ack") and v["case"] in (1, 12), v
        event(f"window: case {v['case']}")
    # the incremental checker (chunks, settling) agrees with one unsettled pass
    events = r.cluster.events
    ref = ShareEosChecker(group="sg", input_topic="in", output_topic="out", settle=False).feed(events)
    ch = ShareEosChecker(group="sg", input_topic="in", output_topic="out")
    for i in range(0, len(events), 97):
        ch.feed(events[i:i + 97])
    assert _verdict(ch.report(allowed_at_least_once=True)) == _verdict(ref.report(allowed_at_least_once=True)) \
        == _verdict(documented)


# two halves (one worker / several workers) so pytest-xdist runs them side by side
@settings(max_examples=1200, **SETTINGS)
@given(workloads(consumers=(1, 1)))
def test_random_fault_schedules_leave_only_the_documented_windows_one_worker(w):
    _random_schedules_leave_only_the_documented_windows(w)


@settings(max_examples=1500, **SETTINGS)
@given(workloads(consumers=(2, 3)))
def test_random_fault_schedules_leave_only_the_documented_windows_several_workers(w):
    _random_schedules_leave_only_the_documented_windows(w)


@settings(max_examples=120, **SETTINGS)
@given(workloads(kinds=("lock-expiry-tx-pending", "rebalance", "duplicate-marker", "broker-crash"), max_faults=3))
def test_lock_expiry_while_tx_pending_then_commit_is_the_kips_case_6_and_nothing_else(w):
    r = run_share_eos(**w)
    _assert_sound_run(r)
    report = r.check(allowed_at_least_once=True)
    for v in report.violations:
        if v["classification"] == VIOLATION:
            assert v["kind"] in ("duplicate-output", "output-without-ack") and v["case"] == 6, v
            event("case 6 duplicate")
    assert r.check(allowed_at_least_once=[1, 6, 12]).ok


def test_case_6_duplicate_happens_and_is_named():
    r = run_share_eos(records=8, consumers=2, partitions=1, seed=3, batch=4, faults=[Fault(0, "lock-expiry-tx-pending")])
    _assert_sound_run(r)
    report = r.check(allowed_at_least_once=True)
    assert not report.ok
    assert {(v["kind"], v["case"], v["classification"]) for v in report.violations} == {
        ("duplicate-output", 6, VIOLATION)}
    assert len(report.violations) == 4          # the batch of 4 that was staged when the lock ran out
    assert r.check(allowed_at_least_once=[6]).ok


# ---- negative controls ------------------------------------------------------------------------------------
class AbortCommits:
    """A deliberately broken model: a WriteTxnMarkers ABORT resolves TX_PENDING records as if it
    were a COMMIT (staged ACCEPTs become ACKNOWLEDGED although the transaction's output aborted)."""

    def __init__(self):
        self.real = SharePartition.resolve_txn
        self.wrongly_acknowledged = 0

    def __call__(self, sp, producer_id, producer_epoch, commit):
        accepts = {o for o, r in sp.records.items() if r.state == "TX_PENDING" and r.staged_event == "txn-commit-accept"}
        moved = self.real(sp, producer_id, producer_epoch, True)
        if not commit:
            self.wrongly_acknowledged += len(accepts.intersection(moved))
        return moved

    def patch(self):
        me = self
        return mock.patch.object(SharePartition, "resolve_txn", lambda sp, *a: me(sp, *a))


def test_broken_model_is_caught():
    broken = AbortCommits()
    with broken.patch():
        r = run_share_eos(records=8, consumers=2, partitions=2, seed=1, batch=4,
                          faults=[Fault(0, "zombie-producer", {"point": "after-stage", "worker": 0})])
    assert broken.wrongly_acknowledged == 4
    report = r.check(allowed_at_least_once=True)
    assert not report.ok and report.by_kind() == {"ack-without-output": 4}


@settings(max_examples=80, **SETTINGS)
@given(workloads(max_faults=3), st.lists(st.integers(0, 4), min_size=1, max_size=2))
def test_broken_model_is_always_caught_when_it_misbehaves(w, zombies):
    # the random schedule, plus zombies fencing a worker after its staging (the new instance's
    # InitProducerId aborts the open transaction: an ABORT marker reaches TX_PENDING records)
    faults = w["faults"] + [Fault(at, "zombie-producer", {"point": "after-stage"}) for at in zombies]
    broken = AbortCommits()
    with broken.patch():
        r = run_share_eos(**{**w, "faults": faults})
    report = r.check(allowed_at_least_once=True)
    if broken.wrongly_acknowledged:
        event("the broken path fired")
        assert not report.ok
        assert report.by_kind(classified=False)["ack-without-output"] >= 1
    else:
        event("the broken path did not fire")
        assert report.ok


def _tamper(events, how: str, pick: int):
    """A deliberately broken event stream: (events, what must be reported)."""
    out_commits = [i for i, e in enumerate(events) if isinstance(e, RecordAppended) and e.topic == "out"
                   and e.control and e.record.get("type") == "COMMIT"]
    terms = [i for i, e in enumerate(events) if isinstance(e, StateChanged) and e.machine == "share-record"
             and e.to_state in ("ACKNOWLEDGED", "ARCHIVED")]
    outs = [i for i, e in enumerate(events) if isinstance(e, RecordAppended) and e.topic == "out" and not e.control]
    n = len(events)
    if how == "drop-last-commit":
        # the last transaction's COMMIT, with any duplicate of it (a retried marker, corner case 5)
        c = events[out_commits[-1]]
        mine = [i for i, e in enumerate(events) if isinstance(e, RecordAppended) and e.topic == "out"
                and e.partition == c.partition and e.producer_id == c.producer_id]
        last_data = max((i for i in mine if not events[i].control), default=-1)
        gone = {i for i in mine if i > last_data and events[i].control}
        return [e for i, e in enumerate(events) if i not in gone], {"ack-without-output"}
    if how == "drop-terminal":
        i = terms[pick % len(terms)]
        gone = events[i]
        return [e for e in events if e is not gone], {"lost", "output-without-ack"}
    if how == "replay-output":
        # an output of an acknowledged input (one committed attempt is visible): a replay duplicates it
        acked = {e.key.rsplit("/", 1)[1] for e in events if isinstance(e, StateChanged)
                 and e.machine == "share-record" and e.to_state == "ACKNOWLEDGED"}
        outs = [i for i in outs if (src := dict(events[i].record.get("headers") or ()).get(SOURCE_HEADER))
                and src.decode() in acked]
        o = events[outs[pick % len(outs)]]
        copy = dataclasses.replace(o, seq=n, offset=90_000, producer_id=777_777, transactional=False)
        return events + [copy], {"duplicate-output"}
    if how == "extra-terminal":
        t = events[terms[pick % len(terms)]]
        return events + [dataclasses.replace(t, seq=n, from_state="ACQUIRED", cause="accept")], {"terminal-twice"}
    raise AssertionError(how)


@settings(max_examples=60, **SETTINGS)
@given(workloads(max_faults=3), st.sampled_from(["drop-last-commit", "drop-terminal", "replay-output",
                                                  "extra-terminal"]), st.integers(0, 1000))
def test_tampered_streams_of_random_runs_are_caught(w, how, pick):
    r = run_share_eos(**{**w, "reject_rate": 0.0})
    _assert_sound_run(r)
    if how == "drop-last-commit":
        # when the last commit only repeats outputs an earlier commit made visible (a documented
        # at-least-once window), dropping it leaves a stream that is exactly-once: nothing to catch
        assume(not r.check(allowed_at_least_once=True).windows())
    events = list(r.cluster.events)
    tampered, expected = _tamper(events, how, pick)
    report = check_share_eos(tampered, group="sg", input_topic="in", output_topic="out", allowed_at_least_once=True)
    assert not report.ok
    assert set(report.by_kind(classified=False)) & expected, (how, report.summary())


# ---- the driver ---------------------------------------------------------------------------------------------
def _errors(r, needle):
    return sum(n for k, n in r.stats["errors"].items() if needle in k)


def _one(kind, params=None, **kw):
    opts = dict(records=8, consumers=2, partitions=2, seed=2, batch=4)
    opts.update(kw)
    r = run_share_eos(faults=[Fault(0, kind, dict(params or {}))], **opts)
    _assert_sound_run(r)
    row, = r.faults
    assert row["applied"], row
    assert r.check(allowed_at_least_once=True if kind != "lock-expiry-tx-pending" else [6]).ok
    assert any(isinstance(e, ev.FaultInjected) and (e.fault, e.case) == (kind, FAULT_KINDS[kind])
               for e in r.cluster.events)
    return r, row


def test_every_fault_kind_has_its_injector():
    # FaultRunner.apply dispatches on this table: a kind without an injector would only fail when drawn
    from kipviz.workloads.share_faults import FAULTS
    assert set(FAULTS) == set(FAULT_KINDS)
    assert all(callable(f.inject) and f.case == FAULT_KINDS[k] and f.does for k, f in FAULTS.items())


def test_fault_broker_crash_loses_tx_pending_and_restarts():
    r, row = _one("broker-crash", {"broker": 0, "point": "after-stage", "down_ms": 300})
    assert "broker 0 crashed at after-stage, restarts in 300 ms" in row["outcome"]
    faults = [(type(e), e.broker) for e in r.cluster.events if isinstance(e, (BrokerCrashed, BrokerRestarted))]
    assert (BrokerCrashed, 0) in faults and (BrokerRestarted, 0) in faults
    assert any(e.kind == "StateChanged" and e.cause == "state-reloaded" and e.from_state == "TX_PENDING"
               for e in r.cluster.events)
    assert set(r.check(allowed_at_least_once=True).windows()) == {1}


def test_fault_coordinator_unavailable_is_retried_then_exhausts_the_retries():
    r, row = _one("coordinator-unavailable", {"count": 2})
    assert _errors(r, "COORDINATOR") == 0 and "the next 2 share-state registrations fail" in row["outcome"]
    assert sum(1 for e in r.cluster.events if e.kind == "ResponseSent" and e.api == "TxnShareAcknowledge"
               and e.body["ErrorCode"]) == 2
    r2, _ = _one("coordinator-unavailable", {"count": 30})
    assert _errors(r2, "RetriesExhaustedError COORDINATOR_NOT_AVAILABLE") \
        + _errors(r2, "RetriesExhaustedError NOT_COORDINATOR") >= 1


@pytest.mark.parametrize("point", ["after-produce", "after-stage"])
def test_fault_zombie_producer_is_fenced(point):
    r, row = _one("zombie-producer", {"point": point, "worker": 0})
    assert _errors(r, "PRODUCER_FENCED") == 1 and "fenced" in row["outcome"]
    assert r.check(allowed_at_least_once=False).ok


def test_fault_duplicate_marker_is_a_no_op():
    r, row = _one("duplicate-marker", {"when": "now"})
    assert row["outcome"].count(": NONE") == 2
    r2, row2 = _one("duplicate-marker", {"when": "next-stage"}, records=16)
    assert "out-" in row2["outcome"] and "INVALID_PRODUCER_EPOCH" in row2["outcome"]
    for x in (r, r2):
        assert x.check(allowed_at_least_once=False).ok


def test_fault_lock_expiry_before_staging():
    r, row = _one("lock-expiry", {"point": "after-produce"})
    assert _errors(r, "INVALID_RECORD_STATE") >= 1 and r.check(allowed_at_least_once=False).ok


def test_fault_transaction_timeout_aborts_the_abandoned_transaction():
    r, row = _one("transaction-timeout")
    assert r.stats["workers_died"] == 1 and r.stats["workers_restarted"] == 1
    assert any(isinstance(e, ev.TransactionTimedOut) for e in r.cluster.events)
    assert r.check(allowed_at_least_once=False).ok


def test_fault_rebalance_gives_stale_member_epoch():
    r, row = _one("rebalance", {"worker": 1})
    assert _errors(r, "STALE_MEMBER_EPOCH") == 1 and r.check(allowed_at_least_once=False).ok


def test_fault_old_broker_is_unsupported_and_refused_while_tx_pending():
    r, row = _one("old-broker", {"steps": 3})
    assert r.cluster.features.level("share.version") == 2          # restored after 3 steps
    # a producer that probed ApiVersions before the downgrade gets UNSUPPORTED_VERSION on the wire
    # (fatal); a new one probes again and raises at once, no bytes sent, and aborts (case 9)
    assert _errors(r, "FatalError UNSUPPORTED_VERSION") >= 1
    assert _errors(r, "UnsupportedVersionError UNSUPPORTED_VERSION") >= 1 and r.stats["transactions_aborted"] >= 1
    assert any(isinstance(e, ClientError) and e.synchronous and e.bytes_sent == 0 for e in r.cluster.events)
    # after a share-state leader move the staged records stay TX_PENDING until their lock runs out:
    # the downgrade is refused (the KIP's rule), and nothing else happens
    r2 = run_share_eos(records=8, consumers=2, partitions=1, seed=2, batch=4,
                       faults=[Fault(0, "share-state-leader-change", {"worker": 0}), Fault(1, "old-broker")])
    _assert_sound_run(r2)
    assert r2.faults[1] == {**r2.faults[1], "applied": False, "outcome": "downgrade refused: records are TX_PENDING"}
    assert _errors(r2, "UNSUPPORTED_VERSION") == 0


@pytest.mark.parametrize("ack_type", [0, 2, 4])
def test_fault_invalid_ack_type(ack_type):
    r, row = _one("invalid-ack-type", {"type": ack_type})
    assert _errors(r, "INVALID_RECORD_STATE") == 1 and f"type {ack_type}" in row["outcome"]


def test_fault_partial_failure_is_all_or_nothing():
    r, row = _one("partial-failure", {"worker": 0}, partitions=2)
    answers = [e.body for e in r.cluster.events if e.kind == "ResponseSent" and e.api == "TxnShareAcknowledge"]
    codes = Counter(p["ErrorCode"] for a in answers for t in a["Responses"] for p in t["Partitions"])
    assert codes[121] >= 1 and (codes[55] >= 1 or len(answers[0]["Responses"][0]["Partitions"]) == 1)


def test_fault_share_state_leader_change_and_marker_never_arrives():
    r, row = _one("share-state-leader-change", {"to_broker": 1}, brokers=2)
    assert "__share_group_state-" in row["outcome"] and set(r.check(allowed_at_least_once=True).windows()) == {12}
    r2, row2 = _one("marker-never-arrives", {"outcome": "abort"})
    assert "held" in row2["outcome"] and r2.check(allowed_at_least_once=False).ok
    r3, _ = _one("marker-never-arrives", {"outcome": "commit"})
    assert set(r3.check(allowed_at_least_once=True).windows()) == {12}


def test_fault_concurrent_epochs_is_fenced_and_stages_nothing():
    r, row = _one("concurrent-epochs")
    assert row["outcome"].endswith("PRODUCER_FENCED") and r.check(allowed_at_least_once=False).ok


def test_faults_parse_and_validate():
    assert Fault.of((3, "rebalance")) == Fault(3, "rebalance", {})
    assert Fault.of({"at": 1, "kind": "old-broker", "params": {"steps": 2}}).params == {"steps": 2}
    assert Fault(0, "broker-crash", {"point": "idle"}).point is None and Fault(0, "rebalance").case == 8
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault(0, "meteor")
    with pytest.raises(ValueError):
        Fault(-1, "rebalance")
    a = random_faults(9, steps=20, count=8, consumers=3)
    assert a == random_faults(9, steps=20, count=8, consumers=3) and len(a) == 8
    assert all(f.kind in DEFAULT_KINDS and 0 <= f.at < 20 for f in a)
    r = run_share_eos(records=4, consumers=1, seed=0, batch=2, faults=[(500, "rebalance")])
    assert r.faults[0]["applied"] is False and r.faults[0]["outcome"] == "not reached"


def test_runs_are_reproducible():
    w = dict(records=10, consumers=3, partitions=2, seed=7, batch=3,
             faults=random_faults(7, steps=6, count=4, consumers=3))
    a, b = run_share_eos(**w), run_share_eos(**w)

    def sig(r):
        return [(e.kind, e.seq, e.t, getattr(e, "key", None), getattr(e, "cause", None)) for e in r.cluster.events]
    assert sig(a) == sig(b) and a.faults == b.faults


def test_events_handed_off_in_chunks_concatenate_and_check_incrementally():
    w = dict(records=30, consumers=2, partitions=2, seed=5, batch=5,
             faults=[Fault(1, "broker-crash", {"broker": 0}), Fault(3, "share-state-leader-change")])
    whole = run_share_eos(**w)
    chunks = []
    handed = run_share_eos(**w, on_events=chunks.append, events_chunk=150, check=True)
    assert len(chunks) > 3 and handed.cluster.events == [] and handed.cluster.events_taken == len(whole.cluster.events)
    flat = [e for c in chunks for e in c]
    assert [e.seq for e in flat] == list(range(len(flat)))
    assert [(e.kind, e.seq, e.t) for e in flat] == [(e.kind, e.seq, e.t) for e in whole.cluster.events]
    assert handed.stats["transitions"] == whole.stats["transitions"] > 0
    ref = whole.check(allowed_at_least_once=True)
    assert _verdict(handed.report) == _verdict(ref) and handed.report.windows() == ref.windows() != {}
    with pytest.raises(ValueError):
        handed.check()
    kept = run_share_eos(**w, check=True)           # checked on the fly, events kept
    assert _verdict(kept.report) == _verdict(ref) and len(kept.cluster.events) == len(whole.cluster.events)


def test_reject_rate_archives_without_output_and_inputs_load_progressively():
    r = run_share_eos(records=60, consumers=2, partitions=3, seed=1, batch=5, reject_rate=0.3, preload=10,
                      load_batch=7)
    _assert_sound_run(r)
    rep = r.check(allowed_at_least_once=False)
    assert rep.ok and rep.stats["archived"] > 0 and rep.stats["acknowledged"] + rep.stats["archived"] == 60
    produces = [e for e in r.cluster.events if e.kind == "RequestReceived" and e.api == "Produce"
                and e.client == "input-loader"]
    assert len(produces) > 60 // 7
