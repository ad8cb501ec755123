"""kipviz.draw.sequence: sequence diagrams drawn from a scenario's events.

The SVG is checked as XML (it must parse), then by its text elements and their colours: lifeline
heads, arrow labels ("Api vN"), error names in red, notes for internal-topic writes and state
changes. Scenarios are built from typed events here, and one comes from a real Cluster."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.draw.sequence import (
    C_ERROR,
    lifeline_of,
    record_summary,
    sequence_diagram,
    sequence_html,
)
from kipviz.records import encode_internal
from kipviz.records.examples import example_value
from kipviz.schema import events as E

NS = "{http://www.w3.org/2000/svg}"


class Events:
    def __init__(self):
        self.events: list[E.Event] = []
        self.t = 0

    def add(self, cls, **kw):
        self.events.append(cls(seq=len(self.events), t=self.t, **kw))
        return self

    def request(self, client, api, version, cid, broker=0, body=None):
        return self.add(E.RequestReceived, broker=broker, client=client, api=api, version=version,
                        correlation_id=cid, body=body or {})

    def response(self, client, api, version, cid, broker=0, errors=(), body=None):
        return self.add(E.ResponseSent, broker=broker, client=client, api=api, version=version,
                        correlation_id=cid, body=body or {}, error_codes=tuple(errors))


def offset_commit(ev: Events, partition: int, offset: int, log_offset: int, tp=("orders", 3)):
    k, v = encode_internal("OffsetCommit", key={"group": "g1", "topic": tp[0], "partition": tp[1]},
                           value={"offset": offset, "leaderEpoch": -1, "metadata": "", "commitTimestamp": ev.t})
    return ev.add(E.RecordAppended, topic="__consumer_offsets", partition=partition, offset=log_offset,
                  record={}, key=k, value=v, broker=1)


def txn_log(ev: Events, status: int, log_offset: int):
    k, v = encode_internal("TransactionLog", key={"TransactionalId": "tx-1"}, value={
        "ProducerId": 4001, "ProducerEpoch": 3, "TransactionTimeoutMs": 60000, "TransactionStatus": status,
        "TransactionPartitions": [{"Topic": "orders", "PartitionIds": [3]}],
        "TransactionLastUpdateTimestampMs": ev.t, "TransactionStartTimestampMs": 0})
    return ev.add(E.RecordAppended, topic="__transaction_state", partition=7, offset=log_offset, record={},
                  key=k, value=v, broker=2)


@pytest.fixture
def scenario() -> list[E.Event]:
    ev = Events()
    ev.add(E.TopicAutoCreated, topic="orders", api="Metadata")
    ev.request("producer-1", "FindCoordinator", 6, 1).response("producer-1", "FindCoordinator", 6, 1)
    ev.t = 5
    ev.request("producer-1", "InitProducerId", 5, 2, broker=2)
    txn_log(ev, 0, 0)
    ev.response("producer-1", "InitProducerId", 5, 2, broker=2)
    ev.t = 10
    ev.request("producer-1", "AddPartitionsToTxn", 5, 3, broker=2)
    ev.add(E.StateChanged, machine="transaction", key="tx-1", from_state="Empty", to_state="Ongoing",
           cause="add-partitions")
    ev.response("producer-1", "AddPartitionsToTxn", 5, 3, broker=2)
    ev.t = 12
    ev.request("producer-1", "Produce", 11, 4, broker=0).response("producer-1", "Produce", 11, 4, broker=0)
    ev.t = 15
    ev.request("producer-1", "TxnOffsetCommit", 6, 5, broker=1)
    ev.response("producer-1", "TxnOffsetCommit", 6, 5, broker=1, errors=(25,))
    ev.add(E.TxnOffsetCommitFailed, client="producer-1", topic="orders", partition=0, error="UNKNOWN_MEMBER_ID",
           handling="abort", version=6)
    ev.t = 20
    ev.request("producer-1", "EndTxn", 5, 6, broker=2)
    ev.add(E.StateChanged, machine="transaction", key="tx-1", from_state="Ongoing", to_state="PrepareCommit",
           cause="end-txn-commit")
    txn_log(ev, 2, 1)
    ev.response("producer-1", "EndTxn", 5, 6, broker=2)
    ev.t = 21
    ev.add(E.RecordAppended, topic="orders", partition=3, offset=42, record={"type": "COMMIT"}, control=True,
           producer_id=4001, producer_epoch=3, transactional=True, broker=0)
    ev.add(E.StateChanged, machine="transaction", key="tx-1", from_state="PrepareCommit",
           to_state="CompleteCommit", cause="markers-written")
    ev.t = 30
    ev.request("consumer-1", "OffsetCommit", 9, 1, broker=1)
    offset_commit(ev, 12, 150382, 5)
    offset_commit(ev, 12, 7, 6, tp=("orders", 4))
    ev.response("consumer-1", "OffsetCommit", 9, 1, broker=1)
    return ev.events


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == NS + "svg"
    return root


def texts(svg: str) -> list[tuple[str, str]]:
    """(text, fill colour) of every <text> element."""
    return [("".join(t.itertext()), t.get("fill")) for t in parse(svg).iter(NS + "text")]


def all_text(svg: str) -> str:
    return "\n".join(t for t, _ in texts(svg))


def groups(svg: str, cls: str) -> list[ET.Element]:
    return [g for g in parse(svg).iter(NS + "g") if cls in (g.get("class") or "").split()]


def group_text(g: ET.Element) -> str:
    """A group's text lines joined with spaces (notes wrap long lines)."""
    return " ".join("".join(t.itertext()) for t in g.iter(NS + "text"))


