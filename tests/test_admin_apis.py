"""The admin RPCs of issue 34 through real request frames (Cluster.call encodes each request with
the codec, Cluster.handle answers it, the answer is decoded): CreatePartitions, DeleteRecords,
DescribeCluster, DescribeLogDirs, DescribeProducers/ListTransactions/DescribeTransactions on a
hanging transaction, OffsetDelete, KIP-932's share-group offset RPCs, the ACL RPCs, and ApiVersions
listing exactly what is served per release."""
from __future__ import annotations

import pytest

from kipviz.broker import Acl, Cluster
from kipviz.broker.handlers import HANDLERS
from kipviz.clients.producer import Producer
from kipviz.records.consumer_protocol import encode_subscription
from kipviz.schema import registry
from kipviz.schema.error_codes import CODE
from kipviz.schema.releases import RELEASES


def topics_of(c, *names, partitions=1):
    for n in names:
        c.create_topic(n, partitions)


def test_api_versions_lists_exactly_the_handled_apis_per_release():
    for release in RELEASES:
        c = Cluster(release=release)
        keys = c.call("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})["ApiKeys"]
        listed = {registry.by_api_key(k["ApiKey"], "request").api for k in keys}
        assert listed <= set(HANDLERS) and "LeaderAndIsr" not in listed
        for api in ("AlterConfigs", "IncrementalAlterConfigs", "CreatePartitions", "DeleteRecords", "OffsetDelete",
                    "DescribeCluster", "DescribeProducers", "ListTransactions", "DescribeTransactions",
                    "CreateAcls", "DescribeAcls", "DeleteAcls", "SaslHandshake", "SaslAuthenticate",
                    "DescribeLogDirs"):
            assert api in listed, (release, api)
        share_admin = {"DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets"}
        assert (share_admin <= listed) == (release != "4.0")
        got = {registry.by_api_key(k["ApiKey"], "request").api: (k["MinVersion"], k["MaxVersion"]) for k in keys}
        assert got["ListTransactions"] == ((0, 1) if release == "4.0" else (0, 2))
        assert got["DescribeLogDirs"] == ((1, 5) if release in ("4.3", "4.4") else (1, 4))
        assert got["CreateAcls"] == (1, 3)
        assert got["ElectLeaders"] == (0, 2)
        for api, (lo, hi) in got.items():       # every listed version is answered, not UNSUPPORTED_VERSION
            assert api in HANDLERS and lo <= hi


def test_create_partitions_grows_a_topic_and_refuses_shrinking_and_bad_assignments():
    c = Cluster(brokers=3)
    topics_of(c, "t")

    def grow(name, count, assignments=None, validate_only=False):
        body = {"Topics": [{"Name": name, "Count": count, "Assignments": assignments}], "TimeoutMs": 1000,
                "ValidateOnly": validate_only}
        return c.call("CreatePartitions", 3, body)["Results"][0]
    assert grow("t", 3, validate_only=True)["ErrorCode"] == 0 and len(c.topics.get("t").partitions) == 1
    assert grow("t", 3)["ErrorCode"] == 0 and len(c.topics.get("t").partitions) == 3
    same = grow("t", 3)
    assert (same["ErrorCode"], same["ErrorMessage"]) == (CODE["INVALID_PARTITIONS"], "Topic already has 3 partition(s).")
    assert grow("t", 2)["ErrorMessage"] == "The topic t currently has 3 partition(s); 2 would not be an increase."
    wrong = grow("t", 5, [{"BrokerIds": [2]}])
    assert wrong["ErrorCode"] == CODE["INVALID_REPLICA_ASSIGNMENT"]
    assert grow("t", 4, [{"BrokerIds": [2]}])["ErrorCode"] == 0
    from kipviz.uuids import ZERO_UUID
    md = c.call("Metadata", 12, {"Topics": [{"Name": "t", "TopicId": ZERO_UUID}], "AllowAutoTopicCreation": False,
                                 "IncludeTopicAuthorizedOperations": False})
    parts = md["Topics"][0]["Partitions"]
    assert len(parts) == 4 and parts[3]["LeaderId"] == 2 and parts[3]["ReplicaNodes"] == [2]
    assert grow("nope", 2)["ErrorCode"] == CODE["UNKNOWN_TOPIC_OR_PARTITION"]
    assert c.internal_errors == []


def test_delete_records_moves_the_log_start_and_a_consumer_there_gets_offset_out_of_range():
    c = Cluster()
    topics_of(c, "t")
    p = Producer(c, client_id="p")
    for i in range(5):
        p.send("t", b"k", b"v%d" % i, partition=0)

    def delete(offset, name="t"):
        body = {"Topics": [{"Name": name, "Partitions": [{"PartitionIndex": 0, "Offset": offset}]}], "TimeoutMs": 1000}
        return c.call("DeleteRecords", 2, body)["Topics"][0]["Partitions"][0]
    assert delete(3) == {"PartitionIndex": 0, "LowWatermark": 3, "ErrorCode": 0}
    assert delete(9)["ErrorCode"] == CODE["OFFSET_OUT_OF_RANGE"]
    assert delete(-7)["ErrorCode"] == CODE["OFFSET_OUT_OF_RANGE"]
    assert delete(-1) == {"PartitionIndex": 0, "LowWatermark": 5, "ErrorCode": 0}      # -1: the high watermark
    assert delete(0, "__consumer_offsets")["ErrorCode"] == CODE["INVALID_TOPIC_EXCEPTION"]
    fetch = c.call("Fetch", 12, {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1 << 20,
                                 "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
                                 "Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "FetchOffset": 1,
                                                                           "PartitionMaxBytes": 1 << 20,
                                                                           "CurrentLeaderEpoch": -1,
                                                                           "LastFetchedEpoch": -1,
                                                                           "LogStartOffset": -1}]}],
                                 "ForgottenTopicsData": [], "RackId": ""})
    part = fetch["Responses"][0]["Partitions"][0]
    assert (part["ErrorCode"], part["LogStartOffset"]) == (CODE["OFFSET_OUT_OF_RANGE"], 5)
    earliest = c.call("ListOffsets", 7, {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [
        {"Name": "t", "Partitions": [{"PartitionIndex": 0, "Timestamp": -2, "CurrentLeaderEpoch": -1}]}]})
    assert earliest["Topics"][0]["Partitions"][0]["Offset"] == 5


