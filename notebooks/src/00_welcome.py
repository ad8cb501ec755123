# %% [markdown]
# # 00 · Welcome to kipviz
#
# kipviz teaches Apache Kafka's wire protocol and coordinators from **one set of schema
# definitions** written in Kafka's own JSON format. Everything you see — bytes, tables, and later
# diagrams and animations — is computed from those definitions by the same library functions the
# tests use.
#
# **Learning objectives** — after this notebook you can
# 1. list which RPCs and versions the kit covers and tell *released*, *accepted* and *proposed* apart;
# 2. encode a request to bytes, decode it back, and see which bytes hold which field;
# 3. read one of the kit's error messages and find the offending byte.
#
# **Prerequisites:** basic Python; no Kafka cluster needed. **Time to complete:** about 15 minutes.
#
# **The KIPs this kit follows:** [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) (topic IDs), [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol) (new consumer groups),
# [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (TxnOffsetCommit v6, released in Kafka 4.4) and [KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups) (transactional acknowledgements for share groups, proposed).
#
# **On Binder?** Everything runs in your browser's session: nothing to install. A Binder session is
# temporary — download a notebook (File → Download) to keep your answers. If it is slow, see
# `docs/workshop.md` ("When Binder is slow").

# %%
from kipviz import codec
from kipviz.course.exercises import exercise
from kipviz.schema.catalog import catalog, summary
from kipviz.table import Table

Table(summary())

# %% [markdown]
# ## 1. Released, accepted, proposed
#
# Every version carries a label. *Released* versions name the first Apache Kafka release that
# shipped them (and the release that removed them, if any); *accepted* means the KIP is accepted
# but no release has it as a stable version yet (at most as an opt-in early access); *proposed*
# means the KIP is still under discussion. Labels move as Kafka ships: TxnOffsetCommit v6 (KIP-1319)
# was *accepted* while it was only on Kafka's trunk, and is *released* since Kafka 4.4.0, the newest
# release the kit models. Every TxnOffsetCommit version is released now:

# %%
rows = catalog("request")
Table([r for r in rows if r["api"] == "TxnOffsetCommit"],
      columns=["version", "flexible", "status", "since", "kip", "change"])

# %% [markdown]
# The versions that are not (only) released — accepted early-access versions and proposals:

# %%
Table([r for r in rows if r["status"] != "released"],
      columns=["api", "version", "status", "since", "removed", "kip", "change"])

# %% [markdown]
# ## 2. Bytes from a definition
#
# The example below is the TxnOffsetCommit v5 request from a public wire-format page (Conduktor's; the official reference is [Kafka's protocol guide](https://kafka.apache.org/protocol)).
# `codec.encode` turns the plain dictionary into bytes; `codec.decode` turns them back.

# %%
example = {
    "TransactionalId": "tx-orders-001", "GroupId": "order-processors",
    "ProducerId": 0, "ProducerEpoch": 12, "GenerationIdOrMemberEpoch": 5,
    "MemberId": "consumer-1-abc123", "GroupInstanceId": None,
    "Topics": [{"Name": "orders", "Partitions": [
        {"PartitionIndex": 3, "CommittedOffset": 150382, "CommittedLeaderEpoch": 12, "CommittedMetadata": None}]}],
}
v5 = codec.encode("TxnOffsetCommitRequest", 5, example)
print(len(v5), "bytes:", v5.hex(" "))
codec.decode("TxnOffsetCommitRequest", 5, v5) == example

# %% [markdown]
# `annotate` walks the same bytes and says which byte range holds which field — length
# prefixes, array counts and tag buffers included. Together the spans cover every byte exactly once.

# %%
spans = codec.annotate("TxnOffsetCommitRequest", 5, v5)
Table([s._asdict() | {"bytes": v5[s.start:s.end].hex(" ")} for s in spans])

# %% [markdown]
# ## 3. When bytes are wrong
#
# Decoders never guess. Cut the message short, and the error names the byte offset and the field:

# %%
try:
    codec.decode("TxnOffsetCommitRequest", 5, v5[:40])
except codec.DecodeError as e:
    print(e)          # one readable line: where, which field, what was expected
    print("offset:", e.offset, "path:", e.path)

# %% [markdown]
# ## 4. Exercise — what do topic IDs cost here?
#
# KIP-1319's TxnOffsetCommit v6 replaces each topic **name** with a 16-byte topic **ID**
# (KIP-516). For this example with the topic `orders`, how many bytes **longer** is the v6
# request than the v5 one? (A compact string costs one length byte plus its characters.)
#
# Replace `...` with your answer and run the cell; the cell below checks it (and keeps a
# solution folded away).

# %% kipviz={"exercise": "00-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "00-1"}
exercise('00-1').check(answer)

# %% [markdown]
# ## How to use the kit
#
# * `notebooks/` are numbered; each starts with objectives, prerequisites and its time, has exercises
#   (predict, then run the check below your answer: a hint when it is wrong, and a folded
#   "Show solution"), and ends with a summary. The table below is read
#   from the notebooks themselves; click a name to open it.
# * The same functions work from Python: `kipviz.codec.encode/decode/annotate`,
#   `kipviz.codec.decode_request(frame)` for a whole size-prefixed request.
# * Any official Kafka schema directory loads too: `kipviz.schema.loader.load_dir(path)`.
# * `kipviz export` writes all notebooks, run, as a static HTML site whose animations play without Python.

# %%
from kipviz import course

course.contents(".")

# %% [markdown]
# ## Summary
#
# * One set of definitions drives the codec; every version is labelled released, accepted or proposed.
# * `encode` → bytes, `decode` → the same dictionary, `annotate` → which bytes are which field.
# * Bad bytes give one readable error with the byte offset and field path.
