"""A capture too big for one process, read by Spark into the request log `kipviz analyze` reads
(docs/explain.md, "The Spark path").

    capture_to_requests(spark, "big.pcap", "out/big", ports=(9092,))   # then: kipviz analyze out/big

1. The driver walks the file's record headers only (split_capture): where each packet record
   lies, numbered as Wireshark numbers them, cut into pieces of about equal bytes at record
   boundaries. No packet is parsed and no Kafka is decoded here.
2. Spark reads one piece per task (mapInArrow over the piece numbers: Spark's Python data source
   API started planning workers that cost seconds per read on 2 cores). The file's header blocks
   and the piece's records make a small capture of their own, which kipviz.capture's
   tcp_segments parses; each TCP segment on the ports becomes a row keyed by its connection (both
   endpoints, either direction) that names where its payload lies in the file. What does not
   parse becomes an `error` row.
3. The rows are repartitioned by connection key, so each connection is whole in one task; the
   task puts its rows in packet order, reads the payloads from the file, reassembles each
   connection with kipviz.capture's Tracker and cuts and pairs its exchanges with exchanges_of,
   exactly as read_pcap does. It writes its exchanges' rows as an Arrow file in OUT_DIR/.staging
   (so OUT_DIR too must be a path every executor reaches) and hands Spark the file's name.
4. The driver writes the run directory from those files: requests.parquet (the request log of
   kipviz/sampledata, schemas.REQUESTS), exchanges.parquet (one row per exchange or problem:
   kind, endpoints, times, latency, errors), empty events and internal-topic files (a capture
   holds no log contents) and manifest.json, which kipviz.spark.readers.read_samples reads."""
from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from dpkt import pcapng

from ..capture import CaptureError, Tracker, exchanges_of, tcp_segments
from ..capture._packets import PCAP_MAGICS, PCAPNG_MAGIC, Segment, read_packets
from ..errors import KipvizError
from ..sampledata.files import new_dirs
from ..sampledata.parquet import TableWriter
from ..sampledata.schema import FORMAT
from ..sampledata.writer import dataset_stem
from ..schema.error_codes import error_codes, name_of
from ..schema.topics import INTERNAL_TOPICS
from . import schemas

__all__ = ["capture_to_requests", "split_capture", "Piece", "read_pieces", "SEGMENTS_DDL",
           "EXCHANGES", "exchange_rows", "write_run", "check_inputs", "write_part", "PARTS_DDL", "by_task", "ROWS"]

# a task's share of the file when `partitions` is not given: at least two pieces per core, and at
# most this many bytes each (a PySpark task costs ~0.1 s of its own on 2 cores: 8 MB pieces, whose
# parse takes 0.16 s, spent more than half the first stage on that)
PIECE_BYTES = 64 << 20
BATCH_ROWS = 4096
# one row per TCP segment on the ports (kipviz.capture._packets.Segment), or per problem (error).
# The payload travels as its place in the file (`at`, `size`): the shuffle moves a few dozen bytes
# per segment, and the task that reassembles the connection reads the bytes itself. `payload`
# holds them only where no place was found (never, for a payload tcp_segments cut from the piece).
SEGMENTS_DDL = ("conn string, packet bigint, ts double, src string, sport int, dst string, dport int, "
                "seq bigint, ack bigint, flags int, at bigint, size int, payload binary, missing bigint, "
                "error string")
_SEG_FIELDS = ("packet", "ts", "src", "sport", "dst", "dport", "seq", "ack", "flags", "payload", "missing")
_SEGMENTS = pa.schema([("conn", pa.string()), ("packet", pa.int64()), ("ts", pa.float64()), ("src", pa.string()),
                       ("sport", pa.int32()), ("dst", pa.string()), ("dport", pa.int32()), ("seq", pa.int64()),
                       ("ack", pa.int64()), ("flags", pa.int32()), ("at", pa.int64()), ("size", pa.int32()),
                       ("payload", pa.binary()), ("missing", pa.int64()), ("error", pa.string())])
# exchanges.parquet: what the request log has no column for; `seq` joins the two
EXCHANGES = pa.schema([("seq", pa.int64()), ("kind", pa.string()), ("client", pa.string()), ("server", pa.string()),
                       ("connection", pa.int64()), ("api", pa.string()), ("correlation_id", pa.int32()),
                       ("time", pa.float64()), ("response_time", pa.float64()), ("latency_ms", pa.float64()),
                       ("request_packet", pa.int64()), ("response_packet", pa.int64()),
                       ("errors", pa.list_(pa.string()))])
