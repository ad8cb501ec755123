"""One small input never demands unbounded work (issue 21, item 3).

Each test feeds an input that, before the limits, took tens of seconds and gigabytes (the numbers
are in each docstring) and requires a quick, clear answer now: the error code Kafka uses on the
wire, a RecordLimitError / SchemaError naming the limit and how to raise it. Work is measured with
process CPU time (other processes on the machine do not count) and tracemalloc's peak."""
from __future__ import annotations

import struct
import subprocess
import sys
import time
import tracemalloc
from contextlib import contextmanager

import cramjam
import pytest
from crc32c import crc32c

from kipviz import codec
from kipviz.broker import Cluster, ClusterConfig
from kipviz.broker.handlers.metadata import shape
from kipviz.errors import DecodeError, SchemaError
from kipviz.records import MAX_RECORDS, RecordLimitError, read_batches, write_batch
from kipviz.review import source as review_source
from kipviz.schema import jsonc
from kipviz.schema.error_codes import CODE
from kipviz.schema.loader import load_text
from kipviz.schema.versions import Versions

MIN_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"      # length 6, attributes, deltas 0, key/value null, no headers


@contextmanager
def work(memory: bool = True):
    """Measure CPU seconds and (memory=True) the peak of Python allocations of the block."""
    got = {}
    if memory:
        tracemalloc.start()
    t = time.process_time()
    try:
        yield got
    finally:
        got["cpu"] = time.process_time() - t
        if memory:
            got["peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()


def raw_batch(records: bytes, count: int, *, codec_id: int = 4, base_offset: int = 0, pid: int = -1) -> bytes:
    """A v2 batch around already encoded `records`, compressed with codec_id (4 zstd, 1 gzip)."""
    blob = bytes(cramjam.zstd.compress(records, level=19)) if codec_id == 4 else \
        bytes(cramjam.gzip.compress(records, level=9)) if codec_id == 1 else records
    tail = struct.pack(">hiqqqhii", codec_id, count - 1, 0, 0, pid, -1, -1, count) + blob
    return struct.pack(">qiib", base_offset, 49 + len(blob), 0, 2) + struct.pack(">I", crc32c(tail)) + tail


def call(cluster, api, version, body):
    frame = codec.encode_request(api, version, shape(api + "Request", version, body), correlation_id=7)
    out = cluster.handle(frame)
    assert cluster.internal_errors == []
    return frame, codec.decode_response(out, api, version)["body"]


def create(cluster, topics: dict, version=7):
    return call(cluster, "CreateTopics", version, {"Topics": [
        {"Name": n, "NumPartitions": p, "ReplicationFactor": 1} for n, p in topics.items()],
        "timeoutMs": 1000, "validateOnly": False})


# ---- CreateTopics ------------------------------------------------------------------------------------
def test_create_topics_with_2_31_partitions_is_a_policy_violation_at_once():
    """Was: a 36-byte CreateTopics v7 for 2**31-1 partitions ran 42 s into a MemoryError at 3 GiB."""
    c = Cluster()
    with work() as w:
        frame, r = create(c, {"huge": 2**31 - 1})
    assert len(frame) < 64
    (t,) = r["Topics"]
    assert t["ErrorCode"] == CODE["POLICY_VIOLATION"] == 44
    assert t["ErrorMessage"] == "Excessively large number of partitions per request."
    assert c.topics.get("huge") is None
    assert w["cpu"] < 1.0 and w["peak"] < 20 * 2**20, w


def test_a_request_over_10000_partitions_in_all_is_refused_for_every_topic():
    """ReplicationControlManager.validateTotalNumberOfPartitions counts the whole request."""
    c = Cluster()
    _, r = create(c, {"a": 6000, "b": 4001})
    assert [(t["Name"], t["ErrorCode"]) for t in r["Topics"]] == [("a", 44), ("b", 44)]
    assert c.topics.get("a") is None and c.topics.get("b") is None
    _, r = create(c, {"a": 6000, "b": 4000})               # exactly 10,000 is allowed
    assert [t["ErrorCode"] for t in r["Topics"]] == [0, 0]


def test_one_million_partitions_leave_metadata_fast():
    """Was: 1M partitions took 4.7 s and 1.3 GiB, then every all-topics Metadata took 14-36 s."""
    c = Cluster()
    _, r = create(c, {"big": 1_000_000})
    assert r["Topics"][0]["ErrorCode"] == 44
    with work() as w:
        _, md = call(c, "Metadata", 12, {"Topics": None, "AllowAutoTopicCreation": False})
    assert "big" not in {t["Name"] for t in md["Topics"]}
    assert w["cpu"] < 1.0, w


def test_the_model_holds_at_most_max_cluster_partitions():
    c = Cluster(config=ClusterConfig(max_cluster_partitions=400))   # 150 internal partitions already
    assert create(c, {"a": 200})[1]["Topics"][0]["ErrorCode"] == 0
    (t,) = create(c, {"b": 51})[1]["Topics"]
    assert t["ErrorCode"] == 44 and "max_cluster_partitions=400" in t["ErrorMessage"]
    assert c.topics.get("b") is None
    assert create(c, {"b": 50})[1]["Topics"][0]["ErrorCode"] == 0
    # validateOnly creates nothing, so it is not held to the cap
    _, r = call(c, "CreateTopics", 7, {"Topics": [{"Name": "v", "NumPartitions": 100, "ReplicationFactor": 1}],
                                        "timeoutMs": 1000, "validateOnly": True})
    assert r["Topics"][0]["ErrorCode"] == 0
    c.config.max_cluster_partitions = 1000                  # a user may raise it
    assert create(c, {"c": 500})[1]["Topics"][0]["ErrorCode"] == 0


# ---- Produce -----------------------------------------------------------------------------------------
def produce(c, records_by_partition: dict, topic="t", version=9):
    return call(c, "Produce", version, {"Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": topic, "PartitionData": [
        {"Index": p, "Records": recs} for p, recs in records_by_partition.items()]}]})


