"""The SASL_PLAINTEXT listener of `kipviz serve` (kipviz.serve.listeners) through real sockets:
librdkafka (confluent-kafka) and kafka-python with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, a wrong
password (the client's own authentication error), requests before authentication (the connection
closed, as SaslServerAuthenticator closes it), each listener advertising its own ports, the ACLs
from the server side; the CLI flags (--users, --sasl-port, --acls, --super-users,
--allow-everyone-if-no-acl-found) end to end; the ACL file's format; and docs/workshop.md's shared
server run as written. One server for the module; 127.0.0.1 and free ports only."""
from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kipviz import codec
from kipviz.broker import Acl
from kipviz.schema.events import SaslAuthenticated, SaslFailed
from kipviz.serve import Server
from kipviz.serve.acl_file import AclFileError, parse_acls
from kipviz.serve.listeners import FAILED_AUTHENTICATION_DELAY_MS, access_settings, listeners_for
from tests.client_logs import USERS, rdkafka_and_kafka_python_logs

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.admin import NewTopic as KpNewTopic  # noqa: E402

WAIT_S = 20
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
ROOT = Path(__file__).resolve().parent.parent


def _acls():
    return [Acl("User:alice", "TOPIC", "alice.", "ALL", pattern="PREFIXED"),
            Acl("User:alice", "TRANSACTIONAL_ID", "alice.", "ALL", pattern="PREFIXED"),
            Acl("User:bob", "TOPIC", "bob.", "ALL", pattern="PREFIXED"),
            Acl("User:*", "CLUSTER", "kafka-cluster", "DESCRIBE")]


@pytest.fixture(scope="module")
def server():
    # ACLs given: Kafka's default allow.everyone.if.no.acl.found=false, so User:ANONYMOUS (the
    # PLAINTEXT listener) may describe the cluster and nothing else
    with Server(brokers=2, users=USERS, acls=_acls()) as srv:
        yield srv
    assert srv.cluster.internal_errors == []


@pytest.fixture
def logs(server):
    """librdkafka's log lines (each client's `logger`) and kafka-python's: ERROR lines are kept."""
    with rdkafka_and_kafka_python_logs("rdkafka.sasl") as got:
        yield got
    assert server.cluster.internal_errors == []


def expect_only(lines: list[str], *texts: str, optional: tuple[str, ...] = ()) -> None:
    """Every error line holds one of `texts` or `optional`, and each of `texts` is in some line."""
    assert [line for line in lines if not any(t in line for t in texts + optional)] == [], lines
    assert all(any(t in line for line in lines) for t in texts), (texts, lines)


def _rd_admin(server, logs, mechanism, user, password):
    return AdminClient({"bootstrap.servers": server.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
                        "error_cb": logs["errors"].append, "logger": logs["logger"]})


def _kp_admin(bootstrap, mechanism, user, password, **kw):
    return KafkaAdminClient(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                            sasl_plain_username=user, sasl_plain_password=password,
                            request_timeout_ms=WAIT_S * 1000, **kw)


def _authenticated(server) -> list[str]:
    with server.lock:
        return [e.principal for e in server.cluster.events if isinstance(e, SaslAuthenticated)]


# ---- librdkafka ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_librdkafka_authenticates_is_told_the_sasl_ports_and_meets_the_acls(server, logs, mechanism):
    admin = _rd_admin(server, logs, mechanism, "alice", USERS["alice"])
    mine = f"alice.{uuid.uuid4().hex[:6]}"
    done = admin.create_topics([NewTopic(mine, 1, 1), NewTopic("bob.not-yours", 1, 1)], request_timeout=WAIT_S)
    results = {}
    for topic, fut in done.items():
        try:
            fut.result(WAIT_S)
            results[topic] = "ok"
        except ck.KafkaException as e:
            results[topic] = e.args[0].name()
    assert results == {mine: "ok", "bob.not-yours": "TOPIC_AUTHORIZATION_FAILED"}
    md = admin.list_topics(timeout=WAIT_S)
    assert sorted((b.host, b.port) for b in md.brokers.values()) == sorted(server.listeners[1].addresses)
    p = ck.Producer({"bootstrap.servers": server.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": USERS["alice"],
                     "error_cb": logs["errors"].append, "logger": logs["logger"]})
    p.produce(mine, b"hello")
    assert p.flush(WAIT_S) == 0
    del admin, p
    assert "User:alice" in _authenticated(server)
    assert logs["errors"] == [] and logs["lines"].lines == []


