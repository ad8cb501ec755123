"""Design review of a new or changed schema file (a KIP draft): validate it, compare it with the
released definition, flag compatibility problems, and write one self-contained HTML report.

    r = review("TxnShareAcknowledgeRequest.json")            # a file, schema text, or a MessageSpec
    r = review(path, against="TxnOffsetCommitRequest")       # a kit message, a schema file or
                                                             #   directory, or "none" (a new RPC)
    r.ok, r.findings, print(r.summary()), r.to_html()

Without `against` the draft is compared with the kit's definition of the same name, else with
Kafka's own schema file of that name (../shared/kafka or KIPVIZ_KAFKA_REF), else treated as a new
RPC. The rules are in checks.py; `kipviz review FILE` is the same call on the command line.

Beside the schema: the errors each shown version can return (kipviz.broker.errors_by_version), and
for a proposal the kit models (behaviour.MODELLED: KIP-1289's TxnShareAcknowledge) r.behaviour, the
"Open questions" its departures' scenarios and seeded random-fault workloads raise, each with a
runnable scenario name and its evidence; for any other draft r.behaviour says what was not
checked. review(..., behaviour=False) is the schema-only review."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ..schema.model import KitInfo, MessageSpec, VersionStatus
from ..schema.versions import Versions
from . import baseline as _baseline
from . import behaviour as _behaviour
from . import checks, samples, source
from .checks import RULES, Finding, ranges

__all__ = ["review", "Review", "Finding", "RULES"]

#: rules that mean "the bytes of an existing version change"
WIRE_RULES = frozenset({"field-removed-without-bound", "field-versions-narrowed", "field-added-to-old-version",
                        "non-ignorable-in-old-version", "existing-version-changed", "tag-reused"})


@dataclass
class Review:
    """A design review of one schema file: the draft, what it is compared with, and the findings."""
    draft: source.Draft
    baseline: _baseline.Baseline
    findings: list[Finding] = field(default_factory=list)
    spec: MessageSpec | None = None          # the draft, every version labelled (new ones "proposed")
    new_versions: list[int] = field(default_factory=list)
    changed_versions: list[int] = field(default_factory=list)
    examples: list[samples.Example] = field(default_factory=list)
    behaviour: object = None      # behaviour.Behaviour: open questions from the modelled proposal, or what was not checked

    @property
    def ok(self) -> bool:
        """Valid, and no error-level finding."""
        return self.draft.error is None and not self.errors

    @property
    def errors(self) -> list[Finding]:
        """The findings of severity error."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """The findings of severity warning."""
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def name(self) -> str:
        """The reviewed message's name (or its file's, when it did not parse)."""
        return self.draft.spec.name if self.draft.spec else self.draft.source

    @property
    def shown_versions(self) -> list[int]:
        """Versions the report draws: new and changed ones, else the newest."""
        if self.spec is None:
            return []
        vs = sorted(set(self.new_versions) | set(self.changed_versions))
        return vs or [self.spec.valid.hi]

    def counts(self) -> dict[str, int]:
        """How many findings of each severity."""
        return {s: sum(f.severity == s for f in self.findings) for s in checks.SEVERITIES}

    def summary(self) -> str:
        """Plain text: what was reviewed, against what, the verdict and one line per finding."""
        lines = [f"review of {self.name} ({self.draft.source})", f"compared with {self.baseline.label}"]
        if self.spec is not None:
            lines.append(f"versions {self.spec.valid}: new {ranges(self.new_versions) or 'none'}; "
                         f"changed {ranges(self.changed_versions) or 'none'}")
        lines += [str(f) for f in self.findings]
        bad = [e for e in self.examples if not e.ok]
        lines += [f"example v{e.version}: {e.problem}" for e in bad if not any(
            f.rule == "example-roundtrip" for f in self.findings)]
        lines += errors_lines(self)
        if self.behaviour is not None:
            lines += self.behaviour.summary_lines()
        c = self.counts()
        verdict = "OK" if self.ok else "NOT OK"
        lines.append(f"{verdict}: {c['error']} error(s), {c['warning']} warning(s), {c['info']} note(s)")
        return "\n".join(lines)

    def to_html(self, *, title: str | None = None) -> str:
        """One self-contained HTML page (inline SVG, styles and script; nothing fetched)."""
        from .report import render
        return render(self, title=title, standalone=True)

    def save(self, path) -> Path:
        """Write the HTML report to `path`; returns the path."""
        p = Path(path)
        p.write_text(self.to_html(), encoding="utf-8")
        return p

    def _repr_html_(self) -> str:
        from .report import render
        return render(self, standalone=False)

    def __repr__(self) -> str:
        c = self.counts()
        return f"<Review {self.name}: {'ok' if self.ok else 'not ok'}, {c['error']} errors, {c['warning']} warnings>"


def _labelled(draft: MessageSpec, base: MessageSpec | None, official: bool, new: list[int],
              changed: list[int]) -> MessageSpec:
    """The draft with a status for every version, so pictures carry the right label: the draft's own
    labels if it has them; else the baseline's for unchanged versions, and "proposed" for new or
    changed ones."""
    if draft.kit is not None and all(draft.status(v) for v in draft.versions):
        return draft
    statuses = []
    for v in draft.versions:
        vs = Versions(v, v)
        own = draft.status(v)
        if own is not None:
            statuses.append(dataclasses.replace(own, versions=vs))
        elif v in changed:
            statuses.append(VersionStatus(vs, "proposed", change="changed by this draft",
                                          note=f"this draft changes existing v{v}"))
        elif v in new or base is None:
            statuses.append(VersionStatus(vs, "proposed", change="new in this draft"))
        elif base.status(v) is not None:
            statuses.append(dataclasses.replace(base.status(v), versions=vs))
        else:
            statuses.append(VersionStatus(vs, "released", note="as in Kafka's schema file" if official else ""))
    about = draft.kit.about if draft.kit else "draft under review"
    kit = KitInfo(about=about, statuses=tuple(statuses),
                  api_key_candidates=draft.kit.api_key_candidates if draft.kit else ())
    return dataclasses.replace(draft, kit=kit)


def errors_lines(r: Review) -> list[str]:
    """'Errors this version can return' for the shown versions, from kipviz.broker.api_errors."""
    from ..broker.api_errors import ERROR_ROWS, errors_by_version
    if r.spec is None:
        return []
    api = r.spec.api
    if api not in ERROR_ROWS:
        return [f"errors this version can return: the model declares no error table for {api}"]
    table = errors_by_version(api)
    out = []
    for v in r.shown_versions:
        if v not in table:
            out.append(f"errors {api} v{v} can return: not declared (the model does not serve v{v})")
            continue
        out.append(f"errors {api} v{v} can return ({len(table[v])}): {', '.join(table[v])}")
    return out


def review(path_or_spec, against=None, *, examples: bool = True, behaviour: bool = True,
           pictures: bool = False) -> Review:
    """Review a schema file, schema text or MessageSpec (see the module docstring).

    A file that cannot be read raises SchemaError; a draft that does not validate gives a Review
    whose single finding is the precise error (file, line, field)."""
    draft = source.read(path_or_spec)
    if draft.error is not None:
        e = draft.error
        finding = Finding("invalid", "error", e.path or "(file)", str(e),
                          "The schema does not load, so nothing else was checked. Fix this and review again.",
                          line=draft.line)
        return Review(draft, _baseline.Baseline(None, "nothing (the draft does not load)"), [finding])
    spec = draft.spec
    base = _baseline.find(spec.name, against)
    findings = checks.run(spec, base.spec, official=base.official)
    findings = [dataclasses.replace(f, line=_line(draft.text, f)) for f in findings]
    subject = checks.Subject(spec, base.spec, base.official)
    new, shared = subject.new_versions, subject.shared
    changed = sorted({v for f in findings if f.rule in WIRE_RULES for v in f.versions if v in shared})
    labelled = _labelled(spec, base.spec, base.official, new, changed)
    r = Review(draft, base, findings, labelled, new, changed)
    if examples:
        r.examples = [samples.example(labelled, v, base.spec) for v in r.shown_versions]
        for ex in r.examples:
            if not ex.ok:
                r.findings.insert(0, Finding("example-roundtrip", "error", "(message)", ex.problem,
                                             "The kit's example value for this version does not survive an "
                                             "encode/decode round trip with the draft, so the definition cannot "
                                             "be implemented as written.", (ex.version,)))
    if behaviour:
        r.behaviour = _behaviour.behaviour(labelled, pictures=pictures)
    return r


def _line(text: str | None, f: Finding) -> int | None:
    if text is None or f.path.startswith("("):
        return source.locate(text, None, "'apiKey'") if f.path == "(apiKey)" else None
    path = f.path
    while path:
        line = source.locate(text, path)
        if line is not None:
            return line
        path = path.rpartition(".")[0]        # a removed field: point at its parent
    return None
