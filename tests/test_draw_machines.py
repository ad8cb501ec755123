"""kipviz.draw.machines: state diagrams are read from the same Table the model executes.

Checked on the DOT source (one node per state, one edge per row, attributes as written) and on
the SVG `dot` renders from it (text, ids, colours). Tables built here stand in for the model's;
the model's own tables (kipviz.broker.tables) are checked too when they are there."""
from __future__ import annotations

import html
import re
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kipviz.broker.machine import Row, Table
from kipviz.draw import dot_available, to_svg
from kipviz.draw.machines import (
    C_ACCEPTED,
    C_CURRENT_FILL,
    C_NODE_FILL,
    C_PROPOSED,
    C_RELEASED,
    C_TAKEN,
    LOOP_GAP,
    TAKEN_WIDTH,
    edge_id,
    edge_rows,
    label_rows,
    node_id,
    state_diagram,
    tables,
)
from kipviz.schema.status import kip_release

needs_dot = pytest.mark.skipif(not dot_available(), reason="graphviz `dot` not installed")

TXN = Table(
    name="transaction",
    states=("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
            "PrepareEpochFence"),
    initial="Empty",
    rows=(
        Row("Empty", "init-producer-id", "Empty"),
        Row("Empty", "add-partitions", "Ongoing"),
        Row("Ongoing", "add-partitions", "Ongoing"),
        Row("Ongoing", "end-txn-commit", "PrepareCommit"),
        Row("Ongoing", "end-txn-abort", "PrepareAbort"),
        Row("Ongoing", "timeout-fence", "PrepareEpochFence"),
        Row("PrepareEpochFence", "fence-abort", "PrepareAbort"),
        Row("PrepareCommit", "markers-written", "CompleteCommit"),
        Row("PrepareAbort", "markers-written", "CompleteAbort"),
        Row("CompleteCommit", "init-producer-id", "Empty"),
        Row("CompleteAbort", "init-producer-id", "Empty"),
        Row("Empty", "end-txn-abort", "PrepareAbort", status="accepted", kip="KIP-939", note="unsure client"),
        Row("Empty", "expire", "Dead"),
    ),
    state_ids={"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
               "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7},
    source="TransactionMetadata.scala", terminal=("Dead",))

# a proposed row to a state nothing released reaches
SHARE = Table(
    name="share-record", states=("Available", "Acquired", "Acknowledged", "Archived", "TxPending"),
    initial="Available",
    rows=(Row("Available", "fetch", "Acquired"), Row("Acquired", "accept", "Acknowledged"),
          Row("Acquired", "release", "Available"), Row("Acquired", "reject", "Archived"),
          Row("Acquired", "txn-ack", "TxPending", status="proposed", kip="KIP-1289"),
          Row("TxPending", "commit", "Acknowledged", status="proposed", kip="KIP-1289")),
    terminal=("Acknowledged", "Archived"))


def svg_text(svg: str) -> str:
    return "\n".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def group(svg: str, ident: str) -> str:
    """The SVG of one node or edge, by its id (up to the next node/edge)."""
    m = re.search(r'<g id="' + re.escape(ident) + r'" class="(?:node|edge)">(.*?)(?=<g id="[^"]*" class="(?:node|edge)">|</svg>)',
                  svg, re.S)
    assert m, f"no group {ident}"
    return m.group(1)


def edge_text(svg: str, ident: str) -> str:
    """The text drawn on one arrow, its lines run together (a long event name is cut over two lines)."""
    return "".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", group(svg, ident)))


def dot_edges(source: str) -> list[str]:
    return [line for line in source.splitlines() if "->" in line]


def row_text(r: Row) -> str:
    """A row's lines in its arrow's label, run together: its event, and its KIP line if it has one
    (a shipped KIP's row that Kafka never ran: "KIP-516 page · not shipped")."""
    if r.status == "released":
        return r.event
    if r.kip and kip_release(r.kip):
        return r.event + f"{r.kip} page · not shipped"
    return r.event + " · ".join(p for p in (r.kip, r.status) if p)


def test_a_shipped_kips_page_only_rows_are_not_called_proposed():
    """Issue 31: KIP-516 shipped in 2.8; its page's rows Kafka never ran read "not shipped", not "proposed"."""
    src = state_diagram(tables()["replica"]).source
    assert "KIP-516 · proposed" not in src and src.count("KIP-516 page · not shipped") == 6   # labels, tooltips
    assert "as the KIP-516 page says, not shipped (KIP-516 released in 2.8)" in src
    assert "KIP-1289 · proposed" in state_diagram(tables()["share-record"]).source      # a proposal stays one


def label_of(edge: str) -> str:
    """An edge's label text, its lines run together (a long event name is cut over two lines)."""
    return re.sub(r"<[^>]*>", "", re.search(r"label=<(.*)> ", edge).group(1))


# ---- DOT: structure ----------------------------------------------------------------------------------
def test_every_state_is_a_node_and_every_row_an_edge_labelled_with_its_event():
    src = state_diagram(TXN).source
    for s in TXN.states:
        assert f'id={node_id(TXN, s)}' in src
    edges = [e for e in dot_edges(src) if "__start" not in e]
    assert len(edges) == len(TXN.rows)
    for i, r in enumerate(TXN.rows):
        line = next(e for e in edges if f"id={edge_id(TXN, i)}" in e)
        assert line.lstrip().startswith(f"{node_id(TXN, r.from_state)} -> {node_id(TXN, r.to_state)}")
        assert label_of(line).startswith(r.event)


def test_kafka_state_ids_are_in_the_node_labels():
    src = state_diagram(TXN).source
    for s, i in TXN.state_ids.items():
        node = next(line for line in src.splitlines() if f"id={node_id(TXN, s)}" in line)
        assert f"id {i}<" in node


def test_state_ids_are_left_out_when_the_table_has_none():
    assert ">id " not in state_diagram(SHARE).source


def test_initial_state_is_marked_by_an_arrow_from_a_dot():
    src = state_diagram(TXN).source
    assert re.search(r"__start \[.*shape=point", src)
    assert re.search(rf"__start -> {node_id(TXN, 'Empty')}\b", src)


def test_terminal_states_are_double_circles_and_only_they():
    src = state_diagram(SHARE).source
    for s in SHARE.states:
        node = next(line for line in src.splitlines() if f"id={node_id(SHARE, s)}" in line)
        assert ("doublecircle" in node) == (s in SHARE.terminal)


def test_accepted_and_proposed_rows_are_dashed_coloured_and_carry_their_kip():
    for table, i, color, kip, status in ((TXN, 11, C_ACCEPTED, "KIP-939", "accepted"),
                                         (SHARE, 4, C_PROPOSED, "KIP-1289", "proposed")):
        line = next(e for e in dot_edges(state_diagram(table).source) if f"id={edge_id(table, i)}" in e)
        assert "style=dashed" in line and f'color="{color}"' in line
        assert f"{kip} · {status}" in line
    released = next(e for e in dot_edges(state_diagram(TXN).source) if f"id={edge_id(TXN, 3)}" in e)
    assert "dashed" not in released and "KIP" not in released and f'color="{C_RELEASED}"' in released


def test_show_proposed_false_omits_those_rows_and_states_only_they_reach():
    src = state_diagram(SHARE, show_proposed=False).source
    assert not any("KIP-1289" in e for e in dot_edges(src)) and "style=dashed" not in src
    assert "KIP-1289 rows hidden" in src                  # the title says what is left out
    assert f"id={node_id(SHARE, 'TxPending')}" not in src
    assert len([e for e in dot_edges(src) if "__start" not in e]) == 4
    src = state_diagram(TXN, show_proposed=False).source
    assert not any("KIP-1319" in e for e in dot_edges(src))
    assert f"id={node_id(TXN, 'PrepareAbort')}" in src    # released rows reach it


def test_a_taken_row_is_drawn_even_where_show_proposed_false_hides_it():
    src = state_diagram(SHARE, show_proposed=False, taken=SHARE.rows[4]).source
    assert f"id={edge_id(SHARE, 4)}" in src and f"id={node_id(SHARE, 'TxPending')}" in src


def test_current_state_is_filled_and_taken_row_bold_red():
    src = state_diagram(TXN, current="Ongoing", taken=TXN.rows[3]).source
    node = next(line for line in src.splitlines() if f"id={node_id(TXN, 'Ongoing')}" in line)
    assert f'fillcolor="{C_CURRENT_FILL}"' in node
    other = next(line for line in src.splitlines() if f"id={node_id(TXN, 'Empty')}" in line)
    assert "fillcolor" not in other                      # the default white fill
    edge = next(e for e in dot_edges(src) if f"id={edge_id(TXN, 3)}" in e)
    assert f'color="{C_TAKEN}"' in edge and f"penwidth={TAKEN_WIDTH}" in edge
    assert sum(C_TAKEN in e for e in dot_edges(src)) == 1


def test_unknown_current_state_and_foreign_rows_are_refused():
    with pytest.raises(ValueError, match="unknown state 'Nope'"):
        state_diagram(TXN, current="Nope")
    with pytest.raises(ValueError, match="not a row"):
        state_diagram(TXN, taken=Row("Empty", "x", "Dead"))


def test_ids_survive_table_and_state_names_with_odd_characters():
    t = Table(name="consumer-member", states=("a b", "a-b", "<x>"), initial="a b",
              rows=(Row("a b", "go & see", "a-b"), Row("a-b", "<back>", "<x>")))
    ids = {node_id(t, s) for s in t.states}
    assert len(ids) == 3 and all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids)
    src = state_diagram(t).source
    assert "go &amp; see" in src and "&lt;back&gt;" in src


