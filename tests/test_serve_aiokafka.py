"""aiokafka against `kipviz serve` (kipviz.serve.Server on 127.0.0.1, free ports, one server for the
module with both listeners): produce, a consumer group with a rebalance, transactions with
send_offsets_to_transaction read back with read_committed, every admin call AIOKafkaAdminClient has,
SASL PLAIN and SCRAM-SHA-256/512 on the SASL_PLAINTEXT listener and an ACL denial there. Every wait
is bounded; a client log line at ERROR level (Python logging, the "aiokafka" loggers) that is not
the one a test expects, or a model internal error, fails the test."""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid

import pytest

aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is a test dependency (pyproject's dev extra)")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete  # noqa: E402
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType  # noqa: E402
from aiokafka.errors import KafkaConnectionError, TopicAuthorizationFailedError  # noqa: E402

from tests.client_logs import USERS, ErrorLines, users_server  # noqa: E402

WAIT_S = 20


@pytest.fixture(scope="module")
def server():
    with users_server() as srv:
        yield srv


@pytest.fixture
def logs(server):
    """aiokafka's error lines; each test removes the ones it expects before the check."""
    h = ErrorLines()
    log = logging.getLogger("aiokafka")
    log.addHandler(h)
    yield h
    log.removeHandler(h)
    assert h.lines == []
    assert server.cluster.internal_errors == []


def expect(logs: ErrorLines, *texts: str) -> None:
    """The error lines a test expects: at least one holds each text; they are then taken out."""
    for text in texts:
        hits = [line for line in logs.lines if text in line]
        assert hits, (text, logs.lines)
        logs.lines = [line for line in logs.lines if line not in hits]


def run(coro):
    """The coroutine to its end (at most 60 s) on a thread of its own: a worker that ran browser tests
    keeps their session Playwright's event loop running on its main thread (tests/browser/conftest.py),
    where asyncio.run refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(coro, 60)).result()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def sasl(mechanism: str, user: str = "alice", password: str | None = None) -> dict:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism, "sasl_plain_username": user,
            "sasl_plain_password": USERS.get(user) if password is None else password}


async def _admin(server, **kw) -> AIOKafkaAdminClient:
    admin = AIOKafkaAdminClient(bootstrap_servers=kw.pop("bootstrap", server.bootstrap),
                                request_timeout_ms=WAIT_S * 1000, **kw)
    await admin.start()
    return admin


async def _create(admin, topic: str, partitions: int = 1) -> None:
    resp = await admin.create_topics([NewTopic(topic, partitions, 1)])
    assert [e[1] for e in resp.topic_errors] == [0], resp


async def _consume(consumer, n: int) -> list:
    got = []
    while len(got) < n:
        batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), WAIT_S)
        for msgs in batch.values():
            got.extend(msgs)
    return got


# ---- produce -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_aiokafka_produces_and_reads_back(server, logs, compression):
    topic = name(f"a-{compression}")

    async def go():
        admin = await _admin(server)
        await _create(admin, topic, 3)
        await admin.close()
        p = AIOKafkaProducer(bootstrap_servers=server.bootstrap, compression_type=compression,
                             enable_idempotence=True, linger_ms=5)
        await p.start()
        try:
            futs = [await p.send(topic, key=b"k%d" % i, value=b"v%d" % i) for i in range(30)]
            metas = await asyncio.gather(*futs)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=server.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
        await c.start()
        try:
            got = await _consume(c, 30)
        finally:
            await c.stop()
        return metas, got
    metas, got = run(go())
    assert len({(m.partition, m.offset) for m in metas}) == 30
    assert sorted(m.value for m in got) == sorted(b"v%d" % i for i in range(30))


# ---- a consumer group with a rebalance ------------------------------------------------------------------
def test_aiokafka_group_rebalances_when_a_second_member_joins(server, logs):
    topic, group = name("grp"), name("g")

    async def go():
        admin = await _admin(server)
        await _create(admin, topic, 4)
        p = AIOKafkaProducer(bootstrap_servers=server.bootstrap)
        await p.start()
        for i in range(40):
            await p.send_and_wait(topic, value=b"%d" % i, partition=i % 4)
        one = AIOKafkaConsumer(topic, bootstrap_servers=server.bootstrap, group_id=group,
                               auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500)
        await one.start()
        first = await _consume(one, 40)
        assert len(one.assignment()) == 4
        await one.commit()
        two = AIOKafkaConsumer(topic, bootstrap_servers=server.bootstrap, group_id=group,
                               auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500)
        await two.start()
        loop = asyncio.get_running_loop()
        end = loop.time() + WAIT_S
        while loop.time() < end and not (one.assignment() and two.assignment()
                                         and len(one.assignment()) + len(two.assignment()) == 4):
            await asyncio.gather(one.getmany(timeout_ms=200), two.getmany(timeout_ms=200))
        split = (set(one.assignment()), set(two.assignment()))
        for i in range(40, 48):
            await p.send_and_wait(topic, value=b"%d" % i, partition=i % 4)
        later = []
        while loop.time() < end and len(later) < 8:
            for batch in await asyncio.gather(one.getmany(timeout_ms=200), two.getmany(timeout_ms=200)):
                for msgs in batch.values():
                    later.extend(msgs)
        groups = await admin.list_consumer_groups()
        described = await admin.describe_consumer_groups([group])
        offsets = await admin.list_consumer_group_offsets(group)
        await asyncio.gather(one.stop(), two.stop(), p.stop())
        await admin.close()
        return first, split, later, groups, described, offsets
    first, (a, b), later, groups, described, offsets = run(go())
    assert sorted(int(m.value) for m in first) == list(range(40))
    assert a and b and not a & b and len(a | b) == 4           # both members hold partitions after the rebalance
    assert sorted(int(m.value) for m in later) == list(range(40, 48))   # read once, by one member or the other
    assert any(g[0] == group for g in groups)
    members = described[0].groups[0]
    assert members[0] == 0 and members[1] == group and len(members[5]) == 2     # error, id, ..., two members
    assert sum(o.offset for o in offsets.values()) == 40          # what the first member committed


# ---- transactions --------------------------------------------------------------------------------------
def test_aiokafka_transaction_with_send_offsets_then_read_committed(server, logs):
    src, out, group, txn = name("tin"), name("tout"), name("tg"), name("tx")

    async def go():
        admin = await _admin(server)
        await _create(admin, src, 2)
        await _create(admin, out, 2)
        p = AIOKafkaProducer(bootstrap_servers=server.bootstrap)
        await p.start()
        for i in range(10):
            await p.send_and_wait(src, value=b"in%d" % i, partition=i % 2)
        await p.stop()
        c = AIOKafkaConsumer(src, bootstrap_servers=server.bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, isolation_level="read_committed")
        await c.start()
        msgs = await _consume(c, 10)
        tp = AIOKafkaProducer(bootstrap_servers=server.bootstrap, transactional_id=txn)
        await tp.start()
        async with tp.transaction():                 # read-process-write, committed with its offsets
            for m in msgs:
                await tp.send(out, value=m.value.replace(b"in", b"out"), partition=m.partition)
            ends = {TopicPartition(src, p): max(m.offset for m in msgs if m.partition == p) + 1 for p in (0, 1)}
            await tp.send_offsets_to_transaction(ends, group)
        await tp.begin_transaction()                 # and one aborted: while it is open, read_committed's
        await (await tp.send(out, value=b"aborted", partition=0))     # end is the last stable offset
        ends_seen = {}
        for level in ("read_committed", "read_uncommitted"):
            probe = AIOKafkaConsumer(bootstrap_servers=server.bootstrap, isolation_level=level)
            await probe.start()
            ends_seen[level] = (await probe.end_offsets([TopicPartition(out, 0)]))[TopicPartition(out, 0)]
            await probe.stop()
        await tp.abort_transaction()
        await tp.stop()
        committed = {tp_: await c.committed(tp_) for tp_ in ends}
        await c.stop()
        rc = AIOKafkaConsumer(out, bootstrap_servers=server.bootstrap, auto_offset_reset="earliest",
                              isolation_level="read_committed", enable_auto_commit=False)
        await rc.start()
        seen = await _consume(rc, 10)
        await asyncio.sleep(0.5)
        seen += [m for msgs in (await rc.getmany(timeout_ms=500)).values() for m in msgs]
        await rc.stop()
        await admin.close()
        return ends, committed, seen, ends_seen
    ends, committed, seen, ends_seen = run(go())
    assert committed == {tp: off for tp, off in ends.items()}
    assert sorted(m.value for m in seen) == sorted(b"out%d" % i for i in range(10))      # not the aborted one
    committed_on_0 = sum(1 for m in seen if m.partition == 0) + 1         # its records and the commit marker
    assert ends_seen == {"read_committed": committed_on_0, "read_uncommitted": committed_on_0 + 1}


# ---- admin -----------------------------------------------------------------------------------------------
def test_aiokafka_admin_calls(server, logs):
    topic, group = name("adm"), name("ag")

    async def go():
        admin = await _admin(server)
        r = {}
        await _create(admin, topic, 2)
        bad = await admin.create_topics([NewTopic(name("bad"), 1, 1, topic_configs={"cleanup.policy": "bogus"})])
        r["bad"] = bad.topic_errors[0][1]
        r["partitions"] = (await admin.create_partitions({topic: NewPartitions(4)})).topic_errors[0][1]
        r["described"] = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics([topic])}
        r["listed"] = topic in await admin.list_topics()
        altered = await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                            {"retention.ms": "3600000"})])
        r["altered"] = [res[0] for resp in altered for res in resp.resources]
        configs = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                               {"retention.ms": None, "cleanup.policy": None})],
                                               include_synonyms=True)
        r["configs"] = {e[0]: e[1] for res in configs[0].resources for e in res[4]}
        broker_cfg = await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "0",
                                                                  {"log.retention.ms": None})])
        r["broker"] = [e[0] for res in broker_cfg[0].resources for e in res[4]]
        r["cluster"] = sorted(b["node_id"] for b in (await admin.describe_cluster())["brokers"])
        p = AIOKafkaProducer(bootstrap_servers=server.bootstrap)
        await p.start()
        for i in range(6):
            await p.send_and_wait(topic, value=b"%d" % i, partition=0)
        await p.stop()
        deleted = await admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(4)})
        r["low"] = {tp.partition: off for tp, off in deleted.items()}
        c = AIOKafkaConsumer(topic, bootstrap_servers=server.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        r["after_delete"] = sorted(int(m.value) for m in await _consume(c, 2))
        await c.commit()
        await c.stop()
        r["coordinator"] = await admin.find_coordinator(group)
        r["offsets"] = {tp.partition: o.offset for tp, o in (await admin.list_consumer_group_offsets(group)).items()}
        r["groups"] = [g[0] for g in await admin.list_consumer_groups()]
        r["deleted"] = [e[1] for e in (await admin.delete_topics([topic])).topic_error_codes]
        await admin.close()
        return r
    r = run(go())
    assert r["bad"] == 40                            # INVALID_CONFIG, as LogConfig.validate
    assert r["partitions"] == 0 and r["described"][topic] == 4 and r["listed"]
    assert r["altered"] == [0]
    assert r["configs"] == {"retention.ms": "3600000", "cleanup.policy": "delete"}
    assert r["broker"] == ["log.retention.ms"]
    assert r["cluster"] == [0, 1, 2]
    assert r["low"] == {0: 4} and r["after_delete"] == [4, 5]
    assert r["coordinator"] in (0, 1, 2)
    assert r["offsets"][0] == 6 and group in r["groups"]
    assert r["deleted"] == [0]


# ---- SASL on the SASL_PLAINTEXT listener, and an ACL denial ---------------------------------------------
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_authenticates_and_is_told_the_sasl_ports(server, logs, mechanism):
    topic = name("alice.s")

    async def go():
        admin = await _admin(server, bootstrap=server.sasl_bootstrap, **sasl(mechanism))
        await _create(admin, topic, 1)
        brokers = (await admin.describe_cluster())["brokers"]
        await admin.close()
        p = AIOKafkaProducer(bootstrap_servers=server.sasl_bootstrap, enable_idempotence=True, **sasl(mechanism))
        await p.start()
        meta = await p.send_and_wait(topic, b"hello")
        await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=server.sasl_bootstrap, group_id=name("alice.g"),
                             auto_offset_reset="earliest", **sasl(mechanism))
        await c.start()                     # its group coordinator is found, and reached, on a SASL port
        got = await _consume(c, 1)
        await c.commit()
        await c.stop()
        return brokers, meta, got
    brokers, meta, got = run(go())
    assert [m.value for m in got] == [b"hello"]
    assert sorted((b["host"], b["port"]) for b in brokers) == sorted(server.listeners[1].addresses)
    assert meta.offset == 0
    with server.lock:
        said = [e.text for e in server.cluster.events if getattr(e, "text", "").startswith(f"SASL {mechanism}:")]
    assert said and all(t.endswith("as User:alice") for t in said)


def test_aiokafka_outside_its_acl_gets_topic_authorization_failed(server, logs):
    async def go():
        p = AIOKafkaProducer(bootstrap_servers=server.sasl_bootstrap, **sasl("SCRAM-SHA-512", "bob"))
        await p.start()
        try:
            await p.send_and_wait(name("alice.private"), b"not yours")
        finally:
            await p.stop()
    with pytest.raises(TopicAuthorizationFailedError):
        run(go())
    expect(logs, "is not authorized for this client")
    assert not any(n.startswith("alice.private") for n in server.cluster.topics.by_name)


def test_aiokafka_with_a_wrong_password_fails_to_authenticate(server, logs):
    async def go():
        p = AIOKafkaProducer(bootstrap_servers=server.sasl_bootstrap, **sasl("SCRAM-SHA-256", "alice", "wrong"))
        try:
            await p.start()
        finally:
            await p.stop()
    with pytest.raises(KafkaConnectionError):
        run(go())
    expect(logs, "invalid credentials with SASL mechanism SCRAM-SHA-256")
