"""`kipviz explain CAPTURE [--ports 9092,9093] [--html report.html] [--svg story.svg] [--gif txn.gif]`:
what a capture of real clients and brokers shows (docs/explain.md). Prints who is talking, the
findings, the latency per API, the coordinators' states and the differential replay; --html writes
the whole report, --svg the story's sequence diagram, --gif the animation of the coordinators'
states (the transactions', else the classic groups', else the share partitions'). Exit
0, or 2 with one line on stderr for a file that is not a capture, holds no Kafka traffic on the
ports, holds TLS only, or an output that cannot be written."""
from __future__ import annotations

import sys

from ..errors import KipvizError


def _ports(text: str) -> tuple[int, ...]:
    try:
        ports = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise KipvizError(f"--ports {text!r}: give port numbers separated by commas, e.g. 9092,9093") from None
    if not ports or not all(0 < p < 65536 for p in ports):
        raise KipvizError(f"--ports {text!r}: each port is a number from 1 to 65535")
    return ports


def cmd_explain(args) -> int:
    """`kipviz explain`: the report of one capture."""
    from ..explain import explain
    from .outputs import check_out
    ports = _ports(args.ports)
    for out in (args.html, args.svg, args.gif):
        if out:
            check_out(out)
    report = explain(args.capture, ports=ports)
    print(report)
    for out, text in ((args.html, report.to_html), (args.svg, lambda: report.story.svg)):
        if out:
            with open(out, "w", encoding="utf-8") as f:
                f.write(text())
            print(f"wrote {out}", file=sys.stderr)
    if args.gif:
        machine, path = report.states.to_gif(args.gif)
        print(f"wrote {path} (the {machine} animation)", file=sys.stderr)
    return 0


def add_explain(sub) -> None:
    """Add the `explain` command to the parser's sub-commands."""
    ex = sub.add_parser("explain", help="explain a pcap/pcapng capture of Kafka traffic: who is talking, the "
                                        "story as a sequence diagram, findings (errors, fencing, late commits, "
                                        "open transactions, ...), latency per API")
    ex.add_argument("capture", help="a pcap or pcapng file of plaintext Kafka traffic (tcpdump, Wireshark, "
                                    "kipviz serve --record)")
    ex.add_argument("--ports", default="9092", help="the brokers' TCP ports, comma-separated (default 9092)")
    ex.add_argument("--html", metavar="FILE", help="write the whole report as a standalone HTML page")
    ex.add_argument("--svg", metavar="FILE", help="write the story's sequence diagram (SVG)")
    ex.add_argument("--gif", metavar="FILE", help="write the animation of the coordinators' states (GIF): the "
                                                  "transactions', else the classic groups', else the share partitions'")
    ex.set_defaults(func=cmd_explain)
