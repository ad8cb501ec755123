"""`kipviz explain` on captures made here with the kit's encoder (kipviz.capture.write_pcap): each
finding appears on the traffic that shows it and not on clean traffic; who is talking and the
broker's release; the story and latency parts; damaged bytes never raise anything but CaptureError."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz import codec
from kipviz.capture import CaptureError, write_pcap
from kipviz.codec.fit import complete_body, fit_body
from kipviz.explain import MISTAKES, bundled, explain
from kipviz.records import write_batch
from kipviz.schema.error_codes import CODE


class Talk:
    """A hand-made conversation: exchanges on numbered connections, each at its time."""

    def __init__(self):
        self.items, self.corr, self.t = [], 0, 0.0

    def x(self, api, v, req, resp, *, conn=0, took=0.001, client_id="app"):
        self.corr += 1
        self.t += 0.01
        frame = codec.encode_request(api, v, complete_body(api + "Request", v, req), correlation_id=self.corr,
                                     client_id=client_id)
        self.items.append(("request", frame, self.t, conn))
        if resp is not None:
            answer = codec.encode_response(api, v, fit_body(api + "Response", v, resp), correlation_id=self.corr)
            self.items.append(("response", answer, self.t + took, conn))
        return self

    def explain(self, tmp_path):
        return explain(write_pcap(tmp_path / "t.pcap", self.items))


def _batch(pid=-1, epoch=-1, seq=-1, n=1, transactional=False):
    return write_batch([{"key": b"k", "value": b"v"}] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=transactional)


def _produce(topic, batch, tid=None):
    return {"TransactionalId": tid, "Acks": -1, "TimeoutMs": 1000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}


def _produced(code=0):
    return {"Responses": [{"Name": "t", "PartitionResponses": [{"Index": 0, "ErrorCode": code}]}]}


def test_clean_traffic_has_no_finding(tmp_path):
    r = (Talk().x("ApiVersions", 3, {"ClientSoftwareName": "my-app", "ClientSoftwareVersion": "1.2"}, {"ErrorCode": 0})
         .x("Metadata", 12, {"Topics": None}, {"Brokers": [], "Topics": []})
         .x("Produce", 9, _produce("t", _batch()), _produced()).explain(tmp_path))
    assert list(r.findings) == [], str(r.findings)
    (c,) = r.who.connections
    assert (c.client_id, c.software, c.software_version) == ("app", "my-app", "1.2")
    assert c.chosen == {"ApiVersions": {3}, "Metadata": {12}, "Produce": {9}}
    assert "Produce v9" in r.story.svg and "<svg" in r.story.svg
    assert {row["api"] for row in r.latency.rows} == {"ApiVersions", "Metadata", "Produce"}
    assert "<h3>Findings</h3>" in r._repr_html_() and "nothing to report" in r._repr_html_()


@pytest.mark.parametrize("release", ["4.0", "4.2", "4.4"])
def test_the_broker_release_is_guessed_from_its_api_versions(tmp_path, release):
    # the broker model's own answer for that release (broker/handlers/api_versions.py advertised)
    from kipviz.broker.config import ClusterConfig
    from kipviz.broker.handlers import load_all
    from kipviz.broker.handlers.api_versions import advertised
    load_all()
    answer = {"ErrorCode": 0, "ApiKeys": advertised(ClusterConfig(release=release))}
    r = Talk().x("ApiVersions", 3, {"ClientSoftwareName": "a", "ClientSoftwareVersion": "1"}, answer).explain(tmp_path)
    (b,) = r.who.brokers
    assert b.release == release and b.matched == b.compared > 40, (b.release, b.matched, b.compared)


def test_every_error_is_explained_for_its_api(tmp_path):
    r = Talk().x("Produce", 9, _produce("t", _batch()), _produced(CODE["NOT_LEADER_OR_FOLLOWER"])).explain(tmp_path)
    (f,) = r.findings
    assert f.kind == "error" and f.exchanges == [0]
    assert "NOT_LEADER_OR_FOLLOWER (6)" in f.text and "not the partition's leader" in f.text and "Produce v9" in f.text


def test_a_fenced_zombie_names_the_instance_that_took_over(tmp_path):
    t = Talk()
    t.x("InitProducerId", 4, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000},
        {"ProducerId": 7, "ProducerEpoch": 0}, conn=0, client_id="old")
    t.x("InitProducerId", 4, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000},
        {"ProducerId": 7, "ProducerEpoch": 1}, conn=1, client_id="new")
    t.x("Produce", 9, _produce("t", _batch(7, 0, 0, transactional=True), "tx"),
        _produced(CODE["INVALID_PRODUCER_EPOCH"]), conn=0, client_id="old")
    r = t.explain(tmp_path)
    (f,) = [f for f in r.findings if f.kind == "fenced"]
    assert f.exchanges == [1, 2] and "'old'" in f.text and "'new'" in f.text and "zombie" in f.text


def test_a_commit_after_the_group_moved_on(tmp_path):
    t = Talk()
    t.x("JoinGroup", 9, {"GroupId": "g", "MemberId": "b-1", "ProtocolType": "consumer", "Protocols": []},
        {"GenerationId": 2, "MemberId": "b-1"}, conn=1, client_id="b")
    t.x("OffsetCommit", 9, {"GroupId": "g", "GenerationIdOrMemberEpoch": 1, "MemberId": "a-1",
                            "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5}]}]},
        {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": CODE["ILLEGAL_GENERATION"]}]}]},
        conn=0, client_id="a")
    r = t.explain(tmp_path)
    (f,) = [f for f in r.findings if f.kind == "late-commit"]
    assert f.exchanges == [0, 1] and "'g'" in f.text and "generation/epoch 1" in f.text


@pytest.mark.parametrize("ended", [True, False])
def test_a_transaction_left_open(tmp_path, ended):
    t = Talk()
    t.x("AddPartitionsToTxn", 3, {"V3AndBelowTransactionalId": "tx", "V3AndBelowProducerId": 7,
                                  "V3AndBelowProducerEpoch": 0, "V3AndBelowTopics": [{"Name": "t", "Partitions": [0]}]},
        {"ResultsByTopicV3AndBelow": []})
    if ended:
        t.x("EndTxn", 3, {"TransactionalId": "tx", "ProducerId": 7, "ProducerEpoch": 0, "Committed": True},
            {"ErrorCode": 0})
    kinds = [f.kind for f in t.explain(tmp_path).findings]
    assert ("open-transaction" in kinds) is not ended


def test_sequence_gaps_and_retries(tmp_path):
    t = Talk()
    for seq in (0, 5, 5, 20):
        t.x("Produce", 9, _produce("t", _batch(3, 0, seq, n=5)), _produced())
    fs = [f for f in t.explain(tmp_path).findings if f.kind == "sequence"]
    assert [(f.exchanges, "retry" in f.text, "skips sequence numbers 10-19" in f.text) for f in fs] == [
        ([2], True, False), ([3], False, True)]


def test_throttled_and_slow_answers(tmp_path):
    t = Talk()
    t.x("Metadata", 12, {"Topics": None}, {"ThrottleTimeMs": 250})
    t.x("Metadata", 12, {"Topics": None}, {}, took=2.5)
    t.x("Fetch", 12, {"MaxWaitMs": 5000, "Topics": []}, {}, took=4.0)       # a long poll waiting as asked
    fs = t.explain(tmp_path).findings
    assert [(f.kind, f.exchanges) for f in fs] == [("throttled", [0]), ("slow", [1])]
    assert "250 ms" in fs[0].text and "2,500 ms" in fs[1].text


def test_tls_traffic_is_one_clear_error(tmp_path):
    hello = bytes.fromhex("160301") + b"\x00\x50" + bytes(80)
    path = write_pcap(tmp_path / "tls.pcap", [("request", hello, 0.0, 0), ("response", hello, 0.1, 0)])
    with pytest.raises(CaptureError, match="TLS-encrypted"):
        explain(path)


def test_no_kafka_on_the_ports_says_where_traffic_is(tmp_path):
    path = Talk().x("Metadata", 12, {"Topics": None}, {}).explain(tmp_path).source
    with pytest.raises(CaptureError, match="no Kafka exchange on port.*9092"):
        explain(path, ports=(9093,))


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_bundled_mistake_is_found(name):
    r = explain(bundled(name))
    want = {"zombie_producer": "fenced", "late_commit": "late-commit"}[name]
    assert want in r.findings.kinds(), str(r.findings)
    assert all(c.software == "confluent-kafka-python" and "rdkafka" in c.software_version for c in r.who.connections)
    assert [b.release for b in r.who.brokers] == ["4.4"]


def test_a_bundled_name_that_is_not_there():
    with pytest.raises(KeyError, match="there are: zombie_producer, late_commit"):
        bundled("nope")


_RAW = bundled("late_commit").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_captures_never_raise_anything_else(data):
    raw = bytearray(_RAW)
    for _ in range(data.draw(st.integers(0, 6))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        r = explain(bytes(raw[:cut]))
    except CaptureError:
        return
    str(r)
    r._repr_html_()
