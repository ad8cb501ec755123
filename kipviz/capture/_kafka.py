"""Kafka frames out of reassembled TCP streams, and requests paired with their responses.

A stream whose start was captured is cut strictly by the size prefixes. A stream that begins
mid-conversation (no SYN), or picks up again after a hole, is resynchronised: the first offset
where a plausible frame starts (a sane size, and for requests a known api key and version that
decode; for responses a correlation id the client used, or a chain of sizes) is taken and the
bytes before it are reported as skipped.

Resynchronising takes time linear in the bytes it looks at: a candidate frame is decoded in
place (the stream's bytes with an end bound, no copy of the rest of the stream per candidate
offset), and the bytes of candidate frames decoded in one hunt stay below a few times the bytes
hunted through so far (plus 1 MiB); a candidate that would pass that is not believed."""
from __future__ import annotations

import copy
import struct
from dataclasses import dataclass, field
from functools import lru_cache

from ..codec import decode_request, decode_response, plan_for, request_header_version, response_header_version
from ..errors import DecodeError, UnknownMessageError
from ..schema import registry
from ._tcp import Connection, Stream

MAX_REQUEST = 100 * 1024 * 1024     # Kafka's default socket.request.max.bytes
MAX_RESPONSE = 1 << 30
RESYNC_MAX = 64 * 1024 * 1024       # larger sizes are not believed while hunting for a frame start
CHAIN_LIMIT = 64
DECODE_FACTOR, DECODE_SLACK = 4, 1 << 20   # candidate bytes one hunt may decode: 4 x hunted + 1 MiB

_I = struct.Struct(">i")
_REQ_HEAD = struct.Struct(">ihhi")
_RESP_HEAD = struct.Struct(">ii")


@dataclass
class Frame:
    data: bytes
    offset: int                     # stream offset of the size prefix
    ts: float | None
    packets: tuple[int, int] | None
    complete: bool = True
    need: int | None = None         # full frame length (size prefix included) when cut short
    errors: list[str] = field(default_factory=list)


def _spec_for(key: int):
    try:
        return registry.by_api_key(key, "request")
    except UnknownMessageError:
        return None


def api_name(key) -> str | None:
    if key is None:
        return None
    spec = _spec_for(key)
    if spec is not None:
        return spec.api
    return registry.kafka_api_keys().get(key)


# ---------------------------------------------------------------------------------------------
# plausibility tests used while resynchronising


class _Budget:
    """Bytes of candidate frames one resync may decode: DECODE_FACTOR per byte hunted through,
    plus DECODE_SLACK (keeps the hunt linear in the bytes it looks at)."""
    __slots__ = ("start", "spent")

    def __init__(self, start: int):
        self.start, self.spent = start, 0

    def take(self, size: int, i: int) -> bool:
        if self.spent + size > DECODE_FACTOR * (i - self.start) + DECODE_SLACK:
            return False
        self.spent += size
        return True


@lru_cache(maxsize=512)
def _plans(spec, version: int, side: str):
    if side == "request":
        return plan_for(registry.get("RequestHeader"), request_header_version(spec, version)), plan_for(spec, version)
    return plan_for(registry.get("ResponseHeader"), response_header_version(spec, version)), plan_for(spec, version)


def _decodes(data: bytes, start: int, end: int, spec, version: int, side: str) -> bool:
    """Does data[start:end] (a frame's payload) decode exactly, read in place? The generated
    decoders take an end bound, so no slice of the stream is copied."""
    header, body = _plans(spec, version, side)
    try:
        _, pos = header.decoder()(data, start, end)
        _, stop = body.decoder()(data, pos, end)
    except Exception:  # noqa: BLE001 - any failure means: not a frame start
        return False
    return stop == end


