"""KIP-1319 (TxnOffsetCommit v6, released in Kafka 4.4: docs/facts.md): each error case at v5 and at v6, the
producer's version choice and fallback, the persisted topic id, and the producer's error classes.

    kip1319.group_id_not_found_v5 / _v6    missing group, generation >= 0: ILLEGAL_GENERATION / GROUP_ID_NOT_FOUND
    kip1319.stale_member_epoch_v5 / _v6    KIP-848 member with an old epoch: ILLEGAL_GENERATION / STALE_MEMBER_EPOCH
    kip1319.unknown_topic_id_v6            an id the broker cannot resolve: UNKNOWN_TOPIC_ID for the whole topic
    kip1319.error_order_v6                 unknown id, then TOPIC_AUTHORIZATION_FAILED, then
                                           UNKNOWN_TOPIC_OR_PARTITION for one partition only
    kip1319.fallback_old_broker            a Kafka 4.3 broker (TxnOffsetCommit up to v5) and a 4.4 producer: v5
    kip1319.fallback_unknown_topic_id      no topic ids from Metadata: v5 for the whole request
    kip1319.topic_id_persisted             v6 writes the real topic id into OffsetCommitValue v4, v5 the zero id
    kip1319.producer_error_classes         GROUP_ID_NOT_FOUND / STALE_MEMBER_EPOCH abortable, UNKNOWN_TOPIC_ID
                                           retriable (the partition is re-enqueued)

The transactional flows run the producer model (kipviz.clients.producer.Producer: its decisions
are typed ClientDid events); where the point is the broker's answer a hand-built frame is sent
(kipviz.scenarios.kip516.Wire). What the broker answered is read back from the ResponseSent
events, so every check is about bytes that went over the (simulated) wire."""
from __future__ import annotations

import uuid

from ..broker import Acl
from ..clients import AbortableError, CommitFailedError, Producer, classify_txn_offset_commit_error
from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY
from ..schema.error_codes import CODE, name_of
from ..schema.topics import CONSUMER_OFFSETS
from ..uuids import ZERO_UUID, to_kafka_str
from . import Finding, Trace, scenario
from .kip516 import Wire, newest, offsets_records, part_errors

KIP = "KIP-1319"
PRE_KIP = {"TxnOffsetCommit": 5}      # a producer from before KIP-1319 stops at v5


# ---- helpers ---------------------------------------------------------------------------------------------
def txn_offset_commits(trace: Trace, since: int = 0) -> list[dict]:
    """Every TxnOffsetCommit answer since event `since`: version, topics sent, errors by (topic, partition)."""
    sent = {}
    out = []
    for e in trace.events[since:]:
        if e.kind == "RequestReceived" and e.api == "TxnOffsetCommit":
            sent[(e.client, e.correlation_id)] = e.body
        elif e.kind == "ResponseSent" and e.api == "TxnOffsetCommit":
            body = sent.get((e.client, e.correlation_id), {})
            out.append({"version": e.version, "client": e.client, "request": body, "errors": part_errors(e.body),
                        "topics": [t.get("TopicId") if e.version >= 6 else t.get("Name") for t in e.body["Topics"]]})
    return out


def decisions(trace: Trace, kind: type[ev.ClientDid], since: int = 0) -> list:
    """The clients' `kind` decisions since event `since`."""
    return [e for e in trace.events[since:] if isinstance(e, kind)]


def start(trace: Trace, transactional_id: str = "tx-app", *, partitions: int = 2, **producer_kw) -> Producer:
    """Topics 'in' (read) and 'out' (written), a producer in a transaction that has written one record."""
    c = trace.cluster
    for name, n in (("in", partitions), ("out", 1)):
        if c.topics.get(name) is None:
            c.create_topic(name, n)
    p = Producer(c, transactional_id, client_id=producer_kw.pop("client_id", "producer"), **producer_kw)
    p.init_transactions()
    p.begin_transaction()
    p.send("out", b"k", b"processed")
    return p


def send_offsets(p: Producer, offsets: dict, gm: dict) -> str:
    """send_offsets_to_transaction; the Kafka error name it raised ("NONE" if it succeeded)."""
    try:
        p.send_offsets_to_transaction(offsets, gm)
    except AbortableError as e:
        return e.error
    return "NONE"


