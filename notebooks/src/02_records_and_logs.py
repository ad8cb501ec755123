# %% [markdown]
# # 02 · Records and logs: what Kafka really writes and sends
#
# Kafka stores records in **record batches** (format v2), the coordinators keep their state as
# records in internal topics (`__consumer_offsets`, `__transaction_state`, `__share_group_state`),
# and clients talk over TCP in size-prefixed frames. This notebook reads and writes all three with
# the same library the tests use.
#
# **Learning objectives** — after this notebook you can
# 1. read a record batch byte by byte: its 61-byte header, CRC-32C and varint-encoded records;
# 2. recognise a transactional batch and the COMMIT marker that ends it;
# 3. decode an `OffsetCommitValue` and see what KIP-1319's topic ID adds (v3 vs v4);
# 4. compute which `__consumer_offsets` partition (and so which coordinator) owns a group;
# 5. turn a packet capture into a request/response table;
# 6. predict what the log cleaner keeps of a compacted topic.
#
# **Prerequisites:** `00_welcome`. **Time to complete:** about 30 minutes.
# **Sources:** [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) (topic IDs), [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (OffsetCommitValue v4 topic ID), KIP-98 / KIP-890 (transactions).

# %%
import tempfile
import uuid
from pathlib import Path

from IPython.display import HTML

from kipviz import capture, codec, records
from kipviz.course.exercises import exercise
from kipviz.draw.hexdump import hexdump_html
from kipviz.table import Table

# %% [markdown]
# ## 1. A record batch, byte by byte
#
# `write_batch` builds a batch v2; `annotate_batches` says which bytes hold which header field and
# which record field. Hover a byte to see its field; click a field in the tree to highlight its bytes.

# %%
batch = records.write_batch(
    [{"key": b"order-1", "value": b'{"qty": 2}', "headers": [("trace", b"abc")]},
     {"key": None, "value": b"hello"}],
    base_offset=100, base_timestamp=1_700_000_000_000)
spans = records.annotate_batches(batch)
HTML(hexdump_html(batch, spans, title="record batch v2: 2 records"))

# %%
b = records.read_batches(batch)[0]
print({k: b[k] for k in ("base_offset", "length", "magic", "crc", "crc_valid", "records_count", "compression")})
Table(b["records"])

# %% [markdown]
# The CRC is CRC-32C over everything from `Attributes` to the end. Flip one byte of a record and
# the reader refuses the batch, naming the CRC — or shows it anyway when asked:

# %%
broken = bytearray(batch)
broken[-3] ^= 0xFF
try:
    records.read_batches(bytes(broken))
except codec.DecodeError as e:
    print(e)
print("crc_valid:", records.read_batches(bytes(broken), verify_crc=False)[0]["crc_valid"])

# %% [markdown]
# ## 2. A transaction and its COMMIT marker
#
# A transactional producer writes batches flagged *transactional* with its producer id and epoch.
# When the transaction ends, the coordinator has every partition leader append a **control batch**:
# one record whose key says COMMIT or ABORT and whose value carries the coordinator epoch.

# %%
txn = records.write_batch([(b"k", b"processed-1"), (b"k", b"processed-2")], base_offset=200,
                          is_transactional=True, producer_id=4000, producer_epoch=2, base_sequence=0)
marker = records.write_control_batch("COMMIT", producer_id=4000, producer_epoch=2,
                                     coordinator_epoch=7, base_offset=202, timestamp=1_700_000_000_500)
log = txn + marker
Table([{k: b[k] for k in ("base_offset", "is_transactional", "is_control", "producer_id", "producer_epoch")}
       | {"records": len(b["records"]), "control": b["records"][0].get("control")}
       for b in records.read_batches(log)])

# %%
HTML(hexdump_html(marker, records.annotate_batches(marker), title="COMMIT marker (control batch)"))

# %% [markdown]
# ## 3. Offsets as records: OffsetCommitValue v3 next to v4
#
# A committed offset is a record in `__consumer_offsets`: the key is (record type, group, topic,
# partition), the value a versioned struct. Version 4 is the first *flexible* version; its tagged
# field 0 holds the topic ID that KIP-1319 makes the broker fill in for transactional commits
# (brokers before Kafka 4.4, which ships KIP-1319, leave it at the zero UUID, which is not written at all).

# %%
key = {"group": "order-processors", "topic": "orders", "partition": 3}
value = {"offset": 150382, "leaderEpoch": 12, "metadata": "", "commitTimestamp": 1_700_000_000_000}
topic_id = uuid.UUID("5d1c8ac4-1d3b-4e2f-9a6e-1f6c0d9b2a11")
kb, v3 = records.encode_internal("OffsetCommit", key, value, value_version=3)
_, v4 = records.encode_internal("OffsetCommit", key, value | {"topicId": topic_id}, value_version=4)
print("v3:", len(v3), "bytes ", v3.hex(" "))
print("v4:", len(v4), "bytes ", v4.hex(" "))
records.decode_internal(kb, v4)

# %%
HTML(hexdump_html(v4, codec.annotate(records.internal.definitions()["OffsetCommitValue"], 4, v4[2:]),
                  title="OffsetCommitValue v4 body (after the int16 version)"))

# %% [markdown]
# ## 4. Which coordinator owns a group?
#
# Kafka hashes the group id with Java's `String.hashCode`, takes Kafka's own `abs` (which maps
# `Integer.MIN_VALUE` to 0) and reduces modulo the partition count of `__consumer_offsets`
# (50 by default). The leader of that partition is the group's coordinator.

