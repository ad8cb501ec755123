"""The review as one HTML page for a review thread: verdict, validation, findings, the version diff,
wire diagrams of every new or changed version and an encoded example with an annotated hex dump.
Everything is inline (SVG, styles, the hex view's few lines of script): the file opens offline."""
from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..draw.diff import diff_diagram
from ..draw.hexdump import hexdump_html
from ..draw.render import inline_svg, to_svg
from ..draw.wire import wire_diagram
from ..errors import KipvizError
from ..schema.diff import version_diff
from . import source
from .checks import RULES, ranges
from .crossdiff import cross_diff
from .samples import to_json

if TYPE_CHECKING:
    from . import Review

__all__ = ["render"]

_CSS = """
.kvr{font-family:Helvetica,Arial,sans-serif;color:#222;font-size:14px;line-height:1.4}
.kvr h1{font-size:1.4em;margin:.2em 0}.kvr h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
.kvr h3{font-size:1em;margin:1em 0 .3em}
.kvr table.t{border-collapse:collapse;margin:.3em 0}
.kvr table.t td,.kvr table.t th{border:1px solid #e2e2e2;padding:3px 7px;text-align:left;vertical-align:top}
.kvr table.t th{background:#f6f6f6}
.kvr .verdict{display:inline-block;padding:3px 10px;border-radius:4px;font-weight:bold;color:#fff}
.kvr .verdict.ok{background:#1a7f37}.kvr .verdict.bad{background:#cf222e}
.kvr .sev{font-weight:bold;text-transform:uppercase;font-size:11px;padding:1px 5px;border-radius:3px}
.kvr .sev.error{background:#ffd7d5;color:#82071e}.kvr .sev.warning{background:#fff1c2;color:#7d4e00}
.kvr .sev.info{background:#ddf4ff;color:#0a3069}
.kvr .released{color:#1a7f37}.kvr .accepted{color:#9a6700}.kvr .proposed{color:#6639ba}
.kvr .why{color:#555;font-size:12px}
.kvr code,.kvr pre{font-family:Menlo,Consolas,monospace;font-size:12px}
.kvr pre.src{background:#f6f8fa;padding:6px;border:1px solid #e2e2e2;overflow:auto}
.kvr pre.src .hit{background:#ffd7d5;display:inline-block;width:100%}
.kvr .pic svg{max-width:100%;height:auto}.kvr .pic{margin:.5em 0 1em}
.kvr .note{color:#555;font-style:italic}
.kvr .okline{color:#1a7f37}.kvr .badline{color:#cf222e}
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _svg(make) -> str:
    """Render a graphviz picture inline, or say why it could not be."""
    try:
        return f'<div class="pic">{inline_svg(to_svg(make()))}</div>'
    except KipvizError as e:
        return f'<p class="note">picture not drawn: {_e(e)}</p>'


def _status_class(spec, v: int) -> str:
    st = spec.status(v) if spec is not None else None
    return st.status if st else ""


def _head(r: Review) -> list[str]:
    c = r.counts()
    verdict = ('<span class="verdict ok">OK</span>' if r.ok else
               f'<span class="verdict bad">{c["error"]} error{"s" if c["error"] != 1 else ""}</span>')
    spec = r.draft.spec
    rows = [("draft", r.draft.source)]
    if spec is not None:
        rows += [("message", f"{spec.name} ({spec.type})"), ("apiKey", spec.api_key if spec.api_key is not None
                                                              else "—"),
                 ("versions", f"{spec.valid} (flexible {spec.flexible})")]
    rows.append(("compared with", r.baseline.label))
    rows.append(("findings", f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} note(s)"))
    out = [f"<p>{verdict}</p>", '<table class="t">']
    out += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows]
    out.append("</table>")
    return out


def _versions(r: Review) -> list[str]:
    if r.spec is None:
        return []
    base = r.baseline.spec
    out = ["<h2>Versions</h2>", '<table class="t"><tr><th>version</th><th>label</th><th>in this draft</th>'
           "<th>flexible</th></tr>"]
    for v in r.spec.versions:
        what = ("new" if v in r.new_versions else "changed" if v in r.changed_versions
                else "unchanged" if base is not None else "new")
        out.append(f'<tr><td>v{v}</td><td class="{_status_class(r.spec, v)}">{_e(r.spec.status_label(v))}</td>'
                   f"<td>{what}</td><td>{'yes' if r.spec.is_flexible(v) else 'no'}</td></tr>")
    if base is not None:
        gone = [v for v in base.versions if v not in r.spec.valid]
        if gone:
            out.append(f'<tr><td colspan="4">baseline versions not in the draft: v{ranges(gone)}</td></tr>')
    out.append("</table>")
    return out


def _validation(r: Review) -> list[str]:
    d = r.draft
    out = ["<h2>Validation</h2>"]
    if d.error is None:
        out.append(f'<p class="okline">✓ {_e(d.source)} loads and validates ({_e(d.spec.name)}, '
                   f"{len(d.spec.versions)} version(s)).</p>")
        return out
    where = f" (line {d.line}" + (f", column {d.column}" if d.column else "") + ")" if d.line else ""
    out.append(f'<p class="badline">✗ {_e(d.error)}{_e(where)}</p>')
    lines = source.excerpt(d.text, d.line, 3)
    if lines:
        out.append('<pre class="src">' + "\n".join(
            (f'<span class="hit">{n:>4} │ {_e(t)}</span>' if hit else f"{n:>4} │ {_e(t)}") for n, t, hit in lines)
            + "</pre>")
    return out


def _findings(r: Review) -> list[str]:
    out = ["<h2>Findings</h2>"]
    if not r.findings:
        out.append('<p class="okline">No compatibility problems found.</p>')
        return out
    out.append('<table class="t"><tr><th>severity</th><th>rule</th><th>field</th><th>versions</th><th>line</th>'
               "<th>what and why</th></tr>")
    for f in r.findings:
        out.append(f'<tr><td><span class="sev {f.severity}">{f.severity}</span></td><td><code>{_e(f.rule)}</code>'
                   f"</td><td><code>{_e(f.path)}</code></td><td>{_e(f.versions_text)}</td>"
                   f"<td>{_e(f.line or '')}</td><td>{_e(f.message)}<div class=\"why\">{_e(f.explanation)}</div>"
                   "</td></tr>")
    out.append("</table>")
    return out


def _previous(r: Review, v: int) -> int | None:
    """The version a new one is diffed with: the newest baseline version below it, else v-1."""
    shared = [w for w in r.spec.versions if w < v and r.baseline.spec is not None and w in r.baseline.spec.valid]
    if shared:
        return max(shared)
    return v - 1 if v - 1 in r.spec.valid else None


def _rows_table(rows: list[dict]) -> str:
    return ('<table class="t"><tr><th>change</th><th>field</th><th>detail</th></tr>' + "".join(
        f"<tr><td>{_e(x['change'])}</td><td><code>{_e(x['path'])}</code></td><td>{_e(x['detail'])}</td></tr>"
        for x in rows) + "</table>")


def _diff(r: Review) -> list[str]:
    if r.spec is None:
        return []
    base = r.baseline.spec
    out = ["<h2>Version diff</h2>"]
    shown = False
    for v in r.new_versions:
        prev = _previous(r, v)
        if prev is None:
            continue
        shown = True
        if base is not None and prev in base.valid:
            rows = cross_diff(base, prev, r.spec, v)
            out.append(f"<h3>{_e(r.baseline.label)} v{prev} ({_e(base.status_label(prev))}) → draft v{v} (new)</h3>")
        else:
            rows = version_diff(r.spec, prev, v)
            out.append(f"<h3>draft v{prev} → v{v} (new)</h3>")
        out.append(_rows_table(rows) if rows else
                   f'<p class="note">v{v} has the same fields and encoding as v{prev}.</p>')
        note = (f" (the draft's own v{prev}, which this draft changes)" if prev in r.changed_versions else "")
        out.append(f'<p class="note">Side by side: draft v{prev} and v{v}{_e(note)}.</p>')
        out.append(_svg(lambda p=prev, v=v: diff_diagram(r.spec, p, v)))
    if r.changed_versions:
        shown = True
        rows = [f for f in r.findings if f.path != "(apiKey)" and set(f.versions) & set(r.changed_versions)]
        out.append(f"<h3>Existing versions changed: v{ranges(r.changed_versions)}</h3>")
        out.append('<table class="t"><tr><th>field</th><th>change</th><th>versions</th><th>baseline says</th></tr>'
                   + "".join(f"<tr><td><code>{_e(f.path)}</code></td><td>{_e(f.message)}</td>"
                             f"<td>{_e(f.versions_text)}</td><td>{_e(_labels(base, f.versions))}</td></tr>"
                             for f in rows) + "</table>")
    if not shown:
        out.append('<p class="note">' + ("Nothing to diff: a new RPC with a single version." if base is None
                                         else "No version is new or changed on the wire.") + "</p>")
    return out


def _labels(base, versions) -> str:
    if base is None:
        return ""
    return "; ".join(dict.fromkeys(f"v{v}: {base.status_label(v)}" if base.kit else "released (Kafka's schema)"
                                   for v in versions))


def _wires(r: Review) -> list[str]:
    if r.spec is None:
        return []
    out = ["<h2>Wire diagrams</h2>"]
    for v in r.shown_versions:
        out.append(f'<h3>{_e(r.spec.name)} v{v} <span class="{_status_class(r.spec, v)}">'
                   f"({_e(r.spec.status_label(v))})</span></h3>")
        ex = next((e for e in r.examples if e.version == v and e.ok), None)
        out.append(_svg(lambda v=v, ex=ex: wire_diagram(r.spec, v, example=ex.value if ex else None)))
    return out


def _examples(r: Review) -> list[str]:
    if not r.examples:
        return []
    out = ["<h2>Example: encode, decode, read with the baseline</h2>"]
    for ex in r.examples:
        out.append(f"<h3>v{ex.version}</h3>")
        if not ex.ok:
            out.append(f'<p class="badline">✗ {_e(ex.problem)}</p>')
        else:
            out.append(f'<p class="okline">✓ the example encodes to {len(ex.data)} bytes and decodes back to the '
                       "same value.</p>")
        if ex.base_reading is not None:
            cls = "okline" if ex.base_ok else "badline"
            out.append(f'<p class="{cls}">{"✓" if ex.base_ok else "✗"} {_e(r.baseline.label)} v{ex.version} '
                       f"{_e(ex.base_reading)}</p>")
        if ex.data is not None:
            out.append(hexdump_html(ex.data, ex.spans, title=f"{r.spec.name} v{ex.version} body: "
                                                             f"{len(ex.data)} bytes", titles="cells"))
        if ex.value is not None:
            out.append(f"<details><summary>example value (JSON)</summary><pre>{_e(to_json(ex.value))}</pre>"
                       "</details>")
    return out


def _error_table(r: Review) -> list[str]:
    from ..broker.api_errors import ERROR_ROWS, errors_by_version, new_errors, source_of
    if r.spec is None:
        return []
    api = r.spec.api
    out = ["<h2>Errors this version can return</h2>"]
    if api not in ERROR_ROWS:
        return out + [f'<p class="note">The model declares no error table for {_e(api)}.</p>']
    table = errors_by_version(api)
    out.append('<table class="t"><tr><th>version</th><th>errors</th><th>new since the version before</th></tr>')
    for v in r.shown_versions:
        if v not in table:
            out.append(f"<tr><td>v{v}</td><td colspan=2>not declared (the model does not serve v{v})</td></tr>")
            continue
        added = new_errors(api, v - 1, v)["added"] if v - 1 in table else []
        out.append(f"<tr><td>v{v}</td><td>{_e(', '.join(table[v]))}</td><td>" + "<br>".join(
            f"<code>{_e(n)}</code> <span class=\"why\">{_e(source_of(api, n))}</span>" for n in added) + "</td></tr>")
    out.append("</table>")
    return out


def _open_questions(r: Review) -> list[str]:
    b = r.behaviour
    if b is None:
        return []
    out = ["<h2>Open questions</h2>"]
    if b.kip is None:
        return out + [f'<p class="note">Behaviour not checked: {_e(b.not_checked)}</p>']
    out.append(f'<p class="note">{len(b.questions)} question(s) from {_e(b.kip)}\'s scenarios and random-fault '
               f"workloads under the page-as-written settings ({b.seconds:.1f} s).</p>")
    for i, q in enumerate(b.questions, 1):
        state = ("shown" if q.holds else "not as stated") if q.ran else "scenario not in this build"
        out.append(f"<h3>{i}. [{_e(q.kind)}] {_e(q.key)}</h3>")
        out.append('<table class="t">' + "".join(f"<tr><th>{k}</th><td>{_e(v)}</td></tr>" for k, v in (
            ("the page", q.page), ("the model", q.model), ("kit's suggestion", q.suggestion or "—"),
            ("scenario", q.scenario), ("outcome", f"{state}: {q.outcome}"))) + "</table>")
        if q.evidence:
            out.append("<details><summary>evidence (checks and events)</summary><pre>"
                       + _e("\n".join(q.evidence)) + "</pre></details>")
        if q.sequence_svg:
            out.append(f"<details><summary>sequence diagram of {_e(q.scenario)}</summary>"
                       f'<div class="pic">{inline_svg(q.sequence_svg)}</div></details>')
    return out


def _rules() -> list[str]:
    return ["<h2>Rules checked</h2>", '<table class="t"><tr><th>rule</th><th>usual severity</th><th>catches</th></tr>'
            + "".join(f"<tr><td><code>{_e(k)}</code></td><td>{_e(sev)}</td><td>{_e(what)}</td></tr>"
                      for k, (what, sev) in RULES.items()) + "</table>"]


def render(r: Review, *, title: str | None = None, standalone: bool = True) -> str:
    """The review as HTML: a standalone page, or a fragment for a notebook (standalone=False)."""
    title = title or f"Design review: {r.name}"
    body = ['<div class="kvr">', f"<style>{_CSS}</style>", f"<h1>{_e(title)}</h1>"]
    for part in (_head, _validation, _findings, _open_questions, _versions, _diff, _error_table, _wires,
                 _examples):
        body += part(r)
    if standalone:
        body += _rules()
        body.append('<p class="note">Written by kipviz review from the schema text alone; no network was used '
                    "and this page loads nothing.</p>")
    body.append("</div>")
    text = "\n".join(body)
    if not standalone:
        return text
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{_e(title)}</title>\n</head>\n<body>\n{text}\n</body>\n</html>\n")