def consumer_group(trace: Trace, group: str = "cg") -> dict:
    """A KIP-848 consumer group on 'in' built from ConsumerGroupHeartbeat frames: member m1 joins
    (epoch 1, both partitions), m2 joins (group epoch 2), m1 gives up a partition and moves to
    epoch 2. Returns m1's id and its epochs before and after."""
    v = newest(trace, "ConsumerGroupHeartbeat")
    tid = trace.cluster.topics.get("in").topic_id
    members = [str(uuid.UUID(int=trace.cluster.rng.getrandbits(128), version=4)) for _ in range(2)]

    def hb(client, member, epoch, owned=None, join=False, why="joins"):
        w = Wire(trace, client)
        body = {"GroupId": group, "MemberId": member, "MemberEpoch": epoch, "InstanceId": None, "RackId": None,
                "RebalanceTimeoutMs": 30000 if join else -1, "SubscribedTopicNames": ["in"] if join else None,
                "SubscribedTopicRegex": None, "ServerAssignor": None, "TopicPartitions": [] if join else owned}
        r = w("ConsumerGroupHeartbeat", v, body, broker=trace.cluster.coordinator_broker(GROUP_KEY, group))
        trace.expect(f"ConsumerGroupHeartbeat v{v}: {client} {why} (epoch {epoch} -> {r['MemberEpoch']}): NONE",
                     r["ErrorCode"] == 0, name_of(r["ErrorCode"]))
        return r
    r1 = hb("consumer-1", members[0], 0, join=True)
    old_epoch = r1["MemberEpoch"]
    owned = r1["Assignment"]["TopicPartitions"]
    hb("consumer-2", members[1], 0, join=True)
    r = hb("consumer-1", members[0], old_epoch, owned=owned, why="is told to give up a partition")
    kept = r["Assignment"]["TopicPartitions"] if r["Assignment"] else owned
    r = hb("consumer-1", members[0], r["MemberEpoch"], owned=kept, why="has revoked it")
    new_epoch = r["MemberEpoch"]
    trace.expect("m1's member epoch moved on while its producer still holds the old one",
                 new_epoch > old_epoch, f"{old_epoch} -> {new_epoch}")
    return {"group_id": group, "member_id": members[0], "old_epoch": old_epoch, "new_epoch": new_epoch,
            "topic_id": tid}


def one_answer(trace: Trace, since: int, version: int, error: str, what: str) -> dict:
    answers = txn_offset_commits(trace, since)
    got = [(a["version"], sorted(set(a["errors"].values()))) for a in answers]
    trace.expect(f"TxnOffsetCommit v{version} answered {error} on every partition ({what})",
                 len(answers) == 1 and got[0] == (version, [error]), repr(got))
    return answers[0] if answers else {}


# ---- group errors at v5 and v6 ---------------------------------------------------------------------------
def _group_id_not_found(trace: Trace, version: int) -> None:
    p = start(trace, client_versions=PRE_KIP if version == 5 else None)
    mark = len(trace.events)
    gm = {"group_id": "no-such-group", "generation_id": 3, "member_id": "consumer-1-m", "group_instance_id": None}
    raised = send_offsets(p, {("in", 0): 10, ("in", 1): 20}, gm)
    expected = "ILLEGAL_GENERATION" if version == 5 else "GROUP_ID_NOT_FOUND"
    answer = one_answer(trace, mark, version, expected, "the group does not exist, generation 3")
    trace.expect(f"the producer raised CommitFailedError({expected}), an abortable error",
                 raised == expected and isinstance(p.last_error, CommitFailedError) and p.state == "ABORTABLE_ERROR",
                 f"{raised} {type(p.last_error).__name__} {p.state}")
    raised_as = type(p.last_error).__name__
    p.abort_transaction()
    trace.expect("abort_transaction: the producer is READY again", p.state == "READY", p.state)
    trace.expect("no group was created", trace.cluster.groups.group_state("no-such-group") is None)
    if version >= 6:
        trace.find(f"At v6 the broker answers {raised} for offsets sent to a group that does not exist (v5 said "
                   f"ILLEGAL_GENERATION); the producer raises {raised_as} and, once the "
                   f"transaction is aborted, is {p.state} again.",
                   f"The application (transactional id {p.transactional_id}): an abortable error that names the real mistake; "
                   "no group 'no-such-group' is created.",
                   "KIP-1319: TxnOffsetCommit v6 returns GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH as they are, "
                   "and the producer maps both to an abortable CommitFailedException (apache/kafka PR #22239).")
    trace.result.update(version=version, error=expected, producer_state_after=p.state,
                        request_topics=[to_kafka_str(t) if isinstance(t, uuid.UUID) else t
                                        for t in answer.get("topics", [])])


@scenario("kip1319.group_id_not_found_v5", kip=KIP, status="released",
          findings=(Finding("At v5 the broker answers ILLEGAL_GENERATION for both a missing group and a stale member "
                             "epoch: the producer cannot tell which mistake it made.",
                             "The application (a CommitFailedError) and whoever reads its logs.",
                             "KIP-1319: v6 returns GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH as they are; v0-5 keep "
                             "the old mapping for old clients."),),
          title="TxnOffsetCommit v5: a missing group is reported as ILLEGAL_GENERATION",
          summary="A producer capped at v5 sends offsets for a group that does not exist, with generation 3. "
                  "The broker keeps the pre-KIP-1319 mapping: ILLEGAL_GENERATION. The producer raises "
                  "CommitFailedError and aborts.")
