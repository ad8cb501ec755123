"""No line through a label in a state-machine picture: draw.crossings reads dot's layout (json) and
finds where a stroke passes through a text; machines.auto_layout keeps the first layout that fits a
notebook with none. The check can fail: the classic-group table drawn top to bottom as it is (the
edge Empty -> Dead enters Dead across its self-loop's label) and a hand-made graph are reported."""
from __future__ import annotations

import pytest

from kipviz.draw import machines as M
from kipviz.draw.crossings import crossings, graph_crossings
from kipviz.draw.render import FIT_PX, layout_size

TABLES = M.tables()


def _candidates():
    return [d + s for d in M.LAYOUTS for s in M.SPACINGS]


def test_a_line_through_a_label_is_found():
    g = M.state_diagram(TABLES["classic-group"], rankdir="TB")
    assert ("group-removed", "kve_classic_group_14") in graph_crossings(g)


def test_a_hand_made_crossing_is_found_and_a_clear_label_is_not():
    text = [{"op": "F", "size": 10.0, "face": "Helvetica"},
            {"op": "T", "pt": [50.0, 50.0], "align": "c", "width": 40.0, "text": "label"}]
    edge = {"tail": 0, "head": 1, "id": "e", "_draw_": [{"op": "b", "points": [[50, 0], [50, 30], [50, 70], [50, 100]]}]}
    assert crossings({"objects": [{"name": "n", "_ldraw_": text}], "edges": [edge]}) == [("label", "e")]
    edge["_draw_"][0]["points"] = [[90, 0], [90, 30], [90, 70], [90, 100]]      # 20 pt right of the text's end
    assert crossings({"objects": [{"name": "n", "_ldraw_": text}], "edges": [edge]}) == []
    outline = {"name": "n", "_ldraw_": text, "_draw_": [{"op": "e", "rect": [50, 53, 20, 4]}]}
    assert crossings({"objects": [outline], "edges": []}) == []     # a node's outline is its own label's box


@pytest.mark.parametrize("proposed", [True, False], ids=["proposed", "released"])
@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_chosen_layout_fits_and_crosses_no_label_where_a_layout_can(name, proposed):
    table = TABLES[name]
    g = M.state_diagram(table, show_proposed=proposed)
    crossed = graph_crossings(g)
    if not crossed:
        return
    # only when no layout that fits is clear, the fitting one with fewest crossings
    fits = {}
    for d in _candidates():
        c = M.state_diagram(table, show_proposed=proposed, rankdir=d)
        if layout_size(c)[0] <= FIT_PX:
            fits[d] = len(graph_crossings(c))
    assert fits and min(fits.values()) == len(crossed) > 0, (g.kipviz_layout, fits)


def test_the_classic_group_animation_of_a_capture_is_clear():
    from kipviz.explain import bundled, explain
    anim = explain(bundled("late_commit")).states.animation("classic-group")
    g = anim._graph(None)
    assert graph_crossings(g) == [] and layout_size(g)[0] <= FIT_PX, g.kipviz_layout
