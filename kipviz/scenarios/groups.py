"""Consumer groups: the KIP-848 protocol (member epochs, server-side assignment) and the classic one
(JoinGroup/SyncGroup generations).

    kip848.consumer_group_join_and_rebalance   two members, revocation before reassignment, stale epochs
    classic.join_sync_generations              generations, REBALANCE_IN_PROGRESS, the leader's assignment

The members are kipviz.clients.Consumer models; the few deliberately stale requests (a delayed
heartbeat or commit from an earlier epoch or generation) are sent as raw frames."""
from __future__ import annotations

from .. import codec
from ..clients import Consumer
from ..codec.fit import complete_body
from ..schema import events as ev
from ..schema.coordinators import GROUP_KEY
from ..schema.error_codes import name_of
from ..schema.topics import CONSUMER_OFFSETS
from . import Trace, scenario
from .transactions import collapse, error_names, responses, table_walk

TOPIC = "orders"
GROUP_848 = "orders-app"
GROUP_CLASSIC = "orders-app-classic"


def send_raw(trace: Trace, api: str, version: int, body: dict, client: str, group: str) -> dict | None:
    """A hand-built request to the group's coordinator; its decoded answer (None if held)."""
    c = trace.cluster
    frame = codec.encode_request(api, version, complete_body(api + "Request", version, body),
                                 correlation_id=9000 + len(c.events), client_id=client)
    out = c.handle(frame, broker=c.coordinator_broker(GROUP_KEY, group), client=client)
    return codec.decode_response(out, api, version)["body"] if out else None


def _partition_errors(body: dict) -> list[str]:
    return sorted({name_of(p["ErrorCode"]) for t in body["Topics"] for p in t["Partitions"]})


def _did(trace: Trace, client: str, kind: type[ev.ClientDid], since: int = 0) -> list:
    """The `kind` decisions of `client` since event `since`."""
    return [e for e in trace.events[since:] if isinstance(e, kind) and e.client == client]


# ---- KIP-848 ----------------------------------------------------------------------------------------------
# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("kip848.consumer_group_join_and_rebalance", title="KIP-848: members join, partitions move, stale "
          "epochs are fenced", kip="KIP-848", status="released",
          summary="Member 1 joins a consumer group with ConsumerGroupHeartbeat and gets all four partitions at "
                  "epoch 1. Member 2 joins: the group epoch moves to 2, the coordinator computes the new target, "
                  "member 1 must revoke two partitions before member 2 may have them. A delayed heartbeat and a "
                  "commit from member 1's old epoch are refused (FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH). "
                  "Member 2 then stops heartbeating: after the 45 s session timeout it is fenced, member 1 gets "
                  "everything, and member 2 rejoins at epoch 0.")
