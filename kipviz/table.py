"""Tables for the notebooks, with or without pandas: rows with named columns, shown as an HTML table
in Jupyter (and as aligned text by print). The browser kit has no pandas (no Pyodide wheel on PyPI),
so the notebooks make their tables with this, and the functions that hand back a pandas DataFrame
on the desktop (diff_table, capture.to_dataframe, ...) hand back one of these where pandas is missing.

    Table(rows)                                 a list of dicts (or named tuples): one column per key
    Table(rows, columns=["api", "version"])     only these columns, in this order
    Table({"v5": [...], "v6": [...]}, index=names)       columns given as lists
    Table({"broker 4.3": {"producer 4.4": 5, ...}})      columns given as dicts: their keys are the index
    Table(rows, index="metric")                 that column as the row labels
    t.rows, t.columns, t.column("api"), list(t) (dicts), len(t), t.to_pandas()

    frame(rows, columns=...)                    a pandas DataFrame where pandas is installed, else a Table
                                                (shown with every cell whole, as a Table is)"""
from __future__ import annotations

import functools
import html
from collections.abc import Mapping

__all__ = ["Table", "frame"]

# JupyterLab right-aligns output table cells with a more specific rule, hence !important (text reads
# left to right; numbers stay right-aligned, as pandas shows them)
_STYLE = ("<style>.kv-rows td.kv-t,.kv-rows th.kv-t{text-align:left!important}"
          ".kv-rows td,.kv-rows th{vertical-align:top}</style>")


def _keys(rows) -> list:
    seen: dict = {}
    for r in rows:
        for k in (r._fields if hasattr(r, "_fields") else r):
            seen.setdefault(k, None)
    return list(seen)


def _as_dict(r) -> Mapping:
    return r._asdict() if hasattr(r, "_asdict") else r


def _from_columns(data: Mapping, index):
    """Columns given as lists, or as dicts keyed by row label (their keys, in order, are the index)."""
    cols, values = list(data), list(data.values())
    if values and all(isinstance(v, Mapping) for v in values):
        labels = index if isinstance(index, list) else _keys(values)
        return cols, [[v.get(label) for v in values] for label in labels], labels
    return cols, [list(r) for r in zip(*values, strict=True)], index


def _from_rows(data: list, columns):
    """Rows given as dicts or named tuples (one column per key), or as lists (columns named)."""
    if data and (isinstance(data[0], Mapping) or hasattr(data[0], "_fields")):
        cols = _keys(data)
        return cols, [[_as_dict(r).get(c) for c in cols] for r in data]
    return list(columns or []), [list(r) for r in data]


def _pick(cols: list, rows: list, columns) -> list:
    """rows with only `columns`, in their order (a column the rows lack is empty)."""
    picked = [cols.index(c) if c in cols else None for c in columns]
    return [[r[i] if i is not None else None for i in picked] for r in rows]


class Table:
    """Rows with named columns (see the module's docstring for the shapes it takes)."""

    def __init__(self, data=(), columns=None, index=None, index_name: str | None = None):
        if isinstance(data, Mapping):
            cols, rows, index = _from_columns(data, index)
        else:
            cols, rows = _from_rows(list(data), columns)
        if columns is not None and cols != list(columns):
            cols, rows = list(columns), _pick(cols, rows, columns)
        if isinstance(index, str):                          # a column as the row labels
            i = cols.index(index)
            index, index_name = [r[i] for r in rows], index_name or cols[i]
            rows = [r[:i] + r[i + 1:] for r in rows]
            cols = cols[:i] + cols[i + 1:]
        if index is not None and len(index) != len(rows):
            raise ValueError(f"{len(index)} row labels for {len(rows)} rows")
        self.columns, self.rows, self.index, self.index_name = cols, rows, index, index_name

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return (dict(zip(self.columns, r, strict=True)) for r in self.rows)

    def column(self, name) -> list:
        """The values of one column, top to bottom."""
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def to_pandas(self):
        """The table as a pandas DataFrame (its index and index name kept)."""
        import pandas as pd
        df = pd.DataFrame(self.rows, columns=self.columns, index=self.index)
        return df.rename_axis(self.index_name) if self.index_name else df

    @staticmethod
    def _text(v) -> str:
        return "" if v is None else str(v)

    def _html_cell(self, tag: str, v) -> str:
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        return f'<{tag}{"" if numeric else " class=kv-t"}>{html.escape(self._text(v))}</{tag}>'

    def _repr_html_(self) -> str:
        corner = [self._html_cell("th", self.index_name or "")] if self.index is not None else []
        head = "".join(corner + [self._html_cell("th", c) for c in self.columns])
        body = []
        for i, r in enumerate(self.rows):
            label = [self._html_cell("th", self.index[i])] if self.index is not None else []
            body.append("<tr>" + "".join(label + [self._html_cell("td", v) for v in r]) + "</tr>")
        return (f'{_STYLE}<table class="dataframe kv-rows"><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table>')

    def __repr__(self) -> str:
        cols = ([self.index_name or ""] if self.index is not None else []) + [self._text(c) for c in self.columns]
        lines = [([self._text(self.index[i])] if self.index is not None else []) + [self._text(v) for v in r]
                 for i, r in enumerate(self.rows)]
        widths = [max([len(c)] + [len(line[j]) for line in lines]) for j, c in enumerate(cols)]
        return "\n".join("  ".join(s.ljust(w) for s, w in zip(line, widths, strict=True)).rstrip()
                         for line in [cols, *lines])


@functools.cache
def _whole_frame():
    """pandas.DataFrame shown with every cell whole: pandas cuts text longer than its
    display.max_colwidth (50) with "...", which hid half of a teaching table's sentences."""
    import pandas as pd

    class WholeFrame(pd.DataFrame):
        @property
        def _constructor(self):             # a slice or a copy is shown whole too
            return WholeFrame

        def _repr_html_(self):
            with pd.option_context("display.max_colwidth", None):
                return super()._repr_html_()

        def __repr__(self) -> str:
            with pd.option_context("display.max_colwidth", None):
                return super().__repr__()

    WholeFrame.__module__, WholeFrame.__qualname__ = __name__, "WholeFrame"    # pickled by name (below)
    return WholeFrame


def __getattr__(name: str):
    if name == "WholeFrame":                # made on first use: importing this module needs no pandas
        return _whole_frame()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def frame(data, columns=None):
    """A pandas DataFrame of (data, columns) shown with every cell whole where pandas is installed,
    else Table(data, columns)."""
    try:
        return _whole_frame()(data, columns=columns)
    except ImportError:
        return Table(data, columns=columns)
