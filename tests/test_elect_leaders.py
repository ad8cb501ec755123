"""ElectLeaders (api key 43) through real request frames (codec.encode_request -> Cluster.handle ->
codec.decode_response) at every served version, and through librdkafka's AdminClient.elect_leaders
against `kipviz serve`: a preferred election after a leader moved away, an unclean one after the
leader's broker crashed (ReplicationControlManager.electLeaders / electLeader, PartitionChangeBuilder)."""
from __future__ import annotations

import pytest

from kipviz import codec
from kipviz.broker import Acl, Cluster
from kipviz.broker.handlers.elect_leaders import DEFAULT_MESSAGE
from kipviz.schema.error_codes import CODE

VERSIONS = (0, 1, 2)


def cluster_with(*topics, brokers=3, rf=3, **kw) -> Cluster:
    c = Cluster(brokers=brokers, release="4.4", **kw)
    body = {"Topics": [{"Name": t, "NumPartitions": 2, "ReplicationFactor": rf, "Assignments": [], "Configs": []}
                       for t in topics], "timeoutMs": 1000, "validateOnly": False}
    assert all(t["ErrorCode"] == 0 for t in c.call("CreateTopics", 7, body)["Topics"])
    return c


def elect(c, version, partitions, kind=0, principal="User:ANONYMOUS"):
    body = {"TopicPartitions": partitions, "TimeoutMs": 1000}
    if version >= 1:
        body["ElectionType"] = kind
    frame = codec.encode_request("ElectLeaders", version, body, correlation_id=7, client_id="t")
    live = min(b for b in range(c.config.brokers) if b not in c.down)     # the controller (a live broker)
    out = c.handle(frame, broker=live, principal=principal)
    assert out, "connection closed"
    return codec.decode_response(out, "ElectLeaders", version)["body"]


def errors(resp) -> dict:
    return {(t["Topic"], p["PartitionId"]): (p["ErrorCode"], p["ErrorMessage"])
            for t in resp["ReplicaElectionResults"] for p in t["PartitionResult"]}


