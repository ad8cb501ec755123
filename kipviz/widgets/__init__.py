"""Jupyter widgets: the message Explorer, the HexView annotated hex dump, and the animation Player.

    from kipviz.widgets import Explorer, HexView, show_hex
    Explorer()                                    # pick a message, edit JSON, paste hex
    show_hex(frame)                               # a request with header, annotated
    ExchangeList(read_pcap("t.pcap"))             # a capture's exchanges: pick one, see its bytes
"""
from .exchanges import ExchangeList
from .explorer import Explorer
from .hexview import HAVE_ANYWIDGET, HexView, show_hex
from .player import Player, player
from .strip_player import strip_player
from .textbox import TextBox

__all__ = ["Explorer", "ExchangeList", "HexView", "show_hex", "HAVE_ANYWIDGET", "Player", "player", "strip_player", "TextBox"]
