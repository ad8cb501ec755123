"""A Spark (or pandas) DataFrame as an HTML table for a notebook, instead of `.show()`'s ASCII,
which wraps into an unreadable grid in a narrow JupyterLab pane.

    ks.table(df)                     # the first 20 rows, every value whole; JupyterLab draws it (and the static export)
    ks.table(df, 5, truncate=60)     # bytes and long text cut to 60 characters, with an ellipsis

Only `n` rows come to the driver (df.limit(n + 1): one more says whether there are more)."""
from __future__ import annotations

import html
import re

__all__ = ["Table", "table"]

# !important: JupyterLab right-aligns output table cells with a more specific rule (see scenarios/report)
# words wrap at spaces (and after hyphens) only: "partitio|ns" or "ILLEGAL_GENERATIO|N" split over two lines
# reads as two words; a table wider than the output area scrolls sideways (.kv-wrap) instead
STYLE = ("<style>.kv-table{border-collapse:collapse;font-size:12px;margin:4px 0}"
         ".kv-table th,.kv-table td{border:1px solid #ddd;padding:2px 6px;text-align:left!important;vertical-align:top;"
         "max-width:28em;overflow-wrap:normal;word-break:normal}.kv-table td.kv-nw{white-space:nowrap}"
         ".kv-table th{background:#f4f4f4}.kv-table caption{caption-side:bottom;text-align:left;color:#666;"
         "font-size:11px}.kv-wrap{max-width:100%;overflow-x:auto}</style>")


def _cell(v, truncate: int) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return '<span style="color:#999">null</span>'
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        try:
            s = b.decode("utf-8")
            s = s if s.isprintable() else b.hex(" ")
        except UnicodeDecodeError:
            s = b.hex(" ")
    elif isinstance(v, float):
        s = f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    elif isinstance(v, (list, tuple)) or type(v).__name__ in ("Row", "ndarray"):
        s = str(list(v))
    else:
        s = str(v)
    if truncate and len(s) > truncate:
        s = s[:truncate - 1] + "…"
    # a long value without spaces (JSON, a list) may wrap after its commas, never inside a word
    return "<wbr>".join(html.escape(p) for p in _AFTER_COMMA.split(s)) if len(s) > 30 else html.escape(s)


_AFTER_COMMA = re.compile(r"(?<=,)(?! )")
_NOWRAP = ' class="kv-nw"'


def _whole(v) -> bool:
    """A value never split over lines: a number or a point in time ("2026-01-01 00:00:00")."""
    import datetime
    return isinstance(v, (int, float, datetime.date, datetime.datetime)) and not isinstance(v, bool)


class Table:
    """The rows of a DataFrame as HTML (_repr_html_) and as text (print)."""

    def __init__(self, columns: list[str], rows: list[list], more: bool, truncate: int):
        self.columns, self.rows, self.more, self.truncate = columns, rows, more, truncate

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td{_NOWRAP if _whole(v) else ''}>{_cell(v, self.truncate)}</td>"
                                        for v in r) + "</tr>" for r in self.rows)
        n = len(self.rows)
        cap = f"first {n} rows" if self.more else f"{n} row{'s' if n != 1 else ''}"
        return (f'{STYLE}<div class="kv-wrap"><table class="kv-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody><caption>{cap}</caption></table></div>")

    def __repr__(self) -> str:
        import pandas as pd
        return pd.DataFrame(self.rows, columns=self.columns).to_string(index=False) + \
            ("\n..." if self.more else "")


def table(df, n: int = 20, *, truncate: int = 0) -> Table:
    """The first n rows of df (a Spark or pandas DataFrame) as a Table."""
    if hasattr(df, "toPandas"):
        got = df.limit(n + 1).collect()
        columns = list(df.columns)
        rows = [list(r) for r in got]
    else:
        columns = [str(c) for c in df.columns]
        rows = df.head(n + 1).values.tolist()
    return Table(columns, rows[:n], len(rows) > n, truncate)
