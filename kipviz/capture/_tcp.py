"""TCP connections and per-direction stream reassembly.

Segments are put in sequence-number order (32-bit wrap-around handled), exact retransmissions are
dropped, overlaps keep the first copy (and say so when the copies differ), and a hole in the
sequence numbers closes one contiguous chunk and starts the next."""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from ._packets import Segment, addr_text

_MOD = 1 << 32
_HALF = 1 << 31


@dataclass
class Chunk:
    """Contiguous stream bytes. `start` is the stream offset of data[0]: offset 0 is the first
    byte after the SYN when the handshake was captured, else the lowest byte captured.

    The payloads added are joined once (seal), so the bytes exist once while the segments go;
    release() drops them when the chunk's frames are cut (size stays)."""
    start: int
    data: bytes
    aligned: bool                 # starts at the very first byte of the stream
    gap_before: int               # bytes missing just before this chunk
    gap_cause: str = ""           # why they are missing, when known
    starts: list[int] = field(default_factory=list)     # piece start offsets (absolute)
    pieces: list[tuple[int, int, float, int]] = field(default_factory=list)   # (start, end, ts, packet)
    size: int = 0
    parts: list[bytes] = field(default_factory=list)    # payloads until seal()

    @property
    def end(self) -> int:
        return self.start + self.size

    def add(self, start: int, payload: bytes, ts: float, packet: int) -> None:
        self.starts.append(start)
        self.pieces.append((start, start + len(payload), ts, packet))
        self.parts.append(payload)
        self.size += len(payload)

    def seal(self) -> None:
        self.data, self.parts = b"".join(self.parts), []

    def release(self) -> None:
        self.data = b""

    def when(self, a: int, b: int) -> tuple[float, int, int]:
        """(time the bytes [a, b) were all seen, first packet, last packet) for absolute offsets."""
        i = max(bisect_right(self.starts, a) - 1, 0)
        ts, first, last = None, None, None
        while i < len(self.pieces) and self.pieces[i][0] < b:
            s, e, t, p = self.pieces[i]
            if e > a:
                ts = t if ts is None else max(ts, t)
                first = p if first is None else min(first, p)
                last = p if last is None else max(last, p)
            i += 1
        return ts, first, last


@dataclass
class Stream:
    chunks: list[Chunk]
    syn: bool
    events: list[tuple[int, str]]          # (stream offset, message) e.g. differing retransmissions
    stats: dict
    tail_missing: int                       # bytes known to be missing after the last chunk (snaplen)


class Direction:
    def __init__(self, name: str):
        self.name = name
        self.segments: list[Segment] = []
        self.isn: int | None = None
        self.fin = False
        self.rst = False

    def add(self, seg: Segment) -> None:
        if seg.syn and self.isn is None:
            self.isn = seg.seq
        self.fin |= seg.fin
        self.rst |= seg.rst
        self.segments.append(seg)

    def reassemble(self) -> Stream:
        stats = {"segments": 0, "bytes": 0, "retransmissions": 0, "out_of_order": 0, "overlaps": 0,
                 "gaps": 0, "missing_bytes": 0}
        items, isn_abs = self._numbered(stats)
        self.segments = []          # their payloads live on in `items` until the chunks are joined
        syn = isn_abs is not None
        if not items:
            return Stream([], syn, [], stats, 0)
        base = isn_abs + 1 if syn else min(x[0] for x in items)
        placed, events, promised, snapped = _place(items, base, stats)
        chunks: list[Chunk] = []
        cursor = base
        cur: Chunk | None = None
        for ps, pe, pdata, ts, packet in placed:
            if cur is None or ps > cursor:
                gap = ps - cursor
                if gap > 0:
                    stats["gaps"] += 1
                    stats["missing_bytes"] += gap
                cause = "packets cut at the capture's snapshot length" if cursor - base in snapped else ""
                cur = Chunk(ps - base, b"", aligned=syn and ps == base, gap_before=gap, gap_cause=cause)
                chunks.append(cur)
            cur.add(ps - base, pdata, ts, packet)
            stats["bytes"] += pe - ps
            cursor = pe
        del items, placed
        for c in chunks:
            c.seal()
        tail = max(promised - cursor, 0)
        stats["missing_bytes"] += tail
        return Stream(chunks, syn, [(o - base, m) for o, m in events], stats, tail)

    def _numbered(self, stats: dict) -> tuple[list, int | None]:
        """The data segments as (absolute data start, capture order, segment), sequence numbers
        unwrapped past 2**32; and the SYN's absolute sequence number (None: no SYN seen)."""
        items = []
        last_raw = last_abs = None
        isn_abs = None
        for i, s in enumerate(self.segments):
            if last_raw is None:
                a = s.seq
            else:
                d = (s.seq - last_raw) % _MOD
                a = last_abs + (d - _MOD if d >= _HALF else d)
            last_raw, last_abs = s.seq, a
            if s.syn and isn_abs is None:
                isn_abs = a
            start = a + 1 if s.syn else a
            if (not s.payload and not s.missing) or s.rst:    # an RST's payload is a diagnostic, not data
                continue
            stats["segments"] += 1
            items.append((start, i, s))
        return items, isn_abs


