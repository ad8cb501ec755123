"""Where released Kafka departs from the KIP-516 page, as data: other code (the review,
notebooks, tests) reads DEPARTURES; `schema_facts` checks the wire departures against the kit's
own definitions, so a definition that drifts from this list is caught.

Each entry: id, topic, page (what the page says), shipped (what released Kafka does, with the
release), source (the Kafka file that shows it), model (what the kit does with it), scenario (a
runnable scenario that shows it, or None), schema (wire facts to check, or None)."""
from __future__ import annotations

from ..schema import registry

DEPARTURES: tuple[dict, ...] = (
    {"id": "stop-replica-no-topic-id", "topic": "StopReplica",
     "page": "StopReplica v2 gets a tagged topic_id per topic (request and response).",
     "shipped": "StopReplica never got a topic id: v3 (2.6, KIP-570) added per-partition leader epochs and "
                "v4 (3.4, KIP-866) isKRaftController, both by topic name; the API was removed in 4.0.",
     "source": "clients/src/main/resources/common/message/StopReplicaRequest.json",
     "model": "StopReplica is handled by name (kipviz.broker.replicas.stop_replica): a retried stop of a "
              "deleted topic removes the recreated topic's replica.",
     "scenario": "kip516.stop_replica_by_name",
     "schema": [("StopReplicaRequest", "absent"), ("StopReplicaResponse", "absent")]},
    {"id": "list-offsets-no-topic-id", "topic": "ListOffsets",
     "page": "ListOffsets gets a topic_id to fence reads from deleted topics.",
     "shipped": "No version of ListOffsets (0-11 in 4.x) carries a topic id; topics are named.",
     "source": "clients/src/main/resources/common/message/ListOffsetsRequest.json",
     "model": "ListOffsets by name answers for whatever topic holds the name now.",
     "scenario": None, "schema": [("ListOffsetsRequest", "absent"), ("ListOffsetsResponse", "absent")]},
    {"id": "offset-for-leader-epoch-no-topic-id", "topic": "OffsetForLeaderEpoch",
     "page": "OffsetForLeaderEpoch gets a topic_id to fence reads from deleted topics.",
     "shipped": "No version of OffsetForLeaderEpoch (0-4) carries a topic id; topics are named.",
     "source": "clients/src/main/resources/common/message/OffsetForLeaderEpochRequest.json",
     "model": "OffsetForLeaderEpoch by name, as released.",
     "scenario": None,
     "schema": [("OffsetForLeaderEpochRequest", "absent"), ("OffsetForLeaderEpochResponse", "absent")]},
    {"id": "tagged-became-regular", "topic": "LeaderAndIsr, UpdateMetadata, Metadata, Fetch",
     "page": "The topic ids (and LeaderAndIsr's type) are tagged fields, so the inter-broker protocol need "
             "not change (LeaderAndIsr v4, UpdateMetadata v6).",
     "shipped": "Ordinary fields in new versions: LeaderAndIsr v5 TopicId and Type (2.8), UpdateMetadata v7 "
                "(2.8), Metadata v10 (2.8), Fetch v13 (3.1).",
     "source": "clients/src/main/resources/common/message/LeaderAndIsrRequest.json",
     "model": "The kit's definitions carry them as regular fields at the shipped versions.",
     "scenario": "kip516.migration",
     "schema": [("LeaderAndIsrRequest", "regular@5"), ("LeaderAndIsrResponse", "regular@5"),
                ("UpdateMetadataRequest", "regular@7"), ("MetadataResponse", "regular@10"),
                ("FetchRequest", "regular@13")]},
    {"id": "leader-and-isr-response-by-id", "topic": "LeaderAndIsr",
     "page": "LeaderAndIsrResponse v4 keeps the topic name and adds a tagged topic_id next to it.",
     "shipped": "LeaderAndIsrResponse v5 (2.8) groups partition errors under the topic id and drops the name.",
     "source": "clients/src/main/resources/common/message/LeaderAndIsrResponse.json",
     "model": "Responses v5+ are keyed by TopicId.", "scenario": "kip516.broker_stale_state_released",
     "schema": [("LeaderAndIsrResponse", "no-name@5")]},
    {"id": "stale-state-refused", "topic": "LeaderAndIsr",
     "page": "'Stale state': a replica that receives LeaderAndIsr with a new topic id for a name it holds "
             "closes the old log and moves it to the deleting directory.",
     "shipped": "The broker answers INCONSISTENT_TOPIC_ID for that partition and keeps the old log "
                "(2.8-3.9; ReplicaManager.becomeLeaderOrFollower, hasConsistentTopicId).",
     "source": "core/src/main/scala/kafka/server/ReplicaManager.scala",
     "model": "Both: cluster.replicas.behaviour 'released' (default) or 'page'.",
     "scenario": "kip516.broker_stale_state", "schema": None},
    {"id": "full-type-unused", "topic": "LeaderAndIsr",
     "page": "The first LeaderAndIsr to a broker is FULL; the broker deletes every local partition it does "
             "not list, or lists with another topic id.",
     "shipped": "The ZooKeeper controller never set Type (0, UNSPECIFIED); brokers reconcile stray logs on a "
                "FULL request only from a KRaft controller during the ZooKeeper migration (KIP-866).",
     "source": "core/src/main/scala/kafka/server/ReplicaManager.scala (findStrayPartitionsFromLeaderAndIsr)",
     "model": "behaviour 'page' reconciles on FULL; 'released' notes the omitted partitions and keeps them.",
     "scenario": "kip516.full_leader_and_isr", "schema": None},
    {"id": "deletion-directory", "topic": "log.dir layout",
     "page": "Stale partitions move to log.dir/deleting/{topic_id}_{partition} and are removed after a new "
             "setting (unnamed on the page, default 4 hours).",
     "shipped": "The directory is renamed to topic-partition.uniqueId-delete and removed after "
                "file.delete.delay.ms (60000); KRaft brokers use '-stray' for stray logs.",
     "source": "storage/src/main/java/org/apache/kafka/storage/internals/log/LocalLog.java (logDeleteDirName)",
     "model": "page behaviour uses the page's directory and delay; StopReplica deletions the shipped ones.",
     "scenario": "kip516.broker_stale_state", "schema": None},
    {"id": "partition-metadata-fields", "topic": "partition.metadata",
     "page": "Human readable, plain text or JSON, with schema_version, id, name and partition.",
     "shipped": "Two lines: 'version: 0' and 'topic_id: <base64 id>' (PartitionMetadata.encode).",
     "source": "storage/src/main/java/org/apache/kafka/storage/internals/checkpoint/PartitionMetadata.java",
     "model": "The shipped content, in both behaviours.", "scenario": "kip516.migration", "schema": None},
    {"id": "immediate-delete-zk", "topic": "topic deletion",
     "page": "The ZooKeeper controller answers DeleteTopics at once and garbage-collects with StopReplica; "
             "the name can be reused while a replica is offline.",
     "shipped": "The ZooKeeper controller's TopicDeletionManager still waited for every replica; deletion "
                "without waiting came with KRaft (RemoveTopicRecord), where ZooKeeper-era RPCs are gone (4.0).",
     "source": "core/src/main/scala/kafka/controller/TopicDeletionManager.scala (3.x)",
     "model": "DeleteTopics completes at once (as KRaft and the page); the controller's StopReplica and "
              "LeaderAndIsr are played by the scenario.",
     "scenario": "kip516.delete_without_waiting", "schema": None},
    {"id": "zk-rpcs-removed", "topic": "LeaderAndIsr, StopReplica, UpdateMetadata",
     "page": "The broker side of KIP-516 runs on LeaderAndIsr and StopReplica.",
     "shipped": "All three controller-to-broker RPCs were removed with ZooKeeper in 4.0; no release the kit "
                "plays (4.0-4.4) serves them.",
     "source": "clients/src/main/resources/common/message/ (4.0: files removed)",
     "model": "The scenarios turn them on with ClusterConfig.api_versions, playing a 2.8-3.9 ZooKeeper broker.",
     "scenario": None,
     "schema": [("LeaderAndIsrRequest", "removed@4.0"), ("StopReplicaRequest", "removed@4.0"),
                ("UpdateMetadataRequest", "removed@4.0")]},
)


