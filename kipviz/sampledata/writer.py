"""A run directory in the "kipviz-sample/2" format, written while the run goes on.

    w = RunWriter("sample_data/regular_eos")
    w.drain(cluster.take_events(), cluster, release={...})   # as often as you like (one chunk)
    manifest = w.close(cluster, meta)          # topics/*.parquet, batches/*.parquet, manifest.json

A chunk is its events (events.parquet, requests.parquet), then the batches every partition log
appended since the last chunk, then an optional release of the written log prefixes. Events and
requests stream straight into their files (rows come in seq order). A topic's file is sorted by
(partition, offset) but partitions grow side by side, so each partition log's rows go to a
temporary Arrow stream first (DIR/.parts) and close() concatenates them partition by partition.
Large chunks have their rows built in a forked child while the run goes on
(kipviz.sampledata.offload), and from the first large chunk on the files are written by a process
of their own (kipviz.sampledata.filewriter); the bytes written are the same."""
from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..broker import retention
from ..broker.handlers.metadata import topic_name_problem
from ..errors import KipvizError
from ..uuids import to_kafka_str
from . import files
from . import offload as offload_mod
from .filewriter import STREAMS, FileWriterProcess, write_part
from .parquet import TableWriter, record_batch, sha256
from .rows import RequestLog, event_columns, log_rows
from .schema import BATCH, EVENT, FORMAT, REQUEST, TOPIC

OFFLOAD_EVENTS = 50_000      # chunks of at least this many events get their columns built in a child
OUTPUTS = ("topics", "batches", "events.parquet", "requests.parquet", "manifest.json", ".parts")


@dataclass
class _LogState:
    key: str                 # "<topic id>-<partition>": file stem of the parts
    batches_seen: int = 0    # batches written so far (absolute count)
    topic_part: object = None
    batch_part: object = None


def prepare_dir(out: Path, private: bool = False) -> None:
    """Make `out` ready: created if missing; a previous sample there is replaced (only the kit's
    own files, OUTPUTS; links are removed, never followed); any other non-empty directory is
    refused (nothing of the user's is deleted). private: the directory becomes 0700."""
    if out.exists() and not out.is_dir():
        raise KipvizError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not (out / "manifest.json").is_file() and not (out / ".parts").is_dir():
            raise KipvizError(f"{out} is not empty and holds no kipviz sample (no manifest.json): "
                              "give a new or empty directory")
        if private:
            out.chmod(0o700)
        for name in OUTPUTS:
            files.remove(out / name)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        out.mkdir(0o700 if private else 0o777)
    except FileExistsError:
        if private:
            out.chmod(0o700)


_SPELLED = str.maketrans({"_": "u", ".": "d"})
MAX_STEM = 255 - len(".parquet")       # a file name is at most 255 bytes (ext4, APFS, NTFS)


def dataset_stem(name: str, b64: str, live: bool, *, by_id: bool = False) -> tuple[str, str]:
    """(sub-directory, file stem) of a topic's files; two topics of a run never share one.

    Spark (and Hadoop) skip files whose names start with "_" or ".", so a name starting with one
    goes to internal/: a leading "__" is dropped (the internal topics: __consumer_offsets ->
    internal/consumer_offsets), any other leading run of them is spelled u/d before a "~"
    (_consumer_offsets -> internal/u~consumer_offsets, .transaction_state -> internal/d~transaction_state;
    "~" is not a legal topic character, so no legal name has that stem). A deleted topic goes to
    deleted/ as name@topic-id; a live one with by_id is name@topic-id where it is (RunWriter.close:
    names equal but for case, which one file name on macOS or Windows would hold). A name that is not a legal
    Kafka topic name (a notebook's create_topic takes any string) is its hash; a stem longer
    than a file name may be keeps its start and ends in "~~" and the name's hash. manifest.json
    maps every file back to its topic."""
    sub, stem = "", name
    if topic_name_problem(name) is not None:
        stem = "~~" + _digest(name)
    elif name.startswith(("_", ".")):
        rest = name.lstrip("_.")
        lead = name[:len(name) - len(rest)]
        sub, stem = "internal/", rest if lead == "__" and rest else f"{lead.translate(_SPELLED)}~{rest}"
    if not live or by_id:
        stem = f"{stem}@{b64}"
        sub = "deleted/" if not live else sub
    if len(stem.encode()) > MAX_STEM:
        stem = stem[:MAX_STEM - 18] + "~~" + _digest(f"{name}@{b64}" if not live or by_id else name)
    return sub, stem


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def event_batch(events) -> pa.RecordBatch:
    """Events as one Arrow record batch of the events table."""
    return record_batch(EVENT, event_columns(events))


