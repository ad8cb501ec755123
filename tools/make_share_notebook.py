"""Writes notebooks/06_share_group_eos.ipynb (kept as a script so the notebook's source is reviewable)."""
from nbbuild import code, md, predict, write_notebook

from kipviz.course import kip_link

# (scenario, title, what goes wrong, prediction question); expected answers and hints: kipviz.exercises
CASES = [
    ("kip1289.case01_broker_crash_tx_pending", "1 · Broker crash while records are TX_PENDING",
     "The share-partition leader stages acknowledgements, then crashes before the COMMIT marker. "
     "TX_PENDING lives only in memory (the KIP keeps `__share_group_state` unchanged).",
     "After the restart, are the staged records delivered again? (True/False)"),
    ("kip1289.case02_coordinator_unavailable", "2 · Registration with the transaction coordinator fails",
     "The broker's internal add of `__share_group_state-N` to the transaction gets a retriable error.",
     "Is anything staged? (True/False)"),
    ("kip1289.case03_zombie_producer", "3 · A zombie producer",
     "Producer A (old epoch) sends TxnShareAcknowledge after producer B initialised the same transactional id.",
     "Which error does A get?"),
    ("kip1289.case05_duplicate_marker", "5 · The same marker twice",
     "The transaction coordinator retries a WriteTxnMarkers it already delivered.",
     "Does the second marker change any record? (True/False)"),
    ("kip1289.case06_lock_expiry_tx_pending", "6 · Lock expiry while TX_PENDING",
     "The transaction stalls after staging and the acquisition lock (30 s) runs out.",
     "Which state does a TX_PENDING record return to when its lock expires?"),
    ("kip1289.case07_txn_timeout", "7 · Transaction timeout while TX_PENDING",
     "The producer dies after staging; the coordinator aborts the abandoned transaction.",
     "Is any input record lost? (True/False)"),
    ("kip1289.case08_stale_member_epoch", "8 · Rebalance between metadata snapshot and call",
     "The member epoch changes after `share_group_metadata()` and before the call.",
     "Which error comes back?"),
    ("kip1289.case09_old_broker", "9 · A broker without the RPC",
     "During a rolling upgrade some brokers do not advertise TxnShareAcknowledge (share.version < 2).",
     "Are any TxnShareAcknowledge bytes sent? (True/False)"),
    ("kip1289.case10_invalid_ack_type", "10 · RELEASE inside a transaction",
     "The application tries to RELEASE (2) a record inside the transaction.",
     "Which error?"),
    ("kip1289.case11_partial_multi_partition", "11 · One of two partitions fails",
     "Acknowledgements for partitions A and B; B is invalid.",
     "Is partition A staged? (True/False)"),
    ("kip1289.case12_leader_change_share_state", "12 · Leader change of `__share_group_state-N`",
     "The share-state partition's leadership moves between staging and the marker.",
     "Are records redelivered? (True/False)"),
    ("kip1289.case13_markers_never_arrive", "13 · Markers never arrive",
     "The transaction aborts, but the broker holding TX_PENDING never gets the marker.",
     "Does the partition converge anyway? (True/False)"),
    ("kip1289.case14_concurrent_epochs", "14 · An old in-flight call after an epoch bump",
     "A TxnShareAcknowledge with the previous epoch arrives after the producer's epoch was bumped.",
     "Which error?"),
]

# per case: what its logs show, read back in PySpark (kipviz.spark) from the run's sample logs
SPARK = {
    "case01": 'ks.redeliveries(logs).toPandas()  # staged records delivered again after the crash',
    "case02": 'ks.tx_pending(logs).groupBy("exit_state", "exit_cause").count().toPandas()  # each TX_PENDING stay, how it ended',
    "case03": 'ks.request_errors(logs, "TxnShareAcknowledge").toPandas()  # the zombie\'s call: PRODUCER_FENCED',
    "case05": 'ks.request_errors(logs, "WriteTxnMarkers").toPandas()  # the markers arrive twice',
    "case06": 'display(ks.tx_pending(logs).toPandas())  # residency and the lock-expired exits\n'
              'ks.kip1289_metrics(logs).toPandas()  # TxnPendingLockExpiredCount',
    "case07": 'display(ks.transactions(logs).select("transactional_id", "outcome", "timed_out", "duration_ms").toPandas())\n'
              'ks.tx_pending(logs).groupBy("exit_state", "exit_cause").count().toPandas()  # ABORT reverts TX_PENDING',
    "case08": 'ks.request_errors(logs, "TxnShareAcknowledge").toPandas()  # STALE_MEMBER_EPOCH at staging',
    "case09": 'ks.request_errors(logs).filter("api in (\'ApiVersions\', \'TxnShareAcknowledge\')").toPandas()',
    "case10": 'ks.request_errors(logs, "TxnShareAcknowledge").toPandas()  # INVALID_RECORD_STATE',
    "case11": 'display(ks.request_errors(logs, "TxnShareAcknowledge").toPandas())\n'
              'ks.tx_pending(logs).count()  # stays in TX_PENDING in the whole run: only the later, valid call staged',
    "case12": 'ks.redeliveries(logs).toPandas()  # TX_PENDING lost with the old leader: redelivered',
    "case13": 'display(ks.tx_pending(logs).toPandas())  # exits by lock expiry\nks.kip1289_metrics(logs).toPandas()',
    "case14": 'ks.request_errors(logs, "TxnShareAcknowledge").toPandas()  # the stale epoch: PRODUCER_FENCED',
}
assert set(SPARK) == {c[0].split(".")[1].split("_")[0] for c in CASES}

