"""kipviz-kafka and the commands on local[2], on a real standalone cluster and on Spark Connect.

The source (kipviz.spark.kafka_source): a batch read equals the records produced into a `kipviz
serve` cluster (keys, values, headers, offsets, timestamps), read_committed hides aborted records,
and a streaming query picks up records produced after it started -- in the tests' own local[2]
session and, through tests.kafka_checks, on a standalone master with two workers and on a Spark
Connect server (tests/spark_cluster.py: each started once, with one driver each). `kipviz analyze`
and `kipviz verify-eos` on the standalone cluster and `kipviz analyze --remote` on Connect print
what they print on local[2] (computed here, with the same library calls the commands make)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark_cluster import SAMPLE, cli, cluster_runs, kafka_cluster  # noqa: F401
from tests.spark_session import spark  # noqa: F401

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def on_local(spark, cluster_runs):  # noqa: F811 - the clusters' drivers run meanwhile
    """What `kipviz analyze` and `kipviz verify-eos` print for SAMPLE on local[2]."""
    from kipviz.spark import read_samples
    from kipviz.spark.eos import verdict_lines, verify_eos
    from kipviz.spark.report import analyze
    src = read_samples(spark, ROOT / SAMPLE)
    summary = analyze(src, plot=False).summary().replace(str(ROOT / SAMPLE), SAMPLE)
    verdict = "\n".join(verdict_lines(verify_eos(read_samples(spark, ROOT / SAMPLE)), everything=False))
    return {"analyze": summary + "\n", "verify-eos": verdict + "\n"}


@pytest.fixture(scope="module")
def results(spark, kafka_cluster, cluster_runs):  # noqa: F811
    """where -> what tests.kafka_checks read there (local[2]: here, in the shared session)."""
    from tests.kafka_checks import run_all

    class Results(dict):
        def __missing__(self, where):
            got = cluster_runs[where].result()
            assert got["error"] is None, got["error"]
            self[where] = got["checks"]
            return self[where]
    return Results(local=run_all(spark, kafka_cluster[0]))


WHERE = ["local", "standalone", "connect"]


@pytest.mark.parametrize("where", WHERE)
def test_batch_read_equals_the_records_produced(where, results, kafka_cluster):  # noqa: F811
    got = results[where]
    # keys, values, headers, offsets, timestamps (the producer's CreateTime, kept as sent)
    assert got["plain"] == kafka_cluster[1]["plain"]
    assert sum(r["headers"] is None for r in got["plain"]) == 8   # no headers: null, as Spark's source gives


@pytest.mark.parametrize("where", WHERE)
def test_read_committed_hides_aborted_records(where, results, kafka_cluster):  # noqa: F811
    got, want = results[where], kafka_cluster[1]
    assert got["txn_all"] == want["txn_all"] and got["txn_committed"] == want["txn_committed"]
    assert {"a0", "a1"} <= {v for v, _ in got["txn_all"]} and not {"a0", "a1"} & {v for v, _ in got["txn_committed"]}


@pytest.mark.parametrize("where", WHERE)
def test_streaming_picks_up_records_produced_after_it_started(where, results):
    got = results[where]["stream"]
    assert got["exception"] is None
    assert got["before"] == 0 and got["seen"] == [f"s{i}" for i in range(6)]
    # maxOffsetsPerTrigger=4: six records take at least two micro-batches, none over four
    assert got["batches_with_rows"] >= 2 and got["max_rows_per_batch"] <= 4


@pytest.mark.parametrize("where, command", [("standalone", "analyze"), ("standalone", "verify-eos"),
                                            ("connect", "analyze")])
def test_the_commands_print_what_local_prints(where, command, cluster_runs, on_local):  # noqa: F811
    done = cluster_runs[where].result()["cli"][command]
    assert (done["rc"], done["stderr"]) == (0, ""), done["stderr"][-2000:]
    assert done["stdout"] == on_local[command]


def test_a_connect_server_that_does_not_answer_is_one_line():
    from tests.spark_cluster import free_port
    done = cli("analyze", SAMPLE, "--remote", f"sc://127.0.0.1:{free_port()}", timeout_s=60)
    assert done.returncode == 2
    assert done.stderr.startswith("kipviz: error: Spark Connect server 'sc://127.0.0.1:") and \
        done.stderr.count("\n") == 1, done.stderr
