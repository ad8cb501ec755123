# %% [markdown]
# # 04 · Consumer groups: KIP-848 in the coordinator
#
# KIP-848 moved partition assignment from the clients to the **group coordinator**: members send
# `ConsumerGroupHeartbeat` with a **member epoch**, and the coordinator answers with their
# assignment. This notebook drives kipviz's coordinator model with real encoded requests and watches
# what it does.
#
# **Learning objectives** — after this notebook you can
# 1. join a KIP-848 consumer group and explain member epochs and fencing;
# 2. list groups by state and by type with ListGroups v4/v5;
# 3. commit and fetch offsets at OffsetCommit/OffsetFetch v8, v9 and v10 and predict the error each version returns;
# 4. read the group and member state machines, drawn from the coordinator's own tables.
#
# **Prerequisites:** `01_wire_format`. **Time to complete:** about 30 minutes.
# **Sources:** [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol) (ListGroups v5, OffsetCommit with topic IDs — note the page shows TopicId at v9,
# released Kafka put it at **v10**), [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) (topic IDs).

# %%
from IPython.display import HTML, SVG, display

from kipviz.broker import Cluster
from kipviz.course.exercises import exercise
from kipviz.draw import sequence_diagram, state_diagram, tables, to_svg
from kipviz.schema.error_codes import name_of
from kipviz.table import Table

cluster = Cluster(brokers=3, seed=42)
orders = cluster.create_topic("orders", 4)
print("orders has topic id", orders)


# %% [markdown]
# ## 1. Joining with a heartbeat
#
# A new member sends epoch 0 (and, from v1, its own member id). The coordinator bumps the group
# epoch, computes a target assignment and answers with the member's epoch and partitions.

# %%
def heartbeat(member, epoch, topics=("orders",), version=1):
    return cluster.call("ConsumerGroupHeartbeat", version, {
        "GroupId": "order-processors", "MemberId": member, "MemberEpoch": epoch, "InstanceId": None,
        "RackId": None, "RebalanceTimeoutMs": 300000, "SubscribedTopicNames": list(topics),
        "SubscribedTopicRegex": None, "ServerAssignor": "uniform", "TopicPartitions": []})

a = heartbeat("member-a", 0)
print(name_of(a["ErrorCode"]), "epoch", a["MemberEpoch"], "assignment", a["Assignment"])

# %%
b = heartbeat("member-b", 0)
a2 = heartbeat("member-a", a["MemberEpoch"])
print("b:", b["MemberEpoch"], b["Assignment"])
print("a:", a2["MemberEpoch"], a2["Assignment"])

# %% [markdown]
# ### Exercise 1 — fencing
# Member `a` now sends a heartbeat with an epoch **higher** than the one the coordinator gave it.
# Which error comes back? (The coordinator only accepts the epoch it gave out, or the previous one.)

# %% kipviz={"exercise": "04-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "04-1"}
too_high = heartbeat("member-a", a2["MemberEpoch"] + 5)   # the experiment
exercise('04-1').check(answer, response=too_high)

# %% kipviz={"outcome": "04-1"}
print(name_of(too_high["ErrorCode"]), "-", too_high["ErrorMessage"])   # the coordinator's answer

# %% [markdown]
# ## 2. Listing groups (ListGroups v4 states, v5 types)

# %%
for v, body in [(3, {}), (4, {"StatesFilter": ["Stable"]}), (5, {"StatesFilter": [], "TypesFilter": ["consumer"]}),
                (5, {"StatesFilter": [], "TypesFilter": ["classic"]})]:
    print(f"v{v}", body, "->", cluster.call("ListGroups", v, body)["Groups"])

# %% [markdown]
# The v4 **Stable** filter returns `[]`: the group exists, but it is not Stable. When `member-b`
# joined, the coordinator bumped the group epoch and moved some of `member-a`'s partitions to b; until
# every member has reached its target assignment (a must stop fetching the partitions it gives up and
# say so in a heartbeat) the group is **Reconciling**. Ask for that state, or describe the group:

# %%
print("v4 ['Reconciling'] ->", cluster.call("ListGroups", 4, {"StatesFilter": ["Reconciling"]})["Groups"])
print("state:", cluster.call("ConsumerGroupDescribe", 0, {"GroupIds": ["order-processors"],
                                                        "IncludeAuthorizedOperations": False})["Groups"][0]["GroupState"])

# %% [markdown]
# The same join and rebalance as a scenario, with what it finds: which epoch error each API answers
# (FENCED_MEMBER_EPOCH on a heartbeat, STALE_MEMBER_EPOCH on OffsetCommit) and why the Stable filter
# leaves the group out.

