"""`kipviz scenarios` and `kipviz scenario NAME` (kipviz/cli/core.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from kipviz import cli, scenarios
from kipviz.cli import core as cli_core
from kipviz.scenarios import Scenario

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed")


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("kipviz: error:") and err.count("\n") == 1, err
    return err


def test_scenarios_lists_name_status_kip_and_title(capsys):
    assert cli.main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in lines}
    for r in scenarios.catalog():
        line = rows[r["name"]]
        assert r["status"] in line and r["title"] in line and (r["kip"] or "-") in line
    assert "released" in rows["kip1319.stale_member_epoch_v6"] and "KIP-1319" in rows["kip1319.stale_member_epoch_v6"]
    assert "released" in rows["kip516.stale_read"] and "KIP-516" in rows["kip516.stale_read"]


def test_scenarios_filter(capsys):
    assert cli.main(["scenarios", "kip516"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names and all(n.startswith("kip516.") for n in names)


def test_scenario_prints_checks_and_a_request_summary(capsys):
    assert cli.main(["scenario", "kip1319.stale_member_epoch_v6"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kip1319.stale_member_epoch_v6 (seed 0, KIP-1319, released)")
    assert "✓ TxnOffsetCommit v6 answered STALE_MEMBER_EPOCH" in out and "✗" not in out
    (summary,) = [line for line in out.splitlines() if line.startswith("requests: ")]
    assert "TxnOffsetCommit v6 [STALE_MEMBER_EPOCH]" in summary and "ConsumerGroupHeartbeat v1 ×4" in summary
    assert out.rstrip().endswith("checks passed")


def test_scenario_seed_changes_the_run(capsys):
    assert cli.main(["scenario", "kip516.ids_never_reused", "--seed", "3"]) == 0
    assert "(seed 3," in capsys.readouterr().out


def test_scenario_svg_and_html(tmp_path, capsys):
    svg, page = tmp_path / "s.svg", tmp_path / "s.html"
    assert cli.main(["scenario", "kip1319.group_id_not_found_v6", "--svg", str(svg), "--html", str(page)]) == 0
    text = svg.read_text()
    assert text.lstrip().startswith(("<svg", "<?xml")) and "TxnOffsetCommit v6" in text
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and 'class="kv-player"' in html
    assert "State machine: transaction" in html and "GROUP_ID_NOT_FOUND" in html
    assert html.count("<svg") >= 1 and "Checks" in html
    head = html.split("<body>", 1)[0].lower()
    assert "http" not in head and "<script src" not in html        # standalone: nothing fetched
    assert f"wrote {svg}" in capsys.readouterr().err


def test_scenario_html_without_state_changes_has_the_sequence_only(tmp_path):
    page = tmp_path / "r.html"
    assert cli.main(["scenario", "kip1242.misrouted_connection", "--html", str(page)]) == 0
    html = page.read_text()
    assert "<svg" in html and "No state machine changed" in html and "kv-player" not in html
    assert html.rstrip().endswith("</html>")


def test_scenario_html_machine_option(tmp_path):
    page = tmp_path / "m.html"
    assert cli.main(["scenario", "kip1319.stale_member_epoch_v5", "--machine", "consumer-member",
                     "--html", str(page)]) == 0
    assert "State machine: consumer-member" in page.read_text()


@needs_dot
def test_scenario_gif(tmp_path):
    gif = tmp_path / "t.gif"
    assert cli.main(["scenario", "kip1319.group_id_not_found_v5", "--gif", str(gif)]) == 0
    data = gif.read_bytes()
    assert data[:6] in (b"GIF89a", b"GIF87a")
    from PIL import Image
    assert Image.open(gif).n_frames >= 3


@pytest.mark.parametrize("argv", [
    ["scenario", "no.such.scenario"],
    ["scenario", "kip516.stale_read", "--machine", "bogus"],
    ["scenario", "kip516.stale_read", "--gif", "x.png"],
    ["scenario", "kip516.stale_read", "--svg", "/no/such/dir/x.svg"],
])
def test_scenario_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    one_error_line(capsys)
    assert capsys.readouterr().out == ""         # refused before anything ran


def test_gif_of_a_scenario_without_state_changes_is_an_error(tmp_path, capsys):
    assert cli.main(["scenario", "kip1242.misrouted_connection", "--gif", str(tmp_path / "x.gif")]) == 2
    assert "nothing to animate" in one_error_line(capsys)
    assert not (tmp_path / "x.gif").exists()


def test_bad_name_suggests_names(capsys):
    assert cli.main(["scenario", "kip1319.nope"]) == 2
    assert "kip1319." in one_error_line(capsys)


def test_failing_check_exits_1(monkeypatch, capsys):
    def fails(trace):
        trace.expect("this holds", True)
        trace.expect("this does not", False, "because")
    scenarios.all_scenarios()
    monkeypatch.setitem(scenarios._REGISTRY, "test.failing",
                        Scenario("test.failing", "a failing scenario", None, "released", "", fails))
    assert cli.main(["scenario", "test.failing"]) == 1
    out = capsys.readouterr().out
    assert "✓ this holds" in out and "✗ this does not  [because]" in out and "1/2 checks passed" in out
    assert "requests: none" in out


@pytest.mark.parametrize("cmd", ["scenarios", "scenario"])
def test_help(cmd):
    r = subprocess.run([sys.executable, "-m", "kipviz.cli", cmd, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and f"usage: kipviz {cmd}" in r.stdout
    if cmd == "scenario":
        assert all(o in r.stdout for o in ("--seed", "--svg", "--html", "--gif", "--machine"))


def test_console_run_of_a_scenario():
    r = subprocess.run([sys.executable, "-m", "kipviz.cli", "scenario", "kip516.stale_state"], capture_output=True,
                       text=True, encoding="utf-8", env={"PYTHONIOENCODING": "utf-8", "PATH": ""})
    assert r.returncode == 0, r.stderr
    assert "OFFSET_OUT_OF_RANGE" in r.stdout and "Fetch v12 [OFFSET_OUT_OF_RANGE]" in r.stdout


def test_scenario_help_lists_every_machine_of_the_registry(capsys):
    """Issue 25: --machine share-record was missing from the help; the list comes from the tables."""
    import re

    from kipviz.draw.machines import tables
    with pytest.raises(SystemExit) as ex:
        cli.main(["scenario", "--help"])
    assert ex.value.code == 0
    text = re.sub(r"-\s+", "-", re.sub(r"\s+", " ", capsys.readouterr().out))   # argparse wraps at hyphens
    (machine,) = re.findall(r"--machine M (.*)", text)
    assert set(tables()) >= {"share-record", "transaction"}
    assert all(name in machine for name in tables()), machine


def test_kip1289_scenarios_animate_the_share_records_by_default(tmp_path, capsys):
    page = tmp_path / "k.html"
    assert cli.main(["scenario", "kip1289.case06_lock_expiry_tx_pending", "--html", str(page)]) == 0
    assert "State machine: share-record" in page.read_text()
    # --machine still wins, and other KIPs keep the transaction machine
    assert cli.main(["scenario", "kip1289.case06_lock_expiry_tx_pending", "--machine", "transaction",
                     "--html", str(page)]) == 0
    assert "State machine: transaction" in page.read_text()


@needs_dot
@pytest.mark.parametrize("name", ["kip516.stale_read", "kip516.broker_stale_state"])
def test_kip516_scenarios_animate(tmp_path, capsys, name):
    """Issue 24: every kip516 scenario has an animation: the replica table where a replica's log
    changed, else the topic ids' lifecycle."""
    gif = tmp_path / "k.gif"
    assert cli.main(["scenario", name, "--gif", str(gif)]) == 0
    assert gif.read_bytes()[:6] in (b"GIF87a", b"GIF89a")
    trace = scenarios.run(name)
    assert cli_core._pick_machine(trace, None) == ("replica" if "broker" in name else "topic-id")


def test_topic_ids_are_animated_only_when_nothing_else_changed():
    trace = scenarios.run("kip1319.fallback_old_broker")
    changed = {e.machine for e in trace.events if e.kind == "StateChanged"}
    assert {"topic-id", "transaction"} <= changed
    assert cli_core._pick_machine(trace, None) == "transaction"
