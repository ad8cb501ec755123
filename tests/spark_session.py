"""The one SparkSession of the Spark tests: local[2], no UI, 2 shuffle partitions, 768 MB driver.

Test modules import the fixture (`from tests.spark_session import spark  # noqa: F401`) and mark
themselves `pytest.mark.spark`; kipviz.spark.session() hands every caller the session already
running, so the JVM starts once per test process (once per xdist worker)."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from kipviz.spark import session
    s = session("local[2]", conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield s
