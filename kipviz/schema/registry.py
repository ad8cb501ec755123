"""The kit's own definitions, loaded once, looked up by name or api key.

A proposed RPC whose api key is not settled (TxnShareAcknowledge, KIP-1289) can be moved to
another key with configure_api_key(); clashes with keys Kafka has taken are reported."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..errors import UnknownMessageError
from .loader import load_dir
from .model import MessageSpec

DEFS = Path(__file__).resolve().parent.parent / "defs"
DEFS_DIR = DEFS / "messages"
_overrides: dict[str, int] = {}
_by_key: dict[tuple[int, str], MessageSpec] = {}     # by_api_key's answers (cleared on configure_api_key)


@lru_cache(maxsize=1)
def _kit() -> dict[str, MessageSpec]:
    return load_dir(DEFS_DIR, require_kit=True)


@lru_cache(maxsize=1)
def kafka_api_keys() -> dict[int, str]:
    """Api keys released Kafka has given out (key -> RPC name)."""
    data = json.loads((DEFS / "api_keys.json").read_text())
    return {int(k): v for k, v in data["keys"].items()}


def messages() -> dict[str, MessageSpec]:
    """All kit definitions by name."""
    return dict(_kit())


def get(name) -> MessageSpec:
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


def clashes(api: str, key: int) -> list[str]:
    """Who else uses `key`: released Kafka RPCs and other kit definitions."""
    out = []
    taken = kafka_api_keys().get(key)
    if taken and taken != api:
        out.append(f"api key {key} is Kafka's {taken}")
    for spec in _kit().values():
        if spec.api != api and api_key(spec) == key and spec.type == "request":
            out.append(f"api key {key} is the kit's {spec.api}")
    return sorted(set(out))


def configure_api_key(api: str, key: int | None) -> list[str]:
    """Use `key` for a proposed RPC (None restores the definition's key). Returns the clashes;
    a key that another kit definition uses is refused, since frames could not be told apart."""
    specs = [s for s in _kit().values() if s.api == api]
    if not specs:
        raise UnknownMessageError(f"no RPC named {api!r}")
    _by_key.clear()
    if key is None:
        _overrides.pop(api, None)
        return []
    if not isinstance(key, int) or not 0 <= key < 2**15:
        raise ValueError(f"api key must be an integer in [0, 32767], got {key!r}")
    problems = clashes(api, key)
    if any("kit's" in p for p in problems):
        raise ValueError("; ".join(problems))
    _overrides[api] = key
    return problems
