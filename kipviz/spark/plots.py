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

W, LEFT, RIGHT, TOP, PLOT_H = 640, 64, 16, 36, 200
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
        """The chart as SVG text."""
        return str(self)


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _frame(df, limit: int = 2000):
    if df is None:
        return None
    if hasattr(df, "toPandas"):
        return df.limit(limit).toPandas()
    return df.head(limit)


CHAR_W = 6.6           # px per character at font-size 11 (sans-serif; a little wide, so text fits)
LINE_H = 14


def _step(v: float, integer: bool) -> float:
    """A tick step of 1, 2 or 5 times a power of ten, giving at most 5 intervals up to v; at least
    1 for counts (ticks 0, 1, 2 ..., never 2.5)."""
    import math
    if v <= 0:
        return 1.0
    raw = v / 5
    e = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * e:
            st = m * e
            break
    if integer:
        st = max(1, round(st))
    return st


def _ticks(vmax: float, integer: bool = True) -> tuple[float, list]:
    """(axis maximum, tick values) for data up to vmax."""
    import math
    st = _step(vmax, integer)
    n = max(1, math.ceil(vmax / st - 1e-9)) if vmax > 0 else 1
    return st * n, [st * i for i in range(n + 1)]


def _nice_max(v: float) -> float:
    return _ticks(v, integer=False)[0]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.3g}"


def _text_w(s) -> float:
    """An upper bound of the width of s at font-size 11 (capitals and digits are wider)."""
    return sum(8.2 if c.isupper() or c in "MWmw@%" else CHAR_W for c in str(s))


def _legend_rows(names: list[str]) -> list[list[tuple[float, str]]]:
    """Legend entries placed left to right, wrapping to a new row before the right edge."""
    rows, row, x = [], [], LEFT
    for n in names:
        w = 24 + _text_w(n)
        if row and x + w > W - RIGHT:
            rows.append(row)
            row, x = [], LEFT
        row.append((x, n))
        x += w
    if row:
        rows.append(row)
    return rows


