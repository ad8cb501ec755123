"""Teaching tables show every cell whole (issue 31): kipviz.table.Table, and the pandas DataFrame
table.frame hands back where pandas is installed (diff_table, Trace.requests, capture.to_dataframe),
which pandas alone cuts at display.max_colwidth (50 characters) with "..."."""
from __future__ import annotations

import pickle

import pandas as pd

from kipviz.draw.diff import diff_table
from kipviz.table import Table, WholeFrame, frame

LONG = "a sentence longer than the fifty characters pandas shows of a cell by default"


def test_a_table_shows_long_text_whole_and_counts_as_integers():
    html = Table([{"finding": LONG, "responses": 3, "none": 0}])._repr_html_()
    assert LONG in html and "..." not in html
    assert ">3</td>" in html and ">0</td>" in html and "3.0" not in html


def test_frame_shows_every_cell_whole_where_pandas_cuts_them():
    before = pd.get_option("display.max_colwidth")     # a Spark session in this process sets None
    with pd.option_context("display.max_colwidth", 50):
        assert "..." in pd.DataFrame([{"finding": LONG}])._repr_html_()     # what pandas alone shows
        df = frame([{"finding": LONG, "n": 1}])
        assert isinstance(df, pd.DataFrame) and isinstance(df, WholeFrame)
        for shown in (df, df[["finding"]], df.head(1), df.copy()):           # slices and copies too
            assert LONG in shown._repr_html_() and LONG in repr(shown)
    assert pd.get_option("display.max_colwidth") == before                   # frame() changed no global setting
    back = pickle.loads(pickle.dumps(df))
    assert type(back) is WholeFrame and back.equals(df)


def test_the_version_diff_table_keeps_its_long_details():
    df = diff_table("TxnOffsetCommitRequest", 5, 6)
    longest = max(df["detail"], key=len)
    assert len(longest) > 50 and longest in df._repr_html_()