# per case: a short recap shown after its cells, above the partition's final picture
SAW = {'case01': "The crash wiped TX_PENDING from memory; the records reloaded as AVAILABLE, came back with a higher delivery count and were processed again. The output of the first attempt had already committed, so each record's output is visible twice: the at-least-once window the KIP documents.", 'case02': 'The registration of `__share_group_state-N` failed, so no record left ACQUIRED: the error reached the producer, the application aborted and retried. Nothing was lost or duplicated.', 'case03': "The zombie's call was refused with PRODUCER_FENCED before anything was staged; the new producer staged and committed the same records once.", 'case05': 'The repeated marker found nothing in TX_PENDING (no-op by state); the late copy carried an older epoch than the new staging (no-op by epoch). Every record changed state exactly once.', 'case06': 'With the lock expired, TX_PENDING went back to ACQUIRED and then AVAILABLE; another member processed the records. Read the findings above: if the stalled producer commits late, its output is a duplicate the KIP does not list.', 'case07': 'The coordinator aborted the abandoned transaction, the ABORT marker returned the records to ACQUIRED, and the next lock cycle made them AVAILABLE for the replacement worker. This order needs `transaction.timeout.ms` below the lock duration (see the findings).', 'case08': 'The staging call carried an outdated member epoch: STALE_MEMBER_EPOCH, nothing staged. The retry with a fresh `share_group_metadata()` committed.', 'case09': 'No TxnShareAcknowledge bytes went to a broker that does not advertise the RPC: the producer failed before sending. After the operator finalized `share.version` 2 the same records were staged and committed.', 'case10': 'RELEASE, RENEW and GAP have no meaning inside a transaction: each was answered INVALID_RECORD_STATE and nothing was staged.', 'case11': 'One bad partition failed the whole call: B got INVALID_RECORD_STATE, A OPERATION_NOT_ATTEMPTED, and neither was staged (all or nothing).', 'case12': 'The COMMIT marker reached the new leader of `__share_group_state-N`, which never saw the staging; the records waited for the lock, were redelivered and processed again: at-least-once, as the KIP documents for this window.', 'case13': 'The ABORT marker never reached the share-state leader; the lock expiry returned the records anyway, and the late marker changed nothing. Convergence costs one lock cycle.', 'case14': "The old in-flight call (previous epoch) was fenced with PRODUCER_FENCED; the current transaction's staging stayed untouched."}
assert set(SAW) == set(SPARK)


