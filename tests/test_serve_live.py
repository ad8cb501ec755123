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
        # stacked at the notebook's width, not two half-width boxes that shrink a machine to ~3 px text
        assert tuple(view.children[-2:]) == (view.machine_box, view.strip_box)
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
        assert player.slider.max == len(player.view.frames)              # frames counted from 1
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


def _exchanges(clients: int, brokers: int) -> list:
    """Requests and responses of `clients` clients (long names) round-robin over `brokers` brokers."""
    from kipviz.schema import events as E
    evs = []
    apis = ["Produce", "FindCoordinator", "JoinGroup", "ShareFetch", "TxnOffsetCommit", "Metadata"]
    for i in range(3 * clients):
        c, b = f"127.0.0.1:{40000 + i % clients}-a-rather-long-client-name-{i % clients}", i % brokers
        api = apis[i % len(apis)]
        for cls in (E.RequestReceived, E.ResponseSent):
            extra = {"error_codes": ()} if cls is E.ResponseSent else {}
            evs.append(cls(seq=len(evs), t=1_700_000_000_000 + 10 * len(evs), broker=b, client=c, api=api,
                           version=0, correlation_id=i, body={}, **extra))
    return evs


@pytest.mark.parametrize("clients,brokers", [(1, 1), (3, 3), (12, 3), (20, 9)])
def test_the_live_diagram_never_draws_text_under_8_px_in_its_tab(clients, brokers):
    """Issue 25: the live view's lanes depend on the run (a lane per client connection, per broker
    role): 10 lanes made the picture ~1070 px, scaled into the ~740 px tab with text at 7.8 px.
    Drawn now with one lane per broker and only as many of the newest clients as fit LIVE_WIDTH:
    never wider than the tab, so never scaled, its smallest text (10 px) stays over 8 px."""
    import re
    import xml.etree.ElementTree as ET

    from kipviz.draw.sequence import lanes_that_fit
    from kipviz.serve.live import LIVE_WIDTH, live_diagram
    ns = "{http://www.w3.org/2000/svg}"
    wire = _exchanges(clients, brokers)
    root = ET.fromstring(live_diagram(wire, t0=wire[0].t))
    width = float(root.get("width"))
    scale = min(1.0, LIVE_WIDTH / width)                      # how the tab shows it
    sizes = [float(t.get("font-size")) for t in root.iter(ns + "text") if t.get("font-size")]
    assert width <= LIVE_WIDTH and min(sizes) * scale >= 8, (width, min(sizes))
    heads = {"".join(g.itertext()) for g in root.iter(ns + "g") if "kv-head" in (g.get("class") or "")}
    assert len(heads) <= lanes_that_fit(LIVE_WIDTH) == 6
    title = "".join(next(root.iter(ns + "text")).itertext())
    newest = wire[-1].client
    lanes = {g.find(ns + "title").text for g in root.iter(ns + "g") if "kv-head" in (g.get("class") or "")}
    assert newest in lanes                                          # the newest client always has its lane
    if clients + brokers <= 6:
        assert title == "newest requests" and len(heads) == clients + brokers
    else:
        hidden = int(re.search(r"\((\d+) older", title).group(1))
        assert 0 < hidden < len(wire) and len(heads) == 6


def test_newest_that_fit_keeps_the_newest_exchanges_within_the_lanes():
    from kipviz.serve.live import newest_that_fit
    wire = _exchanges(5, 2)
    kept, hidden = newest_that_fit(wire, 4)
    assert kept == [e for e in wire if e in kept] and kept[-1] is wire[-1]       # in order, newest kept
    assert len({e.client for e in kept}) + len({e.broker for e in kept}) <= 4 and hidden == len(wire) - len(kept)
    assert newest_that_fit(wire, 7) == (wire, 0)
