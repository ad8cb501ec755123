"""The `kipviz` command, one module per command group: core.py (the parser, `main`, and the schema
and scenario commands: list, decode, wire, diff, scenarios, scenario), review.py (review), export.py
(export), spark.py (sample-data and the Spark analyses), serve.py (serve)."""
from .core import build_parser, check_out, main

__all__ = ["build_parser", "check_out", "main"]