cells = [
    md("""# 06 · Exactly-once with share groups (KIP-932 + KIP-1289, proposed)

Share groups (KIP-932, released in Kafka 4.2) let many consumers share a partition: each record is
**acquired** with a lock and **acknowledged** one by one. Until KIP-1289 there was no way to commit
those acknowledgements inside a producer transaction, so read-process-write with share groups was
at-least-once. KIP-1289 (**proposed**, under vote) adds a `TX_PENDING` record state and the
`TxnShareAcknowledge` RPC. kipviz models it behind `share.version >= 2`, labels every proposed row,
and runs every corner case the KIP lists.

**Learning objectives** — after this notebook you can
1. follow a share-partition record through AVAILABLE → ACQUIRED → ACKNOWLEDGED/ARCHIVED, with delivery counts and locks;
2. compare the regular consumer-group transaction with the share-group one;
3. predict the outcome of each KIP-1289 corner case and name the guarantee it keeps;
4. read the exactly-once checker's verdict on a run.

**Prerequisites:** `05_txn_offset_commit_v6`. **Time to complete:** about 45 minutes.
**Sources:** KIP_1289 (proposed); share groups are [KIP-932](https://cwiki.apache.org/confluence/display/KAFKA/KIP-932%3A+Queues+for+Kafka) (released in Kafka 4.2).""".replace(
        "KIP_1289", kip_link(1289))),
    code("""import pandas as pd
from IPython.display import HTML, SVG, display
from kipviz import scenarios
from kipviz import spark as ks
from kipviz.broker.share_metrics import readings
from kipviz.draw import record_strip, share_state_diagrams, to_svg
from kipviz.exercises import exercise
from kipviz.teach import check
from kipviz.widgets import player, strip_player

from kipviz.scenarios.report import report

def show(trace):
    \"\"\"The run's findings (what goes wrong, who sees it, what the KIP says), then its own checks.\"\"\"
    display(report(trace))

spark = ks.session()      # one SparkSession for the notebook's log cells (local[2], small, no UI)

def saw(trace):
    \"\"\"The share partition's final state after the run (the last frame of its strip).\"\"\"
    strip = record_strip(trace.events)
    display(SVG(strip.svg()) if len(strip) else "no share-record changed state in this run")

def verdict(trace):
    \"\"\"The exactly-once checker's report over the run's events (None when the case never commits).\"\"\"
    report = trace.result.get("eos")
    print(report.summary() if report is not None else "no exactly-once report for this run")"""),
    md("""## 1. Share groups in one page (KIP-932, released in Kafka 4.2)

A share group lets several consumers read **the same partition**. The share-partition leader
keeps, per offset, a state, a delivery count and (while acquired) a lock owner:

| state | id | meaning |
|---|---|---|
| AVAILABLE | 0 | can be handed out by the next ShareFetch |
| ACQUIRED | 1 | handed to one member under a lock (`group.share.record.lock.duration.ms`, 30 s) |
| ACKNOWLEDGED | 2 | processed (ACCEPT) — terminal |
| ARCHIVED | 4 | rejected, or its delivery count hit `group.share.delivery.count.limit` (5) — terminal |

Acknowledge types: 0 gap, 1 ACCEPT, 2 RELEASE, 3 REJECT (4 RENEW is KIP-1222). The
share-partition start offset (SPSO) moves past every run of terminal records; the state is
persisted as ShareSnapshot/ShareUpdate records in `__share_group_state`.

The state machine below is drawn from the table the model executes: released Kafka on the
left; with KIP-1289's proposed rows (dashed) on the right."""),
    code("""released, proposed = share_state_diagrams()
display(SVG(to_svg(released)), SVG(to_svg(proposed)))"""),
    md("""Two consumers share one partition: A accepts two records, releases one and rejects one;
B gets the released record again with delivery count 2. Each cell of the strip is an offset:
colour = state, number = delivery count, label = lock owner. Press Play."""),
    code("""basics = scenarios.run("kip932.acquire_and_acknowledge")
show(basics)
strip_player(record_strip(basics.events))"""),
    md("""### Exercise 1 — predict
A consumer acquires a record and never acknowledges it (it keeps heartbeating). How many times is
the record delivered before it is archived, with the default settings?"""),
    *predict("06-1"),
    code("""slow = scenarios.run("kip932.lock_expiry_delivery_limit")
show(slow)
print("delivery counts seen by the consumer:", slow.result["delivery_counts"])
player(slow.animation("share-record"))"""),
    md("""## 2. The two flows side by side

Left: a regular consumer group commits its offsets inside the transaction (AddOffsetsToTxn /
TxnOffsetCommit, markers to `__consumer_offsets`) — released Kafka. Right: a share group stages
its acknowledgements (TxnShareAcknowledge, broker-internal registration, markers to
`__share_group_state`) — KIP-1289, **proposed**. Both are drawn from real runs of the model, one
lane per broker, each step on the broker where it happens.

The share side runs KIP-1289 **as written** on 3 brokers: `in-0` is led by broker 0, where
TxnShareAcknowledge stages the records; the COMMIT marker for `__share_group_state-28` goes to that
partition's leader, broker 1. The KIP's hook "broadcasts to all SharePartition instances **on that
broker**", and broker 1 does not lead `in-0`: step 7 shows the records left TX_PENDING."""),
    code("""from kipviz.draw.flows import regular_vs_share_flow
flow = regular_vs_share_flow()
flow          # the two sequence diagrams, then the steps table (flow.save("flows.html") writes a page)"""),
    md("""### Where the marker lands: one scenario per outcome

* `kip1289.marker_colocated` — `in-0` and `__share_group_state-N` on one broker (the KIP's worked
  example): exactly once.
* `kip1289.marker_not_colocated` — different leaders, the KIP as written: the records stay TX_PENDING,
  the lock expires, they are redelivered and processed again; every attempt's output commits. The
  exactly-once checker reports a **violation**, not one of the KIP's documented windows.
* `kip1289.marker_forwarded` — the same layout with `share_marker_routing="forward-to-leader"`,
  **the kit's suggestion, not the KIP's**: the receiving broker forwards the marker to the share
  partition's leader. Exactly once."""),
    code("""stuck = scenarios.run("kip1289.marker_not_colocated")
show(stuck)
print(stuck.scenario.findings)
print(stuck.result["eos"].summary(limit=2))"""),
    code("""regular_vs_share_flow(share="kip1289.marker_forwarded")   # the kit's suggestion: forward, then resolve on broker 0"""),
    md("""## 3. The happy paths, record by record

COMMIT moves ACCEPT → ACKNOWLEDGED and REJECT → ARCHIVED; ABORT moves every staged record back
to ACQUIRED (the member still holds it and processes it again)."""),
    code("""commit = scenarios.run("kip1289.happy_commit")
show(commit)
verdict(commit)
strip_player(record_strip(commit.events))"""),
    code("""abort = scenarios.run("kip1289.happy_abort")
show(abort)
verdict(abort)
player(abort.animation("share-record"))"""),
    md("""### Reading the KIP's seven metrics

KIP-1289 adds six metrics and reuses one. Each row below is a metric computed from the events of
the abort run, what it means, what a healthy and an unhealthy value look like, and how this run's
value looks. The KIP states two alerts (TxnPendingRecordsCount above 0 for more than 60 s, and any
TxnPendingLockExpiredCount); the other thresholds are the kit's suggestion. Case 6 below shows an
unhealthy value."""),
    code("""# the KIP's metrics, computed from the events of the abort run
pd.DataFrame(readings(abort.events)).set_index("metric")"""),
]
cells += [md("""## The corner cases

The KIP's page lists its corner cases numbered 1 to 14, but **there is no case 4**: the list goes
from 3 (a producer fenced while staging) to 5 (a duplicate marker), in the page version the kit
follows. Nothing was left out here; the numbering below is the KIP's, so that each case can be
looked up on its page. Each case ends with its findings (above its checks), a run, its logs in
Spark, and a short "what you just saw" with the share partition's final state.""")]
for n, (name, title, what, question) in enumerate(CASES, start=2):
    var = name.split(".")[1].split("_")[0]
    cells += [
        md(f"""## Case {title}

{what}

### Exercise {n} — predict
{question}"""),
        *predict(f"06-{n}"),
        code(f"""{var} = scenarios.run({name!r})
show({var})
verdict({var})
strip_player(record_strip({var}.events))"""),
        code(f"""# in the logs: the run above, written by the sample-data writer and decoded in Spark
logs = ks.scenario_logs({var})
{SPARK[var]}"""),
        md(f"""**What you just saw.** {SAW[var]}"""),
        code(f"""saw({var})"""),
    ]