def test_a_tiny_produce_of_a_million_records_is_message_too_large():
    """Was: an 886-byte Produce made the model append 1,198,372 records (1.27 GiB, 21.7 s)."""
    c = Cluster()
    c.create_topic("t")
    batch = raw_batch(MIN_RECORD * 1_198_372, 1_198_372)
    with work() as w:
        frame, r = produce(c, {0: batch})
    assert len(frame) < 2000
    (p,) = r["Responses"][0]["PartitionResponses"]
    assert p["ErrorCode"] == CODE["MESSAGE_TOO_LARGE"] == 10
    assert "max_produce_records" in p["ErrorMessage"]
    assert c.topics.partition("t", 0).log_end_offset == 0
    assert w["cpu"] < 3.0 and w["peak"] < 64 * 2**20, w


def test_produce_records_are_counted_over_the_whole_request():
    c = Cluster(config=ClusterConfig(max_produce_records=150))
    c.create_topic("t", 3)
    batch = write_batch([(b"k", b"v")] * 60)
    _, r = produce(c, {0: batch, 1: batch, 2: batch})
    codes = [p["ErrorCode"] for p in r["Responses"][0]["PartitionResponses"]]
    assert codes == [0, 0, 10]
    assert [c.topics.partition("t", p).log_end_offset for p in range(3)] == [60, 60, 0]


