"""KIP-516 on the broker side (the KIP-516 page): LeaderAndIsr with topic ids and its Type, the
partition.metadata file, stale logs moved to deletion, deletion without waiting for every replica,
migration of logs written before ids, and StopReplica, which never got a topic id.

    kip516.broker_stale_state           the page's 'Stale state': a new id for a name moves the old log
                                        to deletion (proposed: never shipped)
    kip516.broker_stale_state_released  the same run on a shipped 2.8-3.9 broker: INCONSISTENT_TOPIC_ID,
                                        the stale log stays
    kip516.full_leader_and_isr          the page's FULL LeaderAndIsr reconciles what INCREMENTAL does not
    kip516.delete_without_waiting       delete and recreate while a replica is offline (the page's point)
    kip516.migration                    logs from before topic ids get an id and a partition.metadata file
    kip516.stop_replica_by_name         a retried StopReplica (by name) deletes the recreated topic's replica

The scenario plays the ZooKeeper controller: every LeaderAndIsr and StopReplica is a real frame
answered by cluster.handle. These RPCs were removed with ZooKeeper in Kafka 4.0, so the scenarios
turn them on (ClusterConfig.api_versions): the brokers play a 2.8-3.9 ZooKeeper-mode broker for them.
What the broker does is kipviz/broker/replicas.py, its transitions kipviz/broker/tables/replica.py."""
from __future__ import annotations

import uuid

from ..schema import events as ev
from ..schema.error_codes import name_of
from ..uuids import ZERO_UUID, to_kafka_str
from . import Trace, scenario
from .kip516 import Wire, create_topic, delete_topic, fetch, produce

KIP = "KIP-516"
ZK_BROKER = {"brokers": 3, "api_versions": {"LeaderAndIsr": (2, 7), "StopReplica": (0, 4)}}
INCREMENTAL, FULL = 1, 2


class Controller:
    """The ZooKeeper controller's side: LeaderAndIsr and StopReplica frames to one broker at a time."""

    def __init__(self, trace: Trace, epoch: int = 1):
        self.trace = trace
        self.wire = Wire(trace, "controller")
        self.epoch = epoch

    def leader_and_isr(self, broker: int, topics: list[tuple], *, kind: int = INCREMENTAL,
                       version: int = 7) -> dict | None:
        """topics: (name, topic id or None, leader, leader epoch, replicas) for partition 0 each.
        {(name, partition): error name}, or None when the broker did not answer."""
        states = [{"TopicName": name, "TopicId": tid or ZERO_UUID, "PartitionStates": [{
            "PartitionIndex": 0, "ControllerEpoch": self.epoch, "Leader": leader, "LeaderEpoch": epoch,
            "Isr": list(replicas), "PartitionEpoch": epoch, "Replicas": list(replicas), "AddingReplicas": [],
            "RemovingReplicas": [], "IsNew": False, "LeaderRecoveryState": 0}]}
            for name, tid, leader, epoch, replicas in topics]
        body = self.wire("LeaderAndIsr", version, {
            "ControllerId": 0, "isKRaftController": False, "ControllerEpoch": self.epoch, "BrokerEpoch": -1,
            "Type": kind, "TopicStates": states,
            "LiveLeaders": [{"BrokerId": b, "HostName": f"broker-{b}", "Port": 9092}
                            for b in sorted({t[2] for t in topics})]}, broker=broker)
        if body is None:
            return None
        if version < 5:
            return {(p["TopicName"], p["PartitionIndex"]): name_of(p["ErrorCode"]) for p in body["PartitionErrors"]}
        names = {tid or ZERO_UUID: name for name, tid, *_ in topics}
        return {(names.get(t["TopicId"], to_kafka_str(t["TopicId"])), p["PartitionIndex"]): name_of(p["ErrorCode"])
                for t in body["Topics"] for p in t["PartitionErrors"]}

    def stop_replica(self, broker: int, name: str, *, delete: bool = True, leader_epoch: int = -2) -> dict | None:
        """StopReplica v4 for partition 0 of `name` (-2: the epoch the controller uses during deletion)."""
        body = self.wire("StopReplica", 4, {
            "ControllerId": 0, "isKRaftController": False, "ControllerEpoch": self.epoch, "BrokerEpoch": -1,
            "TopicStates": [{"TopicName": name, "PartitionStates": [
                {"PartitionIndex": 0, "LeaderEpoch": leader_epoch, "DeletePartition": delete}]}]}, broker=broker)
        if body is None:
            return None
        return {(p["TopicName"], p["PartitionIndex"]): name_of(p["ErrorCode"]) for p in body["PartitionErrors"]}


