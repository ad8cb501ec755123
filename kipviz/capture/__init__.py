"""Kafka conversations in packet captures: read pcap/pcapng files of plaintext Kafka traffic, and
write conversations kipviz produced as pcaps that Wireshark opens.

    exchanges = read_pcap("broker.pcapng", ports=(9092,))
    exchanges[0]["api"], exchanges[0]["request"]["body"], exchanges[0]["response"]["body"]
    to_dataframe(exchanges)                       # one row per request/response pair
    write_pcap("talk.pcap", [("request", frame), ("response", frame)])

read_pcap reassembles each TCP connection (sequence-number order, retransmissions dropped,
overlaps trimmed, gaps reported), cuts each direction into size-prefixed frames, decodes every
request with kipviz.codec.decode_request and pairs each response with the request of the same
correlation id on the same connection (Kafka responses carry neither api key nor version).
Problems never raise: they are readable strings in the `errors` list of the exchange they affect,
and all of them (plus problems with the file itself) in `exchanges.errors`. Only a file that is
not a pcap or pcapng capture at all raises CaptureError (a KipvizError and ValueError)."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from ..schema.error_codes import error_codes as _error_codes
from ..table import Table, frame
from ._kafka import MAX_REQUEST, MAX_RESPONSE, api_name, exchanges_of
from ._packets import CaptureError, tcp_segments
from ._tcp import Tracker
from ._writer import PcapWriter, TcpConnection, write_pcap

__all__ = ["read_pcap", "write_pcap", "to_dataframe", "exchanges_table", "error_codes", "Exchanges",
           "CaptureError", "PcapWriter", "TcpConnection", "DEFAULT_PORTS", "MAX_REQUEST", "MAX_RESPONSE",
           "api_name"]

DEFAULT_PORTS = (9092,)


class Exchanges(list):
    """The exchanges of a capture (a list of dicts), plus:

    errors       every problem found, each prefixed with the connection it belongs to
    file_errors  problems with the capture file itself (truncated, damaged blocks, ...)
    connections  one summary dict per TCP connection (endpoints, byte and segment counts,
                 retransmissions, out-of-order segments, gaps, missing bytes)
    packets      number of the last Kafka packet read from the file
    notes        hints that are not errors (e.g. which other TCP ports carry traffic when
                 nothing was found on the chosen ports)"""

    def __init__(self, items=(), *, errors=None, file_errors=None, connections=None, packets=0, notes=None):
        super().__init__(items)
        self.errors: list[str] = list(errors or [])
        self.file_errors: list[str] = list(file_errors or [])
        self.connections: list[dict] = list(connections or [])
        self.packets = packets
        self.notes: list[str] = list(notes or [])


def _load(source):
    """The capture's bytes, or for a path its file opened (the caller closes it)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise CaptureError("read_pcap needs a file opened in binary mode")
        return bytes(data)
    try:
        return open(Path(os.fspath(source)), "rb")      # read as it goes (a pcap a packet at a time)
    except TypeError:
        raise CaptureError(f"read_pcap needs a path, a binary file or bytes, got {type(source).__name__}") from None
    except OSError as e:
        raise CaptureError(f"cannot read {source}: {e.strerror or e}") from None


def _ports(ports):
    if ports is None:
        return None
    if isinstance(ports, int) and not isinstance(ports, bool):
        ports = (ports,)
    try:
        out = tuple(int(p) for p in ports)
    except (TypeError, ValueError):
        raise CaptureError(f"ports must be port numbers, got {ports!r}") from None
    if not out or any(not 0 < p < 65536 for p in out):
        raise CaptureError(f"ports must be between 1 and 65535, got {ports!r}")
    return out


def _sort_key(ex: dict):
    t = ex["time"] if ex["time"] is not None else ex["response_time"]
    return (t is None, t or 0.0, ex["connection"] if ex["connection"] is not None else -1)


def _connection_row(conn, exs: list[dict], c2s_stream, s2c_stream) -> dict:
    c2s, s2c = conn.c2s, conn.s2c
    return {"connection": conn.index, "client": conn.client_text, "server": conn.server_text,
            "handshake_seen": c2s.isn is not None or s2c.isn is not None,
            "closed": "reset" if (c2s.rst or s2c.rst) else "fin" if (c2s.fin or s2c.fin) else None,
            "requests": sum(1 for e in exs if e["request_frame"] is not None),
            "responses": sum(1 for e in exs if e["response_frame"] is not None),
            "request_stream": c2s_stream.stats, "response_stream": s2c_stream.stats}


def _capture_error(file_errors: list[str]) -> dict:
    """The one row saying what is wrong with the file itself."""
    return {"time": None, "client": None, "server": None, "connection": None, "correlation_id": None,
            "api": None, "api_key": None, "version": None, "request": None, "response": None,
            "response_time": None, "latency_ms": None, "request_frame": None, "response_frame": None,
            "request_packets": None, "response_packets": None, "raw_request": None,
            "raw_response": None, "kind": "capture-error",
            "errors": list(file_errors), "notes": []}


