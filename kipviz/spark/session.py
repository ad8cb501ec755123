"""One SparkSession for kipviz's analyses, small and quiet by default, configurable the usual ways.

    spark = session()                       # local[2], ~768 MB driver, no UI, errors-only logging
    spark = session("spark://host:7077")    # any master: standalone, yarn, k8s://...

Who decides what, strongest first:

1. the arguments (`master`, `driver_memory`, `conf={...}`);
2. KIPVIZ_SPARK_MASTER (and KIPVIZ_SPARK_DRIVER_MEMORY) in the environment;
3. Spark's own configuration: spark-submit options, PYSPARK_SUBMIT_ARGS, spark-defaults.conf
   (SPARK_CONF_DIR), or a SparkSession that is already running (a notebook, spark-submit);
4. kipviz's defaults below (DEFAULTS, DEFAULT_MASTER, DEFAULT_DRIVER_MEMORY).

So `spark-submit --master yarn job.py` runs the same analyses on a cluster: kipviz then only fills in
the settings nobody gave. The defaults fit a 2 GB Binder container: one driver JVM (768 MB heap),
two cores, no web UI, Arrow for the Python side, a log4j2 file at level error (shipped next to this
module); for local masters also loopback addresses, 4 shuffle partitions, no adaptive execution,
and the Python workers run this interpreter."""
from __future__ import annotations

import os
import re
import shlex
import signal
import sys
from collections import deque
from pathlib import Path

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "768m"
LOG4J2 = Path(__file__).resolve().parent / "log4j2.properties"
# The driver JVM's flags: a small footprint on a shared 2-core machine. The serial collector and
# heap free ratios give memory back instead of growing to -Xmx (resident ~0.7 GB instead of ~1.2
# GB for the notebooks' jobs); C1 only, because on two cores C2's compiler threads compete with the
# job itself (the notebooks' jobs run faster without it). Replace with session(java_options=...).
JAVA_OPTIONS = ("-XX:+UseSerialGC -XX:MinHeapFreeRatio=5 -XX:MaxHeapFreeRatio=20 -Xms64m "
                "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m")
# Whole runs from the command line (kipviz analyze / verify-eos) and the benchmark: jobs of many
# seconds, where C2's compiled scans, sorts and cache builders pay for its compiler threads (a
# 1M-record share_eos run: 45 s -> 32 s on local[2]) and the parallel collector for its footprint.
BATCH_JAVA_OPTIONS = "-XX:+UseParallelGC -Xms64m -XX:ReservedCodeCacheSize=96m"
# A large run on a local master (LARGE_ROWS topic records or more: millions of share-record moves
# to aggregate per record) needs more shuffle partitions than 4; adaptive execution then merges
# the tiny stages (a few hundred transactions, a request-error table) that would otherwise pay for
# 32 tasks each. On smaller runs both cost more than they save (a 1M-record sample: 21 s -> 25 s).
# The kept frames are cached uncompressed: their columns are small numbers and short strings, so
# compression saves little (10M output records: 279 MB instead of 235 MB) and building it costs
# the decode phase a fifth of its time (local[2]: 23.5-25.1 s -> 20.4-21.1 s).
LARGE_ROWS = 5_000_000
LARGE_LOCAL_DEFAULTS = {"spark.sql.shuffle.partitions": "32", "spark.sql.adaptive.enabled": "true",
                        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
                        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16m",
                        "spark.sql.inMemoryColumnarStorage.compressed": "false"}

# filled in only where Spark's own configuration says nothing
DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
    "spark.python.worker.reuse": "true",
    # small splits: the decoders are Python, so even a few-MB dataset should reach every core
    "spark.sql.files.maxPartitionBytes": "4m",
    # ... and Spark counts 4 MB per file opened, which kept any file under ~8 MB in one split
    "spark.sql.files.openCostInBytes": "256k",
    # a cached frame's size estimate is its compressed size: broadcasting one near the default 10 MB
    # threshold can need several times that on a 768 MB driver; explicit broadcast() hints remain
    "spark.sql.autoBroadcastJoinThreshold": "1m",
}
# one machine: few shuffle partitions, and no adaptive re-planning (on small runs its extra jobs
# cost more than they save)
LOCAL_DEFAULTS = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                  "spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "false"}

