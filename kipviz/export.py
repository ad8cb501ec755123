"""Moved to kipviz.course.export (the course package); this name stays an alias."""
import sys

from .course import export as _moved

sys.modules[__name__] = _moved
