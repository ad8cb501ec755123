"""kipviz.capture: Kafka conversations read from and written to pcap/pcapng files."""
from __future__ import annotations

import io
import math
import os
import shutil
import socket
import struct
import subprocess
import threading
import time

import dpkt
import pytest
from dpkt import pcapng
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz.capture import CaptureError, PcapWriter, error_codes, read_pcap, to_dataframe, write_pcap
from kipviz.codec import decode_request, decode_response, encode_request, encode_response
from kipviz.errors import KipvizError

from .kafka_listener import FakeBroker, body

# ---------------------------------------------------------------------------------------------
# a small conversation built with kipviz.codec


def req(api, version, value, corr, client_id="kipviz-test"):
    return encode_request(api, version, body(api, version, value, "Request"), correlation_id=corr, client_id=client_id)


def resp(api, version, value, corr):
    return encode_response(api, version, body(api, version, value), correlation_id=corr)


def txn_request(corr, partitions=3):
    return req("TxnOffsetCommit", 5, {
        "TransactionalId": "txn-1", "GroupId": "group-1", "ProducerId": 4000, "ProducerEpoch": 2,
        "GenerationIdOrMemberEpoch": 7, "MemberId": "member-1",
        "Topics": [{"Name": "orders", "Partitions": [
            {"PartitionIndex": p, "CommittedOffset": 1000 + p, "CommittedLeaderEpoch": 3,
             "CommittedMetadata": "m" * 20} for p in range(partitions)]}]}, corr)


def txn_response(corr, partitions=3, failing=()):
    return resp("TxnOffsetCommit", 5, {"ThrottleTimeMs": 0, "Topics": [{"Name": "orders", "Partitions": [
        {"PartitionIndex": p, "ErrorCode": 47 if p in failing else 0} for p in range(partitions)]}]}, corr)


def conversation(start_corr=1):
    c = start_corr
    api_versions = resp("ApiVersions", 3, {"ErrorCode": 0, "ApiKeys": [
        {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}, {"ApiKey": 3, "MinVersion": 0, "MaxVersion": 12},
        {"ApiKey": 28, "MinVersion": 0, "MaxVersion": 5}]}, c)
    metadata_topics = [{"Name": f"topic-{i}"} for i in range(3)]
    metadata = resp("Metadata", 12, {
        "Brokers": [{"NodeId": 1, "Host": "broker-1", "Port": 9092}], "ClusterId": "c1", "ControllerId": 1,
        "Topics": [{"ErrorCode": 0, "Name": t["Name"], "Partitions": [
            {"ErrorCode": 0, "PartitionIndex": 0, "LeaderId": 1, "ReplicaNodes": [1], "IsrNodes": [1]}]}
            for t in metadata_topics]}, c + 1)
    return [
        ("request", req("ApiVersions", 3, {"ClientSoftwareName": "kipviz", "ClientSoftwareVersion": "0.1"}, c)),
        ("response", api_versions),
        ("request", req("Metadata", 12, {"Topics": metadata_topics}, c + 1)),
        ("response", metadata),
        ("request", txn_request(c + 2)),
        ("response", txn_response(c + 2, failing={1})),
    ]


def capture_bytes(items, **kw) -> bytes:
    f = io.BytesIO()
    write_pcap(f, items, **kw)
    return f.getvalue()


# ---------------------------------------------------------------------------------------------
# (1) round trip through write_pcap / read_pcap


@pytest.mark.parametrize("suffix", [".pcap", ".pcapng"])
def test_round_trip_decodes_every_body(tmp_path, suffix):
    items = conversation()
    path = tmp_path / f"talk{suffix}"
    assert write_pcap(path, items, start_time=1_700_000_000.0) == path
    head = path.read_bytes()[:4]
    assert head == (b"\x0a\x0d\x0d\x0a" if suffix == ".pcapng" else b"\xd4\xc3\xb2\xa1")
    exchanges = read_pcap(path)
    assert [(e["api"], e["version"], e["correlation_id"]) for e in exchanges] == [
        ("ApiVersions", 3, 1), ("Metadata", 12, 2), ("TxnOffsetCommit", 5, 3)]
    frames = iter(items)
    for ex in exchanges:
        (_, rq), (_, rs) = next(frames), next(frames)
        assert ex["errors"] == [] and ex["kind"] == "exchange"
        assert ex["request_frame"] == rq and ex["response_frame"] == rs
        assert ex["raw_request"] == rq and ex["raw_response"] == rs
        assert ex["request"] == decode_request(rq)
        assert ex["response"] == decode_response(rs, ex["api"], ex["version"])
        assert ex["client"] == "127.0.0.1:50000" and ex["server"] == "127.0.0.1:9092"
        assert ex["time"] >= 1_700_000_000.0 and ex["response_time"] > ex["time"]
        assert ex["latency_ms"] == pytest.approx((ex["response_time"] - ex["time"]) * 1000)
    txn = exchanges[2]
    assert txn["request"]["body"]["Topics"][0]["Partitions"][2]["CommittedOffset"] == 1002
    assert txn["request"]["header"]["ClientId"] == "kipviz-test"
    assert exchanges.errors == [] and exchanges.file_errors == []
    conn = exchanges.connections[0]
    assert conn["handshake_seen"] and conn["closed"] == "fin" and conn["requests"] == 3


