"""Moved to kipviz.course.teach (the course package); this name stays an alias."""
import sys

from .course import teach as _moved

sys.modules[__name__] = _moved
