"""Log compaction: what one pass of the log cleaner keeps of a compacted topic (kipviz.broker.cleaner).

After Kafka's Cleaner (storage/src/main/java/org/apache/kafka/storage/internals/log/Cleaner.java):
the offset map holds each key's newest offset in the dirty range, built without the records of
aborted transactions (buildOffsetMapForSegment skips them); the range ends at the first
uncleanable offset, the active segment's base, so the active segment is never cleaned and its
records do not count as any key's newest. A record is kept when it is its key's newest in the map
or its key is not in the map; a tombstone stays until delete.retention.ms after the pass; an
ABORT marker stays while it is needed; offsets keep their gaps."""
from __future__ import annotations

from ..clients import Producer
from ..schema.events import LogCleaned
from . import Trace, scenario

TOPIC = "prices"
# (key, value) appended in order by a plain producer; None is a tombstone
TICKS = [("apple", "1.00"), ("pear", "2.00"), ("apple", "1.10"), ("plum", "0.50"), ("pear", None), ("apple", "1.20")]
ABORTED = ("plum", "9.99")        # one record of a transaction that aborts
LATER = [("apple", "1.30"), ("plum", "0.55")]
CONFIGS = {"cleanup.policy": "compact", "internal.segment.bytes": "300", "delete.retention.ms": "60000"}


def write_prices(c) -> None:
    """The price list appended to a new compacted topic `prices` of cluster `c` (no cleaning yet)."""
    body = {"Topics": [{"Name": TOPIC, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                        "Configs": [{"Name": k, "Value": v} for k, v in CONFIGS.items()]}],
            "timeoutMs": 1000, "validateOnly": False}
    created = c.call("CreateTopics", 7, body)["Topics"][0]["ErrorCode"]
    if created:
        raise ValueError(f"CreateTopics {TOPIC}: error {created}")
    ticker, pricing = Producer(c, None, client_id="ticker"), Producer(c, "pricing", client_id="pricing")
    pricing.init_transactions()

    def put(key, value):
        ticker.send(TOPIC, key.encode(), None if value is None else value.encode(), partition=0)
    for k, v in TICKS:
        put(k, v)
    pricing.begin_transaction()
    pricing.send(TOPIC, ABORTED[0].encode(), ABORTED[1].encode(), partition=0)
    pricing.abort_transaction()
    for k, v in LATER:
        put(k, v)


def log_rows(c) -> list[dict]:
    """The `prices` log as a learner reads it: offset, key, value, what it is, and its segment."""
    from ..broker import cleaner
    topic = c.topics.get(TOPIC)
    log = topic.partitions[0]
    due = cleaner.cleanable(c, topic, log)
    active = due[1] if due else log.log_end_offset
    return [{"offset": e.offset, "key": "" if e.control else e.key.decode(),
             "value": "" if e.control or e.value is None else e.value.decode(),
             "what": (f"{e.control} marker" if e.control else "tombstone" if e.value is None
                      else "aborted transaction" if e.aborted else "record"),
             "segment": "active" if e.offset >= active else "older"} for e in log.entries]


@scenario("compaction.prices", kip=None, status="released",
          title="Log compaction: one pass of the log cleaner over a compacted topic",
          summary="A price list on a compacted topic (cleanup.policy=compact, small segments): a producer writes "
                  "prices, deletes one (a tombstone), a transaction writing one more price aborts, and apple "
                  "and plum are priced again. The log cleaner makes one pass. Which records does it keep, and why those?",
          log_cleaner_backoff_ms=15_000)
def prices(trace: Trace) -> None:
    c = trace.cluster
    write_prices(c)
    c.start_log_cleaner()
    c.advance(15_000)                   # log.cleaner.backoff.ms: the cleaner's first look
    passes = [e for e in c.events if isinstance(e, LogCleaned) and e.topic == TOPIC]
    trace.expect("one cleaning pass ran (the dirty ratio was above min.cleanable.dirty.ratio, 0.5)",
                 len(passes) == 1, f"{len(passes)} passes")
    log = c.topics.get(TOPIC).partitions[0]
    held = [(r.offset, r.key.decode(), None if r.value is None else r.value.decode())
            for r in log.entries if not r.control]
    active = passes[-1].end_offset if passes else log.log_end_offset
    below = [(o, k, v) for o, k, v in held if o < active]
    newest = {}
    for o, k, v in below:
        newest[k] = (o, v)
    trace.expect("below the first uncleanable offset each key is held once", len(newest) == len(below), repr(below))
    trace.expect("the aborted price is gone, and the price before it stays: aborted records never count as a key's "
                 "newest", ("plum", "0.50") in [(k, v) for _o, k, v in below], repr(below))
    trace.expect("the tombstone stays (delete.retention.ms has not passed since the pass)",
                 ("pear", None) in [(k, v) for _o, k, v in below], repr(below))
    trace.expect("the active segment is untouched", [(o, k, v) for o, k, v in held if o >= active]
                 == [(o, k, v) for o, k, v in held if o >= active and (k, v) in LATER], repr(held))
    trace.find("After the pass plum holds two records: 0.50, because the aborted 9.99 never entered the offset map, "
               "and 0.55, because it sits in the active segment, which is never cleaned.",
               "A consumer reading a compacted topic from the start: until a later pass it sees more than one value "
               "of a key, the newest last.",
               "Cleaner.java (buildOffsetMapForSegment skips aborted transactions' records; the cleanable range ends "
               "at the first uncleanable offset, LogCleanerManager.java); delete.retention.ms keeps tombstones.")
    trace.result.update(plum_records=sum(1 for _o, k, _v in held if k == "plum"),
                        held=held, first_uncleanable=active)
