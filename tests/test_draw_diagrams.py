"""kipviz.draw: the pictures are derived from the definitions; check what they say, not their pixels.

Wire diagrams are checked in two ways: the DOT source (one HTML-like table row per field, so a
row's offset, size and value can be read next to its name) and the rendered SVG text (graphviz
writes every cell as a <text> element; some characters come out as entities, hence unescape)."""
from __future__ import annotations

import html
import re
import uuid

import pytest

from kipviz import codec
from kipviz.draw import (
    DotNotFoundError,
    diff_diagram,
    diff_table,
    dot_available,
    history_html,
    save,
    to_html,
    to_svg,
    version_diff,
    version_history,
    wire_diagram,
    wire_svg,
)
from kipviz.errors import UnknownMessageError
from kipviz.records.examples import TOPIC_IDS, example_value
from kipviz.schema import registry
from kipviz.schema.check import reference_root
from kipviz.schema.loader import load_dir, load_text
from kipviz.uuids import to_kafka_str

needs_dot = pytest.mark.skipif(not dot_available(), reason="graphviz `dot` not installed")
ALL = [(name, v) for name, spec in sorted(registry.messages().items()) for v in spec.versions]


def svg_text(svg: str) -> str:
    """All text of an SVG, entities decoded, one line per <text> element."""
    return "\n".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def row(source: str, name: str) -> str:
    """The cells (lists of words, tags stripped) of the innermost DOT-source table row for <B>name</B>."""
    m = re.search(r"<TR>((?:(?!<TR>|</TR>).)*<B>" + re.escape(name) + r"</B>(?:(?!</TR>).)*)</TR>", source)
    assert m, f"no row for {name}"
    cells = re.findall(r"<TD[^>]*>(.*?)</TD>", m.group(1))
    return [html.unescape(re.sub(r"<[^>]+>", " ", c)).split() for c in cells]


def cell_words(source: str, name: str) -> list[str]:
    return [" ".join(c) for c in row(source, name)]


# ---- examples ----------------------------------------------------------------------------------
def test_example_is_the_seed_example_for_txn_offset_commit():
    v6 = example_value("TxnOffsetCommitRequest", 6)
    assert v6["TransactionalId"] == "tx-orders-001" and v6["GroupId"] == "order-processors"
    assert v6["ProducerEpoch"] == 12 and v6["GenerationIdOrMemberEpoch"] == 5
    assert v6["MemberId"] == "consumer-1-abc123"
    part = v6["Topics"][0]["Partitions"][0]
    assert (part["PartitionIndex"], part["CommittedOffset"], part["CommittedLeaderEpoch"]) == (3, 150382, 12)
    assert v6["Topics"][0]["TopicId"] == TOPIC_IDS[0] and "Name" not in v6["Topics"][0]
    v5 = example_value("TxnOffsetCommitRequest", 5)
    assert v5["Topics"][0]["Name"] == "orders" and "TopicId" not in v5["Topics"][0]
    v0 = example_value("TxnOffsetCommitRequest", 0)
    assert "GenerationIdOrMemberEpoch" not in v0 and "CommittedLeaderEpoch" not in v0["Topics"][0]["Partitions"][0]


@pytest.mark.parametrize("name,version", ALL)
def test_example_encodes_for_every_kit_version(name, version):
    for seed in (0, 1):
        value = example_value(name, version, seed=seed)
        assert value == example_value(name, version, seed=seed)          # deterministic
        data = codec.encode(name, version, value)
        assert codec.encode(name, version, codec.decode(name, version, data)) == data


def test_example_hints_from_field_names():
    v = example_value("MetadataResponse", 12)
    topic = v["Topics"][0]
    assert topic["ErrorCode"] == 0 and topic["Name"] == "orders" and isinstance(topic["TopicId"], uuid.UUID)
    assert all(1 <= len(x) <= 2 for x in (v["Brokers"], v["Topics"], topic["Partitions"]))
    assert v["Brokers"][0]["Port"] == 9092
    jg = example_value("JoinGroupRequest", 9)
    assert jg["GroupInstanceId"] is None                       # nullable fields are sometimes None
    assert example_value("TxnOffsetCommitRequest", 6, seed=1) != example_value("TxnOffsetCommitRequest", 6)


