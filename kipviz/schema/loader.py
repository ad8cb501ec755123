"""Load and validate Kafka JSON message schemas (official files and the kit's own)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import SchemaError
from . import jsonc
from .model import FIXED_SIZES, NULLABLE_TYPES, PRIMITIVES, STATUSES, FieldSpec, KitInfo, MessageSpec, VersionStatus
from .versions import ALL, NONE, Versions

TOP_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "fields", "listeners",
            "latestVersionUnstable", "deprecatedVersions", "commonStructs", "kipviz"}
FIELD_KEYS = {"name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
              "ignorable", "mapKey", "entityType", "about", "fields", "flexibleVersions",
              "zeroCopy", "aliases", "renamedIn"}
STRUCT_KEYS = {"name", "versions", "fields"}
KIT_KEYS = {"about", "versions", "apiKeyCandidates"}
STATUS_KEYS = {"versions", "status", "since", "kip", "change", "removed", "note"}
MESSAGE_TYPES = ("request", "response", "header", "data")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
               "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


class _Ctx:
    def __init__(self, source: str):
        self.source = source

    def fail(self, msg: str, path: str | None = None) -> SchemaError:
        return SchemaError(msg, source=self.source, path=path)

    def versions(self, obj: dict, key: str, path: str, default: Versions | None = None) -> Versions:
        if key not in obj:
            if default is None:
                raise self.fail(f"missing {key!r}", path)
            return default
        try:
            return Versions.parse(obj[key])
        except ValueError as e:
            raise self.fail(f"{key}: {e}", path) from None


def _parse_default(ctx: _Ctx, f: dict, ftype: str, path: str) -> Any:
    text = f.get("default")
    if text is None:
        return None
    if isinstance(text, bool) or isinstance(text, int):
        text = str(text).lower()          # Kafka also accepts JSON literals here
    if not isinstance(text, str):
        raise ctx.fail(f"default must be a string, got {text!r}", path)
    if text == "null":
        return None
    if ftype.startswith("[]") or ftype not in PRIMITIVES:
        raise ctx.fail(f"default {text!r} not allowed for type {ftype} (only 'null')", path)
    if ftype in _INT_RANGES:
        try:
            val = int(text, 0)
        except ValueError:
            raise ctx.fail(f"default {text!r} is not an integer", path) from None
        lo, hi = _INT_RANGES[ftype]
        if not lo <= val <= hi:
            raise ctx.fail(f"default {val} out of range for {ftype}", path)
        return val
    if ftype == "bool":
        if text not in ("true", "false"):
            raise ctx.fail(f"bool default must be 'true' or 'false', got {text!r}", path)
        return text == "true"
    if ftype == "float64":
        try:
            return float(text)
        except ValueError:
            raise ctx.fail(f"default {text!r} is not a number", path) from None
    if ftype == "string":
        return text
    raise ctx.fail(f"default not supported for type {ftype}", path)


def _parse_field(ctx: _Ctx, f: Any, parent: str, structs: dict[str, dict], flexible: Versions) -> FieldSpec:
    if not isinstance(f, dict):
        raise ctx.fail(f"field must be an object, got {type(f).__name__}", parent or None)
    name = f.get("name")
    path = f"{parent}.{name}" if parent else str(name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ctx.fail(f"bad or missing field name {name!r}", path)
    unknown = set(f) - FIELD_KEYS
    if unknown:
        raise ctx.fail(f"unknown key(s) {sorted(unknown)}", path)
    ftype, elem = _field_type(ctx, f, path)
    versions, nullable, tagged, tag = _field_versions(ctx, f, path, flexible)
    if not nullable.empty:
        if not (ftype.startswith("[]") or elem in NULLABLE_TYPES or elem not in PRIMITIVES):
            raise ctx.fail(f"type {ftype} cannot be nullable", path)
    about, aliases, renamed_in = _field_words(ctx, f, path)
    body = _field_body(ctx, f, path, ftype, elem, structs, flexible)
    default = _parse_default(ctx, f, ftype, path)
    if f.get("default") == "null" and nullable.empty:
        raise ctx.fail("default 'null' needs nullableVersions", path)
    fflex = ctx.versions(f, "flexibleVersions", path, ALL) if "flexibleVersions" in f else None
    if fflex is not None and elem not in ("string", "bytes"):
        raise ctx.fail("field-level flexibleVersions only applies to string/bytes", path)
    raw_default = f.get("default")
    return FieldSpec(
        name=name, type=ftype, versions=versions, nullable=nullable, tagged=tagged, tag=tag,
        default=default, default_text=None if raw_default is None else str(raw_default).lower()
        if isinstance(raw_default, bool) else str(raw_default), ignorable=bool(f.get("ignorable", False)),
        map_key=bool(f.get("mapKey", False)), entity_type=f.get("entityType"), about=about,
        fields=body, flexible=fflex, zero_copy=bool(f.get("zeroCopy", False)), aliases=tuple(aliases),
        renamed_in=renamed_in)


def _field_type(ctx: _Ctx, f: dict, path: str) -> tuple[str, str]:
    """A field's type and its element type (the type itself unless an array)."""
    ftype = f.get("type")
    if not isinstance(ftype, str) or not ftype:
        raise ctx.fail("missing 'type'", path)
    ftype = ftype.strip()
    elem = ftype[2:] if ftype.startswith("[]") else ftype
    if elem.startswith("[]"):
        raise ctx.fail("arrays of arrays are not allowed", path)
    if elem not in PRIMITIVES and not (_NAME.match(elem) and elem[0].isupper()):
        raise ctx.fail(f"unknown type {ftype!r}", path)
    if ftype.startswith("[]") and elem == "records":
        raise ctx.fail("arrays of records are not allowed", path)
    return ftype, elem


