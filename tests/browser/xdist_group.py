"""pytest plugin: every test under tests/browser/ runs on one xdist worker, and so does every test
of tests/test_spark_clusters.py.

    python -m pytest -n 2 --dist loadgroup -p tests.browser.xdist_group     (what `make test` runs)

The browser tests share one JupyterLab server and run the notebooks one at a time; split over two
workers they would start two servers and run two notebooks (two Spark JVMs) at once. The modules
carry `pytest.mark.xdist_group("browser")`, but xdist 3.8 applies that mark by renaming
`item._nodeid`, which pytest 9 no longer reads, so here the scheduler groups by path as well.
The cluster tests share one standalone cluster and one Spark Connect server (session fixtures of
tests/spark_cluster.py): split over two workers, each would start its own."""
from __future__ import annotations

import pytest

BROWSER_TESTS = "tests/browser/"
CLUSTER_TESTS = "tests/test_spark_clusters.py"


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class BrowserGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(BROWSER_TESTS):
                return "browser"
            if nodeid.startswith(CLUSTER_TESTS):
                return "spark-clusters"
            return super()._split_scope(nodeid)

    return BrowserGroupScheduling(config, log)
