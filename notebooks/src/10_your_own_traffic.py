# %% [markdown]
# # 10 · Your own traffic: a capture explained
#
# Everything so far happened inside the kit's model. Your real question is *"what did my
# application just do?"*. Here a capture of real clients — a file `tcpdump` or Wireshark writes, or
# `kipviz serve --record` — becomes the same pictures the scenarios give: who is talking, one
# sequence diagram, the coordinators' states, findings, and a **differential replay** into a fresh
# model that shows where the broker and the model disagree.
#
# **Learning objectives** — after this notebook you can
# 1. record real clients and explain the capture with `kipviz.explain` (or `kipviz explain FILE`);
# 2. read who is talking: each client's software and versions, and the broker's release guessed from its ApiVersions answer;
# 3. follow a transactional id and a consumer group through their state tables, rebuilt from the wire;
# 4. find a zombie producer and a consumer that commits after it left its group, before the findings say so;
# 5. read a differential replay and tell a mapped id from a real difference.
#
# **Prerequisites:** `04_consumer_groups`, `05_txn_offset_commit_v6`, `09_live_cluster`.
# **Time to complete:** about 25 minutes.
# **Sources:** [KIP-98](https://cwiki.apache.org/confluence/display/KAFKA/KIP-98+-+Exactly+Once+Delivery+and+Transactional+Messaging) (transactions and fencing), [KIP-511](https://cwiki.apache.org/confluence/display/KAFKA/KIP-511%3A+Collect+and+Expose+Client%27s+Name+and+Version+in+the+Brokers) (client software in ApiVersions), [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) (the topic ids the replay maps).

# %% [markdown]
# ## 1. Record a session of real clients
#
# `Server(record=DIR)` is `kipviz serve --record DIR`: every byte on its sockets goes to
# `DIR/traffic.pcap`. A confluent-kafka (librdkafka) admin client creates a topic, a transactional
# producer commits five orders, and a consumer group reads them with `read_committed` and commits.

# %%
import copy
import tempfile
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kipviz.course.exercises import exercise
from kipviz.explain import Replay, bundled, explain
from kipviz.serve import Server
from kipviz.widgets import ExchangeList, player

RECORDING = Path(tempfile.mkdtemp()) / "session"
WAIT_S = 10                                     # every client call below is bounded by this
srv = Server(record=RECORDING).start()
PORT = int(srv.bootstrap.rsplit(":", 1)[1])
BASE = {"bootstrap.servers": srv.bootstrap, "socket.timeout.ms": 10000, "log_level": 3}

admin = AdminClient(BASE)
for f in admin.create_topics([NewTopic("orders", 2, 1)]).values():
    f.result(WAIT_S)
p = Producer({**BASE, "client.id": "shop", "transactional.id": "shop-tx"})
p.init_transactions(WAIT_S)
p.begin_transaction()
for i in range(5):
    p.produce("orders", key=b"order-%d" % i, value=b"%d EUR" % (10 * i))
p.commit_transaction(WAIT_S)
c = Consumer({**BASE, "client.id": "billing", "group.id": "billing", "auto.offset.reset": "earliest",
              "isolation.level": "read_committed", "enable.auto.commit": False})
c.subscribe(["orders"])
got = []
for _ in range(40):
    got += [m for m in c.consume(10, 0.5) if m.error() is None]
    if len(got) >= 5:
        break
c.commit(asynchronous=False)
c.close()
del p, admin
srv.stop()
print(f"billing read {len(got)} orders; the capture: {(RECORDING / 'traffic.pcap').stat().st_size} bytes")

# %% [markdown]
# ## 2. Explain it
#
# `explain(path, ports=...)` decodes every exchange of the capture (the broker's port tells the
# client side from the broker side). Each part of the report shows itself: `who`, `story`,
# `findings`, `latency`, `states` and `replay`. First, **who is talking**: each connection's client
# id, its software and version (ApiVersions v3+, KIP-511), the versions it chose against the range
# the broker advertised, and the broker's release guessed from that answer.

# %%
r = explain(RECORDING / "traffic.pcap", ports=(PORT,))
print(r.summary())
r.who

# %% [markdown]
# **The story**: one sequence diagram of the whole capture, drawn by the same function as the
# scenarios' diagrams. Set-up exchanges (ApiVersions, Metadata, FindCoordinator) and repeated runs
# are folded into bands; a red answer carries an error.

# %%
r.story

# %% [markdown]
# **The coordinators' states**, rebuilt from what crossed the wire: each observation fires a row of
# the same state table the broker model executes, so the player is the scenarios' own. Step through
# the transaction `shop-tx`: InitProducerId, the partitions added, EndTxn, then the markers seen in
# the consumer's Fetch answers.

