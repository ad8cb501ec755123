# %% [markdown]
# # kipviz · message explorer
#
# Pick a request or response and a version: the wire diagram, an example value (edit the JSON, then
# click outside the box) and its annotated bytes follow. Paste hex — a whole request with size and
# header, a request without size, or a body of the selected message — to decode it. Every version
# is labelled released, accepted or proposed.

# %%
from kipviz.widgets import Explorer

Explorer("TxnOffsetCommit", 6)
