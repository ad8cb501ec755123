"""`kipviz` command line: thin commands over the library functions. Bad input and any failure: one
line on stderr, `kipviz: error: ...`, and exit 2 (1: checks or violations found; 130: Ctrl-C);
KIPVIZ_TRACEBACK=1 shows the traceback of an unexpected one."""
from __future__ import annotations

import argparse
import os
import sys

from .. import codec
from ..codec.jsonview import to_json
from ..errors import KipvizError
from ..schema.catalog import catalog
from .outputs import check_out


def cmd_list(args) -> int:
    """`kipviz list`: the messages, their versions and each version's status."""
    from ..schema import registry, releases
    release = releases.check(args.release) if args.release is not None else None
    rows = catalog()
    if args.name:
        rows = [r for r in rows if args.name.lower() in r["message"].lower()]
        if not rows:
            raise KipvizError(f"no message name contains {args.name!r} (see `kipviz list`)")
    if release is not None:            # only the versions that release serves (its labels decide)
        served = {m: set(releases.served_list(registry.get(m), release)) for m in {r["message"] for r in rows}}
        gone = [m for m in served if not served[m]]
        rows = [r for r in rows if r["version"] in served[r["message"]]]
        if args.name and not rows:
            raise KipvizError(f"Kafka {release} serves no version of {', '.join(sorted(gone))}")
    last = None
    for r in rows:
        if r["message"] != last:
            print(f"{r['message']} (api key {r['api_key']})")
            last = r["message"]
        flex = " flexible" if r["flexible"] else ""
        print(f"  v{r['version']:<3}{flex:<10} {r['label']}")
    return 0


def cmd_decode(args) -> int:
    """`kipviz decode`: a message's bytes (--hex or --file) decoded, or where they go wrong."""
    if (args.hex is None) == (args.file is None):
        raise KipvizError("give exactly one of --hex or --file")
    codec.plan(args.name, args.version)     # an unknown name or version is not about bytes: no "at byte 0"
    if args.hex is not None:
        try:
            data = codec.parse_hex(args.hex)
        except codec.DecodeError as e:      # about the text given, not a byte of the message
            raise KipvizError(f"--hex: {e.reason}") from None
    else:
        data = _read_bytes(args.file)
    if args.annotate:
        for s in codec.annotate(args.name, args.version, data):
            print(f"{s.start:>6}-{s.end:<6} {s.path:<50} {s.wire_type:<18} {s.value!r}")
    else:
        print(to_json(codec.decode(args.name, args.version, data)))
    return 0


# the most bytes `decode --file` reads: Kafka's socket.request.max.bytes default (104857600,
# SocketServerConfigs), the largest request a broker takes
MAX_DECODE_BYTES = 100 * 1024 * 1024


def _read_bytes(path: str) -> bytes:
    if os.path.isdir(path):
        raise KipvizError(f"{path}: is a directory")
    with open(path, "rb") as fh:
        data = fh.read(MAX_DECODE_BYTES + 1)
    if len(data) > MAX_DECODE_BYTES:
        raise KipvizError(f"{path}: more than {MAX_DECODE_BYTES} bytes (socket.request.max.bytes); not one message")
    return data


def _latest(name: str) -> int:
    from ..schema import registry
    return registry.get(name).valid.hi


def _write(content, out: str | None, binary: bool = False) -> None:
    if out:
        mode = "wb" if binary else "w"
        with open(out, mode) as fh:
            fh.write(content)
        print(f"wrote {out}", file=sys.stderr)
    elif binary:
        raise KipvizError("PNG output needs -o FILE")
    else:
        sys.stdout.write(content if content.endswith("\n") else content + "\n")


def _export(graph, fmt: str, out: str | None, title: str) -> None:
    from ..draw import to_html, to_png, to_svg
    if fmt == "png":
        _write(to_png(graph), out, binary=True)
    elif fmt == "html":
        _write(to_html(graph, title=title), out)
    else:
        _write(to_svg(graph), out)


def cmd_wire(args) -> int:
    """`kipviz wire`: a message version's byte layout as a picture."""
    from ..draw import wire_diagram
    version = args.version if args.version is not None else _latest(args.name)
    graph = wire_diagram(args.name, version, header=not args.no_header, example=True if args.example else None)
    _export(graph, args.format, args.output, f"{args.name} v{version}")
    return 0


