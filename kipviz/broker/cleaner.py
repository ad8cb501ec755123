"""Log compaction (cleanup.policy=compact): the log cleaner keeps the newest record of each key.

After storage/src/main/java/org/apache/kafka/storage/internals/log/ LogCleaner.java (the cleaner
thread: the filthiest log first, log.cleaner.backoff.ms when none), LogCleanerManager.java
(grabFilthiestCompactedLog, cleanableOffsets), Cleaner.java (doClean, buildOffsetMap, cleanInto,
shouldDiscardBatch, shouldRetainRecord), CleanedTransactionMetadata.java and
clients/.../common/record/MemoryRecords.java (filterTo). One pass over a log:

  - cleanable range: from the cleaner's checkpoint (first dirty offset, at least the log start) up
    to the first uncleanable offset = min(last stable offset, the active segment's base offset,
    the base of the first segment newer than min.compaction.lag.ms);
  - the log is cleaned when dirty bytes / (clean + dirty bytes) > min.cleanable.dirty.ratio
    (strictly; LogCleanerManager.grabFilthiestCompactedLog), or when max.compaction.lag.ms has
    passed for its first dirty batch and there are dirty bytes (needCompactionNow);
  - offset map: key -> last offset over the dirty range (records of aborted transactions and
    markers skipped); then every segment from the log start through the last one the range
    touches is rewritten batch by batch. A record stays if its offset is past the map's latest,
    or it is the newest of its key; a record without a key goes; a tombstone (null value) stays
    until the batch's delete horizon, which the first pass that keeps it stamps (now +
    delete.retention.ms, KIP-534: attribute bit 6, BaseTimestamp = the horizon);
  - transactions (CleanedTransactionMetadata): an aborted transaction's batches go; its ABORT
    marker stays while that pass removed data of it, a COMMIT marker while its data is there; a
    marker with nothing left to cover gets a delete horizon and goes after it;
  - a producer's last data batch is kept even when all its records go (RETAIN_EMPTY, an empty
    batch), so its producer state (epoch, sequence) survives, and so is the batch that ends at the
    round's upper bound (its last offset stays known); offsets keep their gaps, a
    rewritten batch keeps its base and last offset (MemoryRecords.buildRetainedRecordsInto).

Not modelled: the offset map's memory bound (log.cleaner.dedupe.buffer.size), I/O throttling,
several cleaner threads, producer-id expiry's effect on RETAIN_EMPTY (every producer in the log is
"active"), dirty bytes counted by whole segments (here: by batches)."""
from __future__ import annotations

from .. import records as rec
from ..records.header import DELETE_HORIZON_MASK, header_field, records_count
from ..schema.events import LogCleaned
from .log_config import cleanup_policy, segment_bytes, topic_value
from .retention import segment_starts
from .topics import COMMIT, CONTROL, TXN

BACKOFF_MS = 15000       # log.cleaner.backoff.ms (CleanerConfig.LOG_CLEANER_BACKOFF_MS_DEFAULT)


def _groups(log, starts: list[int], k: int, seg_bytes: int) -> list[int]:
    """Cleaner.groupSegmentsBySize: the segments below batch k in groups whose sizes before cleaning
    add up to at most segment.bytes; each group becomes one cleaned segment named by its first
    segment's base offset."""
    sizes, bases = log.columns()[1], log.columns()[0]
    segs = [(a, b) for a, b in zip(starts, [*starts[1:], len(bases)], strict=True) if a < k]
    out, total = [], 0
    for a, b in segs:
        size = sum(sizes[a:b])
        if not out or total + size > seg_bytes:
            out.append(bases[a])
            total = 0
        total += size
    return out


def cleanable(cluster, topic, log) -> tuple[int, int, int, int] | None:
    """(first dirty offset, first uncleanable offset, dirty bytes, clean bytes) when `log` is due
    for a pass now, else None."""
    if not log.held_bytes:
        return None
    base, size, maxts = log.columns()
    starts = segment_starts(log, segment_bytes(cluster, topic))
    upper = min(log.last_stable_offset, base[starts[-1]])          # the active segment is never cleaned
    lag = topic_value(cluster, topic, "min.compaction.lag.ms")
    first_dirty = max(log.first_dirty_offset, log.log_start_offset)
    if lag > 0:
        ends = starts[1:] + [len(base)]
        for a, b in zip(starts, ends, strict=True):
            if base[a] >= first_dirty and max(maxts[a:b]) > cluster.now - lag:
                upper = min(upper, base[a])
                break
    if first_dirty >= upper:
        return None
    d0, d1 = log.find(first_dirty), log.find(upper)
    dirty, clean = sum(size[d0:d1]), sum(size[:d0])
    if not dirty:
        return None
    ratio = dirty / (clean + dirty)
    max_lag = topic_value(cluster, topic, "max.compaction.lag.ms")
    due = cluster.now - maxts[d0] > max_lag
    if not due and not ratio > topic_value(cluster, topic, "min.cleanable.dirty.ratio"):
        return None
    return first_dirty, upper, dirty, clean


