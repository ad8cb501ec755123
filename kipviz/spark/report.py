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
    """What `kipviz analyze` found: each analysis' first rows and row count, and the run's facts."""
    origin: str
    manifest: dict
    frames: dict = field(default_factory=dict)     # analysis -> pandas head (HEAD rows)
    counts: dict = field(default_factory=dict)     # analysis -> rows
    charts: dict = field(default_factory=dict)     # analysis -> plots.Chart
    errors: object = None                          # pandas: the errors table
    facts: dict = field(default_factory=dict)
    findings: dict = field(default_factory=dict)   # analysis -> one line of what it found (its key numbers)

    def summary(self) -> str:
        """The report in words."""
        m = self.manifest
        lines = [f"kipviz analyze: {self.origin} ({m.get('scenario') or 'live topics'}, "
                 f"{m.get('workload') or '-'}, seed {m.get('seed')})"]
        for k, v in self.facts.items():
            lines.append(f"  {k}: {v}")
        for name in analyses.ANALYSES:
            found = self.findings.get(name)
            lines.append(f"  {name}: {self.counts.get(name, 0)} row(s)" + (f"; {found}" if found else ""))
        n = 0 if self.errors is None else len(self.errors)
        lines.append(f"  errors: {n} record(s) or column(s) that did not read or decode")
        if n:
            for kind, c in self.errors.groupby("error_kind").size().items():
                lines.append(f"    {kind}: {c}")
        return "\n".join(lines)

    def to_html(self) -> str:
        """The report as a standalone HTML page."""
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
        """Write the HTML page to `path`."""
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
        for name, df in frames.items():
            if rep.counts[name]:
                rep.findings[name] = finding(name, df)
        t = rep.frames["transaction_summary"]
        outcomes = txns.groupBy("outcome").count().collect()
        rep.facts["transaction outcomes"] = ", ".join(f"{r['outcome']} {r['count']}" for r in sorted(outcomes)) or "none"
        if len(t):
            rep.facts["timed out"] = int(txns.filter("timed_out").count())
        rep.errors = logs.errors.toPandas()
    finally:
        logs.unpersist()
    return rep


def _ms(v) -> str:
    return "-" if v is None else f"{v:,.0f} ms"


def finding(name: str, df) -> str:
    """The key numbers of one analysis's (non-empty) frame, as one line: what `kipviz analyze`
    prints next to its row count ("" for an analysis without one)."""
    summarise = _FINDINGS.get(name)
    return summarise(df) if summarise else ""


def _finding_committed_offsets(df) -> str:
    from pyspark.sql import functions as F
    by = {r["status"]: (r["n"], r["lag"]) for r in df.groupBy("status").agg(
        F.count("*").alias("n"), F.sum("lag").alias("lag")).collect()}
    ok = by.get("ok", (0, 0))
    flagged = ", ".join(f"{s} {n}" for s, (n, _) in sorted(by.items()) if s != "ok")
    return f"total lag {ok[1] or 0:,} over {ok[0]} ok partition(s)" + (f"; KIP-516 flagged: {flagged}"
                                                                        if flagged else "")


def _finding_transactions(df) -> str:
    from pyspark.sql import functions as F
    parts = []
    for r in df.groupBy("outcome").agg(F.count("*").alias("n"),
                                       F.percentile_approx("duration_ms", 0.5).alias("p50"),
                                       F.percentile_approx("duration_ms", 0.99).alias("p99"),
                                       F.max("duration_ms").alias("max"),
                                       F.sum(F.col("timed_out").cast("int")).alias("to")).orderBy("outcome").collect():
        parts.append(f"{r['outcome'] or 'open'} {r['n']} (duration p50 {_ms(r['p50'])}, p99 {_ms(r['p99'])}, "
                     f"max {_ms(r['max'])}" + (f", {r['to']} timed out" if r["to"] else "") + ")")
    return "; ".join(parts)


def _finding_transaction_summary(df) -> str:
    from pyspark.sql import functions as F
    r = df.agg(F.count("*").alias("ids"), F.sum("commits").alias("c"), F.sum("aborts").alias("a"),
               F.sum("timeouts").alias("t")).first()
    total = (r["c"] or 0) + (r["a"] or 0)
    rate = f"{100 * (r['a'] or 0) / total:.1f} %" if total else "-"
    return f"{r['ids']} transactional id(s), abort rate {rate}, {r['t'] or 0} timeout(s)"


def _finding_tx_pending(df) -> str:
    from pyspark.sql import functions as F
    r = df.agg(F.percentile_approx("residency_ms", 0.5).alias("p50"),
               F.percentile_approx("residency_ms", 0.99).alias("p99"), F.max("residency_ms").alias("max")).first()
    exits = ", ".join(f"{x['exit_state']} {x['n']}" for x in df.groupBy("exit_state").agg(
        F.count("*").alias("n")).orderBy(F.desc("n")).collect())
    return f"residency p50 {_ms(r['p50'])}, p99 {_ms(r['p99'])}, max {_ms(r['max'])}; left to {exits}"


def _finding_tx_pending_series(df) -> str:
    from pyspark.sql import functions as F
    r = df.agg(F.max("TxnPendingRecordsCount").alias("m"), F.max("TxnPendingLockExpiredCount").alias("e"),
               F.min("time_ms").alias("t0"), F.max("time_ms").alias("t1")).first()
    span = ((r["t1"] or 0) - (r["t0"] or 0)) / 1000
    return (f"TxnPendingRecordsCount up to {r['m']}, TxnPendingLockExpiredCount up to {r['e']}, "
            f"over {span:,.1f} s")


def _finding_kip1289_metrics(df) -> str:
    row = df.first().asDict()
    return ", ".join(f"{k} {v}" for k, v in row.items() if k.startswith("TxnPending"))


def _finding_kip1319_errors(df) -> str:
    from pyspark.sql import functions as F
    rows = df.filter((F.col("answers") > 0) & (F.col("error") != "NONE")).orderBy("version", "error").collect()
    return "; ".join(f"v{r['version']} {r['error']} {r['answers']}" for r in rows) or "no error answers"


def _finding_share_state(df) -> str:
    from pyspark.sql import functions as F
    rows = df.groupBy("group", "topic", "partition").agg(F.max("start_offset").alias("spso")) \
        .orderBy("group", "topic", "partition").collect()
    return "last start offset (SPSO): " + ", ".join(f"{r['topic']}-{r['partition']} {r['spso']}" for r in rows)


_FINDINGS = {
    "committed_offsets": _finding_committed_offsets,
    "transactions": _finding_transactions,
    "transaction_summary": _finding_transaction_summary,
    "tx_pending": _finding_tx_pending,
    "tx_pending_series": _finding_tx_pending_series,
    "kip1289_metrics": _finding_kip1289_metrics,
    "kip1319_errors": _finding_kip1319_errors,
    "share_state": _finding_share_state,
}
