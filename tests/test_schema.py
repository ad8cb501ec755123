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
    assert registry.api_key(registry.get("TxnShareAcknowledgeRequest")) == 95      # the later draft's, free in 4.4
    assert registry.clashes("TxnShareAcknowledge", 95) == []
    assert registry.clashes("TxnShareAcknowledge", 93) == [
        "api key 93 is Kafka 4.4's StreamsGroupTopologyDescriptionUpdate"]
    try:
        problems = registry.configure_api_key("TxnShareAcknowledge", 93)
        assert problems == ["api key 93 is Kafka 4.4's StreamsGroupTopologyDescriptionUpdate"]
        assert registry.by_api_key(93).name == "TxnShareAcknowledgeRequest"
        with pytest.raises(ValueError, match="kit's TxnOffsetCommit"):
            registry.configure_api_key("TxnShareAcknowledge", 28)
    finally:
        registry.configure_api_key("TxnShareAcknowledge", None)
    assert registry.api_key(registry.get("TxnShareAcknowledgeRequest")) == 95


@pytest.mark.parametrize("key, release, expected", [
    (93, "4.4", ["api key 93 is Kafka 4.4's StreamsGroupTopologyDescriptionUpdate"]),
    (94, "4.4", ["api key 94 is Kafka 4.4's UnregisterController"]),
    (93, "4.3", []),            # GetReplicaLogInfo held 93 on trunk only: no release clash
    (94, "4.3", []),
    (95, "4.4", []),
    (88, "4.1", ["api key 88 is Kafka 4.1's StreamsGroupHeartbeat"]),
    (88, "4.0", ["api key 88 may already be Kafka 4.0's StreamsGroupHeartbeat (first release not pinned; "
                 "certain from 4.1)"]),
])
def test_configure_api_key_reports_clashes_against_the_release_the_cluster_plays(key, release, expected):
    try:
        assert registry.configure_api_key("TxnShareAcknowledge", key, release=release) == expected
        assert registry.clashes("TxnShareAcknowledge", key, release) == expected
        assert registry.by_api_key(key).api == "TxnShareAcknowledge"
    finally:
        registry.configure_api_key("TxnShareAcknowledge", None)


def test_configure_api_key_refuses_bad_input_and_leaves_the_key_alone():
    for bad in (-1, 2**15, "93", True, 9.5):
        with pytest.raises(ValueError, match="api key must be an integer"):
            registry.configure_api_key("TxnShareAcknowledge", bad)
    with pytest.raises(ValueError, match="unknown Kafka release '3.9'"):
        registry.configure_api_key("TxnShareAcknowledge", 96, release="3.9")
    with pytest.raises(KeyError, match="no RPC named"):
        registry.configure_api_key("NoSuchRpc", 96)
    assert registry.api_key(registry.get("TxnShareAcknowledgeRequest")) == 95


def test_api_keys_per_release():
    from kipviz.schema.releases import RELEASES
    tables = {r: registry.kafka_api_keys(r) for r in RELEASES}
    assert registry.kafka_api_keys() == tables["4.4"]                        # None = newest
    assert tables["4.4"][93] == "StreamsGroupTopologyDescriptionUpdate" and tables["4.4"][94] == "UnregisterController"
    assert sorted(tables["4.4"]) == list(range(95))                           # 0-94, contiguous
    for r in ("4.0", "4.1", "4.2", "4.3"):
        assert 93 not in tables[r] and 94 not in tables[r]
    assert all(k not in tables["4.0"] for k in range(88, 93))                 # first release not pinned
    for r in ("4.1", "4.2", "4.3", "4.4"):
        assert [tables[r][k] for k in range(88, 93)] == [
            "StreamsGroupHeartbeat", "StreamsGroupDescribe", "DescribeShareGroupOffsets",
            "AlterShareGroupOffsets", "DeleteShareGroupOffsets"]
    assert tables["4.0"][74] == "ListClientMetricsResources" and tables["4.1"][74] == "ListConfigResources"
    assert all("GetReplicaLogInfo" not in t.values() for t in tables.values())   # never released
    for older, newer in zip(RELEASES, RELEASES[1:], strict=False):     # keys are never given back
        assert set(tables[older]) <= set(tables[newer])
    with pytest.raises(ValueError, match="unknown Kafka release"):
        registry.kafka_api_keys("5.0")


def test_api_key_history_tells_the_kip_1289_story():
    rows = registry.api_key_history("TxnShareAcknowledge")
    assert [(r["key"], r["source"], r["default"]) for r in rows] == [
        (93, "KIP-1289 page", False), (94, "draft PR apache/kafka#22357", False),
        (95, "later draft in the author's fork", True)]
    by_key = {r["key"]: r for r in rows}
    assert "GetReplicaLogInfo" in by_key[93]["trunk only"] and "#19664" in by_key[93]["trunk only"]
    assert by_key[93]["4.4"] == "StreamsGroupTopologyDescriptionUpdate" and by_key[93]["4.3"] == ""
    assert by_key[94]["4.4"] == "UnregisterController" and by_key[94]["trunk only"] == ""
    assert [r["free_in_newest"] for r in rows] == [False, False, True]
    assert all(by_key[95][rel] == "" for rel in ("4.0", "4.1", "4.2", "4.3", "4.4"))
    assert registry.api_key_history("TxnOffsetCommit") == []                  # a settled key has no story
    with pytest.raises(KeyError, match="no RPC named"):
        registry.api_key_history("NoSuchRpc")


def test_unknown_message_suggests_names():
    with pytest.raises(KeyError, match="did you mean"):
        registry.get("TxnOffsetCommit")
