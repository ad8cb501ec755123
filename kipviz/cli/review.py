"""`kipviz review SCHEMA.json [--against NAME] [--html [OUT]]`: review a new or changed schema file.

Prints the summary (one line per finding, the errors each shown version can return, and for a
proposal the kit models the "Open questions" its scenarios and workloads raise); --html also writes the report (OUT, default review.html). Exit 0 when there is no error-level finding, 1 when
there is one (a draft that does not validate is such a finding, with its line and field), 2 with
one line on stderr when the file cannot be read or --against names nothing known."""
from __future__ import annotations

import sys


def cmd_review(args) -> int:
    """`kipviz review`: the design review of a schema file (exit 1 when it finds errors)."""
    from ..review import review
    if args.html:
        from .outputs import check_out
        check_out(args.html)
    r = review(args.schema, against=args.against, behaviour=not args.schema_only, pictures=bool(args.html))
    print(r.summary())
    if args.html:
        r.save(args.html)
        print(f"wrote {args.html}", file=sys.stderr)
    return 0 if r.ok else 1


def add_review(sub) -> None:
    """Add the `review` command to the parser's sub-commands."""
    rv = sub.add_parser("review", help="review a new or changed schema file (a KIP draft): validation, "
                                       "compatibility findings, diff, wire diagrams, example (exit 1 on errors)")
    rv.add_argument("schema", help="the schema file to review, e.g. TxnShareAcknowledgeRequest.json")
    rv.add_argument("--against", metavar="NAME",
                    help="compare with this kit message, schema file or directory of schema files, or 'none' "
                         "for a new RPC (default: the kit's definition of the same name, else Kafka's own file)")
    rv.add_argument("--html", metavar="OUT", nargs="?", const="review.html",
                    help="also write the self-contained HTML report to OUT (default name: review.html); "
                         "without --html only the summary is printed")
    rv.add_argument("--schema-only", action="store_true",
                    help="skip the behaviour review (the proposal's scenarios and random-fault workloads)")
    rv.set_defaults(func=cmd_review)