def consumer_group_join_and_rebalance(trace: Trace) -> None:
    c = trace.cluster
    c.create_topic(TOPIC, 4)
    everything = {(TOPIC, p) for p in range(4)}
    m1 = Consumer(c, GROUP_848, client_id="member-1", protocol="consumer")
    m1.subscribe([TOPIC])
    m1.poll()
    trace.expect("member 1 joins at epoch 0 and is answered with epoch 1 and all four partitions",
                 m1.member_epoch == 1 and m1.assignment() == everything,
                 f"epoch {m1.member_epoch}, {sorted(m1.assignment())}")
    joins = [e for e in trace.events if e.kind == "RequestReceived" and e.api == "ConsumerGroupHeartbeat"
             and e.client == "member-1"]
    trace.expect("the join carries MemberEpoch 0, the client-chosen member id, the subscription and an empty "
                 "TopicPartitions; the next heartbeat acknowledges the assignment",
                 len(joins) >= 2 and joins[0].body["MemberEpoch"] == 0 and joins[0].body["MemberId"] == m1.member_id
                 and joins[0].body["SubscribedTopicNames"] == [TOPIC] and joins[0].body["TopicPartitions"] == []
                 and len(joins[1].body["TopicPartitions"] or []) == 1,
                 f"{len(joins)} heartbeats")
    epoch1 = m1.member_epoch

    m2 = Consumer(c, GROUP_848, client_id="member-2", protocol="consumer")
    m2.subscribe([TOPIC])
    m2.poll()
    group = c.groups.groups[GROUP_848]
    trace.expect("member 2 joins: the group epoch becomes 2 and member 2 is at epoch 2 with nothing yet (its "
                 "partitions are still owned by member 1)",
                 group.group_epoch == 2 and m2.member_epoch == 2 and not m2.assignment(),
                 f"group epoch {group.group_epoch}, member 2 epoch {m2.member_epoch}, {sorted(m2.assignment())}")
    trace.expect("member 2 waits in UnreleasedPartitions; the group is Reconciling",
                 group.members[m2.member_id].state == "UnreleasedPartitions" and group.state == "Reconciling",
                 f"member 2 {group.members[m2.member_id].state}, group {group.state}")
    # an operator lists the stable groups now (kafka-consumer-groups.sh --list --state Stable)
    listed = {state: [(g["GroupId"], g["GroupState"]) for g in send_raw(
        trace, "ListGroups", 5, {"StatesFilter": [state] if state else [], "TypesFilter": []}, "admin",
        GROUP_848)["Groups"]] for state in ("Stable", None)}
    trace.expect("ListGroups with StatesFilter [Stable] leaves the Reconciling group out; unfiltered it is listed "
                 "as Reconciling", listed["Stable"] == [] and listed[None] == [(GROUP_848, "Reconciling")],
                 repr(listed))
    c.advance(c.config.group_consumer_heartbeat_interval_ms)
    mark = len(c.events)
    m1.poll()
    revoked = _did(trace, "member-1", ev.PartitionsRevoked, mark)
    trace.expect("at its next heartbeat member 1 learns it must revoke two partitions, acknowledges at once, "
                 "and moves to epoch 2",
                 len(revoked) == 1 and len(revoked[0].partitions) == 2 and m1.member_epoch == 2
                 and len(m1.assignment()) == 2, f"revoked {revoked}, epoch {m1.member_epoch}")
    member_walk = table_walk(trace, "consumer-member", f"{GROUP_848}/{m1.member_id}")
    trace.expect("member 1's walk: Stable -> UnrevokedPartitions -> Stable",
                 member_walk[-3:] == ["Stable", "UnrevokedPartitions", "Stable"], " -> ".join(member_walk))
    m2.poll()
    trace.expect("member 2's next heartbeat gets the released partitions: the two members split the topic",
                 m2.assignment() == everything - m1.assignment() and len(m2.assignment()) == 2
                 and group.state == "Stable", f"member 1 {sorted(m1.assignment())}, member 2 {sorted(m2.assignment())}")

    # requests from member 1's earlier life (epoch 1), delivered late
    tids = {c.topics.get(TOPIC).topic_id}
    stale_hb = send_raw(trace, "ConsumerGroupHeartbeat", 1, {
        "GroupId": GROUP_848, "MemberId": m1.member_id, "MemberEpoch": epoch1, "RebalanceTimeoutMs": -1,
        "TopicPartitions": [{"TopicId": t, "Partitions": [0, 1, 2, 3]} for t in tids]}, "member-1-delayed",
        GROUP_848)
    trace.expect("a delayed heartbeat with epoch 1 that still claims all four partitions: FENCED_MEMBER_EPOCH",
                 stale_hb is not None and name_of(stale_hb["ErrorCode"]) == "FENCED_MEMBER_EPOCH",
                 f"{name_of(stale_hb['ErrorCode']) if stale_hb else None}: {stale_hb and stale_hb['ErrorMessage']}")
    trace.expect("the delayed request changed nothing: member 1 is still at epoch 2",
                 group.members[m1.member_id].epoch == 2, "")
    stale_commit = send_raw(trace, "OffsetCommit", 10, {
        "GroupId": GROUP_848, "GenerationIdOrMemberEpoch": epoch1, "MemberId": m1.member_id,
        "Topics": [{"TopicId": c.topics.get(TOPIC).topic_id, "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": 0} for t, p in sorted(m1.assignment())]}]},
        "member-1-delayed", GROUP_848)
    trace.expect("an OffsetCommit v10 with the old epoch 1: STALE_MEMBER_EPOCH",
                 _partition_errors(stale_commit) == ["STALE_MEMBER_EPOCH"], f"{_partition_errors(stale_commit)}")
    committed = m1.commit({tp: 0 for tp in m1.assignment()})
    trace.expect("member 1's own commit carries epoch 2 and succeeds", bool(committed), f"{committed}")

    # member 2 goes silent; member 1 keeps heartbeating every 5 s
    mark = len(c.events)
    for _ in range(10):
        c.advance(c.config.group_consumer_heartbeat_interval_ms)
        m1.poll()
    trace.expect("after the 45 s session timeout member 2 is fenced and member 1 gets every partition",
                 m2.member_id not in group.members and m1.assignment() == everything and m1.member_epoch >= 3,
                 f"members {len(group.members)}, member 1 epoch {m1.member_epoch}, {sorted(m1.assignment())}")
    old_id = m2.member_id
    m2.poll()
    hb = responses(trace, "ConsumerGroupHeartbeat", "member-2")
    fenced = _did(trace, "member-2", ev.Fenced, mark)
    trace.expect("member 2 wakes up: its heartbeat is refused with UNKNOWN_MEMBER_ID, it drops its partitions "
                 "and rejoins at epoch 0 with the same member id",
                 bool(fenced) and fenced[0].error == "UNKNOWN_MEMBER_ID" and m2.member_id == old_id
                 and m2.member_epoch > 0 and any(error_names(e) == ["UNKNOWN_MEMBER_ID"] for e in hb),
                 f"{fenced[:1]}, now epoch {m2.member_epoch}")
    for _ in range(2):
        c.advance(c.config.group_consumer_heartbeat_interval_ms)
        m1.poll()
        m2.poll()
    trace.expect("the group converges again: two members, disjoint halves, both at the group epoch",
                 m1.assignment() | m2.assignment() == everything and not (m1.assignment() & m2.assignment())
                 and m1.member_epoch == m2.member_epoch == group.group_epoch and group.state == "Stable",
                 f"group epoch {group.group_epoch}, epochs {m1.member_epoch}/{m2.member_epoch}, state {group.state}")
    walk = table_walk(trace, "consumer-group", GROUP_848)
    trace.expect("the group went through Assigning and Reconciling and ended Stable",
                 {"Assigning", "Reconciling", "Stable"} <= set(walk) and walk[-1] == "Stable", " -> ".join(walk))
    trace.result.update(member_1=m1.member_id, member_2=m2.member_id, group_epoch=group.group_epoch,
                        group_walk=walk, listed_stable=listed["Stable"])
    hb_error = name_of(stale_hb["ErrorCode"]) if stale_hb else "no answer"
    trace.find(f"Two late requests from member 1's old epoch {epoch1} get different errors: the heartbeat "
               f"{hb_error}, the OffsetCommit v10 {', '.join(_partition_errors(stale_commit))}.",
               f"Member 1, through its delayed requests to the coordinator of '{GROUP_848}': a KIP-848 consumer "
               f"treats {hb_error} on a heartbeat as fenced (it drops its partitions and rejoins), but retries a "
               "STALE_MEMBER_EPOCH commit with its current epoch.",
               "The KIP-848 page ('OffsetCommit API', Request Handling) says a bad epoch returns FENCED_MEMBER_EPOCH; "
               "Kafka returns STALE_MEMBER_EPOCH there (ConsumerGroup.java, validateOffsetCommit) and "
               "FENCED_MEMBER_EPOCH only from ConsumerGroupHeartbeat (GroupMetadataManager.java).")
    trace.find(f"While member 2 waits for its partitions the group is Reconciling, and ListGroups filtered on "
               f"Stable leaves '{GROUP_848}' out ({len(listed['Stable'])} groups listed).",
               "An operator running kafka-consumer-groups.sh --list --state Stable: a busy, healthy group "
               "disappears from the list during every rebalance.",
               "Kafka's ConsumerGroup.java has the states Empty, Assigning, Reconciling, Stable and Dead, and "
               "listGroups matches the StatesFilter against them (GroupMetadataManager.java); the KIP-848 page's "
               "'ListGroups API' adds only the types filter and says nothing of this.")


