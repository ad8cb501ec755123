"""kipviz.spark.session's defaults: small ones for notebooks and small runs, large-run ones (what
the CLI picks from LARGE_ROWS topic records on), and Spark's own configuration
(spark-defaults.conf) still winning over both. Runs in a
subprocess: a SparkContext's launch settings cannot change inside the test process's JVM."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

SCRIPT = r"""
import json
from kipviz.spark import session, stop
keys = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes", "spark.sql.inMemoryColumnarStorage.compressed",
        "spark.driver.extraJavaOptions")
out = {}
for large in (False, True):
    s = session("local[1]", batch=True, large=large)
    out[str(large)] = {k: s.conf.get(k, None) for k in keys[:4]}
    out[str(large)]["java"] = s.sparkContext.getConf().get(keys[4])
    stop()
print(json.dumps(out))
"""


def test_large_run_defaults_fill_in_only_what_spark_defaults_leave(tmp_path):
    (tmp_path / "spark-defaults.conf").write_text("spark.sql.adaptive.advisoryPartitionSizeInBytes 8m\n")
    env = dict(os.environ, SPARK_CONF_DIR=str(tmp_path), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("KIPVIZ_SPARK_MASTER", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    small, large = got["False"], got["True"]
    assert (small["spark.sql.shuffle.partitions"], small["spark.sql.adaptive.enabled"]) == ("4", "false")
    assert (large["spark.sql.shuffle.partitions"], large["spark.sql.adaptive.enabled"]) == ("32", "true")
    # the user's spark-defaults.conf wins over kipviz's large-run default of 16m
    assert large["spark.sql.adaptive.advisoryPartitionSizeInBytes"] == "8m"
    # large runs cache uncompressed; small ones leave it unset, i.e. Spark's default (compressed)
    assert (small["spark.sql.inMemoryColumnarStorage.compressed"],
            large["spark.sql.inMemoryColumnarStorage.compressed"]) == (None, "false")
    # batch=True starts the command line's JVM (C2, parallel collector), not the notebooks' C1-only one
    assert "-XX:+UseParallelGC" in small["java"] and "TieredStopAtLevel" not in small["java"]


def test_the_run_size_the_command_line_goes_by(tmp_path):
    from pathlib import Path

    from kipviz.spark.readers import topic_records
    from kipviz.spark.session import LARGE_ROWS
    share = Path(__file__).resolve().parent.parent / "sample_data" / "share_eos"
    m = json.loads((share / "manifest.json").read_text())
    topics = [v["rows"] for k, v in m["datasets"].items() if k.startswith("topics/")]
    assert len(topics) >= 4 and topic_records(share) == sum(topics) < LARGE_ROWS
    assert topic_records(tmp_path) == 0                       # no manifest: read_samples reports it
    (tmp_path / "manifest.json").write_text("{not json")
    assert topic_records(tmp_path) == 0


def test_the_jvm_stderr_is_forwarded_without_its_start_warning(tmp_path):
    from kipviz.spark.session import JVM_START_NOISE, _forward_stderr
    lines = [b"Error: a real JVM line\n", JVM_START_NOISE + b" jdk.incubator.vector\n", b"x" * 100_000 + b"\n", b"last"]
    (tmp_path / "jvm.err").write_bytes(b"".join(lines))
    with open(tmp_path / "jvm.err", "rb") as pipe, open(tmp_path / "ours", "wb") as out:
        _forward_stderr(pipe, out.fileno())
    assert (tmp_path / "ours").read_bytes() == lines[0] + lines[2] + lines[3]


def test_command_line_errors_are_one_line_from_a_fresh_jvm():
    """`kipviz verify-eos` on a run it cannot check: stderr is the one error line, nothing from
    the JVM's start (the command starts its own driver JVM)."""
    from pathlib import Path
    regular = Path(__file__).resolve().parent.parent / "sample_data" / "regular_eos"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("KIPVIZ_SPARK_MASTER", None)
    done = subprocess.run([sys.executable, "-c", "import sys; from kipviz.cli import main; sys.exit(main())",
                           "verify-eos", str(regular)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("kipviz: error: no share-record state changes") and done.stderr.count("\n") == 1, \
        done.stderr
