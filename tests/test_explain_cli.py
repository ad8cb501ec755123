"""`kipviz explain` from the command line: the report on stdout and the files asked for (exit 0);
each kind of bad input is one line on stderr and exit 2, never a traceback."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kipviz.explain import bundled


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kipviz", "explain", *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_the_report_and_its_files(tmp_path):
    r = run(bundled("zombie_producer"), "--html", tmp_path / "r.html", "--svg", tmp_path / "s.svg")
    assert r.returncode == 0, r.stderr
    assert "who is talking" in r.stdout and "[fenced]" in r.stdout and "Kafka 4.4" in r.stdout
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "Findings" in page
    assert (tmp_path / "s.svg").read_text().startswith("<svg")
    assert r.stderr.splitlines() == [f"wrote {tmp_path / 'r.html'}", f"wrote {tmp_path / 's.svg'}"]


@pytest.mark.parametrize(("args", "says"), [
    (["missing.pcap"], "cannot read missing.pcap"),
    (["not.pcap"], "not a pcap or pcapng capture"),
    ([bundled("late_commit"), "--ports", "9093"], "no Kafka exchange on port(s) 9093"),
    ([bundled("late_commit"), "--ports", "x"], "--ports 'x'"),
    ([bundled("late_commit"), "--ports", "70000"], "from 1 to 65535"),
    ([bundled("late_commit"), "--html", "/no/such/dir/r.html"], "no such directory"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    (tmp_path / "not.pcap").write_text("hello")
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("kipviz: error: ") and says in r.stderr, r.stderr
