"""Plain, printable objects for a loaded schema: MessageSpec, FieldSpec, and kit labels."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .versions import NONE, Versions

PRIMITIVES = frozenset(
    "bool int8 int16 uint16 int32 int64 float64 string bytes uuid records".split()
)
FIXED_SIZES = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8,
               "float64": 8, "uuid": 16}
NULLABLE_TYPES = frozenset({"string", "bytes", "records"})
STATUSES = ("released", "accepted", "proposed")


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a message definition as written: its type, versions, nullable and tagged versions."""
    name: str
    type: str                      # as written: "int32", "[]int32", "[]TopicData", "LeaderIdAndEpoch"
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: Any = None            # parsed default, see defaults.py
    default_text: str | None = None
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None
    about: str = ""
    fields: tuple["FieldSpec", ...] = ()   # body when the type is a struct or array of structs
    flexible: Versions | None = None      # field-level flexibleVersions override (RequestHeader ClientId)
    zero_copy: bool = False
    aliases: tuple[str, ...] = ()
    renamed_in: int | None = None         # first version that used this name instead of the alias

    @property
    def is_array(self) -> bool:
        """Whether the field is an array ("[]int32", "[]TopicData")."""
        return self.type.startswith("[]")

    @property
    def elem(self) -> str:
        """The type of the field's values (an array's element type)."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """Whether the field's values are structs (not primitives)."""
        return self.elem not in PRIMITIVES

    def present(self, v: int) -> bool:
        """Whether the field exists at version v."""
        return v in self.versions

    def is_tagged(self, v: int) -> bool:
        """Whether the field is a tagged field at version v."""
        return self.tag is not None and v in self.tagged

    def is_nullable(self, v: int) -> bool:
        """Whether the field may be null at version v."""
        return v in self.nullable


@dataclass(frozen=True, slots=True)
class VersionStatus:
    """What the kit says about a range of versions: released/accepted/proposed, when, and why."""

    versions: Versions
    status: str
    since: str | None = None       # Kafka release that first shipped it (status released)
    kip: str | None = None
    change: str = ""
    removed: str | None = None     # Kafka release that dropped it (e.g. 4.0, KIP-896)
    note: str = ""

    def label(self) -> str:
        """The status in words: "released in Kafka 4.4 (KIP-1319)", "proposed", ..."""
        if self.status == "released":
            text = f"released in Kafka {self.since}" if self.since else "released"
        elif self.status == "accepted" and self.since:
            text = f"accepted, unstable (opt-in) in Kafka {self.since}"
        else:
            text = self.status
        if self.removed:
            text += f", removed in {self.removed}"
        return f"{text} ({self.kip})" if self.kip else text


@dataclass(frozen=True, slots=True)
class KitInfo:
    """The kit's own notes in a definition: what it is about and the status of its version ranges."""
    about: str = ""
    statuses: tuple[VersionStatus, ...] = ()
    api_key_candidates: tuple[dict, ...] = field(default=(), compare=False)  # unsettled keys

    def status(self, v: int) -> VersionStatus | None:
        """The status of version v, or None when the kit says nothing about it."""
        for s in self.statuses:
            if v in s.versions:
                return s
        return None


@dataclass(frozen=True, slots=True, eq=False)   # identity hash: specs are cache keys
class MessageSpec:
    """One message definition: its name, kind, api key, versions and fields."""
    name: str
    type: str                      # request, response, header, data
    valid: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]
    api_key: int | None = None
    listeners: tuple[str, ...] = ()
    latest_version_unstable: bool = False
    deprecated: Versions = NONE
    common_structs: tuple[FieldSpec, ...] = ()
    source: str = ""
    kit: KitInfo | None = None
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def versions(self) -> list[int]:
        """Every valid version, oldest first."""
        return [] if self.valid.empty else list(self.valid.iter(self.valid.hi if self.valid.hi is not None else self.valid.lo))

    @property
    def api(self) -> str:
        """Name without the Request/Response suffix ("TxnOffsetCommit")."""
        for suffix in ("Request", "Response"):
            if self.name.endswith(suffix) and self.type in ("request", "response"):
                return self.name[: -len(suffix)]
        return self.name

    def is_flexible(self, v: int) -> bool:
        """Whether version v uses the flexible (compact, tagged) encoding."""
        return v in self.flexible

    def status(self, v: int) -> VersionStatus | None:
        """The kit's status of version v, or None."""
        return self.kit.status(v) if self.kit else None

    def status_label(self, v: int) -> str:
        """The status of version v in words ("official schema (no kit label)" without one)."""
        s = self.status(v)
        return s.label() if s else "official schema (no kit label)"

    def field_at(self, path: str) -> FieldSpec:
        """Look up a field by dotted path ("Topics.Partitions.PartitionIndex")."""
        fields = self.fields
        found = None
        for part in path.split("."):
            found = next((f for f in fields if f.name == part or part in f.aliases), None)
            if found is None:
                raise KeyError(f"{self.name} has no field {path!r}")
            fields = found.fields
        return found
