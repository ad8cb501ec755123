"""Design review of schema drafts: each compatibility rule fires on its fixture (and on variants of
the clean draft) and not on the clean one; precise errors; the CLI's exit codes; the HTML report
is self-contained. Fixtures are the kit's own (tests/fixtures/review); a few tests also review
Kafka's KIP-1289 draft files when ../shared/kafka is present."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz import cli
from kipviz.errors import SchemaError, UnknownMessageError
from kipviz.review import RULES, review
from kipviz.review import samples as review_samples
from kipviz.review.checks import ranges
from kipviz.review.source import locate
from kipviz.schema import jsonc, registry
from kipviz.schema.check import reference_root

FIX = Path(__file__).resolve().parent / "fixtures" / "review"
CLEAN = (FIX / "clean.json").read_text()


def rules(r, severity=None):
    return {f.rule for f in r.findings if severity is None or f.severity == severity}


def only(r, rule):
    hits = [f for f in r.findings if f.rule == rule]
    assert hits, f"{rule} did not fire: {r.summary()}"
    return hits


def edited(text: str, change) -> str:
    """The clean draft's JSON, changed by `change(obj)`, as text."""
    obj = jsonc.loads(text)
    change(obj)
    return json.dumps(obj, indent=2)


def field(obj, name):
    return next(f for f in obj["fields"] if f["name"] == name)


# ---- the fixtures ----------------------------------------------------------------------------------
def test_clean_draft_has_no_findings():
    r = review(FIX / "clean.json")
    assert r.findings == [], r.summary()
    assert r.ok and r.new_versions == [7] and r.changed_versions == []
    assert r.spec.status(7).status == "proposed" and r.spec.status(5).status == "released"


@pytest.mark.parametrize("fixture, rule, severity, versions, line", [
    ("removed_field.json", "field-removed-without-bound", "error", (3, 4, 5, 6), None),
    ("old_version_field.json", "field-added-to-old-version", "error", (5, 6), 29),
    ("non_ignorable_tagged.json", "non-ignorable-in-old-version", "warning", (3, 4, 5, 6), 31),
    ("tag_reused.json", "tag-reused", "error", (5,), 51),
    ("api_key_93.json", "api-key-taken", "error", (), 4),
])
def test_each_rule_fires_on_its_fixture(fixture, rule, severity, versions, line):
    r = review(FIX / fixture)
    hit = only(r, rule)[0]
    assert hit.severity == severity and hit.versions == versions and hit.line == line
    assert hit.explanation and hit.message
    assert r.ok is (severity != "error")
    assert rule not in rules(review(FIX / "clean.json"))


def test_removed_field_names_the_bound_to_use():
    hit = only(review(FIX / "removed_field.json"), "field-removed-without-bound")[0]
    assert hit.path == "GroupInstanceId" and '"versions": "3-6"' in hit.explanation


def test_api_key_93_names_kafka_44s_rpc_and_the_candidates():
    r = review(FIX / "api_key_93.json")
    hit = only(r, "api-key-taken")[0]
    assert "Kafka 4.4's StreamsGroupTopologyDescriptionUpdate" in hit.message
    assert "first key free in Kafka 4.4 is 95" in hit.explanation and "KIP-1289 page" in hit.explanation
    # the candidates' story comes from the key table: 94 is taken in 4.4, 95 free, 93 held on trunk once
    assert "Kafka 4.4's UnregisterController" in hit.explanation and "95 (later draft" in hit.explanation
    assert "free in Kafka 4.4" in hit.explanation and "GetReplicaLogInfo's on trunk" in hit.explanation
    assert rules(r, "error") == {"api-key-taken"}          # the layout itself matches the kit's v0


def test_tag_reused_is_reported_once_per_field():
    r = review(FIX / "tag_reused.json")
    assert [f.path for f in r.findings if f.rule == "tag-reused"] == ["ControllerReady"]


def test_syntax_error_names_the_line():
    r = review(FIX / "syntax_error.json")
    assert not r.ok and r.spec is None
    [f] = r.findings
    assert f.rule == "invalid" and f.line == 13 and "syntax_error.json" in f.message
    assert "line 13 column 7" in f.message and r.draft.column == 7


