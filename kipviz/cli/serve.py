"""`kipviz serve`: the cluster model on real sockets for real Kafka clients (kipviz.serve).

    kipviz serve --brokers 3 --port 9092          # brokers on 127.0.0.1:9092, 9093, 9094
    kipviz serve --port 0 -v --speed 10           # free ports; connection lines; time 10x faster
    kipviz serve --record out/live                # also write the session (kipviz analyze out/live)
    kipviz serve --retention-bytes -1             # keep every record (the default keeps 16 MiB per partition)
    kipviz serve --seed 7                         # the same cluster id, topic ids and member ids every start
    kipviz serve --host 0.0.0.0 --users users.txt --acls acls.txt --super-users User:host
                                                  # a shared server: SASL_PLAINTEXT on 9093 for learners,
                                                  # PLAINTEXT on 127.0.0.1:9092 for the host's own tools

Prints the bootstrap address and serves until Ctrl-C. Bad input (a release the kit does not model,
a port in use, --speed <= 0, a bad users or ACL file): one line on stderr, exit 2. A PLAINTEXT
listener on an address other than loopback prints one warning line on stderr: it has no
authentication (with --users it stays on loopback; learners use SASL_PLAINTEXT). Who may do what
with --users / --acls: kipviz.serve.listeners (docs/workshop.md, "A shared server")."""
from __future__ import annotations

import signal
import sys
import threading

from ..errors import KipvizError

DEFAULT_RETENTION_BYTES = 16 * 1024 * 1024
DEFAULT_SEGMENT_BYTES = 1024 * 1024


def cmd_serve(args) -> int:
    """`kipviz serve`: the cluster model on real sockets, until interrupted."""
    from ..schema.releases import RELEASES
    from ..serve import Server
    if args.release is not None and args.release not in RELEASES:
        raise KipvizError(f"--release {args.release}: the kit models {', '.join(RELEASES)}")
    if args.brokers < 1:
        raise KipvizError(f"--brokers must be >= 1, got {args.brokers}")
    if not 0 <= args.port <= 65535 - args.brokers + 1:
        raise KipvizError(f"--port {args.port} is out of range for {args.brokers} brokers")
    # auto.create.topics.enable: Kafka's default is true (server-common/.../config/ServerLogConfigs.java:
    # AUTO_CREATE_TOPICS_ENABLE_DEFAULT); the model's scenarios keep it off, a served cluster plays Kafka
    for flag in ("retention_bytes", "segment_bytes", "events_max", "events_max_bytes", "queued_max_request_bytes",
                 "connections_max_idle_ms"):
        low = -1 if flag == "retention_bytes" else 1
        if getattr(args, flag) < low:
            raise KipvizError(f"--{flag.replace('_', '-')} must be >= {low}, got {getattr(args, flag)}")
    if args.retention_ms < -1:
        raise KipvizError(f"--retention-ms must be >= 0 or -1, got {args.retention_ms}")
    settings = {"share_version": args.share_version, "auto_create_topics": args.auto_create_topics == "true",
                "log_retention_bytes": args.retention_bytes, "log_retention_ms": args.retention_ms,
                "log_segment_bytes": args.segment_bytes}
    if args.release is not None:
        settings["release"] = args.release
    settings.update(_access(args))
    try:
        srv = Server(brokers=args.brokers, host=args.host, port=args.port, speed=args.speed, verbose=args.verbose,
                     record=args.record, events_max=args.events_max, events_max_bytes=args.events_max_bytes,
                     queued_max_request_bytes=args.queued_max_request_bytes,
                     connections_max_idle_ms=args.connections_max_idle_ms, seed=args.seed, **settings)
    except ValueError as e:          # a bad users file, overlapping ports, super users without an authorizer
        raise KipvizError(str(e)) from None
    stop = threading.Event()
    old = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    srv.start()
    _say_started(args, srv)
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
        signal.signal(signal.SIGTERM, old)
        held, largest = srv.log_bytes()
        print(f"kipviz serve: stopped after {srv.connections} connection(s), {srv.requests} request(s); "
              f"log bytes held {held} (largest partition {largest}, retention.bytes {args.retention_bytes}); "
              "internal topics' log bytes " + ", ".join(f"{k} {v}" for k, v in sorted(srv.internal_log_bytes().items())),
              flush=True)
        if args.record:
            print(f"kipviz serve: recorded {args.record} (sample-data layout and traffic.pcap; "
                  f"`kipviz analyze {args.record}`)", flush=True)
    return 0


