"""Every failure of a `kipviz` command is one line on stderr, `kipviz: error: ...`, and exit 2
(1 means "violations found", 130 Ctrl-C): bad run directories, manifests and Parquet files, master
URLs, output paths -- refused before any JVM starts -- and failures inside Spark's JVM and its
Python workers, which need one (run as the command line runs, in a subprocess)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kipviz import cli
from kipviz.spark import readers

SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"
SHARE = SAMPLES / "share_eos"


def _one_line(capsys, argv, code: int = 2) -> str:
    assert cli.main([str(a) for a in argv]) == code
    err = capsys.readouterr().err
    assert err.startswith("kipviz: error: ") and err.count("\n") == 1 and err.endswith("\n"), err
    return err


@pytest.fixture
def no_jvm(monkeypatch):
    """Fails the test if a command starts a driver JVM: these inputs are refused before one."""
    import importlib
    s = importlib.import_module("kipviz.spark.session")    # the module (kipviz.spark.session is also the function)

    def started(*a, **k):
        raise AssertionError("a JVM was started")
    monkeypatch.setattr(s, "_launch_gateway", started)
    monkeypatch.delenv("KIPVIZ_SPARK_MASTER", raising=False)


def _manifest() -> dict:
    return json.loads((SHARE / "manifest.json").read_text())


def _run(tmp_path, manifest=None, raw: bytes | None = None) -> Path:
    """A run directory: share_eos's files with this manifest (a dict, any JSON value, or raw bytes)."""
    d = tmp_path / "run"
    shutil.copytree(SHARE, d)
    if raw is not None:
        (d / "manifest.json").write_bytes(raw)
    elif manifest is not None:
        (d / "manifest.json").write_text(json.dumps(manifest))
    return d


# ---- the run directory and its manifest: no JVM -------------------------------------------------
@pytest.mark.parametrize("command", ["analyze", "verify-eos"])
def test_the_issue_manifests_are_one_line_naming_the_field(capsys, tmp_path, no_jvm, command):
    assert "field (top level): expected an object, got []" in _one_line(capsys, [command, _run(tmp_path, [])])
    m = dict(_manifest(), topics=7)
    assert "field topics: expected a list, got 7" in _one_line(capsys, [command, _run(tmp_path / "b", m)])


def _wrong(kind: str):
    return {readers._STR: 7, readers._INT: "7", readers._BOOL: "yes", readers._LIST: {"a": 1},
            readers._OBJ: [1]}[kind]


@pytest.mark.parametrize("field", sorted(readers.MANIFEST_FIELDS))
def test_every_manifest_field_of_the_wrong_type_is_named(capsys, tmp_path, no_jvm, field):
    m = dict(_manifest(), **{field: _wrong(readers.MANIFEST_FIELDS[field])})
    err = _one_line(capsys, ["analyze", _run(tmp_path, m)])
    assert f"field {field}: " in err


@pytest.mark.parametrize("field", sorted(readers.TOPIC_FIELDS))
def test_every_topic_field_of_the_wrong_type_is_named(capsys, tmp_path, no_jvm, field):
    m = _manifest()
    m["topics"][4][field] = _wrong(readers.TOPIC_FIELDS[field])
    assert f"field topics[4].{field}: " in _one_line(capsys, ["verify-eos", _run(tmp_path, m)])


@pytest.mark.parametrize("change, says", [
    (lambda m: m.update(seed=True), "field seed: expected an integer, got true"),     # a bool is no integer
    (lambda m: m.update(format="parquet"), "field format: 'parquet' is not a kipviz-sample format"),
    (lambda m: m.pop("format"), "field format: None is not a kipviz-sample format"),
    (lambda m: m["topics"].__setitem__(0, "in"), 'field topics[0]: expected an object, got "in"'),
    (lambda m: m["topics"][0].pop("name"), "field topics[0].name: expected a topic name, got null"),
    (lambda m: m["topics"][0].update(name=""), 'field topics[0].name: expected a topic name, got ""'),
    (lambda m: m["topics"][3].update(dataset="/etc/passwd"), "field topics[3].dataset: expected a path inside"),
    (lambda m: m["topics"][3].update(batches="../../x.parquet"), "field topics[3].batches: expected a path inside"),
    (lambda m: m["datasets"].update({"topics/in.parquet": 5}), "field datasets['topics/in.parquet']: expected an "
                                                               "object, got 5"),
    (lambda m: m["datasets"]["topics/in.parquet"].update(rows=-1), "rows: expected a count"),
    (lambda m: m["topics"].append(dict(m["topics"][3])), "field topics[5].name: topic 'in' is listed twice (topics[3] too)"),
    (lambda m: m.update(topics=[]), "no topic files (manifest.json lists none that exist)"),
    (lambda m: [t.update(dataset="topics/gone.parquet") for t in m["topics"]], "no topic files"),
])
def test_manifest_values_kipviz_cannot_use(capsys, tmp_path, no_jvm, change, says):
    m = _manifest()
    change(m)
    assert says in _one_line(capsys, ["analyze", _run(tmp_path, m)])