def test_librdkafka_with_a_wrong_password_gets_its_authentication_error(server, logs):
    admin = _rd_admin(server, logs, "SCRAM-SHA-256", "alice", "wrong")
    with pytest.raises(ck.KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(1)
    del admin
    assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in logs["errors"]), logs["errors"]
    expect_only(logs["lines"].lines, "invalid credentials with SASL mechanism SCRAM-SHA-256")


def _rd_common(server, logs, mechanism="SCRAM-SHA-512", user="alice"):
    return {"bootstrap.servers": server.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": USERS[user],
            "error_cb": logs["errors"].append, "logger": logs["logger"]}


def test_librdkafka_without_group_or_transactional_id_acls_gets_their_authorization_errors(server, logs):
    # alice has no GROUP binding, and transactional ids under "alice." only: FindCoordinator asks
    # DESCRIBE on the group, and on the transactional id, first (KafkaApis.handleFindCoordinatorRequest)
    common = _rd_common(server, logs)
    c = ck.Consumer({**common, "group.id": "alice.g", "auto.offset.reset": "earliest"})
    c.subscribe(["alice.any"])
    deadline, got = time.monotonic() + WAIT_S, None
    while got is None and time.monotonic() < deadline:
        m = c.poll(0.2)
        got = m.error() if m is not None and m.error() else None
    c.close()
    assert got is not None and got.code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED, got
    p = ck.Producer({**common, "transactional.id": "shared.tx"})
    with pytest.raises(ck.KafkaException) as e:
        p.init_transactions(WAIT_S)
    assert e.value.args[0].code() == ck.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and e.value.args[0].fatal()
    del p
    assert [e.code() for e in logs["errors"]] in ([], [ck.KafkaError._FATAL])
    # librdkafka logs the fatal error (TXNERR, FATAL) when its log queue is next served, if at all
    expect_only(logs["lines"].lines, optional=("Transactional Id authorization failed",))


def test_librdkafka_send_offsets_without_a_group_acl_is_group_authorization_failed_and_abortable(server, logs):
    # her transactional id is allowed, the group is not: AddOffsetsToTxn checks WRITE on the
    # transactional id, then READ on the group (KafkaApis.handleAddOffsetsToTxnRequest); the error
    # aborts the transaction, it is not fatal
    common = _rd_common(server, logs, "PLAIN")
    topic = f"alice.{uuid.uuid4().hex[:6]}"
    admin = AdminClient(common)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(WAIT_S)
    with server.lock:
        before = len(server.cluster.events)
    p = ck.Producer({**common, "transactional.id": f"alice.tx-{topic}"})
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    p.produce(topic, b"kept out")
    c = ck.Consumer({**common, "group.id": "alice.g"})
    with pytest.raises(ck.KafkaException) as e:
        p.send_offsets_to_transaction([ck.TopicPartition(topic, 0, 1)], c.consumer_group_metadata(), WAIT_S)
    err = e.value.args[0]
    assert err.code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED and err.txn_requires_abort() and not err.fatal()
    p.abort_transaction(WAIT_S)
    c.close()
    del p, admin
    with server.lock:
        answers = [(e.api, e.body["ErrorCode"]) for e in list(server.cluster.events)[before:]
                   if type(e).__name__ == "ResponseSent" and e.api in ("AddOffsetsToTxn", "TxnOffsetCommit")]
    assert answers == [("AddOffsetsToTxn", 30)]              # never as far as TxnOffsetCommit
    expect_only(logs["lines"].lines, "Group authorization failed")


# ---- kafka-python --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_authenticates_is_told_the_sasl_ports_and_meets_the_acls(server, logs, mechanism):
    admin = _kp_admin(server.sasl_bootstrap, mechanism, "bob", USERS["bob"])
    try:
        mine = f"bob.{uuid.uuid4().hex[:6]}"
        admin.create_topics([KpNewTopic(mine, 1, 1)])
        with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
            admin.create_topics([KpNewTopic("alice.theirs", 1, 1)])
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    assert sorted((b["host"], b["port"]) for b in brokers) == sorted(server.listeners[1].addresses)
    assert mine in server.cluster.topics.by_name and "alice.theirs" not in server.cluster.topics.by_name
    assert logs["lines"].lines == []


