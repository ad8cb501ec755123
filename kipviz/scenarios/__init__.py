"""Named, seeded scripts over the public API (the same calls notebooks make), returning traces.

    from kipviz import scenarios
    scenarios.catalog()                         # [{name, title, kip, status, summary}, ...]
    trace = scenarios.run("kip1319.stale_member_epoch_v6", seed=0)
    trace.findings                              # what goes wrong, who sees it, what the KIP says
    trace.checks                                # what the scenario asserts, each with pass/fail
    trace.events                                # everything the model did (typed events)

Pictures are drawn from the events by kipviz.draw, never by the scenario (a lower layer):
    from kipviz.draw.sequence import sequence_svg; sequence_svg(trace)
    from kipviz.draw.animate import animation; animation(trace, "transaction")

A scenario is a function `(trace: Trace) -> None` registered with @scenario; it drives
trace.cluster (and client models) and records expectations with trace.expect(...)."""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from ..broker import Cluster
from ..table import frame

_REGISTRY: dict[str, "Scenario"] = {}


@dataclass(frozen=True)
class Finding:
    """One thing a scenario teaches: what goes wrong, who sees it, and what the KIP (or Kafka's
    source) says about it -- shown before the checks in show(), the notebooks and `--html`."""
    what: str       # what goes wrong (or, for a guarantee the run confirms, what holds)
    who: str        # who sees it: the application, an operator, a read_committed reader, ...
    kip: str        # what the KIP says (or is silent about), or the released behaviour


@dataclass(frozen=True)
class Scenario:
    name: str                   # "kip516.stale_read", "kip1319.group_id_not_found_v5", ...
    title: str
    kip: str | None
    status: str                 # released / accepted / proposed: what the scenario demonstrates
    summary: str
    run: Callable[["Trace"], None]
    cluster_settings: dict = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    no_findings: str = ""       # why a run has nothing to find (a happy path whose checks say it all)


@dataclass
class Check:
    description: str
    passed: bool
    detail: str = ""


@dataclass
class Trace:
    scenario: Scenario
    seed: int
    cluster: Cluster
    checks: list[Check] = field(default_factory=list)
    result: dict = field(default_factory=dict)     # values a notebook may want (ids, offsets, errors)
    found: list[Finding] = field(default_factory=list)   # findings worded from this run's own events

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def events(self) -> list:
        return self.cluster.events

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.scenario.findings + tuple(self.found)

    def find(self, what: str, who: str, kip: str) -> None:
        """A finding whose facts (the error answered, the offset reached) come from this run."""
        self.found.append(Finding(what, who, kip))

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def expect(self, description: str, condition: bool, detail: str = "") -> bool:
        self.checks.append(Check(description, bool(condition), detail))
        return bool(condition)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def requests(self):
        """One row per request/response pair (pandas DataFrame; a kipviz.table.Table without pandas)."""
        from ..schema.error_codes import name_of
        from ..schema.events import ResponseSent
        rows = [{"t": e.t, "client": e.client, "broker": e.broker, "api": e.api, "version": e.version,
                 "correlation_id": e.correlation_id,
                 "errors": ", ".join(name_of(c) for c in e.error_codes) or "NONE"}
                for e in self.events if isinstance(e, ResponseSent)]
        return frame(rows)


# The scenarios' share groups read their topics from the start (written before the group existed):
# Kafka's default share.auto.offset.reset is "latest", so they say "earliest" explicitly.
EXPLICIT = {"share_auto_offset_reset": "earliest"}


def scenario(name: str, *, title: str, kip: str | None = None, status: str = "released", summary: str = "",
             findings: tuple[Finding, ...] = (), no_findings: str = "", **cluster_settings):
    """Register a scenario function under `name`; `findings` are what it teaches (Finding rows; a run
    adds its own with trace.find); `no_findings` says why a scenario has none, on purpose."""
    def register(fn: Callable[[Trace], None]):
        if name in _REGISTRY:
            raise ValueError(f"scenario {name} registered twice")
        _REGISTRY[name] = Scenario(name, title, kip, status, summary or (fn.__doc__ or "").strip(), fn,
                                   cluster_settings, tuple(findings), no_findings)
        return fn
    return register


def all_scenarios() -> dict[str, Scenario]:
    """Every registered scenario by name (each scenario module imported once)."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return _REGISTRY


def catalog() -> list[dict]:
    return [{"name": s.name, "title": s.title, "kip": s.kip, "status": s.status, "summary": s.summary}
            for s in sorted(all_scenarios().values(), key=lambda s: s.name)]


def get(name: str) -> Scenario:
    scenarios = all_scenarios()
    if name not in scenarios:
        close = [n for n in scenarios if name.split(".")[0] in n] or sorted(scenarios)
        raise KeyError(f"no scenario {name!r}; try one of: {', '.join(close[:6])}")
    return scenarios[name]


def run(name: str, seed: int = 0, **cluster_settings) -> Trace:
    """Run a scenario on a fresh cluster; its checks say whether the model did what the KIP says."""
    sc = get(name)
    cluster = Cluster(seed=seed, **{**EXPLICIT, **sc.cluster_settings, **cluster_settings})
    trace = Trace(sc, seed, cluster)
    sc.run(trace)
    return trace


__all__ = ["scenario", "run", "catalog", "get", "all_scenarios", "Trace", "Scenario", "Check", "Finding"]
