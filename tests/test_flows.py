"""kipviz.draw.flows: the regular and the share-group read-process-write flows, one above the other,
drawn from two real runs. The SVG is read as XML: which arrows, notes and step badges are in which
flow (its "column" group), in which order, with which labels; the steps table is read cell by cell."""
from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from kipviz import scenarios
from kipviz.broker import Cluster
from kipviz.draw.flows import Flow, regular_vs_share_flow, share_flow
from kipviz.draw.sequence import C_PROPOSED
from kipviz.scenarios import kip1289_errors as k
from kipviz.scenarios.flows import STEPS, FlowError, classify, flow_runs, flow_window, share_run

NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def runs():
    regular = scenarios.run("txn.read_process_write_commit", seed=0, brokers=3, release="4.0", transaction_version=1)
    share = k.share_commit_run(seed=0, brokers=3)
    assert regular.passed and share.passed
    return regular, share


@pytest.fixture(scope="module")
def flow(runs) -> Flow:
    return regular_vs_share_flow(*runs)


@pytest.fixture(scope="module")
def parts(runs):
    """(__consumer_offsets partition of the regular group, __share_group_state partition of the share group)."""
    regular, share = runs
    return regular.cluster.coordinator_partition(0, "enricher")[1], k.share_state_partition(share)[1]


# ---- reading the SVG ------------------------------------------------------------------------------------------
def column(svg: str, side: str) -> ET.Element:
    root = ET.fromstring(svg)
    (col,) = [g for g in root.iter(NS + "g") if g.get("class") == "kv-flow-column" and g.get("data-side") == side]
    return col


def text_of(g: ET.Element) -> str:
    return " ".join("".join(t.itertext()) for t in g.iter(NS + "text"))


def groups(col: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in col.iter(NS + "g") if cls in (g.get("class") or "").split()]


def labels(col: ET.Element, cls: str) -> list[str]:
    return [text_of(g) for g in groups(col, cls)]


def in_order(seq: list[str], wanted: list[str]) -> bool:
    """Each wanted label is found (as a prefix), after the previous one."""
    i = 0
    for w in wanted:
        while i < len(seq) and not seq[i].startswith(w):
            i += 1
        if i == len(seq):
            return False
        i += 1
    return True


def everything(col: ET.Element) -> str:
    return text_of(col)


def badges(col: ET.Element) -> list[tuple[str, float]]:
    return [(text_of(g), float(g.find(NS + "circle").get("cy"))) for g in groups(col, "kv-step")]


def offset(col: ET.Element) -> tuple[float, float]:
    """Where a flow's sequence diagram is drawn in the combined picture (its group's translate)."""
    (g,) = groups(col, "kipviz-sequence")
    x, y = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", g.get("transform")).groups()
    return float(x), float(y)


def text_boxes(svg: str):
    """(text, left, right, y) of every text in the picture, in its coordinates: the width estimated
    as kipviz.draw.sequence does (Helvetica: about 0.55 em a character) and its anchor applied."""
    from kipviz.draw.sequence import _tw

    def walk(el, dx, dy, size):
        t = el.get("transform")
        if t:
            x, y = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", t).groups()
            dx, dy = dx + float(x), dy + float(y)
        size = float(el.get("font-size", size))
        if el.tag == NS + "text":
            text = "".join(el.itertext())
            w = _tw(text, size) * (1.12 if el.get("font-weight") == "bold" else 1)
            x = float(el.get("x")) + dx
            left = {"middle": x - w / 2, "end": x - w}.get(el.get("text-anchor"), x)
            yield text, left, left + w, float(el.get("y")) + dy, size
        for child in el:
            yield from walk(child, dx, dy, size)
    yield from walk(ET.fromstring(svg), 0.0, 0.0, 16.0)


