"""The kit's own definitions, loaded once, looked up by name or api key.

A proposed RPC whose api key is not settled (TxnShareAcknowledge, KIP-1289) can be moved to
another key with configure_api_key(); clashes with the keys a Kafka release has taken are reported
(the key table per release is kipviz.schema.api_keys; api_key_history() tells a candidate's story)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..errors import UnknownMessageError
from . import api_keys, releases
from .loader import load_dir
from .model import MessageSpec

DEFS = Path(__file__).resolve().parent.parent / "defs"
DEFS_DIR = DEFS / "messages"
_overrides: dict[str, int] = {}
_by_key: dict[tuple[int, str], MessageSpec] = {}     # by_api_key's answers (cleared on configure_api_key)


@lru_cache(maxsize=1)
def _kit() -> dict[str, MessageSpec]:
    return load_dir(DEFS_DIR, require_kit=True)


def kafka_api_keys(release: str | None = None) -> dict[int, str]:
    """Api keys Kafka `release` has given out (key -> RPC name); None = the newest release."""
    return api_keys.table(release)


def messages() -> dict[str, MessageSpec]:
    """All kit definitions by name."""
    return dict(_kit())


def get(name) -> MessageSpec:
    """The MessageSpec named `name` (a spec is returned as it is); UnknownMessageError suggests close names."""
    if isinstance(name, MessageSpec):
        return name
    specs = _kit()
    spec = specs.get(name)
    if spec is None:
        key = str(name).lower()
        close = [n for n in specs if n.lower().startswith(key[:6])] if key else []
        hint = f"; did you mean {', '.join(sorted(close)[:4])}?" if close else ""
        raise UnknownMessageError(f"no message named {name!r}{hint}")
    return spec


def api_key(spec: MessageSpec) -> int | None:
    """The api key in use for a message (a configured override wins)."""
    return _overrides.get(spec.api, spec.api_key)


def by_api_key(key: int, kind: str = "request") -> MessageSpec:
    """The request (or response) definition of an api key."""
    hit = _by_key.get((key, kind))
    if hit is not None:
        return hit
    for spec in _kit().values():
        if spec.type == kind and api_key(spec) == key:
            _by_key[(key, kind)] = spec
            return spec
    known = kafka_api_keys().get(key)
    extra = f" (Kafka's {known}, which the kit does not define)" if known else ""
    raise UnknownMessageError(f"no {kind} with api key {key}{extra}")


def clashes(api: str, key: int, release: str | None = None) -> list[str]:
    """Who else uses `key` in Kafka `release` (None = newest) and among the kit's definitions."""
    release = releases.check(release)
    out = []
    taken = kafka_api_keys(release).get(key)
    if taken and taken != api:
        out.append(f"api key {key} is Kafka {release}'s {taken}")
    maybe = api_keys.maybe_taken(key, release)
    if maybe is not None and maybe.name != api:
        out.append(f"api key {key} may already be Kafka {release}'s {maybe.name} "
                   f"(first release not pinned; certain from {maybe.since.lstrip('≤')})")
    for spec in _kit().values():
        if spec.api != api and api_key(spec) == key and spec.type == "request":
            out.append(f"api key {key} is the kit's {spec.api}")
    return sorted(set(out))


def configure_api_key(api: str, key: int | None, release: str | None = None) -> list[str]:
    """Use `key` for a proposed RPC (None restores the definition's key). Returns the clashes with
    Kafka `release` (the release the cluster plays; None = newest); a key that another kit
    definition uses is refused, since frames could not be told apart."""
    specs = [s for s in _kit().values() if s.api == api]
    if not specs:
        raise UnknownMessageError(f"no RPC named {api!r}")
    release = releases.check(release)
    if key is None:
        _by_key.clear()
        _overrides.pop(api, None)
        return []
    if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < 2**15:
        raise ValueError(f"api key must be an integer in [0, 32767], got {key!r}")
    problems = clashes(api, key, release)
    if any("kit's" in p for p in problems):
        raise ValueError("; ".join(problems))
    _by_key.clear()
    _overrides[api] = key
    return problems


def api_key_history(api: str) -> list[dict]:
    """The story of a proposed RPC's api key, from its definition's apiKeyCandidates and Kafka's
    key table: one row per candidate with key, source, whether it is the definition's default,
    who held it on trunk only, one column per release (the RPC holding it, or "" if free) and
    free_in_newest."""
    specs = [s for s in _kit().values() if s.api == api and s.type == "request"]
    if not specs:
        raise UnknownMessageError(f"no RPC named {api!r}")
    spec = specs[0]
    rows = []
    for c in (spec.kit.api_key_candidates if spec.kit else ()):
        key = c["apiKey"]
        row = {"key": key, "source": c.get("source", ""), "default": key == spec.api_key,
               "trunk only": "; ".join(f"{e.name} ({e.source.split(' (')[0]})" for e in api_keys.trunk_only(key))}
        for rel, name in api_keys.taken_by(key).items():
            row[rel] = name or ""
        row["free_in_newest"] = not row[releases.NEWEST]
        rows.append(row)
    return rows
