"""State-machine pictures, read from the same tables the broker model executes.

    state_diagram(table)                              -> graphviz.Digraph of every state and row
    state_diagram(table, current="Ongoing", taken=row) -> the same, current state filled, row in red
    state_diagram(table, show_proposed=False)         -> released Kafka only (no KIP rows)
    tables()                                           -> {"transaction": Table, ...} from kipviz.broker.tables

What the picture says:

* a state is an ellipse, a terminal state a double circle; an arrow from a dot marks the initial
  state; Kafka's numeric id is under the name when the table has them (TransactionState 0..7);
* every row of the table is an event on an arrow; rows whose status is "accepted" or "proposed"
  are coloured (amber / purple, as in the wire diagrams) and carry their KIP, and an arrow only
  they draw is dashed; with show_proposed=False they are left out, and so are states only those
  rows touch;
* rows with the same source and target (parallel edges, self-loops above all) are drawn as ONE
  arrow whose label has each row's event on its own line: graphviz lays parallel self-loops'
  labels over one another (the transaction machine's four loops on Ongoing; issue 25). The table
  keeps its rows: only the drawing groups them (edge_rows, label_rows);
* `current` (a state, or several) is filled; `taken` (a Row of the table) is bold and red: its
  arrow, and its lines of that arrow's label.

Every node and edge gets a stable SVG id (node_id / edge_id), and the highlight colours below are
plain attribute values, so kipviz.draw.animate can recolour one rendered SVG instead of calling
`dot` again for every frame."""
from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable

import graphviz

from ..broker.machine import Row, Table
from ..schema.status import kip_release
from .render import label_text

__all__ = ["state_diagram", "tables", "node_id", "edge_id", "edge_rows", "label_rows", "shown_rows", "row_index",
           "status_color", "edge_color", "STYLE"]

FONT = "Helvetica"
# colours (the animation recolours rendered SVG by these exact strings: keep them distinct)
C_NODE_FILL = "#ffffff"
C_NODE_LINE = "#4a5568"
C_CURRENT_FILL = "#63b3ed"
C_CURRENT_LINE = "#1a4f8b"
C_OCCUPIED_FILL = "#d4e9fb"       # other instances' states (animation of all instances)
C_RELEASED = "#4a5568"
C_ACCEPTED = "#b7791f"
C_PROPOSED = "#6b46c1"
C_TAKEN = "#e53e3e"
C_TEXT = "#1a202c"
C_ID = "#5a6472"
TAKEN_WIDTH = "2.5"
CURRENT_WIDTH = "2"

STYLE = {"node_fill": C_NODE_FILL, "node_line": C_NODE_LINE, "current_fill": C_CURRENT_FILL,
         "current_line": C_CURRENT_LINE, "occupied_fill": C_OCCUPIED_FILL, "released": C_RELEASED,
         "accepted": C_ACCEPTED, "proposed": C_PROPOSED, "taken": C_TAKEN,
         "taken_width": TAKEN_WIDTH, "current_width": CURRENT_WIDTH}


def status_color(status: str) -> str:
    """The colour of a row's status: released, accepted or proposed."""
    return {"accepted": C_ACCEPTED, "proposed": C_PROPOSED}.get(status, C_RELEASED)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _e(s) -> str:
    return label_text(s)


def _attr(s: str) -> str:
    """A plain DOT attribute value: graphviz reads backslashes as escapes (\\N, \\l), so double them."""
    return _NOT_XML.sub("\ufffd", s).replace("\\", "\\\\")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", s)


def node_id(table: Table, state: str) -> str:
    """The SVG id of a state's node: "kvs_<table>_<state>_<index>" (other characters become "_";
    no "-", which graphviz would write as an entity)."""
    return f"kvs_{_slug(table.name)}_{_slug(state)}_{table.states.index(state)}"


