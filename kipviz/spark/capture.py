"""A capture too big for one process, read by Spark into the request log `kipviz analyze` reads
(docs/explain.md, "The Spark path").

    capture_to_requests(spark, "big.pcap", "out/big", ports=(9092,))   # then: kipviz analyze out/big

1. The driver walks the file's record headers only (split_capture): where each packet record
   lies, numbered as Wireshark numbers them, cut into pieces of about equal bytes at record
   boundaries. No packet is parsed and no Kafka is decoded here.
2. Spark's Python data source "kipviz-pcap" reads one piece per task: the file's header blocks
   and the piece's records make a small capture of their own, which kipviz.capture's
   tcp_segments parses; each TCP segment on the ports becomes a row keyed by its connection
   (both endpoints, either direction). What does not parse becomes an `error` row.
3. The rows are repartitioned by connection key, so each connection is whole in one task; the
   task puts its rows in packet order, reassembles each connection with kipviz.capture's Tracker
   and cuts and pairs its exchanges with exchanges_of, exactly as read_pcap does.
4. The exchanges are written as a run directory: requests.parquet (the request log of
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
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from dpkt import pcapng
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

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

__all__ = ["capture_to_requests", "split_capture", "Piece", "CaptureSource", "NAME", "SEGMENTS_DDL",
           "EXCHANGES", "exchange_rows", "write_run", "check_inputs"]

NAME = "kipviz-pcap"
PIECE_BYTES = 8 << 20           # a task's share of the file when `partitions` is not given
BATCH_ROWS = 4096
# one row per TCP segment on the ports (kipviz.capture._packets.Segment), or per problem (error)
SEGMENTS_DDL = ("conn string, packet bigint, ts double, src string, sport int, dst string, dport int, "
                "seq bigint, ack bigint, flags int, payload binary, missing bigint, error string")
_SEG_FIELDS = ("packet", "ts", "src", "sport", "dst", "dport", "seq", "ack", "flags", "payload", "missing")
_SEGMENTS = pa.schema([("conn", pa.string()), ("packet", pa.int64()), ("ts", pa.float64()), ("src", pa.string()),
                       ("sport", pa.int32()), ("dst", pa.string()), ("dport", pa.int32()), ("seq", pa.int64()),
                       ("ack", pa.int64()), ("flags", pa.int32()), ("payload", pa.binary()),
                       ("missing", pa.int64()), ("error", pa.string())])
# exchanges.parquet: what the request log has no column for; `seq` joins the two
EXCHANGES = pa.schema([("seq", pa.int64()), ("kind", pa.string()), ("client", pa.string()), ("server", pa.string()),
                       ("connection", pa.int64()), ("api", pa.string()), ("correlation_id", pa.int32()),
                       ("time", pa.float64()), ("response_time", pa.float64()), ("latency_ms", pa.float64()),
                       ("request_packet", pa.int64()), ("response_packet", pa.int64()),
                       ("errors", pa.list_(pa.string()))])
# what a task hands back: both files' columns (the broker number is given when they are written)
_ROWS = pa.schema([f for f in schemas.REQUESTS if f.name != "broker"]
                  + [f for f in EXCHANGES if f.name not in schemas.REQUESTS.names])


# ---- 1. the driver: where the records are --------------------------------------------------------
@dataclass
class Piece(InputPartition):
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


# ---- 2. Spark's data source: TCP segments keyed by connection ------------------------------------
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
    shift = piece.first_packet - 1
    for s in tcp_segments(data, errors, Tracker(ports).wanted):
        s.packet += shift
        cols["conn"].append(_conn_key(s))
        for f in _SEG_FIELDS:
            cols[f].append(getattr(s, f))
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


class _PieceReader(DataSourceReader):
    def __init__(self, options):
        self.path = options["path"]
        self.ports = json.loads(options.get("ports", "null"))
        self.pieces = [Piece(*p) for p in json.loads(options["pieces"])]

    def partitions(self):
        """One input partition per piece of the file."""
        return self.pieces

    def read(self, partition):
        """The piece's segments and problems, as Arrow batches."""
        yield from piece_segments(self.path, partition, self.ports)


class CaptureSource(DataSource):
    """spark.read.format("kipviz-pcap").option("path", P).option("pieces", json).option("ports", json):
    the TCP segments of a capture's pieces (split_capture), SEGMENTS_DDL."""

    @classmethod
    def name(cls):
        """The format name."""
        return NAME

    def schema(self):
        """SEGMENTS_DDL."""
        return SEGMENTS_DDL

    def reader(self, schema):
        """Reads the pieces named in the options."""
        return _PieceReader(self.options)


