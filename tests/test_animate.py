"""kipviz.draw.animate and kipviz.widgets.player: state-machine animations from a scenario's events.

One frame per StateChanged of the machine (and key) followed; each frame is the state diagram with
the new state filled and the row taken in red, and a caption naming the time, the change and the
request that caused it. Frames are produced by recolouring one `dot` rendering, which must give
exactly the SVG `dot` gives for the highlighted diagram. The HTML player, the GIF and the widget
are checked for what they embed and how they are wired, not for pixels."""
from __future__ import annotations

import io
import json
import re
import time
import xml.etree.ElementTree as ET

import pytest

from kipviz.broker.machine import Row, Table
from kipviz.draw import dot_available, to_svg
from kipviz.draw.animate import Animation, changes, player_html, random_walk, render_many
from kipviz.draw.machines import (
    C_CURRENT_FILL,
    C_OCCUPIED_FILL,
    C_TAKEN,
    edge_id,
    node_id,
    state_diagram,
    tables,
)
from kipviz.schema import events as E

needs_dot = pytest.mark.skipif(not dot_available(), reason="graphviz `dot` not installed")

TXN = Table(
    name="transaction",
    states=("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
            "PrepareEpochFence"),
    initial="Empty",
    rows=(
        Row("Empty", "init-producer-id", "Empty", note="InitProducerId"),
        Row("Empty", "add-partitions", "Ongoing", note="AddPartitionsToTxn"),
        Row("Ongoing", "add-partitions", "Ongoing", note="AddPartitionsToTxn"),
        Row("Ongoing", "end-txn-commit", "PrepareCommit", note="EndTxn(commit)"),
        Row("Ongoing", "end-txn-abort", "PrepareAbort", note="EndTxn(abort)"),
        Row("Ongoing", "timeout-fence", "PrepareEpochFence"),
        Row("PrepareEpochFence", "fence-abort", "PrepareAbort"),
        Row("PrepareCommit", "markers-written", "CompleteCommit"),
        Row("PrepareAbort", "markers-written", "CompleteAbort"),
        Row("CompleteCommit", "add-partitions", "Ongoing", note="AddPartitionsToTxn"),
        Row("CompleteAbort", "add-partitions", "Ongoing", note="AddPartitionsToTxn"),
        Row("CompleteCommit", "init-producer-id", "Empty", note="InitProducerId"),
        Row("Empty", "end-txn-abort", "PrepareAbort", status="accepted", kip="KIP-939", note="EndTxn(abort)"),
        Row("Empty", "expire", "Dead"),
    ),
    state_ids={"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
               "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7},
    source="TransactionMetadata.scala", terminal=("Dead",))


class Scenario:
    def __init__(self):
        self.events: list[E.Event] = []
        self.t = 0
        self.cid = 0

    def add(self, cls, **kw):
        self.events.append(cls(seq=len(self.events), t=self.t, **kw))

    def change(self, key, a, cause, b, status="released"):
        self.add(E.StateChanged, machine="transaction", key=key, from_state=a, to_state=b, cause=cause, status=status)

    def call(self, api, version, *moves, client="producer-1", broker=2):
        self.cid += 1
        self.add(E.RequestReceived, broker=broker, client=client, api=api, version=version,
                 correlation_id=self.cid, body={})
        for key, a, cause, b in moves:
            self.change(key, a, cause, b)
        self.add(E.ResponseSent, broker=broker, client=client, api=api, version=version,
                 correlation_id=self.cid, body={})


@pytest.fixture
def scenario() -> list[E.Event]:
    s = Scenario()
    s.add(E.TopicAutoCreated, topic="start", api="Metadata")
    s.t = 10
    s.call("AddPartitionsToTxn", 5, ("tx-1", "Empty", "add-partitions", "Ongoing"))
    s.t = 20
    s.call("AddPartitionsToTxn", 5, ("tx-2", "Empty", "add-partitions", "Ongoing"), client="producer-2")
    s.t = 30
    s.call("EndTxn", 5, ("tx-1", "Ongoing", "end-txn-commit", "PrepareCommit"))
    s.t = 31
    s.change("tx-1", "PrepareCommit", "markers-written", "CompleteCommit")       # no request: markers done
    s.t = 60040
    s.change("tx-2", "Ongoing", "timeout-fence", "PrepareEpochFence")           # the abort scan
    s.change("tx-2", "PrepareEpochFence", "fence-abort", "PrepareAbort")
    s.add(E.StateChanged, machine="classic-group", key="g1", from_state="Empty", to_state="PreparingRebalance",
          cause="join")                                                          # another machine: ignored
    return s.events


def group(svg: str, ident: str) -> str:
    """The SVG of one node or edge, by its id (up to the next node/edge)."""
    m = re.search(r'<g id="' + re.escape(ident) + r'" class="(?:node|edge)">(.*?)(?=<g id="[^"]*" class="(?:node|edge)">|</svg>)',
                  svg, re.S)
    assert m, f"no group {ident}"
    return m.group(1)


# ---- frames --------------------------------------------------------------------------------------------------
def test_one_frame_per_state_change_of_the_machine(scenario):
    assert len(Animation(TXN, scenario)) == len(changes(scenario, "transaction")) == 6
    assert len(Animation(TXN, scenario, key="tx-1")) == 3
    assert len(Animation(TXN, scenario, key="tx-2")) == 3
    assert len(Animation(TXN, scenario, key="nobody")) == 0


def test_frames_name_the_row_taken_and_the_request_being_handled(scenario):
    frames = Animation(TXN, scenario, key="tx-1").frames
    assert [f.state for f in frames] == ["Ongoing", "PrepareCommit", "CompleteCommit"]
    assert [f.row for f in frames] == [TXN.rows[1], TXN.rows[3], TXN.rows[7]]
    assert [f.request.api if f.request else None for f in frames] == ["AddPartitionsToTxn", "EndTxn", None]
    assert frames[1].request.correlation_id == 3 and frames[1].request.client == "producer-1"


def test_an_unanswered_request_causes_nothing_that_happens_later():
    s = Scenario()
    s.cid = 7
    s.add(E.RequestReceived, broker=1, client="p", api="EndTxn", version=5, correlation_id=7, body={})  # broker down
    s.t = 60000
    s.change("tx-1", "Ongoing", "timeout-fence", "PrepareEpochFence")
    (f,) = Animation(TXN, s.events).frames
    assert f.request is None


def test_caption_says_when_what_why_and_which_request(scenario):
    frames = Animation(TXN, scenario, key="tx-1").frames
    lines = frames[1].caption.split("\n")
    assert lines[0] == "2/3 · t=30 ms · transaction tx-1: Ongoing → PrepareCommit"
    assert lines[1] == "event: end-txn-commit"
    assert lines[2] == "request: EndTxn v5 from producer-1 to broker 2 (correlation id 3)"
    assert frames[2].caption.split("\n")[2] == "no request: a timer or a coordinator-internal step"


def test_captions_give_times_from_the_runs_start(scenario):
    """t0: the run's start in the events' clock (a live server's is epoch ms, issue 31)."""
    frames = Animation(TXN, scenario, key="tx-1", t0=10).frames
    assert frames[1].caption.startswith("2/3 · t=20 ms · transaction tx-1")


def test_following_all_instances_shows_where_the_others_are(scenario):
    anim = Animation(TXN, scenario)
    last = anim.frames[-1]
    assert dict(last.states) == {"tx-1": "CompleteCommit", "tx-2": "PrepareAbort"}
    assert "instances: tx-1 CompleteCommit · tx-2 PrepareAbort" in last.caption


def test_a_change_the_table_has_no_row_for_is_shown_without_an_edge():
    s = Scenario()
    s.change("tx-1", "Empty", "magic", "Ongoing")
    (f,) = Animation(TXN, s.events).frames
    assert f.row is None and "no such row in the table" in f.caption


def test_states_the_table_does_not_have_are_refused():
    s = Scenario()
    s.change("tx-1", "Empty", "x", "Nowhere")
    with pytest.raises(ValueError, match="Nowhere"):
        Animation(TXN, s.events)


def test_a_table_can_be_named():
    found = tables()
    if "transaction" in found:
        assert Animation("transaction", []).table is found["transaction"]
    with pytest.raises(ValueError, match="no state table named"):
        Animation("no-such-machine", [])


# ---- pictures ------------------------------------------------------------------------------------------------
@needs_dot
def test_each_frame_is_exactly_what_dot_draws_for_that_state_and_row():
    # every row once: self-loops, the dashed accepted row, the double circle of a terminal state
    s = Scenario()
    for i, r in enumerate(TXN.rows):
        s.change(f"tx-{i}", r.from_state, r.event, r.to_state, status=r.status)
    for i, r in enumerate(TXN.rows):
        anim = Animation(TXN, s.events, key=f"tx-{i}")
        (f,) = anim.frames
        assert f.row == r
        assert anim.picture_svg(f.picture) == to_svg(state_diagram(TXN, current=r.to_state, taken=r)), r


@needs_dot
def test_a_row_on_a_shared_arrow_reddens_that_arrow_and_its_own_lines_as_dot_does():
    # the model's transaction machine: four self-loops on Ongoing are one arrow (issue 25), drawn
    # in its compact layout (long events on two lines)
    real = tables()["transaction"]
    shared = [i for i, r in enumerate(real.rows)
              if sum((o.from_state, o.to_state) == (r.from_state, r.to_state) for o in real.rows) > 1]
    assert len(shared) >= 4
    events = [E.StateChanged(seq=n, t=n, machine=real.name, key=f"tx-{i}", from_state=real.rows[i].from_state,
                             to_state=real.rows[i].to_state, cause=real.rows[i].event, status=real.rows[i].status)
              for n, i in enumerate(shared)]
    for n, i in enumerate(shared):
        r = real.rows[i]
        anim = Animation(real, events[n:n + 1])
        (f,) = anim.frames
        svg = anim.picture_svg(f.picture)
        assert svg == to_svg(state_diagram(real, current=r.to_state, taken=r)), r
        red = "".join(re.findall(rf'<text[^>]*fill="{C_TAKEN}"[^>]*>([^<]*)</text>', svg)).replace("&#45;", "-")
        own = r.event + ("" if r.status == "released" else f"{r.kip} · {r.status}")
        assert red == own, (r, red)                  # that row's lines, and no other row's
        assert group(svg, edge_id(real, i)).count(f'stroke="{C_TAKEN}"') == 2      # its line and arrowhead
        assert f"event: {r.event}" in f.caption


@needs_dot
def test_frames_highlight_the_current_state_and_the_taken_row(scenario):
    anim = Animation(TXN, scenario)
    svg = anim.frames_svg()[3]               # tx-1 PrepareCommit -> CompleteCommit, tx-2 Ongoing
    assert f'fill="{C_CURRENT_FILL}"' in group(svg, node_id(TXN, "CompleteCommit"))
    other = group(svg, node_id(TXN, "Ongoing"))
    assert f'fill="{C_OCCUPIED_FILL}"' in other and ">tx-2</text>" in other
    assert f'stroke="{C_TAKEN}"' in group(svg, edge_id(TXN, 7))
    assert svg.count(f'stroke="{C_TAKEN}"') == 2                 # the one edge: its line and its arrowhead
    ET.fromstring(re.sub(r"^.*?(?=<svg)", "", svg, flags=re.S))  # still well-formed
    assert "4/6 · t=31 ms · transaction tx-1: PrepareCommit → CompleteCommit" in svg


@needs_dot
def test_dot_runs_once_and_repeated_pictures_are_shared(monkeypatch):
    import kipviz.draw.animate as A
    calls = []
    real = A.to_svg
    monkeypatch.setattr(A, "to_svg", lambda g: calls.append(1) or real(g))
    events = random_walk(TXN, 200, keys=("tx-1",), seed=3)
    anim = Animation(TXN, events)
    svgs = anim.frames_svg()
    assert len(svgs) == len(changes(events, "transaction")) and len(calls) == 1
    assert len(anim.pictures()) < len(svgs) and len(anim.pictures()) <= len(TXN.rows)
    assert anim.frames_svg() is svgs                             # cached


@needs_dot
def test_a_dot_that_writes_svg_differently_gets_pictures_drawn_one_by_one():
    s = Scenario()
    s.change("a", "Empty", "add-partitions", "Ongoing")
    s.change("b", "Empty", "add-partitions", "Ongoing")
    anim = Animation(TXN, s.events)
    anim._segments = [(i, seg.replace('fill="#ffffff"', 'fill="white"')) for i, seg in anim._split()]
    svg = anim.picture_svg(anim.frames[1].picture)
    assert f'fill="{C_CURRENT_FILL}"' in group(svg, node_id(TXN, "Ongoing")) and ">a</text>" in svg
    assert f'stroke="{C_TAKEN}"' in group(svg, edge_id(TXN, 1))


@needs_dot
def test_proposed_rows_hidden_by_show_proposed_false_are_drawn_when_taken():
    s = Scenario()
    s.change("tx-1", "Empty", "end-txn-abort", "PrepareAbort", status="accepted")
    anim = Animation(TXN, s.events, show_proposed=False)
    svg = anim.frames_svg()[0]
    assert f'id="{edge_id(TXN, 12)}"' in svg and "end-txn-abort (KIP-939, accepted)" in anim.frames[0].caption


@needs_dot
def test_two_hundred_events_render_at_twenty_frames_a_second_or_more():
    events = random_walk(TXN, 200, seed=1)
    start = time.perf_counter()
    anim = Animation(TXN, events)
    n = len(anim.frames_svg())
    fps = n / (time.perf_counter() - start)
    assert n == len(changes(events, "transaction")) and fps >= 20, f"{fps:.0f} frames/s"


def test_random_walk_wraps_api_rows_in_requests():
    events = random_walk(TXN, 60, seed=2)
    assert len(events) == 60 and [e.seq for e in events] == list(range(60))
    for i, e in enumerate(events):
        if isinstance(e, E.StateChanged) and e.cause in ("add-partitions", "end-txn-commit", "init-producer-id"):
            assert isinstance(events[i - 1], E.RequestReceived)
    anim = Animation(TXN, events)
    assert all((f.request is not None) == (f.row.note[:1].isupper()) for f in anim.frames)


# ---- HTML player ---------------------------------------------------------------------------------------------
def _player_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" class="kv-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


@needs_dot
def test_html_player_embeds_every_frame_and_fetches_nothing(scenario, tmp_path):
    anim = Animation(TXN, scenario)
    path = anim.to_html(tmp_path / "txn.html")
    page = path.read_text(encoding="utf-8")
    data = _player_data(page)
    assert len(data["frames"]) == len(anim) == 6
    assert [f["caption"] for f in data["frames"]] == [f.caption for f in anim.frames]
    for f, entry in zip(anim.frames, data["frames"], strict=True):   # each frame's picture, highlighted
        pic = data["pictures"][entry["p"]]
        assert f'fill="{C_CURRENT_FILL}"' in group(pic, node_id(TXN, f.state)) and f'id="{edge_id(TXN, f.row)}"' in pic
    assert len(data["pictures"]) == len(anim.pictures())
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page)
    assert "@import" not in page and "url(" not in page and "<link" not in page
    assert page.count("<script") == 2 and 'type="range"' in page and 'data-act="play"' in page


