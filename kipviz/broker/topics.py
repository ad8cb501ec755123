"""Topics with topic IDs (KIP-516) and their partition logs, including the internal topics.

A partition log holds record batches as Kafka stores them (the producer's bytes with offsets
assigned, kipviz.broker.handlers.data) in a store (kipviz.broker.segments: memory, or a Kafka-style
log directory on disk), plus a few numbers per batch that the model reads often: base and last
offset, producer id and epoch, transactional / control / COMMIT / aborted flags, max timestamp,
size, and the seq of its first RecordAppended event. Its records are read from the bytes when
someone asks (`log.entries`: Entry views, decoded per batch and cached), so the memory a log takes
is about the bytes clients sent, not an object per record."""
from __future__ import annotations

import bisect
import itertools
import uuid
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field

from .. import records as rec
from ..records.header import CONTROL_MASK, HEADER, TRANSACTIONAL_MASK, records_count
from ..schema.topics import CONSUMER_OFFSETS, INTERNAL_TOPICS, SHARE_GROUP_STATE, TRANSACTION_STATE
from ..uuids import random_uuid
from .segments import MemoryStore

# The topic configs the coordinators create their topics with (defaults of the segment settings:
# 100 MiB each). group-coordinator/.../GroupCoordinatorService.groupMetadataTopicConfigs (compact,
# compression producer, offsets.topic.segment.bytes); core/.../coordinator/transaction/
# TransactionStateManager.scala transactionTopicConfigs (unclean leader election off, uncompressed,
# compact, transaction.state.log.segment.bytes; its min.insync.replicas is not set here, the kit's
# brokers are few); share-coordinator/.../ShareCoordinatorService.shareGroupStateTopicConfigs ("delete" as
# defined in KIP-932, compression producer, share.coordinator.state.topic.segment.bytes).
INTERNAL_TOPIC_CONFIGS = {
    CONSUMER_OFFSETS: {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"},
    TRANSACTION_STATE: {"cleanup.policy": "compact", "compression.type": "uncompressed",
                            "segment.bytes": "104857600", "unclean.leader.election.enable": "false"},
    SHARE_GROUP_STATE: {"cleanup.policy": "delete", "compression.type": "producer", "segment.bytes": "104857600"},
}
TXN, CONTROL, COMMIT, ABORTED = 1, 2, 4, 8          # per-batch flags
GAPS = 16          # a batch the log cleaner rewrote: its records no longer fill base..last (kipviz.broker.cleaner)
_NO_SEQ = -1
_uids = itertools.count()
_changes = [0]          # every append, release, topic creation and deletion adds one (changes())


def changes() -> int:
    """A number that changes whenever any partition log or topic does (held requests retry only then)."""
    return _changes[0]

# decoded records of recently read batches, shared by every log: (log uid, base offset) -> records
_DECODED: OrderedDict = OrderedDict()
_DECODED_MAX = 64


class Entry:
    """One record of a partition log (a data record or a control marker), read from its batch.
    offset / producer / flags come from the batch's numbers; key, value, headers and timestamp
    are decoded from the batch bytes on first use."""
    __slots__ = ("offset", "producer_id", "producer_epoch", "transactional", "control", "aborted",
                 "_log", "_base")

    def __init__(self, log, base: int, offset: int, pid: int, epoch: int, flags: int):
        self._log, self._base, self.offset = log, base, offset
        self.producer_id, self.producer_epoch = pid, epoch
        self.transactional = bool(flags & TXN)
        self.control = ("COMMIT" if flags & COMMIT else "ABORT") if flags & CONTROL else None
        self.aborted = bool(flags & ABORTED)

    def _record(self) -> dict | None:
        return None if self.control else self._log.record_at(self._base, self.offset)

    @property
    def key(self):
        r = self._record()
        return None if r is None else r["key"]

    @property
    def value(self):
        r = self._record()
        return None if r is None else r["value"]

    @property
    def headers(self) -> list:
        r = self._record()
        return [] if r is None else r["headers"]

    @property
    def timestamp(self) -> int:
        if self.control:
            return self._log.max_timestamp_of(self._base)
        return self._record()["timestamp"]

    def _fields(self) -> tuple:
        return (self.offset, self.timestamp, self.key, self.value, self.headers, self.producer_id,
                self.producer_epoch, self.transactional, self.control, self.aborted)

    def __eq__(self, other) -> bool:
        return isinstance(other, Entry) and self._fields() == other._fields()

    __hash__ = None

    def __repr__(self) -> str:
        return (f"Entry(offset={self.offset}, producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
                f"transactional={self.transactional}, control={self.control!r}, aborted={self.aborted})")


class Entries:
    """The log's records addressed by absolute offset: len() is the log end offset, [offset] one
    Entry, [a:b] a list (forward slices only); iteration sees the records from the first one still
    held (a log released by the sample generator or by retention starts later) to the end."""
    __slots__ = ("log",)

    def __init__(self, log):
        self.log = log

    def __len__(self) -> int:
        return self.log._end

    def __bool__(self) -> bool:
        return self.log._end > 0

    def __iter__(self):
        return self.log.iter_entries(self.log._first)

    def __reversed__(self):
        return self.log.iter_entries_reversed()

    def __getitem__(self, i):
        log = self.log
        if isinstance(i, slice):
            if i.step not in (None, 1) or (i.start is not None and i.start < 0) or (i.stop is not None and i.stop < 0):
                raise IndexError("a partition log: only forward slices by absolute offset")
            start = log._first if i.start is None else max(i.start, log._first)
            stop = log._end if i.stop is None else min(i.stop, log._end)
            return list(log.iter_entries(start, stop)) if start < stop else []
        if i < 0:
            i += log._end
            if i < log._first:
                raise IndexError("log index out of range")
        elif i < log._first:
            raise IndexError(f"offset {i} was released (log starts at {log._first})")
        if i >= log._end:
            raise IndexError("log index out of range")
        return log.entry(i)

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Entries)) else NotImplemented

    def __repr__(self) -> str:
        return f"<entries {self.log._first}..{self.log._end} of {self.log.topic}-{self.log.partition}>"


