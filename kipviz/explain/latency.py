"""How long the broker took to answer, per API, from the capture's timestamps (request's first
packet to response's last): count, p50 and p99 in milliseconds, and a chart (kipviz.draw.latency)."""
from __future__ import annotations

import html
import statistics

from ..draw.latency import latency_svg


def _p(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


class Latency:
    """The `latency` part: rows {"api", "count", "p50", "p99", "max"} (ms), slowest p99 first."""

    def __init__(self, exchanges):
        by: dict[str, list[float]] = {}
        for ex in exchanges:
            if ex.get("latency_ms") is not None and ex.get("api"):
                by.setdefault(ex["api"], []).append(ex["latency_ms"])
        self.rows = sorted(({"api": api, "count": len(v), "p50": _p(v, 50), "p99": _p(v, 99), "max": max(v)}
                            for api, v in by.items()), key=lambda r: -r["p99"])
        self.svg = latency_svg(self.rows)

    def lines(self) -> list[str]:
        """One text line per API."""
        return [f"{r['api']:<28} {r['count']:>6}  p50 {r['p50']:9.1f} ms  p99 {r['p99']:9.1f} ms" for r in self.rows]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        return f"<div class='kv-latency'><h3>Latency</h3>{self.svg}</div>" if self.rows else \
            f"<div class='kv-latency'><h3>Latency</h3><p>{html.escape('no answered request')}</p></div>"
