"""Real Spark clusters for the tests, started from the pyspark wheel on 127.0.0.1, once per test
session, each stopped by its PID and bounded in time:

    kafka_cluster  a `kipviz serve` cluster holding tests.kafka_checks.produce()'s records
    cluster_runs   a standalone master and two workers (1 core, 512 MB executor each) and a Spark
                   Connect server on local[2], and on each one driver (DriverRun) that runs the
                   CLI commands and tests.kafka_checks, while the test process works on local[2]

Test modules import the fixtures (`from tests.spark_cluster import cluster_runs  # noqa: F401`);
tests/test_spark_clusters.py is the one module that does, so that the xdist scheduler
(tests/browser/xdist_group.py) keeps it on one worker: one set of clusters per `make test`. The
drivers run in subprocesses: a process holds one SparkContext, and the tests' own local[2]
session holds this one."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 240
DAEMON_MEMORY = "160m"           # the master's and workers' own JVMs
WORKER_MEMORY = "640m"           # what each worker offers its executor ...
# ... which must fit the executor Spark asks for (1g by default): the drivers' spark-defaults.conf
DRIVER_DEFAULTS = {"spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
                   # a two-core cluster, sized as kipviz sizes local[2] (kipviz.spark.session's
                   # LOCAL_DEFAULTS): Spark's 200 shuffle partitions made `kipviz analyze` on the
                   # sample run ~4,700 tasks, 269 s on the cluster at load 8-12 (Connect: 108 s)
                   "spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "false",
                   # a task waits for neither executor's data: both are on this machine
                   "spark.locality.wait": "0s"}
_CONF_DIR: list = []


def conf_dir() -> str:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds DRIVER_DEFAULTS (made once per process,
    removed when it exits); the executors log errors only, as kipviz's drivers do."""
    if not _CONF_DIR:
        from kipviz.spark.session import LOG4J2
        d = tempfile.mkdtemp(prefix="kipviz-spark-conf-")
        atexit.register(shutil.rmtree, d, True)
        opts = {**DRIVER_DEFAULTS, "spark.executor.extraJavaOptions":
                f"-Dlog4j.configurationFile={LOG4J2.as_uri()} -XX:+UseSerialGC -XX:TieredStopAtLevel=1"}
        Path(d, "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in opts.items()))
        _CONF_DIR.append(d)
    return _CONF_DIR[0]


def spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home
    return _find_spark_home()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict:
    """The environment of every Spark process the tests start: loopback, errors-only logging,
    this interpreter for the Python workers."""
    from kipviz.spark.session import LOG4J2
    e = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=spark_home(), PYSPARK_PYTHON=sys.executable,
             SPARK_DAEMON_MEMORY=DAEMON_MEMORY, SPARK_CONNECT_MODE="0", SPARK_CONF_DIR=conf_dir(),
             SPARK_DAEMON_JAVA_OPTS=f"-Dlog4j.configurationFile={LOG4J2.as_uri()} -XX:+UseSerialGC "
                                    "-XX:TieredStopAtLevel=1",
             # the master's REST submission server would take port 6066 (fixed): off
             SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    for k in ("KIPVIZ_SPARK_MASTER", "KIPVIZ_SPARK_REMOTE", "SPARK_REMOTE", "PYSPARK_SUBMIT_ARGS"):
        e.pop(k, None)
    return e


def _wait(what: str, ready, procs, timeout_s: float = START_TIMEOUT_S, log: Path | None = None):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what} exited with {p.returncode}: {log.read_text()[-2000:] if log else ''}")
        got = ready()
        if got:
            return got
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready within {timeout_s} s: {log.read_text()[-2000:] if log else ''}")