def group_id_not_found_v5(trace: Trace) -> None:
    _group_id_not_found(trace, 5)


@scenario("kip1319.group_id_not_found_v6", kip=KIP, status="released",
          title="TxnOffsetCommit v6: a missing group is GROUP_ID_NOT_FOUND",
          summary="The same offsets at v6 (topic ids): the broker returns GROUP_ID_NOT_FOUND as it is. The "
                  "producer treats it as abortable (CommitFailedError) and aborts.")
def group_id_not_found_v6(trace: Trace) -> None:
    _group_id_not_found(trace, 6)


def _stale_member_epoch(trace: Trace, version: int) -> None:
    p = start(trace, client_versions=PRE_KIP if version == 5 else None)
    g = consumer_group(trace)
    mark = len(trace.events)
    gm = {"group_id": g["group_id"], "member_epoch": g["old_epoch"], "member_id": g["member_id"],
          "group_instance_id": None}
    raised = send_offsets(p, {("in", 0): 10}, gm)
    expected = "ILLEGAL_GENERATION" if version == 5 else "STALE_MEMBER_EPOCH"
    one_answer(trace, mark, version, expected, f"member epoch {g['old_epoch']}, current {g['new_epoch']}")
    trace.expect(f"the producer raised CommitFailedError({expected}) and is in ABORTABLE_ERROR",
                 raised == expected and p.state == "ABORTABLE_ERROR", f"{raised} {p.state}")
    p.abort_transaction()
    # the application re-reads its group metadata and processes again
    p.begin_transaction()
    p.send("out", b"k", b"processed again")
    mark = len(trace.events)
    ok = send_offsets(p, {("in", 0): 10}, {**gm, "member_epoch": g["new_epoch"]})
    trace.expect(f"with the current epoch {g['new_epoch']} the offsets are committed (NONE)", ok == "NONE", ok)
    p.commit_transaction()
    committed = trace.cluster.groups.committed(g["group_id"], "in", 0)
    trace.expect("after the commit the group's offset for in-0 is 10", committed is not None and committed.offset == 10)
    if version >= 6:
        trace.find(f"Consumer m1 moved from member epoch {g['old_epoch']} to {g['new_epoch']}; its producer's "
                   f"TxnOffsetCommit v6 with the old epoch is answered {raised}, the producer aborts, and with epoch "
                   f"{g['new_epoch']} the offsets commit ({ok}).",
                   f"The application (transactional id {p.transactional_id}, group {g['group_id']}): "
                   f"CommitFailedError({raised}) tells it to take consumer.groupMetadata() again and process the "
                   "records again.",
                   "KIP-1319 (v6 returns STALE_MEMBER_EPOCH as it is); the group coordinator requires the exact "
                   "member epoch (ConsumerGroup.java, validateOffsetCommit).")
    trace.result.update(version=version, error=expected, member_id=g["member_id"], stale_epoch=g["old_epoch"],
                        current_epoch=g["new_epoch"], retry_versions=[a["version"] for a in
                                                                      txn_offset_commits(trace, mark)])


@scenario("kip1319.stale_member_epoch_v5", kip=KIP, status="released",
          findings=(Finding("At v5 the broker answers ILLEGAL_GENERATION for both a missing group and a stale member "
                             "epoch: the producer cannot tell which mistake it made.",
                             "The application (a CommitFailedError) and whoever reads its logs.",
                             "KIP-1319: v6 returns GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH as they are; v0-5 keep "
                             "the old mapping for old clients."),),
          title="TxnOffsetCommit v5: a stale KIP-848 member epoch is reported as ILLEGAL_GENERATION",
          summary="Consumer m1 of a KIP-848 group moves from epoch 1 to 2 when m2 joins; its producer (capped "
                  "at v5) still sends epoch 1. The broker maps STALE_MEMBER_EPOCH to ILLEGAL_GENERATION. The "
                  "producer aborts, and with epoch 2 the offsets go through.")
def stale_member_epoch_v5(trace: Trace) -> None:
    _stale_member_epoch(trace, 5)


@scenario("kip1319.stale_member_epoch_v6", kip=KIP, status="released",
          title="TxnOffsetCommit v6: a stale KIP-848 member epoch is STALE_MEMBER_EPOCH",
          summary="The same stale epoch at v6: the broker returns STALE_MEMBER_EPOCH as it is. The producer "
                  "aborts (abortable CommitFailedError), and with the current epoch the offsets go through.")
def stale_member_epoch_v6(trace: Trace) -> None:
    _stale_member_epoch(trace, 6)