def test_kafka_python_with_a_wrong_password_is_refused(server, logs):
    before = len(_sasl_failures(server))
    with pytest.raises(kafka.errors.KafkaTimeoutError):             # it retries the bootstrap until its timeout
        _kp_admin(server.sasl_bootstrap, "PLAIN", "bob", "wrong", bootstrap_timeout_ms=1500)
    # every attempt: SaslAuthenticate answered SASL_AUTHENTICATION_FAILED with PlainSaslServer's message,
    # then the connection closed (after connection.failed.authentication.delay.ms), as Kafka does
    failures = _sasl_failures(server)[before:]
    assert failures and set(failures) == {(58, "Authentication failed: Invalid username or password")}
    # kafka-python reads the answer and the close in one recv loop and, when both have arrived, reports
    # only the close (kafka/net/transport.py: _sock_recv returns the data with the error, _read_from_sock
    # then drops the data), so which attempts show SaslAuthenticationFailedError is a matter of timing,
    # as against Kafka, which also closes right after the answer: both kinds of line are expected; so
    # is a request timeout of the attempt under way when the bootstrap deadline comes (kafka-python
    # cuts its requests' timeout to the time left), or, on a loaded machine, that attempt aborted by
    # the deadline itself before its request went out
    expect_only(logs["lines"].lines, "Unable to bootstrap",
                optional=("SaslAuthenticationFailedError: Authentication failed: Invalid username or password",
                          "socket disconnected", "RequestTimedOutError: Request timed out after",
                          "Abort (KafkaTimeoutError)", "Connection lost: KafkaTimeoutError"))


def test_kafka_python_without_group_or_transactional_id_acls_gets_their_authorization_errors(server, logs):
    kw = dict(bootstrap_servers=server.sasl_bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
              sasl_plain_username="bob", sasl_plain_password=USERS["bob"], request_timeout_ms=WAIT_S * 1000)
    c = kafka.KafkaConsumer("bob.any", group_id="bob.g", **kw)
    try:
        with pytest.raises(kafka.errors.GroupAuthorizationFailedError):
            c.poll(WAIT_S * 1000)
    finally:
        c.close()
    p = kafka.KafkaProducer(transactional_id="bob.tx", **kw)
    try:
        with pytest.raises(kafka.errors.TransactionalIdAuthorizationFailedError):
            p.init_transactions()
    finally:
        p.close(0)
    expect_only(logs["lines"].lines, "Group Coordinator Request failed: [Error 30] GroupAuthorizationFailedError: bob.g",
                "FindCoordinatorRequest: [Error 53] TransactionalIdAuthorizationFailedError")


def _sasl_failures(server) -> list[tuple[int, str]]:
    with server.lock:
        return [(e.body["ErrorCode"], e.body["ErrorMessage"]) for e in server.cluster.events
                if type(e).__name__ == "ResponseSent" and e.api == "SaslAuthenticate" and e.body["ErrorCode"]]


# ---- requests before authentication, and which listener is advertised -------------------------------------
def _conn(address) -> socket.socket:
    s = socket.create_connection(address, timeout=5)
    s.settimeout(5)
    return s


def _request(s: socket.socket, api: str, version: int, body: dict, cid: int = 1) -> None:
    s.sendall(codec.encode_request(api, version, body, correlation_id=cid, client_id="raw"))


def _response(s: socket.socket, api: str, version: int) -> dict | None:
    """The next response's body, or None when the broker closed the connection."""
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    size, = struct.unpack(">i", head)
    payload = s.recv(size, socket.MSG_WAITALL)
    return codec.decode_response(head + payload, api, version)["body"]


API_VERSIONS = ("ApiVersions", 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"})
METADATA = ("Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False,
                             "IncludeTopicAuthorizedOperations": False})


