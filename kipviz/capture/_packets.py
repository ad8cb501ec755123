"""From capture file bytes to TCP segments: pcap and pcapng files, link layers, IPv4/IPv6, TCP.

dpkt parses the file formats and the headers; this module only walks the pcapng blocks itself
(dpkt's pcapng Reader assumes a single interface) and turns every damaged record into a
readable message instead of an exception."""
from __future__ import annotations

import io
import socket
import struct
from dataclasses import dataclass
from typing import Iterator

import dpkt
from dpkt import pcapng

from ..errors import KipvizError


class CaptureError(KipvizError, ValueError):
    """The file is not a pcap or pcapng capture at all."""


PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"

# link types (https://www.tcpdump.org/linktypes.html)
LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_LOOP = 0, 1, 101, 108
LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_IPV4, LINKTYPE_IPV6 = 113, 276, 228, 229
_RAW_IP = {LINKTYPE_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6}
_LINK_NAMES = {LINKTYPE_NULL: "BSD loopback", LINKTYPE_ETHERNET: "Ethernet", LINKTYPE_RAW: "raw IP",
               LINKTYPE_LOOP: "OpenBSD loopback", LINKTYPE_LINUX_SLL: "Linux cooked (SLL)",
               LINKTYPE_LINUX_SLL2: "Linux cooked v2 (SLL2)"}
SUPPORTED_LINKTYPES = {LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_LOOP, LINKTYPE_LINUX_SLL,
                       LINKTYPE_LINUX_SLL2} | _RAW_IP


@dataclass(slots=True)
class Segment:
    """One TCP segment as captured."""
    packet: int          # 1-based packet number in the file (as Wireshark counts)
    ts: float
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int = 0     # payload bytes the IP length promises but the capture lacks (snaplen)

    @property
    def syn(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_SYN)

    @property
    def fin(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_FIN)

    @property
    def rst(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_RST)

    @property
    def is_ack(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_ACK)


