"""Compatibility rules a reviewer of a schema change applies, one function per rule.

Each rule takes a Subject (the draft spec and what it is compared with) and returns Findings:
severity (error / warning / info), the field path, what is wrong and why it matters. Versions
both definitions have are "existing" versions: if the baseline labels one released or accepted
(or it comes from Kafka's own schema files, unless marked unstable) its bytes are frozen and a
change is an error; a change to a proposed version is a warning."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..schema import api_keys, registry, releases
from ..schema.model import FieldSpec, MessageSpec
from ..schema.resolve import VField, resolve

__all__ = ["Finding", "Subject", "RULES", "SEVERITIES", "run", "ranges", "frozen"]

SEVERITIES = ("error", "warning", "info")

#: rule id -> (what it catches, the severity it usually has)
RULES: dict[str, tuple[str, str]] = {
    "invalid": ("the file is not valid JSON or not a valid schema (names line and field)", "error"),
    "api-key-taken": ("the apiKey belongs to another RPC, in Kafka or in the kit", "error"),
    "api-key-changed": ("the apiKey differs from the baseline's", "error"),
    "field-removed-without-bound": ("a field was deleted instead of ending its versions range", "error"),
    "field-versions-narrowed": ("a field's versions no longer cover an existing version that had it", "error"),
    "field-added-to-old-version": ("a regular (untagged) field now appears in an existing version", "error"),
    "non-ignorable-in-old-version": ("a tagged field added to existing versions without \"ignorable\": true",
                                     "warning"),
    "tag-reused": ("a tag number given to two different fields of one struct", "error"),
    "existing-version-changed": ("type, nullability, tag, encoding, order or flexibility of an existing version "
                                 "changed", "error"),
    "versions-dropped": ("versions the baseline has are no longer valid", "warning"),
    "new-version-not-flexible": ("a new version without flexible encoding (tagged fields, compact lengths)",
                                 "warning"),
    "new-version-same-wire": ("a new version whose bytes equal the previous version's", "info"),
    "new-version-not-unstable": ("new versions not marked latestVersionUnstable", "info"),
    "metadata-changed": ("mapKey, entityType or ignorable changed (generated code, not bytes)", "info"),
    "missing-about": ("new fields without an \"about\" text", "info"),
    "bad-name": ("a request/response whose name does not end in Request/Response", "warning"),
    "example-roundtrip": ("the example value does not encode and decode back to itself", "error"),
}


@dataclass(frozen=True)
class Finding:
    """One review finding: its rule, severity, field path, versions and message."""
    rule: str
    severity: str          # error, warning or info
    path: str              # dotted field path, "(message)" or "(apiKey)"
    message: str           # what is wrong, one line
    explanation: str       # why it matters and what to do
    versions: tuple[int, ...] = ()   # the versions concerned, if any
    line: int | None = None  # line of the draft's text, when known

    @property
    def versions_text(self) -> str:
        """The finding's versions as ranges ("3-5, 7")."""
        return ranges(self.versions)

    def __str__(self) -> str:
        where = self.path + (f" v{self.versions_text}" if self.versions else "") + \
            (f" (line {self.line})" if self.line else "")
        return f"{self.severity.upper():<7} {self.rule}: {where}: {self.message}"


@dataclass
class Subject:
    """What the checks look at: the draft, the definition it changes (if any) and the pairs of versions."""
    draft: MessageSpec
    base: MessageSpec | None = None
    official: bool = False          # base is a Kafka schema file (no kit labels)
    _pairs: list | None = field(default=None, repr=False)

    @property
    def shared(self) -> list[int]:
        """The draft's versions the base has too."""
        return [v for v in self.draft.versions if self.base is not None and v in self.base.valid]

    @property
    def new_versions(self) -> list[int]:
        """The draft's versions the base does not have (every version without a base)."""
        return [v for v in self.draft.versions if self.base is None or v not in self.base.valid]

    def pairs(self) -> list["Pair"]:
        """Every field of the base and the draft paired by path (one side None when absent); computed once."""
        if self._pairs is None:
            self._pairs = pair_fields(self.base.fields if self.base else (), self.draft.fields, "", None)
        return self._pairs


