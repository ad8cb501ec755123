"""The schema layer: loading, validation errors that name file and field, kit labels."""
from __future__ import annotations

import json

import pytest

from kipviz.errors import SchemaError
from kipviz.schema import jsonc, registry
from kipviz.schema.loader import load_file, load_text
from kipviz.schema.versions import Versions

BASE = {"apiKey": 28, "type": "request", "name": "DemoRequest", "validVersions": "0-3",
        "flexibleVersions": "2+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+", "about": "x"},
            {"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
                {"name": "Id", "type": "int32", "versions": "0+"}]}]}


def _with(**changes):
    obj = json.loads(json.dumps(BASE))
    for path, value in changes.items():
        node = obj
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        node[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    return json.dumps(obj)


def test_versions_parse_and_contain():
    assert 5 in Versions.parse("3+") and 2 not in Versions.parse("3+")
    assert list(Versions.parse("1-3").iter(10)) == [1, 2, 3]
    assert Versions.parse("none").empty and str(Versions.parse("7")) == "7"
    for bad in ("", "x", "3-1", "-1", "1--2"):
        with pytest.raises(ValueError):
            Versions.parse(bad)


def test_comments_are_stripped_but_not_inside_strings():
    text = '// head\n{ "a": "http://x//y", /* block\n */ "b": 1 } // tail'
    assert jsonc.loads(text) == {"a": "http://x//y", "b": 1}


@pytest.mark.parametrize("change,field,needle", [
    ({"fields__0__type": "int33"}, "Name", "unknown type"),
    ({"fields__0__versions": "zero+"}, "Name", "bad version range"),
    ({"fields__1__fields__0__tag": 0}, "Items.Id", "'tag' and 'taggedVersions'"),
    ({"fields__0__nullableVersions": "0+", "fields__0__type": "int32"}, "Name", "cannot be nullable"),
    ({"fields__1__fields__0__default": "abc"}, "Items.Id", "not an integer"),
    ({"fields__1__fields__0__default": "99999999999"}, "Items.Id", "out of range"),
    ({"fields__0__bogus": 1}, "Name", "unknown key"),
    ({"fields__1__fields": "nope"}, "Items", "must be a list"),
])
def test_malformed_field_names_file_and_field(change, field, needle):
    with pytest.raises(SchemaError) as e:
        load_text(_with(**change), "Demo.json")
    msg = str(e.value)
    assert "Demo.json" in msg and f"field {field}" in msg and needle in msg
    assert e.value.path == field


def test_malformed_top_level():
    for text, needle in [("{", "not valid JSON"), ('{"name": "X"}', "'type'"),
                         (_with(validVersions="0+"), "bounded"), (_with(apiKey="28"), "apiKey"),
                         (_with(type="query"), "'type'")]:
        with pytest.raises(SchemaError, match=needle):
            load_text(text, "Bad.json")


def test_tagged_outside_flexible_is_rejected():
    text = _with(fields__0__taggedVersions="0+", fields__0__tag=0)
    with pytest.raises(SchemaError, match="outside flexibleVersions"):
        load_text(text, "T.json")


def test_duplicate_tags_and_names_are_rejected():
    obj = json.loads(_with())
    obj["fields"].append({"name": "Name", "type": "int8", "versions": "0+"})
    with pytest.raises(SchemaError, match="duplicate field name"):
        load_text(json.dumps(obj), "D.json")
    obj = json.loads(_with())
    obj["fields"] += [{"name": "A", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 0},
                      {"name": "B", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 0}]
    with pytest.raises(SchemaError, match="tag 0 already used"):
        load_text(json.dumps(obj), "D.json")


def test_kit_files_need_status_for_every_version(tmp_path):
    obj = json.loads(_with())
    obj["kipviz"] = {"versions": [{"versions": "0-2", "status": "released", "since": "1.0"}]}
    with pytest.raises(SchemaError, match="version 3 must have exactly one status"):
        load_text(json.dumps(obj), "K.json", require_kit=True)
    obj["kipviz"]["versions"].append({"versions": "3", "status": "released"})
    with pytest.raises(SchemaError, match="needs 'since'"):
        load_text(json.dumps(obj), "K.json", require_kit=True)
    obj["kipviz"]["versions"][-1] = {"versions": "3", "status": "rumoured"}
    with pytest.raises(SchemaError, match="status must be one of"):
        load_text(json.dumps(obj), "K.json", require_kit=True)
    p = tmp_path / "K.json"
    p.write_text(json.dumps(BASE))
    with pytest.raises(SchemaError, match="kipviz"):
        load_file(p, require_kit=True)


KIT_RPCS = ["ApiVersions", "Metadata", "CreateTopics", "DeleteTopics", "FindCoordinator",
            "InitProducerId", "Produce", "Fetch", "ListOffsets", "OffsetForLeaderEpoch",
            "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit",
            "OffsetCommit", "OffsetFetch", "ListGroups", "DescribeGroups", "JoinGroup", "SyncGroup",
            "Heartbeat", "LeaveGroup", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
            "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
            "LeaderAndIsr", "StopReplica", "UpdateMetadata", "TxnShareAcknowledge"]


@pytest.mark.parametrize("api", KIT_RPCS)
def test_kit_covers_every_rpc_with_labels(api):
    for kind in ("Request", "Response"):
        spec = registry.get(api + kind)
        assert spec.kit is not None
        for v in spec.versions:
            st = spec.status(v)
            assert st is not None and st.status in ("released", "accepted", "proposed")
            assert spec.status_label(v)


@pytest.mark.parametrize("api,top", [("TxnOffsetCommit", 6), ("OffsetCommit", 10),
                                     ("OffsetFetch", 10), ("ListGroups", 5)])
def test_version_ranges_the_kips_need(api, top):
    for kind in ("Request", "Response"):
        spec = registry.get(api + kind)
        assert spec.valid.lo == 0 and spec.valid.hi == top


def test_headers_and_labels_of_the_kips():
    assert registry.get("RequestHeader").valid.hi == 2
    assert registry.get("ResponseHeader").valid.hi == 1
    t6 = registry.get("TxnOffsetCommitRequest").status(6)
    assert t6.status == "released" and t6.since == "4.4" and t6.kip == "KIP-1319"
    assert registry.get("TxnOffsetCommitRequest").status(5).status == "released"
    tsa = registry.get("TxnShareAcknowledgeRequest")
    assert tsa.status(0).status == "proposed" and tsa.status(0).kip == "KIP-1289"
    assert {c["apiKey"] for c in tsa.kit.api_key_candidates} >= {93, 94, 95}
    assert "GenerationId" in registry.get("TxnOffsetCommitRequest").field_at("GenerationIdOrMemberEpoch").aliases


def test_txn_share_acknowledge_key_is_configurable_and_clash_is_shown():
    assert registry.clashes("TxnShareAcknowledge", 93) == ["api key 93 is Kafka's GetReplicaLogInfo"]
    try:
        problems = registry.configure_api_key("TxnShareAcknowledge", 93)
        assert problems == ["api key 93 is Kafka's GetReplicaLogInfo"]
        assert registry.by_api_key(93).name == "TxnShareAcknowledgeRequest"
        with pytest.raises(ValueError, match="kit's TxnOffsetCommit"):
            registry.configure_api_key("TxnShareAcknowledge", 28)
    finally:
        registry.configure_api_key("TxnShareAcknowledge", None)
    assert registry.api_key(registry.get("TxnShareAcknowledgeRequest")) == 94


def test_unknown_message_suggests_names():
    with pytest.raises(KeyError, match="did you mean"):
        registry.get("TxnOffsetCommit")
