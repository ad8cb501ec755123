"""The behaviour half of a review: for a proposal the kit models, run its scenarios and a few
seeded random-fault workloads under the page-as-written settings and list what they show as open
questions, each with a runnable scenario name and the events that prove it. For a draft the kit
has no model of, say exactly what could not be checked.

    b = behaviour(spec)          # None-safe: spec.name decides the proposal
    b.questions, b.not_checked, b.seconds, b.summary_lines()

Bounded: the proposal's scenarios (about 0.1 s each) and WORKLOAD_SEEDS workloads of
WORKLOAD_RECORDS records each (well under a second each)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

#: request/response name stem -> (KIP, module holding its departures)
MODELLED = {"TxnShareAcknowledge": ("KIP-1289", "kip1289_departures")}
WORKLOAD_SEEDS = (0, 1, 2)
WORKLOAD_RECORDS = 120
WORKLOAD_BATCH = 10
EVIDENCE_LINES = 12
#: the page-as-written values of the model's proposal options (the kit's suggestions switched off).
#: Workloads run with them; a departure's scenario keeps its own settings (a "forwarded" scenario
#: shows the suggestion on purpose). Options this build does not have are left out.
PAGE_SETTINGS = {"share_marker_routing": "page"}


def page_settings() -> dict:
    """The cluster settings that play a KIP as its page is written (the ClusterConfig fields)."""
    import dataclasses

    from ..broker import ClusterConfig
    names = {f.name for f in dataclasses.fields(ClusterConfig)}
    return {k: v for k, v in PAGE_SETTINGS.items() if k in names}


@dataclass
class OpenQuestion:
    """A question a KIP's page leaves open, with the scenario that shows what the model does."""
    key: str
    kind: str               # inconsistency | violation | unspecified | not-modelled
    page: str
    model: str
    outcome: str
    scenario: str
    suggestion: str = ""
    ran: bool = False        # the scenario is registered in this build and was run
    holds: bool | None = None   # the scenario's checks pass (the stated outcome is what the model does)
    evidence: list[str] = field(default_factory=list)   # the events / checks that prove it
    sequence_svg: str | None = None
    command: str = ""        # how to run it again; default `kipviz scenario NAME`

    def line(self) -> str:
        """The question in one line: its kind, what the model does, the command to see it, and the outcome."""
        state = ("shown" if self.holds else "NOT as stated") if self.ran else "scenario not in this build"
        sug = f"; kit's suggestion: {self.suggestion}" if self.suggestion else ""
        cmd = self.command or f"kipviz scenario {self.scenario}"
        return (f"[{self.kind}] {self.key}: {self.model} -- run `{cmd}` "
                f"({state}: {self.outcome}){sug}")


@dataclass
class Behaviour:
    """The behaviour part of a review: the open questions of the API's KIP, from runs of its scenarios."""
    api: str
    kip: str | None
    questions: list[OpenQuestion] = field(default_factory=list)
    not_checked: str | None = None
    seconds: float = 0.0

    def summary_lines(self) -> list[str]:
        """The behaviour part in lines of text."""
        if self.kip is None:
            return [f"behaviour: not checked -- {self.not_checked}"]
        out = [f"Open questions ({self.kip}, page-as-written settings; {len(self.questions)} found in "
               f"{self.seconds:.1f} s):"]
        for i, q in enumerate(self.questions, 1):
            out += [f"  {i}. {q.line()}", f"     the page: {q.page}"]
        return out


def _evidence(trace) -> list[str]:
    """The checks, then the events an exactly-once report cites (its counterexample)."""
    lines = [f"{'✓' if c.passed else '✗'} {c.description}" + (f" ({c.detail[:160]})" if not c.passed else "")
             for c in trace.checks]
    rep = trace.result.get("eos")
    for v in getattr(rep, "violations", [])[:3]:
        lines.append(f"eos {v['classification']}: {v['kind']} {v['detail']}")
        for i in list(v["events"])[:EVIDENCE_LINES]:
            if isinstance(i, int) and 0 <= i < len(trace.events):
                lines.append(f"    #{i} {_event_line(trace.events[i])}")
    return lines