# ---- lifelines ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("api, expected", [
    *[(a, "group coordinator (broker 1)") for a in (
        "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "TxnOffsetCommit",
        "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ListGroups", "DescribeGroups")],
    *[(a, "transaction coordinator (broker 1)") for a in (
        "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers")],
    *[(a, "partition leader (broker 1)") for a in ("Produce", "Fetch", "ListOffsets")],
    *[(a, "broker 1") for a in ("Metadata", "ApiVersions", "FindCoordinator", "CreateTopics")],
])
def test_each_api_goes_to_its_lifeline(api, expected):
    assert lifeline_of(api, 1) == expected


def test_lifelines_are_clients_then_broker_roles_in_order_of_appearance(scenario):
    svg = sequence_diagram(scenario)
    heads = [group_text(g) for g in groups(svg, "kv-head")]
    order = list(dict.fromkeys(heads))
    assert order == ["producer-1", "consumer-1", "broker 0", "transaction coordinator (broker 2)",
                     "partition leader (broker 0)", "group coordinator (broker 1)"]
    assert len(heads) == 2 * len(order)               # head and foot of every lifeline
    assert list(dict.fromkeys(group_text(g) for g in groups(svg, "kv-client"))) == ["producer-1", "consumer-1"]
    assert len(groups(svg, "kv-lifeline")) == 0 and svg.count('class="kv-lifeline"') == len(order)


# ---- arrows --------------------------------------------------------------------------------------------------
def _arrow(g: ET.Element) -> tuple[str, bool]:
    line = g.find(NS + "line")
    return group_text(g), line.get("stroke-dasharray") is not None


def test_requests_are_solid_arrows_and_responses_dashed_labelled_api_and_version(scenario):
    svg = sequence_diagram(scenario)
    requests = [_arrow(g) for g in groups(svg, "kv-req")]
    responses = [_arrow(g) for g in groups(svg, "kv-resp")]
    assert ("TxnOffsetCommit v6", False) in requests and ("OffsetCommit v9", False) in requests
    assert ("OffsetCommit v9", True) in responses and ("EndTxn v5", True) in responses
    assert len(requests) == len(responses) == 7
    assert not any(dashed for _, dashed in requests) and all(dashed for _, dashed in responses)


def test_error_responses_are_red_with_the_error_name(scenario):
    svg = sequence_diagram(scenario)
    red = [t for t, fill in texts(svg) if fill == C_ERROR]
    assert red == ["TxnOffsetCommit v6 · UNKNOWN_MEMBER_ID"]
    (err,) = groups(svg, "kv-error")
    assert err.find(NS + "line").get("stroke") == C_ERROR