# %%
from kipviz import scenarios
from kipviz.scenarios.report import report

display(report(scenarios.run("kip848.consumer_group_join_and_rebalance")))


# %% [markdown]
# ## 3. Committing offsets across versions
#
# The same commit, with the member's **epoch**, at three versions. v9 added GROUP_ID_NOT_FOUND and
# member epochs; **v10** replaced topic names with topic IDs (KIP-848's page said v9 — released Kafka
# did it in v10).

# %%
def commit(version, epoch, group="order-processors", member="member-a"):
    topic = ({"TopicId": orders} if version >= 10 else {"Name": "orders"})
    body = {"GroupId": group, "GenerationIdOrMemberEpoch": epoch, "MemberId": member, "GroupInstanceId": None,
            "Topics": [dict(topic, Partitions=[{"PartitionIndex": 0, "CommittedOffset": 42,
                                                "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}])]}
    if version < 7:
        body.pop("GroupInstanceId")
    out = cluster.call("OffsetCommit", version, body)
    return name_of(out["Topics"][0]["Partitions"][0]["ErrorCode"])

epoch_a = a2["MemberEpoch"]
Table([{"version": v, "current epoch": commit(v, epoch_a), "stale epoch": commit(v, epoch_a - 1),
        "missing group": commit(v, 3, group="no-such-group")} for v in (8, 9, 10)])

# %% [markdown]
# ### Exercise 2
# Why does v8 answer `UNSUPPORTED_VERSION` for a member of a consumer group, and what does a missing
# group give at v8 versus v9? (Look at the table. The rules, from Kafka's
# [ConsumerGroup.java](https://github.com/apache/kafka/blob/trunk/group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/consumer/ConsumerGroup.java)
# `validateOffsetCommit`: a member on the new consumer protocol must commit with v9 or later, and only
# v9+ tell a missing group apart.)

# %% kipviz={"exercise": "04-2"}
answer = ...   # the error a missing group gets at v8

# %% deletable=false editable=false kipviz={"check": "04-2"}
exercise('04-2').check(answer, error=commit(8, 3, group="no-such-group"))

# %% [markdown]
# **Fenced or stale?** Two error codes name a bad member epoch, and released Kafka uses them in
# different places ([GroupMetadataManager.java](https://github.com/apache/kafka/blob/trunk/group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java),
# `throwIfMemberEpochIsInvalid`; [ConsumerGroup.java](https://github.com/apache/kafka/blob/trunk/group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/consumer/ConsumerGroup.java),
# `validateMemberEpoch`):
#
# | error | returned by | when | what the member does |
# |---|---|---|---|
# | FENCED_MEMBER_EPOCH (110) | ConsumerGroupHeartbeat | epoch higher than the coordinator's, or lower and not the previous epoch with a subset of the assignment | gives up its partitions and rejoins with epoch 0 |
# | STALE_MEMBER_EPOCH (113) | OffsetCommit v9+, OffsetFetch, TxnOffsetCommit v6 | epoch not exactly the member's current one | keeps its partitions, waits for the next heartbeat's epoch and retries |
#
# KIP-848's page says OffsetCommit and OffsetFetch return FENCED_MEMBER_EPOCH; released Kafka returns
# STALE_MEMBER_EPOCH there (a stale commit is not a reason to drop the partitions), and the kit models
# released Kafka. The commit table above shows it.

# %%
fetched = cluster.call("OffsetFetch", 10, {"Groups": [{"GroupId": "order-processors", "MemberId": "member-a",
    "MemberEpoch": epoch_a, "Topics": [{"TopicId": orders, "PartitionIndexes": [0]}]}], "RequireStable": True})
fetched["Groups"][0]["Topics"]

# %% [markdown]
# ## 4. The state machines, from the coordinator's tables
#
# These diagrams are drawn from the same tables the model executes — change a row and both the
# behaviour and the picture change.

# %%
machines = tables()
display(SVG(to_svg(state_diagram(machines["consumer-group"]))))
display(SVG(to_svg(state_diagram(machines["consumer-member"]))))

# %% [markdown]
# And everything that happened above, as a sequence diagram drawn from the recorded events:

# %%
HTML(sequence_diagram(cluster.events[-24:], title="last requests of this notebook", fold=True))

# %% [markdown]
# ## Summary
#
# * KIP-848 members heartbeat with epochs; the coordinator assigns partitions and fences epochs it did not give out.
# * ListGroups v4 filters by state, v5 by type (classic / consumer / share).
# * OffsetCommit v9 returns GROUP_ID_NOT_FOUND and checks member epochs; v10 names topics by ID.
# * The group and member state machines are tables; the diagrams and the model read the same rows.
