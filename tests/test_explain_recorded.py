"""Real clients' traffic recorded by `kipviz serve --record` in this run, explained:

- differential replay (kipviz.explain.replay): it agrees everywhere when replayed into a fresh
  model; each mutation of an observed answer (an error code, an epoch, an offset) is reported as a
  difference with both values; ids each side chooses are mapped, not compared; the bundled
  captures replay clean;
- the coordinators' states rebuilt from the wire (kipviz.explain.states): the transaction's and the
  group's paths through their tables, the generations with members and assignments, animated."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kipviz.capture import read_pcap
from kipviz.explain import bundled, explain
from kipviz.explain.replay import IdMap, Replay, compare, rewrite
from kipviz.records import read_batches, write_batch
from kipviz.serve import Server
from tests.recorded_session import record_session

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")
kafka = pytest.importorskip("kafka", reason="kafka-python is a dev dependency (pyproject)")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A transactional librdkafka producer and a kafka-python group consumer through kipviz serve."""
    out = tmp_path_factory.mktemp("replay") / "rec"
    got, _ = record_session(out, release="4.4", transactional_id="replay-tx", group="replay-g")
    assert got == 20
    return read_pcap(out / "traffic.pcap", ports=None)


def _first(exchanges, api, pred=lambda ex: True) -> int:
    return next(i for i, ex in enumerate(exchanges) if ex["api"] == api and ex.get("response") and pred(ex))


def test_the_kits_own_server_agrees_everywhere(recorded):
    r = Replay(recorded, "4.4")
    assert r.count("differ") == 0, str(r)
    agreed = {o.api for o in r.outcomes if o.status == "agree"}
    assert {"InitProducerId", "Produce", "AddPartitionsToTxn", "EndTxn", "JoinGroup", "SyncGroup", "Fetch",
            "OffsetCommit", "Metadata"} <= agreed
    assert r.count("agree") >= len(recorded) - 2        # at most the answers still in flight at the end
    assert {"topic id", "member id", "cluster id"} <= set(r.mapped), r.mapped
    assert r.model_errors == []


MUTATIONS = [
    ("an error code", "Produce", lambda b: b["Responses"][0]["PartitionResponses"][0], "ErrorCode", 47),
    ("an epoch", "InitProducerId", lambda b: b, "ProducerEpoch", 7),
    ("an offset", "Produce", lambda b: b["Responses"][0]["PartitionResponses"][0], "BaseOffset", 999),
    ("a high watermark", "Fetch", lambda b: b["Responses"][0]["Partitions"][0], "HighWatermark", 12345),
    ("a generation", "JoinGroup", lambda b: b, "GenerationId", 41),
]


@pytest.mark.parametrize("what,api,where,fieldname,value", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_mutation_is_a_difference(recorded, what, api, where, fieldname, value):
    exchanges = copy.deepcopy(recorded)
    i = _first(exchanges, api, lambda ex: ex["api"] != "JoinGroup" or ex["response"]["body"]["GenerationId"] > 0)
    part = where(exchanges[i]["response"]["body"])
    original = part[fieldname]
    part[fieldname] = value
    r = Replay(exchanges, "4.4")
    (d,) = [d for d in r.differences if d.exchange == i]
    assert d.path.endswith(fieldname) and (d.observed, d.model) == (value, original), str(d)
    assert d.api == api and str(d).startswith(f"#{i} {api} ")
    assert f"observed {value!r}" in str(r)


def test_a_capture_started_after_init_producer_id_is_reported_not_a_crash(recorded):
    init = _first(recorded, "InitProducerId")
    cut = copy.deepcopy(recorded)
    del cut[init]                    # the producer's id was never seen: its Produce carries an unknown one
    r = Replay(cut, "4.4")
    assert r.count("differ") >= 1
    assert any(d.api in ("Produce", "AddPartitionsToTxn", "EndTxn") for d in r.differences), str(r)


@pytest.mark.parametrize("name", ["zombie_producer", "late_commit"])
def test_the_bundled_captures_replay_clean(name):
    r = explain(bundled(name))
    assert r.replay.count("differ") == 0, str(r.replay)
    assert r.replay.release == r.who.brokers[0].release
    assert "Differential replay" in r._repr_html_() and "differential replay" in str(r)


def test_ids_are_learned_once_and_kept():
    ids = IdMap()
    assert ids.match("producer id", 1000, 0)
    assert ids.match("producer id", 1000, 0) and not ids.match("producer id", 1000, 1)
    assert not ids.match("producer id", 2000, 0)       # the model's 0 already stands for 1000
    assert ids.match("producer id", -1, -1) and not ids.match("producer id", -1, 3)
    assert ids.model_value("producer id", 1000) == 0 and ids.model_value("producer id", 5) == 5
    assert ids.learned() == {"producer id": 1}


def test_a_rewritten_request_carries_the_models_producer_id_in_its_batches():
    ids = IdMap()
    ids.match("producer id", 4242, 0)
    batch = write_batch([{"key": b"k", "value": b"v"}], producer_id=4242, producer_epoch=0, base_sequence=0,
                        is_transactional=True)
    body = {"TransactionalId": "t", "TopicData": [{"Name": "x", "PartitionData": [{"Index": 0, "Records": batch}]}],
            "ProducerId": 4242}
    out = rewrite(body, ids)
    assert out["ProducerId"] == 0 and body["ProducerId"] == 4242
    (b,) = read_batches(out["TopicData"][0]["PartitionData"][0]["Records"])
    assert b["producer_id"] == 0 and b["crc_valid"], b


leaves = st.one_of(st.integers(-2**31, 2**31), st.text(max_size=5), st.binary(max_size=5), st.none())
bodies = st.recursive(leaves, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                     st.dictionaries(st.sampled_from(["A", "B", "Count", "Value"]),
                                                                     kids, max_size=3)), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(bodies)
def test_a_body_agrees_with_itself(body):
    assert compare(body, copy.deepcopy(body), IdMap()) == []


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["A", "B", "C"]), st.integers(-100, 100), min_size=1),
       st.data())
