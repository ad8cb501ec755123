"""Plots of the analyses for notebooks and the HTML report: small, self-contained SVG (no
plotting library), shown inline by Jupyter.

    plot_lag(committed_offsets(logs))          bars: lag per group/partition, coloured by KIP-516 status
    plot_transactions(transactions(logs))      bars: duration per transaction, by outcome
    plot_tx_pending(tx_pending_series(logs))   step line: TxnPendingRecordsCount over time
    plot_residency(tx_pending(logs))           histogram of TX_PENDING residency
    plot_kip1319(kip1319_errors(logs))         grouped bars: error answers per TxnOffsetCommit version
    plot_eos(verify_eos(...))                  bars: violations per kind

Each takes a Spark or pandas DataFrame (at most `limit` rows are drawn) and returns a Chart: a str
of SVG with _repr_svg_."""
from __future__ import annotations

import html

W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 300, 64, 16, 36, 64
COLORS = {"ok": "#2f7ed8", "commit": "#2f9e44", "abort": "#e8590c", "timed out": "#c92a2a", "deleted": "#868e96",
          "recreated": "#c92a2a", "before-recreation": "#c92a2a", "unknown-topic-id": "#ae3ec9", "unknown-topic": "#ae3ec9", "open": "#fab005",
          "violation": "#c92a2a", "window": "#fab005"}
PALETTE = ("#2f7ed8", "#e8590c", "#2f9e44", "#ae3ec9", "#fab005", "#15aabf", "#c92a2a")

__all__ = ["Chart", "bar_chart", "step_chart", "histogram", "plot_lag", "plot_transactions", "plot_tx_pending",
           "plot_residency", "plot_kip1319", "plot_eos", "plot_share_state"]


class Chart(str):
    """SVG text that Jupyter draws."""

    def _repr_svg_(self) -> str:
        return str(self)

    @property
    def svg(self) -> str:
        return str(self)


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _frame(df, limit: int = 2000):
    if df is None:
        return None
    if hasattr(df, "toPandas"):
        return df.limit(limit).toPandas()
    return df.head(limit)


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    import math
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def _axes(title: str, ymax: float, ylabel: str, xlabel: str = "") -> list[str]:
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13" font-weight="600">{_e(title)}</text>']
    x0, y0, y1 = LEFT, H - BOTTOM, TOP
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{W - RIGHT}" y2="{y0}" stroke="#333"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#333"/>')
    for i in range(5):
        v = ymax * i / 4
        y = y0 - (y0 - y1) * i / 4
        label = f"{v:,.0f}" if ymax >= 8 else f"{v:,.2g}"
        out.append(f'<line x1="{x0 - 4}" y1="{y}" x2="{W - RIGHT}" y2="{y}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4}" text-anchor="end">{label}</text>')
    out.append(f'<text x="14" y="{(y0 + y1) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(y0 + y1) / 2})">{_e(ylabel)}</text>')
    if xlabel:
        out.append(f'<text x="{(x0 + W - RIGHT) / 2}" y="{H - 6}" text-anchor="middle">{_e(xlabel)}</text>')
    return out


def _empty(title: str, why: str) -> Chart:
    return Chart(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="60" font-family="sans-serif" '
                 f'font-size="12"><text x="8" y="20" font-weight="600">{_e(title)}</text>'
                 f'<text x="8" y="42" fill="#666">{_e(why)}</text></svg>')


def _legend(out: list, names: list[str], colors: dict) -> None:
    x = LEFT
    for n in names:
        out.append(f'<rect x="{x}" y="{H - 22}" width="10" height="10" fill="{colors[n]}"/>')
        out.append(f'<text x="{x + 14}" y="{H - 13}">{_e(n)}</text>')
        x += 24 + 7 * len(str(n))


