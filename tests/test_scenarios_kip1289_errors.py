"""KIP-1289 (proposed) corner cases 2, 3, 8, 9, 10, 11 and 14 as scenarios
(kipviz/scenarios/kip1289_errors.py): for several seeds, the broker's answers (error codes, top
level and per partition), the record states, the markers and what read_committed sees -- read
from the run's events -- and the EOS checker's report, which must hold with no at-least-once
allowance."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz import scenarios
from kipviz.eos import Report
from kipviz.records import share_coordinator_partition
from kipviz.scenarios import kip1289_errors as k
from kipviz.schema import events as ev
from kipviz.schema import registry
from kipviz.schema.error_codes import CODE, name_of

NAMES = ["kip1289.case02_coordinator_unavailable", "kip1289.case03_zombie_producer",
         "kip1289.case08_stale_member_epoch", "kip1289.case09_old_broker", "kip1289.case10_invalid_ack_type",
         "kip1289.case11_partial_multi_partition", "kip1289.case14_concurrent_epochs"]
SEEDS = [0, 1, 7, 2024]
API = "TxnShareAcknowledge"
TXN_SHARE_ACK_KEY = registry.api_key(registry.get("TxnShareAcknowledgeRequest"))
# the broker-internal AddPartitionsToTxn a TxnShareAcknowledge sends (kipviz.broker.transactions)
_REGISTERED = (ev.ShareStatePartitionsAdded, ev.ShareParticipantsAdded)


def run(name, seed=0):
    t = scenarios.run(name, seed=seed)
    assert t.passed, [c for c in t.failures()]
    return t


# ---- reading the events -----------------------------------------------------------------------------------
def exchanges(t, api=API, client=None):
    """[(request event, response event)] of `api`, in order."""
    reqs = {}
    out = []
    for e in t.events:
        if e.kind == "RequestReceived" and e.api == api and (client is None or e.client == client):
            reqs[(e.broker, e.client, e.correlation_id)] = e
        elif e.kind == "ResponseSent" and e.api == api and (client is None or e.client == client):
            out.append((reqs.pop((e.broker, e.client, e.correlation_id)), e))
    return out


def top_errors(t, client=None):
    return [name_of(resp.body["ErrorCode"]) for _, resp in exchanges(t, client=client)]


def partition_errors(resp):
    return {p["PartitionIndex"]: p["ErrorCode"] for tp in resp.body["Responses"] for p in tp["Partitions"]}


def record_moves(t, lo=0, hi=None):
    return [e for e in t.events[lo:hi] if e.kind == "StateChanged" and e.machine == "share-record"]


def walk(t, offset, partition=0):
    key = f"{k.GROUP}/{k.INPUT}-{partition}@{offset}"
    moves = [e for e in record_moves(t) if e.key == key]
    return [moves[0].from_state] + [e.to_state for e in moves] if moves else []


def markers(t):
    """[(topic, partition, COMMIT/ABORT, producer id, epoch)] of the control records, in order."""
    return [(e.topic, e.partition, e.record["type"], e.producer_id, e.producer_epoch)
            for e in t.events if e.kind == "RecordAppended" and e.control]


def state_partition(t, partition=0):
    tid = t.cluster.topics.get(k.INPUT).topic_id
    return share_coordinator_partition(k.GROUP, tid, partition, t.cluster.config.share_state_topic_partitions)


def visible_sources(t):
    return sorted(k.read_committed(t, "test-reader"))


def end_txns(t, client="worker-producer"):
    return [req.body["Committed"] for req, resp in exchanges(t, "EndTxn", client) if resp.body["ErrorCode"] == 0]


# ---- every case -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_each_case_passes_and_is_exactly_once_by_the_eos_checker(name, seed):
    t = run(name, seed)
    report = t.result["eos"]
    assert isinstance(report, Report) and report.ok and report.violations == []
    assert report.by_kind() == {}
    assert t.cluster.internal_errors == []
    # what the checker saw is what a reader sees: every input processed exactly once, or archived
    terminal = {e.key.rsplit("/", 1)[1]: e.to_state for e in record_moves(t)
                if e.to_state in ("ACKNOWLEDGED", "ARCHIVED")}
    seen = visible_sources(t)
    assert len(seen) == len(set(seen))
    assert {s.decode() for s in seen} == {src for src, state in terminal.items() if state == "ACKNOWLEDGED"}
    assert t.cluster.shares.partitions and all(
        not sp.records for sp in t.cluster.shares.partitions.values()
        if sp.group_id == k.GROUP), "every input record terminal: the SPSO moved past all of them"


@pytest.mark.parametrize("name", NAMES)
def test_each_case_is_labelled_proposed_and_its_tx_pending_moves_too(name):
    sc = scenarios.get(name)
    assert sc.kip == "KIP-1289" and sc.status == "proposed"
    t = run(name)
    pending = [e for e in record_moves(t) if "TX_PENDING" in (e.from_state, e.to_state)]
    assert pending and {e.status for e in pending} == {"proposed"}
    assert {e.status for e in record_moves(t) if "TX_PENDING" not in (e.from_state, e.to_state)} == {"released"}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**31 - 1))
def test_any_seed_gives_a_passing_exactly_once_run(name, seed):
    t = scenarios.run(name, seed=seed)
    assert t.passed and t.result["eos"].ok, [c for c in t.failures()]


# ---- case 2 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_case02_registration_errors_stage_nothing_then_abort_and_retry_commit(seed):
    t = run("kip1289.case02_coordinator_unavailable", seed)
    assert top_errors(t) == ["COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                             "NOT_COORDINATOR", "NONE"]
    pairs = exchanges(t)
    # the failed attempts carry no per-partition answers, and no record moved while they were handled
    for req, resp in pairs[:4]:
        assert resp.body["Responses"] == []
        assert record_moves(t, req.seq, resp.seq) == []
    faults = [e for e in t.events if isinstance(e, ev.RegistrationFailed)]
    assert [f.error for f in faults] == ["COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"] * 2
    assert t.result["exception"] == "RetriesExhaustedError" and t.result["producer_state"] == "IN_TRANSACTION"
    # the first transaction ends with ABORT on the output only: __share_group_state-N never joined it
    n = state_partition(t)
    ms = markers(t)
    assert ms[0][:3] == ("out", 0, "ABORT") and ("__share_group_state", n, "ABORT") not in [m[:3] for m in ms]
    assert [m[:3] for m in ms[1:]] == [("out", 0, "COMMIT"), ("__share_group_state", n, "COMMIT")]
    assert end_txns(t) == [False, True]
    # staging only in the retry (after the last failed attempt), one TX_PENDING visit per record
    first_stage = min(e.seq for e in record_moves(t) if e.to_state == "TX_PENDING")
    assert first_stage > pairs[3][1].seq
    for off in range(4):
        assert walk(t, off) == ["AVAILABLE", "ACQUIRED", "TX_PENDING", "ACKNOWLEDGED"]


# ---- case 3 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_case03_zombie_is_fenced_with_producer_fenced_and_b_commits(seed):
    t = run("kip1289.case03_zombie_producer", seed)
    a_pid, a_epoch = t.result["zombie"]
    b_pid, b_epoch = t.result["new"]
    assert a_pid == b_pid and b_epoch > a_epoch
    assert t.result["error"] == "PRODUCER_FENCED" and t.result["zombie_state"] == "FATAL_ERROR"
    zombie = exchanges(t, client="worker-producer")
    assert [name_of(r.body["ErrorCode"]) for _, r in zombie] == ["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"]
    assert zombie[0][0].body["ProducerEpoch"] == a_epoch and zombie[1][0].body["ProducerEpoch"] > b_epoch
    for req, resp in zombie:
        assert resp.body["Responses"] == [] and record_moves(t, req.seq, resp.seq) == []
    assert top_errors(t, "worker-producer-2") == ["NONE"]
    # every staging is B's: TX_PENDING only after B's request, resolved by B's commit marker
    (b_req, b_resp), = exchanges(t, client="worker-producer-2")
    staged = [e for e in record_moves(t) if e.to_state == "TX_PENDING"]
    assert len(staged) == 4 and all(b_req.seq < e.seq < b_resp.seq for e in staged)
    # A's transaction was aborted by B's InitProducerId: ABORT on out-0 at A's pid
    assert ("out", 0, "ABORT", a_pid) in [m[:4] for m in markers(t)]
    # the late markers of A's transaction moved nothing
    for req, resp in exchanges(t, "WriteTxnMarkers", "late-marker"):
        assert record_moves(t, req.seq, resp.seq) == []
    assert visible_sources(t) == [f"in-0@{i}".encode() for i in range(4)]


# ---- case 8 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_case08_stale_member_epoch_then_unknown_member_then_commit(seed):
    t = run("kip1289.case08_stale_member_epoch", seed)
    assert top_errors(t) == ["STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID", "NONE"]
    (stale_req, stale_resp), (gone_req, gone_resp), (ok_req, _) = exchanges(t)
    assert stale_req.body["MemberEpoch"] == t.result["stale_epoch"] < t.result["current_epoch"]
    assert ok_req.body["MemberEpoch"] == t.result["current_epoch"]
    assert gone_req.body["MemberId"] != ok_req.body["MemberId"] == t.result["member_id"]
    for req, resp in ((stale_req, stale_resp), (gone_req, gone_resp)):
        assert record_moves(t, req.seq, resp.seq) == []
    assert t.result["errors"] == ["STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"]
    assert end_txns(t) == [False, False, True]
    for off in range(4):
        assert walk(t, off) == ["AVAILABLE", "ACQUIRED", "TX_PENDING", "ACKNOWLEDGED"]


# ---- case 9 ----------------------------------------------------------------------------------------------------
def key_of(frame: bytes) -> int:
    """The api key of a size-prefixed request frame (int16 after the int32 size)."""
    return int.from_bytes(frame[4:6], "big", signed=True)


def _advertised(resp) -> bool:
    return any(key["ApiKey"] == TXN_SHARE_ACK_KEY for key in resp.body["ApiKeys"])


@pytest.mark.parametrize("seed", SEEDS)
def test_case09_no_txn_share_acknowledge_bytes_until_share_version_2(seed):
    t = run("kip1289.case09_old_broker", seed)
    assert t.result["error"] == "UNSUPPORTED_VERSION" and t.result["exception"] == "UnsupportedVersionError"
    upgrade = next(e for e in t.events if isinstance(e, ev.FeatureLevelChanged) and e.feature == "share.version")
    before = t.events[:upgrade.seq]
    # no request (nor any frame carrying the api key) before the feature is finalized
    assert not [e for e in before if e.kind == "RequestReceived" and e.api == API]
    assert not [e for e in before if e.kind == "RequestReceived" and key_of(e.frame) == TXN_SHARE_ACK_KEY]
    assert [key_of(req.frame) for req, _ in exchanges(t)] == [TXN_SHARE_ACK_KEY]     # (the key is read right)
    sync = [e for e in before if isinstance(e, ev.ClientError) and e.api == API]
    assert len(sync) == 1 and sync[0].synchronous is True and sync[0].bytes_sent == 0
    # the old producer's ApiVersions did not list the RPC; the restarted one's does
    old = [r for _, r in exchanges(t, "ApiVersions", "worker-producer")]
    new = [r for _, r in exchanges(t, "ApiVersions", "worker-producer-2")]
    assert old and not any(_advertised(r) for r in old) and new and all(_advertised(r) for r in new)
    feats = {f["Name"]: f["MaxVersionLevel"] for f in new[0].body["FinalizedFeatures"]}
    assert feats["share.version"] == 2
    assert {f["Name"]: f["MaxVersionLevel"] for f in old[0].body["FinalizedFeatures"]}["share.version"] == 1
    # nothing staged before; the first transaction aborted on the output only
    assert [e for e in record_moves(t, 0, upgrade.seq) if e.to_state == "TX_PENDING"] == []
    assert end_txns(t) == [False]
    assert markers(t)[0][:3] == ("out", 0, "ABORT")
    # after the upgrade: one TxnShareAcknowledge from the restarted producer, committed
    assert [(req.client, name_of(resp.body["ErrorCode"])) for req, resp in exchanges(t)] == [
        ("worker-producer-2", "NONE")]
    assert end_txns(t, "worker-producer-2") == [True]
    assert visible_sources(t) == [f"in-0@{i}".encode() for i in range(4)]


# ---- case 10 ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_case10_release_renew_gap_are_invalid_record_state_and_stage_nothing(seed):
    t = run("kip1289.case10_invalid_ack_type", seed)
    pairs = exchanges(t)
    assert len(pairs) == 4
    bad_types = []
    for req, resp in pairs[:3]:
        (batch,) = [b for tp in req.body["Topics"] for p in tp["Partitions"] for b in p["AcknowledgementBatches"]
                    if set(b["AcknowledgeTypes"]) - {k.ACCEPT}]
        bad_types.append(set(batch["AcknowledgeTypes"]) - {k.ACCEPT})
        assert resp.body["ErrorCode"] == 0
        assert partition_errors(resp) == {0: CODE["INVALID_RECORD_STATE"]}
        assert record_moves(t, req.seq, resp.seq) == []
    assert bad_types == [{k.RELEASE}, {k.RENEW}, {k.GAP}]
    assert t.result["errors"] == {"RELEASE": ["INVALID_RECORD_STATE"], "RENEW": ["INVALID_RECORD_STATE"],
                                  "GAP": ["INVALID_RECORD_STATE"]}
    # __share_group_state-N joined no transaction until the valid request
    joined = [e for e in t.events if isinstance(e, _REGISTERED) and e.via == API]
    assert len(joined) == 1 and joined[0].seq > pairs[2][1].seq
    req, resp = pairs[3]
    assert {t_ for tp in req.body["Topics"] for p in tp["Partitions"] for b in p["AcknowledgementBatches"]
            for t_ in b["AcknowledgeTypes"]} == {k.ACCEPT}
    assert partition_errors(resp) == {0: 0}
    assert end_txns(t) == [False, False, False, True]


# ---- case 11 ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_case11_one_bad_partition_stages_nothing_on_either(seed):
    t = run("kip1289.case11_partial_multi_partition", seed)
    (bad_req, bad_resp), (ok_req, ok_resp) = exchanges(t)
    assert bad_resp.body["ErrorCode"] == 0
    assert partition_errors(bad_resp) == {0: k.OPERATION_NOT_ATTEMPTED, 1: CODE["INVALID_RECORD_STATE"]}
    assert t.result["answers"] == [{"error": "NONE", "partitions": {0: "OPERATION_NOT_ATTEMPTED",
                                                                    1: "INVALID_RECORD_STATE"}}]
    # nothing staged on either partition: no share-record move at all while it was handled
    assert record_moves(t, bad_req.seq, bad_resp.seq) == []
    assert not [e for e in t.events if isinstance(e, _REGISTERED) and e.via == API and e.seq < ok_req.seq]
    # in-1@2 had been rejected (ARCHIVED) on the plain path before; the retry leaves it out
    assert walk(t, 2, partition=1) == ["AVAILABLE", "ACQUIRED", "ARCHIVED"]
    requested = {(p["PartitionIndex"], o) for tp in ok_req.body["Topics"] for p in tp["Partitions"]
                 for b in p["AcknowledgementBatches"] for o in range(b["FirstOffset"], b["LastOffset"] + 1)}
    assert requested == {(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)}
    assert partition_errors(ok_resp) == {0: 0, 1: 0}
    for p, o in requested:
        assert walk(t, o, partition=p) == ["AVAILABLE", "ACQUIRED", "TX_PENDING", "ACKNOWLEDGED"]
    assert visible_sources(t) == sorted(f"in-{p}@{o}".encode() for p, o in requested)
    assert end_txns(t) == [False, True]


def test_case11_with_a_plain_accept_instead_the_eos_checker_reports_ack_without_output(monkeypatch):
    """Why the scenario rejects in-1@2: accepting it outside the transaction acknowledges a record
    whose output never becomes visible; the scenario's own EOS check catches it."""
    monkeypatch.setattr(k, "REJECT", k.ACCEPT)
    t = scenarios.run("kip1289.case11_partial_multi_partition")
    report = t.result["eos"]
    assert not report.ok and not t.passed
    assert [(v["kind"], v["input"]) for v in report.violations] == [("ack-without-output", ("in", 1, 2))]


