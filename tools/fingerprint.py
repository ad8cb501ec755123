"""Fingerprint the kit's public behaviour, to hold it through a refactor (issue 32).

    python tools/fingerprint.py -o before.json            # every scenario, the flows, the samples
    python tools/fingerprint.py -o after.json --compare before.json

For every scenario: the wire (each request and response frame, in order), the state changes, the
records appended, the checks and findings, the sentences the run told (what each
typed event says through its `text`), and its pictures (sequence diagram, every state-machine
animation's frames, the share record strip). Also the regular-vs-share flow pictures and the bundled
sample data regenerated into a temporary folder (each file's sha256). `--compare` prints every part
that differs and exits 1 when any does."""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def _h(*parts) -> str:
    d = hashlib.sha256()
    for p in parts:
        d.update(p if isinstance(p, bytes) else repr(p).encode())
        d.update(b"\x00")
    return d.hexdigest()[:16]


def _told(e) -> str | None:
    text = getattr(e, "text", None)
    return text if isinstance(text, str) else None


def scenario_parts(name: str) -> dict:
    from kipviz import draw
    from kipviz.draw.animate import animation
    from kipviz.draw.sequence import sequence_svg
    from kipviz.scenarios import run
    from kipviz.schema import events as ev

    trace = run(name)
    evs = trace.events
    wire = [(e.kind, e.api, e.version, e.frame) for e in evs if isinstance(e, (ev.RequestReceived, ev.ResponseSent))]
    states = [(e.machine, e.key, e.from_state, e.to_state, e.cause, e.status) for e in evs
              if isinstance(e, ev.StateChanged)]
    records = [(e.topic, e.partition, e.offset, e.key, e.value, e.producer_id, e.producer_epoch, e.control)
               for e in evs if isinstance(e, ev.RecordAppended)]
    told = [t for t in map(_told, (e for e in evs if not isinstance(e, ev.ClientDid))) if t]
    told_clients = [e.text for e in evs if isinstance(e, ev.ClientDid)]
    out = {
        "wire": _h(*[x for w in wire for x in w]),
        "states": _h(*states),
        "records": _h(*records),
        "checks": _h(*[(c.description, c.passed) for c in trace.failures()], trace.passed),
        "findings": _h(*[repr(f) for f in trace.findings]),
        "told": _h(*told),
        "told_clients": _h(*told_clients),      # the client models' sentences (issue 32 gave them one)
        "sequence": _h(sequence_svg(trace)),
    }
    for machine in sorted({e.machine for e in evs if isinstance(e, ev.StateChanged)}):
        try:
            out[f"animation:{machine}"] = _h(*animation(trace, machine).frames_svg())
        except Exception as e:     # a machine with no table of its own: record that it failed the same way
            out[f"animation:{machine}"] = f"error {type(e).__name__}"
    if any(isinstance(e, ev.StateChanged) and e.machine.startswith("share-record") for e in evs):
        try:
            out["record_strip"] = _h(draw.record_strip(evs).svg() if hasattr(draw.record_strip(evs), "svg")
                                     else repr(draw.record_strip(evs)._repr_html_()))
        except Exception as e:
            out["record_strip"] = f"error {type(e).__name__}"
    return out


def flows_parts() -> dict:
    from kipviz.draw import flows
    from kipviz.scenarios.flows import flow_runs, share_run
    out = {}
    for fn, runs in (("regular_vs_share_flow", flow_runs), ("share_flow", lambda: (share_run(),))):
        pic = getattr(flows, fn)(*runs())
        html = pic._repr_html_() if hasattr(pic, "_repr_html_") else str(pic)
        out[fn] = _h(html)
    return out


def samples_parts() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "kipviz", "sample-data", "--all", "-o", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        return {str(p.relative_to(tmp)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
                for p in sorted(Path(tmp).rglob("*")) if p.is_file()}


def fingerprint(samples: bool = True) -> dict:
    from kipviz.scenarios import all_scenarios
    out = {"scenarios": {n: scenario_parts(n) for n in sorted(all_scenarios())}, "flows": flows_parts()}
    if samples:
        out["samples"] = samples_parts()
    return out


def compare(a: dict, b: dict, path: str = "") -> list[str]:
    diffs = []
    for k in sorted(set(a) | set(b)):
        p = f"{path}/{k}" if path else k
        x, y = a.get(k), b.get(k)
        if k not in a:
            continue            # a part the older fingerprint did not have
        if isinstance(x, dict) and isinstance(y, dict):
            diffs += compare(x, y, p)
        elif x != y:
            diffs.append(f"{p}: {x} -> {y}")
    return diffs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--compare")
    ap.add_argument("--no-samples", action="store_true", help="skip regenerating the sample data (minutes)")
    ap.add_argument("--only", nargs="*", help="only these scenarios")
    args = ap.parse_args(argv)
    if args.only:
        out = {"scenarios": {n: scenario_parts(n) for n in args.only}}
    else:
        out = fingerprint(samples=not args.no_samples)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True))
    if args.compare:
        before = json.loads(Path(args.compare).read_text())
        if args.only:
            before = {"scenarios": {n: before["scenarios"].get(n) for n in args.only}}
        elif args.no_samples:
            before.pop("samples", None)
        diffs = compare(before, out)
        print("\n".join(diffs) if diffs else "same")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