def test_no_directory_no_manifest_no_json(capsys, tmp_path, no_jvm):
    assert _one_line(capsys, ["analyze", tmp_path / "nope"]).endswith("nope: no such directory\n")
    (tmp_path / "file").write_text("x")
    assert _one_line(capsys, ["verify-eos", tmp_path / "file"]).endswith("file: not a directory\n")
    (tmp_path / "empty").mkdir()
    assert "no manifest.json here" in _one_line(capsys, ["analyze", tmp_path / "empty"])
    (tmp_path / "dir" / "manifest.json").mkdir(parents=True)                # a directory of that name
    assert "no manifest.json here" in _one_line(capsys, ["analyze", tmp_path / "dir"])
    assert "not JSON" in _one_line(capsys, ["analyze", _run(tmp_path / "a", raw=b"{x")])
    assert "not JSON" in _one_line(capsys, ["analyze", _run(tmp_path / "b", raw=b"\xff\xfe\x00junk")])
    assert "nested too deeply" in _one_line(capsys, ["analyze", _run(tmp_path / "c", raw=b"[" * 100_000)])
    big = _run(tmp_path / "d", raw=b" " * (readers.MAX_MANIFEST_BYTES + 1))
    assert "larger than 16777216 bytes" in _one_line(capsys, ["analyze", big])


# ---- Parquet files that are not Parquet: no JVM -------------------------------------------------
@pytest.mark.parametrize("rel", ["topics/out.parquet", "batches/out.parquet", "events.parquet",
                                 "topics/internal/transaction_state.parquet"])
@pytest.mark.parametrize("content, says", [(b"PAR1" + bytes(4096), "not a readable Parquet file"),
                                           (b"", "not a readable Parquet file"),
                                           (None, "not a file")])
def test_a_file_that_is_not_parquet_is_one_line_naming_it(capsys, tmp_path, no_jvm, rel, content, says):
    d = _run(tmp_path)
    (d / rel).unlink()
    if content is None:
        (d / rel).mkdir()
    else:
        (d / rel).write_bytes(content)
    err = _one_line(capsys, ["verify-eos", d])
    assert f"{d / rel}: {says}" in err


# ---- master URLs and output paths: no JVM ------------------------------------------------------
@pytest.mark.parametrize("master", ["bogus://x:1", "local[x]", "spark://nohost", "", "yarn://x"])
def test_a_master_spark_does_not_take_is_one_line(capsys, no_jvm, master):
    assert "is not a master URL" in _one_line(capsys, ["analyze", SHARE, "--master", master])


def test_an_unreachable_master_is_one_line_in_bounded_time(capsys, no_jvm, monkeypatch):
    t = time.monotonic()
    err = _one_line(capsys, ["verify-eos", SHARE, "--master", "spark://127.0.0.1:1"])
    assert "does not answer (127.0.0.1:1: Connection refused)" in err
    monkeypatch.setenv("KIPVIZ_SPARK_MASTER", "spark://127.0.0.1:1,127.0.0.1:2")     # the environment's, too
    assert "127.0.0.1:2: Connection refused" in _one_line(capsys, ["analyze", SHARE])
    assert time.monotonic() - t < 10


def test_an_unwritable_report_is_refused_before_the_work(capsys, tmp_path, no_jvm):
    assert "cannot write /proc/report.html" in _one_line(capsys, ["analyze", SHARE, "--html", "/proc/report.html"])
    assert "is a directory" in _one_line(capsys, ["analyze", SHARE, "--html", tmp_path])
    assert "no such directory" in _one_line(capsys, ["analyze", SHARE, "--html", tmp_path / "no" / "r.html"])
    assert not list(tmp_path.iterdir())


