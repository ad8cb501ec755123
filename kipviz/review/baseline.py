"""What a draft is compared with: the kit's definition of the same message, else Kafka's own
schema file of that name (from ../shared/kafka or KIPVIZ_KAFKA_REF), else nothing (a new RPC).
`against` may also name a kit message, a schema file, a directory of schema files, or "none"."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SchemaError, UnknownMessageError
from ..schema import registry
from ..schema.check import REF_DIRS, reference_root
from ..schema.loader import load_dir, load_file
from ..schema.model import MessageSpec

__all__ = ["Baseline", "find"]


@dataclass(frozen=True)
class Baseline:
    """What a draft is compared with: a definition (the kit's or Kafka's own file) and its label."""
    spec: MessageSpec | None
    label: str            # where it came from, for the report ("the kit's definition ...")
    official: bool = False  # a Kafka schema file: every version counts as released


def _official(name: str) -> Baseline | None:
    root = reference_root()
    if root is None:
        return None
    for d in ("message-4.3", "message-2024-10"):
        f = root / d / f"{name}.json"
        if d in REF_DIRS and f.is_file():
            return Baseline(load_file(f), f"Kafka's {name} schema ({d})", official=True)
    return None


def find(draft_name: str | None, against=None) -> Baseline:
    """The baseline for a draft named `draft_name` (see the module docstring)."""
    if isinstance(against, MessageSpec):
        return Baseline(against, f"{against.name} ({against.source or 'given spec'})", official=against.kit is None)
    if against is None:
        if draft_name and draft_name in registry.messages():
            return Baseline(registry.get(draft_name), f"the kit's definition of {draft_name}")
        found = _official(draft_name) if draft_name else None
        return found or Baseline(None, "nothing (no released definition of this name: a new RPC)")
    if not isinstance(against, (str, Path)):
        raise SchemaError(f"against must be a message name, a schema file or directory, got {type(against).__name__}")
    text = str(against)
    if text.lower() == "none":
        return Baseline(None, "nothing (reviewed as a new RPC)")
    p = Path(text)
    if p.is_dir():
        specs = load_dir(p)
        if draft_name not in specs:
            raise UnknownMessageError(f"{p} has no schema named {draft_name!r}")
        return Baseline(specs[draft_name], f"{draft_name} from {p}", official=specs[draft_name].kit is None)
    if p.suffix == ".json" or p.is_file():
        spec = load_file(p)
        return Baseline(spec, f"{spec.name} from {p.name}", official=spec.kit is None)
    return Baseline(registry.get(text), f"the kit's definition of {text}")