def bar_chart(labels: list, series: dict, *, title: str, ylabel: str, colors: dict | None = None,
              empty: str = "nothing to draw") -> Chart:
    """Grouped bars: one group per label, one bar per series (name -> values)."""
    if not labels:
        return _empty(title, empty)
    names = list(series)
    colors = {n: (colors or {}).get(n) or COLORS.get(n) or PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    ymax = _nice_max(max((v or 0) for vs in series.values() for v in vs) if series else 0)
    out = _axes(title, ymax, ylabel)
    plot_w = W - LEFT - RIGHT
    gw = plot_w / len(labels)
    bw = max(1.0, gw * 0.8 / max(1, len(names)))
    y0 = H - BOTTOM
    for i, lab in enumerate(labels):
        for j, n in enumerate(names):
            v = series[n][i] or 0
            h = (y0 - TOP) * v / ymax
            x = LEFT + i * gw + gw * 0.1 + j * bw
            out.append(f'<rect x="{x:.1f}" y="{y0 - h:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="{colors[n]}">'
                       f'<title>{_e(lab)} {_e(n)}: {v:,}</title></rect>')
        if len(labels) <= 24:
            cx = LEFT + i * gw + gw / 2
            out.append(f'<text x="{cx:.1f}" y="{y0 + 14}" text-anchor="middle">{_e(str(lab)[:14])}</text>')
    if len(names) > 1 or names[0] not in ("value",):
        _legend(out, names, colors)
    out.append("</svg>")
    return Chart("\n".join(out))


def step_chart(xs: list, series: dict, *, title: str, ylabel: str, xlabel: str, empty: str = "nothing to draw") -> Chart:
    """Step lines (a gauge's value holds until the next change)."""
    if not xs:
        return _empty(title, empty)
    names = list(series)
    ymax = _nice_max(max((v or 0) for vs in series.values() for v in vs))
    xmin, xmax = min(xs), max(xs)
    span = (xmax - xmin) or 1
    out = _axes(title, ymax, ylabel, xlabel)
    y0 = H - BOTTOM

    def px(x):
        return LEFT + (W - LEFT - RIGHT) * (x - xmin) / span

    def py(v):
        return y0 - (y0 - TOP) * (v or 0) / ymax
    colors = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    for n in names:
        pts, prev = [], None
        for x, v in zip(xs, series[n], strict=True):
            if prev is not None:
                pts.append(f"{px(x):.1f},{py(prev):.1f}")
            pts.append(f"{px(x):.1f},{py(v):.1f}")
            prev = v
        if len(xs) == 1:
            pts.append(f"{px(xmax) + 4:.1f},{py(prev):.1f}")
        out.append(f'<polyline fill="none" stroke="{colors[n]}" stroke-width="2" points="{" ".join(pts)}"/>')
    out.append(f'<text x="{LEFT}" y="{y0 + 14}">{xmin:,}</text>')
    out.append(f'<text x="{W - RIGHT}" y="{y0 + 14}" text-anchor="end">{xmax:,}</text>')
    _legend(out, names, colors)
    out.append("</svg>")
    return Chart("\n".join(out))


def histogram(values: list, *, title: str, xlabel: str, bins: int = 20, empty: str = "nothing to draw") -> Chart:
    vals = [v for v in values if v is not None]
    if not vals:
        return _empty(title, empty)
    lo, hi = min(vals), max(vals)
    width = (hi - lo) / bins if hi > lo else 1
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, int((v - lo) / width))] += 1
    labels = [f"{lo + i * width:,.0f}" for i in range(bins)]
    return bar_chart(labels, {"records": counts}, title=title, ylabel=f"records ({xlabel} bins)")


# ---- one per analysis ----------------------------------------------------------------------------------
def plot_lag(df, limit: int = 60) -> Chart:
    p = _frame(df, limit)
    title = "Consumer lag per group and partition (KIP-516 status)"
    if p is None or p.empty:
        return _empty(title, "no committed offsets in this run")
    labels = [f"{g}/{t}-{q}" for g, t, q in zip(p["group"], p["topic"], p["partition"], strict=True)]
    statuses = list(dict.fromkeys(p["status"]))

    def height(row, s):
        if row["status"] != s:
            return 0
        v = row["lag"] if s == "ok" else row["committed_offset"]     # flagged: no lag, show the stale offset
        return 0 if v is None or v != v else int(v)
    rows = p.to_dict("records")
    series = {s: [height(r, s) for r in rows] for s in statuses}
    return bar_chart(labels, series, title=title, ylabel="lag (ok) / stale offset (flagged)")