def _request_at(data, i: int, n: int, budget: _Budget | None = None) -> bool:
    """Does a request frame plausibly start at i? The whole frame must be there and decode (or,
    for api keys the kit does not define, carry a sane client id), followed by another sane size
    or the end of the bytes. A frame running past the captured bytes is not believed."""
    if n - i < 12:
        return False
    size, key, version, _ = _REQ_HEAD.unpack_from(data, i)
    if not 8 <= size <= RESYNC_MAX:
        return False
    end = i + 4 + size
    if end > n or (n - end >= 4 and not 8 <= _I.unpack_from(data, end)[0] <= MAX_REQUEST):
        return False
    spec = _spec_for(key)
    if spec is not None:
        if version not in spec.valid:
            return False
        return (budget is None or budget.take(size, i)) and _decodes(data, i + 4, end, spec, version, "request")
    if key not in registry.kafka_api_keys() or not 0 <= version <= 30 or size < 10:
        return False
    cid, = struct.unpack_from(">h", data, i + 12)
    if not -1 <= cid <= size - 10:
        return False
    text = bytes(data[i + 14:i + 14 + max(cid, 0)])
    return all(0x20 <= c <= 0x7E for c in text) and _chain_end(data, end, n, 8, MAX_REQUEST) is not None


def _chain_end(data, i: int, n: int, smallest: int, largest: int, stop: int | None = None):
    """Follow size prefixes from i; the offset where the chain ends exactly (n or `stop`), else None."""
    for _ in range(CHAIN_LIMIT):
        if i == n or i == stop:
            return i
        if n - i < 4:
            return None
        size, = _I.unpack_from(data, i)
        if not smallest <= size <= largest:
            return None
        i += 4 + size
        if i > n:
            return None
    return None


def _response_at(data, i: int, n: int, pending: dict, budget: _Budget | None = None) -> bool:
    if n - i < 8:
        return False
    size, corr = _RESP_HEAD.unpack_from(data, i)
    if not 4 <= size <= RESYNC_MAX or corr not in pending:
        return False
    end = i + 4 + size
    if end > n:
        return True                 # a known correlation id at a sane size: good enough at the edge
    if budget is not None and not budget.take(size, i):
        return False
    for key, version in pending[corr]:
        spec = registry.by_api_key(key, "response") if _spec_for(key) is not None else None
        if spec is None or version not in spec.valid:
            return True             # cannot check the body; the correlation id has to do
        if _decodes(data, i + 4, end, spec, version, "response"):
            return True
        if spec.api == "ApiVersions" and _decodes(data, i + 4, end, spec, 0, "response"):
            return True
    return False


def _response_chain(data, i: int, n: int, stop: int | None, below: int | None = None):
    """Follow response size prefixes from i while correlation ids grow (clients count up per
    connection); the offset where the chain ends exactly at `stop` (or n), else None."""
    target = n if stop is None else stop
    prev = -1
    for _ in range(CHAIN_LIMIT):
        if i == target:
            return i
        if i > target or n - i < 8:
            return None
        size, corr = _RESP_HEAD.unpack_from(data, i)
        if not 6 <= size <= RESYNC_MAX or corr <= prev or (below is not None and corr >= below):
            return None
        prev = corr
        i += 4 + size
    return None


def _resync(data: bytes, start: int, side: str, pending: dict) -> int | None:
    n = len(data)
    budget = _Budget(start)
    if side == "request":
        for i in range(start, n - 11):
            if _request_at(data, i, n, budget):
                return i
        return None
    strong = None
    for i in range(start, n - 7):
        if _response_at(data, i, n, pending, budget):
            strong = i
            break
    if strong is not None:
        # answers to requests sent before the capture began may come first: follow sizes back
        below = _RESP_HEAD.unpack_from(data, strong)[1]
        for i in range(start, strong):
            if _response_chain(data, i, n, strong, below) == strong:
                return i
        return strong
    for i in range(start, n - 7):
        if _response_chain(data, i, n, None) == n:
            return i
    return None


# ---------------------------------------------------------------------------------------------
# streams -> frames


def _looks_like_tls(data) -> bool:
    return len(data) >= 3 and data[0] == 0x16 and data[1] == 0x03 and data[2] <= 0x04


