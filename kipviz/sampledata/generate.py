"""Run a workload (or a registered scenario) and write its sample-data directory.

    from kipviz.sampledata import generate
    manifest = generate("regular_eos", "out/regular_eos", records=10_000, seed=0, progress=True)

Names: a workload (regular_eos, share_eos, kip1319, kip516; --records scales it) or any scenario
of kipviz.scenarios.catalog() (a fixed script: its run is written as it is)."""
from __future__ import annotations

from importlib import metadata

import pyarrow as pa

from ..errors import KipvizError
from ..gcpause import rare_collections
from ..workloads.samples import START_MS, WORKLOADS, Run
from .writer import RunWriter

DRAIN_EVENTS = 100_000       # hand events and new log batches to the writer every this many events
MAX_RECORDS = 1_000_000_000
SHARE_EOS = "share_eos"


def names() -> list[str]:
    """Every accepted --scenario name: the workloads, then the registered scenarios."""
    from .. import scenarios
    return [*WORKLOADS, SHARE_EOS] + [s["name"] for s in scenarios.catalog()]


def _version() -> str:
    try:
        return metadata.version("kipviz")
    except metadata.PackageNotFoundError:
        return "unknown"


class _Sink:
    """The workloads' step(): progress, and every DRAIN_EVENTS events the events and new log
    batches go to the writer (written log prefixes behind every reader are released)."""

    def __init__(self, writer: RunWriter, bar, every: int):
        self.writer, self.bar, self.every = writer, bar, every

    def __call__(self, cluster, done: int, readers: dict | None) -> None:
        if done and self.bar is not None:
            self.bar.update(done)
        if readers is None or len(cluster.events) >= self.every:
            self.drain(cluster, readers)

    def drain(self, cluster, readers=None) -> None:
        take = getattr(cluster, "take_events", None)
        if take is None:           # a model without take_events: keep everything until the end
            return
        self.writer.drain(take(), cluster, release=readers)


def _check(name: str, records, seed) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise KipvizError(f"--seed must be a non-negative integer, got {seed!r}")
    if name in WORKLOADS or name == SHARE_EOS:
        if records is None:
            return
        if not isinstance(records, int) or isinstance(records, bool) or not 1 <= records <= MAX_RECORDS:
            raise KipvizError(f"--records must be an integer from 1 to {MAX_RECORDS:,}, got {records!r}")
        return
    from .. import scenarios
    try:
        scenarios.get(name)
    except KeyError as e:
        raise KipvizError(f"unknown scenario {name!r}: a workload ({', '.join([*WORKLOADS, SHARE_EOS])}) or a "
                          f"registered scenario ({e.args[0].split('; ', 1)[-1]})") from None
    if records is not None:
        raise KipvizError(f"{name} is a fixed scenario script: --records applies to the workloads "
                          f"({', '.join([*WORKLOADS, SHARE_EOS])})")


def generate(name: str, out, *, records: int | None = None, seed: int = 0, progress: bool = False,
             drain_every: int = DRAIN_EVENTS) -> dict:
    """Run `name` with `seed` and write the sample directory `out`; returns the manifest."""
    _check(name, records, seed)
    with rare_collections():
        return _generate(name, out, records, seed, progress, drain_every)


def _generate(name, out, records, seed, progress, drain_every) -> dict:
    writer = RunWriter(out)
    try:
        return _run(name, writer, records, seed, progress, drain_every)
    except BaseException:
        writer.abandon()
        raise


def _run(name, writer, records, seed, progress, drain_every) -> dict:
    if name in WORKLOADS or name == SHARE_EOS:
        records = 1000 if records is None else records
        from tqdm import tqdm
        with tqdm(total=records, unit="rec", desc=name, disable=not progress, leave=False) as bar:
            sink = _Sink(writer, bar, drain_every)
            if name == SHARE_EOS:
                run = _share_eos(records, seed, sink)
            else:
                run = WORKLOADS[name][0](records, seed, sink)
            sink.drain(run.cluster)
        status = "proposed" if name == SHARE_EOS else WORKLOADS[name][1]
        meta = sample_meta(name, name, seed, records, run.cluster, status, run.group, run.input_topic, run.output_topic)
        meta["summary"] = run.summary
    else:
        from .. import scenarios
        return write_trace(scenarios.run(name, seed=seed), writer, seed=seed)
    return writer.close(run.cluster, meta)


