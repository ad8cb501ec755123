"""Run directories written safely (issue 30, item 5): one file per topic whatever its legal name, files
created new and never through a link, a recording's folder private and only ever an earlier recording
replaced. The same RunWriter serves `kipviz sample-data` and `kipviz serve --record`."""
from __future__ import annotations

import json
import os
import shutil
import stat

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kipviz.broker import Cluster
from kipviz.errors import KipvizError
from kipviz.sampledata.writer import MAX_STEM, RunWriter, dataset_stem
from kipviz.serve.record import check_folder
from tests.spark_session import spark  # noqa: F401 - the shared SparkSession fixture

ID = "AAAAAAAAAAAAAAAAAAAAAA"
LEGAL = "abcXYZ019._-"
# every shape a legal Kafka topic name takes: leading runs of "_" and ".", "." vs "_" twins, 249 characters
NAMES = st.one_of(
    st.text(alphabet=LEGAL, min_size=1, max_size=249),
    st.builds(lambda lead, rest: lead + rest, st.text(alphabet="_.", min_size=1, max_size=6),
              st.text(alphabet=LEGAL, max_size=30)),
    st.builds(lambda rest, n: (rest * 249)[:n], st.text(alphabet=LEGAL, min_size=1, max_size=3),
              st.integers(230, 249)),
).filter(lambda n: n not in (".", ".."))


def _path(name: str, live: bool = True) -> str:
    sub, stem = dataset_stem(name, ID, live)
    return sub + stem


def _twins(name: str) -> set[str]:
    """The names Kafka says collide with `name` in metrics ("." and "_" swapped anywhere)."""
    return {name.replace(".", "_"), name.replace("_", "."), name}


@given(st.lists(NAMES, min_size=2, max_size=8, unique=True))
def test_distinct_names_get_distinct_files_spark_reads(names):
    paths = [_path(n) for n in names]
    assert len(set(paths)) == len(names)
    for p in paths:
        stem = p.rsplit("/", 1)[-1]
        assert not stem.startswith(("_", ".")) and "/" not in stem      # Spark skips _x and .x files
        assert len((stem + ".parquet").encode()) <= 255 and len(stem) <= MAX_STEM


@given(NAMES)
def test_names_differing_only_in_dot_and_underscore_stay_apart(name):
    twins = sorted(_twins(name))
    assert len({_path(t) for t in twins}) == len(twins)
    assert len({_path(t, live=False) for t in twins}) == len(twins)


def test_the_names_that_met_before():
    assert _path("__consumer_offsets") == "internal/consumer_offsets"        # the bundled layout, unchanged
    assert _path("_consumer_offsets") == "internal/u~consumer_offsets"      # was internal/consumer_offsets
    assert _path(".transaction_state") == "internal/d~transaction_state"    # was internal/transaction_state
    assert _path("orders") == "orders" and _path("promos", live=False) == f"deleted/promos@{ID}"
    assert _path("_x", live=False) == f"deleted/u~x@{ID}"                     # was deleted/_x@...: skipped by Spark
    long = "t" * 249                                                          # was 257 bytes: ENAMETOOLONG
    assert len(_path(long)) == MAX_STEM and _path(long) != _path("t" * 248)
    assert _path("a/b").startswith("~~") and "/" not in _path("../x")         # not a topic name: its hash


def _cluster_with(names) -> Cluster:
    c = Cluster(seed=4)
    for i, n in enumerate(names):
        c.create_topic(n, 1)
        c.topics.partition(n, 0).append([(None, f"{n}#{i}".encode())], c.now)
    return c


def test_every_topic_keeps_its_own_records_in_a_written_run(tmp_path):
    # before: _consumer_offsets and .transaction_state overwrote the internal topics' files, a
    # 249-character name failed (ENAMETOOLONG), "Orders" and "orders" shared a file on macOS
    names = ["_consumer_offsets", ".transaction_state", "a.b", "a_b", "Orders", "orders", "x" * 249, "x" * 248]
    c = _cluster_with(names)
    w = RunWriter(tmp_path / "run", offload=False)
    manifest = w.close(c, {"scenario": "t"})
    files = {t["name"]: t["dataset"] for t in manifest["topics"]}
    assert len(set(files.values())) == len(files) == len(names) + 3
    assert len({f.casefold() for f in files.values()}) == len(files)        # one file each on macOS too
    for i, n in enumerate(names):
        rows = pq.read_table(tmp_path / "run" / files[n]).column("value").to_pylist()
        assert rows == [f"{n}#{i}".encode()], n
    assert files["__consumer_offsets"] == "topics/internal/consumer_offsets.parquet"
    assert pq.read_table(tmp_path / "run" / files["__consumer_offsets"]).num_rows == 0


