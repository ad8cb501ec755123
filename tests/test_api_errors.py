"""The per-version error table (kipviz.broker.api_errors, collected from the handler modules' ERRORS)
against its judges: the handlers' code (read with ast), what the model answers in every scenario,
Kafka's response schemas ("Version N adds ..." notes and "Supported errors" lists; 4.3, else the
2024-10 snapshot), and golden copies of the share-group lists read from apache/kafka."""
from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import textwrap
import types

import pytest

from kipviz import scenarios
from kipviz.broker import cluster as cluster_module
from kipviz.broker.api_errors import ERROR_ROWS, declared, errors_by_version
from kipviz.broker.handlers import HANDLERS, load_all
from kipviz.schema.check import reference_root
from kipviz.schema.error_codes import ERRORS, name_of
from kipviz.schema.events import ResponseSent

load_all()

# ---- the static judge: which error codes can each handler's code answer? ------------------------
# From the handler function, follow the calls the code makes to kipviz.broker functions: module
# functions by name, `self.m` on the method's class, `cluster.m`, `cluster.<coordinator>.m` and
# `self.a.m` through the annotations (a property's return type, a field's class annotation), local
# aliases (`txns = cluster.txns`, `f = getattr(txns, "m", None)`),
# and `x.m` on an unknown receiver when exactly one broker class defines m. Every error name the
# reached code mentions (CODE["X"] / E["X"], "X" strings, X constants) counts, except names it only
# compares against (`err == E["X"]`, `err in (...)`: tested, not answered).

# functions whose codes never reach the caller's response
STOP = {
    "MarkerChannel.start": "markers go out on the coordinator's own timer; their answers are "
                           "WriteTxnMarkers responses",
    "MarkerChannel._schedule": "as MarkerChannel.start",
    "MarkerChannel._send": "as MarkerChannel.start",
    "Cluster.complete": "a held request's later answer (its codes are the handler's)",
    "Cluster._respond": "UNKNOWN_SERVER_ERROR for a model bug, any API (cluster.handle's catch-all)",
}

# codes the reached code names that the API still never answers (a path the name analysis cannot
# rule out), each with where the code is stopped or rewritten; stale entries fail the judge
NOT_ANSWERED = {
    ("Produce", "CONCURRENT_TRANSACTIONS"): "TransactionCoordinator.check_produce rewrites it to NOT_ENOUGH_REPLICAS",
    ("Produce", "PRODUCER_FENCED"): "TransactionCoordinator._verify_or_add rewrites it to INVALID_PRODUCER_EPOCH",
    ("Produce", "INVALID_REQUEST"): "add/verify_partitions answer it for an empty transactional id; check_produce "
                                    "returns before asking for a non-transactional batch",
    ("TxnOffsetCommit", "PRODUCER_FENCED"): "TransactionCoordinator._verify_or_add rewrites it to "
                                            "INVALID_PRODUCER_EPOCH",
    ("TxnOffsetCommit", "REBALANCE_IN_PROGRESS"): "offsets._validate_commit_group raises it only when not "
                                                  "transactional (OffsetCommit)",
    ("TxnOffsetCommit", "UNSUPPORTED_VERSION"): "offsets._validate_commit_group raises it only when not "
                                                "transactional (OffsetCommit below v9)",
    ("InitProducerId", "INVALID_PRODUCER_ID_MAPPING"): "_fence_and_abort aborts an Ongoing transaction with its own "
                                                       "producer id and epoch: end_transaction's error branches "
                                                       "are not taken",
    ("InitProducerId", "INVALID_TXN_STATE"): "as INVALID_PRODUCER_ID_MAPPING",
    ("ShareAcknowledge", "UNKNOWN_MEMBER_ID"): "shares.session_step checks the member only when a session opens "
                                               "(epoch 0), which ShareAcknowledge may not do "
                                               "(INVALID_SHARE_SESSION_EPOCH first)",
    ("JoinGroup", "REBALANCE_IN_PROGRESS"): "classic._prepare_rebalance answers the held SyncGroups of a group "
                                            "completing its rebalance, not the JoinGroup",
    ("LeaveGroup", "REBALANCE_IN_PROGRESS"): "as JoinGroup's",
    ("LeaderAndIsr", "FENCED_LEADER_EPOCH"): "controller_request serves both controller requests; it is "
                                             "replicas.stop_replica's answer",
    ("StopReplica", "INCONSISTENT_TOPIC_ID"): "replicas.leader_and_isr's answer (StopReplica names topics, never ids)",
    ("StopReplica", "UNKNOWN_TOPIC_OR_PARTITION"): "replicas.leader_and_isr's answer",
    ("TxnShareAcknowledge", "CONCURRENT_TRANSACTIONS"): "ShareTransactions.check_producer answers a Prepare* transaction "
                                                        "INVALID_TXN_STATE before add_partitions can",
}

