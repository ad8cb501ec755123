"""KIP-516 (topic IDs, released): what a topic id protects against when a topic is deleted and
recreated under the same name (the KIP-516 page).

    kip516.stale_read                         a consumer fetching by the old id gets UNKNOWN_TOPIC_ID;
                                              by name it silently reads the new topic's records
    kip516.stale_state                        a by-name client's position and leader epoch belong to
                                              the old topic: OFFSET_OUT_OF_RANGE, then wrong data;
                                              only Metadata v10+ (the id) shows the change
    kip516.delete_recreate_committed_offsets  a group's committed offsets across delete + recreate:
                                              removed with the topic, but a late commit by name lands
                                              on the new topic; by id (OffsetCommit v10) it is refused
    kip516.ids_never_reused                   every creation of a name gets a fresh, never-reserved id

The broker side (LeaderAndIsr and StopReplica, partition.metadata, stale logs, migration) is in
kip516_broker.py; where released Kafka departs from the page, in kip516_departures.py.

Every step is a real request frame answered by cluster.handle. The small raw client here (`Wire`)
is shared with kipviz/scenarios/kip1319.py."""
from __future__ import annotations

import uuid

from .. import codec
from ..broker import served_versions
from ..broker.groups.model import shape
from ..records import decode_internal, read_batches, write_batch
from ..schema.error_codes import name_of
from ..schema.topics import CONSUMER_OFFSETS
from ..uuids import RESERVED, ZERO_UUID, to_kafka_str
from . import Trace, scenario

KIP = "KIP-516"


# ---- a raw client: frames in, decoded bodies out ------------------------------------------------------
class Wire:
    """Encode a request (missing fields at Kafka's defaults), hand the frame to the cluster as
    `client`, decode the response frame. Parked (delayed) answers come back as None."""

    def __init__(self, trace: Trace, client: str, principal: str = "User:ANONYMOUS"):
        self.cluster = trace.cluster
        self.client = client
        self.principal = principal
        self._cid = 0

    def __call__(self, api: str, version: int, body: dict, *, broker: int = 0) -> dict | None:
        self._cid += 1
        frame = codec.encode_request(api, version, shape(api + "Request", version, body),
                                     correlation_id=self._cid, client_id=self.client)
        out = self.cluster.handle(frame, broker=broker, client=self.client, principal=self.principal)
        if not out:
            return None
        return codec.decode_response(out, api, version)["body"]


def newest(trace: Trace, api: str) -> int:
    """The newest version of `api` the scenario's brokers serve."""
    return served_versions(api, trace.cluster.config)[1]


def part_errors(body: dict, topics_key: str = "Topics") -> dict:
    """{(topic name or id, partition): error name} of an offsets-style response."""
    return {(t.get("Name") or t.get("TopicId"), p["PartitionIndex"]): name_of(p["ErrorCode"])
            for t in body[topics_key] for p in t["Partitions"]}


def offsets_records(trace: Trace, since: int = 0) -> list[dict]:
    """OffsetCommit records written to __consumer_offsets (decoded from their bytes) after event `since`."""
    out = []
    for e in trace.events[since:]:
        if e.kind == "RecordAppended" and e.topic == CONSUMER_OFFSETS and not e.control and e.key is not None:
            d = decode_internal(e.key, e.value, CONSUMER_OFFSETS)
            if d["record"] == "OffsetCommit":
                out.append({**d, "producer_id": e.producer_id, "transactional": e.transactional})
    return out


def ids(*us: uuid.UUID) -> list[str]:
    return [to_kafka_str(u) for u in us]


# ---- topic admin and data-path frames -------------------------------------------------------------------
def create_topic(trace: Trace, admin: Wire, name: str, partitions: int = 1) -> uuid.UUID:
    r = admin("CreateTopics", newest(trace, "CreateTopics"), {
        "Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": -1, "Assignments": [],
                    "Configs": []}], "timeoutMs": 30000, "validateOnly": False})
    t = r["Topics"][0]
    trace.expect(f"CreateTopics {name}: NONE", t["ErrorCode"] == 0, name_of(t["ErrorCode"]))
    return t["TopicId"]