def test_player_html_survives_captions_that_look_like_markup():
    data = {"title": "t", "pictures": ["<svg></svg>"],
            "frames": [{"p": 0, "caption": "</script><script>alert(1)</script> <!-- x"}]}
    page = player_html(data, title="<b>t</b>")
    assert "</script><script>alert" not in page and "<!-- x" not in page and "&lt;b&gt;t&lt;/b&gt;" in page
    assert _player_data(page) == data


def test_no_frames_still_make_a_player(tmp_path):
    page = Animation(TXN, []).html()
    assert _player_data(page)["frames"] == [] and "0 / 0" in page


# ---- GIF -----------------------------------------------------------------------------------------------------------
@needs_dot
def test_gif_has_one_frame_per_transition(scenario, tmp_path):
    from PIL import Image
    anim = Animation(TXN, scenario)
    path = anim.to_gif(tmp_path / "txn.gif", fps=4)
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == len(anim) == 6
        assert im.info.get("duration") == 250 and im.info.get("loop") == 0
        sizes = set()
        for i in range(im.n_frames):
            im.seek(i)
            sizes.add(im.size)
        assert len(sizes) == 1


def test_gif_of_nothing_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no transitions"):
        Animation(TXN, []).to_gif(tmp_path / "x.gif")


@needs_dot
def test_render_many_gives_one_png_per_source():
    from PIL import Image
    sources = [state_diagram(TXN, current=s).source for s in TXN.states[:5]]
    pngs = render_many(sources, workers=2)
    assert len(pngs) == 5
    for png in pngs:
        assert Image.open(io.BytesIO(png)).format == "PNG"


