"""Replicas' local logs per broker, with topic ids (KIP-516): the broker side of LeaderAndIsr and
StopReplica, the partition.metadata file, migration of logs written before ids, and moving stale
logs to deletion. The transitions are the rows of kipviz/broker/tables/replica.py.

    cluster.replicas.behaviour = "released"   # default: ZooKeeper-mode brokers of 2.8-3.9
    cluster.replicas.behaviour = "page"       # the KIP-516 page as written (never shipped)
    cluster.replicas.logs[broker]             # {(topic, partition): LocalLog}
    cluster.replicas.deleting                 # logs moved to deletion, not yet removed

The two behaviours differ only where the page and the shipped code differ:

    a LeaderAndIsr topic id that differs     released: INCONSISTENT_TOPIC_ID, the old log stays
    from the local log's                     page: the old log moves to log.dir/deleting/{id}_{p}
                                                   (removed after 4 hours), a new log is created
    a FULL LeaderAndIsr (Type 2) that does   released: nothing (shipped brokers reconcile only for a
    not list a local partition                         KRaft controller during the ZK migration)
                                             page: staged for deletion like a stale log

Both write partition.metadata as Kafka does ("version: 0\\ntopic_id: <id>",
storage/.../checkpoint/PartitionMetadata.java encode()); the page's four-field file is a
departure (kipviz/scenarios/kip516_departures.py). StopReplica deletions always follow the shipped
rename ("topic-partition.uniqueId-delete", file.delete.delay.ms 60000: LocalLog.logDeleteDirName,
LogManager.asyncDelete). The contents of a log are the cluster's partition log of its topic id
(replication is not simulated): its log end offset is that log's."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from ..schema import events as ev
from ..schema.error_codes import CODE
from ..uuids import ZERO_UUID, to_kafka_str
from .machine import Machine
from .tables import replica as R

BEHAVIOURS = ("released", "page")
FILE_DELETE_DELAY_MS = 60_000            # file.delete.delay.ms (LogConfig / ServerLogConfigs default)
PAGE_STALE_DELETE_DELAY_MS = 4 * 3600_000  # the page's unnamed setting, "14400 (4 hours)" in ms
# LeaderAndIsr Type (LeaderAndIsrRequest.Type: UNKNOWN 0, INCREMENTAL 1, FULL 2)
TYPES = {0: "UNSPECIFIED", 1: "INCREMENTAL", 2: "FULL"}


def partition_metadata(topic_id: uuid.UUID | None) -> str | None:
    """The partition.metadata file's text as Kafka writes it (PartitionMetadata.encode), None if absent."""
    return None if topic_id is None else f"version: 0\ntopic_id: {to_kafka_str(topic_id)}"


@dataclass
class LocalLog:
    broker: int
    topic: str
    partition: int
    topic_id: uuid.UUID | None
    key: str                          # the replica machine's key: "b1:orders-0#2"
    machine: Machine
    dir: str                          # the directory name in log.dir
    source: object = None             # the cluster's PartitionLog holding the records
    leader: int = -1
    leader_epoch: int = -1
    delete_at: int | None = None
    frozen_end: int | None = None     # log end offset when it left service

    @property
    def state(self) -> str:
        return self.machine.state

    @property
    def partition_metadata(self) -> str | None:
        return partition_metadata(self.topic_id)

    @property
    def log_end_offset(self) -> int:
        if self.frozen_end is not None:
            return self.frozen_end
        return self.source.log_end_offset if self.source is not None else 0

    def view(self) -> dict:
        return {"broker": self.broker, "topic": self.topic, "partition": self.partition,
                "topic_id": to_kafka_str(self.topic_id) if self.topic_id else None, "dir": self.dir,
                "state": self.state, "partition_metadata": self.partition_metadata,
                "log_end_offset": self.log_end_offset, "leader_epoch": self.leader_epoch,
                "delete_at": self.delete_at}


@dataclass
class _Outcome:
    errors: dict = field(default_factory=dict)       # (topic, partition) -> error name