__all__ = ["session", "DEFAULTS", "DEFAULT_MASTER", "DEFAULT_DRIVER_MEMORY", "LOG4J2", "JAVA_OPTIONS",
           "BATCH_JAVA_OPTIONS", "LARGE_ROWS", "LARGE_LOCAL_DEFAULTS", "stop", "check_master", "error_line",
           "CONNECT_TIMEOUT_S", "register"]


def _defaults_file() -> dict[str, str]:
    """spark-defaults.conf as spark-submit finds it (SPARK_CONF_DIR, else SPARK_HOME/conf)."""
    d = os.environ.get("SPARK_CONF_DIR") or (os.environ.get("SPARK_HOME") and
                                             os.path.join(os.environ["SPARK_HOME"], "conf"))
    out: dict[str, str] = {}
    if d and os.path.isfile(os.path.join(d, "spark-defaults.conf")):
        for line in Path(d, "spark-defaults.conf").read_text().splitlines():
            parts = line.strip().split(None, 1)
            if parts and not parts[0].startswith("#"):
                out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


def _submit_args() -> list[str]:
    return shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))


def _given_at_launch(key: str, option: str) -> bool:
    """Did spark-submit's own inputs already set `key` (or its command-line `option`)?"""
    args = _submit_args()
    return (option in args or any(a.startswith(key + "=") or a == key for a in args)
            or key in _defaults_file())


def _launch_master(master: str | None) -> str | None:
    """The master to start the JVM with, None when spark-submit's own inputs name one."""
    if master or os.environ.get("KIPVIZ_SPARK_MASTER"):
        return master or os.environ["KIPVIZ_SPARK_MASTER"]
    if _given_at_launch("spark.master", "--master") or os.environ.get("MASTER"):
        return None
    return DEFAULT_MASTER


def _launch_conf(master: str | None, driver_memory: str | None, java_options: str | None = None):
    """Settings that count when the driver JVM starts: master, heap size, log4j2 file, progress bar
    (spark-submit turns the bar on for PySpark, which it counts as a shell)."""
    from pyspark import SparkConf
    conf = SparkConf(loadDefaults=False)
    if master:
        conf.set("spark.master", master)
    if not _given_at_launch("spark.ui.showConsoleProgress", "--no-such-option"):
        conf.set("spark.ui.showConsoleProgress", "false")
    mem = driver_memory or os.environ.get("KIPVIZ_SPARK_DRIVER_MEMORY")
    if mem or not (_given_at_launch("spark.driver.memory", "--driver-memory")
                   or os.environ.get("SPARK_DRIVER_MEMORY")):
        conf.set("spark.driver.memory", mem or DEFAULT_DRIVER_MEMORY)
    if not _given_at_launch("spark.driver.extraJavaOptions", "--driver-java-options"):
        opts = JAVA_OPTIONS if java_options is None else java_options
        conf.set("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={LOG4J2.as_uri()} {opts}".strip())
    return conf


# The one line of the driver JVM's stderr that no setting silences: Spark 4's launcher adds
# --add-modules=jdk.incubator.vector and the JVM announces it at start (before any log4j file).
JVM_START_NOISE = b"WARNING: Using incubator modules:"


# the driver JVM's last lines of stderr (what error_line quotes when the JVM exits at its start)
JVM_TAIL: deque = deque(maxlen=200)


def _forward_stderr(pipe, fd: int = 2) -> None:
    """Copy the JVM's stderr to ours (the fd, not sys.stderr: in a notebook it stays out of the
    cells, as before), less JVM_START_NOISE, keeping the last lines in JVM_TAIL. Reads to the end
    whatever happens, so the JVM never blocks on a full pipe."""
    for line in iter(pipe.readline, b""):
        if line.startswith(JVM_START_NOISE):
            continue
        JVM_TAIL.append(line)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            pass


