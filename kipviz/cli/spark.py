"""`kipviz sample-data`, `kipviz analyze` and `kipviz verify-eos`: sample logs and their Spark analyses.

    kipviz sample-data --scenario share_eos --records 100000 --seed 1 -o out/share_eos
    kipviz sample-data --all -o sample_data          # the bundled set, byte for byte
    kipviz analyze out/share_eos [--master URL | --remote sc://HOST:PORT] [--html report.html]
    kipviz verify-eos out/share_eos                  # exit 1 if any violation or unreadable input, 0 if none

Bad input (no such directory, not a sample, a manifest field of the wrong type, a file that is not
Parquet, a master URL Spark does not take or that does not answer) and any failure in Spark: one
line on stderr, exit 2. Rows that do not read or decode are counted in the errors table, not fatal."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import KipvizError

# the bundled sample_data/ set: directory -> (scenario, records, seed); `kipviz sample-data --all`
BUNDLED = {
    "regular_eos": ("regular_eos", 4000, 0),
    "share_eos": ("share_eos", 4000, 1),
    "kip1319": ("kip1319", 4000, 0),
    "kip516": ("kip516", 4000, 0),
}


def cmd_sample_data(args) -> int:
    """`kipviz sample-data`: run a workload or scenario and write its logs as Parquet."""
    from ..sampledata import generate
    if args.all:
        if args.scenario or args.records is not None:
            raise KipvizError("--all writes the bundled set; it takes no --scenario or --records")
        for name, (scenario, records, seed) in BUNDLED.items():
            m = generate(scenario, Path(args.output) / name, records=records, seed=seed, progress=args.progress)
            print(f"wrote {Path(args.output) / name} ({scenario}, {m['records']} records, seed {seed})")
        return 0
    if not args.scenario:
        raise KipvizError("give --scenario NAME (a workload or a scenario; see `kipviz scenarios`) or --all")
    m = generate(args.scenario, args.output, records=args.records, seed=args.seed, progress=args.progress)
    rows = sum(d["rows"] for d in m["datasets"].values())
    print(f"wrote {args.output}: {args.scenario}, {m['records']} records, seed {args.seed}, "
          f"{len(m['datasets'])} datasets, {rows} rows")
    return 0


# the driver JVM's stderr (Spark's log, its Python workers' stderr) goes to this file while a
# command runs, so that the command's own stderr is its one line; removed at exit unless a Spark
# failure names it
LOG: dict = {"path": None, "keep": False, "interrupted": False}


def _jvm_log() -> int | None:
    """The log file's descriptor; Python's own log records (py4j's, PySpark's) go there too."""
    import atexit
    import logging
    import tempfile
    if LOG["path"]:
        return None                      # a second command in one process: the JVM already runs
    fd, path = tempfile.mkstemp(prefix="kipviz-spark-", suffix=".log")
    LOG["path"] = path
    to_log = logging.StreamHandler(open(fd, "w", buffering=1, closefd=False))
    logging.getLogger().addHandler(to_log)
    try:                                 # PySpark's query-error loggers write to stderr themselves
        from pyspark.logger import PySparkLogger
        for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
            lg = PySparkLogger.getLogger(name)
            for h in list(lg.handlers):
                lg.removeHandler(h)
            lg.addHandler(to_log)
    except ImportError:
        pass

    def _remove():
        if not LOG["keep"]:
            try:
                os.unlink(path)
            except OSError:
                pass
    atexit.register(_remove)
    return fd


def failure_line(e: BaseException) -> str | None:
    """One line for a failure in Spark (kipviz.spark.session.error_line) naming the log of the
    JVM, which is then kept; None when e is not Spark's."""
    if "kipviz.spark.session" not in sys.modules:
        return None
    line = sys.modules["kipviz.spark.session"].error_line(e)
    if line and LOG["path"]:
        LOG["keep"] = True
        line += f" (Spark's log: {LOG['path']})"
    return line


def _interrupted(signum, frame):
    """Ctrl-C once Spark runs: PySpark's own handler asks the JVM to cancel its jobs over the
    connection the interrupted call is using, which fails with an error of its own; the JVM
    stops when we exit (its stdin closes)."""
    LOG["interrupted"] = True
    raise KeyboardInterrupt


