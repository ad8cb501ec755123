"""What changed on the wire between two versions of a message (drawn by kipviz.draw.diff).

    version_diff("TxnOffsetCommitRequest", 5, 6) -> [{"path", "change", "detail"}, ...]

Field paths are dotted schema names without indices ("Topics.Partitions.CommittedOffset").
`change` is one of:

    added, removed            the field exists in only one of the two versions (a whole added or
                              removed struct is one row; its fields are not listed again)
    type-changed              same path, different type ("string" -> "uuid")
    nullability-changed       null allowed in one version only
    moved-to-tagged, moved-from-tagged, tag-changed
    compact-changed           the field's own length encoding changed although the message's
                              flexibility did not explain it (field-level flexibleVersions)
    renamed                   same wire, new name (see below)
    flexible                  (path "(message)") the message became, or stopped being, flexible:
                              compact strings/arrays and a tag buffer in every struct
    header-version            (path "(header)") the request/response header version changed

Renames. A kit field keeps one FieldSpec across versions, with its earlier names in "aliases";
the bytes do not change, only the name in the source. The definition's "renamedIn" says which
version first used the current name (TxnOffsetCommit's GenerationIdOrMemberEpoch: 6, KIP-1319).
A diff whose range crosses that version reports "renamed (source only, same wire)". A field whose
rename is not tied to a version (LeaderAndIsr's ZkVersion) is never reported.
Independently, a field removed and another added at the same position of the same struct with the
same wire type, nullability and tagging is reported as one "renamed" row (same position and wire
type), because the bytes cannot tell them apart."""
from __future__ import annotations

from . import registry
from .headers import request_header_version, response_header_version
from .model import FieldSpec, MessageSpec
from .resolve import VField, resolve
from .wiretype import wire_type


def rename_version(spec: MessageSpec, f: FieldSpec) -> int | None:
    """The first version that uses the field's current name instead of its alias (the
    definition's "renamedIn"), or None when the rename is not tied to a version."""
    return f.renamed_in if f.aliases else None


def name_at(spec: MessageSpec, f: FieldSpec, v: int) -> str:
    """The field's name as version v knew it (its alias before the rename version)."""
    rv = rename_version(spec, f)
    return f.aliases[0] if rv is not None and v < rv else f.name


def path_at(spec: MessageSpec, path: str, v: int) -> str:
    """A dotted path with every component named as version v knew it."""
    fields, out = spec.fields, []
    for part in path.split("."):
        f = next((x for x in fields if x.name == part and x.present(v)), None) \
            or next((x for x in fields if x.name == part), None)
        if f is None:
            return path
        out.append(name_at(spec, f, v))
        fields = f.fields
    return ".".join(out)


def flatten(fields: tuple[VField, ...], prefix: str = "", out: dict | None = None) -> dict:
    """path -> (VField, parent prefix, position among the parent's untagged fields or None)."""
    out = {} if out is None else out
    pos = 0
    for f in fields:
        path = prefix + f.name
        out[path] = (f, prefix, None if f.tagged else pos)
        if not f.tagged:
            pos += 1
        if f.is_struct:
            flatten(f.fields, path + ".", out)
    return out


def spec_paths(fields: tuple[FieldSpec, ...], prefix: str = "", out: list | None = None) -> list[str]:
    """Every path of every version, in schema order (a path named twice is listed once)."""
    out = [] if out is None else out
    for f in fields:
        path = prefix + f.name
        if path not in out:
            out.append(path)
        if f.is_struct:
            spec_paths(f.fields, path + ".", out)
    return out


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _describe(f: VField) -> str:
    text = wire_type(f)
    if f.nullable:
        text += ", nullable"
    if f.tagged:
        text += f", tagged (tag {f.tag})"
    if f.is_struct:
        text += f", {len(f.fields)} field{'s' if len(f.fields) != 1 else ''}"
    return text


def _same_wire(x: VField, y: VField) -> bool:
    if (x.elem if not x.is_struct else None) != (y.elem if not y.is_struct else None):
        return False
    if x.is_array != y.is_array or x.is_struct != y.is_struct or x.nullable != y.nullable or x.tag != y.tag:
        return False
    if x.is_struct:
        return len(x.fields) == len(y.fields) and all(_same_wire(p, q) and p.name == q.name
                                                      for p, q in zip(x.fields, y.fields, strict=True))
    return True


_VARIABLE = ("string", "bytes", "records")


def header_version(spec: MessageSpec, v: int) -> tuple[str, int] | None:
    """("request header" / "response header", its version) of a message version, None for other kinds."""
    if spec.type == "request":
        return "request header", request_header_version(spec, v)
    if spec.type == "response":
        return "response header", response_header_version(spec, v)
    return None


