"""`python -m kipviz`: the same entry point as the `kipviz` command (kipviz.cli)."""
import sys

from .cli.core import main

sys.exit(main())
