"""Cluster.handle under mutated frames of every served API and version (issue 21).

A valid request is built for each API and version the model serves (kipviz.records.examples), then
mutated: bits flipped, bytes set, cut short, bytes inserted or removed, and lengths or counts
overwritten with huge values (int16/int32 maxima, -1, long varints); the size prefix is mostly
kept consistent so that the body parser and the handlers see the damage. For every frame:

* nothing escapes `handle`;
* `internal_errors` stays empty (it is kept for model bugs);
* a non-empty answer decodes as the response the model says it sent (api and version of its
  ResponseSent event);
* one call does a small, bounded amount of work: CPU time and the events it records.

"Every served API and version" is every one some configuration of the model serves: the releases
the kit plays, trunk's accepted versions, share.version 2's proposed RPC and the ZooKeeper-mode
controller requests a scenario turns on (LeaderAndIsr, StopReplica: ClusterConfig.api_versions).

Two tests: a seeded sweep (the same mutations every run, every API and version) and a hypothesis
test with its own settings profile (moderate example count, a few seconds on two slow cores)."""
from __future__ import annotations

import os
import random
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.broker.config import served_versions
from kipviz.broker.handlers import HANDLERS, load_all
from kipviz.clients import Consumer, Producer
from kipviz.records.examples import TOPIC_IDS, example_value
from kipviz.schema.events import ResponseSent
from kipviz.schema.releases import RELEASES

# KIPVIZ_FUZZ_EXAMPLES=20000 for a long campaign
settings.register_profile("handle-fuzz", max_examples=int(os.environ.get("KIPVIZ_FUZZ_EXAMPLES", 400)), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings.get_profile("handle-fuzz")

MAX_CPU_PER_CALL = 1.0        # seconds; the valid examples take about 2 ms
MAX_EVENTS_PER_CALL = 2_000   # the examples record a handful


# the cluster settings that serve each API and version (the first that does, in this order)
PROFILES = ({}, {"share_version": 2}, {"release": None}, *({"release": r} for r in RELEASES),
            {"api_versions": {"LeaderAndIsr": (0, 7), "StopReplica": (0, 4)}})


def _serves(config, api: str, version: int) -> bool:
    served = served_versions(api, config)
    return served is not None and served[0] <= version <= served[1]


def _frames() -> list[tuple[str, int, bytes, dict]]:
    """(api, version, frame, cluster settings) for every API and version some configuration serves."""
    load_all()
    out, seen = [], set()
    for settings_ in PROFILES:
        config = Cluster(**settings_).config
        for api in sorted(HANDLERS):
            served = served_versions(api, config)
            for v in range(served[0], served[1] + 1) if served is not None else ():
                if (api, v) not in seen:
                    seen.add((api, v))
                    out.append((api, v, codec.encode_request(api, v, example_value(api + "Request", v),
                                                             correlation_id=v + 1), settings_))
    return out


FRAMES = _frames()
_EXAMPLE_TOPICS = {"orders": TOPIC_IDS[0], "payments": TOPIC_IDS[1]}


def _cluster(settings_: dict, brokers: int = 3) -> Cluster:
    """A cluster holding the topics (and topic ids) the examples name, with a few records."""
    c = Cluster(brokers=brokers, seed=1, **settings_)
    reg = c.topics
    for name, tid in _EXAMPLE_TOPICS.items():
        c.create_topic(name, 8)
        topic = reg.get(name)
        del reg.by_id[topic.topic_id]
        topic.topic_id = tid
        for log in topic.partitions:
            log.topic_id = tid
        reg.by_id[tid] = topic
    c.call("Produce", 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": "orders", "PartitionData": [
        {"Index": 0, "Records": example_value("ProduceRequest", 9)["TopicData"][0]["PartitionData"][0]["Records"]}]}]},
        broker=0)
    c.internal_errors.clear()
    return c