# ---- SVG ---------------------------------------------------------------------------------------------------
@needs_dot
def test_svg_shows_states_ids_events_and_kips():
    svg = to_svg(state_diagram(TXN, current="PrepareCommit", taken=TXN.rows[3]))
    text = svg_text(svg)
    for s in TXN.states:
        assert s in text
    for i, r in enumerate(TXN.rows):
        assert edge_text(svg, edge_id(TXN, i)).startswith(r.event)
    assert "id 7" in text and "KIP-939 · accepted" in text
    cur = group(svg, node_id(TXN, "PrepareCommit"))
    assert f'fill="{C_CURRENT_FILL}"' in cur
    assert f'fill="{C_NODE_FILL}"' in group(svg, node_id(TXN, "Ongoing"))
    edge = group(svg, edge_id(TXN, 3))
    assert f'stroke="{C_TAKEN}" stroke-width="{TAKEN_WIDTH}"' in edge and f'fill="{C_TAKEN}"' in edge
    assert 'stroke-dasharray' in group(svg, edge_id(TXN, 11))
    assert group(svg, node_id(TXN, "Dead")).count("<ellipse") == 2     # double circle


# ---- tables() ----------------------------------------------------------------------------------------------
def test_tables_finds_every_module_level_table_by_name(tmp_path, monkeypatch):
    pkg = tmp_path / "kvfake_tables"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "one.py").write_text(textwrap.dedent("""
        from kipviz.broker.machine import Row, Table
        T = Table(name="one", states=("A", "B"), initial="A", rows=(Row("A", "go", "B"),))
        NOT_A_TABLE = 3
    """))
    (pkg / "two.py").write_text(textwrap.dedent("""
        from kipviz.broker.machine import Row, Table
        TABLE = Table(name="two", states=("X",), initial="X", rows=())
    """))
    (pkg / "_private.py").write_text("raise RuntimeError('not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = tables("kvfake_tables")
        assert list(found) == ["one", "two"] and all(isinstance(t, Table) for t in found.values())
        assert tables("kvfake_no_such_package") == {}
    finally:
        for name in [m for m in sys.modules if m.startswith("kvfake_tables")]:
            del sys.modules[name]


def test_tables_of_the_model_are_tables_named_as_keyed():
    for name, t in tables().items():
        assert isinstance(t, Table) and t.name == name


REAL = list(tables().values())


@needs_dot
@pytest.mark.skipif(not REAL, reason="the broker model's tables are not written yet")
@pytest.mark.parametrize("table", REAL, ids=[t.name for t in REAL])
def test_model_tables_draw_every_state_and_row(table):
    svg = to_svg(state_diagram(table, current=table.initial))
    text = svg_text(svg)
    for s in table.states:
        assert s in text
        assert f'id="{node_id(table, s)}"' in svg
    arrows = edge_rows(table, range(len(table.rows)))
    for ident, rows in arrows.items():           # one arrow per (source, target): each row a line
        assert edge_text(svg, ident) == "".join(row_text(table.rows[i]) for i in rows)
        assert ("stroke-dasharray" in group(svg, ident)) == all(
            table.rows[i].status in ("accepted", "proposed") for i in rows)
    assert svg.count('class="edge"') == len(arrows) + 1          # and the start arrow
    assert sum(map(len, arrows.values())) == len(table.rows)
    if table.state_ids:
        for i in table.state_ids.values():
            assert f"id {i}" in text
    released_only = state_diagram(table, show_proposed=False).source
    assert all(f"id={edge_id(table, i)}" in released_only
               for i, r in enumerate(table.rows) if r.status == "released")


# ---- any table -----------------------------------------------------------------------------------------------
@st.composite
def any_table(draw):
    names = draw(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                                  max_size=8), min_size=1, max_size=6, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(names), st.text("abcdef-", min_size=1, max_size=6),
                                    st.sampled_from(names), st.sampled_from(["released", "accepted", "proposed"])),
                          max_size=12, unique_by=lambda p: (p[0], p[1])))
    rows = tuple(Row(a, ev, b, status=s, kip=None if s == "released" else "KIP-1") for a, ev, b, s in pairs)
    terminal = tuple(draw(st.lists(st.sampled_from(names), unique=True, max_size=2)))
    return Table(name=draw(st.sampled_from(["t", "classic-group", "x y"])), states=tuple(names), initial=names[0],
                 rows=rows, terminal=terminal)