# codes cluster.handle answers before any handler runs: a row may declare them without the handler
# naming them (ApiVersions' UNSUPPORTED_VERSION, with the broker's ApiKeys)
BEFORE_THE_HANDLER = {"UNSUPPORTED_VERSION"}

_Cluster = cluster_module.Cluster


def _named_codes(tree: ast.AST) -> set[str]:
    compared = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Compare) for n in ast.walk(c)}
    out = set()
    for n in ast.walk(tree):
        if id(n) in compared:
            continue
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
        elif isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return (out & set(ERRORS)) - {"NONE"}


def _chain(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def _ours(obj) -> bool:
    return inspect.isfunction(obj) and (obj.__module__ or "").startswith("kipviz.broker")


def _methods() -> dict[str, set]:
    """method name -> {(class, function)} over the broker's classes."""
    idx: dict[str, set] = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("kipviz.broker") or mod is None:
            continue
        for c in vars(mod).values():
            if inspect.isclass(c) and c.__module__ == name:
                for m, f in vars(c).items():
                    f = f.__func__ if isinstance(f, staticmethod) else f
                    if inspect.isfunction(f) and not m.startswith("__"):
                        idx.setdefault(m, set()).add((c, f))
    return idx


def _aliases(tree: ast.AST) -> dict[str, list[str]]:
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            v = n.value
            if (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "getattr"
                    and len(v.args) >= 2 and isinstance(v.args[1], ast.Constant)):
                ch = _chain(v.args[0])
                ch = ch and [*ch, v.args[1].value]
            else:
                ch = _chain(v)
            if ch and len(ch) > 1:
                out[n.targets[0].id] = ch
    return out


def _parts(cls) -> dict[str, type]:
    """{attribute: class} of the parts a broker class's __init__ creates (`self.share = ShareTransactions(self)`)."""
    init = vars(cls).get("__init__")
    out: dict[str, type] = {}
    try:
        source = inspect.getsource(init) if _ours(init) else None
    except OSError:                     # an __init__ a dataclass wrote
        source = None
    if source is None:
        return out
    for n in ast.walk(ast.parse(textwrap.dedent(source))):
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute)
                and _chain(n.targets[0]) == ["self", n.targets[0].attr] and isinstance(n.value, ast.Call)
                and isinstance(n.value.func, ast.Name) and inspect.isclass(init.__globals__.get(n.value.func.id))):
            out[n.targets[0].attr] = init.__globals__[n.value.func.id]
    return out


def _resolve(chain: list[str], fn_globals: dict, cls, methods) -> tuple | None:
    head, rest = chain[0], chain[1:]
    if not rest:
        obj = fn_globals.get(head)
        return (obj, None) if _ours(obj) else None
    if head == "self" and cls is not None:
        obj, path = cls, rest
        if len(path) >= 2 and path[0] == "cluster":
            obj, path = _Cluster, path[1:]
    elif head == "cluster":
        obj, path = _Cluster, rest
    else:
        obj, path = fn_globals.get(head), rest
        if not isinstance(obj, types.ModuleType) and not inspect.isclass(obj):
            if len(rest) == 1 and head not in fn_globals and len(methods.get(rest[0], ())) == 1:
                (c, f), = methods[rest[0]]
                return f, c
            return None
    while len(path) > 1:
        nxt = _attribute_class(obj, path[0])
        if nxt is None and inspect.isclass(obj) and path[0] in _parts(obj):
            nxt = _parts(obj)[path[0]]
        if nxt is None:
            return None
        obj, path = nxt, path[1:]
    m = inspect.getattr_static(obj, path[0], None) if inspect.isclass(obj) else getattr(obj, path[0], None)
    m = m.__func__ if isinstance(m, staticmethod) else m
    if not _ours(m):
        m = getattr(obj, path[0], None)
    return (m, obj if inspect.isclass(obj) else None) if _ours(m) else None