@pytest.mark.parametrize("first", [[], [API_VERSIONS]], ids=["metadata-first", "after-api-versions"])
def test_a_request_before_authentication_closes_the_connection(server, first):
    with _conn(server.listeners[1].addresses[0]) as s:
        for api, version, body in first:
            _request(s, api, version, body)
            assert _response(s, api, version)["ErrorCode"] == 0        # ApiVersions is answered before SASL
        t0 = time.monotonic()
        _request(s, *METADATA, cid=2)
        assert _response(s, "Metadata", 12) is None                   # closed, nothing answered
        assert time.monotonic() - t0 >= FAILED_AUTHENTICATION_DELAY_MS / 1000 * 0.9
    with server.lock:
        notes = [e.text for e in server.cluster.events if isinstance(e, SaslFailed)]
    assert "SASL: Unexpected Kafka request of type Metadata during SASL handshake. (connection closed)" in notes


@pytest.mark.parametrize("size", [524289, -1])
def test_a_frame_over_sasl_server_max_receive_size_before_authentication_is_a_failed_authentication(server, size):
    # SaslServerAuthenticator reads at most sasl.server.max.receive.size (512 KiB) before the client
    # is authenticated: a bigger (or negative) size prefix fails the authentication, unanswered, and
    # the connection closes after the failed-authentication delay; nothing of the frame is read
    with _conn(server.listeners[1].addresses[0]) as s:
        _request(s, *API_VERSIONS)
        assert _response(s, *API_VERSIONS[:2])["ErrorCode"] == 0
        t0 = time.monotonic()
        s.sendall(struct.pack(">i", size) + b"\0" * 100)
        assert _response(s, "Metadata", 12) is None
        assert time.monotonic() - t0 >= FAILED_AUTHENTICATION_DELAY_MS / 1000 * 0.9
    with server.lock:
        notes = [e.text for e in server.cluster.events if isinstance(e, SaslFailed)]
    assert f"SASL: Failing SASL authentication due to invalid receive size ({size} bytes; " \
           "sasl.server.max.receive.size 524288) (connection closed)" in notes
    assert server.pool.in_use == 0                 # the request pool never reserved its bytes


def test_each_listener_advertises_its_own_ports_and_plaintext_is_anonymous(server):
    with _conn(server.addresses[0]) as s:              # PLAINTEXT: no authentication, User:ANONYMOUS
        _request(s, *METADATA)
        md = _response(s, "Metadata", 12)
    assert sorted((b["Host"], b["Port"]) for b in md["Brokers"]) == sorted(server.addresses)
    assert md["Topics"] == []                          # ANONYMOUS may describe no topic (no ALLOW for it)


# ---- the defaults and the ACL file -----------------------------------------------------------------------
def test_the_listeners_a_served_cluster_gets():
    from kipviz.broker.sasl import Users
    users = Users({"a": "b"})
    assert [(li.name, li.host, li.port) for li in listeners_for("0.0.0.0", 9092, 3, None, None)] == [
        ("PLAINTEXT", "0.0.0.0", 9092)]                 # without users: as kipviz serve always was
    assert [(li.name, li.host, li.port) for li in listeners_for("192.168.1.20", 9092, 3, users, None)] == [
        ("PLAINTEXT", "127.0.0.1", 9092), ("SASL_PLAINTEXT", "192.168.1.20", 9095)]
    assert [li.port for li in listeners_for("127.0.0.1", 0, 3, users, None)] == [0, 0]
    with pytest.raises(ValueError, match="overlaps"):
        listeners_for("127.0.0.1", 9092, 3, users, 9094)


def test_who_may_do_what_by_default():
    assert access_settings(users=False, acls=None) == {}                       # no authorizer
    assert access_settings(users=True, acls=None) == {"acls": [], "super_users": (),
                                                      "allow_everyone_if_no_acl_found": True}
    acl = Acl("User:a", "TOPIC", "a.", "ALL", pattern="PREFIXED")
    assert access_settings(users=True, acls=[acl], super_users=["User:h"]) == {
        "acls": [acl], "super_users": ("User:h",), "allow_everyone_if_no_acl_found": False}
    assert access_settings(users=True, acls=None, allow_everyone_if_no_acl_found=False)[
        "allow_everyone_if_no_acl_found"] is False
    with pytest.raises(ValueError, match="need users or ACLs"):
        access_settings(users=False, acls=None, super_users=["User:h"])


def test_a_cluster_passed_to_server_keeps_its_own_authorizer():
    from kipviz.broker import Cluster
    with pytest.raises(ValueError, match="are the cluster's settings"):
        Server(Cluster(), users=USERS, acls=_acls())
    with pytest.raises(ValueError, match="are the cluster's settings"):
        Server(Cluster(), super_users=["User:admin"])


