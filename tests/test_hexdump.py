"""Annotated hex dumps: every byte once, coloured and titled by its span, a tree of every path."""
from __future__ import annotations

import html
import json
import re
import time

import pytest

from kipviz import codec
from kipviz.codec import Span
from kipviz.draw.hexdump import (
    HexHTML,
    format_value,
    hexdump_batches,
    hexdump_for,
    hexdump_html,
    hexdump_request,
    hexdump_response,
    span_dicts,
)

TXN = {"TransactionalId": "tx-1", "GroupId": "g", "ProducerId": 4001, "ProducerEpoch": 12,
       "GenerationId": 5, "MemberId": "m", "GroupInstanceId": None,
       "Topics": [{"Name": "orders", "Partitions": [
           {"PartitionIndex": p, "CommittedOffset": 150382 + p, "CommittedLeaderEpoch": 12,
            "CommittedMetadata": ""} for p in range(3)]}]}

CELL = re.compile(r'<td class="(b [^"]*)"(?: data-n="(\d+)")? title="([^"]*)">([0-9a-f]{2})</td>')


def _cells(doc: str):
    return CELL.findall(doc)


@pytest.fixture(scope="module")
def frame():
    return codec.encode_request("TxnOffsetCommit", 3, TXN)


@pytest.fixture(scope="module")
def dump(frame):
    return hexdump_request(frame)


def test_every_byte_exactly_once(frame, dump):
    cells = _cells(dump)
    assert "".join(c[3] for c in cells) == frame.hex()
    assert len(cells) == len(frame)
    assert isinstance(dump, HexHTML) and dump._repr_html_() == str(dump)


def test_rows_of_sixteen_with_offsets(frame, dump):
    rows = re.findall(r"<tr><th>([0-9a-f]{6})</th>(.*?)</tr>", dump, re.S)
    assert [int(r[0], 16) for r in rows] == list(range(0, len(frame), 16))
    assert all(len(CELL.findall(r[1])) == 16 for r in rows[:-1])


def test_colour_class_and_title_per_span(frame, dump):
    spans = codec.annotate_request(frame)
    cells = _cells(dump)
    for s in spans:
        for o in range(s.start, s.end):
            cls, _, title, _ = cells[o]
            title = html.unescape(title)
            assert re.search(r"\bc\d+\b", cls), (o, cls)
            assert s.path in title and s.wire_type in title and format_value(s.value) in title
            assert f"{s.start}" in title
            tokens = cls.split()
            if s.role in ("length", "count", "tag-count"):
                assert "t" in tokens
            elif s.role == "value":
                assert "t" not in tokens
    # a CSS colour rule for every colour class used
    for k in {re.search(r"\bc(\d+)\b", c[0]).group(1) for c in cells}:
        assert re.search(rf"\.c{k}\{{background:hsl\(", dump)


def test_same_field_same_colour_lengths_lighter(frame, dump):
    cells = _cells(dump)
    spans = codec.annotate_request(frame)
    offs = [s for s in spans if s.path.endswith("CommittedOffset")]
    colours = {re.search(r"\bc\d+\b", cells[s.start][0]).group() for s in offs}
    assert len(colours) == 1                       # Partitions[0..2].CommittedOffset share a colour
    name_len = next(s for s in spans if s.path == "body.GroupId" and s.role == "length")
    name_val = next(s for s in spans if s.path == "body.GroupId" and s.role == "value")
    assert cells[name_len.start][0].split()[1] == cells[name_val.start][0].split()[1]
    assert " t" in cells[name_len.start][0] and " t" not in cells[name_val.start][0]
    assert 'class="lg"' in dump                   # the legend


def test_tree_has_every_path_with_value_and_range(frame, dump):
    spans = codec.annotate_request(frame)
    paths = set(re.findall(r'data-path="([^"]*)"', dump))
    paths = {html.unescape(p) for p in paths}
    for s in spans:
        assert s.path in paths
        # and every ancestor: body > Topics > Topics[0] > Partitions > Partitions[0]
    assert {"body", "body.Topics", "body.Topics[0]", "body.Topics[0].Partitions",
            "body.Topics[0].Partitions[2]"} <= paths
    node = re.search(r'<span class="nd"[^>]*data-path="body.Topics\[0\].Partitions\[1\].CommittedOffset"[^>]*>.*?</span>',
                     dump).group()
    s = next(s for s in spans if s.path == "body.Topics[0].Partitions[1].CommittedOffset")
    assert f'data-lo="{s.start}" data-hi="{s.end}"' in node
    assert "<b>150383</b>" in node and f"{s.start}–{s.end - 1}" in node


def test_byte_cells_point_at_tree_nodes(dump):
    nodes = set(re.findall(r'<span class="nd" data-n="(\d+)"', dump))
    used = {c[1] for c in _cells(dump) if c[1]}
    assert used <= nodes


def test_standalone_has_no_external_urls(frame):
    doc = hexdump_request(frame, standalone=True)
    assert doc.startswith("<!DOCTYPE html>") and doc.rstrip().endswith("</html>")
    assert not re.search(r"https?://|//cdn|src=|@import|url\(", doc)
    assert "<script>" in doc and "kvxAttach" in doc


