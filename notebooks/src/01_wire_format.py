# %% [markdown]
# # 01 · The wire format, byte by byte
#
# Every Kafka request and response is a size-prefixed frame: a 4-byte length, a header, and a body
# whose layout is fixed by the message's schema **and version**. This notebook builds that layout up
# from primitive types to whole messages, using pictures drawn from the kit's definitions — never
# by hand — so they cannot disagree with the bytes.
#
# **Learning objectives** — after this notebook you can
# 1. encode the primitive types by hand, including unsigned and zigzag varints;
# 2. explain what a *flexible* version changes (compact lengths, tag buffers) and how tagged fields are sent;
# 3. pick the right request and response header version for a message version;
# 4. read a wire diagram and an annotated hex dump of real bytes;
# 5. say what KIP-1319 changes in TxnOffsetCommit v6 and when a 16-byte topic ID (KIP-516) is smaller than a name.
#
# **Prerequisites:** `00_welcome`. **Time to complete:** about 35 minutes.
# **Sources:** [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) (topic IDs), [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol) (OffsetCommit/OffsetFetch with topic IDs), [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (TxnOffsetCommit v6).

# %%
import uuid

from IPython.display import HTML, SVG, display

from kipviz import codec
from kipviz.codec import varint
from kipviz.course.exercises import exercise
from kipviz.draw import diff_diagram, diff_table, history_html, to_svg, wire_diagram
from kipviz.draw.hexdump import hexdump_for, hexdump_request
from kipviz.records.examples import example_value
from kipviz.schema.model import FIXED_SIZES
from kipviz.table import Table

# %% [markdown]
# ## 1. Primitive types and varints
#
# Fixed-width integers are big-endian. Lengths and counts in flexible versions, and everything inside
# record batches, use **varints**: 7 bits per byte, low bits first, the top bit saying "more follows".
# Signed varints (records) are zigzag-encoded first so small negative numbers stay short.

# %%
Table([{"type": t, "bytes": n} for t, n in FIXED_SIZES.items()])

# %%
rows = []
for n in (0, 1, 127, 128, 300, 16_383, 16_384, 2**31 - 1):
    rows.append({"value": n, "unsigned varint": varint.uvarint_bytes(n).hex(" "),
                 "bytes": len(varint.uvarint_bytes(n))})
for n in (-1, 1, -64, 64):
    w = bytearray()
    varint.write_varint(w, n)
    rows.append({"value": n, "zigzag varint": bytes(w).hex(" "), "bytes": len(w)})
Table(rows)

# %% [markdown]
# ### Exercise 1
# A compact string stores its length **plus one** as an unsigned varint (zero means null). How many
# bytes does a compact string of 200 ASCII characters take in total?

# %% kipviz={"exercise": "01-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "01-1"}
exercise('01-1').check(answer)

# %% [markdown]
# ## 2. Flexible versions and tagged fields
#
# From its first *flexible* version a message uses compact strings, bytes and arrays (varint
# lengths) and ends every struct with a **tag buffer**: a count, then for each tagged field its tag,
# its size and its value. A tagged field is sent only when it differs from its default, so new
# optional fields cost nothing until used — and a reader skips tags it does not know (kipviz keeps
# them and writes them back byte for byte).

# %%
display(SVG(to_svg(wire_diagram("ApiVersionsResponse", 3, header=False))))

# %%
base = {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}], "ThrottleTimeMs": 0}
plain = codec.encode("ApiVersionsResponse", 3, base)
tagged = codec.encode("ApiVersionsResponse", 3, base | {"ZkMigrationReady": True})
print(len(plain), plain.hex(" "))
print(len(tagged), tagged.hex(" "), " <- tag count 1, tag 3, size 1, value 01")

# %% [markdown]
# ## 3. Headers
#
# The request header is v1 for non-flexible versions and v2 (adds a tag buffer) for flexible ones;
# `ClientId` keeps its int16 length even in v2 so that any broker can read who is calling. Responses
# use header v0 or v1 the same way — except **ApiVersions responses, always v0**, because a client
# that does not yet know the broker's versions must be able to read the answer.

# %%
Table([{"message": n, "version": v,
        "request header": codec.request_header_version(codec.plan(n + "Request", v).spec, v),
        "response header": codec.response_header_version(codec.plan(n + "Response", v).spec, v)}
       for n, v in [("Metadata", 8), ("Metadata", 9), ("ApiVersions", 3), ("TxnOffsetCommit", 2), ("TxnOffsetCommit", 3)]])

# %%
frame = codec.encode_request("Metadata", 9, example_value("MetadataRequest", 9), correlation_id=42)
hexdump_request(frame)

# %% [markdown]
# ## 4. Reading a diagram with real bytes
#
# The example-driven layout encodes a concrete value and prints each field's offset, size and value,
# so variable-length encodings are shown truthfully. This is the TxnOffsetCommit v5 example from the
# public wire-format page (Conduktor's; the official reference is [Kafka's protocol guide](https://kafka.apache.org/protocol)).

