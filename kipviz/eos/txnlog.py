"""The transaction log (__transaction_state) cross-checked against the markers in the data
partitions: one function, used by the event checker (kipviz.eos.checker) and by Spark's
verify_eos (kipviz.spark.eos) alike, so that the two agree by construction.

    viols = check_markers(log_records, markers, topics={"in", "out"})

A transaction is what the coordinator prepared: a PrepareCommit / PrepareAbort record of a
transactional id, named by the record's (ProducerId, ProducerEpoch) -- the coordinator writes its
markers with exactly that producer id and epoch (TransactionCoordinator / TransactionMetadata
.prepareAbortOrCommit: under transaction version 2 the PrepareX record already carries the bumped
epoch; kipviz.broker.transactions._prepare does the same). A repeated PrepareX of the same
(producer id, epoch, decision) with no Complete in between is the same transaction. Under
transaction version 1 one (producer id, epoch) prepares many transactions: the k-th prepared
transaction of (producer id, epoch) that names a partition owns the k-th marker of (producer id,
epoch) on that partition. The transaction is completed once its CompleteCommit / CompleteAbort
is logged (the coordinator writes it only after every marker was acknowledged:
TransactionMarkerChannelManager).

The rules, on the partitions of `topics` only (those whose data the caller has):

  marker-missing     the coordinator completed the transaction, yet a partition it names has no
                     marker of it (the partition's next marker of that producer then ends a
                     different transaction than the log says)
  marker-mismatch    the marker's type is not the coordinator's decision (COMMIT for a
                     transaction it aborted, or the reverse)
  marker-unexpected  a marker no prepared transaction of the log accounts for (no such
                     producer id / epoch, a partition the transaction did not name, one marker
                     too many)

A retried WriteTxnMarkers may append the same marker again (the broker accepts a marker of the
producer's current epoch; kipviz's duplicate-marker fault): a marker with the producer id, epoch
and type of that producer's previous marker on the partition, with none of its data in between,
is a retry -- read_committed readers see nothing new -- and is set aside where the partition holds
more markers of that producer id and epoch than the log has transactions for it.

A transaction still prepared at the end (markers in flight) may have written some markers and not
others: no marker-missing for it. Violations are dicts: kind, transaction (text naming the
transactional id, producer id and epoch, or the marker's producer id and epoch when no transaction
matches), partition ("topic-p"), offset (the marker's, or None), detail."""
from __future__ import annotations

PREPARE = {2: "COMMIT", 3: "ABORT"}          # TransactionStatus ids (TransactionState.java)
COMPLETE = {4: "COMMIT", 5: "ABORT"}
TXN_KINDS = ("marker-missing", "marker-mismatch", "marker-unexpected")

__all__ = ["check_markers", "retried_markers", "TXN_KINDS", "txn_name"]


def txn_name(tid, pid, epoch) -> str:
    """A transaction's name in a message: "tx-1 (producer 7, epoch 0)"."""
    return f"{tid} (producer {pid}, epoch {epoch})" if tid is not None else f"producer {pid}, epoch {epoch}"


def check_markers(log_records, markers, topics) -> list[dict]:
    """log_records: (transactional_id, producer_id, producer_epoch, state_id, [(topic, partition), ...])
    in log order per transactional id (records of one id are in one __transaction_state partition);
    markers: (topic, partition, offset, producer_id, producer_epoch, "COMMIT" / "ABORT", retry) in
    offset order per partition; retry: the producer's previous marker on the partition has the same
    epoch and type and none of its data lies between (retried_markers() works it out). Returns the
    violations (module docstring), sorted."""
    topics = set(topics)
    txns = _prepared(log_records, topics)
    # the k-th prepared transaction of (pid, epoch) naming a partition <-> the k-th marker there
    expected: dict = {}
    for t in txns:
        for tp, p in t["parts"]:
            expected.setdefault((t["pid"], t["epoch"], tp, p), []).append(t)
    seen: dict = {}
    viols = _marker_violations(_kept_markers(markers, topics, expected), expected, txns, seen)
    for k, owners in expected.items():
        for t in owners[seen.get(k, 0):]:
            if t["completed"]:
                pid, epoch, tp, p = k
                viols.append(_v("marker-missing", txn_name(t["tid"], pid, epoch), tp, p, None,
                                f"Complete{t['decision'].title()} in __transaction_state, but no "
                                f"{t['decision']} marker of producer {pid} epoch {epoch} on {tp}-{p}"))
    viols.sort(key=lambda v: (v["partition"], v["offset"] if v["offset"] is not None else -1, v["kind"],
                              v["transaction"]))
    return viols