# ---- wire diagrams: every version builds ------------------------------------------------------
@pytest.mark.parametrize("name,version", ALL)
def test_wire_diagram_builds_for_every_kit_version(name, version):
    spec = registry.get(name)
    src = wire_diagram(name, version).source
    assert f"{name} v{version}" in src
    assert html.escape(spec.status_label(version), quote=True) in src
    ex = wire_diagram(name, version, example=True).source
    assert "example-driven layout" in ex
    for f in codec.plan(name, version).vm.fields:                    # every top-level field is drawn
        assert f">{f.name}<" in src or f.spec.aliases, f.name


SAMPLE = ["TxnOffsetCommitRequest", "MetadataResponse", "ApiVersionsResponse", "FetchRequest",
          "ProduceRequest", "ConsumerGroupHeartbeatResponse", "RequestHeader"]


@needs_dot
@pytest.mark.parametrize("name", SAMPLE)
def test_wire_svg_renders_sample(name):
    spec = registry.get(name)
    for v in {spec.versions[0], spec.versions[-1]}:
        for example in (None, True):
            svg = wire_svg(name, v, example=example)
            assert svg.lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE")) and "</svg>" in svg
            assert f"{name} v{v}" in svg_text(svg)


# ---- wire diagrams: content ---------------------------------------------------------------------
@needs_dot
def test_txn_offset_commit_v6_layout_svg():
    text = svg_text(wire_svg("TxnOffsetCommitRequest", 6))
    for s in ("TxnOffsetCommitRequest v6", "released in Kafka 4.4 (KIP-1319)", "request header v2", "RequestHeader v2",
              "TransactionalId", "GroupId", "ProducerId", "ProducerEpoch", "GenerationIdOrMemberEpoch",
              "MemberId", "GroupInstanceId", "Topics", "TopicId", "Partitions", "PartitionIndex",
              "CommittedOffset", "CommittedLeaderEpoch", "CommittedMetadata",
              "string (compact) · varint len", "int64 · 8B", "int16 · 2B", "int32 · 4B", "uuid · 16B",
              "array (compact) · varint count of TxnOffsetCommitRequestTopic",
              "array (compact) · varint count of TxnOffsetCommitRequestPartition",
              "tagged fields", "tag buffer · varint count", "string · int16 len",   # ClientId keeps int16
              "called GenerationId before v6 (same bytes)"):
        assert s in text or s in " ".join(text.split()), s     # a long type wraps
    assert "Name" not in text.split("\n")                    # the v6 topic has no Name
    assert text.count("tag buffer · varint count") == 4       # header, body, topic, partition


def test_txn_offset_commit_v2_is_not_flexible():
    src = wire_diagram("TxnOffsetCommitRequest", 2).source
    words = cell_words(src, "TransactionalId")
    assert words[1].startswith("string · int16 len")
    assert cell_words(src, "Topics")[1].startswith("array · int32 count")
    assert "tag buffer" not in src and "request header v1" in src
    assert "released in Kafka 2.1 (KIP-320)" in src


def test_txn_offset_commit_v5_shows_the_name_it_had():
    src = wire_diagram("TxnOffsetCommitRequest", 5).source
    assert "<B>GenerationId</B>" in src and "renamed GenerationIdOrMemberEpoch in v6" in src
    assert cell_words(src, "Name")[1].startswith("string (compact) · varint len")


def test_example_driven_offsets_match_the_codec():
    value = example_value("TxnOffsetCommitRequest", 6)
    src = wire_diagram("TxnOffsetCommitRequest", 6, example=True).source
    frame = codec.encode_request("TxnOffsetCommitRequest", 6, value, correlation_id=1, client_id="kipviz")
    spans = codec.annotate_request(frame)
    extent: dict[str, list[int]] = {}
    for s in spans:
        e = extent.setdefault(s.path, [s.start, s.end])
        e[0], e[1] = min(e[0], s.start), max(e[1], s.end)
    checks = {"TransactionalId": ("body.TransactionalId", '"tx-orders-001"'),
              "GroupId": ("body.GroupId", '"order-processors"'),
              "ProducerEpoch": ("body.ProducerEpoch", "12"),
              "GenerationIdOrMemberEpoch": ("body.GenerationIdOrMemberEpoch", "5"),
              "MemberId": ("body.MemberId", '"consumer-1-abc123"'),
              "GroupInstanceId": ("body.GroupInstanceId", "null"),
              "TopicId": ("body.Topics[0].TopicId", to_kafka_str(TOPIC_IDS[0])),
              "PartitionIndex": ("body.Topics[0].Partitions[0].PartitionIndex", "3"),
              "CommittedOffset": ("body.Topics[0].Partitions[0].CommittedOffset", "150382"),
              "CommittedLeaderEpoch": ("body.Topics[0].Partitions[0].CommittedLeaderEpoch", "12"),
              "CorrelationId": ("header.CorrelationId", "1"),
              "ClientId": ("header.ClientId", '"kipviz"')}
    for name, (path, shown) in checks.items():
        cells = cell_words(src, name)
        start, end = extent[path]
        assert cells[0] == str(start), (name, cells)
        assert cells[1].split()[0] == str(end - start), (name, cells)
        assert cells[-1] == shown, (name, cells)
    # variable-length encodings shown truthfully: compact string = 1 length byte + 13 bytes
    assert cell_words(src, "TransactionalId")[1] == "14 = 1+13"
    assert cell_words(src, "ClientId")[1] == "8 = 2+6"                # int16 length in header v2
    assert f"example-driven layout: {len(frame)} bytes" in src
    assert cell_words(src, "size")[-1] == str(len(frame) - 4)


