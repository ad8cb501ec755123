"""Where a partition log keeps its record batches: in memory (the scenarios and the sample-data
generator), or on disk in a log directory laid out as Kafka's (`kipviz serve`), so that the
memory a served cluster holds does not grow with what clients produce.

    store = MemoryStore()                           # PartitionLog's default
    store = LogDir(path, segment_bytes).store(log)  # <path>/<topic>-<partition>/ as Kafka writes it

A store holds the batches of one log in order; PartitionLog (kipviz.broker.topics) keeps what the
model reads of each batch (offsets, producer, flags, timestamps) and asks the store for bytes only
when a Fetch, a ShareFetch or the sample writer needs them. Batch i of a store is the log's held
batch i; drop(k) forgets the oldest k.

On disk, after storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java and
LocalLog.java: a segment is `<base offset, 20 digits>.log` (the batches as stored), `.index`
(8-byte entries: offset relative to the base, position in .log) and `.timeindex` (12-byte entries:
largest timestamp so far, relative offset), one index entry each time more than
index.interval.bytes (4096) were appended since the last (LogSegment.append); a new segment
starts when the next batch would make the current one larger than segment.bytes
(LogSegment.shouldRoll's size rule). `partition.metadata` holds the topic id
(PartitionMetadataFile). Each file is written as the batches come, so the page cache, not the
process, holds the data. Directories are made at a log's first batch (Kafka makes them with the
partition; 5,000 auto-created topics should not cost 20,000 files up front). A deleted topic's
directories are renamed `<topic>-<partition>.<id>-delete` (UnifiedLog.logDeleteDirName) and kept
until the log directory goes (a recording still writes their batches at the end)."""
from __future__ import annotations

import os
import shutil
import struct
import uuid
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..records.header import header_field
from .replicas import partition_metadata

INDEX_INTERVAL_BYTES = 4096      # index.interval.bytes (LogConfig.DEFAULT_INDEX_INTERVAL_BYTES)
_OFFSET_ENTRY = struct.Struct(">ii")     # OffsetIndex: relative offset, position
_TIME_ENTRY = struct.Struct(">qi")       # TimeIndex: timestamp, relative offset
_MAX_OPEN = 256                  # file descriptors the process keeps open for all logs together


class MemoryStore:
    """The batches as bytes objects in a list."""
    __slots__ = ("items",)
    on_disk = False

    def __init__(self):
        self.items: list[bytes] = []

    def append(self, raw: bytes, base_offset: int, last_offset: int, max_timestamp: int) -> None:
        self.items.append(raw)

    def get(self, i: int) -> bytes:
        return self.items[i]

    def read(self, i: int, j: int) -> bytes:
        return b"".join(self.items[i:j])

    def drop(self, k: int) -> None:
        del self.items[:k]

    def replace_prefix(self, k: int, raws: list[bytes], bases, maxts, groups) -> None:
        """The oldest k batches become `raws` (the log cleaner's rewrite)."""
        self.items[:k] = raws

    def segment_starts(self) -> None:
        return None             # segments are the log's (kipviz.broker.retention.segments)

    def resident(self) -> int:
        """Bytes of batches this process holds (all of them, here)."""
        return sum(map(len, self.items))

    def deleted(self) -> None:
        pass


class _Files:
    """Open file descriptors, least recently used closed first (a served cluster can have
    thousands of partitions; the process may open ~20,000 files)."""

    def __init__(self, cap: int = _MAX_OPEN):
        self.cap = cap
        self.fds: OrderedDict[str, int] = OrderedDict()

    def fd(self, path: str) -> int:
        fd = self.fds.get(path)
        if fd is not None:
            self.fds.move_to_end(path)
            return fd
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.fds[path] = fd
        while len(self.fds) > self.cap:
            os.close(self.fds.popitem(last=False)[1])
        return fd

    def forget(self, prefix: str) -> None:
        for p in [p for p in self.fds if p.startswith(prefix)]:
            os.close(self.fds.pop(p))

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.popitem()[1])


class _Segment:
    __slots__ = ("base", "size", "since_index", "max_ts", "max_ts_offset", "last_time_entry", "batches", "suffix")

    def __init__(self, base: int, suffix: str = ""):
        self.base, self.suffix = base, suffix    # suffix ".cleaned": being written by the log cleaner
        self.size = 0                   # bytes in .log
        self.since_index = 0            # bytes appended since the last .index entry
        self.max_ts, self.max_ts_offset = -1, base
        self.last_time_entry = -1       # timestamp of the last .timeindex entry
        self.batches = 0                # of this store's held batches, how many are in this segment