def test_api_versions_lists_elect_leaders_v0_to_v2_in_4_4():
    c = Cluster(release="4.4")
    keys = c.call("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})["ApiKeys"]
    assert [(k["MinVersion"], k["MaxVersion"]) for k in keys if k["ApiKey"] == 43] == [(0, 2)]


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_election_restores_the_first_replica(version):
    c = cluster_with("t")
    log = c.topics.partition("t", 0)
    assert log.leader == 0
    c.move_partition_leader("t", 0, 1)                     # the replica list stays [0, 1, 2]
    epoch = log.leader_epoch
    md = c.call("Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                 "IncludeTopicAuthorizedOperations": False})
    md["Topics"] = [t for t in md["Topics"] if t["Name"] == "t"]
    assert md["Topics"][0]["Partitions"][0]["ReplicaNodes"] == [0, 1, 2]
    assert md["Topics"][0]["Partitions"][0]["LeaderId"] == 1
    resp = elect(c, version, [{"Topic": "t", "Partitions": [0, 1, 9]}, {"Topic": "nope", "Partitions": [0]}])
    assert ("ErrorCode" in resp) == (version >= 1) and resp.get("ErrorCode", 0) == 0
    got = errors(resp)
    assert got[("t", 0)] == (0, None)
    assert (log.leader, log.leader_epoch) == (0, epoch + 1)
    assert got[("t", 1)] == (CODE["ELECTION_NOT_NEEDED"], DEFAULT_MESSAGE["ELECTION_NOT_NEEDED"])
    assert got[("t", 9)] == (CODE["UNKNOWN_TOPIC_OR_PARTITION"], "No such partition as t-9")
    assert got[("nope", 0)] == (CODE["UNKNOWN_TOPIC_OR_PARTITION"], "No such topic as nope")
    assert c.internal_errors == []


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_leader_not_in_the_isr(version):
    c = cluster_with("t")
    c.move_partition_leader("t", 0, 1)
    c.crash_broker(0)                                      # the preferred replica is out of the ISR
    got = errors(elect(c, version, [{"Topic": "t", "Partitions": [0]}]))
    assert got[("t", 0)] == (CODE["PREFERRED_LEADER_NOT_AVAILABLE"], DEFAULT_MESSAGE["PREFERRED_LEADER_NOT_AVAILABLE"])
    assert c.topics.partition("t", 0).leader == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_null_partitions_lists_every_topic_but_only_partitions_that_needed_an_election(version):
    c = cluster_with("a", "b")
    c.move_partition_leader("b", 1, 0)                     # b-1's replicas [1, 2, 0]: preferred 1
    resp = elect(c, version, None)
    by_topic = {t["Topic"]: t["PartitionResult"] for t in resp["ReplicaElectionResults"]}
    assert by_topic["a"] == []                             # listed, with no partition (ELECTION_NOT_NEEDED)
    assert by_topic["b"] == [{"PartitionId": 1, "ErrorCode": 0, "ErrorMessage": None}]
    assert c.topics.partition("b", 1).leader == 1


@pytest.mark.parametrize("version", (1, 2))
def test_unclean_election(version):
    c = cluster_with("t", "single", rf=3)
    # a leader that is alive: nothing to do
    assert errors(elect(c, version, [{"Topic": "t", "Partitions": [0]}], kind=1))[("t", 0)][0] == \
        CODE["ELECTION_NOT_NEEDED"]
    c.crash_broker(0)
    got = errors(elect(c, version, [{"Topic": "t", "Partitions": [0]}], kind=1))
    assert got[("t", 0)] == (0, None) and c.topics.partition("t", 0).leader == 1     # the first live replica
    c2 = cluster_with("one", rf=1)
    c2.crash_broker(0)
    got = errors(elect(c2, version, [{"Topic": "one", "Partitions": [0]}], kind=1))
    assert got[("one", 0)] == (CODE["ELIGIBLE_LEADERS_NOT_AVAILABLE"], DEFAULT_MESSAGE["ELIGIBLE_LEADERS_NOT_AVAILABLE"])
    assert c2.topics.partition("one", 0).leader == 0


@pytest.mark.parametrize("version", (1, 2))
def test_unknown_election_type_is_invalid_request(version):
    c = cluster_with("t")
    resp = elect(c, version, [{"Topic": "t", "Partitions": [0]}], kind=5)
    assert resp["ErrorCode"] == CODE["INVALID_REQUEST"]
    assert errors(resp) == {("t", 0): (CODE["INVALID_REQUEST"], "Unknown election type 5")}


@pytest.mark.parametrize("version", VERSIONS)
def test_cluster_alter_is_needed(version):
    c = cluster_with("t", acls=[Acl("User:admin", "CLUSTER", "kafka-cluster", "ALTER")],
                     super_users=("User:ANONYMOUS",))
    c.move_partition_leader("t", 0, 1)
    resp = elect(c, version, [{"Topic": "t", "Partitions": [0]}], principal="User:bob")
    assert resp.get("ErrorCode", CODE["CLUSTER_AUTHORIZATION_FAILED"]) == CODE["CLUSTER_AUTHORIZATION_FAILED"]
    assert ("ErrorCode" in resp) == (version >= 1)         # v0: only the per-partition error
    code, message = errors(resp)[("t", 0)]
    assert code == CODE["CLUSTER_AUTHORIZATION_FAILED"] and "is not authorized" in message
    assert c.topics.partition("t", 0).leader == 1
    none = elect(c, version, None, principal="User:bob")
    assert none["ReplicaElectionResults"] == []
    assert errors(elect(c, version, [{"Topic": "t", "Partitions": [0]}], principal="User:admin"))[("t", 0)] == (0, None)


def test_librdkafka_elect_leaders_preferred_and_unclean():
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from kipviz.serve import Server
    with Server(brokers=3, speed=1.0) as srv:
        a = AdminClient({"bootstrap.servers": srv.bootstrap})
        a.create_topics([NewTopic("el", 1, 3)], operation_timeout=10)["el"].result(20)
        with srv.lock:
            assert srv.cluster.topics.partition("el", 0).leader == 0
            srv.cluster.move_partition_leader("el", 0, 2)
        tp = TopicPartition("el", 0)
        done = a.elect_leaders(ElectionType.PREFERRED, [tp]).result(20)
        assert done[tp] is None                        # elected
        with srv.lock:
            assert srv.cluster.topics.partition("el", 0).leader == 0
        again = a.elect_leaders(ElectionType.PREFERRED, [tp]).result(20)
        assert isinstance(again[tp], ck.KafkaError) and again[tp].code() == ck.KafkaError.ELECTION_NOT_NEEDED
        with srv.lock:                                 # the leader's broker crashes (not the controller, 0)
            srv.cluster.move_partition_leader("el", 0, 2)
            srv.cluster.crash_broker(2)
        unclean = a.elect_leaders(ElectionType.UNCLEAN, [tp]).result(20)
        assert unclean[tp] is None
        with srv.lock:
            assert srv.cluster.topics.partition("el", 0).leader == 0
            assert srv.cluster.internal_errors == []