class ReplicaManager:
    def __init__(self, cluster):
        self.cluster = cluster
        self.behaviour = "released"
        self.logs: dict[int, dict[tuple[str, int], LocalLog]] = {}
        self.deleting: list[LocalLog] = []
        self.deleted: list[LocalLog] = []
        self.controller_epoch: dict[int, int] = {}
        self._made: dict[tuple[int, str, int], int] = {}

    # ---- local logs --------------------------------------------------------------------------
    def _enabled(self, row) -> bool:
        if self.behaviour not in BEHAVIOURS:
            raise ValueError(f"replica behaviour {self.behaviour!r}: one of {', '.join(BEHAVIOURS)}")
        return self.behaviour == "page" or row.status != "proposed"

    def _new(self, broker: int, topic: str, partition: int, topic_id, source) -> LocalLog:
        n = self._made[(broker, topic, partition)] = self._made.get((broker, topic, partition), 0) + 1
        key = f"b{broker}:{topic}-{partition}#{n}"
        log = LocalLog(broker, topic, partition, topic_id, key, Machine(R.TABLE, key, self.cluster.transition,
                                                                       self._enabled),
                       f"{topic}-{partition}", source)
        self.logs.setdefault(broker, {})[(topic, partition)] = log
        return log

    def _source(self, topic_id, partition: int):
        t = self.cluster.topics.by_id.get(topic_id) if topic_id else None
        return t.partitions[partition] if t is not None and partition < len(t.partitions) else None

    def _say(self, kind: type[ev.Event], log: LocalLog, **extra) -> None:
        """Record a `kind` event about `log`, with the log's view."""
        self.cluster.emit(kind, **log.view(), **extra)

    def seed_log(self, broker: int, topic: str, partition: int = 0) -> LocalLog:
        """A log already on `broker`'s disk from before topic ids (no partition.metadata). Its records
        are the cluster's live `topic` partition's (the id the controller assigns on migration)."""
        live = self.cluster.topics.get(topic)
        if live is None:
            raise ValueError(f"no topic {topic!r}")
        if (topic, partition) in self.logs.get(broker, {}):
            raise ValueError(f"broker {broker} already holds {topic}-{partition}")
        log = self._new(broker, topic, partition, None, live.partitions[partition])
        log.machine.fire("log-before-topic-ids")
        self._say(ev.ReplicaLogSeeded, log)
        return log

    def _to_deletion(self, log: LocalLog, cause: str, *, page_layout: bool) -> None:
        """Close the log and rename its directory for deletion; removed after the delay."""
        log.frozen_end = log.log_end_offset
        del self.logs[log.broker][(log.topic, log.partition)]
        if page_layout:
            tid = to_kafka_str(log.topic_id) if log.topic_id else "none"
            log.dir, delay = f"deleting/{tid}_{log.partition}", PAGE_STALE_DELETE_DELAY_MS
        else:
            unique = uuid.UUID(int=self.cluster.rng.getrandbits(128)).hex
            log.dir, delay = f"{log.topic}-{log.partition}.{unique}-delete", FILE_DELETE_DELAY_MS
        log.delete_at = self.cluster.now + delay
        log.machine.fire(cause)
        self.deleting.append(log)
        # the page's step 1: log at WARN every partition to delete and when
        self._say(ev.ReplicaLogDeletionScheduled, log, cause=cause)

    def poke(self) -> None:
        """Remove the logs whose deletion delay has passed (the clock moved)."""
        now = self.cluster.now
        due = [log for log in self.deleting if log.delete_at is not None and log.delete_at <= now]
        for log in due:
            self.deleting.remove(log)
            log.machine.fire("delete-delay-elapsed")
            self.deleted.append(log)
            self._say(ev.ReplicaLogRemoved, log)

    def replica(self, broker: int, topic: str, partition: int = 0) -> LocalLog | None:
        return self.logs.get(broker, {}).get((topic, partition))

    # ---- LeaderAndIsr (ReplicaManager.becomeLeaderOrFollower) -------------------------------------
    def leader_and_isr(self, broker: int, version: int, body: dict) -> dict:
        epoch = body["ControllerEpoch"]
        # v0-v1 list the partitions ungrouped, each with its topic name (LeaderAndIsrRequest.partitionStates)
        states = [(p["TopicName"], None, p) for p in body["UngroupedPartitionStates"]] if version < 2 else \
            [(t["TopicName"], t.get("TopicId"), p) for t in body["TopicStates"] for p in t["PartitionStates"]]
        ids = {name: tid for name, tid, _ in states}
        if epoch < self.controller_epoch.get(broker, -1):
            errors = {(name, p["PartitionIndex"]): "STALE_CONTROLLER_EPOCH" for name, _, p in states}
            return self._lisr_response(version, "STALE_CONTROLLER_EPOCH", errors, ids)
        self.controller_epoch[broker] = epoch
        kind = TYPES.get(body.get("Type", 0), "UNSPECIFIED")
        errors: dict = {}
        for name, tid, p in states:
            tid = None if tid in (None, ZERO_UUID) else tid
            errors[(name, p["PartitionIndex"])] = self._partition(broker, name, tid, p)
        if kind == "FULL":
            listed = {(name, p["PartitionIndex"]) for name, _, p in states}
            stray = [log for k, log in list(self.logs.get(broker, {}).items()) if k not in listed]
            if self.behaviour == "page":
                for log in stray:
                    self._to_deletion(log, "absent-from-full", page_layout=True)
            elif stray:
                self.cluster.emit(ev.StrayLogsKept, broker=broker,
                                  partitions=tuple(f"{log.topic}-{log.partition}" for log in stray))
        return self._lisr_response(version, "NONE", errors, ids)

    def _partition(self, broker: int, name: str, tid, p: dict) -> str:
        index, leader, epoch = p["PartitionIndex"], p["Leader"], p["LeaderEpoch"]
        log = self.replica(broker, name, index)
        if log is not None and tid is not None and log.topic_id is not None and log.topic_id != tid:
            if self.behaviour == "released":
                log.machine.fire("inconsistent-topic-id")
                self._say(ev.ReplicaTopicIdMismatch, log, request_topic_id=to_kafka_str(tid))
                return "INCONSISTENT_TOPIC_ID"
            self._to_deletion(log, "stale-topic-id", page_layout=True)
            log = None
        if broker not in p["Replicas"]:      # checked after the topic id, as becomeLeaderOrFollower does
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if log is None:
            log = self._new(broker, name, index, tid, self._source(tid, index))
            log.leader, log.leader_epoch = leader, epoch
            if tid is None:     # LeaderAndIsr before v5 (or a zero id): a log without partition.metadata
                log.machine.fire("log-before-topic-ids")
            else:
                log.machine.fire("leader-and-isr")
            self._say(ev.ReplicaLogCreated, log, leader=leader)
            return "NONE"
        if tid is not None and log.topic_id is None:
            # the controller may assign ids without bumping the epoch: log.assignTopicId
            log.topic_id, log.source = tid, self._source(tid, index) or log.source
            log.machine.fire("topic-id-assigned")
            log.leader, log.leader_epoch = leader, max(epoch, log.leader_epoch)
            self._say(ev.ReplicaTopicIdAssigned, log)
            return "NONE"
        if epoch > log.leader_epoch:
            log.leader, log.leader_epoch = leader, epoch
            return "NONE"
        return "STALE_CONTROLLER_EPOCH"     # an older or the same leader epoch: ignored

    @staticmethod
    def _lisr_response(version: int, error: str, errors: dict, ids: dict) -> dict:
        if version < 5:
            return {"ErrorCode": CODE[error], "PartitionErrors": [
                {"TopicName": t, "PartitionIndex": p, "ErrorCode": CODE[e]} for (t, p), e in errors.items()]}
        topics: dict = {}
        for (t, p), e in errors.items():
            tid = ids.get(t) or ZERO_UUID
            topics.setdefault(tid, []).append({"PartitionIndex": p, "ErrorCode": CODE[e]})
        return {"ErrorCode": CODE[error], "Topics": [{"TopicId": tid, "PartitionErrors": parts}
                                                     for tid, parts in topics.items()]}

    # ---- StopReplica (ReplicaManager.stopReplicas): by topic NAME, never by id ----------------------
    def stop_replica(self, broker: int, version: int, body: dict) -> dict:
        epoch = body["ControllerEpoch"]
        # v0 lists (topic, partition) pairs, v1-v2 topics with partition indexes, both sharing one
        # DeletePartitions flag; v3+ per-partition states (StopReplicaRequest.partitionStates)
        if version >= 3:
            parts = [(t["TopicName"], s["PartitionIndex"], s["LeaderEpoch"], s["DeletePartition"])
                     for t in body["TopicStates"] for s in t["PartitionStates"]]
        elif version >= 1:
            parts = [(t["Name"], i, -1, body["DeletePartitions"]) for t in body["Topics"] for i in t["PartitionIndexes"]]
        else:
            parts = [(p["TopicName"], p["PartitionIndex"], -1, body["DeletePartitions"]) for p in body["UngroupedPartitions"]]
        if epoch < self.controller_epoch.get(broker, -1):
            return {"ErrorCode": CODE["STALE_CONTROLLER_EPOCH"], "PartitionErrors": [
                {"TopicName": t, "PartitionIndex": p, "ErrorCode": CODE["STALE_CONTROLLER_EPOCH"]}
                for t, p, _, _ in parts]}
        self.controller_epoch[broker] = epoch
        out = []
        for name, index, leader_epoch, delete in parts:
            log = self.replica(broker, name, index)
            error = "NONE"
            # -1: no epoch, -2: EpochDuringDelete (topic deletion) bypass the check (KIP-570)
            if log is not None and leader_epoch >= 0 and leader_epoch < log.leader_epoch:
                error = "FENCED_LEADER_EPOCH"
            elif log is not None and delete:
                self._to_deletion(log, "stop-replica-delete", page_layout=False)
            out.append({"TopicName": name, "PartitionIndex": index, "ErrorCode": CODE[error]})
        return {"ErrorCode": 0, "PartitionErrors": out}