def _place(items: list, base: int, stats: dict):
    """Place segments in capture order: bytes already placed win (the copy captured first).
    Returns the placed pieces (sorted, non-overlapping), resend-with-other-content events, the end
    the IP headers promise (snapshot-length loss included) and where snapped segments end."""
    placed: list[tuple[int, int, bytes, float, int]] = []     # sorted, non-overlapping
    starts: list[int] = []
    events: list[tuple[int, str]] = []
    high = None                     # highest stream offset seen so far (capture order)
    promised = base                 # end of the bytes the IP headers promise (incl. snaplen loss)
    snapped: set[int] = set()       # where segments cut by the snapshot length end
    for start, _, s in items:
        payload = s.payload
        if start < base:            # bytes claiming to come before the stream start
            cut = min(base - start, len(payload))
            payload, start = payload[cut:], start + cut
            if not payload:
                stats["retransmissions"] += 1
                continue
        end = start + len(payload)
        promised = max(promised, end + s.missing)
        if s.missing:
            snapped.add(end - base)
        k = bisect_right(starts, start) - 1
        if k < 0 or placed[k][1] <= start:
            k += 1
        j, covered, fresh = _overlap(placed, k, start, payload, s.packet, base, events)
        if covered == len(payload):
            stats["retransmissions"] += 1
            continue
        if covered:
            stats["overlaps"] += 1
        if high is not None and fresh[0][0] < high:
            stats["out_of_order"] += 1      # fills a hole below bytes captured earlier
        high = end if high is None else max(high, end)
        pieces = [(a, b, payload[a - start:b - start], s.ts, s.packet) for a, b in fresh]
        merged = sorted(placed[k:j] + pieces)
        placed[k:j] = merged
        starts[k:j] = [x[0] for x in merged]
    return placed, events, promised, snapped


def _overlap(placed: list, k: int, start: int, payload: bytes, packet: int, base: int, events: list):
    """How a segment meets the pieces placed from index k on: the index past the last it overlaps,
    how many of its bytes are already placed, and its fresh (start, end) ranges. A resend with
    different content is noted in `events`."""
    end = start + len(payload)
    j, pos, covered, fresh = k, start, 0, []
    while j < len(placed) and placed[j][0] < end:
        ps, pe, pdata = placed[j][:3]
        if ps > pos:
            fresh.append((pos, ps))
        lo, hi = max(pos, ps), min(end, pe)
        covered += hi - lo
        old, new = pdata[lo - ps:hi - ps], payload[lo - start:hi - start]
        if old != new and hi - lo > 1:      # a lone byte is a keep-alive probe: anything goes
            events.append((lo, f"packet {packet} resends stream bytes {lo - base}-{hi - base} "
                               "with different content (kept the copy captured first)"))
        pos = max(pos, pe)
        j += 1
    if pos < end:
        fresh.append((pos, end))
    return j, covered, fresh


class Connection:
    def __init__(self, index: int, client: tuple[str, int], server: tuple[str, int]):
        self.index = index
        self.client = client
        self.server = server
        self.c2s = Direction("request")
        self.s2c = Direction("response")
        self.first_ts: float | None = None

    @property
    def client_text(self) -> str:
        return addr_text(*self.client)

    @property
    def server_text(self) -> str:
        return addr_text(*self.server)

    def add(self, seg: Segment, to_server: bool) -> None:
        if self.first_ts is None:
            self.first_ts = seg.ts
        (self.c2s if to_server else self.s2c).add(seg)


class Tracker:
    """Groups segments into connections; `ports` are the Kafka (server) ports, or None for any."""

    def __init__(self, ports):
        self.ports = None if ports is None else frozenset(ports)
        self.live: dict[tuple, Connection] = {}
        self.all: list[Connection] = []

    def wanted(self, sport: int, dport: int) -> bool:
        return self.ports is None or sport in self.ports or dport in self.ports

    def _server_is_dst(self, s: Segment) -> bool:
        fwd = (s.src, s.sport, s.dst, s.dport)
        rev = (s.dst, s.dport, s.src, s.sport)
        if self.ports is not None:
            sp, dp = s.sport in self.ports, s.dport in self.ports
            if dp and not sp:
                return True
            if sp and not dp:
                return False
        if s.syn:
            return not s.is_ack
        if fwd in self.live:
            return True
        if rev in self.live:
            return False
        return s.dport <= s.sport

    def add(self, s: Segment) -> None:
        to_server = self._server_is_dst(s)
        key = (s.src, s.sport, s.dst, s.dport) if to_server else (s.dst, s.dport, s.src, s.sport)
        conn = self.live.get(key)
        if conn is not None and to_server and s.syn and not s.is_ack:
            d = conn.c2s
            if (d.isn is not None and d.isn != s.seq) or (d.isn is None and (d.segments or conn.s2c.segments)):
                conn = None             # the 4-tuple is reused by a new connection
        if conn is None:
            conn = Connection(len(self.all), (key[0], key[1]), (key[2], key[3]))
            self.live[key] = conn
            self.all.append(conn)
        conn.add(s, to_server)