def test_bad_field_names_the_path_and_the_line():
    [f] = review(FIX / "bad_field.json").findings
    assert f.rule == "invalid" and f.path == "Topics.Partitions" and f.line == 16
    assert "'tag' and 'taggedVersions' must be given together" in f.message


# ---- the other rules, on variants of the clean draft -----------------------------------------------
def _narrow(o):
    field(o, "MemberId")["versions"] = "4+"


def _retype(o):
    field(o, "ProducerEpoch")["type"] = "int32"


def _reorder(o):
    f = o["fields"]
    f[2], f[3] = f[3], f[2]


def _flex(o):
    o["flexibleVersions"] = "4+"


def _drop(o):
    o["validVersions"] = "2-7"


def _same_wire(o):
    o["validVersions"] = "0-8"


def _stable(o):
    del o["latestVersionUnstable"]


def _metadata(o):
    field(o, "TransactionVersion")["versions"] = "7+"
    o["fields"][-1]["fields"][2]["fields"][2]["ignorable"] = False   # CommittedLeaderEpoch


def _no_about(o):
    del field(o, "TransactionVersion")["about"]


def _key(o):
    o["apiKey"] = 29


def _nullable(o):
    field(o, "GroupId")["nullableVersions"] = "0+"


@pytest.mark.parametrize("change, rule, severity, versions, detail", [
    (_narrow, "field-versions-narrowed", "error", (3,), "versions 3+ → 4+"),
    (_retype, "existing-version-changed", "error", tuple(range(7)), "type int16 → int32"),
    (_nullable, "existing-version-changed", "error", tuple(range(7)), "now nullable"),
    (_reorder, "existing-version-changed", "error", tuple(range(7)), "reordered: ProducerEpoch, ProducerId now"),
    (_flex, "existing-version-changed", "error", (3,), "flexible removed"),
    (_drop, "versions-dropped", "warning", (0, 1), "validVersions 0-6 → 2-7"),
    (_same_wire, "new-version-same-wire", "info", (8,), "v8 has the same bytes as v7"),
    (_stable, "new-version-not-unstable", "info", (7,), "latestVersionUnstable"),
    (_metadata, "metadata-changed", "info", (), "ignorable True → False"),
    (_no_about, "missing-about", "info", (), "TransactionVersion"),
    (_key, "api-key-changed", "error", (), "apiKey 28 → 29"),
    (_key, "api-key-taken", "error", (), "Kafka 4.4's DescribeAcls"),
])
def test_rule_fires_on_a_variant_of_the_clean_draft(change, rule, severity, versions, detail):
    r = review(edited(CLEAN, change))
    hits = [f for f in only(r, rule) if detail in f.message]
    assert hits, [str(f) for f in r.findings]
    assert hits[0].severity == severity and hits[0].versions == versions


def test_changes_to_proposed_versions_are_warnings():
    """The kit's TxnShareAcknowledge v0 is proposed: changing it is worth a warning, not an error."""
    text = (FIX / "api_key_93.json").read_text().replace('"apiKey": 93', '"apiKey": 95')
    text = text.replace('"name": "MemberEpoch", "type": "int32"', '"name": "MemberEpoch", "type": "int64"')
    r = review(text)
    [hit] = only(r, "existing-version-changed")
    assert hit.severity == "warning" and hit.path == "MemberEpoch" and r.ok


def test_a_deleted_tagged_field_is_a_warning_and_its_tag_stays_taken():
    def change(o):
        o["fields"] = [f for f in o["fields"] if f["name"] != "ZkMigrationReady"]
    r = review(edited((FIX / "tag_reused.json").read_text(), change))
    removed = only(r, "field-removed-without-bound")[0]
    assert removed.severity == "warning" and removed.versions == (3, 4)
    reused = only(r, "tag-reused")[0]
    assert "was ZkMigrationReady" in reused.message and reused.severity == "error"


def test_new_rpc_rules():
    def change(o):
        o["flexibleVersions"] = "none"
        o["name"] = "ShareRenewLease"
        del o["fields"][0]["about"]
    text = (FIX / "bad_field.json").read_text().replace('"tag": 0, ', "").replace('"apiKey": 95', '"apiKey": 96')
    r = review(edited(text, change), against="none")
    assert r.baseline.spec is None and r.new_versions == [0]
    assert {"new-version-not-flexible", "bad-name", "missing-about", "new-version-not-unstable"} <= rules(r)
    assert "api-key-taken" not in rules(r)          # 96 is free (95 is the kit's TxnShareAcknowledge)


