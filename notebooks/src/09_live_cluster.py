# %% [markdown]
# # 09 · A live cluster: real Kafka clients against the model
#
# Until now every request came from the kit's own client models. Here the cluster model listens on
# real TCP sockets (`kipviz.serve.Server`, the same thing `kipviz serve` runs), and **real clients**
# talk to it: confluent-kafka (librdkafka, the C client behind most non-Java clients). You watch every
# request, state change and record appear while the clients run, then analyse the recording with Spark.
#
# **Learning objectives** — after this notebook you can
# 1. start a modelled cluster from a notebook (or `kipviz serve` from a shell) and point any client's `bootstrap.servers` at it;
# 2. follow a transactional producer and a read_committed consumer request by request, and find the transaction coordinator's state changes;
# 3. explain where a new share group starts reading, and change it with `share.auto.offset.reset`;
# 4. record a session and analyse it with the same Spark functions as the sample logs;
# 5. follow a live cluster's coordinators with a Structured Streaming query while clients run.
#
# **Prerequisites:** `05_txn_offset_commit_v6`, `06_share_group_eos` (and `07_spark_log_analysis` for section 5).
# **Time to complete:** about 35 minutes.
# **Sources:** [KIP-932](https://cwiki.apache.org/confluence/display/KAFKA/KIP-932%3A+Queues+for+Kafka) (share groups, section 3), [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol) (the consumer's `group.protocol=consumer`), [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (the TxnOffsetCommit a
# transactional producer sends).

# %% [markdown]
# ## 1. Start the cluster
#
# `Server(brokers=3, port=9092, record=DIR)` starts three modelled brokers on 127.0.0.1:9092, 9093
# and 9094 (ports a host can name or forward; without `port` they take free ports, which the cell
# falls back to, saying so, when those are taken) in this kernel's background (one asyncio loop, one
# lock around the model) and records the session to `DIR`.
# Its virtual clock follows the wall clock (`speed=10` would make timeouts fire ten times sooner).
# `srv.bootstrap` is what a client needs. From a shell the same is:
#
# ```bash
# kipviz serve --brokers 3 --port 9092 -v --record out/live     # prints bootstrap.servers=127.0.0.1:9092,...
# ```

# %%
import tempfile
import time
from pathlib import Path

import pandas as pd
from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from kipviz.course.exercises import exercise
from kipviz.schema.events import StateChanged
from kipviz.serve import LiveView, Server

pd.set_option("display.max_colwidth", None)     # whole cells in every table: no "..." cut

RECORDING = Path(tempfile.mkdtemp()) / "live"
PORT = 9092                     # brokers on 9092, 9093, 9094: ports a host can name (or forward from a container)
try:
    srv = Server(brokers=3, port=PORT, record=RECORDING).start()
except OSError as e:            # taken (a real Kafka, another kernel): free ports instead, said here
    print(f"ports {PORT}-{PORT + 2} are not free ({e.strerror}); the brokers listen on free ports instead")
    srv = Server(brokers=3, record=RECORDING).start()
WAIT_S = 10                     # every client call below is bounded by this
BASE = {"bootstrap.servers": srv.bootstrap, "socket.timeout.ms": 10000, "log_level": 3}
print(srv)
print("bootstrap.servers =", srv.bootstrap)

# %% [markdown]
# The live view redraws at most twice a second, and only when something happened: the newest
# requests as a sequence diagram and the newest events (the tabs), and below them two players — the
# state machine that changed last (a transaction, a group, a member) and the record strip of the
# share group whose records changed last (the players are redrawn at most every 2 seconds). Keep it in sight (right-click → *New View
# for Output* in JupyterLab) while you run the cells below.

# %%
view = LiveView(srv, max_events=30)
view

# %% [markdown]
# ## 2. A transactional producer and a read_committed consumer
#
# An admin client creates two topics. Then one transactional producer (`transactional.id=shop-1`)
# commits a transaction of three orders and aborts one of two. librdkafka aborts a transaction
# locally when none of its records has been sent yet, so the cell flushes before the abort: the
# coordinator sees both outcomes.

