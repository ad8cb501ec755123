"""KIP-1289 (PROPOSED) as written: the WriteTxnMarkers hook on __share_group_state-N resolves only
the share partitions led by the broker that receives the marker (kipviz/broker/share_txn.py,
share_marker_routing "page"); "forward-to-leader" and "participants" are the kit's suggestions. One scenario per outcome
(kipviz/scenarios/kip1289_marker.py), the EOS checker's verdict on each, and the option's label."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz import scenarios
from kipviz.broker import Cluster
from kipviz.broker.config import SHARE_MARKER_ROUTINGS
from kipviz.eos import AT_LEAST_ONCE, VIOLATION, check_share_eos
from kipviz.scenarios.kip1289_errors import share_commit_run, share_state_partition
from kipviz.schema import events as ev

NAMES = ["kip1289.marker_colocated", "kip1289.marker_not_colocated", "kip1289.marker_forwarded",
         "kip1289.marker_participants", "kip1289.marker_participants_state_leader_change",
         "kip1289.marker_participants_leader_change"]
KIT = ("forward-to-leader", "participants")


def run(name, seed=0, **settings):
    t = scenarios.run(name, seed=seed, **settings)
    assert t.passed, "\n".join(f"{c.description}: {c.detail}" for c in t.failures())
    return t


def step_notes(t, step):
    """The broker's typed events of one KIP-1289 step (STEPS)."""
    return [e for e in t.events if isinstance(e, STEPS[step])]


STEPS = {"share-ack-staged": ev.ShareAckStaged, "marker-resolve": ev.MarkerResolved,
         "marker-forward": ev.MarkerForwarded, "marker-unreached": ev.MarkerUnreached}


def moves(t, cause=None):
    return [e for e in t.events if e.kind == "StateChanged" and e.machine == "share-record"
            and (cause is None or e.cause == cause)]


def eos(events, allowed=True):
    return check_share_eos(events, group="sg", input_topic="in", output_topic="out", allowed_at_least_once=allowed)


# ---- the option ----------------------------------------------------------------------------------------------
def test_the_page_is_the_default_and_the_suggestion_is_labelled_the_kits():
    assert Cluster().config.share_marker_routing == "page"
    assert SHARE_MARKER_ROUTINGS["page"]["source"] == "KIP-1289"
    for key in KIT:
        assert SHARE_MARKER_ROUTINGS[key]["source"] == "kit"
        assert "not KIP-1289" in SHARE_MARKER_ROUTINGS[key]["label"]


def test_an_unknown_routing_is_one_clear_error():
    with pytest.raises(ValueError, match=r"share_marker_routing 'bogus' is not one of page, forward-to-leader, participants"):
        Cluster(share_marker_routing="bogus")


def test_registered_with_summary_and_findings():
    for name in NAMES:
        sc = scenarios.get(name)
        assert sc.status == "proposed" and sc.kip == "KIP-1289" and len(sc.summary) > 150
        assert sc.findings
    for name in NAMES[:4]:
        assert all("on that broker" in f.kip for f in scenarios.get(name).findings)  # what the KIP says, quoted
    assert scenarios.get("kip1289.marker_forwarded").cluster_settings["share_marker_routing"] == "forward-to-leader"
    for name in NAMES[3:]:
        sc = scenarios.get(name)
        assert sc.cluster_settings["share_marker_routing"] == "participants"
        assert "kit's" in sc.title and any("kit's suggestion" in f.what or "the kit's suggestion" in f.what
                                           for f in sc.findings)
    for name in ("kip1289.marker_colocated", "kip1289.marker_not_colocated"):
        assert "share_marker_routing" not in scenarios.get(name).cluster_settings      # the page, by default
    (f,) = scenarios.get("kip1289.marker_not_colocated").findings
    assert "TX_PENDING" in f.what and "read_committed" in f.who and "commitTransaction() succeed" in f.who


# ---- one outcome each ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 5])
@pytest.mark.parametrize("name", NAMES)
def test_every_check_passes_for_any_seed(name, seed):
    t = run(name, seed)
    assert t.cluster.internal_errors == []


def test_colocated_resolves_on_the_share_partitions_leader():
    t = run("kip1289.marker_colocated")
    (staged,) = step_notes(t, "share-ack-staged")
    (done,) = [n for n in step_notes(t, "marker-resolve") if n.records]
    assert staged.broker == done.broker == done.marker_broker == t.result["share_leader"]
    assert len(moves(t, "txn-commit-accept")) == 4 and t.result["eos"].ok and not t.result["eos"].violations


