# %% [markdown]
# # kipviz · a transaction, step by step
#
# The transaction coordinator's state machine during a read-process-write transaction
# (scenario `txn.read_process_write_commit`): a consumer reads, a producer writes and commits the
# consumer's offsets inside the transaction, then commits. Press play, or drag the slider; each
# frame names the request that moved the state.

# %%
from kipviz import scenarios
from kipviz.draw.animate import animation
from kipviz.widgets import player

trace = scenarios.run("txn.read_process_write_commit")
player(animation(trace, "transaction"))
