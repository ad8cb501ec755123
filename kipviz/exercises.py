"""Moved to kipviz.course.exercises (the course package); this name stays an alias."""
import sys

from .course import exercises as _moved

sys.modules[__name__] = _moved