def _prepared(log_records, topics: set) -> list[dict]:
    """The prepared transactions in log order per id, each marked completed when its CompleteX follows."""
    txns: list[dict] = []                    # prepared transactions, in log order per id
    current: dict = {}                       # transactional id -> its transaction still prepared
    for tid, pid, epoch, state, parts in log_records:
        if state in PREPARE:
            cur = current.get(tid)
            if cur is not None and (cur["pid"], cur["epoch"], cur["decision"]) == (pid, epoch, PREPARE[state]):
                continue                     # the same PrepareX written again
            t = {"tid": tid, "pid": pid, "epoch": epoch, "decision": PREPARE[state], "completed": False,
                 "parts": [(tp, p) for tp, p in dict.fromkeys(parts or ()) if tp in topics]}
            txns.append(t)
            current[tid] = t
        elif state in COMPLETE:
            cur = current.pop(tid, None)
            if cur is not None and cur["decision"] == COMPLETE[state]:
                cur["completed"] = True
        elif state in (0, 1):                # Empty / Ongoing: a new transaction begins
            current.pop(tid, None)
    return txns


def _kept_markers(markers, topics: set, expected: dict) -> list:
    """The markers of `topics` in partition and offset order, less the retried ones beyond what the
    log's transactions account for."""
    by_key: dict = {}
    for m in markers:
        if m[0] in topics:
            by_key.setdefault((m[3], m[4], m[0], m[1]), []).append(m)
    kept = []
    for k, ms in by_key.items():
        excess = len(ms) - len(expected.get(k, ()))
        for m in ms:
            if excess > 0 and m[6]:
                excess -= 1                  # a retried marker: the same one again
                continue
            kept.append(m)
    kept.sort(key=lambda m: (m[0], m[1], m[2]))
    return kept


def _marker_violations(kept: list, expected: dict, txns: list[dict], seen: dict) -> list[dict]:
    """Each marker against the transaction it is the k-th marker of: none (unexpected) or of the other
    decision (mismatch). `seen` counts the markers per (pid, epoch, topic, partition)."""
    viols: list[dict] = []
    for tp, p, off, pid, epoch, mtype, _retry in kept:
        k = (pid, epoch, tp, p)
        i = seen.get(k, 0)
        seen[k] = i + 1
        owners = expected.get(k, ())
        if i >= len(owners):
            why = ("no transaction of the log has this producer id and epoch"
                   if not any(t["pid"] == pid and t["epoch"] == epoch for t in txns)
                   else f"the log's transactions of this producer id and epoch name {tp}-{p} "
                        f"{len(owners)} time(s), this is marker {i + 1}")
            viols.append(_v("marker-unexpected", txn_name(None, pid, epoch), tp, p, off,
                            f"{mtype} marker {tp}-{p}@{off} that no transaction in __transaction_state "
                            f"accounts for: {why}"))
            continue
        t = owners[i]
        if mtype != t["decision"]:
            viols.append(_v("marker-mismatch", txn_name(t["tid"], pid, epoch), tp, p, off,
                            f"{mtype} marker {tp}-{p}@{off} for a transaction the coordinator "
                            f"{'committed' if t['decision'] == 'COMMIT' else 'aborted'} "
                            f"(Prepare{t['decision'].title()} in __transaction_state)"))
    return viols


def retried_markers(batches):
    """batches: (topic, partition, offset, producer_id, producer_epoch, marker type or None for
    data) of transactional batches in offset order per partition -> the markers as check_markers
    takes them, each with its retry flag."""
    last: dict = {}                          # (topic, partition, pid) -> (epoch, type) of the last marker, or None
    out = []
    for tp, p, off, pid, epoch, mtype in batches:
        k = (tp, p, pid)
        if mtype is None:
            last[k] = None
            continue
        out.append((tp, p, off, pid, epoch, mtype, last.get(k) == (epoch, mtype)))
        last[k] = (epoch, mtype)
    return out


def _v(kind, txn, topic, partition, offset, detail) -> dict:
    return {"kind": kind, "transaction": txn, "partition": f"{topic}-{partition}", "offset": offset,
            "detail": detail}
