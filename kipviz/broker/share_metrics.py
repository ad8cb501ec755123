"""KIP-1289 (PROPOSED) metrics, computed from the event log only (the KIP-1289 page, "Metrics").

    metrics(cluster.events)                      # {name: value}
    time_series(cluster.events)                  # [(t, TxnPendingRecordsCount)] after each change

Derived as follows (names as the KIP gives them):
* TxnPendingRecordsCount (gauge): +1 per share-record StateChanged into TX_PENDING, -1 per one out.
* TxnShareAcknowledgeRequestLatencyMs (histogram; "staging latency"): ResponseSent.t -
  RequestReceived.t per TxnShareAcknowledge request (matched by broker, client, correlation id);
  reported as count / max / p99. Virtual time: 0 unless the model holds a request.
* TxnPendingLockExpiredCount (counter): TX_PENDING -> ACQUIRED moves caused by lock-expired.
* TransactionPartitionsCount (gauge, reused): partitions in the latest TransactionLog value of
  each transactional id, summed; ShareStatePartitionsInTransactions counts the __share_group_state
  ones among them.
* share-ack-txn-send-rate / share-ack-txn-send-error-rate (producer meters): ShareAcksSent /
  ShareAcksFailed (and synchronous TxnShareAcknowledge ClientErrors) per second over the span of
  the events.
* share-group-metadata-fetch-rate (consumer meter): ShareGroupMetadataTaken per second.
* TxnPendingResidencyMs (the follow-up KIP's histogram, not in KIP-1289 itself): time each record
  spent in TX_PENDING, as max / p99."""
from __future__ import annotations

import math

from ..schema import events as ev
from ..schema.topics import SHARE_GROUP_STATE, TRANSACTION_STATE

TX_PENDING = "TX_PENDING"
MACHINE = "share-record"


def _p99(values: list[int]) -> int:
    if not values:
        return 0
    v = sorted(values)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)]


def _pending_moves(events):
    for e in events:
        if e.kind == "StateChanged" and e.machine == MACHINE:
            if e.to_state == TX_PENDING and e.from_state != TX_PENDING:
                yield e, +1
            elif e.from_state == TX_PENDING and e.to_state != TX_PENDING:
                yield e, -1


def time_series(events, name: str = "TxnPendingRecordsCount") -> list[tuple[int, int]]:
    """[(t, value)] after every change of the gauge `name` (TxnPendingRecordsCount or
    TxnPendingLockExpiredCount); several changes at one instant keep only the last value."""
    out: list[tuple[int, int]] = []
    n = 0
    for e, d in _pending_moves(events):
        if name == "TxnPendingRecordsCount":
            n += d
        elif name == "TxnPendingLockExpiredCount":
            if d > 0 or e.cause != "lock-expired":
                continue
            n += 1
        else:
            raise ValueError(f"no time series for {name!r}")
        if out and out[-1][0] == e.t:
            out[-1] = (e.t, n)
        else:
            out.append((e.t, n))
    return out


def _pending_stats(events: list) -> tuple[int, int, list[int]]:
    """Records pending in a transaction now, how many left it by lock expiry, and each stay's length."""
    pending = 0
    expired = 0
    since: dict[str, int] = {}
    residency: list[int] = []
    for e, d in _pending_moves(events):
        pending += d
        if d > 0:
            since[e.key] = e.t
        else:
            residency.append(e.t - since.pop(e.key, e.t))
            if e.cause == "lock-expired":
                expired += 1
    return pending, expired, residency


# size: one pass over the events with one branch per event kind it counts; a pass per kind would re-read every event
def _ack_stats(events: list) -> tuple[list[int], dict, int, int, int]:
    """TxnShareAcknowledge latencies, each transaction's partitions, and the clients' send, error
    and group-metadata fetch counts."""
    received: dict[tuple, int] = {}
    latency: list[int] = []
    txn_parts: dict[str, list] = {}
    sent = failed = fetched = 0
    for e in events:
        k = e.kind
        if k == "RequestReceived" and e.api == "TxnShareAcknowledge":
            received[(e.broker, e.client, e.correlation_id)] = e.t
        elif k == "ResponseSent" and e.api == "TxnShareAcknowledge":
            t0 = received.pop((e.broker, e.client, e.correlation_id), None)
            if t0 is not None:
                latency.append(e.t - t0)
        elif k == "RecordAppended" and e.topic == TRANSACTION_STATE and isinstance(e.record, dict):
            tid = (e.record.get("key") or {}).get("TransactionalId")
            value = e.record.get("value")
            if tid is not None:
                txn_parts[tid] = [(t["Topic"], p) for t in (value or {}).get("TransactionPartitions") or []
                                  for p in t["PartitionIds"]]
        elif isinstance(e, ev.ShareAcksSent):
            sent += 1
        elif isinstance(e, ev.ShareAcksFailed) or (isinstance(e, ev.ClientError) and e.synchronous
                                                    and e.api == "TxnShareAcknowledge"):
            failed += 1
        elif isinstance(e, ev.ShareGroupMetadataTaken):
            fetched += 1
    return latency, txn_parts, sent, failed, fetched


