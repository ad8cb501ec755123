"""Moved to kipviz.workloads.samples (one home for workloads); this name stays an alias."""
import sys

from ..workloads import samples as _moved

sys.modules[__name__] = _moved
