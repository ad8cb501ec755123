# %% [markdown]
# # 03 · Topic IDs (KIP-516)
#
# A topic **name** can be deleted and created again; a topic **ID** cannot. KIP-516 gave every topic
# a 16-byte UUID so that clients and brokers stop confusing a recreated topic with the one it
# replaced. Every cell below runs kipviz's coordinator model with real encoded requests; the
# scenarios are the same ones the tests and the `kipviz scenario` command run.
#
# **Learning objectives** — after this notebook you can
# 1. read and write Kafka's topic-ID text form and say which IDs are reserved;
# 2. explain the *stale read* and *stale state* hazards and how topic IDs expose them;
# 3. predict what Fetch, Metadata and OffsetCommit answer for a deleted topic's ID;
# 4. say what happens to committed offsets when a topic is deleted and recreated;
# 5. contrast the broker side as the page wrote it with what Kafka 2.8–3.9 shipped.
#
# **Prerequisites:** `01_wire_format`. **Time to complete:** about 40 minutes.
# **Sources:** [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers).

# %%
from IPython.display import HTML, display

from kipviz import scenarios, uuids
from kipviz.broker import Cluster
from kipviz.course.exercises import exercise
from kipviz.draw.sequence import sequence_svg
from kipviz.scenarios.report import report
from kipviz.table import Table


def show(trace):
    """What the run teaches (its findings), the checks it asserted, and its requests (errors named)."""
    display(report(trace))
    display(trace.requests())


# %% [markdown]
# ## 1. What a topic ID looks like
#
# 16 random bytes on the wire; in logs and tools, URL-safe base64 without padding (22 characters).
# The all-zero ID means "no ID"; ID 1 is the KRaft metadata topic; random IDs never start with `-`.

# %%
cluster = Cluster(seed=516)
tid = cluster.create_topic("orders", 2)
print(tid, "=", uuids.to_kafka_str(tid))
print("ZERO_UUID:", uuids.to_kafka_str(uuids.ZERO_UUID), " METADATA_TOPIC_ID:", uuids.to_kafka_str(uuids.METADATA_TOPIC_ID))
for v in (9, 10, 12):
    t = cluster.call("Metadata", v, {"Topics": [{"Name": "orders"} | ({"TopicId": uuids.ZERO_UUID} if v >= 10 else {})],
                                     "AllowAutoTopicCreation": False, "IncludeClusterAuthorizedOperations": False,
                                     "IncludeTopicAuthorizedOperations": False})["Topics"][0]
    print(f"Metadata v{v}:", {k: t[k] for k in ("Name", "TopicId") if k in t})

# %% [markdown]
# ## 2. Stale read
#
# A consumer is reading `orders` by ID. The topic is deleted and recreated under the same name.
#
# ### Exercise 1 — predict
# The consumer's next Fetch (v13+, by the **old** ID) — which error does it get?

# %% kipviz={"exercise": "03-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "03-1"}
exercise('03-1').check(answer)

# %% kipviz={"outcome": "03-1"}
stale_read = scenarios.run("kip516.stale_read")
show(stale_read)
stale_read.result

# %% kipviz={"outcome": "03-1"}
HTML(sequence_svg(stale_read))

# %% [markdown]
# ## 3. Stale state
#
# A client that only knows **names** keeps its fetch position across the delete and recreate. Its
# position now points into a different topic's log: first OFFSET_OUT_OF_RANGE, later — once the new
# topic grows — silently skipped records. Metadata before v10 looks identical before and after;
# only the ID reveals the change.

# %%
stale_state = scenarios.run("kip516.stale_state")
show(stale_state)
stale_state.result

# %% [markdown]
# ## 4. Committed offsets of a deleted topic
#
# Released Kafka deletes a group's committed offsets when their topic is deleted (tombstones in
# `__consumer_offsets`). The remaining hazard is a **late commit by name**: the broker resolves the
# name to the *new* topic and stamps the new ID on the record. Only a commit by ID (OffsetCommit v10,
# TxnOffsetCommit v6) is refused.
#
# ### Exercise 2 — predict
# After the recreate, a late OffsetCommit **v10** carries the **old** topic ID. What does it answer?

# %% kipviz={"exercise": "03-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "03-2"}
exercise('03-2').check(answer)

# %% kipviz={"outcome": "03-2"}
offsets = scenarios.run("kip516.delete_recreate_committed_offsets")
show(offsets)
offsets.result

