"""Writes the Voilà dashboards in notebooks/voila/ (code hidden when served: `make voila`).

Each dashboard calls the same library functions as the notebooks (the Explorer widget, a
scenario's animation in the player); nothing here is dashboard-only code."""

from nbbuild import code, md, write_notebook

write_notebook("voila/explorer.ipynb", [
    md("""# kipviz · message explorer

Pick a request or response and a version: the wire diagram, an example value (edit the JSON, then
click outside the box) and its annotated bytes follow. Paste hex — a whole request with size and
header, a request without size, or a body of the selected message — to decode it. Every version
is labelled released, accepted or proposed."""),
    code("""from kipviz.widgets import Explorer

Explorer("TxnOffsetCommit", 6)"""),
])

write_notebook("voila/transaction_animation.ipynb", [
    md("""# kipviz · a transaction, step by step

The transaction coordinator's state machine during a read-process-write transaction
(scenario `txn.read_process_write_commit`): a consumer reads, a producer writes and commits the
consumer's offsets inside the transaction, then commits. Press play, or drag the slider; each
frame names the request that moved the state."""),
    code("""from kipviz import scenarios
from kipviz.widgets import player

trace = scenarios.run("txn.read_process_write_commit")
player(trace.animation("transaction"))"""),
])
