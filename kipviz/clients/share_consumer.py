"""A small sans-IO share consumer (KIP-932) talking to a kipviz Cluster in real frames.

    sc = ShareConsumer(cluster, "sg", client_id="worker-1")
    sc.subscribe(["in"])
    for r in sc.poll():                  # heartbeat (join at epoch 0), one ShareFetch round
        sc.acknowledge(r, 1)             # 1 ACCEPT, 2 RELEASE, 3 REJECT (explicit mode)
    sc.commit_sync()                     # ShareAcknowledge with the pending acknowledgements
    sc.close()                           # final ShareAcknowledge (epoch -1) + leave (epoch -1)

Versions: ShareGroupHeartbeat v1, ShareFetch/ShareAcknowledge v1 (the first stable versions). The
member id is made up by the client (v1). Offsets handed out without a record (control records,
archived aborted records) are acknowledged as gaps (type 0) at the next commit_sync."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from .. import records as rec
from ..schema import events as ev
from ..uuids import to_kafka_str


@dataclass(frozen=True, slots=True)
class ShareRecord:
    """One record a share consumer acquired, with its delivery count."""
    topic: str
    topic_id: uuid.UUID
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    delivery_count: int


class ShareConsumer:
    """A KIP-932 share-group member (see the module)."""
    def __init__(self, cluster, group_id: str, client_id: str = "share-consumer", max_records: int = 500):
        self.cluster, self.group_id, self.client_id, self.max_records = cluster, group_id, client_id, max_records
        self.member_id = to_kafka_str(uuid.UUID(int=cluster.rng.getrandbits(128)))
        self.member_epoch = 0
        self.subscription: list[str] = []
        self.session_epoch = 0
        self.pending: dict[tuple, dict[int, int]] = {}     # (topic_id, partition) -> offset -> type
        self.assignment: list[tuple] = []
        self.last_errors: list[int] = []

    def _call(self, api, version, body):
        return self.cluster.call(api, version, body, client=self.client_id)

    def share_group_metadata(self) -> dict:
        """KIP-1289 (proposed) ShareGroupMetadata: a snapshot of (group, member id, member epoch)
        for Producer.send_share_acknowledgements_to_transaction."""
        gm = {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.member_epoch}
        self.cluster.emit(ev.ShareGroupMetadataTaken, client=self.client_id, **gm)
        return gm

    def transactional_acknowledgements(self) -> dict:
        """KIP-1289 (proposed): hand the pending ACCEPT/REJECT acknowledgements to a transactional
        producer instead of committing them: {(topic id, partition): {offset: type}}; they leave
        `pending`. Gaps (type 0, offsets without a record) and other types stay pending for the
        next ShareFetch / commit_sync (only ACCEPT and REJECT are valid in a transaction)."""
        out: dict = {}
        for k, acks in list(self.pending.items()):
            txn = {o: t for o, t in acks.items() if t in (1, 3)}
            if txn:
                out[k] = txn
                rest = {o: t for o, t in acks.items() if o not in txn}
                if rest:
                    self.pending[k] = rest
                else:
                    del self.pending[k]
        return out

    def subscribe(self, topics: list[str]) -> None:
        """The topics to join the share group with."""
        self.subscription = list(topics)

    def heartbeat(self) -> dict:
        """ShareGroupHeartbeat: join at epoch 0, or refresh the assignment; rejoin when fenced."""
        r = self._call("ShareGroupHeartbeat", 1, {
            "GroupId": self.group_id, "MemberId": self.member_id, "MemberEpoch": self.member_epoch,
            "RackId": None, "SubscribedTopicNames": self.subscription if self.member_epoch == 0 else None})
        if r["ErrorCode"] in (25, 110):       # UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: rejoin
            self.member_epoch, self.session_epoch = 0, 0
            return r
        if r["ErrorCode"] == 0:
            self.member_epoch = r["MemberEpoch"]
            if r["Assignment"] is not None:
                self.assignment = [(tp["TopicId"], p) for tp in r["Assignment"]["TopicPartitions"]
                                   for p in tp["Partitions"]]
        return r

    def _ack_topics(self, with_empty: bool = False) -> list[dict]:
        by_topic: dict = {}
        keys = set(self.pending) | (set(self.assignment) if with_empty else set())
        for tid, p in sorted(keys, key=lambda k: (str(k[0]), k[1])):
            acks = self.pending.get((tid, p), {})
            batches = [{"FirstOffset": o, "LastOffset": o, "AcknowledgeTypes": [t]} for o, t in sorted(acks.items())]
            by_topic.setdefault(tid, []).append({"PartitionIndex": p, "AcknowledgementBatches": batches})
        return [{"TopicId": tid, "Partitions": ps} for tid, ps in by_topic.items()]

    def poll(self) -> list[ShareRecord]:
        """One ShareFetch (with the pending acknowledgements): the records acquired."""
        if self.member_epoch == 0 or not self.assignment:
            self.heartbeat()
        if not self.assignment:
            return []
        topics = self._ack_topics(with_empty=True)
        self.pending.clear()
        r = self._call("ShareFetch", 1, {
            "GroupId": self.group_id, "MemberId": self.member_id, "ShareSessionEpoch": self.session_epoch,
            "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": self.max_records,
            "BatchSize": self.max_records, "Topics": topics, "ForgottenTopicsData": []})
        if r is None or r["ErrorCode"]:
            self.last_errors = [r["ErrorCode"]] if r else [-1]
            self.session_epoch = 0
            return []
        self.session_epoch += 1
        out = []
        for t in r["Responses"]:
            topic = self.cluster.topics.by_id.get(t["TopicId"])
            for pd in t["Partitions"]:
                if pd["ErrorCode"]:
                    continue
                data = {x["offset"]: x for b in rec.read_batches(pd["Records"] or b"") for x in b["records"]}
                name, tid, p = topic.name if topic else "", t["TopicId"], pd["PartitionIndex"]
                for a in pd["AcquiredRecords"]:
                    count = a["DeliveryCount"]
                    for o in range(a["FirstOffset"], a["LastOffset"] + 1):
                        x = data.get(o)
                        if x is not None:
                            out.append(ShareRecord(name, tid, p, o, x.get("key"), x.get("value"), count))
                        else:
                            self.pending.setdefault((tid, p), {})[o] = 0   # gap
        return out

    def acknowledge(self, record: ShareRecord, ack_type: int = 1) -> None:
        """Acknowledge `record`: 1 ACCEPT, 2 RELEASE, 3 REJECT (sent with the next ShareFetch or commit_sync)."""
        self.pending.setdefault((record.topic_id, record.partition), {})[record.offset] = ack_type

    def commit_sync(self) -> dict | None:
        """ShareAcknowledge the pending acknowledgements; its answer (None: nothing to send)."""
        if not self.pending or self.session_epoch == 0:
            return None
        r = self._call("ShareAcknowledge", 1, {"GroupId": self.group_id, "MemberId": self.member_id,
                                                "ShareSessionEpoch": self.session_epoch,
                                                "Topics": self._ack_topics()})
        self.pending.clear()
        if r is not None and r["ErrorCode"] == 0:
            self.session_epoch += 1
        return r

    def close(self) -> None:
        """Final ShareAcknowledge (session epoch -1), then leave (heartbeat at epoch -1)."""
        if self.session_epoch:
            self._call("ShareAcknowledge", 1, {"GroupId": self.group_id, "MemberId": self.member_id,
                                                "ShareSessionEpoch": -1, "Topics": self._ack_topics()})
            self.pending.clear()
            self.session_epoch = 0
        if self.member_epoch:
            self._call("ShareGroupHeartbeat", 1, {"GroupId": self.group_id, "MemberId": self.member_id,
                                                   "MemberEpoch": -1, "RackId": None, "SubscribedTopicNames": None})
            self.member_epoch = 0