def _attribute_class(cls, name: str):
    """The class attribute `name` of class `cls` holds, read from annotations: a property's (or
    cached_property's) return type, else the class's annotation of the field (`metadata:
    GroupMetadataManager`); None when no annotation names a class."""
    if not inspect.isclass(cls):
        return None
    static = inspect.getattr_static(cls, name, None)
    fn = getattr(static, "fget", None) or getattr(static, "func", None)
    if fn is not None:
        hint, where = inspect.get_annotations(fn).get("return"), fn.__module__
    else:
        owner = next((c for c in cls.__mro__ if name in inspect.get_annotations(c)), None)
        if owner is None:
            return None
        hint, where = inspect.get_annotations(owner)[name], owner.__module__
    if isinstance(hint, str):
        try:
            hint = eval(hint, vars(sys.modules[where]))      # noqa: S307 - an annotation of the kit's own code
        except Exception:  # noqa: BLE001 - a name the module does not import (e.g. under TYPE_CHECKING)
            return None
    return hint if inspect.isclass(hint) else None


# Cluster's coordinators (its cached properties) by name: the class each holds
_COMPONENTS = {name: _attribute_class(_Cluster, name) for name, v in vars(_Cluster).items()
               if isinstance(v, functools.cached_property)}


def reached_codes(fn, cls=None, seen=None, methods=None) -> dict[str, set[str]]:
    """{function qualname: error names it answers} for every function the handler `fn` reaches."""
    seen = {} if seen is None else seen
    methods = methods if methods is not None else _methods()
    if fn.__qualname__ in seen or fn.__qualname__ in STOP:
        return seen
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    seen[fn.__qualname__] = _named_codes(tree)
    alias = _aliases(tree)
    for n in ast.walk(tree):
        ch = _chain(n.func) if isinstance(n, ast.Call) else None
        if not ch:
            continue
        if ch[0] in alias:
            ch = alias[ch[0]] + ch[1:]
        target = _resolve(ch, fn.__globals__, cls, methods)
        if target:
            reached_codes(target[0], target[1], seen, methods)
    return seen


_METHODS = _methods()


def answered(api: str) -> set[str]:
    return set().union(*reached_codes(HANDLERS[api], methods=_METHODS).values())


def test_the_judge_sees_the_codes_a_handler_answers_through_the_coordinators():
    # TxnOffsetCommit's handler -> cluster.groups (GroupCoordinator mixins) -> cluster.txns (via a
    # getattr hook): each hop must be followed, or the judge would pass on an empty set
    seen = answered("TxnOffsetCommit")
    assert {"GROUP_AUTHORIZATION_FAILED", "OFFSET_METADATA_TOO_LARGE", "FENCED_INSTANCE_ID",
            "INVALID_PRODUCER_EPOCH", "TRANSACTION_ABORTABLE"} <= seen
    assert "NOT_ENOUGH_REPLICAS" not in seen          # only compared against in verify_txn_offset_commit
    assert "INVALID_RECORD_STATE" in answered("ShareFetch")     # share_partition's AckError, via sp.acknowledge
    assert "UNKNOWN_TOPIC_OR_PARTITION" not in answered("EndTxn")  # the markers' answers are not EndTxn's


@pytest.mark.parametrize("api", sorted(ERROR_ROWS))
def test_every_code_the_handler_answers_is_declared(api):
    declared_names = {r.error for r in ERROR_ROWS[api]}
    missing = sorted(answered(api) - declared_names - {n for a, n in NOT_ANSWERED if a == api})
    assert not missing, f"{api}: the handler's code answers {missing}, not in its ERRORS rows"