def _log(trace: Trace, broker: int, topic: str):
    return trace.cluster.replicas.replica(broker, topic, 0)


def _old_log(trace: Trace, broker: int, topic_id: uuid.UUID):
    rm = trace.cluster.replicas
    return next((lg for lg in rm.deleting + rm.deleted if lg.broker == broker and lg.topic_id == topic_id), None)


def _pm(topic_id: uuid.UUID) -> str:
    return f"version: 0\ntopic_id: {to_kafka_str(topic_id)}"


# ---- stale state ------------------------------------------------------------------------------------------
# size: one story told step by step for both behaviours (the page's and the shipped broker's), branching only where they differ
def _stale_state(trace: Trace, behaviour: str) -> None:
    trace.cluster.replicas.behaviour = behaviour
    admin, prod, ctl = Wire(trace, "admin"), Wire(trace, "producer"), Controller(trace)
    old = create_topic(trace, admin, "orders")
    produce(trace, prod, "orders", [b"a0", b"a1", b"a2"])
    for b in (0, 1):
        r = ctl.leader_and_isr(b, [("orders", old, 0, 0, [0, 1])])
        trace.expect(f"LeaderAndIsr v7 (INCREMENTAL, id A) to broker {b}: NONE", r == {("orders", 0): "NONE"}, repr(r))
    trace.expect("both replicas write partition.metadata 'version: 0 / topic_id: A'",
                 all(_log(trace, b, "orders").partition_metadata == _pm(old) for b in (0, 1)))

    trace.cluster.crash_broker(1)
    delete_topic(trace, admin, "orders")
    gone = ctl.stop_replica(1, "orders")
    trace.expect("broker 1 is down: its StopReplica gets no answer", gone is None)
    trace.expect("broker 0 moves its log to deletion on StopReplica",
                 ctl.stop_replica(0, "orders") == {("orders", 0): "NONE"} and _log(trace, 0, "orders") is None)
    new = create_topic(trace, admin, "orders")
    produce(trace, prod, "orders", [b"b0", b"b1"])
    trace.cluster.restart_broker(1)
    trace.expect("broker 1 restarts still holding orders-0 of id A (it missed the StopReplica)",
                 _log(trace, 1, "orders").topic_id == old and _log(trace, 1, "orders").log_end_offset == 3)

    r0 = ctl.leader_and_isr(0, [("orders", new, 0, 0, [0, 1])])
    trace.expect("LeaderAndIsr (id B) to broker 0: NONE, a new log", r0 == {("orders", 0): "NONE"}, repr(r0))
    mark = len(trace.events)
    r1 = ctl.leader_and_isr(1, [("orders", new, 0, 0, [0, 1])])
    stale = _old_log(trace, 1, old)
    if behaviour == "page":
        trace.expect("LeaderAndIsr (INCREMENTAL, id B) to broker 1, which holds id A: NONE",
                     r1 == {("orders", 0): "NONE"}, repr(r1))
        trace.expect("the old log is closed and moved to log.dir/deleting/{A}_0, deletion in 4 hours",
                     stale is not None and stale.dir == f"deleting/{to_kafka_str(old)}_0"
                     and stale.state == "Deleting" and stale.delete_at == trace.cluster.now + 4 * 3600_000,
                     repr(stale and stale.view()))
        warn = [e for e in trace.events[mark:] if isinstance(e, ev.ReplicaLogDeletionScheduled) and e.broker == 1]
        trace.expect("the broker logs a WARN line naming the partition and its deletion time",
                     stale is not None
                     and [(e.topic, e.partition, e.delete_at) for e in warn] == [("orders", 0, stale.delete_at)])
        fresh = _log(trace, 1, "orders")
        trace.expect("a new log for id B, its partition.metadata names B",
                     fresh is not None and fresh.topic_id == new and fresh.partition_metadata == _pm(new))
        trace.cluster.advance(4 * 3600_000)
        trace.expect("4 hours later the old log is removed from disk", stale.state == "Deleted")
    else:
        trace.expect("LeaderAndIsr (id B) to broker 1, which holds id A: INCONSISTENT_TOPIC_ID",
                     r1 == {("orders", 0): "INCONSISTENT_TOPIC_ID"}, repr(r1))
        kept = _log(trace, 1, "orders")
        trace.expect("nothing is moved to deletion: the stale log of id A stays, partition.metadata still names A",
                     stale is None and kept.topic_id == old and kept.partition_metadata == _pm(old)
                     and kept.state == "Online")
        trace.cluster.advance(4 * 3600_000)
        trace.expect("hours later it is still there (a ZooKeeper controller would not have let the name be "
                     "recreated before broker 1 acknowledged the deletion)", _log(trace, 1, "orders") is kept)
    reader = fetch(trace, Wire(trace, "consumer"), new, 0)
    trace.expect("the new topic reads b0, b1 by id B from 0", reader["values"] == [b"b0", b"b1"], repr(reader))
    trace.result.update(behaviour=behaviour, old_topic_id=to_kafka_str(old), new_topic_id=to_kafka_str(new),
                        broker1_answer=r1[("orders", 0)], stale_dir=stale.dir if stale else None,
                        partition_metadata=_log(trace, 1, "orders").partition_metadata)
    if behaviour == "page":
        trace.find(f"Broker 1 missed the StopReplica of 'orders' while it was down; when LeaderAndIsr brings it "
                   f"the new topic id B for orders-0 it answers {r1[('orders', 0)]}, closes the log of id A and moves "
                   f"it to {stale.dir if stale else '(nowhere)'}, removed 4 hours later.",
                   "An operator of broker 1: one WARN line names orders-0 and the deletion time; producers and "
                   "consumers of the new 'orders' see nothing.",
                   "KIP-516, 'Immediate delete scenarios / Stale state' (as written, never shipped): 'we will close "
                   "the Log for A_p0_id0, and move A_p0_id0 to the deleting directory'.")
    else:
        trace.find(f"A shipped ZooKeeper-mode broker answers LeaderAndIsr with the new id B for a log of id A with "
                   f"{r1[('orders', 0)]}: broker 1 does not become a replica of the new orders-0 and the stale log "
                   "stays on its disk, partition.metadata still naming A.",
                   "The controller (the answer is keyed by topic id) and an operator of broker 1, who must remove "
                   "the stale log by hand; the page's automatic clean-up does not happen.",
                   "KIP-516 as shipped (2.8-3.9): ReplicaManager.becomeLeaderOrFollower (ReplicaManager.scala) "
                   "refuses a mismatched id with INCONSISTENT_TOPIC_ID; shipped ZooKeeper controllers never reused "
                   "a name before every replica acknowledged the deletion.")