def _source(directory: str, master: str | None, remote: str | None = None):
    import signal
    import threading

    from ..spark.readers import check_files, load_manifest, topic_records
    d = Path(directory)
    manifest = load_manifest(d)          # bad input is refused before any JVM starts
    check_files(d, manifest)
    from ..spark import read_samples, session
    from ..spark.session import LARGE_ROWS, check_master
    if remote is not None:
        from ..spark.connect import check_remote
        check_remote(remote)
        spark = session(remote=remote)
    else:
        if master is not None or os.environ.get("KIPVIZ_SPARK_MASTER"):
            check_master(master if master is not None else os.environ["KIPVIZ_SPARK_MASTER"])
        # the run's size picks the Spark settings
        spark = session(master, batch=True, large=topic_records(d) >= LARGE_ROWS, jvm_log=_jvm_log())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupted)
    return read_samples(spark, d)


def cmd_analyze(args) -> int:
    """`kipviz analyze`: the Spark analyses of a sample-data folder (or a live cluster)."""
    if args.html:
        from .outputs import check_out
        check_out(args.html)
    from ..spark.report import analyze
    rep = analyze(_source(args.directory, args.master, args.remote), plot=bool(args.html))
    print(rep.summary())
    if args.html:
        rep.save(args.html)
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def cmd_verify_eos(args) -> int:
    """`kipviz verify-eos`: the exactly-once verification in Spark; its verdict sets the exit status."""
    from ..spark.eos import verdict_lines, verify_eos
    res = verify_eos(_source(args.directory, args.master, args.remote), group=args.group, input_topic=args.input_topic,
                     output_topic=args.output_topic, allowed_at_least_once=not args.strict)
    # the verdict first ("cannot verify" when inputs did not read: exit 1, never OK), then the
    # offending records; the documented windows are summarised by case unless --all
    print("\n".join(verdict_lines(res, everything=args.all)))
    return 0 if res.ok else 1


def add_spark(sub) -> None:
    """Add the `sample-data`, `analyze` and `verify-eos` commands to the parser's sub-commands."""
    sd = sub.add_parser("sample-data", help="run a workload or scenario on the model and write its logs as Parquet "
                                            "(Kafka-source topic datasets, batches, requests, events)")
    sd.add_argument("--scenario", help="regular_eos, share_eos, kip1319, kip516, or any `kipviz scenarios` name")
    sd.add_argument("--records", type=int, help="input records of a workload (default 1000)")
    sd.add_argument("--seed", type=int, default=0, help="random seed (default 0): same seed, same bytes")
    sd.add_argument("-o", "--output", required=True, help="directory to write (created; a previous sample there "
                                                          "is replaced; with --all: the parent of the set)")
    sd.add_argument("--all", action="store_true", help="write the bundled set (sample_data/) under --output")
    sd.add_argument("--no-progress", dest="progress", action="store_false", help="no tqdm progress bar")
    sd.set_defaults(func=cmd_sample_data)
    an = sub.add_parser("analyze", help="run every Spark analysis over a sample-data directory and print a summary")
    an.add_argument("directory", help="a directory written by `kipviz sample-data`")
    an.add_argument("--master", help="Spark master URL (default: KIPVIZ_SPARK_MASTER, Spark's configuration, "
                                     "else local[2])")
    an.add_argument("--remote", metavar="sc://HOST:PORT", help="a Spark Connect server instead of a master (needs "
                                                               "the connect extra)")
    an.add_argument("--html", metavar="REPORT", help="also write an HTML report with tables and plots")
    an.set_defaults(func=cmd_analyze)
    ve = sub.add_parser("verify-eos", help="Spark exactly-once verification of a share-group run: prints each "
                                           "violation; exit 1 if there is any, 0 if none")
    ve.add_argument("directory", help="a directory written by `kipviz sample-data`")
    ve.add_argument("--master", help="Spark master URL (as for analyze)")
    ve.add_argument("--remote", metavar="sc://HOST:PORT", help="a Spark Connect server (as for analyze)")
    ve.add_argument("--group", help="share group (default: the run's manifest)")
    ve.add_argument("--input-topic", help="input topic (default: the run's manifest)")
    ve.add_argument("--output-topic", help="output topic (default: the run's manifest)")
    ve.add_argument("--strict", action="store_true", help="count KIP-1289's documented at-least-once windows "
                                                          "(cases 1 and 12) as violations too")
    ve.add_argument("--all", action="store_true", help="list every violation and at-least-once window (default: "
                                                       "the first 50 violations and 3 windows per case)")
    ve.set_defaults(func=cmd_verify_eos)