class Batches:
    """The batches the log holds, oldest first, as bytes (read from the store)."""
    __slots__ = ("log",)

    def __init__(self, log):
        self.log = log

    def __len__(self) -> int:
        return len(self.log._base)

    def __bool__(self) -> bool:
        return len(self.log._base) > 0

    def __getitem__(self, i):
        store = self.log.store
        if isinstance(i, slice):
            return [store.get(k) for k in range(*i.indices(len(self.log._base)))]
        if not -len(self.log._base) <= i < len(self.log._base):
            raise IndexError("batch index out of range")
        return store.get(i)

    def __iter__(self):
        store = self.log.store
        return (store.get(k) for k in range(len(self.log._base)))

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Batches)) else NotImplemented


class BatchSeqs:
    """Per held batch, the seq of its first record's RecordAppended event (None: not given)."""
    __slots__ = ("log",)

    def __init__(self, log):
        self.log = log

    def __len__(self) -> int:
        return len(self.log._seq)

    def __getitem__(self, i):
        got = self.log._seq[i]
        if isinstance(i, slice):
            return [None if s == _NO_SEQ else s for s in got]
        return None if got == _NO_SEQ else got

    def __iter__(self):
        return iter(self[:])


class PartitionLog:
    """One partition's log. `entries`, `batches` and `batch_seqs` are views (see above);
    log_start_offset is where clients may read from (log retention and DeleteRecords move it), the
    first held offset can be lower (whole batches go) or higher (the sample generator releases what
    it wrote, which is the kit's memory, not Kafka's)."""

    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID, leader: int = 0, leader_epoch: int = 0,
                 store=None, with_data: set | None = None):
        self.topic, self.partition, self.topic_id = topic, partition, topic_id
        self.leader, self.leader_epoch = leader, leader_epoch
        self.open_txns: dict[int, int] = {}      # producer id -> first offset of its open transaction
        self.batches_dropped = 0                 # batches deleted from the front (kipviz.broker.retention)
        self.log_start_offset = 0
        self.store = store if store is not None else MemoryStore()
        self._uid = next(_uids)
        self._end = 0                  # log end offset
        self._first = 0                # the first record still addressable
        self._bytes = 0                # bytes of the held batches
        self._with_data = with_data    # the registry's set of logs holding batches (this one joins it)
        # per held batch
        self._base, self._last, self._pid = array("q"), array("q"), array("q")
        self._epoch, self._flags = array("h"), array("B")
        self._maxts, self._seq, self._size = array("q"), array("q"), array("i")
        # the aborted-transaction index (Kafka's .txnindex): [producer id, first offset, marker offset]
        self.aborted_index: list[list[int]] = []
        self.first_dirty_offset = 0    # the log cleaner's checkpoint (cleaner-offset-checkpoint)
        self.compacted = False         # the cleaner has rewritten it: offsets may have gaps
        self.cleaned_segments: list[int] = []     # base offsets of the segments the last pass wrote ...
        self.cleaned_upto = 0                     # ... below this offset (kipviz.broker.cleaner)

    # ---- views and numbers ------------------------------------------------------------------------------
    @property
    def entries(self) -> Entries:
        return Entries(self)

    @property
    def batches(self) -> Batches:
        return Batches(self)

    @property
    def batch_seqs(self) -> BatchSeqs:
        return BatchSeqs(self)

    @property
    def log_end_offset(self) -> int:
        return self._end

    @property
    def first_held_offset(self) -> int:
        return self._first

    @property
    def held_bytes(self) -> int:
        """Bytes of the batches the log holds (in memory or on disk)."""
        return self._bytes

    @property
    def last_stable_offset(self) -> int:
        """read_committed consumers see nothing at or past the first open transaction."""
        return min(self.open_txns.values(), default=self._end)

    def batch_numbers(self, i: int) -> tuple[int, int, int, int, int, int, int]:
        """(base offset, last offset, producer id, producer epoch, flags, max timestamp, size) of held batch i."""
        return (self._base[i], self._last[i], self._pid[i], self._epoch[i], self._flags[i], self._maxts[i],
                self._size[i])

    def columns(self) -> tuple[array, array, array]:
        """Per held batch: base offsets, sizes, max timestamps (read-only views for retention)."""
        return self._base, self._size, self._maxts

    def oldest_max_timestamp(self) -> int | None:
        return self._maxts[0] if self._maxts else None

    def find(self, offset: int) -> int:
        """Index of the first held batch whose last offset is >= `offset` (len(batches) if none)."""
        return bisect.bisect_left(self._last, offset)

    # ---- appending -----------------------------------------------------------------------------------------
    def append_batch(self, raw: bytes, seq: int | None = None) -> int:
        """Append a batch whose offsets are already assigned (its base offset is the log end);
        returns its base offset. A transactional data batch opens its producer's transaction."""
        (base, _length, _epoch, _magic, _crc, attrs, delta, _bts, max_ts, pid, epoch, _bseq,
         _count) = HEADER.unpack_from(raw, 0)
        last = base + delta
        flags = (TXN if attrs & TRANSACTIONAL_MASK else 0) | (CONTROL if attrs & CONTROL_MASK else 0)
        if flags == TXN:
            self.open_txns.setdefault(pid, base)
        self.store.append(raw, base, last, max_ts)
        self._base.append(base)
        self._last.append(last)
        self._pid.append(pid)
        self._epoch.append(epoch)
        self._flags.append(flags)
        self._maxts.append(max_ts)
        self._seq.append(_NO_SEQ if seq is None else seq)
        self._size.append(len(raw))
        if not self._bytes and self._with_data is not None:
            self._with_data.add(self)
        self._bytes += len(raw)
        self._end = last + 1
        _changes[0] += 1
        return base

    def append(self, items: list[tuple], now: int, *, producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1, transactional: bool = False, seq: int | None = None,
               compression: str = "none", timestamp_type: str = "CreateTime") -> int:
        """Append (key, value[, headers]) records as one batch the log encodes (every record
        stamped `now`) with `compression` and `timestamp_type`; returns the base offset. `seq`: the
        event seq its first record's RecordAppended will have (Cluster.next_seq). A produced batch
        goes through append_batch as LogValidator leaves it (kipviz.broker.handlers.data.stored_batch)."""
        base = self._end
        if not items:
            return base
        raw = rec.write_batch([(it[0], it[1], list(it[2]) if len(it) > 2 else [], None) for it in items],
                              base_offset=base, base_timestamp=now, producer_id=producer_id,
                              producer_epoch=producer_epoch, base_sequence=base_sequence,
                              is_transactional=transactional, partition_leader_epoch=self.leader_epoch,
                              compression=compression, timestamp_type=timestamp_type)
        return self.append_batch(raw, seq)

    def append_marker(self, marker: str, now: int, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int = 0, seq: int | None = None) -> int:
        """A COMMIT/ABORT control batch ends producer_id's transaction on this partition; an ABORT
        marks the transaction's batches aborted and enters it in the aborted-transaction index."""
        offset = self._end
        first = self.open_txns.pop(producer_id, None)
        raw = rec.write_control_batch(marker, producer_id=producer_id, producer_epoch=producer_epoch,
                                      coordinator_epoch=coordinator_epoch, base_offset=offset, timestamp=now,
                                      partition_leader_epoch=self.leader_epoch)
        if marker == "ABORT" and first is not None:
            flags, pids = self._flags, self._pid
            for i in range(self.find(first), len(self._base)):
                if pids[i] == producer_id and flags[i] == TXN:
                    flags[i] |= ABORTED
            self.aborted_index.append([producer_id, first, offset])
        self.append_batch(raw, seq)
        self._flags[-1] |= COMMIT if marker == "COMMIT" else 0
        return offset

    # ---- reading -------------------------------------------------------------------------------------------
    def _index_of_base(self, base: int) -> int:
        i = bisect.bisect_left(self._base, base)
        if i >= len(self._base) or self._base[i] != base:
            raise IndexError(f"no held batch at offset {base} of {self.topic}-{self.partition}")
        return i

    def decoded(self, base: int) -> list[dict]:
        """The records of the held batch at `base`, decoded (a few recent batches are cached)."""
        key = (self._uid, base)
        got = _DECODED.get(key)
        if got is not None:
            _DECODED.move_to_end(key)
            return got
        raw = self.store.get(self._index_of_base(base))
        got = rec.read_batches(raw, verify_crc=False)[0]["records"]
        _DECODED[key] = got
        if len(_DECODED) > _DECODED_MAX:
            _DECODED.popitem(last=False)
        return got

    def max_timestamp_of(self, base: int) -> int:
        return self._maxts[self._index_of_base(base)]

    def _offsets(self, i: int) -> range | list[int]:
        """The offsets batch i holds: base..last, or, for a batch the cleaner rewrote, its records' own."""
        if not self._flags[i] & GAPS:
            return range(self._base[i], self._last[i] + 1)
        if self._flags[i] & CONTROL:
            return [self._base[i]] if records_count(self.store.get(i)) != 0 else []
        return [r["offset"] for r in self.decoded(self._base[i])]

    def holds(self, offset: int) -> bool:
        """Whether a record (or marker) at `offset` is held: False below the first held offset, at or
        past the log end, and in a gap the log cleaner left (Kafka's compacted logs keep offsets)."""
        if not self._first <= offset < self._end:
            return False
        if not self.compacted:
            return True
        i = self.find(offset)
        if self._base[i] > offset:
            return False
        return not self._flags[i] & GAPS or offset in self._offsets(i)

    def record_at(self, base: int, offset: int) -> dict:
        got = self.decoded(base)
        if len(got) > offset - base and got[offset - base]["offset"] == offset:
            return got[offset - base]
        return next(r for r in got if r["offset"] == offset)

    def entry(self, offset: int) -> Entry:
        if not self.holds(offset):
            raise IndexError(f"offset {offset} of {self.topic}-{self.partition} was removed by log compaction")
        i = self.find(offset)
        return Entry(self, self._base[i], offset, self._pid[i], self._epoch[i], self._flags[i])

    def iter_entries(self, start: int, stop: int | None = None):
        stop = self._end if stop is None else stop
        base, last, pid, epoch, flags = self._base, self._last, self._pid, self._epoch, self._flags
        i = self.find(start)
        while i < len(base) and base[i] < stop:
            b = base[i]
            lo, hi = max(b, start), min(last[i] + 1, stop)
            offsets = range(lo, hi) if not flags[i] & GAPS else [o for o in self._offsets(i) if lo <= o < hi]
            for o in offsets:
                yield Entry(self, b, o, pid[i], epoch[i], flags[i])
            i += 1

    def iter_entries_reversed(self):
        base, last, pid, epoch, flags = self._base, self._last, self._pid, self._epoch, self._flags
        first = self._first
        for i in range(len(base) - 1, -1, -1):
            b = base[i]
            if last[i] < first:
                break
            offsets = range(last[i], max(b, first) - 1, -1) if not flags[i] & GAPS else \
                [o for o in reversed(self._offsets(i)) if o >= first]
            for o in offsets:
                yield Entry(self, b, o, pid[i], epoch[i], flags[i])

    def read(self, i: int, j: int) -> bytes:
        """Held batches i..j-1, as one bytes object."""
        return self.store.read(i, j) if i < j else b""

    def visible(self, isolation_level: int = 0) -> list[Entry]:
        """Data records a consumer sees: read_uncommitted (0) up to the log end, read_committed (1)
        up to the last stable offset and without aborted records."""
        if isolation_level == 1:
            return [e for e in self.entries[:self.last_stable_offset] if e.control is None and not e.aborted]
        return [e for e in self.entries if e.control is None]

    def _visible_batches(self) -> range:
        return range(self.find(self._first), len(self._base))

    def last_epoch(self, producer_id: int) -> int | None:
        """The epoch of `producer_id`'s newest batch in the log (a data batch or a marker), None if it has none."""
        pids = self._pid
        lo = self.find(self._first)
        for i in range(len(pids) - 1, lo - 1, -1):
            if pids[i] == producer_id:
                return self._epoch[i]
        return None

    def has_marker(self, producer_id: int) -> bool:
        """Whether the log holds a transaction marker of `producer_id`."""
        pids, flags = self._pid, self._flags
        return any(pids[i] == producer_id and flags[i] & CONTROL for i in self._visible_batches())

    def max_epoch(self, producer_id: int, since: int = 0) -> int | None:
        """The largest epoch of `producer_id`'s records at or after offset `since`, None if none."""
        pids, epochs, lo = self._pid, self._epoch, self.find(max(since, self._first))
        got = [epochs[i] for i in range(lo, len(pids)) if pids[i] == producer_id]
        return max(got, default=None)

    def _times(self, i: int) -> list[tuple[int, int]]:
        """(timestamp, offset) of batch i's records still held, in offset order."""
        base = self._base[i]
        if self._flags[i] & CONTROL:
            return [(self._maxts[i], base)] if base >= self._first and self._offsets(i) else []
        return [(r["timestamp"], r["offset"]) for r in self.decoded(base) if r["offset"] >= self._first]

    def max_timestamp_record(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the first held record with the largest timestamp (ListOffsets -3)."""
        lo = self.find(self._first)
        if lo >= len(self._base):
            return None
        head = max(self._times(lo), default=None, key=lambda t: t[0]) if self._base[lo] < self._first else None
        rest = lo + 1 if head is not None else lo
        if rest < len(self._base):
            top = max(self._maxts[rest:])
            if head is None or top > head[0]:
                i = self._maxts.index(top, rest)
                return next(t for t in self._times(i) if t[0] == top)
        if head is None:
            return None
        return next(t for t in self._times(lo) if t[0] == head[0])

    def first_record_at_or_after(self, ts: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first held record whose timestamp is >= ts (ListOffsets by time)."""
        for i in range(self.find(self._first), len(self._base)):
            if self._maxts[i] >= ts:
                got = next((t for t in self._times(i) if t[0] >= ts), None)
                if got is not None:
                    return got
        return None

    def aborted_transactions(self, start: int, end: int) -> list[dict]:
        """The aborted transactions whose records overlap [start, end): producer id and first offset
        (Kafka's aborted-transaction index, LogSegment.collectAbortedTxns: lastOffset >= start and
        firstOffset < end), as far as the log still holds them."""
        out = []
        first_held = self._first
        for pid, first, last in self.aborted_index:
            if last < start or first >= end or last < first_held:
                continue
            if first < first_held:       # its first records were released: its first one still held
                first = self._first_of(pid, first_held, last)
                if first is None or first >= end:
                    continue
            out.append({"ProducerId": pid, "FirstOffset": first})
        return out

    def _first_of(self, pid: int, start: int, before: int) -> int | None:
        for i in range(self.find(start), len(self._base)):
            if self._base[i] >= before:
                return None
            if self._pid[i] == pid and self._flags[i] & (TXN | CONTROL) == TXN:
                return max(self._base[i], start)
        return None

    # ---- releasing -----------------------------------------------------------------------------------------
    def release(self, upto: int) -> int:
        """Forget the records below `upto` and the batches that end below it; returns the number of
        batches dropped (also counted in batches_dropped). `upto` is capped at the last stable
        offset: open transactions stay whole."""
        upto = min(upto, self.last_stable_offset, self._end)
        if upto > self._first:
            self._first = upto
            _changes[0] += 1
        k = bisect.bisect_left(self._last, upto)
        if k:
            self._bytes -= sum(self._size[:k])
            if not self._bytes and self._with_data is not None:
                self._with_data.discard(self)
            self.store.drop(k)
            for col in (self._base, self._last, self._pid, self._epoch, self._flags, self._maxts, self._seq,
                        self._size):
                del col[:k]
            self.batches_dropped += k
            self.aborted_index = [t for t in self.aborted_index if t[2] >= self._first]
        return k

    # ---- compaction ----------------------------------------------------------------------------------------
    def replace_prefix(self, k: int, kept: list[tuple[int, bytes]], groups: list[int]) -> None:
        """The log cleaner's swap (Cleaner.cleanSegments -> UnifiedLog.replaceSegments): held batches
        0..k-1 become `kept`, (index of the batch it was cleaned from, its rewritten bytes) in order,
        in segments starting at the offsets `groups`. A kept batch keeps its producer, flags and
        event seq; offsets stay (gaps where records went)."""
        self.cleaned_upto = self._base[k] if k < len(self._base) else self._end
        self.cleaned_segments = list(groups)
        cols = (self._base, self._last, self._pid, self._epoch, self._flags, self._maxts, self._seq, self._size)
        new = [array(c.typecode) for c in cols]
        for j, raw in kept:
            (base, _length, _e, _m, _crc, _attrs, delta, _bts, max_ts, _pid, _ep, _bseq,
             count) = HEADER.unpack_from(raw, 0)
            gaps = GAPS if count != delta + 1 else 0
            for col, v in zip(new, (base, base + delta, self._pid[j], self._epoch[j], self._flags[j] | gaps, max_ts,
                                    self._seq[j], len(raw)), strict=True):
                col.append(v)
        self._bytes += sum(new[7]) - sum(self._size[:k])
        for col, c in zip(cols, new, strict=True):
            col[:k] = c
        self.store.replace_prefix(k, [raw for _, raw in kept], new[0], new[5], groups)
        self._uid = next(_uids)            # the decoded-batch cache must not serve the old bytes
        self.compacted = True
        # an aborted transaction stays in the index while some of its data does (Cleaner's
        # CleanedTransactionMetadata keeps the entry of a marker it retains)
        self.aborted_index = [t for t in self.aborted_index if self._first_of(t[0], t[1], t[2]) is not None]
        if not self._bytes and self._with_data is not None:
            self._with_data.discard(self)
        _changes[0] += 1


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]
    created_at: int = 0
    internal: bool = False
    deleted_at: int | None = None
    configs: dict[str, str] = field(default_factory=dict)    # topic-level settings given at creation