def test_not_colocated_leaves_the_records_tx_pending_and_says_which_broker_saw_what():
    t = run("kip1289.marker_not_colocated")
    staged = step_notes(t, "share-ack-staged")
    missed = step_notes(t, "marker-unreached")
    assert staged[0].broker == t.result["share_leader"] == 0
    first = missed[0]
    assert first.broker == t.result["state_leader"] == 1 and first.routing == "page"
    (u,) = first.unreached
    assert u == ev.Unreached(group="sg", topic="in", partition=0, offsets=(0, 1, 2, 3), leader=0,
                             reason="not-colocated", staged_state_leader_epoch=u.staged_state_leader_epoch,
                             state_leader_epoch=u.state_leader_epoch)
    assert "led by broker 0, not by broker 1" in missed[0].text
    # no marker ever resolved anything: every staging ended by the lock
    assert not moves(t, "txn-commit-accept") and not step_notes(t, "marker-resolve")
    staged = moves(t, "txn-stage")
    ended = [e for e in moves(t) if e.from_state == "TX_PENDING"]
    assert len(staged) == 5 * 4 and len(ended) == len(staged)
    assert all(e.cause == "lock-expired" and e.to_state == "ACQUIRED" for e in ended)
    assert t.result["deliveries"] == {o: 5 for o in range(4)}
    assert sorted(t.result["output"]) == sorted([f"in-0@{o}" for o in range(4)] * 5)


def test_forwarded_resolves_on_the_share_partitions_leader_after_the_forward():
    t = run("kip1289.marker_forwarded")
    (fwd,) = step_notes(t, "marker-forward")
    (done,) = [n for n in step_notes(t, "marker-resolve") if n.records]
    assert fwd.marker_broker == 1 and fwd.broker == 0 and fwd.suggestion == "kit"
    assert done.broker == 0 and done.forwarded_by == 1 and fwd.seq < done.seq
    assert "kit's suggestion, not KIP-1289" in fwd.text and "kit's suggestion, not KIP-1289" in done.text
    assert not step_notes(t, "marker-unreached")
    assert t.result["eos"].ok and not t.result["eos"].violations


def test_the_same_layout_without_the_option_is_the_not_colocated_outcome():
    """marker_forwarded run with the page's routing: the records stay TX_PENDING (the option is what fixes it)."""
    t = scenarios.run("kip1289.marker_forwarded", share_marker_routing="page")
    assert not t.passed and not moves(t, "txn-commit-accept") and step_notes(t, "marker-unreached")
    assert not t.result["eos"].ok


def _participant_notes(t):
    return ([e for e in t.events if isinstance(e, ev.ShareParticipantsAdded)],
            [e for e in t.events if isinstance(e, ev.ShareMarkerSent)])


def participants_trace():
    sc = scenarios.get("kip1289.marker_participants")
    return scenarios.Trace(sc, 0, Cluster(seed=0, **{**scenarios.EXPLICIT, **sc.cluster_settings}))


def test_participants_registers_the_share_partition_and_marks_it_on_its_leader():
    t = run("kip1289.marker_participants")
    (added,), (sent,) = _participant_notes(t)
    (staged,) = step_notes(t, "share-ack-staged")
    (done,) = [n for n in step_notes(t, "marker-resolve") if n.records]
    tid = str(t.cluster.topics.get("in").topic_id)
    # registered by the share-partition leader, before the staging, in the staging's request
    assert added.share_participants == (("sg", tid, 0),) and added.broker == 0
    assert added.error_code == 0 and added.seq < staged.seq
    assert sent.broker == 0 == t.result["share_leader"] != t.result["state_leader"]
    assert done.broker == 0 and done.routing == "participants" and sent.seq < done.seq
    for e in (added, sent, done):
        assert e.suggestion == "kit" and "kit's suggestion, not KIP-1289" in e.text
    # the page's own marker on __share_group_state-N is still written, and resolves nothing itself
    state = [e for e in t.events if isinstance(e, ev.MarkerSent) and e.topic == "__share_group_state"]
    assert [e.broker for e in state] == [1]
    assert not step_notes(t, "marker-forward") and not step_notes(t, "marker-unreached")
    assert len(moves(t, "txn-commit-accept")) == 4 and t.result["eos"].ok and not t.result["eos"].violations
    # the coordinator forgets the participants with the transaction
    assert "share_participants" not in t.cluster.txns.describe("tx-worker")