# %%
admin = AdminClient({**BASE, "client.id": "admin"})     # client.id names each client's lane
for f in admin.create_topics([NewTopic("orders", 2, 1), NewTopic("payments", 2, 1)], operation_timeout=10).values():
    f.result(WAIT_S)

tx = Producer({**BASE, "client.id": "shop-1-producer", "transactional.id": "shop-1", "transaction.timeout.ms": 30000})
tx.init_transactions(WAIT_S)
tx.begin_transaction()
for i in range(3):
    tx.produce("orders", key=b"k%d" % i, value=b"order-%d" % i)
tx.commit_transaction(WAIT_S)

tx.begin_transaction()
for i in range(3, 5):
    tx.produce("orders", key=b"k%d" % i, value=b"order-%d" % i)
tx.flush(WAIT_S)                # the records reach the leaders (and the partitions join the transaction)
tx.abort_transaction(WAIT_S)
print("committed 3 orders, aborted 2")

# %% [markdown]
# The transaction coordinator's state machine, as the model changed it (the same table the
# state-machine drawings of notebooks 05 and 06 show):

# %%
with srv.lock:                  # the model is shared with the server thread: read it under its lock
    changes = [(e.seq, e.key, e.from_state, e.to_state, e.cause) for e in srv.cluster.events
               if isinstance(e, StateChanged) and e.machine == "transaction"]
pd.DataFrame(changes, columns=["seq", "transactional id", "from", "to", "cause"])


# %% [markdown]
# A consumer with `isolation.level=read_committed` reads only up to the last stable offset
# and drops the aborted records (the abort marker tells it which). It joins its group with
# `group.protocol=consumer` ([KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol)'s ConsumerGroupHeartbeat instead of JoinGroup/SyncGroup).

# %%
def consume(consumer, n, seconds=WAIT_S):
    got, end = [], time.monotonic() + seconds
    while len(got) < n and time.monotonic() < end:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    return got

