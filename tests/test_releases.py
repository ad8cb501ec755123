"""The release matrix (versions each Kafka release serves), derived from the kit's labels, checked
against Kafka's own 4.3-era schema files and docs/facts.md#kafka-44's list of what 4.4 changed."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kipviz.broker import Cluster, served_versions
from kipviz.schema import jsonc, registry, releases
from kipviz.schema.check import matrix_text, reference_root
from kipviz.schema.matrix import matrix
from kipviz.schema.releases import NEWEST, RELEASES, served, served_list

ROOT = reference_root()
needs_kafka = pytest.mark.skipif(ROOT is None, reason="Kafka reference schemas (../shared/kafka/message-4.3) not "
                                 "found; set KIPVIZ_KAFKA_REF to compare the release matrix with Kafka 4.3")

# docs/facts.md#kafka-44: request versions Kafka 4.4 added over 4.3.1 (franz-go PR #1446, ApiVersions diff of 4.4.0-rc1)
NEW_IN_44 = {"ApiVersions": 5, "TxnOffsetCommit": 6, "DeleteGroups": 3,
             "StreamsGroupHeartbeat": 1, "StreamsGroupDescribe": 1}


def _kafka_43() -> dict[str, tuple[int, int]]:
    """api -> (min, max) a Kafka 4.3 broker serves by default, from message-4.3's request files:
    validVersions minus a top version marked latestVersionUnstable."""
    out = {}
    for path in sorted((ROOT / "message-4.3").glob("*Request.json")):
        obj = jsonc.loads(path.read_text())
        lo, _, hi = obj["validVersions"].partition("-")
        lo, hi = int(lo), int(hi or lo)
        if obj.get("latestVersionUnstable"):
            hi -= 1
        out[obj["name"][: -len("Request")]] = (lo, hi)
    return out


@needs_kafka
def test_43_column_matches_kafkas_43_schema_files():
    kafka, kit = _kafka_43(), matrix()
    shared = sorted(set(kafka) & set(kit))
    assert len(shared) >= 20, shared                   # most of the kit's RPCs are in the 4.3 files
    assert {api: kit[api]["4.3"] for api in shared} == {api: kafka[api] for api in shared}


@needs_kafka
def test_44_column_is_43_plus_the_facts_table():
    kafka, kit = _kafka_43(), matrix()
    checked = []
    for api, cols in kit.items():
        base = kafka.get(api, cols["4.3"])             # Kafka's 4.3 files where they have the RPC
        top = NEW_IN_44.get(api)
        if top is None:
            assert cols["4.4"] == base, api
        elif top in registry.get(api + "Request").versions:   # asserted once the kit defines the version
            assert cols["4.4"] == (base[0] if base else 0, top), api        # no minimum changed in 4.4
            checked.append(api)
    assert "TxnOffsetCommit" in checked
    # after the ApiVersions v5 / DeleteGroups v0-3 definitions land, these are checked too
    for api in ("ApiVersions", "DeleteGroups"):
        if api in kit and NEW_IN_44[api] in registry.get(api + "Request").versions:
            assert api in checked


def test_matrix_has_every_release_and_the_kip_1319_step():
    m = matrix()
    assert all(list(cols) == list(RELEASES) for cols in m.values())
    assert [m["TxnOffsetCommit"][r] for r in RELEASES] == [(0, 5)] * 4 + [(0, 6)]
    assert m["TxnShareAcknowledge"] == {r: None for r in RELEASES}        # proposed: no release serves it
    assert m["ShareFetch"]["4.0"] is None and m["ShareFetch"]["4.1"] == (1, 1)   # v0 early access only


def test_a_release_serves_only_versions_released_by_then_and_not_removed():
    for spec in registry.messages().values():
        for r in RELEASES:
            for v in served_list(spec, r):
                st = spec.status(v)
                assert st.status == "released" and releases.release_key(st.since) <= releases.release_key(r)
                assert st.removed is None or releases.release_key(st.removed) > releases.release_key(r)


@given(st.sampled_from(sorted(registry.messages())), st.sampled_from(RELEASES))
def test_broker_model_serves_what_the_matrix_says(name, release):
    spec = registry.get(name)
    if spec.type != "request":
        return
    assert served_versions(spec.api, Cluster(release=release).config) == served(spec, release)


def test_trunk_default_still_counts_accepted_versions():
    # release=None is "released and accepted" (trunk), as before the rule moved into schema.releases
    assert served(registry.get("InitProducerIdRequest"), None) == (0, 6)
    assert served(registry.get("InitProducerIdRequest"), NEWEST) == (0, 5)
    assert served(registry.get("TxnShareAcknowledgeRequest"), NEWEST, frozenset({"TxnShareAcknowledge"})) == (0, 0)


def test_release_names_are_checked():
    assert releases.check(None) == NEWEST and releases.check("4.2") == "4.2"
    for bad in ("4.5", "3.9", "", "latest"):
        with pytest.raises(ValueError, match="unknown Kafka release"):
            releases.check(bad)
    assert releases.release_key("4.10") > releases.release_key("4.9") and releases.release_key("≤4.1") == (4, 1)


def test_check_prints_the_matrix():
    text = matrix_text()
    head, *rows = text.splitlines()
    assert head.split() == ["api", "key", *RELEASES]
    toc = next(r for r in rows if r.split()[0] == "TxnOffsetCommit").split()
    assert toc == ["TxnOffsetCommit", "28", "0-5", "0-5", "0-5", "0-5", "0-6"]
    assert next(r for r in rows if r.split()[0] == "TxnShareAcknowledge").split()[2:] == ["-"] * len(RELEASES)


def test_an_api_a_release_serves_has_its_key_in_that_releases_key_table():
    """The labels (matrix) and the key table (api_keys.json) are separate data; they must agree."""
    for api, cols in matrix().items():
        key = registry.api_key(registry.get(api + "Request"))
        for r, rng in cols.items():
            if rng is not None:
                assert registry.kafka_api_keys(r).get(key) == api, (api, r)


def test_key_table_data_is_well_formed():
    from kipviz.schema import api_keys
    later = [e for e in api_keys._data()[0] if e.since is not None]
    assert later == sorted(later, key=lambda e: releases.release_key(e.since))
    for e in later:
        assert e.since.lstrip("≤") in RELEASES and e.source, e
        assert e.pinned or e.note, e                  # an unpinned first release says why
    for e in api_keys._data()[1]:                     # trunk-only keys never appear in a release's table
        assert all(registry.kafka_api_keys(r).get(e.key) != e.name for r in RELEASES)
