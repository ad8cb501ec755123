"""The live view of a running server: redraws when requests arrive, and only then."""
from __future__ import annotations

import pytest

from kipviz.serve import Server

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")
pytest.importorskip("ipywidgets")


def test_the_live_view_follows_the_cluster_and_skips_idle_redraws():
    from kipviz.serve import LiveView
    with Server(brokers=2) as srv:
        view = LiveView(srv, auto=False)
        assert "no requests yet" in view.diagram.value and srv.bootstrap in view.status.value
        assert view.refresh() is False                       # nothing new: no redraw
        p = ck.Producer({"bootstrap.servers": srv.bootstrap})
        with srv.lock:
            srv.cluster.create_topic("live")
        p.produce("live", value=b"hello")
        assert p.flush(20) == 0
        del p
        assert view.refresh() is True
        assert "<svg" in view.diagram.value and "Produce" in view.diagram.value
        assert "RequestReceived" in view.table.value and "live-0@0" in view.table.value
        view.start()
        view.stop()