@given(any_table(), st.booleans())
def test_any_table_gives_one_edge_per_source_and_target_of_the_shown_rows(table, show_proposed):
    src = state_diagram(table, show_proposed=show_proposed).source
    shown = [i for i, r in enumerate(table.rows) if show_proposed or r.status == "released"]
    pairs = {(table.rows[i].from_state, table.rows[i].to_state) for i in shown}
    assert len([e for e in dot_edges(src) if "__start" not in e]) == len(pairs)
    for i, r in enumerate(table.rows):
        assert bool(re.search(rf"id={edge_id(table, i)}\b", src)) == ((r.from_state, r.to_state) in pairs)
    for i in shown:                                # every shown row's event is on its arrow's label
        edge = next(e for e in dot_edges(src) if re.search(rf"id={edge_id(table, i)}\b", e))
        assert html.escape(table.rows[i].event, quote=False) in edge
    dashed = [rows for rows in edge_rows(table, shown).values()
              if all(table.rows[i].status != "released" for i in rows)]
    assert src.count("style=dashed") == len(dashed)


# ---- parallel rows: one arrow (issue 25: graphviz drew four self-loop labels over each other) -----------
LOOPS = Table(
    name="loops", states=("Empty", "Ongoing", "Done"), initial="Empty",
    rows=(Row("Empty", "begin", "Ongoing"), Row("Ongoing", "add-partitions", "Ongoing"),
          Row("Ongoing", "add-offsets", "Ongoing"), Row("Ongoing", "end", "Done"),
          Row("Ongoing", "heartbeat", "Ongoing", status="proposed", kip="KIP-9"),
          Row("Empty", "restart", "Ongoing")))