def test_arrows_show_the_message_body_on_hover():
    ev = Events().request("p", "EndTxn", 5, 1, body={"TransactionalId": "tx-1", "Committed": True})
    (req,) = groups(sequence_diagram(ev.events), "kv-req")
    assert req.find(NS + "title").text == '{"TransactionalId": "tx-1", "Committed": true}'


# ---- notes -----------------------------------------------------------------------------------------------------
def _x(svg: str, g: ET.Element) -> float:
    rect = g.find(NS + "rect")
    return float(rect.get("x")) + float(rect.get("width")) / 2


def _lifeline_x(svg: str, name: str) -> float:
    (head, _) = [g for g in groups(svg, "kv-head") if group_text(g) == name]
    return _x(svg, head)


def test_internal_topic_writes_are_notes_on_the_coordinator(scenario):
    svg = sequence_diagram(scenario)
    notes = [group_text(g) for g in groups(svg, "kv-record")]
    assert notes[0].startswith("__transaction_state-7 @0: TransactionLog tx-1: Empty (producer 4001, epoch 3)")
    assert notes[1] == "__transaction_state-7 @1: TransactionLog tx-1: PrepareCommit (producer 4001, epoch 3) [orders-3]"
    # consecutive writes of one request share a note, one line each
    offsets = groups(svg, "kv-record")[2]
    assert ["".join(t.itertext()) for t in offsets.iter(NS + "text")] == [
        "__consumer_offsets-12 @5: OffsetCommit orders-3=150382", "__consumer_offsets-12 @6: OffsetCommit orders-4=7"]
    # notes sit on (are centred at, unless the edge of the picture pushes them) the coordinator's lifeline
    assert abs(_x(svg, groups(svg, "kv-record")[0]) - _lifeline_x(svg, "transaction coordinator (broker 2)")) < 1


def test_transaction_markers_are_notes_on_the_partition_leader(scenario):
    svg = sequence_diagram(scenario)
    (marker,) = groups(svg, "kv-marker")
    assert group_text(marker) == "orders-3 @42: COMMIT marker (producer 4001, epoch 3)"
    assert abs(_x(svg, marker) - _lifeline_x(svg, "partition leader (broker 0)")) < 1


def test_state_changes_are_small_notes(scenario):
    svg = sequence_diagram(scenario)
    assert [group_text(g) for g in groups(svg, "kv-state")] == [
        "txn tx-1: Empty → Ongoing", "txn tx-1: Ongoing → PrepareCommit", "txn tx-1: PrepareCommit → CompleteCommit"]
    for g in groups(svg, "kv-state"):
        assert abs(_x(svg, g) - _lifeline_x(svg, "transaction coordinator (broker 2)")) < 1
    assert {t.get("font-size") for g in groups(svg, "kv-state") for t in g.iter(NS + "text")} == {"10"}


def test_proposed_state_changes_say_so():
    ev = Events().add(E.StateChanged, machine="share-record", key="g/orders-0@5", from_state="Acquired",
                      to_state="TxPending", cause="txn-ack", status="proposed")
    (note,) = groups(sequence_diagram(ev.events), "kv-state")
    assert group_text(note) == "share-record g/orders-0@5: Acquired → TxPending (proposed)"


def test_markers_the_coordinator_sends_are_dotted_arrows_between_brokers():
    ev = Events()
    ev.add(E.MarkerSent, broker=1, coordinator=2, transactional_id="tx-1", topic="orders", partition=3,
           marker="COMMIT", producer_id=1, producer_epoch=0)
    svg = sequence_diagram(ev.events)
    (arrow,) = groups(svg, "kv-internal")
    assert group_text(arrow) == "WriteTxnMarkers COMMIT orders-3"
    assert arrow.find(NS + "line").get("stroke-dasharray") == "2,3"
    assert [group_text(g) for g in groups(svg, "kv-head")][::2] == ["transaction coordinator (broker 2)",
                                                                    "partition leader (broker 1)"]


