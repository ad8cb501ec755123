"""Exactly-once checks over a run's events (kipviz.schema.events). See kipviz/eos/checker.py for
the read-process-write convention (the "kipviz-source" header) and the rules."""
from .checker import (
    AT_LEAST_ONCE,
    NOT_COLOCATED,
    SOURCE_HEADER,
    VIOLATION,
    Report,
    ShareEosChecker,
    Transition,
    check_share_eos,
    parse_source,
    source_header,
)

__all__ = ["check_share_eos", "ShareEosChecker", "Transition", "Report", "SOURCE_HEADER", "source_header", "parse_source",
           "AT_LEAST_ONCE", "VIOLATION", "NOT_COLOCATED"]