def test_rewriting_read_exchanges_keeps_bodies_and_connections(tmp_path):
    first = read_pcap(capture_bytes(conversation()))
    again = read_pcap(capture_bytes(first, start_time=5.0))
    assert [e["request"] for e in again] == [e["request"] for e in first]
    assert [e["response"] for e in again] == [e["response"] for e in first]
    assert again[0]["time"] == pytest.approx(5.001)
    # hand-made exchanges holding only decoded dicts are encoded again
    decoded_only = [{"request": e["request"], "response": e["response"]} for e in first]
    third = read_pcap(capture_bytes(decoded_only))
    assert [e["response_frame"] for e in third] == [e["response_frame"] for e in first]


def test_dataframe_lists_exchanges_with_error_codes_and_latency():
    exchanges = read_pcap(capture_bytes(conversation()))
    df = to_dataframe(exchanges)
    assert list(df.columns[:10]) == ["time", "client", "server", "api", "api_key", "version", "correlation_id",
                                     "error_codes", "failed", "latency_ms"]
    assert list(df["api"]) == ["ApiVersions", "Metadata", "TxnOffsetCommit"]
    assert list(df["correlation_id"]) == [1, 2, 3]
    assert df.loc[2, "error_codes"] == [0, 47] and bool(df.loc[2, "failed"])
    assert df.loc[0, "error_codes"] == [0] and not bool(df.loc[0, "failed"])
    assert (df["latency_ms"] > 0).all()
    assert error_codes({"A": [{"ErrorCode": 5, "X": {"TopLevelErrorCode": 7}}], "ErrorCode": 0}) == [0, 5, 7]


def test_big_frames_are_cut_into_mss_segments_with_valid_tcp(tmp_path):
    big_req, big_resp = txn_request(9, partitions=300), txn_response(9, partitions=300)
    assert len(big_req) > 5000
    path = tmp_path / "big.pcap"
    write_pcap(path, [("request", big_req), ("response", big_resp)], client=("10.1.2.3", 40001),
               server=("10.9.8.7", 9092), mss=1000)
    with open(path, "rb") as f:
        raw_packets = [buf for _, buf in dpkt.pcap.Reader(f)]
    packets = [dpkt.ethernet.Ethernet(buf) for buf in raw_packets]
    tcps = [(eth.data, eth.data.data) for eth in packets]
    flags = [t.flags for _, t in tcps]
    S, A, F = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_FIN
    assert flags[:3] == [S, S | A, A]                                   # handshake
    assert flags[-3:] == [F | A, F | A, A]                              # orderly close
    syn, synack, ack = (t for _, t in tcps[:3])
    assert synack.ack == syn.seq + 1 and ack.seq == syn.seq + 1 and ack.ack == synack.seq + 1
    data_c = [t for _, t in tcps if t.data and t.sport == 40001]
    assert len(data_c) == math.ceil(len(big_req) / 1000) and all(len(t.data) <= 1000 for t in data_c)
    expect = syn.seq + 1
    for t in data_c:                                                    # contiguous sequence numbers
        assert t.seq == expect
        expect += len(t.data)
    for buf, eth in zip(raw_packets, packets, strict=True):           # the bytes as stored in the file
        ip = eth.data
        raw = buf[14:]
        assert _ones_complement(raw[:20]) == 0                          # IPv4 header checksum
        seg = raw[20:ip.len]
        pseudo = ip.src + ip.dst + struct.pack(">BBH", 0, 6, len(seg))
        assert _ones_complement(pseudo + seg) == 0                      # TCP checksum incl. pseudo-header
        assert ip.df and ip.ttl == 64
    exchanges = read_pcap(path)
    assert len(exchanges) == 1 and exchanges[0]["errors"] == []
    assert exchanges[0]["request"]["body"]["Topics"][0]["Partitions"][299]["CommittedOffset"] == 1299
    assert exchanges[0]["client"] == "10.1.2.3:40001"
    assert exchanges[0]["request_packets"][1] - exchanges[0]["request_packets"][0] + 1 >= len(data_c)


