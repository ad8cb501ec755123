"""Example values for any message version, built from its definition.

    example_value("TxnOffsetCommitRequest", 6)            -> dict that kipviz.codec.encode accepts
    example_value(spec_from_official_dir, 12, seed=3)     -> another, equally deterministic example

Values come from field names and entity types ("GroupId" -> "order-processors", "TopicId" -> a
fixed uuid, "ErrorCode" -> 0, "PartitionIndex" -> 3, ...), falling back to the field's default or
a small number. Arrays get one or two elements; some nullable strings are None. Every choice is
drawn from a random generator seeded by (message, field path, seed), so an example does not
change from run to run, and a field keeps its value across versions of the same message.

A few messages have curated examples (used when seed == 0): TxnOffsetCommitRequest is the kit's
running example (transactional id "tx-orders-001", group "order-processors", topic "orders",
partition 3, offset 150382, leader epoch 12)."""
from __future__ import annotations

import random
import re
import uuid

from ..schema import registry
from ..schema.model import MessageSpec
from ..schema.resolve import VField, resolve

__all__ = ["example_value", "TOPIC_IDS", "CURATED"]

TOPICS = ("orders", "payments", "shipments")
GROUPS = ("order-processors", "billing-service")
#: topic ids used by examples (fixed, so pictures and tests are stable)
TOPIC_IDS = (uuid.UUID("b7e2f4a1-5c3d-4e8f-9a06-1d2c3b4a5f60"),
             uuid.UUID("3f9d2c71-08ab-4c5e-b6d7-e8f90a1b2c3d"),
             uuid.UUID("c0ffee00-1234-4abc-8def-0123456789ab"))
_NS = uuid.UUID("6d1c5e2a-0b7f-4c3e-9a8d-5f4e3d2c1b0a")
TS = 1_767_225_600_000          # 2026-01-01T00:00:00Z in ms
_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
           "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}

# int hints: exact field name -> value, or a function of the element index i
_INTS: dict[str, object] = {
    "ThrottleTimeMs": 0, "PartitionIndex": lambda i: 3 + 4 * i, "Partition": lambda i: 3 + 4 * i,
    "CommittedOffset": lambda i: 150382 + 1000 * i, "Offset": lambda i: 150382 + 1000 * i,
    "FetchOffset": lambda i: 150382 + 1000 * i, "BaseOffset": lambda i: 150382 + 1000 * i,
    "FirstOffset": 150382, "LastOffset": 150391, "EndOffset": 150400, "HighWatermark": 150400,
    "LastStableOffset": 150400, "LogStartOffset": 0,
    "CommittedLeaderEpoch": 12, "LeaderEpoch": 12, "CurrentLeaderEpoch": 12, "LastFetchedEpoch": 12,
    "ProducerId": 4001, "OngoingTxnProducerId": 4001, "V3AndBelowProducerId": 4001,
    "ProducerEpoch": 12, "OngoingTxnProducerEpoch": 12, "V3AndBelowProducerEpoch": 12,
    "GenerationId": 5, "GenerationIdOrMemberEpoch": 5, "MemberEpoch": 5, "GroupEpoch": 5,
    "AssignmentEpoch": 5, "Epoch": 5, "ControllerEpoch": 7, "CoordinatorEpoch": 3, "PartitionEpoch": 9,
    "ZkVersion": 9, "BrokerEpoch": 42, "ReplicaEpoch": -1,
    "ReplicaId": -1, "PreferredReadReplica": -1, "Port": 9092, "V0Port": 9092,
    "TimeoutMs": 30000, "timeoutMs": 30000, "SessionTimeoutMs": 45000, "RebalanceTimeoutMs": 300000,
    "TransactionTimeoutMs": 60000, "HeartbeatIntervalMs": 3000, "MaxWaitMs": 500,
    "AcquisitionLockTimeoutMs": 30000, "RetentionTimeMs": -1,
    "MinBytes": 1, "MaxBytes": 52428800, "PartitionMaxBytes": 1048576, "MaxRecords": 500,
    "BatchSize": 500, "MaxNumOffsets": 1,
    "SessionId": 0, "SessionEpoch": -1, "ShareSessionEpoch": 0,
    "Acks": -1, "IsolationLevel": 1, "NumPartitions": 3, "ReplicationFactor": 3,
    "ApiKey": lambda i: i, "MinVersion": 0, "MaxVersion": 11, "MinVersionLevel": 1,
    "MaxVersionLevel": 20, "FinalizedFeaturesEpoch": 7,
    "Timestamp": TS, "CommitTimestamp": TS, "LogAppendTimeMs": -1,
    "SecurityProtocol": 0, "CorrelationId": 1, "TransactionVersion": 2, "DeliveryCount": 1,
    "ConfigSource": 1, "LeaderRecoveryState": 0, "Index": lambda i: i, "BatchIndex": 0,
    "Partitions": lambda i: 3 + 4 * i, "PartitionIndexes": lambda i: 3 + 4 * i, "AcknowledgeTypes": 1,
}
_STRS: dict[str, object] = {
    "TransactionalId": "tx-orders-001", "V3AndBelowTransactionalId": "tx-orders-001",
    "MemberId": "consumer-1-abc123", "Leader": "consumer-1-abc123", "GroupInstanceId": None,
    "ClientId": "kipviz", "ClientHost": "/10.0.0.7",
    "Host": lambda i: f"broker-{i + 1}.kafka.local", "HostName": lambda i: f"broker-{i + 1}.kafka.local",
    "V0Host": "broker-1.kafka.local", "Rack": lambda i: f"rack-{'abc'[i % 3]}", "RackId": "rack-a",
    "ClusterId": "kRZ5pVrYQZ2lQd6ZrJQbAw", "ProtocolType": "consumer", "ProtocolName": "range",
    "AssignorName": "uniform", "ServerAssignor": "uniform", "Listener": "PLAINTEXT",
    "GroupState": "Stable", "GroupType": "consumer", "CommittedMetadata": "", "Metadata": "",
    "ClientSoftwareName": "apache-kafka-java", "ClientSoftwareVersion": "4.1.0",
    "Reason": "the consumer is being closed", "SubscribedTopicRegex": None, "ProtocolData": "",
    "Key": "retention.ms", "Value": "604800000", "ErrorMessage": None,
}
_JITTER = (("Offset", 1_000_000), ("Epoch", 30), ("PartitionIndex", 12), ("ProducerId", 100_000),
           ("Partitions", 12), ("Timestamp", 86_400_000))
