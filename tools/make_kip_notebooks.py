"""Writes notebooks/03_topic_ids.ipynb and notebooks/05_txn_offset_commit_v6.ipynb."""
from nbbuild import code, md, predict, write_notebook

from kipviz.course import kip_link

SHOW = '''from kipviz.scenarios.report import report

def show(trace):
    """What the run teaches (its findings), the checks it asserted, and its requests (errors named)."""
    display(report(trace))
    display(trace.requests())'''

topic_ids = [
    md("""# 03 · Topic IDs (KIP-516)

A topic **name** can be deleted and created again; a topic **ID** cannot. KIP-516 gave every topic
a 16-byte UUID so that clients and brokers stop confusing a recreated topic with the one it
replaced. Every cell below runs kipviz's coordinator model with real encoded requests; the
scenarios are the same ones the tests and the `kipviz scenario` command run.

**Learning objectives** — after this notebook you can
1. read and write Kafka's topic-ID text form and say which IDs are reserved;
2. explain the *stale read* and *stale state* hazards and how topic IDs expose them;
3. predict what Fetch, Metadata and OffsetCommit answer for a deleted topic's ID;
4. say what happens to committed offsets when a topic is deleted and recreated;
5. contrast the broker side as the page wrote it with what Kafka 2.8–3.9 shipped.

**Prerequisites:** `01_wire_format`. **Time to complete:** about 40 minutes.
**Sources:** KIP_516.""".replace("KIP_516", kip_link(516))),
    code("""import pandas as pd
from IPython.display import HTML, display
from kipviz import scenarios, uuids
from kipviz.broker import Cluster
from kipviz.broker.error_codes import name_of
from kipviz.exercises import exercise
""" + SHOW),
    md("""## 1. What a topic ID looks like

16 random bytes on the wire; in logs and tools, URL-safe base64 without padding (22 characters).
The all-zero ID means "no ID"; ID 1 is the KRaft metadata topic; random IDs never start with `-`."""),
    code("""cluster = Cluster(seed=516)
tid = cluster.create_topic("orders", 2)
print(tid, "=", uuids.to_kafka_str(tid))
print("ZERO_UUID:", uuids.to_kafka_str(uuids.ZERO_UUID), " METADATA_TOPIC_ID:", uuids.to_kafka_str(uuids.METADATA_TOPIC_ID))
for v in (9, 10, 12):
    t = cluster.call("Metadata", v, {"Topics": [{"Name": "orders"} | ({"TopicId": uuids.ZERO_UUID} if v >= 10 else {})],
                                     "AllowAutoTopicCreation": False, "IncludeClusterAuthorizedOperations": False,
                                     "IncludeTopicAuthorizedOperations": False})["Topics"][0]
    print(f"Metadata v{v}:", {k: t[k] for k in ("Name", "TopicId") if k in t})"""),
    md("""## 2. Stale read

A consumer is reading `orders` by ID. The topic is deleted and recreated under the same name.

### Exercise 1 — predict
The consumer's next Fetch (v13+, by the **old** ID) — which error does it get?"""),
    *predict("03-1"),
    code("""stale_read = scenarios.run("kip516.stale_read")
show(stale_read)
stale_read.result"""),
    code("""HTML(stale_read.sequence_svg())"""),
    md("""## 3. Stale state

A client that only knows **names** keeps its fetch position across the delete and recreate. Its
position now points into a different topic's log: first OFFSET_OUT_OF_RANGE, later — once the new
topic grows — silently skipped records. Metadata before v10 looks identical before and after;
only the ID reveals the change."""),
    code("""stale_state = scenarios.run("kip516.stale_state")
show(stale_state)
stale_state.result"""),
    md("""## 4. Committed offsets of a deleted topic

Released Kafka deletes a group's committed offsets when their topic is deleted (tombstones in
`__consumer_offsets`). The remaining hazard is a **late commit by name**: the broker resolves the
name to the *new* topic and stamps the new ID on the record. Only a commit by ID (OffsetCommit v10,
TxnOffsetCommit v6) is refused.

### Exercise 2 — predict
After the recreate, a late OffsetCommit **v10** carries the **old** topic ID. What does it answer?"""),
    *predict("03-2"),
    code("""offsets = scenarios.run("kip516.delete_recreate_committed_offsets")
show(offsets)
offsets.result"""),
    code("""ids = scenarios.run("kip516.ids_never_reused")
show(ids)"""),
    md("""## 5. The broker side: stale state as the page means it

The client side is half of KIP-516. The page also changes the **broker**: a replica that was down
while its topic was deleted still holds the old log when the name comes back. The controller's
LeaderAndIsr (v5+) now carries the topic ID and a `Type` (FULL or INCREMENTAL), and each replica
keeps the ID in a small `partition.metadata` file next to its log.

The page says such a replica moves the old log to deletion. Kafka 2.8–3.9 (ZooKeeper mode; these
controller RPCs were removed in 4.0) shipped something more careful. kipviz models both: the
`page` behaviour and the `released` one, on the same run.

### Exercise 3 — predict
Broker 1 holds `orders-0` of the **old** ID and receives LeaderAndIsr with the **new** ID for the
same name. On a shipped 2.8–3.9 broker, which error does its answer carry for that partition?"""),
    *predict("03-3"),
    code("""page = scenarios.run("kip516.broker_stale_state")
shipped = scenarios.run("kip516.broker_stale_state_released")
pd.DataFrame([{"behaviour": t.result["behaviour"], "broker 1 answers": t.result["broker1_answer"],
               "old log moved to": t.result["stale_dir"] or "(kept in place)",
               "partition.metadata says": t.result["partition_metadata"].replace("\\n", " · ")}
              for t in (page, shipped)])"""),
    md("""What you just saw: under the page the stale log leaves at once (it goes to a `deleting/` folder
and is removed later); the shipped broker refuses the request with INCONSISTENT_TOPIC_ID and keeps
the old log and its `partition.metadata`, so an operator decides. The animation below steps through
the replica's moves — each frame is a row of the kit's `replica` table, the same rows the model ran."""),
    code("""from kipviz.widgets import player
player(page.animation("replica"))"""),
    code("""HTML(page.sequence_svg())"""),
    md("""### Where what shipped differs from the page

The kit keeps each difference as data with the Kafka source that shows it, and checks the wire ones
against its own definitions. Note the ones that matter for tooling: StopReplica, ListOffsets and
OffsetForLeaderEpoch never got topic IDs, and the fields the page made *tagged* shipped as ordinary
fields in new versions."""),
    code("""from kipviz.scenarios.kip516_departures import DEPARTURES
pd.DataFrame([{"RPC": d["topic"], "the page": d["page"], "what shipped": d["shipped"]} for d in DEPARTURES])"""),
    md("""A finding the page's design brings with it: its immediate deletion **retries** StopReplica, but
StopReplica names topics only by name. A retry that arrives after the topic was recreated deletes the
**new** topic's replica:"""),
    code("""by_name = scenarios.run("kip516.stop_replica_by_name")
show(by_name)
by_name.result"""),
    md("""## 6. The recreated topic in the logs (Spark)

The same run, written as sample logs and read back in PySpark: one row per incarnation of `orders`,
keyed by topic ID. The second incarnation's offsets start again at 0 — which is exactly why a
by-name position from the first one is meaningless."""),
    code("""from kipviz import spark as ks
logs = ks.scenario_logs("kip516.stale_read")
ks.recreated_offsets(logs, "orders").orderBy("generation").toPandas()"""),
    md("""## Summary

* Topic IDs are 16 random bytes, shown as 22 base64url characters; zero means "none".
* A request carrying a deleted topic's ID gets UNKNOWN_TOPIC_ID instead of silently reaching the new topic.
* By-name clients can still carry stale state across a delete/recreate; only IDs expose it.
* Deleting a topic tombstones its committed offsets; a late commit by name lands on the new topic, by ID it is refused.
* On the broker, the page deletes a stale log at once; shipped 2.8–3.9 brokers answer INCONSISTENT_TOPIC_ID and keep it.
* StopReplica, ListOffsets and OffsetForLeaderEpoch never got topic IDs; a by-name StopReplica retry can hit a recreated topic."""),
]

