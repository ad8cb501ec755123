"""Exactly-once verification of a share-group read-process-write run, in Spark.

    res = verify_eos(src, group="sg", input_topic="in", output_topic="out")
    res.ok, res.violations (DataFrame), res.rows (list of dicts), print(res.summary())

The rules, the read-process-write convention (every output record names its input in the
"kipviz-source" header) and the words are kipviz.eos.check_share_eos's, and the two agree on the
same run (tests/test_spark_eos.py): per input record of `input_topic`,

  lost                 never ACKNOWLEDGED/ARCHIVED (acknowledged less than once)
  terminal-twice       terminal more than once (acknowledged more than once)
  duplicate-output     its output became visible in more than one attempt
  ack-without-output   ACKNOWLEDGED but no output visible to read_committed
  output-without-ack   output visible but never ACKNOWLEDGED
  duplicate-in-transaction  the same output record (key, value, headers) twice in one attempt
  unknown-source       visible output naming no known input record
  unattributed-output  visible output without the header

and the transaction log against the markers (kipviz.eos.txnlog, the same function kipviz.eos
runs): marker-missing, marker-mismatch, marker-unexpected, each naming the transaction
(`transaction`: transactional id, producer id, epoch, partition).

Facts about a batch come from its bytes (kipviz.spark.txnview.batch_headers). A batch or record
the verdict depends on that does not read -- an output or input batch, a marker, a
__transaction_state record, a missing or malformed dataset -- makes the verdict "cannot verify"
(res.unreadable; res.ok False), never "OK".

What it reads: the share-record StateChanged events of `group` (the run's events), the input
topic's records and batches (aborted / open input transactions need not be processed), and the
output topic's record batches, whose visibility is worked out per batch (kipviz.spark.txnview).
Everything is joins and aggregations over the whole run; only the duplicates -- usually none or a
handful -- go to the driver, where each is classified exactly as kipviz.eos does (the KIP-1289
at-least-once window pattern, cases 1/12/6), with the event log's MarkerUnreached events
(a COMMIT marker that never reached a non-co-located share-partition leader: a violation, never a
window). An event log without any typed Happened event cannot show that: res.unchecked says so."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..eos import checker
from ..eos.txnlog import check_markers
from ..errors import KipvizError
from ..schema.topics import TRANSACTION_STATE
from . import decode, txnview
from .logs import Logs
from .moves import partition_offset_after, share_events, share_moves

VIOLATION = checker.VIOLATION
KINDS = checker.KINDS
MAX_CLASSIFIED = 10_000      # outcomes classified on the driver; past that they stay "violation"

__all__ = ["verify_eos", "EosResult"]


@dataclass
class EosResult:
    """The Spark exactly-once verification's result: the verdict, the violations and the counts."""
    group: str
    input_topic: str
    output_topic: str
    violations: object                     # Spark DataFrame: kind, topic, partition, offset, classification, case,
    rows: list = field(default_factory=list)   # transaction, detail, outputs (the offending records)
    stats: dict = field(default_factory=dict)
    unreadable: list = field(default_factory=list)   # {dataset, partition, offset, error}: inputs that did not read
    unchecked: list = field(default_factory=list)    # what this run's inputs could not check (one line each)

    @property
    def ok(self) -> bool:
        """No violation and nothing unreadable (a verdict over inputs that did not all read is no
        verdict)."""
        return not self.unreadable and all(r["classification"] != VIOLATION for r in self.rows)

    @property
    def verdict(self) -> str:
        """"OK", "FAIL" (violations) or "cannot verify: N batches unreadable"."""
        if self.unreadable:
            return cannot_verify(self.unreadable)
        return "OK" if self.ok else "FAIL"

    def __bool__(self) -> bool:
        return self.ok

    def keys(self) -> set:
        """{(kind, (topic, partition, offset) or None, classification, case)}: what is compared with
        kipviz.eos.check_share_eos."""
        return {(r["kind"], None if r["topic"] is None else (r["topic"], r["partition"], r["offset"]),
                 r["classification"], r["case"], r.get("transaction")) for r in self.rows}

    def summary(self, limit: int = 20) -> str:
        """The result in words: the verdict, the counts, and up to `limit` violations."""
        s = self.stats
        bad = [r for r in self.rows if r["classification"] == VIOLATION]
        lines = [f"share EOS verification (Spark), group {self.group!r}: {self.input_topic} -> "
                 f"{self.output_topic}: {self.verdict}",
                 f"  {s.get('inputs', 0)} input records ({s.get('acknowledged', 0)} ACKNOWLEDGED, "
                 f"{s.get('archived', 0)} ARCHIVED), {s.get('output_records', 0)} output records "
                 f"({s.get('visible_records', 0)} visible, {s.get('aborted_records', 0)} aborted, "
                 f"{s.get('open_records', 0)} in open transactions)",
                 f"  {len(bad)} violation(s), {len(self.rows) - len(bad)} classified as documented "
                 f"at-least-once window(s)"]
        counts: dict = {}
        for r in self.rows:
            counts[r["kind"]] = counts.get(r["kind"], 0) + 1
        for k in sorted(counts):
            lines.append(f"    {k}: {counts[k]}")
        for u in self.unreadable[:limit]:
            lines.append("  " + unreadable_line(u))
        for u in self.unchecked:
            lines.append("  [not checked] " + u)
        for r in self.rows[:limit]:
            lines.append("  " + line(r))
        if len(self.rows) > limit:
            lines.append(f"  ... {len(self.rows) - limit} more")
        return "\n".join(lines)

    def to_pandas(self):
        """The violations as a pandas DataFrame."""
        import pandas as pd
        cols = ["kind", "topic", "partition", "offset", "classification", "case", "transaction", "detail", "outputs"]
        return pd.DataFrame(self.rows, columns=cols)


