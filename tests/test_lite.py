"""The browser kit's parts that run here (kipviz.lite, kipviz.table): which notebooks and cells the
site takes and how it marks the Spark ones, the saved-output magic, Pyodide's lock entries, the
tables without pandas, and one-line errors. The site itself, in Chromium: tests/browser/test_lite.py."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import zipfile

import nbformat
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz import cli
from kipviz.draw import diff_table
from kipviz.lite import fetch, lock, notebooks, runtime, site_data
from kipviz.table import Table, frame

SITE = notebooks.site_notebooks()


# ---- which notebooks, which cells -------------------------------------------------------------------
def test_the_site_takes_every_notebook_but_the_spark_and_socket_ones():
    names = {p.stem for p in SITE}
    assert {"00_welcome", "01_wire_format", "02_records_and_logs", "03_topic_ids", "04_consumer_groups",
            "05_txn_offset_commit_v6", "06_share_group_eos", "08_design_review"} <= names
    assert not names & set(notebooks.EXCLUDED)


SPARK_OR_SOCKET = re.compile(r"\bks\.|\bspark\b\s*=|\bServer\(|toPandas\(|\bimport pandas\b|\bpd\.")


@pytest.mark.parametrize("path", SITE, ids=[p.name for p in SITE])
def test_every_cell_that_needs_spark_is_tagged(path):
    """A cell that starts Spark or reads its logs (or uses pandas, which the browser has not) carries
    kipviz={"needs": ...} (what the untagged cells do in a browser: tests/browser/test_lite.py)."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert not [c.source[:200] for c in cells if not notebooks.needs(c) and SPARK_OR_SOCKET.search(c.source)]


def test_the_site_copy_marks_tagged_cells_and_nothing_else(tmp_path):
    notebooks.write_site_notebooks(SITE, tmp_path)
    for path in SITE:
        original = nbformat.read(path, as_version=4)
        copy = nbformat.read(tmp_path / path.name, as_version=4)
        assert len(copy.cells) == len(original.cells)
        for a, b in zip(original.cells, copy.cells, strict=True):
            if notebooks.needs(a):
                assert b.source == f"%%needs {a.metadata['kipviz']['needs']}\n" + a.source
                assert notebooks.cell_key(b.source.split("\n", 1)[1]) == notebooks.cell_key(a.source)
            else:
                assert b.source == a.source
    assert sum(c.source.startswith("%%needs") for p in SITE
               for c in nbformat.read(tmp_path / p.name, as_version=4).cells) >= 15


def test_a_bad_needs_tag_is_one_error():
    cell = nbformat.v4.new_code_cell("x = 1", metadata={"kipviz": {"needs": "gpu"}})
    with pytest.raises(fetch.LiteBuildError, match="expected one of spark, socket"):
        notebooks.needs(cell)


# ---- the %%needs magic -------------------------------------------------------------------------------
def test_needs_shows_the_saved_output_and_never_runs_the_code(monkeypatch, capsys):
    code = "raise SystemExit('this must not run')\nks.table(x)"
    html = {"output_type": "execute_result", "data": {"text/html": "<table><tr><td>7</td></tr></table>",
                                                      "text/plain": "7"}, "metadata": {}, "execution_count": 3}
    stream = {"output_type": "stream", "name": "stdout", "text": ["a line\n"]}
    monkeypatch.setattr(runtime, "_saved", lambda: {notebooks.cell_key(code): [stream, html]})
    shown = []
    monkeypatch.setattr("IPython.display.publish_display_data", lambda data, metadata=None: shown.append(data))
    runtime.needs(" spark", code + "\n")
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("This cell needs Spark (a Java VM), which the browser kit does not have")
    assert "a line" in out and shown == [html["data"]]
    runtime.needs("socket", "edited = 1")
    assert "saved only for the cell as it was written" in capsys.readouterr().out


# ---- Pyodide's lock and the site's own wheel ---------------------------------------------------------
def test_lock_closure_and_entries(tmp_path):
    fake = {"packages": {"a": {"depends": ["B_b"]}, "b-b": {"depends": []}, "c": {"depends": ["a"]}}}
    assert lock.closure(fake, ["c"]) == {"a", "b-b", "c"}
    wheel = site_data.wheel(tmp_path, viz=_fake_viz(tmp_path), saved={"k": []})
    e = lock.entry(wheel, ["Kipviz"])
    assert (e["name"], e["file_name"], e["depends"], e["imports"]) == \
        (site_data.NAME, wheel.name, ["kipviz"], [site_data.PACKAGE])
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert f"{site_data.PACKAGE}/ipython/profile_default/ipython_config.py" in names
        assert json.loads(z.read(f"{site_data.PACKAGE}/saved.json")) == {"k": []}
        record = z.read(f"{site_data.PACKAGE}-{site_data.VERSION}.dist-info/RECORD").decode()
        assert all(n in record for n in names)