def _field_versions(ctx: _Ctx, f: dict, path: str, flexible: Versions):
    """A field's versions, nullableVersions, taggedVersions and tag, checked against each other."""
    if "versions" not in f and "taggedVersions" in f:
        versions = ctx.versions(f, "taggedVersions", path)   # Kafka's rule for tag-only fields
    else:
        versions = ctx.versions(f, "versions", path)
    nullable = ctx.versions(f, "nullableVersions", path, NONE)
    tagged = ctx.versions(f, "taggedVersions", path, NONE)
    tag = f.get("tag")
    if tag is not None and (not isinstance(tag, int) or isinstance(tag, bool) or tag < 0):
        raise ctx.fail(f"tag must be a non-negative integer, got {tag!r}", path)
    if (tag is None) != tagged.empty:
        raise ctx.fail("'tag' and 'taggedVersions' must be given together", path)
    if not tagged.empty:
        if not tagged.within(flexible):
            raise ctx.fail(f"taggedVersions {tagged} outside flexibleVersions {flexible}", path)
        if not tagged.within(versions):
            raise ctx.fail(f"taggedVersions {tagged} outside versions {versions}", path)
    return versions, nullable, tagged, tag


def _field_body(ctx: _Ctx, f: dict, path: str, ftype: str, elem: str, structs: dict,
                flexible: Versions) -> tuple[FieldSpec, ...]:
    """A struct field's fields: its own, or its commonStruct's; a primitive has none."""
    if elem not in PRIMITIVES:
        sub = f.get("fields")
        if sub is None:
            common = structs.get(elem)
            if common is None:
                raise ctx.fail(f"struct type {elem!r} has no 'fields' and is not a commonStruct", path)
            sub = common["fields"]
        return _parse_fields(ctx, sub, path, structs, flexible)
    if "fields" in f:
        raise ctx.fail(f"primitive type {ftype} cannot have 'fields'", path)
    return ()