# ---- widget --------------------------------------------------------------------------------------------------------
@needs_dot
def test_player_widget_links_play_slider_and_view_in_the_browser(scenario):
    import ipywidgets as W
    from ipywidgets.widgets.widget_link import Link

    from kipviz.widgets.player import FrameView, player
    anim = Animation(TXN, scenario)
    p = player(anim, fps=4)
    assert isinstance(p.play, W.Play) and isinstance(p.slider, W.IntSlider) and isinstance(p.view, FrameView)
    # frames counted from 1, as the captions count them ("6/6" with the slider at 6)
    assert (p.play.min, p.play.max, p.slider.min, p.slider.max) == (1, 6, 1, 6) and p.play.interval == 250
    (a, b, c) = p.links
    assert isinstance(a, Link) and isinstance(b, Link) and isinstance(c, Link)
    assert a.source == (p.play, "value") and a.target == (p.slider, "value")
    assert b.source == (p.slider, "value") and b.target == (p.view, "frame")
    assert c.source == (p.speed, "interval") and c.target == (p.play, "interval") and p.speed.interval == 250
    # every frame is in the browser before playing: pictures once, captions per frame
    assert p.view.frames == [{"p": f.picture, "caption": f.caption, "focus": node_id(TXN, f.state)}
                             for f in anim.frames]
    assert len(p.view.pictures) == len(anim.pictures()) and all("<svg" in s for s in p.view.pictures)
    assert {"pictures", "frames", "frame"} <= set(p.view.keys)          # synced traits
    p.index = 4
    assert (p.slider.value, p.view.frame, p.index) == (5, 5, 4)
    assert p.view.frames[4]["caption"].startswith("5/6 ")
    assert all(w in p.children[1].children for w in (p.play, p.slider, p.speed)) and p.view in p.children


