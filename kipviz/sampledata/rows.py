"""Model objects -> dataset rows (column lists): events, request/response pairs, log batches and
the data records of a partition log. Pure functions and small accumulators; writer.py decides
where the rows go."""
from __future__ import annotations

import dataclasses
import itertools
import json
import operator
import uuid
from collections import deque

import numpy as np
import pyarrow as pa

from ..records import read_batches
from ..records.header import batch_summary
from ..schema import events as ev
from ..schema import registry
from ..schema.error_codes import name_of
from ..uuids import to_kafka_str
from .schema import BATCH, COLUMNS, EVENT, HEADER, TOPIC

SHORT_BYTES = 64          # bytes up to this size are shown in full ("0x.."), longer as "<N bytes>"


# ---- detail JSON -------------------------------------------------------------------------------------------
_SCALARS = frozenset({str, int, bool, float, type(None)})    # plain() returns these as they are


# size: called on every value of every sample row: exact-type fast paths first, then the general cases, in one function
def plain(o):
    """A JSON-ready copy: bytes as "0x<hex>" (or "<N bytes>" when longer than SHORT_BYTES),
    UUIDs in Kafka's base64 form, tuples/sets as lists, every dict key a string. (Scalars and
    string keys, most of a request body, are taken as they are without a call.)"""
    t = type(o)
    if t in _SCALARS:
        return o
    if t is dict:
        return {k if type(k) is str else _plain_key(k): v if type(v) in _SCALARS else plain(v) for k, v in o.items()}
    if t is list or t is tuple:
        return [v if type(v) in _SCALARS else plain(v) for v in o]
    if o is None or isinstance(o, (str, bool, int, float)):
        return o
    if isinstance(o, dict):
        return {_plain_key(k): plain(v) for k, v in o.items()}
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


def _plain_key(k) -> str:
    return str(k) if not isinstance(k, tuple) else "-".join(map(str, k))


_JSON = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False)    # made once


def to_json(d: dict) -> str:
    """A dict as the rows' JSON text (bytes, uuids and tuples made plain)."""
    return _JSON.encode(plain(d))