def _children() -> set[int]:
    """The ids of this process's children (Linux /proc; empty elsewhere)."""
    me, out = str(os.getpid()), set()
    for d in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    if fh.read().rsplit(")", 1)[1].split()[1] == me:      # "pid (comm) state ppid ..."
                        out.add(int(d))
            except (OSError, IndexError):
                pass
    return out


def _launch_gateway(conf, log_fd: int | None = None):
    """Start the driver JVM (spark-submit, as PySpark does) with its stderr forwarded by a thread
    (to our stderr, or to log_fd together with its stdout, where a JVM that cannot start says
    why). The pipe is read from before the JVM starts, so JVM_TAIL holds what a JVM that exits
    at once said."""
    import threading

    from pyspark.java_gateway import launch_gateway
    JVM_TAIL.clear()
    r, w = os.pipe()
    reader = threading.Thread(target=_forward_stderr, args=(os.fdopen(r, "rb"), 2 if log_fd is None else log_fd),
                              name="kipviz-jvm-stderr", daemon=True)
    reader.start()
    kwargs = {"stderr": w} if log_fd is None else {"stderr": w, "stdout": w}
    before = _children()
    try:
        return launch_gateway(conf, popen_kwargs=kwargs)
    except BaseException:
        # the JVM exited, or we were interrupted while it started: one that is still starting
        # would outlive us (it stops when our end of its stdin closes only once it has started)
        for pid in _children() - before:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.close(w)
        w = None
        reader.join(5)                   # the JVM's last words are in the pipe
        raise
    finally:
        if w is not None:
            os.close(w)                  # the JVM holds its own copy


# the master URLs Spark 4 takes (SparkContext.createTaskScheduler, SparkSubmit): local, local[N],
# local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT[,HOST:PORT...], yarn, k8s://URL
_MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|k8s://\S+|"
                     r"spark://[^\s,:/]+:\d+(,[^\s,:/]+:\d+)*")
# how long a spark:// master may take to accept a connection before session() gives up (Spark
# itself would try to register for 3 x 20 s: StandaloneAppClient's REGISTRATION_RETRIES/TIMEOUT)
CONNECT_TIMEOUT_S = 5.0