# %%
groups = ["my-group", "test-group", "group1", "order-processors", "polygenelubricants"]
Table([{"group": g, "java hashCode": records.java_string_hash(g),
        "partition": records.group_coordinator_partition(g)} for g in groups])

# %% [markdown]
# ### Exercise 1
# Transactional ids are placed the same way in `__transaction_state`. Which partition of 50 owns the
# transactional id `"tx-orders-001"`? Compute it with `records.java_string_hash` and the rule above
# (not with `transaction_coordinator_partition`).

# %% kipviz={"exercise": "02-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "02-1"}
exercise('02-1').check(answer)

# %% [markdown]
# ## 5. A capture as a table
#
# `capture.write_pcap` writes a conversation as a real Ethernet/IPv4/TCP capture (Wireshark opens
# it); `capture.read_pcap` reassembles the TCP stream, cuts frames, pairs each response with its
# request by correlation id and decodes both.

# %%
api_req = codec.encode_request("ApiVersions", 3, {"ClientSoftwareName": "kipviz", "ClientSoftwareVersion": "0.1"},
                               correlation_id=1)
api_resp = codec.encode_response("ApiVersions", 3, {"ErrorCode": 0, "ApiKeys": [
    {"ApiKey": 28, "MinVersion": 0, "MaxVersion": 5}], "ThrottleTimeMs": 0}, correlation_id=1)
body = {"TransactionalId": "tx-orders-001", "GroupId": "order-processors", "ProducerId": 4000, "ProducerEpoch": 2,
        "GenerationIdOrMemberEpoch": 5, "MemberId": "consumer-1-abc123", "GroupInstanceId": None,
        "Topics": [{"Name": "orders", "Partitions": [{"PartitionIndex": 3, "CommittedOffset": 150382,
                                                      "CommittedLeaderEpoch": 12, "CommittedMetadata": None}]}]}
toc_req = codec.encode_request("TxnOffsetCommit", 5, body, correlation_id=2)
toc_resp = codec.encode_response("TxnOffsetCommit", 5, {"ThrottleTimeMs": 0, "Topics": [
    {"Name": "orders", "Partitions": [{"PartitionIndex": 3, "ErrorCode": 22}]}]}, correlation_id=2)
path = Path(tempfile.mkdtemp()) / "conversation.pcap"
capture.write_pcap(path, [("request", api_req, 0.000), ("response", api_resp, 0.002),
                          ("request", toc_req, 0.010), ("response", toc_resp, 0.013)])
capture.to_dataframe(capture.read_pcap(path))

# %% [markdown]
# ### Exercise 2
# The TxnOffsetCommit response above carries error code 22. What is its name? (It is what
# v0–5 return for both a missing group and a stale member epoch — the ambiguity KIP-1319 removes.)

# %% kipviz={"exercise": "02-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "02-2"}
exercise('02-2').check(answer)

# %% [markdown]
# ## 6. A compacted topic: what the log cleaner keeps
#
# A topic with `cleanup.policy=compact` keeps each key's **newest** value instead of deleting old
# segments by age or size — that is how `__consumer_offsets` and `__transaction_state` stay small
# (a group's newest commit per partition is all a coordinator needs). Kafka's log cleaner wakes up
# every `log.cleaner.backoff.ms` (15 s), picks a log whose dirty (not yet cleaned) share is above
# `min.cleanable.dirty.ratio` (0.5), maps each key to its newest offset in the cleanable range —
# which ends where the **active segment** (the one being written) begins: that segment is never
# cleaned — and rewrites the older segments with only the records it keeps. Offsets never move: the
# removed ones become gaps that consumers read through. A tombstone (a null value) deletes its key,
# and stays for `delete.retention.ms` so that consumers see the delete.
#
# Below, a price list on a compacted topic with small segments: a producer writes prices and
# deletes `pear`, a transaction writing a plum price aborts, then apple and plum are priced again.
# The log before the cleaner's first pass:

# %%
from kipviz.broker import Cluster
from kipviz.scenarios import compaction

before = Cluster(seed=7)
compaction.write_prices(before)       # the records only: the cleaner has not run
Table(compaction.log_rows(before))

# %% [markdown]
# ### Exercise 3 — predict
# The cleaner makes one pass over this log. How many `plum` records does the partition hold after it?

# %% kipviz={"exercise": "02-3"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "02-3"}
exercise('02-3').check(answer)

# %% kipviz={"outcome": "02-3"}
from kipviz import scenarios
from kipviz.draw import compaction_picture

prices = scenarios.run("compaction.prices")
HTML(compaction_picture(prices.events, "prices", 0).svg())

# %% kipviz={"outcome": "02-3"}
Table([{"offset": o, "key": k, "value": "(tombstone)" if v is None else v} for o, k, v in prices.result["held"]])

# %% [markdown]
# ## Summary
#
# * A record batch v2 is a 61-byte header (CRC-32C from `Attributes` on) plus varint-encoded records.
# * Transactions end with a control batch per partition: key = version + COMMIT/ABORT, value = version + coordinator epoch.
# * Coordinators keep their state as versioned records; OffsetCommitValue v4 can carry the topic ID (KIP-1319).
# * `abs(String.hashCode) % 50` picks the coordinator partition, with Kafka's `abs(MIN_VALUE) == 0`.
# * A pcap of plaintext Kafka traffic becomes a request/response table with decoded bodies.
# * A compacted topic keeps each key's newest record below the active segment; offsets keep their gaps,
#   aborted records never count as a key's newest, tombstones stay for `delete.retention.ms`.
