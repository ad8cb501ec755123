"""The Spark path of `kipviz explain` (kipviz.spark.capture): a capture made here with the kit's
encoder gives the same exchanges as the one-process read_pcap (per API, error codes, latency,
errors), even when every connection is cut across many tasks; damaged files give error rows;
the run directory it writes is read by read_samples and analysed like a sample run."""
from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kipviz.capture import CaptureError, read_pcap
from kipviz.schema.error_codes import CODE
from kipviz.spark.capture import ROWS, capture_to_requests, exchange_rows, split_capture, write_run
from tests.spark_session import spark  # noqa: F401 - the one session
from tests.test_explain import Talk, _batch, _produce, _produced

pytestmark = pytest.mark.spark

PORTS = (9092,)


def _talk() -> Talk:
    """Three connections taking turns (their packets interleave in the file), a Produce of many
    packets, a TxnOffsetCommit refused with ILLEGAL_GENERATION, a request left unanswered."""
    t = Talk()
    for conn in range(3):
        t.x("ApiVersions", 3, {"ClientSoftwareName": "app", "ClientSoftwareVersion": "1"}, {"ErrorCode": 0},
            conn=conn)
    for i in range(4):
        for conn in range(3):
            t.x("Metadata", 12, {"Topics": None}, {"Brokers": [], "Topics": []}, conn=conn, took=0.002 * (i + 1))
            t.x("Produce", 9, _produce("t", _batch(n=40 + conn)), _produced(0 if conn else CODE["NOT_LEADER_OR_FOLLOWER"]),
                conn=conn, took=0.005)
    t.x("TxnOffsetCommit", 3, {"TransactionalId": "tx", "GroupId": "g", "ProducerId": 7, "ProducerEpoch": 0,
                               "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5}]}]},
        {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": CODE["ILLEGAL_GENERATION"]}]}]},
        conn=1)
    t.x("Metadata", 12, {"Topics": None}, None, conn=2)
    return t


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    from kipviz.capture import write_pcap
    return write_pcap(tmp_path_factory.mktemp("cap") / "t.pcap", _talk().items, mss=200)


def _one_process(path, out):
    """The run directory written from read_pcap's exchanges, with the same rows and writer."""
    exs = read_pcap(path, ports=PORTS)
    write_run(out, pa.table(exchange_rows(exs)).cast(ROWS), {"status": "capture"})
    return exs


def _table(d, name):
    return pq.read_table(d / name).sort_by("seq")


def _exchanges(d):
    t = _table(d, "exchanges.parquet").drop_columns(["connection"]).to_pylist()
    problems = sorted(e for r in t if r["kind"] == "capture-error" for e in r["errors"])
    return [r for r in t if r["kind"] != "capture-error"], problems


def _same_as_one_process(spark, path, tmp_path, **kw):  # noqa: F811
    spark_dir, one_dir = tmp_path / "spark", tmp_path / "one"
    capture_to_requests(spark, path, spark_dir, ports=PORTS, **kw)
    exs = _one_process(path, one_dir)
    got, want = _table(spark_dir, "requests.parquet"), _table(one_dir, "requests.parquet")
    assert got.num_rows == sum(1 for e in exs if e["kind"] != "capture-error")
    assert got.to_pylist() == want.to_pylist()
    (g_rows, g_problems), (w_rows, w_problems) = _exchanges(spark_dir), _exchanges(one_dir)
    assert g_rows == w_rows
    assert g_problems == w_problems
    return exs, got, g_rows, g_problems


def test_the_spark_result_is_the_one_process_result(spark, capture, tmp_path):  # noqa: F811
    exs, got, rows, _ = _same_as_one_process(spark, capture, tmp_path)
    by_api = Counter(got["api"].to_pylist())
    assert by_api == Counter(e["api"] for e in exs) == {"ApiVersions": 3, "Metadata": 13, "Produce": 12,
                                                          "TxnOffsetCommit": 1}
    codes = Counter(c for r in got.to_pylist() for c in r["error_names"])
    assert codes == {"NOT_LEADER_OR_FOLLOWER": 4, "ILLEGAL_GENERATION": 1}
    latency = sorted(round(r["latency_ms"], 3) for r in rows if r["latency_ms"] is not None)
    assert latency == sorted(round(e["latency_ms"], 3) for e in exs if e["latency_ms"] is not None)
    assert 0 < latency[0] and len(latency) == 28           # the last Metadata has no answer
    unanswered = [r for r in rows if r["latency_ms"] is None]
    assert [r["api"] for r in unanswered] == ["Metadata"] and "no response" in unanswered[0]["errors"][0]


def test_a_connection_cut_across_many_tasks_is_reassembled_whole(spark, capture, tmp_path):  # noqa: F811
    pieces = split_capture(capture, 24)
    assert len(pieces) >= 20
    # the biggest Produce request spans several pieces: its packets are read by different tasks
    exs = read_pcap(capture, ports=PORTS)
    first, last = max((e["request_packets"] for e in exs if e["api"] == "Produce"), key=lambda p: p[1] - p[0])
    assert len({i for i, p in enumerate(pieces) for n in range(first, last + 1)
                if p.first_packet <= n < (pieces[i + 1].first_packet if i + 1 < len(pieces) else 1 << 40)}) > 1
    _, got, rows, problems = _same_as_one_process(spark, capture, tmp_path, partitions=24)
    assert got.num_rows == 29 and problems == []
    assert all(not r["errors"] for r in rows if r["latency_ms"] is not None)


def test_a_damaged_file_gives_error_rows_not_a_crash(spark, capture, tmp_path):  # noqa: F811
    data = bytearray(capture.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 300] = b"\xff" * 300          # bytes of a few packets overwritten
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(bytes(data[:-37]))           # and the last record cut short
    _, got, rows, problems = _same_as_one_process(spark, bad, tmp_path, partitions=8)
    assert any("truncated" in p for p in problems), problems
    assert any(r["errors"] for r in rows)
    assert 0 < got.num_rows


def test_not_a_capture_is_refused(spark, tmp_path):  # noqa: F811
    p = tmp_path / "x.pcap"
    p.write_bytes(b"hello, this is not a capture")
    with pytest.raises(CaptureError, match="not a pcap or pcapng capture"):
        capture_to_requests(spark, p, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_run_directory_is_read_and_analysed(spark, capture, tmp_path):  # noqa: F811
    from kipviz.spark import decode_all, kip1319_errors, read_samples
    out = tmp_path / "run"
    m = capture_to_requests(spark, capture, out, ports=PORTS)
    assert json.loads((out / "manifest.json").read_text())["datasets"]["requests.parquet"]["rows"] == 29 == \
        m["datasets"]["requests.parquet"]["rows"]
    src = read_samples(spark, out)
    assert src.requests.count() == 29
    assert src.errors.count() == 0
    rows = kip1319_errors(decode_all(src)).filter("answers > 0").collect()
    assert [(r["api"], r["version"], r["error"], r["answers"]) for r in rows] == \
        [("TxnOffsetCommit", 3, "ILLEGAL_GENERATION", 1)]


def test_the_cli_writes_the_directory_and_says_how_to_analyze_it(spark, capture, tmp_path, capsys):  # noqa: F811
    from kipviz.cli import main
    out = tmp_path / "cli"
    assert main(["explain", str(capture), "--spark", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert str(out) in line and "kipviz analyze" in line and "29" in line
    assert (out / "requests.parquet").is_file()
    assert main(["explain", str(capture), "--spark", str(out)]) == 2          # not a new directory
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not an empty directory" in err
