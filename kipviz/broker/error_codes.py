"""Moved to kipviz.schema.error_codes (the lowest layer, importable without the broker); this name stays an alias."""
import sys

from ..schema import error_codes as _moved

sys.modules[__name__] = _moved
