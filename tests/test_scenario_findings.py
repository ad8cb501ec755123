"""Findings are part of a scenario's result and come first wherever a run is shown."""
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