# ---- classic -------------------------------------------------------------------------------------------
# size: a scenario is one story told step by step; split, the order of its steps would be lost
@scenario("classic.join_sync_generations", title="Classic protocol: JoinGroup, SyncGroup and generations",
          kip=None, status="released",
          summary="Member 1 joins (MEMBER_ID_REQUIRED, then JoinGroup again), leads generation 1 and sends the "
                  "range assignment in SyncGroup. Member 2's JoinGroup is held by the coordinator until member 1 "
                  "learns from its Heartbeat that a rebalance is in progress (REBALANCE_IN_PROGRESS) and rejoins: "
                  "generation 2, new assignment. A commit with generation 1 is refused (ILLEGAL_GENERATION); when "
                  "member 2 leaves, generation 3 gives member 1 everything.")
def join_sync_generations(trace: Trace) -> None:
    c = trace.cluster
    c.create_topic(TOPIC, 4)
    everything = {(TOPIC, p) for p in range(4)}
    m1 = Consumer(c, GROUP_CLASSIC, client_id="member-1", protocol="classic")
    m1.subscribe([TOPIC])
    m1.poll()
    joins = responses(trace, "JoinGroup", "member-1")
    trace.expect("the first JoinGroup (v4+) is answered MEMBER_ID_REQUIRED with a member id; the second joins",
                 [error_names(e)[0] for e in joins] == ["MEMBER_ID_REQUIRED", "NONE"],
                 " then ".join(error_names(e)[0] for e in joins))
    trace.expect("member 1 leads generation 1 and assigns itself all four partitions",
                 m1.generation == 1 and m1.assignment() == everything and m1.state == "STABLE",
                 f"generation {m1.generation}, {sorted(m1.assignment())}")
    m2 = Consumer(c, GROUP_CLASSIC, client_id="member-2", protocol="classic")
    m2.subscribe([TOPIC])
    m2.poll()
    group = c.groups.groups[GROUP_CLASSIC]
    trace.expect("member 2's JoinGroup is held (no answer yet); the group is PreparingRebalance",
                 m2.state == "JOINING" and m2.held_requests == ["JoinGroup"] and group.state == "PreparingRebalance",
                 f"member 2 {m2.state}, group {group.state}")
    c.advance(m1.heartbeat_interval_ms)
    mark = len(c.events)
    m1.poll()
    beats = [e for e in trace.events[mark:] if e.kind == "ResponseSent" and e.api == "Heartbeat"
             and e.client == "member-1"]
    trace.expect("member 1's Heartbeat answers REBALANCE_IN_PROGRESS, so it rejoins",
                 bool(beats) and error_names(beats[0]) == ["REBALANCE_IN_PROGRESS"],
                 f"{[error_names(e) for e in beats]}")
    trace.expect("the rejoin completes generation 2; member 1 is still the leader and keeps half",
                 m1.generation == 2 and len(m1.assignment()) == 2 and group.leader == m1.member_id,
                 f"generation {m1.generation}, {sorted(m1.assignment())}")
    m2.poll()
    trace.expect("member 2 collects its held JoinGroup answer (generation 2), syncs and gets the other half",
                 m2.generation == 2 and m2.assignment() == everything - m1.assignment() and m2.state == "STABLE",
                 f"generation {m2.generation}, {sorted(m2.assignment())}")
    syncs = [e for e in trace.events if e.kind == "RequestReceived" and e.api == "SyncGroup"]
    leader_sync = [e for e in syncs if e.client == "member-1" and e.body["GenerationId"] == 2]
    trace.expect("only the leader's SyncGroup carries the assignments (one per member)",
                 len(leader_sync) == 1 and len(leader_sync[0].body["Assignments"]) == 2
                 and all(not e.body["Assignments"] for e in syncs if e.client == "member-2"),
                 f"{len(syncs)} SyncGroup requests")
    stale = send_raw(trace, "OffsetCommit", 9, {
        "GroupId": GROUP_CLASSIC, "GenerationIdOrMemberEpoch": 1, "MemberId": m1.member_id,
        "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": p, "CommittedOffset": 0}
                                                  for _, p in sorted(m1.assignment())]}]},
        "member-1-delayed", GROUP_CLASSIC)
    trace.expect("an OffsetCommit from generation 1: ILLEGAL_GENERATION",
                 _partition_errors(stale) == ["ILLEGAL_GENERATION"], f"{_partition_errors(stale)}")
    trace.expect("member 1's own commit carries generation 2 and succeeds",
                 bool(m1.commit({tp: 0 for tp in m1.assignment()})), "")
    m2.close()
    leave = responses(trace, "LeaveGroup", "member-2")
    trace.expect("member 2 leaves with LeaveGroup", bool(leave) and error_names(leave[-1]) == ["NONE"], "")
    c.advance(m1.heartbeat_interval_ms)
    m1.poll()
    trace.expect("member 1 rejoins after the leave: generation 3 with all four partitions",
                 m1.generation == 3 and m1.assignment() == everything, f"generation {m1.generation}")
    walk = table_walk(trace, "classic-group", GROUP_CLASSIC)
    expected = ["Empty"] + ["PreparingRebalance", "CompletingRebalance", "Stable"] * 3
    trace.expect("the group walk: Empty, then PreparingRebalance -> CompletingRebalance -> Stable for each "
                 "generation", walk == expected, " -> ".join(walk))
    gens = collapse(e.record["value"]["generation"] for e in trace.events
                    if e.kind == "RecordAppended" and e.topic == CONSUMER_OFFSETS
                    and e.record.get("record") == "GroupMetadata" and e.record.get("value"))
    trace.expect("a GroupMetadata record in __consumer_offsets for every generation", gens == [1, 2, 3], f"{gens}")
    trace.result.update(member_1=m1.member_id, member_2=m2.member_id, generations=gens, group_walk=walk)
    trace.find(f"Every new member stops the group: member 1's Heartbeat is answered "
               f"{error_names(beats[0])[0] if beats else 'nothing'}, it must rejoin, and a commit from the old "
               f"generation 1 is refused with {', '.join(_partition_errors(stale))}; the group went through "
               f"{len(gens)} generations for two members.",
               f"Member 1 (client member-1) of '{GROUP_CLASSIC}': it stops consuming until the rebalance completes, "
               "and any offsets it commits late for orders-0..3 are lost.",
               "Kafka's classic protocol (ClassicGroup.java, validateOffsetCommit): a generation that is not "
               "the group's is ILLEGAL_GENERATION; KIP-848 replaces this stop-the-world rebalance with "
               "per-member epochs.")