# ---- topic ids -----------------------------------------------------------------------------------------
def _txn_commit_frame(w: Wire, p: Producer, version: int, topics: list[dict], group: str = "g") -> dict:
    return w("TxnOffsetCommit", version, {
        "TransactionalId": p.transactional_id, "GroupId": group, "ProducerId": p.producer_id,
        "ProducerEpoch": p.producer_epoch, "GenerationIdOrMemberEpoch": -1, "MemberId": "",
        "GroupInstanceId": None, "Topics": topics}, broker=w.cluster.coordinator_broker(GROUP_KEY, group))


def _parts(*indexes: int, offset: int = 7) -> list[dict]:
    return [{"PartitionIndex": i, "CommittedOffset": offset, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}
            for i in indexes]


@scenario("kip1319.unknown_topic_id_v6", kip=KIP, status="released",
          title="TxnOffsetCommit v6: an id the broker cannot resolve is UNKNOWN_TOPIC_ID",
          summary="'in' is deleted and recreated while a transaction is open. A v6 frame naming the old topic id "
                  "gets UNKNOWN_TOPIC_ID on both partitions (the whole topic), and the answer echoes that id. "
                  "The same offsets by name (v5) go through for the new topic, which is the hazard v6 closes. "
                  "With the new id, v6 succeeds.")
def unknown_topic_id_v6(trace: Trace) -> None:
    p = start(trace)
    c = trace.cluster
    old = c.topics.get("in").topic_id
    c.delete_topic("in")
    new = c.create_topic("in", 2)
    w = Wire(trace, p.client_id)
    r6 = _txn_commit_frame(w, p, 6, [{"TopicId": old, "Partitions": _parts(0, 1)}])
    trace.expect("v6 by the deleted topic's id: UNKNOWN_TOPIC_ID for every partition of the topic",
                 part_errors(r6) == {(old, 0): "UNKNOWN_TOPIC_ID", (old, 1): "UNKNOWN_TOPIC_ID"},
                 repr(part_errors(r6)))
    trace.expect("the v6 answer names the topic by the id that was sent (no name)",
                 [t["TopicId"] for t in r6["Topics"]] == [old] and "Name" not in r6["Topics"][0])
    mark = len(trace.events)
    r5 = _txn_commit_frame(w, p, 5, [{"Name": "in", "Partitions": _parts(0, 1)}])
    trace.expect("v5 by name: NONE, the old topic's offsets are taken for the new topic",
                 set(part_errors(r5).values()) == {"NONE"}, repr(part_errors(r5)))
    recs = offsets_records(trace, mark)
    trace.expect("... written with the zero topic id (the v0-5 path)",
                 len(recs) == 2 and {r["value"]["topicId"] for r in recs} == {ZERO_UUID})
    r6b = _txn_commit_frame(w, p, 6, [{"TopicId": new, "Partitions": _parts(0, 1, offset=0)}])
    trace.expect("v6 by the new id: NONE", set(part_errors(r6b).values()) == {"NONE"}, repr(part_errors(r6b)))
    p.abort_transaction()
    trace.expect("the transaction is aborted: nothing was committed for the group",
                 c.groups.committed("g", "in", 0) is None)
    trace.result.update(old_topic_id=to_kafka_str(old), new_topic_id=to_kafka_str(new),
                        v6_old_id="UNKNOWN_TOPIC_ID", v5_by_name="NONE", v6_new_id="NONE")
    trace.find(f"After 'in' is deleted and recreated, TxnOffsetCommit v6 by the old topic id is answered "
               f"{'/'.join(sorted(set(part_errors(r6).values())))} on in-0 and in-1, while the same offsets by name at "
               f"v5 are answered {'/'.join(sorted(set(part_errors(r5).values())))} and written for the new topic with "
               "the zero topic id.",
               f"A producer (transactional id {p.transactional_id}) holding the old id: a retriable UNKNOWN_TOPIC_ID, then a metadata "
               "refresh; a producer that commits by name gets no error and hands the old topic's offsets to the "
               "new one.",
               "KIP-1319: v6 resolves the topic id and returns UNKNOWN_TOPIC_ID when it cannot; v0-5 resolve the "
               "name, which cannot tell a recreated topic from the old one (KafkaApis.scala, "
               "handleTxnOffsetCommitRequest).")


APP = "User:app"