def _ones_complement(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (make test installs it when run as root)")
def test_wireshark_reads_the_written_pcap(tmp_path):
    path = tmp_path / "ws.pcap"
    write_pcap(path, conversation())
    out = subprocess.run(["tshark", "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
                          "-T", "fields", "-e", "kafka.api_key", "-e", "kafka.correlation_id",
                          "-e", "tcp.checksum.status", "-e", "ip.checksum.status", "-e", "tcp.analysis.flags"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [ln.split("\t") for ln in out.stdout.splitlines()]
    assert len(rows) == 3 + 6 * 2 + 3                                  # handshake, data + ACKs, close
    assert all(r[2] == "1" and r[3] == "1" for r in rows), rows       # 1 = checksum good
    assert all(r[4] == "" for r in rows), rows                        # no TCP analysis complaints
    assert {(r[0], r[1]) for r in rows if r[0]} >= {("18", "1"), ("3", "2"), ("28", "3")}


def test_pcap_writer_with_several_connections(tmp_path):
    path = tmp_path / "two.pcapng"
    items = conversation()
    with PcapWriter(path) as w:
        a = w.connection(("192.168.0.10", 51000), ("192.168.0.1", 9092), mss=64)
        b = w.connection(("192.168.0.11", 51001), ("192.168.0.1", 9092))
        for i, (direction, frame) in enumerate(items):
            a.send(direction == "request", frame, ts=10.0 + i * 0.01)
            b.send(direction == "request", frame, ts=10.005 + i * 0.01)
    exchanges = read_pcap(path)
    assert len(exchanges) == 6 and not exchanges.errors
    assert [e["client"] for e in exchanges] == ["192.168.0.10:51000", "192.168.0.11:51001"] * 3
    assert len(exchanges.connections) == 2
    assert exchanges.connections[0]["request_stream"]["segments"] > exchanges.connections[1]["request_stream"][
        "segments"]                     # the small MSS cut the first connection's frames finer
    # write_pcap: a connection tag per item gives one TCP connection per tag
    tagged = [(d, f, None, i // 2 % 2) for i, (d, f) in enumerate(items)]
    again = read_pcap(capture_bytes(tagged))
    assert [e["client"] for e in again] == ["127.0.0.1:50000", "127.0.0.1:50001", "127.0.0.1:50000"]
    with pytest.raises(CaptureError):
        write_pcap(io.BytesIO(), [("sideways", b"x")])
    with pytest.raises(CaptureError):
        write_pcap(io.BytesIO(), [("request", b"x")], client=("not an ip", 1))


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_streamed_pcap_holds_only_its_window_and_equals_the_batch_file(tmp_path, fmt):
    """window=S (kipviz serve --record): packets go to the file as they come, each once the newest is
    S seconds later; what is held stays bounded however long the session, and the file is byte for
    byte the one a batch writer sorts at the end, a connection closed mid-run included."""
    items = conversation()

    def session(w):
        held = []
        late = w.connection(("10.0.0.2", 52000), ("10.0.0.1", 9092))
        for r in range(200):                                  # 200 rounds, 0.1 s apart: 20 s of traffic
            c = w.connection(("10.0.0.3", 40000 + r), ("10.0.0.1", 9092))
            for i, (direction, frame) in enumerate(items):
                c.send(direction == "request", frame, ts=100.0 + r * 0.1 + i * 0.001)
                late.send(direction == "request", frame, ts=100.0005 + r * 0.1 + i * 0.001)
            c.close(100.0 + r * 0.1 + 0.05)
            held.append((len(w.packets), len(w.connections)))
        return held

    batch, streamed = tmp_path / f"batch.{fmt}", tmp_path / f"streamed.{fmt}"
    with PcapWriter(batch) as w:
        session(w)
    with PcapWriter(streamed, window=1.0) as w:
        assert streamed.stat().st_size > 0                          # a readable pcap from the start
        held = session(w)
        assert w.written > 0 and streamed.stat().st_size > 0     # on its way to disk before close
    per_round = 2 * (3 + 2 * len(items) + 3) + 2 * len(items)    # this round's packets, generously
    assert max(h for h, _ in held) <= 12 * per_round               # ~1 s of traffic, not 20 s
    assert max(n for _, n in held) <= 2                            # closed connections are let go
    assert streamed.read_bytes() == batch.read_bytes()
    exchanges = read_pcap(streamed)
    assert len(exchanges) == 2 * 200 * len(items) // 2 and not exchanges.errors


def test_ipv6_and_linux_cooked_captures(tmp_path):
    v6 = read_pcap(capture_bytes(conversation(), client=("::1", 50123), server=("::1", 9092)))
    assert [e["api"] for e in v6] == ["ApiVersions", "Metadata", "TxnOffsetCommit"]
    assert v6[0]["client"] == "[::1]:50123" and all(not e["errors"] for e in v6)
    # the same packets as Linux "any"-interface captures (SLL) and raw IP
    eth = [(ts, dpkt.ethernet.Ethernet(b)) for ts, b in dpkt.pcap.Reader(io.BytesIO(capture_bytes(conversation())))]
    for linktype, wrap in [(113, lambda ip: b"\x00\x00\x03\x04\x00\x06" + b"\0" * 8 + b"\x08\x00" + ip),
                           (101, lambda ip: ip), (0, lambda ip: struct.pack("<I", 2) + ip)]:
        f = io.BytesIO()
        w = dpkt.pcap.Writer(f, linktype=linktype, snaplen=65535)
        for ts, e in eth:
            w.writepkt(wrap(bytes(e.data)), ts=ts)
        got = read_pcap(f.getvalue())
        assert [x["api"] for x in got] == ["ApiVersions", "Metadata", "TxnOffsetCommit"], linktype
        assert not got.errors


def test_ports_option_and_hint():
    data = capture_bytes(conversation(), server=("127.0.0.1", 19092))
    assert read_pcap(data) == []
    assert "19092" in read_pcap(data).notes[0]
    assert len(read_pcap(data, ports=(19092,))) == 3
    assert len(read_pcap(data, ports=19092)) == 3
    assert len(read_pcap(data, ports=None)) == 3
    with pytest.raises(CaptureError):
        read_pcap(data, ports=("x",))


def test_produce_with_acks_0_expects_no_response():
    produce = req("Produce", 9, {"Acks": 0, "TimeoutMs": 100, "TopicData": []}, 5)
    (ex,) = read_pcap(capture_bytes([("request", produce)]))
    assert ex["response"] is None and ex["errors"] == [] and "acks=0" in ex["notes"][0]
    (ex,) = read_pcap(capture_bytes([("request", req("Metadata", 12, {}, 6))]))
    assert ex["response"] is None and "no response" in ex["errors"][0]


def test_api_versions_answer_in_v0_layout_decodes():
    items = [("request", req("ApiVersions", 4, {}, 1)),
             ("response", resp("ApiVersions", 0, {"ErrorCode": 35, "ApiKeys": [
                 {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}, 1))]
    (ex,) = read_pcap(capture_bytes(items))
    assert ex["version"] == 4 and ex["response"]["version"] == 0
    assert ex["response"]["body"]["ErrorCode"] == 35 and ex["errors"] == []
    assert "v0 layout" in ex["notes"][0]


# ---------------------------------------------------------------------------------------------
# (2) out-of-order, retransmitted, overlapping and split segments, crafted with dpkt

CLIENT, SERVER = ("10.0.0.1", 40000), ("10.0.0.2", 9092)
PA, A, SYN, FIN, RST = (dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, dpkt.tcp.TH_ACK, dpkt.tcp.TH_SYN, dpkt.tcp.TH_FIN,
                        dpkt.tcp.TH_RST)


def packet(to_server: bool, seq: int, payload: bytes = b"", flags: int = PA, ack: int = 0) -> bytes:
    (sip, sport), (dip, dport) = (CLIENT, SERVER) if to_server else (SERVER, CLIENT)
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % (1 << 32), ack=ack % (1 << 32), flags=flags,
                       win=8192, data=payload)
    ip = dpkt.ip.IP(src=socket.inet_aton(sip), dst=socket.inet_aton(dip), p=6, ttl=64, data=tcp)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip))


def pcap_of(packets) -> bytes:
    f = io.BytesIO()
    w = dpkt.pcap.Writer(f, snaplen=65535)
    for i, p in enumerate(packets):
        w.writepkt(p, ts=100.0 + i * 0.001)
    return f.getvalue()


C_ISN = (1 << 32) - 700          # the client's sequence numbers wrap around 2**32 mid-stream
S_ISN = 5_000


def handshake():
    return [packet(True, C_ISN, flags=SYN), packet(False, S_ISN, flags=SYN | A, ack=C_ISN + 1),
            packet(True, C_ISN + 1, flags=A, ack=S_ISN + 1)]


def test_reassembly_reorders_drops_duplicates_and_trims_overlaps():
    r1 = req("ApiVersions", 3, {"ClientSoftwareName": "k", "ClientSoftwareVersion": "1"}, 1)
    r2 = req("Metadata", 12, {"Topics": [{"Name": f"t{i}"} for i in range(20)]}, 2)
    r3 = txn_request(3, partitions=80)
    p1 = resp("ApiVersions", 3, {"ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}, 1)
    p2 = resp("Metadata", 12, {"Brokers": [{"NodeId": 1, "Host": "h", "Port": 9092}]}, 2)
    p3 = txn_response(3, partitions=80, failing={5})
    c = r1 + r2 + r3
    s = p1 + p2 + p3
    assert len(r3) > 3000
    cb = C_ISN + 1                      # first client data byte
    sb = S_ISN + 1
    cuts = [0, len(r1) + 10, len(r1) + len(r2), len(r1) + len(r2) + 1000, len(r1) + len(r2) + 2000, len(c)]
    seg = {i: (cb + cuts[i], c[cuts[i]:cuts[i + 1]]) for i in range(5)}   # several frames in segment 0
    a, b = cuts[3] + 500, cuts[4] + 300
    overlap = (cb + a, c[a:b])                                              # straddles segments 3 and 4
    pk = lambda sq_pl: packet(True, *sq_pl, ack=sb)  # noqa: E731
    packets = handshake() + [
        pk(seg[0]), pk(seg[2]), pk(seg[1]), pk(seg[0]),                     # out of order + retransmission
        pk(seg[3]), pk(overlap), pk(seg[4]), pk(seg[3]),
        packet(False, sb + 5, s[5:] , ack=cb + len(c)),                     # server: second part first
        packet(False, sb, s[:5], ack=cb + len(c)),
        packet(False, sb + 5, s[5:40], ack=cb + len(c)),                    # partial retransmission
        packet(True, cb + len(c), flags=FIN | A), packet(False, sb + len(s), flags=FIN | A),
    ]
    exchanges = read_pcap(pcap_of(packets))
    assert [(e["api"], e["correlation_id"]) for e in exchanges] == [
        ("ApiVersions", 1), ("Metadata", 2), ("TxnOffsetCommit", 3)]
    for ex, rq, rs in zip(exchanges, (r1, r2, r3), (p1, p2, p3), strict=True):
        assert ex["errors"] == []
        assert ex["request_frame"] == rq and ex["response_frame"] == rs
        assert ex["request"] == decode_request(rq)
        assert ex["response"] == decode_response(rs, ex["api"], ex["version"])
    assert exchanges[2]["request"]["body"]["Topics"][0]["Partitions"][79]["CommittedOffset"] == 1079
    assert exchanges[2]["request_packets"] == (5, 10)
    stats = exchanges.connections[0]
    assert stats["request_stream"]["retransmissions"] == 2 and stats["request_stream"]["overlaps"] == 2
    assert stats["request_stream"]["out_of_order"] == 1 and stats["request_stream"]["gaps"] == 0
    assert stats["response_stream"]["out_of_order"] == 1 and stats["response_stream"]["retransmissions"] == 1
    # the request finished with its last segment (packet 10), the time reflects that
    assert exchanges[2]["time"] == pytest.approx(100.0 + 9 * 0.001)
    assert to_dataframe(exchanges).loc[2, "error_codes"] == [0, 47]


def test_gap_cuts_one_frame_and_the_next_frames_still_decode():
    r1 = txn_request(1, partitions=40)
    r2 = req("Metadata", 12, {"Topics": [{"Name": "after-gap"}]}, 2)
    p1, p2 = txn_response(1, partitions=40), resp("Metadata", 12, {}, 2)
    c, cb, sb = r1 + r2, C_ISN + 1, S_ISN + 1
    packets = handshake() + [
        packet(True, cb, c[:300], ack=sb),
        # c[300:600] never captured
        packet(True, cb + 600, c[600:], ack=sb),
        packet(False, sb, p1 + p2, ack=cb + len(c)),
    ]
    exchanges = read_pcap(pcap_of(packets))
    first, second = exchanges
    assert first["request"] is None and first["api"] == "TxnOffsetCommit" and first["correlation_id"] == 1
    assert any("cut short" in e and "gap of 300 bytes" in e for e in first["errors"])
    assert first["response"] is not None            # paired by correlation id, decoded with the request's version
    assert second["errors"] and "300 bytes missing" in second["errors"][0]
    assert second["request"]["body"]["Topics"][0]["Name"] == "after-gap"
    assert second["response"] == decode_response(p2, "Metadata", 12)
    assert exchanges.connections[0]["request_stream"]["missing_bytes"] == 300


def test_small_snapshot_length_is_reported():
    big = txn_request(1, partitions=100)
    after = req("Metadata", 12, {"Topics": [{"Name": "x"}]}, 2)
    cb = C_ISN + 1
    packets = handshake() + [packet(True, cb, big[:1000]), packet(True, cb + 1000, big[1000:] + after)]
    f = io.BytesIO()
    w = dpkt.pcap.Writer(f, snaplen=200)
    for i, p in enumerate(packets):
        w.writepkt(p[:200], ts=1.0 + i)            # what tcpdump -s 200 keeps
    exchanges = read_pcap(f.getvalue())
    assert exchanges[0]["api"] == "TxnOffsetCommit" and exchanges[0]["request"] is None
    assert any("cut short" in e and "snapshot length" in e for e in exchanges[0]["errors"])
    assert exchanges.connections[0]["request_stream"]["missing_bytes"] == len(big) + len(after) - 2 * 146
    assert all(isinstance(e, str) for e in exchanges.errors)


def test_retransmission_with_different_bytes_is_reported():
    r1 = req("Metadata", 12, {"Topics": [{"Name": "orders"}]}, 1)
    bad = bytearray(r1[20:])
    bad[0] ^= 0xFF
    packets = handshake() + [packet(True, C_ISN + 1, r1), packet(True, C_ISN + 21, bytes(bad))]
    (ex,) = read_pcap(pcap_of(packets))
    assert ex["request"] == decode_request(r1)
    assert any("different content" in e for e in ex["errors"])


def test_rst_and_keepalive_bytes_are_not_stream_data():
    r1 = req("Metadata", 12, {"Topics": [{"Name": "orders"}]}, 1)
    packets = handshake() + [packet(True, C_ISN + 1, r1), packet(True, C_ISN + len(r1), b"\x00", flags=A),
                             packet(True, C_ISN + 1 + len(r1), b"diagnostic text", flags=RST | A)]
    (ex,) = read_pcap(pcap_of(packets))
    assert ex["request"] == decode_request(r1)
    assert ex["errors"] == ["no response in the capture (the connection was reset before it arrived)"]


def test_undecodable_frames_keep_their_decode_error():
    unknown = struct.pack(">hhi", 33, 4, 7) + b"\x00\x03abc" + b"\x01\x02\x03"      # AlterConfigs v4 (not in the kit)
    unknown = struct.pack(">i", len(unknown)) + unknown
    good = req("Metadata", 12, {"Topics": [{"Name": "orders"}]}, 8)
    broken = bytearray(good)
    broken[-3:] = b"\xff\xff\xff"
    items = [("request", unknown), ("response", struct.pack(">ii", 8, 7) + b"\0\0\0\0"),
             ("request", bytes(broken)), ("response", resp("Metadata", 12, {}, 8))]
    first, second = read_pcap(capture_bytes(items))
    assert first["api"] == "AlterConfigs" and first["api_key"] == 33 and first["version"] == 4
    assert first["request"] is None and first["response"] is None and first["response_frame"] is not None
    assert any(e.startswith("request does not decode: at byte") and "AlterConfigs" in e for e in first["errors"])
    assert any("response not decoded" in e for e in first["errors"])
    assert second["api"] == "Metadata" and second["request"] is None
    assert any(e.startswith("request does not decode: at byte") for e in second["errors"])
    assert second["response"] == decode_response(items[3][1], "Metadata", 12)
    # rewriting what was read keeps the frames, problems and all
    again = read_pcap(capture_bytes(read_pcap(capture_bytes(items))))
    assert [e["request_frame"] for e in again] == [unknown, bytes(broken)]


def test_pcapng_with_two_interfaces_and_nanosecond_clock():
    eth = [dpkt.ethernet.Ethernet(b) for _, b in dpkt.pcap.Reader(io.BytesIO(capture_bytes(conversation())))]
    L = pcapng
    idb_eth = L.InterfaceDescriptionBlockLE(linktype=1, snaplen=65535)
    idb_raw = L.InterfaceDescriptionBlockLE(linktype=101, snaplen=65535, opts=[
        L.PcapngOptionLE(code=L.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"), L.PcapngOptionLE(code=L.PCAPNG_OPT_ENDOFOPT)])
    f = io.BytesIO()
    w = L.Writer(f, shb=L.SectionHeaderBlockLE(), idb=[idb_eth, idb_raw])
    for i, e in enumerate(eth):
        iface = i % 2                   # alternate between the Ethernet and the raw-IP interface
        ts = 1_700_000_000 + i
        units = ts * (10**9 if iface else 10**6)
        pkt = bytes(e) if iface == 0 else bytes(e.data)
        w.writepkt(L.EnhancedPacketBlockLE(iface_id=iface, ts_high=units >> 32, ts_low=units & 0xFFFFFFFF,
                                           pkt_data=pkt))
    exchanges = read_pcap(f.getvalue())
    assert [e["api"] for e in exchanges] == ["ApiVersions", "Metadata", "TxnOffsetCommit"]
    assert not exchanges.errors
    assert all(1_700_000_000 <= e["time"] < 1_700_000_100 for e in exchanges)
    assert all(e["latency_ms"] >= 1000 for e in exchanges)     # one second per packet in this file


# ---------------------------------------------------------------------------------------------
# (3) captures that begin in the middle of a conversation


def test_mid_frame_start_resynchronises_and_reports_skipped_bytes():
    r0 = req("Metadata", 12, {"Topics": [{"Name": "earlier"}]}, 10)     # its start is not captured
    r1 = req("ApiVersions", 3, {"ClientSoftwareName": "k", "ClientSoftwareVersion": "1"}, 11)
    r2 = txn_request(12)
    p_prev = resp("Metadata", 12, {"Topics": [{"Name": "older", "Partitions": []}]}, 9)
    p0 = resp("Metadata", 12, {}, 10)
    p1 = resp("ApiVersions", 3, {}, 11)
    p2 = txn_response(12, failing={0})
    c = r0[-7:] + r1 + r2
    s = p_prev[-9:] + p0 + p1 + p2
    packets = [packet(True, 777_000, c[:30], ack=1), packet(False, 1, s[:25], ack=777_000),
               packet(True, 777_030, c[30:], ack=1), packet(False, 26, s[25:], ack=777_000 + len(c))]
    exchanges = read_pcap(pcap_of(packets))
    by_corr = {e["correlation_id"]: e for e in exchanges}
    assert set(by_corr) == {10, 11, 12}
    assert by_corr[11]["request"] == decode_request(r1) and by_corr[11]["response"] == decode_response(p1, 18, 3)
    assert by_corr[12]["request"] == decode_request(r2) and by_corr[12]["response"]["body"]["Topics"][0][
        "Partitions"][0]["ErrorCode"] == 47
    assert any("mid-frame" in e and "skipped 7 bytes" in e for e in by_corr[11]["errors"])
    orphan = by_corr[10]
    assert orphan["kind"] == "orphan-response" and orphan["request"] is None and orphan["response"] is None
    assert orphan["response_frame"] == p0
    assert any("skipped 9 bytes" in e for e in orphan["errors"])
    assert any("response without request" in e for e in orphan["errors"])
    assert by_corr[12]["errors"] == []
    assert not exchanges.connections[0]["handshake_seen"]
    df = to_dataframe(exchanges)
    assert df["kind"].tolist().count("orphan-response") == 1


def test_stream_of_garbage_is_reported_not_raised():
    junk = bytes(range(256)) * 4
    packets = [packet(True, 1, junk), packet(False, 1, b"\x16\x03\x01\x02\x00" + junk)]
    exchanges = read_pcap(pcap_of(packets))
    text = " ".join(exchanges.errors)
    assert "no plausible request frame start" in text or "implausible frame size" in text
    assert "TLS" in text
    for ex in exchanges:
        assert ex["request"] is None and ex["errors"]


# ---------------------------------------------------------------------------------------------
# (4) damaged capture files: a readable CaptureError or an error list, never a crash


SMALL = capture_bytes(conversation()[:4])
SMALL_NG = capture_bytes(conversation()[:4], format="pcapng")


def test_not_a_capture_raises_a_readable_error(tmp_path):
    for data in (b"", b"hello world, not a pcap", b"\xd4\xc3\xb2\xa1\x02"):
        with pytest.raises(CaptureError) as e:
            read_pcap(data)
        assert isinstance(e.value, KipvizError) and ("pcap" in str(e.value))
    with pytest.raises(CaptureError, match="cannot read"):
        read_pcap(tmp_path / "missing.pcap")


@pytest.mark.parametrize("data", [SMALL, SMALL_NG], ids=["pcap", "pcapng"])
def test_every_truncation_is_handled(data):
    full = read_pcap(data)
    assert len(full) == 2 and not full.errors
    for n in range(len(data)):
        try:
            got = read_pcap(data[:n])
        except CaptureError:
            assert n < 32, n                           # only when even the file header is cut
            continue
        assert all(isinstance(e, str) for e in got.errors)
        if n not in _record_boundaries(data):
            assert any("truncated" in e for e in got.file_errors), n
            assert got[-1]["kind"] == "capture-error"


def _record_boundaries(data: bytes) -> set[int]:
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        out, pos = set(), 0
        while pos < len(data):
            out.add(pos)
            pos += struct.unpack_from("<I", data, pos + 4)[0]
        return out | {len(data)}
    out, pos = {24}, 24
    while pos < len(data):
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
        out.add(pos)
    return out


def _check(data: bytes) -> None:
    try:
        got = read_pcap(data)
    except CaptureError as e:
        assert str(e)
        return
    assert isinstance(got, list)
    assert all(isinstance(e, str) and e for e in got.errors)
    for ex in got:
        assert all(isinstance(e, str) for e in ex["errors"])
    to_dataframe(got)


_fuzz = settings(max_examples=int(os.environ.get("KIPVIZ_FUZZ_EXAMPLES", "150")), deadline=None,
                 suppress_health_check=list(HealthCheck))


@_fuzz
@given(st.sampled_from([SMALL, SMALL_NG]), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                    min_size=1, max_size=8))
def test_fuzz_byte_flips(data, flips):
    buf = bytearray(data)
    for pos, val in flips:
        buf[pos % len(buf)] = val
    _check(bytes(buf))


@_fuzz
@given(st.sampled_from([SMALL, SMALL_NG]), st.integers(0, 10_000), st.integers(0, 200), st.binary(max_size=64))
def test_fuzz_splices(data, at, cut, insert):
    at %= len(data)
    _check(data[:at] + insert + data[at + cut:])


@_fuzz
@given(st.lists(st.tuples(st.booleans(), st.binary(min_size=1, max_size=300)), min_size=1, max_size=6),
       st.booleans())
def test_fuzz_garbage_streams(chunks, use_frames):
    items = []
    for to_server, data in chunks:
        if use_frames:
            data = struct.pack(">i", len(data)) + data          # well framed, garbage inside
        items.append(("request" if to_server else "response", data))
    _check(capture_bytes(items))


@_fuzz
@given(st.permutations(list(range(9))), st.integers(0, 8))
def test_fuzz_segment_order_and_loss(order, drop):
    """Any arrival order of the data segments decodes; losing one is reported, never raised."""
    r = txn_request(1, partitions=60)
    p = txn_response(1, partitions=60)
    step = math.ceil(len(r) / 9)
    segs = [packet(True, C_ISN + 1 + i * step, r[i * step:(i + 1) * step], ack=S_ISN + 1) for i in range(9)]
    tail = [packet(False, S_ISN + 1, p, ack=C_ISN + 1 + len(r))]
    (ex,) = read_pcap(pcap_of(handshake() + [segs[i] for i in order] + tail))
    assert ex["request"] == decode_request(r) and ex["errors"] == []
    got = read_pcap(pcap_of(handshake() + [segs[i] for i in order if i != drop] + tail))
    if drop:                            # the header survived: the response still pairs and decodes
        assert got[0]["correlation_id"] == 1 and got[0]["response"] == decode_response(p, 28, 5)
    assert any("cut short" in e or "missing" in e for e in got.errors), got.errors


def _segments(stream: bytes, cuts: list[int]) -> list[tuple[int, bytes]]:
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    return [(a, stream[a:b]) for a, b in zip(points, points[1:], strict=False)]


@_fuzz
@given(st.lists(st.integers(0, 10_000), max_size=12), st.lists(st.integers(0, 10_000), max_size=12),
       st.randoms(use_true_random=False), st.integers(0, 3))
def test_fuzz_any_segmentation_order_and_duplication_decodes(ccuts, scuts, rnd, dups):
    """Whole conversation, both directions: however it is cut, reordered and repeated, nothing is lost."""
    items = conversation()
    c = b"".join(f for d, f in items if d == "request")
    s = b"".join(f for d, f in items if d == "response")
    cb, sb = C_ISN + 1, S_ISN + 1
    pk = [packet(True, cb + a, d, ack=sb) for a, d in _segments(c, ccuts)]
    pk += [packet(False, sb + a, d, ack=cb + len(c)) for a, d in _segments(s, scuts)]
    pk += [rnd.choice(pk) for _ in range(dups)]
    rnd.shuffle(pk)
    exchanges = read_pcap(pcap_of(handshake() + pk))
    assert exchanges.errors == []
    in_order = sorted(exchanges, key=lambda e: e["correlation_id"])      # the list is in time order
    assert [e["request_frame"] for e in in_order] == [f for d, f in items if d == "request"]
    assert [e["response_frame"] for e in in_order] == [f for d, f in items if d == "response"]
    assert all(e["request"] and e["response"] for e in in_order)


@_fuzz
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_fuzz_capture_starting_anywhere(k, m):
    """A capture that begins at any byte of either direction keeps every whole frame after the cut."""
    items = conversation(start_corr=20)
    reqs = [f for d, f in items if d == "request"]
    resps = [f for d, f in items if d == "response"]
    c, s = b"".join(reqs), b"".join(resps)
    k, m = k % len(c), m % len(s)
    starts_c = [sum(map(len, reqs[:i])) for i in range(len(reqs))]
    starts_s = [sum(map(len, resps[:i])) for i in range(len(resps))]
    packets = [packet(True, 9_000 + k, c[k:], ack=1), packet(False, 1 + m, s[m:], ack=9_000 + len(c))]
    exchanges = read_pcap(pcap_of(packets))
    whole_req = [r for r, a in zip(reqs, starts_c, strict=True) if a >= k]
    whole_resp = [r for r, a in zip(resps, starts_s, strict=True) if a >= m]
    assert sorted((e["request_frame"] for e in exchanges if e["request_frame"]), key=c.find) == whole_req
    assert sorted((e["response_frame"] for e in exchanges if e["response_frame"]), key=s.find) == whole_resp
    for e in exchanges:
        if e["request_frame"] and e["response_frame"]:
            assert e["request"] is not None and e["response"] is not None
    text = " ".join(exchanges.errors)
    if k not in starts_c:
        assert f"skipped {min([a for a in starts_c if a > k], default=len(c)) - k} bytes" in text or not whole_req
    if m not in starts_s and whole_resp:
        assert f"skipped {min(a for a in starts_s if a > m) - m} bytes" in text


# ---------------------------------------------------------------------------------------------
# (5) a real client: kafka-python against a tiny listener, recorded, written, read back


def test_kafka_python_conversation_decodes(tmp_path):
    kafka = pytest.importorskip("kafka")
    before = set(threading.enumerate())
    t0 = time.monotonic()
    with FakeBroker(topic="kipviz-demo") as broker:
        consumer = kafka.KafkaConsumer(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=5000,
                                       metadata_max_age_ms=60000,
                                       client_id="kipviz-real-client")
        try:
            topics = consumer.topics()
        finally:
            consumer.close()
        admin = kafka.KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=5000,
                                       bootstrap_timeout_ms=5000, client_id="kipviz-real-admin")
        try:
            listed = admin.list_topics()
        finally:
            admin.close()
    assert topics == {"kipviz-demo"} and "kipviz-demo" in listed
    assert broker.problems == []
    assert all(not t.is_alive() for t in broker.threads)
    time.sleep(0.05)
    leaked = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert not leaked, leaked

    path = tmp_path / "kafka-python.pcap"
    write_pcap(path, broker.records, start_time=1_700_000_000.0)         # the default server port, 9092
    exchanges = read_pcap(path)
    sent = [frame for direction, frame, _, _ in broker.records if direction == "request"]
    assert len(exchanges) == len(broker.requests) >= 4
    assert exchanges.errors == []
    apis = [(e["api"], e["version"]) for e in exchanges]
    assert ("ApiVersions", 4) in apis and ("ApiVersions", 3) in apis and ("Metadata", 12) in apis
    for ex in exchanges:
        assert ex["request"] is not None and ex["response"] is not None, ex
        assert ex["request"]["header"]["ClientId"] in ("kipviz-real-client", "kipviz-real-admin")
        assert ex["request_frame"] in b"".join(sent)
    assert sorted((r["api"], r["correlation_id"]) for r in broker.requests) == sorted(
        (e["api"], e["correlation_id"]) for e in exchanges)
    first = exchanges[0]
    assert first["api"] == "ApiVersions" and first["response"]["body"]["ErrorCode"] == 35   # KIP-511 downgrade
    meta = [e for e in exchanges if e["api"] == "Metadata" and e["response"]["body"]["Topics"]]
    assert meta and meta[0]["response"]["body"]["Brokers"][0]["Port"] == broker.port
    assert len({e["connection"] for e in exchanges}) >= 2        # bootstrap connection + node connection
    df = to_dataframe(exchanges)
    assert set(df["api"]) >= {"ApiVersions", "Metadata"}
    assert time.monotonic() - t0 < 20
