"""Write Kafka conversations as Ethernet/IPv4 (or IPv6)/TCP packets into pcap or pcapng files.

Every connection gets a SYN / SYN-ACK / ACK handshake, data in MSS-sized segments with correct
sequence and acknowledgement numbers, an ACK from the receiving side after each send, and a FIN
exchange at the end. dpkt fills in the IPv4 header checksum and the TCP checksum (pseudo-header
included) because both are left at 0 before the packet is turned into bytes."""
from __future__ import annotations

import heapq
import ipaddress
import socket
import zlib

import dpkt

from ..codec import encode_request, encode_response
from ._packets import CaptureError

SYN, ACK, PSH, FIN = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_FIN
_MAC_CLIENT = bytes.fromhex("020000000001")
_MAC_SERVER = bytes.fromhex("020000000002")
_TO_SERVER = {"request", "c2s", "client", ">", "->", "out"}
_TO_CLIENT = {"response", "s2c", "server", "<", "<-", "in"}
STEP = 0.001                     # seconds between sends when the input carries no times


class _Side:
    def __init__(self, ip: str, port: int, mac: bytes, isn: int):
        self.ip, self.port, self.mac = ip, port, mac
        self.seq = isn
        self.ip_id = isn & 0xFFFF


class TcpConnection:
    """One TCP connection inside a PcapWriter."""

    def __init__(self, writer: "PcapWriter", client, server, mss: int):
        cip, cport = _endpoint(client, "client")
        sip, sport = _endpoint(server, "server")
        v6c, v6s = ":" in cip, ":" in sip
        if v6c != v6s:
            raise CaptureError(f"client {cip} and server {sip} must both be IPv4 or both IPv6")
        self.v6 = v6c
        self.mss = max(1, min(int(mss), 65535 - 60 - 20))
        seed = zlib.crc32(f"{cip}:{cport}>{sip}:{sport}".encode())
        self.c = _Side(cip, cport, _MAC_CLIENT, seed & 0x7FFFFFFF)
        self.s = _Side(sip, sport, _MAC_SERVER, (seed * 2654435761) & 0x7FFFFFFF)
        self.w = writer
        self.opened = self.closed = False

    def _packet(self, src: _Side, dst: _Side, flags: int, payload: bytes, ts: float, opts: bytes = b"") -> None:
        tcp = dpkt.tcp.TCP(sport=src.port, dport=dst.port, seq=src.seq & 0xFFFFFFFF,
                           ack=(dst.seq & 0xFFFFFFFF) if flags & ACK else 0, flags=flags, win=65535,
                           opts=opts, data=payload)
        tcp.off = 5 + len(opts) // 4
        if self.v6:
            ip = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src.ip),
                              dst=socket.inet_pton(socket.AF_INET6, dst.ip), nxt=dpkt.ip.IP_PROTO_TCP,
                              hlim=64, data=tcp)
            ip.p = dpkt.ip.IP_PROTO_TCP
            ip.plen = len(tcp)
            etype = dpkt.ethernet.ETH_TYPE_IP6
        else:
            ip = dpkt.ip.IP(src=socket.inet_aton(src.ip), dst=socket.inet_aton(dst.ip), p=dpkt.ip.IP_PROTO_TCP,
                            ttl=64, id=src.ip_id, df=1, data=tcp)
            src.ip_id = (src.ip_id + 1) & 0xFFFF
            etype = dpkt.ethernet.ETH_TYPE_IP
        eth = dpkt.ethernet.Ethernet(src=src.mac, dst=dst.mac, type=etype, data=ip)
        self.w._add(ts, bytes(eth))
        src.seq += len(payload) + (1 if flags & (SYN | FIN) else 0)

    def open(self, ts: float) -> None:
        if self.opened:
            return
        self.opened = True
        mss_opt = b"\x02\x04" + self.mss.to_bytes(2, "big")
        self._packet(self.c, self.s, SYN, b"", ts, mss_opt)
        self._packet(self.s, self.c, SYN | ACK, b"", ts + 0.000050, mss_opt)
        self._packet(self.c, self.s, ACK, b"", ts + 0.000100)

    def send(self, to_server: bool, data: bytes, ts: float) -> None:
        if self.closed:
            raise CaptureError("connection already closed")
        if not self.opened:
            self.open(ts - 0.000300)
        src, dst = (self.c, self.s) if to_server else (self.s, self.c)
        data = bytes(data)
        for i in range(0, len(data), self.mss):
            piece = data[i:i + self.mss]
            last = i + self.mss >= len(data)
            self._packet(src, dst, ACK | (PSH if last else 0), piece, ts)
        if data:
            self._packet(dst, src, ACK, b"", ts + 0.000010)

    def close(self, ts: float) -> None:
        if self.closed or not self.opened:
            return
        self._packet(self.c, self.s, FIN | ACK, b"", ts)
        self._packet(self.s, self.c, FIN | ACK, b"", ts + 0.000050)
        self._packet(self.c, self.s, ACK, b"", ts + 0.000100)
        self.closed = True
        self.w._closed(self)