@pytest.mark.parametrize("api", sorted(ERROR_ROWS))
def test_every_declared_row_is_answered_or_marked_kafka_only(api):
    seen = answered(api)
    silent = sorted(r.error for r in ERROR_ROWS[api]
                    if r.unmodelled is None and r.error not in seen | BEFORE_THE_HANDLER)
    assert not silent, f"{api}: rows no code answers (mark them kafka_only with the reason): {silent}"
    stale = sorted(r.error for r in ERROR_ROWS[api] if r.unmodelled is not None and r.error in seen)
    assert not stale, f"{api}: rows marked kafka_only that the code does answer: {stale}"
    assert all(r.unmodelled.strip() for r in ERROR_ROWS[api] if r.unmodelled is not None)


def test_every_not_answered_note_is_still_needed():
    stale = {k: v for k, v in NOT_ANSWERED.items()
             if k[0] not in ERROR_ROWS or k[1] not in answered(k[0])
             or k[1] in {r.error for r in ERROR_ROWS[k[0]]}}
    assert not stale, stale


def test_rows_come_from_the_module_of_the_apis_handler():
    rows = declared()
    assert set(rows) == set(ERROR_ROWS)
    for api in rows:
        assert api in vars(sys.modules[HANDLERS[api].__module__])["ERRORS"]
    assert set(HANDLERS) - set(rows) == set(), "every handler declares its errors in its module's ERRORS"


def test_every_stop_names_a_function_of_the_model():
    owners = (_Cluster, *_COMPONENTS.values())
    classes = {c.__name__: c for c in (*owners, *(p for o in owners for p in _parts(o).values()))}
    for qualname in STOP:
        cls, name = qualname.split(".")
        assert inspect.isfunction(getattr(classes[cls], name, None)), qualname


# ---- the dynamic judge: what the scenarios' brokers answer ----------------------------------------
def test_every_error_a_scenario_answers_is_declared_for_its_version():
    undeclared = {}
    for c in scenarios.catalog():
        for e in scenarios.run(c["name"]).events:
            if isinstance(e, ResponseSent) and e.api in ERROR_ROWS and e.error_codes:
                declared_now = set(errors_by_version(e.api).get(e.version, ()))
                for code in e.error_codes:
                    if name_of(code) != "NONE" and name_of(code) not in declared_now:
                        undeclared.setdefault((e.api, e.version, name_of(code)), c["name"])
    assert not undeclared, undeclared


# ---- Kafka's schema comments -------------------------------------------------------------------
# "Version 4 adds the support for new error code PRODUCER_FENCED." / "Starting in version 6, we may
# return KAFKA_STORAGE_ERROR" / "Version 4 added KAFKA_STORAGE_ERROR as a possible error code." /
# "Version 13 replaces topic names with topic IDs (KIP-516). May return UNKNOWN_TOPIC_ID error code."
_SAYS = re.compile(r"[Vv]ersion (\d+)[^.\n]*?(?:error code|may return|added|May return) ([A-Z][A-Z_]{5,})"
                   r"|[Vv]ersion (\d+)[^\n]*?May return ([A-Z][A-Z_]{5,})")