# %% kipviz={"outcome": "03-2"}
ids = scenarios.run("kip516.ids_never_reused")
show(ids)

# %% [markdown]
# ## 5. The broker side: stale state as the page means it
#
# The client side is half of KIP-516. The page also changes the **broker**: a replica that was down
# while its topic was deleted still holds the old log when the name comes back. The controller's
# LeaderAndIsr (v5+) now carries the topic ID and a `Type` (FULL or INCREMENTAL), and each replica
# keeps the ID in a small `partition.metadata` file next to its log.
#
# The page says such a replica moves the old log to deletion. Kafka 2.8–3.9 (ZooKeeper mode; these
# controller RPCs were removed in 4.0) shipped something more careful. kipviz models both: the
# `page` behaviour and the `released` one, on the same run.
#
# ### Exercise 3 — predict
# Broker 1 holds `orders-0` of the **old** ID and receives LeaderAndIsr with the **new** ID for the
# same name. On a shipped 2.8–3.9 broker, which error does its answer carry for that partition?

# %% kipviz={"exercise": "03-3"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "03-3"}
exercise('03-3').check(answer)

# %% kipviz={"outcome": "03-3"}
page = scenarios.run("kip516.broker_stale_state")
shipped = scenarios.run("kip516.broker_stale_state_released")
Table([{"behaviour": t.result["behaviour"], "broker 1 answers": t.result["broker1_answer"],
        "old log moved to": t.result["stale_dir"] or "(kept in place)",
        "partition.metadata says": t.result["partition_metadata"].replace("\n", " · ")}
       for t in (page, shipped)])

# %% kipviz={"outcome": "03-3"}
show(page)
show(shipped)

# %% [markdown]
# Under the page the stale log leaves at once (it goes to a `deleting/` folder and is removed later);
# what the shipped broker does instead is in the table above. The animation below steps through the
# replica's moves under the page — each frame is a row of the kit's `replica` table, the same rows the
# model ran.

# %% kipviz={"outcome": "03-3"}
from kipviz.draw.animate import animation
from kipviz.widgets import player

player(animation(page, "replica"))

# %% kipviz={"outcome": "03-3"}
HTML(sequence_svg(page))

# %% [markdown]
# ### Where what shipped differs from the page
#
# The kit keeps each difference as data with the Kafka source that shows it, and checks the wire ones
# against its own definitions. Note the ones that matter for tooling: StopReplica, ListOffsets and
# OffsetForLeaderEpoch never got topic IDs, and the fields the page made *tagged* shipped as ordinary
# fields in new versions.

# %%
from kipviz.scenarios.kip516_departures import DEPARTURES

Table([{"RPC": d["topic"], "the page": d["page"], "what shipped": d["shipped"]} for d in DEPARTURES])

# %% [markdown]
# A finding the page's design brings with it: its immediate deletion **retries** StopReplica, but
# StopReplica names topics only by name. A retry that arrives after the topic was recreated deletes the
# **new** topic's replica:

# %%
by_name = scenarios.run("kip516.stop_replica_by_name")
show(by_name)
by_name.result

# %% [markdown]
# ## 6. The recreated topic in the logs (Spark)
#
# The same run, written as sample logs and read back in PySpark: one row per incarnation of `orders`,
# keyed by topic ID. The second incarnation's offsets start again at 0 — which is exactly why a
# by-name position from the first one is meaningless.

# %% kipviz={"needs": "spark"}
from kipviz import spark as ks

logs = ks.scenario_logs("kip516.stale_read")
ks.recreated_offsets(logs, "orders").orderBy("generation").toPandas()

# %% [markdown]
# ## Summary
#
# * Topic IDs are 16 random bytes, shown as 22 base64url characters; zero means "none".
# * A request carrying a deleted topic's ID gets UNKNOWN_TOPIC_ID instead of silently reaching the new topic.
# * By-name clients can still carry stale state across a delete/recreate; only IDs expose it.
# * Deleting a topic tombstones its committed offsets; a late commit by name lands on the new topic, by ID it is refused.
# * On the broker, the page deletes a stale log at once; shipped 2.8–3.9 brokers answer INCONSISTENT_TOPIC_ID and keep it.
# * StopReplica, ListOffsets and OffsetForLeaderEpoch never got topic IDs; a by-name StopReplica retry can hit a recreated topic.