@needs_dot
def test_example_driven_svg_shows_values_and_offsets():
    text = svg_text(wire_svg("TxnOffsetCommitRequest", 6, example=True))
    for s in ("tx-orders-001", "order-processors", "consumer-1-abc123", "150382", "released in Kafka 4.4 (KIP-1319)",
              "example-driven layout", "Topics[0] · TxnOffsetCommitRequestTopic"):
        assert s in text, s
    assert "21" in text.split("\n")                          # TransactionalId's offset in the frame


def test_body_only_offsets_start_at_zero():
    src = wire_diagram("TxnOffsetCommitRequest", 6, example=True, header=False).source
    assert cell_words(src, "TransactionalId")[0] == "0"
    assert "request header" not in src and "offsets in bytes from the start of the body" in src


def test_repeated_elements_are_summarised():
    value = example_value("TxnOffsetCommitRequest", 5)
    value["Topics"][0]["Partitions"] = [dict(value["Topics"][0]["Partitions"][0], PartitionIndex=i) for i in range(4)]
    src = wire_diagram("TxnOffsetCommitRequest", 5, example=value).source
    assert "Partitions[0] · TxnOffsetCommitRequestPartition (first of 4)" in src
    assert "… 3 more elements [1]–[3], same layout" in html.unescape(src)
    assert cell_words(src, "Partitions")[-1] == "4 elements"
    assert src.count("<B>PartitionIndex</B>") == 1             # only the first element in full


def test_header_versions_and_the_api_versions_exception():
    av = wire_diagram("ApiVersionsResponse", 3).source
    assert "response header v0" in av and "always use response header v0" in av
    md = wire_diagram("MetadataResponse", 12).source
    assert "response header v1" in md
    old = wire_diagram("MetadataResponse", 8).source
    assert "response header v0" in old and "not flexible" in old
    assert "request header v1" in wire_diagram("MetadataRequest", 8).source
    assert "request header" not in wire_diagram("RequestHeader", 2).source     # a header has no header
    chip = re.search(r'BGCOLOR="#2b6cb0"><FONT COLOR="#ffffff"><B>(v\d)</B>', md)
    assert chip and chip.group(1) == "v1"


def test_tagged_fields_with_tag_numbers():
    src = wire_diagram("ApiVersionsResponse", 3).source
    for tag, name in ((0, "SupportedFeatures"), (1, "FinalizedFeaturesEpoch"), (2, "FinalizedFeatures"),
                      (3, "ZkMigrationReady")):
        assert f"<B>T{tag}</B></FONT> <B>{name}</B>" in src
        assert f"in the tag buffer as varint tag {tag}" in " ".join(      # a note wraps over lines
            re.sub(r'</FONT><BR ALIGN="LEFT"/><FONT[^>]*>', " ", src).split())
    assert "tagged, tag 3" in html.unescape(src)
    value = example_value("ApiVersionsResponse", 3)
    value["ZkMigrationReady"] = True
    ex = wire_diagram("ApiVersionsResponse", 3, example=value).source
    assert cell_words(ex, "ZkMigrationReady")[1] == "3 = 1+1+1"          # tag, size, value
    assert cell_words(ex, "ZkMigrationReady")[-1] == "true"
    value["ZkMigrationReady"] = False                                     # default: not written
    ex = wire_diagram("ApiVersionsResponse", 3, example=value).source
    assert cell_words(ex, "ZkMigrationReady")[-1] == "not sent (default)"


