"""The Explorer and HexView widgets, driven from Python: no browser needed."""
from __future__ import annotations

import json
import re

import pytest

from kipviz import codec
from kipviz.records.examples import example_value
from kipviz.schema import registry
from kipviz.widgets import Explorer, HexView, show_hex
from kipviz.widgets.explorer import MAX_PASTE_CHARS, from_json_value, to_json_text
from kipviz.widgets.hexview import ESM


@pytest.fixture
def ex():
    return Explorer("TxnOffsetCommit", 3)


def _one_line_error(ex):
    assert ex.error, "expected an error"
    assert "\n" not in ex.error and "Traceback" not in ex.error and len(ex.error) <= 300
    assert ex.error in ex.error_html.value or ex.error[:50] in ex.error_html.value.replace("&#x27;", "'")
    assert ex.last_exception is None, f"unexpected exception: {ex.last_exception!r}"


def test_starts_on_a_message(ex):
    assert ex.message == "TxnOffsetCommitRequest" and ex.version == 3 and ex.error == ""
    assert ex.current_bytes == codec.encode_request(
        "TxnOffsetCommit", 3, example_value("TxnOffsetCommitRequest", 3), correlation_id=1, client_id="kipviz")
    assert json.loads(ex.json_text)["TransactionalId"] == "tx-orders-001"
    assert ex.hex_view.bytes == ex.current_bytes and ex.hex_view.spans
    assert ex.diagram_html            # an SVG, or a note saying why there is none
    from kipviz.draw import dot_available
    if dot_available():
        assert "<svg" in ex.diagram_html
    assert ex.message_select.value == "TxnOffsetCommit"


def test_select_and_slider_bounds_follow_valid_versions(ex):
    for name in ("FetchRequest", "Heartbeat", "TxnShareAcknowledgeRequest", "ProduceResponse"):
        spec = registry.get(name if name.endswith(("Request", "Response")) else name + "Request")
        assert ex.select(name) is True, ex.error
        assert (ex.version_slider.min, ex.version_slider.max) == (min(spec.versions), max(spec.versions))
        assert ex.version in spec.valid and ex.version_slider.value == ex.version
        assert ex.message == spec.name and ex.kind == spec.type
    assert ex.select("Fetch", 4) and ex.version == 4 and ex.version_slider.value == 4
    assert ex.select("Heartbeat", 2) and (ex.version_slider.min, ex.version_slider.max) == (0, 4)


def test_slider_and_toggle_drive_the_explorer(ex):
    ex.select("Fetch", 12)
    ex.version_slider.value = 13                     # TopicId replaces Topic at v13
    assert ex.version == 13 and ex.error == ""
    assert codec.decode_request(ex.current_bytes)["version"] == 13
    ex.kind_toggle.value = "response"
    assert ex.message == "FetchResponse" and ex.version == 13 and ex.error == ""
    assert codec.decode_response(ex.current_bytes, "Fetch", 13)["body"] is not None


def test_search_filters_messages(ex):
    ex.search.value = "offset"
    names = [v for _, v in ex.message_select.options]
    assert names and all("offset" in n.lower() for n in names)
    assert ex.message_select.value in names and ex.spec.api in names
    ex.search.value = "no-such-message"
    assert ex.message_select.options == () and ex.error == ""
    ex.search.value = ""


def test_json_edit_changes_bytes(ex):
    before = ex.current_bytes
    value = json.loads(ex.json_text)
    value["ProducerId"] = 77
    assert ex.set_json(json.dumps(value)) is True and ex.error == ""
    assert ex.current_bytes != before
    assert codec.decode_request(ex.current_bytes)["body"]["ProducerId"] == 77
    assert ex.hex_view.bytes == ex.current_bytes
    # the textarea drives it too
    value["ProducerId"] = 78
    ex.json_area.value = json.dumps(value)
    assert codec.decode_request(ex.current_bytes)["body"]["ProducerId"] == 78


def test_paste_framed_request_decodes_and_switches_message(ex):
    body = example_value("HeartbeatRequest", 4)
    fr = codec.encode_request("Heartbeat", 4, body, correlation_id=42, client_id="me")
    assert ex.paste_hex(fr.hex(" ")) is True, ex.error
    assert ex.message == "HeartbeatRequest" and ex.version == 4 and ex.mode == "frame"
    assert ex.current_bytes == fr and json.loads(ex.json_text)["GroupId"] == body["GroupId"]
    assert any(s.path == "body.GroupId" for s in ex.current_spans)
    # editing the JSON afterwards keeps the pasted header
    v = json.loads(ex.json_text)
    ex.set_json(json.dumps(v))
    assert ex.current_bytes == fr