# ---- the two columns ------------------------------------------------------------------------------------------
def test_two_titled_flows_labelled_released_and_proposed_one_above_the_other(flow):
    regular, share = column(flow.svg, "regular"), column(flow.svg, "share")
    assert regular.get("data-status") == "released" and share.get("data-status") == "proposed"
    (rhead,), (shead,) = groups(regular, "kv-flow-head"), groups(share, "kv-flow-head")
    assert text_of(rhead).startswith("Regular consumer group released sendOffsetsToTransaction")
    assert text_of(shead).startswith("Share group (KIP-1289) proposed sendShareAcknowledgementsToTransaction")
    # the share flow is under the regular one (below its last text), both from the left edge
    (rx, ry), (sx, sy) = offset(regular), offset(share)
    assert rx == sx == 0 and sy > ry
    regular_bottom = max(float(t.get("y")) for t in regular.iter(NS + "text") if t.get("y")) + ry
    assert float(next(t for t in shead.iter(NS + "text")).get("y")) > regular_bottom


def test_the_picture_fits_a_notebook_with_nothing_clipped_and_no_text_under_10_px(flow):
    """Issue 25: side by side the flows were 1824 px wide, scaled into a notebook's ~840 px output
    area (JupyterLab at 1280 px with the file browser open): text at 4.6-7 px. Stacked, the picture
    is drawn at that width: no scaling, every text inside the picture, none smaller than 10 px."""
    svg = flow.svg
    root = ET.fromstring(svg)
    w, h = float(root.get("width")), float(root.get("height"))
    assert w <= 840 and root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    boxes = list(text_boxes(svg))
    assert len(boxes) > 100
    for text, left, right, y, size in boxes:
        assert size >= 10, (text, size)
        assert 0 <= left and right <= w and 0 < y <= h, (text, left, right, y)


def test_regular_column_is_add_offsets_txn_offset_commit_end_txn_and_markers_to_consumer_offsets(flow, parts):
    offsets, _ = parts
    col = column(flow.svg, "regular")
    reqs = labels(col, "kv-req")
    assert in_order(reqs, ["Fetch v17", "AddPartitionsToTxn v3", "Produce v11", "AddOffsetsToTxn v4",
                           "TxnOffsetCommit v4", "EndTxn v4"])
    internal = labels(col, "kv-internal")
    assert in_order(internal, ["WriteTxnMarkers COMMIT orders-enriched-0", "WriteTxnMarkers COMMIT orders-enriched-1",
                               f"WriteTxnMarkers COMMIT __consumer_offsets-{offsets}"])
    records = labels(col, "kv-record")
    assert any(f"__consumer_offsets-{offsets} @" in r and "OffsetCommit orders-0" in r for r in records)
    assert any(m.startswith(f"__consumer_offsets-{offsets} @") and "COMMIT marker" in m for m in labels(col, "kv-marker"))
    # AddOffsetsToTxn puts __consumer_offsets-N into the transaction before TxnOffsetCommit writes to it
    text = everything(col)
    assert text.index("AddOffsetsToTxn v4") < text.index(f"__consumer_offsets-{offsets}") < text.index("TxnOffsetCommit v4 ")
    assert "TxnShareAcknowledge" not in text and "__share_group_state" not in text and "proposed" not in text


def test_share_column_is_share_fetch_txn_share_acknowledge_registration_end_txn_and_markers_to_share_state(
        flow, parts):
    _, state = parts
    col = column(flow.svg, "share")
    assert in_order(labels(col, "kv-req"), ["ShareFetch v1", "Produce v13", "TxnShareAcknowledge v0 · proposed",
                                            "EndTxn v5"])
    text = everything(col)
    order = ["ShareFetch v1", "AVAILABLE → ACQUIRED", "TxnShareAcknowledge v0 · proposed",
             f"AddPartitionsToTxn (broker-internal) __share_group_state-{state} · proposed",
             "ACQUIRED → TX_PENDING (proposed)", "EndTxn v5",
             f"WriteTxnMarkers COMMIT __share_group_state-{state}", "TX_PENDING → ACKNOWLEDGED (proposed)",
             "PrepareCommit → CompleteCommit"]
    at = [text.find(s) for s in order]
    assert -1 not in at and at == sorted(at), dict(zip(order, at, strict=True))
    # the broker-internal registration is a dotted arrow from the share-partition leader to the coordinator
    (reg,) = [g for g in groups(col, "kv-internal") if "broker-internal" in text_of(g)]
    assert reg.find(NS + "line").get("stroke-dasharray") == "2,3"
    # the proposed RPC's arrows are labelled proposed, in the proposed colour
    props = [g for g in groups(col, "kv-req") + groups(col, "kv-resp") if "TxnShareAcknowledge" in text_of(g)]
    assert [text_of(g) for g in props] == ["TxnShareAcknowledge v0 · proposed"] * 2
    assert {t.get("fill") for g in props for t in g.iter(NS + "text")} == {C_PROPOSED}
    assert {t.get("fill") for g in groups(col, "kv-req") if "EndTxn" in text_of(g) for t in g.iter(NS + "text")} != {
        C_PROPOSED}
    assert any(m.startswith(f"__share_group_state-{state} @") and "COMMIT marker" in m for m in labels(col, "kv-marker"))
    assert "AddOffsetsToTxn" not in text and "TxnOffsetCommit" not in text and "__consumer_offsets" not in text