def test_the_acl_file_format():
    text = "# who may do what\n\nALLOW User:ana ALL TOPIC ana. PREFIXED\nallow User:* idempotent_write cluster kafka-cluster\n" \
           "DENY User:ben WRITE TOPIC shared.orders\nALLOW User:ana READ TOPIC ana. prefixed\n"
    assert parse_acls(text) == [Acl("User:ana", "TOPIC", "ana.", "ALL", pattern="PREFIXED"),
                                Acl("User:*", "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"),
                                Acl("User:ben", "TOPIC", "shared.orders", "WRITE", allow=False),
                                Acl("User:ana", "TOPIC", "ana.", "READ", pattern="PREFIXED")]
    for bad, message in [("ALLOW User:a ALL TOPIC", "line 1: expected 'permission principal operation"),
                         ("MAYBE User:a ALL TOPIC t", "line 1: unknown permission 'MAYBE'"),
                         ("ALLOW User:a ANY TOPIC t", "line 1: unknown operation 'ANY'"),
                         ("ALLOW User:a ALL TABLE t", "line 1: unknown resource type 'TABLE'"),
                         ("ALLOW User:a ALL TOPIC t MATCH", "line 1: unknown pattern 'MATCH'"),
                         ("\nALLOW User:a ALL CLUSTER c", "line 2: The only valid name for the CLUSTER resource"),
                         ("ALLOW alice ALL TOPIC t", "line 1: Could not parse principal from `alice`")]:
        with pytest.raises(AclFileError, match=re.escape(message)):
            parse_acls(bad, where="acls.txt")


# ---- the CLI, end to end ------------------------------------------------------------------------------------
def _kipviz(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "kipviz.cli", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_kipviz_serve_with_users_acls_and_super_users(tmp_path):
    (tmp_path / "users.txt").write_text("host = host-secret\nana = ana-pw\n")
    (tmp_path / "acls.txt").write_text("ALLOW User:ana ALL TOPIC ana. PREFIXED\n")
    p = _kipviz("--port", "0", "--users", str(tmp_path / "users.txt"), "--acls", str(tmp_path / "acls.txt"),
                "--super-users", "User:host")
    try:
        first, sasl_line = p.stdout.readline(), p.stdout.readline()
        assert "bootstrap.servers=127.0.0.1:" in first
        assert sasl_line.startswith("kipviz serve: SASL_PLAINTEXT bootstrap.servers=127.0.0.1:")
        assert ("(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; 2 user(s)); authorizer: 1 binding(s), "
                "allow.everyone.if.no.acl.found=false, super users User:host") in sasl_line
        bootstrap = sasl_line.split("bootstrap.servers=", 1)[1].split(" ", 1)[0]
        host = _kp_admin(bootstrap, "SCRAM-SHA-512", "host", "host-secret")
        ana = _kp_admin(bootstrap, "SCRAM-SHA-256", "ana", "ana-pw")
        try:
            host.create_topics([KpNewTopic("shared.orders", 1, 1)])           # a super user: anything
            ana.create_topics([KpNewTopic("ana.orders", 1, 1)])
            with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
                ana.create_topics([KpNewTopic("shared.other", 1, 1)])
        finally:
            host.close()
            ana.close()
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=WAIT_S)
    assert p.returncode == 0, err
    assert err == ""                                   # loopback: no warning


@pytest.mark.parametrize("args,message", [
    (["--users", "missing.txt"], "cannot read users file missing.txt"),
    (["--users", "{users}", "--acls", "{bad_acls}"], "line 1: unknown operation 'EAT'"),
    (["--super-users", "User:host"], "need users or ACLs"),
    (["--sasl-port", "0"], "--sasl-port needs --users"),
    (["--users", "{users}", "--super-users", "host"], "principals like User:host"),
])
def test_kipviz_serve_bad_access_flags_are_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "users.txt").write_text("ana = ana-pw\n")
    (tmp_path / "acls.txt").write_text("ALLOW User:ana EAT TOPIC ana.\n")
    args = [a.format(users=tmp_path / "users.txt", bad_acls=tmp_path / "acls.txt") for a in args]
    p = _kipviz("--port", "0", *args, cwd=tmp_path, env=dict(os.environ))
    out, err = p.communicate(timeout=WAIT_S)
    assert p.returncode == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


