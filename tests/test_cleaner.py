"""Log compaction (kipviz.broker.cleaner, after Kafka's LogCleaner / Cleaner): what a consumer
reads from a compacted topic after cleaning passes on the virtual clock, against a reference the
test computes from what it produced."""
from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipviz.broker import Cluster, cleaner
from kipviz.broker.segments import LogDir
from kipviz.clients.consumer import Consumer
from kipviz.clients.producer import Producer
from kipviz.records import write_batch
from kipviz.schema.error_codes import CODE
from kipviz.schema.events import LogCleaned

HORIZON = 10_000          # delete.retention.ms of the test topic


def compacted(c, name="c", segment=400, **extra):
    configs = {"cleanup.policy": "compact", "internal.segment.bytes": str(segment),
               "delete.retention.ms": str(HORIZON), **extra}
    body = {"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                        "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}],
            "timeoutMs": 1000, "validateOnly": False}
    assert c.call("CreateTopics", 7, body)["Topics"][0]["ErrorCode"] == 0
    return c.topics.get(name).partitions[0]


def read_all(c, topic="c", isolation="read_committed"):
    """Every record a consumer reads from the start, through real Fetch frames."""
    cons = Consumer(c, None, client_id=f"reader-{c.next_seq}", isolation=isolation)
    cons.assign([(topic, 0)])
    log = c.topics.get(topic).partitions[0]
    end = log.last_stable_offset if isolation == "read_committed" else log.log_end_offset
    got = []
    for _ in range(200):
        got += cons.poll()
        if cons.position((topic, 0)) >= end:
            break
    assert cons.position((topic, 0)) == end
    return [(r.offset, r.key, r.value) for r in got]


def latest(records):
    out = {}
    for _o, k, v in records:
        out[k] = v
    return out


ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.one_of(st.none(), st.binary(min_size=1, max_size=30))),
    st.tuples(st.just("batch"), st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), st.binary(max_size=20))),
                                         min_size=2, max_size=6)),
    st.tuples(st.just("txn"), st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), st.binary(max_size=20))),
                                       min_size=1, max_size=4), st.booleans())),
    min_size=1, max_size=60)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.booleans())
def test_cleaning_keeps_the_newest_committed_value_per_key_and_tombstones_until_the_horizon(steps, on_disk):
    c = Cluster(brokers=1, seed=3)
    if on_disk:                  # the log directory kipviz serve keeps: cleaned segments swapped in on disk
        d = LogDir(tempfile.mkdtemp(prefix="kipviz-test-cleaner-"), lambda name: 400 if name == "c" else 1 << 30)
        d.remove_when_gone()
        c.topics.use_log_dir(d)
    log = compacted(c)
    p = Producer(c, None, client_id="p")
    tp = Producer(c, "tx", client_id="tx")
    tp.init_transactions()
    committed = {}                                   # the reference: last committed value per key
    for step in steps:
        if step[0] == "put":
            p.send("c", b"k%d" % step[1], step[2], partition=0)
            committed[b"k%d" % step[1]] = step[2]
        elif step[0] == "batch":                 # one batch of several records: gaps inside it
            p.send_batch("c", 0, [(b"k%d" % k, v) for k, v in step[1]])
            committed.update({b"k%d" % k: v for k, v in step[1]})
        else:
            tp.begin_transaction()
            for k, v in step[1]:
                tp.send("c", b"k%d" % k, v, partition=0)
            if step[2]:
                tp.commit_transaction()
                committed.update({b"k%d" % k: v for k, v in step[1]})
            else:
                tp.abort_transaction()
    before = read_all(c)
    assert latest(before) == committed
    by_offset = {o: (k, v) for o, k, v in read_all(c, isolation="read_uncommitted")}
    starts = cleaner.segment_starts(log, 400)
    active = [bytes(b) for b in log.batches[starts[-1]:]]
    due = cleaner.cleanable(c, c.topics.get("c"), log)

    c.advance(1)
    passes = cleaner.run(c)
    assert bool(passes) == (due is not None)
    after = read_all(c)
    assert latest(after) == committed                               # the newest value of each key
    assert all(by_offset[o] == (k, v) for o, k, v in after)        # records keep their offsets ...
    offs = [o for o, _k, _v in after]
    assert offs == sorted(set(offs))                                # ... in order, gaps allowed
    assert [bytes(b) for b in log.batches[-len(active):]] == active         # the active segment untouched
    assert len(log.batches) - len(active) >= 0
    if passes:
        end = passes[0].end_offset
        aborted = set(by_offset) - {o for o, _k, _v in before}          # data of aborted transactions
        assert not [o for o, _k, _v in read_all(c, isolation="read_uncommitted") if o in aborted and o < end]
        cleaned = [(o, k) for o, k, _v in after if o < end]
        assert len({k for _o, k in cleaned}) == len(cleaned)        # one record per key below the map's end
        # tombstones kept before delete.retention.ms ...
        assert {k for o, k, v in after if v is None} >= {k for k, v in committed.items() if v is None
                                                         and any(kk == k and o < end for o, kk, _ in before)}
        # ... and gone after it, once a pass runs again (new dirty data makes one due)
        c.advance(HORIZON + 1)
        for i in range(40):
            p.send("c", b"fill%d" % (i % 2), b"x" * 20, partition=0)
        again = cleaner.run(c)
        final = read_all(c)
        fills = {b"fill0": b"x" * 20, b"fill1": b"x" * 20}
        live = {k: v for k, v in latest(final).items() if v is not None}
        assert live == {**{k: v for k, v in committed.items() if v is not None}, **fills}
        if again:                # every tombstone the first pass stamped is past its horizon now
            assert not [o for o, _k, v in final if v is None and o < end]
    if on_disk:                  # what the files hold is what the log says it holds
        sizes = sum(p.stat().st_size for p in log.store.dir.glob("*.log"))
        assert sizes == log.held_bytes and not list(log.store.dir.glob("*.cleaned"))
    assert c.internal_errors == []