# ---- 3. each connection whole: reassembly and exchanges -----------------------------------------
def _first_packet(conn) -> int:
    firsts = [d.segments[0].packet for d in (conn.c2s, conn.s2c) if d.segments]
    return min(firsts) if firsts else 0


def exchange_rows(exchanges, connection=None, places: dict | None = None) -> dict[str, list]:
    """Columns of _ROWS for read_pcap-style exchanges: the request log's (error codes are the
    non-zero *ErrorCode values of the response, as the broker model's ResponseSent events carry
    them) and exchanges.parquet's. seq orders them as the capture does: the first packet of the
    request (else of the response) times 65536, plus the frame's place among those that start in
    that packet. `connection` (the first packet of each exchange's connection) defaults to each
    exchange's own connection number; `places` carries the frame counts per packet from one call
    to the next."""
    cols: dict[str, list] = {f: [] for f in _ROWS.names}
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
    return pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in _ROWS], schema=_ROWS)


def _problem_rows(messages: list[str]) -> dict[str, list]:
    cols = {f: [None] * len(messages) for f in _ROWS.names}
    cols.update(kind=["capture-error"] * len(messages), errors=[[m] for m in messages],
                error_codes=[[]] * len(messages), error_names=[[]] * len(messages),
                request=[b""] * len(messages), response=[b""] * len(messages))
    return cols


def connection_exchanges(batches, ports):
    """mapInArrow: one task's segment rows (whole connections) -> the exchanges' rows (_ROWS)."""
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
    for fields in zip(*(segs[f].to_pylist() for f in _SEG_FIELDS), strict=True):
        tracker.add(Segment(*fields))
    del segs
    for conn in tracker.all:
        first = _first_packet(conn)
        exs, _, _ = exchanges_of(conn)
        conn.c2s.segments, conn.s2c.segments = [], []
        places: dict[int, int] = {}
        for i in range(0, len(exs), BATCH_ROWS):
            yield _rows_batch(exchange_rows(exs[i:i + BATCH_ROWS], first, places))


# ---- 4. the run directory ------------------------------------------------------------------------
def write_run(out, rows, meta: dict) -> dict:
    """requests.parquet and exchanges.parquet from `rows` (a pyarrow Table or dataset of _ROWS'
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
            b = pa.Table.from_batches([b]).select(_ROWS.names).cast(_ROWS).combine_chunks().to_batches()[0] \
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


def check_inputs(pcap_path, out_dir) -> tuple[str, list[Piece]]:
    """The capture's absolute path and its pieces (split_capture), refusing before any Spark work
    a file that is not a capture (CaptureError) and an `out_dir` that is not new or empty."""
    path = os.path.abspath(os.fspath(pcap_path))
    if not os.path.isfile(path):
        raise CaptureError(f"cannot read {pcap_path}: no such file")
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise KipvizError(f"{out}: already exists and is not an empty directory; give a new one")
    return path, split_capture(path)


def capture_to_requests(spark, pcap_path, out_dir, *, ports=(9092,), partitions=None) -> dict:
    """Read the capture with Spark (see the module docstring) and write `out_dir` (new or empty) as
    a run directory for kipviz analyze; returns its manifest. `partitions`: how many pieces the
    file is cut into (default one per 8 MB) and how many tasks decode connections (default:
    Spark's default parallelism times 4, at least the pieces, at most 64). `pcap_path` must be a
    path every executor can read. Not a capture: CaptureError; damaged packets, streams and
    frames: rows of exchanges.parquet with their errors."""
    path, pieces = check_inputs(pcap_path, out_dir)
    if partitions:
        pieces = split_capture(path, partitions)
    ports = None if ports is None else sorted(int(p) for p in ports)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spark.dataSource.register(CaptureSource)
    segs = (spark.read.format(NAME).option("path", path).option("ports", json.dumps(ports))
            .option("pieces", json.dumps([[p.start, p.end, p.first_packet, p.head] for p in pieces])).load())
    tasks = partitions or min(max(4 * spark.sparkContext.defaultParallelism, len(pieces)), 64)
    rows = segs.repartition(tasks, "conn").mapInArrow(lambda it: connection_exchanges(it, ports),
                                                      schemas.spark_schema(_ROWS))
    staging = out / ".staging"
    try:
        rows.write.option("compression", "none").parquet(str(staging.absolute()))
        import pyarrow.dataset as ds
        meta = {"scenario": f"capture {Path(path).name}", "status": "capture", "capture": path,
                "ports": ports, "pieces": len(pieces)}
        return write_run(out, ds.dataset(str(staging), format="parquet"), meta)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
