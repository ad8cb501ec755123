# %% [markdown]
# # 07 · Log analysis with Spark: samples, a cluster, or a live topic
#
# Workshops end with "now look at the logs": which transactions aborted, how long records sat in
# TX_PENDING, whether exactly-once held. This notebook runs kipviz's analyses on **Apache Spark**
# (PySpark), embedded in this kernel (`local[2]`), over the sample logs in `sample_data/` — logs the
# coordinator model wrote, in exactly the shape Spark's Kafka source gives for a real topic. The same
# cells run unchanged on a Spark cluster or against a live Kafka cluster (section 9).
#
# **Learning objectives** — after this notebook you can
# 1. read Kafka logs into Spark with the Kafka source's columns and decode `__consumer_offsets`, `__transaction_state` and `__share_group_state` inside Spark;
# 2. compute committed offsets and lag with topic ids resolved to names, and spot [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) deleted/re-created topics;
# 3. measure transaction durations, commit/abort rates and timeouts, and the [KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups) (proposed) TX_PENDING metrics;
# 4. compare error codes by TxnOffsetCommit version before and after [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (released in Kafka 4.4);
# 5. verify exactly-once over a whole run and read the offending records when it fails.
#
# **Prerequisites:** `06_share_group_eos`. **Time to complete:** about 40 minutes.
# **Seeds:** [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers), [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol), [KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups) (proposed), [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API) (released in Kafka 4.4).

# %%
import json
import tempfile
from pathlib import Path

import pandas as pd
from IPython.display import display

from kipviz import spark as ks
from kipviz.course.exercises import exercise
from kipviz.spark import plots

pd.set_option("display.max_colwidth", None)     # whole cells in every table: no "..." cut

# one SparkSession for the whole notebook: local[2], ~768 MB driver, no web UI, errors-only logging
spark = ks.session()
SAMPLES = next(p for p in (Path("../sample_data"), Path("sample_data")) if p.is_dir())
pd.DataFrame([{k: m[k] for k in ("scenario", "status", "records", "seed", "group", "input_topic", "output_topic")}
              for m in (json.loads((d / "manifest.json").read_text()) for d in sorted(SAMPLES.iterdir()) if d.is_dir())])

# %% [markdown]
# ## 1. Sample logs shaped like Spark's Kafka source
#
# `kipviz sample-data --scenario NAME --records N --seed S -o DIR` runs the coordinator model and
# writes one Parquet dataset per topic with **exactly** the columns of
# `spark.read.format("kafka")` — `key`, `value` (binary), `topic`, `partition`, `offset`,
# `timestamp`, `timestampType`, `headers` — plus the raw record batches (transaction markers
# included), every request/response frame and the model's event log. `sample_data/README.md`
# documents every column; `make sample-data` regenerates the four runs byte for byte.

# %%
regular = ks.read_samples(spark, SAMPLES / "regular_eos")
orders = regular.topic("orders")
orders.printSchema()
ks.table(orders, 3)

# %% [markdown]
# ### Exercise 1
# How many columns does a topic DataFrame have (the Kafka source's schema)?

# %% kipviz={"exercise": "07-1"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "07-1"}
exercise('07-1').check(answer, orders=orders)

# %% [markdown]
# ## 2. Decoding inside Spark
#
# `decode_all` decodes the three internal topics with kipviz's own codec. The decoders run inside
# Spark's Python workers one **Arrow batch** at a time (`mapInArrow`): no row-by-row Python UDF.
# A record that does not decode (corrupt bytes, an unknown record version) becomes one row of
# `logs.errors` — the job never dies on one bad record.

# %%
logs = ks.decode_all(regular)
display(ks.table(logs.offsets.select("group", "topic", "partition", "committed_offset", "value_version",
                                     "commit_timestamp_ms"), 5))
display(ks.table(logs.transactions.select("transactional_id", "producer_id", "producer_epoch", "state", "partitions"), 5))
print("vectorised:", "MapInArrow" in logs.transactions._jdf.queryExecution().executedPlan().toString())
ks.table(logs.errors)

# %% [markdown]
# Bad data is counted, not fatal: below, three broken `__consumer_offsets` records (a
# truncated value, an unknown value version, a null key) are added to real ones, and the
# `timestamp` column is dropped.

# %%
import pyarrow as pa
import pyarrow.parquet as pq

from kipviz.spark import schemas

good = [r for r in pq.read_table(SAMPLES / "kip1319/topics/internal/consumer_offsets.parquet").to_pylist() if r["value"]][:50]
bad = [dict(good[0], offset=9001, value=good[0]["value"][:5]),
       dict(good[1], offset=9002, value=b"\x00\x63" + good[1]["value"][2:]),
       dict(good[2], offset=9003, key=None)]
frame = spark.createDataFrame(pa.Table.from_pylist(good + bad, schema=schemas.KAFKA).to_pandas(), schemas.KAFKA_DDL).drop("timestamp")
broken = ks.decode_all(ks.from_kafka_frame(spark, frame, ["__consumer_offsets"]))
print("decoded offset commits:", broken.offsets.count())
ks.table(broken.errors.select("dataset", "offset", "error_kind", "error"))