def plot_transactions(df, limit: int = 200) -> Chart:
    p = _frame(df, limit)
    title = "Transaction durations (ms) by outcome"
    if p is None or p.empty:
        return _empty(title, "no transactions in this run")
    labels = [f"{t}#{n}" for t, n in zip(p["transactional_id"], p["txn"], strict=True)]
    kinds = ["commit", "abort", "timed out", "open"]

    def kind(o, to):
        return "timed out" if to else o if o in ("commit", "abort") else "open"
    ks = [kind(o, to) for o, to in zip(p["outcome"], p["timed_out"], strict=True)]
    dur = [0 if d != d or d is None else int(d) for d in p["duration_ms"]]
    series = {k: [d if kk == k else 0 for d, kk in zip(dur, ks, strict=True)] for k in kinds if k in ks}
    return bar_chart(labels, series, title=title, ylabel="duration (ms)")


def plot_tx_pending(df, limit: int = 5000) -> Chart:
    p = _frame(df, limit)
    title = "KIP-1289 (proposed): TxnPendingRecordsCount over time"
    if p is None or p.empty:
        return _empty(title, "no record went TX_PENDING in this run")
    return step_chart([int(x) for x in p["time_ms"]],
                      {"TxnPendingRecordsCount": [int(v) for v in p["TxnPendingRecordsCount"]],
                       "TxnPendingLockExpiredCount": [int(v) for v in p["TxnPendingLockExpiredCount"]]},
                      title=title, ylabel="records", xlabel="time (ms, virtual clock)")


def plot_residency(df, limit: int = 100_000) -> Chart:
    p = _frame(df, limit)
    title = "KIP-1289 (proposed): TX_PENDING residency"
    if p is None or p.empty:
        return _empty(title, "no record left TX_PENDING in this run")
    return histogram([None if v != v else v for v in p["residency_ms"]], title=title, xlabel="ms")


def plot_kip1319(df, limit: int = 500) -> Chart:
    p = _frame(df, limit)
    title = "TxnOffsetCommit answers by version: before / after KIP-1319 (released in Kafka 4.4)"
    if p is None or p.empty:
        return _empty(title, "no TxnOffsetCommit requests in this run")
    versions = sorted(set(int(v) for v in p["version"]))
    errors = list(dict.fromkeys(p["error"]))
    series = {e: [int(p[(p["version"] == v) & (p["error"] == e)]["answers"].sum()) for v in versions] for e in errors}
    return bar_chart([f"v{v}" + (" (KIP-1319)" if v >= 6 else "") for v in versions], series, title=title,
                     ylabel="responses")


def plot_eos(result) -> Chart:
    rows = result.rows if hasattr(result, "rows") else result
    title = "Exactly-once verification: violations by kind"
    if not rows:
        return _empty(title, "no violation: every input record acknowledged once, with its output visible once")
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    viol = [sum(1 for r in rows if r["kind"] == k and r["classification"] == "violation") for k in kinds]
    win = [sum(1 for r in rows if r["kind"] == k and r["classification"] != "violation") for k in kinds]
    series = {"violation": viol}
    if any(win):
        series["window"] = win
    return bar_chart(kinds, series, title=title, ylabel="input records")


def plot_share_state(df, limit: int = 500) -> Chart:
    p = _frame(df, limit)
    title = "Share-partition start offset (SPSO) after each persisted state record"
    if p is None or p.empty:
        return _empty(title, "no __share_group_state records in this run")
    p = p[p["start_offset"] >= 0]
    if p.empty:
        return _empty(title, "no start offset recorded")
    series = {}
    for (g, t, q), part in p.groupby(["group", "topic", "partition"], dropna=False, sort=True):
        series[f"{g}/{t}-{q}"] = list(part["start_offset"])
    n = max(len(v) for v in series.values())
    series = {k: v + [v[-1]] * (n - len(v)) for k, v in series.items()}
    return step_chart(list(range(n)), series, title=title, ylabel="SPSO", xlabel="persisted record #")