def test_delete_records_on_a_compact_only_topic_is_a_policy_violation():
    c = Cluster()
    c.call("CreateTopics", 7, {"Topics": [{"Name": "c", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                                           "Configs": [{"Name": "cleanup.policy", "Value": "compact"}]}],
                               "timeoutMs": 1000, "validateOnly": False})
    body = {"Topics": [{"Name": "c", "Partitions": [{"PartitionIndex": 0, "Offset": 0}]}], "TimeoutMs": 1000}
    assert c.call("DeleteRecords", 2, body)["Topics"][0]["Partitions"][0]["ErrorCode"] == CODE["POLICY_VIOLATION"]


def test_describe_cluster_and_log_dirs():
    c = Cluster(brokers=3)
    topics_of(c, "t", partitions=3)
    r = c.call("DescribeCluster", 2, {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1,
                                      "IncludeFencedBrokers": False})
    assert r["ErrorCode"] == 0 and [b["BrokerId"] for b in r["Brokers"]] == [0, 1, 2]
    assert r["ClusterAuthorizedOperations"] == -2**31 and r["ControllerId"] in (0, 1, 2)
    c.down.add(2)
    r = c.call("DescribeCluster", 2, {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1,
                                      "IncludeFencedBrokers": True})
    assert [(b["BrokerId"], b["IsFenced"]) for b in r["Brokers"]] == [(0, False), (1, False), (2, True)]
    r = c.call("DescribeCluster", 1, {"IncludeClusterAuthorizedOperations": False, "EndpointType": 2})
    assert r["ErrorCode"] == CODE["MISMATCHED_ENDPOINT_TYPE"]
    dirs = c.call("DescribeLogDirs", 4, {"Topics": [{"Topic": "t", "Partitions": [0, 1, 2]}]}, broker=1)
    held = dirs["Results"][0]["Topics"]
    assert dirs["ErrorCode"] == 0 and held == [{"Name": "t", "Partitions": [
        {"PartitionIndex": 1, "PartitionSize": 0, "OffsetLag": 0, "IsFutureKey": False}]}]