# ---- the other commands -------------------------------------------------------------------------
@pytest.mark.parametrize("argv, says", [
    (["decode", "TxnOffsetCommitRequest", "--version", "3", "--hex", "zz"], "not hex"),
    (["decode", "TxnOffsetCommitRequest", "--version", "3", "--file", "/nonexistent"], "No such file"),
    (["decode", "TxnOffsetCommitRequest", "--version", "3", "--file", "/tmp"], "/tmp: is a directory"),
    (["decode", "TxnOffsetCommitRequest", "--version", "3", "--file", "/dev/zero"], "more than 104857600 bytes"),
    (["decode", "TxnOffsetCommitRequest", "--version", "3"], "give exactly one of --hex or --file"),
    (["decode", "TxnOffsetCommitRequest", "--version", "x", "--hex", "00"], "invalid int value: 'x'"),
    (["wire", "TxnOffsetCommitRequest", "-o", "/tmp"], "Is a directory"),
    (["wire", "TxnOffsetCommitRequest", "-o", "/proc/x.svg"], "No such file"),
    (["diff", "TxnOffsetCommitRequest", "1", "2", "--format", "svg", "-o", "/nonexistent/x.svg"], "No such file"),
    (["scenario", "kip1319.stale_member_epoch_v6", "--svg", "/proc/x.svg"], "cannot write /proc/x.svg"),
    (["scenario", "kip1319.stale_member_epoch_v6", "--html", "/tmp"], "is a directory"),
    (["review", "/nonexistent.json"], "cannot read"),
    (["review", "/tmp"], "cannot read"),
    (["review", "/etc/hostname", "--html", "/proc/x.html"], "cannot write /proc/x.html"),
    (["sample-data", "--scenario", "share_eos", "--records", "10", "-o", "/etc/hostname"], "not a directory"),
    (["export", "/nonexistent", "-o", "/tmp/site"], "no such notebook"),
    (["list", "--bogus"], "unrecognized arguments: --bogus"),
    (["nope"], "invalid choice: 'nope'"),
    ([], "the following arguments are required: command"),
])
def test_the_other_commands_bad_input_is_one_line(capsys, argv, says):
    try:
        code = cli.main(argv)
    except SystemExit as e:              # argparse's errors: before main's own handling
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("kipviz: error: ") and err.count("\n") == 1 and says in err, err


def test_an_unexpected_failure_is_one_line_and_a_traceback_on_request(capsys, monkeypatch):
    def broken(args):
        raise TypeError("unsupported operand\nsecond line")
    monkeypatch.setattr(cli.core, "cmd_list", broken)      # the module that builds the parser
    err = _one_line(capsys, ["list"])
    assert err == "kipviz: error: internal error: TypeError: unsupported operand (a kipviz bug: please report it)\n"
    monkeypatch.setenv("KIPVIZ_TRACEBACK", "1")
    with pytest.raises(TypeError):
        cli.main(["list"])


def test_spark_failures_read_as_one_line():
    """The texts PySpark and py4j raise, as error_line shortens them (without a JVM)."""
    from pyspark.errors.exceptions.base import PySparkRuntimeError

    from kipviz.spark.session import JVM_TAIL, error_line

    def captured(name: str, text: str) -> Exception:     # what PySpark raises for the JVM's errors
        return type(name, (Exception,), {"__module__": "pyspark.errors.exceptions.captured"})(text)
    e = captured("PythonException", "An exception was thrown from the Python worker:\nTraceback (most recent "
                                    "call last):\n  File \"x.py\", line 3, in f\nMemoryError: bomb\n")
    assert error_line(e) == "in a Spark Python worker: MemoryError: bomb"
    e = captured("NumberFormatException", "[CAST_INVALID_INPUT] The value '9223372036854775808' of the type "
                                          "\"STRING\" cannot be cast to \"BIGINT\". SQLSTATE: 22018\n== DataFrame "
                                          "==\n...")
    assert error_line(e) == ("[CAST_INVALID_INPUT] The value '9223372036854775808' of the type \"STRING\" cannot "
                             "be cast to \"BIGINT\".")
    e = type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})(
        "An error occurred while calling o276.collectToPython.\n: org.apache.spark.SparkException: Job aborted due "
        "to stage failure: Task 0 in stage 14.0 failed 1 times, most recent failure: Lost task 0.0 in stage 14.0 "
        "(TID 17) (localhost executor driver): java.io.IOException: Cannot run program \"p\"\n\tat org.x.Y(Y.java:1)"
        "\nCaused by: java.io.IOException: error=2, No such file or directory\n\tat ...")
    assert error_line(e) == ('a Spark task failed: IOException: Cannot run program "p" (caused by IOException: '
                             'error=2, No such file or directory)')
    JVM_TAIL.clear()
    JVM_TAIL.extend([b"Error: Master must either be yarn or start with spark, k8s, or local\n",
                     b"Run with --help for usage help or --verbose for debug output\n"])
    e = PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})
    assert error_line(e) == ("the Spark driver JVM exited as it started: Error: Master must either be yarn or "
                             "start with spark, k8s, or local")
    JVM_TAIL.clear()
    assert error_line(ValueError("x")) is None


