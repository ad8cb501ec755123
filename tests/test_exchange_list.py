"""kipviz.widgets.ExchangeList: a capture's exchanges to pick from; the Explorer shows each side's
fields and hex, and a side the capture does not hold is one readable line."""
from __future__ import annotations

import pytest

from kipviz.capture import read_pcap
from kipviz.explain import MISTAKES, bundled
from kipviz.widgets import ExchangeList


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_every_exchange_shows_on_both_sides(name):
    exs = read_pcap(bundled(name))
    w = ExchangeList(exs)
    assert len(w.pick.options) == sum(1 for ex in exs if ex["api"] and ex["request_frame"])
    for _, i in w.pick.options:
        for side in ("request", "response"):
            if exs[i][f"{side}_frame"] is None:
                continue
            assert w.show(i, side), (i, side, w.error)
            assert w.explorer.spec.name == exs[i]["api"] + side.capitalize() and w.error == ""
            assert w.explorer.current_bytes == exs[i][f"{side}_frame"]


def test_picking_in_the_list_and_the_errors_in_the_labels():
    exs = read_pcap(bundled("zombie_producer"))
    w = ExchangeList(exs)
    bad = next(i for label, i in w.pick.options if "INVALID_PRODUCER_EPOCH" in label)
    w.side.value = "response"
    w.pick.value = bad
    assert w.explorer.spec.name == "ProduceResponse" and w.error == ""


def test_a_side_not_in_the_capture_is_one_line():
    exs = read_pcap(bundled("late_commit"))
    i = next(i for i, ex in enumerate(exs) if ex["request_frame"] and ex["response_frame"] is None)
    w = ExchangeList(exs)
    assert not w.show(i, "response") and w.error == f"exchange #{i} has no response in the capture"