class PcapWriter:
    """Collects packets of any number of connections; `close()` writes them in time order.

        with PcapWriter("talk.pcap") as w:
            c = w.connection(("127.0.0.1", 50000), ("127.0.0.1", 9092))
            c.send(True, request_frame, ts=0.001)
            c.send(False, response_frame, ts=0.002)

    window=S streams instead (a live session, `kipviz serve --record`): the file is written as
    packets come, each once the newest packet is S seconds later than it, so memory holds only the
    last S seconds and the file stays in time order for any packet less than S seconds late."""

    def __init__(self, target, *, format: str | None = None, snaplen: int = 65535, window: float | None = None):
        self.target = target
        if format is None:
            format = "pcapng" if str(getattr(target, "name", target)).endswith(".pcapng") else "pcap"
        if format not in ("pcap", "pcapng"):
            raise CaptureError(f"format must be 'pcap' or 'pcapng', not {format!r}")
        self.format = format
        self.snaplen = snaplen
        self.window = window
        self.packets: list[tuple[float, int, bytes]] = []     # a heap by (time, arrival) when streaming
        self.connections: dict[int, TcpConnection] = {}      # the open ones; close() ends them in the order they opened
        self.written = 0
        self._added = 0
        self._newest = 0.0
        self._file = self._dpkt = None
        if window is not None:
            self._open()
            if self._file is not None:
                self._file.flush()           # a pcap from the start: its header, then packets as they come

    def connection(self, client, server, *, mss: int = 1460) -> TcpConnection:
        c = TcpConnection(self, client, server, mss)
        self.connections[id(c)] = c
        return c

    def _closed(self, c: TcpConnection) -> None:
        self.connections.pop(id(c), None)     # a closed connection has nothing left to add

    def _add(self, ts: float, pkt: bytes) -> None:
        item = (ts, self._added, pkt)
        self._added += 1
        self._newest = max(self._newest, ts)
        if self.window is None:
            self.packets.append(item)
            return
        heapq.heappush(self.packets, item)
        due, before = ts - self.window, self.written
        while self.packets and self.packets[0][0] <= due:
            self._put(heapq.heappop(self.packets))
        if self.written > before and self._file is not None:
            self._file.flush()               # on disk now: Wireshark or `tail` can follow a live session

    def _open(self) -> None:
        f = self.target if hasattr(self.target, "write") else open(self.target, "wb")  # noqa: SIM115
        self._file = None if f is self.target else f
        writer = dpkt.pcapng.Writer if self.format == "pcapng" else dpkt.pcap.Writer
        self._dpkt = writer(f, snaplen=self.snaplen, linktype=dpkt.pcap.DLT_EN10MB)

    def _put(self, item: tuple[float, int, bytes]) -> None:
        self._dpkt.writepkt(item[2], ts=max(item[0], 0.0))
        self.written += 1

    def close(self, *, end_time: float | None = None) -> int:
        """Close every connection still open (FIN exchange), write what is left; the packet count."""
        for c in list(self.connections.values()):
            c.close(self._newest + STEP if end_time is None else end_time)
        if self._dpkt is None:
            self._open()
        for item in sorted(self.packets):
            self._put(item)
        self.packets = []
        if self._file is not None:
            self._file.close()
            self._file = None
        return self.written

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()


def _endpoint(value, what: str) -> tuple[str, int]:
    try:
        ip, port = value
        ip = str(ipaddress.ip_address(ip))
        port = int(port)
        if not 0 <= port <= 65535:
            raise ValueError
    except (TypeError, ValueError):
        raise CaptureError(f"{what} must be an (ip, port) pair, got {value!r}") from None
    return ip, port


# ---------------------------------------------------------------------------------------------