@scenario("kip1319.error_order_v6", kip=KIP, status="released",
          title="TxnOffsetCommit v6: unknown id, then authorization, then unknown partition",
          summary="One v6 request, four topics, with ACLs: the deleted incarnation of 'secret' gets "
                  "UNKNOWN_TOPIC_ID (the id is resolved before any ACL check); live 'secret', which User:app "
                  "may not read, gets TOPIC_AUTHORIZATION_FAILED on every partition, even one that does not "
                  "exist; 'orders' gets UNKNOWN_TOPIC_OR_PARTITION for partition 7 only, partition 0 commits. "
                  "At v5, by name, the ACL comes first: a missing topic User:app may not read is "
                  "TOPIC_AUTHORIZATION_FAILED, one it may read UNKNOWN_TOPIC_OR_PARTITION.",
          acls=[Acl(APP, "TRANSACTIONAL_ID", "*", "ALL"), Acl(APP, "GROUP", "*", "ALL"),
                Acl(APP, "TOPIC", "orders", "ALL"), Acl(APP, "TOPIC", "out", "ALL"), Acl(APP, "TOPIC", "in", "ALL"),
                Acl(APP, "TOPIC", "ghost", "ALL"),
                Acl(APP, "TOPIC", "secret", "READ", allow=False)])
def error_order_v6(trace: Trace) -> None:
    c = trace.cluster
    c.create_topic("orders", 2)
    gone = c.create_topic("secret", 1)
    c.delete_topic("secret")
    secret = c.create_topic("secret", 1)
    p = start(trace, principal=APP)
    w = Wire(trace, p.client_id, principal=APP)
    orders = c.topics.get("orders").topic_id
    r = _txn_commit_frame(w, p, 6, [{"TopicId": gone, "Partitions": _parts(0, 1)},
                                    {"TopicId": secret, "Partitions": _parts(0, 9)},
                                    {"TopicId": orders, "Partitions": _parts(0, 7)}])
    got = part_errors(r)
    trace.expect("1. the id no topic has any more: UNKNOWN_TOPIC_ID for all its partitions (not an ACL error)",
                 got[(gone, 0)] == got[(gone, 1)] == "UNKNOWN_TOPIC_ID", repr(got))
    trace.expect("2. a topic User:app may not read: TOPIC_AUTHORIZATION_FAILED for all its partitions, "
                 "including the non-existent 9",
                 got[(secret, 0)] == got[(secret, 9)] == "TOPIC_AUTHORIZATION_FAILED", repr(got))
    trace.expect("3. a partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION for that partition only",
                 got[(orders, 7)] == "UNKNOWN_TOPIC_OR_PARTITION" and got[(orders, 0)] == "NONE", repr(got))
    r5 = _txn_commit_frame(w, p, 5, [{"Name": "ghost", "Partitions": _parts(0)},
                                     {"Name": "hidden", "Partitions": _parts(0)},
                                     {"Name": "secret", "Partitions": _parts(0)},
                                     {"Name": "orders", "Partitions": _parts(0, 7)}])
    got5 = part_errors(r5)
    trace.expect("v5 by name: a missing topic User:app may read is UNKNOWN_TOPIC_OR_PARTITION (no "
                 "UNKNOWN_TOPIC_ID before v6)", got5.get(("ghost", 0)) == "UNKNOWN_TOPIC_OR_PARTITION", repr(got5))
    trace.expect("v5 by name: the ACL is checked before existence, so a missing topic User:app may not read "
                 "is TOPIC_AUTHORIZATION_FAILED (its existence is not disclosed)",
                 got5.get(("hidden", 0)) == got5.get(("secret", 0)) == "TOPIC_AUTHORIZATION_FAILED", repr(got5))
    trace.expect("v5 by name: orders-7 UNKNOWN_TOPIC_OR_PARTITION, orders-0 NONE",
                 got5.get(("orders", 7)) == "UNKNOWN_TOPIC_OR_PARTITION" and got5.get(("orders", 0)) == "NONE",
                 repr(got5))
    p.abort_transaction()
    trace.find(f"One v6 request gets four different answers: the deleted id of 'secret' {got[(gone, 0)]} (before any "
               f"ACL check), the unreadable live 'secret' {got[(secret, 0)]} even for its non-existent partition 9, "
               f"orders-7 {got[(orders, 7)]} and orders-0 {got[(orders, 0)]}; at v5, by name, a missing topic "
               f"User:app may not read is {got5.get(('hidden', 0))}.",
               "User:app's producer: the order of the checks decides which problem it is told about, and by name it "
               "never learns whether a topic it may not read exists.",
               "KIP-1319: v6 resolves the ids first (UNKNOWN_TOPIC_ID), then authorizes by name, then checks the "
               "partitions; v0-5 authorize before existence (KafkaApis.scala, handleTxnOffsetCommitRequest).")
    trace.result.update(v6={f"{k[0] if isinstance(k[0], str) else to_kafka_str(k[0])}-{k[1]}": v
                            for k, v in got.items()},
                        v5={f"{k[0]}-{k[1]}": v for k, v in got5.items()},
                        ids={"secret (deleted)": to_kafka_str(gone), "secret": to_kafka_str(secret),
                             "orders": to_kafka_str(orders)})