def test_matching_steps_are_numbered_in_order_in_both_flows(flow):
    for side in ("regular", "share"):
        bs = badges(column(flow.svg, side))
        nums = [int(n) for n, _ in bs]
        assert nums == sorted(nums) and set(nums) == set(STEPS), side
        ys = [y for _, y in bs]
        assert ys == sorted(ys) and len(set(ys)) == len(ys), side       # each badge on its own row


def test_compact_draws_only_step_events_and_folds_repeated_produce(flow):
    reqs = labels(column(flow.svg, "regular"), "kv-req")
    assert sum(r.startswith("Produce") for r in reqs) == 2                    # one per broker, of 6
    assert flow.regular.folded == 4 and "4 repeated Produce exchanges folded" in everything(
        column(flow.svg, "regular"))
    assert not any(r.startswith(("ApiVersions", "Metadata", "FindCoordinator")) for r in reqs)
    assert all(e.seq in flow.regular.steps for e in flow.regular.events)
    assert "×3" in flow.steps.loc[1, "regular"]                               # the table counts them all


def test_not_compact_draws_the_whole_window():
    f = regular_vs_share_flow(*flow_runs(), compact=False)
    assert f.regular.events == f.regular.window and f.regular.folded == 0
    assert any(r.startswith("Metadata") for r in labels(column(f.svg, "regular"), "kv-req"))


# ---- the steps table ---------------------------------------------------------------------------------------------
def test_steps_table_lists_the_corresponding_steps_of_both_flows(flow, parts):
    offsets, state = parts
    df = flow.steps.set_index("step")
    assert list(df.index) == list(STEPS) and list(df["what"]) == list(STEPS.values())
    assert set(df["regular_status"]) == {"released"}
    assert df["share_status"].to_dict() == {1: "released", 2: "released", 3: "proposed", 4: "proposed",
                                            5: "released", 6: "released", 7: "proposed", 8: "released"}
    assert df.loc[1, "regular"].startswith("Fetch v17") and df.loc[1, "share"].startswith("ShareFetch v1")
    assert "AddOffsetsToTxn v4 → transaction coordinator" in df.loc[3, "regular"]
    assert "TxnShareAcknowledge v0 (proposed) → partition leader" in df.loc[3, "share"]
    assert f"AddPartitionsToTxn (broker-internal) __share_group_state-{state} (proposed)" in df.loc[3, "share"]
    assert f"__consumer_offsets-{offsets}: OffsetCommit (transactional) ×2" in df.loc[4, "regular"]
    assert "share-record ACQUIRED → TX_PENDING (proposed) ×4" in df.loc[4, "share"]
    assert df.loc[5, "regular"].startswith("EndTxn v4") and df.loc[5, "share"].startswith("EndTxn v5")
    assert f"COMMIT marker on __consumer_offsets-{offsets}" in df.loc[6, "regular"]
    assert f"COMMIT marker on __share_group_state-{state}" in df.loc[6, "share"]
    assert "share-record TX_PENDING → ACKNOWLEDGED (proposed) ×4" in df.loc[7, "share"]
    assert "PrepareCommit → CompleteCommit" in df.loc[8, "regular"] and "PrepareCommit → CompleteCommit" in df.loc[8, "share"]
    # the event numbers point at the run's events of that step
    regular, _ = flow.sides
    by_seq = {e.seq: e for e in regular.window}
    assert {by_seq[s].api for s in df.loc[3, "regular_events"] if by_seq[s].kind == "RequestReceived"} == {
        "AddOffsetsToTxn"}