def addr_text(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


# ---------------------------------------------------------------------------------------------
# capture files -> (packet number, timestamp, link type, bytes)


class _Watched:
    """A file that logs its reads, so a record cut short by the end of the file can be told."""

    def __init__(self, f):
        self.f = f
        self.reads: list[tuple[int, int, int]] = []       # (position, wanted, got)

    def tell(self) -> int:
        return self.f.tell()

    def read(self, n=-1):
        pos = self.f.tell()
        data = self.f.read(n)
        if n is not None and n >= 0:
            self.reads.append((pos, n, len(data)))
        return data


def _size(f) -> int:
    here = f.tell()
    end = f.seek(0, io.SEEK_END)
    f.seek(here)
    return end


def read_packets(data, errors: list[str]) -> Iterator[tuple[int, float, int, bytes]]:
    """Every packet in a pcap or pcapng file: `data` is its bytes, or the file opened in binary mode
    (seekable), of which a pcap is read a packet at a time, never whole. A damaged tail is reported
    in `errors`; a file that is not a capture at all raises CaptureError."""
    f = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else data
    start = f.read(8)
    f.seek(0)
    head = start[:4]
    if head in PCAP_MAGICS:
        yield from _pcap_packets(f, errors)
    elif head == PCAPNG_MAGIC:
        yield from _pcapng_packets(data if f is not data else f.read(), errors)
    else:
        if not start:
            raise CaptureError("empty file: not a pcap or pcapng capture")
        raise CaptureError(f"not a pcap or pcapng capture (the file starts with {start.hex(' ')}; "
                           "pcap starts with d4 c3 b2 a1 or a1 b2 c3 d4, pcapng with 0a 0d 0d 0a)")


def _pcap_packets(file, errors: list[str]):
    f, size = _Watched(file), _size(file)
    try:
        reader = dpkt.pcap.Reader(f)
    except (ValueError, dpkt.Error, struct.error) as e:
        raise CaptureError(f"damaged pcap file header ({size} bytes): {e}") from None
    linktype = reader.datalink() & 0xFFFF          # upper bits may carry FCS information
    n = 0
    it = iter(reader)
    while True:
        pos = f.tell()
        f.reads.clear()
        try:
            ts, buf = next(it)
        except StopIteration:
            break
        except (dpkt.Error, struct.error, ValueError) as e:
            errors.append(f"capture file is truncated after packet {n}: an incomplete record header "
                          f"at byte {pos} ({size - pos} bytes left, {type(e).__name__})")
            break
        n += 1
        if len(f.reads) >= 2 and f.reads[-1][2] < f.reads[-1][1]:      # header read, then the body
            _, want, got = f.reads[-1]
            errors.append(f"capture file is truncated: packet {n} has {got} of its {want} bytes "
                          f"(record at byte {pos})")
        yield n, float(ts), linktype, buf


_SHB_LE, _SHB_BE = b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"


# size: a generator over pcapng blocks whose byte order and interfaces change as it reads; one dispatch on block type keeps that state local
def _pcapng_packets(data: bytes, errors: list[str]):
    pos, n, le = 0, 0, True
    ifaces: list[tuple[int, float, int]] = []       # (linktype, ticks per second, ts offset)
    size = len(data)
    while pos < size:
        if size - pos < 12:
            errors.append(f"capture file is truncated: {size - pos} stray bytes after the last block "
                          f"(at byte {pos})")
            break
        if data[pos:pos + 4] == PCAPNG_MAGIC:
            bom = data[pos + 8:pos + 12]
            if bom not in (_SHB_LE, _SHB_BE):
                errors.append(f"pcapng section header at byte {pos} has an unknown byte-order mark "
                              f"{bom.hex(' ')}; reading stopped")
                break
            le = bom == _SHB_LE
            ifaces = []
        btype, blen = struct.unpack_from("<II" if le else ">II", data, pos)
        if blen < 12 or blen % 4:
            errors.append(f"pcapng block at byte {pos} has an impossible length {blen}; reading stopped")
            break
        if pos + blen > size:
            errors.append(f"capture file is truncated: the pcapng block at byte {pos} needs {blen} bytes, "
                          f"{size - pos} are left (after packet {n})")
            break
        block = data[pos:pos + blen]
        try:
            if btype == pcapng.PCAPNG_BT_SHB:
                shb = (pcapng.SectionHeaderBlockLE if le else pcapng.SectionHeaderBlock)(block)
                if shb.v_major != 1:
                    errors.append(f"pcapng section at byte {pos} has version {shb.v_major}.{shb.v_minor}; "
                                  "reading stopped")
                    break
            elif btype == pcapng.PCAPNG_BT_IDB:
                idb = (pcapng.InterfaceDescriptionBlockLE if le else pcapng.InterfaceDescriptionBlock)(block)
                ticks, offset = 1e6, 0
                for opt in idb.opts:
                    if opt.code == pcapng.PCAPNG_OPT_IF_TSRESOL and opt.data:
                        v = opt.data[0]
                        ticks = float(2 ** (v & 0x7F)) if v & 0x80 else float(10 ** (v & 0x7F))
                    elif opt.code == pcapng.PCAPNG_OPT_IF_TSOFFSET and len(opt.data) >= 8:
                        offset = struct.unpack("<q" if le else ">q", opt.data[:8])[0]
                ifaces.append((idb.linktype, ticks, offset))
            elif btype in (pcapng.PCAPNG_BT_EPB, pcapng.PCAPNG_BT_PB):
                kls = {(pcapng.PCAPNG_BT_EPB, True): pcapng.EnhancedPacketBlockLE,
                       (pcapng.PCAPNG_BT_EPB, False): pcapng.EnhancedPacketBlock,
                       (pcapng.PCAPNG_BT_PB, True): pcapng.PacketBlockLE,
                       (pcapng.PCAPNG_BT_PB, False): pcapng.PacketBlock}[btype, le]
                blk = kls(block)
                n += 1
                if blk.iface_id >= len(ifaces):
                    errors.append(f"packet {n}: pcapng packet names interface {blk.iface_id}, "
                                  f"but only {len(ifaces)} are described; skipped")
                else:
                    linktype, ticks, offset = ifaces[blk.iface_id]
                    if len(blk.pkt_data) < blk.caplen:
                        errors.append(f"packet {n}: pcapng block holds {len(blk.pkt_data)} of {blk.caplen} bytes")
                    yield n, offset + ((blk.ts_high << 32) | blk.ts_low) / ticks, linktype, blk.pkt_data
            elif btype == pcapng.PCAPNG_BT_SPB:
                n += 1
                if not ifaces:
                    errors.append(f"packet {n}: simple packet block before any interface; skipped")
                else:
                    plen, = struct.unpack_from("<I" if le else ">I", block, 8)
                    yield n, 0.0, ifaces[0][0], block[12:12 + min(plen, blen - 16)]
            # other blocks (name resolution, statistics, custom, ...) carry no packets
        except (dpkt.Error, struct.error, ValueError, IndexError) as e:
            errors.append(f"pcapng block type {btype:#x} at byte {pos} is damaged ({type(e).__name__}: {e}); skipped")
        pos += blen


# ---------------------------------------------------------------------------------------------
# link layer -> IP -> TCP


def _ip_from_link(linktype: int, buf: bytes):
    """The IPv4/IPv6 packet inside a link-layer frame, or None (not IP)."""
    if linktype == LINKTYPE_ETHERNET:
        eth = dpkt.ethernet.Ethernet(buf)
        ip = eth.data
        return ip if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) else None
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        rest = buf[4:]
    elif linktype == LINKTYPE_LINUX_SLL:
        if len(buf) < 16 or buf[14:16] not in (b"\x08\x00", b"\x86\xdd"):
            return None
        rest = buf[16:]
    elif linktype == LINKTYPE_LINUX_SLL2:
        if len(buf) < 20 or buf[0:2] not in (b"\x08\x00", b"\x86\xdd"):
            return None
        rest = buf[20:]
    elif linktype in _RAW_IP:
        rest = buf
    else:
        return None
    if not rest:
        return None
    v = rest[0] >> 4
    if v == 4:
        return dpkt.ip.IP(rest)
    if v == 6:
        return dpkt.ip6.IP6(rest)
    return None


