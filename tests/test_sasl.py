"""SASL PLAIN and SCRAM-SHA-256/512 (kipviz.broker.sasl): through frames against the sans-IO
Authenticator, the SCRAM arithmetic against RFC 7677's worked example, and real clients
(librdkafka through confluent-kafka, kafka-python) with security.protocol=SASL_PLAINTEXT against a
test-only listener (tests/sasl_listener.py) that puts an Authenticator in front of the model."""
from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import uuid

import pytest

from kipviz import codec
from kipviz.broker import Acl, Cluster
from kipviz.broker.sasl import Authenticator, Users, UsersError, scram_credential
from kipviz.schema.error_codes import CODE

USERS = "# workshop users\nalice = alice-secret\nbob = bob-secret\n"


def frame(api, version, body, cid=1):
    return codec.encode_request(api, version, body, correlation_id=cid, client_id="t")


def answer(out, api, version):
    return codec.decode_response(out, api, version)["body"]


def scram_client_final(mechanism, user, password, server_first: str, client_nonce: str, first_bare: str) -> tuple[str, bytes]:
    """An independent SCRAM client (RFC 5802 section 3): the client-final message and the expected
    server signature."""
    h = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    fields = dict(kv.split("=", 1) for kv in server_first.split(","))
    assert fields["r"].startswith(client_nonce)
    salted = hashlib.pbkdf2_hmac(h, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", h).digest()
    stored = hashlib.new(h, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    proof = bytes(a ^ b for a, b in zip(client_key, hmac.new(stored, auth, h).digest(), strict=True))
    server_key = hmac.new(salted, b"Server Key", h).digest()
    return f"{without_proof},p={base64.b64encode(proof).decode()}", hmac.new(server_key, auth, h).digest()


def test_rfc7677_scram_sha_256_example():
    # RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations
    cred = scram_credential("pencil", "SCRAM-SHA-256", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final, signature = scram_client_final("SCRAM-SHA-256", "user", "pencil", server_first, "rOprNGfwEbeRWgbNEkqO",
                                          first_bare)
    assert final.endswith("p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert base64.b64encode(signature).decode() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    # the kit's stored credential verifies the same proof: StoredKey = H(ClientKey)
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", cred.salt, 4096)
    assert cred.stored_key == hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()


def _handshake(auth, mechanism, version=1):
    kind, out = auth.handle(frame("SaslHandshake", version, {"Mechanism": mechanism}))
    return kind, answer(out, "SaslHandshake", version)


def test_plain_through_frames_then_the_cluster_sees_the_principal():
    c = Cluster(acls=[Acl("User:alice", "TOPIC", "alice.", "ALL", pattern="PREFIXED"),
                      Acl("User:alice", "CLUSTER", "kafka-cluster", "DESCRIBE")])
    auth = Authenticator(c, Users.parse(USERS), client="10.0.0.1:5000", seed=1)
    kind, out = auth.handle(frame("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}))
    assert kind == "send" and answer(out, "ApiVersions", 3)["ErrorCode"] == 0
    kind, hs = _handshake(auth, "PLAIN")
    assert (kind, hs["ErrorCode"], hs["Mechanisms"]) == ("send", 0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    kind, out = auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": b"\0alice\0alice-secret"}))
    assert kind == "send" and answer(out, "SaslAuthenticate", 2)["ErrorCode"] == 0
    assert auth.principal == "User:alice" and auth.state == "COMPLETE"
    # now every frame is the cluster's, with alice's principal: her prefix is hers, bob's is not
    body = {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
                       for n in ("alice.orders", "bob.orders")], "timeoutMs": 1000, "validateOnly": False}
    kind, out = auth.handle(frame("CreateTopics", 7, body))
    codes = [t["ErrorCode"] for t in answer(out, "CreateTopics", 7)["Topics"]]
    assert codes == [0, CODE["TOPIC_AUTHORIZATION_FAILED"]]
    again = answer(auth.handle(frame("SaslHandshake", 1, {"Mechanism": "PLAIN"}))[1], "SaslHandshake", 1)
    assert again["ErrorCode"] == CODE["ILLEGAL_SASL_STATE"]          # KafkaApis' answer after authentication
    # the password is never recorded
    assert not any(b"alice-secret" in repr(e).encode() for e in c.events)
    assert c.internal_errors == []


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_through_frames_with_an_independent_client(mechanism):
    c = Cluster()
    auth = Authenticator(c, Users.parse(USERS), seed=2)
    assert _handshake(auth, mechanism)[1]["ErrorCode"] == 0
    nonce = "fyko+d2lbbFgONRv9qkxdawL"
    first_bare = f"n=bob,r={nonce}"
    kind, out = auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": f"n,,{first_bare}".encode()}))
    server_first = answer(out, "SaslAuthenticate", 2)["AuthBytes"].decode()
    assert kind == "send" and auth.state == "AUTHENTICATE"
    final, signature = scram_client_final(mechanism, "bob", "bob-secret", server_first, nonce, first_bare)
    kind, out = auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": final.encode()}, cid=2))
    body = answer(out, "SaslAuthenticate", 2)
    assert body["ErrorCode"] == 0 and body["AuthBytes"] == b"v=" + base64.b64encode(signature)
    assert auth.principal == "User:bob"


def test_wrong_credentials_unknown_mechanisms_and_requests_out_of_turn_close_the_connection():
    users = Users.parse(USERS)
    auth = Authenticator(Cluster(), users, seed=3)
    _handshake(auth, "PLAIN")
    kind, out = auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": b"\0alice\0wrong"}))
    body = answer(out, "SaslAuthenticate", 2)
    assert (kind, body["ErrorCode"], body["ErrorMessage"]) == (
        "close", CODE["SASL_AUTHENTICATION_FAILED"], "Authentication failed: Invalid username or password")
    assert auth.principal is None and auth.handle(frame("ApiVersions", 0, {}))[0] == "close"
    auth = Authenticator(Cluster(), users, seed=3)
    kind, hs = _handshake(auth, "GSSAPI")
    assert (kind, hs["ErrorCode"]) == ("close", CODE["UNSUPPORTED_SASL_MECHANISM"])
    auth = Authenticator(Cluster(), users, seed=3)
    assert auth.handle(frame("Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                              "IncludeTopicAuthorizedOperations": False}))[0] == "close"
    auth = Authenticator(Cluster(), users, seed=3)                    # SCRAM with a wrong password
    _handshake(auth, "SCRAM-SHA-256")
    out = auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": b"n,,n=bob,r=abc"}))[1]
    server_first = answer(out, "SaslAuthenticate", 2)["AuthBytes"].decode()
    final, _ = scram_client_final("SCRAM-SHA-256", "bob", "nope", server_first, "abc", "n=bob,r=abc")
    kind, out = auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": final.encode()}))
    assert kind == "close" and answer(out, "SaslAuthenticate", 2)["ErrorMessage"] == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")


def test_a_v0_handshake_sends_raw_tokens():
    auth = Authenticator(Cluster(), Users.parse(USERS), seed=4)
    assert _handshake(auth, "PLAIN", version=0)[1]["ErrorCode"] == 0
    kind, out = auth.handle(codec.frame(b"\0alice\0alice-secret"))
    assert (kind, out) == ("send", codec.frame(b"")) and auth.principal == "User:alice"


def test_users_file_errors_are_one_readable_line(tmp_path):
    with pytest.raises(UsersError, match="users line 2: expected 'name = password'"):
        Users.parse("a = b\nno equals sign\n")
    with pytest.raises(UsersError, match="may not be empty or contain"):
        Users.parse("a b = c\n")
    with pytest.raises(UsersError, match="cannot read users file"):
        Users.load(tmp_path / "missing")
    path = tmp_path / "users"
    path.write_text(USERS)
    assert sorted(Users.load(path).passwords) == ["alice", "bob"]


# ---- real clients --------------------------------------------------------------------------------
ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.client_logs import ErrorLines  # noqa: E402
from tests.sasl_listener import SaslListener  # noqa: E402

WAIT_S = 20


def _acls():
    return [Acl("User:alice", "TOPIC", "alice.", "ALL", pattern="PREFIXED"),
            Acl("User:bob", "TOPIC", "bob.", "ALL", pattern="PREFIXED"),
            Acl("User:*", "CLUSTER", "kafka-cluster", "DESCRIBE")]


def _admin(srv, mechanism, user, password, errors, logs):
    """A librdkafka admin client whose log lines and errors are collected (none may be an error)."""
    log = logging.getLogger(f"rdkafka.sasl.{uuid.uuid4().hex[:6]}")
    log.propagate = False
    log.addHandler(logs)
    return AdminClient({"bootstrap.servers": srv.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
                        "error_cb": errors.append, "logger": log})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_librdkafka_authenticates_and_meets_the_acls(mechanism):
    errors, logs = [], ErrorLines()
    with SaslListener({"alice": "alice-secret", "bob": "bob-secret"}, acls=_acls()) as srv:
        admin = _admin(srv, mechanism, "alice", "alice-secret", errors, logs)
        done = admin.create_topics([NewTopic(f"alice.{uuid.uuid4().hex[:6]}", 1, 1),
                                    NewTopic("bob.not-yours", 1, 1)], request_timeout=WAIT_S)
        results = {}
        for name, fut in done.items():
            try:
                fut.result(WAIT_S)
                results[name] = "ok"
            except ck.KafkaException as e:
                results[name] = e.args[0].name()
        assert results["bob.not-yours"] == "TOPIC_AUTHORIZATION_FAILED"
        assert [v for k, v in results.items() if k.startswith("alice.")] == ["ok"]
        assert srv.authenticated and set(srv.authenticated) == {"User:alice"}
        assert srv.cluster.internal_errors == []
        del admin                                   # gone before the listener closes
    assert errors == [] and logs.lines == []


def test_librdkafka_with_a_wrong_password_gets_an_authentication_error():
    errors, logs = [], ErrorLines()
    with SaslListener({"alice": "alice-secret"}, acls=_acls()) as srv:
        admin = _admin(srv, "SCRAM-SHA-256", "alice", "wrong", errors, logs)
        with pytest.raises(ck.KafkaException):
            admin.list_topics(timeout=3)
        admin.poll(1)
        del admin
    assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors), errors
    assert any("invalid credentials with SASL mechanism SCRAM-SHA-256" in line for line in logs.lines)


def test_kafka_python_authenticates_with_scram_and_is_refused_outside_its_prefix():
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    logging.getLogger("kafka").setLevel(logging.WARNING)
    with SaslListener({"bob": "bob-secret"}, acls=_acls()) as srv:
        admin = KafkaAdminClient(bootstrap_servers=srv.bootstrap, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="bob",
                                 sasl_plain_password="bob-secret", request_timeout_ms=WAIT_S * 1000)
        try:
            admin.create_topics({"bob.mine": {"num_partitions": 1, "replication_factor": 1}})
            with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
                admin.create_topics({"alice.theirs": {"num_partitions": 1, "replication_factor": 1}})
        finally:
            admin.close()
        assert "bob.mine" in srv.cluster.topics.by_name and "alice.theirs" not in srv.cluster.topics.by_name
        assert srv.cluster.internal_errors == []


def test_the_workshop_guides_shared_server_snippet_runs_and_isolates_learners():
    """docs/workshop.md, 'A shared server': its code, run as written."""
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "docs" / "workshop.md").read_text()
    block = text.split("## A shared server", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    scope = {"frame": frame("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})}
    exec(compile(block, "workshop.md", "exec"), scope)             # noqa: S102 - the project's own doc
    c = scope["cluster"]
    assert scope["kind"] == "send" and scope["auth"].principal is None
    assert c.authorized("User:ana", "TOPIC", "ana.orders", "WRITE")
    assert c.authorized("User:ana", "GROUP", "ana.app", "READ")
    assert not c.authorized("User:ana", "TOPIC", "ben.orders", "DESCRIBE")
    assert c.authorized("User:host", "TOPIC", "ben.orders", "DELETE")
    auth = Authenticator(c, scope["users"], seed=5)
    _handshake(auth, "PLAIN")
    auth.handle(frame("SaslAuthenticate", 2, {"AuthBytes": b"\0ana\0ana-pw"}))
    assert auth.principal == "User:ana"