def _all_fields(spec):
    seen = []

    def walk(fields):
        for f in fields:
            seen.append(f)
            walk(f.fields)
    walk(spec.fields)
    for s in spec.common_structs:
        walk(s.fields)
    return seen


def schema_fact(message: str, expect: str) -> tuple[bool, str]:
    """Whether the kit's definition of `message` shows `expect` ("absent": no TopicId field at any
    version; "regular@V": a TopicId present at V and not tagged; "no-name@V": no topic name field at
    V; "removed@R": every version labelled removed in R), with a one-line reason."""
    spec = registry.get(message)
    ids = [f for f in _all_fields(spec) if f.name == "TopicId"]
    kind, _, arg = expect.partition("@")
    if kind == "absent":
        return not ids, f"{message}: {len(ids)} TopicId field(s)"
    if kind == "regular":
        v = int(arg)
        ok = any(f.present(v) and not f.is_tagged(v) for f in ids) and not any(f.is_tagged(v) for f in ids)
        return ok, f"{message} v{v}: TopicId " + ("regular" if ok else "missing or tagged")
    if kind == "no-name":
        v = int(arg)
        names = [f for f in _all_fields(spec) if f.name in ("TopicName", "Name", "Topic") and f.present(v)]
        return not names, f"{message} v{v}: {len(names)} topic name field(s)"
    if kind == "removed":
        removed = {spec.status(v).removed if spec.status(v) else None for v in spec.versions}
        return removed == {arg}, f"{message}: removed in {sorted(str(r) for r in removed)}"
    raise ValueError(f"unknown schema expectation {expect!r}")


def schema_facts() -> list[dict]:
    """Every wire fact of DEPARTURES checked against the kit's definitions: id, message, expect, ok, why."""
    out = []
    for d in DEPARTURES:
        for message, expect in d["schema"] or []:
            ok, why = schema_fact(message, expect)
            out.append({"id": d["id"], "message": message, "expect": expect, "ok": ok, "why": why})
    return out
