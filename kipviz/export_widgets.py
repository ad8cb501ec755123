"""Moved to kipviz.course.export_widgets (the course package); this name stays an alias."""
import sys

from .course import export_widgets as _moved

sys.modules[__name__] = _moved
