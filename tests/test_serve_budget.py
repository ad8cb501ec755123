"""What `kipviz serve` holds stays bounded whatever clients send (issue 30, items 1 and 2), through
real sockets on 127.0.0.1: produced records live in a Kafka-style log directory and the log's
memory is about their wire size; events keep a byte bound, so an oversized request is not pinned
after its answer; request bytes being read share one server-wide pool (queued.max.request.bytes),
so partial frames and a flood of big frames cannot pin more than it; a frame of exactly
socket.request.max.bytes is read, one byte more closes the connection.

Memory is the Python heap measured with tracemalloc (the server runs in this process, so its
thread's allocations count); bounds leave room for a loaded machine and stay well under what the
code before the bounds held (numbers in each docstring)."""
from __future__ import annotations

import os
import socket
import struct
import threading
import time
import tracemalloc
from contextlib import contextmanager

import pytest

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.broker.handlers.metadata import shape
from kipviz.records import read_batches, write_batch
from kipviz.schema.error_codes import CODE
from kipviz.schema.events import ConnectionClosed
from kipviz.serve import Server

MiB = 1024 * 1024


# ---- helpers (test_serve_stalls and test_serve_timeouts use them too) ------------------------------
def request(api: str, version: int, body: dict, cid: int = 1) -> bytes:
    return codec.encode_request(api, version, shape(api + "Request", version, body), correlation_id=cid)


