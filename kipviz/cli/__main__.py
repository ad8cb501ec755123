"""`python -m kipviz.cli`: the same entry point as the `kipviz` command."""
import sys

from .core import main

sys.exit(main())