# what a task writes: both files' columns (the broker number is given when they are written)
ROWS = pa.schema([f for f in schemas.REQUESTS if f.name != "broker"]
                  + [f for f in EXCHANGES if f.name not in schemas.REQUESTS.names])


# ---- 1. the driver: where the records are --------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """One task's share of the file: bytes [start, end) (whole records), the number of their first
    packet, and the (offset, length) spans of the header blocks that come before them (the pcap
    file header; a pcapng section's header and interface blocks)."""
    start: int
    end: int
    first_packet: int
    head: tuple


def split_capture(path, pieces: int | None = None) -> list[Piece]:
    """The file cut into about `pieces` pieces of whole records (by default one per PIECE_BYTES).
    A file that is not a capture raises CaptureError, as read_pcap does; a damaged record ends the
    walk there, and the last piece takes the rest of the file (its task reports the damage)."""
    size = os.path.getsize(path)
    target = max(size // pieces, 1) if pieces else PIECE_BYTES
    with open(path, "rb") as fh:
        head = fh.read(24)
        if head[:4] not in PCAP_MAGICS and head[:4] != PCAPNG_MAGIC or size < 24:
            list(read_packets(head, []))          # CaptureError: read_pcap's words for what the file is
            return [Piece(0, size, 1, ())]
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            walk = _pcap_records if head[:4] in PCAP_MAGICS else _pcapng_records
            return walk(mm, size, target)


def _pcap_records(mm, size: int, target: int) -> list[Piece]:
    list(read_packets(mm[:24], []))               # a damaged file header: CaptureError, as read_pcap
    # the record header (ts_sec, ts_frac, incl_len, orig_len) in the file's byte order
    order = "<" if mm[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    incl = struct.Struct(order + "I")
    out, start, first, pos, n = [], 24, 1, 24, 0
    while pos + 16 <= size:
        nxt = pos + 16 + incl.unpack_from(mm, pos + 8)[0]
        if nxt > size:
            break
        pos, n = nxt, n + 1
        if pos - start >= target and pos < size:
            out.append(Piece(start, pos, first, ((0, 24),)))
            start, first = pos, n + 1
    out.append(Piece(start, size, first, ((0, 24),)))
    return out


_PACKET_BLOCKS = {pcapng.PCAPNG_BT_EPB, pcapng.PCAPNG_BT_PB, pcapng.PCAPNG_BT_SPB}


def _pcapng_records(mm, size: int, target: int) -> list[Piece]:
    """Blocks as kipviz.capture._packets walks them: a section header sets the byte order; packet
    blocks are numbered. (A packet block too damaged to parse is counted here but not there, so
    packet numbers after one may differ by one from read_pcap's.)"""
    out, start, first, pos, n, le = [], 0, 1, 0, 0, True
    head: list[tuple[int, int]] = []
    at_start: tuple = ()
    while pos + 12 <= size:
        if mm[pos:pos + 4] == PCAPNG_MAGIC:
            bom = mm[pos + 8:pos + 12]
            if bom not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
                break
            le = bom == b"\x4d\x3c\x2b\x1a"
        btype, blen = struct.unpack_from("<II" if le else ">II", mm, pos)
        if blen < 12 or blen % 4 or pos + blen > size:
            break
        if btype == pcapng.PCAPNG_BT_SHB:
            head = [(pos, blen)]
        elif btype == pcapng.PCAPNG_BT_IDB:
            head.append((pos, blen))
        elif btype in _PACKET_BLOCKS:
            n += 1
        pos += blen
        if pos - start >= target and pos < size:
            out.append(Piece(start, pos, first, at_start))
            start, first, at_start = pos, n + 1, tuple(head)
    out.append(Piece(start, size, first, at_start))
    return out


# ---- 2. Spark, one task per piece: TCP segments keyed by connection ---------------------------
def _conn_key(s: Segment) -> str:
    a, b = (s.src, s.sport), (s.dst, s.dport)
    lo, hi = (a, b) if a <= b else (b, a)
    return f"{lo[0]} {lo[1]} {hi[0]} {hi[1]}"


class _Where:
    """Packet numbers and byte offsets of a piece's own small capture, told as the file's."""

    def __init__(self, piece: Piece):
        self.piece = piece
        self.spans, pos = [], 0
        for off, length in piece.head:
            self.spans.append((pos, off, length))
            pos += length
        self.head_len = pos

    def byte(self, p: int) -> int:
        for at, off, length in self.spans:
            if at <= p < at + length:
                return off + p - at
        return self.piece.start + p - self.head_len

    def text(self, msg: str) -> str:
        msg = re.sub(r"\bpacket (\d+)", lambda m: f"packet {self.piece.first_packet + int(m[1]) - 1}", msg)
        return re.sub(r"\bbyte (\d+)", lambda m: f"byte {self.byte(int(m[1]))}", msg)


def piece_segments(path: str, piece: Piece, ports) -> list[pa.RecordBatch]:
    """The TCP segments on `ports` in one piece of the file, as rows of SEGMENTS_DDL."""
    with open(path, "rb") as fh:
        parts = []
        for off, length in piece.head:
            fh.seek(off)
            parts.append(fh.read(length))
        fh.seek(piece.start)
        parts.append(fh.read(piece.end - piece.start))
    data = b"".join(parts)
    del parts
    where, errors, out = _Where(piece), [], []
    cols: dict[str, list] = {f: [] for f in _SEGMENTS.names}
    shift, cursor = piece.first_packet - 1, where.head_len
    for s in tcp_segments(data, errors, Tracker(ports).wanted):
        s.packet += shift
        cols["conn"].append(_conn_key(s))
        # packets come in file order, so each payload lies after the one before: any place
        # holding the same bytes will do
        at = data.find(s.payload, cursor) if s.payload else -1
        if at >= 0:
            cursor = at + len(s.payload)
            s.payload = None
        for f in _SEG_FIELDS:
            cols[f].append(getattr(s, f))
        cols["at"].append(piece.start + at - where.head_len if at >= 0 else None)
        cols["size"].append(cursor - at if at >= 0 else None)
        cols["error"].append(None)
        if len(cols["conn"]) >= BATCH_ROWS:
            out.append(_segment_batch(cols))
            cols = {f: [] for f in _SEGMENTS.names}
    for msg in errors:
        for f in _SEGMENTS.names:
            cols[f].append(None)
        cols["packet"][-1] = piece.first_packet
        cols["error"][-1] = where.text(msg)
    if cols["packet"]:
        out.append(_segment_batch(cols))
    return out


def _segment_batch(cols: dict) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in _SEGMENTS], schema=_SEGMENTS)


def read_pieces(batches, path: str, pieces: list[Piece], ports):
    """mapInArrow over piece numbers (spark.range): each piece's segment rows."""
    for b in batches:
        for i in b["id"].to_pylist():
            yield from piece_segments(path, pieces[i], ports)


# ---- 3. each connection whole: reassembly and exchanges -----------------------------------------
def _first_packet(conn) -> int:
    firsts = [d.segments[0].packet for d in (conn.c2s, conn.s2c) if d.segments]
    return min(firsts) if firsts else 0


def exchange_rows(exchanges, connection=None, places: dict | None = None) -> dict[str, list]:
    """Columns of ROWS for read_pcap-style exchanges: the request log's (error codes are the
    non-zero *ErrorCode values of the response, as the broker model's ResponseSent events carry
    them) and exchanges.parquet's. seq orders them as the capture does: the first packet of the
    request (else of the response) times 65536, plus the frame's place among those that start in
    that packet. `connection` (the first packet of each exchange's connection) defaults to each
    exchange's own connection number; `places` carries the frame counts per packet from one call
    to the next."""
    cols: dict[str, list] = {f: [] for f in ROWS.names}
    places = {} if places is None else places
    for ex in exchanges:
        first = (ex["request_packets"] or ex["response_packets"] or (connection or 0,))[0]
        k = places[first] = places.get(first, -1) + 1
        resp = ex.get("response")
        codes = [c for c in error_codes(resp["body"]) if c] if resp else []
        t = ex["time"] if ex["time"] is not None else ex["response_time"]
        row = {"seq": (first << 16) | k, "time_ms": None if t is None else int(round(t * 1000)),
               "client": ex["client"], "api": ex["api"], "api_key": ex["api_key"], "version": ex["version"],
               "correlation_id": ex["correlation_id"], "error_codes": codes,
               "error_names": [name_of(c) for c in codes], "request": ex["request_frame"] or b"",
               "response": ex["response_frame"] or b"", "kind": ex["kind"], "server": ex["server"],
               "connection": connection if connection is not None else ex["connection"],
               "time": ex["time"], "response_time": ex["response_time"], "latency_ms": ex["latency_ms"],
               "request_packet": (ex["request_packets"] or (None,))[0],
               "response_packet": (ex["response_packets"] or (None,))[0], "errors": list(ex["errors"])}
        for f, v in row.items():
            cols[f].append(v)
    return cols


def _rows_batch(cols: dict) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in ROWS], schema=ROWS)