# ---- the producer's version choice ------------------------------------------------------------------------
def _offsets_flow(trace: Trace) -> tuple[Producer, list[dict]]:
    p = start(trace)
    trace.cluster.create_topic("clicks", 1)
    mark = len(trace.events)
    gm = {"group_id": "g", "generation_id": -1, "member_id": "", "group_instance_id": None}
    ok = send_offsets(p, {("in", 0): 5, ("in", 1): 6, ("clicks", 0): 1}, gm)
    trace.expect("send_offsets_to_transaction succeeds", ok == "NONE", ok)
    p.commit_transaction()
    trace.expect("the transaction commits and the offsets are visible",
                 [getattr(trace.cluster.groups.committed("g", t, q), "offset", None)
                  for t, q in (("in", 0), ("in", 1), ("clicks", 0))] == [5, 6, 1])
    return p, txn_offset_commits(trace, mark)


def _api_versions_max(trace: Trace, api: str) -> int | None:
    from ..schema import registry
    key = registry.api_key(registry.get(api + "Request"))
    for e in trace.events:     # the answer the client negotiated with (an UNSUPPORTED_VERSION one lists only ApiVersions)
        if e.kind == "ResponseSent" and e.api == "ApiVersions" and not e.body["ErrorCode"]:
            return next((k["MaxVersion"] for k in e.body["ApiKeys"] if k["ApiKey"] == key), None)
    return None


@scenario("kip1319.fallback_old_broker", kip=KIP, status="released", release="4.3",
          title="A Kafka 4.4 producer against a Kafka 4.3 broker: v5 for the whole request",
          summary="The mixed fleet of a rolling upgrade: the broker (release 4.3) advertises TxnOffsetCommit up "
                  "to v5. The 4.4 producer (KIP-1319) knows the topic ids but sends the whole request at v5, by "
                  "name, and it commits normally. Any 4.0-4.3 broker answers the same way.")
def fallback_old_broker(trace: Trace) -> None:
    p, answers = _offsets_flow(trace)
    top = _api_versions_max(trace, "TxnOffsetCommit")
    trace.expect("ApiVersions: the broker serves TxnOffsetCommit up to v5", top == 5, str(top))
    trace.expect("one TxnOffsetCommit v5 carrying both topics by name",
                 [(a["version"], sorted(a["topics"])) for a in answers] == [(5, ["clicks", "in"])],
                 repr([(a["version"], a["topics"]) for a in answers]))
    chosen = decisions(trace, ev.TxnOffsetCommitVersionChosen)
    trace.expect("the producer's decision (TxnOffsetCommitVersionChosen): v5 because the broker serves up to v5",
                 chosen and chosen[-1].version == 5 and "v5" in chosen[-1].reason, repr(chosen))
    trace.expect("the producer knew the topic ids (Metadata v10+), yet did not use them",
                 all(p.topic_info(t)["id"] is not None for t in ("in", "clicks")))
    trace.result.update(broker_max=top, version_sent=5, reason=chosen[-1].reason if chosen else None)
    trace.find(f"Against a Kafka 4.3 broker (TxnOffsetCommit up to v{top}) the 4.4 producer sends the whole request at "
               f"v{answers[0]['version'] if answers else '?'} by name although it knows every topic id, so the "
               "by-name hazard of a recreated topic stays open there.",
               "Applications during a rolling upgrade: nothing fails and nothing says so; the offsets are stored "
               "with the zero topic id until every broker serves v6.",
               "KIP-1319, compatibility: the producer uses v6 only when the broker advertises it and otherwise "
               "sends v5 (TransactionManager.java); brokers 4.0-4.3 stop at v5.")


@scenario("kip1319.fallback_unknown_topic_id", kip=KIP, status="released", api_versions={"Metadata": (0, 9)},
          title="KIP-1319 producer without topic ids: v5 for the whole request",
          summary="The broker serves TxnOffsetCommit v6 but answers Metadata only up to v9, so the producer "
                  "learns no topic ids. The request is all-or-nothing: v5, by name, for every topic. The KIP "
                  "expects this never to happen with KRaft, which always assigns ids.")