def test_below_the_dirty_ratio_no_pass_and_the_active_segment_is_never_cleaned():
    c = Cluster(brokers=1, seed=3)
    log = compacted(c, **{"min.cleanable.dirty.ratio": "0.9"})
    p = Producer(c, None, client_id="p")
    for i in range(30):
        p.send("c", b"k", b"v%d" % i, partition=0)
    got = cleaner.run(c)
    assert len(got) == 1 and isinstance(got[0], LogCleaned)
    clean_end = got[0].end_offset
    starts = cleaner.segment_starts(log, 400)
    assert clean_end == log.batch_numbers(starts[-1])[0]            # stops at the active segment's base
    for i in range(3):                       # a little new dirty data: ratio below 0.9
        p.send("c", b"k", b"w%d" % i, partition=0)
    assert cleaner.cleanable(c, c.topics.get("c"), log) is None and cleaner.run(c) == []
    # one segment only: the active one, never cleaned
    c2 = Cluster(brokers=1, seed=3)
    log2 = compacted(c2, segment=1 << 20)
    p2 = Producer(c2, None, client_id="p")
    for i in range(30):
        p2.send("c", b"k", b"v%d" % i, partition=0)
    assert cleaner.run(c2) == [] and len(log2.batches) == 30


def test_the_cleaner_runs_on_the_virtual_clock_every_backoff():
    c = Cluster(brokers=1, seed=3, log_cleaner_backoff_ms=15000)
    c.start_log_cleaner()
    log = compacted(c)
    p = Producer(c, None, client_id="p")
    for i in range(30):
        p.send("c", b"k", b"v%d" % i, partition=0)
    assert not [e for e in c.events if isinstance(e, LogCleaned)]
    c.advance(15000)
    cleaned = [e for e in c.events if isinstance(e, LogCleaned)]
    assert len(cleaned) == 1 and cleaned[0].records_removed > 0 and log.compacted


def test_a_record_without_a_key_is_invalid_on_a_compacted_topic():
    c = Cluster(brokers=1, seed=3)
    compacted(c)
    body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 1000,
            "TopicData": [{"Name": "c", "PartitionData": [{"Index": 0, "Records": write_batch(
                [(b"k", b"v"), (None, b"x")], base_timestamp=1)}]}]}
    r = c.call("Produce", 11, body)["Responses"][0]["PartitionResponses"][0]
    assert r["ErrorCode"] == CODE["INVALID_RECORD"]
    msg = "Compacted topic cannot accept message without key in topic partition c-0"
    assert r["RecordErrors"] == [{"BatchIndex": 1, "BatchIndexErrorMessage": msg}]
    assert r["ErrorMessage"].startswith("One or more records have been rejected due to 1 record errors")
    assert len(c.topics.get("c").partitions[0].batches) == 0


def test_internal_topics_get_the_coordinators_topic_configs():
    c = Cluster()
    assert c.topics.get("__consumer_offsets").configs["cleanup.policy"] == "compact"
    assert c.topics.get("__transaction_state").configs["cleanup.policy"] == "compact"
    assert c.topics.get("__share_group_state").configs["cleanup.policy"] == "delete"
    assert c.topics.get("__consumer_offsets").configs["segment.bytes"] == "104857600"