# ---- case 14 ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_case14_stale_epoch_request_is_fenced_and_late_marker_resolves_nothing(seed):
    t = run("kip1289.case14_concurrent_epochs", seed)
    pid, e = t.result["producer_id"], t.result["stale_epoch"]
    assert t.result["stale_error"] == "PRODUCER_FENCED" and t.result["current_epoch"] == e + 3
    pairs = exchanges(t)
    assert [(r.body["ProducerEpoch"], name_of(s.body["ErrorCode"])) for r, s in pairs] == [
        (e, "NONE"), (e + 1, "NONE"), (e, "PRODUCER_FENCED"), (e + 2, "NONE")]
    stale_req, stale_resp = pairs[2]
    assert record_moves(t, stale_req.seq, stale_resp.seq) == []
    (late_req, late_resp), = exchanges(t, "WriteTxnMarkers", "late-marker")
    assert record_moves(t, late_req.seq, late_resp.seq) == []
    # in-0@1 (staged at E+1) is resolved by transaction 2's own commit marker (epoch E+2), after its EndTxn
    commit2 = [r for r, _ in exchanges(t, "EndTxn")][1]
    (resolved,) = [m for m in record_moves(t) if m.key.endswith("@1") and m.from_state == "TX_PENDING"]
    assert resolved.to_state == "ACKNOWLEDGED" and resolved.seq > commit2.seq > late_resp.seq
    share_markers = [(m[1], m[2], m[4]) for m in markers(t) if m[0] == "__share_group_state" and m[3] == pid]
    n = state_partition(t)
    assert share_markers == [(n, "COMMIT", e + 1), (n, "COMMIT", e + 1), (n, "COMMIT", e + 2), (n, "COMMIT", e + 3)]
    assert end_txns(t) == [True, True, True]
    # the regression: the reader reads the whole topic, the output of all three transactions
    check = next(c for c in t.checks if c.description.startswith("a read_committed reader sees each input"))
    assert check.passed and check.detail == repr([f"in-0@{i}".encode() for i in range(3)])
    assert visible_sources(t) == [f"in-0@{i}".encode() for i in range(3)]


