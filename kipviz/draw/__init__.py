"""kipviz pictures, derived from the schema definitions (never drawn by hand).

    wire_diagram(name, version, example=True)   byte layout of a message version (graphviz Digraph)
    wire_svg(name, version, ...)                 the same as SVG text
    version_diff(name, a, b) / diff_table / diff_diagram    what changed between two versions
    version_history(name) / history_html(name)  fields x versions matrix with status and KIPs
    to_svg / to_png / to_html / save            export helpers (need graphviz's `dot`)
    state_diagram(table) / Animation(table, events)   state machines from their tables, animated
    sequence_diagram(events)                    a scenario's messages between lifelines (SVG)
    record_strip(events)                        a share partition's records over time (state, deliveries, owner)
    compaction_picture(events, topic, p)        a partition before and after a log cleaner pass (SVG)
"""
from .animate import Animation
from .compaction import CompactionPicture, compaction_picture
from .diff import diff_diagram, diff_table, version_diff
from .history import history_html, version_history
from .machines import state_diagram, tables
from .record_strip import RecordStrip, record_strip, share_state_diagrams
from .render import DotNotFoundError, dot_available, save, to_html, to_png, to_svg
from .sequence import sequence_diagram, sequence_html
from .wire import header_info, wire_diagram, wire_svg

__all__ = ["wire_diagram", "wire_svg", "header_info", "version_diff", "diff_table",
           "diff_diagram", "version_history", "history_html", "to_svg", "to_png",
           "to_html", "save", "DotNotFoundError", "dot_available", "state_diagram", "tables",
           "sequence_diagram", "sequence_html", "Animation", "record_strip", "RecordStrip",
           "share_state_diagrams", "compaction_picture", "CompactionPicture"]

try:  # written by another part of the kit; the package must import without it
    from .hexdump import hexdump_html  # noqa: F401
except ImportError:  # pragma: no cover - depends on which parts are installed
    pass
else:
    __all__.append("hexdump_html")