def test_paste_without_size_and_plain_body(ex):
    fr = codec.encode_request("TxnOffsetCommit", 3, example_value("TxnOffsetCommitRequest", 3))
    assert ex.paste_hex(fr[4:].hex()) and ex.mode == "header" and ex.current_bytes == fr[4:]
    body = codec.encode("TxnOffsetCommitRequest", 3, example_value("TxnOffsetCommitRequest", 3))
    assert ex.paste_hex("0x" + body.hex()) and ex.mode == "body" and ex.current_bytes == body


def test_paste_response_of_selected_message(ex):
    ex.select("Heartbeat", 4, kind="response")
    fr = codec.encode_response("Heartbeat", 4, {"ThrottleTimeMs": 5, "ErrorCode": 0}, correlation_id=9)
    assert ex.paste_hex(fr.hex()) and ex.message == "HeartbeatResponse" and ex.current_bytes == fr


@pytest.mark.parametrize("action, text, expect", [
    ("paste_hex", "00 zz 11", "hex"),
    ("paste_hex", "abc", "odd number"),
    ("paste_hex", "00 01 02 03 04 05", "could not decode"),
    ("set_json", '{"TransactionalId": ', "JSON"),
    ("set_json", "[1, 2]", "object"),
    ("set_json", '{"TransactionalId": 5}', "TransactionalId"),
    ("set_json", "UNKNOWN", "unknown field"),
    ("set_json", "RANGE", "out of range"),
    ("set_json", "BADBYTES", "hex"),
])
def test_bad_input_gives_one_line(ex, action, text, expect):
    value = example_value("TxnOffsetCommitRequest", 3)
    if text == "UNKNOWN":
        text = to_json_text(dict(value, NoSuchField=1))
    elif text == "RANGE":
        text = to_json_text(dict(value, ProducerEpoch=40000))
    elif text == "BADBYTES":
        ex.select("SyncGroup", 5)
        v = json.loads(ex.json_text)
        v["Assignments"][0]["Assignment"] = "not hex"
        text = json.dumps(v)
    before = ex.current_bytes
    assert getattr(ex, action)(text) is False
    _one_line_error(ex)
    assert expect.lower() in ex.error.lower()
    assert ex.current_bytes == before                 # the last good bytes stay
    assert ex.json_text == text or action == "paste_hex"   # the user's text stays for fixing
    assert getattr(ex, action)(to_json_text(ex.value) if action == "set_json" else ex.current_bytes.hex())
    assert ex.error == ""                             # and the next good input clears the line


def test_huge_paste_is_refused(ex):
    text = "00" * (5 * 1024 * 1024)                   # 10 MB of hex
    assert len(text) > MAX_PASTE_CHARS
    assert ex.paste_hex(text) is False
    _one_line_error(ex)
    assert "MB" in ex.error and ex.paste_area.value == ""


def test_unknown_message_and_version(ex):
    assert ex.select("NoSuchThing") is False and "NoSuchThing" in ex.error
    assert ex.select("Heartbeat", 99) is False and "no version 99" in ex.error
    assert ex.select("RequestHeader") is False
    assert ex.last_exception is None and ex.message == "TxnOffsetCommitRequest"