def write_trace(trace, out, *, seed: int = 0, name: str | None = None) -> dict:
    """Write a run held in memory as a sample directory `out` (a path or a RunWriter); returns the
    manifest. `trace`: a kipviz.scenarios Trace (as `kipviz sample-data --scenario NAME` writes it)
    or a kipviz.workloads WorkloadResult whose events are still on its cluster (e.g. a share_eos run
    with a fault injected by hand); `name` labels the latter."""
    writer = out if isinstance(out, RunWriter) else RunWriter(out)
    cluster = trace.cluster
    writer.drain(cluster.events, cluster)
    data = sum(1 for t in cluster.topics.by_id.values() if not t.internal
               for log in t.partitions for e in log.entries if e.control is None)
    sc = getattr(trace, "scenario", None)
    if sc is not None:
        meta = sample_meta(sc.name, "scenario", seed, data, cluster, sc.status, None, None, None)
        meta["summary"] = {"checks": len(trace.checks), "checks_passed": len(trace.checks) - len(trace.failures()),
                           "kip": sc.kip}
    else:
        meta = sample_meta(name or "run", "memory", seed, data, cluster, "proposed" if cluster.features.on("KIP-1289")
                     else "released", getattr(trace, "group", None), getattr(trace, "input_topic", None),
                     getattr(trace, "output_topic", None))
        meta["summary"] = _reproducible(getattr(trace, "stats", {}), getattr(trace, "faults", []))
    return writer.close(cluster, meta)


def _reproducible(stats: dict, faults: list) -> dict:
    """A run's stats and fault rows without their wall-clock parts (not reproducible)."""
    return {"stats": {k: v for k, v in stats.items() if k not in ("wall_s", "input_s")},
            "faults": [{k: v for k, v in row.items() if not k.startswith("wall")} for row in faults]}


def sample_meta(scenario, workload, seed, records, cluster, status, group, input_topic, output_topic) -> dict:
    """A sample's manifest "meta": what ran (scenario, workload, seed, records, release, options) and the
    command that writes it again."""
    cmd = f"kipviz sample-data --scenario {scenario}" + (f" --records {records}" if workload != "scenario" else "") \
        + f" --seed {seed}"
    meta = {"scenario": scenario, "workload": workload, "seed": seed, "records": records,
            "kipviz_version": _version(), "release": cluster.config.release or "trunk",
            "share_version": cluster.features.level("share.version"), "status": status, "group": group,
            "input_topic": input_topic, "output_topic": output_topic,
            "generator": {"command": cmd, "pyarrow": pa.__version__}}
    if cluster.features.on("KIP-1289"):    # KIP-1289's marker hook: as written ("page") or the kit's suggestion
        meta["share_marker_routing"] = cluster.config.share_marker_routing
    return meta


SHARE_FAULTS_PER = 1_000       # one scheduled KIP-1289 fault per this many input records (3 to 20)


def share_eos_options(records: int, seed: int) -> dict:
    """The share_eos workload's settings for `records`: 4 workers over 4 input partitions and a
    seeded schedule of the seed's corner-case faults (random_faults, DEFAULT_KINDS)."""
    from ..workloads import random_faults
    batch = max(10, min(500, records // 200))
    steps = max(1, records // batch)
    count = max(3, min(20, records // SHARE_FAULTS_PER))
    return {"records": records, "consumers": 4, "partitions": 4, "seed": seed, "batch": batch,
            "faults": random_faults(seed, steps=steps, count=count, brokers=3, consumers=4),
            "load_batch": max(50, min(1000, records // 100))}


def _share_eos(records: int, seed: int, sink: _Sink) -> Run:
    """kipviz.workloads.share_eos (KIP-1289, proposed) with its events handed over in chunks: each
    chunk goes to the writer with the logs written so far; the input is released below each share
    partition's start offset (SPSO), the output below its last stable offset."""
    from ..workloads import ShareEosWorkload
    opts = share_eos_options(records, seed)
    from ..workloads.pace import Pace
    wl = ShareEosWorkload(events_chunk=sink.every, cluster_settings={"start_ms": START_MS}, pace=Pace(seed), **opts)
    state = {"done": 0}

    def on_events(chunk):
        c = wl.cluster
        spso = {}
        if getattr(wl, "input_id", None) is not None:
            for p in range(wl.partitions):
                sp = c.shares.partitions.get((wl.group, wl.input_id, p))
                spso[(wl.input, p)] = sp.spso if sp is not None else 0
        sink.writer.drain(chunk, c, release=spso)
        done = min(records, wl.consumed()) if getattr(wl, "input_id", None) is not None else 0
        if sink.bar is not None and done > state["done"]:
            sink.bar.update(done - state["done"])
            state["done"] = done

    wl.on_events = on_events
    result = wl.run()
    if sink.bar is not None and records > state["done"]:
        sink.bar.update(records - state["done"])
    return Run(result.cluster, SHARE_EOS, records, result.group, result.input_topic, result.output_topic,
               {**_reproducible(result.stats, result.faults),
                "schedule": [{"at": f.at, "kind": f.kind, "case": f.case, "params": f.params} for f in opts["faults"]]})
