"""Kafka's api-key table per release, read from kipviz/defs/api_keys.json (data, not code).

A key belongs to a release when it was given out at or before it. "≤4.1" means "in 4.1, first
release not pinned": such a key is certain from 4.1 on and only *maybe* taken before. Keys that
trunk held but no release shipped (GetReplicaLogInfo on 93 in 2025) are history, not a clash."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .releases import RELEASES, check, release_key

PATH = Path(__file__).resolve().parent.parent / "defs" / "api_keys.json"


@dataclass(frozen=True, slots=True)
class KeyEntry:
    """One api key of Kafka's key table: its number, its name, the release it came with, and why."""
    key: int
    name: str
    since: str | None          # None: in every release the kit models (the 2024-10 snapshot)
    source: str = ""
    note: str = ""
    kip: str | None = None

    @property
    def pinned(self) -> bool:
        """Whether the release it came with is known exactly (not only "at most")."""
        return self.since is None or not self.since.startswith("≤")


@lru_cache(maxsize=1)
def _data() -> tuple[tuple[KeyEntry, ...], tuple[KeyEntry, ...]]:
    d = json.loads(PATH.read_text())
    base = [KeyEntry(int(k), v, None, d.get("keysSource", "")) for k, v in d["keys"].items()]
    later = [KeyEntry(e["apiKey"], e["name"], e["since"], e.get("source", ""), e.get("note", ""), e.get("kip"))
             for e in d.get("later", [])]
    trunk = [KeyEntry(e["apiKey"], e["name"], None, e.get("source", ""), e.get("note", ""), e.get("kip"))
             for e in d.get("trunkOnly", [])]
    return tuple(base + sorted(later, key=lambda e: release_key(e.since))), tuple(trunk)


def entries(release: str | None = None, *, maybe: bool = False) -> dict[int, KeyEntry]:
    """key -> the entry in force in `release` (None = newest). maybe=True also counts keys whose
    first release is not pinned and might already be taken in `release`."""
    return dict(_entries(check(release), maybe))


@lru_cache(maxsize=64)
def _entries(release: str, maybe: bool) -> dict[int, KeyEntry]:
    rel = release_key(release)
    out: dict[int, KeyEntry] = {}
    for e in _data()[0]:                       # snapshot first, then later entries oldest first
        if e.since is None or release_key(e.since) <= rel or (maybe and not e.pinned):
            out[e.key] = e
    return out


def table(release: str | None = None) -> dict[int, str]:
    """key -> RPC name for the keys certainly taken in `release` (None = newest). Cached: do not
    modify the dict (capture sniffing asks once per frame)."""
    return _table(check(release))


@lru_cache(maxsize=16)
def _table(release: str) -> dict[int, str]:
    return {k: e.name for k, e in sorted(_entries(release, False).items())}


def maybe_taken(key: int, release: str | None = None) -> KeyEntry | None:
    """The entry for a key that may (first release not pinned) but need not be taken in `release`."""
    release = check(release)
    if key in _entries(release, False):
        return None
    e = _entries(release, True).get(key)
    return e if e is not None and not e.pinned else None


def trunk_only(key: int) -> list[KeyEntry]:
    """RPCs that held `key` on trunk but shipped in no release."""
    return [e for e in _data()[1] if e.key == key]


def taken_by(key: int) -> dict[str, str | None]:
    """{release: RPC name or None} for one key, across every release the kit models."""
    return {r: table(r).get(key) for r in RELEASES}
