"""`kipviz serve --record`: a live session written in the sample-data layout plus a pcap."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from kipviz import codec
from kipviz.capture import read_pcap
from kipviz.schema import registry
from kipviz.serve import Server

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")


def test_a_recorded_session_has_the_sample_layout_and_the_real_traffic(tmp_path):
    out = tmp_path / "live"
    with Server(brokers=2, record=out, events_max=40) as srv:     # a small bound: events spill early
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        for f in admin.create_topics([NewTopic("orders", 2, 1)]).values():
            f.result(20)
        p = ck.Producer({"bootstrap.servers": srv.bootstrap, "enable.idempotence": True})
        for i in range(50):
            p.produce("orders", value=b"%d" % i)
        assert p.flush(20) == 0
        time.sleep(1.2)                     # past the pcap's window: the next exchange sends the earlier ones to disk
        admin.list_topics(timeout=10)
        with srv.lock:                      # the recorder writes under the server's lock: no packet comes between
            written, held = srv.recorder.pcap.written, len(srv.recorder.pcap.packets)
            on_disk = read_pcap(out / "traffic.pcap", ports=None)
        assert written > 0 and held                                          # streamed, the newest held back
        assert on_disk.packets == written and not on_disk.file_errors       # on disk, not in a buffer
        total = srv.cluster.next_seq
    manifest = json.loads((out / "manifest.json").read_text())
    assert srv.manifest is not None and manifest["workload"] == "serve"
    events = pq.read_table(out / "events.parquet")
    seqs = events.column("seq").to_pylist()
    assert seqs == sorted(seqs) and seqs[0] == 0 and len(seqs) >= total    # spilled chunks + the rest, in order
    requests = pq.read_table(out / "requests.parquet").to_pylist()
    assert any(r.get("api") == "Produce" for r in requests)
    ex = read_pcap(out / "traffic.pcap", ports=tuple(port for _, port in srv.addresses))
    apis = {e["api"] for e in ex if e.get("api")}
    assert {"ApiVersions", "Metadata", "Produce", "InitProducerId"} <= apis


def test_cli_serve_prints_the_bootstrap_and_stops_cleanly_on_sigint(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-m", "kipviz.cli", "serve", "--port", "0", "--brokers", "2", "-v",
                             "--share-version", "2", "--record", str(tmp_path / "rec")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert "bootstrap.servers=127.0.0.1:" in line
        bootstrap = line.split("bootstrap.servers=")[1].split()[0]
        from confluent_kafka.admin import AdminClient
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert sorted(md.brokers) == [0, 1]
        assert [f"127.0.0.1:{b.port}" for _, b in sorted(md.brokers.items())] == bootstrap.split(",")
        p = ck.Producer({"bootstrap.servers": bootstrap})       # auto.create.topics.enable=true, as in Kafka
        p.produce("auto-created", b"hello")
        assert p.flush(20) == 0
        del p
        host, port = bootstrap.split(",")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:      # --share-version 2: KIP-1289's RPC
            s.sendall(codec.encode_request("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}))
            head = s.recv(4, socket.MSG_WAITALL)
            body = s.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
        keys = {k["ApiKey"] for k in codec.decode_response(head + body, "ApiVersions", 3)["body"]["ApiKeys"]}
        assert registry.api_key(registry.get("TxnShareAcknowledgeRequest")) in keys
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    assert "stopped after" in out and "connection from" in out and err == ""
    assert (tmp_path / "rec" / "manifest.json").is_file()


def test_cli_serve_bad_input_is_one_line_and_exit_2(tmp_path):
    for args in (["--release", "9.9"], ["--speed", "0", "--port", "0"], ["--brokers", "0"]):
        r = subprocess.run([sys.executable, "-m", "kipviz.cli", "serve", *args], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("kipviz: error:"), r.stderr
    (tmp_path / "keep.txt").write_text("mine")
    sample = tmp_path / "sample"             # a `kipviz sample-data` folder is not a recording's to replace
    sample.mkdir()
    (sample / "manifest.json").write_text(json.dumps({"generator": {"command": "kipviz sample-data --all"}}))
    for folder, why in ((tmp_path, "not empty"), (sample, "not a kipviz recording")):
        r = subprocess.run([sys.executable, "-m", "kipviz.cli", "serve", "--port", "0", "--record", str(folder)],
                           capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine" and (sample / "manifest.json").is_file()


def _one_exchange(srv) -> None:
    with socket.create_connection(srv.addresses[0], timeout=10) as s:
        s.sendall(codec.encode_request("ApiVersions", 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"}))
        head = s.recv(4, socket.MSG_WAITALL)
        assert len(s.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)) > 100


def test_a_new_recording_replaces_an_earlier_one_without_following_its_links(tmp_path):
    out, victim, victim_dir = tmp_path / "live", tmp_path / "victim.pcap", tmp_path / "victim-dir"
    victim.write_bytes(b"precious")
    victim_dir.mkdir()
    (victim_dir / "keep").write_text("mine")
    with Server(record=out) as srv:
        _one_exchange(srv)
    (out / "traffic.pcap").unlink()
    (out / "traffic.pcap").symlink_to(victim)          # was followed: the victim became the new pcap
    shutil.rmtree(out / "topics")
    (out / "topics").symlink_to(victim_dir)
    (out / "notes.txt").write_text("my notes")         # the user's own file in the folder stays
    out.chmod(0o755)
    with Server(record=out) as srv:
        _one_exchange(srv)
    assert victim.read_bytes() == b"precious" and [p.name for p in victim_dir.iterdir()] == ["keep"]
    assert not (out / "traffic.pcap").is_symlink() and not (out / "topics").is_symlink()
    assert [e["api"] for e in read_pcap(out / "traffic.pcap", ports=None)] == ["ApiVersions"]
    assert (out / "notes.txt").read_text() == "my notes"
    modes = {p: stat.S_IMODE(p.lstat().st_mode) for p in [out, *out.rglob("*")] if p.name != "notes.txt"}
    assert {m for p, m in modes.items() if p.is_dir()} == {0o700}            # was 0755
    assert {m for p, m in modes.items() if not p.is_dir()} == {0o600}        # was 0644: the pcap holds all traffic


def test_topics_whose_files_collided_are_recorded_apart_from_real_clients(tmp_path):
    from kipviz.spark.readers import check_files, load_manifest
    out = tmp_path / "live"
    names = {"_consumer_offsets": b"u", ".transaction_state": b"d", "x" * 249: b"long"}
    with Server(record=out, auto_create_topics=True) as srv:
        p = ck.Producer({"bootstrap.servers": srv.bootstrap})
        for name, value in names.items():
            p.produce(name, value)
        assert p.flush(20) == 0
        c = ck.Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
        c.subscribe(["_consumer_offsets"])
        m, end = None, time.monotonic() + 20
        while m is None and time.monotonic() < end:
            m = c.poll(0.5)
        c.commit(m, asynchronous=False)                 # an offset commit: a record of __consumer_offsets
        c.close()
        del p
    manifest = load_manifest(out)                       # what analyze, verify-eos and read_samples read
    check_files(out, manifest)
    files = {t["name"]: t["dataset"] for t in manifest["topics"]}
    assert len(set(files.values())) == len(files) == 6
    for name, value in names.items():
        assert pq.read_table(out / files[name]).column("value").to_pylist() == [value], name
    offsets = pq.read_table(out / files["__consumer_offsets"]).column("value").to_pylist()
    assert offsets and b"u" not in offsets and b"d" not in offsets


def _record_real_transactions(out) -> dict:
    """A recorded session of real clients: a share consumer (group "sg") reads "in"; per batch a
    confluent-kafka transactional producer writes one output per input to "out" (header
    kipviz-source "in-P@O") and commits, then the share consumer acknowledges; one more transaction
    is flushed and aborted; a read_committed consumer reads "out"."""
    from confluent_kafka.admin import AdminClient, NewTopic
    with Server(brokers=1, record=out) as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        for f in admin.create_topics([NewTopic("in", 1, 1), NewTopic("out", 1, 1)]).values():
            f.result(20)
        with srv.lock:
            srv.cluster.config.share_group_offset_reset["sg"] = "earliest"
        p = ck.Producer({"bootstrap.servers": srv.bootstrap})
        for i in range(8):
            p.produce("in", value=b"v%d" % i)
        assert p.flush(20) == 0
        tp = ck.Producer({"bootstrap.servers": srv.bootstrap, "transactional.id": "rpw-1"})
        tp.init_transactions(20)
        sc = ck.ShareConsumer({"bootstrap.servers": srv.bootstrap, "group.id": "sg"})
        sc.subscribe(["in"])
        done, commits, end = 0, 0, time.monotonic() + 30
        while done < 8 and time.monotonic() < end:
            msgs = [m for m in sc.poll(0.5) if m.error() is None]
            if not msgs:
                continue
            tp.begin_transaction()
            for m in msgs:
                tp.produce("out", value=m.value().upper(),
                           headers=[("kipviz-source", f"in-{m.partition()}@{m.offset()}".encode())])
            tp.commit_transaction(20)
            commits += 1
            sc.commit_sync(20)
            done += len(msgs)
        sc.close()
        tp.begin_transaction()                   # an aborted transaction (no kipviz-source: not an output)
        tp.produce("out", value=b"never")
        tp.flush(20)
        tp.abort_transaction(20)
        c = ck.Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "rc", "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
        c.subscribe(["out"])
        seen, end = [], time.monotonic() + 20
        while time.monotonic() < end:
            ms = c.consume(100, 0.5)
            seen += [m.value() for m in ms if m.error() is None]
            if any(m.error() is not None and m.error().code() == ck.KafkaError._PARTITION_EOF for m in ms) \
                    and len(seen) >= done:
                break
        c.close()
        del p, tp, sc, c, admin
    return {"done": done, "commits": commits, "seen": seen}


@pytest.mark.spark
def test_analyze_and_verify_eos_run_on_a_recording_of_real_clients(tmp_path):
    out = tmp_path / "live"
    run = _record_real_transactions(out)
    assert run["done"] == 8 and sorted(run["seen"]) == [b"V%d" % i for i in range(8)]
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "SPARK_LOCAL_IP": "127.0.0.1"}
    a = subprocess.run([sys.executable, "-m", "kipviz.cli", "analyze", str(out)], capture_output=True, text=True,
                       timeout=600, env=env)
    assert a.returncode == 0, a.stderr[-2000:]
    assert f"transaction outcomes: abort 1, commit {run['commits']}" in a.stdout, a.stdout
    assert "errors: 0 record(s)" in a.stdout
    v = subprocess.run([sys.executable, "-m", "kipviz.cli", "verify-eos", str(out), "--group", "sg",
                        "--input-topic", "in", "--output-topic", "out"], capture_output=True, text=True,
                       timeout=600, env=env)
    assert v.returncode == 0, (v.stdout[-2000:], v.stderr[-2000:])
    assert re.search(r"group 'sg': in -> out: OK \(0 violation\(s\)", v.stdout), v.stdout
