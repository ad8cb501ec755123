from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kipviz import cli

from .test_codec_golden import SEED_BODY


def test_list_shows_labels(capsys):
    assert cli.main(["list", "TxnOffsetCommitRequest"]) == 0
    out = capsys.readouterr().out
    assert "v6" in out and "released in Kafka 4.4 (KIP-1319)" in out and "released in Kafka 4.0" in out


def test_list_release_keeps_only_the_versions_that_release_serves(capsys):
    assert cli.main(["list", "TxnOffsetCommitRequest", "--release", "4.3"]) == 0
    out = capsys.readouterr().out
    assert "v5" in out and "v6" not in out and "v0" in out
    assert cli.main(["list", "TxnOffsetCommitRequest", "--release", "4.4"]) == 0
    assert "v6" in capsys.readouterr().out
    assert cli.main(["list", "OffsetCommitRequest", "--release", "4.1"]) == 0
    section = capsys.readouterr().out.split("OffsetCommitRequest (api key 8)\n")[1].split("TxnOffsetCommit")[0]
    versions = [ln.split()[0] for ln in section.splitlines()]
    assert versions == [f"v{v}" for v in range(2, 10)]       # KIP-896 dropped 0-1; v10 came in 4.2
    assert cli.main(["list", "--release", "4.0"]) == 0
    out = capsys.readouterr().out
    assert "ShareFetchRequest" not in out and "TxnShareAcknowledge" not in out and "ProduceRequest" in out


def test_list_bad_release_and_unknown_name_are_one_line_and_exit_2(capsys):
    for argv in (["list", "--release", "4.9"], ["list", "TxnOffsetCommit", "--release", "latest"],
                 ["list", "NoSuchThing"], ["list", "TxnShareAcknowledge", "--release", "4.4"]):
        assert cli.main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith("kipviz: error:") and captured.err.count("\n") == 1
    assert cli.main(["list", "--release", "4.9"]) == 2
    assert "4.0, 4.1, 4.2, 4.3, 4.4" in capsys.readouterr().err


def test_decode_hex_and_annotate(capsys):
    assert cli.main(["decode", "TxnOffsetCommitRequest", "--version", "5", "--hex", SEED_BODY.hex(" ")]) == 0
    assert json.loads(capsys.readouterr().out)["MemberId"] == "consumer-1-abc123"
    assert cli.main(["decode", "TxnOffsetCommitRequest", "--version", "5", "--annotate", "--hex", SEED_BODY.hex()]) == 0
    assert "Topics[0].Partitions[0].CommittedOffset" in capsys.readouterr().out


