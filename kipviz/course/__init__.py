"""The notebooks as a course: each notebook's outline (outlines), the prediction exercises
(exercises) and their checks (teach), the headless runner (runner) and the static HTML export
(export, export_widgets).

`from kipviz import course; course.contents(...)` keeps working: the outline functions are
re-exported here; everything else is imported from its own module (kipviz.course.exercises, ...)."""
from .outlines import KIPS, Contents, Outline, contents, course, kip_link, outline, problems

__all__ = ["KIPS", "Contents", "Outline", "contents", "course", "kip_link", "outline", "problems"]