def test_example_that_does_not_round_trip_is_an_error(monkeypatch):
    monkeypatch.setattr(review_samples, "example_value", lambda spec, v: {"TransactionalId": 5})
    r = review(FIX / "clean.json")
    hit = only(r, "example-roundtrip")[0]
    assert hit.severity == "error" and hit.versions == (7,) and not r.ok


def test_every_rule_is_exercised_here():
    """Each rule id appears in this file's expectations (a rule nobody tests is a rule nobody runs)."""
    text = Path(__file__).read_text()
    assert [r for r in RULES if f'"{r}"' not in text] == []


# ---- what the review compares with, and what it shows ----------------------------------------------
def test_baseline_choice():
    assert review(FIX / "clean.json").baseline.label == "the kit's definition of TxnOffsetCommitRequest"
    r = review(FIX / "clean.json", against="none")
    assert r.baseline.spec is None and r.new_versions == list(range(8))
    with pytest.raises(UnknownMessageError):
        review(FIX / "clean.json", against="NoSuchRequest")
    with pytest.raises(SchemaError, match="cannot read"):
        review(FIX / "missing.json")


def test_changed_versions_are_read_by_the_baseline():
    r = review(FIX / "removed_field.json")
    assert r.changed_versions == [3, 4, 5, 6] and r.shown_versions == [3, 4, 5, 6, 7]
    by_v = {e.version: e for e in r.examples}
    assert all(e.ok for e in r.examples)
    assert by_v[5].base_ok is False and "cannot read" in by_v[5].base_reading
    assert by_v[7].base_reading is None                      # the baseline has no v7


def test_summary_lists_findings_and_verdict():
    s = review(FIX / "removed_field.json").summary()
    assert "compared with the kit's definition of TxnOffsetCommitRequest" in s
    assert "ERROR   field-removed-without-bound: GroupInstanceId v3-6" in s
    assert s.splitlines()[-1] == "NOT OK: 1 error(s), 0 warning(s), 0 note(s)"


_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


@pytest.mark.parametrize("fixture", ["removed_field.json", "syntax_error.json", "api_key_93.json"])
def test_html_report_is_self_contained(fixture):
    r = review(FIX / fixture)
    page = r.to_html()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not _EXTERNAL.search(page)
    assert not re.search(r"<link\b|<script[^>]*\bsrc=|@import|url\(", page, re.I)
    for f in r.findings:
        assert f.rule in page
    if r.spec is not None:
        assert page.count("<svg") >= len(r.shown_versions)     # a wire diagram per new/changed version
        assert 'class="kvx"' in page                            # the annotated hex dump
    else:
        assert "line 13" in page or "Topics.Partitions" in page
    assert r._repr_html_().startswith('<div class="kvr">')


def test_locate_points_at_nested_fields():
    line = locate(CLEAN, "Topics.Partitions.CommittedOffset")
    assert '"CommittedOffset"' in CLEAN.splitlines()[line - 1]
    assert locate(CLEAN, "NoSuchField") is None
    assert ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


