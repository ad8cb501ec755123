from __future__ import annotations

import json
import subprocess
import sys

from kipviz import cli

from .test_codec_golden import SEED_BODY


def test_list_shows_labels(capsys):
    assert cli.main(["list", "TxnOffsetCommitRequest"]) == 0
    out = capsys.readouterr().out
    assert "v6" in out and "accepted (KIP-1319)" in out and "released in Kafka 4.0" in out


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


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "kipviz.cli", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "decode" in r.stdout