def test_participants_are_tracked_while_the_transaction_is_open():
    from kipviz.scenarios.kip1289_errors import setup
    from kipviz.scenarios.kip1289_faults import stage_all
    t = participants_trace()
    sc, pr, records = setup(t)
    stage_all(t, sc, pr, records)
    d = t.cluster.txns.describe("tx-worker")
    assert d["state"] == "Ongoing"
    assert d["share_participants"] == [("sg", str(t.cluster.topics.get("in").topic_id), 0)]
    pr.abort_transaction()                   # ABORT reaches the share partition too: back to ACQUIRED
    assert [e.to_state for e in moves(t, "txn-abort")] == ["ACQUIRED"] * 4
    assert "share_participants" not in t.cluster.txns.describe("tx-worker")


def test_participants_close_case_12_but_not_a_share_leader_change():
    t = run("kip1289.marker_participants_state_leader_change")
    assert t.result["state_leader_now"] != t.result["share_leader"]
    assert t.result["eos"].ok and not t.result["eos"].violations
    # the same run with the page's hook is the KIP's case 12 (the scenario's checks fail)
    page = scenarios.run("kip1289.marker_participants_state_leader_change", share_marker_routing="page")
    assert not page.passed and not moves(page, "txn-commit-accept") and step_notes(page, "marker-unreached")
    t = run("kip1289.marker_participants_leader_change")
    (nothing,) = [n for n in step_notes(t, "marker-resolve") if n.participant
                  and not n.records]
    assert nothing.broker == 1 and "no-op by state" in nothing.text and "corner case 1" in nothing.text
    r = eos(t.events, True)
    assert r.ok and r.windows() == {1: 4}
    assert not eos(t.events, False).ok


def test_a_share_participant_whose_leader_is_down_is_retried_until_it_is_back():
    from kipviz.scenarios.kip1289_errors import place_share_state, setup
    from kipviz.scenarios.kip1289_faults import stage_all
    t = participants_trace()
    sc, pr, records = setup(t)
    place_share_state(t, False)
    stage_all(t, sc, pr, records)
    c = t.cluster
    c.crash_broker(0)                        # in-0's leader: its TX_PENDING is gone (case 1)
    pr.commit_transaction()
    assert c.txns.state_of("tx-worker") == "PrepareCommit"       # the share participant's marker waits
    c.restart_broker(0)
    c.advance(c.txns.markers.retry_backoff_ms)
    assert c.txns.state_of("tx-worker") == "CompleteCommit"
    (_, sent) = _participant_notes(t)
    assert [e.broker for e in sent] == [0] and not moves(t, "txn-commit-accept")


# ---- the exactly-once checker --------------------------------------------------------------------------------
def test_checker_reports_the_not_colocated_duplicates_as_violations_not_a_window():
    t = run("kip1289.marker_not_colocated")
    for allowed in (False, True, {1, 6, 12}):
        r = eos(t.events, allowed)
        dups = [v for v in r.violations if v["kind"] == "duplicate-output"]
        assert not r.ok and len(dups) == 4 and r.windows() == {}
        assert all(v["classification"] == VIOLATION and v["case"] is None for v in r.violations)
        assert all("reached broker 1, the share partition is led by broker 0" in v["detail"] for v in dups)
    # the evidence names the note that says the marker did not reach the staging
    (first,) = [v for v in r.violations if v["kind"] == "duplicate-output" and v["input"] == ("in", 0, 0)]
    missed = {n.seq for n in step_notes(t, "marker-unreached")}
    assert missed & set(first["events"])


def test_without_the_routing_notes_the_same_run_would_look_like_case_12():
    """The verdict comes from the broker's note, not from the record moves alone: drop the notes and
    the lost stagings match the KIP's documented case-12 pattern (the checker is not vacuous)."""
    t = run("kip1289.marker_not_colocated")
    blind = [e for e in t.events if not isinstance(e, ev.MarkerUnreached)]
    r = eos(blind, True)
    dups = [v for v in r.violations if v["kind"] == "duplicate-output"]
    assert dups and all(v["classification"] == AT_LEAST_ONCE and v["case"] == 12 for v in dups)


def test_case_12_stays_the_kips_window():
    t = run("kip1289.case12_leader_change_share_state")
    (missed,) = step_notes(t, "marker-unreached")
    assert missed.unreached[0].reason == "leader-change" and "corner case 12" in missed.text
    r = eos(t.events, True)
    assert r.ok and r.windows() == {12: 4}


def test_the_unreached_note_is_ignored_for_other_groups():
    t = run("kip1289.marker_not_colocated")
    other = [dataclasses.replace(e, unreached=tuple(u._replace(group="other") for u in e.unreached))
             if isinstance(e, ev.MarkerUnreached) else e for e in t.events]
    r = eos(other, True)
    assert {v["case"] for v in r.violations if v["kind"] == "duplicate-output"} == {12}