def test_nullable_marks_and_null_struct():
    src = wire_diagram("TxnOffsetCommitRequest", 6).source
    assert '<B>GroupInstanceId</B> <FONT COLOR="#c05621">?</FONT>' in src
    assert "0 = null" in src
    value = example_value("ConsumerGroupHeartbeatResponse", 0)
    value["Assignment"] = None
    ex = wire_diagram("ConsumerGroupHeartbeatResponse", 0, example=value).source
    assert cell_words(ex, "Assignment")[-1] == "null"
    assert "struct Assignment · int8 presence" in ex


def test_records_and_bytes():
    src = wire_diagram("ProduceRequest", 3, example=True).source
    assert "records · int32 len" in src and "record batch" in src


def test_bad_version_and_bad_example():
    with pytest.raises(UnknownMessageError):
        wire_diagram("TxnOffsetCommitRequest", 99)
    with pytest.raises(codec.EncodeError):
        wire_diagram("TxnOffsetCommitRequest", 6, example={"GroupId": 5})


def test_source_is_deterministic():
    a = wire_diagram("MetadataResponse", 12, example=True).source
    assert a == wire_diagram("MetadataResponse", 12, example=True).source


# ---- diffs -----------------------------------------------------------------------------------------
def test_txn_offset_commit_v5_to_v6_diff():
    assert version_diff("TxnOffsetCommitRequest", 5, 6) == [
        {"path": "GenerationIdOrMemberEpoch", "change": "renamed",
         "detail": "GenerationId → GenerationIdOrMemberEpoch (source only, same wire)"},
        {"path": "Topics.Name", "change": "removed", "detail": "string (compact) · varint len"},
        {"path": "Topics.TopicId", "change": "added", "detail": "uuid · 16B"},
    ]


def test_offset_commit_v9_to_v10_diff():
    assert version_diff("OffsetCommitRequest", 9, 10) == [
        {"path": "Topics.Name", "change": "removed", "detail": "string (compact) · varint len"},
        {"path": "Topics.TopicId", "change": "added", "detail": "uuid · 16B"},
    ]
    # OffsetCommit's rename happened at v9 ("Called GenerationId before v9")
    assert version_diff("OffsetCommitRequest", 8, 9) == [
        {"path": "GenerationIdOrMemberEpoch", "change": "renamed",
         "detail": "GenerationId → GenerationIdOrMemberEpoch (source only, same wire)"}]


def test_diff_flexible_and_header_rows():
    rows = version_diff("TxnOffsetCommitRequest", 2, 3)
    assert rows[0] == {"path": "(header)", "change": "header-version", "detail": "request header v1 → v2"}
    assert rows[1]["path"] == "(message)" and rows[1]["change"] == "flexible"
    assert [(r["path"], r["change"]) for r in rows[2:]] == [
        ("GenerationId", "added"), ("MemberId", "added"), ("GroupInstanceId", "added")]   # v3's names
    back = version_diff("TxnOffsetCommitRequest", 6, 5)
    assert back[0]["change"] == "renamed" and back[0]["detail"].startswith("GenerationIdOrMemberEpoch → GenerationId")
    assert version_diff("TxnOffsetCommitRequest", 4, 5) == []
    assert version_diff("TxnOffsetCommitRequest", 3, 3) == []


def test_diff_nullability_and_added_struct():
    rows = version_diff("MetadataResponse", 11, 12)
    assert {"path": "Topics.Name", "change": "nullability-changed", "detail": "nullable in v12"} in rows


DEMO = """{
  "apiKey": 999, "type": "request", "name": "DemoRequest", "validVersions": "0-3", "flexibleVersions": "1+",
  "fields": [
    {"name": "OldName", "type": "int32", "versions": "0-1"},
    {"name": "NewName", "type": "int32", "versions": "2+"},
    {"name": "Note", "type": "string", "versions": "0+", "nullableVersions": "2+"},
    {"name": "Extra", "type": "int64", "versions": "0+", "taggedVersions": "3+", "tag": 0}
  ]}"""


def test_diff_rules_on_a_synthetic_schema():
    spec = load_text(DEMO)
    assert version_diff(spec, 1, 2) == [
        {"path": "NewName", "change": "renamed", "detail": "OldName → NewName (same position and wire type: same bytes)"},
        {"path": "Note", "change": "nullability-changed", "detail": "nullable in v2"}]
    assert version_diff(spec, 2, 3) == [{"path": "Extra", "change": "moved-to-tagged", "detail": "tagged field, tag 0"}]
    assert version_diff(spec, 3, 2)[0]["change"] == "moved-from-tagged"
    hist = version_history(spec)
    assert hist.loc["Extra", "v3"] == "T0 i64" and hist.loc["Note", "v2"] == "str?"
    assert hist.loc["status", "v0"] == "—"