def test_unique_ids_scope_css_and_script(frame):
    a, b = hexdump_request(frame), hexdump_request(frame)
    ida, idb = (re.search(r'<div class="kvx" id="([^"]+)"', x).group(1) for x in (a, b))
    assert ida != idb
    assert f"#{ida} " in a and f"#{idb}" not in a
    css = re.search(r"<style>(.*?)</style>", a, re.S).group(1)
    selectors = [rule.split("{")[0] for rule in css.split("}") if rule.strip()]
    for sel in selectors:                                     # every rule is scoped to this dump
        assert all(part.strip().startswith(f"#{ida}") for part in sel.split(",")), sel


def test_gaps_and_overlaps():
    data = bytes(range(20))
    spans = [Span(0, 4, "a", "int32", 66051, "value"), Span(2, 3, "a.inner", "int8", 2, "value"),
             Span(10, 12, "b", "int16", 2571, "value")]
    doc = hexdump_html(data, spans)
    cells = _cells(doc)
    assert len(cells) == 20
    assert "a.inner" in html.unescape(cells[2][2]) and "a.inner" not in html.unescape(cells[1][2])
    assert "not annotated" in cells[5][2] and " g" in cells[5][0]
    doc = hexdump_html(b"", [])
    assert _cells(doc) == []


def test_max_bytes_truncates_with_a_note():
    data = bytes(1000)
    doc = hexdump_html(data, [Span(0, 1000, "blob", "bytes", data, "value")], max_bytes=100)
    assert len(_cells(doc)) == 100 and "first 100 of 1,000 bytes" in doc


def test_dict_spans_and_escaping():
    data = b"<a>"
    spans = span_dicts([Span(0, 3, 'x."<b>"', "string", "<script>alert(1)</script>", "value")])
    doc = hexdump_html(data, spans, title="<t>")
    assert "<script>alert" not in doc and "&lt;t&gt;" in doc


def test_helpers(frame):
    body = codec.encode("TxnOffsetCommitRequest", 3, TXN)
    assert len(_cells(hexdump_for("TxnOffsetCommitRequest", 3, body))) == len(body)
    assert len(_cells(hexdump_request(frame[4:], framed=False))) == len(frame) - 4
    resp = codec.encode_response("TxnOffsetCommit", 3, {"ThrottleTimeMs": 0, "Topics": []}, correlation_id=7)
    doc = hexdump_response(resp, "TxnOffsetCommit", 3)
    assert len(_cells(doc)) == len(resp) and "header.CorrelationId" in doc
    with pytest.raises(codec.DecodeError):
        hexdump_request(b"\x00\x00\x00\x01\x00")


def test_records_are_expanded_and_batches_drawn():
    records = pytest.importorskip("kipviz.records")
    rb = records.write_batch([{"key": b"k", "value": b"hello"}])
    value = {"TransactionalId": None, "Acks": 1, "TimeoutMs": 100,
             "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": rb}]}]}
    fr = codec.encode_request("Produce", 9, value)
    doc = hexdump_request(fr)
    assert len(_cells(doc)) == len(fr)
    assert "body.TopicData[0].PartitionData[0].Records.batch[0].records[0].value" in doc
    doc = hexdump_batches(rb)
    assert len(_cells(doc)) == len(rb) and "batch[0].CRC" in doc


def test_fast_enough_for_2kb():
    topics = [{"Name": f"topic-{t}", "Partitions": [
        {"PartitionIndex": p, "CommittedOffset": p, "CommittedLeaderEpoch": 1, "CommittedMetadata": "m"}
        for p in range(16)]} for t in range(6)]
    fr = codec.encode_request("TxnOffsetCommit", 3, dict(TXN, Topics=topics))
    assert 1500 < len(fr) < 2500
    hexdump_request(fr)
    best = min(_timed(lambda: hexdump_request(fr)) for _ in range(3))
    assert best < 0.25          # about 5 ms on the development machine; generous for slow CI


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def test_lazy_titles_keep_big_dumps_small(frame):
    spans = codec.annotate_request(frame)
    doc = hexdump_html(frame, spans, titles="lazy")
    cells = re.findall(r'<td class="b [^"]*" data-n="\d+" data-s="(\d+)">([0-9a-f]{2})</td>', doc)
    assert "".join(c[1] for c in cells) == frame.hex()
    tips = json.loads(re.search(r'<script type="application/json" class="kvx-tips">(.*?)</script>', doc).group(1))
    assert len(tips) == len(spans)
    for idx, _ in cells:
        s = spans[int(idx)]
        assert s.path in tips[int(idx)] and s.wire_type in tips[int(idx)]
    assert len(doc) < len(hexdump_html(frame, spans, titles="cells"))
    big = bytes(5000)
    assert 'class="kvx-tips"' in hexdump_html(big, [Span(0, 5000, "x", "bytes", big, "value")])
    with pytest.raises(ValueError):
        hexdump_html(frame, spans, titles="nope")
