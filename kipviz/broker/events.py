"""Moved to kipviz.schema.events (the lowest layer, importable without the broker); this name stays an alias."""
import sys

from ..schema import events as _moved

sys.modules[__name__] = _moved