def cmd_diff(args) -> int:
    """`kipviz diff`: what changed between two versions of a message, as text or a picture."""
    from ..draw import diff_diagram, version_diff
    if args.format == "text":
        rows = version_diff(args.name, args.a, args.b, errors=True)
        if not rows:
            print(f"{args.name} v{args.a} and v{args.b} have the same fields")
        for r in rows:
            print(f"{r['change']:<20} {r['path']:<45} {r['detail']}")
        return 0
    _export(diff_diagram(args.name, args.a, args.b), args.format, args.output, f"{args.name} v{args.a} vs v{args.b}")
    return 0


def cmd_scenarios(args) -> int:
    """`kipviz scenarios`: the scenarios by name, with their KIP and status."""
    from .. import scenarios
    rows = scenarios.catalog()
    if args.name:
        rows = [r for r in rows if args.name.lower() in r["name"].lower()]
    width = max((len(r["name"]) for r in rows), default=0)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['status']:<9} {r['kip'] or '-':<9} {r['title']}")
    return 0


def _marks() -> tuple[str, str]:
    """✓/✗, or plain text where the terminal's encoding cannot show them."""
    try:
        "✓✗".encode(sys.stdout.encoding or "ascii")
        return "✓", "✗"
    except (UnicodeEncodeError, LookupError):
        return "ok", "FAIL"


def _request_summary(events) -> str:
    """One line: each distinct (api, version, errors) in order of first appearance, with a count."""
    from ..schema.error_codes import name_of
    counts: dict[tuple, int] = {}
    for e in events:
        if e.kind == "ResponseSent":
            key = (e.api, e.version, tuple(name_of(c) for c in e.error_codes))
            counts[key] = counts.get(key, 0) + 1
    parts = []
    for (api, version, errors), n in counts.items():
        text = f"{api} v{version}" + (f" [{', '.join(errors)}]" if errors else "")
        parts.append(text + (f" ×{n}" if n > 1 else ""))
    return ", ".join(parts) or "none"


# the machine a KIP's scenarios are about, animated by default when it changed state (KIP-1289's
# corner cases are about the share records; its dense transaction machine hides them)
_KIP_MACHINE = {"KIP-1289": "share-record", "KIP-516": "replica"}
# drawn only when nothing else changed: every scenario that creates a topic moves a topic id
_LAST_RESORT = ("topic-id",)


def _pick_machine(trace, wanted: str | None) -> str | None:
    """--machine, else the machine of the scenario's KIP (_KIP_MACHINE) if it changed state, else
    "transaction" if a transaction changed state, else the first machine that did (topic ids last)."""
    if wanted:
        return wanted
    changed = list(dict.fromkeys(e.machine for e in trace.events if e.kind == "StateChanged"))
    own = _KIP_MACHINE.get(trace.scenario.kip or "")
    if own in changed:
        return own
    if "transaction" in changed:
        return "transaction"
    changed.sort(key=lambda m: m in _LAST_RESORT)
    return changed[0] if changed else None


def _scenario_page(trace, anim) -> str:
    """A standalone page: summary, checks, the sequence diagram and (if any) the animation player."""
    import html as _html

    from ..draw.render import inline_svg, to_html
    from ..draw.sequence import sequence_svg
    from ..scenarios.report import report
    sc = trace.scenario
    block = (f"<style>.kv-doc svg{{max-width:100%;height:auto}}</style>\n"
             f'<div class="kv-doc"><p>{_html.escape(sc.kip or "")} · {_html.escape(sc.status)} · seed {trace.seed}'
             f"</p>\n<p>{_html.escape(sc.summary)}</p>\n{report(trace)._repr_html_()}\n"
             f"<h2>Sequence</h2>\n{inline_svg(sequence_svg(trace))}\n")
    if anim is None:
        page = to_html(sequence_svg(trace), title=f"{sc.name}: {sc.title}")
        head, _, rest = page.partition("<svg")
        return head + block + "<p>No state machine changed in this scenario.</p></div>\n" + \
            rest.partition("</svg>")[2]
    page = anim.html(title=f"{sc.name}: {sc.title}")
    block += f"<h2>State machine: {_html.escape(anim.title)}</h2></div>\n"
    return page.replace('<div class="kv-player"', block + '<div class="kv-player"', 1)


def _check_scenario_args(args) -> None:
    """Bad options are refused before anything runs."""
    if args.machine:
        from ..draw.machines import tables
        if args.machine not in tables():
            raise KipvizError(f"no state machine {args.machine!r}; machines: {', '.join(tables())}")
    if args.gif and not args.gif.lower().endswith(".gif"):
        raise KipvizError(f"--gif needs a .gif file name, got {args.gif!r}")
    for out in (args.svg, args.html, args.gif):
        if out:
            check_out(out)


