"""Findings are part of a scenario's result and come first wherever a run is shown."""
import re

import pytest

from kipviz import scenarios
from kipviz.cli import main
from kipviz.scenarios.report import report


@pytest.mark.parametrize("name, words", [
    ("kip1289.case06_lock_expiry_tx_pending", "duplicates"),
    ("kip1289.case07_txn_timeout", "transaction.timeout.ms"),
    ("kip1289.happy_abort", "delivery"),
    ("kip1289.case12_leader_change_share_state", "one broker"),
    ("kip1319.stale_member_epoch_v5", "ILLEGAL_GENERATION"),
])
def test_findings_are_typed_and_shown_before_the_checks(name, words):
    trace = scenarios.run(name)
    assert trace.findings and all(f.what and f.who and f.kip for f in trace.findings)
    assert any(words in f.what + f.who + f.kip for f in trace.findings)
    page = report(trace)._repr_html_()
    assert page.index("Findings") < page.index("Checks")
    # whole sentences: every check's description appears uncut
    assert all(c.description.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
               .replace('"', "&quot;").replace("'", "&#x27;") in page for c in trace.checks)
    assert repr(report(trace)).index("Findings") < repr(report(trace)).index(trace.checks[0].description)


def test_scenario_without_findings_shows_only_checks():
    trace = scenarios.run("kip932.acquire_and_acknowledge")
    assert trace.findings == () and trace.scenario.no_findings
    assert "Findings" not in report(trace)._repr_html_()
    assert f"Nothing goes wrong here: {trace.scenario.no_findings}" in repr(report(trace))


def test_cli_text_and_html_page_show_findings(tmp_path, capsys):
    out = tmp_path / "case07.html"
    main(["scenario", "kip1289.case07_txn_timeout", "--html", str(out)])
    text = capsys.readouterr().out
    assert text.index("findings:") < text.index("checks:")
    page = out.read_text()
    assert "transaction.timeout.ms is below the lock duration" in page
    assert page.index("Findings") < page.index("Checks")


def test_metric_readings_tell_healthy_from_unhealthy():
    from kipviz.broker.share_metrics import READINGS, readings
    assert len(READINGS) == 7
    healthy = {r["metric"]: r["looks"] for r in readings(scenarios.run("kip1289.happy_commit").events)}
    assert set(healthy.values()) == {"healthy"}
    expired = {r["metric"]: r for r in readings(scenarios.run("kip1289.case06_lock_expiry_tx_pending").events)}
    assert expired["TxnPendingLockExpiredCount"]["looks"] == "UNHEALTHY"
    assert expired["TxnPendingLockExpiredCount"]["this run"] > 0
    assert all(r["means"] and r["healthy"] and r["unhealthy"] for r in expired.values())


# ---- every registered scenario: findings, or a reason why none ------------------------------------------
ALL = [c["name"] for c in scenarios.catalog()]
KIP_OR_SOURCE = re.compile(r"\bKIP-\d+\b|\b\w+\.(?:java|scala|json)\b")
PRIVATE = re.compile(r"\bFACTS\b|\bseeds?\s*\(?0\d\d\b|\bseed documents?\b", re.I)   # as test_learner_text
CUT = ("...", "…", ",", ";", ":", "-", "(", " and", " or", " the")
# error names a finding may say without the run answering them on the wire, and why
NOT_ON_THE_WIRE = {
    "kip1289.case09_old_broker": {"UNSUPPORTED_VERSION"},           # raised by the producer, no bytes sent
    "kip1289.listed_errors": {"KAFKA_STORAGE_ERROR", "TRANSACTION_ABORTABLE"},   # listed, never returned
    "kip1319.group_id_not_found_v6": {"ILLEGAL_GENERATION"},        # what v5 says, for contrast
}


@pytest.fixture(scope="module")
def runs():
    return {name: scenarios.run(name) for name in ALL}


def test_every_scenario_has_findings_or_says_why_it_has_none(runs):
    bare = [n for n, t in runs.items() if not t.findings and not t.scenario.no_findings]
    assert not bare, f"no findings and no no_findings reason: {bare}"
    both = [n for n, t in runs.items() if t.findings and t.scenario.no_findings]
    assert not both, f"findings and a reason for having none: {both}"
    reasons = [t.scenario.no_findings for t in runs.values() if t.scenario.no_findings]
    assert reasons and all(r[0].isupper() and r.endswith(".") for r in reasons)


def test_every_finding_names_a_kip_or_a_kafka_source(runs):
    bad = [(n, f.kip) for n, t in runs.items() for f in t.findings if not KIP_OR_SOURCE.search(f.kip)]
    assert not bad


def test_findings_are_whole_sentences(runs):
    for name, trace in runs.items():
        for f in trace.findings:
            for part in (f.what, f.who, f.kip):
                assert part[0].isupper() and part.endswith("."), (name, part)
            assert not f.who.rstrip(".").endswith(CUT), (name, f.who)
            for part in (f.what, f.who, f.kip):
                assert part.count("(") == part.count(")") and part.count('"') % 2 == 0, (name, part)
                assert not PRIVATE.search(part), (name, part)


def test_the_errors_a_finding_names_were_answered_in_its_run(runs):
    """A finding's facts come from its run: every error it names was in a response of that run."""
    from kipviz.schema.error_codes import CODE, name_of
    for name, trace in runs.items():
        answered = {name_of(c) for e in trace.events if e.kind == "ResponseSent" for c in e.error_codes}
        for f in trace.findings:
            said = {w for w in re.findall(r"\b[A-Z][A-Z_]{3,}\b", f.what) if w in CODE and w != "NONE"}
            assert said - answered <= NOT_ON_THE_WIRE.get(name, set()), (name, said - answered)


def test_a_finding_is_worded_from_its_own_run():
    from kipviz.schema.error_codes import name_of
    default = scenarios.run("kip932.lock_expiry_delivery_limit").findings[-1].what
    three = scenarios.run("kip932.lock_expiry_delivery_limit", group_share_delivery_count_limit=3).findings[-1].what
    assert "counts 1, 2, 3, 4, 5," in default and "counts 1, 2, 3, and after lock expiry number 3" in three
    kip848 = scenarios.run("kip848.consumer_group_join_and_rebalance")
    hb = [e for e in kip848.events if e.kind == "ResponseSent" and e.client == "member-1-delayed"
          and e.api == "ConsumerGroupHeartbeat"]
    assert hb and f"the heartbeat {name_of(hb[0].body['ErrorCode'])}," in kip848.findings[0].what


def test_every_finding_is_shown_uncut_in_the_page_and_the_cli(runs, capsys):
    import html as h
    for name in ("kip516.stop_replica_by_name", "txn.zombie_fencing", "kip1289.listed_errors"):
        trace = runs[name]
        page = report(trace)._repr_html_()
        assert all(h.escape(part) in page for f in trace.findings for part in (f.what, f.who, f.kip))
        main(["scenario", name])
        text = capsys.readouterr().out
        assert all(f.what in text for f in trace.findings)