def tcp_segments(data, errors: list[str], wanted, other_ports=None) -> Iterator[Segment]:
    """TCP segments (of a capture's bytes or binary file: read_packets) whose ports pass
    `wanted(sport, dport)`. Other traffic is skipped quietly
    (the server-side ports of unwanted TCP traffic are counted in `other_ports`, a Counter)."""
    reported_links: set[int] = set()
    bad: list[str] = []
    for n, ts, linktype, buf in read_packets(data, errors):
        if linktype not in SUPPORTED_LINKTYPES:
            if linktype not in reported_links:
                reported_links.add(linktype)
                errors.append(f"packet {n}: link type {linktype} is not supported (kipviz reads "
                              f"{', '.join(sorted(_LINK_NAMES.values()))} and raw IP); such packets skipped")
            continue
        try:
            ip = _ip_from_link(linktype, buf)
        except Exception as e:       # dpkt on damaged bytes: the packet is reported, never fatal
            bad.append(f"packet {n} ({type(e).__name__})")
            continue
        if ip is None:
            continue
        try:
            seg = _segment(n, ts, ip, wanted, errors, other_ports)
        except Exception as e:
            bad.append(f"packet {n} ({type(e).__name__})")
            continue
        if seg is not None:
            yield seg
    if bad:
        errors.append(f"{len(bad)} packet(s) have damaged link or IP headers and were skipped: "
                      f"{', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''}")


def _segment(n: int, ts: float, ip, wanted, errors: list[str], other_ports) -> Segment | None:
    tcp = ip.data
    if isinstance(ip, dpkt.ip.IP):
        if ip.p != dpkt.ip.IP_PROTO_TCP:
            return None
        if ip.offset:            # a later fragment: no TCP header of its own
            return None
        src, dst = socket.inet_ntop(socket.AF_INET, ip.src), socket.inet_ntop(socket.AF_INET, ip.dst)
        ip_payload = ip.len - ip.hl * 4 if ip.len else None
    else:
        if ip.p != dpkt.ip.IP_PROTO_TCP:
            return None
        src, dst = socket.inet_ntop(socket.AF_INET6, ip.src), socket.inet_ntop(socket.AF_INET6, ip.dst)
        ip_payload = ip.plen - (len(ip) - ip.__hdr_len__ - len(ip.data)) if ip.plen else None
    if not isinstance(tcp, dpkt.tcp.TCP):
        if isinstance(tcp, (bytes, bytearray)) and len(tcp) >= 4:
            sport, dport = struct.unpack_from(">HH", tcp, 0)
            if wanted(sport, dport):
                errors.append(f"packet {n}: TCP header {addr_text(src, sport)} -> {addr_text(dst, dport)} "
                              f"is cut short ({len(tcp)} bytes captured); skipped")
        return None
    if not wanted(tcp.sport, tcp.dport):
        if other_ports is not None:
            syn_only = tcp.flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK) == dpkt.tcp.TH_SYN
            other_ports[tcp.dport if syn_only else min(tcp.sport, tcp.dport)] += 1
        return None
    payload = bytes(tcp.data)
    missing = 0
    if ip_payload is not None:
        expected = ip_payload - tcp.off * 4
        if isinstance(ip, dpkt.ip.IP) and ip.mf:
            errors.append(f"packet {n}: IPv4 fragment {addr_text(src, tcp.sport)} -> "
                          f"{addr_text(dst, tcp.dport)} (fragments are not reassembled); skipped")
            return None
        if 0 <= len(payload) < expected:
            missing = expected - len(payload)
    return Segment(n, ts, src, tcp.sport, dst, tcp.dport, tcp.seq, tcp.ack, tcp.flags, payload, missing)