class FileStore:
    """One partition log's directory: its segments' files, and per held batch where it is."""
    on_disk = True

    def __init__(self, logdir: LogDir, topic: str, partition: int, topic_id):
        self.logdir, self.topic, self.partition, self.topic_id = logdir, topic, partition, topic_id
        self.dir: Path | None = None    # made at the first batch
        self.segments: list[_Segment] = []
        self._seg = array("i")          # per held batch: its segment, as an index into segments
        self._pos = array("q")          # ... its position in that segment's .log
        self._len = array("i")          # ... its size
        self._dropped_segments = 0      # segments deleted from the front (so _seg stays absolute)

    # ---- paths ---------------------------------------------------------------------------------------
    def _path(self, seg: _Segment, ext: str) -> str:
        return str(self.dir / f"{seg.base:020d}{ext}{seg.suffix}")

    def _make_dir(self) -> None:
        self.dir = self.logdir.path / f"{self.topic}-{self.partition}"
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        text = partition_metadata(self.topic_id)
        if text is not None:
            fd = os.open(self.dir / "partition.metadata", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)

    # ---- the store interface -------------------------------------------------------------------------
    def append(self, raw: bytes, base_offset: int, last_offset: int, max_timestamp: int) -> None:
        if self.dir is None:
            self._make_dir()
        seg = self.segments[-1] if self.segments else None
        if seg is None or (seg.size and seg.size + len(raw) > self.logdir.segment_bytes(self.topic)):
            if seg is not None:         # LogSegment.onBecomeInactiveSegment: the last time-index entry
                self._time_entry(seg, force=True)
            seg = _Segment(base_offset)
            self.segments.append(seg)
        position = self._write(seg, raw, last_offset, max_timestamp)
        self._seg.append(len(self.segments) - 1 + self._dropped_segments)
        self._pos.append(position)
        self._len.append(len(raw))

    def _write(self, seg: _Segment, raw: bytes, last_offset: int, max_timestamp: int) -> int:
        """Append one batch to `seg`'s files (LogSegment.append); returns its position in .log."""
        position = seg.size
        os.pwrite(self.logdir.files.fd(self._path(seg, ".log")), raw, position)
        if max_timestamp > seg.max_ts:
            seg.max_ts, seg.max_ts_offset = max_timestamp, last_offset
        if seg.since_index > INDEX_INTERVAL_BYTES:
            os.write(self._append_fd(seg, ".index"), _OFFSET_ENTRY.pack(last_offset - seg.base, position))
            self._time_entry(seg)
            seg.since_index = 0
        seg.since_index += len(raw)
        seg.size += len(raw)
        seg.batches += 1
        return position

    def segment_starts(self) -> list[int]:
        """Per segment, the index of its first held batch (oldest first)."""
        seg = self._seg
        return [i for i in range(len(seg)) if i == 0 or seg[i] != seg[i - 1]]

    def replace_prefix(self, k: int, raws: list[bytes], bases, maxts, groups: list[int]) -> None:
        """The oldest k batches (whole segments) become `raws`, in new segments starting at the
        offsets `groups` (each named by its first old segment's base offset): first written as
        `.cleaned` files, then the old segments' files are deleted and the new ones renamed
        (Cleaner.cleanSegments and LocalLog.replaceSegments' swap)."""
        m = self._seg[k] - self._dropped_segments if k < len(self._seg) else len(self.segments)
        new: list[_Segment] = []
        seg_of, pos_of, len_of = array("i"), array("q"), array("i")
        g = 0
        for raw, base, ts in zip(raws, bases, maxts, strict=True):
            while g + 1 < len(groups) and groups[g + 1] <= base:
                g += 1
            if not new or new[-1].base != groups[g]:
                if new:
                    self._time_entry(new[-1], force=True)
                new.append(_Segment(groups[g], ".cleaned"))
            last = base + header_field(raw, "last_offset_delta")
            pos_of.append(self._write(new[-1], raw, last, ts))
            seg_of.append(len(new) - 1)
            len_of.append(len(raw))
        if new:
            self._time_entry(new[-1], force=True)
        files = self.logdir.files
        for seg in self.segments[:m]:
            for ext in (".log", ".index", ".timeindex"):
                path = self._path(seg, ext)
                files.forget(path)
                if os.path.exists(path):
                    os.unlink(path)
        for seg in new:
            for ext in (".log", ".index", ".timeindex"):
                path = self._path(seg, ext)
                files.forget(path)
                if os.path.exists(path):
                    os.rename(path, path[:-len(seg.suffix)])
            seg.suffix = ""
        shift = len(new) - m - self._dropped_segments
        self.segments[:m] = new
        self._seg = seg_of + array("i", (s + shift for s in self._seg[k:]))
        self._pos = pos_of + self._pos[k:]
        self._len = len_of + self._len[k:]
        self._dropped_segments = 0

    def _append_fd(self, seg: _Segment, ext: str) -> int:
        fd = self.logdir.files.fd(self._path(seg, ext))
        os.lseek(fd, 0, os.SEEK_END)
        return fd

    def _time_entry(self, seg: _Segment, force: bool = False) -> None:
        """TimeIndex.maybeAppend: only a timestamp larger than the last entry's."""
        if seg.max_ts > seg.last_time_entry or (force and seg.max_ts >= 0 and seg.last_time_entry < 0):
            os.write(self._append_fd(seg, ".timeindex"), _TIME_ENTRY.pack(seg.max_ts, seg.max_ts_offset - seg.base))
            seg.last_time_entry = seg.max_ts

    def _where(self, i: int) -> tuple[_Segment, int, int]:
        return self.segments[self._seg[i] - self._dropped_segments], self._pos[i], self._len[i]

    def get(self, i: int) -> bytes:
        if i < 0:
            i += len(self._pos)
        seg, pos, n = self._where(i)
        return os.pread(self.logdir.files.fd(self._path(seg, ".log")), n, pos)

    def read(self, i: int, j: int) -> bytes:
        """Batches i..j-1 as one bytes object: one read per segment they span."""
        out = []
        while i < j:
            s = self._seg[i]
            k = i
            while k < j and self._seg[k] == s:
                k += 1
            seg, pos, _ = self._where(i)
            end = self._pos[k - 1] + self._len[k - 1]
            out.append(os.pread(self.logdir.files.fd(self._path(seg, ".log")), end - pos, pos))
            i = k
        return b"".join(out)

    @property
    def items(self) -> list[bytes]:
        return [self.get(i) for i in range(len(self._pos))]

    def drop(self, k: int) -> None:
        """Forget the oldest k batches; a segment none of whose batches is held any more is
        deleted with its index files (LocalLog.deleteSegmentFiles)."""
        k = min(k, len(self._pos))
        if k <= 0:
            return
        for s in self._seg[:k]:
            self.segments[s - self._dropped_segments].batches -= 1
        del self._seg[:k], self._pos[:k], self._len[:k]
        while self.segments and self.segments[0].batches == 0 and (len(self.segments) > 1 or not self._pos):
            seg = self.segments.pop(0)
            self._dropped_segments += 1
            for ext in (".log", ".index", ".timeindex"):
                path = self._path(seg, ext)
                self.logdir.files.forget(path)
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass

    def resident(self) -> int:
        return 0

    def deleted(self) -> None:
        """The topic was deleted: its directory becomes `<topic>-<partition>.<id>-delete`."""
        if self.dir is None:
            return
        suffix = f".{uuid.uuid4().hex}-delete"
        stem = f"{self.topic}-{self.partition}"
        new = self.dir.with_name(stem[:255 - len(suffix)] + suffix)
        self.logdir.files.forget(str(self.dir) + os.sep)
        os.rename(self.dir, new)
        self.dir = new