def _field_words(ctx: _Ctx, f: dict, path: str) -> tuple[str, list, int | None]:
    """The flags, about, aliases and renamedIn of a field (checked for type)."""
    for key in ("ignorable", "mapKey", "zeroCopy"):
        if key in f and not isinstance(f[key], bool):
            raise ctx.fail(f"{key} must be true or false", path)
    about = f.get("about", "")
    if not isinstance(about, str):
        raise ctx.fail("about must be a string", path)
    aliases = f.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and _NAME.match(a) for a in aliases):
        raise ctx.fail("aliases must be a list of field names", path)
    renamed_in = f.get("renamedIn")
    if renamed_in is not None and (not aliases or isinstance(renamed_in, bool) or not isinstance(renamed_in, int)
                                   or renamed_in < 0):
        raise ctx.fail("renamedIn must be a version number, given together with aliases", path)
    return about, aliases, renamed_in


def _parse_fields(ctx: _Ctx, fields: Any, parent: str, structs: dict, flexible: Versions) -> tuple[FieldSpec, ...]:
    if not isinstance(fields, list):
        raise ctx.fail("'fields' must be a list", parent or None)
    out = tuple(_parse_field(ctx, f, parent, structs, flexible) for f in fields)
    names: set[str] = set()
    tags: dict[int, str] = {}
    for fs in out:
        for n in (fs.name, *fs.aliases):
            if n in names:
                raise ctx.fail(f"duplicate field name {n!r}", f"{parent}.{n}" if parent else n)
            names.add(n)
        if fs.tag is not None:
            if fs.tag in tags and not fs.tagged.intersect(_tagged_of(out, tags[fs.tag])).empty:
                raise ctx.fail(f"tag {fs.tag} already used by {tags[fs.tag]}",
                               f"{parent}.{fs.name}" if parent else fs.name)
            tags[fs.tag] = fs.name
    return out


def _tagged_of(fields: tuple[FieldSpec, ...], name: str) -> Versions:
    return next(f.tagged for f in fields if f.name == name)


def _parse_kit(ctx: _Ctx, obj: Any, valid: Versions) -> KitInfo:
    if not isinstance(obj, dict):
        raise ctx.fail("'kipviz' must be an object")
    unknown = set(obj) - KIT_KEYS
    if unknown:
        raise ctx.fail(f"unknown key(s) in 'kipviz': {sorted(unknown)}")
    statuses = []
    for i, s in enumerate(obj.get("versions", [])):
        where = f"kipviz.versions[{i}]"
        if not isinstance(s, dict):
            raise ctx.fail("must be an object", where)
        unknown = set(s) - STATUS_KEYS
        if unknown:
            raise ctx.fail(f"unknown key(s) {sorted(unknown)}", where)
        vs = ctx.versions(s, "versions", where)
        st = s.get("status")
        if st not in STATUSES:
            raise ctx.fail(f"status must be one of {STATUSES}, got {st!r}", where)
        if st == "released" and not s.get("since"):
            raise ctx.fail("a released version needs 'since' (the Kafka release)", where)
        kip = s.get("kip")
        if kip is not None and not re.match(r"^KIP-\d+$", str(kip)):
            raise ctx.fail(f"kip must look like 'KIP-123', got {kip!r}", where)
        statuses.append(VersionStatus(versions=vs, status=st, since=s.get("since"), kip=kip,
                                      change=s.get("change", ""), removed=s.get("removed"),
                                      note=s.get("note", "")))
    if not valid.empty and valid.hi is not None:
        for v in valid.iter(valid.hi):
            hits = [s for s in statuses if v in s.versions]
            if len(hits) != 1:
                raise ctx.fail(f"version {v} must have exactly one status entry, has {len(hits)}",
                               "kipviz.versions")
        for s in statuses:
            if not s.versions.within(valid):
                raise ctx.fail(f"status entry {s.versions} outside validVersions {valid}", "kipviz.versions")
    return KitInfo(about=obj.get("about", ""), statuses=tuple(statuses),
                   api_key_candidates=tuple(obj.get("apiKeyCandidates", [])))