# %%
v5_value = example_value("TxnOffsetCommitRequest", 5)
display(SVG(to_svg(wire_diagram("TxnOffsetCommitRequest", 5, example=v5_value))))

# %% [markdown]
# ## 5. Decoding real bytes
#
# Paste bytes, get fields. The hex below is the seed's example body; `decode` gives the value and the
# annotated dump shows which byte is which (hover a byte, or click a field in the tree).

# %%
seed_hex = ("0e74782d6f72646572732d303031116f726465722d70726f636573736f727300000000000000000"
            "00c0000000512636f6e73756d65722d312d6162633132330002076f7264657273020000000300000000"
            "00024b6e0000000c00000000")
data = codec.parse_hex(seed_hex)
display(codec.decode("TxnOffsetCommitRequest", 5, data))
hexdump_for("TxnOffsetCommitRequest", 5, data)

# %% [markdown]
# ### Exercise 2
# In those bytes, at which offset does `ProducerEpoch` start? (Count: two compact strings of 13 and
# 16 characters, then an 8-byte ProducerId.) Check against `codec.annotate`.

# %% kipviz={"exercise": "01-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "01-2"}
exercise('01-2').check(answer)

# %% [markdown]
# ## 6. TxnOffsetCommit v5 → v6 (KIP-1319, released in Kafka 4.4)
#
# v6 shipped in Kafka 4.4.0; brokers of Kafka 4.0–4.3 serve up to v5. v6 replaces each topic **name** with its topic **ID** and renames `GenerationId` to
# `GenerationIdOrMemberEpoch` — a rename in the source only: the bytes are the same. The diff is
# computed from the two definitions:

# %%
display(diff_table("TxnOffsetCommitRequest", 5, 6))
display(SVG(to_svg(diff_diagram("TxnOffsetCommitRequest", 5, 6))))

# %%
HTML(history_html("TxnOffsetCommitRequest"))


# %% [markdown]
# ## 7. When does a topic ID make a message smaller?
#
# A compact string costs 1 length byte plus its characters; a topic ID always costs 16 bytes. Measure
# it on **real encoded messages** — TxnOffsetCommit v5 vs v6 and OffsetCommit v9 vs v10 — for topic
# names of growing length:

# %%
def sizes(name_len):
    name = "t" * name_len
    toc5 = example_value("TxnOffsetCommitRequest", 5)
    toc5["Topics"][0]["Name"] = name
    toc6 = dict(toc5, Topics=[{"TopicId": uuid.uuid4(), "Partitions": toc5["Topics"][0]["Partitions"]}])
    oc9 = example_value("OffsetCommitRequest", 9)
    oc9["Topics"] = oc9["Topics"][:1]
    oc9["Topics"][0]["Name"] = name
    oc10 = dict(oc9, Topics=[{"TopicId": uuid.uuid4(), "Partitions": oc9["Topics"][0]["Partitions"]}])
    v5, v6 = len(codec.encode("TxnOffsetCommitRequest", 5, toc5)), len(codec.encode("TxnOffsetCommitRequest", 6, toc6))
    return {"name length": name_len, "TxnOffsetCommit v5": v5, "TxnOffsetCommit v6": v6,
            "OffsetCommit v9": len(codec.encode("OffsetCommitRequest", 9, oc9)),
            "OffsetCommit v10": len(codec.encode("OffsetCommitRequest", 10, oc10)),
            "v6 saves": v5 - v6}

Table([sizes(n) for n in range(5, 31, 1)])

# %% [markdown]
# ### Exercise 3
# From the table: what is the **shortest** topic name for which the v6 request is strictly smaller
# than v5? (Real Kafka topic names are often longer: `orders.eu-west-1.v2` has 19 characters.)

# %% kipviz={"exercise": "01-3"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "01-3"}
exercise('01-3').check(answer)

# %% [markdown]
# ## 8. Explore any message yourself
#
# The explorer below puts the diagram, an editable JSON example and the hex dump side by side. Pick a
# message and a version, edit the JSON (the bytes follow), or paste hex — with or without the size
# prefix and header. Mistakes give one readable line, never a traceback.

# %%
from kipviz.widgets import Explorer

Explorer("TxnOffsetCommit", 6)

# %% [markdown]
# ## Summary
#
# * Integers are big-endian; lengths in flexible versions and everything in records are varints.
# * Flexible versions add compact encodings and a tag buffer per struct; tagged fields cost nothing until set.
# * Header versions follow the body's flexibility — except ApiVersions responses, always header v0.
# * TxnOffsetCommit v6 (KIP-1319) swaps names for topic IDs; the GenerationId rename changes no byte.
# * A topic ID (16 bytes) beats a compact topic name from 16 characters on.
