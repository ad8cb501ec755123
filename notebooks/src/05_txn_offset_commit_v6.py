# %% [markdown]
# # 05 · TxnOffsetCommit v6 (KIP-1319, released in Kafka 4.4)
#
# A transactional producer commits a consumer group's offsets with **TxnOffsetCommit**. Before v6 the
# broker hid two distinct problems (a missing group, a stale member epoch) behind one error and took
# topic **names**. KIP-1319's v6 names each problem with its own error, takes topic **IDs**, and
# persists the real ID in the offsets record. v6 was merged on Kafka trunk in May–June 2026 (the
# [KAFKA-20444](https://issues.apache.org/jira/browse/KAFKA-20444) series; [apache/kafka#22523](https://github.com/apache/kafka/pull/22523) marked it
# stable) and shipped in **Kafka 4.4.0**, the newest release. Brokers of earlier releases do not serve
# it, so in a fleet that mixes releases the producer meets older versions too (section 3). kipviz labels v6
# *released in 4.4*, and its cluster model plays Kafka 4.4 unless told otherwise.
#
# **Learning objectives** — after this notebook you can
# 1. predict the TxnOffsetCommit error at v5 and at v6 for a missing group and a stale member epoch;
# 2. apply v6's per-partition error order (unknown ID → authorization → unknown partition);
# 3. explain when the producer sends an older version than v6, and which version producers and brokers of Kafka 4.0–4.4 agree on;
# 4. follow a whole read-process-write transaction through the transaction state machine;
# 5. predict which authorization error a TxnOffsetCommit meets first when ACLs are missing.
#
# **Prerequisites:** `04_consumer_groups`. **Time to complete:** about 40 minutes.
# **Sources:** [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API), [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol), [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers).

# %%
from IPython.display import HTML, SVG, display

from kipviz import scenarios
from kipviz.course.exercises import exercise
from kipviz.draw import state_diagram, tables, to_svg
from kipviz.draw.animate import animation
from kipviz.draw.render import FIT_PX
from kipviz.draw.sequence import sequence_svg
from kipviz.scenarios.report import report
from kipviz.table import Table
from kipviz.widgets import player


def show(trace):
    """What the run teaches (its findings), the checks it asserted, and its requests (errors named)."""
    display(report(trace))
    display(trace.requests())


# %% [markdown]
# ## 1. The same mistake at v5 and at v6
#
# ### Exercise 1 — predict
# A producer commits offsets for a group that does not exist (with a generation ≥ 0). What does v5
# answer, and what does v6 answer?

# %% kipviz={"exercise": "05-1"}
answer = (..., ...)   # (the error at v5, the error at v6)

# %% deletable=false editable=false kipviz={"check": "05-1"}
exercise('05-1').check(answer)

# %% kipviz={"outcome": "05-1"}
runs = exercise("05-1").traces()      # the runs this section shows: two mistakes, each at v5 and at v6
Table([{"scenario": name, "error": t.result.get("error", ""), "all checks passed": t.passed,
          "finding": t.findings[0].what if t.findings else ""} for name, t in runs.items()])

# %% kipviz={"outcome": "05-1"}
# the group forming folded into one band, one lane per broker, drawn at the output area's width (not scaled)
HTML(sequence_svg(runs["kip1319.stale_member_epoch_v6"], fold_groups=True, lanes="broker", width=FIT_PX))

# %% [markdown]
# **In the logs.** Each run above, written as sample logs and read back in PySpark (one
# SparkSession for the notebook: `local[2]`, small, no UI): the TxnOffsetCommit answers by request
# version — the same mistakes, two different error codes.

# %% kipviz={"outcome": "05-1", "needs": "spark"}
import pandas as pd

from kipviz import spark as ks

spark = ks.session()
errs = [ks.request_errors(ks.scenario_logs(t), "TxnOffsetCommit").toPandas().assign(case=name) for name, t in runs.items()]
pd.concat(errs).pivot_table(index=["case", "version"], columns="error", values="responses",
                            aggfunc="sum", fill_value=0)     # counts: sums of whole numbers

# %% [markdown]
# ## 2. Topic IDs and the error order
#
# At v6 the broker resolves topic IDs **before** authorization. For one request it answers, per
# topic: UNKNOWN_TOPIC_ID for every partition of an ID it cannot resolve; then
# TOPIC_AUTHORIZATION_FAILED for every partition of a topic the producer may not read; then
# UNKNOWN_TOPIC_OR_PARTITION for a missing partition only.

# %% [markdown]
# ### Exercise 2 — apply the error order
# The producer (`User:app`) sends **one** v6 request with three topics. It may read `orders` but not
# `secret`. The request names:
#
# * (a) partition 0 of an **old** `secret`: the ID of a `secret` that was deleted and created again;
# * (b) partition 9 of the **live** `secret` (it has fewer partitions);
# * (c) partition 7 of `orders` (it has fewer partitions).
#
# What does each of (a), (b) and (c) get? The run below shows all of it, so predict first.