def edge_id(table: Table, row: Row | int) -> str:
    """The SVG id of the arrow a row is drawn on: "kve_<table>_<i>", i the index of the table's first
    row with the same source and target (every row of that pair shares the arrow, whichever are shown)."""
    r = table.rows[row] if isinstance(row, int) else table.rows[row_index(table, row)]
    i = next(j for j, o in enumerate(table.rows) if (o.from_state, o.to_state) == (r.from_state, r.to_state))
    return f"kve_{_slug(table.name)}_{i}"


def edge_rows(table: Table, rows: Iterable[int]) -> dict[str, list[int]]:
    """The arrows drawn for these row indexes: edge id -> its rows, in table order."""
    out: dict[str, list[int]] = {}
    for i in sorted(rows):
        out.setdefault(edge_id(table, i), []).append(i)
    return out


def label_rows(table: Table, rows: list[int], wrap: bool = False) -> list[int]:
    """The row each line of an arrow's label belongs to (graphviz writes one <text> per line, in
    order): what the animation recolours when one of the arrow's rows is taken."""
    return [i for i in rows for _ in _row_lines(table.rows[i], wrap)]


def shown_rows(table: Table, show_proposed: bool, include_rows: Iterable[int] = ()) -> list[int]:
    """The row indexes state_graph draws (include_rows: drawn even when hidden)."""
    return _visible(table, show_proposed, include_rows, ())[0]


def edge_color(table: Table, rows: list[int]) -> str:
    """An arrow's line colour: released if any of its rows is, else its first row's status colour."""
    released = [i for i in rows if _released(table.rows[i])]
    return C_RELEASED if released else status_color(table.rows[rows[0]].status)


def row_index(table: Table, row: Row) -> int:
    """The index of `row` in its table; ValueError when it is not one of its rows."""
    try:
        return table.rows.index(row)
    except ValueError:
        raise ValueError(f"{table.name}: {row} is not a row of this table") from None


def _released(row: Row) -> bool:
    return row.status not in ("accepted", "proposed")


def _visible(table: Table, show_proposed: bool, extra_rows: Iterable[int], extra_states: Iterable[str]):
    """(row indexes, states) drawn."""
    rows = [i for i, r in enumerate(table.rows) if show_proposed or _released(r)]
    rows = sorted(set(rows) | set(extra_rows))
    if show_proposed:
        return rows, list(table.states)
    touched_any = {s for r in table.rows for s in (r.from_state, r.to_state)}
    touched_shown = {s for i in rows for s in (table.rows[i].from_state, table.rows[i].to_state)}
    keep = set(extra_states) | {table.initial}
    states = [s for s in table.states if s in keep or s in touched_shown or s not in touched_any]
    return rows, states


def _node_label(table: Table, state: str) -> str:
    parts = [f'<FONT COLOR="{C_TEXT}">{_e(state)}</FONT>']
    if table.state_ids and state in table.state_ids:
        parts.append(f'<FONT POINT-SIZE="10" COLOR="{C_ID}">id {_e(table.state_ids[state])}</FONT>')
    return "<" + "<BR/>".join(parts) + ">"


def _split_event(event: str, longer_than: int = 16) -> list[str]:
    """A long event name on two lines, cut after the "-" or " " nearest its middle
    ("transactional-id-expired" -> "transactional-", "id-expired"); short ones whole."""
    cuts = [i for i, c in enumerate(event) if c in "- "]
    if len(event) <= longer_than or not cuts:
        return [event]
    i = min(cuts, key=lambda i: abs(i + 0.5 - len(event) / 2))
    return [event[:i + 1], event[i + 1:]]


def _row_lines(row: Row, wrap: bool) -> list[tuple[str, str | None]]:
    """A row's lines in its arrow's label: (text, point size or None)."""
    lines: list[tuple[str, str | None]] = [(p, None) for p in (_split_event(row.event) if wrap else [row.event])]
    if not _released(row):
        lines.append((kip_label(row), "10"))
    return lines