# size: framing a stream is one cursor over its chunks with resync; pos, carry and expect_next would have to travel through every piece
def split_stream(stream: Stream, side: str, pending: dict, ended: str) -> tuple[list[Frame], list[str]]:
    """Frames of one direction; the second value holds problems that belong to no frame."""
    frames: list[Frame] = []
    carry: list[str] = []           # problems waiting for the next frame
    smallest, largest = (8, MAX_REQUEST) if side == "request" else (4, MAX_RESPONSE)
    expect_next: int | None = None  # where the frame after a cut-short one begins
    events = sorted(stream.events)
    for ci, chunk in enumerate(stream.chunks):
        data = chunk.data           # bytes: frames and resync candidates are read in place
        n = len(data)
        pos = 0
        if ci == 0 and _looks_like_tls(data):
            carry.append(f"{side} stream looks like TLS (starts {bytes(data[:3]).hex(' ')}); "
                         f"kipviz reads plaintext Kafka only: {sum(c.size for c in stream.chunks)} bytes skipped")
            break
        if ci == 0 and not chunk.aligned and stream.syn:
            carry.append(f"{side} stream: the first {chunk.start} bytes after the handshake are missing "
                         "from the capture")
        elif ci > 0:
            cause = chunk.gap_cause or "a gap in TCP sequence numbers"
            carry.append(f"{side} stream: {chunk.gap_before} bytes missing from the capture "
                         f"({cause}, before stream offset {chunk.start})")
        aligned = chunk.aligned
        if expect_next is not None:
            if expect_next >= chunk.end:
                continue            # all inside the frame that was cut short
            if expect_next >= chunk.start:
                pos, aligned = expect_next - chunk.start, True
            expect_next = None
        if not aligned:
            found = _resync(data, pos, side, pending)
            if found is None:
                if n - pos:
                    why = ("the capture began mid-stream" if ci == 0 else "after the gap")
                    carry.append(f"{side} stream: {why}, and no plausible {side} frame start was found "
                                 f"in the next {n - pos} bytes; skipped")
                continue
            if found > pos:
                if ci == 0:
                    carry.append(f"{side} stream started mid-frame (capture began after the connection "
                                 f"opened): skipped {found - pos} bytes before the first whole {side}")
                else:
                    carry.append(f"{side} stream: skipped {found - pos} bytes after the gap to the next "
                                 f"plausible {side} frame start")
            pos = found
        while pos < n:
            base = chunk.start + pos
            if n - pos < 4:
                frames.append(_cut(chunk, pos, None, side, stream, ci, ended, carry))
                carry = []
                break
            size, = _I.unpack_from(data, pos)
            if not smallest <= size <= largest:
                lost = (f"{side} stream: implausible frame size {size} at stream offset {base} "
                        f"(expected {smallest}..{largest}); lost track of frames")
                found = _resync(data, pos + 1, side, pending)
                if found is None:
                    carry.append(f"{lost}, {n - pos} bytes skipped")
                    break
                carry.append(f"{lost}, skipped {found - pos} bytes to the next plausible frame start")
                pos = found
                continue
            end = pos + 4 + size
            if end > n:
                frames.append(_cut(chunk, pos, 4 + size, side, stream, ci, ended, carry))
                carry = []
                expect_next = chunk.start + end
                break
            ts, p0, p1 = chunk.when(chunk.start + pos, chunk.start + end)
            f = Frame(bytes(data[pos:end]), base, ts, (p0, p1), errors=carry)
            carry = []
            while events and events[0][0] < chunk.start + end:
                f.errors.append(f"{side} stream: {events.pop(0)[1]}")
            frames.append(f)
            pos = end
    for chunk in stream.chunks:
        chunk.release()             # the frames hold their bytes now
    for _, msg in events:
        carry.append(f"{side} stream: {msg}")
    if stream.tail_missing and (not frames or frames[-1].complete):
        carry.append(f"{side} stream: the last {stream.tail_missing} bytes were not captured (snapshot length)")
    return frames, carry


def _cut(chunk, pos: int, need: int | None, side: str, stream: Stream, ci: int, ended: str, carry) -> Frame:
    have = chunk.size - pos
    ts, p0, p1 = chunk.when(chunk.start + pos, chunk.end)
    if ci + 1 < len(stream.chunks):
        nxt = stream.chunks[ci + 1]
        why = f"a gap of {nxt.gap_before} bytes follows" + (f": {nxt.gap_cause}" if nxt.gap_cause else "")
    elif stream.tail_missing:
        why = f"the next {stream.tail_missing} bytes were not captured (snapshot length too small?)"
    else:
        why = ended
    what = f"{have} of {need} bytes" if need else f"{have} bytes, not even the 4-byte size"
    msg = f"{side} frame cut short at stream offset {chunk.start + pos}: {what} captured ({why})"
    return Frame(bytes(chunk.data[pos:]), chunk.start + pos, ts, (p0, p1), complete=False, need=need,
                 errors=[*carry, msg])


