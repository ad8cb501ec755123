"""Topics, metadata and the data path of the broker model (kipviz/broker/handlers/metadata.py and
data.py), driven only through Cluster.handle with real request frames: Metadata, CreateTopics,
DeleteTopics, FindCoordinator, Produce, Fetch and ListOffsets, and the KIP-516 topic-id behaviour
of the KIP-516 page (a deleted and recreated topic gets a new id; requests carrying the old id are told
UNKNOWN_TOPIC_ID while requests by name reach the new topic).

Transaction markers are appended straight to the partition log (PartitionLog.append_marker) and
the transaction coordinator's produce check is stubbed where a test needs it, so these tests do
not depend on the transaction coordinator."""
from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kipviz import codec
from kipviz.broker import Acl, Cluster, served_versions
from kipviz.broker.handlers.metadata import shape
from kipviz.records import (
    group_coordinator_partition,
    read_batches,
    share_coordinator_key,
    share_coordinator_partition,
    transaction_coordinator_partition,
    write_batch,
)
from kipviz.records.examples import example_value
from kipviz.schema import registry
from kipviz.schema.error_codes import CODE
from kipviz.schema.events import RecordAppended
from kipviz.schema.resolve import resolve
from kipviz.uuids import RESERVED, ZERO_UUID, random_uuid, to_kafka_str

E = CODE
ANYONE = "User:ANONYMOUS"


# ---- helpers ----------------------------------------------------------------------------------------
def call(cluster, api, version, body, *, broker=0, principal=ANYONE):
    frame = codec.encode_request(api, version, shape(api + "Request", version, body), correlation_id=42)
    out = cluster.handle(frame, broker=broker, principal=principal)
    assert cluster.internal_errors == []
    decoded = codec.decode_response(out, api, version)
    assert decoded["correlation_id"] == 42
    return decoded["body"]


def metadata(cluster, version, topics, **kw):
    body = {"Topics": topics, "AllowAutoTopicCreation": kw.pop("auto", False),
            "IncludeTopicAuthorizedOperations": kw.pop("ops", False),
            "IncludeClusterAuthorizedOperations": kw.pop("cluster_ops", False)}
    return call(cluster, "Metadata", version, body, **kw)


def by_name(names):
    return [{"Name": n, "TopicId": ZERO_UUID} for n in names]


def create(cluster, version, *topics, validate_only=False, **kw):
    body = {"Topics": [{"Name": n, "NumPartitions": p, "ReplicationFactor": rf, "Assignments": [], "Configs": []}
                       for n, p, rf in topics], "timeoutMs": 1000, "validateOnly": validate_only}
    return call(cluster, "CreateTopics", version, body, **kw)["Topics"]


def delete(cluster, version, names=(), ids=(), **kw):
    if version < 6:
        body = {"TopicNames": list(names), "TimeoutMs": 1000}
    else:
        body = {"Topics": [{"Name": n, "TopicId": ZERO_UUID} for n in names]
                + [{"Name": None, "TopicId": i} for i in ids], "TimeoutMs": 1000}
    return call(cluster, "DeleteTopics", version, body, **kw)["Responses"]


def batch(*values, pid=-1, epoch=-1, seq=-1, txn=False, **header):
    ts = header.get("base_timestamp")
    return write_batch([(b"k%d" % i, v, [], ts) for i, v in enumerate(values)], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=txn, **header)


def produce(cluster, version, topic, partition, records, *, txn_id=None, acks=-1, **kw):
    key = {"TopicId": topic} if isinstance(topic, uuid.UUID) else {"Name": topic}
    body = {"TransactionalId": txn_id, "Acks": acks, "TimeoutMs": 1000,
            "TopicData": [{**key, "PartitionData": [{"Index": partition, "Records": records}]}]}
    r = call(cluster, "Produce", version, body, **kw)
    return r["Responses"][0]["PartitionResponses"][0], r


