"""KIP-516 on the broker side (kipviz/broker/replicas.py, tables/replica.py, tables/topic_id.py,
scenarios/kip516_broker.py, scenarios/kip516_departures.py): LeaderAndIsr and StopReplica frames
in, frames out; partition.metadata; stale logs; migration; the departures from the page."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz import codec, scenarios
from kipviz.broker import Cluster
from kipviz.broker.config import Acl
from kipviz.broker.groups.model import shape
from kipviz.broker.replicas import partition_metadata
from kipviz.broker.tables import replica as R
from kipviz.draw.animate import Animation
from kipviz.scenarios.kip516_broker import ZK_BROKER, Controller
from kipviz.scenarios.kip516_departures import DEPARTURES, schema_facts
from kipviz.schema.error_codes import CODE, name_of
from kipviz.schema.events import StrayLogsKept
from kipviz.uuids import ZERO_UUID, to_kafka_str

BROKER = ["kip516.broker_stale_state", "kip516.broker_stale_state_released", "kip516.full_leader_and_isr",
          "kip516.delete_without_waiting", "kip516.migration", "kip516.stop_replica_by_name"]
ALL516 = [r["name"] for r in scenarios.catalog() if r["name"].startswith("kip516.")]


def run(name, seed=0):
    t = scenarios.run(name, seed=seed)
    assert t.cluster.internal_errors == []
    assert t.checks and t.passed, "\n".join(f"{c.description}: {c.detail}" for c in t.failures())
    return t


def moves(t, machine="replica"):
    return [(e.from_state, e.cause, e.to_state) for e in t.events if e.kind == "StateChanged" and e.machine == machine]


@pytest.mark.parametrize("seed", (0, 7))
@pytest.mark.parametrize("name", BROKER)
def test_every_broker_scenario_passes_through_real_frames(name, seed):
    t = run(name, seed)
    sent = [e for e in t.events if e.kind == "ResponseSent" and e.api in ("LeaderAndIsr", "StopReplica")]
    assert sent, "the controller's requests went through cluster.handle"
    for e in sent:
        assert codec.decode_response(e.frame, e.api, e.version)["body"] == e.body
    assert t.result and t.scenario.summary and t.scenario.kip == "KIP-516"


def test_labels_page_as_proposed_and_shipped_as_released():
    status = {r["name"]: r["status"] for r in scenarios.catalog()}
    assert status["kip516.broker_stale_state"] == "proposed"
    assert status["kip516.broker_stale_state_released"] == "released"
    assert status["kip516.migration"] == "released"
    # a run of the shipped behaviour takes no row the page alone has
    for name in ("kip516.broker_stale_state_released", "kip516.migration"):
        assert all(e.status == "released" for e in run(name).events if e.kind == "StateChanged")


def test_stale_state_page_vs_released_on_the_wire():
    page, shipped = run("kip516.broker_stale_state"), run("kip516.broker_stale_state_released")
    last = [e for e in shipped.events if e.kind == "ResponseSent" and e.api == "LeaderAndIsr"][-1]
    assert last.error_codes == (CODE["INCONSISTENT_TOPIC_ID"],) and last.broker == 1
    # v5+ answers are keyed by the topic id (the NEW one the request carried), without a name
    (topic,) = last.body["Topics"]
    assert to_kafka_str(topic["TopicId"]) == shipped.result["new_topic_id"] and "TopicName" not in topic
    assert ("Online", "inconsistent-topic-id", "Online") in moves(shipped)
    assert ("Online", "stale-topic-id", "Deleting") in moves(page)
    assert page.result["stale_dir"] == f"deleting/{page.result['old_topic_id']}_0"
    assert page.result["partition_metadata"] == f"version: 0\ntopic_id: {page.result['new_topic_id']}"
    assert shipped.result["partition_metadata"] == f"version: 0\ntopic_id: {shipped.result['old_topic_id']}"


def test_every_replica_row_is_executed():
    seen = {m for name in BROKER for m in moves(run(name))}
    c = zk_cluster("page")
    c.create_topic("t")
    c.replicas.seed_log(0, "t")
    c.replicas.seed_log(1, "t")
    ctl_lisr(c, 0, [], kind=2)                       # FULL without t: NoTopicId -> Deleting
    ctl_stop(c, 1, "t")                              # StopReplica of a log without an id
    seen |= set(moves_c(c))
    rows = {(r.from_state, r.event, r.to_state) for r in R.TABLE.rows}
    assert rows - seen == set()


# ---- direct frames ------------------------------------------------------------------------------------------
def zk_cluster(behaviour="released", **kw):
    c = Cluster(seed=1, **{**ZK_BROKER, **kw})
    c.replicas.behaviour = behaviour
    return c


class _T:
    def __init__(self, c):
        self.cluster = c


def _ctl(c, epoch=1):
    return Controller(_T(c), epoch)


def ctl_lisr(c, broker, topics, kind=1, epoch=1, version=7):
    return _ctl(c, epoch).leader_and_isr(broker, topics, kind=kind, version=version)


def ctl_stop(c, broker, name, **kw):
    return _ctl(c).stop_replica(broker, name, **kw)


def moves_c(c):
    return [(e.from_state, e.cause, e.to_state) for e in c.events if e.kind == "StateChanged" and e.machine == "replica"]


def test_leader_and_isr_is_not_served_by_any_4x_release():
    c = Cluster(seed=0)
    out = c.call("LeaderAndIsr", 7, shape("LeaderAndIsrRequest", 7, {
        "ControllerId": 0, "ControllerEpoch": 1, "Type": 1, "TopicStates": [], "LiveLeaders": []}))
    # Kafka 4.0 removed the key: the header does not parse and the connection closes, unanswered
    assert out is None and "LeaderAndIsr v7 is not served" in c.events[-1].text
    adv = {k["ApiKey"] for k in c.call("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})
           ["ApiKeys"]}
    assert not adv & {4, 5, 6}


def test_partition_metadata_is_what_kafka_writes():
    c = zk_cluster()
    tid = c.create_topic("x")
    assert ctl_lisr(c, 0, [("x", tid, 0, 0, [0])]) == {("x", 0): "NONE"}
    text = c.replicas.replica(0, "x").partition_metadata
    assert re.fullmatch(r"version: 0\ntopic_id: [A-Za-z0-9_-]{22}", text)
    assert text == partition_metadata(tid) and partition_metadata(None) is None


def test_full_request_on_a_shipped_broker_keeps_stray_logs_and_says_so():
    c = zk_cluster("released")
    a = c.create_topic("a")
    ctl_lisr(c, 0, [("a", a, 0, 0, [0])])
    b = c.create_topic("b")
    assert ctl_lisr(c, 0, [("b", b, 0, 0, [0])], kind=2) == {("b", 0): "NONE"}
    assert c.replicas.replica(0, "a").state == "Online" and not c.replicas.deleting
    kept = [e for e in c.events if isinstance(e, StrayLogsKept)]
    assert [(e.broker, e.partitions) for e in kept] == [(0, ("a-0",))]
    assert "FULL LeaderAndIsr omits 1 local partition(s)" in kept[0].text


def test_older_controller_epoch_is_refused():
    c = zk_cluster()
    tid = c.create_topic("x")
    ctl_lisr(c, 0, [("x", tid, 0, 0, [0])], epoch=5)
    assert ctl_lisr(c, 0, [("x", tid, 0, 1, [0])], epoch=4) == {("x", 0): "STALE_CONTROLLER_EPOCH"}
    assert c.replicas.replica(0, "x").leader_epoch == 0
    assert ctl_lisr(c, 0, [("x", tid, 0, 1, [0])], epoch=5) == {("x", 0): "NONE"}


def test_broker_not_in_replicas_and_same_epoch():
    c = zk_cluster()
    tid = c.create_topic("x")
    assert ctl_lisr(c, 2, [("x", tid, 0, 0, [0, 1])]) == {("x", 0): "UNKNOWN_TOPIC_OR_PARTITION"}
    assert c.replicas.replica(2, "x") is None
    ctl_lisr(c, 0, [("x", tid, 0, 3, [0])])
    # ReplicaManager: an unchanged (or older) leader epoch is ignored with STALE_CONTROLLER_EPOCH
    assert ctl_lisr(c, 0, [("x", tid, 0, 3, [0])]) == {("x", 0): "STALE_CONTROLLER_EPOCH"}


def test_stop_replica_leader_epoch_fencing_and_the_deletion_sentinel():
    c = zk_cluster()
    tid = c.create_topic("x")
    ctl_lisr(c, 0, [("x", tid, 0, 4, [0])])
    assert ctl_stop(c, 0, "x", leader_epoch=3) == {("x", 0): "FENCED_LEADER_EPOCH"}
    assert c.replicas.replica(0, "x") is not None
    assert ctl_stop(c, 0, "x", leader_epoch=-2) == {("x", 0): "NONE"}
    (gone,) = c.replicas.deleting
    assert re.fullmatch(r"x-0\.[0-9a-f]{32}-delete", gone.dir)          # LocalLog.logDeleteDirName
    c.advance(59_999)
    assert gone.state == "Deleting"
    c.advance(1)                                                           # file.delete.delay.ms
    assert gone.state == "Deleted" and not c.replicas.deleting
    assert ctl_stop(c, 0, "x") == {("x", 0): "NONE"}                       # nothing held: NONE


def test_controller_requests_need_cluster_action():
    c = zk_cluster(acls=[Acl("User:admin", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION")])
    tid = c.create_topic("x")
    body = {"ControllerId": 0, "ControllerEpoch": 1, "Type": 1, "BrokerEpoch": -1, "LiveLeaders": [],
            "TopicStates": [{"TopicName": "x", "TopicId": tid, "PartitionStates": [
                {"PartitionIndex": 0, "ControllerEpoch": 1, "Leader": 0, "LeaderEpoch": 0, "Isr": [0],
                 "PartitionEpoch": 0, "Replicas": [0]}]}]}
    body = shape("LeaderAndIsrRequest", 7, body)
    out = c.call("LeaderAndIsr", 7, body, broker=0, principal="User:mallory")
    assert name_of(out["ErrorCode"]) == "CLUSTER_AUTHORIZATION_FAILED" and c.replicas.replica(0, "x") is None
    out = c.call("LeaderAndIsr", 7, body, broker=0, principal="User:admin")
    assert out["ErrorCode"] == 0 and c.replicas.replica(0, "x").topic_id == tid


def test_leader_and_isr_v4_has_no_ids_and_answers_by_name():
    c = zk_cluster()
    c.create_topic("x")
    assert ctl_lisr(c, 0, [("x", None, 0, 0, [0])], version=4) == {("x", 0): "NONE"}
    log = c.replicas.replica(0, "x")
    assert log.topic_id is None and log.state == "NoTopicId"
    last = [e for e in c.events if e.kind == "ResponseSent"][-1]
    assert last.body["PartitionErrors"][0]["TopicName"] == "x"


def test_a_bad_behaviour_name_is_one_clear_error():
    c = zk_cluster("sometimes")
    tid = c.create_topic("x")
    ctl_lisr(c, 0, [("x", tid, 0, 0, [0])])
    assert any("replica behaviour 'sometimes'" in e for e in c.internal_errors)


# ---- topic ids and animations ---------------------------------------------------------------------------------
def test_topic_id_lifecycle_one_instance_per_id():
    t = run("kip516.ids_never_reused")
    m = moves(t, "topic-id")
    assert m.count(("Absent", "create", "Live")) == 5 and m.count(("Live", "delete", "Deleted")) == 4
    keys = {e.key for e in t.events if e.kind == "StateChanged" and e.machine == "topic-id"}
    assert keys == {f"events@{tid}" for tid in t.result["topic_ids"]}


@pytest.mark.parametrize("name", ALL516)
def test_every_kip516_scenario_has_frames_to_animate(name):
    t = run(name)
    machine = "replica" if name in BROKER else "topic-id"
    assert len(Animation(machine, t.events)) > 0


# ---- departures -------------------------------------------------------------------------------------------
def test_departures_are_data_with_runnable_scenarios():
    ids = [d["id"] for d in DEPARTURES]
    assert len(ids) == len(set(ids))
    names = {r["name"] for r in scenarios.catalog()}
    for d in DEPARTURES:
        assert d["page"] and d["shipped"] and d["source"] and d["model"]
        assert d["scenario"] is None or d["scenario"] in names
    for topic in ("StopReplica", "ListOffsets", "OffsetForLeaderEpoch"):
        (d,) = [d for d in DEPARTURES if d["topic"] == topic]
        assert "never" in d["shipped"] or "No version" in d["shipped"]
        assert d["schema"] and all(expect == "absent" for _, expect in d["schema"])


def test_departures_match_the_kits_definitions():
    facts = schema_facts()
    assert facts and all(f["ok"] for f in facts), [f for f in facts if not f["ok"]]
    assert {f["message"] for f in facts} >= {"StopReplicaRequest", "ListOffsetsRequest",
                                             "OffsetForLeaderEpochRequest", "LeaderAndIsrRequest"}


def test_zero_topic_id_in_leader_and_isr_means_no_id():
    c = zk_cluster()
    c.create_topic("x")
    ctl_lisr(c, 0, [("x", ZERO_UUID, 0, 0, [0])])
    assert c.replicas.replica(0, "x").partition_metadata is None


# ---- random controller traffic -----------------------------------------------------------------------------

_STEP = st.one_of(
    st.tuples(st.just("lisr"), st.integers(0, 2), st.sampled_from(["a", "b"]), st.integers(0, 2),
              st.sampled_from([1, 2]), st.sampled_from([4, 5, 7])),
    st.tuples(st.just("stop"), st.integers(0, 2), st.sampled_from(["a", "b"]), st.sampled_from([-2, -1, 0, 3]),
              st.booleans()),
    st.tuples(st.just("recreate"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("crash"), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.sampled_from([1000, 60_000, 4 * 3600_000])),
)


@settings(max_examples=60, deadline=None)
@given(behaviour=st.sampled_from(["released", "page"]), steps=st.lists(_STEP, max_size=25))
def test_random_controller_traffic_keeps_the_replica_model_consistent(behaviour, steps):
    """Any order of LeaderAndIsr/StopReplica frames, deletions, recreations, crashes and time: every
    answer decodes, the replica table is never broken (no internal error), a log is either held or
    being deleted or deleted, and a held log's partition.metadata names its own id."""
    c = zk_cluster(behaviour)
    for name in ("a", "b"):
        c.create_topic(name)
    for step in steps:
        if step[0] == "lisr":
            _, broker, name, epoch, kind, version = step
            tid = c.topics.get(name).topic_id if version >= 5 else None
            ctl_lisr(c, broker, [(name, tid, 0, epoch, [0, 1, 2])], kind=kind, version=version)
        elif step[0] == "stop":
            _, broker, name, epoch, delete = step
            ctl_stop(c, broker, name, leader_epoch=epoch, delete=delete)
        elif step[0] == "recreate":
            c.delete_topic(step[1])
            c.create_topic(step[1])
        elif step[0] == "crash":
            (c.restart_broker if step[1] in c.down else c.crash_broker)(step[1])
        else:
            c.advance(step[1])
    assert c.internal_errors == []
    for e in c.events:
        if e.kind == "ResponseSent":
            assert codec.decode_response(e.frame, e.api, e.version)["body"] == e.body
    rm = c.replicas
    held = [lg for logs in rm.logs.values() for lg in logs.values()]
    assert all(lg.state in ("NoTopicId", "Online") for lg in held)
    assert all(lg.state == "Deleting" for lg in rm.deleting) and all(lg.state == "Deleted" for lg in rm.deleted)
    assert len({id(lg) for lg in held + rm.deleting + rm.deleted}) == len(held) + len(rm.deleting) + len(rm.deleted)
    assert all(lg.partition_metadata == partition_metadata(lg.topic_id) for lg in held)
    if behaviour == "released":
        assert all(e.status == "released" for e in c.events if e.kind == "StateChanged")