# ---------------------------------------------------------------------------------------------
# frames -> exchanges


def _empty(conn: Connection) -> dict:
    return {"time": None, "client": conn.client_text, "server": conn.server_text, "connection": conn.index,
            "correlation_id": None, "api": None, "api_key": None, "version": None,
            "request": None, "response": None, "response_time": None, "latency_ms": None,
            "request_frame": None, "response_frame": None, "request_packets": None,
            "response_packets": None, "kind": "exchange", "errors": [], "notes": []}


def _ended(*dirs) -> str:
    if any(d.rst for d in dirs):
        return "the connection was reset"
    if any(d.fin for d in dirs):
        return "the connection was closed"
    return "the capture ends"


def _produce_acks(ex) -> int | None:
    req = ex["request"]
    if req is None or req["api"] != "Produce":
        return None
    return req["body"].get("Acks")


def exchanges_of(conn: Connection) -> tuple[list[dict], Stream, Stream]:
    # one direction at a time: its segments, its joined bytes and its frames are not all held at once
    out: list[dict] = []
    c2s = conn.c2s.reassemble()
    pending = _requests(conn, c2s, out)
    s2c = conn.s2c.reassemble()
    _responses(conn, s2c, out, pending)
    ended = _ended(conn.c2s, conn.s2c)
    for exs in pending.values():
        for ex in exs:
            if _produce_acks(ex) == 0:
                ex["notes"].append("Produce with acks=0: the broker sends no response")
            elif ex["request_frame"] is not None:
                ex["errors"].append(f"no response in the capture ({ended} before it arrived)")
    for ex in out:
        ex["raw_request"], ex["raw_response"] = ex["request_frame"], ex["response_frame"]
    return out, c2s, s2c


def _requests(conn: Connection, c2s: Stream, out: list[dict]) -> dict[int, list[dict]]:
    """One exchange per request frame (appended to `out`); returns them by correlation id."""
    req_frames, req_left = split_stream(c2s, "request", {}, _ended(conn.c2s, conn.s2c))
    pending: dict[int, list[dict]] = {}
    for f in req_frames:
        ex = _empty(conn)
        ex.update(time=f.ts, request_frame=f.data, request_packets=f.packets)
        ex["errors"].extend(f.errors)
        if len(f.data) >= 12:
            _, key, version, corr = _REQ_HEAD.unpack_from(f.data, 0)
            ex.update(api_key=key, version=version, correlation_id=corr, api=api_name(key))
            pending.setdefault(corr, []).append(ex)
        elif len(f.data) >= 8:
            _, key, version = struct.unpack_from(">ihh", f.data, 0)
            ex.update(api_key=key, version=version, api=api_name(key))
        if f.complete:
            try:
                ex["request"] = decode_request(f.data)
                _view_records(ex["request"], f.data)
            except DecodeError as e:
                ex["errors"].append(f"request does not decode: {e}")
        out.append(ex)
    if req_left:
        (out[-1]["errors"] if out else _orphan(conn, out, "stream")["errors"]).extend(req_left)
    return pending