def test_player_widget_of_no_frames_is_disabled():
    from kipviz.widgets.player import player
    p = player(Animation(TXN, []))
    assert p.play.disabled and p.slider.disabled and p.view.frames == []


# ---- the model's own tables ----------------------------------------------------------------------------------------
REAL = list(tables().values())


@needs_dot
@pytest.mark.skipif(not REAL, reason="the broker model's tables are not written yet")
@pytest.mark.parametrize("table", REAL, ids=[t.name for t in REAL])
def test_model_tables_animate_a_random_walk(table):
    events = random_walk(table, 120, keys=("a", "b"), seed=5)
    anim = Animation(table, events)
    svgs = anim.frames_svg()
    assert len(svgs) == len(changes(events, table.name)) > 0
    for f, svg in zip(anim.frames, svgs, strict=True):
        assert f.row is not None and f'id="{edge_id(table, f.row)}"' in svg
    f = anim.frames[0]
    single = Animation(table, events, key=f.key)
    assert single.picture_svg(single.frames[0].picture) == to_svg(state_diagram(table, current=f.state, taken=f.row))


@needs_dot
def test_a_real_transaction_animates_from_the_model():
    from kipviz import codec
    from kipviz.broker import Cluster
    from kipviz.broker.handlers import HANDLERS
    c = Cluster(seed=1)                           # loads the handlers
    if "transaction" not in tables() or not {"InitProducerId", "AddPartitionsToTxn", "EndTxn"} <= set(HANDLERS):
        pytest.skip("the transaction coordinator is not there")
    c.create_topic("orders", 4)

    def call(api, version, body, cid):
        out = c.handle(codec.encode_request(api, version, body, correlation_id=cid, client_id="p"), client="producer-1")
        return codec.decode_response(out, api, version)["body"]
    r = call("InitProducerId", 5, {"TransactionalId": "tx-1", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                                   "ProducerEpoch": -1}, 1)
    call("AddPartitionsToTxn", 3, {"V3AndBelowTransactionalId": "tx-1", "V3AndBelowProducerId": r["ProducerId"],
                                   "V3AndBelowProducerEpoch": r["ProducerEpoch"],
                                   "V3AndBelowTopics": [{"Name": "orders", "Partitions": [3]}]}, 2)
    call("EndTxn", 5, {"TransactionalId": "tx-1", "ProducerId": r["ProducerId"], "ProducerEpoch": r["ProducerEpoch"],
                       "Committed": True}, 3)
    anim = Animation("transaction", c, key="tx-1")
    assert len(anim) == len(changes(c.events, "transaction", "tx-1")) >= 3
    assert all(f.row is not None for f in anim.frames)               # every change is a row of the table
    by_state = {f.state: f for f in anim.frames}
    assert by_state["Ongoing"].request.api == "AddPartitionsToTxn"
    assert by_state["PrepareCommit"].request.api == "EndTxn"
    assert len(anim.frames_svg()) == len(anim)
