"""read_pcap holds a capture about once: each direction of a connection is joined, cut into frames
and let go in turn, a pcap is read a packet at a time, and the `Records` of decoded bodies are
views of their frames (kipviz.capture._kafka.ViewOfFrame), not copies. Copies and pickles of the
exchanges hold bytes, as before."""
from __future__ import annotations

import copy
import json
import pickle
import random
import tracemalloc

from kipviz.capture import read_pcap, write_pcap
from kipviz.codec import encode_request, encode_response
from kipviz.codec.jsonview import json_default

MB = 1024 * 1024


def _produce(corr: int, records: bytes) -> bytes:
    return encode_request("Produce", 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 30000, "TopicData": [
        {"Name": "orders", "PartitionData": [{"Index": 0, "Records": records}]}]}, correlation_id=corr, client_id="p")


def _answer(corr: int) -> bytes:
    return encode_response("Produce", 9, {"Responses": [{"Name": "orders", "PartitionResponses": [
        {"Index": 0, "ErrorCode": 0, "BaseOffset": corr, "LogAppendTimeMs": -1, "LogStartOffset": 0,
         "RecordErrors": [], "ErrorMessage": None}]}],
        "ThrottleTimeMs": 0}, correlation_id=corr)


def _capture(path, n: int = 24, size: int = 256 * 1024):
    rnd = random.Random(7)
    items = []
    for corr in range(n):
        items += [("request", _produce(corr, rnd.randbytes(size))), ("response", _answer(corr))]
    write_pcap(path, items, start_time=1_700_000_000.0)
    return path


def _records(ex):
    return ex["request"]["body"]["TopicData"][0]["PartitionData"][0]["Records"]


def test_records_are_views_of_their_frame(tmp_path):
    exs = read_pcap(_capture(tmp_path / "p.pcap", n=3), ports=(9092,))
    got = [ex for ex in exs if ex["api"] == "Produce"]
    assert len(got) == 3
    for ex in got:
        rec = _records(ex)
        assert isinstance(rec, memoryview) and rec.obj is ex["request_frame"] and len(rec) == 256 * 1024
        assert bytes(rec) in ex["request_frame"]


def test_copies_pickles_and_json_hold_bytes(tmp_path):
    exs = read_pcap(_capture(tmp_path / "p.pcap", n=2), ports=(9092,))
    ex = next(e for e in exs if e["api"] == "Produce")
    for again in (copy.deepcopy(ex), pickle.loads(pickle.dumps(ex)), copy.deepcopy(list(exs))[exs.index(ex)]):
        rec = _records(again)
        assert type(rec) is bytes and rec == _records(ex)
        assert type(again["request"]["body"]["TopicData"][0]["PartitionData"][0]) is dict
    text = json.dumps(ex["request"]["body"], default=json_default)
    assert bytes(_records(ex)).hex() in text


def test_a_capture_is_held_about_once(tmp_path):
    path = _capture(tmp_path / "big.pcap")            # 24 requests of 256 KiB: 6 MiB
    size = path.stat().st_size
    tracemalloc.start()
    try:
        exs = read_pcap(path, ports=(9092,))
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(exs) == 24 and all(_records(e) for e in exs)
    # before this design: the file's bytes, every segment's copy, each stream joined twice, the frames
    # and the decoded Records copies (here 4.41x the capture at the peak, 1.98x held after)
    assert held < 1.3 * size, (held / size, peak / size)
    assert peak < 2.5 * size, (held / size, peak / size)       # the largest direction: its segments and their join