def test_files_are_created_new_never_through_a_link(tmp_path):
    victim, victim_dir = tmp_path / "victim", tmp_path / "victim-dir"
    victim.write_text("precious")
    victim_dir.mkdir()
    (victim_dir / "keep").write_text("mine")
    out = tmp_path / "run"
    RunWriter(out, offload=False).close(_cluster_with(["orders"]), {})
    for name, target in (("events.parquet", victim), ("topics", victim_dir), (".parts", victim_dir)):
        shutil.rmtree(out / name) if (out / name).is_dir() else (out / name).unlink(missing_ok=True)
        (out / name).symlink_to(target)           # planted in an earlier run's folder
    RunWriter(out, offload=False).close(_cluster_with(["orders"]), {})      # links removed, not followed
    assert not any(p.is_symlink() for p in out.rglob("*")) and (out / "topics" / "orders.parquet").is_file()
    w = RunWriter(out, offload=False)
    (out / "manifest.json").symlink_to(victim)    # planted while the run goes on
    with pytest.raises(KipvizError, match="already exists"):
        w.close(_cluster_with(["orders"]), {})
    w = RunWriter(out, offload=False)
    (out / "batches").symlink_to(victim_dir)
    with pytest.raises(KipvizError, match="not a folder"):
        w.close(_cluster_with(["orders"]), {})
    assert victim.read_text() == "precious" and [p.name for p in victim_dir.iterdir()] == ["keep"]


def _modes(root) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in [root, *root.rglob("*")]}


def test_a_private_run_is_0700_folders_and_0600_files(tmp_path):
    out = tmp_path / "rec"
    RunWriter(out, offload=False, private=True).close(_cluster_with(["_x", "orders"]), {})
    modes = _modes(out)
    assert {m for p, m in modes.items() if (out / p).is_dir()} == {0o700}
    assert {m for p, m in modes.items() if not (out / p).is_dir()} == {0o600}
    assert len(modes) > 10


def _manifest(d, command):
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps({"format": "kipviz-sample/2", "generator": {"command": command}}))


def test_a_recording_goes_only_where_a_recording_was(tmp_path):
    check_folder(tmp_path / "new")                   # new or empty: fine
    (tmp_path / "empty").mkdir()
    check_folder(tmp_path / "empty")
    _manifest(tmp_path / "rec", "kipviz serve --record")
    check_folder(tmp_path / "rec")                   # an earlier recording: replaced
    (tmp_path / "killed").mkdir()
    (tmp_path / "killed" / "traffic.pcap").write_bytes(b"")
    check_folder(tmp_path / "killed")                # an unfinished one (the server was killed)
    _manifest(tmp_path / "sample", "kipviz sample-data --scenario regular_eos --records 4000 --seed 0")
    with pytest.raises(KipvizError, match="kipviz sample-data .* not a kipviz recording"):
        check_folder(tmp_path / "sample")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(KipvizError, match="holds no kipviz recording"):
        check_folder(tmp_path / "mine")
    (tmp_path / "file").write_text("x")
    with pytest.raises(KipvizError, match="not a folder"):
        check_folder(tmp_path / "file")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_folder_is_refused(tmp_path):
    d = tmp_path / "theirs"
    d.mkdir()
    os.chown(d, 65534, 65534)
    with pytest.raises(KipvizError, match="another user"):
        check_folder(d)


@pytest.mark.spark
def test_spark_reads_each_topic_from_its_own_file(tmp_path, spark):  # noqa: F811
    from kipviz.spark import read_samples
    names = ["_consumer_offsets", ".transaction_state", "x" * 249]
    RunWriter(tmp_path / "run", offload=False).close(_cluster_with(names), {"scenario": "t"})
    src = read_samples(spark, tmp_path / "run")
    for i, n in enumerate(names):
        assert [r.value for r in src.topic(n).select("value").collect()] == [f"{n}#{i}".encode()], n