def test_the_hanging_transaction_tools():
    c = Cluster()
    topics_of(c, "orders")
    p = Producer(c, "app-1", client_id="app")
    p.init_transactions()
    p.begin_transaction()
    p.send("orders", b"k", b"v", partition=0)
    p.send("orders", b"k", b"w", partition=0)
    # DescribeProducers on the leader: the open transaction's first offset holds the LSO back
    r = c.call("DescribeProducers", 0, {"Topics": [{"Name": "orders", "PartitionIndexes": [0, 7]}]})
    parts = r["Topics"][0]["Partitions"]
    assert parts[1]["ErrorCode"] == CODE["UNKNOWN_TOPIC_OR_PARTITION"]
    (active,) = parts[0]["ActiveProducers"]
    assert (active["ProducerId"], active["CurrentTxnStartOffset"], active["LastSequence"]) == (p.producer_id, 0, 1)
    coordinator = c.coordinator_broker(1, "app-1")
    listed = c.call("ListTransactions", 2, {"StateFilters": [], "ProducerIdFilters": [], "DurationFilter": -1,
                                            "TransactionalIdPattern": "app-.*"}, broker=coordinator)
    assert [(t["TransactionalId"], t["TransactionState"]) for t in listed["TransactionStates"]] == [("app-1", "Ongoing")]
    other = c.call("ListTransactions", 1, {"StateFilters": ["Bogus"], "ProducerIdFilters": [], "DurationFilter": -1},
                   broker=coordinator)
    assert other["UnknownStateFilters"] == ["Bogus"]
    bad = c.call("ListTransactions", 2, {"StateFilters": [], "ProducerIdFilters": [], "DurationFilter": -1,
                                         "TransactionalIdPattern": "("}, broker=coordinator)
    assert bad["ErrorCode"] == CODE["INVALID_REGULAR_EXPRESSION"]
    d = c.call("DescribeTransactions", 0, {"TransactionalIds": ["app-1", "nope", ""]}, broker=coordinator)
    app, nope, empty = d["TransactionStates"]
    assert (app["TransactionState"], app["ProducerId"], app["Topics"]) == ("Ongoing", p.producer_id,
                                                                         [{"Topic": "orders", "Partitions": [0]}])
    assert nope["ErrorCode"] == CODE["TRANSACTIONAL_ID_NOT_FOUND"] and empty["ErrorCode"] == CODE["INVALID_REQUEST"]
    elsewhere = next(b for b in range(c.config.brokers + 1) if b != coordinator)
    if elsewhere < c.config.brokers:
        assert c.call("DescribeTransactions", 0, {"TransactionalIds": ["app-1"]},
                      broker=elsewhere)["TransactionStates"][0]["ErrorCode"] == CODE["NOT_COORDINATOR"]
    p.commit_transaction()
    r = c.call("DescribeProducers", 0, {"Topics": [{"Name": "orders", "PartitionIndexes": [0]}]})
    assert r["Topics"][0]["Partitions"][0]["ActiveProducers"][0]["CurrentTxnStartOffset"] == -1