_USUALLY_EMPTY = frozenset({"OfflineReplicas", "AddingReplicas", "RemovingReplicas", "RecordErrors",
                            "AbortedTransactions", "ForgottenTopicsData"})
_FEATURE_PARENTS = ("SupportedFeatures", "FinalizedFeatures")
_CONFIG_PARENTS = ("Configs",)

# consumer-protocol bytes (JoinGroup/SyncGroup metadata and assignments), schema v0
_SUBSCRIPTION = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06orders" + b"\xff\xff\xff\xff"
_ASSIGNMENT = (b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06orders"
               + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x03" + b"\xff\xff\xff\xff")


class _Gen:
    def __init__(self, spec: MessageSpec, seed: int):
        self.spec = spec
        self.seed = seed

    def rng(self, path: str) -> random.Random:
        return random.Random(f"{self.spec.name}|{path}|{self.seed}")

    # ---- structs and arrays ----------------------------------------------------------------
    def struct(self, fields: tuple[VField, ...], path: str, i: int, parent: str) -> dict:
        out = {}
        for f in fields:
            p = f"{path}.{f.name}" if path else f.name
            out[f.name] = self.field(f, p, i, parent)
        return out

    def field(self, f: VField, path: str, i: int, parent: str):
        if f.is_array:
            n = 0 if f.name in _USUALLY_EMPTY else self.rng(path).choice((1, 2))
            if f.is_struct:
                return [self.struct(f.fields, f"{path}[]", j, f.name) for j in range(n)]
            return [self.prim(f, path, j, parent, in_array=True) for j in range(n)]
        if f.is_struct:
            return self.struct(f.fields, path, i, f.name)
        return self.prim(f, path, i, parent)

    # ---- primitives ---------------------------------------------------------------------------
    def prim(self, f: VField, path: str, i: int, parent: str, in_array: bool = False):
        t, name, s = f.elem, f.name, f.spec
        nullable = f.nullable and not in_array
        if t in _RANGES:
            return self.integer(f, path, i, parent)
        if t == "bool":
            return bool(s.default) if isinstance(s.default, bool) else False
        if t == "float64":
            return 0.5
        if t == "uuid":
            if name in ("TopicId", "Id") or "Topic" in name:
                return TOPIC_IDS[i % len(TOPIC_IDS)]
            return uuid.uuid5(_NS, f"{self.spec.name}.{path}.{i}")
        if t == "records":
            return _records(i)
        if t == "bytes":
            if nullable and self.rng(path).random() < 0.2:
                return None
            if "Assignment" in name:
                return _ASSIGNMENT
            if "Metadata" in name:
                return _SUBSCRIPTION
            return bytes(range(1, 9))
        return self.string(f, path, i, parent, nullable)

    def string(self, f: VField, path: str, i: int, parent: str, nullable: bool):
        """A string field's example: by field name or entity type, else "<kebab-name>-<i+1>"."""
        name, et = f.name, f.spec.entity_type
        if name in _STRS and not (name == "Key" and parent not in _CONFIG_PARENTS):
            v = _STRS[name]
            v = v(i) if callable(v) else v
            if v is None:
                return None if nullable else ""
            return v
        if et == "topicName" or name in ("Topic", "TopicName", "TopicNames", "SubscribedTopicNames"):
            return TOPICS[i % len(TOPICS)]
        if et == "groupId" or name in ("GroupIds", "CoordinatorKeys"):
            return GROUPS[i % len(GROUPS)]
        if et == "transactionalId":
            return "tx-orders-001"
        if name == "Name":
            return _name_example(parent, i)
        if name == "StatesFilter":
            return "Stable"
        if name == "TypesFilter":
            return "consumer"
        if nullable and self.rng(path).random() < 0.25:
            return None
        return f"{_kebab(name)}-{i + 1}"

    def integer(self, f: VField, path: str, i: int, parent: str) -> int:
        t, name, s = f.elem, f.name, f.spec
        lo, hi = _RANGES[t]
        v = _INTS.get(name)
        if v is None:
            if name.endswith("ErrorCode"):
                v = 0
            elif s.entity_type == "brokerId" or name in ("NodeId", "BrokerId", "LeaderId", "Leader",
                                                         "ControllerId", "CoordinatorId", "Id"):
                v = 1 + i
            elif name.endswith("TimeoutMs"):
                v = 30000
            elif name.endswith("Ms"):
                v = 1000
            elif s.default is not None and not isinstance(s.default, bool):
                v = s.default
            elif t in ("int8",):
                v = 0
            else:
                v = self.rng(path).randrange(1, 10) + i
        elif callable(v):
            v = v(i)
        if self.seed and v is not None and v > 0:          # other seeds: other offsets, epochs, ...
            for suffix, spread in _JITTER:
                if name.endswith(suffix):
                    v += self.rng(path).randrange(spread)
                    break
        v = int(v)
        return v if lo <= v <= hi else max(lo, min(hi, 0 if lo <= 0 <= hi else lo))


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _records(i: int) -> bytes:
    from . import write_batch
    return write_batch([{"key": b"order-42", "value": b'{"qty":3}', "timestamp": TS}],
                       base_offset=150382 + 1000 * i)


# ---- curated examples --------------------------------------------------------------------------
def _txn_offset_commit_request() -> dict:
    return {
        "TransactionalId": "tx-orders-001", "GroupId": "order-processors", "ProducerId": 4001,
        "ProducerEpoch": 12, "GenerationIdOrMemberEpoch": 5, "MemberId": "consumer-1-abc123",
        "GroupInstanceId": None,
        "Topics": [{"Name": "orders", "TopicId": TOPIC_IDS[0], "Partitions": [
            {"PartitionIndex": 3, "CommittedOffset": 150382, "CommittedLeaderEpoch": 12,
             "CommittedMetadata": ""}]}],
    }


#: message name -> function returning a value with every field any version has (trimmed per version)
CURATED = {"TxnOffsetCommitRequest": _txn_offset_commit_request}


def _fit(fields: tuple[VField, ...], value: dict, gen: _Gen, path: str, i: int, parent: str) -> dict:
    """Keep the keys present at this version; generate any that the curated value lacks."""
    out = {}
    for f in fields:
        p = f"{path}.{f.name}" if path else f.name
        if f.name not in value:
            out[f.name] = gen.field(f, p, i, parent)
            continue
        x = value[f.name]
        if f.is_struct and f.is_array and isinstance(x, list):
            x = [_fit(f.fields, e, gen, f"{p}[]", j, f.name) for j, e in enumerate(x)]
        elif f.is_struct and isinstance(x, dict):
            x = _fit(f.fields, x, gen, p, i, f.name)
        out[f.name] = x
    return out


def example_value(name_or_spec: str | MessageSpec, version: int, *, seed: int = 0) -> dict:
    """A deterministic, realistic value for one message version (encodes with kipviz.codec)."""
    spec = registry.get(name_or_spec)
    vm = resolve(spec, version)
    gen = _Gen(spec, seed)
    curated = CURATED.get(spec.name) if seed == 0 else None
    if curated is not None:
        return _fit(vm.fields, curated(), gen, "", 0, "")
    return gen.struct(vm.fields, "", 0, "")


def _name_example(parent: str, i: int) -> str:
    """A "Name" field's example, by what its parent holds (features, protocols, configs, topics)."""
    if parent in _FEATURE_PARENTS:
        return ("metadata.version", "transaction.version")[i % 2]
    if parent == "Protocols":
        return ("range", "cooperative-sticky")[i % 2]
    if parent in _CONFIG_PARENTS:
        return ("retention.ms", "cleanup.policy")[i % 2]
    if "Topic" in parent or parent in ("Topics", "Responses", "Requests"):
        return TOPICS[i % len(TOPICS)]
    return f"name-{i + 1}"