def test_rows_with_one_source_and_target_are_one_arrow_with_a_line_per_row():
    src = state_diagram(LOOPS).source
    edges = [e for e in dot_edges(src) if "__start" not in e]
    assert len(edges) == 3 and len(LOOPS.rows) == 6            # the table keeps its rows
    assert edge_id(LOOPS, 2) == edge_id(LOOPS, 4) == edge_id(LOOPS, 1) != edge_id(LOOPS, 0)
    assert edge_id(LOOPS, 5) == edge_id(LOOPS, 0)
    loop = next(e for e in edges if f"id={edge_id(LOOPS, 1)}" in e)
    assert label_of(loop) == "add-partitionsadd-offsetsheartbeatKIP-9 · proposed"
    assert label_of(loop.replace("<BR/>", "|")).split("|") == ["add-partitions", "add-offsets", "heartbeat",
                                                               "KIP-9 · proposed"]
    assert "dashed" not in loop and f'color="{C_RELEASED}"' in loop     # released rows: a solid line
    assert f'<FONT COLOR="{C_PROPOSED}">heartbeat' in loop               # the proposed row keeps its colour
    assert f'<TD WIDTH="{LOOP_GAP}"></TD>' in loop            # a self-loop's label keeps off its arrowhead
    assert "<TABLE" not in next(e for e in edges if f"id={edge_id(LOOPS, 3)}" in e)
    assert label_rows(LOOPS, [1, 2, 4]) == [1, 2, 4, 4]
    assert edge_rows(LOOPS, [2, 4]) == {edge_id(LOOPS, 1): [2, 4]}
    alone = state_diagram(LOOPS, show_proposed=False).source
    assert "heartbeat" not in alone and f"id={edge_id(LOOPS, 1)}" in alone