def stop(procs, timeout_s: float = 20) -> None:
    """SIGTERM each process by its PID, then SIGKILL what is still there after timeout_s."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return json.load(r).get("aliveworkers", 0)
    except (OSError, ValueError):
        return 0


def start_standalone(workdir: Path, workers: int = 2):
    """(master URL, processes, log): a master and `workers` workers, each a JVM of the wheel."""
    home, e = spark_home(), env()
    port, ui = free_port(), free_port()
    log = workdir / "standalone.log"
    out = open(log, "ab")
    cls = [f"{home}/bin/spark-class"]
    procs = [subprocess.Popen(cls + ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                     str(port), "--webui-port", str(ui)], env=e, stdout=out, stderr=out)]
    url = f"spark://127.0.0.1:{port}"
    try:
        for i in range(workers):
            procs.append(subprocess.Popen(cls + ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                                 "--cores", "1", "--memory", WORKER_MEMORY, "--webui-port",
                                                 str(free_port()), "--work-dir", str(workdir / f"worker{i}"), url],
                                          env=e, stdout=out, stderr=out))
        _wait("the standalone cluster", lambda: _alive_workers(ui) >= workers, procs, log=log)
    except BaseException:
        stop(procs)
        raise
    return url, procs, log


def start_connect(workdir: Path):
    """(sc:// URL, process, log): a Spark Connect server on local[2] (one JVM for every client)."""
    from kipviz.spark.session import DEFAULTS, JAVA_OPTIONS, LOG4J2
    home, port = spark_home(), free_port()
    log = workdir / "connect.log"
    conf = {**DEFAULTS, "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": port,
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false",
            "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={LOG4J2.as_uri()} {JAVA_OPTIONS}"}
    cmd = [f"{home}/bin/spark-submit", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--name", "kipviz Spark Connect", "--master", "local[2]", "--driver-memory", "768m"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    # the launcher counts the Connect server as a daemon: without this its heap would be DAEMON_MEMORY
    e = {k: v for k, v in env().items() if k not in ("SPARK_DAEMON_MEMORY", "SPARK_DAEMON_JAVA_OPTS")}
    p = subprocess.Popen(cmd, env=e, stdout=open(log, "ab"), stderr=subprocess.STDOUT)

    def listening():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    try:
        _wait("the Spark Connect server", listening, [p], log=log)
    except BaseException:
        stop([p])
        raise
    return f"sc://127.0.0.1:{port}", p, log


@pytest.fixture(scope="session")
def kafka_cluster():
    """(bootstrap, what a reader must see) of a kipviz serve cluster holding the checks' records."""
    from kipviz.serve import Server
    from tests.kafka_checks import produce
    srv = Server(brokers=1, log=lambda line: None).start()
    try:
        yield srv.bootstrap, produce(srv.bootstrap)
    finally:
        srv.stop()


RUN_TIMEOUT_S = 900              # one driver's whole run (its CLI commands and the checks)
SAMPLE = "sample_data/share_eos"


class DriverRun:
    """tests.kafka_checks in a subprocess on one cluster, started now; result() waits for its JSON."""

    def __init__(self, bootstrap: str, where: list[str], commands: list[str], out: Path):
        self.out, self.log = out, out.with_suffix(".log")
        self.t0 = time.monotonic()
        args = [sys.executable, "-m", "tests.kafka_checks", bootstrap, *where, "--sample", SAMPLE, "--out", str(out)]
        for c in commands:
            args += ["--cli", c]
        with open(self.log, "wb") as log:
            self.p = subprocess.Popen(args, cwd=ROOT, env=env(), stdout=log, stderr=subprocess.STDOUT)
        self._result = None

    def result(self) -> dict:
        if self._result is None:
            try:
                self.p.wait(max(1.0, RUN_TIMEOUT_S - (time.monotonic() - self.t0)))
            except subprocess.TimeoutExpired:
                stop([self.p])
                raise AssertionError(f"{self.p.args[3:]} did not finish within {RUN_TIMEOUT_S} s: "
                                     f"{self.log.read_text()[-2000:]}") from None
            assert self.p.returncode == 0 and self.out.exists(), self.log.read_text()[-3000:]
            self._result = json.loads(self.out.read_text())
            self._result["seconds"]["all"] = round(time.monotonic() - self.t0, 1)
        return self._result


@pytest.fixture(scope="session")
def cluster_runs(kafka_cluster, tmp_path_factory):
    """{"standalone": DriverRun, "connect": DriverRun}: a standalone master with two workers and a
    Spark Connect server, started together, and on each one driver that runs the CLI commands
    (analyze and verify-eos on the standalone cluster, analyze on Connect) and then the source's
    checks (tests.kafka_checks). Both drivers run while the test process works on local[2]; each
    cluster starts once per test session, and its driver once (one set of executors). The logs,
    the workers' directories and the drivers' JSON (with their timings) stay in pytest's basetemp."""
    from concurrent.futures import ThreadPoolExecutor
    work = tmp_path_factory.mktemp("clusters")
    with ThreadPoolExecutor(2) as pool:
        started = [pool.submit(start_standalone, work), pool.submit(start_connect, work)]
        # both waited for (exception() waits), so that neither is left running when the other failed
        up = [f.result() for f in started if f.exception() is None]
        procs = [p for _, ps, _ in up for p in (ps if isinstance(ps, list) else [ps])]
        try:
            master, remote = (f.result()[0] for f in started)
            boot = kafka_cluster[0]
            runs = {"standalone": DriverRun(boot, ["--master", master], ["analyze", "verify-eos"], work / "sa.json"),
                    "connect": DriverRun(boot, ["--remote", remote], ["analyze"], work / "sc.json")}
            try:
                yield runs
            finally:
                stop([r.p for r in runs.values()])
        finally:
            stop(procs)


def cli(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    """`kipviz ARGS` as a user runs it, in this environment."""
    return subprocess.run([sys.executable, "-c", "import sys; from kipviz.cli import main; sys.exit(main())", *args],
                          cwd=ROOT, env=env(), capture_output=True, text=True, timeout=timeout_s)