def _warm(settings_: dict) -> tuple[Cluster, tuple, tuple]:
    """A one-broker cluster (every request reaches its handler, coordinators included) with live
    state made by the kit's clients: an open transaction of "tx-orders-001", a classic group
    "order-processors" and a KIP-848 group "g848" that have consumed. Also returns the ints and
    strings that state is keyed by (producer id and epoch, generation, member ids and epochs), for
    the mutations to use: a request naming a live member reaches deeper than one naming nobody."""
    c = _cluster(settings_, brokers=1)
    p = Producer(c, "tx-orders-001")
    pid, epoch = p.init_transactions()
    p.begin_transaction()
    p.send("orders", b"k", b"v", partition=0)
    classic = Consumer(c, "order-processors", protocol="classic")
    classic.subscribe(["orders"])
    classic.poll()
    modern = Consumer(c, "g848", protocol="consumer")
    modern.subscribe(["orders", "payments"])
    modern.poll()
    assert c.internal_errors == []
    return c, (pid, epoch, classic.generation, modern.member_epoch), (
        "tx-orders-001", "order-processors", "g848", classic.member_id, modern.member_id)


HUGE = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x7f\xff", b"\xff\xff", b"\xff\xff\xff\xff\x0f",
        b"\x80\x80\x80\x80\x08", b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f", b"\x00\x00\x00\x00")


def mutate(frame: bytes, ops: list[tuple], fix_size: bool) -> bytes:
    """Apply (kind, at, value) operations to the frame's payload, at positions taken modulo its size."""
    body = bytearray(frame[4:])
    for kind, at, value in ops:
        n = len(body)
        i = at % (n + 1)
        if kind == "flip" and n:
            body[i % n] ^= value % 255 + 1
        elif kind == "set" and n:
            body[i % n] = value % 256
        elif kind == "cut":
            del body[i:]
        elif kind == "insert":
            body[i:i] = bytes([value % 256]) * (value % 9 + 1)
        elif kind == "delete":
            del body[i:i + value % 9 + 1]
        elif kind == "huge":
            h = HUGE[value % len(HUGE)]
            body[i:i + len(h)] = h
    size = len(body) if fix_size else struct.unpack(">i", frame[:4])[0]
    return struct.pack(">i", size) + bytes(body)


def check(c: Cluster, frame: bytes) -> str:
    """Hand one frame to handle() and check the four properties; returns what happened."""
    before = c.next_seq
    t = time.process_time()
    out = c.handle(frame, broker=0)
    cpu = time.process_time() - t
    assert c.internal_errors == [], c.internal_errors
    assert cpu < MAX_CPU_PER_CALL, (cpu, frame[:64])
    assert c.next_seq - before < MAX_EVENTS_PER_CALL, c.next_seq - before
    if not out:
        return "no response"
    sent = [e for e in c.events if isinstance(e, ResponseSent) and e.seq >= before]
    assert sent and sent[-1].frame == out
    codec.decode_response(out, sent[-1].api, sent[-1].version)
    return "error response" if any(sent[-1].error_codes) else "response"


OPS = st.lists(st.tuples(st.sampled_from(("flip", "set", "cut", "insert", "delete", "huge")),
                         st.integers(0, 1 << 16), st.integers(0, 1 << 16)), min_size=1, max_size=4)


@settings(FUZZ)
@given(which=st.integers(0, len(FRAMES) - 1), ops=OPS, fix_size=st.integers(0, 9).map(lambda x: x < 8),
       twice=st.booleans(), warm=st.booleans())
def test_mutated_frames_of_every_api_and_version(which, ops, fix_size, twice, warm):
    api, version, frame, settings_ = FRAMES[which]
    c = _warm(settings_)[0] if warm else _cluster(settings_)
    bad = mutate(frame, ops, fix_size)
    check(c, bad)
    if twice:                  # the state the first one left must not trip the model either
        check(c, bad)
        check(c, frame)
        _later(c, 60_000)


def test_seeded_sweep_over_every_api_and_version():
    """Every API and version: the valid frame, then 24 seeded mutations of it, on one cluster per
    frame (state carries over, as on a real connection)."""
    rng = random.Random(21)
    seen: dict[str, int] = {}
    kinds = ("flip", "set", "cut", "insert", "delete", "huge")
    for _api, _version, frame, settings_ in FRAMES:
        c = _cluster(settings_)
        assert check(c, frame) in ("response", "error response", "no response")
        for _ in range(24):
            ops = [(rng.choice(kinds), rng.randrange(1 << 16), rng.randrange(1 << 16))
                   for _ in range(rng.randint(1, 3))]
            got = check(c, mutate(frame, ops, rng.random() < 0.9))
            seen[got] = seen.get(got, 0) + 1
    assert len(FRAMES) >= 200 and {("LeaderAndIsr", 0), ("StopReplica", 0)} <= {f[:2] for f in FRAMES}
    assert set(seen) == {"response", "error response", "no response"}, seen