def _label_lines(labels: list, width: float) -> tuple[list[list[str]], bool]:
    """Each x label as lines that fit `width` px: whole, or broken after '-', '/', '_' or ' ' into
    up to 3 lines; (lines, rotate) -- rotate when even that does not fit (the text is then drawn
    at -40 degrees, whole)."""
    import re
    cap = max(1, int(width // CHAR_W))
    out = []
    for lab in labels:
        s = str(lab)
        if _text_w(s) <= width:
            out.append([s])
            continue
        parts = re.findall(r"[^-/_ ]+[-/_ ]?", s)
        lines, cur = [], ""
        for part in parts:
            if cur and len(cur) + len(part) > cap:
                lines.append(cur)
                cur = part
            else:
                cur += part
        lines.append(cur)
        if len(lines) > 3 or any(len(x) > cap for x in lines):
            return [[str(x)] for x in labels], True
        out.append(lines)
    return out, False


class _Canvas:
    """One chart's layout: the plot area, then x labels, the x axis title and the legend below it;
    the height grows with what is below the plot, so nothing is cut at an edge."""

    def __init__(self, title: str, ymax: float, yticks: list, ylabel: str, xlabel: str = "", *,
                 label_h: float = LINE_H, legend: list | None = None):
        self.legend = _legend_rows(legend or [])
        self.x0, self.y0, self.y1 = LEFT, TOP + PLOT_H, TOP
        self.xlabel_y = self.y0 + 8 + label_h + (LINE_H if xlabel else 0)
        self.height = int(self.xlabel_y + 8 + LINE_H * len(self.legend) + 4)
        self.ymax = ymax
        h = self.height
        self.out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" '
                    f'font-family="sans-serif" font-size="11">',
                    f'<rect width="{W}" height="{h}" fill="white"/>',
                    f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13" font-weight="600">'
                    f'{_e(title)}</text>',
                    f'<line x1="{self.x0}" y1="{self.y0}" x2="{W - RIGHT}" y2="{self.y0}" stroke="#333"/>',
                    f'<line x1="{self.x0}" y1="{self.y0}" x2="{self.x0}" y2="{self.y1}" stroke="#333"/>']
        for v in yticks:
            y = self.py(v)
            self.out.append(f'<line x1="{self.x0 - 4}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#eee"/>')
            self.out.append(f'<text x="{self.x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
        mid = (self.y0 + self.y1) / 2
        self.out.append(f'<text x="14" y="{mid}" text-anchor="middle" transform="rotate(-90 14 {mid})">'
                        f'{_e(ylabel)}</text>')
        if xlabel:
            self.out.append(f'<text x="{(self.x0 + W - RIGHT) / 2}" y="{self.xlabel_y}" text-anchor="middle">'
                            f'{_e(xlabel)}</text>')

    def py(self, v) -> float:
        return self.y0 - (self.y0 - self.y1) * (v or 0) / self.ymax

    def draw_legend(self, colors: dict) -> None:
        for i, row in enumerate(self.legend):
            y = self.xlabel_y + 8 + LINE_H * i
            for x, n in row:
                self.out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="10" height="10" fill="{colors[n]}"/>')
                self.out.append(f'<text x="{x + 14:.1f}" y="{y + 9:.1f}">{_e(n)}</text>')

    def chart(self) -> "Chart":
        return Chart("\n".join(self.out + ["</svg>"]))


def _empty(title: str, why: str) -> Chart:
    return Chart(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="60" font-family="sans-serif" '
                 f'font-size="12"><text x="8" y="20" font-weight="600">{_e(title)}</text>'
                 f'<text x="8" y="42" fill="#666">{_e(why)}</text></svg>')


def _x_label(lab, lines: list[str], cx: float, y0: float, rotate: bool) -> str:
    """One group's label under the x axis: turned 40 degrees, or its wrapped lines centred."""
    if rotate:
        return (f'<text x="{cx:.1f}" y="{y0 + 12}" text-anchor="end" '
                f'transform="rotate(-40 {cx:.1f} {y0 + 12})">{_e(lab)}</text>')
    spans = "".join(f'<tspan x="{cx:.1f}" dy="{0 if k == 0 else LINE_H}">{_e(t)}</tspan>'
                    for k, t in enumerate(lines))
    return f'<text x="{cx:.1f}" y="{y0 + 14}" text-anchor="middle">{spans}</text>'


def bar_chart(labels: list, series: dict, *, title: str, ylabel: str, colors: dict | None = None,
              empty: str = "nothing to draw", xlabel: str = "", integer: bool = True) -> Chart:
    """Grouped bars: one group per label, one bar per series (name -> values). Counts (integer)
    get integer ticks; x labels wrap, or turn, rather than being cut."""
    if not labels:
        return _empty(title, empty)
    names = list(series)
    colors = {n: (colors or {}).get(n) or COLORS.get(n) or PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    ymax, yticks = _ticks(max((v or 0) for vs in series.values() for v in vs) if series else 0, integer)
    plot_w = W - LEFT - RIGHT
    gw = plot_w / len(labels)
    show = len(labels) <= 40
    lines, rotate = _label_lines(labels, gw - 2) if show else ([], False)
    label_h = (max(_text_w(x[0]) for x in lines) * 0.65 + LINE_H if rotate
               else LINE_H * max((len(x) for x in lines), default=1))
    legend = names if len(names) > 1 or names[0] not in ("value", "records") else []
    cv = _Canvas(title, ymax, yticks, ylabel, xlabel, label_h=label_h, legend=legend)
    out, y0 = cv.out, cv.y0
    bw = max(1.0, gw * 0.8 / max(1, len(names)))
    for i, lab in enumerate(labels):
        for j, n in enumerate(names):
            v = series[n][i] or 0
            h = (y0 - TOP) * v / ymax
            x = LEFT + i * gw + gw * 0.1 + j * bw
            out.append(f'<rect x="{x:.1f}" y="{y0 - h:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="{colors[n]}">'
                       f'<title>{_e(lab)} {_e(n)}: {v:,}</title></rect>')
        if show:
            out.append(_x_label(lab, lines[i], LEFT + i * gw + gw / 2, y0, rotate))
    cv.draw_legend(colors)
    return cv.chart()


def step_chart(xs: list, series: dict, *, title: str, ylabel: str, xlabel: str, empty: str = "nothing to draw",
               integer: bool = True) -> Chart:
    """Step lines (a gauge's value holds until the next change), with ticks along x."""
    if not xs:
        return _empty(title, empty)
    names = list(series)
    ymax, yticks = _ticks(max((v or 0) for vs in series.values() for v in vs), integer)
    xmin = min(0, min(xs))
    xmax, xticks = _ticks(max(xs) - xmin, integer=False)
    xmax += xmin
    span = (xmax - xmin) or 1
    cv = _Canvas(title, ymax, yticks, ylabel, xlabel, legend=names)
    out, y0, py = cv.out, cv.y0, cv.py

    def px(x):
        return LEFT + (W - LEFT - RIGHT) * (x - xmin) / span
    colors = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    for t in xticks:
        x = px(t + xmin)
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{y0 + 15}" text-anchor="middle">{_fmt(t + xmin)}</text>')
    for n in names:
        pts, prev = [], None
        for x, v in zip(xs, series[n], strict=True):
            if prev is not None:
                pts.append(f"{px(x):.1f},{py(prev):.1f}")
            pts.append(f"{px(x):.1f},{py(v):.1f}")
            prev = v
        if len(xs) == 1:
            pts.append(f"{px(xmax):.1f},{py(prev):.1f}")
        out.append(f'<polyline fill="none" stroke="{colors[n]}" stroke-width="2" points="{" ".join(pts)}"/>')
    cv.draw_legend(colors)
    return cv.chart()


def _bins(vals: list, bins: int) -> tuple[float, float, int]:
    """(low, width, count) of equal bins over vals; integer data gets integer widths (a bin per
    value when there are few), and a long tail goes into the last bin (from the 98th percentile)."""
    import math
    vals = sorted(vals)
    lo = vals[0]
    hi = vals[min(len(vals) - 1, int(len(vals) * 0.98))] if len(vals) > 50 else vals[-1]
    if hi <= lo:
        hi = vals[-1] if vals[-1] > lo else lo + 1
    integer = all(float(v).is_integer() for v in vals)
    width = (hi - lo) / bins
    if integer:
        width = max(1, math.ceil(width))
        lo = math.floor(lo)
    else:
        width = _step(hi - lo, False) / 2 if width <= 0 else width
    n = max(1, min(bins, math.ceil((hi - lo) / width + (1 if integer else 0))))
    return lo, width, n


def histogram(values: list, *, title: str, xlabel: str, bins: int = 20, empty: str = "nothing to draw",
              groups: list | None = None, ylabel: str = "records") -> Chart:
    """Counts of values in equal bins (labelled by their lower edge; the last holds the tail);
    groups: a name per value, one bar per group in each bin."""
    pairs = [(v, g) for v, g in zip(values, groups or ["records"] * len(values), strict=True) if v is not None]
    if not pairs:
        return _empty(title, empty)
    lo, width, n = _bins([v for v, _ in pairs], bins)
    names = list(dict.fromkeys(g for _, g in pairs))
    counts = {g: [0] * n for g in names}
    for v, g in pairs:
        counts[g][max(0, min(n - 1, int((v - lo) // width)))] += 1
    labels = [_fmt(lo + i * width) + ("+" if i == n - 1 and n > 1 and lo + n * width <= max(v for v, _ in pairs)
                                     else "") for i in range(n)]
    return bar_chart(labels, counts, title=title, ylabel=ylabel, xlabel=f"{xlabel} (bins from each label)")


def run_start(source) -> int | None:
    """The virtual clock's start of a run (ms): its first topic's creation, from the manifest of a
    Source or Logs (None when the manifest has no topics)."""
    src = getattr(source, "source", source)
    topics = (getattr(src, "manifest", None) or {}).get("topics") or []
    times = [t.get("created_ms") for t in topics if t.get("created_ms") is not None]
    return min(times) if times else None


# ---- one per analysis ----------------------------------------------------------------------------------
def plot_lag(df, limit: int = 60) -> Chart:
    """Consumer lag per group and partition, at most `limit` bars."""
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
    if not any(v for vs in series.values() for v in vs):
        return _empty(title, f"lag 0 on all {len(rows)} partition(s): the group has committed everything it "
                             f"read, and no offset belongs to a deleted topic")
    return bar_chart(labels, series, title=title, ylabel="lag (ok) / stale offset (flagged)")


def plot_transactions(df, limit: int = 100_000) -> Chart:
    """Transaction durations by outcome."""
    p = _frame(df, limit)
    title = "Transaction durations by outcome"
    if p is None or p.empty:
        return _empty(title, "no transactions in this run")

    def kind(o, to):
        return "timed out" if to else o if o in ("commit", "abort") else "open"
    ks = [kind(o, to) for o, to in zip(p["outcome"], p["timed_out"], strict=True)]
    dur = [None if d is None or d != d else int(d) for d in p["duration_ms"]]
    return histogram(dur, groups=ks, title=title, xlabel="duration (ms, begin to end marker)",
                     ylabel="transactions", empty="no transaction has both a start and an end")


def plot_tx_pending(df, limit: int = 5000, start_ms: int | None = None) -> Chart:
    """TxnPendingRecordsCount over time, in seconds from start_ms (the run's start, run_start(logs);
    default the first change)."""
    p = _frame(df, limit)
    title = "KIP-1289 (proposed): TxnPendingRecordsCount over time"
    if p is None or p.empty:
        return _empty(title, "no record went TX_PENDING in this run")
    t = [int(x) for x in p["time_ms"]]
    t0 = min(t) if start_ms is None else start_ms
    xs = [(x - t0) / 1000 for x in t]
    pending = [int(v) for v in p["TxnPendingRecordsCount"]]
    expired = [int(v) for v in p["TxnPendingLockExpiredCount"]]
    ylabel = "records"
    if len(xs) > WINDOWS:        # a gauge that changes hundreds of times: its mean per window, as a metrics
        xs, pending, expired = _windows(xs, pending, expired)      # system samples it, instead of a solid block
        ylabel = "records (mean per window)"
    return step_chart(xs, {"TxnPendingRecordsCount": pending, "TxnPendingLockExpiredCount": expired},
                      title=title, ylabel=ylabel, integer=len(xs) == len(t),
                      xlabel="seconds from the run's start (virtual clock)" if start_ms is not None
                      else "seconds from the first change (virtual clock)")


WINDOWS = 80


def _windows(xs: list, gauge: list, counter: list) -> tuple[list, list, list]:
    """WINDOWS equal time windows over xs: the gauge's time-weighted mean in each (it holds its value
    until the next change) and the counter's last value."""
    lo, hi = xs[0], xs[-1]
    width = (hi - lo) / WINDOWS or 1
    area = [0.0] * WINDOWS
    last = [0] * WINDOWS
    for i, x in enumerate(xs):
        end = xs[i + 1] if i + 1 < len(xs) else hi
        a = x
        while a < end:
            w = min(WINDOWS - 1, int((a - lo) / width))
            b = min(end, lo + (w + 1) * width)
            area[w] += gauge[i] * (b - a)
            a = b if b > a else end
        last[min(WINDOWS - 1, int((x - lo) / width))] = counter[i]
    for w in range(1, WINDOWS):
        last[w] = max(last[w], last[w - 1])
    return ([lo + w * width for w in range(WINDOWS)], [round(v / width, 2) for v in area], last)


def plot_residency(df, limit: int = 100_000) -> Chart:
    """How long records stayed TX_PENDING (KIP-1289, proposed)."""
    p = _frame(df, limit)
    title = "KIP-1289 (proposed): TX_PENDING residency"
    if p is None or p.empty:
        return _empty(title, "no record left TX_PENDING in this run")
    return histogram([None if v != v else v for v in p["residency_ms"]], title=title,
                     xlabel="time in TX_PENDING (ms)")


def plot_kip1319(df, limit: int = 500) -> Chart:
    """TxnOffsetCommit answers by version, before and after KIP-1319."""
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
    """The exactly-once verification's violations by kind."""
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
    """Each share partition's start offset (SPSO) after each persisted state record."""
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
