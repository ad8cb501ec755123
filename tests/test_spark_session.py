"""kipviz.spark.session's defaults: small ones for notebooks, batch ones for whole runs (the CLI),
and Spark's own configuration (spark-defaults.conf) still winning over both. Runs in a
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
        "spark.sql.adaptive.advisoryPartitionSizeInBytes", "spark.driver.extraJavaOptions")
out = {}
for batch in (False, True):
    s = session("local[1]", batch=batch)
    out[str(batch)] = {k: s.conf.get(k, None) for k in keys[:3]}
    out[str(batch)]["java"] = s.sparkContext.getConf().get(keys[3])
    stop()
print(json.dumps(out))
"""


def test_batch_defaults_fill_in_only_what_spark_defaults_leave(tmp_path):
    (tmp_path / "spark-defaults.conf").write_text("spark.sql.adaptive.advisoryPartitionSizeInBytes 8m\n")
    env = dict(os.environ, SPARK_CONF_DIR=str(tmp_path), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("KIPVIZ_SPARK_MASTER", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    small, batch = got["False"], got["True"]
    assert (small["spark.sql.shuffle.partitions"], small["spark.sql.adaptive.enabled"]) == ("4", "false")
    assert (batch["spark.sql.shuffle.partitions"], batch["spark.sql.adaptive.enabled"]) == ("32", "true")
    # the user's spark-defaults.conf wins over kipviz's batch default of 16m
    assert batch["spark.sql.adaptive.advisoryPartitionSizeInBytes"] == "8m"
    # one JVM per process: its flags are those of the first session (the notebooks' C1-only JVM)
    assert "-XX:TieredStopAtLevel=1" in small["java"]