def check_master(master: str) -> None:
    """KipvizError when `master` is not a master URL Spark takes, or is spark://HOST:PORT and
    none of its hosts accepts a connection within CONNECT_TIMEOUT_S."""
    import socket

    from ..errors import KipvizError
    if not _MASTER.fullmatch(master):
        raise KipvizError(f"Spark master {master!r} is not a master URL (local[N], spark://HOST:PORT, yarn, "
                          f"k8s://URL)")
    if not master.startswith("spark://"):
        return
    why = []
    for hp in master.removeprefix("spark://").split(","):
        host, _, port = hp.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
            return
        except OSError as e:
            why.append(f"{hp}: {'timed out' if isinstance(e, TimeoutError) else e.strerror or e}")
    raise KipvizError(f"Spark master {master!r} does not answer ({'; '.join(why)})")


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s*SQLSTATE: \w+\.?", "", text)
    # "Job aborted due to stage failure: Task 0 in stage 14.0 failed 1 times, most recent failure:
    # Lost task 0.0 in stage 14.0 (TID 17) (localhost executor driver): X" -> "a Spark task failed: X"
    text = re.sub(r"(?:\w+: )*Job aborted due to stage failure: .*?most recent failure: Lost task .*?\)"
                  r"(?: \([^)]*\))?: ", "a Spark task failed: ", text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _java_name(line: str) -> str:
    """'org.apache.spark.SparkException: msg' -> 'SparkException: msg' (every such name in it)."""
    return re.sub(r"\b(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error|Throwable))\b", r"\1", line.strip())


def _java_error(lines: list[str], name: str) -> str:
    # "An error occurred while calling oN.m.\n: java.X: msg\n\tat ...": the exception and its last cause
    head = next((ln[2:] for ln in lines if ln.startswith(": ")), lines[0] if lines else name)
    causes = [ln.removeprefix("Caused by: ") for ln in lines if ln.startswith("Caused by: ")]
    out = _java_name(head)
    if causes and _java_name(causes[-1]) not in out:
        out += f" (caused by {_java_name(causes[-1])})"
    return out


def _condition(e: BaseException) -> str | None:
    """PySpark's error condition of `e`, if it has one (asking can fail when the JVM is gone)."""
    try:
        return e.getCondition() if hasattr(e, "getCondition") else None
    except Exception:
        return None


def _jvm_exit_reason() -> str:
    """What the driver JVM said before it exited (its stderr tail): the first error line (and the next)."""
    said = [t for t in (ln.decode(errors="replace").strip() for ln in JVM_TAIL) if t]
    at = next((i for i, ln in enumerate(said) if ln.startswith("Error") or "Exception" in ln), 0)
    return " ".join(said[at:at + (1 if ":" in said[at] else 2)]) if said else ""


# the last line of a Python traceback: "pkg.mod.SomeError: what happened"
_RAISED = re.compile(r"(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Interrupt)): (.+)")


def _raised_in_python(lines: list[str]) -> str | None:
    """What the Python code behind a Spark error raised (a KipvizError's message as it is,
    another exception as "Name: message"), from the traceback quoted in its text."""
    for ln in reversed(lines):
        m = _RAISED.fullmatch(ln.strip())
        if m:
            return m.group(2) if m.group(1) == "KipvizError" else f"{m.group(1)}: {m.group(2)}"
    return None


def error_line(e: BaseException) -> str | None:
    """One line saying what failed in Spark -- the driver JVM, a query, a Python worker, the
    gateway between them -- from an exception PySpark or py4j raised; None for any other
    exception. Reads only the exception's text (the JVM may be gone)."""
    mod = type(e).__module__ or ""
    if not (mod.startswith("pyspark") or mod.startswith("py4j")):
        return None
    try:
        text = str(e)
    except Exception:                    # a captured exception's text can need the JVM
        text = repr(e)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    name = type(e).__name__
    raised = _raised_in_python(lines) if "Traceback (most recent call last)" in text else None
    if name == "PythonException":        # the worker's traceback: its last line says what
        last = next((ln for ln in reversed(lines) if not ln.lstrip().startswith("SQLSTATE")), text)
        return _one_line(f"in a Spark Python worker: {raised or last.strip()}")
    if raised:                           # a Python data source's planner or reader raised
        return _one_line(raised)
    if name == "Py4JJavaError":
        return _one_line(_java_error(lines, name))
    if _condition(e) == "JAVA_GATEWAY_EXITED" or "JAVA_GATEWAY_EXITED" in text:
        reason = _jvm_exit_reason()
        return _one_line("the Spark driver JVM exited as it started" + (f": {reason}" if reason else ""))
    if mod.startswith("py4j"):           # the connection to the JVM broke: it died or was killed
        return _one_line(f"lost the Spark driver JVM ({lines[0] if lines else name})")
    return _one_line(lines[0] if lines else name)


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def session(master: str | None = None, *, remote: str | None = None, app_name: str = "kipviz",
            driver_memory: str | None = None, conf: dict | None = None, java_options: str | None = None,
            batch: bool = False, large: bool = False, jvm_log: int | None = None):
    """The SparkSession to run kipviz's analyses on (created once, then reused). java_options:
    the driver JVM's flags instead of JAVA_OPTIONS (when kipviz starts the JVM). batch=True: a
    whole run from the command line (`kipviz analyze` / `verify-eos`), BATCH_JAVA_OPTIONS;
    large=True: a run of LARGE_ROWS topic records or more, LARGE_LOCAL_DEFAULTS on a local master --
    both still only where nothing stronger (1-3 above) says otherwise. jvm_log: a file descriptor
    that gets the JVM's stderr (Spark's log and its Python workers' stderr) instead of ours, for a
    command line whose stderr is its own (kipviz analyze / verify-eos). A master URL Spark does not
    take, or a spark:// master that does not answer: KipvizError before any JVM starts.
    remote (or KIPVIZ_SPARK_REMOTE): a Spark Connect server, sc://HOST:PORT -- a thin client, no
    JVM here (kipviz.spark.connect)."""
    remote = remote or (None if master else os.environ.get("KIPVIZ_SPARK_REMOTE"))
    if remote:
        from .connect import remote_session
        return register(remote_session(remote, app_name=app_name, conf=conf, defaults=DEFAULTS))
    if batch and java_options is None:
        java_options = BATCH_JAVA_OPTIONS
    from pyspark.sql import SparkSession

    running = _running(master, conf)
    if running is not None:
        return register(running)
    _start_driver(master, driver_memory, java_options, jvm_log)
    spark = SparkSession.builder.config(conf=_spark_conf(master, app_name, large, conf)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return register(spark)


def register(spark):
    """`spark` with kipviz's Kafka source (format "kipviz-kafka", kipviz.spark.kafka_source)
    registered on it; a session of any kind, Spark Connect's included."""
    from .kafka_source import KafkaDataSource
    spark.dataSource.register(KafkaDataSource)
    _whole_values()
    return spark


def _whole_values() -> None:
    """A notebook's `.toPandas()` tables shown with every value whole: pandas cuts a value longer
    than display.max_colwidth (50) with "...", which hid the lists and states a log table teaches."""
    try:
        import pandas as pd
    except ImportError:
        return
    pd.set_option("display.max_colwidth", None)


def _running(master: str | None, conf: dict | None):
    """The SparkSession already running (given `conf` set on it), or None; another master: RuntimeError."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    running = SparkSession.getActiveSession()
    if running is None and SparkContext._active_spark_context is not None:
        running = SparkSession.builder.getOrCreate()
    if running is not None:
        if master and running.sparkContext.master != master:
            raise RuntimeError(f"a SparkSession on {running.sparkContext.master} is already running; "
                               f"stop it (kipviz.spark.stop()) before asking for {master}")
        for k, v in (conf or {}).items():
            running.conf.set(k, str(v))
    return running


def _start_driver(master: str | None, driver_memory, java_options, jvm_log) -> None:
    """Start the driver JVM (unless PySpark already has a gateway), its master checked first."""
    from pyspark import SparkContext
    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        wanted = _launch_master(master)
        if wanted is not None:
            check_master(wanted)
        if wanted is None or _is_local(wanted):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        gateway = _launch_gateway(_launch_conf(wanted, driver_memory, java_options), jvm_log)
        SparkContext._ensure_initialized(gateway=gateway)
    elif master:
        check_master(master)


def _spark_conf(master: str | None, app_name: str, large: bool, conf: dict | None):
    """The session's SparkConf: Spark's own, then kipviz's defaults where unset, then `conf`."""
    from pyspark import SparkConf
    sconf = SparkConf()           # Spark's own configuration, as the JVM holds it
    chosen = master or os.environ.get("KIPVIZ_SPARK_MASTER") or sconf.get("spark.master", None) or DEFAULT_MASTER
    sconf.setMaster(chosen).setIfMissing("spark.app.name", app_name)
    for k, v in DEFAULTS.items():
        sconf.setIfMissing(k, v)
    if _is_local(chosen):
        for k, v in ({**LOCAL_DEFAULTS, **LARGE_LOCAL_DEFAULTS} if large else LOCAL_DEFAULTS).items():
            sconf.setIfMissing(k, v)
        if not (os.environ.get("PYSPARK_PYTHON") or sconf.contains("spark.pyspark.python")):
            os.environ["PYSPARK_PYTHON"] = sys.executable      # workers run this interpreter (and its kipviz)
    for k, v in (conf or {}).items():
        sconf.set(k, str(v))
    return sconf


def stop() -> None:
    """Stop the running SparkSession (the driver JVM stays up, so a new session() is quick)."""
    from pyspark.sql import SparkSession
    s = SparkSession.getActiveSession()
    if s is not None:
        s.stop()
