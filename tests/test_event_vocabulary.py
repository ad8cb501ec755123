"""Issue 32: one vocabulary for what happens (kipviz/schema/events.py). Every event class is
emitted somewhere in kipviz/ and read by something; no field is a free-form dict except the
schema-shaped bodies listed below with their reason; every thing that happens cites the Kafka
source (or KIP, or the kit's docs/) it follows. Scanned from the package's source (ast)."""
import ast
import dataclasses
import re
import typing
from pathlib import Path

from kipviz.draw.sequence import _Builder
from kipviz.schema import events as ev

ROOT = Path(__file__).resolve().parent.parent
CLASSES = ev.event_classes()
# the envelopes of what crosses the wire, what a state machine does and what a log holds: their
# fields are the wire's and the tables' (kipviz/defs, broker/tables), cited there
ENVELOPES = {"RequestReceived", "ResponseSent", "StateChanged", "RecordAppended"}
# dict fields, each with its reason: the decoded message, shaped by its JSON schema, not by the event
SCHEMA_SHAPED = {("RequestReceived", "body"): "the decoded request body (its message schema in kipviz/defs)",
                 ("ResponseSent", "body"): "the decoded response body (its message schema in kipviz/defs)",
                 ("RecordAppended", "record"): "the record's decoded key/value fields (an internal topic's "
                                               "record schema, or a control record's)"}
CITES = re.compile(r"\w\.java\b|\w\.scala\b|KIP-\d+|docs/\w")
CHECKS = ("isinstance", "issubclass")


def _class_ref(node) -> str | None:
    """The event class a node names: `ev.X`, `E.X` or a bare imported `X`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in CLASSES:
        return node.attr
    if isinstance(node, ast.Name) and node.id in CLASSES:
        return node.id
    return None


def scan(source: str) -> tuple[set[str], set[str]]:
    """(emitted, read) event class names of one module. Emitted: a class called (`ev.X(...)`) or
    handed as the first argument of a call that is not a check (`cluster.emit(ev.X, ...)`,
    `self.did(ev.X, ...)`). Read: named anywhere else (isinstance, `type(e) is`, tables, imports
    excepted)."""
    emitted, read, as_emitted = set(), set(), set()
    tree = ast.parse(source)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            own = _class_ref(n.func)
            if own:
                emitted.add(own)
                as_emitted.add(id(n.func))
            name = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
            first = _class_ref(n.args[0]) if n.args else None
            if first and name not in CHECKS:
                emitted.add(first)
                as_emitted.add(id(n.args[0]))
    for n in ast.walk(tree):
        ref = _class_ref(n)
        if ref and id(n) not in as_emitted and not isinstance(getattr(n, "ctx", None), ast.Store):
            read.add(ref)
    return emitted, read


def _package() -> tuple[set[str], set[str]]:
    emitted, read = set(), set()
    for p in sorted((ROOT / "kipviz").rglob("*.py")):
        if p.relative_to(ROOT).as_posix() == "kipviz/schema/events.py":
            continue
        e, r = scan(p.read_text())
        emitted |= e
        read |= r
    return emitted, read


def test_the_scan_tells_emitting_from_reading():
    src = ("from kipviz.schema.events import LogCleaned\n"
           "def f(cluster, e):\n"
           "    cluster.emit(ev.TopicCreated, topic='t', topic_id='x', partitions=1)\n"
           "    self.did(E.Subscribed, topics=('t',))\n"
           "    cluster.emit(LogCleaned, 't', 0)\n"
           "    ev.BrokerCrashed(seq=1, t=0, broker=0)\n"
           "    return isinstance(e, ev.TopicDeleted) or type(e) is E.StateChanged\n")
    emitted, read = scan(src)
    assert emitted == {"TopicCreated", "Subscribed", "LogCleaned", "BrokerCrashed"}
    assert read == {"TopicDeleted", "StateChanged"}


def test_every_event_class_is_emitted():
    emitted, _ = _package()
    assert len(CLASSES) > 100
    assert sorted(set(CLASSES) - emitted) == [], "event classes nothing in kipviz/ emits"


def test_every_event_class_is_read():
    # a Happened (ClientDid too) is read by every picture through its sentence: the sequence
    # diagram's handler for the base class draws it; any other class must be read by name
    assert ev.Happened in _Builder._HANDLERS and ev.ClientDid in _Builder._HANDLERS
    _, read = _package()
    unread = [k for k, cls in CLASSES.items() if not issubclass(cls, ev.Happened) and k not in read]
    assert unread == [], "event classes nothing reads"


def test_no_field_is_a_free_form_dict():
    found = {}
    for name, cls in CLASSES.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            shape = typing.get_origin(hints[f.name]) or hints[f.name]
            if shape in (dict, list, set) or (typing.get_origin(hints[f.name]) is typing.Union and any(
                    (typing.get_origin(a) or a) in (dict, list, set) for a in typing.get_args(hints[f.name]))):
                found[(name, f.name)] = str(hints[f.name])
    assert set(found) == set(SCHEMA_SHAPED), found


def test_everything_that_happens_cites_its_source():
    silent = [k for k, cls in CLASSES.items() if k not in ENVELOPES and not CITES.search(cls.__doc__ or "")]
    assert silent == [], "event classes whose docstring cites no Kafka source, KIP or docs/ page"


def test_the_citation_rule_tells_a_source_from_prose():
    assert CITES.search("(GroupMetadataManager.java classicGroupSync)")
    assert CITES.search("KIP-1289, proposed") and CITES.search("docs/architecture.md")
    assert not CITES.search("(GMM classicGroupSync)") and not CITES.search("a java program")
