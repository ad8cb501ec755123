"""The share coordinator bounds __share_group_state as Kafka's does (kipviz.broker.shares: the
record-pruning task deletes below the smallest latest-ShareSnapshot offset of each state partition;
the cold-partition snapshot task re-snapshots idle share partitions). Off by default (scenarios keep
every record), on in `kipviz serve`."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz.broker import Cluster
from kipviz.broker.retention import held_bytes
from kipviz.broker.shares import UPDATES_PER_SNAPSHOT
from kipviz.records import decode_internal

G = "sg"


def _cluster(**cfg):
    c = Cluster(seed=3, share_auto_offset_reset="earliest", share_state_topic_partitions=1, **cfg)
    tid = c.create_topic("t", 2)
    return c, tid


def _hb(c, group=G):
    r = c.call("ShareGroupHeartbeat", 1, {"GroupId": group, "MemberId": "m-" + group, "MemberEpoch": 0,
                                          "RackId": None, "SubscribedTopicNames": ["t"]})
    assert r["ErrorCode"] == 0, r


def _consume_one_by_one(c, tid, n, *, partition=0, group=G):
    """Produce `n` records to t-`partition`, then fetch and ACCEPT them one per ShareFetch: one
    WriteShareGroupState (ShareUpdate) per acknowledgement."""
    log = c.topics.partition("t", partition)
    start = log.log_end_offset
    log.append([(b"k%d" % i, b"v") for i in range(n)], c.now)
    epoch = c.shares.sessions.get((group, "m-" + group, 0), {}).get("epoch", 0)
    for o in range(start, start + n + 1):
        acks = [{"FirstOffset": o - 1, "LastOffset": o - 1, "AcknowledgeTypes": [1]}] if o > start else []
        r = c.call("ShareFetch", 1, {
            "GroupId": group, "MemberId": "m-" + group, "ShareSessionEpoch": epoch, "MaxWaitMs": 0,
            "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": 1, "BatchSize": 1,
            "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": partition,
                                                        "AcknowledgementBatches": acks}]}],
            "ForgottenTopicsData": []})
        assert r["ErrorCode"] == 0, r
        epoch += 1
        c.advance(10)


def _state_log(c):
    return c.topics.partition("__share_group_state", 0)


def test_pruning_keeps_the_state_topic_bounded_and_reload_still_finds_the_state():
    c, tid = _cluster(share_state_prune_interval_ms=1000)
    c.start_share_state_pruning()
    _hb(c)
    sizes = []
    for _ in range(6):
        _consume_one_by_one(c, tid, UPDATES_PER_SNAPSHOT)
        c.advance(1000)
        sizes.append(held_bytes(_state_log(c)))
    log = _state_log(c)
    # 3,000 acknowledgements wrote ~3,000 records; the log keeps at most the latest snapshot and
    # the updates after it (one snapshot period), and stops growing
    assert log.log_end_offset > 6 * UPDATES_PER_SNAPSHOT
    assert log.log_start_offset > 4 * UPDATES_PER_SNAPSHOT
    assert log.log_end_offset - log.log_start_offset <= UPDATES_PER_SNAPSHOT + 1
    assert max(sizes[2:]) <= 1.2 * min(sizes[2:]), sizes
    # the first record kept is the latest ShareSnapshot (what a reload starts from)
    first = log.entries[log.log_start_offset]
    assert decode_internal(first.key, first.value, "__share_group_state")["record"] == "ShareSnapshot"
    sp = c.shares.partitions[(G, tid, 0)]
    before = (sp.spso, {o: r.state for o, r in sp.records.items()})
    sp.reload_from_state("test")
    assert (sp.spso, {o: r.state for o, r in sp.records.items()}) == before
    assert sp.spso == 6 * UPDATES_PER_SNAPSHOT
    assert any("share coordinator record pruning" in getattr(e, "text", "") for e in c.events)
    assert not c.internal_errors


def test_off_by_default_every_record_is_kept():
    c, tid = _cluster()
    c.start_share_state_pruning()           # no interval: does nothing
    _hb(c)
    _consume_one_by_one(c, tid, 2 * UPDATES_PER_SNAPSHOT)
    c.advance(600_000)
    log = _state_log(c)
    assert log.log_start_offset == 0 and len(list(log.entries)) == log.log_end_offset > 2 * UPDATES_PER_SNAPSHOT


def test_an_idle_share_partition_gets_a_cold_snapshot_and_stops_pinning_the_prune_offset():
    c, tid = _cluster(share_state_prune_interval_ms=1000, share_cold_partition_snapshot_interval_ms=60_000)
    c.start_share_state_pruning()
    _hb(c)
    _consume_one_by_one(c, tid, 3, partition=1)     # t-1: a few records, then idle
    _consume_one_by_one(c, tid, 2 * UPDATES_PER_SNAPSHOT + 50, partition=0)
    c.advance(1000)
    log = _state_log(c)
    idle_key = (G, tid, 1)
    pinned = c.shares.snapshot_offsets[0][idle_key]
    assert log.log_start_offset == pinned < 10       # t-1's first snapshot holds the prefix
    c.advance(60_000)                                # the cold-partition task re-snapshots t-1
    assert c.shares.snapshot_offsets[0][idle_key] > pinned
    # now the busy partition's latest snapshot is the smallest: everything below it goes
    busy = c.shares.snapshot_offsets[0][(G, tid, 0)]
    assert log.log_start_offset == min(busy, c.shares.snapshot_offsets[0][idle_key]) > 2 * UPDATES_PER_SNAPSHOT
    sp1 = c.shares.partitions[idle_key]
    sp1.reload_from_state("test")
    assert sp1.spso == 3 and not c.internal_errors


def test_kipviz_serve_turns_pruning_on_and_keeps_an_explicit_interval():
    from kipviz.serve import Server
    c = Cluster(seed=1)
    Server(c)                                # not started: the constructor arms the tasks
    assert c.config.share_state_prune_interval_ms == 1000 and c.__dict__.get("_share_prune_on")
    own = Cluster(seed=1, share_state_prune_interval_ms=5000)
    Server(own)
    assert own.config.share_state_prune_interval_ms == 5000


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(1, 40), st.integers(0, 2000)), min_size=1, max_size=12),
       st.integers(2, 30))
def test_pruning_never_loses_a_share_partitions_state(steps, per_snapshot):
    """Whatever the interleaving of two share partitions' acknowledgements, time and pruning, every
    share partition reloaded from the pruned state log has the state it had in memory."""
    import kipviz.broker.shares as shares_mod
    old = shares_mod.UPDATES_PER_SNAPSHOT
    shares_mod.UPDATES_PER_SNAPSHOT = per_snapshot          # snapshots often: many prunes
    try:
        c, tid = _cluster(share_state_prune_interval_ms=100, share_cold_partition_snapshot_interval_ms=1500)
        c.start_share_state_pruning()
        _hb(c)
        for partition, n, wait in steps:
            _consume_one_by_one(c, tid, n, partition=partition)
            c.advance(wait)
        for (_, _, p), sp in sorted(c.shares.partitions.items()):
            before = (sp.spso, {o: (r.state, r.delivery_count) for o, r in sp.records.items()})
            sp.reload_from_state("test")
            assert (sp.spso, {o: (r.state, r.delivery_count) for o, r in sp.records.items()}) == before, p
        c.advance(100)                                      # one more pruning pass
        log = _state_log(c)
        assert log.log_start_offset == min(c.shares.snapshot_offsets[0].values())
        assert not c.internal_errors
    finally:
        shares_mod.UPDATES_PER_SNAPSHOT = old