class TopicRegistry:
    """Names map to the current topic; ids map to every topic ever created (deleted ones marked),
    so a stale id can be told apart from one that never existed. With a log directory
    (use_log_dir), partition logs keep their batches on disk."""

    def __init__(self, rng, brokers: int):
        self._rng = rng
        self._brokers = brokers
        self.by_name: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        self.log_dir = None                       # kipviz.broker.segments.LogDir, or None: in memory
        self._metric_names: dict[str, list[str]] = {}     # name with '.' as '_' -> the live topics
        self.logs_with_data: set[PartitionLog] = set()    # logs holding batches (retention looks at these only)

    def create(self, name: str, partitions: int, now: int, internal: bool = False) -> Topic:
        tid = random_uuid(self._rng)
        while tid in self.by_id:
            tid = random_uuid(self._rng)
        logs = [self.new_log(name, p, tid, p % self._brokers) for p in range(partitions)]
        topic = Topic(name, tid, logs, now, internal or name in INTERNAL_TOPICS)
        self.by_name[name] = topic
        self.by_id[tid] = topic
        self._metric_names.setdefault(name.replace(".", "_"), []).append(name)
        _changes[0] += 1
        return topic

    def new_log(self, name: str, partition: int, topic_id: uuid.UUID, leader: int) -> PartitionLog:
        """A new, empty partition log of this registry (its batches in the log directory, if any)."""
        log = PartitionLog(name, partition, topic_id, leader=leader, with_data=self.logs_with_data)
        if self.log_dir is not None:
            log.store = self.log_dir.store(log)
        return log

    def colliding(self, name: str) -> str | None:
        """Topic.hasCollision: a live topic other than `name` whose name differs only in '.'
        against '_' (they collide in metric names), or None."""
        return next((o for o in self._metric_names.get(name.replace(".", "_"), ()) if o != name), None)

    def use_log_dir(self, log_dir) -> None:
        """Keep every log's batches in `log_dir` (a kipviz.broker.segments.LogDir) from now on; the
        batches already held move there."""
        self.log_dir = log_dir
        for topic in self.by_id.values():
            for log in topic.partitions:
                if log.store.on_disk:
                    continue
                old, log.store = log.store, log_dir.store(log)
                for i, raw in enumerate(old.items):
                    log.store.append(raw, log._base[i], log._last[i], log._maxts[i])
                if topic.deleted_at is not None:
                    log.store.deleted()

    def delete(self, name: str, now: int) -> Topic:
        topic = self.by_name.pop(name)
        topic.deleted_at = now
        _changes[0] += 1
        self.logs_with_data.difference_update(topic.partitions)
        same = self._metric_names.get(name.replace(".", "_"), [])
        if name in same:
            same.remove(name)
        for log in topic.partitions:
            log.store.deleted()
        return topic

    def live(self, topic_id: uuid.UUID) -> Topic | None:
        t = self.by_id.get(topic_id)
        return t if t is not None and t.deleted_at is None else None

    def get(self, name: str) -> Topic | None:
        return self.by_name.get(name)

    def partition(self, name: str, p: int) -> PartitionLog | None:
        t = self.by_name.get(name)
        return t.partitions[p] if t is not None and 0 <= p < len(t.partitions) else None