# %% [markdown]
# ## 3. Committed offsets and lag; [KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) topic ids
#
# `committed_offsets` takes each group's latest commit per partition, resolves the topic id in the
# commit (`__consumer_offsets` value v4 carries it when TxnOffsetCommit v6 wrote it — [KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API)) to
# the topic it belongs to, and flags names that were deleted and re-created during the run.

# %%
kip516 = ks.decode_all(ks.read_samples(spark, SAMPLES / "kip516"))
display(ks.table(kip516.source.topic_ids(), truncate=0))
lag = ks.committed_offsets(kip516)
display(ks.table(lag, truncate=0))
plots.plot_lag(lag)

# %% [markdown]
# ### Exercise 2
# How many topic ids did the name `clicks` have during the kip516 run?

# %% kipviz={"exercise": "07-2"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "07-2"}
exercise('07-2').check(answer, kip516=kip516)

# %% [markdown]
# ## 4. Transactions: durations, commit/abort rates, timeouts
#
# One row per transaction from `__transaction_state`: start, prepare, end, outcome, and whether the
# coordinator aborted it because `transaction.timeout.ms` passed.

# %%
txns = ks.transactions(logs)
display(ks.table(txns.groupBy("outcome").count()))
display(ks.table(ks.transaction_summary(logs, txns)))
plots.plot_transactions(txns)

# %% [markdown]
# ### Exercise 3
# How many transactions aborted in the regular_eos run?

# %% kipviz={"exercise": "07-3"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "07-3"}
exercise('07-3').check(answer, txns=txns)

# %% [markdown]
# ## 5. TX_PENDING residency and TxnPendingRecordsCount ([KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups), proposed)
#
# The share_eos run is a share-group read-process-write with KIP-1289's transactional
# acknowledgements and a seeded schedule of the KIP's corner-case faults (`manifest.json` lists
# them). Each stay of a record in TX_PENDING comes from the model's share-record state changes.

# %%
share = ks.decode_all(ks.read_samples(spark, SAMPLES / "share_eos"))
display(ks.table(pd.DataFrame(share.source.manifest["summary"]["faults"])[["at", "kind", "case", "outcome"]],
                 truncate=0))
stays = ks.tx_pending(share)
display(ks.table(stays.groupBy("exit_state", "exit_cause").count().orderBy("count", ascending=False), truncate=0))
display(ks.table(ks.kip1289_metrics(share, stays)))
display(plots.plot_residency(stays))
plots.plot_tx_pending(ks.tx_pending_series(share, stays), start_ms=plots.run_start(share))

# %% [markdown]
# ## 6. Error codes by TxnOffsetCommit version ([KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API))
#
# The kip1319 run has one processor on TxnOffsetCommit v6 and one capped at v5, with group churn
# (stale member epochs, [KIP-848](https://cwiki.apache.org/confluence/display/KAFKA/KIP-848%3A+The+Next+Generation+of+the+Consumer+Rebalance+Protocol)) and a side topic deleted and re-created (unknown topic ids). The
# same mistakes come back as different errors depending on the version.

# %%
k1319 = ks.decode_all(ks.read_samples(spark, SAMPLES / "kip1319"))
errs = ks.kip1319_errors(k1319)
display(ks.table(errs.filter("answers > 0"), truncate=0))
plots.plot_kip1319(errs)

# %% [markdown]
# ### Exercise 4
# Which error does a stale member epoch give at TxnOffsetCommit v5 (before KIP-1319)?

# %% kipviz={"exercise": "07-4"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "07-4"}
exercise('07-4').check(answer, errs=errs)

# %% [markdown]
# ## 7. Share-group state in `__share_group_state`
#
# ShareSnapshot and ShareUpdate records persist each share partition's start offset (SPSO) and the
# state of the records after it.

# %%
state = ks.share_state(share)
display(ks.table(state, 5))
plots.plot_share_state(state)

# %% [markdown]
# ## 8. Exactly-once verification
#
# `verify_eos` checks every input record of the share group: acknowledged exactly once, its
# output visible to a read_committed reader exactly once, no output without an acknowledgement and
# no acknowledgement without output. It is joins and aggregations over the whole run; only the
# offending records come back to the driver.
#
# First the clean share_eos run (its faults are all ones the KIP recovers from):

# %%
clean = ks.verify_eos(share)
print(clean.summary())

# %% [markdown]
# Now a run with an injected fault: KIP-1289 case 6 with a commit — the acquisition lock
# expires while the acknowledgements are TX_PENDING, the record is redelivered, and the first
# transaction still commits. The run is written with the same sample-data writer and read back
# like any other sample.

# %%
from kipviz.sampledata.generate import write_trace
from kipviz.workloads import Fault, run_share_eos