def _problem_rows(messages: list[str]) -> dict[str, list]:
    cols = {f: [None] * len(messages) for f in ROWS.names}
    cols.update(kind=["capture-error"] * len(messages), errors=[[m] for m in messages],
                error_codes=[[]] * len(messages), error_names=[[]] * len(messages),
                request=[b""] * len(messages), response=[b""] * len(messages))
    return cols


def _payloads(path: str, segs: pa.Table) -> list[bytes]:
    """Each segment's payload: its bytes, read from the file where the row says they are."""
    inline = segs["payload"].to_pylist()
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return [mm[at:at + n] if at is not None else (p or b"")
                for at, n, p in zip(segs["at"].to_pylist(), segs["size"].to_pylist(), inline, strict=True)]


def connection_exchanges(batches, path: str, ports):
    """One task's segment rows (whole connections) -> batches of the exchanges' rows (ROWS)."""
    rows = [b for b in batches if b.num_rows]
    if not rows:
        return
    table = pa.Table.from_batches(rows)
    del rows
    bad = table.filter(pc.is_valid(table["error"]))
    if bad.num_rows:
        yield _rows_batch(_problem_rows(bad["error"].to_pylist()))
    segs = table.filter(pc.is_null(table["error"])).sort_by("packet")
    del table, bad
    tracker = Tracker(ports)
    columns = [_payloads(path, segs) if f == "payload" else segs[f].to_pylist() for f in _SEG_FIELDS]
    for fields in zip(*columns, strict=True):
        tracker.add(Segment(*fields))
    del columns
    del segs
    for conn in tracker.all:
        first = _first_packet(conn)
        exs, _, _ = exchanges_of(conn)
        conn.c2s.segments, conn.s2c.segments = [], []
        places: dict[int, int] = {}
        for i in range(0, len(exs), BATCH_ROWS):
            yield _rows_batch(exchange_rows(exs[i:i + BATCH_ROWS], first, places))


