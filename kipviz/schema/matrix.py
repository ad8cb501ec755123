"""Which versions of every kit definition each modelled release serves: the kit's definitions
(kipviz.schema.registry) crossed with the releases and their one rule (kipviz.schema.releases.served)."""
from __future__ import annotations

from . import registry
from .releases import RELEASES, served


def matrix(kind: str = "request") -> dict[str, dict[str, tuple[int, int] | None]]:
    """{api: {release: (min, max) or None}} for every kit definition of `kind`, every release."""
    specs = sorted((s for s in registry.messages().values() if s.type == kind),
                   key=lambda s: (registry.api_key(s) if registry.api_key(s) is not None else 1 << 16, s.name))
    return {s.api: {r: served(s, r) for r in RELEASES} for s in specs}


def matrix_rows(kind: str = "request") -> list[dict]:
    """`matrix` as printable rows: api, api key, then one "min-max" (or "-") column per release."""
    rows = []
    for api, cols in matrix(kind).items():
        spec = registry.get(api + ("Request" if kind == "request" else "Response"))
        row = {"api": api, "api_key": registry.api_key(spec)}
        row.update({r: "-" if rng is None else f"{rng[0]}-{rng[1]}" for r, rng in cols.items()})
        rows.append(row)
    return rows
