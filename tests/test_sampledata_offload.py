"""Rows built in a forked child (kipviz.sampledata.offload): the same bytes as building them in
the generator's own process, and a clear error when the child fails."""
from __future__ import annotations

import os

import pytest

from kipviz.errors import KipvizError
from kipviz.sampledata import generate, offload, writer

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


@pytest.mark.parametrize("name,records", [("share_eos", 3000), ("kip516", 1500)])
def test_offloaded_chunks_write_the_same_bytes(tmp_path, monkeypatch, name, records):
    monkeypatch.setenv("KIPVIZ_NO_FORK", "1")
    assert not offload.available()
    generate(name, tmp_path / "inline", records=records, seed=2, drain_every=1500)
    monkeypatch.delenv("KIPVIZ_NO_FORK")
    monkeypatch.setattr(writer, "OFFLOAD_EVENTS", 1)        # every chunk goes to a child
    monkeypatch.setattr(offload, "available", lambda: True)
    seen = _children(monkeypatch)
    generate(name, tmp_path / "forked", records=records, seed=2, drain_every=1500)
    assert len(seen) > 5
    assert _files(tmp_path / "forked") == _files(tmp_path / "inline")
    assert not (tmp_path / "forked" / ".parts").exists()


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
