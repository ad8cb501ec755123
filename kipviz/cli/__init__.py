"""The `kipviz` command, one module per command group: core.py (the parser, `main`, and the schema
and scenario commands: list, decode, wire, diff, scenarios, scenario), review.py (review), export.py
(export), spark.py (sample-data and the Spark analyses), serve.py (serve), lite.py (lite);
outputs.py (check_out: an output file can be written, checked before the work)."""
from .core import build_parser, main
from .outputs import check_out

__all__ = ["build_parser", "check_out", "main"]