def cannot_verify(unreadable: list) -> str:
    """"cannot verify: N batches unreadable" (and the __transaction_state records and the datasets
    that did not read, when there are any)."""
    recs = sum(u["dataset"] == TRANSACTION_STATE for u in unreadable)
    sets = sum(u["dataset"] != TRANSACTION_STATE and u["partition"] is None for u in unreadable)
    parts = [(len(unreadable) - recs - sets, "batches"), (recs, "__transaction_state records"), (sets, "datasets")]
    what = " and ".join(f"{n} {w}" for n, w in parts if n) or "0 batches"
    return f"cannot verify: {what} unreadable"


def unreadable_line(u: dict) -> str:
    """One line naming an input that could not be read, and where."""
    at = "" if u["partition"] is None else f" partition {u['partition']}" + (
        "" if u["offset"] is None else f" offset {u['offset']}")
    return f"[unreadable] {u['dataset']}{at}: {u['error']}"


# size: the printed report top to bottom (verdict, counts, listings); each branch is one optional section of it
def verdict_lines(res: "EosResult", *, examples: int = 3, limit: int = 50, everything: bool = False) -> list[str]:
    """What `kipviz verify-eos` prints: the verdict and the counts first, then every unreadable
    input and violation (up to `limit`), then the documented at-least-once windows summarised by
    KIP-1289 case with `examples` of each (everything=True: every line)."""
    bad = [r for r in res.rows if r["classification"] == VIOLATION]
    windows = [r for r in res.rows if r["classification"] != VIOLATION]
    head = res.summary(limit=0).splitlines()
    out = [f"{head[0]} ({len(bad)} violation(s), {len(windows)} at-least-once window(s))", *head[1:3]]
    out.extend("  [not checked] " + u for u in res.unchecked)
    by_case: dict = {}
    for r in windows:
        by_case.setdefault(r["case"], []).append(r)
    if windows:
        out.append("  at-least-once windows by KIP-1289 case: " + ", ".join(
            f"case {c}: {len(rs)}" for c, rs in sorted(by_case.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))))
    kinds: dict = {}
    for r in bad:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    if kinds:
        out.append("  violations by kind: " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())))
    cap = None if everything else limit
    for what, items, fmt in (("unreadable input(s)", res.unreadable, unreadable_line), ("violation(s)", bad, line)):
        shown = items if cap is None else items[:cap]
        out.extend(fmt(x) for x in shown)
        if len(items) > len(shown):
            out.append(f"... {len(items) - len(shown)} more {what} (--all lists every one)")
    for case, rs in sorted(by_case.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        shown = rs if everything else rs[:examples]
        out.extend(line(r) for r in shown)
        if len(rs) > len(shown):
            out.append(f"... {len(rs) - len(shown)} more at-least-once window(s) of case {case} "
                       f"(--all lists every one)")
    return out


def line(r: dict) -> str:
    """One violation (or documented window, tagged with its own KIP-1289 case) as one line of text."""
    inp = f"{r['topic']}-{r['partition']}@{r['offset']}" if r["topic"] is not None else \
        f"transaction {r['transaction']}" if r.get("transaction") else "-"
    outs = f" [outputs: {', '.join(r['outputs'])}]" if r.get("outputs") else ""
    tag = r["classification"]
    if tag != VIOLATION and r.get("case") is not None:
        tag = f"at-least-once window (KIP-1289 case {r['case']})"
    return f"[{tag}] {r['kind']} {inp}: {r['detail']}{outs}"


def verify_eos(src, *, group: str | None = None, input_topic: str | None = None, output_topic: str | None = None,
               allowed_at_least_once=False, expect: str = "appended", require_output: bool = True) -> EosResult:
    """Check one run (a kipviz.spark Source, or its Logs to reuse their decoded records) for
    exactly-once read-process-write through share group `group` (defaults: the run's manifest).
    See the module docstring."""
    logs = src if isinstance(src, Logs) else Logs(src, None, None, None)
    own = logs is not src
    src = logs.source
    group, input_topic, output_topic = _eos_args(src, group, input_topic, output_topic, expect)
    events = src.events
    moves = share_moves(events, group=group, topic=input_topic)
    recs = logs.records(output_topic)
    per_input = _per_input(moves, src, recs, input_topic).persist()
    odd_rows, unknown, in_stats, named = _anomalies(per_input, input_topic, expect, require_output)
    out_stats = _output_stats(recs)
    stray = _stray(recs, input_topic, out_stats, named)
    unknown += sorted({r["source"] for r in stray if r["source"] is not None})
    rids = [_rid(input_topic, r) for r in odd_rows]
    outputs = _outputs_of(recs, rids + unknown, output_topic)
    hist = _history(events, group, input_topic, [(r["partition"], r["offset"]) for r in odd_rows])
    collected = _odd_row_rules(src, odd_rows, rids, outputs, hist, output_topic, require_output)
    collected += _stray_rows(unknown, stray, outputs, input_topic, output_topic)
    markers, bad_batches = _batch_facts(src, _marker_topics(input_topic, output_topic))
    txn_records, bad_log = _txn_log(src)
    collected += _marker_rows(_txn_log_check(src, input_topic, output_topic, markers, txn_records))
    for r in collected:
        _fill(r)

    # ---- the few that may be KIP-1289 at-least-once windows: classified by kipviz.eos itself --------
    maybe = [r for r in collected if r["kind"] in ("duplicate-output", "output-without-ack")]
    unchecked = []
    if maybe and len(maybe) <= MAX_CLASSIFIED:
        notes = _unreached_notes(events)
        if notes is None:
            unchecked.append(UNCHECKED_ROUTING)
        _recheck(maybe, hist, outputs, group, input_topic, output_topic, allowed_at_least_once,
                 expect, require_output, notes or [])
    collected.sort(key=lambda r: (r["topic"] is None, (r["topic"] or "", r["partition"] or 0, r["offset"] or 0),
                                  KINDS.index(r["kind"]), r["transaction"] or ""))
    vdf, cols = _violation_frame(src.spark, collected)
    stats = {**in_stats, **out_stats}
    unreadable = _unreadable(logs, src, input_topic, output_topic, bad_batches, bad_log)
    per_input.unpersist()
    if own:
        logs.unpersist()
    return EosResult(group, input_topic, output_topic, vdf, [{c: r[c] for c in cols} for r in collected], stats,
                     unreadable, unchecked)


def _eos_args(src, group, input_topic, output_topic, expect) -> tuple[str, str, str]:
    """verify_eos's arguments, defaulted from the run's manifest; one KipvizError when they cannot be."""
    from pyspark.sql import functions as F
    group = group or src.group
    input_topic = input_topic or src.input_topic
    output_topic = output_topic or src.output_topic
    if not (group and input_topic and output_topic):
        raise KipvizError("verify_eos needs a share group, an input and an output topic (none in the run's "
                          "manifest: pass group=, input_topic=, output_topic=)")
    if expect not in ("appended", "seen"):
        raise KipvizError("expect must be 'appended' or 'seen'")
    if src.events is None:
        raise KipvizError("verify_eos needs the run's events (share-record state changes: events.parquet); "
                          "a live cluster's topics do not say which member acknowledged what, nor whether a "
                          "KIP-1289 marker reached the share partition's leader")
    if not share_events(src.events).filter(F.col("key").startswith(group + "/")).limit(1).count():
        raise KipvizError(f"no share-record state changes of group {group!r} in this run: verify_eos checks "
                          f"share-group read-process-write runs (e.g. kipviz sample-data --scenario share_eos)")
    return group, input_topic, output_topic


def _anomalies(per_input, input_topic: str, expect: str, require_output: bool):
    """One row per input record that matters; only the anomalous ones reach the driver. Returns those
    rows, the visible outputs' sources no input is known for, the input counts and how many visible
    outputs the aggregation named."""
    from pyspark.sql import functions as F
    seen_in = (F.col("n_moves") > 0) & (F.col("n_control") == 0)
    known = (F.col("n_appended") > 0) | seen_in
    must = (((F.col("n_appended") > 0) & (F.col("n_unfinished") == 0)) | seen_in) if expect == "appended" \
        else seen_in
    visible = F.col("n_visible") > 0
    with_must = per_input.withColumn("must", must)
    considered = F.col("must") | (visible & known)
    table = with_must.filter(considered)
    odd = ((F.col("must") & (F.col("n_term") == 0)) | (F.col("n_term") > 1)
           | (F.col("attempt_min") != F.col("attempt_max")) | (F.col("n_visible") > 1)
           | ((F.col("n_ack") > 0) & ~visible & F.lit(require_output)) | (visible & (F.col("n_ack") == 0)))
    odd_rows = table.filter(odd).collect()
    unknown = [_rid(input_topic, r) for r in per_input.filter(visible & ~known).select("partition", "offset")
               .collect()]
    in_stats, named = _input_stats(with_must, considered)
    return odd_rows, unknown, in_stats, named


def _stray(recs, input_topic: str, out_stats: dict, named: int) -> list:
    # visible output naming no input record by the convention's spelling, or nothing at all: the
    # visible outputs the aggregation did not count, looked up only when there are some
    from pyspark.sql import functions as F
    if out_stats["visible_records"] <= named:
        return []
    return recs.filter((F.col("visibility") == "visible") & _source_offset(F.col("source"), input_topic).isNull()) \
        .select("source", "partition", "offset").collect()


def _odd_row_rules(src, odd_rows: list, rids: list, outputs: dict, hist: dict, output_topic: str,
                   require_output: bool) -> list[dict]:
    """The per-record rules over the anomalous rows, with their outputs and moves looked up."""
    contents = _contents(src, output_topic, [o for r, rid in zip(odd_rows, rids, strict=True) if r["n_visible"] > 1
                                             for o in outputs.get(rid, ()) if o["visibility"] == "visible"])
    collected = []
    for r, rid in zip(odd_rows, rids, strict=True):
        outs = outputs.get(rid, [])
        vis = [o for o in outs if o["visibility"] == "visible"]
        row = dict(r.asDict(), rid=rid, outputs=[o["name"] for o in vis], attempts=len({_attempt(o) for o in vis}),
                   n_aborted=sum(o["visibility"] == "aborted" for o in outs),
                   n_open=sum(o["visibility"] == "open" for o in outs))
        collected.extend(_rules(row, require_output, hist.get(rid, [])))
        collected.extend(_within(rid, vis, contents, output_topic))
    return collected


def _marker_rows(found) -> list[dict]:
    """The transaction log's findings against the markers, as rows."""
    return [{"kind": v["kind"], "rid": None, "transaction": f"{v['transaction']} {v['partition']}",
             "outputs": [f"{v['partition']}@{v['offset']}"] if v["offset"] is not None else [],
             "detail": v["detail"]} for v in found]


def _stray_rows(unknown: list, stray: list, outputs: dict, input_topic: str, output_topic: str) -> list[dict]:
    rows = [{"kind": "unknown-source", "rid": rid,
             "outputs": [o["name"] for o in outputs.get(rid, []) if o["visibility"] == "visible"],
             "detail": f"visible output names {rid!r}, which is no record of {input_topic} known to this run"}
            for rid in unknown]
    for r in stray:
        if r["source"] is None:
            name = f"{output_topic}-{r['partition']}@{r['offset']}"
            rows.append({"kind": "unattributed-output", "rid": None, "outputs": [name],
                         "detail": f"visible output {name} has no {checker.SOURCE_HEADER!r} header"})
    return rows


def _fill(r: dict) -> None:
    """Every collected row gets the same columns (its input split out of its rid)."""
    r.setdefault("transaction", None)
    p = checker.parse_source(r["rid"]) if r["rid"] is not None else None
    r["topic"], r["partition"], r["offset"] = p if p else (None, None, None)
    r.setdefault("classification", VIOLATION)
    r.setdefault("case", None)
    r["outputs"] = list(r.get("outputs") or [])


def _violation_frame(spark, collected: list[dict]):
    from pyspark.sql import types as T
    schema = T.StructType([T.StructField("kind", T.StringType()), T.StructField("topic", T.StringType()),
                           T.StructField("partition", T.IntegerType()), T.StructField("offset", T.LongType()),
                           T.StructField("classification", T.StringType()), T.StructField("case", T.IntegerType()),
                           T.StructField("transaction", T.StringType()), T.StructField("detail", T.StringType()),
                           T.StructField("outputs", T.ArrayType(T.StringType()))])
    cols = [f.name for f in schema.fields]
    return spark.createDataFrame([tuple(r[c] for c in cols) for r in collected], schema), cols


def _rid(topic: str, row) -> str:
    return f"{topic}-{row['partition']}@{row['offset']}"


def _source_offset(source, input_topic):
    """(partition, offset) of an output's source header when it names a record of `input_topic` in
    the convention's exact spelling ("in-0@17"; kipviz.eos compares the text), else null."""
    from pyspark.sql import functions as F
    prefix = input_topic + "-"
    p, o = partition_offset_after(source, prefix)
    canonical = F.concat(F.lit(prefix), p.cast("string"), F.lit("@"), o.cast("string")) == source
    return F.when(source.startswith(prefix) & F.coalesce(canonical, F.lit(False)),
                  F.struct(p.alias("partition"), o.alias("offset")))


# The counts are summed two to a column, as the low and high 32 bits of one long: fewer columns to
# aggregate and shuffle per input record (10M records: about 4 s of 27). A half could only overflow
# with 2**31 rows naming one record.
_PAIRS = (("n_moves", "n_term"), ("n_ack", "n_appended"), ("n_unfinished", "n_control"))


def _per_input(moves, src, recs, input_topic):
    """One row per (partition, offset) of the input topic that anything names -- its share-record
    moves, its appearance in the input, an input transaction that never committed, a marker, the
    visible output records naming it -- as counts: n_moves, n_term, n_ack, n_appended,
    n_unfinished, n_control, n_visible, and attempt_min / attempt_max, 64-bit hashes of the visible
    outputs' attempts (equal: one attempt; two attempts hashing alike, about 1 in 2**64, would hide
    a duplicate). One union and one aggregation, numeric keys only; what the reported records'
    details need more is fetched for them alone (_outputs_of, _history)."""
    from pyspark.sql import functions as F
    zero = F.lit(0)

    def part(df, **given):
        pairs = [(given.get(lo, zero).cast("bigint") + F.shiftleft(given.get(hi, zero).cast("bigint"), 32)).alias(f"_{i}")
                 for i, (lo, hi) in enumerate(_PAIRS)]
        return df.select("partition", "offset", *pairs, given.get("n_visible", zero).alias("n_visible"),
                         given.get("attempt", F.lit(None).cast("bigint")).alias("attempt"))
    term = F.col("to_state").isin(*checker.TERMINAL).cast("int")
    parts = [part(moves, n_moves=F.lit(1), n_term=term, n_ack=(F.col("to_state") == checker.ACKNOWLEDGED).cast("int")),
             part(src.topic(input_topic), n_appended=F.lit(1))]
    in_batches = src.batches_of(input_topic)
    if in_batches is not None:
        view = txnview.batch_view(in_batches.filter(F.col("topic") == input_topic))
        spans = view.filter(F.col("visibility").isin("aborted", "open", "marker")).select(
            "partition", F.explode(F.sequence("base_offset", "last_offset")).alias("offset"),
            (F.col("visibility") == "marker").cast("int").alias("_marker"))
        parts.append(part(spans, n_unfinished=1 - F.col("_marker"), n_control=F.col("_marker")))
    named = recs.filter(F.col("source").isNotNull() & (F.col("visibility") == "visible")).select(
        _source_offset(F.col("source"), input_topic).alias("_in"), _attempt_hash().alias("_attempt")) \
        .filter("_in is not null")
    parts.append(part(named.select("_in.partition", "_in.offset", "_attempt"), n_visible=F.lit(1),
                      attempt=F.col("_attempt")))
    tall = parts[0]
    for p in parts[1:]:
        tall = tall.unionByName(p)
    sums = tall.groupBy("partition", "offset").agg(
        *[F.sum(f"_{i}").alias(f"_{i}") for i in range(len(_PAIRS))], F.sum("n_visible").alias("n_visible"),
        F.min("attempt").alias("attempt_min"), F.max("attempt").alias("attempt_max"))
    halves = [(F.shiftright(f"_{i}", 32) if high else F.col(f"_{i}").bitwiseAND(0xFFFFFFFF)).alias(name)
              for i, pair in enumerate(_PAIRS) for high, name in enumerate(pair)]
    return sums.select("partition", "offset", *halves, "n_visible", "attempt_min", "attempt_max")


def _history(events, group, input_topic, records) -> dict:
    """rid -> its share-record moves in seq order (seq, from_state, to_state, cause), for `records`
    ((partition, offset) pairs), in one scan of the event log (their keys are matched as text, so
    only their events are split)."""
    from pyspark.sql import functions as F
    keys = sorted({f"{group}/{input_topic}-{p}@{o}" for p, o in records})
    if not keys:
        return {}
    hist: dict = {}
    for m in sorted(share_moves(events.filter(F.col("key").isin(keys)), group=group, topic=input_topic).select(
            "partition", "offset", "seq", "from_state", "to_state", "cause").collect(), key=lambda m: m["seq"]):
        hist.setdefault(_rid(input_topic, m), []).append(m.asDict())
    return hist


def _outputs_of(recs, rids, output_topic) -> dict:
    """rid -> the output records naming it (as dicts: name, partition, offset, visibility,
    producer_id, is_transactional, txn_no, marker_offset, marker_type, source, and their place
    in the event order: seq, the record's RecordAppended, and marker_seq, its marker's), sorted
    by name, for a few input records. A batch's records are appended by consecutive events (the
    batch's seq is its first record's), so a record's seq is its batch's plus its offset delta."""
    from pyspark.sql import functions as F
    if not rids:
        return {}
    wanted = recs.sparkSession.createDataFrame([(x,) for x in sorted(set(rids))], "source string")
    out: dict = {}
    for o in (recs.join(F.broadcast(wanted), "source")
              .select("source", "partition", "offset", "visibility", "producer_id", "is_transactional", "txn_no",
                      "marker_offset", "marker_type", "marker_seq",
                      "base_offset",
                      (F.col("batch_seq") + F.col("offset") - F.col("base_offset")).alias("seq")).collect()):
        out.setdefault(o["source"], []).append(dict(o.asDict(), name=f"{output_topic}-{o['partition']}@{o['offset']}"))
    return {k: sorted(v, key=lambda o: o["name"]) for k, v in out.items()}


def _attempt(o: dict) -> tuple:
    """The attempt an output record belongs to, as kipviz.eos counts them: its producer's
    transaction, or the record itself when it is not transactional."""
    return ("txn", o["producer_id"], o["txn_no"]) if o["is_transactional"] else ("nt", o["partition"], o["offset"])


def _attempt_hash():
    """_attempt as a 64-bit hash, for comparing a record's attempts in an aggregation."""
    from pyspark.sql import functions as F
    return F.when(F.col("is_transactional"), F.xxhash64(F.lit("txn"), "producer_id", "txn_no")) \
        .otherwise(F.xxhash64(F.lit("nt"), "partition", "offset"))


# size: kipviz.eos's per-record rules one by one over the aggregated row; a flat list of rules reads as the table it is
def _rules(r: dict, require_output: bool, moves: list) -> list[dict]:
    """The per-record rules of kipviz.eos, over one aggregated row and the record's moves in order."""
    out = []
    rid = r["rid"]
    terms = [m for m in moves if m["to_state"] in checker.TERMINAL]
    acks = [m for m in terms if m["to_state"] == checker.ACKNOWLEDGED]

    def add(kind, detail):
        out.append({"kind": kind, "rid": rid, "detail": detail, "outputs": r["outputs"]})
    if r["must"] and r["n_term"] == 0:
        last = moves[-1] if moves else None
        add("lost", f"never terminal: last state {last['to_state']} ({last['cause']})" if last
            else "never delivered to the group (no share-record state change)")
    if r["n_term"] > 1:
        add("terminal-twice", f"terminal {r['n_term']} times: "
            + ", ".join(f"{x['from_state']}->{x['to_state']} ({x['cause']})" for x in terms))
    if r["attempts"] > 1:
        add("duplicate-output", f"output visible in {r['attempts']} attempts")
    if require_output and r["n_ack"] > 0 and r["attempts"] == 0:
        why = ([f"{r['n_aborted']} output record(s) aborted"] if r["n_aborted"] else []) + \
              ([f"{r['n_open']} output record(s) in a transaction never ended"] if r["n_open"] else [])
        add("ack-without-output", f"ACKNOWLEDGED ({acks[-1]['cause']}) but no output visible to read_committed"
            + (": " + "; ".join(why) if why else ": no output record at all"))
    if r["attempts"] > 0 and r["n_ack"] == 0:
        lt = terms[-1] if terms else None
        state = (f"ended {lt['to_state']} ({lt['cause']})" if lt
                 else f"last state {moves[-1]['to_state']}" if moves else "never delivered")
        add("output-without-ack", f"output visible ({r['attempts']} attempt(s)) but never ACKNOWLEDGED: {state}")
    return out


def _input_stats(per_input, considered) -> tuple[dict, int]:
    """The considered input records' counts, and how many visible outputs the aggregation counted
    (those naming an input record)."""
    from pyspark.sql import functions as F

    def count(cond):
        return F.sum(cond.cast("int"))
    t = per_input.agg(count(considered).alias("inputs"),
                      count(considered & (F.col("n_ack") > 0)).alias("acknowledged"),
                      count(considered & (F.col("n_ack") == 0) & (F.col("n_term") > 0)).alias("archived"),
                      F.sum("n_visible").alias("named")).first()
    ack, arch = t["acknowledged"] or 0, t["archived"] or 0
    return {"inputs": t["inputs"] or 0, "acknowledged": ack, "archived": arch, "terminal": ack + arch}, t["named"] or 0


def _output_stats(recs) -> dict:
    """The output's records by visibility."""
    from pyspark.sql import functions as F
    vis = F.col("visibility")
    o = recs.agg(F.count("*").alias("n"), F.sum((vis == "visible").cast("int")).alias("visible"),
                 F.sum((vis == "aborted").cast("int")).alias("aborted"),
                 F.sum((vis == "open").cast("int")).alias("open")).first()
    return {"output_records": o["n"], "visible_records": o["visible"] or 0, "aborted_records": o["aborted"] or 0,
            "open_records": o["open"] or 0}


UNCHECKED_ROUTING = ("KIP-1289 marker routing: the event log has no typed Happened events, so whether a COMMIT marker reached the "
                     "share partition's leader (a MarkerUnreached event) could not be checked; a duplicate "
                     "classified as a case 12 window may be a marker that never reached a non-co-located leader")


def _unreached_notes(events) -> list | None:
    """The run's MarkerUnreached events (kipviz.broker.share_txn: a COMMIT marker on
    __share_group_state-N that did not reach the share partition's leader), rebuilt for kipviz.eos;
    None when the event log holds no sentence at all (no typed Happened event: they were
    not recorded, so the marker routing cannot be checked). Few rows: collected to the driver."""
    import json

    from pyspark.sql import functions as F

    from ..schema.events import Happened, MarkerUnreached, Unreached, event_classes
    told = sorted(k for k, cls in event_classes().items() if issubclass(cls, Happened))
    said = events.filter(F.col("kind").isin(told))
    # the detail column is compact JSON with sorted keys (kipviz.sampledata.rows.event_detail)
    rows = said.filter(F.col("kind") == "MarkerUnreached").select("seq", "detail").collect()
    if not rows and not said.limit(1).count():
        return None
    out = []
    for r in rows:
        d = json.loads(r["detail"])
        out.append(MarkerUnreached(
            seq=r["seq"], t=0, broker=d["broker"], partition=d["partition"], producer_id=d["producer_id"],
            producer_epoch=d["producer_epoch"], commit=d["commit"], routing=d["routing"],
            unreached=tuple(Unreached(*u[:3], tuple(u[3]), *u[4:]) for u in d["unreached"])))
    return out


def _recheck(rows, hist: dict, outputs: dict, group, input_topic, output_topic, allowed_at_least_once,
             expect, require_output, notes=()) -> None:
    """Classify duplicate-output / output-without-ack with kipviz.eos itself: the records' own
    events (their share-record moves, their output records and the markers that ended them) are
    rebuilt from what was fetched for them (hist: _history, outputs: _outputs_of) and checked by
    check_share_eos, whose classification, KIP-1289 case and wording are then taken. The
    marker-unreached `notes` (_unreached_notes) go in too, so a lock revert after a marker that never
    reached a non-co-located share-partition leader is a violation, as kipviz.eos says, not a case 12
    window. Needs the model's event order (the batches' seq); without it the outcome stays a plain
    violation."""
    from ..schema.events import RecordAppended, StateChanged
    rids = sorted({r["rid"] for r in rows})
    outs = [o for rid in rids for o in outputs.get(rid, ())]
    marks = {(o["partition"], o["marker_offset"]): o for o in outs if o["marker_offset"] is not None}
    if any(o["seq"] is None for o in outs) or any(o["marker_seq"] is None for o in marks.values()):
        return
    evs = [StateChanged(seq=e["seq"], t=0, machine=checker.MACHINE, key=f"{group}/{rid}",
                        from_state=e["from_state"], to_state=e["to_state"], cause=e["cause"])
           for rid in rids for e in hist.get(rid, ())]
    for o in outs:
        evs.append(RecordAppended(seq=o["seq"], t=0, topic=output_topic,
                                  partition=o["partition"], offset=o["offset"],
                                  record={"headers": [(checker.SOURCE_HEADER, o["source"])]},
                                  producer_id=o["producer_id"], transactional=bool(o["is_transactional"])))
    for (p, off), o in marks.items():
        evs.append(RecordAppended(seq=o["marker_seq"], t=0, topic=output_topic, partition=p, offset=off,
                                  record={"type": o["marker_type"]}, producer_id=o["producer_id"],
                                  transactional=True, control=True))
    evs.extend(notes)
    evs.sort(key=lambda e: e.seq)
    rep = checker.check_share_eos(evs, group=group, input_topic=input_topic, output_topic=output_topic,
                                  allowed_at_least_once=allowed_at_least_once, expect=expect,
                                  require_output=require_output)
    found = {(v["kind"], v["input"]): v for v in rep.violations}
    for r in rows:
        v = found.get((r["kind"], (r["topic"], r["partition"], r["offset"])))
        if v is not None:
            r["detail"], r["classification"], r["case"] = v["detail"], v["classification"], v["case"]


def _contents(src, output_topic, outs: list) -> dict:
    """(partition, offset) -> checker.content_key of the output records `outs` (dicts of
    _outputs_of), decoded with their payload from their batches alone."""
    from pyspark.sql import functions as F
    batches = src.batches_of(output_topic)
    if not outs or batches is None:
        return {}
    spark = batches.sparkSession
    want = spark.createDataFrame(sorted({(o["partition"], o["base_offset"]) for o in outs}),
                                 "partition int, base_offset bigint")
    got = decode.decode_batches(batches.filter(F.col("topic") == output_topic).join(
        F.broadcast(want), ["partition", "base_offset"]))
    out = {}
    for r in got.filter(F.col("error").isNull() & ~F.col("is_control")).select(
            "partition", "offset", "key", "value", "headers").collect():
        rec = {"key": r["key"], "value": r["value"], "headers": [(h["key"], h["value"]) for h in r["headers"] or ()]}
        out[(r["partition"], r["offset"])] = checker.content_key(rec)
    return out


def _within(rid: str, vis: list, contents: dict, output_topic: str) -> list[dict]:
    """duplicate-in-transaction: the same output record (checker.content_key) more than once in one
    attempt, as kipviz.eos words it."""
    groups: dict = {}
    for o in vis:
        ck = contents.get((o["partition"], o["offset"]))
        if ck is not None:
            groups.setdefault((_attempt(o), ck), []).append(o)
    out = []
    for copies in groups.values():
        if len(copies) > 1:
            copies = sorted(copies, key=lambda o: (o["partition"], o["offset"]))
            names = ", ".join(f"{output_topic}-{o['partition']}@{o['offset']}" for o in copies)
            out.append({"kind": "duplicate-in-transaction", "rid": rid, "outputs": [o["name"] for o in copies],
                        "detail": f"the same output record visible {len(copies)} times in one transaction: {names}"})
    return out


def _marker_topics(input_topic, output_topic) -> tuple:
    """The data partitions whose markers are checked against the log."""
    return (input_topic, output_topic)


def _batch_facts(src, topics) -> tuple[list, list]:
    """(markers, unreadable) of the batches of `topics` the run has, read from their bytes
    (txnview.batch_headers) in one pass per topic: markers as kipviz.eos.txnlog.check_markers
    takes them (with the retry flag), sorted by partition and offset, unreadable as dicts."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    markers, bad = [], []
    for t in topics:
        b = src.batches_of(t)
        if b is None:
            continue
        hdr = txnview.batch_headers(b.filter(F.col("topic") == t))
        # a marker right after another of its producer (no data between): maybe a retry (txnlog)
        w = Window.partitionBy("partition", "producer_id").orderBy("base_offset")
        prev = F.lag(F.struct("is_control", "producer_epoch", "control_type")).over(w)
        bad_row = F.col("error").isNotNull()           # (producer id null: a window of their own)
        rows = hdr.filter(bad_row | F.col("is_transactional")).withColumn("_prev", prev).filter(
            bad_row | F.col("is_control")).select(
            "partition", "row_offset", "base_offset", "producer_id", "producer_epoch", "control_type", "error",
            F.coalesce(F.col("_prev.is_control") & (F.col("_prev.producer_epoch") == F.col("producer_epoch"))
                       & (F.col("_prev.control_type") == F.col("control_type")), F.lit(False)).alias("retry"))
        for r in rows.collect():
            if r["error"] is not None:
                bad.append({"dataset": f"batches/{t}", "partition": r["partition"], "offset": r["row_offset"],
                            "error": r["error"]})
            else:
                markers.append((t, r["partition"], r["base_offset"], r["producer_id"], r["producer_epoch"],
                                r["control_type"], r["retry"]))
    markers.sort(key=lambda m: m[:3])
    return markers, bad


def _txn_log(src) -> tuple[list, list]:
    """(records, unreadable) of the run's __transaction_state: records as check_markers takes
    them, in log order per transactional id (one id lives in one log partition); both empty
    without a transaction log."""
    from pyspark.sql import functions as F
    log = src.topics.get(TRANSACTION_STATE) if hasattr(src, "topics") else None
    if log is None:
        return [], []
    rows = decode.decode_transactions(log).filter(F.col("error").isNotNull() | F.col("state_id").isNotNull()).select(
        "log_partition", "log_offset", "transactional_id", "producer_id", "producer_epoch", "state_id",
        "partitions", "error").collect()
    rows.sort(key=lambda r: (r["log_partition"] if r["log_partition"] is not None else -1,
                             r["log_offset"] if r["log_offset"] is not None else -1))
    records = [(r["transactional_id"], r["producer_id"], r["producer_epoch"], r["state_id"],
                [(p["topic"], p["partition"]) for p in r["partitions"] or ()]) for r in rows if r["error"] is None]
    bad = [{"dataset": TRANSACTION_STATE, "partition": r["log_partition"], "offset": r["log_offset"],
            "error": r["error"]} for r in rows if r["error"] is not None]
    return records, bad


def _txn_log_check(src, input_topic, output_topic, markers, records) -> list[dict]:
    """kipviz.eos.txnlog.check_markers over the run's __transaction_state records and the markers
    of the partitions whose batches the run has; [] without a transaction log. The log and the
    markers are a handful of rows per transaction: they are matched on the driver, by the function
    the event checker uses."""
    if not records:
        return []
    topics = [t for t in _marker_topics(input_topic, output_topic) if src.batches_of(t) is not None]
    return check_markers(records, markers, topics)


def _unreadable(logs, src, input_topic, output_topic, bad_batches, bad_log) -> list[dict]:
    """What the verdict depends on and did not read, one dict per batch / record / dataset
    (dataset, partition, offset, error): the input and output batches whose bytes do not read (_batch_facts) or whose records do not decode, the __transaction_state
    records that do not decode (_txn_log), and the reader's errors for those datasets and for the
    events."""
    from pyspark.sql import functions as F
    names = {input_topic, output_topic, TRANSACTION_STATE}
    wanted = {"events.parquet"} | {t.get(k) for t in (src.manifest.get("topics") or []) if isinstance(t, dict)
                                   and t.get("name") in names for k in ("dataset", "batches")}
    found: dict = {}

    def add(dataset, partition, offset, error):
        found.setdefault((dataset, partition, offset), error)
    # the reader's errors: missing files and columns, and the batches it took out as corrupt
    # (a batch the reader took out is named as the decoder names batches: "batches/<topic>")
    for e in src.errors.filter(F.col("dataset").isin(sorted(w for w in wanted if w))).collect():
        d = e["dataset"]
        if e["offset"] is not None and d.startswith("batches/"):
            d = d.removesuffix(".parquet")
        add(d, e["partition"], e["offset"], e["error"])
    for u in bad_batches + bad_log:
        add(u["dataset"], u["partition"], u["offset"], u["error"])
    for r in logs.errors.filter(F.col("dataset") == f"batches/{output_topic}").collect():
        add(r["dataset"], r["partition"], r["offset"], r["error"])
    return [{"dataset": d, "partition": p, "offset": o, "error": err}
            for (d, p, o), err in sorted(found.items(), key=lambda kv: tuple("" if x is None else str(x)
                                                                             for x in kv[0]))]