@scenario("kip516.broker_stale_state", kip=KIP, status="proposed", **ZK_BROKER,
          title="KIP-516 as written: a replica moves a stale log to deletion on a new topic id",
          summary="The page's 'Stale state' (never shipped): broker 1 holds orders-0 of topic id A and misses "
                  "the StopReplica of its deletion (it is down). 'orders' is recreated as id B. When broker 1 "
                  "receives LeaderAndIsr (INCREMENTAL) with id B for the name it holds, it closes the log of A, "
                  "logs a WARN line, moves it to log.dir/deleting/{A}_0 (removed 4 hours later), creates the "
                  "log of B and writes partition.metadata with B. Shipped brokers refuse instead: see "
                  "kip516.broker_stale_state_released.")
def broker_stale_state(trace: Trace) -> None:
    _stale_state(trace, "page")


@scenario("kip516.broker_stale_state_released", kip=KIP, status="released", **ZK_BROKER,
          title="KIP-516 as shipped (2.8-3.9, ZooKeeper mode): a new topic id is refused with INCONSISTENT_TOPIC_ID",
          summary="The same run as kip516.broker_stale_state on a shipped ZooKeeper-mode broker "
                  "(ReplicaManager.becomeLeaderOrFollower): LeaderAndIsr v7 with id B for a log of id A answers "
                  "INCONSISTENT_TOPIC_ID (the response is keyed by the topic id) and the stale log stays with its "
                  "partition.metadata naming A. Shipped ZooKeeper controllers never let this happen: they wait for "
                  "every replica before a name can be reused. LeaderAndIsr was removed in 4.0.")