def api_versions_frame(cid: int = 1, trailing: int = 0) -> bytes:
    """An ApiVersions v3 request with `trailing` bytes after its body (a broker ignores them)."""
    f = request("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}, cid)
    if not trailing:
        return f
    payload = f[4:] + bytes(trailing)
    return struct.pack(">i", len(payload)) + payload


def connect(srv, broker: int = 0, timeout: float = 10.0) -> socket.socket:
    return socket.create_connection(srv.addresses[broker], timeout=timeout)


def recv_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(min(n - len(out), 1 << 20))
        if not chunk:
            raise ConnectionError("closed by the server")
        out += chunk
    return bytes(out)


def read_response(s: socket.socket, api: str, version: int) -> dict:
    head = recv_exactly(s, 4)
    return codec.decode_response(head + recv_exactly(s, struct.unpack(">i", head)[0]), api, version)


def call(s: socket.socket, api: str, version: int, body: dict, cid: int = 1) -> dict:
    s.sendall(request(api, version, body, cid))
    return read_response(s, api, version)["body"]


def closed_by_server(s: socket.socket, timeout: float = 10.0) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def send_quietly(s: socket.socket, data: bytes) -> None:
    """sendall from a thread; the socket closing under it ends it quietly."""
    try:
        s.sendall(data)
    except OSError:
        pass


def notes(srv, text: str) -> list[str]:
    with srv.lock:
        return [e.text for e in srv.cluster.events if isinstance(e, ConnectionClosed) and text in e.text]


def wait_for(cond, timeout: float = 20.0, every: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(every)
    return cond()


@contextmanager
def heap():
    """The Python heap's growth over the block (got["now"]: at its end, got["peak"]: the largest)."""
    got = {}
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    try:
        yield got
    finally:
        now, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        got.update(now=now - base, peak=peak - base)


def produce_body(topic: str, raw: bytes, acks: int = 1) -> dict:
    return {"TransactionalId": None, "Acks": acks, "TimeoutMs": 5000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": raw}]}]}


def fetch_body(topic: str, offset: int = 0, wait: int = 0, max_bytes: int = 8 * MiB) -> dict:
    return {"ReplicaId": -1, "MaxWaitMs": wait, "MinBytes": 1, "MaxBytes": max_bytes, "IsolationLevel": 0,
            "SessionId": 0, "SessionEpoch": -1, "ForgottenTopicsData": [], "RackId": "",
            "Topics": [{"Topic": topic, "Partitions": [{"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": offset,
                                                        "LastFetchedEpoch": -1, "LogStartOffset": -1,
                                                        "PartitionMaxBytes": max_bytes}]}]}


def create_topic(srv, name: str, partitions: int = 1) -> None:
    with srv.lock:
        srv.cluster.create_topic(name, partitions)


# ---- item 1: memory follows retention and the budget, not what clients send -----------------------
def test_produced_records_are_kept_on_disk_as_kafka_lays_them_out_and_events_stay_bounded():
    """Was: every byte produced stayed in memory three or four times (the request frame and the
    decoded body in the events, the stored batch, an entry object per record): 20 MiB produced
    grew the heap by ~80 MiB. Now the batches are in the log directory and the events keep about
    events_max_bytes."""
    with Server(events_max_bytes=4 * MiB, log_retention_bytes=-1) as srv:
        create_topic(srv, "big")
        values = [os.urandom(512 * 1024) for _ in range(40)]
        with connect(srv) as s, heap() as h:
            for i, v in enumerate(values):
                now = int(time.time() * 1000)            # CreateTime: older than retention.ms would go
                r = call(s, "Produce", 9, produce_body("big", write_batch([(b"k%d" % i, v, [], now)])), cid=i)
                assert r["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0
        log = srv.cluster.topics.partition("big", 0)
        assert log.held_bytes > 20 * MiB and log.store.resident() == 0
        assert h["now"] < 12 * MiB, h
        part = srv.log_dir / "big-0"
        assert sorted(os.listdir(part)) == ["00000000000000000000.index", "00000000000000000000.log",
                                            "00000000000000000000.timeindex", "partition.metadata"]
        assert (part / "partition.metadata").read_text().startswith("version: 0\ntopic_id: ")
        assert os.path.getsize(part / "00000000000000000000.log") == log.held_bytes
        # read back from the files, as a consumer does
        with connect(srv) as s:
            r = call(s, "Fetch", 12, fetch_body("big", 7, max_bytes=600 * 1024))
        batches = read_batches(r["Responses"][0]["Partitions"][0]["Records"])
        assert [(b["base_offset"], b["records"][0]["value"]) for b in batches] == [(7, values[7])]
        lines = srv.budget()
        assert lines["events"]["bytes"] <= 4 * MiB and lines["logs"]["in_memory"] == 0


def test_a_log_in_memory_costs_about_the_wire_size_of_its_records():
    """Was: an Entry object per record next to the batch bytes, ~5x the data (1M records of 100 B:
    +501 MB). The log keeps the batches as sent and a few numbers per batch."""
    c = Cluster()
    c.create_topic("t")
    value = b"v" * 100
    frames = [request("Produce", 9, produce_body("t", write_batch([(b"k%06d" % (i * 500 + j), value)
                                                                    for j in range(500)])), cid=i)
              for i in range(100)]
    with heap() as h:
        for f in frames:
            c.handle(f)
            c.take_events()                  # the events go elsewhere (a recording, a long run's chunks)
    log = c.topics.partition("t", 0)
    assert log.log_end_offset == 50_000
    assert h["now"] < 1.3 * log.held_bytes + 100 * 200, (h, log.held_bytes)
    assert [e.value for e in log.entries[49_998:]] == [value, value]


# ---- item 2: oversized requests are not pinned ------------------------------------------------------
def test_oversized_requests_are_not_pinned_after_their_answers():
    """Was: 8 ApiVersions with 64 MiB of trailing bytes grew the server by 512 MB, kept after the
    answers (each event kept its frame); 4 JoinGroups with 50 MiB metadata by 611 MB. Now the
    frames and long bytes of older events are dropped past events_max_bytes."""
    with Server(events_max_bytes=4 * MiB) as srv, connect(srv) as s, heap() as h:
        for i in range(4):
            s.sendall(api_versions_frame(i, trailing=6 * MiB))
            assert read_response(s, "ApiVersions", 3)["body"]["ErrorCode"] == 0
        meta = os.urandom(6 * MiB)
        join = {"GroupId": "g", "SessionTimeoutMs": 30000, "RebalanceTimeoutMs": 30000, "MemberId": "",
                "GroupInstanceId": None, "ProtocolType": "consumer", "Reason": None,
                "Protocols": [{"Name": "range", "Metadata": meta}]}
        first = call(s, "JoinGroup", 9, join, cid=10)
        assert first["ErrorCode"] == CODE["MEMBER_ID_REQUIRED"]
        joined = call(s, "JoinGroup", 9, {**join, "MemberId": first["MemberId"]}, cid=11)
        assert joined["ErrorCode"] == 0 and joined["Members"][0]["Metadata"] == meta
        left = call(s, "LeaveGroup", 5, {"GroupId": "g", "Members": [
            {"MemberId": first["MemberId"], "GroupInstanceId": None, "Reason": None}]}, cid=12)
        assert left["ErrorCode"] == 0
        del meta, joined, first, join
    assert h["now"] < 10 * MiB, h
    assert srv.cluster.internal_errors == []


def test_partial_frames_share_one_server_wide_budget():
    """Was: 8 partial 64 MiB frames held open pinned 513 MB (every connection buffered its frame).
    Now a frame's bytes come from queued.max.request.bytes when its size prefix is read; the
    connections past it are not read from (their bytes wait in the kernel) until memory returns."""
    size, sent = 6 * MiB, 5 * MiB
    with Server(queued_max_request_bytes=8 * MiB) as srv:
        socks = [connect(srv) for _ in range(6)]
        frames = [api_versions_frame(i, trailing=size - len(api_versions_frame(i)) + 4) for i in range(6)]
        assert all(len(f) == size + 4 for f in frames)
        heads = [memoryview(f)[:sent] for f in frames]           # the test's own bytes, made before measuring
        with heap() as h:
            writers = [threading.Thread(target=send_quietly, args=(s, head), daemon=True)
                       for s, head in zip(socks, heads, strict=True)]
            for w in writers:
                w.start()
            assert wait_for(lambda: srv.budget()["requests"]["waiting"] == 4)
            time.sleep(0.5)
            b = srv.budget()["requests"]
        # non-strict, as Kafka's pool: the second frame is admitted while memory is left
        assert b["frames"] == 2 and b["in_use"] == 2 * size and b["waiting"] == 4
        # a waiting connection's bytes stay in the kernel: at most one read (256 KiB) came in
        assert srv.buffered <= 2 * sent + 4 * 256 * 1024, srv.buffered
        assert h["peak"] < 20 * MiB, h
        # one admitted frame completes: its answer, then its memory goes to a waiting connection
        admitted = {int(k.client.rsplit(":", 1)[1]) for k in list(srv._conns.values()) if k.reserved}
        i = next(i for i, s in enumerate(socks) if s.getsockname()[1] in admitted)
        writers[i].join(10)
        socks[i].sendall(frames[i][sent:])
        assert read_response(socks[i], "ApiVersions", 3)["body"]["ErrorCode"] == 0
        assert wait_for(lambda: srv.budget()["requests"]["waiting"] == 3), srv.budget()
        for s in socks:
            s.close()
        for w in writers:
            w.join(10)
        assert wait_for(lambda: srv.open_connections == 0)
        assert srv.budget()["requests"]["in_use"] == 0 and srv.buffered == 0


def test_backpressure_holds_memory_flat_under_a_flood_of_big_frames():
    """Eight connections send 4 MiB frames back to back for two seconds: the heap stays near the
    pool (8 MiB) and the events' bound, not eight frames (and their copies) per round."""
    stop = threading.Event()
    done = [0]
    f = api_versions_frame(1, trailing=4 * MiB)          # one frame for all, made before measuring

    def flood(s):
        while not stop.is_set():
            s.sendall(f)
            read_response(s, "ApiVersions", 3)
            done[0] += 1

    with Server(queued_max_request_bytes=8 * MiB, events_max_bytes=4 * MiB) as srv:
        socks = [connect(srv) for _ in range(8)]
        with heap() as h:
            threads = [threading.Thread(target=flood, args=(s,), daemon=True) for s in socks]
            for t in threads:
                t.start()
            time.sleep(2.0)
            stop.set()
            for t in threads:
                t.join(20)
        for s in socks:
            s.close()
    assert done[0] >= 8
    assert h["peak"] < 8 * MiB + 2 * 4 * MiB + 4 * MiB + 8 * MiB, h    # pool + one over it + events + copies


def test_a_frame_of_exactly_socket_request_max_bytes_is_read_and_one_byte_more_closes():
    """NetworkReceive: a size over socket.request.max.bytes is an InvalidReceiveException and the
    connection is closed; exactly the bound is a request."""
    assert Server().socket_request_max_bytes == 104857600
    limit = 1 * MiB
    with Server(socket_request_max_bytes=limit) as srv:
        base = len(api_versions_frame(1)) - 4
        with connect(srv) as s:
            exact = api_versions_frame(1, trailing=limit - base)
            assert struct.unpack(">i", exact[:4])[0] == limit
            s.sendall(exact)
            assert read_response(s, "ApiVersions", 3)["body"]["ErrorCode"] == 0
        with connect(srv) as s:
            s.sendall(api_versions_frame(2, trailing=limit - base + 1)[:64])
            assert closed_by_server(s)
        assert notes(srv, f"request size {limit + 1} out of range")


@pytest.mark.parametrize("size", [0, 4])
def test_a_tiny_frame_is_answered_or_closed_and_frees_its_bytes(size):
    with Server() as srv, connect(srv) as s:
        s.sendall(struct.pack(">i", size) + bytes(size))
        assert closed_by_server(s)
        assert wait_for(lambda: srv.open_connections == 0)
        assert srv.budget()["requests"]["in_use"] == 0 and srv.buffered == 0


def test_the_budget_is_shown_by_the_live_view_and_by_verbose_output():
    pytest.importorskip("ipywidgets")
    from kipviz.serve import LiveView
    said: list[str] = []
    with Server(verbose=True, log=said.append) as srv, connect(srv) as s:
        srv.verbose_budget_s = 0.1
        s.sendall(api_versions_frame(1))
        read_response(s, "ApiVersions", 3)
        assert wait_for(lambda: any(line.startswith("budget: requests read:") for line in said))
        view = LiveView(srv, auto=False, players=False)
        assert "memory budget" in view.status.value and "queued.max.request.bytes" in view.status.value
        assert "logs:" in view.status.value and str(srv.log_dir) in view.status.value
    budget = [line for line in said if line.startswith("budget: ")]
    assert any("events:" in line for line in budget) and any("connections:" in line for line in budget)