def _print_run(sc, trace, seed: int) -> int:
    """The run's findings, checks, model errors and requests on stdout; how many failed."""
    good, bad = _marks()
    print(f"{sc.name} (seed {seed}, {sc.kip or 'no KIP'}, {sc.status}): {sc.title}")
    if trace.findings:
        from ..scenarios.report import findings_text
        print("findings:", *findings_text(trace), "checks:", sep="\n")
    for c in trace.checks:
        line = f"  {good if c.passed else bad} {c.description}"
        if c.detail and not c.passed:
            line += f"  [{c.detail}]"
        print(line)
    for err in trace.cluster.internal_errors:
        print(f"  {bad} model error: {err}")
    print(f"requests: {_request_summary(trace.events)}")
    failed = len(trace.failures()) + len(trace.cluster.internal_errors)
    print(f"{len(trace.checks) - len(trace.failures())}/{len(trace.checks)} checks passed"
          + (f", {len(trace.cluster.internal_errors)} model error(s)" if trace.cluster.internal_errors else ""))
    return failed


def _write_scenario_files(sc, trace, args) -> None:
    """--svg, --html and --gif."""
    if args.svg:
        from ..draw.sequence import sequence_svg
        _write(sequence_svg(trace), args.svg)
    anim = None
    if args.html or args.gif:
        from ..draw.animate import animation
        machine = _pick_machine(trace, args.machine)
        anim = animation(trace, machine) if machine else None
    if args.html:
        _write(_scenario_page(trace, anim), args.html)
    if args.gif:
        if anim is None or not len(anim):
            which = f"machine {args.machine!r}" if args.machine else "no state machine"
            raise KipvizError(f"nothing to animate: {which} changed state in {sc.name}")
        anim.to_gif(args.gif)
        print(f"wrote {args.gif}", file=sys.stderr)


def cmd_scenario(args) -> int:
    """`kipviz scenario`: run one scenario, print what it checked, write the files asked for;
    status 1 when a check failed."""
    from .. import scenarios
    sc = scenarios.get(args.name)              # bad input is refused before anything runs
    _check_scenario_args(args)
    trace = scenarios.run(sc.name, seed=args.seed)
    failed = _print_run(sc, trace, args.seed)
    _write_scenario_files(sc, trace, args)
    return 1 if failed else 0


class _MachineHelp(str):
    """The help of `scenario --machine`, listing the machines of the tables registry. Filled in only
    when help is printed (argparse formats help with %), so other commands do not import the model."""

    def __mod__(self, params) -> str:
        from ..draw.machines import tables
        kips = ", ".join(f"{m} for {k} scenarios" for k, m in _KIP_MACHINE.items())
        return (f"state machine to animate: {', '.join(tables())}; default: {kips}, else 'transaction' "
                "if a transaction changed state, else the first that did")