def test_bad_input_is_one_line_and_nonzero(capsys):
    for argv in (["decode", "TxnOffsetCommitRequest", "--version", "5", "--hex", "zz"],
                 ["decode", "TxnOffsetCommitRequest", "--version", "5", "--hex", SEED_BODY[:20].hex()],
                 ["decode", "NoSuch", "--version", "0", "--hex", "00"],
                 ["decode", "TxnOffsetCommitRequest", "--version", "5", "--file", "/no/such/file"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("kipviz: error:") and err.count("\n") == 1


@pytest.mark.parametrize("module", ["kipviz.cli", "kipviz"])
def test_console_script_runs(module):
    r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "decode" in r.stdout


def test_python_m_kipviz_is_the_command_with_its_errors():
    r = subprocess.run([sys.executable, "-m", "kipviz", "list", "--release", "9.9"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("kipviz: error:") and r.stderr.count("\n") == 1


def test_wire_svg_png_html(tmp_path, capsys):
    assert cli.main(["wire", "TxnOffsetCommitRequest", "--version", "6"]) == 0
    svg = capsys.readouterr().out
    assert svg.lstrip().startswith("<?xml") and "TopicId" in svg and "1319" in svg
    png = tmp_path / "w.png"
    assert cli.main(["wire", "MetadataResponse", "--example", "--format", "png", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = tmp_path / "w.html"
    assert cli.main(["wire", "TxnOffsetCommitRequest", "--format", "html", "-o", str(html)]) == 0
    assert "<svg" in html.read_text() and "http" not in html.read_text().split("<svg", 1)[0].lower()


def test_diff_text_and_picture(tmp_path, capsys):
    assert cli.main(["diff", "TxnOffsetCommitRequest", "5", "6"]) == 0
    out = capsys.readouterr().out
    assert "renamed" in out and "GenerationId → GenerationIdOrMemberEpoch" in out
    assert "removed" in out and "Topics.Name" in out and "added" in out and "Topics.TopicId" in out
    assert cli.main(["diff", "TxnOffsetCommitRequest", "5", "6", "--format", "svg", "-o", str(tmp_path / "d.svg")]) == 0
    assert "GenerationIdOrMemberEpoch" in (tmp_path / "d.svg").read_text()


def test_every_command_has_help():
    for cmd in ("list", "decode", "wire", "diff"):
        r = subprocess.run([sys.executable, "-m", "kipviz.cli", cmd, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "usage: kipviz " + cmd in r.stdout


def test_wire_and_diff_bad_input(capsys):
    for argv in (["wire", "Nope"], ["wire", "TxnOffsetCommitRequest", "--version", "42"],
                 ["diff", "TxnOffsetCommitRequest", "5", "99"], ["wire", "TxnOffsetCommitRequest", "--format", "png"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("kipviz: error:") and err.count("\n") == 1


def test_ctrl_c_during_a_long_run_is_one_line_and_leaves_no_process(tmp_path):
    import os
    import signal
    import time
    out = tmp_path / "big"
    # Ctrl-C as in a terminal: Python leaves SIGINT ignored when it starts so (a test runner's
    # worker may), so the command is started with Python's own handler, as a shell would
    as_in_a_terminal = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                        "from kipviz.cli import main; sys.exit(main())")
    p = subprocess.Popen([sys.executable, "-c", as_in_a_terminal, "sample-data", "--scenario", "share_eos",
                          "--records", "5000000", "-o", str(out)], stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob(".parts/chunk-*")) and time.monotonic() < deadline:   # chunks are being written
            time.sleep(0.2)
        assert p.poll() is None, p.stderr.read()
        os.killpg(p.pid, signal.SIGINT)              # what Ctrl-C in a terminal does: the whole group
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:                         # a failed test leaves no run going on
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130 and err.endswith("\nkipviz: interrupted\n")     # after the progress bar
    assert "Traceback" not in err
    time.sleep(0.5)
    left = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read()
            except OSError:
                continue
            if str(out).encode() in cmd:
                left.append(d)
    assert left == []                                # no chunk child or writer process left behind


@pytest.mark.parametrize("argv, message", [
    (["decode", "NoSuch", "--version", "0", "--hex", "00"], "no message named 'NoSuch'"),
    (["decode", "TxnOffsetCommitRequest", "--version", "99", "--hex", "00"], "has no version 99 (valid: 0-6)"),
    (["decode", "TxnOffsetCommitRequest", "--version", "5", "--hex", "zz"], "--hex: not hex: 'z'"),
    (["decode", "TxnOffsetCommitRequest", "--version", "5", "--hex", "0e7"], "--hex: odd number of hex digits"),
])
def test_decode_errors_not_about_bytes_name_no_byte(capsys, argv, message):
    """Only a failure inside the message's bytes names a byte offset."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"kipviz: error: {err.split(': ', 2)[2]}" and message in err and "at byte" not in err
    assert cli.main(["decode", "TxnOffsetCommitRequest", "--version", "5", "--hex", "0e74"]) == 2
    assert "kipviz: error: at byte 0 in TransactionalId:" in capsys.readouterr().err


def test_verify_eos_prints_the_verdict_first_and_summarises_windows_by_case():
    """400 documented windows do not bury the verdict: counts by their own KIP-1289 case, three
    examples of each, every violation; everything=True (--all) lists every line."""
    from kipviz.spark.eos import EosResult, verdict_lines

    def row(i, case, cls):
        return {"kind": "duplicate-output", "topic": "in", "partition": 0, "offset": i, "classification": cls,
                "case": case, "transaction": None, "detail": "twice", "outputs": []}
    window = "at-least-once window (KIP-1289 case 1/12)"
    rows = [row(i, 12, window) for i in range(398)] + [row(398 + i, 1, window) for i in range(2)] + \
        [row(1000, 6, "violation")]
    res = EosResult("sg", "in", "out", None, rows, {"inputs": 1001})
    out = verdict_lines(res)
    assert out[0].endswith(": FAIL (1 violation(s), 400 at-least-once window(s))")
    assert "  at-least-once windows by KIP-1289 case: case 1: 2, case 12: 398" in out
    assert [x for x in out if x.startswith("[violation]")] == ["[violation] duplicate-output in-0@1000: twice"]
    tagged = [x for x in out if x.startswith("[at-least-once window")]
    assert len(tagged) == 2 + 3 and all("case 1/12" not in x for x in tagged)
    assert tagged[-1].startswith("[at-least-once window (KIP-1289 case 12)] duplicate-output in-0@")
    assert out[-1] == "... 395 more at-least-once window(s) of case 12 (--all lists every one)"
    assert len([x for x in verdict_lines(res, everything=True) if x.startswith("[at-least-once window")]) == 400
    assert "--all" in subprocess.run([sys.executable, "-c", "from kipviz.cli import main; main()", "verify-eos",
                                      "--help"], capture_output=True, text=True).stdout