def broker_stale_state_released(trace: Trace) -> None:
    _stale_state(trace, "released")


# ---- FULL vs INCREMENTAL ------------------------------------------------------------------------------------
@scenario("kip516.full_leader_and_isr", kip=KIP, status="proposed", **ZK_BROKER,
          title="KIP-516 as written: a FULL LeaderAndIsr reconciles the broker's disk, an INCREMENTAL one does not",
          summary="Broker 2 holds 'audit' (id A) and 'billing' (id B). While it is down, 'audit' is deleted and "
                  "'billing' deleted and recreated (id C). An INCREMENTAL LeaderAndIsr for a third topic leaves "
                  "both stale logs alone (it does not promise to list everything). A FULL one listing billing "
                  "(id C) and the third topic stages 'audit' for deletion (not listed) and the old 'billing' "
                  "(another id), as the page says. Never shipped: ZooKeeper controllers sent Type 0.")
def full_leader_and_isr(trace: Trace) -> None:
    trace.cluster.replicas.behaviour = "page"
    admin, ctl = Wire(trace, "admin"), Controller(trace)
    a, b = create_topic(trace, admin, "audit"), create_topic(trace, admin, "billing")
    r = ctl.leader_and_isr(2, [("audit", a, 0, 0, [0, 2]), ("billing", b, 0, 0, [0, 2])])
    trace.expect("broker 2 becomes a follower of audit and billing", r == {("audit", 0): "NONE", ("billing", 0): "NONE"},
                 repr(r))
    trace.cluster.crash_broker(2)
    delete_topic(trace, admin, "audit")
    delete_topic(trace, admin, "billing")
    c = create_topic(trace, admin, "billing")
    extra = create_topic(trace, admin, "clicks")
    trace.cluster.restart_broker(2)
    r = ctl.leader_and_isr(2, [("clicks", extra, 0, 0, [0, 2])], kind=INCREMENTAL)
    trace.expect("INCREMENTAL LeaderAndIsr for clicks: NONE", r == {("clicks", 0): "NONE"}, repr(r))
    trace.expect("... and the stale audit and billing logs are untouched",
                 _log(trace, 2, "audit").topic_id == a and _log(trace, 2, "billing").topic_id == b)
    ctl.epoch += 1          # a new controller: its first request to every broker is FULL
    # clicks: its leader moved meanwhile (epoch 1); at an unchanged epoch Kafka answers STALE_CONTROLLER_EPOCH
    r = ctl.leader_and_isr(2, [("billing", c, 0, 0, [0, 2]), ("clicks", extra, 0, 1, [0, 2])], kind=FULL)
    trace.expect("FULL LeaderAndIsr (billing id C, clicks): NONE for both",
                 r == {("billing", 0): "NONE", ("clicks", 0): "NONE"}, repr(r))
    audit, billing = _old_log(trace, 2, a), _old_log(trace, 2, b)
    trace.expect("audit (not in the FULL request) is staged for deletion",
                 audit is not None and audit.state == "Deleting" and _log(trace, 2, "audit") is None)
    trace.expect("the old billing (id B, the request says C) is staged for deletion; a log of C replaces it",
                 billing is not None and billing.state == "Deleting" and _log(trace, 2, "billing").topic_id == c)
    causes = [e.cause for e in trace.events if e.kind == "StateChanged" and e.machine == "replica"
              and e.to_state == "Deleting"]
    trace.expect("one deletion for each of the page's two kinds of stale partition",
                 sorted(causes) == ["absent-from-full", "stale-topic-id"], repr(causes))
    trace.result.update(deleted_dirs=sorted(lg.dir for lg in (audit, billing) if lg), causes=sorted(causes))
    trace.find("An INCREMENTAL LeaderAndIsr left the stale logs of the deleted 'audit' and the old 'billing' on "
               f"broker 2; only the FULL one staged them for deletion ({', '.join(sorted(causes))}).",
               "An operator of broker 2: disk space held by deleted topics until a controller sends a FULL "
               "request, which shipped ZooKeeper controllers never did.",
               "KIP-516, 'Protocol Changes' (LeaderAndIsr Type) and its 4-hour delay setting: a FULL request "
               "stages every partition it does not list for deletion; shipped controllers sent Type 0 "
               "(LeaderAndIsrRequest.json), so this never ran.")


