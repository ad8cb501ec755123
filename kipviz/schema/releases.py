"""The Apache Kafka releases the kit models, oldest first; the newest is what the model plays
unless told otherwise (docs/facts.md#kafka-44: Kafka 4.4 is the newest release).

Which versions a release serves is derived from the kit's labels (status/since/removed), never
written twice: `served` is the one rule (the broker model, the CLI and kipviz.schema.matrix all
call it). This module reads no definitions: the registry sits above it.
Adding Kafka 4.5 = append "4.5" here and label the versions it ships `"since": "4.5"`."""
from __future__ import annotations

RELEASES: tuple[str, ...] = ("4.0", "4.1", "4.2", "4.3", "4.4")
NEWEST = RELEASES[-1]


def release_key(text: str) -> tuple[int, ...]:
    """Sortable form of a release ("4.10" > "4.9"); a leading "≤" (first release not pinned) is ignored."""
    return tuple(int(p) for p in str(text).lstrip("≤").split(".") if p.isdigit())


def check(release: str | None) -> str:
    """The release name itself, or ValueError naming the releases the kit models (None = newest)."""
    if release is None:
        return NEWEST
    if release not in RELEASES:
        raise ValueError(f"unknown Kafka release {release!r} (the kit models {', '.join(RELEASES)})")
    return release


def served_list(spec, release: str | None, proposals: frozenset = frozenset()) -> list[int]:
    """The versions of `spec` a broker of `release` accepts, from the kit's labels.

    released: since <= release and not removed by then. accepted (unstable/opt-in) and proposed
    versions are not served by a release; proposed ones are when their API is in `proposals` (a
    feature switched on, e.g. share.version=2 for KIP-1289). release None = trunk: every released
    or accepted version not removed."""
    rel = release_key(release) if release is not None else None
    ok = []
    for v in spec.versions:
        st = spec.status(v)
        if st is None:
            continue
        if st.status == "proposed":
            if spec.api in proposals:
                ok.append(v)
            continue
        if rel is None:
            if st.removed is None:
                ok.append(v)
            continue
        if st.status != "released" or not st.since or release_key(st.since) > rel:
            continue
        if st.removed and release_key(st.removed) <= rel:
            continue
        ok.append(v)
    return ok


def served(spec, release: str | None, proposals: frozenset = frozenset()) -> tuple[int, int] | None:
    """(min, max) of `served_list`, or None when the release serves no version of it."""
    ok = served_list(spec, release, proposals)
    return (min(ok), max(ok)) if ok else None
