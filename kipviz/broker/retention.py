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
segment.ms, is not modelled); on disk they are the log directory's own, and below the log
cleaner's last pass the segments it wrote (kipviz.broker.cleaner). The kit's simplification: a segment holding an open transaction's
records is kept until the transaction ends (Kafka deletes it and lets the first unstable offset
point at the log start).

A log addresses its records by absolute offset (`log.entries[offset]`, `len(log.entries)` is the
log end offset) whatever was released; iteration sees the records still held only. The
sample-data generator releases written prefixes through the same `release`
(kipviz.sampledata.writer)."""
from __future__ import annotations

from ..schema import events as ev
from .log_config import cleanup_policy, segment_bytes, topic_value


def release(log, upto: int) -> int:
    """Drop `log`'s records below `upto` and the batches that end below it; returns the number of
    batches dropped (also counted in log.batches_dropped). `upto` is capped at the last stable
    offset: open transactions stay whole (PartitionLog.release)."""
    return log.release(upto)


def held_bytes(log) -> int:
    return log.held_bytes


def segment_starts(log, segment_bytes: int) -> list[int]:
    """Index of the first held batch of each segment (oldest first). In memory: the segments the
    last pass wrote, then segments of up to `segment_bytes` from there (LogSegment.shouldRoll by size)."""
    got = log.store.segment_starts()
    if got is not None:
        return got
    n = len(log.batches)
    i0 = log.find(log.cleaned_upto) if log.cleaned_segments else 0
    starts = sorted({i for i in (log.find(b) for b in log.cleaned_segments) if i < min(i0, n)})
    size = 0
    sizes = log.columns()[1]
    for i in range(i0, n):
        if i == i0 or size + sizes[i] > segment_bytes:
            starts.append(i)
            size = 0
        size += sizes[i]
    return starts


def segments(log, segment_bytes: int) -> list[tuple[int, int, int]]:
    """(base offset, size in bytes, largest timestamp) of each segment, oldest first."""
    base, size, maxts = log.columns()
    starts = segment_starts(log, segment_bytes)
    ends = [*starts[1:], len(base)]
    return [(base[a], sum(size[a:b]), max(maxts[a:b])) for a, b in zip(starts, ends, strict=True)]


def new_log_start(log, now: int, retention_bytes: int, retention_ms: int, segment_bytes: int) -> tuple[int, str]:
    """Where the log start offset moves to after one retention pass, and why ("" if it stays)."""
    oldest = log.oldest_max_timestamp()
    if oldest is None or ((retention_bytes < 0 or log.held_bytes < retention_bytes)
                          and (retention_ms < 0 or now - oldest <= retention_ms)):
        return log.log_start_offset, ""      # nothing can go (the first segment is at least as new)
    segs = segments(log, segment_bytes)
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
    return (topic_value(cluster, topic, "retention.bytes"), topic_value(cluster, topic, "retention.ms"),
            segment_bytes(cluster, topic))


def enforce(cluster) -> int:
    """One retention pass over every live, non-internal partition log (internal topics are
    compacted in Kafka, not deleted by retention). Returns the number of batches deleted; each
    partition whose log start moves gets a LogStartOffsetMoved event."""
    total = 0
    holding = {log.topic for log in cluster.topics.logs_with_data}    # (5,000 empty topics cost nothing)
    for topic in list(cluster.topics.by_name.values()):
        if topic.internal or topic.name not in holding or "delete" not in cleanup_policy(cluster, topic):
            continue        # empty, or cleanup.policy=compact alone: the log cleaner's, not retention's
        rb, rms, sb = settings(cluster, topic)
        if rb < 0 and rms < 0:
            continue
        for log in topic.partitions:
            start, why = new_log_start(log, cluster.now, rb, rms, sb)
            if why:
                total += move_log_start(cluster, topic.name, log, start, f"log retention ({why})", why)
    return total


def move_log_start(cluster, topic: str, log, start: int, what: str, why: str) -> int:
    """Move `log`'s start offset up to `start` and drop what lies below it (UnifiedLog's
    maybeIncrementLogStartOffset, then deleteOldSegments for the segments below the new start):
    the one path for retention and for a coordinator's DeleteRecords (the share coordinator's
    pruning of __share_group_state). Capped like `release` at the last stable offset. Returns the
    number of batches dropped; a move is recorded as LogStartOffsetMoved."""
    old = log.log_start_offset
    start = min(start, log.last_stable_offset, log.log_end_offset)
    if start <= old:
        return 0
    spill = cluster.config.events_spill
    if spill is not None:           # a recording writes the batches before they go
        spill([])
    n = release(log, start)
    log.log_start_offset = start
    cluster.emit(ev.LogStartOffsetMoved, topic=topic, partition=log.partition, old=old,
                 log_start_offset=log.log_start_offset, by=what, reason=why, batches_deleted=n)
    return n