def _say_started(args, srv) -> None:
    """The warning for a PLAINTEXT listener off loopback, then the bootstrap line(s)."""
    exposed = [h for h, _ in srv.addresses if not _loopback(h)]
    if exposed:
        print(f"kipviz serve: warning: listening on {exposed[0]}, not a loopback address: anyone who reaches it "
              "can read, write and delete every topic (no authentication: --users adds a SASL listener and "
              "keeps this one on loopback)", file=sys.stderr, flush=True)
    print(f"kipviz serve: {args.brokers} broker(s), bootstrap.servers={srv.bootstrap}"
          f" (release {args.release or 'newest'}, speed x{args.speed:g}, cluster id {srv.cluster.cluster_id},"
          f" seed {srv.cluster.seed}); Ctrl-C stops", flush=True)
    if srv.sasl_bootstrap:
        print(f"kipviz serve: SASL_PLAINTEXT bootstrap.servers={srv.sasl_bootstrap} "
              f"({', '.join(srv.listeners[1].mechanisms)}; {len(srv.listeners[1].users.passwords)} user(s)); "
              + _authorizer_line(srv.cluster), flush=True)


def _loopback(host: str) -> bool:
    from ..serve.listeners import is_loopback
    return is_loopback(host)


def _access(args) -> dict:
    """--users, --sasl-port, --acls, --super-users, --allow-everyone-if-no-acl-found as Server's arguments."""
    from ..broker.sasl import UsersError
    from ..serve.acl_file import AclFileError, load_acls
    from ..serve.listeners import users_from
    try:
        out = {"users": None if args.users is None else users_from(args.users),
               "acls": None if args.acls is None else load_acls(args.acls)}
    except (UsersError, AclFileError) as e:
        raise KipvizError(str(e)) from None
    if args.sasl_port is not None:
        if args.users is None:
            raise KipvizError("--sasl-port needs --users (the SASL_PLAINTEXT listener's users)")
        if not 0 <= args.sasl_port <= 65535 - args.brokers + 1:
            raise KipvizError(f"--sasl-port {args.sasl_port} is out of range for {args.brokers} brokers")
        out["sasl_port"] = args.sasl_port
    if args.super_users is not None:
        names = [p.strip() for p in args.super_users.replace(",", ";").split(";") if p.strip()]
        bad = [p for p in names if ":" not in p]
        if bad or not names:
            raise KipvizError(f"--super-users {args.super_users!r}: principals like User:host, separated by ';'")
        out["super_users"] = tuple(names)
    if args.allow_everyone_if_no_acl_found is not None:
        out["allow_everyone_if_no_acl_found"] = args.allow_everyone_if_no_acl_found == "true"
    return out


def _authorizer_line(cluster) -> str:
    a = cluster.authorizer
    if not a.enabled:
        return "no authorizer"
    supers = ", ".join(sorted(a.super_users)) or "none"
    return (f"authorizer: {len(a.acls)} binding(s), allow.everyone.if.no.acl.found="
            f"{'true' if a.allow_if_no_acl else 'false'}, super users {supers}")


# who may connect and what they may do (kipviz.serve.listeners; docs/workshop.md, "A shared server")
ACCESS_FLAGS = (
    ("--users", {"metavar": "FILE", "help": "a SASL_PLAINTEXT listener too (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) "
                 "with the users of FILE, one 'name = password' a line; the PLAINTEXT listener then stays on 127.0.0.1"}),
    ("--sasl-port", {"type": int, "metavar": "PORT", "help": "first broker's SASL_PLAINTEXT port, the others "
                     "consecutive (default: the port after the PLAINTEXT ones, 9093 for one broker; free ports with "
                     "--port 0)"}),
    ("--acls", {"metavar": "FILE", "help": "the authorizer's bindings, one 'ALLOW|DENY principal operation "
                "resource-type name [LITERAL|PREFIXED]' a line (StandardAuthorizer's rules; default with --users: no "
                "bindings and allow.everyone.if.no.acl.found=true)"}),
    ("--super-users", {"metavar": "PRINCIPALS",
                       "help": "super.users: principals allowed everything, e.g. 'User:host;User:admin'"}),
    ("--allow-everyone-if-no-acl-found", {"choices": ("true", "false"), "help": "allow.everyone.if.no.acl.found "
                                          "(default: false with --acls, as Kafka's; true with --users alone)"}),
)


