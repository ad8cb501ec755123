"""Real clients read a compacted topic from `kipviz serve` after a cleaning pass (its log on disk,
the cleaned segments swapped in): the newest value of each key, read through the offset gaps to
the end of the log."""
from __future__ import annotations

import time

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kipviz.broker import cleaner  # noqa: E402
from kipviz.serve import Server  # noqa: E402

WAIT_S = 20
TOPIC = "compacted"


@pytest.fixture(scope="module")
def served():
    with Server(brokers=1, speed=1.0) as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        cfg = {"cleanup.policy": "compact", "internal.segment.bytes": "2000", "delete.retention.ms": "600000"}
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1, config=cfg)], operation_timeout=10).values():
            f.result(WAIT_S)
        prod = Producer({"bootstrap.servers": srv.bootstrap, "linger.ms": 0, "enable.idempotence": True})
        expected = {}
        for i in range(300):
            key, value = b"k%d" % (i % 7), (None if i == 290 else b"v%d" % i)
            prod.produce(TOPIC, key=key, value=value, partition=0)
            if i % 5 == 4:
                assert prod.flush(WAIT_S) == 0          # many small batches, several segments
            expected[key] = value
        assert prod.flush(WAIT_S) == 0
        with srv.lock:
            c = srv.cluster
            log = c.topics.get(TOPIC).partitions[0]
            passes = cleaner.run(c)
            held = [e.offset for e in log.entries]
            end = log.log_end_offset
            files = sorted(p.name for p in log.store.dir.iterdir())
        assert passes and passes[0].records_removed > 0
        assert len(held) < end                              # gaps
        logs = [f for f in files if f.endswith(".log")]
        assert not [f for f in files if f.endswith(".cleaned")] and int(logs[0][:20]) <= held[0] and len(logs) > 1
        yield srv, expected, held, end
        assert srv.cluster.internal_errors == []


def _last(pairs):
    out = {}
    for k, v in pairs:
        out[k] = v
    return out


def test_librdkafka_reads_the_newest_value_per_key_through_the_gaps(served):
    srv, expected, held, end = served
    cons = Consumer({"bootstrap.servers": srv.bootstrap, "group.id": "cg", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    cons.assign([TopicPartition(TOPIC, 0, 0)])
    got, deadline = [], time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        m = cons.poll(0.2)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.offset(), m.key(), m.value()))
        if cons.position([TopicPartition(TOPIC, 0)])[0].offset >= end:
            break
    cons.close()
    assert [o for o, _k, _v in got] == held                        # every held record, in order
    assert _last((k, v) for _o, k, v in got) == expected


def test_kafka_python_reads_the_newest_value_per_key_through_the_gaps(served):
    kafka = pytest.importorskip("kafka")
    srv, expected, held, end = served
    cons = kafka.KafkaConsumer(bootstrap_servers=srv.bootstrap, auto_offset_reset="earliest",
                               enable_auto_commit=False, consumer_timeout_ms=5000, fetch_max_wait_ms=200,
                               request_timeout_ms=30000)
    tp = kafka.TopicPartition(TOPIC, 0)
    cons.assign([tp])
    cons.seek(tp, 0)
    got, deadline = [], time.monotonic() + WAIT_S
    while time.monotonic() < deadline and cons.position(tp) < end:
        for records in cons.poll(timeout_ms=500).values():
            got += [(r.offset, r.key, r.value) for r in records]
    cons.close()
    assert [o for o, _k, _v in got] == held
    assert _last((k, v) for _o, k, v in got) == expected