def fetch(cluster, version, topic, partition, offset, *, isolation=0, leader_epoch=-1, max_bytes=2**20,
          session_epoch=-1, **kw):
    key = {"TopicId": topic} if isinstance(topic, uuid.UUID) else {"Topic": topic}
    body = {"ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": max_bytes, "IsolationLevel": isolation,
            "SessionId": 0, "SessionEpoch": session_epoch, "ForgottenTopicsData": [], "RackId": "",
            "Topics": [{**key, "Partitions": [{"Partition": partition, "CurrentLeaderEpoch": leader_epoch,
                                               "FetchOffset": offset, "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                               "PartitionMaxBytes": max_bytes}]}]}
    r = call(cluster, "Fetch", version, body, **kw)
    return (r["Responses"][0]["Partitions"][0] if r["Responses"] else None), r


def values(records: bytes) -> list[tuple[int, bytes]]:
    return [(r["offset"], r["value"]) for b in read_batches(records) for r in b["records"]]


def list_offset(cluster, version, topic, partition, timestamp, *, isolation=0, **kw):
    body = {"ReplicaId": -1, "IsolationLevel": isolation, "TimeoutMs": 1000,
            "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": partition, "CurrentLeaderEpoch": -1,
                                                       "Timestamp": timestamp, "MaxNumOffsets": 1}]}]}
    return call(cluster, "ListOffsets", version, body, **kw)["Topics"][0]["Partitions"][0]


def find(cluster, version, key_type, *keys, **kw):
    if version >= 4:
        return call(cluster, "FindCoordinator", version, {"KeyType": key_type, "CoordinatorKeys": list(keys)},
                    **kw)["Coordinators"]
    r = call(cluster, "FindCoordinator", version, {"KeyType": key_type, "Key": keys[0]}, **kw)
    return [{**r, "Key": keys[0]}]


class StubTxns:
    """Stands in for the transaction coordinator: records each produce check, answers `code`."""

    def __init__(self, code=0):
        self.code = code
        self.calls = []

    def check_produce(self, transactional_id, producer_id, producer_epoch, topic, partition, version=None):
        self.calls.append((transactional_id, producer_id, producer_epoch, topic, partition, version))
        return self.code


@pytest.fixture
def cluster():
    c = Cluster(brokers=1, seed=3)
    c.create_topic("orders", 2)
    return c


# ---- Metadata ---------------------------------------------------------------------------------------
def test_metadata_lists_live_brokers_broker_n_9092_cluster_id_and_a_live_controller():
    c = Cluster(brokers=3, seed=1)
    r = metadata(c, 12, by_name([]))
    assert r["Brokers"] == [{"NodeId": b, "Host": f"broker-{b}", "Port": 9092, "Rack": None} for b in range(3)]
    assert len(r["ClusterId"]) == 22 and r["ControllerId"] in (0, 1, 2)
    c.down.add(0)
    r = metadata(c, 12, by_name([]), broker=1)
    assert [b["NodeId"] for b in r["Brokers"]] == [1, 2] and r["ControllerId"] in (1, 2)


def test_metadata_topic_id_from_v10_and_not_before():
    c = Cluster(brokers=1, seed=2)
    tid = c.create_topic("orders", 3)
    v9 = metadata(c, 9, by_name(["orders"]))["Topics"][0]
    v10 = metadata(c, 10, by_name(["orders"]))["Topics"][0]
    assert "TopicId" not in v9 and v10["TopicId"] == tid
    assert [p["PartitionIndex"] for p in v10["Partitions"]] == [0, 1, 2]
    assert v10["ErrorCode"] == 0 and v10["IsInternal"] is False


def test_metadata_unknown_topic_name_is_unknown_topic_or_partition(cluster):
    for v in (0, 1, 9, 12, 13):
        t = metadata(cluster, v, by_name(["ghost"]))["Topics"][0]
        assert (t["ErrorCode"], t["Name"], t["Partitions"]) == (E["UNKNOWN_TOPIC_OR_PARTITION"], "ghost", [])


def test_metadata_v12_by_topic_id_unknown_or_deleted_id_is_unknown_topic_id(cluster):
    tid = cluster.topics.get("orders").topic_id
    t = metadata(cluster, 12, [{"Name": None, "TopicId": tid}])["Topics"][0]
    assert (t["ErrorCode"], t["Name"], t["TopicId"]) == (0, "orders", tid)
    cluster.delete_topic("orders")
    ghost = random_uuid(random.Random(9))
    r = metadata(cluster, 13, [{"Name": None, "TopicId": tid}, {"Name": None, "TopicId": ghost}])
    assert [(t["ErrorCode"], t["Name"], t["TopicId"]) for t in r["Topics"]] == [
        (E["UNKNOWN_TOPIC_ID"], None, tid), (E["UNKNOWN_TOPIC_ID"], None, ghost)]


def test_metadata_v10_and_v11_reject_topic_ids_with_invalid_request(cluster):
    tid = cluster.topics.get("orders").topic_id
    for v in (10, 11):
        t = metadata(cluster, v, [{"Name": "orders", "TopicId": tid}])["Topics"][0]
        assert (t["ErrorCode"], t["Name"], t["Partitions"]) == (E["INVALID_REQUEST"], "orders", [])
        t = metadata(cluster, v, [{"Name": None, "TopicId": ZERO_UUID}])["Topics"][0]
        assert (t["ErrorCode"], t["Name"]) == (E["INVALID_REQUEST"], "")


def test_metadata_auto_creation_needs_the_request_flag_and_the_broker_setting():
    off = Cluster(seed=1)
    assert metadata(off, 12, by_name(["new"]), auto=True)["Topics"][0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]
    on = Cluster(seed=1, auto_create_topics=True, default_partitions=2)
    assert metadata(on, 12, by_name(["new"]), auto=False)["Topics"][0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]
    # AutoTopicCreationManager.sendCreateTopicRequest: the controller creates it after this answer
    first = metadata(on, 12, by_name(["new"]), auto=True)["Topics"][0]
    assert first["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]
    second = metadata(on, 12, by_name(["new"]), auto=True)["Topics"][0]
    assert second["ErrorCode"] == 0 and len(second["Partitions"]) == 2
    assert second["TopicId"] == on.topics.get("new").topic_id
    # v1-3 have no AllowAutoTopicCreation field: it counts as true
    assert metadata(on, 1, by_name(["other"]))["Topics"][0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]
    assert on.topics.get("other") is not None
    assert metadata(on, 12, by_name(["bad name"]), auto=True)["Topics"][0]["ErrorCode"] == E["INVALID_TOPIC_EXCEPTION"]


def test_metadata_partition_leader_replicas_isr_and_crashed_brokers():
    c = Cluster(brokers=3, seed=4)
    r = create(c, 7, ("orders", 3, 2))[0]
    assert r["ErrorCode"] == 0
    parts = metadata(c, 12, by_name(["orders"]))["Topics"][0]["Partitions"]
    assert [(p["LeaderId"], p["ReplicaNodes"], p["IsrNodes"], p["LeaderEpoch"]) for p in parts] == [
        (0, [0, 1], [0, 1], 0), (1, [1, 2], [1, 2], 0), (2, [2, 0], [2, 0], 0)]
    c.down.add(1)
    parts = metadata(c, 12, by_name(["orders"]), broker=0)["Topics"][0]["Partitions"]
    assert parts[0]["IsrNodes"] == [0] and parts[0]["OfflineReplicas"] == [1]
    assert (parts[1]["ErrorCode"], parts[1]["LeaderId"]) == (E["LEADER_NOT_AVAILABLE"], -1)
    internal = metadata(c, 12, by_name(["__consumer_offsets"]), broker=0)["Topics"][0]
    assert internal["IsInternal"] is True and len(internal["Partitions"]) == 50


def test_metadata_describe_acl_hides_existence_and_filters_the_all_topics_list():
    c = Cluster(seed=5, acls=[Acl("User:a", "TOPIC", "orders", "DESCRIBE")])
    c.create_topic("orders", 1)
    c.create_topic("secret", 1)
    r = metadata(c, 12, by_name(["orders", "secret", "ghost"]), principal="User:a")
    assert [(t["Name"], t["ErrorCode"]) for t in r["Topics"]] == [
        ("orders", 0), ("secret", E["TOPIC_AUTHORIZATION_FAILED"]), ("ghost", E["TOPIC_AUTHORIZATION_FAILED"])]
    everything = metadata(c, 12, None, principal="User:a")
    assert [t["Name"] for t in everything["Topics"]] == ["orders"]
    by_id = metadata(c, 12, [{"Name": None, "TopicId": c.topics.get("secret").topic_id}], principal="User:a")
    assert (by_id["Topics"][0]["ErrorCode"], by_id["Topics"][0]["Name"]) == (E["TOPIC_AUTHORIZATION_FAILED"], None)


def test_metadata_v0_empty_list_means_all_topics_v1_null_all_and_empty_none(cluster):
    names = {t["Name"] for t in metadata(cluster, 0, [])["Topics"]}
    assert {"orders", "__consumer_offsets", "__transaction_state"} <= names
    assert {t["Name"] for t in metadata(cluster, 1, None)["Topics"]} == names
    assert metadata(cluster, 1, [])["Topics"] == []


def test_metadata_authorized_operations_bit_fields():
    c = Cluster(seed=6, acls=[Acl("User:a", "TOPIC", "orders", "READ"), Acl("User:a", "TOPIC", "orders", "DESCRIBE"),
                              Acl("User:a", "CLUSTER", "kafka-cluster", "CREATE")])
    c.create_topic("orders", 1)
    r = metadata(c, 10, by_name(["orders"]), ops=True, cluster_ops=True, principal="User:a")
    assert r["Topics"][0]["TopicAuthorizedOperations"] == (1 << 3) | (1 << 8)     # READ, DESCRIBE
    assert r["ClusterAuthorizedOperations"] == 1 << 5                              # CREATE
    plain = metadata(c, 12, by_name(["orders"]), principal="User:a")
    assert plain["Topics"][0]["TopicAuthorizedOperations"] == -2**31


# ---- CreateTopics -----------------------------------------------------------------------------------
def test_create_topics_returns_the_new_topic_id_from_v7():
    c = Cluster(seed=7)
    v7 = create(c, 7, ("a", 2, 1))[0]
    assert v7["ErrorCode"] == 0 and v7["TopicId"] == c.topics.get("a").topic_id
    assert (v7["NumPartitions"], v7["ReplicationFactor"]) == (2, 1)
    v4 = create(c, 4, ("b", 1, 1))[0]
    assert "TopicId" not in v4 and v4["ErrorCode"] == 0 and c.topics.get("b") is not None
    assert metadata(c, 12, by_name(["a"]))["Topics"][0]["TopicId"] == v7["TopicId"]


def test_create_topics_topic_already_exists(cluster):
    r = create(cluster, 7, ("orders", 1, 1), ("__consumer_offsets", 1, 1))
    assert [t["ErrorCode"] for t in r] == [E["TOPIC_ALREADY_EXISTS"]] * 2
    assert r[0]["ErrorMessage"] == "Topic 'orders' already exists." and r[0]["TopicId"] == ZERO_UUID


def test_create_topics_invalid_partitions_and_minus_one_means_the_default():
    c = Cluster(seed=8, default_partitions=4)
    r = create(c, 7, ("zero", 0, 1), ("negative", -5, 1), ("default", -1, -1))
    assert [t["ErrorCode"] for t in r] == [E["INVALID_PARTITIONS"], E["INVALID_PARTITIONS"], 0]
    assert c.topics.get("zero") is None and len(c.topics.get("default").partitions) == 4
    assert (r[2]["NumPartitions"], r[2]["ReplicationFactor"]) == (4, 1)


def test_create_topics_validate_only_creates_nothing():
    c = Cluster(seed=9)
    r = create(c, 7, ("dry", 3, 1), validate_only=True)[0]
    assert (r["ErrorCode"], r["TopicId"], r["NumPartitions"]) == (0, ZERO_UUID, 3)
    assert c.topics.get("dry") is None
    assert create(c, 7, ("dry", 0, 1), validate_only=True)[0]["ErrorCode"] == E["INVALID_PARTITIONS"]


def test_create_topics_duplicates_bad_names_and_replication_factor():
    c = Cluster(brokers=2, seed=10)
    c.create_topic("a.b", 1)
    r = create(c, 7, ("dup", 1, 1), ("dup", 1, 1), ("bad name", 1, 1), ("a_b", 1, 1), ("big", 1, 3),
               ("__cluster_metadata", 1, 1))
    assert [(t["Name"], t["ErrorCode"]) for t in r] == [
        ("dup", E["INVALID_REQUEST"]), ("bad name", E["INVALID_TOPIC_EXCEPTION"]),
        ("a_b", E["INVALID_TOPIC_EXCEPTION"]), ("big", E["INVALID_REPLICATION_FACTOR"]),
        ("__cluster_metadata", E["INVALID_REQUEST"])]
    assert r[0]["ErrorMessage"] == "Duplicate topic name."
    assert c.topics.get("dup") is None and c.topics.get("big") is None


def test_create_topics_manual_assignment_sets_replicas_and_leaders():
    c = Cluster(brokers=3, seed=28)
    body = {"timeoutMs": 1, "validateOnly": False, "Topics": [
        {"Name": "placed", "NumPartitions": -1, "ReplicationFactor": -1, "Configs": [],
         "Assignments": [{"PartitionIndex": 0, "BrokerIds": [2, 0]}, {"PartitionIndex": 1, "BrokerIds": [1, 2]}]},
        {"Name": "mixed", "NumPartitions": 2, "ReplicationFactor": -1, "Configs": [],
         "Assignments": [{"PartitionIndex": 0, "BrokerIds": [0]}]},
        {"Name": "gap", "NumPartitions": -1, "ReplicationFactor": -1, "Configs": [],
         "Assignments": [{"PartitionIndex": 1, "BrokerIds": [0]}]},
        {"Name": "nowhere", "NumPartitions": -1, "ReplicationFactor": -1, "Configs": [],
         "Assignments": [{"PartitionIndex": 0, "BrokerIds": [7]}]}]}
    r = call(c, "CreateTopics", 7, body)["Topics"]
    assert [t["ErrorCode"] for t in r] == [0, E["INVALID_REQUEST"], E["INVALID_REPLICA_ASSIGNMENT"],
                                           E["INVALID_REPLICA_ASSIGNMENT"]]
    assert (r[0]["NumPartitions"], r[0]["ReplicationFactor"]) == (2, 2)
    parts = metadata(c, 12, by_name(["placed"]))["Topics"][0]["Partitions"]
    assert [(p["LeaderId"], p["ReplicaNodes"]) for p in parts] == [(2, [2, 0]), (1, [1, 2])]
    assert produce(c, 9, "placed", 0, batch(b"x"), broker=2)[0]["ErrorCode"] == 0


def test_create_topics_needs_create_on_the_topic_or_the_cluster():
    c = Cluster(seed=11, acls=[Acl("User:a", "TOPIC", "mine", "CREATE"), Acl("User:root", "CLUSTER", "*", "CREATE")])
    r = create(c, 7, ("mine", 1, 1), ("theirs", 1, 1), principal="User:a")
    assert [t["ErrorCode"] for t in r] == [0, E["TOPIC_AUTHORIZATION_FAILED"]]
    # created, but its configs may not be described by this principal
    assert r[0]["TopicConfigErrorCode"] == E["TOPIC_AUTHORIZATION_FAILED"] and r[0]["NumPartitions"] == -1
    assert create(c, 7, ("theirs", 1, 1), principal="User:root")[0]["ErrorCode"] == 0


def test_create_topics_gives_every_creation_a_new_id_even_for_a_reused_name():
    c = Cluster(seed=12)
    seen = []
    for _ in range(5):
        r = create(c, 7, ("orders", 1, 1))[0]
        assert r["ErrorCode"] == 0
        seen.append(r["TopicId"])
        assert delete(c, 6, names=["orders"])[0]["ErrorCode"] == 0
    assert len(set(seen)) == 5


# ---- DeleteTopics -----------------------------------------------------------------------------------
def test_delete_topics_by_name_and_unknown_name(cluster):
    tid = cluster.topics.get("orders").topic_id
    r = delete(cluster, 5, names=["orders", "ghost"])
    assert {t["Name"]: t["ErrorCode"] for t in r} == {"orders": 0, "ghost": E["UNKNOWN_TOPIC_OR_PARTITION"]}
    assert cluster.topics.get("orders") is None and cluster.topics.by_id[tid].deleted_at is not None
    r = delete(cluster, 6, names=["orders"])
    assert r[0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]


def test_delete_topics_v6_by_topic_id_unknown_and_deleted_ids(cluster):
    tid = cluster.topics.get("orders").topic_id
    r = delete(cluster, 6, ids=[tid])
    assert [(t["Name"], t["TopicId"], t["ErrorCode"]) for t in r] == [("orders", tid, 0)]
    again = delete(cluster, 6, ids=[tid, random_uuid(random.Random(1))])
    assert [t["ErrorCode"] for t in again] == [E["UNKNOWN_TOPIC_ID"]] * 2
    assert again[0]["ErrorMessage"] == "This server does not host this topic ID."


def test_delete_topics_v6_invalid_combinations(cluster):
    tid = cluster.topics.get("orders").topic_id
    body = {"TimeoutMs": 1, "Topics": [{"Name": None, "TopicId": ZERO_UUID}, {"Name": "orders", "TopicId": tid},
                                       {"Name": "x", "TopicId": ZERO_UUID}, {"Name": "x", "TopicId": ZERO_UUID}]}
    r = call(cluster, "DeleteTopics", 6, body)["Responses"]
    assert [(t["Name"], t["ErrorCode"], t["ErrorMessage"]) for t in r] == [
        (None, E["INVALID_REQUEST"], "Neither topic name nor id were specified."),
        ("orders", E["INVALID_REQUEST"], "You may not specify both topic name and topic id."),
        ("x", E["INVALID_REQUEST"], "Duplicate topic name.")]
    assert cluster.topics.get("orders") is not None


def test_delete_topics_needs_delete_permission():
    c = Cluster(seed=13, acls=[Acl("User:a", "TOPIC", "orders", "DESCRIBE")])
    tid = c.create_topic("orders", 1)
    c.create_topic("hidden", 1)
    assert delete(c, 6, names=["orders"], principal="User:a")[0]["ErrorCode"] == E["TOPIC_AUTHORIZATION_FAILED"]
    by_id = delete(c, 6, ids=[c.topics.get("hidden").topic_id], principal="User:a")[0]
    assert (by_id["ErrorCode"], by_id["Name"]) == (E["TOPIC_AUTHORIZATION_FAILED"], None)   # not describable
    assert delete(c, 6, ids=[tid], principal="User:a")[0]["Name"] == "orders"
    assert c.topics.get("orders") is not None


# ---- FindCoordinator --------------------------------------------------------------------------------
def test_find_coordinator_group_is_the_leader_of_its_consumer_offsets_partition():
    c = Cluster(brokers=3, seed=14)
    assert group_coordinator_partition("my-group") == 12                 # GroupCoordinatorService.partitionFor's worked value
    assert group_coordinator_partition("polygenelubricants") == 0        # hash == Integer.MIN_VALUE
    for key in ("my-group", "group1", "polygenelubricants", ""):
        p = group_coordinator_partition(key)
        r = find(c, 3, 0, key)[0]
        assert (r["ErrorCode"], r["NodeId"]) == (0, c.topics.partition("__consumer_offsets", p).leader)
        assert r["NodeId"] == c.coordinator_broker(0, key) and r["Host"] == f"broker-{r['NodeId']}"


def test_find_coordinator_transaction_key_type_and_v0_without_key_type():
    c = Cluster(brokers=3, seed=15)
    p = transaction_coordinator_partition("tx-1")
    r = find(c, 1, 1, "tx-1")[0]
    assert (r["ErrorCode"], r["NodeId"]) == (0, c.topics.partition("__transaction_state", p).leader)
    v0 = call(c, "FindCoordinator", 0, {"Key": "my-group"})
    assert v0["NodeId"] == c.coordinator_broker(0, "my-group")


def test_find_coordinator_v4_batches_keys_and_v1_to_v3_say_none_in_error_message():
    c = Cluster(brokers=3, seed=16)
    r = find(c, 4, 0, "my-group", "group1")
    assert [(x["Key"], x["ErrorCode"], x["NodeId"]) for x in r] == [
        ("my-group", 0, c.coordinator_broker(0, "my-group")), ("group1", 0, c.coordinator_broker(0, "group1"))]
    assert find(c, 2, 0, "g")[0]["ErrorMessage"] == "NONE"       # Errors.NONE.message()


def test_find_coordinator_describe_acls_for_groups_and_transactional_ids():
    c = Cluster(seed=17, acls=[Acl("User:a", "GROUP", "mine", "DESCRIBE")])
    r = find(c, 4, 0, "mine", "theirs", principal="User:a")
    assert [x["ErrorCode"] for x in r] == [0, E["GROUP_AUTHORIZATION_FAILED"]]
    assert (r[1]["NodeId"], r[1]["Host"], r[1]["Port"]) == (-1, "", -1)
    assert find(c, 4, 1, "tx", principal="User:a")[0]["ErrorCode"] == E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]


def test_find_coordinator_share_keys_need_v6_cluster_action_and_a_well_formed_key():
    c = Cluster(brokers=3, seed=18)
    tid = c.create_topic("orders", 4)
    key = share_coordinator_key("sg", tid, 3)
    assert key == f"sg:{to_kafka_str(tid)}:3"
    assert find(c, 5, 2, key)[0]["ErrorCode"] == E["INVALID_REQUEST"]
    r = find(c, 6, 2, key, "sg:not-an-id:3", "no-colons")
    p = share_coordinator_partition("sg", tid, 3)
    assert (r[0]["ErrorCode"], r[0]["NodeId"]) == (0, c.topics.partition("__share_group_state", p).leader)
    assert [x["ErrorCode"] for x in r[1:]] == [E["INVALID_REQUEST"]] * 2
    locked = Cluster(seed=18, acls=[Acl("User:op", "CLUSTER", "kafka-cluster", "CLUSTER_ACTION")])
    assert find(locked, 6, 2, key, principal="User:x")[0]["ErrorCode"] == E["CLUSTER_AUTHORIZATION_FAILED"]
    assert find(locked, 6, 2, key, principal="User:op")[0]["ErrorCode"] == 0
    assert find(c, 6, 3, "x")[0]["ErrorCode"] == E["INVALID_REQUEST"]       # unknown key type


def test_find_coordinator_is_not_available_while_the_partition_leader_is_down():
    c = Cluster(brokers=3, seed=19)
    leader = c.coordinator_broker(0, "my-group")
    c.down.add(leader)
    r = find(c, 4, 0, "my-group", broker=(leader + 1) % 3)[0]
    assert (r["ErrorCode"], r["NodeId"]) == (E["COORDINATOR_NOT_AVAILABLE"], -1)


# ---- Produce ----------------------------------------------------------------------------------------
def test_produce_appends_one_batch_and_emits_record_appended_per_record(cluster):
    cluster.advance(1234)
    r, _ = produce(cluster, 9, "orders", 1, batch(b"a", b"b", b"c"))
    assert (r["ErrorCode"], r["BaseOffset"], r["LogStartOffset"]) == (0, 0, 0)
    r, _ = produce(cluster, 9, "orders", 1, batch(b"d"))
    assert r["BaseOffset"] == 3
    log = cluster.topics.partition("orders", 1)
    assert [e.value for e in log.entries] == [b"a", b"b", b"c", b"d"] and len(log.batches) == 2
    appended = [e for e in cluster.events if isinstance(e, RecordAppended) and e.topic == "orders"]
    assert [(e.partition, e.offset, e.value, e.t) for e in appended] == [
        (1, 0, b"a", 1234), (1, 1, b"b", 1234), (1, 2, b"c", 1234), (1, 3, b"d", 1234)]


def test_the_log_keeps_the_producers_batch_with_its_offsets_and_leader_epoch_assigned(cluster, monkeypatch):
    from kipviz.broker import topics
    encoded = []
    monkeypatch.setattr(topics.rec, "write_batch", lambda *a, **k: encoded.append(1) or write_batch(*a, **k))
    cluster.advance(1234)
    log = cluster.topics.partition("orders", 0)
    log.leader_epoch = 7
    produce(cluster, 9, "orders", 0, write_batch([(b"k", b"a", [], 1234)]))
    sent = write_batch([(b"k0", b"b", [("h", b"1")], 1234), (b"k1", None, [], 1234)], producer_id=5,
                       producer_epoch=0, base_sequence=0)
    produce(cluster, 9, "orders", 0, sent)
    stored = log.batches[1]
    assert stored[:8] == (1).to_bytes(8, "big") and stored[12:16] == (7).to_bytes(4, "big")
    assert stored[16:] == sent[16:] and stored[8:12] == sent[8:12]            # CRC and records as sent
    b = read_batches(stored, strict=True)[0]                                   # the CRC still holds
    assert (b["base_offset"], b["partition_leader_epoch"], b["crc_valid"]) == (1, 7, True)
    assert encoded == []                              # not encoded again


@pytest.mark.parametrize("what,header,records", [
    ("another time", {}, [(b"k", b"v", [], 1000), (b"k", b"v", [], 1234)]),
    ("a later time", {}, [(b"k", b"v", [], 1235)] * 2),
    ("compressed", {"compression": "gzip"}, [(b"k", b"v", [], 1234)] * 2),
    ("LogAppendTime", {"timestamp_type": "LogAppendTime"}, [(b"k", b"v", [], 1234)] * 2),
    ("record attributes", {}, [{"key": b"k", "value": b"v", "timestamp": 1234, "attributes": 1}] * 2),
    ("a wrong MaxTimestamp", {"max_timestamp": 5}, [(b"k", b"v", [], 1000), (b"k", b"v", [], 1300)]),
])
def test_the_log_keeps_the_producers_records_in_place_as_logvalidator_does(cluster, what, header, records):
    """LogValidator.assignOffsetsNonCompressed / validateMessagesAndAssignOffsetsCompressed: the
    producer's records and timestamps are kept; only the base offset, the leader epoch and the
    CreateTime max timestamp are assigned (the CRC follows when the last two change)."""
    from kipviz.broker import topics
    encoded = []
    cluster.advance(1234)
    sent = write_batch(records, **header)
    b_sent = read_batches(sent, strict=True)[0]
    real = topics.rec.write_batch
    try:
        topics.rec.write_batch = lambda *a, **k: encoded.append(1) or real(*a, **k)
        r, _ = produce(cluster, 9, "orders", 0, sent)
    finally:
        topics.rec.write_batch = real
    assert r["ErrorCode"] == 0 and encoded == []
    stored = cluster.topics.partition("orders", 0).batches[0]
    assert stored[61:] == sent[61:]                                   # the records as sent
    b = read_batches(stored, strict=True)[0]
    assert b["crc_valid"] and b["compression"] == b_sent["compression"]
    assert [r["timestamp"] for r in b["records"]] == [b_sent["base_timestamp"] + r["timestamp_delta"]
                                                       for r in b_sent["records"]]
    assert (b["timestamp_type"], b["max_timestamp"]) == ("CreateTime", max(r["timestamp"] for r in b_sent["records"]))
    fetched = cluster.topics.partition("orders", 0).entries
    assert [e.timestamp for e in fetched] == [r["timestamp"] for r in b["records"]]


def test_a_compressed_batch_with_offset_gaps_is_built_again_with_its_compression_and_times(cluster):
    """validateMessagesAndAssignOffsetsCompressed: a record whose offset is not the expected one
    turns inPlaceAssignment off; buildRecordsAndAssignOffsets writes the records again."""
    from kipviz.broker.handlers.data import kept_as_sent
    cluster.advance(1234)
    sent = write_batch([{"key": b"k", "value": b"v%d" % i, "timestamp": 1000 + i, "offset_delta": d}
                        for i, d in enumerate((0, 2, 2))], compression="gzip", last_offset_delta=2)
    assert not kept_as_sent(read_batches(sent, strict=True)[0])
    r, _ = produce(cluster, 9, "orders", 0, sent)
    assert r["ErrorCode"] == 0
    b = read_batches(cluster.topics.partition("orders", 0).batches[0], strict=True)[0]
    assert b["compression"] == "gzip" and [r["offset_delta"] for r in b["records"]] == [0, 1, 2]
    assert [(r["value"], r["timestamp"]) for r in b["records"]] == [(b"v0", 1000), (b"v1", 1001), (b"v2", 1002)]


def test_a_batch_whose_offsets_disagree_with_its_count_is_invalid_record(cluster):
    """LogValidator.validateBatch: lastOffset - baseOffset + 1 must be the record count."""
    gap = write_batch([{"key": b"k", "value": b"v", "timestamp": 5, "offset_delta": d} for d in (0, 2, 3)])
    r, _ = produce(cluster, 9, "orders", 0, gap)
    assert r["ErrorCode"] == E["INVALID_RECORD"]
    assert r["ErrorMessage"] == "Inconsistent batch offset range [0, 3] and count of records 3 in topic partition orders-0"
    assert cluster.topics.partition("orders", 0).log_end_offset == 0


def test_produce_v3_by_name_and_v13_by_topic_id():
    c = Cluster(seed=20)
    tid = c.create_topic("orders", 1)
    old, raw = produce(c, 3, "orders", 0, batch(b"v3"))
    assert old["ErrorCode"] == 0 and raw["Responses"][0]["Name"] == "orders"
    assert "LogStartOffset" not in old and "TopicId" not in raw["Responses"][0]
    new, raw = produce(c, 13, tid, 0, batch(b"v13"))
    assert (new["ErrorCode"], new["BaseOffset"]) == (0, 1) and raw["Responses"][0]["TopicId"] == tid
    assert "Name" not in raw["Responses"][0]
    assert produce(c, 12, "ghost", 0, batch(b"x"))[0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]
    assert produce(c, 13, random_uuid(random.Random(2)), 0, batch(b"x"))[0]["ErrorCode"] == E["UNKNOWN_TOPIC_ID"]
    assert produce(c, 13, ZERO_UUID, 0, batch(b"x"))[0]["ErrorCode"] == E["UNKNOWN_TOPIC_ID"]
    assert produce(c, 9, "orders", 5, batch(b"x"))[0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]


def test_produce_to_a_follower_is_not_leader_with_a_leader_hint_from_v10():
    c = Cluster(brokers=3, seed=21)
    c.create_topic("orders", 3)
    r, raw = produce(c, 10, "orders", 1, batch(b"x"), broker=0)
    assert r["ErrorCode"] == E["NOT_LEADER_OR_FOLLOWER"] and r["BaseOffset"] == -1
    assert r["CurrentLeader"] == {"LeaderId": 1, "LeaderEpoch": 0}
    assert raw["NodeEndpoints"] == [{"NodeId": 1, "Host": "broker-1", "Port": 9092, "Rack": None}]
    old, raw = produce(c, 9, "orders", 1, batch(b"x"), broker=0)
    assert old["ErrorCode"] == E["NOT_LEADER_OR_FOLLOWER"] and "CurrentLeader" not in old
    assert produce(c, 10, "orders", 1, batch(b"x"), broker=1)[0]["ErrorCode"] == 0
    c.down.add(1)
    r, _ = produce(c, 10, "orders", 1, batch(b"x"), broker=0)
    assert r["ErrorCode"] == E["NOT_LEADER_OR_FOLLOWER"] and r["CurrentLeader"]["LeaderId"] == -1
    assert c.handle(codec.encode_request("Produce", 9, shape("ProduceRequest", 9, {
        "Acks": 1, "TimeoutMs": 1, "TopicData": []})), broker=1) == b""          # a crashed broker says nothing


def test_produce_write_acl_and_transactional_id_acl():
    c = Cluster(seed=22, acls=[Acl("User:a", "TOPIC", "orders", "WRITE"), Acl("User:a", "TRANSACTIONAL_ID", "app", "WRITE")])
    c.create_topic("orders", 1)
    c.create_topic("secret", 1)
    c.txns = StubTxns()
    assert produce(c, 9, "secret", 0, batch(b"x"), principal="User:a")[0]["ErrorCode"] == E["TOPIC_AUTHORIZATION_FAILED"]
    assert produce(c, 9, "orders", 0, batch(b"x"), principal="User:a")[0]["ErrorCode"] == 0
    txn = batch(b"t", pid=7, epoch=0, seq=0, txn=True)
    for txn_id in ("other", None):
        r, _ = produce(c, 9, "orders", 0, txn, txn_id=txn_id, principal="User:a")
        assert r["ErrorCode"] == E["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]
    assert produce(c, 9, "orders", 0, txn, txn_id="app", principal="User:a")[0]["ErrorCode"] == 0


def test_produce_transactional_batches_ask_the_transaction_coordinator_first(cluster):
    stub = cluster.txns = StubTxns(E["INVALID_TXN_STATE"])
    txn = batch(b"t", pid=7, epoch=3, seq=0, txn=True)
    r, _ = produce(cluster, 10, "orders", 1, txn, txn_id="app")
    assert r["ErrorCode"] == E["INVALID_TXN_STATE"] and cluster.topics.partition("orders", 1).entries == []
    assert stub.calls == [("app", 7, 3, "orders", 1, 10)]
    stub.code = 0
    assert produce(cluster, 12, "orders", 1, txn, txn_id="app")[0]["ErrorCode"] == 0
    assert stub.calls[-1] == ("app", 7, 3, "orders", 1, 12)
    log = cluster.topics.partition("orders", 1)
    assert log.entries[0].transactional and log.last_stable_offset == 0
    # an idempotent (non-transactional) batch is not checked
    produce(cluster, 12, "orders", 0, batch(b"i", pid=8, epoch=0, seq=0), txn_id="app")
    assert len(stub.calls) == 2


def test_produce_idempotence_duplicates_sequence_gaps_and_old_epochs(cluster):
    first, _ = produce(cluster, 9, "orders", 0, batch(b"a", b"b", pid=5, epoch=1, seq=0))
    dup, _ = produce(cluster, 9, "orders", 0, batch(b"a", b"b", pid=5, epoch=1, seq=0))
    assert (first["ErrorCode"], dup["ErrorCode"], dup["BaseOffset"]) == (0, 0, first["BaseOffset"])
    assert cluster.topics.partition("orders", 0).log_end_offset == 2          # not written twice
    assert produce(cluster, 9, "orders", 0, batch(b"c", pid=5, epoch=1, seq=5))[0]["ErrorCode"] == \
        E["OUT_OF_ORDER_SEQUENCE_NUMBER"]
    assert produce(cluster, 9, "orders", 0, batch(b"c", pid=5, epoch=1, seq=2))[0]["BaseOffset"] == 2
    assert produce(cluster, 9, "orders", 0, batch(b"z", pid=5, epoch=0, seq=3))[0]["ErrorCode"] == \
        E["INVALID_PRODUCER_EPOCH"]
    assert produce(cluster, 9, "orders", 0, batch(b"n", pid=5, epoch=2, seq=7))[0]["ErrorCode"] == \
        E["OUT_OF_ORDER_SEQUENCE_NUMBER"]                                      # a new epoch starts at 0
    assert produce(cluster, 9, "orders", 0, batch(b"n", pid=5, epoch=2, seq=0))[0]["ErrorCode"] == 0
    # a transaction marker with a bumped epoch (TV2) fences the old epoch too
    cluster.topics.partition("orders", 0).append_marker("ABORT", cluster.now, 5, 3)
    assert produce(cluster, 9, "orders", 0, batch(b"o", pid=5, epoch=2, seq=1))[0]["ErrorCode"] == \
        E["INVALID_PRODUCER_EPOCH"]
    assert produce(cluster, 9, "orders", 0, batch(b"o", pid=5, epoch=3, seq=0))[0]["ErrorCode"] == 0


def test_produce_rejects_invalid_record_data(cluster):
    good = batch(b"x")
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    cases = [(b"", E["INVALID_RECORD"]), (None, E["INVALID_RECORD"]), (good + good, E["INVALID_RECORD"]),
             (bytes(corrupt), E["CORRUPT_MESSAGE"]), (good[:30], E["CORRUPT_MESSAGE"]),
             (write_batch([]), E["INVALID_RECORD"]), (batch(b"x", pid=3, epoch=0, seq=-1), E["INVALID_RECORD"])]
    for records, code in cases:
        r, _ = produce(cluster, 9, "orders", 0, records)
        assert r["ErrorCode"] == code, records
    assert cluster.topics.partition("orders", 0).entries == []
    assert produce(cluster, 9, "orders", 0, good, acks=2)[0]["ErrorCode"] == E["INVALID_REQUIRED_ACKS"]


def test_produce_to_an_internal_topic_is_an_invalid_topic(cluster):
    r, _ = produce(cluster, 9, "__consumer_offsets", 0, batch(b"x"))
    assert r["ErrorCode"] == E["INVALID_TOPIC_EXCEPTION"]


# ---- Fetch ------------------------------------------------------------------------------------------
def test_fetch_returns_the_stored_batches_from_the_fetch_offset(cluster):
    produce(cluster, 9, "orders", 0, batch(b"a", b"b"))
    produce(cluster, 9, "orders", 0, batch(b"c"))
    p, top = fetch(cluster, 12, "orders", 0, 1)
    assert (top["ErrorCode"], top["SessionId"]) == (0, 0)
    assert (p["ErrorCode"], p["HighWatermark"], p["LastStableOffset"], p["LogStartOffset"]) == (0, 3, 3, 0)
    assert values(p["Records"]) == [(0, b"a"), (1, b"b"), (2, b"c")]       # the whole batch holding offset 1
    assert p["Records"] == b"".join(cluster.topics.partition("orders", 0).batches)
    p, _ = fetch(cluster, 12, "orders", 0, 2)
    assert values(p["Records"]) == [(2, b"c")]
    p, _ = fetch(cluster, 12, "orders", 0, 3)
    assert (p["ErrorCode"], p["Records"]) == (0, b"")
    assert fetch(cluster, 4, "orders", 0, 0)[0]["AbortedTransactions"] is None


def test_fetch_offset_out_of_range(cluster):
    produce(cluster, 9, "orders", 0, batch(b"a"))
    for offset in (2, 100, -1):
        p, _ = fetch(cluster, 12, "orders", 0, offset)
        assert (p["ErrorCode"], p["HighWatermark"], p["Records"]) == (E["OFFSET_OUT_OF_RANGE"], 1, b"")


def test_fetch_read_committed_stops_at_the_last_stable_offset_and_lists_aborted_transactions(cluster):
    cluster.txns = StubTxns()
    log = cluster.topics.partition("orders", 0)
    produce(cluster, 9, "orders", 0, batch(b"plain"))                                   # 0
    produce(cluster, 9, "orders", 0, batch(b"t1", pid=9, epoch=0, seq=0, txn=True), txn_id="a")   # 1
    produce(cluster, 9, "orders", 0, batch(b"after"))                                   # 2
    uncommitted, _ = fetch(cluster, 12, "orders", 0, 0, isolation=0)
    committed, _ = fetch(cluster, 12, "orders", 0, 0, isolation=1)
    assert [v for _, v in values(uncommitted["Records"])] == [b"plain", b"t1", b"after"]
    assert [v for _, v in values(committed["Records"])] == [b"plain"]
    assert (committed["HighWatermark"], committed["LastStableOffset"]) == (3, 1)
    assert committed["AbortedTransactions"] == []
    assert list_offset(cluster, 11, "orders", 0, -1, isolation=1)["Offset"] == 1
    assert list_offset(cluster, 11, "orders", 0, -1, isolation=0)["Offset"] == 3
    log.append_marker("ABORT", cluster.now, 9, 0)                                        # 3
    committed, _ = fetch(cluster, 12, "orders", 0, 0, isolation=1)
    assert committed["LastStableOffset"] == 4
    assert committed["AbortedTransactions"] == [{"ProducerId": 9, "FirstOffset": 1}]
    batches = read_batches(committed["Records"])
    assert [b["is_control"] for b in batches] == [False, False, False, True]  # the consumer drops aborted/control
    produce(cluster, 9, "orders", 0, batch(b"t2", pid=9, epoch=0, seq=1, txn=True), txn_id="a")   # 4
    log.append_marker("COMMIT", cluster.now, 9, 0)                                       # 5
    later, _ = fetch(cluster, 12, "orders", 0, 4, isolation=1)
    assert later["AbortedTransactions"] == [] and values(later["Records"])[0] == (4, b"t2")


def test_fetch_v12_by_name_v13_by_topic_id_and_leader_epochs(cluster):
    tid = cluster.topics.get("orders").topic_id
    produce(cluster, 9, "orders", 0, batch(b"a"))
    p, raw = fetch(cluster, 12, "orders", 0, 0)
    assert p["ErrorCode"] == 0 and raw["Responses"][0]["Topic"] == "orders"
    p, raw = fetch(cluster, 13, tid, 0, 0)
    assert p["ErrorCode"] == 0 and raw["Responses"][0]["TopicId"] == tid and "Topic" not in raw["Responses"][0]
    assert fetch(cluster, 18, tid, 0, 0, leader_epoch=0)[0]["ErrorCode"] == 0
    assert fetch(cluster, 18, tid, 0, 0, leader_epoch=1)[0]["ErrorCode"] == E["UNKNOWN_LEADER_EPOCH"]
    cluster.topics.partition("orders", 0).leader_epoch = 2
    assert fetch(cluster, 18, tid, 0, 0, leader_epoch=1)[0]["ErrorCode"] == E["FENCED_LEADER_EPOCH"]
    assert fetch(cluster, 12, "ghost", 0, 0)[0]["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]


def test_fetch_sessions_are_never_created_and_incremental_fetches_are_refused(cluster):
    _, top = fetch(cluster, 12, "orders", 0, 0, session_epoch=0)
    assert (top["ErrorCode"], top["SessionId"]) == (0, 0)
    _, top = fetch(cluster, 12, "orders", 0, 0, session_epoch=1)
    assert (top["ErrorCode"], top["Responses"]) == (E["FETCH_SESSION_ID_NOT_FOUND"], [])


def test_fetch_read_acl_and_follower_fetch_needs_cluster_action():
    c = Cluster(seed=23, acls=[Acl("User:a", "TOPIC", "orders", "READ")])
    c.create_topic("orders", 1)
    c.create_topic("secret", 1)
    assert fetch(c, 12, "orders", 0, 0, principal="User:a")[0]["ErrorCode"] == 0
    assert fetch(c, 12, "secret", 0, 0, principal="User:a")[0]["ErrorCode"] == E["TOPIC_AUTHORIZATION_FAILED"]
    body = shape("FetchRequest", 12, {"ReplicaId": 1, "MaxBytes": 1000, "SessionEpoch": -1, "Topics": [
        {"Topic": "orders", "Partitions": [{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 100}]}]})
    out = codec.decode_response(c.handle(codec.encode_request("Fetch", 12, body), principal="User:a"), "Fetch", 12)
    assert out["body"]["Responses"][0]["Partitions"][0]["ErrorCode"] == E["TOPIC_AUTHORIZATION_FAILED"]


def test_fetch_returns_at_least_one_batch_then_respects_max_bytes(cluster):
    for v in (b"a" * 100, b"b" * 100, b"c" * 100):
        produce(cluster, 9, "orders", 0, batch(v))
    p, _ = fetch(cluster, 12, "orders", 0, 0, max_bytes=10)
    assert [o for o, _ in values(p["Records"])] == [0]                   # KIP-74: one batch even if too big
    p, _ = fetch(cluster, 12, "orders", 0, 0, max_bytes=400)
    assert [o for o, _ in values(p["Records"])] == [0, 1]


# ---- ListOffsets ------------------------------------------------------------------------------------
def test_list_offsets_latest_earliest_and_timestamps(cluster):
    # the records' own (CreateTime) timestamps count, as the producer stamped them
    produce(cluster, 9, "orders", 0, batch(b"a", b"b", base_timestamp=1000))
    produce(cluster, 9, "orders", 0, batch(b"c", base_timestamp=2000))
    assert list_offset(cluster, 1, "orders", 0, -1)["Offset"] == 3
    assert list_offset(cluster, 11, "orders", 0, -2)["Offset"] == 0
    found = list_offset(cluster, 11, "orders", 0, 1500)
    assert (found["Offset"], found["Timestamp"], found["ErrorCode"]) == (2, 2000, 0)
    missing = list_offset(cluster, 11, "orders", 0, 5000)
    assert (missing["Offset"], missing["Timestamp"], missing["ErrorCode"]) == (-1, -1, 0)
    top = list_offset(cluster, 7, "orders", 0, -3)
    assert (top["Offset"], top["Timestamp"]) == (2, 2000)
    assert list_offset(cluster, 9, "orders", 0, -5)["Offset"] == -1                   # no tiered storage
    assert list_offset(cluster, 11, "ghost", 0, -1)["ErrorCode"] == E["UNKNOWN_TOPIC_OR_PARTITION"]
    old = Cluster(seed=27, release="3.9")
    old.create_topic("orders", 1)
    produce(old, 9, "orders", 0, batch(b"a", b"b"))
    assert list_offset(old, 0, "orders", 0, -1)["OldStyleOffsets"] == [2]              # v0 (removed in 4.0)
    v0 = codec.encode_request("ListOffsets", 0, shape("ListOffsetsRequest", 0, {"ReplicaId": -1, "Topics": []}))
    assert cluster.dispatch(v0) == ("close", b"")                 # 4.4 does not serve v0: the connection closes


def test_list_offsets_goes_to_the_leader():
    c = Cluster(brokers=2, seed=24)
    c.create_topic("orders", 2)
    assert list_offset(c, 11, "orders", 1, -1, broker=0)["ErrorCode"] == E["NOT_LEADER_OR_FOLLOWER"]
    assert list_offset(c, 11, "orders", 1, -1, broker=1)["ErrorCode"] == 0


# ---- KIP-516 -----------------------------------------------------------------------------------
def test_kip516_recreated_topic_gets_a_new_id_and_the_old_id_is_a_stale_unknown_topic_id():
    c = Cluster(seed=25)
    old = create(c, 7, ("orders", 1, 1))[0]["TopicId"]
    assert produce(c, 13, old, 0, batch(b"old-1", b"old-2"))[0]["ErrorCode"] == 0
    assert delete(c, 6, ids=[old])[0]["ErrorCode"] == 0
    new = create(c, 7, ("orders", 1, 1))[0]["TopicId"]
    assert new != old and c.topics.by_id[old].deleted_at is not None
    # requests that still carry the old id are fenced: the stale read / write of KIP-516
    assert fetch(c, 13, old, 0, 1)[0]["ErrorCode"] == E["UNKNOWN_TOPIC_ID"]
    assert produce(c, 13, old, 0, batch(b"zombie"))[0]["ErrorCode"] == E["UNKNOWN_TOPIC_ID"]
    md = metadata(c, 12, [{"Name": None, "TopicId": old}])["Topics"][0]
    assert (md["ErrorCode"], md["TopicId"]) == (E["UNKNOWN_TOPIC_ID"], old)
    assert c.topics.partition("orders", 0).entries == []
    # by name, the same requests reach the NEW topic: a consumer's old position is now out of range
    # and nothing from the old topic is visible (the "stale state" hazard topic ids remove)
    assert fetch(c, 12, "orders", 0, 1)[0]["ErrorCode"] == E["OFFSET_OUT_OF_RANGE"]
    p, _ = fetch(c, 12, "orders", 0, 0)
    assert (p["ErrorCode"], p["Records"], p["HighWatermark"]) == (0, b"", 0)
    assert produce(c, 9, "orders", 0, batch(b"new"))[0]["ErrorCode"] == 0
    assert values(fetch(c, 13, new, 0, 0)[0]["Records"]) == [(0, b"new")]
    assert metadata(c, 12, by_name(["orders"]))["Topics"][0]["TopicId"] == new


def test_kip516_topic_ids_are_never_reused_and_never_reserved():
    c = Cluster(seed=26)
    ids = set()
    for _ in range(40):
        r = create(c, 7, ("t", 1, 1))[0]
        assert r["ErrorCode"] == 0
        ids.add(r["TopicId"])
        delete(c, 6, names=["t"])
    assert len(ids) == 40
    assert not ids & RESERVED and not any(to_kafka_str(i).startswith("-") for i in ids)
    assert all(i not in ids for i in (t.topic_id for t in c.topics.by_id.values() if t.internal))


# ---- random requests ----------------------------------------------------------------------------------
APIS = ("Metadata", "CreateTopics", "DeleteTopics", "FindCoordinator", "Produce", "Fetch", "ListOffsets")
NAMES = ("orders", "payments", "ghost", "__consumer_offsets", "bad name", "")
INTS = {"Index": (-1, 3), "Partition": (-1, 3), "PartitionIndex": (-1, 3), "FetchOffset": (-2, 6),
        "Timestamp": (-7, 3000), "IsolationLevel": (0, 2), "KeyType": (0, 3), "NumPartitions": (-2, 4),
        "ReplicationFactor": (-1, 3), "SessionEpoch": (-1, 2), "CurrentLeaderEpoch": (-1, 1), "Acks": (-1, 2),
        "ReplicaId": (-2, 1), "MaxBytes": (0, 300), "PartitionMaxBytes": (0, 300)}


def _records(rng: random.Random):
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice([None, b"", bytes(rng.randrange(256) for _ in range(rng.randrange(80)))])
    pid = rng.choice([-1, 1, 2])
    return batch(*[b"v"] * rng.randint(1, 3), pid=pid, epoch=rng.randint(0, 2) if pid >= 0 else -1,
                 seq=rng.randint(0, 3) if pid >= 0 else -1, txn=pid >= 0 and rng.random() < 0.5)


def _tweak(fields, value, rng, ids):
    for f in fields:
        if f.name not in value:
            continue
        x = value[f.name]
        if f.is_struct and f.is_array and isinstance(x, list):
            value[f.name] = [_tweak(f.fields, e, rng, ids) for e in x[:3]]
        elif f.is_struct and isinstance(x, dict):
            _tweak(f.fields, x, rng, ids)
        elif f.elem == "uuid" and not f.is_array:
            value[f.name] = rng.choice(ids)
        elif f.name in ("Name", "Topic") and f.elem == "string" and not f.is_array:
            value[f.name] = rng.choice(NAMES + ((None,) if f.nullable else ()))
        elif f.name in ("Key", "CoordinatorKeys"):
            keys = ["my-group", "tx-1", f"sg:{to_kafka_str(rng.choice(ids))}:0", "a:b", ""]
            value[f.name] = rng.sample(keys, 2) if f.is_array else rng.choice(keys)
        elif f.name == "TopicNames":
            value[f.name] = rng.sample(NAMES, 2)
        elif f.name in INTS:
            value[f.name] = rng.randint(*INTS[f.name])
        elif f.elem == "records":
            value[f.name] = _records(rng)
        elif f.elem == "bool" and not f.is_array:
            value[f.name] = rng.random() < 0.5
    return value


@given(st.integers(0, 2**32), st.lists(st.tuples(st.sampled_from(APIS), st.integers(0, 99), st.integers(0, 2)),
                                       min_size=1, max_size=6))
def test_random_requests_never_raise_and_always_decode(seed, steps):
    rng = random.Random(seed)
    acls = None if rng.random() < 0.6 else [Acl("User:a", "TOPIC", "orders", "ALL"), Acl("*", "GROUP", "*", "ALL")]
    c = Cluster(brokers=3, seed=seed % 1000, acls=acls, auto_create_topics=rng.random() < 0.3)
    c.create_topic("orders", 2)
    gone = c.create_topic("payments", 1)
    c.delete_topic("payments")
    c.create_topic("payments", 3)
    if rng.random() < 0.3:
        c.down.add(2)
    for api, pick, broker in steps:
        spec = registry.get(api + "Request")
        version = list(spec.versions)[pick % len(list(spec.versions))]
        ids = [getattr(c.topics.get(n), "topic_id", ZERO_UUID) for n in ("orders", "payments")]
        ids += [gone, ZERO_UUID, random_uuid(rng)]
        body = _tweak(resolve(spec, version).fields, example_value(spec, version, seed=rng.randrange(5)), rng, ids)
        try:
            frame = codec.encode_request(api, version, body, correlation_id=pick)
        except codec.EncodeError:
            continue
        kind, out = c.dispatch(frame, broker=broker, principal=rng.choice([ANYONE, "User:a"]))
        if broker in c.down:
            assert (kind, out) == ("close", b"")
            continue
        served = served_versions(api, c.config)
        if kind == "close" and (served is None or not served[0] <= version <= served[1]):
            continue                   # a version the broker does not serve closes the connection
        if kind in ("none", "close"):  # acks=0 Produce: no response; with an error the connection closes
            assert api == "Produce" and body.get("Acks") == 0
            continue
        decoded = codec.decode_response(out, api, version)
        assert decoded["correlation_id"] == pick
    assert c.internal_errors == []


# ---- log retention (kipviz.broker.retention; UnifiedLog.deleteOldSegments) ------------------------------
def _retention_cluster(**settings):
    c = Cluster(brokers=1, seed=3, log_retention_check_interval_ms=1000, **settings)
    c.create_topic("logs", 1)
    c.start_log_retention()
    return c


def test_retention_bytes_deletes_whole_old_segments_and_moves_the_log_start():
    c = _retention_cluster(log_retention_bytes=3000, log_segment_bytes=1000)
    for _ in range(20):                     # ~500-byte batches: two per 1000-byte segment
        r, _ = produce(c, 9, "logs", 0, batch(bytes(450), base_timestamp=c.now))
        assert r["ErrorCode"] == 0
    log = c.topics.get("logs").partitions[0]
    assert log.log_start_offset == 0 and len(log.batches) == 20
    c.advance(1000)                          # the retention check runs
    start = log.log_start_offset
    held = sum(len(b) for b in log.batches)
    assert start > 0 and start % 2 == 0       # whole two-batch segments went
    # Kafka's rule: delete while (size - retention.bytes) - segment size >= 0, so what is held is
    # below retention.bytes plus one segment, and at least retention.bytes
    assert 3000 <= held < 3000 + 1000
    assert log.log_end_offset == 20
    assert list_offset(c, 7, "logs", 0, -2)["Offset"] == start             # EARLIEST follows
    assert list_offset(c, 7, "logs", 0, -1)["Offset"] == 20
    p, _ = fetch(c, 12, "logs", 0, start - 1)                               # below the log start
    assert p["ErrorCode"] == CODE["OFFSET_OUT_OF_RANGE"] and p["LogStartOffset"] == start
    p, _ = fetch(c, 12, "logs", 0, start)
    assert p["ErrorCode"] == 0 and p["LogStartOffset"] == start and values(p["Records"])[0][0] == start
    r, _ = produce(c, 9, "logs", 0, batch(b"x", base_timestamp=c.now))
    assert r["LogStartOffset"] == start
    assert any("log retention (retention.bytes)" in getattr(e, "text", "") for e in c.events)


def test_retention_ms_deletes_segments_older_than_it_per_topic_config():
    c = Cluster(brokers=1, seed=3, log_retention_check_interval_ms=1000, log_segment_bytes=1000)
    body = {"Topics": [{"Name": "short", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                        "Configs": [{"Name": "retention.ms", "Value": "5000"}]}],
            "timeoutMs": 1000, "validateOnly": False}
    assert call(c, "CreateTopics", 7, body)["Topics"][0]["ErrorCode"] == 0
    c.create_topic("long", 1)
    c.start_log_retention()
    for t in ("short", "long"):
        for _ in range(4):
            produce(c, 9, t, 0, batch(bytes(600), base_timestamp=c.now))
    c.advance(3000)
    assert c.topics.get("short").partitions[0].log_start_offset == 0       # not old enough yet
    c.advance(4000)
    short, long_ = c.topics.get("short").partitions[0], c.topics.get("long").partitions[0]
    assert short.log_start_offset == short.log_end_offset == 4 and short.batches == []
    assert long_.log_start_offset == 0                                      # broker default: 7 days
    assert list_offset(c, 7, "short", 0, -2)["Offset"] == 4
    desc = call(c, "DescribeConfigs", 4, {"Resources": [{"ResourceType": 2, "ResourceName": "short",
                                                         "ConfigurationKeys": ["retention.ms"]}],
                                          "IncludeSynonyms": False, "IncludeDocumentation": False})
    entry = desc["Results"][0]["Configs"][0]
    assert entry["Value"] == "5000" and entry["ConfigSource"] == 1                      # DYNAMIC_TOPIC_CONFIG


def test_retention_keeps_an_open_transaction_whole_and_is_off_by_default():
    c = _retention_cluster(log_retention_bytes=0, log_segment_bytes=100)
    c.txns = StubTxns()
    produce(c, 9, "logs", 0, batch(bytes(200), base_timestamp=c.now))
    produce(c, 9, "logs", 0, batch(bytes(200), pid=7, epoch=0, seq=0, txn=True, base_timestamp=c.now),
            txn_id="t")
    produce(c, 9, "logs", 0, batch(bytes(200), base_timestamp=c.now))
    c.advance(1000)
    log = c.topics.get("logs").partitions[0]
    assert log.log_start_offset == 1                    # the open transaction's segment stays
    log.append_marker("COMMIT", c.now, 7, 0)
    c.advance(1000)
    assert log.log_start_offset == 4                    # retention.bytes 0: everything goes
    plain = Cluster(brokers=1, seed=3)                  # the scenarios: no retention task
    plain.create_topic("logs", 1)
    plain.start_log_retention()
    produce(plain, 9, "logs", 0, batch(bytes(200), base_timestamp=plain.now))
    plain.advance(10 ** 10)
    assert plain.topics.get("logs").partitions[0].log_start_offset == 0


def test_idle_producer_state_expires_with_the_retention_task():
    c = _retention_cluster(producer_id_expiration_ms=5000)
    r, _ = produce(c, 9, "logs", 0, batch(b"a", pid=11, epoch=0, seq=0, base_timestamp=c.now))
    assert r["ErrorCode"] == 0
    from kipviz.broker.handlers.metadata import model_state
    producers = model_state(c)["producers"]
    assert len(producers) == 1
    c.advance(3000)
    r, _ = produce(c, 9, "logs", 0, batch(b"a", pid=11, epoch=0, seq=0, base_timestamp=c.now))
    assert r["BaseOffset"] == 0                      # a duplicate, answered with its first offset
    c.advance(7000)
    assert producers == {}                           # idle past producer.id.expiration.ms