def add_serve(sub) -> None:
    """Add the `serve` command to the parser's sub-commands."""
    sv = sub.add_parser("serve", help="run the cluster model on real sockets for real Kafka clients")
    sv.add_argument("--brokers", type=int, default=1, help="modelled brokers, one listener each (default 1)")
    sv.add_argument("--host", default="127.0.0.1",
                    help="address to listen on and advertise (default 127.0.0.1); without --users any other than "
                         "a loopback address prints a warning: the PLAINTEXT listener has no authentication")
    sv.add_argument("--port", type=int, default=9092,
                    help="first broker's port, the others consecutive; 0 for free ports (default 9092)")
    sv.add_argument("--release", default=None, help="the Kafka release the brokers play (default: the newest)")
    sv.add_argument("--share-version", type=int, default=1, choices=(1, 2),
                    help="share.version feature; 2 serves KIP-1289's proposed TxnShareAcknowledge")
    sv.add_argument("--auto-create-topics", choices=("true", "false"), default="true",
                    help="auto.create.topics.enable: a Metadata request for a missing topic creates it (Kafka's default true)")
    sv.add_argument("--speed", type=float, default=1.0, help="virtual time runs X times faster than wall time")
    sv.add_argument("--seed", type=int, default=None, metavar="N",
                    help="seed of the cluster id, topic ids and generated member ids: the same N gives the same ids "
                         "(default: random per start, as Kafka's are)")
    sv.add_argument("--record", metavar="DIR", default=None,
                    help="write the session to DIR: the sample-data layout plus traffic.pcap (all the traffic, "
                         "so the folder is made 0700 and its files 0600). DIR must be new, empty, or an "
                         "earlier recording, which is replaced; any other folder is refused")
    # a teaching server runs for hours: Kafka's log retention, with a bounded default (Kafka's own
    # log.retention.bytes is -1, unbounded, which the model keeps everywhere else)
    sv.add_argument("--retention-bytes", type=int, default=DEFAULT_RETENTION_BYTES, metavar="N",
                    help="log.retention.bytes per partition: old segments are deleted past it and the log start "
                         f"offset moves up; -1 keeps everything (default {DEFAULT_RETENTION_BYTES}, 16 MiB)")
    sv.add_argument("--retention-ms", type=int, default=604800000, metavar="MS",
                    help="log.retention.ms: segments older than this are deleted (default 604800000, Kafka's 7 days)")
    sv.add_argument("--segment-bytes", type=int, default=DEFAULT_SEGMENT_BYTES, metavar="N",
                    help="log.segment.bytes: retention deletes whole segments of this size "
                         f"(default {DEFAULT_SEGMENT_BYTES}, 1 MiB; Kafka's is 1 GiB)")
    sv.add_argument("--events-max", type=int, default=50_000, metavar="N",
                    help="events the server keeps in memory (older ones go to --record or are dropped; default 50000)")
    sv.add_argument("--events-max-bytes", type=int, default=64 * 1024 * 1024, metavar="N",
                    help="about this many bytes of events in memory: older ones lose their frames and long bytes "
                         "(or go to --record) (default 67108864, 64 MiB)")
    sv.add_argument("--queued-max-request-bytes", type=int, default=64 * 1024 * 1024, metavar="N",
                    help="queued.max.request.bytes: request bytes being read, all connections; past it no "
                         "connection is read from until requests are handled (default 67108864, 64 MiB)")
    sv.add_argument("--connections-max-idle-ms", type=int, default=600000, metavar="MS",
                    help="connections.max.idle.ms: a connection without traffic this long is closed "
                         "(default 600000, Kafka's 10 minutes)")
    for flag, kw in ACCESS_FLAGS:
        sv.add_argument(flag, default=None, **kw)
    sv.add_argument("-v", "--verbose", action="store_true",
                    help="one line per connection opened or closed, and the memory budget every 10 s when it changed")
    sv.set_defaults(func=cmd_serve)