cells += [
    md("""### Every corner case, checked
Each exercise's check computed its answer from the run; the cell below confirms that every
corner case's own checks passed."""),
    code("""runs = {c["name"]: scenarios.run(c["name"]) for c in scenarios.catalog() if c["name"].startswith("kip1289.")}
print(check(all(t.passed for t in runs.values()), True, hint="every corner case's checks pass"))
pd.DataFrame([{"scenario": n, "status": t.scenario.status, "checks": len(t.checks), "passed": t.passed} for n, t in runs.items()])"""),
    md("""## Summary

* Share-group records move AVAILABLE → ACQUIRED → ACKNOWLEDGED/ARCHIVED; delivery counts grow on acquisition; the 5th failed delivery archives.
* KIP-1289 (proposed) stages acknowledgements as TX_PENDING inside the producer's transaction; COMMIT resolves ACCEPT → ACKNOWLEDGED and REJECT → ARCHIVED, ABORT returns records to ACQUIRED.
* As written, the COMMIT marker resolves a staging only on the broker that receives it: when a share partition and its `__share_group_state-N` have different leaders, exactly-once breaks (`kip1289.marker_not_colocated`); forwarding the marker to the share partition's leader is the kit's suggestion, not the KIP's.
* Every corner case either stages nothing (fencing, epochs, ack types, all-or-nothing, old brokers) or converges by lock timeout; cases 1 and 12 keep at-least-once because TX_PENDING is in memory only.
* The exactly-once checker reads only the events and names the events that prove any violation."""),
]
write_notebook("06_share_group_eos.ipynb", cells)