def build_parser() -> argparse.ArgumentParser:
    """The `kipviz` command's argument parser, every command group's sub-commands added."""
    p = _Parser(prog="kipviz", description="Explore Kafka's wire protocol from the kit's definitions.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="messages, versions and their status (released/accepted/proposed)")
    ls.add_argument("name", nargs="?", help="only messages whose name contains this")
    ls.add_argument("--release", metavar="R", help="only the versions Kafka release R serves (4.0 ... 4.4), "
                                                   "derived from the kit's labels")
    ls.set_defaults(func=cmd_list)
    dec = sub.add_parser("decode", help="decode a message body from hex or a file")
    dec.add_argument("name", help="message name, e.g. TxnOffsetCommitRequest")
    dec.add_argument("--version", type=int, required=True)
    dec.add_argument("--hex", help="hex text (spaces, colons, 0x prefixes allowed)")
    dec.add_argument("--file", help="a file holding the raw bytes")
    dec.add_argument("--annotate", action="store_true", help="print which bytes hold which field")
    dec.set_defaults(func=cmd_decode)
    wire = sub.add_parser("wire", help="wire-format diagram of a message version (SVG, PNG or HTML)")
    wire.add_argument("name", help="message name, e.g. TxnOffsetCommitRequest")
    wire.add_argument("--version", type=int, help="version (default: the newest)")
    wire.add_argument("--format", choices=("svg", "png", "html"), default="svg")
    wire.add_argument("--example", action="store_true", help="lay out a real encoded example: offsets, sizes, values")
    wire.add_argument("--no-header", action="store_true", help="body only, without size prefix and header")
    wire.add_argument("-o", "--output", help="file to write (default: stdout; PNG needs a file)")
    wire.set_defaults(func=cmd_wire)
    diff = sub.add_parser("diff", help="what changed between two versions of a message")
    diff.add_argument("name", help="message name, e.g. TxnOffsetCommitRequest")
    diff.add_argument("a", type=int, help="first version")
    diff.add_argument("b", type=int, help="second version")
    diff.add_argument("--format", choices=("text", "svg", "png", "html"), default="text")
    diff.add_argument("-o", "--output", help="file to write for svg/png/html (default: stdout)")
    diff.set_defaults(func=cmd_diff)
    scs = sub.add_parser("scenarios", help="the named scenarios: name, status, KIP, title")
    scs.add_argument("name", nargs="?", help="only scenarios whose name contains this (e.g. kip1319)")
    scs.set_defaults(func=cmd_scenarios)
    sc = sub.add_parser("scenario", help="run a scenario: its checks (exit 1 if one fails), a summary of its "
                                         "requests, and pictures on request")
    sc.add_argument("name", help="scenario name, e.g. kip1319.stale_member_epoch_v6 (see `kipviz scenarios`)")
    sc.add_argument("--seed", type=int, default=0, help="the cluster's random seed (topic ids, member ids)")
    sc.add_argument("--svg", metavar="FILE", help="write the sequence diagram (SVG)")
    sc.add_argument("--html", metavar="FILE", help="write a standalone page: checks, sequence diagram and the "
                                                   "state-machine animation player")
    sc.add_argument("--gif", metavar="FILE", help="write the state-machine animation as an animated GIF")
    sc.add_argument("--machine", metavar="M", help=_MachineHelp("state machine to animate"))
    sc.set_defaults(func=cmd_scenario)
    from .review import add_review
    add_review(sub)
    from .explain import add_explain
    add_explain(sub)
    from .export import add_export
    add_export(sub)
    from .spark import add_spark
    add_spark(sub)
    from .serve import add_serve
    add_serve(sub)
    from .lite import add_lite
    add_lite(sub)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse with the kit's one-line errors (usage on request: --help)."""

    def error(self, message: str):
        self.exit(2, f"kipviz: error: {message} (see: {self.prog} --help)\n")


def _failure(e: BaseException) -> str:
    """The one line of an unexpected failure: Spark's (its JVM, a query, a Python worker), or
    the exception's own first line; KIPVIZ_TRACEBACK=1 shows the traceback instead."""
    if "kipviz.cli.spark" in sys.modules:
        line = sys.modules["kipviz.cli.spark"].failure_line(e)
        if line:
            return line
    if isinstance(e, MemoryError):
        return "out of memory"
    if isinstance(e, RecursionError):
        return "input nested too deeply (RecursionError)"
    text = (str(e).strip().splitlines() or [""])[0]
    return f"internal error: {type(e).__name__}" + (f": {text}" if text else "") + " (a kipviz bug: please report it)"


def _interrupted() -> int:
    print("kipviz: interrupted", file=sys.stderr)
    return 130


def _was_interrupted() -> bool:
    """Ctrl-C reached a Spark command, whose connection to the JVM then failed first."""
    return "kipviz.cli.spark" in sys.modules and sys.modules["kipviz.cli.spark"].LOG["interrupted"]


def main(argv: list[str] | None = None) -> int:
    """Run the `kipviz` command; its exit status (a kit error is one line on stderr, status 2)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:            # `kipviz list | head`: the reader left; not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:          # Ctrl-C: one line, the shell's status for SIGINT
        return _interrupted()
    except (KipvizError, ValueError, KeyError, OSError) as e:
        if _was_interrupted():
            return _interrupted()
        if "kipviz.cli.spark" in sys.modules and sys.modules["kipviz.cli.spark"].failure_line(e):
            msg = _failure(e)          # Spark's own ValueErrors (PySparkValueError, ...)
        else:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"kipviz: error: {' '.join(str(msg).split())}", file=sys.stderr)
        return 2
    except Exception as e:             # anything else, Spark's failures included: still one line
        if _was_interrupted():
            return _interrupted()
        if os.environ.get("KIPVIZ_TRACEBACK"):
            raise
        print(f"kipviz: error: {' '.join(_failure(e).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
