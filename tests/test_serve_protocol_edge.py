"""`kipviz serve` at its edge (issue 30, items 6-8): what Kafka does with versions and APIs it does not
serve, the ZooKeeper-era controller requests in their oldest layouts, random ids unless --seed, and the
warning for a listener that is not loopback. Raw frames over real sockets on 127.0.0.1."""
from __future__ import annotations

import socket
import struct

import pytest

from kipviz import codec
from kipviz.cli import serve as cli_serve
from kipviz.records.examples import example_value
from kipviz.schema.error_codes import CODE
from kipviz.schema.events import ConnectionClosed, Happened
from kipviz.serve import Server

from .test_serve_faults import closed_by_server, recv_exactly


def ask(srv: Server, frame: bytes) -> bytes | None:
    """Send one frame on a new connection: the response frame, or None when the broker closes it."""
    with socket.create_connection(srv.addresses[0], timeout=5) as s:
        s.sendall(frame)
        s.settimeout(5)
        try:
            head = s.recv(4, socket.MSG_WAITALL)
        except ConnectionResetError:
            return None
        if not head:
            return None
        return head + recv_exactly(s, struct.unpack(">i", head)[0])


def raw(key: int, version: int, body: bytes = b"", flexible: bool = False, cid: int = 9) -> bytes:
    payload = struct.pack(">hhi", key, version, cid) + b"\x00\x01c" + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(payload)) + payload


def request(api: str, version: int, cid: int = 9) -> bytes:
    return codec.encode_request(api, version, example_value(api + "Request", version), correlation_id=cid)


# ---- item 6: unsupported versions and unknown APIs close the connection, ApiVersions is answered in v0 ----
@pytest.mark.parametrize("frame", [
    request("DescribeConfigs", 0),           # removed in 4.0: was answered with no error code at all
    request("OffsetCommit", 1),              # removed in 4.0: was answered with error 35 per partition
    request("TxnOffsetCommit", 6),           # on 4.3 below: KIP-1319's v6 is 4.4's
    request("LeaderAndIsr", 7),              # no 4.x broker knows the key
    raw(999, 0),                             # an api key nobody knows
], ids=["DescribeConfigs-v0", "OffsetCommit-v1", "TxnOffsetCommit-v6", "LeaderAndIsr-v7", "key-999"])
@pytest.mark.parametrize("release", ["4.4", "4.3"])
def test_what_the_broker_does_not_serve_closes_the_connection_unanswered(frame, release):
    with Server(release=release) as srv:
        served = frame == request("TxnOffsetCommit", 6) and release == "4.4"
        mark = srv.cluster.next_seq
        out = ask(srv, frame)
        assert (out is not None) == served
        if served:
            assert codec.decode_response(out, "TxnOffsetCommit", 6)["correlation_id"] == 9
        else:
            with srv.lock:
                told = [e for e in srv.cluster.events if e.seq >= mark and isinstance(e, Happened)]
            assert [type(e) for e in told] == [ConnectionClosed], told
            assert told[0].text.startswith("connection closed: "), told
        assert ask(srv, request("ApiVersions", 4)) is not None         # the broker serves on
        assert srv.cluster.internal_errors == []


@pytest.mark.parametrize("release,frame", [
    ("4.4", raw(18, 99, flexible=True)),                       # a version no broker knows: header only
    ("4.4", raw(18, -1)),
    ("4.3", raw(18, 5, b"\xff\xff", flexible=True)),           # 4.3 does not know v5: the body is never read
    ("4.3", request("ApiVersions", 5)),
])
def test_api_versions_of_an_unknown_version_is_answered_in_v0_with_only_its_own_range(release, frame):
    with Server(release=release) as srv:
        out = ask(srv, frame)
    body = codec.decode_response(out, "ApiVersions", 0)
    top = 5 if release == "4.4" else 4
    assert body["correlation_id"] == 9
    assert body["body"] == {"ErrorCode": CODE["UNSUPPORTED_VERSION"],
                            "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": top}]}


