"""kipviz.spark.table as a notebook shows it (a pandas frame here: the same Table as a Spark one's):
every value whole by default, words wrapping at spaces only (issue 31: "partitio|ns"), numbers and
points in time on one line, a long value without spaces breakable after its commas."""
from __future__ import annotations

import datetime

import pandas as pd

from kipviz.spark.display import STYLE, table


def test_a_table_keeps_every_value_whole_and_breaks_no_word():
    value = '{"order":10,"customer":223,"amount_cents":1999,"currency":"EUR"}'
    df = pd.DataFrame({"partitions": [3], "state": ["ILLEGAL_GENERATION"], "value": [value],
                       "at": [datetime.datetime(2026, 1, 1, 0, 0, 0)]})
    page = table(df)._repr_html_()
    assert "overflow-wrap:anywhere" not in STYLE and "overflow-wrap:normal" in STYLE and "word-break:normal" in STYLE
    assert "…" not in page and '1999,<wbr>&quot;currency&quot;:&quot;EUR&quot;}' in page   # whole, breakable after a comma
    assert '<td class="kv-nw">3</td>' in page and '<td class="kv-nw">2026-01-01 00:00:00</td>' in page
    assert "<td>ILLEGAL_GENERATION</td>" in page
    assert "…" in table(df, truncate=20)._repr_html_()                            # cut only when asked