def test_a_batch_past_message_max_bytes_is_message_too_large():
    """UnifiedLog.analyzeAndValidateRecords: sizeInBytes > message.max.bytes (1048588)."""
    c = Cluster()
    c.create_topic("t")
    assert c.config.message_max_bytes == 1024 * 1024 + 12
    big = write_batch([(None, b"x" * (1024 * 1024))])
    (p,) = produce(c, {0: big})[1]["Responses"][0]["PartitionResponses"]
    assert p["ErrorCode"] == 10
    assert p["ErrorMessage"] == (f"The record batch size in the append is {len(big)} bytes which exceeds the maximum "
                                 "configured value of 1048588.")
    c.config.message_max_bytes = 2 * 1024 * 1024
    assert produce(c, {0: big})[1]["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0


def test_handle_takes_bytes_only():
    c = Cluster()
    for bad in (None, "frame", 7, [1, 2]):
        with pytest.raises(TypeError, match="bytes"):
            c.handle(bad)
    assert c.internal_errors == []


# ---- read_batches ------------------------------------------------------------------------------------
def test_a_6kb_batch_of_9_million_records_is_refused_before_building_them():
    """Was: a 6 KB file made read_batches build 9.4M records (3.2 GiB, 32 s)."""
    n = 9_000_000
    data = raw_batch(MIN_RECORD * n, n)
    assert len(data) < 10_000
    with work() as w, pytest.raises(RecordLimitError) as e:
        read_batches(data)
    assert "max_records" in str(e.value) and e.value.path == "batch[0].RecordsCount"
    assert w["cpu"] < 5.0 and w["peak"] < 200 * 2**20, w
    assert isinstance(e.value, DecodeError)        # callers that catch DecodeError still do


def test_many_small_batches_stop_at_max_total_decompressed():
    """Was: a 200 KB file of many batches reached 4 GiB (the 64 MiB cap was per batch)."""
    record = _record(b"\x00" * (1 << 20))
    one = raw_batch(record, 1, codec_id=1)
    data = b"".join(struct.pack(">q", i) + one[8:] for i in range(300))   # 300 MiB in ~300 KB
    assert len(data) < 400_000
    with work() as w, pytest.raises(RecordLimitError) as e:
        read_batches(data, max_total_decompressed=32 * 2**20)
    assert "max_total_decompressed" in str(e.value) and e.value.path == "batch[31].records"   # 32 x (1 MiB + 9) > 32 MiB
    assert w["peak"] < 100 * 2**20, w
    with pytest.raises(RecordLimitError, match="max_total_decompressed"):    # and by default, at 256 MiB
        read_batches(data)
    assert len(read_batches(data[:len(one) * 20])) == 20


def _record(value: bytes, headers: int = 0, header: bytes = b"\x00\x00") -> bytes:
    def zz(n):
        u, out = (n << 1) ^ (n >> 63), bytearray()
        while u >= 0x80:
            out.append(u & 0x7F | 0x80)
            u >>= 7
        out.append(u)
        return bytes(out)
    body = b"\x00\x00\x00\x01" + zz(len(value)) + value + zz(headers) + header * headers
    return zz(len(body)) + body


def test_headers_count_toward_max_records():
    """A record of 2-byte headers is the cheaper bomb: 1.5M headers from a few KB."""
    data = raw_batch(_record(b"", 1_500_000), 1)
    assert len(data) < 10_000
    with work() as w, pytest.raises(RecordLimitError, match="max_records"):
        read_batches(data)
    assert w["cpu"] < 5.0, w
    ok = raw_batch(_record(b"v", 3), 1)
    assert read_batches(ok)[0]["records"][0]["headers"] == [("", b"")] * 3
    with pytest.raises(RecordLimitError):
        read_batches(ok, max_records=3)
    assert len(read_batches(ok, max_records=4)) == 1


def test_a_records_count_the_bytes_cannot_hold_is_corrupt_not_a_limit():
    data = raw_batch(MIN_RECORD * 10, MAX_RECORDS + 1, codec_id=0)
    with pytest.raises(DecodeError) as e:
        read_batches(data)
    assert not isinstance(e.value, RecordLimitError) and "at least" in e.value.reason


# ---- capture -----------------------------------------------------------------------------------------
def _mid_stream_capture(size: int) -> bytes:
    from .test_capture import packet, pcap_of
    data = b"".join(struct.pack(">ihh", size - i - 4, 18, 0) for i in range(0, size, 8))
    return pcap_of([packet(True, 1000 + o, data[o:o + 1400], ack=1) for o in range(0, size, 1400)])


def test_capture_resync_is_linear():
    """Was: a plausible request header every 8 bytes: 128 KB took 11 s, 1 MiB over 240 s."""
    from kipviz.capture import read_pcap
    times = {}
    for size in (1 << 17, 1 << 19):
        pcap = _mid_stream_capture(size)
        with work(memory=False) as w:
            ex = read_pcap(pcap)
        times[size] = w["cpu"]
        assert any("skipped" in e for e in ex[0]["errors"])
    assert times[1 << 19] < 5.0, times
    assert times[1 << 19] < 8 * max(times[1 << 17], 0.05), times     # linear: x4 bytes, not x16 time


# ---- schema files and kipviz review ------------------------------------------------------------------
def test_versions_are_int16():
    """Was: "validVersions": "0-2147483647" made kipviz review grow to 24 GB."""
    assert Versions.parse("0-32767").hi == 32767
    for text in ("0-2147483647", "32768", "32768+", "5-40000"):
        with pytest.raises(ValueError, match="int16"):
            Versions.parse(text)
    draft = ('{"apiKey": 10, "type": "request", "listeners": ["broker"], "name": "FindCoordinatorRequest", '
             '"validVersions": "0-2147483647", "flexibleVersions": "none", "fields": []}')
    with pytest.raises(SchemaError, match="int16"):
        load_text(draft)


def test_deep_nesting_is_an_error_not_a_recursion_error():
    """Was: 100,000 nested [ raised RecursionError out of kipviz review."""
    text = "{\"fields\": " + "[" * 100_000
    with pytest.raises(ValueError) as e:
        jsonc.loads(text)
    assert "nested more than 64 deep" in str(e.value)
    d = review_source.read(text)
    assert d.spec is None and "nested more than 64" in str(d.error) and d.line == 1
    assert isinstance(jsonc.loads("[" * 64 + "]" * 64), list)          # 64 deep is allowed
    assert jsonc.loads('["[[[[", "\\"[["]', max_depth=1) == ["[[[[", '"[[']
    assert jsonc.loads("[" * 70 + "]" * 70, max_depth=80)


def test_schema_text_size_is_capped(tmp_path):
    big = tmp_path / "big.json"
    big.write_text('{"x": "' + "a" * (jsonc.MAX_BYTES) + '"}')
    with pytest.raises(SchemaError, match="larger than 1048576 bytes"):
        review_source.read(big)
    assert review_source.read(big, max_bytes=2 * jsonc.MAX_BYTES).error is not None   # read, then invalid
    assert "larger than" not in str(review_source.read(big, max_bytes=2 * jsonc.MAX_BYTES).error)


def test_review_of_dev_zero_ends_with_one_line():
    """Was: `kipviz review /dev/zero` read forever."""
    t = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "kipviz.cli", "review", "/dev/zero"], capture_output=True,
                         text=True, timeout=60)
    assert time.monotonic() - t < 30
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "larger than" in run.stderr