reader = Consumer({**BASE, "client.id": "reader", "group.id": "readers", "group.protocol": "consumer",
                   "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
reader.subscribe(["orders"])
seen = consume(reader, 5, seconds=6)          # asks for 5: only what was committed comes
reader.close()
print("read_committed saw:", seen)

# %% [markdown]
# Every request the clients sent, counted by API (the live view's event table shows them one by one):

# %%
with srv.lock:
    apis = pd.Series([e.api for e in srv.cluster.events if type(e).__name__ == "RequestReceived"])
apis.value_counts().to_frame("requests").T

# %% [markdown]
# ## 3. A share consumer (KIP-932)
#
# A share group lets several consumers take records from the same partitions, each record
# acknowledged one by one. First produce four payments, **then** start a share consumer in a new
# group `auditors`.

# %% [markdown]
# ### Exercise 1
# Where does a share group that has no state yet start reading, unless someone configures it —
# the value of `share.auto.offset.reset` that Kafka gives a new group? (a string)

# %% kipviz={"exercise": "09-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "09-1"}
exercise('09-1').check(answer)

# %% kipviz={"outcome": "09-1"}
plain = Producer({**BASE, "client.id": "payments-producer"})
for i in range(4):
    plain.produce("payments", value=b"pay-%d" % i, partition=i % 2)
assert plain.flush(WAIT_S) == 0

def share_read(group, n, seconds):
    sc = ShareConsumer({**BASE, "client.id": f"{group}-reader", "group.id": group})
    sc.subscribe(["payments"])
    got, end = [], time.monotonic() + seconds
    while len(got) < n and time.monotonic() < end:
        got += [m.value().decode() for m in sc.poll(0.5) if m.error() is None]
    sc.commit_sync(WAIT_S)      # acknowledge what was delivered
    sc.close()
    return got

print("auditors got:", share_read("auditors", 4, seconds=3))

# %% [markdown]
# A group's own `share.auto.offset.reset` sets where it starts
# (in Kafka: `kafka-configs --alter --entity-type groups --entity-name G --add-config
# share.auto.offset.reset=earliest`; here the server's model holds the same setting). A new group
# `auditors-2` with `earliest` gets all four:

# %% kipviz={"outcome": "09-1"}
with srv.lock:
    srv.cluster.config.share_group_offset_reset["auditors-2"] = "earliest"
print("auditors-2 got:", sorted(share_read("auditors-2", 4, seconds=WAIT_S)))
with srv.lock:
    rows = [(e.key, e.from_state, e.to_state, e.cause) for e in srv.cluster.events
            if isinstance(e, StateChanged) and e.key.startswith("auditors-2")][:12]
pd.DataFrame(rows, columns=["share partition / record", "from", "to", "cause"])

# %% [markdown]
# ## 4. Stop and keep the recording
#
# Close the clients, then `srv.stop()`: it closes the listeners and writes the recording: the sample-data layout (every topic,
# internal ones included, with the Kafka source's columns; the request log; the event log; a
# manifest) plus `traffic.pcap`, the real TCP bytes, which Wireshark opens. From a shell:
# `kipviz analyze DIR`.

# %%
tx.close(WAIT_S)
plain.close(WAIT_S)
del admin                       # clients first: a client left running would keep reconnecting
view.stop()
srv.stop()
print(srv)
sorted(p.name for p in RECORDING.iterdir())

# %% [markdown]
# The live view's two players stayed on their newest frame while the clients ran. Rewind them
# and press **Play** to replay the machine instance that changed last and the share group's records
# from their first frame:

# %%
view.refresh_players()          # the last events, drawn
for player in (view.machine_player, view.strip_player):
    if player is not None:
        player.index = 0
view

# %% [markdown]
# ## 5. The session in Spark
#
# The same functions as notebook 07, on what the real clients did: `__transaction_state` decoded
# inside Spark, one row per transaction, and the read_committed group's committed offsets (a
# committed offset counts the transaction markers too: they take an offset in the log).

# %%
from kipviz import spark as ks

spark = ks.session()
logs = ks.decode_all(ks.read_samples(spark, RECORDING))
txns = ks.transactions(logs)
txns.select("transactional_id", "txn", "producer_id", "outcome", "partitions").show(truncate=False)
ks.transaction_summary(logs, txns).select("transactional_id", "transactions", "commits", "aborts").show()
ks.committed_offsets(logs).select("group", "topic", "partition", "committed_offset", "log_end_offset", "status").show()
print("records that did not decode:", logs.errors.count())

# %% [markdown]
# ### Exercise 2
# How many transactions of `shop-1` ended aborted, according to `__transaction_state`?

# %% kipviz={"exercise": "09-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "09-2"}
exercise('09-2').check(answer, txns=txns)

# %%
logs.unpersist()

# %% [markdown]
# ## 6. Live: a streaming query while the clients run
#
# Section 5 analysed a recording after the fact. Spark can also follow the cluster **while** the
# clients run: a Structured Streaming query reads `__consumer_offsets`, `__transaction_state`,
# `__share_group_state` and the output topic through `kipviz-kafka` — kipviz's Kafka source for
# Spark (`spark.readStream.format("kipviz-kafka")`, the options of Spark's own Kafka source; it needs
# no JVM connector, confluent-kafka reads each partition's offset range on the executors). Each
# micro-batch is decoded with the same decoders as section 5 and drawn: commits per second, open
# transactions, the output topic's **LSO gap** (high watermark minus last stable offset: records an
# open transaction holds back from read_committed readers), share deliveries per record, and consumer
# lag per partition.
#
# A fresh cluster for this section (internal topics of 3 partitions, so each micro-batch has few
# offset ranges to read); the query's first micro-batch starts Spark's Python side, which takes a
# few seconds.

# %%
import threading

from kipviz.spark.live import LiveMetrics

live_srv = Server(brokers=1, offsets_topic_partitions=3, transaction_topic_partitions=3,
                  share_state_topic_partitions=3).start()
LIVE = {"bootstrap.servers": live_srv.bootstrap, "socket.timeout.ms": 10000, "log_level": 3}
live_admin = AdminClient(LIVE)
for f in live_admin.create_topics([NewTopic("live-out", 2, 1)], operation_timeout=10).values():
    f.result(WAIT_S)
with live_srv.lock:
    live_srv.cluster.config.share_group_offset_reset["live-share"] = "earliest"

live = LiveMetrics(spark, live_srv.bootstrap, "live-out", trigger_s=1.0).start()
live.wait_for(1, timeout_s=180, with_records=False)    # the first micro-batch starts Spark's Python side
live.view()


# %% [markdown]
# Now the real clients, for about twelve seconds in background threads: a transactional producer
# (every fourth transaction aborted, one now and then left open for a second), a read_committed
# consumer group committing its position, and a share consumer acknowledging what it gets. Watch
# the chart above redraw after each micro-batch.

# %%
RUN_S = 12                      # the clients below run this long, then stop by themselves
stop_at = time.monotonic() + RUN_S

def producer_loop():
    """A transactional producer: a transaction of 5 records every 0.3 s, every fourth aborted; one
    left open for a second now and then (the LSO gap)."""
    p = Producer({**LIVE, "transactional.id": "live-writer", "transaction.timeout.ms": 30000})
    p.init_transactions(WAIT_S)
    n = 0
    while time.monotonic() < stop_at:
        p.begin_transaction()
        for i in range(5):
            p.produce("live-out", key=b"k%d" % (n * 5 + i), value=b"v%d" % (n * 5 + i))
        p.flush(WAIT_S)
        if n % 7 == 3:
            time.sleep(1.0)     # open, its records written: read_committed readers wait at the LSO
        (p.abort_transaction if n % 4 == 3 else p.commit_transaction)(WAIT_S)
        n += 1
        time.sleep(0.3)

def consumer_loop():
    """A read_committed consumer group committing what it read every 0.5 s."""
    c = Consumer({**LIVE, "group.id": "live-readers", "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe(["live-out"])
    while time.monotonic() < stop_at:
        if c.consume(100, 0.5):
            c.commit(asynchronous=False)
    c.close()

def share_loop():
    """A share consumer acknowledging what it gets (share group live-share, from the earliest)."""
    sc = ShareConsumer({**LIVE, "group.id": "live-share"})
    sc.subscribe(["live-out"])
    while time.monotonic() < stop_at:
        sc.poll(0.5)
        sc.commit_sync(WAIT_S)
    sc.close()

clients = [threading.Thread(target=f, daemon=True) for f in (producer_loop, consumer_loop, share_loop)]
for t in clients:
    t.start()
for t in clients:
    t.join(RUN_S + 30)
live.wait_for(3, timeout_s=60)
time.sleep(3 * live.trigger_s)  # the last commits reach the chart
print("clients done; micro-batches measured:", len(live.rows))


# %% [markdown]
# Stop the query (it finishes the micro-batch under way), then the cluster. The measurements stay,
# one row per micro-batch:

# %%
live.stop()
del live_admin
live_srv.stop()
print("query stopped:", live.error or "cleanly")
live.frame().tail(8)


# %% [markdown]
# ## Summary
#
# * `Server(brokers=N, record=DIR)` (or `kipviz serve --brokers N -v --record DIR`) puts the model
#   behind real sockets; any client pointed at `bootstrap.servers` talks to it, and `LiveView`
#   follows it without slowing the notebook down.
# * A transactional producer's commits and aborts, and the read_committed consumer that skips the
#   aborted records, are the same state machines and markers as in the kit's own scenarios.
# * A new share group starts at the latest offset, as in Kafka; the group's
#   `share.auto.offset.reset=earliest` makes it read from the start.
# * A recording has the sample-data layout, so `kipviz analyze DIR` and the Spark analyses read
#   what real clients did.
# * A Structured Streaming query (`format("kipviz-kafka")`) follows the coordinators while the clients
#   run: commits, open transactions and the LSO gap they cause, share deliveries, consumer lag.
