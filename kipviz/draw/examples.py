"""Moved to kipviz.records.examples (example values are data, not drawing; an example's record
batch is written by records/, so that is the lowest layer that can hold them); this name stays an alias."""
import sys

from ..records import examples as _moved

sys.modules[__name__] = _moved
