"""A logging handler that keeps a client's error-level lines (a client error line fails a test)."""
from __future__ import annotations

import logging


class ErrorLines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        if record.levelno >= logging.ERROR:
            self.lines.append(f"{record.name}: {record.getMessage()}")