def test_every_valid_example_is_served_cleanly_in_sequence():
    """All the valid examples, one after another, on one cluster per configuration."""
    for settings_ in PROFILES:
        c = _cluster(settings_)
        for api, version, frame, _ in FRAMES:
            if _serves(c.config, api, version):
                check(c, frame)


# ---- field-level mutations: valid frames carrying extreme or odd values -------------------------------
_INTS = (0, -1, 1, 2, 7, 127, -128, 255, 2**15 - 1, -2**15, 2**31 - 1, -2**31, 2**63 - 1, -2**63)
_STRS = ("", "orders", "payments", "__consumer_offsets", "__transaction_state", "__share_group_state",
         "a.b", "a_b", "ü" * 3, "x" * 300, None)


def _paths(value, path=()):
    """Every (path, leaf or container) in a request value."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


def _candidates(v, ints=(), strs=()) -> list:
    if isinstance(v, bool):
        return [not v]
    if isinstance(v, int):
        return [*_INTS, v + 1, v - 1, *ints]
    if isinstance(v, str):
        return [*_STRS, *strs]
    if isinstance(v, (bytes, bytearray)):
        return [b"", None, b"\x00" * 70, bytes(v[:-1]), bytes(v) + b"\x00", bytes(v) * 2]
    if isinstance(v, list):
        return [[], None, v * 2, v[:1], v[::-1]]
    if v is None:
        return [0, "", [], b""]
    if hasattr(v, "int"):      # a UUID
        return [TOPIC_IDS[2], type(v)(int=0), type(v)(int=1), *(_EXAMPLE_TOPICS.values())]
    return []


def _replace(value, path, new):
    if not path:
        return new
    out = dict(value) if isinstance(value, dict) else list(value)
    out[path[0]] = _replace(value[path[0]], path[1:], new)
    return out


@settings(FUZZ)
@given(which=st.integers(0, len(FRAMES) - 1), data=st.data(), warm=st.booleans())
def test_valid_frames_with_odd_values(which, data, warm):
    api, version, _frame, settings_ = FRAMES[which]
    c, ints, strs = _warm(settings_) if warm else (_cluster(settings_), (), ())
    value = example_value(api + "Request", version)
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        paths = [p for p, v in _paths(value) if p and _candidates(v)]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        old = value
        leaf = value
        for k in path:
            leaf = leaf[k]
        new = data.draw(st.sampled_from(_candidates(leaf, ints, strs)), label="new")
        value = _replace(value, path, new)
        try:
            codec.encode_request(api, version, value, correlation_id=3)
        except Exception:  # noqa: BLE001 - the value does not fit the field: keep the old one
            value = old
    frame = codec.encode_request(api, version, value, correlation_id=3)
    check(c, frame)
    check(c, frame)            # again, on the state the first one left
    _later(c, data.draw(st.sampled_from((0, 1, 5_000, 60_000, 10**9)), label="advance"))


def _later(c: Cluster, ms: int) -> None:
    """Time passes (timeouts fire, held requests are answered): still no model bug, and every
    valid example is still served."""
    c.advance(ms)
    assert c.internal_errors == [], c.internal_errors
    for api, version, frame, _ in FRAMES[::7]:
        if _serves(c.config, api, version):
            check(c, frame)


def test_the_checks_catch_a_model_bug(monkeypatch):
    """Not vacuous: a handler that fails on some input is reported by check() (internal_errors),
    and a caller's None is a TypeError, not a model bug."""
    def broken(cluster, req):
        raise KeyError("a model bug")
    monkeypatch.setitem(HANDLERS, "Heartbeat", broken)
    api, version, frame, settings_ = next(f for f in FRAMES if f[0] == "Heartbeat")
    c = _cluster(settings_)
    with pytest.raises(AssertionError, match="a model bug"):
        check(c, frame)
    c = _cluster(settings_)
    with pytest.raises(TypeError):
        c.handle(None)
    assert c.internal_errors == []