def test_client_decisions_and_broker_sentences_are_shown(scenario):
    text = all_text(sequence_diagram(scenario))
    assert "txn-offset-commit-error: topic=orders, partition=0," in text
    assert "topic orders auto-created by a Metadata request" in text


def test_time_runs_down_the_left_edge(scenario):
    text = all_text(sequence_diagram(scenario))
    for t in (0, 5, 10, 12, 15, 20, 21, 30):
        assert f"{t} ms" in text.splitlines()


def test_record_summary_of_a_tombstone_and_an_undecodable_record():
    k, _ = encode_internal("OffsetCommit", key={"group": "g", "topic": "a", "partition": 0}, value=None)
    ev = E.RecordAppended(seq=0, t=0, topic="__consumer_offsets", partition=1, offset=2, record={}, key=k, value=None)
    assert record_summary(ev) == "__consumer_offsets-1 @2: OffsetCommit a-0 (tombstone)"
    odd = E.RecordAppended(seq=0, t=0, topic="__consumer_offsets", partition=1, offset=3,
                           record={"type": "Mystery", "group": "g"}, key=b"\xff", value=b"")
    assert record_summary(odd).startswith("__consumer_offsets-1 @3: Mystery")


# ---- text, size, standalone ----------------------------------------------------------------------------------
def test_text_is_escaped():
    ev = Events()
    ev.request("<script>alert(1)</script>", "Metadata", 12, 1).response("<script>alert(1)</script>", "Metadata", 12, 1)
    ev.add(E.TopicAutoCreated, topic="a & b < c", api="Metadata")
    svg = sequence_diagram(ev.events, title="x <y>")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "a & b < c" in all_text(svg) and "x <y>" in all_text(svg)


def test_max_events_cuts_and_says_how_many_more(scenario):
    svg = sequence_diagram(scenario, max_events=5)
    text = all_text(svg)
    assert f"… {len(scenario) - 5} more events not shown" in text
    assert "OffsetCommit v9" not in text


def test_width_is_about_1000px_for_a_handful_of_lifelines(scenario):
    root = parse(sequence_diagram(scenario))
    assert 900 <= int(root.get("width")) <= 1100


def test_sequence_html_is_standalone(scenario):
    page = sequence_html(scenario, title="txn")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "TxnOffsetCommit v6" in page
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page)
    assert "@import" not in page and "url(http" not in page


def test_a_cluster_is_accepted_and_its_real_events_drawn():
    c = Cluster(api_versions={"Metadata": (0, 5)})
    c.handle(codec.encode_request("ApiVersions", 3, example_value("ApiVersionsRequest", 3), correlation_id=1,
                                  client_id="kipviz"), client="admin-1")
    c.handle(codec.encode_request("Metadata", 12, example_value("MetadataRequest", 12), correlation_id=2,
                                  client_id="kipviz"), client="admin-1")
    svg = sequence_diagram(c, title="real events")
    red = [t for t, fill in texts(svg) if fill == C_ERROR]
    # Kafka answers no version it does not serve: the request is drawn, then the closed connection
    assert "ApiVersions v3" in all_text(svg) and "Metadata v12" in all_text(svg) and red == []
    assert "connection closed: Metadata v12 is not served (this broker serves v0-v5)" in all_text(svg)
    # the client's lane is named by the client.id its request headers carry, not by the connection
    assert "broker 0" in all_text(svg) and "kipviz" in all_text(svg) and "admin-1" not in all_text(svg)


def test_a_real_transaction_is_drawn_from_the_model():
    from kipviz.broker.handlers import HANDLERS
    c = Cluster(seed=1)                           # loads the handlers
    if not {"InitProducerId", "AddPartitionsToTxn", "EndTxn"} <= set(HANDLERS):
        pytest.skip("the transaction coordinator's handlers are not there")
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
    svg = sequence_diagram(c)
    states = [group_text(g) for g in groups(svg, "kv-state")]
    changes = [e for e in c.events if isinstance(e, E.StateChanged)]
    assert len(states) == len(changes) and "txn tx-1: Ongoing → PrepareCommit" in states
    writes = [e for e in c.events if isinstance(e, E.RecordAppended) and e.topic == "__transaction_state"]
    notes = " ".join(group_text(g) for g in groups(svg, "kv-record"))
    assert writes and all(f"__transaction_state-{w.partition} @{w.offset}: TransactionLog tx-1" in notes for w in writes)
    assert [group_text(g) for g in groups(svg, "kv-req")] == ["InitProducerId v5", "AddPartitionsToTxn v3", "EndTxn v5"]