def test_classify_numbers_each_flow_in_order(runs):
    for trace in runs:
        w = flow_window(trace.events)
        window = trace.events[w.lo:w.hi]
        steps = classify(window, clients=(w.consumer, w.producer))
        order = [steps[e.seq] for e in window if e.seq in steps]
        assert order == sorted(order) and set(order) == set(STEPS)
        assert window[0].kind == "RequestReceived" and window[0].api in ("Fetch", "ShareFetch")
        assert window[-1].kind == "ResponseSent" and window[-1].api == "EndTxn" and steps[window[-1].seq] == 8


def test_a_checking_reader_inside_the_transaction_is_no_step(runs):
    regular, _ = runs
    w = flow_window(regular.events)
    window = regular.events[w.lo:w.hi]
    fake = [e for e in window if e.kind == "RequestReceived" and e.api == "Fetch"][0]
    intruder = dataclasses.replace(fake, client="checking-reader", seq=10**6)
    steps = classify(window + [intruder], clients=(w.consumer, w.producer))
    assert intruder.seq not in steps and classify(window + [intruder])[intruder.seq] == 1


# ---- any two runs ---------------------------------------------------------------------------------------------------
def test_any_two_traces_clusters_or_event_lists():
    tv2 = scenarios.run("txn.read_process_write_commit", seed=2, brokers=3, transaction_version=2)
    share = k.share_commit_run(seed=2)
    f = regular_vs_share_flow(tv2.cluster, list(share.events))
    df = f.steps.set_index("step")
    # transaction.version 2 on trunk: no AddOffsetsToTxn; TxnOffsetCommit v6 (KIP-1319, released in Kafka 4.4) adds the partition
    offsets = tv2.cluster.coordinator_partition(0, "enricher")[1]
    assert "AddOffsetsToTxn" not in df.loc[3, "regular"]
    assert df.loc[3, "regular"].startswith("TxnOffsetCommit v6 → group coordinator")
    assert f"AddPartitionsToTxn v5 (add) __consumer_offsets-{offsets}" in df.loc[3, "regular"]
    col = column(f.svg, "regular")
    assert col.get("data-status") == "released" and "TxnOffsetCommit v6" in labels(col, "kv-req")
    assert f.regular.source.startswith(f"{len(tv2.events)} events") and f.share.source.startswith(
        f"{len(share.events)} events")


def test_default_runs():
    f = regular_vs_share_flow(*flow_runs(seed=1))
    assert f.regular.source.startswith("txn.read_process_write_commit")
    assert f.share.source.startswith("kip1289.marker_not_colocated")     # named for what it shows
    assert "AddOffsetsToTxn v4" in labels(column(f.svg, "regular"), "kv-req")
    assert any(r.startswith("TxnShareAcknowledge v0 · proposed") for r in labels(column(f.svg, "share"), "kv-req"))


def test_events_without_a_committed_transaction_or_not_events_are_refused():
    aborted = scenarios.run("txn.read_process_write_abort")
    cut = [e for e in aborted.events]
    first_commit = max(i for i, e in enumerate(cut) if e.kind == "RequestReceived" and e.api == "EndTxn")
    with pytest.raises(FlowError, match="no transaction commits"):
        regular_vs_share_flow(cut[:first_commit], k.share_commit_run().events)
    with pytest.raises(FlowError, match="regular: expected a Trace"):
        regular_vs_share_flow(42, k.share_commit_run())
    with pytest.raises(FlowError, match="no scenario 'kip1289.nope'"):
        flow_runs(aborted, "kip1289.nope")
    with pytest.raises(FlowError, match="the drawing runs nothing"):
        regular_vs_share_flow(aborted, "kip1289.marker_colocated")
    with pytest.raises(FlowError, match="not a kipviz.schema.events event"):
        regular_vs_share_flow(aborted, ["not an event"])
    with pytest.raises(FlowError, match="not a read-process-write loop"):
        c = Cluster(seed=0)
        c.create_topic("t", 1)
        from kipviz.clients import Producer
        p = Producer(c, "tx", client_id="p")
        p.init_transactions()
        p.begin_transaction()
        p.send("t", b"k", b"v", partition=0)
        p.commit_transaction()
        regular_vs_share_flow(c, k.share_commit_run())