def diff_rows(spec: MessageSpec, a: int, b: int) -> list[dict]:
    """version_diff's rows plus, for renames, "_also": the other path the diagram highlights."""
    va, vb = resolve(spec, a), resolve(spec, b)
    rows = _message_rows(spec, a, b, va, vb)
    fa, fb = flatten(va.fields), flatten(vb.fields)
    for path in spec_paths(spec.fields):
        parent = _parent(path)
        if path in fa and path in fb:
            rows += _field_changes(spec, path, fa[path][0], fb[path][0], a, b, va.flexible, vb.flexible)
        elif path in fb:
            if not parent or parent in fa:          # inside a new struct: covered by the struct's row
                rows.append({"path": path_at(spec, path, b), "change": "added",
                             "detail": _describe(fb[path][0]), "_key": path})
        elif path in fa:
            if not parent or parent in fb:
                rows.append({"path": path_at(spec, path, a), "change": "removed",
                             "detail": _describe(fa[path][0]), "_key": path})
    _pair_renames(rows, fa, fb)
    return rows


def _message_rows(spec: MessageSpec, a: int, b: int, va, vb) -> list[dict]:
    """What changes for the whole message: its header's version and flexibility."""
    rows = []
    ha, hb = header_version(spec, a), header_version(spec, b)
    if ha and hb and ha[1] != hb[1]:
        rows.append({"path": "(header)", "change": "header-version",
                     "detail": f"{ha[0]} v{ha[1]} → v{hb[1]}"})
    if va.flexible != vb.flexible:
        detail = (f"v{b} is flexible: compact strings, bytes and arrays (varint lengths) and a tag buffer "
                  "at the end of every struct" if vb.flexible
                  else f"v{b} is not flexible: int16/int32 lengths and counts, no tagged fields")
        rows.append({"path": "(message)", "change": "flexible", "detail": detail})
    return rows


def _field_changes(spec: MessageSpec, path: str, x, y, a: int, b: int, flex_a: bool, flex_b: bool) -> list[dict]:
    """The rows of one field present in both versions (x in a, y in b)."""
    rows = []
    rv = rename_version(spec, y.spec) if x.spec is y.spec else None
    if rv is not None and min(a, b) < rv <= max(a, b):
        old, new = y.spec.aliases[0], y.name
        rows.append({"path": path, "change": "renamed",
                     "detail": f"{old} → {new} (source only, same wire)" if a < b
                     else f"{new} → {old} (source only, same wire)"})
    if (x.is_array, x.is_struct, None if x.is_struct else x.elem) != \
            (y.is_array, y.is_struct, None if y.is_struct else y.elem):
        rows.append({"path": path, "change": "type-changed", "detail": f"{x.type} → {y.type}"})
    if x.nullable != y.nullable:
        rows.append({"path": path, "change": "nullability-changed",
                     "detail": f"nullable in v{b}" if y.nullable else f"no longer nullable in v{b}"})
    rows += _tag_change(path, x.tag, y.tag)
    if (x.compact != y.compact and (x.is_array or x.is_struct or x.elem in _VARIABLE)
            and not (x.compact == flex_a and y.compact == flex_b)):
        rows.append({"path": path, "change": "compact-changed", "detail": f"{wire_type(x)} → {wire_type(y)}"})
    return rows


def _tag_change(path: str, tx: int | None, ty: int | None) -> list[dict]:
    if tx is None and ty is not None:
        return [{"path": path, "change": "moved-to-tagged", "detail": f"tagged field, tag {ty}"}]
    if tx is not None and ty is None:
        return [{"path": path, "change": "moved-from-tagged", "detail": f"was tagged (tag {tx}); now a regular field"}]
    if tx != ty:
        return [{"path": path, "change": "tag-changed", "detail": f"tag {tx} → {ty}"}]
    return []


def _pair_renames(rows: list[dict], fa: dict, fb: dict) -> None:
    # same position, same wire, different name: one "renamed" row instead of removed + added
    for r in [r for r in rows if r["change"] == "added"]:
        y, py, posy = fb[r["_key"]]
        for xr in [q for q in rows if q["change"] == "removed"]:
            x, px, posx = fa[xr["_key"]]
            if px == py and posx is not None and posx == posy and _same_wire(x, y):
                rows.remove(xr)
                r.update(change="renamed", _also=xr["_key"],
                         detail=f"{x.name} → {y.name} (same position and wire type: same bytes)")
                break


def version_diff(name: str | MessageSpec, a: int, b: int) -> list[dict]:
    """Rows {path, change, detail} describing how version b differs from version a."""
    spec = registry.get(name)
    return [{k: r[k] for k in ("path", "change", "detail")} for r in diff_rows(spec, a, b)]