def test_a_taken_row_on_a_shared_arrow_reddens_the_arrow_and_only_its_lines():
    src = state_diagram(LOOPS, current="Ongoing", taken=LOOPS.rows[2]).source
    loop = next(e for e in dot_edges(src) if f"id={edge_id(LOOPS, 2)}" in e)
    assert f'color="{C_TAKEN}"' in loop and f"penwidth={TAKEN_WIDTH}" in loop
    assert f'<FONT COLOR="{C_TAKEN}">add-offsets' in loop
    assert f'<FONT COLOR="{C_RELEASED}">add-partitions' in loop and f'<FONT COLOR="{C_PROPOSED}">heartbeat' in loop


@needs_dot
def test_parallel_rows_svg_has_one_group_and_a_text_per_line():
    svg = to_svg(state_diagram(LOOPS, current="Ongoing", taken=LOOPS.rows[4]))
    loop = group(svg, edge_id(LOOPS, 1))
    texts = re.findall(r"<text[^>]*>[^<]*</text>", loop)
    assert [html.unescape(re.sub(r"<[^>]*>", "", t)) for t in texts] == [
        "add-partitions", "add-offsets", "heartbeat", "KIP-9 · proposed"]
    assert [f'fill="{C_TAKEN}"' in t for t in texts] == [False, False, True, True]
    assert svg.count('class="edge"') == 4


@needs_dot
@settings(max_examples=12)
@given(any_table())
@example(Table(name="t", states=("\n", "\t "), initial="\n", rows=()))   # whitespace-only names
def test_any_table_renders_with_every_state_shown(table):
    svg = to_svg(state_diagram(table, current=table.initial))
    ET.fromstring(re.sub(r"^.*?(?=<svg)", "", svg, flags=re.S))
    for s in table.states:
        assert f'id="{node_id(table, s)}"' in svg


@needs_dot
@pytest.mark.parametrize("show_proposed", [True, False])
def test_header_key_parts_are_on_separate_lines(show_proposed):
    """Issue 25: the header rendered "(11 rows)dashed:" -- the row count and the legend of the
    proposed rows ran together. In the SVG each is its own text line (its own y)."""
    from kipviz.broker.tables import share_record as sr
    svg = to_svg(state_diagram(sr.TABLE, show_proposed=show_proposed))
    root = ET.fromstring(svg)
    texts = [(t.get("y"), "".join(t.itertext())) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    (solid,) = [(y, s) for y, s in texts if s.startswith("solid: released Kafka")]
    assert solid[1].endswith("rows)"), solid
    other = "dashed: accepted/proposed" if show_proposed else "(KIP-1289 rows hidden)"
    (key,) = [(y, s) for y, s in texts if s.startswith(other)]
    assert float(key[0]) > float(solid[0])          # a line below, not run on


def test_a_long_source_line_does_not_set_the_pictures_width():
    """The replica machine's source names three files: one a line, wrapped, the title is no wider than
    the machine drawn top to bottom, so the picture needs no scaling in a notebook (issue 25)."""
    from kipviz.draw import machines as M
    from kipviz.draw.render import FIT_PX, layout_size
    ts = M.tables()
    table = ts["replica"] if isinstance(ts, dict) else next(t for t in ts if t.name == "replica")
    assert len(table.source) > 100
    assert all(len(line) <= 64 for line in M._source_lines(table.source))
    assert layout_size(M.state_diagram(table))[0] <= FIT_PX


@needs_dot
@pytest.mark.skipif(not REAL, reason="the broker model's tables are not written yet")
@pytest.mark.parametrize("table", REAL, ids=[t.name for t in REAL])
def test_every_model_machine_keeps_its_text_over_8_px_in_a_notebook(table):
    """Issue 25: a picture wider than the output area (~840 px at 1280 px with the file browser open)
    is scaled to it. The transaction machine was laid out 1423 px wide: its 9 pt text drawn at 6.8 px.
    Its narrowest layout (top to bottom, compact, long event names on two lines) keeps it over 8 px."""
    from kipviz.draw.render import FIT_PX
    area = 830
    svg = to_svg(state_diagram(table))
    m = re.search(r'<svg width="([\d.]+)(pt|px)" height="[\d.]+(?:pt|px)"\s+viewBox="[-\d.]+ [-\d.]+ ([\d.]+)', svg)
    width = float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1)       # as the page draws it
    assert width <= FIT_PX
    per_unit = min(width, area) / float(m.group(3))                        # px per pt of the drawing
    sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', svg)]
    assert min(sizes) * per_unit >= 8, (table.name, min(sizes), per_unit)
    if table.name == "transaction":      # it needed the compact layout: its long names are cut
        assert "transactional-" in svg_text(svg).split("\n")
