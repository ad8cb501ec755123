"""kipviz.draw.record_strip: the share-partition record strip, reconstructed from events only.

A real run (Cluster + two ShareConsumers, real frames) is replayed from cluster.events and compared
with the SharePartition's own state; a synthetic event list covers KIP-1289's TX_PENDING."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from kipviz.broker import Cluster
from kipviz.broker.share_partition import EMPTY_MEMBER
from kipviz.broker.tables import share_record as sr
from kipviz.clients.share_consumer import ShareConsumer
from kipviz.draw.record_strip import (
    ACQUIRE_CAUSES,
    PROPOSED_LEGEND,
    parse_key,
    record_strip,
    share_state_diagrams,
)
from kipviz.schema import events as E

G = "sg"


def _sp_view(c, tid):
    sp = c.shares.partitions[(G, tid, 0)]
    return sp, {o: (r.state, r.delivery_count, None if r.member == EMPTY_MEMBER else r.member)
                for o, r in sp.records.items()}


@pytest.fixture
def run():
    """Six records, two consumers (3 records per fetch), delivery limit 3:
    w1 gets 0-2, w2 gets 3-5; w1 accepts 0, releases 1, rejects 2; w2 re-acquires 1 (count 2),
    releases it and accepts 3, 4; w1 re-acquires 1 (count 3) and releases it -> ARCHIVED at the
    limit; SPSO 0 -> 1 -> 5. Snapshots of the SharePartition are taken after each step."""
    c = Cluster(seed=3, group_share_delivery_count_limit=3, share_auto_offset_reset="earliest")
    tid = c.create_topic("t", 1)
    c.topics.partition("t", 0).append([(b"k%d" % i, b"v%d" % i) for i in range(6)], 0)
    w1 = ShareConsumer(c, G, client_id="w1", max_records=3)
    w2 = ShareConsumer(c, G, client_id="w2", max_records=3)
    w1.subscribe(["t"])
    w2.subscribe(["t"])
    snaps = []
    r1 = w1.poll()
    snaps.append(_sp_view(c, tid)[1])
    r2 = w2.poll()
    snaps.append(_sp_view(c, tid)[1])
    assert [r.offset for r in r1] == [0, 1, 2] and [r.offset for r in r2] == [3, 4, 5]
    for r, t in zip(r1, (1, 2, 3), strict=True):
        w1.acknowledge(r, t)
    assert w1.commit_sync()["ErrorCode"] == 0
    snaps.append(_sp_view(c, tid)[1])
    (again,) = w2.poll()
    assert (again.offset, again.delivery_count) == (1, 2)
    snaps.append(_sp_view(c, tid)[1])
    w2.acknowledge(again, 2)
    w2.acknowledge(r2[0], 1)
    w2.acknowledge(r2[1], 1)
    assert w2.commit_sync()["ErrorCode"] == 0
    snaps.append(_sp_view(c, tid)[1])
    (third,) = w1.poll()
    assert (third.offset, third.delivery_count) == (1, 3)
    snaps.append(_sp_view(c, tid)[1])
    w1.acknowledge(third, 2)
    assert w1.commit_sync()["ErrorCode"] == 0
    snaps.append(_sp_view(c, tid)[1])
    assert not c.internal_errors
    return c, tid, w1, w2, snaps


def test_acquire_causes_come_from_the_table():
    assert ACQUIRE_CAUSES == {"acquire"}
    assert parse_key("a/b/my-topic-12@7") == ("a/b", "my-topic", 12, 7)


def test_one_frame_per_request_states_match_the_share_partition(run):
    c, tid, w1, w2, snaps = run
    strip = record_strip(c)
    assert len(strip) == 7
    assert [f["request"]["api"] for f in strip.frames] == ["ShareFetch", "ShareFetch", "ShareAcknowledge",
                                                           "ShareFetch", "ShareAcknowledge", "ShareFetch",
                                                           "ShareAcknowledge"]
    assert [f["request"]["client"] for f in strip.frames] == ["w1", "w2", "w1", "w2", "w2", "w1", "w1"]
    sp, _ = _sp_view(c, tid)
    for f, snap in zip(strip.frames, snaps, strict=True):
        (lane,) = f["lanes"]
        assert lane["lane"] == "sg/t-0" and [x["offset"] for x in lane["cells"]] == list(range(6))
        cells = {x["offset"]: (x["state"], x["delivery_count"], x["owner"]) for x in lane["cells"]}
        # the partition's cache holds offsets from the SPSO on: the strip agrees on all of them
        assert {o: cells[o] for o in snap} == snap
        assert all(cells[o][0] in sr.TERMINAL for o in range(lane["spso"]))
    final = strip.final()["sg/t-0"]
    assert final[0] == ("ACKNOWLEDGED", 1, None) and final[2] == ("ARCHIVED", 1, None)
    assert final[1] == ("ARCHIVED", 3, None)              # released at the delivery limit (3)
    assert final[5] == ("ACQUIRED", 1, w2.member_id)
    assert strip.frames[-1]["lanes"][0]["spso"] == sp.spso == 5


def test_delivery_counts_owners_and_spso_over_time(run):
    c, tid, w1, w2, _ = run
    fr = record_strip(c).frames

    def cell(i, o):
        return fr[i]["lanes"][0]["cells"][o]
    assert cell(0, 1)["owner"] == w1.member_id and cell(0, 1)["owner_client"] == "w1"
    assert cell(1, 4)["owner"] == w2.member_id and cell(1, 0)["owner"] == w1.member_id
    assert cell(2, 1)["state"] == "AVAILABLE" and cell(2, 1)["owner"] is None       # released: lock cleared
    assert (cell(3, 1)["delivery_count"], cell(3, 1)["owner_client"]) == (2, "w2")  # release + re-acquire
    assert (cell(5, 1)["delivery_count"], cell(5, 1)["owner_client"]) == (3, "w1")
    assert cell(6, 1)["state"] == "ARCHIVED" and cell(6, 1)["owner"] is None
    assert [f["lanes"][0]["spso"] for f in fr] == [0, 0, 1, 1, 1, 1, 5]
    assert [x["offset"] for x in fr[2]["lanes"][0]["cells"] if x["changed"]] == [0, 1, 2]
    assert "release-at-limit: @1 ACQUIRED → ARCHIVED" in fr[6]["caption"]
    assert "SPSO advanced: sg/t-0 1 → 5" in fr[6]["caption"] and "ShareAcknowledge v1 from w1" in fr[6]["caption"]


def test_lock_expiry_is_a_frame_without_request(run):
    c, tid, w1, w2, _ = run
    c.advance(30000)
    strip = record_strip(c)
    last = strip.frames[-1]
    assert last["request"] is None and "no request" in last["caption"]
    assert [(x["cause"], x["offset"]) for x in last["changes"]] == [("lock-expired", 5)]
    sp, view = _sp_view(c, tid)
    assert strip.final()["sg/t-0"][5] == view[5] == ("AVAILABLE", 1, None)


def test_by_change_and_filters(run):
    c, *_ = run
    n = sum(1 for e in c.events if isinstance(e, E.StateChanged) and e.machine == "share-record")
    assert len(record_strip(c, by="change")) == n
    assert record_strip(c, by="change").final() == record_strip(c).final()
    assert len(record_strip(c, group="other")) == 0 and len(record_strip(c, topic="t", partition=0)) == 7
    with pytest.raises(ValueError):
        record_strip(c, by="frame")


def test_svg_frames_are_xml_with_spso_and_no_proposed_legend(run):
    strip = record_strip(run[0])
    assert not strip.has_proposed
    for i in range(len(strip)):
        svg = strip.svg(i)
        ET.fromstring(svg)
        assert svg.count("<rect") >= 6 and ">SPSO<" in svg and PROPOSED_LEGEND not in svg
    assert ">w2<" in strip.svg(-1) and ">dc 3<" in strip.svg(-1)


def _player_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" class="kv-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def test_html_player_embeds_every_frame_and_fetches_nothing(run, tmp_path):
    strip = record_strip(run[0])
    page = strip.to_html(tmp_path / "strip.html").read_text(encoding="utf-8")
    data = _player_data(page)
    assert [f["caption"] for f in data["frames"]] == [f["caption"] for f in strip.frames]
    for i, f in enumerate(data["frames"]):
        assert data["pictures"][f["p"]] == strip.svg(i, caption=False)
    assert len(data["pictures"]) == len(strip)        # every step changes the strip
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page)
    assert "@import" not in page and "<link" not in page
    assert set(re.findall(r"url\(([^)]*)\)", page)) <= {"#" + i for i in re.findall(r'id="([^"]+)"', page)}
    assert page.count("<script") == 2 and 'data-act="play"' in page


def test_gif_has_one_frame_per_strip_frame(run, tmp_path):
    from PIL import Image
    strip = record_strip(run[0])
    path = strip.to_gif(tmp_path / "strip.gif", fps=4)
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == len(strip) == 7
        assert im.info.get("duration") == 250 and im.info.get("loop") == 0
        sizes = set()
        for i in range(im.n_frames):
            im.seek(i)
            sizes.add(im.size)
        assert len(sizes) == 1
    with pytest.raises(ValueError):
        record_strip([]).to_gif(tmp_path / "none.gif")


def test_strip_player_widget_reuses_the_player(run):
    import ipywidgets as W

    from kipviz.widgets.player import FrameView
    from kipviz.widgets.strip_player import strip_player
    strip = record_strip(run[0])
    p = strip_player(strip, fps=4)
    assert isinstance(p.play, W.Play) and isinstance(p.view, FrameView) and p.slider.max == len(strip)
    (a, b, c) = p.links
    assert a.source == (p.play, "value") and a.target == (p.slider, "value")
    assert b.source == (p.slider, "value") and b.target == (p.view, "frame")
    assert c.source == (p.speed, "interval") and c.target == (p.play, "interval")
    assert p.view.frames == strip.player_data()["frames"] and all("<svg" in s for s in p.view.pictures)


# ---- KIP-1289 (proposed) -------------------------------------------------------------------------------------------
def _synthetic():
    ev = []

    def add(cls, **kw):
        ev.append(cls(seq=len(ev), **kw))
    add(E.RequestReceived, t=0, broker=0, client="w1", api="ShareFetch", version=1, correlation_id=1,
        body={"MemberId": "m1"})
    for o in (0, 1, 2):
        add(E.StateChanged, t=0, machine="share-record", key=f"sg/t-0@{o}", from_state="AVAILABLE",
            to_state="ACQUIRED", cause="acquire")
    add(E.ResponseSent, t=0, broker=0, client="w1", api="ShareFetch", version=1, correlation_id=1, body={})
    add(E.RequestReceived, t=5, broker=0, client="w1", api="TxnShareAcknowledge", version=0, correlation_id=2,
        body={"MemberId": "m1"})
    for o in (0, 1):
        add(E.StateChanged, t=5, machine="share-record", key=f"sg/t-0@{o}", from_state="ACQUIRED",
            to_state="TX_PENDING", cause="txn-stage", status="proposed")
    add(E.ResponseSent, t=5, broker=0, client="w1", api="TxnShareAcknowledge", version=0, correlation_id=2, body={})
    # markers: offset 0 committed (ACCEPT), offset 1 aborted (back to ACQUIRED, same member, no new delivery)
    add(E.StateChanged, t=9, machine="share-record", key="sg/t-0@0", from_state="TX_PENDING",
        to_state="ACKNOWLEDGED", cause="txn-commit-accept", status="proposed")
    add(E.StateChanged, t=9, machine="share-record", key="sg/t-0@1", from_state="TX_PENDING",
        to_state="ACQUIRED", cause="txn-abort", status="proposed")
    return ev


def test_tx_pending_is_hatched_with_the_proposed_legend(tmp_path):
    strip = record_strip(_synthetic())
    assert strip.has_proposed and len(strip) == 3
    cells = strip.frames[1]["lanes"][0]["cells"]
    assert [x["state"] for x in cells] == ["TX_PENDING", "TX_PENDING", "ACQUIRED"]
    assert [x["owner"] for x in cells] == ["m1"] * 3
    svg = strip.svg(1)
    ET.fromstring(svg)
    assert svg.count('class="kv-proposed"') == 3           # two cells + the legend swatch
    pid = re.search(r'<pattern id="([^"]+)"', svg).group(1)
    assert svg.count(f'fill="url(#{pid})"') == 3 and PROPOSED_LEGEND in svg
    assert all('stroke-dasharray' in m for m in re.findall(r'<rect[^>]*kv-proposed[^>]*>', svg))
    assert "[KIP-1289 (proposed)]" in strip.frames[1]["caption"]
    last = strip.final()["sg/t-0"]
    assert last[0] == ("ACKNOWLEDGED", 1, None) and last[1] == ("ACQUIRED", 1, "m1")   # abort keeps the lock
    assert strip.frames[-1]["request"] is None and strip.frames[-1]["lanes"][0]["spso"] == 1
    # without TX_PENDING in the run the legend leaves it out, unless asked
    released = record_strip(_synthetic()[:5])
    assert not released.has_proposed and PROPOSED_LEGEND not in released.svg(0)
    assert PROPOSED_LEGEND in record_strip(_synthetic()[:5], show_proposed=True).svg(0)
    # the GIF draws it too
    from PIL import Image
    with Image.open(strip.to_gif(tmp_path / "tx.gif")) as im:
        assert im.n_frames == 3
    img = strip.frame_image(1)
    colors = {c for _, c in img.getcolors(1 << 16)}
    assert (0x6b, 0x46, 0xc1) in colors and (0xe9, 0xd8, 0xfd) in colors     # hatch lines over the fill


def test_share_state_diagrams_without_and_with_tx_pending():
    without, with_ = share_state_diagrams()
    assert "TX_PENDING" not in without.source and "TX_PENDING" in with_.source
    assert "txn-stage" in with_.source and "KIP-1289" in with_.source


def test_caption_names_what_moved_records_without_a_request():
    from kipviz import scenarios
    strip = record_strip(scenarios.run("kip1289.case01_broker_crash_tx_pending").events)
    heads = [f["caption"].splitlines()[0] for f in strip.frames if f["request"] is None]
    assert any("state reloaded after a broker restart" in h for h in heads), heads
    strip = record_strip(scenarios.run("kip932.lock_expiry_delivery_limit").events)
    heads = [f["caption"].splitlines()[0] for f in strip.frames if f["request"] is None]
    assert heads and all(h.endswith("no request: the acquisition lock expired") for h in heads), heads


def test_every_state_label_is_the_full_name_and_fits_its_cell():
    """Issue 25: the strip cut TX_PENDING to TX_PEND. Each cell's state text is the full state name,
    and its width (bold Helvetica, AFM widths) fits the cell with a margin."""
    import importlib
    rs = importlib.import_module("kipviz.draw.record_strip")
    ev = _synthetic()
    ev.append(E.StateChanged(seq=len(ev), t=12, machine="share-record", key="sg/t-0@2", from_state="ACQUIRED",
                             to_state="ARCHIVED", cause="reject"))
    strip = record_strip(ev)
    seen = set()
    for i in range(len(strip)):
        root = ET.fromstring(strip.svg(i))
        rects = [(float(r.get("x")), float(r.get("width"))) for r in root.iter("{http://www.w3.org/2000/svg}rect")
                 if r.get("height") == "56"]
        for t in root.iter("{http://www.w3.org/2000/svg}text"):
            if t.get("font-size") == str(rs.FS_STATE) and t.get("font-weight") == "bold":
                assert t.text in sr.TABLE.states, t.text        # never a cut name
                seen.add(t.text)
                x = float(t.get("x"))
                (cx, cw), = [(cx, cw) for cx, cw in rects if cx <= x <= cx + cw]
                half = rs.label_width(t.text) / 2
                assert cx + 4 <= x - half and x + half <= cx + cw - 4, (t.text, cw)
    assert {"TX_PENDING", "ACKNOWLEDGED", "ACQUIRED", "ARCHIVED"} <= seen
    assert all(rs.label_width(s) + 8 <= rs.CELL_W for s in sr.TABLE.states)


# ---- issue 31: the break drawn where it happens; times from the run's start; clients by client.id ---------------
def test_a_marker_that_resolves_nothing_is_a_frame_with_its_records_dashed_red():
    from kipviz import scenarios
    from kipviz.draw.record_strip import C_MISSED
    strip = record_strip(scenarios.run("kip1289.marker_not_colocated").events)
    first = strip.frames[strip.missed[0]]
    assert len(strip.missed) == 8 and first["changes"] == [] and first["index"] == 2      # after staging
    assert first["caption"].split("\n")[1:] == [
        "broker 1 does not lead in-0 (broker 0 does): the KIP's hook resolves only the share partitions of the "
        "broker the marker reaches", "@0-3 stay TX_PENDING (dashed red) until their lock expires"]
    assert "reached broker 1 and resolved nothing" in first["caption"]
    svg = strip.svg(strip.missed[0])
    assert len(re.findall(rf'stroke="{C_MISSED}" stroke-width="3" stroke-dasharray', svg)) == 4 + 1   # cells, legend
    assert not record_strip(scenarios.run("kip1289.marker_colocated").events).missed


def test_captions_give_times_from_t0_and_name_clients_by_client_id():
    """A live server's clock is epoch ms and it names connections by address: the strip says neither."""
    from kipviz import codec
    from kipviz.records.examples import example_value
    t0 = 1_796_174_194_000
    frame = codec.encode_request("ShareFetch", 1, example_value("ShareFetchRequest", 1), correlation_id=1,
                                 client_id="auditor")
    events = [E.RequestReceived(seq=0, t=t0 + 25, broker=0, client="127.0.0.1:42454", api="ShareFetch", version=1,
                                correlation_id=1, body={"MemberId": "m1"}, frame=frame),
              E.StateChanged(seq=1, t=t0 + 25, machine="share-record", key="sg/t-0@0", from_state="AVAILABLE",
                             to_state="ACQUIRED", cause="acquire")]
    (f,) = record_strip(events, t0=t0).frames
    assert f["caption"].startswith("1/1 · t=25 ms · ShareFetch v1 from auditor (member m1)")
    assert f["lanes"][0]["cells"][0]["owner_client"] == "auditor"
    assert "t=1796174194025 ms" in record_strip(events).frames[0]["caption"]      # without t0: the clock as it is
