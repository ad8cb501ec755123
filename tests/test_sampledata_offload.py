"""Rows built in a forked child (kipviz.sampledata.offload) and files written by the writer process
(kipviz.sampledata.filewriter): the same bytes as building and writing them in the generator's own
process, and a clear error when a child fails."""
from __future__ import annotations

import os

import pytest

from kipviz.errors import KipvizError
from kipviz.sampledata import filewriter, generate, offload, writer

from .test_sampledata import _files

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the offload needs fork() (Linux)")


def _children(monkeypatch) -> list[int]:
    """Count the chunks handed to children."""
    seen = []
    submit = offload.Offload.submit

    def counting(self, build):
        seen.append(1)
        return submit(self, build)
    monkeypatch.setattr(offload.Offload, "submit", counting)
    return seen


def _writers(monkeypatch) -> list[int]:
    """Count the writer processes started."""
    seen = []
    init = filewriter.FileWriterProcess.__init__

    def counting(self, *a):
        seen.append(1)
        init(self, *a)
    monkeypatch.setattr(filewriter.FileWriterProcess, "__init__", counting)
    return seen


@pytest.mark.parametrize("name,records", [("share_eos", 3000), ("kip516", 1500), ("regular_eos", 1500)])
def test_offloaded_chunks_write_the_same_bytes(tmp_path, monkeypatch, name, records):
    monkeypatch.setenv("KIPVIZ_NO_FORK", "1")
    assert not offload.available()
    generate(name, tmp_path / "inline", records=records, seed=2, drain_every=1500)
    monkeypatch.delenv("KIPVIZ_NO_FORK")
    monkeypatch.setattr(writer, "OFFLOAD_EVENTS", 1)        # every chunk goes to a child
    monkeypatch.setattr(offload, "available", lambda: True)
    seen, writers = _children(monkeypatch), _writers(monkeypatch)
    generate(name, tmp_path / "forked", records=records, seed=2, drain_every=1500)
    assert len(seen) > 5 and writers == [1]
    assert _files(tmp_path / "forked") == _files(tmp_path / "inline")
    assert not (tmp_path / "forked" / ".parts").exists()


class _FirstSmall(int):
    """An OFFLOAD_EVENTS that the first chunk stays below and every later one reaches."""
    calls = 0

    def __le__(self, n):
        _FirstSmall.calls += 1
        return _FirstSmall.calls > 1


def test_after_a_chunk_written_here_the_files_stay_here(tmp_path, monkeypatch):
    monkeypatch.setenv("KIPVIZ_NO_FORK", "1")
    generate("share_eos", tmp_path / "inline", records=3000, seed=2, drain_every=1500)
    monkeypatch.delenv("KIPVIZ_NO_FORK")
    _FirstSmall.calls = 0
    monkeypatch.setattr(writer, "OFFLOAD_EVENTS", _FirstSmall(1))
    monkeypatch.setattr(offload, "available", lambda: True)
    seen, writers = _children(monkeypatch), _writers(monkeypatch)
    generate("share_eos", tmp_path / "forked", records=3000, seed=2, drain_every=1500)
    assert len(seen) > 5 and writers == []          # the events file was open here: no writer process
    assert _files(tmp_path / "forked") == _files(tmp_path / "inline")


def test_a_failing_writer_process_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "OFFLOAD_EVENTS", 1)
    monkeypatch.setattr(offload, "available", lambda: True)

    class Broken(filewriter.TableWriter):
        def write_batch(self, batch):
            raise OSError("disk full")
    monkeypatch.setattr(filewriter, "TableWriter", Broken)
    with pytest.raises(KipvizError, match="writing the sample in a child process failed: OSError: disk full"):
        generate("share_eos", tmp_path / "s", records=2000, seed=1, drain_every=1000)


def test_the_writer_process_ends_with_its_pipe_and_cancel_reaps_it(tmp_path):
    parts = tmp_path / ".parts"
    parts.mkdir()
    w = filewriter.FileWriterProcess(tmp_path, parts)
    pid = w._pid
    os.close(w._pipe)                                  # the generator went away without close()
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert not (parts / "writer.rows").exists()
    w = filewriter.FileWriterProcess(tmp_path, parts)
    pid = w._pid
    w.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    with pytest.raises(KipvizError, match="it was stopped"):
        w.close()


def test_small_chunks_stay_in_process(tmp_path, monkeypatch):
    monkeypatch.setattr(offload, "available", lambda: True)
    seen = _children(monkeypatch)
    generate("share_eos", tmp_path / "s", records=300, seed=1)      # one chunk far below OFFLOAD_EVENTS
    assert seen == []


def test_a_failing_child_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "OFFLOAD_EVENTS", 1)
    monkeypatch.setattr(offload, "available", lambda: True)

    def broken(events):
        raise ValueError("column builder broke")
    monkeypatch.setattr(writer, "event_batch", broken)
    with pytest.raises(KipvizError, match="building rows in a child process failed: ValueError: column builder broke"):
        generate("share_eos", tmp_path / "s", records=2000, seed=1, drain_every=1000)


def test_abandon_stops_a_running_child(tmp_path):
    off = offload.Offload(tmp_path)
    off.submit(lambda: __import__("time").sleep(60) or {})
    pid = off._pid
    off.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)                 # reaped: no such child any more
    assert off.collect() is None


def test_collect_returns_the_childs_batches_in_order(tmp_path):
    import pyarrow as pa
    schema = pa.schema([("x", pa.int64())])
    off = offload.Offload(tmp_path)
    assert off.collect() is None
    off.submit(lambda: {"a": (schema, [pa.RecordBatch.from_pylist([{"x": i}] * i, schema=schema) for i in range(4)]),
                        "b": (schema, [])})
    with pytest.raises(RuntimeError, match="collect"):
        off.submit(lambda: {})
    got = off.collect()
    assert [b.num_rows for b in got["a"][1]] == [0, 1, 2, 3] and got["b"][1] == []
    assert list(tmp_path.iterdir()) == []            # the files are gone once read
    n = off.submit(lambda: {"a": (schema, []), "state": b"\x00pickled"})
    got = off.collect(read=False)
    assert got == {"state": b"\x00pickled"}           # the Arrow file is left for the writer process
    assert [p.name for p in tmp_path.iterdir()] == [off.chunk_path(n, "a.arrow").name] == [f"chunk-{n}.a.arrow"]


def test_available_only_with_a_spare_core_and_not_switched_off(monkeypatch):
    monkeypatch.delenv("KIPVIZ_NO_FORK", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert offload.available()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert not offload.available()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("KIPVIZ_NO_FORK", "1")
    assert not offload.available()


def test_a_child_killed_from_outside_says_so(tmp_path):
    off = offload.Offload(tmp_path)
    off.submit(lambda: __import__("time").sleep(60) or {})
    os.kill(off._pid, 9)
    with pytest.raises(KipvizError, match="killed by signal 9"):
        off.collect()


def test_a_chunk_with_nothing_to_write(tmp_path):
    off = offload.Offload(tmp_path)
    off.submit(dict)
    assert off.collect() == {}


def test_helpers_ignore_ctrl_c_the_generator_stops_them(tmp_path):
    import signal
    import time
    # as in a terminal (a test runner's worker may start with SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        off = offload.Offload(tmp_path)
        # a Ctrl-C reaches the whole process group: the child carries on; only the generator stops
        off.submit(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.2), {"x": b"done"})[-1])
        assert off.collect() == {"x": b"done"}
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler     # the generator's own is kept
    finally:
        signal.signal(signal.SIGINT, before)