# ---- failures inside Spark: subprocesses, one JVM each ------------------------------------------
def _env(**extra) -> dict:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", **extra)
    env.pop("KIPVIZ_SPARK_MASTER", None)
    env.pop("KIPVIZ_TRACEBACK", None)
    return env


_SEVERAL = """
import contextlib, io, json, sys
from kipviz.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = main(argv)
    out.append({"code": code, "stdout": o.getvalue(), "stderr": e.getvalue()})
print(json.dumps(out))
"""


def _corrupt_pages(path: Path) -> None:
    """Every byte between the magic and the footer overwritten: the footer reads, the pages do not."""
    b = bytearray(path.read_bytes())
    footer = int.from_bytes(b[-8:-4], "little")
    b[4:len(b) - footer - 8] = b"\xff" * (len(b) - footer - 12)
    path.write_bytes(bytes(b))


def _junk_batches(path: Path) -> int:
    """The `batch` values of two rows in three set to junk (4 bytes; 200 random bytes); how many."""
    import random
    rng = random.Random(7)
    t = pq.read_table(path)
    rows = t.to_pylist()
    for i, r in enumerate(rows):
        if i % 3 == 0:
            r["batch"] = b"junk"
        elif i % 3 == 1:
            r["batch"] = rng.randbytes(200)
    pq.write_table(pa.Table.from_pylist(rows, schema=t.schema), path)
    return sum(1 for i in range(len(rows)) if i % 3 != 2)


def _wrong_schema(d: Path) -> int:
    """Another schema: a string `partition` (every fifth value not a number) in __transaction_state,
    no `timestamp` in __share_group_state, an int `batch` in out's batches; how many batches."""
    def rewrite(rel, change):
        t = pq.read_table(d / rel)
        rows, fields = change([dict(r) for r in t.to_pylist()], list(t.schema))
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), d / rel)
        return len(rows)

    def partition(rows, fields):
        for i, r in enumerate(rows):
            r["partition"] = "abc" if i % 5 == 0 else str(r["partition"])
        return rows, [pa.field("partition", pa.string()) if f.name == "partition" else f for f in fields]

    def timestamp(rows, fields):
        return [{k: v for k, v in r.items() if k != "timestamp"} for r in rows], \
            [f for f in fields if f.name != "timestamp"]

    def batch(rows, fields):
        for r in rows:
            r["batch"] = len(r["batch"])
        return rows, [pa.field("batch", pa.int64()) if f.name == "batch" else f for f in fields]
    rewrite("topics/internal/transaction_state.parquet", partition)
    rewrite("topics/internal/share_group_state.parquet", timestamp)
    return rewrite("batches/out.parquet", batch)