class LogDir:
    """log.dirs for a served cluster: one directory per partition log that has had a batch.
    `segment_bytes(topic)`: segment.bytes of that topic (its own config, else the broker's)."""

    def __init__(self, path, segment_bytes: Callable[[str], int]):
        self.path = Path(path)
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.files = _Files()

    def store(self, log) -> FileStore:
        return FileStore(self, log.topic, log.partition, log.topic_id)

    def close(self, remove: bool = False) -> None:
        _close(self.files, self.path, remove)

    def remove_when_gone(self) -> None:
        """Delete the directory when this LogDir is garbage (its cluster is gone) or at exit."""
        weakref.finalize(self, _close, self.files, self.path, True)


def cluster_log_dir(cluster, path) -> LogDir:
    """A LogDir in `path` for `cluster`'s logs, each topic's segments as large as its segment.bytes
    in force (kipviz.broker.log_config.segment_bytes; the broker's log.segment.bytes for a topic gone)."""
    from .log_config import segment_bytes

    def size(name: str) -> int:
        t = cluster.topics.get(name)
        return segment_bytes(cluster, t) if t is not None else cluster.config.log_segment_bytes
    return LogDir(path, size)


def _close(files: _Files, path: Path, remove: bool) -> None:
    files.close()
    if remove:
        shutil.rmtree(path, ignore_errors=True)