def test_share_commit_run_is_the_fault_free_baseline():
    t = k.share_commit_run(seed=3)
    assert t.passed and t.result["eos"].ok
    assert top_errors(t) == ["NONE"] and end_txns(t) == [True]
    for off in range(4):
        assert walk(t, off) == ["AVAILABLE", "ACQUIRED", "TX_PENDING", "ACKNOWLEDGED"]


def test_listed_errors_are_read_from_the_response_frames():
    """kip1289.listed_errors: each listed error is a TxnShareAcknowledge response frame; decoding
    the frame bytes gives the codes the scenario reports, top-level and per partition."""
    from kipviz import codec
    t = scenarios.run("kip1289.listed_errors")
    assert t.passed, [c.description + " " + c.detail for c in t.failures()]
    frames = [e for e in t.events if e.kind == "ResponseSent" and e.api == k.API]
    assert len(frames) == 3 and all(e.frame for e in frames)
    decoded = [codec.decode_response(e.frame, k.API, e.version)["body"] for e in frames]
    got = [(name_of(b["ErrorCode"]), {p["PartitionIndex"]: name_of(p["ErrorCode"])
                                      for r in b["Responses"] for p in r["Partitions"]}) for b in decoded]
    assert got == [("TRANSACTIONAL_ID_NOT_FOUND", {}), ("NONE", {0: "NOT_LEADER_OR_FOLLOWER"}),
                   ("INVALID_TXN_STATE", {})]
    assert [(a["error"], a["partitions"]) for a in t.result["answers"].values()] == got
    leader = decoded[1]["Responses"][0]["Partitions"][0]["CurrentLeader"]["LeaderId"]
    assert leader == t.cluster.topics.partition("in", 0).leader != frames[1].broker