def kip_label(row: Row) -> str:
    """A row Kafka never ran, as its arrow names it: "KIP-1289 · proposed"; a row of a KIP that has
    shipped (its page says more than Kafka did) "KIP-516 page · not shipped", never "proposed"."""
    if row.kip and kip_release(row.kip):
        return f"{row.kip} page · not shipped"
    return " · ".join(p for p in (row.kip, row.status) if p)


def _edge_label(table: Table, rows: list[int], taken_i: int | None, wrap: bool = False, loop: bool = False) -> str:
    """The label of an arrow: each row's event (and KIP line) in the row's colour, the taken row's red.
    A self-loop's label keeps LOOP_GAP points from its loop: graphviz sets it against the loop, whose
    arrowhead (bold when taken) then covers the first letter."""
    lines = []
    for i in rows:
        color = C_TAKEN if i == taken_i else status_color(table.rows[i].status)
        for text, size in _row_lines(table.rows[i], wrap):
            pt = f' POINT-SIZE="{size}"' if size else ""
            lines.append(f'<FONT{pt} COLOR="{color}">{_e(text)}</FONT>')
    if loop:
        return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0"><TR><TD WIDTH="{LOOP_GAP}"></TD>'
                f'<TD>{"<BR/>".join(lines)}</TD></TR></TABLE>>')
    return "<" + "<BR/>".join(lines) + ">"


LOOP_GAP = 6


def _source_lines(source: str, width: int = 64) -> list[str]:
    """A table's source as lines: each "; "-separated file on its own, long ones wrapped before " ("."""
    import textwrap
    out: list[str] = []
    for file in source.split("; "):
        out += textwrap.wrap(file, width, break_long_words=False, break_on_hyphens=False) or [""]
    return out


def _title(table: Table, show_proposed: bool) -> str:
    n_rel = sum(1 for r in table.rows if _released(r))
    kips = sorted({r.kip for r in table.rows if not _released(r) and r.kip})
    lines = [f'<FONT POINT-SIZE="14"><B>{_e(table.name)}</B></FONT>'
             f'<FONT POINT-SIZE="10" COLOR="#555555">  state machine</FONT>']
    if table.source:
        # the source, one file a line and wrapped: one long line set the whole picture's width (the
        # replica machine: 1264 px instead of 605), so it was scaled to text under 8 px (issue 25)
        for part in _source_lines(table.source):
            lines.append(f'<FONT POINT-SIZE="10" COLOR="#555555">{_e(part)}</FONT>')
    # each part of the key on its own line: graphviz's SVG drops the spaces between FONT runs
    # (rendered "(11 rows)dashed:")
    lines.append(f'<FONT POINT-SIZE="10" COLOR="{C_RELEASED}">solid: released Kafka ({n_rel} rows)</FONT>')
    shipped = [k for k in kips if kip_release(k)]
    for k in shipped if show_proposed else ():     # a released KIP's page, where it says more than Kafka did
        lines.append(f'<FONT POINT-SIZE="10" COLOR="{C_PROPOSED}">dashed: as the {_e(k)} page says, not '
                     f'shipped ({_e(k)} released in {_e(kip_release(k))})</FONT>')
    if set(kips) - set(shipped) and show_proposed:
        lines.append(f'<FONT POINT-SIZE="10" COLOR="{C_PROPOSED}">dashed: accepted/proposed '
                     f'({_e(", ".join(k for k in kips if k not in shipped))})</FONT>')
    if kips and not show_proposed:
        lines.append(f'<FONT POINT-SIZE="10" COLOR="#777777">({_e(", ".join(kips))} rows hidden)</FONT>')
    return "<" + '<BR ALIGN="LEFT"/>'.join(lines) + '<BR ALIGN="LEFT"/>>'


def _as_states(current) -> list[str]:
    if current is None:
        return []
    if isinstance(current, str):
        return [current]
    return list(current)