def _offset_map(log, first_dirty: int, upper: int) -> dict:
    """Cleaner.buildOffsetMap: key -> the last offset of it in [first_dirty, upper), aborted
    transactions' records and markers skipped."""
    got: dict = {}
    for e in log.entries[first_dirty:upper]:
        if e.control is None and not e.aborted and e.key is not None:
            got[e.key] = e.offset
    return got


def _last_data_offsets(log) -> dict[int, int]:
    """Producer id -> the last offset of its last data batch (ProducerStateEntry.lastDataOffset)."""
    out: dict[int, int] = {}
    for i in range(len(log.batches)):
        b, last, pid, _e, flags, _t, _s = log.batch_numbers(i)
        if pid >= 0 and not flags & CONTROL:
            out[pid] = last
    return out


class _Txns:
    """CleanedTransactionMetadata: which transactions the pass is inside, from the aborted index."""

    def __init__(self, log):
        self.aborted = sorted(log.aborted_index, key=lambda t: t[1])
        self.ongoing_aborted: dict[int, bool] = {}     # producer id -> a batch of it was seen
        self.ongoing_committed: set[int] = set()

    def _consume(self, upto: int) -> None:
        while self.aborted and self.aborted[0][1] <= upto:
            self.ongoing_aborted[self.aborted.pop(0)[0]] = False

    def can_discard(self, flags: int, pid: int, last: int, empty_control: bool) -> bool:
        self._consume(last)
        if flags & CONTROL:
            if empty_control:
                return True
            if not flags & COMMIT:
                return not self.ongoing_aborted.pop(pid, False)     # kept while it covered removed data
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        if flags & TXN:
            if pid in self.ongoing_aborted:
                self.ongoing_aborted[pid] = True
                return True
            self.ongoing_committed.add(pid)
        return False


def _rewrite(raw: bytes, keep, horizon: int | None, empty: bool) -> bytes:
    """The batch with only the records `keep` says, its delete horizon set when `horizon` is given
    (MemoryRecords.filterTo / buildRetainedRecordsInto); `empty`: an empty batch (writeEmptyHeader)."""
    b = rec.read_batches(raw, verify_crc=False)[0]
    head = {k: b[k] for k in ("base_offset", "partition_leader_epoch", "timestamp_type", "is_transactional",
                              "is_control", "producer_id", "producer_epoch", "base_sequence",
                              "last_offset_delta")}
    if empty:
        return rec.write_batch([], base_timestamp=b["max_timestamp"], max_timestamp=b["max_timestamp"], **head)
    records = [{"key": r["key"], "value": r["value"], "headers": r["headers"], "timestamp": r["timestamp"],
                "offset_delta": r["offset_delta"]} for r in b["records"] if keep(r)]
    has_horizon = horizon is not None or b["has_delete_horizon"]
    base_ts = horizon if horizon is not None else (b["base_timestamp"] if has_horizon else None)
    if b["timestamp_type"] in (1, "LogAppendTime"):     # the broker's time stays the batch's
        head["max_timestamp"] = b["max_timestamp"]
    return rec.write_batch(records, compression=b["compression"], has_delete_horizon=has_horizon,
                           base_timestamp=base_ts, **head)