# %%
print(r.states)
player(r.states.animation("transaction"))

# %% [markdown]
# **The exchanges themselves**: pick one to see its request or its answer as a wire diagram, its
# fields and its annotated hex (the Explorer of notebook 01).

# %%
ExchangeList(r.exchanges)

# %% [markdown]
# ## 3. A zombie producer
#
# The kit bundles captures of real librdkafka clients making classic mistakes
# (`kipviz.explain.MISTAKES`). In `zombie_producer`, two instances of one application share
# `transactional.id=orders-writer`. Read who is talking and the story — not the findings yet.

# %%
z = explain(bundled("zombie_producer"))
z.who

# %%
z.story

# %% [markdown]
# ### Exercise 1
# One instance keeps writing after the other one started. Which **client id** is the zombie — the
# instance whose writes the broker refuses? (a string, read off the story above)

# %% kipviz={"exercise": "10-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "10-1"}
exercise('10-1').check(answer)

# %% [markdown]
# The findings say it in a sentence, with the exchanges that show it. The transaction table shows
# how: the newer instance's InitProducerId found a transaction open, fenced it (PrepareEpochFence),
# aborted it, and bumped the epoch; the older instance's epoch is now stale.

# %%
z.findings

# %%
player(z.states.animation("transaction"))

# %% [markdown]
# ## 4. A consumer that commits too late
#
# In `late_commit`, two consumers share group `billing`. One of them processes its records for
# longer than `max.poll.interval.ms`. Here is what the group coordinator did, rebuilt from the
# wire: the group's path through the classic-group table, its generations, their members and
# assignments.

# %%
lc = explain(bundled("late_commit"))
print(lc.states)

# %% [markdown]
# The same path, played by the scenarios' classic-group animation: each frame is one row of the
# table, fired by the request named under it (or by a timer). Watch which member's request moves
# the group at each step, and when the group forms its second generation.

# %%
player(lc.states.animation("classic-group"))

# %% [markdown]
# ### Exercise 2
# After generation 2 has formed without it, `billing-a` finishes its work and commits its offsets
# with its old member id. Which **error** does the coordinator answer that OffsetCommit with?
# (an error name, e.g. `"NOT_COORDINATOR"`)

# %% kipviz={"exercise": "10-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "10-2"}
exercise('10-2').check(answer)

# %% kipviz={"outcome": "10-2"}
lc.findings

# %% kipviz={"outcome": "10-2"}
lc.story

# %% [markdown]
# ## 5. Where the broker and the model disagree
#
# `r.replay` sends the clients' requests, in order and at the capture's times, into a **fresh
# model** playing the release the broker advertised, and compares every answer field by field.
# What each side picks for itself — topic ids, producer ids, member ids, the cluster id — is
# mapped, not compared. On a capture of the kit's own server the replay agrees everywhere:

# %%
r.replay

# %% [markdown]
# A broker that behaves differently shows up as differences, each with both values. Pretend the
# broker had given the first Produce answer another offset — change the observed answer and
# replay again. Then try other fields: an error code, or a producer epoch in InitProducerId.

# %%
edited = copy.deepcopy(r.exchanges)
first = next(i for i, ex in enumerate(edited) if ex["api"] == "Produce" and ex["response"])
edited[first]["response"]["body"]["Responses"][0]["PartitionResponses"][0]["BaseOffset"] = 999
Replay(edited, r.replay.release)

# %% [markdown]
# ## 6. Your own captures
#
# The same report from a shell, for any capture of plaintext Kafka (`PLAINTEXT` or
# `SASL_PLAINTEXT` listeners; TLS is refused with one clear line):
#
# ```bash
# tcpdump -i any -w traffic.pcap 'tcp port 9092'        # on a client or broker host
# kipviz explain traffic.pcap --ports 9092 --html report.html --gif txn.gif
# ```
#
# `docs/explain.md` lists every finding, how the states are rebuilt, and what the replay maps.

# %% [markdown]
# ## Summary
#
# * `explain(capture)` turns real traffic into the kit's pictures: who is talking (software,
#   versions, the broker's release), one folded sequence diagram, the coordinators' states as the
#   scenarios' players, findings and latency.
# * A zombie producer is an older instance whose epoch a newer InitProducerId has bumped: its
#   transaction was aborted and its writes are refused.
# * A consumer that exceeds `max.poll.interval.ms` is removed from its group; its late commit is
#   refused and another member reads those records again.
# * The differential replay maps the ids each side picks and compares everything else; a
#   difference names the field and both values.