def test_a_malformed_api_versions_of_a_served_version_closes_the_connection():
    # RequestContext.parseRequest parses a known version; a parse failure is InvalidRequestException
    with Server(release="4.4") as srv:
        assert ask(srv, raw(18, 5, b"\xff\xff", flexible=True)) is None
        with socket.create_connection(srv.addresses[0], timeout=5) as s:   # a bad header closes too
            s.sendall(struct.pack(">i", 6) + struct.pack(">hhh", 18, 99, 0))
            assert closed_by_server(s)


@pytest.mark.parametrize("settings", [{"api_versions": {"ApiVersions": (0, 2)}}, {"release": "4.3"}],
                         ids=["ApiVersions-0-2", "release-4.3"])
def test_real_clients_negotiate_down_from_the_v0_answer(settings):
    ck = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    with Server(auto_create_topics=True, **settings) as srv:
        p = ck.Producer({"bootstrap.servers": srv.bootstrap})
        p.produce("rk", b"x")
        assert p.flush(20) == 0
        kp = kafka.KafkaProducer(bootstrap_servers=srv.bootstrap)
        kp.send("kp", b"y").get(20)
        kp.close(5)
        with srv.lock:
            c = srv.cluster
            assert [e.value for t in ("rk", "kp") for e in c.topics.partition(t, 0).entries] == [b"x", b"y"]
            assert c.internal_errors == []


# ---- item 7: LeaderAndIsr v0/v1 and StopReplica v0 (a ZooKeeper-mode broker: ClusterConfig.api_versions) ----
ZK = {"brokers": 3, "api_versions": {"LeaderAndIsr": (0, 7), "StopReplica": (0, 4)}}


def _lisr(version: int, broker_listed: bool) -> bytes:
    p = {"TopicName": "orders", "PartitionIndex": 0, "ControllerEpoch": 1, "Leader": 0, "LeaderEpoch": 3,
         "Isr": [0], "PartitionEpoch": 1, "Replicas": [0] if broker_listed else [1], "IsNew": True}
    return codec.encode_request("LeaderAndIsr", version, {
        "ControllerId": 1, "ControllerEpoch": 1, "UngroupedPartitionStates": [p], "LiveLeaders": []},
        correlation_id=4)


@pytest.mark.parametrize("version", [0, 1])
def test_leader_and_isr_v0_v1_read_their_ungrouped_partitions(version):
    with Server(**ZK) as srv:
        new = codec.decode_response(ask(srv, _lisr(version, True)), "LeaderAndIsr", version)["body"]
        gone = codec.decode_response(ask(srv, _lisr(version, False)), "LeaderAndIsr", version)["body"]
        with srv.lock:
            log = srv.cluster.replicas.replica(0, "orders")
            assert srv.cluster.internal_errors == []
    assert new == {"ErrorCode": 0, "PartitionErrors": [{"TopicName": "orders", "PartitionIndex": 0, "ErrorCode": 0}]}
    # becomeLeaderOrFollower: a partition whose replicas do not list this broker
    assert gone["PartitionErrors"][0]["ErrorCode"] == CODE["UNKNOWN_TOPIC_OR_PARTITION"]
    assert log is not None and log.leader_epoch == 3 and log.partition_metadata is None   # no ids before v5


def test_stop_replica_v0_deletes_by_its_ungrouped_partitions():
    with Server(**ZK) as srv:
        ask(srv, _lisr(0, True))
        out = ask(srv, codec.encode_request("StopReplica", 0, {
            "ControllerId": 1, "ControllerEpoch": 1, "DeletePartitions": True,
            "UngroupedPartitions": [{"TopicName": "orders", "PartitionIndex": 0}]}, correlation_id=5))
        with srv.lock:
            deleting = [log.dir for log in srv.cluster.replicas.deleting]
            assert srv.cluster.internal_errors == []
    assert codec.decode_response(out, "StopReplica", 0)["body"] == {
        "ErrorCode": 0, "PartitionErrors": [{"TopicName": "orders", "PartitionIndex": 0, "ErrorCode": 0}]}
    assert len(deleting) == 1 and deleting[0].startswith("orders-0.") and deleting[0].endswith("-delete")