def _fake_viz(tmp_path):
    viz = tmp_path / "viz"
    (viz / "dist").mkdir(parents=True)
    (viz / "dist" / "viz-global.js").write_text("/* viz */")
    (viz / "package.json").write_text(json.dumps({"name": "@viz-js/viz", "version": "3.31.0", "license": "MIT"}))
    return viz


def test_requirements_are_evaluated_as_pyodide_would(tmp_path):
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
                   "Requires-Dist: Typing_Extensions>=4\nRequires-Dist: pywin32; sys_platform == 'win32'\n"
                   "Requires-Dist: pytest; extra == 'test'\nRequires-Dist: tomli; python_version < '3.11'\n")
        z.writestr("demo/__init__.py", "")
    assert lock.requirements(path) == ["typing-extensions"]


# ---- one-line errors ----------------------------------------------------------------------------------
def test_no_npm_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("KIPVIZ_LITE_CACHE", str(tmp_path))
    monkeypatch.setattr(fetch.shutil, "which", lambda name: None)
    with pytest.raises(fetch.LiteBuildError, match=r"npm \(Node.js\) is needed to fetch pyodide@1\.0"):
        fetch.npm_package("pyodide", "1.0")


def test_an_output_that_is_a_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("x")
    assert cli.main(["lite", "-o", str(target), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kipviz: error: -o {target}: exists and is not a folder"]


def test_an_output_that_cannot_be_made_is_one_line_before_any_build(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fetch, "npm_package", lambda *a, **k: pytest.fail("fetched before the output was checked"))
    target = tmp_path / "a-file" / "site"
    (tmp_path / "a-file").write_text("x")
    assert cli.main(["lite", "-o", str(target), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kipviz: error: -o {target}: cannot make the folder"), err


def test_a_folder_that_is_not_a_site_is_left_alone(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["lite", "-o", str(tmp_path), "-q"]) == 2
    assert "not a kipviz site" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


# ---- tables without pandas ------------------------------------------------------------------------------
_cell = st.one_of(st.none(), st.integers(-10**6, 10**6), st.text(max_size=8), st.booleans())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c d", "é"]), _cell, min_size=1, max_size=4), max_size=6))
def test_a_table_holds_what_pandas_would(rows):
    t = Table(rows)
    df = pd.DataFrame(rows)
    assert t.columns == list(df.columns) and len(t) == len(df)
    for got, want in zip(t, df.to_dict("records"), strict=True):
        assert got.keys() == want.keys()
        assert all(v == want[k] or (v is None and pd.isna(want[k])) for k, v in got.items())


def test_table_shapes_and_html():
    t = Table({"broker 4.3": {"producer 4.3": 5, "producer 4.4": 5}, "broker 4.4": {"producer 4.3": 5,
                                                                                  "producer 4.4": 6}})
    assert t.index == ["producer 4.3", "producer 4.4"] and t.column("broker 4.4") == [5, 6]
    t = Table({"v5": ["✓", ""], "v6": ["✓", "✓"]}, index=["A", "B"])
    assert t.rows == [["✓", "✓"], ["", "✓"]]
    t = Table([{"metric": "m1", "value": 1}, {"metric": "m2", "value": "<b>2</b>"}], index="metric")
    assert (t.index, t.index_name, t.columns) == (["m1", "m2"], "metric", ["value"])
    html = t._repr_html_()
    assert "&lt;b&gt;2&lt;/b&gt;" in html and "<b>" not in html
    assert Table([], columns=["x", "y"]).columns == ["x", "y"]
    picked = Table([{"a": 1, "b": 2}], columns=["b", "z"])
    assert picked.rows == [[2, None]] and "z" in repr(picked)
    assert Table([{"a": None}])._repr_html_().count("None") == 0
    with pytest.raises(ValueError, match="2 row labels for 1 rows"):
        Table([{"a": 1}], index=["x", "y"])


def test_frame_is_pandas_here_and_a_table_without_it():
    assert isinstance(frame([{"a": 1}]), pd.DataFrame)
    code = textwrap.dedent("""
        import sys
        sys.modules["pandas"] = None
        from kipviz.draw.diff import diff_table
        from kipviz.table import Table
        t = diff_table("TxnOffsetCommitRequest", 5, 6)
        assert isinstance(t, Table) and t.columns == ["path", "change", "detail"], t
        print(len(t))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(diff_table("TxnOffsetCommitRequest", 5, 6)) >= 2