@pytest.mark.slow
def test_failures_inside_spark_are_one_line(tmp_path):
    """In one process, one JVM, as four command lines: a Parquet file whose footer reads but whose
    pages do not (the JVM's reader fails: FAILED_READ_FILE), junk `batch` values (counted as
    corrupt batches, not a CAST_INVALID_INPUT failure: verify-eos gives its verdict), columns of
    the wrong type (counted in errors), and then a good run in the same JVM. Nothing of the JVM's
    or PySpark's logging reaches stderr; the JVM's log is kept and named."""
    page = tmp_path / "page"
    shutil.copytree(SHARE, page)
    _corrupt_pages(page / "topics" / "internal" / "transaction_state.parquet")
    junk = tmp_path / "junk"
    shutil.copytree(SHARE, junk)
    _junk_batches(junk / "batches" / "out.parquet")
    schema = tmp_path / "schema"
    shutil.copytree(SHARE, schema)
    rows = _wrong_schema(schema)
    argv = [["analyze", str(page)], ["verify-eos", str(junk)], ["analyze", str(schema)], ["verify-eos", str(SHARE)]]
    done = subprocess.run([sys.executable, "-c", _SEVERAL, json.dumps(argv)], env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]
    page_run, junk_run, schema_run, good_run = json.loads(done.stdout)
    err = page_run["stderr"]
    assert page_run["code"] == 2 and err.count("\n") == 1, page_run
    assert err.startswith("kipviz: error: SparkException: [FAILED_READ_FILE") and "transaction_state.parquet" in err
    log = err.rsplit("(Spark's log: ", 1)[1].rstrip(")\n")
    assert "FAILED_READ_FILE" in Path(log).read_text()          # the JVM's own account, kept for the user
    Path(log).unlink()
    assert junk_run["code"] == 1 and junk_run["stderr"] == "", junk_run
    # junk batch bytes: no CAST_INVALID_INPUT; the batches are named unreadable and the run cannot be verified
    assert "CAST_INVALID_INPUT" not in junk_run["stdout"] and ": cannot verify: " in junk_run["stdout"]
    # the verdict first (verify-eos), then each unreadable input named
    assert junk_run["stdout"].splitlines()[0].endswith(")") and ": cannot verify: " in junk_run["stdout"].splitlines()[0]
    assert re.search(r"^\[unreadable\] batches/out partition ", junk_run["stdout"], re.M), junk_run["stdout"][:2000]
    assert schema_run["code"] == 0 and schema_run["stderr"] == "", schema_run
    for counted in ("wrong-type: 1", "missing-column: 1", f"corrupt: {rows}", "bad-value: "):
        assert counted in schema_run["stdout"], schema_run["stdout"]
    assert good_run["code"] == 0 and good_run["stderr"] == "" and ": OK" in good_run["stdout"], good_run


def _kipviz(argv, env, timeout=300):
    return subprocess.run([sys.executable, "-c", "import sys; from kipviz.cli import main; sys.exit(main())",
                           *map(str, argv)], env=env, capture_output=True, text=True, timeout=timeout)


def test_a_jvm_that_cannot_start_is_one_line_with_its_reason():
    done = _kipviz(["analyze", SHARE], _env(KIPVIZ_SPARK_DRIVER_MEMORY="1k"))    # -Xmx1k < -Xms64m
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.startswith("kipviz: error: the Spark driver JVM exited as it started: Error occurred "
                                  "during initialization of VM Initial heap size") and done.stderr.count("\n") == 1
    Path(done.stderr.rsplit("(Spark's log: ", 1)[1].rstrip(")\n")).unlink()


@pytest.mark.slow
def test_python_workers_that_cannot_start_are_one_line():
    done = _kipviz(["verify-eos", SHARE], _env(PYSPARK_PYTHON="/nonexistent/python3"))
    assert done.returncode == 2 and done.stdout == "", done.stderr[-3000:]
    assert done.stderr.startswith("kipviz: error: a Spark task failed: IOException: Cannot run program "
                                  '"/nonexistent/python3"') and done.stderr.count("\n") == 1, done.stderr
    Path(done.stderr.rsplit("(Spark's log: ", 1)[1].rstrip(")\n")).unlink()


def _group(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.getpgid(int(d)) == pgid:
                    out.append(int(d))
            except OSError:
                pass
    return out


def _spark_submit_in(pgid: int) -> bool:
    for pid in _group(pgid):
        try:
            if b"SparkSubmit" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            pass
    return False


@pytest.mark.slow
@pytest.mark.parametrize("after", [0.5, 6.0])       # as the JVM starts; while the job runs
def test_ctrl_c_is_one_line_and_leaves_no_jvm(after):
    as_in_a_terminal = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                        "from kipviz.cli import main; sys.exit(main())")
    p = subprocess.Popen([sys.executable, "-c", as_in_a_terminal, "verify-eos", str(SHARE)], env=_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _spark_submit_in(p.pid) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.1)
        time.sleep(after)
        assert p.poll() is None, p.communicate()
        os.killpg(p.pid, signal.SIGINT)               # what Ctrl-C in a terminal does: the whole group
        out, err = p.communicate(timeout=60)
        assert p.returncode == 130 and err == "kipviz: interrupted\n", err[-3000:]
        deadline = time.monotonic() + 30
        while _group(p.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _group(p.pid) == []                    # the JVM went too
    finally:
        for pid in _group(p.pid):
            os.kill(pid, signal.SIGKILL)