def test_diff_table_and_diagram():
    df = diff_table("TxnOffsetCommitRequest", 5, 6)
    assert list(df.columns) == ["path", "change", "detail"] and len(df) == 3
    assert set(df["change"]) == {"renamed", "removed", "added"}
    src = diff_diagram("TxnOffsetCommitRequest", 5, 6).source
    colours = {"added": "#c6f6d5", "removed": "#fed7d7", "renamed": "#bee3f8"}
    assert re.search(rf'BGCOLOR="{colours["removed"]}"[^>]*>(?:&#160;)*<B>Name</B>', src)
    assert re.search(rf'BGCOLOR="{colours["added"]}"[^>]*>(?:&#160;)*<B>TopicId</B>', src)
    assert re.search(rf'BGCOLOR="{colours["renamed"]}"[^>]*><B>GenerationId</B>', src)
    assert re.search(rf'BGCOLOR="{colours["renamed"]}"[^>]*><B>GenerationIdOrMemberEpoch</B>', src)
    assert "released in Kafka 4.4 (KIP-1319)" in src and "released in Kafka 4.0 (KIP-890)" in src
    amber = diff_diagram("TxnOffsetCommitRequest", 2, 3).source
    assert 'BGCOLOR="#feebc8"' in amber and "request header v1 → v2" in html.unescape(amber)


@needs_dot
def test_diff_diagram_svg():
    text = " ".join(svg_text(to_svg(diff_diagram("TxnOffsetCommitRequest", 5, 6))).split())   # notes wrap
    for s in ("TxnOffsetCommitRequest v5 → v6", "GenerationId", "GenerationIdOrMemberEpoch", "TopicId",
              "renamed: GenerationId → GenerationIdOrMemberEpoch (source only, same wire)",
              "added", "removed", "changed", "renamed"):
        assert s in text, s


# ---- history ----------------------------------------------------------------------------------------
def test_version_history_matrix():
    df = version_history("TxnOffsetCommitRequest")
    assert list(df.columns) == [f"v{v}" for v in range(7)]
    assert list(df.index[:6]) == ["status", "since", "removed", "KIP", "flexible", "header"]
    assert df.shape == (6 + 15, 7)
    assert df.loc["status", "v6"] == "released" and df.loc["KIP", "v6"] == "KIP-1319"
    assert df.loc["status", "v5"] == "released" and df.loc["since", "v5"] == "4.0"
    assert df.loc["flexible", "v2"] == "·" and df.loc["flexible", "v3"] == "✓"
    assert df.loc["header", "v2"] == "h1" and df.loc["header", "v3"] == "h2"
    assert df.loc["Topics.Name", "v5"] == "str" and df.loc["Topics.Name", "v6"] == "·"
    assert df.loc["Topics.TopicId", "v6"] == "uuid" and df.loc["Topics.TopicId", "v5"] == "·"
    assert df.loc["GroupInstanceId", "v3"] == "str?" and df.loc["GroupInstanceId", "v2"] == "·"
    assert df.loc["Topics.Partitions", "v0"] == "[]" and df.loc["Topics.Partitions.CommittedLeaderEpoch", "v2"] == "i32"
    tagged = version_history("ApiVersionsResponse")
    assert tagged.loc["SupportedFeatures", "v3"] == "T0 []" and tagged.loc["ZkMigrationReady", "v3"] == "T3 bool"
    assert tagged.loc["SupportedFeatures", "v2"] == "·" and tagged.loc["header", "v3"] == "h0"
    removed = version_history("OffsetCommitRequest")
    assert removed.loc["removed", "v0"] == "4.0"


def test_history_html():
    out = history_html("TxnOffsetCommitRequest")
    assert out.startswith('<div class="kipviz-history">') and "<style>" in out
    assert 'class="v accepted"' not in out and 'class="v released"' in out      # v6: released in Kafka 4.4
    assert 'class="v accepted"' in history_html("InitProducerIdRequest")         # KIP-939's v6
    assert "(was GenerationId)" in out
    assert re.search(r"v6 renamed from GenerationId \(same wire\) <span class=\"kip\">KIP-1319</span>", out)
    assert re.search(r"v6 added <span class=\"kip\">KIP-1319</span>", out)
    assert re.search(r"v2 added <span class=\"kip\">KIP-320</span>", out)
    assert "http" not in out