# ---- docs/workshop.md's shared server, as written ------------------------------------------------------------
def _doc_block(text: str, after: str, fence: str) -> str:
    return text.split(after, 1)[1].split(f"```{fence}\n", 1)[1].split("```", 1)[0]


def test_the_workshop_guides_shared_server_runs_and_isolates_learners(tmp_path):
    text = (ROOT / "docs" / "workshop.md").read_text().split("## A shared server", 1)[1]
    (tmp_path / "users.txt").write_text(_doc_block(text, "`users.txt`", "text"))
    (tmp_path / "acls.txt").write_text(_doc_block(text, "`acls.txt`", "text"))
    code = _doc_block(text, "or the same from a notebook", "python")
    assert 'host="192.168.1.20"' in code
    code = code.replace('host="192.168.1.20"', 'host="127.0.0.1", port=0')        # tests bind loopback only
    scope: dict = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "workshop.md", "exec"), scope)            # noqa: S102 - the project's own doc
    finally:
        os.chdir(cwd)
    srv = scope["srv"]
    try:
        conf = {"bootstrap.servers": srv.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "ana", "sasl.password": "ana-pw"}
        assert set(_doc_block(text, "with their own user", "python").split("{", 1)[1]) and all(
            k in _doc_block(text, "with their own user", "python") for k in conf)
        admin = AdminClient(conf)
        got = {}
        for topic, fut in admin.create_topics([NewTopic("ana.orders", 1, 1), NewTopic("ben.orders", 1, 1)],
                                              request_timeout=WAIT_S).items():
            try:
                fut.result(WAIT_S)
                got[topic] = "ok"
            except ck.KafkaException as e:
                got[topic] = e.args[0].name()
        assert got == {"ana.orders": "ok", "ben.orders": "TOPIC_AUTHORIZATION_FAILED"}
        p = ck.Producer({**conf, "enable.idempotence": True})          # IDEMPOTENT_WRITE for everyone
        p.produce("ana.orders", b"hello")
        assert p.flush(WAIT_S) == 0
        c = srv.cluster
        assert c.authorized("User:ana", "GROUP", "ana.app", "READ")
        assert c.authorized("User:host", "TOPIC", "ben.orders", "DELETE")
        assert not c.authorized("User:ana", "TOPIC", "ben.orders", "DESCRIBE")
        del admin, p
    finally:
        srv.stop()
    assert srv.cluster.internal_errors == []


# ---- the model: a request is answered with the endpoints of its listener ----------------------------------
def test_metadata_find_coordinator_and_describe_cluster_answer_with_the_requests_listener():
    from kipviz.broker import Cluster
    c = Cluster(brokers=2, advertised_listeners={0: ("127.0.0.1", 9092), 1: ("127.0.0.1", 9093)},
                named_listeners={"SASL_PLAINTEXT": {0: ("10.0.0.5", 9094), 1: ("10.0.0.5", 9095)}})

    def ask(api, version, body, listener):
        frame = codec.encode_request(api, version, body, correlation_id=1, client_id="t")
        return codec.decode_response(c.handle(frame, listener=listener), api, version)["body"]
    for listener, want in (("PLAINTEXT", [("127.0.0.1", 9092), ("127.0.0.1", 9093)]),
                           ("SASL_PLAINTEXT", [("10.0.0.5", 9094), ("10.0.0.5", 9095)])):
        md = ask("Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                  "IncludeTopicAuthorizedOperations": False}, listener)
        assert sorted((b["Host"], b["Port"]) for b in md["Brokers"]) == want
        dc = ask("DescribeCluster", 1, {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1}, listener)
        assert sorted((b["Host"], b["Port"]) for b in dc["Brokers"]) == want
        fc = ask("FindCoordinator", 4, {"KeyType": 0, "CoordinatorKeys": ["g"]}, listener)
        assert (fc["Coordinators"][0]["Host"], fc["Coordinators"][0]["Port"]) in want
    from kipviz.broker.log_config import static_value
    assert static_value(c, "advertised.listeners", 0) == "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://10.0.0.5:9094"
