"""Run a workload (or a registered scenario) and write its sample-data directory.

    from kipviz.sampledata import generate
    manifest = generate("regular_eos", "out/regular_eos", records=10_000, seed=0, progress=True)

Names: a workload (regular_eos, share_eos, kip1319, kip516; --records scales it) or any scenario
of kipviz.scenarios.catalog() (a fixed script: its run is written as it is)."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from importlib import metadata

import pyarrow as pa

from ..errors import KipvizError
from .workloads import WORKLOADS, Run
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

    def events(self, events) -> None:
        self.writer.add_events(events)

    def drain(self, cluster, readers=None) -> None:
        take = getattr(cluster, "take_events", None)
        if take is None:           # a model without take_events: keep everything until the end
            return
        self.writer.add_events(take())
        self.writer.add_logs(cluster, release=readers)


@contextmanager
def _fewer_collections():
    """A run allocates millions of short-lived, acyclic objects (events, records, frames) next to a
    large live set (the model, the unreleased logs): with the default thresholds the cyclic
    collector rescans that live set so often that it takes a third of the time."""
    old = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*old)


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
    with _fewer_collections():
        return _generate(name, out, records, seed, progress, drain_every)


def _generate(name, out, records, seed, progress, drain_every) -> dict:
    writer = RunWriter(out)
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
        meta = _meta(name, name, seed, records, run.cluster, status, run.group, run.input_topic, run.output_topic)
        meta["summary"] = run.summary
    else:
        from .. import scenarios
        trace = scenarios.run(name, seed=seed)
        writer.add_events(trace.cluster.events)
        writer.add_logs(trace.cluster)
        data = sum(1 for t in trace.cluster.topics.by_id.values() if not t.internal
                   for log in t.partitions for e in log.entries if e.control is None)
        meta = _meta(name, "scenario", seed, data, trace.cluster, trace.scenario.status, None, None, None)
        meta["summary"] = {"checks": len(trace.checks), "checks_passed": len(trace.checks) - len(trace.failures()),
                           "kip": trace.scenario.kip}
        run = trace
    return writer.close(run.cluster, meta)


def _meta(scenario, workload, seed, records, cluster, status, group, input_topic, output_topic) -> dict:
    cmd = f"kipviz sample-data --scenario {scenario}" + (f" --records {records}" if workload != "scenario" else "") \
        + f" --seed {seed}"
    return {"scenario": scenario, "workload": workload, "seed": seed, "records": records,
            "kipviz_version": _version(), "release": cluster.config.release or "trunk",
            "share_version": cluster.config.share_version, "status": status, "group": group,
            "input_topic": input_topic, "output_topic": output_topic,
            "generator": {"command": cmd, "pyarrow": pa.__version__}}


def _share_eos(records: int, seed: int, sink: _Sink) -> Run:
    try:
        from ..workloads import share_eos as shared
    except ImportError as e:
        raise KipvizError(f"the share_eos workload is not available in this build ({e})") from None
    raise KipvizError("the share_eos workload is not wired up yet") if shared is None else None
