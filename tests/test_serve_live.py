"""The live view of a running server: redraws when requests arrive, and only then."""
from __future__ import annotations

import time

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


def test_the_live_players_follow_a_transaction_and_a_share_group():
    """The state-machine player follows the instance that changed last and grows with it (a viewer at
    the end stays at the end); the record strip follows the share group whose records changed."""
    from kipviz.serve import LiveView
    with Server(brokers=1, share_group_offset_reset={"sg": "earliest"}) as srv:
        view = LiveView(srv, auto=False, players_every_s=0)
        assert view.machine_player is None and "no state changes yet" in view.machine_box.children[0].value
        with srv.lock:
            srv.cluster.create_topic("t")
        conf = {"bootstrap.servers": srv.bootstrap, "socket.timeout.ms": 10000}
        tx = ck.Producer({**conf, "transactional.id": "tx-live"})
        tx.init_transactions(20)
        tx.begin_transaction()
        tx.produce("t", value=b"a")
        tx.commit_transaction(20)
        assert view.refresh() and view.followed["machine"] == ("transaction", "tx-live")
        player = view.machine_player
        first = len(player.view.frames)
        assert first >= 3 and player.index == first - 1 and "CompleteCommit" in player.title.value + str(player.view.frames)
        tx.begin_transaction()
        tx.produce("t", value=b"b")
        tx.flush(20)                       # else librdkafka aborts locally, with no request
        tx.abort_transaction(20)
        tx.close(20)
        assert view.refresh() and view.machine_player is player          # the same widget, grown
        assert len(player.view.frames) > first and player.index == len(player.view.frames) - 1
        assert player.slider.max == len(player.view.frames) - 1
        assert view.refresh_players() is False                            # nothing new: no rebuild
        sc = ck.ShareConsumer({**conf, "group.id": "sg"})
        sc.subscribe(["t"])
        got, end = [], time.monotonic() + 20
        while len(got) < 1 and time.monotonic() < end:
            got += [m for m in sc.poll(0.5) if m.error() is None]
        sc.commit_sync(20)
        sc.close()
        assert got
        assert view.refresh() and view.followed["strip"] == ("sg",) and view.strip_player is not None
        assert len(view.strip_player.view.frames) >= 1 and "sg" in view.strip_player.title.value
