"""One home per protocol fact (issue 32): each fact is defined in one module and imported from it
everywhere else. Each test greps kipviz/ for the shape a copy of the fact takes (string and number
literals, slices, tables) and names where one turns up."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from kipviz.records.header import HEADER_FIELDS
from kipviz.schema import coordinators
from kipviz.schema.error_codes import CODE
from kipviz.schema.topics import INTERNAL_TOPICS

ROOT = Path(__file__).resolve().parent.parent
KIPVIZ = ROOT / "kipviz"


def _modules():
    for path in sorted(KIPVIZ.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def _docstrings(tree) -> set[int]:
    """ids of the docstring constants (prose may name a topic or an offset)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


_KEY_CALLS = ("coordinator_partition", "coordinator_broker", "_find_coordinator", "find_coordinator")


def _is_number(node) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_number(e) for e in node.elts)
    return isinstance(node, ast.Constant) and type(node.value) is int


def _names_key_type(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lower().replace("_", "") == "keytype"


def _key_type_numbers(modules) -> list[str]:
    """A FindCoordinator key type written as its number: coordinator_partition(0, ...) and the
    other key calls, key_type=1, key_type == 2 / in (0, 1), {"KeyType": 1}, body.get("KeyType", 0)."""
    where = []
    for path, tree in modules:
        if path == "kipviz/schema/coordinators.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in _KEY_CALLS and node.args and _is_number(node.args[0]):
                    where.append(f"{path}:{node.lineno} {name}({node.args[0].value}, ...)")
                where += [f"{path}:{node.lineno} key_type={k.value.value}" for k in node.keywords
                          if k.arg and _names_key_type(ast.Name(k.arg)) and _is_number(k.value)]
                if (name == "get" and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                        and node.args[0].value == "KeyType" and _is_number(node.args[1])):
                    where.append(f'{path}:{node.lineno} .get("KeyType", number)')
            elif (isinstance(node, ast.Compare) and _names_key_type(node.left)
                  and any(map(_is_number, node.comparators))):
                where.append(f"{path}:{node.lineno} key_type compared with a number")
            elif isinstance(node, ast.Dict):
                where += [f'{path}:{node.lineno} "KeyType": number' for k, v in zip(node.keys, node.values, strict=True)
                          if isinstance(k, ast.Constant) and k.value == "KeyType" and _is_number(v)]
    return where


def _topic_literals(modules) -> list[str]:
    return [f"{path}:{node.lineno} {node.value!r}" for path, tree in modules if path != "kipviz/schema/topics.py"
            for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in INTERNAL_TOPICS]


def _error_numbers(modules) -> list[str]:
    """`NAME = 55` for a Kafka error's name (or NAME_CODE), or the bare number of
    OPERATION_NOT_ATTEMPTED (the four copies issue 32 found)."""
    where = []
    for path, tree in modules:
        if path == "kipviz/schema/error_codes.py":
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and type(node.value.value) is int and node.value.value > 0):
                for t in node.targets:
                    name = t.id if isinstance(t, ast.Name) else getattr(t, "attr", "")
                    base = re.sub(r"_CODE$", "", name)
                    if base in CODE and CODE[base] == node.value.value:
                        where.append(f"{path}:{node.lineno} {name} = {node.value.value}")
            elif (isinstance(node, ast.Constant) and type(node.value) is int
                  and node.value == CODE["OPERATION_NOT_ATTEMPTED"]):
                where.append(f"{path}:{node.lineno} {node.value}")
    return where


def _byte_reads(modules) -> list[str]:
    where = []
    for path, tree in modules:
        if not path.startswith("kipviz/draw/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                if "struct" in [a.name for a in node.names] + [getattr(node, "module", None) or ""]:
                    where.append(f"{path}:{node.lineno} imports struct")
            if isinstance(node, ast.Attribute) and node.attr in ("unpack_from", "unpack", "from_bytes", "iter_unpack"):
                where.append(f"{path}:{node.lineno} .{node.attr}")
    return where


SPANS = {(off, off + size) for _n, _k, off, size, _w, _r in HEADER_FIELDS if off >= 12}


def _header_offsets(modules) -> list[str]:
    """A header field's place as a literal: raw[57:61] (RecordsCount), or 57 / 61 (its offset, the
    header's size) outside a docstring."""
    where = []
    for path, tree in modules:
        if path == "kipviz/records/header.py":
            continue
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Slice) and isinstance(node.lower, ast.Constant)
                    and isinstance(node.upper, ast.Constant) and (node.lower.value, node.upper.value) in SPANS):
                where.append(f"{path}:{node.lineno} [{node.lower.value}:{node.upper.value}]")
            elif isinstance(node, ast.Constant) and type(node.value) is int and node.value in (57, 61) \
                    and id(node) not in docs:
                where.append(f"{path}:{node.lineno} {node.value}")
    return where