def _events(items) -> list[tuple]:
    """(to_server, bytes, time or None, connection tag) for every send, in input order."""
    out = []
    if isinstance(items, (bytes, bytearray, str, dict)):
        raise CaptureError("write_pcap needs a list of exchanges or of (direction, frame bytes) pairs")
    for n, item in enumerate(items):
        if isinstance(item, dict):
            if item.get("kind") in ("capture-error", "stream-error"):
                continue                # read_pcap's entries for problems carry no frames
            out.extend(_exchange_events(item, n))
            continue
        if not isinstance(item, (tuple, list)) or not 2 <= len(item) <= 4:
            raise CaptureError(f"item {n}: expected an exchange dict or (direction, bytes[, time[, connection]]), "
                               f"got {type(item).__name__}")
        direction, data = item[0], item[1]
        ts = item[2] if len(item) > 2 else None
        tag = item[3] if len(item) > 3 else None
        d = str(direction).lower()
        if d not in _TO_SERVER | _TO_CLIENT:
            raise CaptureError(f"item {n}: direction {direction!r} is not 'request' or 'response'")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise CaptureError(f"item {n}: frame must be bytes, got {type(data).__name__}")
        out.append((d in _TO_SERVER, bytes(data), None if ts is None else float(ts), tag))
    return out


def _exchange_events(ex: dict, n: int) -> list[tuple]:
    tag = ex.get("connection")
    req = ex.get("request_frame") or ex.get("raw_request")
    resp = ex.get("response_frame") or ex.get("raw_response")
    if req is None and isinstance(ex.get("request"), dict):
        r = ex["request"]
        try:
            req = encode_request(r["api"], r["version"], r["body"], correlation_id=r["correlation_id"],
                                 client_id=r.get("header", {}).get("ClientId", "kipviz"))
        except (KeyError, TypeError) as e:
            raise CaptureError(f"exchange {n}: decoded request lacks {e}") from None
    if resp is None and isinstance(ex.get("response"), dict):
        r = ex["response"]
        try:
            resp = encode_response(r["api"], r["version"], r["body"], correlation_id=r["correlation_id"])
        except (KeyError, TypeError) as e:
            raise CaptureError(f"exchange {n}: decoded response lacks {e}") from None
    out = []
    if req is not None:
        out.append((True, bytes(req), ex.get("time"), tag))
    if resp is not None:
        out.append((False, bytes(resp), ex.get("response_time"), tag))
    if not out:
        raise CaptureError(f"exchange {n} has neither request nor response bytes")
    return out


def write_pcap(path, items, *, client=("127.0.0.1", 50000), server=("127.0.0.1", 9092),
               start_time: float = 0.0, mss: int = 1460, format: str | None = None):
    """Write a conversation as a pcap (pcapng if the name ends in .pcapng or format="pcapng").

    items: exchanges (dicts as read_pcap returns them, or hand-made ones with request_frame /
    response_frame bytes, or decoded request / response dicts), or tuples
    (direction, frame bytes[, time[, connection]]) where direction is "request" or "response".
    Items with a `connection` tag (exchanges carry one) go into separate TCP connections, the
    n-th one from client port + n. Times, when given, keep their spacing, shifted so the first
    send happens just after start_time; otherwise sends are 1 ms apart. Returns `path`."""
    events = _events(items)
    given = [e[2] for e in events if e[2] is not None]
    shift = (start_time + STEP - min(given)) if given else 0.0
    times, t = [], start_time
    for e in events:
        t = (e[2] + shift) if e[2] is not None else t + STEP
        times.append(t)
    cip, cport = _endpoint(client, "client")
    server = _endpoint(server, "server")
    tags: dict = {}
    per_conn: dict = {}
    for e, ts in zip(events, times, strict=True):
        k = tags.setdefault(e[3], len(tags))
        per_conn.setdefault(k, []).append((ts, e[0], e[1]))
    w = PcapWriter(path, format=format)
    for k, evs in per_conn.items():
        port = cport + k
        if port > 65535:
            raise CaptureError(f"too many connections for client port {cport}")
        conn = w.connection((cip, port), server, mss=mss)
        evs.sort(key=lambda x: x[0])
        conn.open(evs[0][0] - 0.000300)
        for ts, to_server, data in evs:
            conn.send(to_server, data, ts)
        conn.close(evs[-1][0] + STEP)
    w.close()
    return path