def frozen(base: MessageSpec, v: int, official: bool) -> bool:
    """Are version v's bytes settled in the baseline (released or accepted)?"""
    st = base.status(v)
    if st is not None:
        return st.status in ("released", "accepted")
    if base.latest_version_unstable and v == base.valid.hi:
        return False
    return official or base.kit is None


def ranges(vs) -> str:
    """[3, 4, 5, 7] -> "3-5, 7"."""
    vs = sorted(set(vs))
    out, i = [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        out.append(str(vs[i]) if i == j else f"{vs[i]}-{vs[j]}")
        i = j + 1
    return ", ".join(out)


def _severity(s: Subject, versions) -> str:
    return "error" if any(frozen(s.base, v, s.official) for v in versions) else "warning"


def _status_words(s: Subject, versions) -> str:
    labels = sorted({s.base.status_label(v) if s.base.kit else "released (Kafka's schema)" for v in versions})
    return "; ".join(labels)


# ---- pairing the baseline's fields with the draft's ----------------------------------------------
@dataclass
class Pair:
    """A field of the base and its counterpart in the draft, at one dotted path (None where missing)."""
    path: str
    base: FieldSpec | None
    draft: FieldSpec | None
    parent: "Pair | None"


def _same_field(b: FieldSpec, d: FieldSpec) -> bool:
    return b.name == d.name or b.name in d.aliases or d.name in b.aliases


def pair_fields(base_fields, draft_fields, prefix: str, parent: Pair | None) -> list[Pair]:
    """Base and draft fields paired by name or alias, nested fields after their struct (a field only
    one side has is paired with None)."""
    out: list[Pair] = []
    used: set[int] = set()
    for b in base_fields:
        d = next((x for x in draft_fields if id(x) not in used and _same_field(b, x)), None)
        p = Pair(prefix + (d.name if d else b.name), b, d, parent)
        out.append(p)
        if d is not None:
            used.add(id(d))
            if b.is_struct and d.is_struct:
                out += pair_fields(b.fields, d.fields, p.path + ".", p)
    for d in draft_fields:
        if id(d) not in used:
            p = Pair(prefix + d.name, None, d, parent)
            out.append(p)
            out += pair_fields((), d.fields, p.path + ".", p)
    return out


def present_fields(spec: MessageSpec, v: int) -> dict[int, VField]:
    """id(FieldSpec) -> its resolved field, for every field present at version v."""
    out: dict[int, VField] = {}

    def walk(fields):
        for f in fields:
            out[id(f.spec)] = f
            walk(f.fields)
    walk(resolve(spec, v).fields)
    return out


class _Collect:
    """Gathers (rule, path, message) -> versions, then makes one Finding per key."""

    def __init__(self):
        self.hits: dict[tuple, list[int]] = defaultdict(list)
        self.extra: dict[tuple, str] = {}
        self.severity: dict[tuple, str] = {}

    def add(self, rule: str, path: str, message: str, v: int, explanation: str, severity: str | None = None) -> None:
        key = (rule, path, message)
        self.hits[key].append(v)
        self.extra[key] = explanation
        if severity:
            self.severity[key] = severity

    def findings(self, s: Subject, severity: dict[str, str] | None = None) -> list[Finding]:
        out = []
        for (rule, path, message), vs in self.hits.items():
            sev = self.severity.get((rule, path, message)) or (severity or {}).get(rule) or _severity(s, vs)
            out.append(Finding(rule, sev, path, message, self.extra[(rule, path, message)], tuple(sorted(set(vs)))))
        return out


# ---- rules ---------------------------------------------------------------------------------------
def api_key_taken(s: Subject) -> list[Finding]:
    """An apiKey another RPC already uses, in Kafka or in the kit."""
    key = s.draft.api_key
    if key is None or s.draft.type not in ("request", "response"):
        return []
    clashes = registry.clashes(s.draft.api, key)
    if not clashes:
        return []
    used = set(registry.kafka_api_keys()) | {registry.api_key(x) for x in registry.messages().values()
                                             if x.api != s.draft.api}
    free = next(k for k in range(2**15) if k not in used)
    candidates = ""
    kit = s.base.kit if s.base is not None else None
    if kit and kit.api_key_candidates:
        candidates = " Candidates recorded for this RPC: " + "; ".join(
            f"{c['apiKey']} ({c.get('source', '')}, {_key_state(c['apiKey'])})" for c in kit.api_key_candidates) + "."
    return [Finding("api-key-taken", "error", "(apiKey)", f"apiKey {key} is taken: {'; '.join(clashes)}",
                    "Brokers dispatch on the api key alone: two RPCs with one key cannot both be served, and a "
                    f"client would send {s.draft.api} bytes to the other RPC's handler. Api keys are handed out "
                    f"in order when a KIP is merged; the first key free in Kafka {releases.NEWEST} is {free}.{candidates}")]


def _key_state(key: int) -> str:
    """Who holds `key` in the newest release, and who held it on trunk only (from the key table)."""
    taken = registry.kafka_api_keys().get(key)
    state = f"Kafka {releases.NEWEST}'s {taken}" if taken else f"free in Kafka {releases.NEWEST}"
    trunk = [e.name for e in api_keys.trunk_only(key)]
    return state + (f"; {', '.join(trunk)}'s on trunk before, never released" if trunk else "")


def api_key_changed(s: Subject) -> list[Finding]:
    """An apiKey that differs from the base's (an error once a base version is settled)."""
    if s.base is None or s.draft.api_key is None or s.base.api_key == s.draft.api_key:
        return []
    settled = [v for v in s.base.versions if frozen(s.base, v, s.official)]
    sev = "error" if settled else "info"
    why = (f"{s.base.name} v{ranges(settled)} already ship with apiKey {s.base.api_key}; changing it makes every "
           "existing client and broker disagree about which RPC a frame is." if settled else
           "The baseline's versions are all proposed, so the key is not settled yet; make sure the KIP, the "
           "draft and the api-key registry agree.")
    return [Finding("api-key-changed", sev, "(apiKey)", f"apiKey {s.base.api_key} → {s.draft.api_key}", why)]


def field_presence(s: Subject) -> list[Finding]:
    """field-removed-without-bound, field-versions-narrowed, field-added-to-old-version,
    non-ignorable-in-old-version: a field's presence at an existing version changed."""
    if s.base is None:
        return []
    c = _Collect()
    pairs = s.pairs()
    for v in s.shared:
        pb, pd = present_fields(s.base, v), present_fields(s.draft, v)
        gone, new = set(), set()
        for p in pairs:
            inb = p.base is not None and id(p.base) in pb
            ind = p.draft is not None and id(p.draft) in pd
            if inb and not ind:
                gone.add(id(p))
                if p.parent is not None and id(p.parent) in gone:
                    continue                        # reported with the enclosing struct
                bf = pb[id(p.base)]
                hi = s.base.valid.hi if bf.spec.versions.hi is None else min(bf.spec.versions.hi, s.base.valid.hi)
                if p.draft is None and bf.tagged:
                    c.add("field-removed-without-bound", p.path,
                          f"tagged field {p.path} (tag {bf.tag}) was deleted from the schema", v,
                          "Peers that still send it are not broken (unknown tags are skipped), but what it says "
                          f"is lost and tag {bf.tag} looks free for reuse, which it is not. End its range instead: "
                          f"\"versions\": \"{bf.spec.versions.lo}-{hi}\", \"taggedVersions\": \"{bf.spec.tagged.lo}-{hi}\".",
                          "warning")
                elif p.draft is None:
                    c.add("field-removed-without-bound", p.path, f"{p.path} was deleted from the schema", v,
                          f"Deleting a field deletes it from every version, including existing ones whose bytes "
                          f"carry it ({_status_words(s, [v])}). End its range instead: keep the field with "
                          f"\"versions\": \"{bf.spec.versions.lo}-{hi}\" and add a new "
                          "version without it.")
                else:
                    c.add("field-versions-narrowed", p.path,
                          f"versions {p.base.versions} → {p.draft.versions}: no longer in an existing version", v,
                          "A version's field list is its wire format; dropping the field from an existing version "
                          "shifts every later byte for peers that still expect it. Only new versions may drop it.")
            elif ind and not inb:
                new.add(id(p))
                if p.parent is not None and id(p.parent) in new:
                    continue
                df = pd[id(p.draft)]
                if not df.tagged:
                    c.add("field-added-to-old-version", p.path,
                          f"{p.path} ({df.type}) added to an existing version as a regular field", v,
                          "Peers built from the existing definition read these bytes as the next field; nothing "
                          "tells them the layout changed. Add it in a new version, or as a tagged field "
                          "(older readers skip unknown tags).")
                elif not p.draft.ignorable:
                    c.add("non-ignorable-in-old-version", p.path,
                          f"tagged field {p.path} (tag {df.tag}) added to an existing version without "
                          "\"ignorable\": true", v,
                          "Peers built from the existing definition skip the unknown tag, so whatever the field "
                          "says is silently lost when talking to them. If that is acceptable mark it "
                          "\"ignorable\": true; if the receiver must act on it, add it in a new version.")
    return c.findings(s, {"non-ignorable-in-old-version": "warning"})


def _shape(f: VField) -> tuple:
    return (f.is_array, f.is_struct, None if f.is_struct else f.elem)


# size: one review rule comparing every attribute of every field of an existing version: a flat list of attribute checks, one finding each
def existing_version_changed(s: Subject) -> list[Finding]:
    """A version the base already has whose bytes the draft changes."""
    if s.base is None:
        return []
    c = _Collect()
    rule = "existing-version-changed"
    why = ("Existing versions are a contract: a peer that speaks this version with the baseline's definition "
           "reads these bytes differently. Make the change in a new version.")
    pairs = s.pairs()
    for v in s.shared:
        if s.base.is_flexible(v) != s.draft.is_flexible(v):
            c.add(rule, "(message)", "flexible " + ("added" if s.draft.is_flexible(v) else "removed"), v,
                  "Flexibility changes the header version, every string/array length and adds tag buffers.")
        pb, pd = present_fields(s.base, v), present_fields(s.draft, v)
        for p in pairs:
            if p.base is None or p.draft is None or id(p.base) not in pb or id(p.draft) not in pd:
                continue
            x, y = pb[id(p.base)], pd[id(p.draft)]
            if _shape(x) != _shape(y):
                c.add(rule, p.path, f"type {x.type} → {y.type}", v, why)
            if x.nullable != y.nullable:
                c.add(rule, p.path, "now nullable" if y.nullable else "no longer nullable", v, why)
            if x.tag != y.tag:
                c.add(rule, p.path, f"tag {x.tag} → {y.tag}" if x.tagged and y.tagged
                      else (f"moved into the tag buffer (tag {y.tag})" if y.tagged else f"no longer tagged (was tag {x.tag})"),
                      v, why)
            elif x.tagged and x.spec.default != y.spec.default:
                c.add(rule, p.path, f"default {x.spec.default_text} → {y.spec.default_text}", v,
                      "A tagged field is written only when it differs from its default, so a new default changes "
                      "what an absent tag means.")
            if x.compact != y.compact and x.is_array == y.is_array and s.base.is_flexible(v) == s.draft.is_flexible(v):
                c.add(rule, p.path, "compact encoding " + ("added" if y.compact else "removed"), v, why)
        # order of the regular fields of every struct present in both
        for parent in [None] + [p for p in pairs if p.base and p.draft and id(p.base) in pb and id(p.draft) in pd]:
            kids = [p for p in pairs if p.parent is parent and p.base and p.draft
                    and id(p.base) in pb and id(p.draft) in pd
                    and not pb[id(p.base)].tagged and not pd[id(p.draft)].tagged]
            blist = s.base.fields if parent is None else parent.base.fields
            dlist = s.draft.fields if parent is None else parent.draft.fields
            in_base = sorted(kids, key=lambda p, fs=blist: _pos(fs, p.base))
            in_draft = sorted(kids, key=lambda p, fs=dlist: _pos(fs, p.draft))
            if [p.path for p in in_base] != [p.path for p in in_draft]:
                where = parent.path if parent else "(message)"
                moved = [d.path.rpartition(".")[2] for b, d in zip(in_base, in_draft, strict=True) if b is not d]
                c.add(rule, where, "fields reordered: " + ", ".join(moved) + " now in this order",
                      v, "Regular fields are written in schema order; a new order is a new wire format.")
    return c.findings(s)


def _in(spec: MessageSpec, vs) -> tuple[int, ...]:
    return tuple(v for v in spec.versions if v in vs)


def _pos(fields: tuple[FieldSpec, ...], f: FieldSpec) -> int:
    return next(i for i, x in enumerate(fields) if x is f)


def _structs(fields, prefix: str = ""):
    """(struct path, its fields) for the message and every struct inside it."""
    yield prefix or "(message)", fields
    for f in fields:
        if f.is_struct:
            yield from _structs(f.fields, (prefix + "." if prefix else "") + f.name)


# size: one review rule over every tagged field across versions: a flat list of checks, one finding each
def tag_reused(s: Subject) -> list[Finding]:
    """Two tagged fields of one struct with the same tag."""
    out = []
    for where, fields in _structs(s.draft.fields):
        by_tag: dict[int, list[FieldSpec]] = defaultdict(list)
        for f in fields:
            if f.tag is not None:
                by_tag[f.tag].append(f)
        for tag, fs in sorted(by_tag.items()):
            if len(fs) > 1:
                names = ", ".join(f"{f.name} (tagged v{f.tagged})" for f in fs)
                path = f"{where}.{fs[1].name}" if where != "(message)" else fs[1].name
                out.append(Finding("tag-reused", "error", path, f"tag {tag} is used by {names}",
                                   "Kafka's schema generator requires tag numbers to be unique within a struct, "
                                   "even when the versions do not overlap: a tag, once used, stays that field's "
                                   "so it can later be added to other versions.", _in(s.draft, fs[1].tagged)))
    if s.base is None:
        return out
    pairs = s.pairs()
    groups: dict[int | None, list[Pair]] = defaultdict(list)
    for p in pairs:
        groups[id(p.parent) if p.parent else None].append(p)
    for kids in groups.values():
        base_tags = {p.base.tag: p for p in kids if p.base is not None and p.base.tag is not None}
        for p in kids:
            if p.draft is None or p.draft.tag is None:
                continue
            old = base_tags.get(p.draft.tag)
            if old is not None and old is not p and p.path not in {f.path for f in out}:
                out.append(Finding(
                    "tag-reused", "error", p.path,
                    f"tag {p.draft.tag} was {old.base.name} (tagged v{old.base.tagged}) in the baseline; the draft "
                    f"gives it to {p.draft.name}",
                    "Peers that know the baseline decode this tag as the old field. Tags are never reused: take "
                    f"the next unused tag of this struct ({max(base_tags) + 1} or higher).",
                    _in(s.draft, p.draft.tagged)))
    return out


def versions_dropped(s: Subject) -> list[Finding]:
    """Versions the base has and the draft no longer does."""
    if s.base is None:
        return []
    gone = [v for v in s.base.versions if v not in s.draft.valid]
    if not gone:
        return []
    return [Finding("versions-dropped", "warning", "(message)", f"validVersions {s.base.valid} → {s.draft.valid}",
                    "Peers that still use these versions get UNSUPPORTED_VERSION. Kafka removes versions only "
                    "through a KIP and a major release (KIP-896 removed many in 4.0).", tuple(gone))]


def new_version_not_flexible(s: Subject) -> list[Finding]:
    """New versions that are not flexible (KIP-482)."""
    vs = [v for v in s.new_versions if not s.draft.is_flexible(v)]
    if not vs:
        return []
    return [Finding("new-version-not-flexible", "warning", "(message)", "new version(s) are not flexible",
                    "Since KIP-482 every new version is flexible (compact lengths, tag buffers), so that optional "
                    "fields can later be added as tagged fields without another version bump. Use "
                    "\"flexibleVersions\": \"N+\".", tuple(vs))]


def new_version_same_wire(s: Subject) -> list[Finding]:
    """A new version whose bytes are those of the one before it."""
    from ..schema.diff import version_diff
    out = []
    for v in s.new_versions:
        if v - 1 in s.draft.valid and not version_diff(s.draft, v - 1, v):
            out.append(Finding("new-version-same-wire", "info", "(message)", f"v{v} has the same bytes as v{v - 1}",
                               "Fine when the bump announces new behaviour (as TxnOffsetCommit v4 and v5 did); the "
                               "KIP must say what a peer may assume at this version.", (v,)))
    return out


def new_version_not_unstable(s: Subject) -> list[Finding]:
    """New versions not marked latestVersionUnstable."""
    if not s.new_versions or s.draft.latest_version_unstable:
        return []
    return [Finding("new-version-not-unstable", "info", "(message)",
                    "new versions are not marked \"latestVersionUnstable\": true",
                    "Kafka lands a new version as unstable until brokers and clients implement it, so that no "
                    "release advertises a half-built version.", tuple(s.new_versions))]


def metadata_changed(s: Subject) -> list[Finding]:
    """A field whose mapKey, entityType or ignorable differs from the base's."""
    if s.base is None:
        return []
    out = []
    for p in s.pairs():
        if p.base is None or p.draft is None:
            continue
        for attr, label in (("map_key", "mapKey"), ("entity_type", "entityType"), ("ignorable", "ignorable")):
            a, b = getattr(p.base, attr), getattr(p.draft, attr)
            if a != b:
                out.append(Finding("metadata-changed", "info", p.path, f"{label} {a!r} → {b!r}",
                                   "Not on the wire (the bytes are the same), but generated code changes: mapKey "
                                   "makes a keyed collection, entityType drives validation, ignorable decides "
                                   "whether an old version silently drops the field."))
    return out


def missing_about(s: Subject) -> list[Finding]:
    """New fields without an "about" text."""
    paths = [p.path for p in s.pairs() if p.base is None and p.draft is not None and not p.draft.about.strip()]
    if not paths:
        return []
    shown = ", ".join(paths[:6]) + (f" and {len(paths) - 6} more" if len(paths) > 6 else "")
    return [Finding("missing-about", "info", paths[0], f"no \"about\" text: {shown}",
                    "The about text becomes the protocol documentation Kafka publishes; reviewers read it to "
                    "check what each field means.")]


def bad_name(s: Subject) -> list[Finding]:
    """A request or response whose name does not end in Request / Response."""
    suffix = {"request": "Request", "response": "Response"}.get(s.draft.type)
    if suffix is None or s.draft.name.endswith(suffix):
        return []
    return [Finding("bad-name", "warning", "(message)", f"a {s.draft.type} named {s.draft.name!r}",
                    f"Kafka's generator and the kit pair requests and responses by name: "
                    f"{s.draft.name}{suffix} would be expected.")]


CHECKS = (api_key_taken, api_key_changed, field_presence, tag_reused, existing_version_changed,
          versions_dropped, new_version_not_flexible, new_version_same_wire, new_version_not_unstable,
          metadata_changed, missing_about, bad_name)

_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


def run(draft: MessageSpec, base: MessageSpec | None = None, *, official: bool = False) -> list[Finding]:
    """Every rule over one draft; errors first, then warnings, then notes."""
    s = Subject(draft, base, official)
    out = [f for check in CHECKS for f in check(s)]
    return sorted(out, key=lambda f: _ORDER[f.severity])