_FIELDS: dict[type, tuple[str, ...]] = {}
_COLUMN_FIELDS = {"seq", "t"}
_NOT_IN_DETAIL = {
    ev.StateChanged: set(COLUMNS[ev.StateChanged]),
    ev.RecordAppended: {*COLUMNS[ev.RecordAppended], "key", "value"},    # the payload: in topics/<topic>.parquet
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
    if isinstance(e, ev.Happened):
        d["text"] = e.text           # the sentence, for a reader of the Parquet file
    if type(e) is ev.RecordAppended and isinstance(e.record, dict) and e.record.get("kind") == "data":
        d["record"] = {k: v for k, v in e.record.items() if k not in ("key", "value", "headers")}
    return to_json(d)


def _data_record_detail(e: ev.RecordAppended) -> str | None:
    """event_detail for a plain data record, without json.dumps (millions of these in a long run);
    None for any other record."""
    r = e.record
    if type(r) is not dict or r.keys() != _DATA_KEYS or r["kind"] != "data":
        return None
    ct, ts = r["client_timestamp"], r["timestamp"]
    if type(ts) is not int or (ct is not None and type(ct) is not int):
        return None
    return (f'{{"broker":{e.broker},"control":{"true" if e.control else "false"},'
            f'"producer_epoch":{e.producer_epoch},"producer_id":{e.producer_id},'
            f'"record":{{"client_timestamp":{"null" if ct is None else ct},"kind":"data","timestamp":{ts}}},'
            f'"transactional":{"true" if e.transactional else "false"}}}')


# ---- events ----------------------------------------------------------------------------------------------------
_STATE_DETAIL = "{}"          # the detail of a StateChanged with no field outside its columns
_STATE_IN_COLUMNS = not _detail_fields(ev.StateChanged)    # then its rows skip the detail JSON


def _detail(e) -> str:
    cls = type(e)
    if cls is ev.RecordAppended:
        d = _data_record_detail(e)
        if d is not None:
            return d
    elif cls is ev.StateChanged and _STATE_IN_COLUMNS:
        return _STATE_DETAIL
    return event_detail(e)


def _is(kinds: list, cls: type) -> np.ndarray:
    """Mask of the rows whose event is of type `cls`."""
    return np.fromiter(map(operator.is_, kinds, itertools.repeat(cls)), bool, len(kinds))


def _spreader(n: int, mask: np.ndarray) -> np.ndarray:
    """Take indices that spread the values of the masked rows over n rows: values[i] goes to the
    i-th masked row, every other row gets the value after the last (the fill)."""
    rows = np.flatnonzero(mask)
    idx = np.full(n, len(rows), np.int64)
    idx[rows] = np.arange(len(rows))
    return idx


def _spread(idx: np.ndarray, values: list, type_: pa.DataType, fill=None) -> pa.Array:
    """The column `values` (a list of its own, extended here by `fill`) spread by _spreader's `idx`."""
    values.append(fill)
    return pa.array(values, type_).take(idx)


def event_columns(events) -> dict[str, list | pa.Array]:
    """Columns for events.parquet. A long run has millions of events, mostly StateChanged and
    RecordAppended: the columns of one kind are read from its events only (attrgetter, in C) and
    spread over the rows with Arrow's take (null on the other rows)."""
    n = len(events)
    kinds = list(map(type, events))
    cols = {"seq": list(map(operator.attrgetter("seq"), events)),
            "time_ms": list(map(operator.attrgetter("t"), events)),
            "kind": list(map(operator.attrgetter("__name__"), kinds))}
    masks = {cls: _is(kinds, cls) for cls in COLUMNS}
    for cls, names in COLUMNS.items():
        idx, chosen = _spreader(n, masks[cls]), list(itertools.compress(events, masks[cls]))
        for name in names:
            cols[name] = _spread(idx, list(map(operator.attrgetter(name), chosen)), EVENT.field(name).type)
    others = ~masks[ev.StateChanged] if _STATE_IN_COLUMNS else np.ones(n, bool)
    cols["detail"] = _spread(_spreader(n, others), list(map(_detail, itertools.compress(events, others))),
                             pa.string(), _STATE_DETAIL)
    return cols


# ---- requests --------------------------------------------------------------------------------------------------
REQUEST_COLUMNS = ("seq", "time_ms", "broker", "client", "api", "api_key", "version", "correlation_id",
                   "error_codes", "error_names", "request", "response")
_API_KEYS: dict[str, int] = {}


def api_key_of(api: str) -> int:
    """The api key of an API name (cached)."""
    k = _API_KEYS.get(api)
    if k is None:
        k = _API_KEYS[api] = registry.api_key(registry.get(api + "Request"))
    return k


_REQUEST_LOG_KINDS = frozenset({ev.RequestReceived, ev.ResponseSent, ev.BrokerCrashed, ev.BrokerRestarted})


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
        # only requests, responses and broker crashes/restarts matter here: picked out in C (a long
        # run has millions of other events)
        for e in itertools.compress(events, map(_REQUEST_LOG_KINDS.__contains__, map(type, events))):
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
            else:               # a crash or restart: the queue did not change, nothing new to hand out
                self._broker_fault(e)
                continue
            self._pop_ready(out)
        return _request_columns(out)

    def _broker_fault(self, e: ev.BrokerCrashed | ev.BrokerRestarted) -> None:
        """A broker crashed or restarted: requests to a down broker get no answer."""
        if type(e) is ev.BrokerCrashed:
            self._down.add(e.broker)
        else:
            self._down.discard(e.broker)

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
        """Every request row left, answered or not, as columns."""
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
batch_header = batch_summary   # (base, last, pid, epoch, transactional, control, LogAppendTime)


_KEY, _VALUE = operator.itemgetter("key"), operator.itemgetter("value")
_TIMESTAMP, _HEADERS = operator.itemgetter("timestamp"), operator.itemgetter("headers")
_OFFSET = operator.itemgetter("offset")


def log_rows(topic: str, log, first: int = 0) -> tuple[pa.RecordBatch | None, pa.RecordBatch | None]:
    """Rows for `log`'s batches from index `first` of log.batches on: one batch row each (with its
    log.batch_seqs entry), and a topic row per data record, read from the batch's bytes (control
    batches give no topic rows, as in Spark's Kafka source)."""
    batches, seqs = log.batches[first:], log.batch_seqs[first:]
    if not batches:
        return None, None
    b_base, b_last, b_pid, b_epoch, b_txn, b_ctl = [], [], [], [], [], []
    keys, values, offsets, stamps, ts_types, h_counts, h_keys, h_values = [], [], [], [], [], [], [], []
    for raw in batches:
        base, last, pid, epoch, txn, control, lat = batch_header(raw)
        b_base.append(base), b_last.append(last), b_pid.append(pid), b_epoch.append(epoch)
        b_txn.append(txn), b_ctl.append(control)
        if control:
            continue
        recs = read_batches(raw, verify_crc=False)[0]["records"]
        # column by column (itemgetter, in C): a long run writes millions of records
        keys += map(_KEY, recs)
        values += map(_VALUE, recs)
        # each record's own offset: a batch the log cleaner rewrote has gaps (kipviz.broker.cleaner)
        offsets += range(base, last + 1) if len(recs) == last - base + 1 else map(_OFFSET, recs)
        stamps += map(_TIMESTAMP, recs)
        ts_types += [1 if lat else 0] * len(recs)
        headers = list(map(_HEADERS, recs))
        h_counts += map(len, headers)
        for hk, hv in itertools.chain.from_iterable(headers):
            h_keys.append(hk if type(hk) is str else bytes(hk).decode("utf-8", "replace"))
            h_values.append(hv)
    n = len(b_base)
    batch_rows = pa.RecordBatch.from_arrays(
        [pa.array([topic] * n, pa.string()), pa.array([log.partition] * n, pa.int32()),
         pa.array(b_base, pa.int64()), pa.array(b_last, pa.int64()), pa.array(b_pid, pa.int64()),
         pa.array(b_epoch, pa.int32()), pa.array(b_txn, pa.bool_()), pa.array(b_ctl, pa.bool_()),
         pa.array([bytes(b) for b in batches], pa.binary()), pa.array(seqs, pa.int64())],
        schema=BATCH)
    if not offsets:
        return batch_rows, None
    m = len(offsets)
    h_offsets = np.concatenate(([0], np.cumsum(h_counts)))
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
