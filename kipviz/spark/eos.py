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
  unknown-source       visible output naming no known input record
  unattributed-output  visible output without the header

What it reads: the share-record StateChanged events of `group` (the run's events), the input
topic's records and batches (aborted / open input transactions need not be processed), and the
output topic's record batches, whose visibility is worked out per batch (kipviz.spark.txnview).
Everything is joins and aggregations over the whole run; only the duplicates -- usually none or a
handful -- go to the driver, where each is classified exactly as kipviz.eos does (the KIP-1289
at-least-once window pattern, cases 1/12/6)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..eos import checker
from ..errors import KipvizError
from . import txnview
from .logs import Logs

VIOLATION = checker.VIOLATION
KINDS = checker.KINDS
MAX_CLASSIFIED = 10_000      # outcomes classified on the driver; past that they stay "violation"

__all__ = ["verify_eos", "EosResult"]


@dataclass
class EosResult:
    group: str
    input_topic: str
    output_topic: str
    violations: object                     # Spark DataFrame: kind, topic, partition, offset, classification, case,
    rows: list = field(default_factory=list)   # detail, outputs (the offending records); rows = collected
    stats: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r["classification"] != VIOLATION for r in self.rows)

    def __bool__(self) -> bool:
        return self.ok

    def keys(self) -> set:
        """{(kind, (topic, partition, offset) or None, classification, case)}: what is compared with
        kipviz.eos.check_share_eos."""
        return {(r["kind"], None if r["topic"] is None else (r["topic"], r["partition"], r["offset"]),
                 r["classification"], r["case"]) for r in self.rows}

    def summary(self, limit: int = 20) -> str:
        s = self.stats
        bad = [r for r in self.rows if r["classification"] == VIOLATION]
        lines = [f"share EOS verification (Spark), group {self.group!r}: {self.input_topic} -> "
                 f"{self.output_topic}: {'OK' if self.ok else 'FAIL'}",
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
        for r in self.rows[:limit]:
            lines.append("  " + line(r))
        if len(self.rows) > limit:
            lines.append(f"  ... {len(self.rows) - limit} more")
        return "\n".join(lines)

    def to_pandas(self):
        import pandas as pd
        cols = ["kind", "topic", "partition", "offset", "classification", "case", "detail", "outputs"]
        return pd.DataFrame(self.rows, columns=cols)


def line(r: dict) -> str:
    """One violation as one line of text."""
    inp = "-" if r["topic"] is None else f"{r['topic']}-{r['partition']}@{r['offset']}"
    outs = f" [outputs: {', '.join(r['outputs'])}]" if r.get("outputs") else ""
    return f"[{r['classification']}] {r['kind']} {inp}: {r['detail']}{outs}"


def _rid(topic_col, part_col, off_col):
    from pyspark.sql import functions as F
    return F.concat(topic_col, F.lit("-"), part_col.cast("string"), F.lit("@"), off_col.cast("string"))


def _offsets_of(view, visibilities):
    """rid of every offset in the batches of `view` whose visibility is one of `visibilities`."""
    from pyspark.sql import functions as F
    v = view.filter(F.col("visibility").isin(*visibilities))
    v = v.select("topic", "partition", F.explode(F.sequence("base_offset", "last_offset")).alias("offset"))
    return v.select(_rid(F.col("topic"), F.col("partition"), F.col("offset")).alias("rid"))


def verify_eos(src, *, group: str | None = None, input_topic: str | None = None, output_topic: str | None = None,
               allowed_at_least_once=False, expect: str = "appended", require_output: bool = True) -> EosResult:
    """Check one run (a kipviz.spark Source, or its Logs to reuse their decoded records) for
    exactly-once read-process-write through share group `group` (defaults: the run's manifest).
    See the module docstring."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    logs = src if isinstance(src, Logs) else Logs(src, None, None, None)
    own = logs is not src
    src = logs.source
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
                          "a live cluster's topics do not say which member acknowledged what")
    spark = src.spark
    events = src.events
    gp = group + "/"

    # ---- acknowledgements: every share-record move of the group, per input record ---------------------
    hist = (events.filter((F.col("kind") == "StateChanged") & (F.col("machine") == checker.MACHINE)
                          & F.col("key").startswith(gp))
            .select(F.expr(f"substring(key, {len(gp) + 1})").alias("rid"), "seq", "from_state", "to_state", "cause"))
    if not hist.limit(1).count():
        raise KipvizError(f"no share-record state changes of group {group!r} in this run: verify_eos checks "
                          f"share-group read-process-write runs (e.g. kipviz sample-data --scenario share_eos)")
    term = F.col("to_state").isin(*checker.TERMINAL)
    per_rid = hist.groupBy("rid").agg(
        F.count("*").alias("n_moves"),
        F.sum(term.cast("int")).alias("n_term"),
        F.sum((F.col("to_state") == checker.ACKNOWLEDGED).cast("int")).alias("n_ack"),
        F.max_by(F.struct("to_state", "cause"), "seq").alias("last"),
        F.max_by(F.when(F.col("to_state") == checker.ACKNOWLEDGED, F.col("cause")),
                 F.when(F.col("to_state") == checker.ACKNOWLEDGED, F.col("seq"))).alias("ack_cause"),
        # the last terminal move only: the full list is fetched for the few records terminal twice
        F.max_by(F.when(term, F.struct("from_state", "to_state", "cause")), F.when(term, F.col("seq")))
        .alias("last_term")).persist()

    # ---- the input: appended records, minus aborted / open input transactions ------------------------
    inp = src.topic(input_topic)
    appended = inp.select(_rid(F.lit(input_topic), F.col("partition"), F.col("offset")).alias("rid")).distinct()
    in_batches = src.batches_of(input_topic)
    if in_batches is not None:
        # only visibility is read here, and it does not depend on the order across partitions
        # (events give txn_no's order): no join with the event log
        in_view = txnview.batch_view(in_batches.filter(F.col("topic") == input_topic), None)
        unfinished = _offsets_of(in_view, ("aborted", "open"))
        in_control = _offsets_of(in_view, ("marker",))
    else:
        unfinished = in_control = spark.createDataFrame([], "rid string")
    seen_in = (per_rid.select("rid").filter(F.col("rid").rlike("^\\Q" + input_topic + "\\E-\\d+@\\d+$"))
               .join(in_control, "rid", "left_anti"))
    if expect == "appended":
        must = appended.join(unfinished, "rid", "left_anti").union(seen_in).distinct()
    else:
        must = seen_in
    known = appended.union(seen_in).distinct().persist()
    must = must.persist()             # read twice below: the records considered, and the table

    # ---- the output: visible attempts per source --------------------------------------------------------
    recs = logs.records(output_topic).select("partition", "offset", "source", "visibility", "attempt",
                                             "producer_id", "is_transactional", "marker_offset", "marker_type")
    # counts only: the output names are fetched for the few records reported (_visible_outputs)
    per_src = (recs.filter(F.col("source").isNotNull()).groupBy(F.col("source").alias("rid"))
               .agg(F.countDistinct(F.when(F.col("visibility") == "visible", F.col("attempt"))).alias("attempts"),
                    F.sum((F.col("visibility") == "aborted").cast("int")).alias("n_aborted"),
                    F.sum((F.col("visibility") == "open").cast("int")).alias("n_open"))).persist()

    # ---- one row per input record that matters; only the anomalous ones reach the driver --------------
    per_src_known = per_src.filter(F.col("attempts") > 0).select("rid").join(known, "rid", "left_semi")
    considered = must.union(per_src_known).distinct()
    table = (considered.join(must.withColumn("must", F.lit(True)), "rid", "left")
             .join(per_rid, "rid", "left").join(per_src, "rid", "left")
             .fillna({"n_term": 0, "n_ack": 0, "n_moves": 0, "attempts": 0, "n_aborted": 0, "n_open": 0,
                      "must": False})).persist()
    odd = ((F.col("must") & (F.col("n_term") == 0)) | (F.col("n_term") > 1) | (F.col("attempts") > 1)
           | ((F.col("n_ack") > 0) & (F.col("attempts") == 0) & F.lit(require_output))
           | ((F.col("attempts") > 0) & (F.col("n_ack") == 0)))
    collected = []
    odd_rows = [r.asDict(recursive=True) for r in table.filter(odd).collect()]
    unknown = [r["rid"] for r in per_src.filter(F.col("attempts") > 0).join(known, "rid", "left_anti").collect()]
    twice = _terminal_moves(hist, [r["rid"] for r in odd_rows if r["n_term"] > 1], term)
    outputs = _visible_outputs(recs, [r["rid"] for r in odd_rows] + unknown, output_topic)
    for r in odd_rows:
        r["outputs"] = outputs.get(r["rid"], [])
        collected.extend(_rules(r, require_output, twice.get(r["rid"], [])))
    for rid in unknown:
        collected.append({"kind": "unknown-source", "rid": rid, "outputs": outputs.get(rid, []),
                          "detail": f"visible output names {rid!r}, which is no record of {input_topic} "
                                    f"known to this run"})
    for r in recs.filter((F.col("visibility") == "visible") & F.col("source").isNull()).collect():
        name = f"{output_topic}-{r['partition']}@{r['offset']}"
        collected.append({"kind": "unattributed-output", "rid": None, "outputs": [name],
                          "detail": f"visible output {name} has no {checker.SOURCE_HEADER!r} header"})
    for r in collected:
        p = checker.parse_source(r["rid"]) if r["rid"] is not None else None
        r["topic"], r["partition"], r["offset"] = p if p else (None, None, None)
        r.setdefault("classification", VIOLATION)
        r.setdefault("case", None)
        r["outputs"] = list(r.get("outputs") or [])

    # ---- the few that may be KIP-1289 at-least-once windows: classified by kipviz.eos itself --------
    maybe = [r for r in collected if r["kind"] in ("duplicate-output", "output-without-ack")]
    if maybe and len(maybe) <= MAX_CLASSIFIED:
        _recheck(maybe, hist, recs, events, group, input_topic, output_topic, allowed_at_least_once,
                 expect, require_output)
    collected.sort(key=lambda r: (r["topic"] is None, (r["topic"] or "", r["partition"] or 0, r["offset"] or 0),
                                  KINDS.index(r["kind"])))
    schema = T.StructType([T.StructField("kind", T.StringType()), T.StructField("topic", T.StringType()),
                           T.StructField("partition", T.IntegerType()), T.StructField("offset", T.LongType()),
                           T.StructField("classification", T.StringType()), T.StructField("case", T.IntegerType()),
                           T.StructField("detail", T.StringType()),
                           T.StructField("outputs", T.ArrayType(T.StringType()))])
    cols = [f.name for f in schema.fields]
    vdf = spark.createDataFrame([tuple(r[c] for c in cols) for r in collected], schema)
    stats = _stats(table, recs)
    for df in (table, per_rid, per_src, known, must):
        df.unpersist()
    if own:
        logs.unpersist()
    return EosResult(group, input_topic, output_topic, vdf, [{c: r[c] for c in cols} for r in collected], stats)


def _terminal_moves(hist, rids, term) -> dict:
    """rid -> its terminal moves in seq order (from_state, to_state, cause), for a few records."""
    from pyspark.sql import functions as F
    if not rids:
        return {}
    wanted = hist.sparkSession.createDataFrame([(x,) for x in sorted(set(rids))], "rid string")
    out: dict = {}
    for m in sorted(hist.filter(term).join(F.broadcast(wanted), "rid").collect(), key=lambda m: m["seq"]):
        out.setdefault(m["rid"], []).append(m.asDict())
    return out


def _visible_outputs(recs, rids, output_topic) -> dict:
    """rid -> the names of its visible output records, sorted, for a few input records."""
    from pyspark.sql import functions as F
    if not rids:
        return {}
    wanted = recs.sparkSession.createDataFrame([(x,) for x in sorted(set(rids))], "source string")
    out: dict = {}
    for o in (recs.filter(F.col("visibility") == "visible").join(F.broadcast(wanted), "source")
              .select("source", "partition", "offset").collect()):
        out.setdefault(o["source"], []).append(f"{output_topic}-{o['partition']}@{o['offset']}")
    return {k: sorted(v) for k, v in out.items()}


def _rules(r: dict, require_output: bool, terms: list) -> list[dict]:
    """The per-record rules of kipviz.eos, over one aggregated row (`terms`: the record's terminal
    moves in order when it has more than one)."""
    out = []
    rid = r["rid"]

    def add(kind, detail):
        out.append({"kind": kind, "rid": rid, "detail": detail, "outputs": r["outputs"]})
    if r["must"] and r["n_term"] == 0:
        last = r["last"]
        add("lost", f"never terminal: last state {last['to_state']} ({last['cause']})" if r["n_moves"]
            else "never delivered to the group (no share-record state change)")
    if r["n_term"] > 1:
        add("terminal-twice", f"terminal {r['n_term']} times: "
            + ", ".join(f"{x['from_state']}->{x['to_state']} ({x['cause']})" for x in terms))
    if r["attempts"] > 1:
        add("duplicate-output", f"output visible in {r['attempts']} attempts")
    if require_output and r["n_ack"] > 0 and r["attempts"] == 0:
        why = ([f"{r['n_aborted']} output record(s) aborted"] if r["n_aborted"] else []) + \
              ([f"{r['n_open']} output record(s) in a transaction never ended"] if r["n_open"] else [])
        add("ack-without-output", f"ACKNOWLEDGED ({r['ack_cause']}) but no output visible to read_committed"
            + (": " + "; ".join(why) if why else ": no output record at all"))
    if r["attempts"] > 0 and r["n_ack"] == 0:
        lt = r["last_term"]
        state = (f"ended {lt['to_state']} ({lt['cause']})" if lt
                 else f"last state {r['last']['to_state']}" if r["n_moves"] else "never delivered")
        add("output-without-ack", f"output visible ({r['attempts']} attempt(s)) but never ACKNOWLEDGED: {state}")
    return out


def _stats(table, recs) -> dict:
    from pyspark.sql import functions as F
    t = table.agg(F.count("*").alias("inputs"),
                  F.sum((F.col("n_ack") > 0).cast("int")).alias("acknowledged"),
                  F.sum(((F.col("n_ack") == 0) & (F.col("n_term") > 0)).cast("int")).alias("archived")).first()
    o = recs.agg(F.count("*").alias("n"),
                 F.sum((F.col("visibility") == "visible").cast("int")).alias("visible"),
                 F.sum((F.col("visibility") == "aborted").cast("int")).alias("aborted"),
                 F.sum((F.col("visibility") == "open").cast("int")).alias("open")).first()
    return {"inputs": t["inputs"], "acknowledged": t["acknowledged"] or 0, "archived": t["archived"] or 0,
            "terminal": (t["acknowledged"] or 0) + (t["archived"] or 0), "output_records": o["n"],
            "visible_records": o["visible"] or 0, "aborted_records": o["aborted"] or 0,
            "open_records": o["open"] or 0}


def _recheck(rows, hist, recs, events, group, input_topic, output_topic, allowed_at_least_once,
             expect, require_output) -> None:
    """Classify duplicate-output / output-without-ack with kipviz.eos itself: the records' own
    events (their share-record moves, their output records and the markers that ended them) are
    rebuilt from the DataFrames and checked by check_share_eos, whose classification, KIP-1289
    case and wording are then taken. Needs the model's event order (RecordAppended seq); without
    it the outcome stays a plain violation."""
    from pyspark.sql import functions as F

    from ..broker.events import RecordAppended, StateChanged
    spark = events.sparkSession
    rids = sorted({r["rid"] for r in rows})
    wanted = spark.createDataFrame([(x,) for x in rids], "rid string")
    h = hist.join(F.broadcast(wanted), "rid").collect()
    appended = (events.filter((F.col("kind") == "RecordAppended") & (F.col("topic") == output_topic))
                .select("partition", "offset", "seq"))
    outs = recs.join(F.broadcast(wanted.withColumnRenamed("rid", "source")), "source") \
        .join(appended, ["partition", "offset"], "left").collect()
    marks = {(o["partition"], o["marker_offset"]) for o in outs if o["marker_offset"] is not None}
    mrows = []
    if marks:
        mk = spark.createDataFrame(list(marks), "partition int, offset bigint")
        mrows = appended.join(F.broadcast(mk), ["partition", "offset"]).collect()
    mseq = {(m["partition"], m["offset"]): m["seq"] for m in mrows}
    if any(o["seq"] is None for o in outs) or any(mseq.get(k) is None for k in marks):
        return
    evs = [StateChanged(seq=e["seq"], t=0, machine=checker.MACHINE, key=f"{group}/{e['rid']}",
                        from_state=e["from_state"], to_state=e["to_state"], cause=e["cause"]) for e in h]
    for o in outs:
        evs.append(RecordAppended(seq=o["seq"], t=0, topic=output_topic, partition=o["partition"], offset=o["offset"],
                                  record={"headers": [(checker.SOURCE_HEADER, o["source"])]},
                                  producer_id=o["producer_id"], transactional=bool(o["is_transactional"])))
    for (p, off), q in mseq.items():
        mt = next(o["marker_type"] for o in outs if o["partition"] == p and o["marker_offset"] == off)
        pid = next(o["producer_id"] for o in outs if o["partition"] == p and o["marker_offset"] == off)
        evs.append(RecordAppended(seq=q, t=0, topic=output_topic, partition=p, offset=off, record={"type": mt},
                                  producer_id=pid, transactional=True, control=True))
    evs.sort(key=lambda e: e.seq)
    rep = checker.check_share_eos(evs, group=group, input_topic=input_topic, output_topic=output_topic,
                                  allowed_at_least_once=allowed_at_least_once, expect=expect,
                                  require_output=require_output)
    found = {(v["kind"], v["input"]): v for v in rep.violations}
    for r in rows:
        v = found.get((r["kind"], (r["topic"], r["partition"], r["offset"])))
        if v is not None:
            r["detail"], r["classification"], r["case"] = v["detail"], v["classification"], v["case"]