def test_unexpected_exceptions_are_caught(ex, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("kaboom")
    monkeypatch.setattr("kipviz.widgets.explorer.encode_request", boom)
    assert ex.set_json(ex.json_text) is False
    assert ex.error == "unexpected RuntimeError: kaboom" and isinstance(ex.last_exception, RuntimeError)


def test_modes(ex):
    ex.mode_select.value = "body"
    assert ex.current_bytes == codec.encode("TxnOffsetCommitRequest", 3, ex.value)
    ex.mode_select.value = "header"
    assert codec.decode_request(ex.current_bytes, framed=False)["version"] == 3


def test_json_round_trip_every_message_version():
    """Uuids as Kafka strings and bytes as hex come back to the same bytes."""
    for spec in registry.messages().values():
        if spec.type == "header":
            continue
        for v in (min(spec.versions), max(spec.versions)):
            value = example_value(spec, v)
            back = from_json_value(spec, v, json.loads(to_json_text(value)))
            assert codec.encode(spec, v, back) == codec.encode(spec, v, value), (spec.name, v)


def test_uuid_shown_in_kafka_form():
    value = example_value("FetchRequest", 13)
    text = to_json_text(value)
    tid = value["Topics"][0]["TopicId"]
    from kipviz.uuids import to_kafka_str
    assert f'"{to_kafka_str(tid)}"' in text


# ---- HexView -------------------------------------------------------------------------------------
def test_hexview_traitlets():
    fr = codec.encode_request("Heartbeat", 4, example_value("HeartbeatRequest", 4))
    spans = codec.annotate_request(fr)
    v = HexView(fr, spans, title="hb")
    assert v.data == fr.hex() and v.bytes == fr
    assert len(v.spans) == len(spans) and v.spans[0]["path"] == "size"
    assert set(v.spans[0]) >= {"start", "end", "path", "wire_type", "value", "role", "text"}
    json.dumps(v.spans)                               # JSON-safe for the frontend
    assert 'class="kvx"' in v.html and "hb" in v.html and "<script" not in v.html
    assert len(re.findall(r'<td class="b ', v.html)) == len(fr)
    v.data = "00 01 02"
    assert v.data == "000102" and v.html.count('<td class="b ') == 3
    v.selected = "body.GroupId"
    assert v.selected == "body.GroupId"
    v.update(b"\x01\x02", [codec.Span(0, 2, "x", "int16", 258, "value")], title="two")
    assert v.bytes == b"\x01\x02" and v.spans[0]["value"] == 258 and "two" in v.html and v.selected == ""


def test_hexview_esm_and_show_hex():
    assert "export default" in ESM and "kvxAttach" in ESM and "save_changes" in ESM
    fr = codec.encode_request("Heartbeat", 4, example_value("HeartbeatRequest", 4))
    w = show_hex(fr)
    assert w.bytes == fr and any(s["path"] == "body.GroupId" for s in w.spans)
    w = show_hex(fr[4:].hex())
    assert any(s["path"] == "body.GroupId" for s in w.spans)
    body = codec.encode("HeartbeatRequest", 4, example_value("HeartbeatRequest", 4))
    w = show_hex(body, name="HeartbeatRequest", version=4)
    assert w.spans[0]["path"] == "GroupId"
    assert show_hex(b"\x01\x02\x03").spans == []


def test_huge_paste_refused_in_the_browser_gives_one_line(ex):
    """A TextBox longer than max_chars stays in the browser, which sends only its length (the
    message below); tests/browser/test_widget_bad_input.py drives the browser side."""
    before = ex.current_bytes
    ex.paste_area._on_browser_msg(ex.paste_area, {"event": "oversize", "chars": 12_000_000}, [])
    _one_line_error(ex)
    assert "12.0 MB" in ex.error and ex.current_bytes == before
    ex.json_area._on_browser_msg(ex.json_area, {"event": "oversize", "chars": 10_000_000}, [])
    _one_line_error(ex)
    assert "JSON text is 10.0 MB" in ex.error
    ex.search._on_browser_msg(ex.search, {"event": "oversize", "chars": 5000}, [])
    assert "filter text is 5,000 characters" in ex.error
    assert ex.set_json("{" * 3_000_000) is False and "JSON text is 3.0 MB" in ex.error
    ex.set_json(to_json_text(ex.value))
    assert ex.error == ""
    for junk in ({"event": "oversize", "chars": "many"}, {"event": "oversize", "chars": True}, {"event": "other"}, []):
        ex.paste_area._on_browser_msg(ex.paste_area, junk, [])
    assert ex.error == "" and ex.paste_area.max_chars == MAX_PASTE_CHARS


def test_a_good_paste_clears_the_error_before_the_slow_diagram(ex, monkeypatch):
    """The page gets the kernel's updates in order: the error line must be gone when the new
    status shows, not only after the diagram (a `dot` run) is drawn."""
    ex.search._on_browser_msg(ex.search, {"event": "oversize", "chars": 10_000_000}, [])
    assert "filter text" in ex.error
    seen = []
    monkeypatch.setattr(type(ex), "_draw_diagram", lambda self: seen.append((self.error, self.error_html.value)))
    frame = codec.encode_request("Heartbeat", 4, example_value("HeartbeatRequest", 4))
    assert ex.paste_hex(frame.hex(" ")) is True
    assert seen == [("", "")] and ex.message == "HeartbeatRequest"