# %% kipviz={"exercise": "05-2"}
answer = (..., ..., ...)   # the errors of (a), (b), (c)

# %% deletable=false editable=false kipviz={"check": "05-2"}
exercise('05-2').check(answer)

# %% kipviz={"outcome": "05-2"}
order = scenarios.run("kip1319.error_order_v6")
show(order)
# v6 names each topic by its ID: the topic's name beside it (the run's IDs: order.result["ids"])
names = {tid: name for name, tid in order.result["ids"].items()}
v6 = [(*k.rsplit("-", 1), err) for k, err in order.result["v6"].items()]    # (topic ID, partition, answer)
v5 = [(*k.rsplit("-", 1), err) for k, err in order.result["v5"].items()]    # (topic name, partition, answer)
display(Table([{"topic": names.get(tid, "?"), "topic ID (v6)": tid, "partition": int(p),
                "v6 answer": err} for tid, p, err in v6]))
Table([{"topic (v5, by name)": t, "partition": int(p), "v5 answer": err} for t, p, err in v5])

# %% [markdown]
# ### v5 and v6 on the wire
#
# The same commit at both versions, drawn from the kit's definitions with a concrete value: at v6
# each topic costs a fixed 16-byte ID where v5 spent a length byte plus the name's characters. The
# version diff lists what changed in the request and the response, and the three error codes a v6
# answer can carry that v5 never returns (v5 maps the first two to ILLEGAL_GENERATION and has no
# topic IDs).

# %%
import uuid

from kipviz.draw import wire_diagram
from kipviz.draw.diff import version_diff
from kipviz.schema.error_codes import CODE

offsets = [{"PartitionIndex": 3, "CommittedOffset": 150382, "CommittedLeaderEpoch": 12, "CommittedMetadata": None}]
common = {"TransactionalId": "tx-orders-001", "GroupId": "order-processors", "ProducerId": 0, "ProducerEpoch": 12,
          "GenerationIdOrMemberEpoch": 5, "MemberId": "consumer-1", "GroupInstanceId": None}
v5_value = {**common, "Topics": [{"Name": "orders", "Partitions": offsets}]}
v6_value = {**common, "Topics": [{"TopicId": uuid.UUID(int=0x5EED), "Partitions": offsets}]}
display(SVG(to_svg(wire_diagram("TxnOffsetCommitRequest", 5, example=v5_value))))
display(SVG(to_svg(wire_diagram("TxnOffsetCommitRequest", 6, example=v6_value))))

# %%
# what changed from v5 to v6: fields (from the definitions), then the error codes v6 adds
display(Table([{"message": m} | r for m in ("Request", "Response") for r in version_diff(f"TxnOffsetCommit{m}", 5, 6)]))
NEW_AT_V6 = {"GROUP_ID_NOT_FOUND": "the group does not exist (v5: ILLEGAL_GENERATION)",
             "STALE_MEMBER_EPOCH": "the member epoch is not the member's current one (v5: ILLEGAL_GENERATION)",
             "UNKNOWN_TOPIC_ID": "a topic ID the broker cannot resolve (v5 names topics, so never)"}
Table([{"error": e, "code": CODE[e], "returned at v6 when": why} for e, why in NEW_AT_V6.items()])

# %% [markdown]
# ### Errors by version
#
# Which errors can a broker answer at each version? Each of the kit's handlers declares, next to its
# code, the errors its RPC can return (each row names the version that added the error and its
# source: Kafka's response schema or the KIP; an error Kafka answers that the model does not carries
# the reason). The review command and the wire explorer read those rows. Tests read the handlers'
# code to check that every error they can answer is declared, check every answer the model gives in
# every scenario, and compare with the "Version N adds ..." notes and "Supported errors" lists of
# Kafka's own schemas.

# %%
from kipviz.broker import errors_by_version
from kipviz.broker.api_errors import new_errors

table = errors_by_version("TxnOffsetCommit")
names = sorted({e for errs in table.values() for e in errs})
by_version = Table({f"v{v}": ["✓" if e in table[v] else "" for e in names] for v in sorted(table)}, index=names)
display(by_version)
new_errors("TxnOffsetCommit", 5, 6)

# %%
persisted = scenarios.run("kip1319.topic_id_persisted")
show(persisted)

# %% kipviz={"needs": "spark"}
# in the logs: the committed offsets decoded from __consumer_offsets, topic IDs resolved to names
logs = ks.scenario_logs(persisted)
ks.committed_offsets(logs).select("group", "topic", "partition", "topic_id", "resolved_name", "value_version",
                                  "status").toPandas()

# %% [markdown]
# ## 3. Which version the producer sends
#
# The producer uses v6 only when the broker supports it **and** every topic has a known ID; otherwise
# it sends the whole request at an older version.
#
# ### Exercise 3 — predict
# A Kafka 4.4 producer commits through a Kafka 4.3 broker (the release before 4.4). Which
# TxnOffsetCommit version does it send?

# %% kipviz={"exercise": "05-3"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "05-3"}
exercise('05-3').check(answer)