# ---- deletion without waiting -----------------------------------------------------------------------------------
@scenario("kip516.delete_without_waiting", kip=KIP, status="proposed", **ZK_BROKER,
          title="KIP-516 as written: a topic is deleted and its name reused while a replica is offline",
          summary="'events' has replicas on brokers 0, 1 and 2; broker 2 is down. DeleteTopics answers NONE at "
                  "once; the controller's StopReplica reaches brokers 0 and 1, broker 2 does not answer. The name "
                  "is recreated (new id) and used right away. When broker 2 comes back, the controller's first "
                  "(FULL) LeaderAndIsr carries the new id: broker 2 moves its stale log to deletion itself. Before "
                  "topic ids a ZooKeeper controller kept the topic 'being deleted' until broker 2 answered, and "
                  "shipped ZooKeeper controllers still did; deletion without waiting came with KRaft.")
def delete_without_waiting(trace: Trace) -> None:
    trace.cluster.replicas.behaviour = "page"
    admin, prod, ctl = Wire(trace, "admin"), Wire(trace, "producer"), Controller(trace)
    old = create_topic(trace, admin, "events")
    produce(trace, prod, "events", [b"e0", b"e1"])
    for b in (0, 1, 2):
        ctl.leader_and_isr(b, [("events", old, 0, 0, [0, 1, 2])])
    trace.expect("three replicas, each with partition.metadata of the first id",
                 all(_log(trace, b, "events").partition_metadata == _pm(old) for b in (0, 1, 2)))
    trace.cluster.crash_broker(2)
    delete_topic(trace, admin, "events")
    answers = {b: ctl.stop_replica(b, "events") for b in (0, 1, 2)}
    trace.expect("StopReplica: brokers 0 and 1 answer NONE, broker 2 nothing",
                 answers == {0: {("events", 0): "NONE"}, 1: {("events", 0): "NONE"}, 2: None}, repr(answers))
    new = create_topic(trace, admin, "events")
    trace.expect("the name is recreated at once with a new id, broker 2 still down",
                 new != old and 2 in trace.cluster.down)
    produce(trace, prod, "events", [b"n0"])
    read = fetch(trace, Wire(trace, "consumer"), new, 0)
    trace.expect("the new topic is in use by id before broker 2 returns", read["values"] == [b"n0"], repr(read))
    for b in (0, 1):
        ctl.leader_and_isr(b, [("events", new, 0, 0, [0, 1, 2])])
    trace.cluster.restart_broker(2)
    ctl.epoch += 1
    r = ctl.leader_and_isr(2, [("events", new, 0, 0, [0, 1, 2])], kind=FULL)
    stale = _old_log(trace, 2, old)
    trace.expect("broker 2's first LeaderAndIsr (FULL, new id): NONE; its stale log moves to deletion",
                 r == {("events", 0): "NONE"} and stale is not None and stale.state == "Deleting", repr(r))
    trace.expect("every replica now holds the new id",
                 all(_log(trace, b, "events").topic_id == new for b in (0, 1, 2)))
    deleting = [lg.dir for lg in trace.cluster.replicas.deleting]
    trace.result.update(old_topic_id=to_kafka_str(old), new_topic_id=to_kafka_str(new), deleting=deleting,
                        stop_replica_answered=[b for b, a in answers.items() if a is not None])
    trace.find(f"DeleteTopics succeeded while broker 2 was down (StopReplica answered by brokers "
               f"{', '.join(str(b) for b, a in answers.items() if a is not None)} only); 'events' was recreated and "
               f"used at once, and broker 2's first FULL LeaderAndIsr moved its own stale log to {stale.dir}.",
               "Producers and consumers of 'events': no outage while broker 2 is down, where a ZooKeeper controller "
               "would have kept the name 'being deleted'; an operator of broker 2 finds the stale log staged for "
               "deletion.",
               "KIP-516, 'Protocol Changes' on immediate deletion: 'the topic is considered deleted, and a topic "
               "with the same name can be created'; shipped ZooKeeper controllers still waited "
               "(TopicDeletionManager.scala) and deletion without waiting came with KRaft.")