PARTS_DDL = "part string, rows bigint"


def write_part(batches, path: str, ports, staging: str):
    """mapInArrow: a task's exchanges written by the task itself as one Arrow file in `staging`
    (the rows hold whole frames; handing them to the JVM and back would copy every byte twice
    more); Spark gets one row naming the file."""
    import uuid
    name = os.path.join(staging, f"part-{uuid.uuid4().hex}.arrow")
    n = 0
    with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, ROWS) as w:
        for b in connection_exchanges(batches, path, ports):
            w.write_batch(b)
            n += b.num_rows
    yield pa.RecordBatch.from_pylist([{"part": name, "rows": n}], schema=pa.schema([("part", pa.string()),
                                                                                    ("rows", pa.int64())]))


# ---- 4. the run directory ------------------------------------------------------------------------
def write_run(out, rows, meta: dict) -> dict:
    """requests.parquet and exchanges.parquet from `rows` (a pyarrow Table or dataset of ROWS'
    columns; the broker number of each server address is its place in order of first exchange),
    the empty events and internal-topic files, and manifest.json. Returns the manifest."""
    import pyarrow.parquet as pq
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ends = rows.to_table(columns=["server", "seq"]) if hasattr(rows, "to_table") else rows.select(["server", "seq"])
    firsts = ends.filter(pc.is_valid(ends["server"])).group_by("server").aggregate([("seq", "min")])
    servers = {s: i for i, s in enumerate(firsts.sort_by("seq_min")["server"].to_pylist())}
    req = TableWriter(out / "requests.parquet", "request")
    n = 0
    with pq.ParquetWriter(out / "exchanges.parquet", EXCHANGES, compression="zstd") as ex:
        for b in rows.to_batches():
            b = pa.Table.from_batches([b]).select(ROWS.names).cast(ROWS).combine_chunks().to_batches()[0] \
                if b.num_rows else None
            if b is None:
                continue
            n += b.num_rows
            ex.write_batch(pa.RecordBatch.from_arrays([b[f.name] for f in EXCHANGES], schema=EXCHANGES))
            logged = b.filter(pc.not_equal(b["kind"], "capture-error"))
            broker = pa.array([servers.get(s) for s in logged["server"].to_pylist()], pa.int32())
            req.write_batch(pa.RecordBatch.from_arrays(
                [broker if f.name == "broker" else logged[f.name] for f in schemas.REQUESTS],
                schema=schemas.REQUESTS))
    rows = {"requests.parquet": req.close(), "exchanges.parquet": n}
    TableWriter(out / "events.parquet", "event").close()
    rows["events.parquet"] = 0
    topics = []
    for name in INTERNAL_TOPICS:
        sub, stem = dataset_stem(name, "", True)
        paths = {"dataset": f"topics/{sub}{stem}.parquet", "batches": f"batches/{sub}{stem}.parquet"}
        for kind, rel in (("topic", paths["dataset"]), ("batch", paths["batches"])):
            new_dirs(out, Path(rel).parent)
            TableWriter(out / rel, kind).close()
            rows[rel] = 0
        topics.append({"name": name, "internal": True, "partitions": 0, "deleted": False, **paths})
    manifest = {"format": FORMAT, **meta, "topics": topics, "brokers": servers,
                "datasets": {rel: {"rows": n} for rel, n in sorted(rows.items())}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


@contextmanager
def _conf(spark, key: str, value: str):
    was = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.unset(key) if was is None else spark.conf.set(key, was)


def check_inputs(pcap_path, out_dir) -> str:
    """The capture's absolute path, refusing before any Spark work a file that is not a capture
    (CaptureError, in read_pcap's words) and an `out_dir` that is not new or empty."""
    path = os.path.abspath(os.fspath(pcap_path))
    if not os.path.isfile(path):
        raise CaptureError(f"cannot read {pcap_path}: no such file")
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise KipvizError(f"{out}: already exists and is not an empty directory; give a new one")
    with open(path, "rb") as fh:
        head = fh.read(24)
    if head[:4] != PCAPNG_MAGIC:
        list(read_packets(head, []))             # not a capture, or a damaged pcap header
    return path


def by_task(spark, segs, tasks: int):
    """The segment rows repartitioned so that each connection is whole in one of `tasks` tasks,
    the connections spread by their payload bytes (largest first, each to the task with the
    fewest bytes so far), where hashing could put the two big connections of a capture in one
    task. Spark places a row by pmod(hash(key), tasks) (its HashPartitioning): each task gets a
    key that hashes to its own number. Problem rows (no connection) go to the first task."""
    from pyspark.sql import functions as F
    sizes = sorted(((r["conn"], r["bytes"] or 0) for r in segs.filter(F.col("conn").isNotNull())
                    .groupBy("conn").agg(F.sum("size").alias("bytes")).collect()), key=lambda x: (-x[1], x[0]))
    tasks = max(1, min(tasks, len(sizes)))
    keys = {}
    for r in spark.range(64 * tasks).select("id", F.expr(f"pmod(hash(id), {tasks})").alias("p")).collect():
        keys.setdefault(r["p"], r["id"])
    load, key_of = [0] * tasks, {}
    for conn, n in sizes:
        t = load.index(min(load))
        load[t] += n + 1
        key_of[conn] = keys[t]
    table = spark.createDataFrame(list(key_of.items()) or [("", keys[0])], "conn string, task bigint")
    return (segs.join(F.broadcast(table), "conn", "left").fillna({"task": keys[0]})
            .repartition(tasks, "task").drop("task"))


def capture_to_requests(spark, pcap_path, out_dir, *, ports=(9092,), partitions=None) -> dict:
    """Read the capture with Spark (see the module docstring) and write `out_dir` (new or empty) as
    a run directory for kipviz analyze; returns its manifest. `partitions`: how many pieces the
    file is cut into (default: two per core, at most PIECE_BYTES each) and how many tasks decode
    connections (default: two per core; see by_task). `pcap_path` must be a
    path every executor can read. Not a capture: CaptureError; damaged packets, streams and
    frames: rows of exchanges.parquet with their errors."""
    path = check_inputs(pcap_path, out_dir)
    cores = spark.sparkContext.defaultParallelism
    pieces = split_capture(path, partitions or max(2 * cores, -(-os.path.getsize(path) // PIECE_BYTES)))
    ports = None if ports is None else sorted(int(p) for p in ports)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    segs = spark.range(0, len(pieces), 1, len(pieces)).mapInArrow(
        lambda it: read_pieces(it, path, pieces, ports), SEGMENTS_DDL).persist()
    staging = str((out / ".staging").absolute())
    os.mkdir(staging)
    try:
        # the segment rows are kept for two passes (their bytes per connection, then the shuffle);
        # compressing that cache took longer than the pass it saves (322 MB capture: 1.6 s)
        with _conf(spark, "spark.sql.inMemoryColumnarStorage.compressed", "false"):
            tasks = by_task(spark, segs, partitions or 2 * cores)
        parts = tasks.mapInArrow(
            lambda it: write_part(it, path, ports, staging), PARTS_DDL).collect()
        import pyarrow.dataset as ds
        meta = {"scenario": f"capture {Path(path).name}", "status": "capture", "capture": path,
                "ports": ports, "pieces": len(pieces)}
        return write_run(out, ds.dataset([r["part"] for r in parts], format="ipc"), meta)
    finally:
        segs.unpersist()
        shutil.rmtree(staging, ignore_errors=True)
