"""strip_player(strip): a notebook widget that plays a share-partition RecordStrip in the browser.

    from kipviz.draw.record_strip import record_strip
    from kipviz.widgets.strip_player import strip_player
    strip_player(record_strip(cluster.events, group="sg"))

The same widget as kipviz.widgets.player (Play + IntSlider jslink'ed to each other and to the frame
view; the distinct pictures and the captions go to the browser once, no kernel round trip per
frame): a RecordStrip offers the player_data() an Animation does."""
from __future__ import annotations

from .player import Player

__all__ = ["strip_player"]


def strip_player(strip, *, fps: float = 2) -> Player:
    """A widget that plays `strip` (a kipviz.draw.record_strip.RecordStrip) client-side."""
    return Player(strip, fps=fps)