def delete_topic(trace: Trace, admin: Wire, name: str) -> None:
    r = admin("DeleteTopics", 6, {"Topics": [{"Name": name, "TopicId": ZERO_UUID}], "TimeoutMs": 30000})
    code = r["Responses"][0]["ErrorCode"]
    trace.expect(f"DeleteTopics {name}: NONE", code == 0, name_of(code))


def produce(trace: Trace, producer: Wire, topic: str, values: list[bytes], partition: int = 0) -> int:
    """Produce v12 (by name, the way a producer that has not learned the new id writes): base offset."""
    batch = write_batch([(None, v) for v in values], base_timestamp=trace.cluster.now)
    r = producer("Produce", 12, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 30000, "TopicData": [
        {"Name": topic, "PartitionData": [{"Index": partition, "Records": batch}]}]})
    p = r["Responses"][0]["PartitionResponses"][0]
    trace.expect(f"Produce {len(values)} record(s) to {topic}-{partition}: NONE", p["ErrorCode"] == 0,
                 name_of(p["ErrorCode"]))
    return p["BaseOffset"]


def fetch(trace: Trace, consumer: Wire, topic: str | uuid.UUID, offset: int, *, version: int | None = None,
          leader_epoch: int = -1, partition: int = 0) -> dict:
    """One partition's Fetch answer, with its records decoded: by topic id (v13+) when `topic` is a
    uuid, else by name (v12, the last version with names)."""
    by_id = isinstance(topic, uuid.UUID)
    v = version if version is not None else (newest(trace, "Fetch") if by_id else 12)
    key = {"TopicId": topic} if by_id else {"Topic": topic}
    body = {"ReplicaId": -1, "ReplicaState": {"ReplicaId": -1, "ReplicaEpoch": -1}, "MaxWaitMs": 500,
            "MinBytes": 1, "MaxBytes": 1 << 20, "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
            "ForgottenTopicsData": [], "RackId": "",
            "Topics": [{**key, "Partitions": [{"Partition": partition, "CurrentLeaderEpoch": leader_epoch,
                                               "FetchOffset": offset, "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                               "PartitionMaxBytes": 1 << 20}]}]}
    r = consumer("Fetch", v, body)
    p = r["Responses"][0]["Partitions"][0]
    records = [rec for b in read_batches(p["Records"] or b"") for rec in b["records"] if rec["offset"] >= offset]
    return {"version": v, "error": name_of(p["ErrorCode"]), "high_watermark": p["HighWatermark"],
            "values": [rec["value"] for rec in records], "offsets": [rec["offset"] for rec in records]}


def metadata(trace: Trace, client: Wire, version: int, *, name: str | None = None,
             topic_id: uuid.UUID | None = None) -> dict:
    """One topic's Metadata answer: {error, name, topic_id (None before v10), partitions, leader_epoch}."""
    r = client("Metadata", version, {"Topics": [{"Name": name, "TopicId": topic_id or ZERO_UUID}],
                                     "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False,
                                     "IncludeClusterAuthorizedOperations": False})
    t = r["Topics"][0]
    parts = t.get("Partitions") or []
    return {"version": version, "error": name_of(t["ErrorCode"]), "name": t.get("Name"),
            "topic_id": t.get("TopicId") if version >= 10 else None, "partitions": len(parts),
            "leader_epoch": parts[0]["LeaderEpoch"] if parts else None,
            "leader": parts[0]["LeaderId"] if parts else None}


# ---- scenarios ----------------------------------------------------------------------------------------
@scenario("kip516.stale_read", kip=KIP, status="released",
          title="KIP-516: a fetch by the deleted topic's id cannot read the recreated topic",
          summary="A consumer reads 'orders' by topic id. The topic is deleted and recreated under the same "
                  "name. Fetching by the old id now gets UNKNOWN_TOPIC_ID instead of the new topic's records; "
                  "the same fetch by name (Fetch v12) silently returns the new topic's records at the old "
                  "position. Metadata by name then shows the new id.")
def stale_read(trace: Trace) -> None:
    admin, prod, cons = Wire(trace, "admin"), Wire(trace, "producer"), Wire(trace, "consumer")
    old_id = create_topic(trace, admin, "orders")
    produce(trace, prod, "orders", [b"a0", b"a1", b"a2"])
    md = metadata(trace, cons, 12, name="orders")
    trace.expect("Metadata v12 gives the consumer the topic id", md["topic_id"] == old_id, str(md["topic_id"]))
    first = fetch(trace, cons, old_id, 0)
    trace.expect(f"Fetch v{first['version']} by topic id reads a0..a2", first["values"] == [b"a0", b"a1", b"a2"],
                 repr(first["values"]))
    position = 3

    delete_topic(trace, admin, "orders")
    new_id = create_topic(trace, admin, "orders")
    trace.expect("the recreated topic has a new topic id", new_id != old_id, f"{old_id} -> {new_id}")
    produce(trace, prod, "orders", [b"b0", b"b1", b"b2", b"b3", b"b4"])

    stale = fetch(trace, cons, old_id, position)
    trace.expect("Fetch by the old topic id: UNKNOWN_TOPIC_ID, no records",
                 stale["error"] == "UNKNOWN_TOPIC_ID" and stale["values"] == [], f"{stale['error']} {stale['values']}")
    by_name = fetch(trace, cons, "orders", position)
    trace.expect("Fetch v12 by name at the old position: NONE and the NEW topic's records (b3, b4)",
                 by_name["error"] == "NONE" and by_name["values"] == [b"b3", b"b4"],
                 f"{by_name['error']} {by_name['values']}")
    gone = metadata(trace, cons, 12, topic_id=old_id)
    trace.expect("Metadata v12 by the old topic id: UNKNOWN_TOPIC_ID", gone["error"] == "UNKNOWN_TOPIC_ID",
                 gone["error"])
    fresh = metadata(trace, cons, 12, name="orders")
    trace.expect("Metadata v12 by name shows the new topic id", fresh["topic_id"] == new_id, str(fresh["topic_id"]))
    restart = fetch(trace, cons, new_id, 0)
    trace.expect("after learning the new id the consumer starts the new topic from 0: b0..b4",
                 restart["values"] == [b"b0", b"b1", b"b2", b"b3", b"b4"], repr(restart["values"]))
    trace.result.update(old_topic_id=to_kafka_str(old_id), new_topic_id=to_kafka_str(new_id), position=position,
                        fetch_by_old_id=stale["error"], fetch_by_name_values=[v.decode() for v in by_name["values"]],
                        fetch_version_by_id=stale["version"], fetch_version_by_name=by_name["version"])
    trace.find(f"After 'orders' is deleted and recreated, the consumer's Fetch v{stale['version']} by the old topic "
               f"id is answered {stale['error']}, but the same fetch by name (v{by_name['version']}) at offset "
               f"{position} is answered {by_name['error']} with the new topic's records "
               f"{', '.join(v.decode() for v in by_name['values'])}, as if nothing had changed.",
               f"The consumer of orders-0: by id it gets {stale['error']} and must look the topic up again (Metadata "
               "shows the new id); by name it reads another topic's records with no error at all.",
               "KIP-516, 'Immediate delete scenarios / Stale reads': with the topic id in Fetch, ListOffsets and "
               "OffsetsForLeaderEpoch any request to a stale partition fails; Fetch carries topic ids from v13.")


@scenario("kip516.stale_state", kip=KIP, status="released",
          title="KIP-516: a by-name client keeps state that belongs to the deleted topic",
          summary="A client that knows 'payments' only by name (Metadata v9, Fetch v12) is at offset 4 when the "
                  "topic is deleted and recreated. Its next fetch gets OFFSET_OUT_OF_RANGE; once the new topic "
                  "has grown past 4 the same fetch returns the new topic's record 4 as if nothing happened (the "
                  "records before it are skipped). The leader epoch restarts at 0, so it cannot tell the topics "
                  "apart; Metadata v9 looks the same before and after, and only Metadata v10+ shows that the "
                  "topic id changed.")
def stale_state(trace: Trace) -> None:
    admin, prod, cli = Wire(trace, "admin"), Wire(trace, "producer"), Wire(trace, "by-name-client")
    old_id = create_topic(trace, admin, "payments")
    produce(trace, prod, "payments", [b"p0", b"p1", b"p2", b"p3"])
    before9 = metadata(trace, cli, 9, name="payments")
    before12 = metadata(trace, cli, 12, name="payments")
    read = fetch(trace, cli, "payments", 0, leader_epoch=before9["leader_epoch"])
    trace.expect("the by-name client reads p0..p3 (Fetch v12)", read["values"] == [b"p0", b"p1", b"p2", b"p3"],
                 repr(read["values"]))
    position, epoch = 4, before9["leader_epoch"]

    delete_topic(trace, admin, "payments")
    new_id = create_topic(trace, admin, "payments")
    produce(trace, prod, "payments", [b"n0"])

    after9 = metadata(trace, cli, 9, name="payments")
    after12 = metadata(trace, cli, 12, name="payments")
    same = {k: before9[k] for k in ("error", "name", "partitions", "leader", "leader_epoch")} == \
        {k: after9[k] for k in ("error", "name", "partitions", "leader", "leader_epoch")}
    trace.expect("Metadata v9 (no topic ids) answers the same before and after the recreation", same,
                 f"{before9} / {after9}")
    trace.expect("Metadata v10+ exposes it: the topic id changed", before12["topic_id"] == old_id
                 and after12["topic_id"] == new_id and old_id != new_id,
                 f"{before12['topic_id']} -> {after12['topic_id']}")
    trace.expect("the new partition starts again at leader epoch 0 (here the old value too): the client's "
                 "CurrentLeaderEpoch passes, the epoch cannot tell the two topics apart",
                 after9["leader_epoch"] == epoch, f"{epoch} -> {after9['leader_epoch']}")

    oor = fetch(trace, cli, "payments", position, leader_epoch=epoch)
    trace.expect("Fetch by name at the old position 4: OFFSET_OUT_OF_RANGE (the new log ends at 1)",
                 oor["error"] == "OFFSET_OUT_OF_RANGE" and oor["high_watermark"] == 1,
                 f"{oor['error']} hw={oor['high_watermark']}")
    produce(trace, prod, "payments", [b"n1", b"n2", b"n3", b"n4"])
    wrong = fetch(trace, cli, "payments", position, leader_epoch=epoch)
    trace.expect("once the new topic passes offset 4, the same fetch returns NONE and the new topic's n4 "
                 "(n0..n3 are silently skipped)", wrong["error"] == "NONE" and wrong["values"] == [b"n4"],
                 f"{wrong['error']} {wrong['values']}")
    trace.result.update(old_topic_id=to_kafka_str(old_id), new_topic_id=to_kafka_str(new_id), position=position,
                        leader_epoch=epoch, first_error=oor["error"], then_read=[v.decode() for v in wrong["values"]],
                        skipped=["n0", "n1", "n2", "n3"])
    trace.find(f"A client that knows 'payments' only by name sits at offset {position} when the topic is "
               f"recreated: its next fetch is answered {oor['error']} (the new log ends at {oor['high_watermark']}), "
               f"and once the new topic passes offset {position} the same fetch returns "
               f"{', '.join(v.decode() for v in wrong['values'])} with {wrong['error']}, silently skipping n0..n3.",
               f"The by-name client (Metadata v9, Fetch v12) on payments-0: leader epoch {epoch} and the Metadata v9 "
               "answer look exactly as before, so only a Metadata v10+ caller can see that the topic id changed.",
               "KIP-516, motivation: only a topic id ensures that 'a newly created topic with a previously used "
               "name cannot be confused with a previous topic with that name'; Metadata v10 returns it "
               "('Public Interfaces': TopicDescription.topicId()).")


# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("kip516.delete_recreate_committed_offsets", kip=KIP, status="released",
          title="KIP-516: committed offsets when a topic is deleted and recreated",
          summary="Group 'analytics' commits offset 42 for 'clicks' (id A); the OffsetCommitValue v4 record "
                  "carries A. Deleting the topic removes the group's offsets (tombstones, onPartitionsDeleted), "
                  "and 'clicks' is recreated (id B). A late commit of offset 43 from a consumer still working on "
                  "the old topic is refused by id (OffsetCommit v10: UNKNOWN_TOPIC_ID), but by name (v9) the "
                  "broker cannot tell: it accepts it for B, stamps B on the record, and OffsetFetch returns the "
                  "stale 43 for a topic that has no records.")
def delete_recreate_committed_offsets(trace: Trace) -> None:
    admin, cons = Wire(trace, "admin"), Wire(trace, "consumer")
    group = "analytics"

    def commit(version: int, topic, offset: int) -> dict:
        key = {"TopicId": topic} if version >= 10 else {"Name": topic}
        body = cons("OffsetCommit", version, {
            "GroupId": group, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
            "Topics": [{**key, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": offset,
                                               "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]})
        return part_errors(body)

    def fetch_offset(version: int, topic) -> tuple[int, str]:
        key = {"TopicId": topic} if version >= 10 else {"Name": topic}
        body = cons("OffsetFetch", version, {"Groups": [{"GroupId": group, "MemberId": None, "MemberEpoch": -1,
                                                         "Topics": [{**key, "PartitionIndexes": [0]}]}],
                                             "RequireStable": True})
        g = body["Groups"][0]
        p = g["Topics"][0]["Partitions"][0]
        return p["CommittedOffset"], name_of(p["ErrorCode"] or g["ErrorCode"])

    a = create_topic(trace, admin, "clicks")
    mark = len(trace.events)
    trace.expect("OffsetCommit v9 by name: NONE", commit(9, "clicks", 42) == {("clicks", 0): "NONE"})
    (rec_a,) = offsets_records(trace, mark)
    trace.expect("the OffsetCommitValue v4 record carries topic id A",
                 rec_a["value_version"] == 4 and rec_a["value"]["topicId"] == a,
                 f"v{rec_a['value_version']} {rec_a['value']['topicId']}")

    mark = len(trace.events)
    delete_topic(trace, admin, "clicks")
    tombstones = [r for r in offsets_records(trace, mark) if r["tombstone"]]
    trace.expect("deleting the topic writes an OffsetCommit tombstone for the group's offset",
                 [r["key"] for r in tombstones] == [{"group": group, "topic": "clicks", "partition": 0}],
                 repr([r["key"] for r in tombstones]))
    b = create_topic(trace, admin, "clicks")
    trace.expect("the recreated topic has a new id B != A", a != b, f"{a} -> {b}")
    trace.expect("OffsetFetch v9 by name after the recreation: -1 (nothing committed)",
                 fetch_offset(9, "clicks") == (-1, "NONE"))
    trace.expect("OffsetFetch v10 by id B: -1", fetch_offset(10, b) == (-1, "NONE"))

    # a consumer that was still processing the old topic commits its position late
    mark = len(trace.events)
    late_by_id = commit(10, a, 43)
    trace.expect("late OffsetCommit v10 by the old id A: UNKNOWN_TOPIC_ID",
                 late_by_id == {(a, 0): "UNKNOWN_TOPIC_ID"}, repr(late_by_id))
    trace.expect("... and nothing is written to __consumer_offsets", offsets_records(trace, mark) == [])
    trace.expect("OffsetFetch v10 by id B still finds nothing", fetch_offset(10, b) == (-1, "NONE"))

    mark = len(trace.events)
    late_by_name = commit(9, "clicks", 43)
    trace.expect("the same late commit by name (v9): NONE, accepted for the new topic",
                 late_by_name == {("clicks", 0): "NONE"}, repr(late_by_name))
    (rec_b,) = offsets_records(trace, mark)
    trace.expect("its record carries B (the broker resolved the name), not the A the offset belongs to",
                 rec_b["value"]["topicId"] == b and rec_b["value"]["topicId"] != rec_a["value"]["topicId"],
                 f"{rec_a['value']['topicId']} vs {rec_b['value']['topicId']}")
    stale9, stale10 = fetch_offset(9, "clicks"), fetch_offset(10, b)
    log_end = trace.cluster.topics.partition("clicks", 0).log_end_offset
    trace.expect("OffsetFetch by name now returns the stale 43 for a topic whose log ends at 0",
                 stale9 == (43, "NONE") and log_end == 0, f"{stale9}, log end {log_end}")
    trace.expect("OffsetFetch v10 by B returns it too: once written under B, the id cannot help",
                 stale10 == (43, "NONE"), repr(stale10))
    trace.result.update(topic_id_a=to_kafka_str(a), topic_id_b=to_kafka_str(b), committed=42, late_offset=43,
                        record_topic_ids=ids(rec_a["value"]["topicId"], rec_b["value"]["topicId"]),
                        late_commit_by_id="UNKNOWN_TOPIC_ID", late_commit_by_name="NONE",
                        offset_fetch_by_name=stale9[0], new_topic_log_end=log_end)
    trace.find(f"A late commit of offset 43 for the deleted 'clicks' is refused by id (OffsetCommit v10: "
               f"{late_by_id[(a, 0)]}) but accepted by name (v9: {late_by_name[('clicks', 0)]}) and stamped with the "
               f"new topic's id, so OffsetFetch returns {stale9[0]} for a topic whose log ends at {log_end}.",
               "Group 'analytics' on clicks-0: its next consumer asks for offset 43 of a topic with no records, "
               "whether it fetches the offset by name or by the new id.",
               "KIP-516, 'Compatibility': calls by (topicName, partition) stay supported until clients move to ids, "
               "and by name the broker cannot tell the old topic from the new one; OffsetCommit carries ids only "
               "from v10 (2025), and a deletion removes the offsets (OffsetMetadataManager.java, "
               "onPartitionsDeleted).")


@scenario("kip516.ids_never_reused", kip=KIP, status="released",
          title="KIP-516: every creation of a name gets a new topic id",
          summary="'events' is created and deleted five times through CreateTopics/DeleteTopics. Every "
                  "creation returns a different id, none of them reserved (AAAAAAAAAAAAAAAAAAAAAA / ...AQ), each "
                  "22 characters of URL-safe base64 not starting with '-'. Every old id stays dead: Metadata, "
                  "DeleteTopics and Produce by an old id answer UNKNOWN_TOPIC_ID.")
def ids_never_reused(trace: Trace) -> None:
    admin, prod = Wire(trace, "admin"), Wire(trace, "producer")
    seen: list[uuid.UUID] = []
    for i in range(5):
        if i:
            delete_topic(trace, admin, "events")
        seen.append(create_topic(trace, admin, "events", 2))
    texts = ids(*seen)
    trace.expect("five creations, five distinct ids", len(set(seen)) == 5, ", ".join(texts))
    trace.expect("no id is reserved (ZERO_UUID, ONE_UUID)", not RESERVED & set(seen))
    trace.expect("every id is 22 characters of URL-safe base64, not starting with '-'",
                 all(len(t) == 22 and not t.startswith("-") for t in texts), ", ".join(texts))
    old, current = seen[:-1], seen[-1]
    md = [metadata(trace, admin, 12, topic_id=t)["error"] for t in old]
    trace.expect("Metadata v12 by every old id: UNKNOWN_TOPIC_ID", md == ["UNKNOWN_TOPIC_ID"] * 4, repr(md))
    trace.expect("Metadata v12 by name: the newest id",
                 metadata(trace, admin, 12, name="events")["topic_id"] == current)
    r = admin("DeleteTopics", 6, {"Topics": [{"Name": None, "TopicId": old[0]}], "TimeoutMs": 30000})
    code = name_of(r["Responses"][0]["ErrorCode"])
    trace.expect("DeleteTopics v6 by the first id: UNKNOWN_TOPIC_ID (it cannot delete the live topic)",
                 code == "UNKNOWN_TOPIC_ID" and trace.cluster.topics.get("events").topic_id == current, code)
    batch = write_batch([(None, b"late")], base_timestamp=trace.cluster.now)
    r = prod("Produce", 13, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 30000, "TopicData": [
        {"TopicId": old[-1], "PartitionData": [{"Index": 0, "Records": batch}]}]})
    code = name_of(r["Responses"][0]["PartitionResponses"][0]["ErrorCode"])
    trace.expect("Produce v13 by the previous id: UNKNOWN_TOPIC_ID, nothing written",
                 code == "UNKNOWN_TOPIC_ID" and trace.cluster.topics.partition("events", 0).log_end_offset == 0, code)
    trace.result.update(topic_ids=texts, current=to_kafka_str(current), old_id_errors=md)
    trace.find(f"Five creations of 'events' got five distinct topic ids ({texts[0]} ... {texts[-1]}), none reserved, "
               f"and every old id stays dead: Metadata, DeleteTopics and Produce by an old id all answer {'/'.join(sorted(set(md) | {code}))}.",
               "Any client or tool that kept an old id: it gets UNKNOWN_TOPIC_ID and cannot read, write or delete "
               "the live topic that now has the name.",
               "KIP-516, 'Proposed Changes': a random UUID is generated on topic creation and the all-zero UUID is "
               "reserved as null; Kafka's Uuid.java also reserves ONE_UUID and never hands either out.")