kip1319 = [
    md("""# 05 · TxnOffsetCommit v6 (KIP-1319, released in Kafka 4.4)

A transactional producer commits a consumer group's offsets with **TxnOffsetCommit**. Until v5 the
broker hid two distinct problems behind one error (ILLEGAL_GENERATION) and took topic **names**.
KIP-1319's v6 returns GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH directly, takes topic **IDs**, and
persists the real ID in the offsets record. v6 was merged on Kafka trunk in May–June 2026 (the
[KAFKA-20444](https://issues.apache.org/jira/browse/KAFKA-20444) series; [apache/kafka#22523](https://github.com/apache/kafka/pull/22523) marked it
stable) and shipped in **Kafka 4.4.0**, the newest release. Brokers of Kafka 4.0–4.3 serve up to
v5, so in a fleet that mixes releases the producer still meets v5 (section 3). kipviz labels v6
*released in 4.4*, and its cluster model plays Kafka 4.4 unless told otherwise.

**Learning objectives** — after this notebook you can
1. predict the TxnOffsetCommit error at v5 and at v6 for a missing group and a stale member epoch;
2. apply v6's per-partition error order (unknown ID → authorization → unknown partition);
3. explain when the producer falls back from v6 to v5, and which version producers and brokers of Kafka 4.0–4.4 agree on;
4. follow a whole read-process-write transaction through the transaction state machine.

**Prerequisites:** `04_consumer_groups`. **Time to complete:** about 35 minutes.
**Sources:** KIP_1319, KIP_848, KIP_516."""
       .replace("KIP_1319", kip_link(1319)).replace("KIP_848", kip_link(848)).replace("KIP_516", kip_link(516))),
    code("""import pandas as pd
from IPython.display import HTML, SVG, display
from kipviz import scenarios
from kipviz.draw import state_diagram, tables, to_svg
from kipviz.exercises import exercise
from kipviz.widgets import player
""" + SHOW),
    md("""## 1. The same mistake at v5 and at v6

### Exercise 1 — predict
A producer commits offsets for a group that does not exist (with a generation ≥ 0). What does v5
answer, and what does v6 answer?"""),
    *predict("05-1", "answer = (..., ...)   # (the error at v5, the error at v6)"),
    code("""cases = ["group_id_not_found", "stale_member_epoch"]
runs = {(c, v): scenarios.run(f"kip1319.{c}_v{v}") for c in cases for v in (5, 6)}
pd.DataFrame([{"case": c, "version": v, "error": runs[c, v].result["error"] if "error" in runs[c, v].result else "",
               "all checks passed": runs[c, v].passed} for (c, v) in runs])"""),
    code("""HTML(runs["stale_member_epoch", 6].sequence_svg())"""),
    md("""**In the logs.** Each run above, written as sample logs and read back in PySpark (one
SparkSession for the notebook: `local[2]`, small, no UI): the TxnOffsetCommit answers by request
version — the same mistakes, two different error codes."""),
    code("""from kipviz import spark as ks
spark = ks.session()
errs = [ks.request_errors(ks.scenario_logs(t), "TxnOffsetCommit").toPandas().assign(case=c) for (c, v), t in runs.items()]
pd.concat(errs).pivot_table(index=["case", "version"], columns="error", values="responses", fill_value=0)"""),
    md("""## 2. Topic IDs and the error order

At v6 the broker resolves topic IDs **before** authorization. For one request it answers, per
topic: UNKNOWN_TOPIC_ID for every partition of an ID it cannot resolve; then
TOPIC_AUTHORIZATION_FAILED for every partition of a topic the producer may not read; then
UNKNOWN_TOPIC_OR_PARTITION for a missing partition only."""),
    md("""### Exercise 2 — apply the error order
The producer (`User:app`) sends **one** v6 request with three topics. It may read `orders` but not
`secret`. The request names:

* (a) partition 0 of an **old** `secret`: the ID of a `secret` that was deleted and created again;
* (b) partition 9 of the **live** `secret` (it has fewer partitions);
* (c) partition 7 of `orders` (it has fewer partitions).

What does each of (a), (b) and (c) get? The run below shows all of it, so predict first."""),
    *predict("05-2", "answer = (..., ..., ...)   # the errors of (a), (b), (c)"),
    code("""order = scenarios.run("kip1319.error_order_v6")
show(order)
pd.DataFrame({"v6": pd.Series(order.result["v6"]), "v5 (by name)": pd.Series(order.result["v5"])})"""),
    md("""### v5 and v6 on the wire

The same commit at both versions, drawn from the kit's definitions with a concrete value: at v6
each topic costs a fixed 16-byte ID where v5 spent a length byte plus the name's characters. The
version diff lists what changed in the request and the response, and the three error codes a v6
answer can carry that v5 never returns (v5 maps the first two to ILLEGAL_GENERATION and has no
topic IDs)."""),
    code("""import uuid
from kipviz.draw import wire_diagram
from kipviz.draw.diff import diff_table
from kipviz.broker.error_codes import CODE

offsets = [{"PartitionIndex": 3, "CommittedOffset": 150382, "CommittedLeaderEpoch": 12, "CommittedMetadata": None}]
common = {"TransactionalId": "tx-orders-001", "GroupId": "order-processors", "ProducerId": 0, "ProducerEpoch": 12,
          "GenerationIdOrMemberEpoch": 5, "MemberId": "consumer-1", "GroupInstanceId": None}
v5_value = {**common, "Topics": [{"Name": "orders", "Partitions": offsets}]}
v6_value = {**common, "Topics": [{"TopicId": uuid.UUID(int=0x5EED), "Partitions": offsets}]}
display(SVG(to_svg(wire_diagram("TxnOffsetCommitRequest", 5, example=v5_value))))
display(SVG(to_svg(wire_diagram("TxnOffsetCommitRequest", 6, example=v6_value))))"""),
    code("""# what changed from v5 to v6: fields (from the definitions), then the error codes v6 adds
display(pd.concat({m: diff_table(f"TxnOffsetCommit{m}", 5, 6) for m in ("Request", "Response")}))
NEW_AT_V6 = {"GROUP_ID_NOT_FOUND": "the group does not exist (v5: ILLEGAL_GENERATION)",
             "STALE_MEMBER_EPOCH": "the member epoch is not the member's current one (v5: ILLEGAL_GENERATION)",
             "UNKNOWN_TOPIC_ID": "a topic ID the broker cannot resolve (v5 names topics, so never)"}
pd.DataFrame([{"error": e, "code": CODE[e], "returned at v6 when": why} for e, why in NEW_AT_V6.items()])"""),
    md("""### Errors by version

Which errors can a broker answer at each version? The kit keeps one table per RPC (each row names
the version that added the error and its source: Kafka's response schema or the KIP). The review
command and the wire explorer read the same table; a test checks it against every answer the
model gives in every scenario, and against the "Version N adds ..." notes of Kafka's own schemas."""),
    code("""from kipviz.broker import errors_by_version
from kipviz.broker.api_errors import new_errors
table = errors_by_version("TxnOffsetCommit")
names = sorted({e for errs in table.values() for e in errs})
by_version = pd.DataFrame({f"v{v}": ["✓" if e in table[v] else "" for e in names] for v in sorted(table)}, index=names)
display(by_version)
new_errors("TxnOffsetCommit", 5, 6)"""),
    code("""persisted = scenarios.run("kip1319.topic_id_persisted")
show(persisted)"""),
    code("""# in the logs: the committed offsets decoded from __consumer_offsets, topic IDs resolved to names
logs = ks.scenario_logs(persisted)
ks.committed_offsets(logs).select("group", "topic", "partition", "topic_id", "resolved_name", "value_version",
                                  "status").toPandas()"""),
    md("""## 3. Falling back to v5

The producer uses v6 only when the broker supports it **and** every topic has a known ID; otherwise
the whole request goes at v5.

### Exercise 3 — predict
A Kafka 4.4 producer commits through a Kafka 4.3 broker (the release before 4.4). Which
TxnOffsetCommit version does it send?"""),
    *predict("05-3"),
    code("""for name in ("kip1319.fallback_old_broker", "kip1319.fallback_unknown_topic_id", "kip1319.producer_error_classes"):
    t = scenarios.run(name)
    print(name, "->", "all checks passed" if t.passed else t.failures(), t.result.get("version_sent", ""))"""),
    code("""# in the logs: without topic IDs the whole request goes at v5
logs = ks.scenario_logs("kip1319.fallback_unknown_topic_id")
ks.request_errors(logs, "TxnOffsetCommit").toPandas()"""),
    md("""### Which releases you meet

A producer and a broker each know a range of TxnOffsetCommit versions; the producer sends the
newest version both know (and then v6 only if every topic has an ID). A Java client of a Kafka
release speaks the versions that release defines, like its brokers. The first table is the newest
version each release's brokers serve, computed from the kit's labels (`served_versions`, the
function the cluster model itself uses); the second crosses producer and broker releases, as in a
fleet that is upgraded one part at a time. The producer agrees versions with each broker it talks
to, so during a rolling upgrade the version follows the broker that coordinates the group."""),
    code("""from kipviz.broker.config import ClusterConfig, served_versions
from kipviz.schema.releases import RELEASES

newest = {r: served_versions("TxnOffsetCommit", ClusterConfig(release=r))[1] for r in RELEASES}
display(pd.DataFrame([newest], index=["newest TxnOffsetCommit version served"]).rename_axis(columns="Kafka"))
pd.DataFrame({f"broker {b}": {f"producer {p}": min(newest[p], newest[b]) for p in RELEASES} for b in RELEASES})"""),
    md("""Only a 4.4 producer with a 4.4 broker uses v6: a 4.4 producer against 4.0–4.3 brokers falls back
to v5 (the scenario above), and a 4.3 or older producer sends v5 even to 4.4 brokers, so it still
gets ILLEGAL_GENERATION for a missing group or a stale member epoch."""),
    md("""## 4. The regular read-process-write transaction, animated

A consumer reads `orders`, a transactional producer writes the results and commits the consumer's
offsets in the same transaction. Press **Play**: each frame is a row of the transaction
coordinator's state table, taken by this run."""),
    code("""rpw = scenarios.run("txn.read_process_write_commit")
show(rpw)
display(SVG(to_svg(state_diagram(tables()["transaction"]))))
player(rpw.animation("transaction"))"""),
    code("""HTML(rpw.sequence_svg())"""),
    code("""aborted = scenarios.run("txn.read_process_write_abort")
show(aborted)"""),
    code("""# in the logs: one row per transaction from __transaction_state, the abort and the retry
logs = ks.scenario_logs(aborted)
ks.transactions(logs).select("transactional_id", "txn", "outcome", "duration_ms", "partitions").toPandas()"""),
    md("""## Summary

* v0–5 report a missing group and a stale member epoch as ILLEGAL_GENERATION; v6 says GROUP_ID_NOT_FOUND / STALE_MEMBER_EPOCH.
* v6 names topics by ID; per topic: UNKNOWN_TOPIC_ID, then TOPIC_AUTHORIZATION_FAILED, then UNKNOWN_TOPIC_OR_PARTITION per partition.
* v6 persists the real topic ID in OffsetCommitValue v4; the v5 path leaves it zero.
* The producer falls back to v5 for the whole request when the broker or any topic ID is missing.
* v6 needs Kafka 4.4 or later on both sides: brokers of 4.0–4.3 serve up to v5, and producers before 4.4 send at most v5.
* A read-process-write transaction walks Empty → Ongoing → PrepareCommit → CompleteCommit, with markers on every partition."""),
]

write_notebook("03_topic_ids.ipynb", topic_ids)
write_notebook("05_txn_offset_commit_v6.ipynb", kip1319)
