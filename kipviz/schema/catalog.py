"""What the kit covers: one row per message version, with its status label (released/accepted/proposed)."""
from __future__ import annotations

from . import registry


def catalog(kind: str | None = None) -> list[dict]:
    """Rows of {message, api, api_key, type, version, flexible, status, since, kip, label, change}."""
    rows = []
    for name, spec in sorted(registry.messages().items()):
        if kind and spec.type != kind:
            continue
        for v in spec.versions:
            st = spec.status(v)
            rows.append({
                "message": name, "api": spec.api, "api_key": registry.api_key(spec), "type": spec.type,
                "version": v, "flexible": spec.is_flexible(v), "status": st.status if st else None,
                "since": st.since if st else None, "removed": st.removed if st else None,
                "kip": st.kip if st else None, "label": spec.status_label(v),
                "change": st.change if st else ""})
    return rows


def summary() -> list[dict]:
    """One row per RPC: versions and how many of them are released / accepted / proposed."""
    out: dict[str, dict] = {}
    for r in catalog("request"):
        row = out.setdefault(r["api"], {"api": r["api"], "api_key": r["api_key"], "versions": [],
                                        "released": 0, "accepted": 0, "proposed": 0})
        row["versions"].append(r["version"])
        row[r["status"]] += 1
    for row in out.values():
        vs = row.pop("versions")
        row["versions"] = f"{min(vs)}-{max(vs)}" if len(vs) > 1 else str(vs[0])
    return sorted(out.values(), key=lambda r: r["api_key"])
