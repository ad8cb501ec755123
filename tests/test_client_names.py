"""A live server names connections by address; pictures name them by client.id, also when the
newest events hold none of a connection's requests with one (its first request long gone)."""
from __future__ import annotations

import dataclasses
import re

from kipviz import codec
from kipviz.broker import cluster as cluster_mod
from kipviz.broker.cluster import Cluster
from kipviz.draw.animate import Animation
from kipviz.draw.clients import client_names
from kipviz.draw.sequence import sequence_diagram
from kipviz.schema import events as ev

EARLY, LATER = "127.0.0.1:50000", "127.0.0.1:50001"
ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")


def _metadata(c: Cluster, connection: str, client_id: str, cid: int) -> None:
    frame = codec.encode_request("Metadata", 12, {"Topics": [], "AllowAutoTopicCreation": False,
                                              "IncludeTopicAuthorizedOperations": False},
                                 correlation_id=cid, client_id=client_id)
    assert c.handle(frame, client=connection)


def _run(later_requests: int = 60) -> Cluster:
    """EARLY asks once, LATER asks many times, then EARLY once more: the newest events hold only
    EARLY's last request."""
    c = Cluster(brokers=1)
    _metadata(c, EARLY, "early-bird", 1)
    for i in range(later_requests):
        _metadata(c, LATER, "later", 100 + i)
    _metadata(c, EARLY, "early-bird", 2)
    return c


def _lanes(svg: str) -> list[str]:
    return re.findall(r'<g class="kv-head kv-client"[^>]*><title>([^<]*)</title>', svg)


def test_a_window_without_the_first_request_still_names_the_client():
    c = _run()
    # the last response alone: its request (and EARLY's first) are outside the window
    responses = [e for e in c.events[-1:] if isinstance(e, ev.ResponseSent)]
    assert client_names(responses) == {}
    assert client_names(responses, c.client_ids) == {EARLY: "early-bird"}
    svg = sequence_diagram(responses, client_ids=c.client_ids)
    assert "early-bird" in svg and not ADDRESS.search(svg)
    assert ADDRESS.search(sequence_diagram(responses))          # without the cluster's names: the address


def test_the_live_view_names_connections_whose_first_request_left_its_window():
    import pytest
    pytest.importorskip("ipywidgets")
    from kipviz.serve import LiveView
    c = _run()
    del c.events[:-1]           # a live cluster's bounded buffer: only EARLY's last answer is left
    assert [type(e) for e in c.events] == [ev.ResponseSent] and c.events[0].client == EARLY
    view = LiveView(c, auto=False, players=False, max_events=3)
    assert "early-bird" in view.diagram.value and not ADDRESS.search(view.diagram.value)
    assert "early-bird" in view.table.value and not ADDRESS.search(view.table.value)


def test_a_player_names_the_client_of_a_slimmed_request():
    """A long-running server slims old requests (their frames dropped, kipviz.broker.event_buffer):
    the player's caption still names the client."""
    c = Cluster(brokers=1)
    frame = codec.encode_request("InitProducerId", 4, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000,
                                                       "ProducerId": -1, "ProducerEpoch": -1},
                                 correlation_id=1, client_id="txn-app")
    c.handle(frame, client=EARLY)
    slim = [dataclasses.replace(e, frame=b"") if isinstance(e, ev.RequestReceived) else e for e in c.events]

    def captions(anim) -> str:
        return " ".join(f.caption for f in anim.frames)
    assert "txn-app" in captions(Animation("transaction", slim, key="tx", client_ids=c.client_ids))
    assert EARLY in captions(Animation("transaction", slim, key="tx"))      # without: the address


def test_the_names_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(cluster_mod, "CLIENT_IDS_MAX", 5)
    c = Cluster(brokers=1)
    for i in range(12):
        _metadata(c, f"127.0.0.1:{40000 + i}", f"app-{i}", i)
    assert list(c.client_ids) == [f"127.0.0.1:{40000 + i}" for i in range(7, 12)]
    assert c.client_ids["127.0.0.1:40011"] == "app-11"