def test_offset_delete_refuses_a_topic_the_group_reads():
    c = Cluster()
    topics_of(c, "a", "b")
    gid = "g"
    coordinator = c.coordinator_broker(0, gid)
    commit = {"GroupId": gid, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
              "RetentionTimeMs": -1, "Topics": [{"Name": t, "Partitions": [
                  {"PartitionIndex": 0, "CommittedOffset": 1, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}
                  for t in ("a", "b")]}
    assert c.call("OffsetCommit", 8, commit, broker=coordinator)["Topics"][0]["Partitions"][0]["ErrorCode"] == 0

    def delete(topics, broker=coordinator):
        return c.call("OffsetDelete", 0, {"GroupId": gid, "Topics": [
            {"Name": t, "Partitions": [{"PartitionIndex": 0}]} for t in topics]}, broker=broker)
    r = delete(["a", "nope"])
    assert r["ErrorCode"] == 0
    assert {t["Name"]: t["Partitions"][0]["ErrorCode"] for t in r["Topics"]} == {
        "a": 0, "nope": CODE["UNKNOWN_TOPIC_OR_PARTITION"]}
    assert c.groups.committed(gid, "a", 0) is None and c.groups.committed(gid, "b", 0) is not None
    # a classic consumer group reading b: b's offsets stay (GROUP_SUBSCRIBED_TO_TOPIC)
    join = {"GroupId": gid, "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000, "MemberId": "",
            "GroupInstanceId": None, "ProtocolType": "consumer",
            "Protocols": [{"Name": "range", "Metadata": encode_subscription(["b"])}], "Reason": None}
    first = c.call("JoinGroup", 9, join, broker=coordinator)
    member = first["MemberId"]
    c.call("JoinGroup", 9, dict(join, MemberId=member), broker=coordinator)
    c.advance(100)                                    # the first generation starts: its subscription is known
    assert c.groups.group_state(gid) in ("CompletingRebalance", "Stable")
    r = delete(["b", "a"])
    assert r["ErrorCode"] == 0
    assert {t["Name"]: t["Partitions"][0]["ErrorCode"] for t in r["Topics"]} == {
        "b": CODE["GROUP_SUBSCRIBED_TO_TOPIC"], "a": 0}
    assert c.groups.committed(gid, "b", 0) is not None
    assert c.internal_errors == []


def test_share_group_offsets_describe_alter_delete():
    c = Cluster()
    topics_of(c, "s", partitions=2)
    gid = "sg"
    b = c.coordinator_broker(0, gid)
    alter = {"GroupId": gid, "Topics": [{"TopicName": "s", "Partitions": [
        {"PartitionIndex": 0, "StartOffset": 4}, {"PartitionIndex": 5, "StartOffset": 1}]}]}
    r = c.call("AlterShareGroupOffsets", 0, alter, broker=b)
    assert r["ErrorCode"] == 0
    assert [(p["PartitionIndex"], p["ErrorCode"]) for p in r["Responses"][0]["Partitions"]] == [
        (0, 0), (5, CODE["UNKNOWN_TOPIC_OR_PARTITION"])]
    d = c.call("DescribeShareGroupOffsets", 1, {"Groups": [{"GroupId": gid, "Topics": None}]}, broker=b)
    (topic,) = d["Groups"][0]["Topics"]
    assert (topic["TopicName"], [(p["PartitionIndex"], p["StartOffset"], p["Lag"]) for p in topic["Partitions"]]) == \
        ("s", [(0, 4, 0)])
    r = c.call("DeleteShareGroupOffsets", 0, {"GroupId": gid, "Topics": [{"TopicName": "s"}, {"TopicName": "x"}]},
               broker=b)
    assert [(t["TopicName"], t["ErrorCode"]) for t in r["Responses"]] == [
        ("s", 0), ("x", CODE["UNKNOWN_TOPIC_OR_PARTITION"])]
    d = c.call("DescribeShareGroupOffsets", 1, {"Groups": [{"GroupId": gid, "Topics": [{"TopicName": "s",
                                                                                      "Partitions": [0]}]}]}, broker=b)
    assert d["Groups"][0]["Topics"][0]["Partitions"][0]["StartOffset"] == -1
    none = c.call("DeleteShareGroupOffsets", 0, {"GroupId": "other", "Topics": [{"TopicName": "s"}]},
                  broker=c.coordinator_broker(0, "other"))
    assert none["ErrorCode"] == CODE["GROUP_ID_NOT_FOUND"]
    assert c.internal_errors == []


def test_acl_rpcs_create_describe_and_delete_bindings_the_authorizer_then_applies():
    c = Cluster(acls=[], super_users=("User:admin",))
    admin, alice = "User:admin", "User:alice"
    topics_of(c, "alice.orders", "bob.orders")
    create = {"Creations": [
        {"ResourceType": 2, "ResourceName": "alice.", "ResourcePatternType": 4, "Principal": alice, "Host": "*",
         "Operation": 2, "PermissionType": 3},
        {"ResourceType": 4, "ResourceName": "my-cluster", "ResourcePatternType": 3, "Principal": alice, "Host": "*",
         "Operation": 8, "PermissionType": 3},
        {"ResourceType": 2, "ResourceName": "x", "ResourcePatternType": 3, "Principal": "alice", "Host": "*",
         "Operation": 3, "PermissionType": 3}]}
    results = c.call("CreateAcls", 3, create, principal=admin)["Results"]
    assert [r["ErrorCode"] for r in results] == [0, CODE["INVALID_REQUEST"], CODE["INVALID_REQUEST"]]
    assert results[1]["ErrorMessage"] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert results[2]["ErrorMessage"].startswith("Could not parse principal from `alice`")
    denied = c.call("CreateAcls", 3, create, principal=alice)["Results"]
    assert {r["ErrorCode"] for r in denied} == {CODE["CLUSTER_AUTHORIZATION_FAILED"]}
    assert c.authorized(alice, "TOPIC", "alice.orders", "WRITE") and not c.authorized(alice, "TOPIC", "bob.orders", "READ")
    flt = {"ResourceTypeFilter": 2, "ResourceNameFilter": "alice.orders", "PatternTypeFilter": 2,
           "PrincipalFilter": None, "HostFilter": None, "Operation": 1, "PermissionType": 1}
    described = c.call("DescribeAcls", 3, flt, principal=admin)
    assert described["Resources"] == [{"ResourceType": 2, "ResourceName": "alice.", "PatternType": 4, "Acls": [
        {"Principal": alice, "Host": "*", "Operation": 2, "PermissionType": 3}]}]
    gone = c.call("DeleteAcls", 3, {"Filters": [dict(flt, PatternTypeFilter=4, ResourceNameFilter="alice.")]},
                  principal=admin)
    assert len(gone["FilterResults"][0]["MatchingAcls"]) == 1
    assert not c.authorized(alice, "TOPIC", "alice.orders", "WRITE")
    off = Cluster()
    assert off.call("DescribeAcls", 3, flt)["ErrorCode"] == CODE["SECURITY_DISABLED"]
    assert off.call("CreateAcls", 3, create)["Results"][0]["ErrorCode"] == CODE["SECURITY_DISABLED"]
    # an UNKNOWN (0) code cannot be parsed by Kafka: the connection closes, nothing is answered
    assert c.call("DescribeAcls", 3, dict(flt, Operation=0), principal=admin) is None


@pytest.mark.parametrize("release", ["4.0", "4.4"])
def test_every_new_api_answers_without_a_model_error(release):
    """Each new RPC at each version the release serves, with an empty-ish request: an answer, never
    UNKNOWN_SERVER_ERROR from a model bug."""
    from kipviz.codec.defaults import struct_default
    from kipviz.codec.plan import plan_for
    c = Cluster(release=release, acls=[Acl("*", "CLUSTER", "kafka-cluster", "ALL")])
    new = ("AlterConfigs", "IncrementalAlterConfigs", "CreatePartitions", "DeleteRecords", "OffsetDelete",
           "DescribeCluster", "DescribeProducers", "ListTransactions", "DescribeTransactions", "CreateAcls",
           "DescribeAcls", "DeleteAcls", "DescribeLogDirs", "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
           "DeleteShareGroupOffsets", "SaslHandshake", "SaslAuthenticate")
    from kipviz.broker.config import served_versions
    for api in new:
        served = served_versions(api, c.config)
        if served is None:
            continue
        for v in range(served[0], served[1] + 1):
            body = struct_default(plan_for(registry.get(api + "Request"), v).vm.fields)
            for k in ("ResourceTypeFilter", "PatternTypeFilter", "Operation", "PermissionType"):
                if k in body:
                    body[k] = 1
            if "EndpointType" in body:
                body["EndpointType"] = 1
            c.call(api, v, body)
    assert c.internal_errors == []


def test_kipviz_list_and_the_explorer_show_the_new_apis(capsys):
    from kipviz import cli
    from kipviz.widgets.explorer import Explorer
    assert cli.main(["list", "--release", "4.4"]) == 0
    out = capsys.readouterr().out
    for api in ("AlterConfigsRequest (api key 33)", "IncrementalAlterConfigsRequest (api key 44)",
                "DescribeShareGroupOffsetsRequest (api key 90)", "SaslAuthenticateRequest (api key 36)",
                "CreateAclsRequest (api key 30)", "ListTransactionsRequest (api key 66)"):
        assert api in out
    assert cli.main(["list", "ListTransactionsRequest", "--release", "4.0"]) == 0
    assert "v2" not in capsys.readouterr().out                       # KIP-1152's v2 arrived in 4.1
    e = Explorer()
    assert e.select("DescribeProducers")
    assert "NOT_LEADER_OR_FOLLOWER" in e.errors_text and "TOPIC_AUTHORIZATION_FAILED" in e.errors_text
