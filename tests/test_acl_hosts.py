"""ACL hosts against the client's address (StandardAuthorizerData: AclEntry.host is "*" or the
client's InetAddress.getHostAddress(), or a CIDR range): sans-IO through Cluster.dispatch(host=...),
and a real librdkafka client on 127.0.0.1 against `kipviz serve`, over PLAINTEXT (User:ANONYMOUS)
and SASL_PLAINTEXT (alice), where the server passes the connection's peer address."""
from __future__ import annotations

import pytest

from kipviz import codec
from kipviz.broker import Acl, Cluster
from kipviz.schema.error_codes import CODE
from tests.client_logs import USERS

ALICE = "User:alice"
WAIT_S = 20


def _create(c, name, *, host, principal=ALICE):
    body = {"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}],
            "timeoutMs": 1000, "validateOnly": False}
    frame = codec.encode_request("CreateTopics", 7, body, correlation_id=1, client_id="t")
    kind, out = c.dispatch(frame, principal=principal, host=host)
    assert kind == "send"
    return codec.decode_response(out, "CreateTopics", 7)["body"]["Topics"][0]["ErrorCode"]


def test_a_deny_for_a_host_denies_that_host_only():
    c = Cluster(acls=[Acl(ALICE, "TOPIC", "a.", "ALL", pattern="PREFIXED"),
                      Acl(ALICE, "TOPIC", "a.", "CREATE", allow=False, pattern="PREFIXED", host="10.0.0.5")])
    assert _create(c, "a.one", host="10.0.0.5") == CODE["TOPIC_AUTHORIZATION_FAILED"]
    assert _create(c, "a.two", host="10.0.0.6") == 0
    assert _create(c, "a.three", host=None) == 0                 # no host known: a host-specific ACL never matches
    assert c.request_host is None                                # only for the request being handled


def test_an_allow_for_a_host_or_range_allows_only_there():
    c = Cluster(acls=[Acl(ALICE, "TOPIC", "a.", "ALL", pattern="PREFIXED", host="10.0.0.0/24"),
                      Acl(ALICE, "CLUSTER", "kafka-cluster", "DESCRIBE")])
    assert _create(c, "a.in", host="10.0.0.77") == 0
    assert _create(c, "a.out", host="10.0.1.77") == CODE["TOPIC_AUTHORIZATION_FAILED"]
    assert _create(c, "a.none", host=None) == CODE["TOPIC_AUTHORIZATION_FAILED"]
    assert c.call("DescribeCluster", 0, {"IncludeClusterAuthorizedOperations": True}, principal=ALICE,
                  host="10.9.9.9")["ErrorCode"] == 0


def test_librdkafka_on_127_0_0_1_meets_host_acls():
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from kipviz.serve import Server
    acls = [Acl(ALICE, "TOPIC", "alice.", "ALL", pattern="PREFIXED"),
            Acl(ALICE, "TOPIC", "alice.local", "CREATE", allow=False, host="127.0.0.1"),
            Acl(ALICE, "TOPIC", "alice.remote", "CREATE", allow=False, host="10.9.9.9"),
            Acl("User:ANONYMOUS", "TOPIC", "anon.", "ALL", pattern="PREFIXED", host="127.0.0.1"),
            Acl("User:ANONYMOUS", "TOPIC", "far.", "ALL", pattern="PREFIXED", host="10.9.9.9"),
            Acl("User:*", "CLUSTER", "kafka-cluster", "DESCRIBE")]

    def outcome(admin, names):
        out = {}
        for name, fut in admin.create_topics([NewTopic(n, 1, 1) for n in names], request_timeout=WAIT_S).items():
            try:
                fut.result(WAIT_S)
                out[name] = "ok"
            except ck.KafkaException as e:
                out[name] = e.args[0].name()
        return out

    with Server(brokers=1, users=USERS, acls=acls) as srv:
        alice = AdminClient({"bootstrap.servers": srv.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": USERS["alice"]})
        assert outcome(alice, ["alice.local", "alice.remote"]) == {"alice.local": "TOPIC_AUTHORIZATION_FAILED",
                                                                   "alice.remote": "ok"}
        anon = AdminClient({"bootstrap.servers": srv.bootstrap})
        assert outcome(anon, ["anon.t", "far.t"]) == {"anon.t": "ok", "far.t": "TOPIC_AUTHORIZATION_FAILED"}
        with srv.lock:
            assert set(srv.cluster.topics.by_name) >= {"alice.remote", "anon.t"}
            assert not {"alice.local", "far.t"} & set(srv.cluster.topics.by_name)
            assert srv.cluster.internal_errors == []
        del alice, anon                                      # librdkafka clients end before the server