# ---- output ----------------------------------------------------------------------------------------------------------
def test_html_is_standalone_with_the_picture_and_the_table(flow, tmp_path):
    page = flow.html
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 1
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page) and "@import" not in page
    table = page[page.index('<table class="kv-flow-steps"'):page.index("</table>")]
    assert table.count("<tr>") == 1 + len(STEPS) and "TxnShareAcknowledge v0 (proposed)" in table
    assert flow.save(str(tmp_path / "f.html")) and (tmp_path / "f.html").read_text() == page
    flow.save(str(tmp_path / "f.svg"))
    assert ET.fromstring((tmp_path / "f.svg").read_text()).tag == NS + "svg"
    assert flow._repr_html_().startswith("<svg")


# ---- the sequence_diagram options the flows use -------------------------------------------------------------------
def _events():
    from kipviz.schema import events as E
    evs = []

    def add(cls, **kw):
        evs.append(cls(seq=len(evs), t=0, **kw))
    add(E.RequestReceived, broker=1, client="p", api="TxnShareAcknowledge", version=0, correlation_id=1, body={})
    add(E.ShareStatePartitionsAdded, transactional_id="tx", producer_id=1, producer_epoch=0,
        partitions=(("__share_group_state", 3),), via="TxnShareAcknowledge", error_code=0, coordinator=2)
    add(E.ResponseSent, broker=1, client="p", api="TxnShareAcknowledge", version=0, correlation_id=1, body={},
        error_codes=())
    add(E.PartitionAddedToTxn, version=5, verify_only=False, transactional_id="tx", producer_id=1, producer_epoch=0,
        topic="out", partition=0, via="Produce v13", error_code=0, coordinator=2)
    add(E.RequestReceived, broker=2, client="p", api="TxnOffsetCommit", version=6, correlation_id=2, body={})
    add(E.ResponseSent, broker=2, client="p", api="TxnOffsetCommit", version=6, correlation_id=2, body={},
        error_codes=())
    return evs


def test_sequence_options_are_off_by_default():
    from kipviz.draw.sequence import sequence_diagram
    root = ET.fromstring(sequence_diagram(_events()))
    assert [text_of(g) for g in groups(root, "kv-req")] == ["TxnShareAcknowledge v0", "TxnOffsetCommit v6"]
    assert groups(root, "kv-internal") == [] and len(groups(root, "kv-band")) == 2 and groups(root, "kv-step") == []


def test_sequence_status_labels_and_internal_arrows():
    from kipviz.draw.sequence import sequence_diagram
    root = ET.fromstring(sequence_diagram(_events(), status_labels=True, internal_arrows=True))
    assert [text_of(g) for g in groups(root, "kv-req")] == ["TxnShareAcknowledge v0 · proposed",
                                                             "TxnOffsetCommit v6"]
    assert [text_of(g) for g in groups(root, "kv-resp")] == ["TxnShareAcknowledge v0 · proposed",
                                                              "TxnOffsetCommit v6"]
    # the registration while a request is handled is an arrow from that request's lifeline ...
    (arrow,) = groups(root, "kv-internal")
    assert text_of(arrow) == "AddPartitionsToTxn (broker-internal) __share_group_state-3 · proposed"
    heads = list(dict.fromkeys(text_of(g) for g in groups(root, "kv-head")))
    assert heads == ["p", "partition leader (broker 1)", "transaction coordinator (broker 2)",
                     "group coordinator (broker 2)"]
    line = arrow.find(NS + "line")
    assert float(line.get("x1")) < float(line.get("x2"))        # partition leader -> coordinator
    # ... one outside any request stays a band
    assert [text_of(g) for g in groups(root, "kv-band")] == ["AddPartitionsToTxn v5 (add) for out-0 from Produce v13"]