# ---- item 8: random cluster id and member ids, unless a seed ----
def _ids(srv: Server) -> tuple[str, str]:
    """(cluster id from Metadata, the member id JoinGroup v4+ generates: MEMBER_ID_REQUIRED, KIP-394)."""
    md = codec.decode_response(ask(srv, codec.encode_request("Metadata", 12, {
        "Topics": [], "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False})),
        "Metadata", 12)["body"]
    join = codec.decode_response(ask(srv, codec.encode_request("JoinGroup", 9, {
        "GroupId": "g", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
        "GroupInstanceId": None, "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": b""}],
        "Reason": None}, client_id="app")), "JoinGroup", 9)["body"]
    assert join["ErrorCode"] == CODE["MEMBER_ID_REQUIRED"]
    return md["ClusterId"], join["MemberId"]


def test_ids_are_random_per_server_and_repeat_with_a_seed():
    runs = []
    for seed in (None, None, 7, 7):
        with Server(seed=seed) as srv:
            runs.append(_ids(srv))
    assert runs[0][0] != runs[1][0] and runs[0][1] != runs[1][1]        # Kafka's: random per cluster
    assert runs[2] == runs[3] and runs[2][1].startswith("app-")        # --seed 7: the same every start
    with pytest.raises(ValueError, match="seed"):
        from kipviz.broker import Cluster
        Server(Cluster(seed=1), seed=2)


# ---- the warning for a listener anyone may reach ----
@pytest.mark.parametrize("host,loopback", [("127.0.0.1", True), ("127.9.9.9", True), ("::1", True),
                                           ("0.0.0.0", False), ("::", False), ("192.168.1.20", False),
                                           ("fe80::1%eth0", False), ("", False)])
def test_which_listen_addresses_are_loopback(host, loopback):
    assert cli_serve._loopback(host) is loopback


def _serve_briefly(monkeypatch, capsys, host_is_loopback: bool) -> tuple[str, str]:
    """cmd_serve in this process on 127.0.0.1 (tests never listen elsewhere), stopped by its own
    SIGTERM handler as soon as it serves; _loopback decides what the address counts as."""
    import argparse
    import os
    import signal
    import threading
    parser = argparse.ArgumentParser()
    cli_serve.add_serve(parser.add_subparsers())
    args = parser.parse_args(["serve", "--port", "0", "--seed", "3"])
    monkeypatch.setattr(cli_serve, "_loopback", lambda host: host_is_loopback)
    before, done = signal.getsignal(signal.SIGTERM), threading.Event()

    def stop_when_serving():        # cmd_serve's own SIGTERM handler is in place: it stops the server
        while not done.is_set():
            if signal.getsignal(signal.SIGTERM) is not before:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            done.wait(0.05)
    stopper = threading.Thread(target=stop_when_serving, daemon=True)
    stopper.start()
    try:
        assert args.func(args) == 0
    finally:
        done.set()
        stopper.join(5)
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_listener_that_is_not_loopback_prints_one_warning_line(monkeypatch, capsys):
    out, err = _serve_briefly(monkeypatch, capsys, host_is_loopback=False)
    assert err.count("\n") == 1 and "warning" in err and "no authentication" in err and "127.0.0.1" in err
    assert "seed 3" in out and "cluster id " in out
    out2, err2 = _serve_briefly(monkeypatch, capsys, host_is_loopback=True)
    assert err2 == ""
    cluster_id = out.split("cluster id ")[1].split(",")[0]
    assert cluster_id == out2.split("cluster id ")[1].split(",")[0]             # --seed 3 both times