@pytest.mark.parametrize("name", sorted(registry.messages()))
def test_diff_and_history_for_every_kit_message(name):
    spec = registry.get(name)
    vs = spec.versions
    for a, b in zip(vs, vs[1:], strict=False):
        for r in version_diff(name, a, b):
            assert set(r) == {"path", "change", "detail"} and r["detail"]
        assert f"{name} v{a} → v{b}" in diff_diagram(name, a, b).source
    df = version_history(name)
    assert df.shape[1] == len(vs) and len(df) >= 6
    assert history_html(name).endswith("</div>")


# ---- official schema directories ----------------------------------------------------------------
@pytest.fixture(scope="module")
def official():
    root = reference_root()
    if root is None:
        pytest.skip("../shared/kafka not present")
    return load_dir(root / "message-4.3")


def test_official_specs_draw(official):
    for name, spec in official.items():
        for v in spec.versions:
            value = example_value(spec, v)
            codec.encode(spec, v, value)
            assert f"{name} v{v}" in wire_diagram(spec, v, example=value).source
    spec = official["TxnOffsetCommitRequest"]
    assert version_diff(spec, 4, 5) == []
    assert version_history(spec).loc["status", "v0"] == "—"


@needs_dot
def test_official_spec_svg(official):
    text = svg_text(wire_svg(official["TxnOffsetCommitRequest"], 5, example=True))
    for s in ("TxnOffsetCommitRequest v5", "official schema (no kit label)", "GenerationId", "tx-orders-001",
              "request header v2"):
        assert s in text, s


# ---- export ---------------------------------------------------------------------------------------
@needs_dot
def test_save_and_html(tmp_path):
    g = wire_diagram("TxnOffsetCommitRequest", 6, example=True)
    svg = save(g, tmp_path / "w.svg").read_text()
    assert "</svg>" in svg
    assert save(g, tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = save(g, tmp_path / "w.html", title="TxnOffsetCommit v6").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "TxnOffsetCommit v6" in page
    assert not re.search(r'<(link|script|img)\b|src=|href="http|url\(', page)
    assert "<?xml" not in page
    assert to_html(svg, title="x").count("<svg") == 1
    with pytest.raises(ValueError, match="suffix"):
        save(g, tmp_path / "w.pdf")


def test_missing_dot_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DotNotFoundError) as e:
        to_svg(wire_diagram("TxnOffsetCommitRequest", 6))
    msg = str(e.value)
    assert "make lab" in msg and "apt-get install graphviz" in msg and "graphviz-pure" in msg


@pytest.mark.parametrize("name,version", [("TxnOffsetCommitRequest", 5), ("TxnOffsetCommitRequest", 6),
                                          ("MetadataResponse", 12)])
@pytest.mark.parametrize("example", [False, True])
def test_wire_type_cells_are_wide_enough_for_their_text(name, version, example):
    """Issue 25: the "Topics" type text overflowed its cell. Every type cell declares a WIDTH (points),
    and each of its lines fits by the sizing rule (wire.text_width: 0.7 em a character + padding)."""
    from kipviz.draw import wire
    src = wire.wire_diagram(name, version, example=example).source
    cells = re.findall(r'<TD[^>]*WIDTH="(\d+)"[^>]*>(.*?)</TD>', src)
    types = [wire.wire_type(f) for f in _all_fields(name, version)]
    assert len(cells) >= len(types)
    texts = []
    for width, body in cells:
        big = []                                     # a long type wraps over lines of the cell's size
        for line in re.split(r"<BR[^>]*/>", body):
            size = re.search(r'POINT-SIZE="(\d+)"', line)
            text = html.unescape(re.sub(r"<[^>]+>", "", line))
            if not size:
                big.append(text)
            fs = int(size.group(1)) if size else wire.FS_CELL
            assert wire.text_width(text, fs) + wire.CELL_PAD <= int(width), (text, width)
        texts.append(" ".join(big))
    assert all(t in texts for t in types)            # the long "array (compact) · … of …Topic" among them
    assert any(t.endswith("of TxnOffsetCommitRequestTopic") or t.endswith("of MetadataResponseTopic")
               for t in texts)


def _all_fields(name, version):
    from kipviz.schema import registry
    from kipviz.schema.resolve import resolve

    def walk(fields):
        for f in fields:
            yield f
            if f.is_struct:
                yield from walk(f.fields)
    return list(walk(resolve(registry.get(name), version).fields))