# ---- migration -------------------------------------------------------------------------------------------------
@scenario("kip516.migration", kip=KIP, status="released", **ZK_BROKER,
          no_findings="Migration works as the page and Kafka 2.8 describe; nothing goes wrong, the checks show each "
                      "step.",
          title="KIP-516 migration: logs written before topic ids get an id and a partition.metadata file",
          summary="Brokers 0 and 1 hold 'legacy' from before topic ids (no partition.metadata). A LeaderAndIsr "
                  "v4 (an inter-broker protocol before 2.8) changes nothing. The controller assigns the topic an "
                  "id and sends LeaderAndIsr v5+: broker 0 at the same leader epoch assigns it "
                  "(log.assignTopicId), broker 1 on a leader epoch bump; both write 'version: 0 / topic_id: "
                  "<id>' and keep their records. Released in 2.8, removed with ZooKeeper mode in 4.0.")
def migration(trace: Trace) -> None:
    admin, prod, ctl = Wire(trace, "admin"), Wire(trace, "producer"), Controller(trace)
    tid = create_topic(trace, admin, "legacy")
    produce(trace, prod, "legacy", [b"l0", b"l1"])
    rm = trace.cluster.replicas
    for b in (0, 1):
        rm.seed_log(b, "legacy")
    trace.expect("two logs without partition.metadata", all(_log(trace, b, "legacy").partition_metadata is None
                                                             for b in (0, 1)))
    r = ctl.leader_and_isr(0, [("legacy", None, 0, 0, [0, 1])], version=4)
    trace.expect("LeaderAndIsr v4 (no topic ids): NONE, still no partition.metadata",
                 r == {("legacy", 0): "NONE"} and _log(trace, 0, "legacy").partition_metadata is None, repr(r))
    r = ctl.leader_and_isr(0, [("legacy", tid, 0, 0, [0, 1])], version=5)
    log0 = _log(trace, 0, "legacy")
    trace.expect("LeaderAndIsr v5 with the id at the same leader epoch: NONE, the id is assigned",
                 r == {("legacy", 0): "NONE"} and log0.topic_id == tid, repr(r))
    trace.expect("partition.metadata is written as Kafka writes it", log0.partition_metadata == _pm(tid),
                 repr(log0.partition_metadata))
    r = ctl.leader_and_isr(1, [("legacy", tid, 0, 1, [0, 1])], version=7)
    log1 = _log(trace, 1, "legacy")
    trace.expect("broker 1 (leader epoch 1, v7): NONE, migrated the same way",
                 r == {("legacy", 0): "NONE"} and log1.partition_metadata == _pm(tid), repr(r))
    trace.expect("the records stay: both logs end at 2", log0.log_end_offset == 2 and log1.log_end_offset == 2)
    moves = [(e.from_state, e.to_state) for e in trace.events if e.kind == "StateChanged" and e.machine == "replica"]
    trace.expect("each log: Absent -> NoTopicId -> Online", moves.count(("NoTopicId", "Online")) == 2, repr(moves))
    trace.result.update(topic_id=to_kafka_str(tid), partition_metadata=log0.partition_metadata)