# ---- any layout ------------------------------------------------------------------------------------------------
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), brokers=st.integers(1, 3), routing=st.sampled_from(sorted(SHARE_MARKER_ROUTINGS)))
def test_a_commit_resolves_the_staging_iff_colocated_forwarded_or_participants(seed, brokers, routing):
    """Wherever the hash puts __share_group_state-N: the plain committed loop resolves its staging
    exactly when the state partition's leader leads in-0 too, or one of the kit's suggestions is on
    (forwarding, share partitions as participants); the resolution is always made on in-0's leader."""
    t = share_commit_run(seed, colocate=False, brokers=brokers, share_marker_routing=routing)
    c = t.cluster
    share_leader = c.topics.partition("in", 0).leader
    state_leader = c.topics.partition(*share_state_partition(t)).leader
    works = share_leader == state_leader or routing in KIT
    assert t.passed == works, [f.description for f in t.failures()]
    done = [n for n in step_notes(t, "marker-resolve") if n.records]
    assert [n.broker for n in done] == ([share_leader] if works else [])
    assert all(bool(n.participant) == (routing == "participants") for n in done)
    assert bool(step_notes(t, "marker-unreached")) == (not works)


# ---- the flow picture ------------------------------------------------------------------------------------------
def test_participants_flow_draws_the_marker_to_the_share_partitions_leader():
    from kipviz.draw.flows import regular_vs_share_flow
    from kipviz.scenarios.flows import flow_runs
    from tests.test_flows import NS, column, groups, lane_of, lanes, text_of
    f = regular_vs_share_flow(*flow_runs(share="kip1289.marker_participants"))
    col = column(f.svg, "share")
    b0 = next(n for n in lanes(col) if n.startswith("broker 0"))
    b1 = next(n for n in lanes(col) if n.startswith("broker 1"))
    arrows = [g for g in groups(col, "kv-internal") if text_of(g).startswith("WriteTxnMarkers COMMIT")]
    (share,) = [g for g in arrows if "kit's suggestion" in text_of(g)]
    (state,) = [g for g in arrows if "__share_group_state-" in text_of(g)]
    assert "in-0 (share group sg)" in text_of(share) and lane_of(col, share) == b0
    assert lane_of(col, state) == b1 and float(share.find(NS + "line").get("x2")) != float(
        state.find(NS + "line").get("x2"))
    done = [g for g in groups(col, "kv-state") if "TX_PENDING → ACKNOWLEDGED" in text_of(g)]
    assert len(done) == 4 and {lane_of(col, g) for g in done} == {b0}
    df = f.steps.set_index("step")
    assert "AddPartitionsToTxn (broker-internal) share partition sg/in-0 · kit's suggestion" in df.loc[3, "share"]
    assert "WriteTxnMarkers COMMIT → broker 0: in-0 (share group sg) · kit's suggestion" in df.loc[6, "share"]
    assert "broker 0, its leader, resolved 4 TX_PENDING record(s)" in df.loc[7, "share"]


# ---- the random-fault workload ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind, page_case", [("share-state-leader-change", 12), ("marker-never-arrives", 12),
                                              ("broker-crash", 1)])
def test_workload_with_participants_keeps_only_case_1(kind, page_case):
    """The same fault on the same seed: the page's hook loses stagings as case `page_case`; with the
    kit's participants a share-state leader change or a held share-state marker loses nothing, a
    crash of the share-partition leader is still case 1 (TX_PENDING lives in its memory)."""
    from kipviz.workloads.share_eos import run_share_eos
    got = {}
    for routing in ("page", "participants"):
        r = run_share_eos(records=120, consumers=2, partitions=2, seed=3, faults=[(3, kind)], batch=10,
                          cluster_settings={"share_marker_routing": routing})
        rep = r.check()
        assert rep.ok and r.cluster.internal_errors == []
        got[routing] = set(rep.windows())
    assert got["page"] == {page_case}
    assert got["participants"] == ({1} if page_case == 1 else set())


def test_the_kit_label_check_can_fail():
    # the checks "labelled the kit's suggestion" read the run's routing and the sentence: a run on
    # the page's routing, or an event told without the label, fails them
    from kipviz.scenarios.kip1289_marker import _told_as_kit
    trace = scenarios.run("kip1289.marker_forwarded")
    fwd = next(e for e in trace.cluster.events if isinstance(e, ev.MarkerForwarded))
    assert _told_as_kit(trace, fwd, "forward-to-leader")
    assert not _told_as_kit(trace, fwd, "participants")
    assert not _told_as_kit(trace, dataclasses.replace(fwd, routing="page"), "forward-to-leader")
    page = scenarios.run("kip1289.marker_not_colocated")
    assert not _told_as_kit(page, fwd, "forward-to-leader")
