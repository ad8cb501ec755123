"""kipviz review reviews behaviour: open questions for KIP-1289 through the CLI, each departure's
scenario shows what the departure says, errors per version (review, explorer, diff), and the
modelling guide's paths and commands exist."""
from __future__ import annotations

import ast
import inspect
import re
import shlex
from pathlib import Path

import pytest

from kipviz import cli, scenarios
from kipviz.broker import api_errors, errors_by_version, share_txn
from kipviz.review.behaviour import MODELLED, behaviour
from kipviz.scenarios.kip1289_departures import DEPARTURES, runnable
from kipviz.schema.error_codes import ERRORS, name_of

ROOT = Path(__file__).resolve().parent.parent
DRAFT = ROOT / "kipviz/defs/messages/TxnShareAcknowledgeRequest.json"
CLEAN = ROOT / "tests/fixtures/review/clean.json"
#: h24a's scenarios: present after that branch is merged
MARKER = {"kip1289.marker_colocated", "kip1289.marker_not_colocated", "kip1289.marker_forwarded"}


def test_cli_review_prints_open_questions_with_runnable_scenarios(capsys):
    rc = cli.main(["review", str(DRAFT)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Open questions (KIP-1289" in out
    names = re.findall(r"run `kipviz scenario ([\w.]+)`", out)
    assert {d.scenario for d in DEPARTURES} <= set(names)
    known = {s["name"] for s in scenarios.catalog()}
    for n in names:
        assert n in known or n in MARKER, n
    for key in ("marker-hook-colocation", "api-key", "release-in-transaction", "archiving-state", "abort-state",
                "abort-spends-delivery", "case7-timeout-order", "error-transaction-abortable", "error-kafka-storage",
                "plain-ack-of-tx-pending", "repeated-aborts-delivery-limit", "rollout-share-version",
                "rollout-gating-and-old-client"):
        assert f"] {key}:" in out, key
    assert "errors TxnShareAcknowledge v0 can return" in out


def test_cli_schema_only_and_unmodelled_draft(capsys):
    cli.main(["review", str(DRAFT), "--schema-only"])
    assert "Open questions" not in capsys.readouterr().out
    cli.main(["review", str(CLEAN)])
    out = capsys.readouterr().out
    assert "behaviour: not checked -- the kit has no model of TxnOffsetCommit" in out
    assert "Open questions" not in out
    assert "errors TxnOffsetCommit v7 can return: not declared" in out


def test_html_review_has_open_questions_with_sequence_diagrams(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli.main(["review", str(DRAFT), "--html", str(out)]) == 0
    page = out.read_text()
    assert "<h2>Open questions</h2>" in page and "<h2>Errors this version can return</h2>" in page
    assert page.count("sequence diagram of kip1289.") >= sum(runnable().values()) - 1
    assert "evidence (checks and events)" in page and "<svg" in page


@pytest.mark.parametrize("d", DEPARTURES, ids=lambda d: d.key)
def test_each_departure_scenario_shows_its_outcome(d):
    if d.scenario not in {s["name"] for s in scenarios.catalog()}:
        assert d.scenario in MARKER, f"{d.scenario} is neither registered nor one of h24a's"
        pytest.skip(f"{d.scenario} arrives with branch h24a")
    t = scenarios.run(d.scenario, seed=0)
    assert t.passed, [c.description + " " + c.detail for c in t.failures()]
    assert d.page and d.model and d.outcome


def test_departure_scenarios_assert_what_the_departures_state():
    ab = scenarios.run("kip1289.happy_abort")
    assert ab.result["redelivered"] == [0, 1, 2, 3] and ab.result["redelivered_after_ms"] >= 30_000
    lim = scenarios.run("kip1289.aborts_reach_delivery_limit")
    assert lim.result["delivery_counts"] == [1, 2, 3, 4, 5] and lim.result["last_move"][0][1] == "ARCHIVED"
    le = scenarios.run("kip1289.listed_errors")
    assert le.passed, [c.description + " " + c.detail for c in le.failures()]
    got = le.result["answers"]       # decoded TxnShareAcknowledge responses: top-level and per partition
    assert got["TRANSACTIONAL_ID_NOT_FOUND"]["error"] == "TRANSACTIONAL_ID_NOT_FOUND"
    assert got["TRANSACTIONAL_ID_NOT_FOUND"]["partitions"] == {}
    assert got["NOT_LEADER_OR_FOLLOWER"]["error"] == "NONE"
    assert got["NOT_LEADER_OR_FOLLOWER"]["partitions"] == {0: "NOT_LEADER_OR_FOLLOWER"}
    assert got["NOT_LEADER_OR_FOLLOWER"]["current_leader"][0] >= 0
    assert got["INVALID_TXN_STATE"]["error"] == "INVALID_TXN_STATE"
    assert got["INVALID_TXN_STATE"]["partitions"] == {}
    # each answer went over the wire: three TxnShareAcknowledge frames received, answered with these codes
    wire = [e for e in le.events if e.kind == "ResponseSent" and e.api == "TxnShareAcknowledge"]
    assert [name_of(e.body["ErrorCode"]) for e in wire] == ["TRANSACTIONAL_ID_NOT_FOUND", "NONE", "INVALID_TXN_STATE"]
    assert sum(e.kind == "RequestReceived" and e.api == "TxnShareAcknowledge" for e in le.events) == 3
    assert {"TRANSACTION_ABORTABLE", "KAFKA_STORAGE_ERROR"}.isdisjoint(le.result["possible"])
    pa = scenarios.run("kip1289.plain_ack_tx_pending")
    assert pa.result["states"] == ["TX_PENDING"]
    ro = scenarios.run("kip1289.rollout_gating").result
    assert ro["tv1"]["error"] == "UNSUPPORTED_VERSION" and ro["tv1"]["partitions"] == {} and ro["plain"] == ["NONE"]
    keys = scenarios.run("kip1289.api_key_history").result["keys"]
    assert keys == {93: False, 94: False, 95: True}


def test_workload_violations_are_reported_with_a_command_that_reruns_them(monkeypatch, capsys):
    """A violating workload (forced here: the checker reports one) becomes an open question whose
    command runs the same seeded workload."""
    from kipviz.review import behaviour as bh
    from kipviz.workloads.share_eos import WorkloadResult
    real = WorkloadResult.check

    def violating(self, *a, **kw):
        rep = real(self, *a, **kw)
        rep.violations.append({"kind": "duplicate-output", "input": ("in", 0, 3), "classification": "violation",
                               "case": None, "detail": "written twice", "events": [5, 9]})
        return rep
    monkeypatch.setattr(WorkloadResult, "check", violating)
    monkeypatch.setattr(bh, "WORKLOAD_SEEDS", (4,))
    cli.main(["review", str(DRAFT)])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "workload-share-eos-seed-4" in ln)
    cmd = re.search(r"run `python -c \"(.*?)\"`", line).group(1)
    assert "workload_run(4)" in cmd and "1 exactly-once violation(s)" in line
    monkeypatch.undo()
    ns: dict = {}
    exec(cmd.replace("print(", "ns_out = ("), ns)           # the command runs as written
    assert "share EOS check" in ns["ns_out"]


def test_behaviour_is_bounded_and_names_each_question():
    from kipviz.schema import registry
    b = behaviour(registry.get("TxnShareAcknowledgeRequest"))
    assert b.kip == "KIP-1289" and b.seconds < 30
    assert len(b.questions) >= len(DEPARTURES)
    assert all(q.scenario for q in b.questions)
    assert set(MODELLED) == {"TxnShareAcknowledge"}


# ---- errors per version -------------------------------------------------------------------------------------
def test_txn_offset_commit_v6_adds_kip1319s_three_errors():
    assert api_errors.new_errors("TxnOffsetCommit", 5, 6) == {
        "added": ["GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_ID"], "removed": []}
    from kipviz.draw import version_diff
    rows = [r for r in version_diff("TxnOffsetCommitRequest", 5, 6, errors=True) if r["path"] == "(errors)"]
    assert [r["detail"].split()[0] for r in rows] == ["GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_ID"]
    assert not [r for r in version_diff("TxnOffsetCommitRequest", 5, 6) if r["path"] == "(errors)"]


def test_cli_diff_prints_new_errors(capsys):
    assert cli.main(["diff", "TxnOffsetCommitRequest", "5", "6"]) == 0
    out = capsys.readouterr().out
    assert out.count("error added") == 3 and "STALE_MEMBER_EPOCH" in out


def test_the_apis_the_kit_covers_have_tables_with_known_names():
    for api in ("TxnOffsetCommit", "ShareAcknowledge", "ShareFetch", "TxnShareAcknowledge", "Produce", "Fetch",
                "InitProducerId", "AddPartitionsToTxn", "EndTxn"):
        t = errors_by_version(api)
        assert t and all(set(names) <= set(ERRORS) for names in t.values()), api
    with pytest.raises(KeyError, match="no error table"):
        errors_by_version("NoSuchApi")


def test_txn_share_acknowledge_table_covers_what_staging_answers():
    """Every CODE["X"] in broker/share_txn.stage is declared for v0; the page-only errors are not."""
    tree = ast.parse(inspect.getsource(share_txn.stage))
    used = {n.slice.value for n in ast.walk(tree) if isinstance(n, ast.Subscript)
            and isinstance(n.value, ast.Name) and n.value.id == "CODE" and isinstance(n.slice, ast.Constant)}
    declared = set(errors_by_version("TxnShareAcknowledge")[0])
    assert used and used <= declared, used - declared
    assert declared.isdisjoint(api_errors.PAGE_ONLY["TxnShareAcknowledge"])


def test_explorer_shows_errors_per_version():
    from kipviz.widgets import Explorer
    ex = Explorer("TxnOffsetCommit", version=6)
    assert "new in v6: GROUP_ID_NOT_FOUND, STALE_MEMBER_EPOCH, UNKNOWN_TOPIC_ID" in ex.errors_text
    ex.select("TxnOffsetCommitRequest", 3)
    assert "TRANSACTION_ABORTABLE" not in ex.errors_text and "new in v3: FENCED_INSTANCE_ID" in ex.errors_text
    ex.select("ApiVersionsRequest", 5)     # every handler declares its errors (broker/handlers/*.ERRORS)
    assert "new in v5: REBOOTSTRAP_REQUIRED" in ex.errors_text
    ex.select("UpdateMetadataRequest", 3)  # a message the broker model has no handler for
    assert "no error table" in ex.errors_text


# ---- docs/modelling-a-kip.md ------------------------------------------------------------------------------
DOC = (ROOT / "docs/modelling-a-kip.md").read_text(encoding="utf-8")


def test_guide_paths_exist():
    paths = set(re.findall(r"`((?:kipviz|tests|docs)/[\w/.-]+\.(?:py|json|md))`", DOC))
    assert len(paths) >= 10
    for p in paths:
        assert (ROOT / p).exists(), p


def test_guide_commands_parse_and_name_real_things(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    lines = [ln for block in re.findall(r"^```bash\n(.*?)^```", DOC, re.M | re.S) for ln in block.splitlines() if ln]
    assert len(lines) >= 4
    for ln in lines:
        args = shlex.split(ln)[1:]
        if "--html" in args:
            args[args.index("--html") + 1] = str(tmp_path / "review.html")
        assert cli.main(args) == 0, ln
    ns: dict = {}
    for block in re.findall(r"^```python\n(.*?)^```", DOC, re.M | re.S):
        exec(compile(block, "modelling-a-kip.md", "exec"), ns)


# ---- Kafka's own KIP-1289 draft file (../shared/kafka/proposed) -----------------------------------------
def _kafka_draft():
    from kipviz.schema.check import reference_root
    root = reference_root()
    if root is None:
        pytest.skip("Kafka reference schemas (../shared/kafka) not found; set KIPVIZ_KAFKA_REF")
    return next((root / "proposed").glob("TxnShareAcknowledgeRequest.*.json"))


def test_cli_review_of_kafkas_kip1289_draft_prints_the_open_questions(capsys):
    rc = cli.main(["review", str(_kafka_draft())])
    out = capsys.readouterr().out
    assert rc == 1                          # the draft PR's api key 94 is taken: a schema error
    assert "Open questions (KIP-1289" in out
    listed = re.findall(r"\] ([\w-]+): .* -- run `kipviz scenario ([\w.]+)`", out)
    assert [k for k, _ in listed[:len(DEPARTURES)]] == [d.key for d in DEPARTURES]
    assert all(s == d.scenario for (_, s), d in zip(listed, DEPARTURES, strict=False))