def _event_line(e) -> str:
    bits = [getattr(e, "kind", type(e).__name__)]
    for a in ("broker", "client", "api", "machine", "key", "from_state", "to_state", "cause", "text"):
        v = getattr(e, a, None)
        if v not in (None, ""):
            bits.append(f"{a}={v}")
    return f"t={getattr(e, 't', '?')} " + " ".join(str(b) for b in bits)


def _scenario_questions(module: str, *, pictures: bool) -> list[OpenQuestion]:
    import importlib

    from .. import scenarios
    from ..draw.sequence import sequence_svg
    mod = importlib.import_module(f"..scenarios.{module}", __package__)
    have = set(scenarios.all_scenarios())
    out = []
    for d in mod.DEPARTURES:
        q = OpenQuestion(d.key, d.kind, d.page, d.model, d.outcome, d.scenario, d.suggestion)
        if d.scenario in have:
            t = scenarios.run(d.scenario, seed=0)
            q.ran, q.holds, q.evidence = True, t.passed, _evidence(t)
            if pictures:
                try:
                    q.sequence_svg = sequence_svg(t)
                except Exception as e:        # a picture that cannot be drawn says why
                    q.evidence.append(f"(sequence diagram not drawn: {e})")
        out.append(q)
    return out


def workload_run(seed: int):
    """The random-fault share_eos workload a review runs, reproducible by seed."""
    from ..workloads.share_eos import run_share_eos
    from ..workloads.share_faults import random_faults
    steps = WORKLOAD_RECORDS // WORKLOAD_BATCH * 2
    return run_share_eos(records=WORKLOAD_RECORDS, consumers=2, partitions=2, seed=seed, batch=WORKLOAD_BATCH,
                         faults=random_faults(seed, steps=steps, consumers=2), cluster_settings=page_settings())


def _workload_questions() -> list[OpenQuestion]:
    out = []
    for seed in WORKLOAD_SEEDS:
        r = workload_run(seed)
        rep = r.check()
        bad = [v for v in rep.violations if v["classification"] == "violation"]
        if not bad:
            continue
        kinds = sorted({v["kind"] for v in bad})
        ev = [f"eos violation: {v['kind']} {v['input']}: {v['detail']} (events {list(v['events'])[:8]})"
              for v in bad[:EVIDENCE_LINES]]
        faults = [f"fault {f.get('kind')} at step {f.get('at')}: {f.get('outcome', '')}" for f in r.faults]
        out.append(OpenQuestion(
            f"workload-share-eos-seed-{seed}", "violation",
            "Proposed Changes: exactly-once for share-group read-process-write, except the documented "
            "at-least-once windows (cases 1 and 12).",
            f"{len(bad)} exactly-once violation(s) not in a documented window ({', '.join(kinds)}) under "
            f"random faults", "the eos checker's violations",
            f"share_eos workload seed {seed}", ran=True, holds=True, evidence=faults + ev,
            command=f"python -c \"from kipviz.review.behaviour import workload_run; "
                    f"print(workload_run({seed}).check().summary())\""))
    return out


def behaviour(spec, *, workloads: bool = True, pictures: bool = False) -> Behaviour:
    """Run the modelled proposal's departures and workloads (module docstring)."""
    api = spec.api if spec is not None else "?"
    if api not in MODELLED:
        return Behaviour(api, None, not_checked=(
            f"the kit has no model of {api}: no handler, record-state table or scenario, so nothing about "
            "its behaviour (state moves, fencing, markers, exactly-once, rollout) was checked; only the "
            "schema was. docs/modelling-a-kip.md says how to add one."))
    kip, module = MODELLED[api]
    t0 = time.monotonic()
    qs = _scenario_questions(module, pictures=pictures)
    if workloads:
        qs += _workload_questions()
    return Behaviour(api, kip, qs, seconds=time.monotonic() - t0)
