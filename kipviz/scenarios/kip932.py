"""Share groups as released (KIP-932, Kafka 4.2): the record life cycle before any transaction.

Two consumers share one partition; records are acquired under a lock, acknowledged one by one
(ACCEPT / RELEASE / REJECT), redelivered after a release or a lock expiry with a growing delivery
count, and archived once the count reaches group.share.delivery.count.limit."""
from __future__ import annotations

from ..clients.producer import Producer
from ..clients.share_consumer import ShareConsumer
from . import Trace, scenario

INPUT, GROUP = "orders", "sg"
ACCEPT, RELEASE, REJECT = 1, 2, 3
RELEASED = dict(kip="KIP-932", status="released")


def _load(trace: Trace, n: int) -> None:
    trace.cluster.create_topic(INPUT, 1)
    loader = Producer(trace.cluster, None, client_id="loader")
    for i in range(n):
        loader.send(INPUT, b"k%d" % i, b"order-%d" % i, partition=0)


def _states(trace: Trace) -> dict[int, tuple[str, int]]:
    c = trace.cluster
    sp = c.shares.partitions.get((GROUP, c.topics.get(INPUT).topic_id, 0))
    return {} if sp is None else {o: (r.state, r.delivery_count) for o, r in sorted(sp.records.items())}


@scenario("kip932.acquire_and_acknowledge", title="KIP-932: two consumers share a partition; accept, release, reject",
          no_findings="The KIP-932 basics as Kafka ships them: nothing goes wrong, and the checks say each step.",
          **RELEASED)
def acquire_and_acknowledge(trace: Trace) -> None:
    """Consumer A acquires 4 records (MaxRecords 4), consumer B the next 4 of the same partition.
    A accepts two, releases one and rejects one; the released record is redelivered to B with
    delivery count 2; accepted records are ACKNOWLEDGED, the rejected one ARCHIVED, and the
    share-partition start offset (SPSO) moves past the terminal run."""
    _load(trace, 8)
    a = ShareConsumer(trace.cluster, GROUP, client_id="consumer-a", max_records=4)
    b = ShareConsumer(trace.cluster, GROUP, client_id="consumer-b", max_records=4)
    a.subscribe([INPUT])
    b.subscribe([INPUT])
    got_a, got_b = a.poll(), b.poll()
    trace.expect("A and B acquire disjoint records of the same partition",
                 {r.offset for r in got_a}.isdisjoint(r.offset for r in got_b) and len(got_a) == len(got_b) == 4,
                 f"A {[r.offset for r in got_a]}, B {[r.offset for r in got_b]}")
    trace.expect("first acquisition: delivery count 1", {r.delivery_count for r in got_a + got_b} == {1})
    for r, t in zip(got_a, (ACCEPT, ACCEPT, RELEASE, REJECT), strict=False):
        a.acknowledge(r, t)
    a.commit_sync()
    released = got_a[2].offset
    st = _states(trace)
    trace.expect("accepted -> ACKNOWLEDGED, released -> AVAILABLE, rejected -> ARCHIVED",
                 [st.get(r.offset, ("ACKNOWLEDGED", 0))[0] for r in got_a][2:] == ["AVAILABLE", "ARCHIVED"],
                 repr(st))
    for r in got_b:
        b.acknowledge(r, ACCEPT)
    again = b.poll()
    trace.expect("the released record is redelivered (to B) with delivery count 2",
                 [(r.offset, r.delivery_count) for r in again] == [(released, 2)], repr(again))
    for r in again:
        b.acknowledge(r, ACCEPT)
    b.commit_sync()
    sp = trace.cluster.shares.partitions[(GROUP, trace.cluster.topics.get(INPUT).topic_id, 0)]
    trace.expect("every record terminal: the SPSO moved to the end of the partition", sp.spso == 8, f"SPSO {sp.spso}")
    trace.result.update(a=[r.offset for r in got_a], b=[r.offset for r in got_b], redelivered=released, spso=sp.spso)
    a.close()
    b.close()


def _wait(sc: ShareConsumer, ms: int) -> None:
    """Time passes while the consumer keeps heartbeating (else the group session timeout, 45 s,
    would remove it and release its records before the lock expires)."""
    step = sc.cluster.config.group_share_heartbeat_interval_ms
    while ms > 0:
        sc.cluster.advance(min(step, ms))
        ms -= step
        sc.heartbeat()


@scenario("kip932.lock_expiry_delivery_limit", title="KIP-932: lock expiry, redelivery and the delivery-count limit",
          **RELEASED)
def lock_expiry_delivery_limit(trace: Trace) -> None:
    """A consumer acquires a record and never acknowledges it. After group.share.record.lock.duration.ms
    (30 s) the lock expires and the record is AVAILABLE again; each new acquisition adds 1 to its
    delivery count; when the count reaches group.share.delivery.count.limit (5) the next expiry
    archives it instead (newest rule; before Kafka 4.2's fix the check ran at acquisition). The consumer
    keeps heartbeating: only the record lock runs out, not its membership."""
    _load(trace, 1)
    c = trace.cluster
    lock_ms, limit = c.config.group_share_record_lock_duration_ms, c.config.group_share_delivery_count_limit
    sc = ShareConsumer(c, GROUP, client_id="slow-consumer")
    sc.subscribe([INPUT])
    counts = []
    for n in range(1, limit + 1):
        got = sc.poll()
        counts += [r.delivery_count for r in got]
        _wait(sc, lock_ms - 1)
        trace.expect(f"delivery {n}: still ACQUIRED 1 ms before the lock ends",
                     _states(trace).get(0, ("?",))[0] == "ACQUIRED", repr(_states(trace)))
        c.advance(1)
    trace.expect("no sixth delivery", sc.poll() == [])
    trace.expect(f"delivered {limit} times with counts 1..{limit}", counts == list(range(1, limit + 1)), repr(counts))
    st = _states(trace)
    sp = c.shares.partitions[(GROUP, c.topics.get(INPUT).topic_id, 0)]
    trace.expect("after the last lock expiry the record is ARCHIVED (not redelivered again)",
                 st.get(0, ("ARCHIVED",))[0] == "ARCHIVED" and sp.spso == 1, f"{st}, SPSO {sp.spso}")
    trace.result.update(delivery_counts=counts, lock_ms=lock_ms, limit=limit)
    trace.find(f"A record that is never acknowledged comes back every {lock_ms // 1000} s with delivery counts "
               f"{', '.join(map(str, counts))}, and after lock expiry number {limit} it is {st.get(0, ('ARCHIVED',))[0]}: "
               f"never processed, and the share-partition start offset moves past it (SPSO {sp.spso}).",
               f"The application (client slow-consumer, group '{GROUP}'): the record on {INPUT}-0 silently stops "
               "coming back, with no error; only the record's delivery count hinted at it.",
               "KIP-932, 'Delivery count': group.share.delivery.count.limit (default 5) archives a record after "
               "that many deliveries; since Kafka 4.2 the limit is checked at lock expiry (SharePartition.java).")
    sc.close()