run = run_share_eos(records=200, consumers=2, partitions=1, seed=3, batch=20, faults=[Fault(3, "lock-expiry-tx-pending")])
faulty_dir = Path(tempfile.mkdtemp()) / "share_eos_case6"
write_trace(run, faulty_dir, name="share_eos + lock-expiry-tx-pending")
faulty = ks.verify_eos(ks.read_samples(spark, faulty_dir))
print(faulty.summary(limit=5))
display(ks.table(faulty.violations.select("kind", "topic", "partition", "offset", "outputs"), 5))
plots.plot_eos(faulty)

# %% [markdown]
# ### Exercise 5
# Which kind of violation does the injected fault produce?

# %% kipviz={"exercise": "07-5"}
answer = ...

# %% deletable=false editable=false kipviz={"check": "07-5"}
exercise('07-5').check(answer, faulty=faulty)

# %% [markdown]
# ## 9. The same cells on a cluster or a live topic
#
# **A Spark cluster.** `ks.session()` takes its master from, strongest first: the argument,
# `KIPVIZ_SPARK_MASTER`, Spark's own configuration (`spark-submit --master …`,
# `PYSPARK_SUBMIT_ARGS`, `spark-defaults.conf`), else `local[2]`:
#
# ```python
# spark = ks.session("spark://spark-master:7077")        # or "yarn", "k8s://https://…"
# ```
# ```bash
# KIPVIZ_SPARK_MASTER=spark://spark-master:7077 kipviz analyze sample_data/share_eos
# spark-submit --master yarn my_job.py                   # my_job.py calls ks.session()
# ```
#
# **A live Kafka topic.** `ks.read_kafka(spark, bootstrap, topics)` reads a cluster's topics as a
# batch, with the same eight columns as the sample files. It uses Spark's Kafka connector when the
# session has it, and otherwise kipviz's own source, `kipviz-kafka`: PySpark's Python Data Source
# API, one task per topic partition, each reading with confluent-kafka on an executor — no JVM
# package to fetch. (To use Spark's connector instead, add the package that matches your Spark,
# `spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:<your Spark version>`.)
#
# ```python
# src = ks.read_kafka(spark, "broker:9092", ["__consumer_offsets", "__transaction_state", "__share_group_state"])
# logs = ks.decode_all(src)                              # every analysis above, unchanged
# ```
#
# The decoders and the analyses cannot tell a live frame from a sample file. Below, one such
# DataFrame — all topics of the kip1319 run in one frame, as a `subscribe` of several topics
# returns — goes through `from_kafka_frame`, the function `read_kafka` uses, and gives the same
# transactions as the files. (A live cluster has no model events or request log: the TX_PENDING,
# KIP-1319 and exactly-once analyses need those and return empty frames or say so.)
#
# **Live, in a notebook:** `09_live_cluster` starts a `kipviz serve` cluster in its kernel, runs
# real clients against it, analyses what they did with these functions (its section 5) and
# follows the cluster with this source as a Structured Streaming query while they run (section 6).
# It is not repeated here: the source's Python workers beside this notebook's analyses would take
# the kernel past Binder's 1.5 GB (measured: 1.60 GB at its peak).

# %%
m = k1319.source.manifest
tables = [pq.read_table(SAMPLES / "kip1319" / t["dataset"]) for t in m["topics"] if not t["deleted"]]
kafka_like = spark.createDataFrame(pa.concat_tables(tables).to_pandas(), schemas.KAFKA_DDL)
live = ks.decode_all(ks.from_kafka_frame(spark, kafka_like, manifest=m))
cols = ["transactional_id", "txn", "outcome", "start_ms", "end_ms"]
same = ks.transactions(live).select(*cols).exceptAll(ks.transactions(k1319).select(*cols)).count() == 0
print("same transactions from a Kafka-source frame:", same)

# %%
for frame in (logs, kip516, share, k1319, live, broken):   # free the cached frames
    frame.unpersist()

# %% [markdown]
# ## Summary
#
# * `kipviz sample-data` writes the model's logs as Parquet with the Kafka source's columns, so
#   `read_samples` and `read_kafka` give the same DataFrames; `decode_all` decodes the internal
#   topics inside Spark with `mapInArrow`, and bad records land in `logs.errors`.
# * Analyses are plain functions returning DataFrames: committed offsets and lag ([KIP-516](https://cwiki.apache.org/confluence/display/KAFKA/KIP-516%3A+Topic+Identifiers) flags),
#   transactions and their rates and timeouts, TX_PENDING residency and metrics ([KIP-1289](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1289+Support+Transactional+Acknowledgments+for+Share+Groups),
#   proposed), error codes by TxnOffsetCommit version ([KIP-1319](https://cwiki.apache.org/confluence/display/KAFKA/KIP-1319:+Align+TxnOffsetCommit+API+with+OffsetCommit+API)), share-group state.
# * `verify_eos` finds every input acknowledged more or less than once and every output without its
#   acknowledgement (or the reverse), and names the offending records.
# * The same code runs on `local[2]`, a cluster (`KIPVIZ_SPARK_MASTER`, `spark-submit`) or a live
#   cluster's topics (`read_kafka`: Spark's Kafka connector when the session has it, kipviz's own
#   `kipviz-kafka` source otherwise); from the shell: `kipviz analyze DIR`, `kipviz verify-eos DIR`.
