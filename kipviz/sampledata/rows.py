"""Model objects -> dataset rows (column lists): events, request/response pairs, log batches and
the data records of a partition log. Pure functions and small accumulators; writer.py decides
where the rows go."""
from __future__ import annotations

import dataclasses
import json
import struct
import uuid
from collections import deque

import pyarrow as pa

from ..broker import events as ev
from ..broker.error_codes import name_of
from ..schema import registry
from ..uuids import to_kafka_str
from .schema import BATCH, HEADER, TOPIC

SHORT_BYTES = 64          # bytes up to this size are shown in full ("0x.."), longer as "<N bytes>"
_BATCH_HEAD = struct.Struct(">q13xhi8xqqh")    # base offset, attributes, last offset delta, max ts, pid, epoch
_TRANSACTIONAL, _CONTROL, _LOG_APPEND_TIME = 0x10, 0x20, 0x08


# ---- detail JSON -------------------------------------------------------------------------------------------
def plain(o):
    """A JSON-ready copy: bytes as "0x<hex>" (or "<N bytes>" when longer than SHORT_BYTES),
    UUIDs in Kafka's base64 form, tuples/sets as lists, every dict key a string."""
    if o is None or isinstance(o, (str, bool, int, float)):
        return o
    if isinstance(o, dict):
        return {str(k) if not isinstance(k, tuple) else "-".join(map(str, k)): plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [plain(v) for v in o]
    if isinstance(o, (set, frozenset)):
        return sorted((plain(v) for v in o), key=repr)
    if isinstance(o, (bytes, bytearray, memoryview)):
        b = bytes(o)
        return "0x" + b.hex() if len(b) <= SHORT_BYTES else f"<{len(b)} bytes>"
    if isinstance(o, uuid.UUID):
        return to_kafka_str(o)
    return str(o)


def to_json(d: dict) -> str:
    return json.dumps(plain(d), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


_FIELDS: dict[type, tuple[str, ...]] = {}
_COLUMN_FIELDS = {"seq", "t"}
_NOT_IN_DETAIL = {
    ev.StateChanged: {"machine", "key", "from_state", "to_state", "cause", "status"},
    ev.RecordAppended: {"topic", "partition", "offset", "key", "value"},
    ev.RequestReceived: {"frame"},
    ev.ResponseSent: {"frame"},
}
_DATA_KEYS = {"kind", "key", "value", "headers", "timestamp", "client_timestamp"}


def _detail_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        skip = _COLUMN_FIELDS | _NOT_IN_DETAIL.get(cls, set())
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name not in skip)
    return names


def event_detail(e: ev.Event) -> str:
    """The event's fields that have no column of their own, as compact JSON (sorted keys). A data
    record's key, value and headers are left out: they are in topics/<topic>.parquet at
    (topic, partition, offset)."""
    d = {name: getattr(e, name) for name in _detail_fields(type(e))}
    if type(e) is ev.RecordAppended and isinstance(e.record, dict) and e.record.get("kind") == "data":
        d["record"] = {k: v for k, v in e.record.items() if k not in ("key", "value", "headers")}
    return to_json(d)


def _data_record_detail(e: ev.RecordAppended) -> str | None:
    """event_detail for a plain data record, without json.dumps (millions of these in a long run)."""
    r = e.record
    if r.keys() != _DATA_KEYS:
        return None
    ct, ts = r["client_timestamp"], r["timestamp"]
    if type(ts) is not int or (ct is not None and type(ct) is not int):
        return None
    return (f'{{"broker":{e.broker},"control":{"true" if e.control else "false"},'
            f'"producer_epoch":{e.producer_epoch},"producer_id":{e.producer_id},'
            f'"record":{{"client_timestamp":{"null" if ct is None else ct},"kind":"data","timestamp":{ts}}},'
            f'"transactional":{"true" if e.transactional else "false"}}}')


# ---- events ----------------------------------------------------------------------------------------------------
def _detail(e, cls) -> str:
    if cls is ev.StateChanged:
        return "{}"
    if cls is ev.RecordAppended and type(e.record) is dict and e.record.get("kind") == "data":
        d = _data_record_detail(e)
        if d is not None:
            return d
    return event_detail(e)


def event_columns(events) -> dict[str, list]:
    """Column lists for events.parquet (one comprehension per column: a long run has millions)."""
    RA, SC = ev.RecordAppended, ev.StateChanged
    kinds = [type(e) for e in events]
    pairs = list(zip(events, kinds, strict=True))
    return {
        "seq": [e.seq for e in events],
        "time_ms": [e.t for e in events],
        "kind": [k.__name__ for k in kinds],
        "machine": [e.machine if k is SC else None for e, k in pairs],
        "key": [e.key if k is SC else None for e, k in pairs],
        "from_state": [e.from_state if k is SC else None for e, k in pairs],
        "to_state": [e.to_state if k is SC else None for e, k in pairs],
        "cause": [e.cause if k is SC else None for e, k in pairs],
        "status": [e.status if k is SC else None for e, k in pairs],
        "topic": [e.topic if k is RA else None for e, k in pairs],
        "partition": [e.partition if k is RA else None for e, k in pairs],
        "offset": [e.offset if k is RA else None for e, k in pairs],
        "detail": [_detail(e, k) for e, k in pairs],
    }


# ---- requests --------------------------------------------------------------------------------------------------
REQUEST_COLUMNS = ("seq", "time_ms", "broker", "client", "api", "api_key", "version", "correlation_id",
                   "error_codes", "error_names", "request", "response")
_API_KEYS: dict[str, int] = {}


def api_key_of(api: str) -> int:
    k = _API_KEYS.get(api)
    if k is None:
        k = _API_KEYS[api] = registry.api_key(registry.get(api + "Request"))
    return k


class RequestLog:
    """Pairs RequestReceived with its ResponseSent (same client, broker, api and correlation id) and
    hands out rows in the order of the requests. A request that gets no answer (its broker is down,
    the connection was closed) gets an empty response; a held request (a JoinGroup waiting for the
    rebalance) waits for its answer. `max_waiting` bounds what may queue behind an unanswered
    request: past it, that request is written with an empty response, and an answer that arrives
    later gets a row of its own (empty request, seq of the response)."""

    def __init__(self, max_waiting: int = 20000):
        self.max_waiting = max_waiting
        self._queue: deque[list] = deque()          # rows in request order; row[-1] is None while unanswered
        self._open: dict[tuple, deque] = {}          # (client, broker, api, correlation id) -> unanswered rows
        self._down: set[int] = set()

    def add(self, events) -> dict[str, list]:
        """Take a chunk of events; return the rows that are complete, as columns."""
        out: list[list] = []
        for e in events:
            cls = type(e)
            if cls is ev.RequestReceived:
                row = [e.seq, e.t, e.broker, e.client, e.api, e.version, e.correlation_id, (), e.frame, None]
                if e.broker in self._down:
                    row[-1] = b""
                else:
                    self._open.setdefault((e.client, e.broker, e.api, e.correlation_id), deque()).append(row)
                self._queue.append(row)
            elif cls is ev.ResponseSent:
                k = (e.client, e.broker, e.api, e.correlation_id)
                waiting = self._open.get(k)
                if waiting:
                    row = waiting.popleft()
                    if not waiting:
                        del self._open[k]
                    row[7], row[-1] = tuple(e.error_codes), e.frame
                else:           # an answer without a recorded request (malformed frame, or given up on)
                    self._queue.append([e.seq, e.t, e.broker, e.client, e.api, e.version, e.correlation_id,
                                        tuple(e.error_codes), b"", e.frame])
            elif cls is ev.Note and isinstance(e.detail, dict) and isinstance(e.detail.get("broker"), int):
                if e.text.endswith(" crashed"):
                    self._down.add(e.detail["broker"])
                elif e.text.endswith(" restarted"):
                    self._down.discard(e.detail["broker"])
            self._pop_ready(out)
        return _request_columns(out)

    def _pop_ready(self, out: list, everything: bool = False) -> None:
        q = self._queue
        while q and (q[0][-1] is not None or everything or len(q) > self.max_waiting):
            row = q.popleft()
            if row[-1] is None:           # given up on: no answer (yet)
                k = (row[3], row[2], row[4], row[6])
                waiting = self._open.get(k)
                if waiting:
                    self._open[k] = deque(r for r in waiting if r is not row)
                    if not self._open[k]:
                        del self._open[k]
                row[-1] = b""
            out.append(row)

    def finish(self) -> dict[str, list]:
        out: list[list] = []
        self._pop_ready(out, everything=True)
        return _request_columns(out)


def _request_columns(rows: list[list]) -> dict[str, list]:
    cols = {c: [] for c in REQUEST_COLUMNS}
    for seq, t, broker, client, api, version, cid, codes, req, resp in rows:
        cols["seq"].append(seq)
        cols["time_ms"].append(t)
        cols["broker"].append(broker)
        cols["client"].append(client)
        cols["api"].append(api)
        cols["api_key"].append(api_key_of(api))
        cols["version"].append(version)
        cols["correlation_id"].append(cid)
        cols["error_codes"].append(list(codes))
        cols["error_names"].append([name_of(c) for c in codes])
        cols["request"].append(bytes(req))
        cols["response"].append(bytes(resp))
    return cols


# ---- partition logs ---------------------------------------------------------------------------------------------
def batch_header(raw: bytes) -> tuple[int, int, int, int, bool, bool, bool]:
    """(base offset, last offset, producer id, producer epoch, transactional, control, LogAppendTime)."""
    base, attrs, delta, _max_ts, pid, epoch = _BATCH_HEAD.unpack_from(raw, 0)
    return (base, base + delta, pid, epoch, bool(attrs & _TRANSACTIONAL), bool(attrs & _CONTROL),
            bool(attrs & _LOG_APPEND_TIME))


def log_rows(topic: str, log, batches) -> tuple[pa.RecordBatch | None, pa.RecordBatch | None]:
    """Rows for `batches` (raw record batches of `log`, in log order): one batch row each, and a
    topic row per data record (taken from the log's entries at the batch's offsets; control batches
    give no topic rows, as in Spark's Kafka source)."""
    if not batches:
        return None, None
    b_base, b_last, b_pid, b_epoch, b_txn, b_ctl = [], [], [], [], [], []
    keys, values, offsets, stamps, ts_types, h_offsets, h_keys, h_values = [], [], [], [], [], [0], [], []
    entries = log.entries
    for raw in batches:
        base, last, pid, epoch, txn, control, lat = batch_header(raw)
        b_base.append(base), b_last.append(last), b_pid.append(pid), b_epoch.append(epoch)
        b_txn.append(txn), b_ctl.append(control)
        if control:
            continue
        ents = entries[base:last + 1]
        if not ents or ents[0].offset != base or len(ents) != last - base + 1:
            raise RuntimeError(f"{topic}-{log.partition}: batch at {base}..{last} does not match the log entries")
        kind = 1 if lat else 0
        for e in ents:
            keys.append(e.key)
            values.append(e.value)
            offsets.append(e.offset)
            stamps.append(e.timestamp)
            ts_types.append(kind)
            h = e.headers
            if h:
                for hk, hv in h:
                    h_keys.append(hk if type(hk) is str else bytes(hk).decode("utf-8", "replace"))
                    h_values.append(hv)
            h_offsets.append(len(h_keys))
    n = len(b_base)
    batch_rows = pa.RecordBatch.from_arrays(
        [pa.array([topic] * n, pa.string()), pa.array([log.partition] * n, pa.int32()),
         pa.array(b_base, pa.int64()), pa.array(b_last, pa.int64()), pa.array(b_pid, pa.int64()),
         pa.array(b_epoch, pa.int32()), pa.array(b_txn, pa.bool_()), pa.array(b_ctl, pa.bool_()),
         pa.array([bytes(b) for b in batches], pa.binary())],
        schema=BATCH)
    if not offsets:
        return batch_rows, None
    m = len(offsets)
    headers = pa.ListArray.from_arrays(
        pa.array(h_offsets, pa.int32()),
        pa.StructArray.from_arrays([pa.array(h_keys, pa.string()), pa.array(h_values, pa.binary())],
                                   fields=list(HEADER)))
    topic_rows = pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.binary()), pa.array(values, pa.binary()), pa.array([topic] * m, pa.string()),
         pa.array([log.partition] * m, pa.int32()), pa.array(offsets, pa.int64()),
         pa.array(stamps, pa.timestamp("ms", tz="UTC")), pa.array(ts_types, pa.int32()), headers],
        schema=TOPIC)
    return batch_rows, topic_rows
