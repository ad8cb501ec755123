"""Real admin clients against `kipviz serve` (kipviz.serve.Server, 3 brokers, 127.0.0.1, free ports):
librdkafka's AdminClient through confluent-kafka and kafka-python's KafkaAdminClient on the admin
RPCs of issue 34 -- topic configs refused, kept and altered, partitions added, records deleted, the
cluster described, ACLs, and the hanging-transaction tools (KIP-664). Every wait is bounded; a
client error line, an error callback or a model internal error fails the test."""
from __future__ import annotations

import logging
import uuid

import pytest

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a runtime dependency (pyproject)")
kafka = pytest.importorskip("kafka", reason="kafka-python is a test dependency")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import KafkaAdminClient  # noqa: E402

from kipviz.serve import Server  # noqa: E402
from tests.client_logs import ErrorLines  # noqa: E402

WAIT_S = 20


@pytest.fixture(scope="module")
def server():
    # an authorizer with no ACLs and the unauthenticated principal as super user: the ACL RPCs work,
    # everything else is allowed
    with Server(brokers=3, speed=1.0, acls=[], super_users=("User:ANONYMOUS",)) as srv:
        yield srv
    assert srv.cluster.internal_errors == []


@pytest.fixture
def logs(server):
    h = ErrorLines()
    rd = logging.getLogger(f"rdkafka.adm.{uuid.uuid4().hex[:6]}")
    rd.propagate = False
    rd.addHandler(h)
    kp = logging.getLogger("kafka")
    kp.addHandler(h)
    errors: list[str] = []
    yield {"logger": rd, "error_cb": lambda e: errors.append(str(e))}
    kp.removeHandler(h)
    assert h.lines == [] and errors == []
    assert server.cluster.internal_errors == []


def admin(server, logs) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap, "logger": logs["logger"],
                        "error_cb": logs["error_cb"]})


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_librdkafka_topic_configs_refused_kept_and_altered(server, logs):
    a = admin(server, logs)
    bad, good = name("bad"), name("compacted")
    futs = a.create_topics([NewTopic(bad, 1, 1, config={"no.such.config": "1"}),
                            NewTopic(good, 1, 1, config={"cleanup.policy": "compact"})], operation_timeout=10)
    with pytest.raises(ck.KafkaException) as e:
        futs[bad].result(WAIT_S)
    assert e.value.args[0].name() == "INVALID_CONFIG" and "Unknown topic config name: no.such.config" in str(e.value)
    futs[good].result(WAIT_S)
    with server.lock:
        assert server.cluster.topics.get(bad) is None
    res = ConfigResource("topic", good)
    got = a.describe_configs([res])[res].result(WAIT_S)
    assert got["cleanup.policy"].value == "compact" and got["cleanup.policy"].source == 1     # DYNAMIC_TOPIC_CONFIG
    assert got["retention.ms"].is_default
    alter = ConfigResource("topic", good, incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([alter])[alter].result(WAIT_S)
    got = a.describe_configs([res])[res].result(WAIT_S)
    assert (got["cleanup.policy"].value, got["retention.ms"].value) == ("compact,delete", "60000")
    wrong = ConfigResource("topic", good, incremental_configs=[
        ConfigEntry("segment.bytes", "10", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException) as e:
        a.incremental_alter_configs([wrong])[wrong].result(WAIT_S)
    assert e.value.args[0].name() == "INVALID_CONFIG"


def test_librdkafka_partitions_records_cluster_and_acls(server, logs):
    a = admin(server, logs)
    topic = name("grow")
    a.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10)[topic].result(WAIT_S)
    a.create_partitions([NewPartitions(topic, 3)], operation_timeout=10)[topic].result(WAIT_S)
    assert len(a.list_topics(topic, timeout=WAIT_S).topics[topic].partitions) == 3
    p = Producer({"bootstrap.servers": server.bootstrap, "logger": logs["logger"], "error_cb": logs["error_cb"]})
    for i in range(5):
        p.produce(topic, value=b"%d" % i, partition=0)
    assert p.flush(WAIT_S) == 0
    deleted = a.delete_records([TopicPartition(topic, 0, 3)], operation_timeout=10)
    assert deleted[TopicPartition(topic, 0, 3)].result(WAIT_S).low_watermark == 3
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": name("g"), "auto.offset.reset": "earliest",
                  "logger": logs["logger"], "error_cb": logs["error_cb"]})
    c.assign([TopicPartition(topic, 0, 1)])          # below the log start: OFFSET_OUT_OF_RANGE, then reset
    got = []
    for _ in range(100):
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value())
        if len(got) == 2:
            break
    c.close()
    assert got == [b"3", b"4"]
    cluster = a.describe_cluster().result(WAIT_S)
    assert sorted(n.id for n in cluster.nodes) == [0, 1, 2] and cluster.controller is not None
    binding = AclBinding(ResourceType.TOPIC, "team.", ResourcePatternType.PREFIXED, "User:alice", "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
    a.create_acls([binding])[binding].result(WAIT_S)
    flt = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    assert a.describe_acls(flt).result(WAIT_S) == [binding]
    assert a.delete_acls([flt])[flt].result(WAIT_S) == [binding]
    with server.lock:
        assert not server.cluster.authorized("User:alice", "TOPIC", "team.x", "WRITE")


def test_kafka_python_hanging_transaction_tools_log_dirs_and_offset_delete(server, logs):
    topic, group = name("txn"), name("og")
    a = admin(server, logs)
    a.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10)[topic].result(WAIT_S)
    p = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": name("app"),
                  "logger": logs["logger"], "error_cb": logs["error_cb"]})
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    assert p.flush(WAIT_S) == 0
    kp = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=WAIT_S * 1000)
    try:
        producers = kp.describe_producers([kafka.TopicPartition(topic, 0)])
        (state,) = producers[kafka.TopicPartition(topic, 0)].active_producers
        assert state.current_transaction_start_offset == 0          # the open transaction holds the LSO at 0
        listed = [t for rows in kp.list_transactions(state_filters=["Ongoing"]).values() for t in rows]
        assert [t.producer_id for t in listed] == [state.producer_id]
        (described,) = kp.describe_transactions([listed[0].transactional_id]).values()
        assert str(described.state.value if hasattr(described.state, "value") else described.state) == "Ongoing"
        assert kp.find_hanging_transactions() == []        # open for less than the max timeout: not hanging
        dirs = kp.describe_log_dirs()
        assert topic in repr(dirs)
        p.commit_transaction(WAIT_S)
        c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "logger": logs["logger"], "error_cb": logs["error_cb"], "enable.auto.commit": False})
        c.assign([TopicPartition(topic, 0)])
        c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        c.close()
        kp.delete_group_offsets(group, [kafka.TopicPartition(topic, 0)])
        with server.lock:
            assert server.cluster.groups.committed(group, topic, 0) is None
    finally:
        kp.close()
