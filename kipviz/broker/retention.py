"""Log retention: deleting whole old segments from the front of a partition log, so the log start
offset moves up (Kafka's `cleanup.policy=delete`).

After storage/src/main/java/org/apache/kafka/storage/internals/log/UnifiedLog.java
(deleteOldSegments -> deleteRetentionSizeBreachedSegments, deleteRetentionMsBreachedSegments,
deletableSegments) run every log.retention.check.interval.ms by LogManager.cleanupLogs
(storage/.../log/LogManager.java):
  - size: with retention.bytes >= 0 and the log's size >= it, segments are deleted oldest first
    while (size - retention.bytes) - segment size >= 0;
  - time: a segment whose largest timestamp is more than retention.ms old is deleted;
  - only segments wholly below the high watermark (here the log end) go; the active (last) segment
    goes too when it qualifies (Kafka rolls a new empty one); the log start offset becomes the
    base offset of the first segment kept (or the log end).
Segments are modelled from the stored batches: a new segment starts when the next batch would make
the current one larger than segment.bytes (LogSegment.shouldRoll's size rule; time-based rolling,
segment.ms, is not modelled). The kit's simplification: a segment holding an open transaction's
records is kept until the transaction ends (Kafka deletes it and lets the first unstable offset
point at the log start).

The model addresses entries by absolute offset (`log.entries[offset]`, `len(log.entries)` is the
log end offset), so the released prefix is replaced by a count: `Tail` is a list of the remaining
entries whose indexing, slicing and len() work in absolute offsets. Iteration (`for e in
log.entries`, `reversed(...)`) sees the remaining entries only. The sample-data generator releases
written prefixes through the same `release` (kipviz.sampledata.retention)."""
from __future__ import annotations

import struct

from .log_config import cleanup_policy, topic_value

_HEAD = struct.Struct(">qi")            # base offset, batch length - 12
_DELTA = struct.Struct(">i")            # lastOffsetDelta at byte 23
_MAX_TS = struct.Struct(">q")           # maxTimestamp at byte 35


class Tail(list):
    """Log entries from offset `base` on, addressed by absolute offset."""
    __slots__ = ("base",)

    def __init__(self, entries=(), base: int = 0):
        super().__init__(entries)
        self.base = base

    def __len__(self) -> int:
        return self.base + list.__len__(self)

    def __getitem__(self, i):
        b = self.base
        if type(i) is int and i >= b:       # the common case first: one offset still in the log
            return list.__getitem__(self, i - b)
        if isinstance(i, slice):
            if i.step not in (None, 1) or (i.start is not None and i.start < 0) or (i.stop is not None and i.stop < 0):
                raise IndexError("released log: only forward slices by absolute offset")
            start = 0 if i.start is None else max(i.start - b, 0)
            stop = None if i.stop is None else max(i.stop - b, 0)
            return list.__getitem__(self, slice(start, stop))
        if i < 0:
            return list.__getitem__(self, i)
        if i < b:
            raise IndexError(f"offset {i} was released (log starts at {b})")
        return list.__getitem__(self, i - b)

    def release(self, upto: int) -> int:
        """Forget the entries below offset `upto`; returns how many were dropped."""
        n = min(upto - self.base, list.__len__(self))
        if n <= 0:
            return 0
        list.__delitem__(self, slice(0, n))
        self.base += n
        return n


def release(log, upto: int) -> int:
    """Drop `log`'s entries below `upto` and the batches that end below it; returns the number of
    batches dropped (also counted in log.batches_dropped). `upto` is capped at the last stable
    offset: open transactions stay whole."""
    upto = min(upto, log.last_stable_offset, log.log_end_offset)
    if not isinstance(log.entries, Tail):
        log.entries = Tail(log.entries)
    log.entries.release(upto)
    k = 0
    for raw in log.batches:
        if _HEAD.unpack_from(raw, 0)[0] + _DELTA.unpack_from(raw, 23)[0] >= upto:
            break
        k += 1
    if k:
        del log.batches[:k]
        del log.batch_seqs[:k]
        log.batches_dropped += k
    return k