KNOWN_APIS = coordinators.GROUP_APIS | coordinators.TXN_APIS | coordinators.LEADER_APIS | coordinators.SHARE_STATE_APIS


def _api_tables(modules) -> list[str]:
    """A literal collection of three or more coordinator or leader APIs: a second routing table
    (draw/sequence.py and broker/cluster.py each had one)."""
    where = []
    for path, tree in modules:
        if path == "kipviz/schema/coordinators.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Set | ast.Tuple | ast.List):
                apis = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in KNOWN_APIS]
                if len(apis) >= 3:
                    where.append(f"{path}:{node.lineno} {apis}")
    return where


MODULES = list(_modules())


def test_internal_topic_names_are_written_once():
    where = _topic_literals(MODULES)
    assert not where, "use kipviz.schema.topics' names:\n" + "\n".join(where)


def test_coordinator_key_types_are_named():
    where = _key_type_numbers(MODULES)
    assert not where, "use kipviz.schema.coordinators' GROUP_KEY / TRANSACTION_KEY / SHARE_KEY:\n" + "\n".join(where)


def test_error_codes_are_numbered_only_in_the_error_code_table():
    where = _error_numbers(MODULES)
    assert where == [], "read kipviz.schema.error_codes.CODE:\n" + "\n".join(where)


def test_the_drawing_decodes_no_bytes():
    where = _byte_reads(MODULES)
    assert where == [], "draw/ reads decoded values (kipviz.records), never bytes:\n" + "\n".join(where)


def test_the_batch_header_layout_is_only_in_records_header():
    where = _header_offsets(MODULES)
    assert where == [], "read kipviz.records.header (OFFSET, HEADER_SIZE, records_count):\n" + "\n".join(where)


def test_which_role_answers_an_api_is_one_table():
    where = _api_tables(MODULES)
    assert where == [], "read kipviz.schema.coordinators:\n" + "\n".join(where)


def test_each_check_finds_its_shape():
    # a check that cannot fail proves nothing: each finds the copy it looks for
    src = ('"""Docstrings may say __consumer_offsets, 57 and 61."""\nimport struct\n'
           'X = "__consumer_offsets"\nN = raw[57:61]\nM = pos + 57\nOPERATION_NOT_ATTEMPTED = 55\nNOT_COORDINATOR_CODE = 16\n'
           'A = {"JoinGroup", "SyncGroup", "Heartbeat"}\nk = struct.unpack_from(">h", key, 2)\n'
           'b = c.coordinator_broker(0, g)\nok = key_type == 2\nq = {"KeyType": 1, "Key": g}\n'
           'n = body.get("KeyType", 0)\nm = self._find_coordinator(1, t)\nif key_type in (0, 1): pass\n'
           'f(key_type=2)\n')
    fake = [("kipviz/draw/fake.py", ast.parse(src))]
    assert _topic_literals(fake) == ["kipviz/draw/fake.py:3 '__consumer_offsets'"]
    assert sorted(_error_numbers(fake)) == ["kipviz/draw/fake.py:6 55", "kipviz/draw/fake.py:6 OPERATION_NOT_ATTEMPTED = 55",
                                            "kipviz/draw/fake.py:7 NOT_COORDINATOR_CODE = 16"]
    assert _byte_reads(fake) == ["kipviz/draw/fake.py:2 imports struct", "kipviz/draw/fake.py:9 .unpack_from"]
    assert sorted(_header_offsets(fake)) == ["kipviz/draw/fake.py:4 57", "kipviz/draw/fake.py:4 61",
                                             "kipviz/draw/fake.py:4 [57:61]", "kipviz/draw/fake.py:5 57"]
    assert sorted(_key_type_numbers(fake)) == sorted([
        "kipviz/draw/fake.py:10 coordinator_broker(0, ...)", "kipviz/draw/fake.py:11 key_type compared with a number",
        'kipviz/draw/fake.py:12 "KeyType": number', 'kipviz/draw/fake.py:13 .get("KeyType", number)',
        "kipviz/draw/fake.py:14 _find_coordinator(1, ...)", "kipviz/draw/fake.py:15 key_type compared with a number",
        "kipviz/draw/fake.py:16 key_type=2"])
    (table,) = _api_tables(fake)
    assert table.startswith("kipviz/draw/fake.py:8 ") and all(a in table for a in ("JoinGroup", "SyncGroup", "Heartbeat"))