# %% kipviz={"outcome": "05-3"}
for name in ("kip1319.fallback_old_broker", "kip1319.fallback_unknown_topic_id", "kip1319.producer_error_classes"):
    t = scenarios.run(name)
    print(name, "->", "all checks passed" if t.passed else t.failures(), t.result.get("version_sent", ""))
    for f in t.findings:
        print("  !", f.what)

# %% kipviz={"outcome": "05-3", "needs": "spark"}
# in the logs: the version a producer without topic IDs sends
logs = ks.scenario_logs("kip1319.fallback_unknown_topic_id")
ks.request_errors(logs, "TxnOffsetCommit").toPandas()

# %% [markdown]
# ### Which releases you meet
#
# A producer and a broker each know a range of TxnOffsetCommit versions; the producer sends the
# newest version both know (and then v6 only if every topic has an ID). A Java client of a Kafka
# release speaks the versions that release defines, like its brokers. The first table is the newest
# version each release's brokers serve, computed from the kit's labels (`served_versions`, the
# function the cluster model itself uses); the second crosses producer and broker releases, as in a
# fleet that is upgraded one part at a time. The producer agrees versions with each broker it talks
# to, so during a rolling upgrade the version follows the broker that coordinates the group.

# %% kipviz={"outcome": "05-3"}
from kipviz.broker.config import ClusterConfig, served_versions
from kipviz.schema.releases import RELEASES

newest = {r: served_versions("TxnOffsetCommit", ClusterConfig(release=r))[1] for r in RELEASES}
display(Table([newest], index=["newest TxnOffsetCommit version served"], index_name="Kafka"))
Table({f"broker {b}": {f"producer {p}": min(newest[p], newest[b]) for p in RELEASES} for b in RELEASES})

# %% [markdown]
# Only a 4.4 producer with a 4.4 broker uses v6: a 4.4 producer against 4.0–4.3 brokers falls back
# to v5 (the scenario above), and a 4.3 or older producer sends v5 even to 4.4 brokers, so it still
# gets ILLEGAL_GENERATION for a missing group or a stale member epoch.

# %% [markdown]
# ## 4. The regular read-process-write transaction, animated
#
# A consumer reads `orders`, a transactional producer writes the results and commits the consumer's
# offsets in the same transaction. Press **Play**: each frame is a row of the transaction
# coordinator's state table, taken by this run.

# %%
rpw = scenarios.run("txn.read_process_write_commit")
show(rpw)
display(SVG(to_svg(state_diagram(tables()["transaction"]))))
player(animation(rpw, "transaction"))

# %%
HTML(sequence_svg(rpw))

# %%
aborted = scenarios.run("txn.read_process_write_abort")
show(aborted)

# %% kipviz={"needs": "spark"}
# in the logs: one row per transaction from __transaction_state, the abort and the retry
logs = ks.scenario_logs(aborted)
ks.transactions(logs).select("transactional_id", "txn", "outcome", "duration_ms", "partitions").toPandas()

# %% [markdown]
# ## 5. Who may commit: ACLs and the order of the checks
#
# With an authorizer on the brokers, KafkaApis asks it about each request before the group
# coordinator sees it, one question at a time. `User:app` may write its transactional ids (`tx-*`, a
# prefixed ACL) and its topics, but nobody granted it its consumer group `orders-app`.
# `User:outsider` has no ACL at all.
#
# ### Exercise 4 — predict
# The outsider sends a TxnOffsetCommit for app's open transaction (transactional id `tx-app`, group
# `orders-app`): it may neither write the transactional id nor read the group. Which error does it
# get: TRANSACTIONAL_ID_AUTHORIZATION_FAILED or GROUP_AUTHORIZATION_FAILED?

# %% kipviz={"exercise": "05-4"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "05-4"}
exercise('05-4').check(answer)

# %% kipviz={"outcome": "05-4"}
acl_run = scenarios.run("acls.txn_offset_commit_order")
show(acl_run)

# %% [markdown]
# ## Summary
#
# * v0–5 report a missing group and a stale member epoch as ILLEGAL_GENERATION; v6 says GROUP_ID_NOT_FOUND / STALE_MEMBER_EPOCH.
# * v6 names topics by ID; per topic: UNKNOWN_TOPIC_ID, then TOPIC_AUTHORIZATION_FAILED, then UNKNOWN_TOPIC_OR_PARTITION per partition.
# * v6 persists the real topic ID in OffsetCommitValue v4; the v5 path leaves it zero.
# * The producer falls back to v5 for the whole request when the broker or any topic ID is missing.
# * v6 needs Kafka 4.4 or later on both sides: brokers of 4.0–4.3 serve up to v5, and producers before 4.4 send at most v5.
# * A read-process-write transaction walks Empty → Ongoing → PrepareCommit → CompleteCommit, with markers on every partition.
# * With ACLs, TxnOffsetCommit is authorized on the transactional id (WRITE), then the group (READ), then each topic (READ): the first refusal is the error.