def parse_spec(obj: Any, source: str = "<schema>", *, require_kit: bool = False) -> MessageSpec:
    """Validate a parsed schema object and build its MessageSpec."""
    ctx = _Ctx(source)
    if not isinstance(obj, dict):
        raise ctx.fail("a schema must be a JSON object")
    unknown = set(obj) - TOP_KEYS
    if unknown:
        raise ctx.fail(f"unknown top-level key(s) {sorted(unknown)}")
    name = obj.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ctx.fail(f"bad or missing 'name': {name!r}")
    ctx.source = f"{source} ({name})" if source != name else source
    mtype = obj.get("type")
    if mtype not in MESSAGE_TYPES:
        raise ctx.fail(f"'type' must be one of {MESSAGE_TYPES}, got {mtype!r}")
    api_key = obj.get("apiKey")
    if mtype in ("request", "response"):
        if not isinstance(api_key, int) or isinstance(api_key, bool) or not 0 <= api_key < 2**15:
            raise ctx.fail(f"a {mtype} needs an integer 'apiKey', got {api_key!r}")
    valid = ctx.versions(obj, "validVersions", None)
    if valid.hi is None:
        raise ctx.fail("validVersions must be bounded (e.g. '0-5')")
    flexible = ctx.versions(obj, "flexibleVersions", None, NONE)
    structs: dict[str, dict] = {}
    for s in obj.get("commonStructs", []):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            raise ctx.fail("commonStructs entries need a name")
        unknown = set(s) - STRUCT_KEYS
        if unknown:
            raise ctx.fail(f"unknown key(s) {sorted(unknown)}", f"commonStructs.{s['name']}")
        structs[s["name"]] = s
    common = tuple(
        FieldSpec(name=n, type=n, versions=ctx.versions(s, "versions", f"commonStructs.{n}", ALL),
                  fields=_parse_fields(ctx, s.get("fields"), n, structs, flexible))
        for n, s in structs.items())
    if "fields" not in obj:
        raise ctx.fail("missing 'fields'")
    fields = _parse_fields(ctx, obj["fields"], "", structs, flexible)
    kit = None
    if "kipviz" in obj:
        kit = _parse_kit(ctx, obj["kipviz"], valid)
    elif require_kit:
        raise ctx.fail("kit definitions need a 'kipviz' section with version statuses")
    listeners = obj.get("listeners", [])
    return MessageSpec(
        name=name, type=mtype, valid=valid, flexible=flexible, fields=fields, api_key=api_key,
        listeners=tuple(listeners), latest_version_unstable=bool(obj.get("latestVersionUnstable", False)),
        deprecated=ctx.versions(obj, "deprecatedVersions", None, NONE), common_structs=common,
        source=source, kit=kit)


def load_text(text: str, source: str = "<schema>", *, require_kit: bool = False) -> MessageSpec:
    """A MessageSpec from definition text (JSON with comments); SchemaError names what is wrong."""
    try:
        obj = jsonc.loads(text)
    except json.JSONDecodeError as e:
        raise SchemaError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source=source) from None
    return parse_spec(obj, source, require_kit=require_kit)


def load_file(path: str | Path, *, require_kit: bool = False) -> MessageSpec:
    """A MessageSpec from a definition file (read with a size bound)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            raw = f.read(jsonc.MAX_BYTES + 1)     # bounded: a device or FIFO cannot feed it forever
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SchemaError(f"cannot read: {e}", source=str(p)) from None
    problem = jsonc.too_large(len(raw))
    if problem:
        raise SchemaError(problem, source=str(p))
    return load_text(text, p.name, require_kit=require_kit)


def load_dir(path: str | Path, *, require_kit: bool = False) -> dict[str, MessageSpec]:
    """Every *.json schema in a directory, by message name (e.g. ../shared/kafka/message-4.3)."""
    p = Path(path)
    if not p.is_dir():
        raise SchemaError("not a directory", source=str(p))
    specs: dict[str, MessageSpec] = {}
    for f in sorted(p.glob("*.json")):
        spec = load_file(f, require_kit=require_kit)
        if spec.name in specs:
            raise SchemaError(f"message {spec.name} defined twice", source=str(f))
        specs[spec.name] = spec
    return specs


__all__ = ["load_dir", "load_file", "load_text", "parse_spec", "FIXED_SIZES"]