def fallback_unknown_topic_id(trace: Trace) -> None:
    p, answers = _offsets_flow(trace)
    top = _api_versions_max(trace, "TxnOffsetCommit")
    trace.expect("ApiVersions: the broker serves TxnOffsetCommit v6", top == 6, str(top))
    trace.expect("one TxnOffsetCommit v5 carrying both topics by name",
                 [(a["version"], sorted(a["topics"])) for a in answers] == [(5, ["clicks", "in"])],
                 repr([(a["version"], a["topics"]) for a in answers]))
    fallback = [{"version": e.version, "reason": e.reason, "topics": list(e.topics)}
                for e in decisions(trace, ev.TxnOffsetCommitFallback)]
    trace.expect("the producer's decision (TxnOffsetCommitFallback): fall back to v5, topic id unknown for clicks and in",
                 fallback == [{"version": 5, "reason": "topic id unknown", "topics": ["clicks", "in"]}],
                 repr(fallback))
    trace.result.update(broker_max=top, version_sent=5, fallback=fallback[0] if fallback else None)
    trace.find(f"The broker serves TxnOffsetCommit v{top}, but the producer learned no topic ids (Metadata only up to "
               f"v9), so it sends {', '.join(fallback[0]['topics']) if fallback else 'every topic'} at "
               f"v{answers[0]['version'] if answers else '?'} by name: one unknown id costs the whole request its ids.",
               "The application sees nothing; the offsets are written with the zero topic id, as before KIP-1319.",
               "KIP-1319: the request is all-or-nothing, v5 whenever a topic's id is unknown; the page expects this "
               "never to happen with KRaft, which always assigns topic ids.")


@scenario("kip1319.topic_id_persisted", kip=KIP, status="released",
          title="KIP-1319: v6 persists the real topic id, v5 the zero id",
          summary="Two producers commit offsets for 'in', one at v6 and one capped at v5. Decoding their "
                  "__consumer_offsets records: both are OffsetCommitValue v4; the v6 one carries the topic id "
                  "in its tagged field, the v5 one carries ZERO_UUID (the tag is not written at all).")
def topic_id_persisted(trace: Trace) -> None:
    tid = trace.cluster.create_topic("in", 2)
    gm = {"group_id": "g", "generation_id": -1, "member_id": "", "group_instance_id": None}
    got = {}
    for version, txid, part in ((6, "tx-v6", 0), (5, "tx-v5", 1)):
        p = start(trace, txid, client_id=f"producer-v{version}",
                  client_versions=PRE_KIP if version == 5 else None)
        mark = len(trace.events)
        ok = send_offsets(p, {("in", part): 100 + version}, gm)
        p.commit_transaction()
        (rec,) = [r for r in offsets_records(trace, mark) if not r["tombstone"]]
        sent = [a["version"] for a in txn_offset_commits(trace, mark)]
        trace.expect(f"{txid}: TxnOffsetCommit v{version} succeeds", ok == "NONE" and sent == [version],
                     f"{ok} {sent}")
        got[version] = rec
    v6, v5 = got[6], got[5]
    trace.expect("both records are OffsetCommitValue v4, transactional, key {group, topic, partition}",
                 v6["value_version"] == v5["value_version"] == 4 and v6["transactional"] and v5["transactional"]
                 and v6["key"] == {"group": "g", "topic": "in", "partition": 0})
    trace.expect("v6: the record carries the topic's real id", v6["value"]["topicId"] == tid,
                 str(v6["value"]["topicId"]))
    trace.expect("v5: the record carries ZERO_UUID", v5["value"]["topicId"] == ZERO_UUID, str(v5["value"]["topicId"]))
    raw = {e.value: e for e in trace.events if e.kind == "RecordAppended" and e.topic == CONSUMER_OFFSETS}
    sizes = sorted((len(v), v) for v in raw if v is not None and tid.bytes in v)
    trace.expect("the id's 16 bytes are in the v6 record's value; the v5 value has no tagged field",
                 len(sizes) == 1, f"{len(sizes)} value(s) hold the id")
    trace.result.update(topic_id=to_kafka_str(tid), v6_record_topic_id=to_kafka_str(v6["value"]["topicId"]),
                        v5_record_topic_id=to_kafka_str(v5["value"]["topicId"]),
                        committed={"in-0": 106, "in-1": 105})
    trace.find(f"Both offsets records are OffsetCommitValue v{v6['value_version']}, but only the v6 commit's carries the "
               f"topic id ({to_kafka_str(v6['value']['topicId'])}); the v5 commit's carries "
               f"{to_kafka_str(v5['value']['topicId'])} (ZERO_UUID), so nothing tells which incarnation of 'in' its "
               "offset belongs to.",
               "Anyone reading __consumer_offsets (the group coordinator after a delete and recreate, "
               "kafka-dump-log.sh): a v5 commit's record names the topic, never its incarnation.",
               "KIP-1319: before v6 the transactional path wrote Uuid.ZERO_UUID (OffsetMetadataManager.java, "
               "commitTransactionalOffset); v6 persists the real id (KAFKA-20444, apache/kafka PR #22249).")


# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("kip1319.producer_error_classes", kip=KIP, status="released",
          title="KIP-1319 producer: GROUP_ID_NOT_FOUND / STALE_MEMBER_EPOCH abort, UNKNOWN_TOPIC_ID retries",
          summary="How the producer treats the three v6 errors. GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH raise "
                  "CommitFailedError: abortable, the application aborts and carries on (before KIP-1319 the "
                  "client found them unexpected and fatal). UNKNOWN_TOPIC_ID (a cached id of a recreated topic) "
                  "is retriable: the partition stays pending, metadata is refreshed and the request is sent "
                  "again with the new id.")
def producer_error_classes(trace: Trace) -> None:
    classes = {n: classify_txn_offset_commit_error(CODE[n])
               for n in ("GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID",
                         "UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION")}
    trace.expect("GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH are commit-failed (abortable), like "
                 "ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID",
                 {classes[n] for n in ("GROUP_ID_NOT_FOUND", "STALE_MEMBER_EPOCH", "ILLEGAL_GENERATION",
                                       "UNKNOWN_MEMBER_ID")} == {"commit-failed"}, repr(classes))
    trace.expect("UNKNOWN_TOPIC_ID is retriable, like UNKNOWN_TOPIC_OR_PARTITION",
                 classes["UNKNOWN_TOPIC_ID"] == classes["UNKNOWN_TOPIC_OR_PARTITION"] == "retriable", repr(classes))

    p = start(trace)
    g = consumer_group(trace)
    seen = {}
    for error, gm in (("GROUP_ID_NOT_FOUND", {"group_id": "no-such-group", "generation_id": 1, "member_id": "m"}),
                      ("STALE_MEMBER_EPOCH", {"group_id": g["group_id"], "member_epoch": g["old_epoch"],
                                              "member_id": g["member_id"]})):
        raised = send_offsets(p, {("in", 0): 1}, gm)
        commit_refused = False
        try:
            p.commit_transaction()
        except AbortableError:
            commit_refused = True
        trace.expect(f"{error}: CommitFailedError, state ABORTABLE_ERROR, commit_transaction refused",
                     raised == error and isinstance(p.last_error, CommitFailedError)
                     and p.state == "ABORTABLE_ERROR" and commit_refused, f"{raised} {p.state}")
        p.abort_transaction()
        trace.expect(f"{error}: after abort_transaction the producer carries on (READY)", p.state == "READY")
        seen[error] = raised
        p.begin_transaction()
        p.send("out", b"k", b"again")

    # UNKNOWN_TOPIC_ID: the producer cached the id of 'in', then 'in' is recreated
    c = trace.cluster
    old = p.topic_info("in")["id"]
    c.delete_topic("in")
    new = c.create_topic("in", 2)
    mark = len(trace.events)
    ok = send_offsets(p, {("in", 1): 77}, {"group_id": "g", "generation_id": -1, "member_id": ""})
    answers = txn_offset_commits(trace, mark)
    trace.expect("first attempt: v6 with the cached (old) id -> UNKNOWN_TOPIC_ID; retried with the new id -> NONE",
                 [(a["version"], a["topics"], sorted(set(a["errors"].values()))) for a in answers]
                 == [(6, [old], ["UNKNOWN_TOPIC_ID"]), (6, [new], ["NONE"])],
                 repr([(a["version"], a["topics"], a["errors"]) for a in answers]))
    retries = decisions(trace, ev.Retried, mark)
    trace.expect("the producer logged a retry for UNKNOWN_TOPIC_ID (partition re-enqueued) and stayed in the "
                 "transaction", [r.error for r in retries] == ["UNKNOWN_TOPIC_ID"] and ok == "NONE"
                 and p.state == "IN_TRANSACTION", f"{retries} {ok} {p.state}")
    p.commit_transaction()
    trace.expect("the transaction commits; the group's offset for in-1 is 77",
                 getattr(c.groups.committed("g", "in", 1), "offset", None) == 77)
    trace.find(f"The producer treats {' and '.join(seen)} as abortable (CommitFailedError: abort and carry on) and "
               f"UNKNOWN_TOPIC_ID as {classes['UNKNOWN_TOPIC_ID']}: the cached id of the recreated 'in' was answered "
               f"{'/'.join(sorted(set(answers[0]['errors'].values()))) if answers else '?'} and the retry with the new "
               f"id {'/'.join(sorted(set(answers[-1]['errors'].values()))) if answers else '?'}.",
               "The application: GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH no longer kill the producer (before "
               "KIP-1319 a client found them unexpected and fatal), and UNKNOWN_TOPIC_ID never reaches it.",
               "KIP-1319 and its client change (apache/kafka PR #22239): the four group errors map to "
               "CommitFailedException, UNKNOWN_TOPIC_ID re-enqueues the partition after a metadata refresh "
               "(TransactionManager.java).")
    trace.result.update(classes=classes, raised=seen, stale_topic_id=to_kafka_str(old),
                        new_topic_id=to_kafka_str(new), retries=[r.error for r in retries])