class _Pass:
    """One pass's filter (Cleaner.cleanInto's RecordFilter: checkBatchRetention, shouldRetainRecord)."""

    def __init__(self, log, now: int, horizon_ms: int, keys: dict, upper: int):
        self.log, self.now, self.horizon_ms, self.keys = log, now, horizon_ms, keys
        self.upper, self.latest = upper, upper - 1      # OffsetMap.latestOffset: the map is never full here
        self.last_data = _last_data_offsets(log)
        self.txns = _Txns(log)
        self.removed = 0

    # size: checkBatchRetention and shouldRetainRecord side by side, one decision per batch to compare with Kafka's
    def batch(self, i: int, raw: bytes) -> bytes | None:
        """Held batch i as the pass leaves it: the same bytes, rewritten ones, or None (gone)."""
        base, last, pid, _epoch, flags, _ts, _size = self.log.batch_numbers(i)
        count = records_count(raw)
        control = bool(flags & CONTROL)
        can = self.txns.can_discard(flags, pid, last, control and count == 0)
        attrs = header_field(raw, "attributes")
        horizon = header_field(raw, "base_timestamp") if attrs & DELETE_HORIZON_MASK else None
        discard = can and (not control or (horizon is not None and horizon <= self.now))
        # RETAIN_EMPTY: a producer's last data batch (its sequence and epoch), and the batch ending
        # at the round's upper bound (so the last offset is not lost)
        retain_empty = (pid >= 0 and not control and self.last_data.get(pid) == last) or last + 1 == self.upper
        keys, latest, now = self.keys, self.latest, self.now

        def keep(r) -> bool:
            if discard:
                return False
            if control or r["offset"] > latest:
                return True
            if r["key"] is None:
                return False
            newest = r["offset"] >= keys.get(r["key"], -1)
            return newest and (r["value"] is not None or horizon is None or now < horizon)

        if count == 0:
            records = []
        elif control:
            records = [{"offset": base, "value": b""}] if keep({"offset": base}) else []
        else:
            records = [r for r in self.log.decoded(base) if keep(r)]
        self.removed += count - len(records)
        stamp = horizon is None and (any(r["value"] is None for r in records) or (control and can and records))
        if records and len(records) == count and not stamp:
            return raw
        if records:
            return _rewrite(raw, keep, now + self.horizon_ms if stamp else None, False)
        if retain_empty:
            return raw if count == 0 else _rewrite(raw, keep, None, True)
        return None


def clean(cluster, topic, log, first_dirty: int, upper: int) -> LogCleaned:
    """One cleaning pass over `log` (Cleaner.doClean); returns its LogCleaned event."""
    keys = _offset_map(log, first_dirty, upper)
    flt = _Pass(log, cluster.now, topic_value(cluster, topic, "delete.retention.ms"), keys, upper)
    seg_bytes = segment_bytes(cluster, topic)
    starts = segment_starts(log, seg_bytes)
    k = log.find(upper)
    k = next((s for s in starts if s >= k), len(log.batches))      # whole segments
    groups = _groups(log, starts, k, seg_bytes)
    before_bytes = sum(log.columns()[1][:k])
    before_records = 0
    kept: list[tuple[int, bytes]] = []
    for i in range(k):
        raw = log.batches[i]
        before_records += records_count(raw)
        got = flt.batch(i, raw)
        if got is not None:
            kept.append((i, got))
    rewritten_end = log.batch_numbers(k)[0] if k < len(log.batches) else log.log_end_offset
    log.replace_prefix(k, kept, groups)
    log.first_dirty_offset = upper
    after_bytes = sum(log.columns()[1][:len(kept)])
    return cluster.emit(LogCleaned, topic.name, log.partition, first_dirty, upper, k, len(kept),
                        before_bytes, after_bytes, before_records, flt.removed, log.log_start_offset,
                        rewritten_end, _runs(e.offset for e in log.entries[:rewritten_end]))


def _runs(offsets) -> tuple:
    out: list[list[int]] = []
    for o in offsets:
        if out and out[-1][1] == o - 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    return tuple(tuple(r) for r in out)


def run(cluster) -> list[LogCleaned]:
    """One round of the cleaner: every due compacted log, filthiest first (LogCleaner's loop,
    which cleans while grabFilthiestCompactedLog finds one)."""
    due = []
    holding = {log.topic for log in cluster.topics.logs_with_data}
    for topic in list(cluster.topics.by_name.values()):
        if topic.name not in holding or "compact" not in cleanup_policy(cluster, topic):
            continue
        for log in topic.partitions:
            got = cleanable(cluster, topic, log)
            if got is not None:
                due.append((got[2] / (got[2] + got[3]), topic, log, got))
    due.sort(key=lambda d: -d[0])
    return [clean(cluster, topic, log, got[0], got[1]) for _r, topic, log, got in due]
