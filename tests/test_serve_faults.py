"""Bad input and faults at `kipviz serve`'s sockets: a bad connection is closed alone with one event;
killed clients and connection storms leave the server serving. Raw sockets on 127.0.0.1, bounded."""
from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time

import pytest

from kipviz import codec
from kipviz.schema.events import Happened
from kipviz.serve import Server


@pytest.fixture
def server():
    with Server(brokers=2) as srv:
        yield srv


def addr(srv, broker=0):
    return srv.addresses[broker]


def connect(srv, broker=0) -> socket.socket:
    s = socket.create_connection(addr(srv, broker), timeout=5)
    return s


def api_versions(s: socket.socket, cid=1) -> dict:
    s.sendall(codec.encode_request("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"},
                                   correlation_id=cid))
    head = recv_exactly(s, 4)
    body = recv_exactly(s, struct.unpack(">i", head)[0])
    return codec.decode_response(head + body, "ApiVersions", 3)


def recv_exactly(s, n) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def closed_by_server(s: socket.socket) -> bool:
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def notes(srv, since: int) -> list[str]:
    with srv.lock:
        return [e.text for e in srv.cluster.events if isinstance(e, Happened) and e.seq >= since]


def settle(srv, open_now: int, timeout=10.0) -> None:
    end = time.monotonic() + timeout
    while srv.open_connections != open_now and time.monotonic() < end:
        time.sleep(0.02)
    assert srv.open_connections == open_now


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x08garbage!",                  # a readable size, an unknown api key
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",         # an HTTP client on the Kafka port: size out of range
    struct.pack(">i", 6) + struct.pack(">hhh", 3, 12, 0),   # Metadata v12 cut inside its header
])
def test_garbage_closes_only_that_connection_with_one_event(server, garbage):
    good = connect(server)
    assert api_versions(good)["body"]["ErrorCode"] == 0
    since = server.cluster.next_seq
    bad = connect(server)
    bad.sendall(garbage)
    assert closed_by_server(bad)
    settle(server, 1)
    assert len(notes(server, since)) == 1 and "connection closed" in notes(server, since)[0]
    assert api_versions(good, cid=2)["correlation_id"] == 2        # the other connection is untouched
    good.close()
    bad.close()


def test_a_half_frame_then_close_is_one_event_and_the_broker_keeps_serving(server):
    since, seen = server.cluster.next_seq, server.connections
    s = connect(server, 1)
    frame = codec.encode_request("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})
    s.sendall(frame[:9])
    s.close()
    end = time.monotonic() + 10
    while server.connections == seen and time.monotonic() < end:
        time.sleep(0.02)
    settle(server, 0)
    assert notes(server, since) == [f"connection closed mid-request: 5 of {len(frame) - 4} bytes"]
    with connect(server, 1) as again:
        assert api_versions(again)["body"]["ErrorCode"] == 0


def test_a_client_killed_mid_request_leaves_the_server_serving(server):
    host, port = addr(server)
    code = ("import socket,os,time;s=socket.create_connection(({!r},{}));"
            "s.sendall(b'\\x00\\x00\\x01\\x00\\x00\\x12');time.sleep(30)").format(host, port)
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        end = time.monotonic() + 10
        while server.open_connections < 1 and time.monotonic() < end:
            time.sleep(0.02)
        assert server.open_connections == 1
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    settle(server, 0)
    with connect(server) as s:
        assert api_versions(s)["body"]["ErrorCode"] == 0
    assert server.cluster.internal_errors == []


def test_a_thousand_connections_opened_and_dropped(server):
    start = server.connections
    t0 = time.monotonic()
    for i in range(1000):
        s = socket.create_connection(addr(server, i % 2), timeout=5)
        if i % 10 == 0:                           # some send a request first, some half of one
            s.sendall(b"\x00\x00\x00\x20\x00")
        s.close()
        assert time.monotonic() - t0 < 60
    end = time.monotonic() + 20
    while server.connections - start < 1000 and time.monotonic() < end:
        time.sleep(0.02)
    assert server.connections - start == 1000
    settle(server, 0)
    with connect(server) as s:
        assert api_versions(s)["body"]["ErrorCode"] == 0
    assert server.cluster.internal_errors == []


def test_a_held_fetch_of_a_dropped_connection_is_forgotten(server):
    with server.lock:
        server.cluster.create_topic("t")
    s = connect(server)
    body = {"ReplicaId": -1, "MaxWaitMs": 60000, "MinBytes": 1, "MaxBytes": 1 << 20, "IsolationLevel": 0,
            "SessionId": 0, "SessionEpoch": -1, "ForgottenTopicsData": [], "RackId": "",
            "Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0,
                                                      "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                                      "PartitionMaxBytes": 1 << 20}]}]}
    s.sendall(codec.encode_request("Fetch", 12, body, correlation_id=5))
    end = time.monotonic() + 5
    while not server.cluster.delayed.held and time.monotonic() < end:
        time.sleep(0.02)
    assert len(server.cluster.delayed.held) == 1
    s.close()
    settle(server, 0)
    assert server.cluster.delayed.held == []


def test_server_lifecycle_and_bad_settings():
    with pytest.raises(ValueError):
        Server(speed=0)
    srv = Server(brokers=1)
    with srv:
        host, port = srv.addresses[0]
        assert srv.bootstrap == f"{host}:{port}"
        with srv.lock:
            assert srv.cluster.config.advertised_listeners == {0: (host, port)}
        with pytest.raises(OSError):                  # the port is taken
            Server(brokers=1, port=port).start()
    srv.stop()                                        # stopping twice is harmless
    with pytest.raises(OSError):
        socket.create_connection((host, port), timeout=1)