def test_a_share_fetch_over_a_compacted_log_skips_the_gaps():
    c = Cluster(seed=3, share_auto_offset_reset="earliest")
    log = compacted(c, "t")
    tid = c.topics.get("t").topic_id
    p = Producer(c, None, client_id="p")
    for i in range(30):
        p.send("t", b"k%d" % (i % 2), b"v%d" % i, partition=0)
    assert cleaner.run(c)
    held = [e.offset for e in log.entries]
    assert held != list(range(30))
    G = "sg"
    hb = c.call("ShareGroupHeartbeat", 1, {"GroupId": G, "MemberId": "m1", "MemberEpoch": 0, "RackId": None,
                                           "SubscribedTopicNames": ["t"]})
    assert hb["ErrorCode"] == 0
    resp = c.call("ShareFetch", 1, {
        "GroupId": G, "MemberId": "m1", "ShareSessionEpoch": 0, "MaxWaitMs": 0, "MinBytes": 1,
        "MaxBytes": 1 << 20, "MaxRecords": 500, "BatchSize": 500,
        "Topics": [{"TopicId": tid, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": []}]}],
        "ForgottenTopicsData": []})
    got = []
    for r in resp["Responses"][0]["Partitions"][0]["AcquiredRecords"]:
        got += range(r["FirstOffset"], r["LastOffset"] + 1)
    assert got == held                               # only offsets that hold a record are acquired
    part = c.shares.partitions[(G, tid, 0)]
    assert all(part.records[o].state == "ARCHIVED" for o in range(30) if o not in held and o in part.records)
    assert c.internal_errors == []


def test_consumer_offsets_stays_bounded_over_a_commit_loop():
    """benchmarks/compaction.py runs the same loop for 100,000 commits with 1 MiB segments."""
    c = Cluster(brokers=1, seed=1, log_cleaner_backoff_ms=15000)
    c.create_topic("orders", 1)
    seg = 16384
    c.topics.get("__consumer_offsets").configs["internal.segment.bytes"] = str(seg)
    c.start_log_cleaner()
    log = c.topics.partition(*c.coordinator_partition(0, "g1"))
    peak = 0
    n = 3000
    for i in range(n):
        body = {"GroupId": "g1", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
                "Topics": [{"Name": "orders", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": i,
                                                              "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}]}]}
        assert c.call("OffsetCommit", 9, body)["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
        c.advance(100)
        peak = max(peak, log.held_bytes)
    per_commit = log.batch_numbers(len(log.batches) - 1)[6]
    assert n * per_commit > 10 * seg                      # without the cleaner: 20+ segments
    # with it: the active segment, what one log.cleaner.backoff.ms (150 commits) adds, the cleaned rest
    assert peak <= 2 * seg + (15000 // 100 + 4) * per_commit
    # the committed offset survives cleaning (the coordinator's view and a fresh read of the log)
    resp = c.call("OffsetFetch", 8, {"Groups": [{"GroupId": "g1", "Topics": [{"Name": "orders",
                                                                              "PartitionIndexes": [0]}]}],
                                     "RequireStable": False})
    assert resp["Groups"][0]["Topics"][0]["Partitions"][0]["CommittedOffset"] == n - 1
    assert any(isinstance(e, LogCleaned) and e.topic == "__consumer_offsets" for e in c.events)
    assert c.internal_errors == []


def test_the_picture_of_a_pass_shows_the_log_before_and_after_from_the_events():
    import xml.etree.ElementTree as ET

    from kipviz.draw import compaction_picture
    c = Cluster(brokers=1, seed=3)
    log = compacted(c)
    p = Producer(c, None, client_id="p")
    tp = Producer(c, "tx", client_id="tx")
    tp.init_transactions()
    for i in range(20):
        p.send("c", b"k%d" % (i % 3), None if i == 10 else b"v%d" % i, partition=0)
    tp.begin_transaction()
    tp.send("c", b"k1", b"gone", partition=0)
    tp.abort_transaction()
    for i in range(20):
        p.send("c", b"k%d" % (i % 3), b"w%d" % i, partition=0)
    appended = [e.offset for e in log.entries]
    cleaner.run(c)
    for i in range(30):
        p.send("c", b"k%d" % (i % 2), b"x%d" % i, partition=0)
    c.advance(1)
    assert len(cleaner.run(c)) == 1
    first = compaction_picture(c.events, "c", 0, pass_index=0)
    assert [o for o, kind, _k, _v in first.before if kind != "gap"] == appended
    last = compaction_picture(c.events, "c", 0)
    held = [e.offset for e in log.entries]
    assert [o for o, kind, _k, _v in last.after if kind != "gap"] == held        # what the log holds now
    assert {kind for _o, kind, _k, _v in first.before} >= {"data", "tombstone", "ABORT"}
    svg = last.svg()
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "before" in texts and "after" in texts and any(t and t.startswith("dirty from") for t in texts)


def test_a_producers_last_batch_stays_as_an_empty_batch_and_max_compaction_lag_forces_a_pass():
    c = Cluster(brokers=1, seed=3)
    log = compacted(c, **{"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "1000"})
    old = Producer(c, None, client_id="old")
    for i in range(5):
        old.send("c", b"a", b"old%d" % i, partition=0)
    old_pid = log.batch_numbers(0)[2]
    new = Producer(c, None, client_id="new")
    for i in range(40):
        new.send("c", b"a", b"new%d" % i, partition=0)
    c.advance(1)
    # first pass: nothing cleaned before, so the ratio is 1.0 > 0.99
    assert cleaner.run(c)
    kept_old = [i for i in range(len(log.batches)) if log.batch_numbers(i)[2] == old_pid]
    assert len(kept_old) == 1                                     # RETAIN_EMPTY: its last batch
    raw = log.batches[kept_old[0]]
    assert int.from_bytes(raw[57:61], "big") == 0 and log.batch_numbers(kept_old[0])[0] == 4
    assert not log.holds(4) and 4 not in [o for o, _k, _v in read_all(c)]
    for i in range(12):
        new.send("c", b"a", b"more%d" % i, partition=0)
    assert cleaner.cleanable(c, c.topics.get("c"), log) is None          # below 0.99 ...
    c.advance(1500)
    assert cleaner.run(c)                                                # ... but older than max.compaction.lag.ms
    assert c.internal_errors == []


def test_a_pass_event_goes_through_the_sample_rows_pictures_and_live_view():
    from kipviz.broker.event_buffer import size_of
    from kipviz.draw import sequence_diagram
    from kipviz.sampledata import rows
    from kipviz.serve import live
    c = Cluster(brokers=1, seed=3)
    log = compacted(c)
    p = Producer(c, None, client_id="p")
    for i in range(30):
        p.send("c", b"k%d" % (i % 3), b"v%d" % i, partition=0)
    (e,) = cleaner.run(c)
    assert e.kept and size_of(e) > 0
    assert isinstance(sequence_diagram(c.events), str)
    cols = rows.event_columns(c.events)
    assert cols["kind"][-1] == "LogCleaned" and '"records_removed":' in rows.event_detail(e)
    _batches, topic_rows = rows.log_rows("c", log)          # a compacted log's records keep their offsets
    assert topic_rows.column("offset").to_pylist() == [x.offset for x in log.entries]
    assert "log cleaner: c-0" in live._row(e)


def test_list_offsets_by_time_and_max_timestamp_name_records_that_are_still_there():
    c = Cluster(brokers=1, seed=3)
    log = compacted(c)
    p = Producer(c, None, client_id="p")
    for i in range(0, 60, 5):               # batches of 5 records: cleaning leaves gaps inside them
        p.send_batch("c", 0, [(b"k%d" % ((i + j) % 7), b"v%d" % (i + j)) for j in range(5)])
        c.advance(10)
    assert cleaner.run(c)
    assert any(log.batch_numbers(i)[4] & 16 for i in range(len(log.batches)))       # GAPS inside a batch
    held = [(e.timestamp, e.offset) for e in log.entries]
    for ts in range(0, 320, 10):
        assert log.first_record_at_or_after(ts) == next(((t, o) for t, o in held if t >= ts), None)
    top = max(t for t, _o in held)
    assert log.max_timestamp_record() == next((t, o) for t, o in held if t == top)


def test_compact_and_delete_together_clean_then_delete_old_segments():
    from kipviz.broker import retention
    c = Cluster(brokers=1, seed=3)
    log = compacted(c, **{"cleanup.policy": "compact,delete", "retention.bytes": "600"})
    p = Producer(c, None, client_id="p")
    for i in range(60):
        p.send("c", b"k%d" % (i % 9), b"v%d" % i, partition=0)
    assert cleaner.run(c)
    retention.enforce(c)
    assert log.log_start_offset > 0 and log.held_bytes < 600 + 400
    got = read_all(c)
    assert [o for o, _k, _v in got] == [e.offset for e in log.entries] and got[0][0] >= log.log_start_offset
    for i in range(60):
        p.send("c", b"k%d" % (i % 9), b"w%d" % i, partition=0)
    c.advance(1)
    cleaner.run(c)
    retention.enforce(c)
    assert latest(read_all(c))                            # still readable after both
    assert c.internal_errors == []