def test_one_changed_field_is_one_difference(body, data):
    key = data.draw(st.sampled_from(sorted(body)))
    other = dict(body, **{key: body[key] + 1})
    assert compare({"X": [body]}, {"X": [other]}, IdMap()) == [(f"X[0].{key}", body[key], body[key] + 1)]


def test_the_recorded_coordinators_are_rebuilt(recorded):
    from kipviz.explain.coordinators import States
    s = States(recorded)
    assert s.path("transaction", "replay-tx") == ["Empty", "Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    path = s.path("classic-group", "replay-g")
    assert path[:4] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"] and path[-1] == "Empty", path
    last = s.generations["replay-g"][-1]
    (member,) = last.members
    assert last.leader == member and last.assignments[member] == [("orders", 0), ("orders", 1)]
    assert s.transactions["replay-tx"].outcomes == ["commit"] and s.unexplained == []
    anim = s.animation("transaction")
    assert len(anim) == 4 and "request: EndTxn" in anim.frames[2].caption
    assert "<svg" in anim.frames_svg()[0]


@pytest.fixture(scope="module")
def recorded_share(tmp_path_factory):
    """A librdkafka share consumer (KIP-932) in a group set to read from the earliest offset (by
    IncrementalAlterConfigs, on the wire), acknowledging ten records it was given."""
    import time

    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )
    out = tmp_path_factory.mktemp("share") / "rec"
    with Server(record=out, release="4.4") as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        for f in admin.create_topics([NewTopic("jobs", 2, 1)]).values():
            f.result(20)
        earliest = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([earliest]).values():
            f.result(20)
        p = ck.Producer({"bootstrap.servers": srv.bootstrap})
        for i in range(10):
            p.produce("jobs", value=b"job-%d" % i, partition=i % 2)
        assert p.flush(10) == 0
        sc = ck.ShareConsumer({"bootstrap.servers": srv.bootstrap, "group.id": "workers", "client.id": "worker-1"})
        sc.subscribe(["jobs"])
        got, end = [], time.monotonic() + 15
        while len(got) < 10 and time.monotonic() < end:
            got += [m for m in sc.poll(0.5) if m.error() is None]
        sc.commit_sync(10)
        sc.close()
    assert len(got) == 10
    return read_pcap(out / "traffic.pcap", ports=None)


def test_a_share_consumers_records_are_rebuilt_and_replayed(recorded_share):
    from kipviz.explain.coordinators import States
    r = Replay(recorded_share, "4.4")
    assert r.count("differ") == 0, str(r)
    assert {"ShareGroupHeartbeat", "ShareFetch", "ShareAcknowledge"} <= {o.api for o in r.outcomes if o.status == "agree"}
    s = States(recorded_share)
    keys = {e.key for e in s.changes("share-record")}
    assert keys == {f"workers/jobs-{p}@{o}" for p in (0, 1) for o in range(5)}
    assert all(s.path("share-record", k) == ["AVAILABLE", "ACQUIRED", "ACKNOWLEDGED"] for k in keys)
    assert s.unexplained == []
    strip = s.strip()
    acquired = next(f for f in strip.frames if any(c["state"] == "ACQUIRED" for ln in f["lanes"] for c in ln["cells"]))
    owners = {c["owner_client"] for ln in acquired["lanes"] for c in ln["cells"] if c["state"] == "ACQUIRED"}
    assert {o.split(" :")[0] for o in owners} == {"worker-1"}, owners
