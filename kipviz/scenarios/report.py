"""A scenario run as a learner reads it: its findings first (what goes wrong, who sees it, what the
KIP says), then its checks as whole sentences. One renderer for notebooks (show()), `kipviz scenario`
and its `--html` page.

    from kipviz.scenarios.report import report
    report(trace)             # in a notebook: findings, then the checks table (nothing cut)"""
from __future__ import annotations

import html

from . import Trace

# !important: JupyterLab right-aligns output table cells with a more specific rule
# (:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td), and sentences read badly right-aligned
_STYLE = ("<style>.kv-report table{border-collapse:collapse;margin:.3em 0 .8em}"
          ".kv-report td,.kv-report th{border:1px solid #ddd;padding:3px 8px;text-align:left!important;"
          "vertical-align:top;white-space:normal;max-width:60em}"
          ".kv-report .ok{color:#1b6e2d}.kv-report .fail{color:#b00020}.kv-report .detail{color:#555}"
          ".kv-report h4{margin:.6em 0 .2em}</style>")


def findings_html(trace: Trace) -> str:
    """The findings as a table (what / who sees it / what the KIP says); when there are none on
    purpose, the scenario's reason in one line."""
    if not trace.findings:
        reason = trace.scenario.no_findings
        return f'<p class="detail">Nothing goes wrong here: {html.escape(reason)}</p>' if reason else ""
    rows = "".join(f"<tr><td>{html.escape(f.what)}</td><td>{html.escape(f.who)}</td>"
                   f"<td>{html.escape(f.kip)}</td></tr>" for f in trace.findings)
    return ("<h4>Findings</h4><table><tr><th>what goes wrong</th><th>who sees it</th>"
            f"<th>what the KIP says</th></tr>{rows}</table>")


def checks_html(trace: Trace) -> str:
    """Every check as a whole sentence, with its detail when it failed."""
    rows = "".join(
        f'<tr><td class="{"ok" if c.passed else "fail"}">{"✓" if c.passed else "✗"}</td>'
        f"<td>{html.escape(c.description)}"
        + (f' <span class="detail">({html.escape(c.detail)})</span>' if c.detail and not c.passed else "")
        + "</td></tr>" for c in trace.checks)
    return f"<h4>Checks ({len(trace.checks) - len(trace.failures())}/{len(trace.checks)} passed)</h4><table>{rows}</table>"


def findings_text(trace: Trace, indent: str = "  ") -> list[str]:
    """The findings as plain lines (the CLI's text output)."""
    return [line for f in trace.findings
            for line in (f"{indent}! {f.what}", f"{indent}  who sees it: {f.who}", f"{indent}  the KIP: {f.kip}")]


class Report:
    def __init__(self, trace: Trace):
        self.trace = trace

    def _repr_html_(self) -> str:
        return f'{_STYLE}<div class="kv-report">{findings_html(self.trace)}{checks_html(self.trace)}</div>'

    def __repr__(self) -> str:
        lines = (["Findings:", *findings_text(self.trace)] if self.trace.findings else
                 [f"Nothing goes wrong here: {self.trace.scenario.no_findings}"] if self.trace.scenario.no_findings
                 else [])
        lines += [f"  {'✓' if c.passed else '✗'} {c.description}" for c in self.trace.checks]
        return "\n".join(lines)


def report(trace: Trace) -> Report:
    return Report(trace)