def first_versions(api: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in ERROR_ROWS[api]:
        out[r.error] = min(r.first, out.get(r.error, r.first))
    return out


_LISTED = re.compile(r"^\s*//\s*-\s*([A-Z_]+) \(version (\d+)\+\)")


def kafka_says(path) -> tuple[dict[str, int], set[str]]:
    """({error: the version a comment says adds it}, {errors a "Supported errors" list names})."""
    said: dict[str, int] = {}
    listed: set[str] = set()
    for line in path.read_text().splitlines():
        if not line.strip().startswith("//"):
            continue
        if m := _LISTED.match(line):
            said.setdefault(m.group(1), int(m.group(2)))
            listed.add(m.group(1))
            continue
        for m in _SAYS.finditer(line):
            v, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            said.setdefault(name, int(v))
    return {n: v for n, v in said.items() if n in ERRORS}, listed & set(ERRORS)


# TxnShareAcknowledge is proposed (no Kafka file); the 2024-10 snapshot stands in for RPCs the 4.3
# one lacks (the share and KIP-848 group RPCs). UNKNOWN_SERVER_ERROR is any API's failure answer.
def _kafka_file(api):
    ref = reference_root()
    paths = [ref / d / f"{api}Response.json" for d in ("message-4.3", "message-2024-10")] if ref else []
    return next((p for p in paths if p.is_file()), None)


def _judged() -> dict:
    """{api: its Kafka response file} for every API whose file names at least one error; judged below."""
    out = {}
    for api in ERROR_ROWS:
        path = _kafka_file(api) if api != "TxnShareAcknowledge" else None
        if path is not None:
            said, listed = kafka_says(path)
            if (set(said) | listed) - {"UNKNOWN_SERVER_ERROR"}:
                out[api] = path
    return out


JUDGED = _judged() if reference_root() else {}
# proposed, removed in 4.0, or (KIP-932's admin RPCs) in no reference snapshot: judged below by golden lists
NO_KAFKA_FILE = {"TxnShareAcknowledge", "StopReplica", "LeaderAndIsr", "DescribeShareGroupOffsets",
                 "AlterShareGroupOffsets", "DeleteShareGroupOffsets"}


def test_every_api_is_judged_or_has_no_kafka_file_or_no_error_comment():
    if not reference_root():
        pytest.skip("needs ../shared/kafka (absent here)")
    unjudged = {a for a in ERROR_ROWS if a not in JUDGED}
    assert {a for a in unjudged if _kafka_file(a) is None} <= NO_KAFKA_FILE
    assert len(JUDGED) >= 17, sorted(JUDGED)      # 17 on the 4.3 and 2024-10 snapshots


@pytest.mark.parametrize("api", sorted(JUDGED) or [pytest.param(
    "", marks=pytest.mark.skip(reason="needs Kafka's response schemas under ../shared/kafka (absent here)"))])
def test_the_version_that_adds_an_error_matches_kafkas_schema_comment(api):
    said, listed = kafka_says(JUDGED[api])
    said.pop("UNKNOWN_SERVER_ERROR", None)
    listed.discard("UNKNOWN_SERVER_ERROR")
    ours = first_versions(api)
    wrong = {n: (ours.get(n), v) for n, v in said.items() if ours.get(n) != v}
    assert not wrong, f"{api}: error -> (kit's first version, Kafka's comment): {wrong}"
    assert listed <= set(ours), f"{api}: Kafka's Supported errors list has {sorted(listed - set(ours))}"


def test_the_schema_judge_reads_both_comment_forms():
    ref = reference_root()
    if ref is None or not (ref / "message-4.3" / "OffsetCommitResponse.json").is_file():
        pytest.skip("needs ../shared/kafka/message-4.3 (absent here)")
    said, listed = kafka_says(ref / "message-4.3" / "OffsetCommitResponse.json")
    assert said["STALE_MEMBER_EPOCH"] == 9 and "UNKNOWN_TOPIC_ID" in listed
    said, _ = kafka_says(ref / "message-4.3" / "EndTxnResponse.json")
    assert said == {"PRODUCER_FENCED": 2, "TRANSACTION_ABORTABLE": 4}


# ---- the share-group RPCs against Kafka's "Supported errors" lists -------------------------------
# Golden data read from apache/kafka clients/src/main/resources/common/message/:
# ShareFetchResponse.json (commit 018777c7, validVersions 0), ShareAcknowledgeResponse.json (commit
# 07a283ac, validVersions 1-2: the same list), ShareGroupHeartbeatResponse.json (commit 01f41064),
# ShareGroupDescribeResponse.json (commit 1eb76443).
# Every entry says "(version 0+)". ../shared/kafka/message-2024-10 holds the same three lists; when
# present the test re-reads them. UNKNOWN_SERVER_ERROR is any API's answer to a failure, not declared.
KAFKA_SHARE_ERRORS = {
    "ShareFetch": ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "SHARE_SESSION_NOT_FOUND",
                   "INVALID_SHARE_SESSION_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER",
                   "UNKNOWN_TOPIC_ID", "INVALID_RECORD_STATE", "KAFKA_STORAGE_ERROR", "CORRUPT_MESSAGE",
                   "INVALID_REQUEST", "UNKNOWN_SERVER_ERROR"),
    "ShareAcknowledge": ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION",
                         "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH", "NOT_LEADER_OR_FOLLOWER",
                         "UNKNOWN_TOPIC_ID", "INVALID_RECORD_STATE", "KAFKA_STORAGE_ERROR", "INVALID_REQUEST",
                         "UNKNOWN_SERVER_ERROR"),
    "ShareGroupHeartbeat": ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                            "COORDINATOR_LOAD_IN_PROGRESS", "INVALID_REQUEST", "UNKNOWN_MEMBER_ID",
                            "GROUP_MAX_SIZE_REACHED"),
    "ShareGroupDescribe": ("GROUP_AUTHORIZATION_FAILED", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                           "COORDINATOR_LOAD_IN_PROGRESS", "INVALID_REQUEST", "INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND"),
}
# KIP-932's admin RPCs, in no reference snapshot: Kafka 4.4's lists (apache/kafka 4.4 branch,
# clients/src/main/resources/common/message/{Describe,Alter,Delete}ShareGroupOffsetsResponse.json;
# every entry "(version 0+)")
KAFKA_SHARE_ADMIN_ERRORS = {
    "DescribeShareGroupOffsets": ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "NOT_COORDINATOR",
                                  "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "GROUP_ID_NOT_FOUND",
                                  "INVALID_REQUEST", "UNKNOWN_SERVER_ERROR"),
    "AlterShareGroupOffsets": ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "NOT_COORDINATOR",
                               "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "GROUP_ID_NOT_FOUND",
                               "NON_EMPTY_GROUP", "KAFKA_STORAGE_ERROR", "INVALID_REQUEST", "UNKNOWN_SERVER_ERROR"),
    "DeleteShareGroupOffsets": ("GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "NOT_COORDINATOR",
                                "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "GROUP_ID_NOT_FOUND",
                                "NON_EMPTY_GROUP", "KAFKA_STORAGE_ERROR", "INVALID_REQUEST", "UNKNOWN_SERVER_ERROR",
                                "UNKNOWN_TOPIC_OR_PARTITION"),
}
@pytest.mark.parametrize("api", sorted(KAFKA_SHARE_ERRORS))
def test_the_golden_share_lists_match_the_reference_snapshot(api):
    ref = reference_root()
    path = ref / "message-2024-10" / f"{api}Response.json" if ref else None
    if path is None or not path.is_file():
        pytest.skip(f"needs {api}Response.json under ../shared/kafka/message-2024-10 (absent here)")
    listed = [m.groups() for line in path.read_text().splitlines() if (m := _LISTED.match(line))]
    assert sorted(n for n, _ in listed) == sorted(KAFKA_SHARE_ERRORS[api])
    assert {v for _, v in listed} == {"0"}


@pytest.mark.parametrize("api", sorted(KAFKA_SHARE_ERRORS | KAFKA_SHARE_ADMIN_ERRORS))
def test_share_rows_match_kafkas_supported_errors(api):
    kafka = set((KAFKA_SHARE_ERRORS | KAFKA_SHARE_ADMIN_ERRORS)[api]) - {"UNKNOWN_SERVER_ERROR"}
    rows = ERROR_ROWS[api]
    ours = {r.error for r in rows}
    # every error Kafka lists is declared from version 0 (codes the kit's table lacks excepted)
    assert kafka & set(ERRORS) - ours == set(), f"{api}: Kafka lists, the rows miss: {sorted(kafka - ours)}"
    assert all(r.first == 0 for r in rows if r.error in kafka)
    # a row citing the schema must be in its list; the others say where they come from
    cites_schema = {r.error for r in rows if r.source.endswith("Response.json")}
    assert cites_schema <= kafka, f"{api}: rows cite the schema but Kafka does not list {sorted(cites_schema - kafka)}"
    assert all("not in" in r.source for r in rows if r.error not in kafka), \
        f"{api}: rows Kafka does not list must say so in their source"
