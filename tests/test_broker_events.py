"""The broker's own typed events (schema/events.py, "the broker and the cluster"): each is emitted
where the broker does the thing, with its fields, and says its sentence; the
event log's Parquet columns come from the StateChanged / RecordAppended fields; a Parquet row
turns back into its event (kipviz.sampledata.event_rows)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from kipviz import codec, scenarios
from kipviz.broker import Cluster
from kipviz.broker.sasl import Authenticator, Users
from kipviz.sampledata.event_rows import event_from_row
from kipviz.sampledata.rows import RequestLog, event_columns
from kipviz.sampledata.schema import COLUMNS, EVENT
from kipviz.schema import events as ev
from tests.test_broker_topics import batch, by_name, create, metadata, produce

USERS = "alice = alice-secret\n"


def of(c: Cluster, kind: type) -> list:
    return [e for e in c.events if type(e) is kind]


def test_topics_created_deleted_grown_and_validated():
    c = Cluster(brokers=3)
    tid = c.create_topic("t")
    (made,) = of(c, ev.TopicCreated)
    assert (made.topic, made.topic_id, made.partitions, made.text) == ("t", str(tid), 1, "topic t created")
    assert create(c, 7, ("dry", 3, 1), validate_only=True)[0]["ErrorCode"] == 0
    (dry,) = of(c, ev.TopicCreationValidated)
    assert (dry.topic, dry.partitions, dry.replication_factor) == ("dry", 3, 1)
    assert dry.text == "CreateTopics validateOnly: dry could be created"
    body = {"Topics": [{"Name": "t", "Count": 3, "Assignments": None}], "TimeoutMs": 1000, "ValidateOnly": False}
    assert c.call("CreatePartitions", 3, body)["Results"][0]["ErrorCode"] == 0
    (grown,) = of(c, ev.PartitionsAdded)
    assert (grown.old_count, grown.partitions, grown.text) == (1, 3, "topic t: 1 -> 3 partitions (CreatePartitions)")
    c.delete_topic("t")
    (gone,) = of(c, ev.TopicDeleted)
    assert (gone.topic, gone.topic_id, gone.text) == ("t", str(tid), "topic t deleted")


def test_auto_creation_and_its_refusal():
    on = Cluster(seed=1, auto_create_topics=True, default_partitions=2)
    metadata(on, 12, by_name(["new"]), auto=True)
    metadata(on, 12, by_name(["new"]), auto=True)
    (auto,) = of(on, ev.TopicAutoCreated)
    assert (auto.topic, auto.api, auto.text) == ("new", "Metadata", "topic new auto-created by a Metadata request")
    full = Cluster(seed=1, auto_create_topics=True, default_partitions=2)
    held = sum(len(t.partitions) for t in full.topics.by_name.values())
    full.config.max_cluster_partitions = held + 1
    metadata(full, 12, by_name(["big"]), auto=True)
    full.advance(1)                   # the controller's step after the request
    (no,) = of(full, ev.TopicNotAutoCreated)
    assert (no.topic, no.held, no.limit) == ("big", held, held + 1)
    assert no.text == (f"topic big not auto-created: the model holds {held} partitions "
                       f"(kit limit ClusterConfig.max_cluster_partitions={held + 1})")


def test_crash_restart_and_leader_moves():
    c = Cluster(brokers=3)
    c.create_topic("t")
    c.crash_broker(1)
    c.restart_broker(1)
    assert [(type(e), e.broker, e.text) for e in c.events if isinstance(e, (ev.BrokerCrashed, ev.BrokerRestarted))] \
        == [(ev.BrokerCrashed, 1, "broker 1 crashed"), (ev.BrokerRestarted, 1, "broker 1 restarted")]
    was = c.topics.partition("t", 0).leader
    c.move_partition_leader("t", 0, 2)
    c.move_share_state_leader(0, 1)
    data, state = of(c, ev.LeaderMoved)
    assert (data.topic, data.partition, data.old_leader, data.leader) == ("t", 0, was, 2)
    assert data.text == f"t-0 leader {was} -> 2 (epoch {data.leader_epoch})"
    assert state.topic == "__share_group_state" and state.text.startswith("__share_group_state-0 leader ")


def test_a_crash_and_restart_decide_which_requests_the_request_log_answers():
    def asked(seq: int) -> ev.RequestReceived:
        return ev.RequestReceived(seq, 0, broker=1, client="c", api="Metadata", version=12, correlation_id=seq,
                                  body={}, frame=b"req")
    log = RequestLog()
    down = log.add([ev.BrokerCrashed(0, 0, broker=1), asked(1)])      # a down broker answers nothing
    assert (down["seq"], down["response"]) == ([1], [b""])
    up = log.add([ev.BrokerRestarted(2, 0, broker=1), asked(3)])
    assert up["seq"] == []                                            # waits for its answer again
    assert log.add([ev.ResponseSent(4, 0, broker=1, client="c", api="Metadata", version=12, correlation_id=3,
                                    body={}, frame=b"resp")])["response"] == [b"resp"]


def test_closed_connections_say_why():
    c = Cluster()
    frame = codec.encode_request("Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                                  "IncludeTopicAuthorizedOperations": False}, correlation_id=3)
    c.config.release = "3.0"       # serves Metadata up to v11 at most
    c.handle(frame, broker=0, client="cl")
    (closed,) = of(c, ev.ConnectionClosed)
    assert (closed.reason, closed.api, closed.version, closed.correlation_id, closed.client) == (
        "not-served", "Metadata", 12, 3, "cl")
    assert closed.text == f"connection closed: Metadata v12 is not served ({closed.why})"
    c.handle(codec.frame(b"\x00\x03\x00\x0c\x00"), broker=0, client="cl")      # Metadata v12, cut in its header
    bad = of(c, ev.ConnectionClosed)[-1]
    assert (bad.reason, bad.api, bad.version) == ("unreadable", "Metadata", 12)
    assert bad.text == f"connection closed: unreadable Metadata v12: {bad.why}"
    texts = {r: ev.ConnectionClosed(0, 0, broker=0, client="c", reason=r, why="w", limit_ms=5, size=7).text
             for r in ev.CLOSE_REASONS}
    assert texts["idle"] == "connection closed: idle for more than 5 ms (connections.max.idle.ms)"
    assert texts["size-out-of-range"] == "connection closed: request size 7 out of range"
    assert texts["mid-request"] == "connection closed mid-request: w"


def test_acks_0_needs_no_response_and_a_duplicate_batch_is_answered_with_its_offset():
    c = Cluster(brokers=1, seed=3)
    c.create_topic("orders", 2)
    body = {"TransactionalId": None, "Acks": 0, "TimeoutMs": 1000,
            "TopicData": [{"Name": "orders", "PartitionData": [{"Index": 0, "Records": batch(b"a")}]}]}
    frame = codec.encode_request("Produce", 9, body, correlation_id=8, client_id="p")
    assert c.handle(frame, broker=0, client="p") == b""
    (none,) = of(c, ev.NoResponse)
    assert (none.api, none.version, none.correlation_id, none.client) == ("Produce", 9, 8, "p")
    assert none.text == "Produce v9 needs no response (acks=0)"
    first, _ = produce(c, 9, "orders", 1, batch(b"a", b"b", pid=5, epoch=1, seq=0))
    produce(c, 9, "orders", 1, batch(b"a", b"b", pid=5, epoch=1, seq=0))
    (dup,) = of(c, ev.DuplicateBatch)
    assert (dup.topic, dup.partition, dup.producer_id, dup.base_sequence, dup.offset) == (
        "orders", 1, 5, 0, first["BaseOffset"])
    assert dup.text == (f"duplicate batch from producer 5 on orders-1: not written again, answered with its "
                        f"offset {first['BaseOffset']}")


def test_an_internal_error_is_recorded(monkeypatch):
    from kipviz.broker import handlers
    c = Cluster()

    def broken(cluster, req):
        raise RuntimeError("boom")
    monkeypatch.setitem(handlers.HANDLERS, "DescribeCluster", broken)
    c.call("DescribeCluster", 0, {"IncludeClusterAuthorizedOperations": False})
    (err,) = of(c, ev.InternalError)
    assert (err.api, err.error, err.text) == ("DescribeCluster", "boom", "internal error in DescribeCluster: boom")


def test_configs_acls_and_share_group_offsets():
    c = Cluster(acls=[], super_users=("User:admin",))
    c.create_topic("t")
    alter = {"Resources": [{"ResourceType": 2, "ResourceName": "t", "Configs": [
        {"Name": "retention.ms", "ConfigOperation": 0, "Value": "1"}]}], "ValidateOnly": False}
    assert c.call("IncrementalAlterConfigs", 1, alter, principal="User:admin")["Responses"][0]["ErrorCode"] == 0
    (cfg,) = of(c, ev.ConfigsChanged)
    assert (cfg.resource_type, cfg.resource, cfg.configs, cfg.api) == (
        "TOPIC", "t", (("retention.ms", "1"),), "IncrementalAlterConfigs")
    assert cfg.text == "topic t configs now {'retention.ms': '1'}"
    broker = ev.ConfigsChanged(0, 0, resource_type="BROKER", resource="", configs=(("a", "b"),), api="AlterConfigs")
    assert broker.text == "broker cluster default dynamic configs now {'a': 'b'}"
    create = {"Creations": [{"ResourceType": 2, "ResourceName": "alice.", "ResourcePatternType": 4,
                             "Principal": "User:alice", "Host": "*", "Operation": 2, "PermissionType": 3}]}
    assert c.call("CreateAcls", 3, create, principal="User:admin")["Results"][0]["ErrorCode"] == 0
    flt = {"ResourceTypeFilter": 2, "ResourceNameFilter": "alice.", "PatternTypeFilter": 4, "PrincipalFilter": None,
           "HostFilter": None, "Operation": 1, "PermissionType": 1}
    c.call("DeleteAcls", 3, {"Filters": [flt]}, principal="User:admin")
    (added,), (removed,) = of(c, ev.AclAdded), of(c, ev.AclRemoved)
    binding = ("ALLOW", "User:alice", "ALL", "TOPIC", "PREFIXED", "alice.", "*")
    for e in (added, removed):
        assert (e.permission, e.principal, e.operation, e.resource_type, e.pattern, e.resource_name, e.host) == binding
    assert added.text == "ACL added: ALLOW User:alice ALL on TOPIC PREFIXED 'alice.' from *"
    assert removed.text == "ACL removed: ALLOW User:alice ALL on TOPIC PREFIXED 'alice.'"
    s = Cluster()
    s.create_topic("s")
    body = {"GroupId": "sg", "Topics": [{"TopicName": "s", "Partitions": [{"PartitionIndex": 0, "StartOffset": 0}]}]}
    s.call("AlterShareGroupOffsets", 0, body, broker=s.coordinator_broker(0, "sg"))
    (alt,) = of(s, ev.ShareGroupOffsetsAltered)
    assert (alt.group, alt.text) == ("sg", "share group sg: start offsets altered (AlterShareGroupOffsets)")


def test_elect_leaders_and_log_start_moves():
    c = Cluster(brokers=3)
    body = {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 3, "Assignments": [], "Configs": []}],
            "timeoutMs": 1000, "validateOnly": False}
    c.call("CreateTopics", 7, body)
    preferred = c.topics.partition("t", 0).leader
    c.move_partition_leader("t", 0, (preferred + 1) % 3)
    r = c.call("ElectLeaders", 2, {"ElectionType": 0, "TopicPartitions": [{"Topic": "t", "Partitions": [0]}],
                                   "TimeoutMs": 1000})
    assert r["ErrorCode"] == 0
    (won,) = of(c, ev.LeaderElected)
    assert (won.topic, won.partition, won.leader, won.election) == ("t", 0, preferred, "preferred")
    assert won.text == f"t-0: preferred leader election elected broker {preferred} (ElectLeaders)"
    for i in range(3):
        produce(c, 9, "t", 0, batch(b"v%d" % i), broker=c.topics.partition("t", 0).leader)
    body = {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Offset": 2}]}], "TimeoutMs": 1000}
    c.call("DeleteRecords", 2, body, broker=c.topics.partition("t", 0).leader)
    (moved,) = of(c, ev.LogStartOffsetMoved)
    assert (moved.topic, moved.partition, moved.old, moved.log_start_offset, moved.by, moved.reason) == (
        "t", 0, 0, 2, "DeleteRecords", "DeleteRecords")
    assert moved.text == "DeleteRecords: t-0 log start offset 0 -> 2"


def test_api_versions_refused_and_sasl():
    c = Cluster()
    frame = codec.encode_request("ApiVersions", 5, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1",
                                                    "ClusterId": "elsewhere", "NodeId": -1}, correlation_id=1)
    c.handle(frame, broker=0, client="cl")
    (refused,) = of(c, ev.ApiVersionsRefused)
    assert (refused.version, refused.error, refused.client) == (5, "REBOOTSTRAP_REQUIRED", "cl")
    assert refused.text == f"ApiVersions v5 refused: {refused.why} (REBOOTSTRAP_REQUIRED)"
    auth = Authenticator(c, Users.parse(USERS), client="10.0.0.1:5000", seed=1)
    auth.handle(codec.encode_request("SaslHandshake", 1, {"Mechanism": "PLAIN"}, correlation_id=2))
    auth.handle(codec.encode_request("SaslAuthenticate", 2, {"AuthBytes": b"\0alice\0alice-secret"}, correlation_id=3))
    (ok,) = of(c, ev.SaslAuthenticated)
    assert (ok.mechanism, ok.principal, ok.client) == ("PLAIN", "User:alice", "10.0.0.1:5000")
    assert ok.text == "SASL PLAIN: 10.0.0.1:5000 authenticated as User:alice"
    bad = Authenticator(c, Users.parse(USERS), client="x", seed=1)
    bad.handle(codec.encode_request("SaslHandshake", 1, {"Mechanism": "GSSAPI"}, correlation_id=2))
    (failed,) = of(c, ev.SaslFailed)
    assert (failed.mechanism, failed.client) == (None, "x")
    assert failed.text == f"SASL: {failed.why} (connection closed)" and "GSSAPI" in failed.why


def test_replica_logs_say_what_the_broker_logs():
    t = scenarios.run("kip516.broker_stale_state")
    kinds = {type(e) for e in t.events if isinstance(e, ev.Happened)}
    assert {ev.ReplicaLogCreated, ev.ReplicaLogDeletionScheduled, ev.ReplicaLogRemoved} <= kinds
    warn = next(e for e in t.events if isinstance(e, ev.ReplicaLogDeletionScheduled))
    assert warn.text == (f"WARN broker {warn.broker}: {warn.topic}-{warn.partition} ({warn.topic_id}) moved to "
                         f"{warn.dir}, deleted at t={warn.delete_at}")
    gone = next(e for e in t.events if isinstance(e, ev.ReplicaLogRemoved))
    assert gone.text == f"broker {gone.broker}: {gone.dir} removed from disk" and gone.state == "Deleted"
    m = scenarios.run("kip516.migration")
    seeded = next(e for e in m.events if isinstance(e, ev.ReplicaLogSeeded))
    assert seeded.topic_id is None and seeded.partition_metadata is None
    assigned = next(e for e in m.events if isinstance(e, ev.ReplicaTopicIdAssigned))
    assert assigned.topic_id and assigned.text.endswith("migrated, partition.metadata written")


# ---- the event log's Parquet rows ------------------------------------------------------------------
def test_the_event_log_columns_come_from_the_state_and_record_fields():
    assert COLUMNS == {ev.StateChanged: ("machine", "key", "from_state", "to_state", "cause", "status"),
                       ev.RecordAppended: ("topic", "partition", "offset")}
    # the layout every bundled events.parquet has (sample_data/README.md)
    assert EVENT.equals(pa.schema([
        ("seq", pa.int64()), ("time_ms", pa.int64()), ("kind", pa.string()), ("machine", pa.string()),
        ("key", pa.string()), ("from_state", pa.string()), ("to_state", pa.string()), ("cause", pa.string()),
        ("status", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("detail", pa.string())]))
    from kipviz.spark import schemas
    assert schemas.EVENTS is EVENT
    assert schemas.EVENTS_DDL == ("seq bigint, time_ms bigint, kind string, machine string, key string, "
                                  "from_state string, to_state string, cause string, status string, topic string, "
                                  "partition int, offset bigint, detail string")


@pytest.mark.parametrize("name", ["kip516.broker_stale_state", "acls.txn_offset_commit_order",
                                  "kip1242.misrouted_connection"])
def test_a_row_turns_back_into_its_event(name):
    events = scenarios.run(name).events
    cols = {k: v.to_pylist() if hasattr(v, "to_pylist") else v for k, v in event_columns(events).items()}
    for i, e in enumerate(events):
        own = {c: cols[c][i] for c in COLUMNS.get(type(e), ())}
        back = event_from_row(cols["kind"][i], cols["detail"][i], seq=cols["seq"][i], t=cols["time_ms"][i], **own)
        assert type(back) is type(e) and back.seq == e.seq and back.t == e.t
        if isinstance(e, ev.Happened):
            assert back.text == e.text
        if isinstance(e, (ev.StateChanged, ev.Happened)):
            assert back == e, (back, e)


def test_a_row_of_no_kind_or_without_a_field_is_refused():
    with pytest.raises(ValueError, match="no event kind"):
        event_from_row("Nothing", "{}")
    with pytest.raises(ValueError, match="without its field 'broker'"):
        event_from_row("BrokerCrashed", "{}")
    assert event_from_row("StrayLogsKept", '{"broker": 1, "partitions": ["a-0"]}').partitions == ("a-0",)


def test_the_shared_bases_are_no_event_kinds():
    assert "_AclChange" not in ev.event_classes() and "_ReplicaLogEvent" not in ev.event_classes()
    assert {"AclAdded", "AclRemoved", "ReplicaLogCreated"} <= set(ev.event_classes())