def test_no_events_still_draw():
    assert "no events" in all_text(sequence_diagram([]))


# ---- any events --------------------------------------------------------------------------------------------------
APIS = ["Produce", "Fetch", "JoinGroup", "EndTxn", "Metadata", "OffsetCommit", "SomethingNew"]
text_st = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def event_lists(draw):
    out = []
    for i in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["req", "resp", "state", "rec", "ctl", "act", "note"]))
        t = i * 3
        if kind in ("req", "resp"):
            common = dict(seq=i, t=t, broker=draw(st.integers(0, 2)), client=draw(st.sampled_from(["p", "c", "<x>"])),
                          api=draw(st.sampled_from(APIS)), version=draw(st.integers(0, 20)),
                          correlation_id=draw(st.integers(0, 5)), body={"k": draw(text_st)})
            out.append(E.RequestReceived(**common) if kind == "req" else
                       E.ResponseSent(**common, error_codes=tuple(draw(st.lists(st.integers(-1, 130), max_size=3)))))
        elif kind == "state":
            out.append(E.StateChanged(seq=i, t=t, machine=draw(st.sampled_from(["transaction", "classic-group", "x"])),
                                      key=draw(text_st), from_state=draw(text_st), to_state=draw(text_st),
                                      cause=draw(text_st), status=draw(st.sampled_from(["released", "proposed"]))))
        elif kind in ("rec", "ctl"):
            out.append(E.RecordAppended(seq=i, t=t, topic=draw(st.sampled_from(["__consumer_offsets", "orders",
                                                                                "__transaction_state"])),
                                        partition=1, offset=i, record={"x": draw(text_st)},
                                        key=draw(st.one_of(st.none(), st.binary(max_size=8))),
                                        value=draw(st.one_of(st.none(), st.binary(max_size=8))),
                                        control=kind == "ctl"))
        elif kind == "act":
            out.append(E.EndTxnSkipped(seq=i, t=t, client=draw(text_st), result=draw(text_st), reason=draw(text_st)))
        else:
            out.append(E.TopicAutoCreated(seq=i, t=t, topic=draw(text_st), api=draw(text_st)))
    return out


@given(event_lists(), st.one_of(st.none(), st.integers(0, 30)))
def test_any_events_give_well_formed_svg(events, max_events):
    root = parse(sequence_diagram(events, max_events=max_events, title="t"))
    assert int(root.get("width")) > 0 and int(root.get("height")) > 0


def test_times_from_t0_are_seconds_from_the_runs_start(scenario):
    """A live cluster's clock is epoch milliseconds; with t0 the time column shows seconds from it."""
    t0 = scenario[0].t
    shown = [t for t, _ in texts(sequence_diagram(scenario, t0=t0))]
    assert "0.000 s" in shown
    assert not [t for t in shown if t.endswith(" ms") and t[:-3].isdigit()]
    assert f"{scenario[0].t} ms" in [t for t, _ in texts(sequence_diagram(scenario))]


def test_a_long_lane_title_wraps_inside_its_box():
    """'transaction coordinator (broker 0)' in a narrow lane: every line of its head fits its box."""
    ev = Events()
    for i, api in enumerate(["EndTxn", "Fetch", "JoinGroup", "InitProducerId", "Produce", "Metadata", "ShareFetch"]):
        ev.request(f"client-{i % 2}", api, 0, i)
    root = parse(sequence_diagram(ev.events, width=900))
    for g in root.iter(NS + "g"):
        if "kv-head" not in (g.get("class") or ""):
            continue
        rect = g.find(NS + "rect")
        for t in g.iter(NS + "text"):
            assert len(t.text) * float(t.get("font-size")) * 0.6 <= float(rect.get("width")), t.text
    assert int(root.get("width")) <= 1000
