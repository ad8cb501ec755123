"""Topics with topic IDs (KIP-516) and their partition logs, including the internal topics."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .. import records as rec
from ..records.header import restamp
from ..schema.topics import INTERNAL_TOPICS
from ..uuids import random_uuid

INTERNAL = INTERNAL_TOPICS


@dataclass(slots=True)
class Entry:
    """One record in a partition log (a data record or a control marker)."""
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list = field(default_factory=list)
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False
    control: str | None = None          # "COMMIT" / "ABORT" for markers
    aborted: bool = False               # set when an ABORT marker closes its transaction


@dataclass
class PartitionLog:
    topic: str
    partition: int
    topic_id: uuid.UUID
    leader: int = 0
    leader_epoch: int = 0
    entries: list[Entry] = field(default_factory=list)
    batches: list[bytes] = field(default_factory=list)   # the bytes Kafka would store
    # per batch, the seq of its first record's RecordAppended event (None: not given): the
    # batch's place in the run's event order, for readers of the written logs
    batch_seqs: list[int | None] = field(default_factory=list)
    open_txns: dict[int, int] = field(default_factory=dict)   # producer id -> first offset
    batches_dropped: int = 0            # batches deleted from the front (kipviz.broker.retention)
    # the first offset clients may read: log retention moves it up (kipviz.broker.retention); the
    # sample generator's release of written entries does not (that is the kit's memory, not Kafka's)
    log_start_offset: int = 0

    @property
    def log_end_offset(self) -> int:
        return len(self.entries)

    @property
    def last_stable_offset(self) -> int:
        """read_committed consumers see nothing at or past the first open transaction."""
        return min(self.open_txns.values(), default=self.log_end_offset)

    def append(self, items: list[tuple], now: int, *, producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1, transactional: bool = False, seq: int | None = None,
               sent: bytes | None = None, compression: str | None = None,
               timestamp_type: str = "CreateTime") -> int:
        """Append (key, value[, headers]) records as one batch; returns the base offset. `seq`: the
        event seq its first record's RecordAppended will have (Cluster.next_seq). The log's batch
        gives every record `now`. `sent`: the producer's batch when it is exactly that batch
        (kipviz.broker.handlers.data.sent_as_stored), kept with its offsets and leader epoch
        assigned in place as Kafka's LogValidator does, instead of encoding it again. `compression`
        and `timestamp_type`: the topic's compression.type codec and message.timestamp.type
        (kipviz.broker.log_validator.stored_form; None: the log's own choice)."""
        base = self.log_end_offset
        if transactional and items:
            self.open_txns.setdefault(producer_id, base)
        entries = self.entries
        for i, item in enumerate(items):
            headers = list(item[2]) if len(item) > 2 else []
            entries.append(Entry(base + i, now, item[0], item[1], headers, producer_id, producer_epoch, transactional))
        if not items:
            return base
        if sent is not None:
            stored = restamp(sent, base, self.leader_epoch)
        else:
            stored = rec.write_batch(
                [(e.key, e.value, e.headers, None) for e in entries[base:]], base_offset=base, base_timestamp=now,
                producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                is_transactional=transactional, partition_leader_epoch=self.leader_epoch,
                compression=compression or "none", timestamp_type=timestamp_type)
        self.batches.append(stored)
        self.batch_seqs.append(seq)
        return base

    def append_marker(self, marker: str, now: int, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int = 0, seq: int | None = None) -> int:
        """A COMMIT/ABORT control batch ends producer_id's transaction on this partition."""
        offset = self.log_end_offset
        first = self.open_txns.pop(producer_id, None)
        if marker == "ABORT" and first is not None:
            for e in self.entries[first:]:
                if e.producer_id == producer_id and e.transactional and e.control is None:
                    e.aborted = True
        self.entries.append(Entry(offset, now, None, None, [], producer_id, producer_epoch, True, marker))
        self.batches.append(rec.write_control_batch(marker, producer_id=producer_id, producer_epoch=producer_epoch,
                                                    coordinator_epoch=coordinator_epoch, base_offset=offset,
                                                    timestamp=now, partition_leader_epoch=self.leader_epoch))
        self.batch_seqs.append(seq)
        return offset

    def visible(self, isolation_level: int = 0) -> list[Entry]:
        """Data records a consumer sees: read_uncommitted (0) up to the log end, read_committed (1)
        up to the last stable offset and without aborted records."""
        if isolation_level == 1:
            return [e for e in self.entries[:self.last_stable_offset] if e.control is None and not e.aborted]
        return [e for e in self.entries if e.control is None]


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
    so a stale id can be told apart from one that never existed."""

    def __init__(self, rng, brokers: int):
        self._rng = rng
        self._brokers = brokers
        self.by_name: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}

    def create(self, name: str, partitions: int, now: int, internal: bool = False) -> Topic:
        tid = random_uuid(self._rng)
        while tid in self.by_id:
            tid = random_uuid(self._rng)
        logs = [PartitionLog(name, p, tid, leader=p % self._brokers) for p in range(partitions)]
        topic = Topic(name, tid, logs, now, internal or name in INTERNAL)
        self.by_name[name] = topic
        self.by_id[tid] = topic
        return topic

    def delete(self, name: str, now: int) -> Topic:
        topic = self.by_name.pop(name)
        topic.deleted_at = now
        return topic

    def live(self, topic_id: uuid.UUID) -> Topic | None:
        t = self.by_id.get(topic_id)
        return t if t is not None and t.deleted_at is None else None

    def get(self, name: str) -> Topic | None:
        return self.by_name.get(name)

    def partition(self, name: str, p: int) -> PartitionLog | None:
        t = self.by_name.get(name)
        return t.partitions[p] if t is not None and 0 <= p < len(t.partitions) else None
