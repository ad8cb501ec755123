"""Moved to kipviz.course.runner (the course package); this name stays an alias."""
import sys

from .course import runner as _moved

sys.modules[__name__] = _moved