# ---- command line ------------------------------------------------------------------------------------
def test_cli_exit_codes(tmp_path, capsys, monkeypatch):
    assert cli.main(["review", str(FIX / "clean.json")]) == 0
    assert "OK: 0 error(s)" in capsys.readouterr().out
    out = tmp_path / "review.html"
    assert cli.main(["review", str(FIX / "removed_field.json"), "--html", str(out)]) == 1
    assert "field-removed-without-bound" in capsys.readouterr().out and out.read_text().startswith("<!DOCTYPE")
    assert cli.main(["review", str(FIX / "syntax_error.json")]) == 1
    assert "(line 13)" in capsys.readouterr().out
    assert cli.main(["review", str(FIX / "clean.json"), "--against", "none"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["review", str(FIX / "api_key_93.json"), "--html"]) == 1
    assert (tmp_path / "review.html").read_text().count("api-key-taken") >= 1


@pytest.mark.parametrize("argv", [["review", "no/such/draft.json"], ["review", str(FIX)],
                                  ["review", str(FIX / "clean.json"), "--against", "NoSuchRequest"],
                                  ["review", str(FIX / "clean.json"), "--html", "/no/such/dir/r.html"]])
def test_cli_unreadable_input_is_one_line_and_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("kipviz: error: ")


# ---- Kafka's own KIP-1289 draft files (../shared/kafka) ---------------------------------------------
ROOT = reference_root()
needs_kafka = pytest.mark.skipif(ROOT is None, reason="Kafka reference schemas (../shared/kafka) not found; "
                                 "set KIPVIZ_KAFKA_REF to review Kafka's draft files")


def _proposed(prefix: str) -> Path:
    return next((ROOT / "proposed").glob(prefix + ".*.json"))


@needs_kafka
def test_kafka_draft_request_has_the_kits_bytes():
    r = review(_proposed("TxnShareAcknowledgeRequest"))
    assert r.changed_versions == [] and rules(r) == {"metadata-changed", "api-key-taken", "api-key-changed"}
    assert {f.path for f in r.findings if f.rule == "metadata-changed"} == {"Topics.TopicId",
                                                                            "Topics.Partitions.PartitionIndex"}
    # the draft PR's key 94 is Kafka 4.4's UnregisterController: the only error
    assert [f.message for f in r.errors] == ["apiKey 94 is taken: api key 94 is Kafka 4.4's UnregisterController"]
    assert r.examples[0].base_ok


@needs_kafka
def test_kafka_draft_response_lacks_the_kits_tagged_fields():
    r = review(_proposed("TxnShareAcknowledgeResponse"))
    removed = {f.path for f in r.findings if f.rule == "field-removed-without-bound"}
    assert removed == {"Responses.Partitions.CurrentLeader", "NodeEndpoints"}
    assert all(f.severity == "warning" for f in r.findings if f.rule == "field-removed-without-bound")
    assert {f.rule for f in r.errors} == {"api-key-taken"}          # 94: Kafka 4.4's UnregisterController
    assert r.examples[0].base_ok is not None


@needs_kafka
def test_kafka_draft_of_getreplicaloginfo_lost_key_93_in_kafka_44():
    r = review(_proposed("GetReplicaLogInfoRequest"))
    assert r.baseline.spec is None and [f.message for f in r.errors] == [
        "apiKey 93 is taken: api key 93 is Kafka 4.4's StreamsGroupTopologyDescriptionUpdate"]


@needs_kafka
def test_against_kafkas_released_schema_directory():
    r = review(FIX / "clean.json", against=str(ROOT / "message-4.3"))
    assert r.baseline.official and r.new_versions == [6, 7] and r.ok
    assert "existing-version-changed" not in rules(r)


# ---- properties over the kit's own definitions -----------------------------------------------------
KIT = sorted(registry.messages())


@pytest.mark.parametrize("name", KIT)
def test_a_kit_definition_reviewed_against_itself_has_no_findings(name):
    text = (registry.DEFS_DIR / f"{name}.json").read_text()
    r = review(text, examples=False)
    assert r.findings == [] and r.new_versions == [] and r.changed_versions == []


def _top_fields_in_frozen_versions():
    out = []
    for name in KIT:
        spec = registry.get(name)
        for f in spec.fields:
            present = tuple(v for v in spec.versions if f.present(v))
            if any(spec.status(v).status != "proposed" for v in present):
                out.append((name, f.name, present, f.tag is not None))
    return out


@settings(max_examples=25)
@given(st.sampled_from(_top_fields_in_frozen_versions()))
def test_deleting_any_released_field_is_flagged_at_exactly_its_versions(case):
    name, fname, versions, tagged = case
    obj = jsonc.loads((registry.DEFS_DIR / f"{name}.json").read_text())
    obj["fields"] = [f for f in obj["fields"] if f["name"] != fname]
    r = review(json.dumps(obj), examples=False)
    [hit] = [f for f in r.findings if f.rule == "field-removed-without-bound"]
    assert hit.path == fname and hit.versions == versions
    assert hit.severity == ("warning" if tagged else "error")
    assert r.ok is tagged
