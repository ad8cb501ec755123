"""The authorizer (kipviz.broker.authorizer) against StandardAuthorizer's rules
(metadata/.../authorizer/StandardAuthorizerData.java), and the handlers asking it what Kafka's
KafkaApis asks, in KafkaApis' order of checks (TxnOffsetCommit: the transactional id, then the
group, then each topic)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.broker import Acl, Cluster
from kipviz.broker.authorizer import Authorizer
from kipviz.schema.error_codes import CODE

ALICE, BOB = "User:alice", "User:bob"


@pytest.mark.parametrize("acls,principal,rtype,name,op,expected", [
    ([Acl(ALICE, "TOPIC", "orders", "READ")], ALICE, "TOPIC", "orders", "READ", True),
    ([Acl(ALICE, "TOPIC", "orders", "READ")], ALICE, "TOPIC", "orders", "DESCRIBE", True),     # READ implies DESCRIBE
    ([Acl(ALICE, "TOPIC", "orders", "READ")], ALICE, "TOPIC", "orders", "WRITE", False),
    ([Acl(ALICE, "TOPIC", "orders", "READ")], BOB, "TOPIC", "orders", "READ", False),
    ([Acl(ALICE, "TOPIC", "orders", "ALTER_CONFIGS")], ALICE, "TOPIC", "orders", "DESCRIBE_CONFIGS", True),
    ([Acl(ALICE, "TOPIC", "orders", "DESCRIBE")], ALICE, "TOPIC", "orders", "READ", False),  # not the other way
    # a DENY denies only its own operation: DENY READ leaves DESCRIBE (from ALL) allowed
    ([Acl(ALICE, "TOPIC", "*", "ALL"), Acl(ALICE, "TOPIC", "secret", "READ", allow=False)], ALICE, "TOPIC", "secret",
     "DESCRIBE", True),
    ([Acl(ALICE, "TOPIC", "*", "ALL"), Acl(ALICE, "TOPIC", "secret", "READ", allow=False)], ALICE, "TOPIC", "secret",
     "READ", False),
    ([Acl(ALICE, "TOPIC", "*", "ALL"), Acl("User:*", "TOPIC", "sec", "ALL", allow=False, pattern="PREFIXED")], ALICE,
     "TOPIC", "secret", "WRITE", False),                                                   # deny wins, any pattern
    ([Acl(ALICE, "TOPIC", "alice.", "ALL", pattern="PREFIXED")], ALICE, "TOPIC", "alice.orders", "WRITE", True),
    ([Acl(ALICE, "TOPIC", "alice.", "ALL", pattern="PREFIXED")], ALICE, "TOPIC", "alice", "WRITE", False),
    ([Acl(ALICE, "TOPIC", "alice.", "ALL")], ALICE, "TOPIC", "alice.orders", "WRITE", False),  # literal: exact only
    ([Acl("*", "GROUP", "*", "READ")], BOB, "GROUP", "g", "READ", True),                        # "*" is User:*
    ([Acl(ALICE, "TOPIC", "orders", "READ", host="10.0.0.5")], ALICE, "TOPIC", "orders", "READ", False),
    ([], ALICE, "TOPIC", "orders", "READ", False),
])
def test_standard_authorizer_rules(acls, principal, rtype, name, op, expected):
    assert Authorizer(acls).authorize(principal, rtype, name, op) is expected


def test_hosts_super_users_and_the_no_acl_default():
    a = Authorizer([Acl(ALICE, "TOPIC", "orders", "READ", host="10.0.0.0/24")])
    assert a.authorize(ALICE, "TOPIC", "orders", "READ", host="10.0.0.9")
    assert not a.authorize(ALICE, "TOPIC", "orders", "READ", host="10.0.1.9")
    su = Authorizer([Acl("User:root", "TOPIC", "*", "ALL", allow=False)], super_users=("User:root",))
    assert su.authorize("User:root", "TOPIC", "x", "DELETE")                  # super users ignore DENY
    everyone = Authorizer([Acl(BOB, "TOPIC", "bobs", "READ")], allow_everyone_if_no_acl_found=True)
    assert everyone.authorize(ALICE, "TOPIC", "free", "WRITE")                # no ACL names "free"
    assert not everyone.authorize(ALICE, "TOPIC", "bobs", "READ")             # an ACL names it, not for alice
    assert Authorizer(None).authorize(ALICE, "TOPIC", "x", "DELETE")          # no authorizer configured


def test_authorize_by_resource_type():
    a = Authorizer([Acl(ALICE, "TOPIC", "a.", "WRITE", pattern="PREFIXED"),
                    Acl(ALICE, "TOPIC", "a", "WRITE", allow=False, pattern="PREFIXED")])
    assert not a.authorize_by_resource_type(ALICE, "TOPIC", "WRITE")          # the allow is dominated by a deny
    assert Authorizer([Acl(ALICE, "TOPIC", "x", "WRITE")]).authorize_by_resource_type(ALICE, "TOPIC", "WRITE")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([ALICE, BOB, "User:*"]), st.sampled_from(["orders", "ord", "*", "o"]),
                          st.sampled_from(["LITERAL", "PREFIXED"]), st.sampled_from(["READ", "WRITE", "ALL", "DESCRIBE"]),
                          st.booleans()), max_size=6),
       st.sampled_from(["orders", "other"]), st.sampled_from(["READ", "WRITE", "DESCRIBE"]))
def test_the_decision_follows_the_rules_written_out(bindings, name, op):
    """An independent reading of StandardAuthorizerData: any applicable DENY -> denied; else any
    applicable ALLOW -> allowed; else denied (allow.everyone.if.no.acl.found off)."""
    acls = [Acl(p, "TOPIC", n, o, allow, pattern) for p, n, pattern, o, allow in bindings]

    def resource(a):
        return name.startswith(a.resource_name) if a.pattern == "PREFIXED" else a.resource_name in (name, "*")

    def applies(a, deny):
        if a.principal not in (ALICE, "User:*") or not resource(a) or a.allow == deny:
            return False
        implied = {"DESCRIBE": {"READ", "WRITE", "DESCRIBE"}}.get(op, {op}) if not deny else {op}
        return a.operation == "ALL" or a.operation in implied
    expected = not any(applies(a, True) for a in acls) and any(applies(a, False) for a in acls)
    assert Authorizer(acls).authorize(ALICE, "TOPIC", name, op) is expected


# ---- the handlers ask what KafkaApis asks ------------------------------------------------------------
def _txn_offset_commit(c, principal, version=5):
    body = {"TransactionalId": "tx", "GroupId": "g", "ProducerId": 1, "ProducerEpoch": 0,
            "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
            "Topics": [{"Name": t, "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1,
                                                  "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}
                       for t in ("in", "secret")]}
    r = c.call("TxnOffsetCommit", version, body, principal=principal)
    return {t["Name"]: t["Partitions"][0]["ErrorCode"] for t in r["Topics"]}


def test_txn_offset_commit_checks_the_transactional_id_then_the_group_then_each_topic():
    acls = [Acl("User:app", "TRANSACTIONAL_ID", "tx", "WRITE"), Acl("User:app", "GROUP", "g", "READ"),
            Acl("User:app", "TOPIC", "in", "READ"), Acl("User:nogroup", "TRANSACTIONAL_ID", "tx", "WRITE"),
            Acl("User:notxn", "GROUP", "g", "READ")]
    c = Cluster(acls=acls)
    for t in ("in", "secret"):
        c.create_topic(t)
    # neither the transactional id nor the group: the transactional id is checked first
    assert set(_txn_offset_commit(c, "User:nobody").values()) == {CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]}
    assert set(_txn_offset_commit(c, "User:notxn").values()) == {CODE["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"]}
    assert set(_txn_offset_commit(c, "User:nogroup").values()) == {CODE["GROUP_AUTHORIZATION_FAILED"]}
    got = _txn_offset_commit(c, "User:app")
    assert got["secret"] == CODE["TOPIC_AUTHORIZATION_FAILED"] and got["in"] != CODE["TOPIC_AUTHORIZATION_FAILED"]


def test_offset_for_leader_epoch_does_not_tell_an_unauthorized_caller_which_topics_exist():
    c = Cluster(acls=[Acl(ALICE, "TOPIC", "mine", "DESCRIBE")])
    c.create_topic("mine")
    body = {"ReplicaId": -1, "Topics": [{"Topic": t, "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1,
                                                                      "LeaderEpoch": 0}]} for t in ("mine", "nope")]}
    r = c.call("OffsetForLeaderEpoch", 4, body, principal=ALICE)
    assert [t["Partitions"][0]["ErrorCode"] for t in r["Topics"]] == [0, CODE["TOPIC_AUTHORIZATION_FAILED"]]


def test_write_txn_markers_takes_alter_on_the_cluster_or_cluster_action():
    c = Cluster(acls=[Acl(ALICE, "CLUSTER", "kafka-cluster", "ALTER")])
    c.create_topic("t")
    body = {"Markers": [{"ProducerId": 5, "ProducerEpoch": 0, "TransactionResult": False, "CoordinatorEpoch": 0,
                         "Topics": [{"Name": "t", "PartitionIndexes": [0]}], "TransactionVersion": 0}]}
    ok = c.call("WriteTxnMarkers", 1, body, principal=ALICE)
    no = c.call("WriteTxnMarkers", 1, body, principal=BOB)
    code = lambda r: r["Markers"][0]["Topics"][0]["Partitions"][0]["ErrorCode"]   # noqa: E731
    assert code(ok) != CODE["CLUSTER_AUTHORIZATION_FAILED"] and code(no) == CODE["CLUSTER_AUTHORIZATION_FAILED"]


def test_describe_and_alter_configs_ask_describe_configs_and_alter_configs():
    c = Cluster(acls=[Acl(ALICE, "TOPIC", "t", "ALTER_CONFIGS")])
    c.create_topic("t")
    body = {"Resources": [{"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": ["retention.ms"]},
                          {"ResourceType": 4, "ResourceName": "0", "ConfigurationKeys": None}],
            "IncludeSynonyms": False, "IncludeDocumentation": False}
    r = c.call("DescribeConfigs", 4, body, principal=ALICE)["Results"]
    # ALTER_CONFIGS implies DESCRIBE_CONFIGS; the refused broker resource comes after the allowed ones
    assert [(x["ResourceType"], x["ErrorCode"]) for x in r] == [(2, 0), (4, CODE["CLUSTER_AUTHORIZATION_FAILED"])]
    alter = {"Resources": [{"ResourceType": 2, "ResourceName": "t", "Configs": [
        {"Name": "retention.ms", "ConfigOperation": 0, "Value": "1"}]}], "ValidateOnly": False}
    assert c.call("IncrementalAlterConfigs", 1, alter, principal=ALICE)["Responses"][0]["ErrorCode"] == 0
    assert c.call("IncrementalAlterConfigs", 1, alter, principal=BOB)["Responses"][0]["ErrorCode"] == \
        CODE["TOPIC_AUTHORIZATION_FAILED"]