# ---- StopReplica has no topic id -----------------------------------------------------------------------------------
@scenario("kip516.stop_replica_by_name", kip=KIP, status="proposed", **ZK_BROKER,
          title="KIP-516 departure: a retried StopReplica (by name) deletes the recreated topic's replica",
          summary="The page's immediate deletion retries unanswered StopReplica requests, and gives StopReplica a "
                  "topic id. Shipped StopReplica never got one. Broker 1 misses the StopReplica of 'orders' (id A), "
                  "comes back and gets the new 'orders' (id B) through LeaderAndIsr (the stale log goes to "
                  "deletion). The controller's retry of the old StopReplica then arrives: it names 'orders' with "
                  "the deletion epoch -2, which bypasses the leader epoch check, and broker 1 deletes its replica "
                  "of B, the live topic.")
def stop_replica_by_name(trace: Trace) -> None:
    trace.cluster.replicas.behaviour = "page"
    admin, ctl = Wire(trace, "admin"), Controller(trace)
    old = create_topic(trace, admin, "orders")
    ctl.leader_and_isr(1, [("orders", old, 0, 0, [0, 1])])
    trace.cluster.crash_broker(1)
    delete_topic(trace, admin, "orders")
    trace.expect("the StopReplica of the deletion is not answered (broker 1 down)", ctl.stop_replica(1, "orders") is None)
    new = create_topic(trace, admin, "orders")
    trace.cluster.restart_broker(1)
    ctl.leader_and_isr(1, [("orders", new, 0, 0, [0, 1])])
    trace.expect("broker 1 now holds orders-0 of id B", _log(trace, 1, "orders").topic_id == new)
    trace.cluster.advance(1000)             # the controller's retry interval
    r = ctl.stop_replica(1, "orders")
    victim = _old_log(trace, 1, new)
    trace.expect("the retried StopReplica (v4, by name, LeaderEpoch -2): NONE", r == {("orders", 0): "NONE"}, repr(r))
    trace.expect("... and broker 1 moved the replica of the LIVE topic B to deletion",
                 victim is not None and victim.state == "Deleting" and _log(trace, 1, "orders") is None)
    trace.result.update(old_topic_id=to_kafka_str(old), new_topic_id=to_kafka_str(new),
                        deleted_live_replica=victim.dir if victim else None)
    trace.find(f"The controller's retried StopReplica for the deleted 'orders' (v4, by name, LeaderEpoch -2) is "
               f"answered {r[('orders', 0)]} by broker 1, which moves its replica of the LIVE topic B to "
               f"{victim.dir if victim else '(nowhere)'}.",
               "Every client of the new orders-0: broker 1's replica of the live topic is gone and nobody gets an "
               "error; an operator finds the log of B renamed for deletion.",
               "KIP-516, 'Protocol Changes' step 4 retries unanswered StopReplica requests, and the page wants "
               "StopReplica to carry the topic id; shipped StopReplica (StopReplicaRequest.json, v0-4) never got "
               "one, and epoch -2 skips the leader epoch check (ReplicaManager.stopReplicas).")
