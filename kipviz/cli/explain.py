"""`kipviz explain CAPTURE [--ports 9092,9093] [--html report.html] [--svg story.svg] [--gif txn.gif]`:
what a capture of real clients and brokers shows (docs/explain.md). Prints who is talking, the
findings, the latency per API, the coordinators' states and the differential replay; --html writes
the whole report, --svg the story's sequence diagram, --gif the animation of the coordinators'
states (the transactions', else the classic groups', else the share partitions'). Exit
0, or 2 with one line on stderr for a file that is not a capture, holds no Kafka traffic on the
ports, holds TLS only, or an output that cannot be written.

`kipviz explain CAPTURE --spark OUT_DIR` reads a capture too big for one process with Spark and
writes OUT_DIR, the request log `kipviz analyze` reads (kipviz.spark.capture); it prints one line
saying what it wrote. Exit 2 with one line for a file that is not a capture, an OUT_DIR that is
not new or empty, or no Kafka exchange on the ports."""
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
    if args.spark:
        return _explain_spark(args, ports)
    for out in (args.html, args.svg, args.gif):
        if out:
            check_out(out)
    report = explain(args.capture, ports=ports)
    if args.gif and report.states.animated() is None:
        report.states.to_gif(args.gif)          # its one-line KipvizError, before any output
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


def _explain_spark(args, ports) -> int:
    """`kipviz explain CAPTURE --spark OUT_DIR`: the capture read by Spark into a run directory
    (kipviz.spark.capture); bad input is refused before Spark starts."""
    if args.html or args.svg or args.gif:
        raise KipvizError("--spark writes a run directory for `kipviz analyze`; it takes no --html, --svg or --gif")
    from ..spark import session
    from ..spark.capture import capture_to_requests, check_inputs
    check_inputs(args.capture, args.spark)          # bad input: one line before any JVM starts
    m = capture_to_requests(session(), args.capture, args.spark, ports=ports)
    n, rows = m["datasets"]["requests.parquet"]["rows"], m["datasets"]["exchanges.parquet"]["rows"]
    if not n:
        raise KipvizError(f"no Kafka exchange on port(s) {', '.join(map(str, ports))} in {args.capture} "
                          f"(wrote {args.spark} anyway)")
    print(f"wrote {args.spark}: {n} exchanges of {args.capture} ({rows - n} problem rows in exchanges.parquet); "
          f"analyze it with: kipviz analyze {args.spark}")
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
    ex.add_argument("--spark", metavar="OUT_DIR", help="read the capture with Spark (for captures too big for one "
                                                     "process) and write OUT_DIR, a run directory for `kipviz analyze`")
    ex.set_defaults(func=cmd_explain)
