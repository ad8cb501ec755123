"""Transition tables of the broker model's state machines, one table per module.

Each module holds exactly one ``TABLE`` (a kipviz.broker.machine.Table). The model executes it
through a Machine and the diagram code draws the same table, so the picture cannot drift from
the behaviour (h11's design)."""