def _exchange_errors(out: list[dict]) -> list[str]:
    """Each exchange's errors as one readable line naming where it happened."""
    errors = []
    for ex in out:
        if ex["kind"] == "capture-error":
            continue
        where = f"{ex['client']} -> {ex['server']}"
        if ex["correlation_id"] is not None:
            where += f" correlation id {ex['correlation_id']}"
        errors.extend(f"{where}: {e}" for e in ex["errors"])
    return errors


def read_pcap(path, *, ports=DEFAULT_PORTS) -> Exchanges:
    """Every Kafka request/response exchange in a pcap or pcapng file, in request-time order.

    ports: the Kafka (broker) ports; None takes every TCP connection (the side that received the
    SYN, or else the lower port, is the broker). `path` may also be a binary file or bytes.

    Each exchange is a dict: time (request timestamp, seconds), client and server ("ip:port"),
    connection (index), correlation_id, api (e.g. "Metadata"), api_key, version, request (the
    decode_request dict or None), response (the decode_response dict or None; in both, each
    `Records` value is a memoryview of its frame, and copy.deepcopy or pickle gives bytes), response_time,
    latency_ms, request_frame and response_frame (raw bytes, size prefix included; also under
    raw_request / raw_response),
    request_packets / response_packets (first and last packet number), kind ("exchange",
    "orphan-response", "stream-error" or "capture-error"), errors (readable strings) and notes
    (observations that are not errors, e.g. acks=0 produce requests have no response)."""
    ports = _ports(ports)
    data = _load(path)
    file_errors: list[str] = []
    tracker = Tracker(ports)
    packets = 0
    others: Counter = Counter()
    try:
        for seg in tcp_segments(data, file_errors, tracker.wanted, others):
            packets = max(packets, seg.packet)
            tracker.add(seg)
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        if hasattr(data, "close"):
            data.close()
    del data                 # the segments hold copies of their payloads: the file's bytes can go
    notes = []
    if not tracker.all and others:
        top = ", ".join(f"{p} ({n} packets)" for p, n in others.most_common(5))
        notes.append(f"no TCP traffic on port(s) {', '.join(map(str, ports or ()))}; "
                     f"TCP ports in the capture: {top}; pass ports=(...) to read them")
    out: list[dict] = []
    conns = []
    for conn in tracker.all:
        exs, c2s_stream, s2c_stream = exchanges_of(conn)
        conn.c2s.segments = conn.s2c.segments = []      # cut into frames: a connection's segments can go
        out.extend(exs)
        conns.append(_connection_row(conn, exs, c2s_stream, s2c_stream))
    out.sort(key=_sort_key)
    if file_errors:
        out.append(_capture_error(file_errors))
    errors = list(file_errors) + _exchange_errors(out)
    return Exchanges(out, errors=errors, file_errors=file_errors, connections=conns, packets=packets,
                     notes=notes)


def error_codes(body) -> list[int]:
    """Every distinct value of an *ErrorCode field anywhere in a decoded body, 0 included (schema.error_codes)."""
    return list(_error_codes(body, zero=True))


def to_dataframe(exchanges, *, ports=DEFAULT_PORTS):
    """A pandas DataFrame with one row per exchange: time, client, server, api, api_key, version,
    correlation_id, error_codes (every *ErrorCode value in the response body; 0 means none),
    failed (a non-zero error code was found), latency_ms, request_bytes, response_bytes, kind,
    errors (joined). `exchanges` may also be a capture path. Without pandas (the browser kit), the
    same rows as a kipviz.table.Table."""
    if not isinstance(exchanges, list):
        exchanges = read_pcap(exchanges, ports=ports)
    rows = []
    for ex in exchanges:
        resp = ex.get("response")
        codes = error_codes(resp["body"]) if isinstance(resp, dict) and "body" in resp else []
        rows.append({
            "time": ex.get("time"), "client": ex.get("client"), "server": ex.get("server"),
            "api": ex.get("api"), "api_key": ex.get("api_key"), "version": ex.get("version"),
            "correlation_id": ex.get("correlation_id"), "error_codes": codes,
            "failed": any(c != 0 for c in codes), "latency_ms": ex.get("latency_ms"),
            "request_bytes": len(ex["request_frame"]) if ex.get("request_frame") is not None else None,
            "response_bytes": len(ex["response_frame"]) if ex.get("response_frame") is not None else None,
            "kind": ex.get("kind", "exchange"), "errors": "; ".join(ex.get("errors") or []),
        })
    cols = ["time", "client", "server", "api", "api_key", "version", "correlation_id", "error_codes",
            "failed", "latency_ms", "request_bytes", "response_bytes", "kind", "errors"]
    df = frame(rows, columns=cols)
    if isinstance(df, Table):
        return df
    for c in ("api_key", "version", "correlation_id", "request_bytes", "response_bytes"):
        df[c] = df[c].astype("Int64")
    df["time"] = df["time"].astype("float64")
    df["latency_ms"] = df["latency_ms"].astype("float64")
    return df


exchanges_table = to_dataframe
