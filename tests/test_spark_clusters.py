"""The same commands on a real cluster: `kipviz analyze` and `kipviz verify-eos` on a standalone
master with two workers (started from the pyspark wheel, tests/spark_cluster.py) and `kipviz
analyze --remote` on a Spark Connect server print what they print on local[2] (computed here, in
the tests' own local[2] session, with the same library calls the commands make)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark_cluster import cli, connect, standalone  # noqa: F401
from tests.spark_session import spark  # noqa: F401

pytestmark = pytest.mark.spark
SAMPLE = "sample_data/share_eos"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def on_local(spark):  # noqa: F811
    """What `kipviz analyze` and `kipviz verify-eos` print for SAMPLE on local[2]."""
    import os

    from kipviz.spark import read_samples
    from kipviz.spark.eos import verdict_lines, verify_eos
    from kipviz.spark.report import analyze
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        summary = analyze(read_samples(spark, SAMPLE), plot=False).summary()
        verdict = "\n".join(verdict_lines(verify_eos(read_samples(spark, SAMPLE)), everything=False))
    finally:
        os.chdir(here)
    return {"analyze": summary + "\n", "verify-eos": verdict + "\n"}


@pytest.mark.parametrize("command", ["analyze", "verify-eos"])
def test_the_commands_on_a_standalone_cluster_print_what_local_prints(command, standalone, on_local):  # noqa: F811
    done = cli(command, SAMPLE, "--master", standalone)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == on_local[command]


def test_analyze_through_spark_connect_prints_what_local_prints(connect, on_local):  # noqa: F811
    done = cli("analyze", SAMPLE, "--remote", connect)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == on_local["analyze"]


def test_a_connect_server_that_does_not_answer_is_one_line():
    from tests.spark_cluster import free_port
    done = cli("analyze", SAMPLE, "--remote", f"sc://127.0.0.1:{free_port()}", timeout_s=60)
    assert done.returncode == 2
    assert done.stderr.startswith("kipviz: error: Spark Connect server 'sc://127.0.0.1:") and \
        done.stderr.count("\n") == 1, done.stderr