def _responses(conn: Connection, s2c: Stream, out: list[dict], pending: dict[int, list[dict]]) -> None:
    """Each response frame joins the first waiting request of its correlation id (taken from
    `pending`), or becomes an orphan exchange."""
    known = {corr: [(e["api_key"], e["version"]) for e in exs] for corr, exs in pending.items()}
    resp_frames, resp_left = split_stream(s2c, "response", known, _ended(conn.c2s, conn.s2c))
    answered: list[dict] = []
    for f in resp_frames:
        corr = _RESP_HEAD.unpack_from(f.data, 0)[1] if len(f.data) >= 8 else None
        waiting = pending.get(corr)
        if not waiting:
            ex = _orphan(conn, out, "response")
            ex.update(correlation_id=corr, response_frame=f.data, response_time=f.ts, response_packets=f.packets)
            ex["errors"].extend(f.errors)
            if corr is None:
                ex["errors"].append("response frame too short to hold a correlation id")
            else:
                ex["errors"].append(f"response without request: no request with correlation id {corr} on "
                                    "this connection (sent before the capture began, or lost?)")
            continue
        ex = waiting.pop(0)
        answered.append(ex)
        ex.update(response_frame=f.data, response_time=f.ts, response_packets=f.packets)
        ex["errors"].extend(f.errors)
        if ex["time"] is not None and f.ts is not None:
            ex["latency_ms"] = (f.ts - ex["time"]) * 1000.0
        if f.complete:
            _decode_response(ex, f.data)
    if resp_left:
        target = answered[-1] if answered else None
        (target["errors"] if target else _orphan(conn, out, "stream")["errors"]).extend(resp_left)


def _orphan(conn: Connection, out: list, kind: str) -> dict:
    ex = _empty(conn)
    ex["kind"] = "orphan-response" if kind == "response" else "stream-error"
    out.append(ex)
    return ex


class ViewOfFrame(dict):
    """A decoded struct whose `Records` is a memoryview of its frame's bytes (_view_records): a
    copy (copy.deepcopy) or a pickle of it holds bytes, as the decoder's own dicts do."""
    __slots__ = ()

    def _plain(self) -> dict:
        return {k: bytes(v) if isinstance(v, memoryview) else v for k, v in self.items()}

    def __deepcopy__(self, memo):
        return copy.deepcopy(self._plain(), memo)

    def __reduce_ex__(self, protocol):
        return dict, (self._plain(),)


def _view_records(decoded: dict, frame: bytes) -> None:
    """Each `Records` value of a decoded frame becomes a memoryview of the frame's own bytes: the
    decoder copies them, and they are most of a capture (Produce and Fetch), so held twice the
    exchanges would take twice the capture's size. Found in wire order from a cursor; where the same
    bytes come earlier than expected, those are taken (the same content)."""
    view, at = memoryview(frame), 0

    def walk(node):
        """node, or in its place a ViewOfFrame when it holds Records; changed in place below it."""
        nonlocal at
        items = enumerate(node) if isinstance(node, list) else node.items()
        viewed = False
        for k, v in list(items):
            if k == "Records" and isinstance(v, bytes) and v:
                i = frame.find(v, at)
                i = frame.find(v) if i < 0 else i
                if i >= 0:
                    node[k], at, viewed = view[i:i + len(v)], i + len(v), True
            elif isinstance(v, (dict, list)):
                node[k] = walk(v)
        return ViewOfFrame(node) if viewed else node

    if isinstance(decoded.get("body"), dict):
        decoded["body"] = walk(decoded["body"])


def _decode_response(ex: dict, data: bytes) -> None:
    key, version = ex["api_key"], ex["version"]
    spec = _spec_for(key) if key is not None else None
    if spec is None:
        known = registry.kafka_api_keys().get(key)
        what = f"Kafka's {known}, which the kit does not define" if known else "unknown to Kafka and the kit"
        ex["errors"].append(f"response not decoded: its request has api key {key} ({what})")
        return
    rspec = registry.by_api_key(key, "response")
    if version not in rspec.valid:
        ex["errors"].append(f"response not decoded: {rspec.name} has no version {version} (valid: {rspec.valid})")
        return
    try:
        ex["response"] = decode_response(data, rspec, version)
        _view_records(ex["response"], data)
    except DecodeError as e:
        if rspec.api == "ApiVersions" and version != 0:
            # a broker that does not know the request version answers in the v0 layout (KIP-511)
            try:
                resp = decode_response(data, rspec, 0)
            except DecodeError:
                pass
            else:
                ex["response"] = resp
                ex["notes"].append(f"ApiVersions v{version} answered in the v0 layout (error code "
                                   f"{resp['body'].get('ErrorCode')}): the broker does not support v{version}")
                return
        ex["errors"].append(f"response does not decode as {rspec.name} v{version}: {e}")
