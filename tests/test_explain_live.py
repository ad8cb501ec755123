"""`kipviz explain` on traffic real clients sent through `kipviz serve --record` in this run: a
confluent-kafka (librdkafka) transactional producer and a kafka-python group consumer. Who is
talking names both clients' software, the broker's release is the one served, and clean traffic
gives no finding of a mistake."""
from __future__ import annotations

import pytest

from kipviz.explain import explain
from kipviz.explain.findings import SLOW_MS
from tests.recorded_session import record_session

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")
kafka = pytest.importorskip("kafka", reason="kafka-python is a dev dependency (pyproject)")

# "slow" is not here: the capture's timestamps are this machine's, and a loaded machine answers late;
# a slow finding must then be true of the capture (below), and test_explain.py pins the rule itself
MISTAKES = {"fenced", "late-commit", "open-transaction", "sequence", "encrypted"}


@pytest.mark.parametrize("release", ["4.2", "4.4"])
def test_a_recorded_session_is_explained(tmp_path, release):
    out = tmp_path / "rec"
    got, port = record_session(out, release=release, transactional_id="explain-tx", group="explain-g")
    assert got == 20
    r = explain(out / "traffic.pcap", ports=(port,))
    software = {(c.software or "") for c in r.who.connections}
    assert "confluent-kafka-python" in software and any(s.startswith("kafka-python") for s in software), software
    assert [b.release for b in r.who.brokers] == [release]
    assert not MISTAKES & r.findings.kinds(), str(r.findings)
    for f in r.findings:
        if f.kind == "slow":
            assert all(r.exchanges[i]["latency_ms"] > SLOW_MS for i in f.exchanges), f
    apis = {e.api for e in r.story.events}
    assert {"InitProducerId", "AddPartitionsToTxn", "EndTxn", "JoinGroup", "OffsetCommit", "Fetch"} <= apis
    assert {row["api"] for row in r.latency.rows} >= {"Produce", "Fetch"}
    assert r.replay.release == release and r.replay.count("differ") == 0, str(r.replay)   # replayed as that release
    assert "<svg" in r._repr_html_() and str(r)