def state_diagram(table: Table, *, current: str | Iterable[str] | None = None, taken: Row | None = None,
                  show_proposed: bool = True, occupied: Iterable[str] = (), title: bool = True,
                  rankdir: str = "auto") -> graphviz.Digraph:
    """The table as a graphviz Digraph (see the module docstring).

    rankdir "auto": left to right, unless that is wider than a notebook's output area
    (render.FIT_PX) and top to bottom is narrower (less scaled down, larger text).

    current: a state (or several) to fill; occupied: states filled lightly (other instances of the
    machine, as the animation of all instances shows them); taken: a Row of the table, drawn bold
    and red (drawn even when show_proposed=False would hide it)."""
    cur = _as_states(current)
    for s in [*cur, *occupied]:
        if s not in table.states:
            raise ValueError(f"{table.name}: unknown state {s!r} (states: {', '.join(table.states)})")
    taken_i = row_index(table, taken) if taken is not None else None
    if rankdir != "auto":
        return state_graph(table, cur, taken_i, show_proposed, set(occupied), [], [], title, rankdir)
    return auto_layout(lambda d: state_graph(table, cur, taken_i, show_proposed, set(occupied), [], [], title, d))


# rankdir "auto" tries these in order and keeps the first that fits a notebook, else the narrowest:
# "TB-compact" is top to bottom with states packed closer, ranks further apart and long event names
# on two lines (the transaction machine's 29 rows: 2000 px left to right, 1780 top to bottom, 1115
# compact -- its 10 pt text stays over 9 px in a notebook's ~840 px output area; issue 25). With the
# rows of one source and target on one arrow it is 790 px compact, cutting only names over 16
# characters: "add-partitions" whole, so a label listing several events reads one event a line
LAYOUTS = ("LR", "TB", "TB-compact")
# each direction is tried as it is, then with ranks or states further apart, until dot draws no line
# through a label (draw.crossings): top to bottom, the classic-group table's edge Empty -> Dead
# crosses the label of Dead's self-loop; with ranks 0.15 in further apart it does not
SPACINGS = {"": {}, "+ranks": {"ranksep": 0.15}, "+states": {"nodesep": 0.45}}


def auto_layout(make) -> graphviz.Digraph:
    """make(layout) for the first layout (LAYOUTS, each with SPACINGS) that fits FIT_PX with no
    line through a label; else the first that fits, fewest crossed first; else the narrowest (a
    wide picture is scaled to the notebook's width: the narrower, the larger its text). The graph's
    `kipviz_layout` names the layout, to draw its other frames alike (state_graph's rankdir)."""
    from .crossings import crossings
    from .render import FIT_PX, layout_json
    narrowest, fitting = None, None          # (width, graph); (crossings, graph)
    for d in LAYOUTS:
        for spacing in SPACINGS:
            g = make(d + spacing)
            g.kipviz_layout = d + spacing
            layout = layout_json(g)              # one dot run: the width and the crossings
            w = float(layout["bb"].split(",")[2]) * 96 / 72      # points -> px, as render.layout_size
            if narrowest is None or w < narrowest[0]:
                narrowest = (w, g)
            if w > FIT_PX:
                break                        # more space only widens it
            crossed = len(crossings(layout))
            if not crossed:
                return g
            if fitting is None or crossed < fitting[0]:
                fitting = (crossed, g)
    return (fitting or narrowest)[1]