def test_sequence_marks_align_and_layout():
    from kipviz.draw.sequence import sequence_diagram
    marks = {0: "1", 1: "1", 2: "1", 4: "2", 5: "2"}
    layout: dict = {}
    plain = ET.fromstring(sequence_diagram(_events(), marks=marks, layout=layout))
    assert [(text_of(g), g.get("data-step")) for g in groups(plain, "kv-step")] == [("1", "1"), ("2", "2")]
    y2 = layout["steps"]["2"]
    assert layout["steps"]["1"] < y2 and layout["height"] == int(plain.get("height"))
    pushed: dict = {}
    svg = sequence_diagram(_events(), marks=marks, align={"2": y2 + 100}, layout=pushed)
    assert pushed["steps"]["2"] == y2 + 100 and pushed["height"] == layout["height"] + 100
    cys = [float(g.find(NS + "circle").get("cy")) for g in groups(ET.fromstring(svg), "kv-step")]
    assert cys[1] == y2 + 100 + 14


# ---- KIP-1289 as written: each step on the broker where it happens ----------------------------------------------
def lanes(col: ET.Element) -> dict[str, float]:
    """{broker lane name: x of its centre} (the top heads of a column)."""
    out = {}
    for g in groups(col, "kv-server"):
        r = g.find(NS + "rect")
        out.setdefault(text_of(g), float(r.get("x")) + float(r.get("width")) / 2)
    return out


def lane_of(col: ET.Element, g: ET.Element) -> str:
    """The lane nearest to a note (its box's centre) or an arrow's end (its line's x2)."""
    line = g.find(NS + "line")
    if line is not None:
        x = float(line.get("x2"))
    else:
        r = g.find(NS + "rect")
        x = float(r.get("x")) + float(r.get("width")) / 2
    ls = lanes(col)
    return min(ls, key=lambda name: abs(ls[name] - x))


def test_default_share_flow_is_the_kip_as_written_and_shows_the_records_stuck():
    """The measured case: 3 brokers, seed 0: staged on broker 0 (in-0's leader), the COMMIT marker for
    __share_group_state-N to broker 1, which does not lead in-0: nothing resolves them. The run is
    named for that (kip1289.marker_not_colocated), not happy_commit (issue 31)."""
    f = regular_vs_share_flow(*flow_runs())
    assert f.share.source.startswith("kip1289.marker_not_colocated")
    df = f.steps.set_index("step")
    state = re.search(r"__share_group_state-(\d+)", df.loc[6, "share"]).group(0)
    assert "TxnShareAcknowledge v0 (proposed) → partition leader (broker 0)" in df.loc[3, "share"]
    assert f"WriteTxnMarkers COMMIT → broker 1: {state}" in df.loc[6, "share"]
    assert "resolved nothing on broker 1 for in-0 @0,1,2,3, led by broker 0" in df.loc[7, "share"]
    assert "ACKNOWLEDGED" not in df.loc[7, "share"]
    col = column(f.svg, "share")
    assert set(lanes(col)) == {"broker 0 (leader, txn coordinator)", "broker 1 (share coordinator, leader)"}
    staged = [g for g in groups(col, "kv-state") if "ACQUIRED → TX_PENDING" in text_of(g)]
    assert len(staged) == 4 and {lane_of(col, g) for g in staged} == {"broker 0 (leader, txn coordinator)"}
    (marker,) = [g for g in groups(col, "kv-marker") if state in text_of(g)]
    assert lane_of(col, marker) == "broker 1 (share coordinator, leader)"