def held_bytes(log) -> int:
    return sum(len(b) for b in log.batches)


def segments(log, segment_bytes: int) -> list[tuple[int, int, int]]:
    """(base offset, size in bytes, largest timestamp) of each segment, oldest first."""
    out: list[list[int]] = []
    for raw in log.batches:
        base = _HEAD.unpack_from(raw, 0)[0]
        ts = _MAX_TS.unpack_from(raw, 35)[0] if len(raw) >= 43 else -1
        if not out or out[-1][1] + len(raw) > segment_bytes:
            out.append([base, len(raw), ts])
        else:
            s = out[-1]
            s[1] += len(raw)
            s[2] = max(s[2], ts)
    return [tuple(s) for s in out]


def new_log_start(log, now: int, retention_bytes: int, retention_ms: int, segment_bytes: int) -> tuple[int, str]:
    """Where the log start offset moves to after one retention pass, and why ("" if it stays)."""
    segs = segments(log, segment_bytes)
    if not segs:
        return log.log_start_offset, ""
    ends = [s[0] for s in segs[1:]] + [log.log_end_offset]
    cap = log.last_stable_offset           # the kit keeps open transactions whole (see above)
    k, why = 0, ""
    if retention_bytes >= 0:
        size = sum(s[1] for s in segs)
        if size >= retention_bytes:
            diff = size - retention_bytes
            while k < len(segs) and diff - segs[k][1] >= 0 and ends[k] <= cap:
                diff -= segs[k][1]
                k += 1
            why = "retention.bytes" if k else ""
    if retention_ms >= 0:
        j = k
        while j < len(segs) and now - segs[j][2] > retention_ms and ends[j] <= cap:
            j += 1
        if j > k:
            k, why = j, "retention.ms"
    return (ends[k - 1], why) if k else (log.log_start_offset, "")


def settings(cluster, topic) -> tuple[int, int, int]:
    """(retention.bytes, retention.ms, segment.bytes) for `topic`: its own config, else the broker's
    (dynamic, then static log.retention.bytes / log.retention.ms / log.segment.bytes: kipviz.broker.log_config)."""
    return tuple(topic_value(cluster, topic, n) for n in ("retention.bytes", "retention.ms", "segment.bytes"))


def enforce(cluster) -> int:
    """One retention pass over every live, non-internal partition log (internal topics are
    compacted in Kafka, not deleted by retention). Returns the number of batches deleted; each
    partition whose log start moves gets a Note."""
    total = 0
    for topic in list(cluster.topics.by_name.values()):
        if topic.internal or "delete" not in cleanup_policy(cluster, topic):
            continue        # cleanup.policy=compact alone: the log cleaner's, not retention's
        rb, rms, sb = settings(cluster, topic)
        if rb < 0 and rms < 0:
            continue
        for log in topic.partitions:
            start, why = new_log_start(log, cluster.now, rb, rms, sb)
            total += move_log_start(cluster, topic.name, log, start, f"log retention ({why})", why)
    return total


def move_log_start(cluster, topic: str, log, start: int, what: str, why: str) -> int:
    """Move `log`'s start offset up to `start` and drop what lies below it (UnifiedLog's
    maybeIncrementLogStartOffset, then deleteOldSegments for the segments below the new start):
    the one path for retention and for a coordinator's DeleteRecords (the share coordinator's
    pruning of __share_group_state). Capped like `release` at the last stable offset. Returns the
    number of batches dropped; a move gets a Note."""
    old = log.log_start_offset
    start = min(start, log.last_stable_offset, log.log_end_offset)
    if start <= old:
        return 0
    spill = cluster.config.events_spill
    if spill is not None:           # a recording writes the batches before they go
        spill([])
    n = release(log, start)
    log.log_start_offset = start
    cluster.note(f"{what}: {topic}-{log.partition} log start offset {old} -> {log.log_start_offset}",
                 topic=topic, partition=log.partition, reason=why, log_start_offset=log.log_start_offset,
                 batches_deleted=n)
    return n
