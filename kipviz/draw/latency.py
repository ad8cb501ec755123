"""A latency chart: one row per API, a bar to its p99 with a tick at its p50 (milliseconds, log
scale so a 1 ms Metadata and a 500 ms Fetch fit one picture). Reads rows, decides nothing."""
from __future__ import annotations

import math
from html import escape

ROW, LEFT, WIDTH = 22, 190, 640


def latency_svg(rows: list[dict], *, title: str = "latency per API (p50 tick, p99 bar; ms, log scale)") -> str:
    """SVG of rows {"api", "count", "p50", "p99"} (milliseconds)."""
    top = max([r["p99"] for r in rows] + [1.0])
    span = math.log10(max(top, 1.0) * 10) + 1            # from 0.1 ms

    def x(ms: float) -> float:
        return LEFT + (WIDTH - LEFT - 80) * (math.log10(max(ms, 0.1)) + 1) / span

    h = 30 + ROW * len(rows) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" font-family="sans-serif" '
           f'font-size="12"><text x="4" y="16" font-weight="bold">{escape(title)}</text>']
    for i, r in enumerate(rows):
        y = 30 + ROW * i
        out.append(f'<text x="4" y="{y + 14}">{escape(r["api"])} ({r["count"]})</text>'
                   f'<rect x="{LEFT}" y="{y + 4}" width="{x(r["p99"]) - LEFT:.1f}" height="12" fill="#9ecae1"/>'
                   f'<line x1="{x(r["p50"]):.1f}" x2="{x(r["p50"]):.1f}" y1="{y + 2}" y2="{y + 18}" stroke="#08519c" '
                   f'stroke-width="2"/><text x="{x(r["p99"]) + 4:.1f}" y="{y + 14}">{r["p50"]:.1f} / '
                   f'{r["p99"]:.1f}</text>')
    out.append("</svg>")
    return "".join(out)
