"""A capture's exchanges as a list to pick from: the Explorer below shows the picked request or
response as its wire diagram, its fields (JSON) and its annotated hex.

    from kipviz.widgets import ExchangeList
    ExchangeList(explain("traffic.pcap").exchanges)     # or kipviz.capture.read_pcap(...)"""
from __future__ import annotations

import ipywidgets as W

from ..schema.error_codes import error_codes, name_of
from .explorer import Explorer

MAX_ROWS = 2000        # a list to pick from, not the whole capture: the cut is said in the widget


def _label(i: int, ex: dict) -> str:
    cid = ((ex.get("request") or {}).get("header") or {}).get("ClientId") or ex.get("client")
    codes = [c for c in error_codes((ex.get("response") or {}).get("body") or {}) if c]
    bad = f"  ✗ {', '.join(sorted({name_of(c) for c in codes}))}" if codes else ""
    return f"#{i:<4} {ex.get('api') or '?'} v{ex.get('version')}  {cid}{bad}"


class ExchangeList(W.VBox):
    """Pick an exchange (and its request or response side); the Explorer shows its bytes."""

    def __init__(self, exchanges, *, rows: int = 12):
        self.exchanges = list(exchanges)
        self._missing = ""
        shown = [(i, ex) for i, ex in enumerate(self.exchanges) if ex.get("api") and ex.get("request_frame")]
        self.pick = W.Select(options=[(_label(i, ex), i) for i, ex in shown[:MAX_ROWS]], rows=rows,
                             layout=W.Layout(width="100%"))
        self.side = W.ToggleButtons(options=["request", "response"], value="request")
        more = len(shown) - MAX_ROWS
        self.note = W.HTML(f"<small>the first {MAX_ROWS} of {len(shown)} exchanges</small>" if more > 0 else "")
        self.explorer = Explorer()
        self.missing = W.HTML("")             # a side the capture does not hold: one line
        self.pick.observe(lambda _: self.show(self.pick.value, self.side.value), "value")
        self.side.observe(lambda _: self.show(self.pick.value, self.side.value), "value")
        super().__init__([self.pick, self.note, self.side, self.missing, self.explorer])
        self.add_class("kipviz-exchanges")
        if shown:
            self.show(shown[0][0])

    @property
    def error(self) -> str:
        """One readable line ("" when the exchange shows): the missing side, or the Explorer's."""
        return self._missing or self.explorer.error

    def show(self, index: int | None, side: str = "request") -> bool:
        """Show exchange `index`'s request or response in the Explorer; False (and a line in
        `error`) when that side is not in the capture or does not decode."""
        if index is None:
            return False
        ex = self.exchanges[index]
        frame = ex.get(f"{side}_frame")
        self._missing = "" if frame else f"exchange #{index} has no {side} in the capture"
        self.missing.value = f"<span style='color:#b00'>{self._missing}</span>" if self._missing else ""
        if not frame:
            return False
        name = ex["api"] + ("Request" if side == "request" else "Response")
        return self.explorer.show_frame(frame, name, ex["version"], kind=side)