_NO_TOPIC_ROWS = pa.RecordBatch.from_pylist([], schema=TOPIC)


def _chunk_rows(events, work, pairs=None, keep_pairs: bool = False) -> dict:
    """A chunk's rows (built in the offload child): its events, and per (topic name, log, index of
    its first new batch) of `work` one batch-rows and one topic-rows batch (empty when it has none);
    with `pairs` (a RequestLog) also its request rows, and with keep_pairs the RequestLog's state
    after them (a child's pairs go back to the generator)."""
    rows = [log_rows(*w) for w in work]
    out = {"events": (EVENT, [event_batch(events)] if events else []),
           "batches": (BATCH, [b for b, _ in rows]),
           "records": (TOPIC, [t if t is not None else _NO_TOPIC_ROWS for _, t in rows])}
    if pairs is not None:
        cols = pairs.add(events)
        out["requests"] = (REQUEST, [record_batch(REQUEST, cols)] if cols["seq"] else [])
        if keep_pairs:
            out["pairs"] = pickle.dumps(pairs, protocol=pickle.HIGHEST_PROTOCOL)
    return out


class RunWriter:
    """offload: build the rows of large chunks (drain()) in a forked child while the run goes on
    (kipviz.sampledata.offload), and from the first large chunk on write the files in a process of
    their own (kipviz.sampledata.filewriter); None = where available (Linux, more than one core).
    private: folders 0700 and files 0600 (a recording of live traffic). Every file is created new,
    never through a link (kipviz.sampledata.files)."""

    def __init__(self, out_dir, *, offload: bool | None = None, private: bool = False):
        self.out = Path(out_dir)
        self.private = private
        prepare_dir(self.out, private)
        self._parts = files.new_dirs(self.out, ".parts", private)
        self._tables: dict[str, TableWriter] | None = None     # in this process, opened at the first rows
        self._files: FileWriterProcess | None = None            # ... or in the writer process
        self._pairs = RequestLog()
        self._logs: dict[tuple, _LogState] = {}
        use = offload_mod.available() if offload is None else offload
        self._offload = offload_mod.Offload(self._parts) if use else None
        self._in_child: tuple | None = None        # (chunk number, its log states in order) of the running child

    # ---- streaming ---------------------------------------------------------------------------------------
    def drain(self, events, cluster=None, release: dict | None = None) -> None:
        """One chunk of a run: `events`, then with `cluster` the batches appended since the last
        chunk, for every partition of every topic ever created (deleted ones too), then with
        `release` ({(topic, partition): position of the slowest reader}) the release of the written
        part of each non-internal log (retention.release), up to the reader's position where there
        is one. A chunk of OFFLOAD_EVENTS events or more has its rows built in a child process while
        the run goes on; they are written at the next call (rows keep their order)."""
        self._collect()
        work, states = self._new_batches(cluster)
        if self._offload is not None and len(events) >= OFFLOAD_EVENTS:
            if self._files is None and self._tables is None:      # the first large chunk: nothing open yet
                self._files = FileWriterProcess(self.out, self._parts, self.private)
            pairs = self._pairs if self._files is not None else None
            if pairs is None:
                self._write_requests(self._pairs.add(events))
            n = self._offload.submit(lambda: _chunk_rows(events, work, pairs, pairs is not None))
            self._in_child = (n, states)
        else:
            self._write_rows(_chunk_rows(events, work, self._pairs), states)
        if cluster is not None and release is not None:      # a running child keeps its own copy
            for topic in cluster.topics.by_id.values():
                if topic.internal:
                    continue
                for log in topic.partitions:
                    upto = release.get((topic.name, log.partition), log.log_end_offset) \
                        if topic.deleted_at is None else log.log_end_offset
                    retention.release(log, upto)

    def _new_batches(self, cluster) -> tuple[list, list]:
        """(topic name, log, index of its first new batch) and the log's state, per log with new batches."""
        work, states = [], []
        if cluster is not None:
            for topic in cluster.topics.by_id.values():
                for log in topic.partitions:
                    st = self._logs.get((topic.topic_id, log.partition))
                    if st is None:
                        st = self._logs[(topic.topic_id, log.partition)] = _LogState(
                            f"{to_kafka_str(topic.topic_id)}-{log.partition}")
                    # log.batches_dropped counts every batch gone from the front (this writer's
                    # release and the broker's log retention, which spills to a recording first)
                    first = max(st.batches_seen - log.batches_dropped, 0)
                    st.batches_seen = max(st.batches_seen, log.batches_dropped)
                    new = len(log.batches) - first
                    if new:
                        work.append((topic.name, log, first))
                        states.append(st)
                        st.batches_seen += new
        return work, states

    def _collect(self) -> None:
        if self._offload is None or self._in_child is None:
            return
        (n, states), self._in_child = self._in_child, None
        rows = self._offload.collect(read=self._files is None)
        if self._files is None:
            self._write_rows(rows, states)
        else:                                      # the writer process reads the child's files
            self._pairs = pickle.loads(rows["pairs"])
            self._files.chunk(n, [st.key for st in states])

    def _write_rows(self, rows: dict, states: list) -> None:
        if self._files is not None:                # hand the rows built here to the writer process too
            n = self._offload.new_chunk()
            for name in ("events", "requests", "batches", "records"):
                offload_mod.write_ipc(self._offload.chunk_path(n, name + ".arrow"), *rows[name])
            self._files.chunk(n, [st.key for st in states])
            return
        for b in rows["events"][1]:
            self._table("events").write_batch(b)
        for b in rows.get("requests", (None, []))[1]:
            self._table("requests").write_batch(b)
        for st, b, t in zip(states, rows["batches"][1], rows["records"][1], strict=True):
            st.batch_part = write_part(self._parts, st.batch_part, st.key + ".batches", BATCH, b, self.private)
            st.topic_part = write_part(self._parts, st.topic_part, st.key + ".records", TOPIC, t, self.private)

    def _write_requests(self, columns: dict) -> None:
        if columns["seq"]:
            self._table("requests").write_batch(record_batch(REQUEST, columns))

    def _table(self, name: str) -> TableWriter:
        if self._tables is None:
            self._tables = {"events": TableWriter(self.out / "events.parquet", "event", self.private),
                            "requests": TableWriter(self.out / "requests.parquet", "request", self.private)}
        return self._tables[name]

    def abandon(self) -> None:
        """The run failed: stop a child still building rows and the writer process (the directory
        is left as it is)."""
        if self._offload is not None:
            self._offload.cancel()
        if self._files is not None:
            self._files.cancel()

    # ---- the end -------------------------------------------------------------------------------------------
    def close(self, cluster, meta: dict) -> dict:
        """Finish every file and write manifest.json; returns the manifest."""
        self.drain((), cluster)
        last = self._pairs.finish()
        if self._files is not None:
            self._write_rows({"events": (EVENT, []), "requests": (REQUEST, [record_batch(REQUEST, last)]),
                              "batches": (BATCH, []), "records": (TOPIC, [])}, [])
            rows = self._files.close()
            self._files = None
        else:
            self._write_requests(last)
            rows = {name: self._table(name).close() for name in STREAMS}
        datasets = {"events.parquet": rows["events"], "requests.parquet": rows["requests"]}
        topics, taken = [], set()
        for topic in cluster.topics.by_id.values():
            b64 = to_kafka_str(topic.topic_id)
            live = topic.deleted_at is None
            sub, stem = dataset_stem(topic.name, b64, live)
            if (sub + stem).casefold() in taken:       # "Orders" after "orders": one file on macOS or Windows
                sub, stem = dataset_stem(topic.name, b64, live, by_id=True)
            taken.add((sub + stem).casefold())
            paths = {"dataset": f"topics/{sub}{stem}.parquet", "batches": f"batches/{sub}{stem}.parquet"}
            for kind, rel, part in (("topic", paths["dataset"], "records"), ("batch", paths["batches"], "batches")):
                files.new_dirs(self.out, Path(rel).parent, self.private)
                w = TableWriter(self.out / rel, kind, self.private)
                for log in topic.partitions:
                    st = self._logs[(topic.topic_id, log.partition)]
                    writer = st.topic_part if part == "records" else st.batch_part
                    if writer is not None:
                        writer.close()
                    elif not (self._parts / f"{st.key}.{part}").is_file():     # (the writer process's)
                        continue
                    with pa.ipc.open_stream(str(self._parts / f"{st.key}.{part}")) as reader:
                        for rb in reader:
                            w.write_batch(rb)
                datasets[rel] = w.close()
            topics.append({"name": topic.name, "topic_id": str(topic.topic_id), "topic_id_b64": b64,
                           "partitions": len(topic.partitions), "internal": topic.internal, "deleted": not live,
                           "created_ms": topic.created_at, "deleted_ms": topic.deleted_at, **paths})
        shutil.rmtree(self._parts)
        topics.sort(key=lambda t: (t["deleted"], t["name"], t["created_ms"], t["topic_id"]))
        manifest = {"format": FORMAT, **meta, "topics": topics,
                    "datasets": {rel: {"rows": rows, "sha256": sha256(self.out / rel)}
                                 for rel, rows in sorted(datasets.items())}}
        with files.new_file(self.out / "manifest.json", self.private) as fh:
            fh.write((json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
        return manifest