def test_share_flow_draws_the_share_side_alone():
    """Issue 31: the forwarded and participants runs were drawn below the same regular flow each time."""
    f = share_flow(share_run("kip1289.marker_forwarded"))
    root = ET.fromstring(f.svg)
    assert [g.get("data-side") for g in root.iter(NS + "g") if g.get("class") == "kv-flow-column"] == ["share"]
    assert f.share.source.startswith("kip1289.marker_forwarded") and f.regular is None
    assert list(f.steps.columns) == ["step", "what", "share", "share_status", "share_events"]
    assert "Regular consumer group" not in f.html and "TxnShareAcknowledge v0" in f.html


def test_forwarded_flow_resolves_on_the_broker_that_resolved_it():
    f = regular_vs_share_flow(*flow_runs(share="kip1289.marker_forwarded"))
    col = column(f.svg, "share")
    b0 = next(n for n in lanes(col) if n.startswith("broker 0"))
    b1 = next(n for n in lanes(col) if n.startswith("broker 1"))
    (fwd,) = [g for g in groups(col, "kv-internal") if "forward COMMIT marker" in text_of(g)]
    assert "kit's suggestion" in text_of(fwd) and lane_of(col, fwd) == b0
    x1 = float(fwd.find(NS + "line").get("x1"))
    assert abs(x1 - lanes(col)[b1]) < 1
    done = [g for g in groups(col, "kv-state") if "TX_PENDING → ACKNOWLEDGED" in text_of(g)]
    assert len(done) == 4 and {lane_of(col, g) for g in done} == {b0}
    df = f.steps.set_index("step")
    assert "broker 0 resolved 4 TX_PENDING record(s) of in-0 (forwarded by broker 1" in df.loc[7, "share"]


def test_classification_reads_typed_fields_not_sentences(runs, monkeypatch):
    from kipviz.schema import events as E
    traces = (*runs, scenarios.run("kip1289.marker_forwarded"))
    windows = [(trace.events[w.lo:w.hi], (w.consumer, w.producer)) for trace in traces
               for w in (flow_window(trace.events),)]
    expected = [classify(window, clients=clients) for window, clients in windows]

    def no_reading(self):
        raise AssertionError(f"classify read the sentence of {type(self).__name__}")
    monkeypatch.setattr(E.Happened, "text", property(no_reading))
    assert [classify(window, clients=clients) for window, clients in windows] == expected


def test_flow_facts_live_in_scenarios_and_the_drawing_runs_nothing():
    import inspect
    import subprocess
    import sys

    from kipviz.draw import flows as drawn
    assert drawn.__all__ == ["regular_vs_share_flow", "share_flow", "Flow"]      # no re-exported facts
    src = inspect.getsource(drawn)
    imports = [line for line in src.splitlines() if line.startswith(("from ", "import "))]
    assert not any("flow_runs" in line or "share_run" in line for line in imports)
    with pytest.raises(TypeError):
        drawn.regular_vs_share_flow()                    # the runs are the caller's (flow_runs)
    code = "import sys, kipviz.scenarios.flows; print(any(m.startswith('kipviz.draw') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_sequence_lanes_per_broker_merge_every_role_of_a_broker():
    from kipviz.draw.sequence import sequence_diagram
    from kipviz.schema import events as E
    evs = []
    for i, (b, api) in enumerate([(2, "Metadata"), (2, "Produce"), (1, "EndTxn"), (2, "InitProducerId")]):
        evs.append(E.RequestReceived(seq=2 * i, t=0, broker=b, client="p", api=api, version=0, correlation_id=i, body={}))
        evs.append(E.ResponseSent(seq=2 * i + 1, t=0, broker=b, client="p", api=api, version=0, correlation_id=i,
                                  body={}))
    by_role = ET.fromstring(sequence_diagram(evs))
    by_broker = ET.fromstring(sequence_diagram(evs, lanes="broker"))
    heads = lambda root: sorted({text_of(g) for g in root.iter(NS + "g") if g.get("class") == "kv-head kv-server"})  # noqa: E731
    assert heads(by_role) == ["broker 2", "partition leader (broker 2)", "transaction coordinator (broker 1)",
                              "transaction coordinator (broker 2)"]
    assert heads(by_broker) == ["broker 1 (txn coordinator)", "broker 2 (leader, txn coordinator)"]
