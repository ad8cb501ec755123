"""Every kipviz.spark analysis against what the model run is known to have done: its events,
its requests and its manifest (computed here without Spark, from the files or the run)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kipviz import scenarios
from kipviz import spark as ks
from kipviz.broker import share_metrics
from kipviz.spark import plots
from tests.spark_session import spark  # noqa: F401 - the shared session fixture

pytestmark = pytest.mark.spark
SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"


@pytest.fixture(scope="module")
def runs(spark):  # noqa: F811
    out = {name: ks.decode_all(ks.read_samples(spark, SAMPLES / name))
           for name in ("regular_eos", "kip1319", "kip516", "share_eos")}
    yield out
    for logs in out.values():
        logs.unpersist()


def _events(run: str, *cols):
    return pq.read_table(SAMPLES / run / "events.parquet", columns=list(cols)).to_pandas()


def test_transactions_count_the_commits_and_aborts_of_the_events(runs):
    ev = _events("regular_eos", "kind", "machine", "to_state")
    ends = ev[(ev.kind == "StateChanged") & (ev.machine == "transaction")].to_state.value_counts()
    txns = ks.transactions(runs["regular_eos"])
    got = {r["outcome"]: r["count"] for r in txns.groupBy("outcome").count().collect()}
    assert got == {"commit": ends["CompleteCommit"], "abort": ends["CompleteAbort"]}
    outcomes = json.loads((SAMPLES / "regular_eos" / "manifest.json").read_text())["summary"]["outcomes"]
    assert got["abort"] == outcomes["aborted:processing-failure"] > 0
    summary = ks.transaction_summary(runs["regular_eos"], txns).collect()
    assert sum(r["commits"] for r in summary) == got["commit"]
    assert sum(r["aborts"] for r in summary) == got["abort"]
    assert all(r["commit_rate"] > 0 and r["unfinished"] == 0 for r in summary)
    assert "<svg" in plots.plot_transactions(txns)


def test_a_coordinator_timeout_is_a_timed_out_abort(spark):  # noqa: F811
    logs = ks.decode_all(ks.from_trace(spark, scenarios.run("txn.timeout_abort")))
    rows = ks.transactions(logs).collect()
    assert [r["timed_out"] for r in rows if r["outcome"] == "abort"] == [True]
    assert ks.transaction_summary(logs).first()["timeouts"] == 1


def test_committed_offsets_and_lag(runs):
    rows = ks.committed_offsets(runs["regular_eos"]).collect()
    ends = pq.read_table(SAMPLES / "regular_eos" / "batches" / "orders.parquet").to_pandas() \
        .groupby("partition").last_offset.max() + 1
    assert {r["partition"]: r["committed_offset"] for r in rows} == ends.to_dict()     # the run drains
    assert {(r["lag"], r["status"], r["recreated_topic"]) for r in rows} == {(0, "ok", False)}
    assert "<svg" in plots.plot_lag(ks.committed_offsets(runs["regular_eos"]))


def test_committed_offsets_resolve_topic_ids_and_flag_recreated_topics(runs):
    m = json.loads((SAMPLES / "kip1319" / "manifest.json").read_text())
    live = {t["name"]: t["topic_id"] for t in m["topics"] if not t["deleted"]}
    rows = ks.committed_offsets(runs["kip1319"]).collect()
    with_id = [r for r in rows if r["topic_id"] is not None]
    assert with_id and len(with_id) < len(rows)         # v6 persists the id, v5 does not (KIP-1319)
    assert all(r["topic_id"] == live[r["topic"]] and r["resolved_name"] == r["topic"] for r in with_id)
    promos = [r for r in rows if r["topic"] == "promos"]
    assert promos and all(r["recreated_topic"] and r["incarnations"] == 5 for r in promos)
    clicks = ks.committed_offsets(runs["kip516"]).collect()
    assert {(r["incarnations"], r["recreated_topic"]) for r in clicks} == {(3, True)}


def test_committed_offsets_of_a_deleted_topic_id(spark):  # noqa: F811
    trace = scenarios.run("kip1319.topic_id_persisted")
    logs = ks.decode_all(ks.from_trace(spark, trace))
    ids = {str(t.topic_id): t for t in trace.cluster.topics.by_id.values()}
    for r in ks.committed_offsets(logs).collect():
        if r["topic_id"] is not None:
            assert r["topic_id"] in ids and r["resolved_name"] == ids[r["topic_id"]].name


def test_kip1319_errors_by_request_version(runs):
    req = pq.read_table(SAMPLES / "kip1319" / "requests.parquet", columns=["api", "version", "error_names"]) \
        .to_pandas()
    req = req[req.api == "TxnOffsetCommit"]
    got = {(r["version"], r["error"]): (r["answers"], r["requests"], r["era"])
           for r in ks.kip1319_errors(runs["kip1319"]).collect()}
    for (v, err), (answers, requests, era) in got.items():
        of_v = req[req.version == v]
        assert requests == len(of_v)
        assert answers == sum(err in set(names) for names in of_v.error_names)
        assert era == ("KIP-1319" if v >= 6 else "before KIP-1319")
    assert got[(6, "STALE_MEMBER_EPOCH")][0] > 0 and got[(5, "STALE_MEMBER_EPOCH")][0] == 0
    assert got[(5, "ILLEGAL_GENERATION")][0] > 0 and got[(6, "UNKNOWN_TOPIC_ID")][0] > 0
    assert "<svg" in plots.plot_kip1319(ks.kip1319_errors(runs["kip1319"]))


def test_tx_pending_analyses_equal_the_kip1289_metrics(spark):  # noqa: F811
    trace = scenarios.run("kip1289.case06_lock_expiry_tx_pending")
    logs = ks.decode_all(ks.from_trace(spark, trace))
    want = share_metrics.metrics(trace.events)
    got = ks.kip1289_metrics(logs).first()
    assert got["TxnPendingRecordsCount"] == want["TxnPendingRecordsCount"]
    assert got["TxnPendingLockExpiredCount"] == want["TxnPendingLockExpiredCount"] > 0
    res = want["TxnPendingResidencyMs"]
    assert (got["TxnPendingResidencyMs_count"], got["TxnPendingResidencyMs_max"],
            got["TxnPendingResidencyMs_p99"]) == (res["count"], res["max"], res["p99"])
    series = [(r["time_ms"], r["TxnPendingRecordsCount"]) for r in ks.tx_pending_series(logs).collect()]
    assert series == share_metrics.time_series(trace.events)
    stays = ks.tx_pending(logs).collect()
    assert any(r["exit_cause"] == "lock-expired" and r["exit_state"] == "ACQUIRED" for r in stays)
    assert "<svg" in plots.plot_tx_pending(ks.tx_pending_series(logs))
    assert "<svg" in plots.plot_residency(ks.tx_pending(logs))


def test_share_state_counts_acknowledged_records(runs):
    rows = ks.share_state(runs["share_eos"]).collect()
    assert {r["topic"] for r in rows} == {"in"} and {r["group"] for r in rows} == {"sg"}
    records = pq.read_table(SAMPLES / "share_eos" / "topics" / "in.parquet", columns=["partition"]).to_pandas()
    ends = records.partition.value_counts().to_dict()
    assert {p: max(r["start_offset"] for r in rows if r["partition"] == p) for p in ends} == ends
    assert all(r["acknowledged"] >= 0 and r["available"] >= 0 for r in rows)
    assert "<svg" in plots.plot_share_state(ks.share_state(runs["share_eos"]))


def test_analyses_without_share_or_request_data_are_empty_frames(runs):
    regular = runs["regular_eos"]
    assert ks.tx_pending(regular).count() == 0 and ks.share_state(regular).count() == 0
    assert ks.kip1289_metrics(regular).first()["TxnPendingRecordsCount"] == 0


def test_scenario_logs_show_each_corner_case(spark):  # noqa: F811
    crash = ks.scenario_logs("kip1289.case01_broker_crash_tx_pending", spark=spark)
    again = ks.redeliveries(crash).collect()
    assert again and all(r["deliveries"] >= 2 for r in again)          # the at-least-once window
    v6 = ks.scenario_logs("kip1319.stale_member_epoch_v6", spark=spark)
    errs = {(r["version"], r["error"]) for r in ks.request_errors(v6, "TxnOffsetCommit").collect()}
    assert (6, "STALE_MEMBER_EPOCH") in errs
    with pytest.raises(ks.readers.KipvizError):
        ks.scenario_logs("no.such_scenario", spark=spark)


def test_analyze_report(runs, spark, tmp_path):  # noqa: F811
    from kipviz.spark.report import analyze
    rep = analyze(ks.read_samples(spark, SAMPLES / "kip1319"))
    text = rep.summary()
    assert "kip1319_errors: 8 row(s)" in text and "errors: 0" in text
    rep.save(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text().count("<svg") >= 4
