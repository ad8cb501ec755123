"""`kipviz` command line: thin commands over the library functions. Bad input: one line, exit 2."""
from __future__ import annotations

import argparse
import json
import sys
import uuid

from . import codec, uuids
from .errors import KipvizError
from .schema.catalog import catalog


def _json_default(o):
    if isinstance(o, uuid.UUID):
        return uuids.to_kafka_str(o)
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    raise TypeError(type(o).__name__)


def cmd_list(args) -> int:
    rows = catalog()
    if args.name:
        rows = [r for r in rows if args.name.lower() in r["message"].lower()]
    last = None
    for r in rows:
        if r["message"] != last:
            print(f"{r['message']} (api key {r['api_key']})")
            last = r["message"]
        flex = " flexible" if r["flexible"] else ""
        print(f"  v{r['version']:<3}{flex:<10} {r['label']}")
    return 0


def cmd_decode(args) -> int:
    if (args.hex is None) == (args.file is None):
        raise KipvizError("give exactly one of --hex or --file")
    data = codec.parse_hex(args.hex) if args.hex is not None else open(args.file, "rb").read()
    if args.annotate:
        for s in codec.annotate(args.name, args.version, data):
            print(f"{s.start:>6}-{s.end:<6} {s.path:<50} {s.wire_type:<18} {s.value!r}")
    else:
        print(json.dumps(codec.decode(args.name, args.version, data), indent=2, default=_json_default))
    return 0


def _latest(name: str) -> int:
    from .schema import registry
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
    from .draw import to_html, to_png, to_svg
    if fmt == "png":
        _write(to_png(graph), out, binary=True)
    elif fmt == "html":
        _write(to_html(graph, title=title), out)
    else:
        _write(to_svg(graph), out)


def cmd_wire(args) -> int:
    from .draw import wire_diagram
    version = args.version if args.version is not None else _latest(args.name)
    graph = wire_diagram(args.name, version, header=not args.no_header, example=True if args.example else None)
    _export(graph, args.format, args.output, f"{args.name} v{version}")
    return 0


def cmd_diff(args) -> int:
    from .draw import diff_diagram, version_diff
    if args.format == "text":
        rows = version_diff(args.name, args.a, args.b)
        if not rows:
            print(f"{args.name} v{args.a} and v{args.b} have the same fields")
        for r in rows:
            print(f"{r['change']:<20} {r['path']:<45} {r['detail']}")
        return 0
    _export(diff_diagram(args.name, args.a, args.b), args.format, args.output, f"{args.name} v{args.a} vs v{args.b}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kipviz", description="Explore Kafka's wire protocol from the kit's definitions.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="messages, versions and their status (released/accepted/proposed)")
    ls.add_argument("name", nargs="?", help="only messages whose name contains this")
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (KipvizError, ValueError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"kipviz: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
