"""Every analysis of one run at once: what `kipviz analyze` prints and writes as HTML.

    rep = analyze(src)            # a Source (read_samples / read_kafka / from_trace)
    print(rep.summary())
    rep.save("report.html")       # the summary, each analysis's table head and its plot"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from . import analyses, plots
from .logs import decode_all

__all__ = ["Report", "analyze"]

# analysis -> plot helper (None: shown as a table only)
PLOTS = {"committed_offsets": plots.plot_lag, "transactions": plots.plot_transactions,
         "transaction_summary": None, "tx_pending": plots.plot_residency, "tx_pending_series": plots.plot_tx_pending,
         "kip1289_metrics": None, "kip1319_errors": plots.plot_kip1319, "share_state": plots.plot_share_state}
HEAD = 20


@dataclass
class Report:
    origin: str
    manifest: dict
    frames: dict = field(default_factory=dict)     # analysis -> pandas head (HEAD rows)
    counts: dict = field(default_factory=dict)     # analysis -> rows
    charts: dict = field(default_factory=dict)     # analysis -> plots.Chart
    errors: object = None                          # pandas: the errors table
    facts: dict = field(default_factory=dict)

    def summary(self) -> str:
        m = self.manifest
        lines = [f"kipviz analyze: {self.origin} ({m.get('scenario') or 'live topics'}, "
                 f"{m.get('workload') or '-'}, seed {m.get('seed')})"]
        for k, v in self.facts.items():
            lines.append(f"  {k}: {v}")
        for name in analyses.ANALYSES:
            lines.append(f"  {name}: {self.counts.get(name, 0)} row(s)")
        n = 0 if self.errors is None else len(self.errors)
        lines.append(f"  errors: {n} record(s) or column(s) that did not read or decode")
        if n:
            for kind, c in self.errors.groupby("error_kind").size().items():
                lines.append(f"    {kind}: {c}")
        return "\n".join(lines)

    def to_html(self) -> str:
        parts = [f"<!doctype html><meta charset='utf-8'><title>kipviz analyze {html.escape(self.origin)}</title>",
                 "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}"
                 "td,th{border:1px solid #ccc;padding:2px 6px}</style>",
                 f"<h1>kipviz analyze</h1><pre>{html.escape(self.summary())}</pre>"]
        for name in analyses.ANALYSES:
            parts.append(f"<h2>{name}</h2><p>{self.counts.get(name, 0)} row(s); the first {HEAD}:</p>")
            if name in self.charts:
                parts.append(str(self.charts[name]))
            f = self.frames.get(name)
            if f is not None:
                parts.append(f.to_html(index=False, max_cols=14))
        if self.errors is not None and len(self.errors):
            parts.append("<h2>errors</h2>" + self.errors.head(200).to_html(index=False))
        return "\n".join(parts) + "\n"

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_html())


def analyze(src, *, plot: bool = True) -> Report:
    """Decode the run once and run every analysis (kipviz.spark.analyses.ANALYSES) over it."""
    logs = decode_all(src)
    rep = Report(src.origin, dict(src.manifest))
    try:
        frames = analyses.frames(logs)
        txns = frames["transactions"]
        for name, df in frames.items():
            rep.counts[name] = df.count()
            rep.frames[name] = df.limit(HEAD).toPandas()
            fn = PLOTS.get(name)
            if plot and fn is not None:
                rep.charts[name] = fn(df)
        t = rep.frames["transaction_summary"]
        outcomes = txns.groupBy("outcome").count().collect()
        rep.facts["transaction outcomes"] = ", ".join(f"{r['outcome']} {r['count']}" for r in sorted(outcomes)) or "none"
        if len(t):
            rep.facts["timed out"] = int(txns.filter("timed_out").count())
        rep.errors = logs.errors.toPandas()
    finally:
        logs.unpersist()
    return rep