def state_graph(table: Table, cur: list[str], taken_i: int | None, show_proposed: bool, occ: set[str],
           include_rows: Iterable[int], include_states: Iterable[str], title: bool, rankdir: str) -> graphviz.Digraph:
    """state_diagram's body; include_rows/include_states are drawn even when show_proposed=False
    hides them (the animation's one layout must hold every row any frame takes)."""
    extra_rows = [*include_rows] + ([taken_i] if taken_i is not None else [])
    extra_states = [*cur, *occ, *include_states]
    for i in extra_rows:
        extra_states += [table.rows[i].from_state, table.rows[i].to_state]
    rows, states = _visible(table, show_proposed, extra_rows, extra_states)

    rankdir, _, spacing = rankdir.partition("+")
    compact = rankdir.endswith("-compact")
    more = SPACINGS.get("+" + spacing, {}) if spacing else {}
    nodesep, ranksep = (0.05, 0.6) if compact else (0.35, 0.45)
    g = graphviz.Digraph(
        name=f"machine_{_slug(table.name)}",
        graph_attr={"rankdir": rankdir.removesuffix("-compact"), "fontname": FONT, "labelloc": "t", "labeljust": "l",
                    "label": _title(table, show_proposed) if title else "",
                    "nodesep": f"{nodesep + more.get('nodesep', 0):g}", "ranksep": f"{ranksep + more.get('ranksep', 0):g}",
                    "pad": "0.3", "bgcolor": "white"},
        node_attr={"fontname": FONT, "fontsize": "11", "shape": "ellipse", "style": "filled",
                   "fillcolor": C_NODE_FILL, "color": C_NODE_LINE, "margin": "0.04", "penwidth": "1.2"},
        edge_attr={"fontname": FONT, "fontsize": "10", "arrowsize": "0.7", "color": C_RELEASED},
    )
    g.node("__start", "", shape="point", width="0.14", color=C_NODE_LINE, fillcolor=C_NODE_LINE,
           id=f"kvs_{_slug(table.name)}_start")
    for s in states:
        attrs = {"id": node_id(table, s), "label": _node_label(table, s), "tooltip": _attr(s)}
        if s in table.terminal:
            attrs["shape"] = "doublecircle"
        if s in cur:
            attrs.update(fillcolor=C_CURRENT_FILL, color=C_CURRENT_LINE, penwidth=CURRENT_WIDTH)
        elif s in occ:
            attrs["fillcolor"] = C_OCCUPIED_FILL
        g.node(node_id(table, s), **attrs)
    g.edge("__start", node_id(table, table.initial), id=f"kve_{_slug(table.name)}_start", color=C_NODE_LINE)
    for ident, group in edge_rows(table, rows).items():
        r = table.rows[group[0]]
        attrs = {"id": ident, "color": edge_color(table, group)}
        if not any(_released(table.rows[i]) for i in group):
            attrs["style"] = "dashed"
        if taken_i in group:
            attrs.update(color=C_TAKEN, penwidth=TAKEN_WIDTH)
        attrs["tooltip"] = _attr("\n".join(_tip(table.rows[i]) for i in group))
        g.edge(node_id(table, r.from_state), node_id(table, r.to_state),
               label=_edge_label(table, group, taken_i, compact, r.from_state == r.to_state), **attrs)
    return g


def _tip(r: Row) -> str:
    tip = f"{r.from_state} → {r.to_state} on {r.event}" + (f" ({kip_label(r)})" if not _released(r) else "")
    return tip + (f": {r.note}" if r.note else "")


def tables(package: str = "kipviz.broker.tables") -> dict[str, Table]:
    """Every module-level Table in `package` (the broker model's tables), by table name, sorted."""
    try:
        pkg = importlib.import_module(package)
    except ModuleNotFoundError as e:
        if e.name is not None and package.startswith(e.name):
            return {}            # the package is not there (yet)
        raise
    found: dict[str, Table] = {}
    for mod in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
        if mod.name.startswith("_"):
            continue
        m = importlib.import_module(f"{package}.{mod.name}")
        for value in vars(m).values():
            if isinstance(value, Table):
                found.setdefault(value.name, value)
    for value in vars(pkg).values():       # tables defined in the package itself
        if isinstance(value, Table):
            found.setdefault(value.name, value)
    return dict(sorted(found.items()))