def metrics(events) -> dict:
    events = list(events)
    pending, expired, residency = _pending_stats(events)
    latency, txn_parts, sent, failed, fetched = _ack_stats(events)
    span_s = max(1, (events[-1].t - events[0].t)) / 1000 if events else 1.0
    parts = [tp for tps in txn_parts.values() for tp in tps]
    return {
        "TxnPendingRecordsCount": pending,
        "TxnPendingLockExpiredCount": expired,
        "TxnShareAcknowledgeRequestLatencyMs": {"count": len(latency), "max": max(latency, default=0),
                                                "p99": _p99(latency)},
        "TransactionPartitionsCount": len(parts),
        "ShareStatePartitionsInTransactions": sum(1 for t, _ in parts if t == SHARE_GROUP_STATE),
        "share-ack-txn-send-rate": sent / span_s,
        "share-ack-txn-send-error-rate": failed / span_s,
        "share-group-metadata-fetch-rate": fetched / span_s,
        "TxnPendingResidencyMs": {"count": len(residency), "max": max(residency, default=0),
                                  "p99": _p99(residency)},
        "status": "proposed",
        "kip": "KIP-1289",
    }


# How to read each of the KIP's seven metrics at the end of a run: what it means (the KIP's
# "Purpose" column), a healthy value, an unhealthy one, and the test applied to the run's value.
# The KIP states two alerts (TxnPendingRecordsCount > 0 for > 60 s; TxnPendingLockExpiredCount
# non-zero); the other thresholds are the kit's suggestion and say so.
READINGS = (
    ("TxnPendingRecordsCount", "gauge", "records in TX_PENDING now (the KIP's primary health signal)",
     "0 between transactions", "> 0 for more than 60 s (the KIP's primary alert)",
     lambda v: v == 0),
    ("TxnShareAcknowledgeRequestLatencyMs", "histogram (p99)", "how long staging takes",
     "a few ms, far below the 30 s lock", "a large share of the lock duration (kit's suggestion)",
     lambda v: v["p99"] < 3000),
    ("TxnPendingLockExpiredCount", "counter", "locks that expired while TX_PENDING: abandoned transactions "
     "or missing markers", "0", "any non-zero value (the KIP: critical alert)", lambda v: v == 0),
    ("TransactionPartitionsCount", "gauge (reused)", "partitions in open transactions, now including "
     "__share_group_state-N", "back to 0 after each transaction", "stays above 0: a transaction hangs "
     "(kit's suggestion)", lambda v: v == 0),
    ("share-ack-txn-send-rate", "producer meter", "staging calls per second: the loop commits",
     "> 0 while records arrive", "0 while records arrive (kit's suggestion)", lambda v: v > 0),
    ("share-ack-txn-send-error-rate", "producer meter", "failed staging calls per second (drives retries)",
     "0", "> 0 sustained: the loop retries (kit's suggestion)", lambda v: v == 0),
    ("share-group-metadata-fetch-rate", "consumer meter", "metadata snapshots per second: the "
     "read-process-write loop is alive", "> 0 while the loop runs", "0: the loop stopped (kit's suggestion)",
     lambda v: v > 0),
)


def readings(events) -> list[dict]:
    """The seven metrics of a run as rows a learner can read: value, meaning, healthy, unhealthy,
    and how this run's value looks (by the rule above)."""
    values = metrics(events)
    rows = []
    for name, kind, meaning, healthy, unhealthy, ok in READINGS:
        v = values[name]
        shown = f"p99 {v['p99']} ms (max {v['max']}, {v['count']} requests)" if isinstance(v, dict) else (
            f"{v:.3f}/s" if isinstance(v, float) else v)
        rows.append({"metric": name, "type": kind, "this run": shown,
                     "looks": "healthy" if ok(v) else "UNHEALTHY", "means": meaning,
                     "healthy": healthy, "unhealthy": unhealthy})
    return rows
