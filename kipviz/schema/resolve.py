"""A message as it is at one version: the fields present, with per-version attributes fixed."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..errors import UnknownMessageError
from .model import FieldSpec, MessageSpec


@dataclass(frozen=True, slots=True)
class VField:
    """A field as one version sees it: its encoding settled (compact, tag, nullable) and its sub-fields."""
    name: str
    type: str              # as written in the schema ("[]int32", "TopicData", ...)
    elem: str              # element type ("int32", "TopicData")
    is_array: bool
    is_struct: bool
    nullable: bool
    tag: int | None        # set when the field is tagged at this version
    compact: bool          # flexible encoding for strings/bytes/arrays/structs at this version
    fields: tuple["VField", ...]
    spec: FieldSpec
    version: int

    @property
    def tagged(self) -> bool:
        """Whether the field is tagged at this version."""
        return self.tag is not None


@dataclass(frozen=True, slots=True)
class VMessage:
    """A message at one version: the fields present there, resolved (what a plan compiles)."""
    spec: MessageSpec
    version: int
    flexible: bool
    fields: tuple[VField, ...]


def _resolve_fields(fields: tuple[FieldSpec, ...], v: int, flexible: bool) -> tuple[VField, ...]:
    out = []
    for f in fields:
        if not f.present(v):
            continue
        compact = flexible if f.flexible is None else (v in f.flexible)
        out.append(VField(
            name=f.name, type=f.type, elem=f.elem, is_array=f.is_array, is_struct=f.is_struct,
            nullable=f.is_nullable(v), tag=f.tag if f.is_tagged(v) else None, compact=compact,
            fields=_resolve_fields(f.fields, v, flexible) if f.is_struct else (), spec=f, version=v))
    return tuple(out)


@lru_cache(maxsize=4096)
def resolve(spec: MessageSpec, version: int) -> VMessage:
    """The message `spec` at `version`; UnknownMessageError for a version it lacks."""
    if version not in spec.valid:
        raise UnknownMessageError(
            f"{spec.name} has no version {version} (valid: {spec.valid})")
    flexible = spec.is_flexible(version)
    return VMessage(spec, version, flexible, _resolve_fields(spec.fields, version, flexible))
