"""The consumer model (kipviz.clients.consumer) against the Cluster, everything in real frames.

Checks the KIP-848 and classic membership flows, version negotiation, positions from committed
offsets (UNSTABLE_OFFSET_COMMIT while a transaction holds them), read_committed filtering of aborted
and open transactions, commits with the member epoch / generation, fencing and rejoining, leaving,
and the group metadata handed to the transactional producer."""
from __future__ import annotations

import pytest

from kipviz import codec
from kipviz.broker import Cluster
from kipviz.clients import (
    Consumer,
    ConsumerCommitFailedError,
    ConsumerError,
    Producer,
)
from kipviz.records.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from kipviz.schema import events as ev


def requests(cluster, api=None, client=None):
    return [e for e in cluster.events if e.kind == "RequestReceived" and (api is None or e.api == api)
            and (client is None or e.client == client)]


def did(cluster, kind, client=None):
    return [e for e in cluster.events if isinstance(e, kind) and (client is None or e.client == client)]


def all_responses_decode(cluster):
    for e in cluster.events:
        if e.kind == "ResponseSent" and e.frame:
            codec.decode_response(e.frame, e.api, e.version)


def load(cluster, topic, values, partition=None):
    p = Producer(cluster, None, client_id="loader")
    for i, v in enumerate(values):
        p.send(topic, b"k%d" % i, v, partition=partition if partition is not None else i % 2)


@pytest.fixture
def cluster():
    c = Cluster(seed=3)
    c.create_topic("in", 2)
    c.create_topic("out", 2)
    yield c
    all_responses_decode(c)
    assert c.internal_errors == []


# ---- the classic protocol's bytes -------------------------------------------------------------------
def test_consumer_protocol_subscription_and_assignment_round_trip():
    sub = encode_subscription(["b", "a"])
    assert sub[:2] == b"\x00\x00" and decode_subscription(sub) == ["a", "b"]
    asg = encode_assignment({"t": [2, 0], "u": [1]})
    assert decode_assignment(asg) == {("t", 0), ("t", 2), ("u", 1)}
    assert decode_assignment(b"") == set()


def test_range_assignor_gives_contiguous_ranges_by_member_id():
    plan = range_assign({"m2": ["t"], "m1": ["t", "u"]}, {"t": 5, "u": 2})
    assert plan == {"m1": {"t": [0, 1, 2], "u": [0, 1]}, "m2": {"t": [3, 4]}}


# ---- KIP-848 ------------------------------------------------------------------------------------------
def test_kip848_join_acknowledge_offsets_and_fetch(cluster):
    load(cluster, "in", [b"a", b"b", b"c", b"d"])
    c = Consumer(cluster, "g", client_id="c1")
    c.subscribe(["in"])
    recs = c.poll()
    assert sorted(r.value for r in recs) == [b"a", b"b", b"c", b"d"]
    assert c.member_epoch == 1 and len(c.member_id) == 22       # the client picks the member id (v1)
    assert c.assignment() == {("in", 0), ("in", 1)} and c.positions() == {("in", 0): 2, ("in", 1): 2}
    hb = requests(cluster, "ConsumerGroupHeartbeat", "c1")
    assert [e.version for e in hb] == [1, 1]
    assert hb[0].body["MemberEpoch"] == 0 and hb[0].body["TopicPartitions"] == []
    assert hb[0].body["RebalanceTimeoutMs"] == 300000 and hb[0].body["SubscribedTopicNames"] == ["in"]
    # the acknowledgement: epoch 1, the owned partitions by topic id, nothing else re-sent
    assert hb[1].body["MemberEpoch"] == 1 and hb[1].body["SubscribedTopicNames"] is None
    assert hb[1].body["TopicPartitions"] == [{"TopicId": cluster.topics.get("in").topic_id, "Partitions": [0, 1]}]
    fetch = requests(cluster, "OffsetFetch", "c1")[0]
    assert fetch.version == 10 and fetch.body["RequireStable"] is True
    assert fetch.body["Groups"][0]["MemberEpoch"] == 1 and fetch.body["Groups"][0]["MemberId"] == c.member_id
    f = requests(cluster, "Fetch", "c1")[0]
    assert f.version == 18 and f.body["IsolationLevel"] == 1 and f.body["SessionEpoch"] == -1
    assert [a.source for a in did(cluster, ev.PositionSet, "c1")] == ["auto.offset.reset=earliest"] * 2
    assert c.poll() == []          # nothing new; no heartbeat before the interval
    assert len(requests(cluster, "ConsumerGroupHeartbeat", "c1")) == 2
    cluster.advance(5000)
    c.poll()
    assert len(requests(cluster, "ConsumerGroupHeartbeat", "c1")) == 3
    assert requests(cluster, "ConsumerGroupHeartbeat", "c1")[-1].body["TopicPartitions"] is None


def test_commit_uses_the_member_epoch_and_positions_resume_from_it(cluster):
    load(cluster, "in", [b"a", b"b", b"c", b"d"])
    c = Consumer(cluster, "g", client_id="c1")
    c.subscribe(["in"])
    c.poll(max_records=3)
    assert sum(c.positions().values()) == 3
    done = c.commit()
    assert done == c.positions()
    oc = requests(cluster, "OffsetCommit", "c1")[-1]
    assert oc.version == 10 and oc.body["GenerationIdOrMemberEpoch"] == c.member_epoch
    assert c.committed() == done
    c.close()
    assert cluster.groups.groups["g"].members == {}
    assert requests(cluster, "ConsumerGroupHeartbeat", "c1")[-1].body["MemberEpoch"] == -1
    c2 = Consumer(cluster, "g", client_id="c2")
    c2.subscribe(["in"])
    assert [r.value for r in c2.poll()] == [b"d"]                    # the rest, from the committed offsets
    assert all(a.source == "committed" for a in did(cluster, ev.PositionSet, "c2"))


def test_two_kip848_members_revoke_before_the_partitions_move(cluster):
    cluster.create_topic("big", 4)
    a, b = Consumer(cluster, "g", client_id="a"), Consumer(cluster, "g", client_id="b")
    a.subscribe(["big"])
    b.subscribe(["big"])
    a.poll()
    b.poll()
    assert len(a.assignment()) == 4 and b.assignment() == set() and b.member_epoch == 2
    cluster.advance(5000)
    a.poll()
    assert len(a.assignment()) == 2 and a.member_epoch == 2
    assert did(cluster, ev.PartitionsRevoked, "a")[0].partitions == (("big", 2), ("big", 3))
    b.poll()
    assert b.assignment() == {("big", 2), ("big", 3)}
    assert cluster.groups.groups["g"].state == "Stable"


def test_a_member_fenced_by_the_session_timeout_rejoins_and_commit_fails_until_then(cluster):
    load(cluster, "in", [b"a", b"b"])
    c = Consumer(cluster, "g", client_id="c1")
    c.subscribe(["in"])
    c.poll()
    mid = c.member_id
    cluster.advance(46000)                        # group.consumer.session.timeout.ms 45000
    with pytest.raises(ConsumerCommitFailedError) as e:
        c.commit()
    assert e.value.error == "UNKNOWN_MEMBER_ID"
    c.poll()
    assert [a.error for a in did(cluster, ev.Fenced, "c1")] == ["UNKNOWN_MEMBER_ID"]
    assert c.member_id == mid and c.member_epoch > 0 and c.assignment() == {("in", 0), ("in", 1)}
    assert c.commit() == {("in", 0): 1, ("in", 1): 1}


def test_a_heartbeat_with_the_previous_epoch_and_a_subset_of_partitions_is_accepted(cluster):
    """KIP-848: a member whose answer was lost may come back with its previous epoch as long as it
    owns no partition outside its current assignment."""
    cluster.create_topic("big", 4)
    a, b = Consumer(cluster, "g", client_id="a"), Consumer(cluster, "g", client_id="b")
    a.subscribe(["big"])
    a.poll()
    b.subscribe(["big"])
    b.poll()
    cluster.advance(5000)
    a.poll()                                      # epoch 1 -> 2 after revoking
    a.member_epoch = 1                            # as if that answer had been lost
    a.membership.sent_owned = None
    cluster.advance(5000)
    a.poll()                                      # epoch 1 with the *current* (smaller) owned set: accepted
    assert a.member_epoch == 2 and not did(cluster, ev.Fenced, "a")


def test_read_committed_skips_aborted_and_stops_at_open_transactions(cluster):
    load(cluster, "in", [b"plain"], partition=0)
    p = Producer(cluster, "tx", client_id="p")
    p.init_transactions()
    p.begin_transaction()
    p.send("in", None, b"aborted", partition=0)
    p.abort_transaction()
    p.begin_transaction()
    p.send("in", None, b"committed", partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.send("in", None, b"open", partition=0)
    rc = Consumer(cluster, None, client_id="rc")
    rc.assign([("in", 0)])
    assert [r.value for r in rc.poll()] == [b"plain", b"committed"]
    lso = cluster.topics.partition("in", 0).last_stable_offset
    assert rc.position(("in", 0)) == lso              # past the markers, up to the open transaction
    assert any(a.producer_id == p.producer_id for a in did(cluster, ev.AbortedSkipped, "rc"))
    ru = Consumer(cluster, None, client_id="ru", isolation="read_uncommitted")
    ru.assign([("in", 0)])
    assert [r.value for r in ru.poll()] == [b"plain", b"aborted", b"committed", b"open"]
    p.commit_transaction()
    assert [r.value for r in rc.poll()] == [b"open"]
    assert rc.position(("in", 0)) == cluster.topics.partition("in", 0).log_end_offset


def test_unstable_offsets_hold_the_partition_until_the_transaction_ends(cluster):
    load(cluster, "in", [b"a", b"b", b"c", b"d"])
    c = Consumer(cluster, "g", client_id="c1")
    c.subscribe(["in"])
    c.poll()
    p = Producer(cluster, "tx", client_id="p")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 1, ("in", 1): 1}, c.group_metadata())
    with pytest.raises(ConsumerError) as e:
        c.committed()
    assert e.value.error == "UNSTABLE_OFFSET_COMMIT" and set(e.value.partitions) == {("in", 0), ("in", 1)}
    assert c.committed(require_stable=False) == {("in", 0): None, ("in", 1): None}
    c.seek_to_committed()
    assert c.positions() == {} and c.poll() == []
    assert len(did(cluster, ev.OffsetUnstable, "c1")) >= 4
    p.commit_transaction()
    assert sorted(r.value for r in c.poll()) == [b"c", b"d"]


def test_group_metadata_is_what_the_producer_sends(cluster):
    load(cluster, "in", [b"a"])
    c = Consumer(cluster, "g", client_id="c1", group_instance_id="i-1")
    assert c.group_metadata() == {"group_id": "g", "generation_id": -1, "member_id": "",
                                  "group_instance_id": "i-1", "member_epoch": -1}
    c.subscribe(["in"])
    c.poll()
    gm = c.group_metadata()
    assert gm["generation_id"] == gm["member_epoch"] == c.member_epoch and gm["member_id"] == c.member_id
    p = Producer(cluster, "tx", client_id="p")
    p.init_transactions()
    p.begin_transaction()
    p.send_offsets_to_transaction({("in", 0): 1}, gm)
    p.commit_transaction()
    body = requests(cluster, "TxnOffsetCommit", "p")[-1].body
    assert (body["MemberId"], body["GenerationIdOrMemberEpoch"], body["GroupInstanceId"]) == (c.member_id, 1, "i-1")
    assert c.committed() == {("in", 0): 1, ("in", 1): None}
    c.close()
    assert requests(cluster, "ConsumerGroupHeartbeat", "c1")[-1].body["MemberEpoch"] == -2   # static leave


# ---- versions -----------------------------------------------------------------------------------------
def test_versions_follow_what_the_broker_serves():
    c = Cluster(seed=1, api_versions={"Fetch": (4, 12), "OffsetFetch": (1, 7), "ConsumerGroupHeartbeat": (0, 0),
                                      "ListOffsets": (1, 5)})
    c.create_topic("in", 2)
    load(c, "in", [b"a", b"b"])
    con = Consumer(c, "g", client_id="c1")
    con.subscribe(["in"])
    assert sorted(r.value for r in con.poll()) == [b"a", b"b"]
    assert requests(c, "ConsumerGroupHeartbeat")[0].body["MemberId"] == ""       # v0: the coordinator picks it
    assert con.member_id and con.member_epoch == 1
    assert {e.version for e in requests(c, "Fetch", "c1")} == {12}
    assert requests(c, "Fetch", "c1")[0].body["Topics"][0]["Topic"] == "in"       # by name before v13
    assert {e.version for e in requests(c, "OffsetFetch", "c1")} == {7}
    assert {e.version for e in requests(c, "ListOffsets", "c1")} == {5}
    versions = {a.api: a.version for a in did(c, (ev.VersionChosen, ev.VersionFallback), "c1")}
    assert versions["Fetch"] == 12 and versions["ConsumerGroupHeartbeat"] == 0
    assert c.internal_errors == []


def test_a_kip848_member_cannot_commit_below_offset_commit_v9():
    c = Cluster(seed=1, api_versions={"OffsetCommit": (2, 8)})
    c.create_topic("in", 1)
    con = Consumer(c, "g", client_id="c1")
    con.subscribe(["in"])
    con.poll()
    with pytest.raises(ConsumerError) as e:
        con.commit({("in", 0): 0})
    assert e.value.error == "UNSUPPORTED_VERSION" and e.value.api == "OffsetCommit"


def test_client_versions_cap_what_the_consumer_sends(cluster):
    load(cluster, "in", [b"a"])
    con = Consumer(cluster, "g", client_id="c1", client_versions={"OffsetCommit": 9, "Fetch": 11})
    con.subscribe(["in"])
    con.poll()
    con.commit()
    assert requests(cluster, "OffsetCommit", "c1")[-1].version == 9
    assert requests(cluster, "OffsetCommit", "c1")[-1].body["Topics"][0]["Name"] == "in"
    assert requests(cluster, "Fetch", "c1")[-1].version == 11


# ---- classic --------------------------------------------------------------------------------------------
def test_classic_members_join_sync_and_move_through_generations(cluster):
    cluster.create_topic("big", 4)
    a = Consumer(cluster, "cg", client_id="a", protocol="classic")
    b = Consumer(cluster, "cg", client_id="b", protocol="classic")
    a.subscribe(["big"])
    a.poll()
    assert a.generation == 1 and len(a.assignment()) == 4 and a.state == "STABLE"
    b.subscribe(["big"])
    b.poll()
    assert b.held_requests == ["JoinGroup"] and b.assignment() == set()
    b.poll()                                      # still held: nothing is sent again
    assert len(requests(cluster, "JoinGroup", "b")) == 2
    cluster.advance(3000)
    a.poll()
    assert a.generation == 2 and a.assignment() == {("big", 0), ("big", 1)}
    b.poll()
    assert b.generation == 2 and b.assignment() == {("big", 2), ("big", 3)} and b.held_requests == []
    assert a.group_metadata()["generation_id"] == 2 and "member_epoch" not in a.group_metadata()
    assert a.commit({("big", 0): 0}) == {("big", 0): 0}
    assert requests(cluster, "OffsetCommit", "a")[-1].body["GenerationIdOrMemberEpoch"] == 2
    b.close()
    assert requests(cluster, "LeaveGroup", "b")[-1].body["Members"][0]["MemberId"] == b.member_id
    cluster.advance(3000)
    a.poll()
    assert a.generation == 3 and len(a.assignment()) == 4


def test_a_held_join_group_answer_is_collected_at_the_next_poll(cluster):
    cluster.create_topic("big", 2)
    a = Consumer(cluster, "cg", client_id="a", protocol="classic")
    b = Consumer(cluster, "cg", client_id="b", protocol="classic")
    a.subscribe(["big"])
    b.subscribe(["big"])
    a.poll()
    b.poll()
    assert b.held_requests == ["JoinGroup"]
    cluster.advance(3000)
    a.poll()                                      # REBALANCE_IN_PROGRESS, rejoin, lead, sync
    assert b.held_requests == ["JoinGroup"]       # answered, but not collected yet
    b.poll()                                      # collects it, then its SyncGroup is answered at once
    assert {a.generation, b.generation} == {2}
    assert a.assignment() | b.assignment() == {("big", 0), ("big", 1)}
    assert not a.assignment() & b.assignment()


def test_classic_session_timeout_resets_the_member(cluster):
    cluster.create_topic("big", 2)
    a = Consumer(cluster, "cg", client_id="a", protocol="classic", session_timeout_ms=10000)
    a.subscribe(["big"])
    a.poll()
    cluster.advance(11000)
    a.poll()
    assert [d.reason for d in did(cluster, ev.GenerationReset, "a")] == ["UNKNOWN_MEMBER_ID"]
    # generation 2 is the empty group after the expiry; the rejoin makes generation 3
    assert a.generation == 3 and a.state == "STABLE" and len(a.assignment()) == 2


# ---- misc -----------------------------------------------------------------------------------------------
def test_fetches_go_to_each_partition_leader_on_a_multi_broker_cluster():
    c = Cluster(brokers=3, seed=5)
    c.create_topic("in", 3)
    load(c, "in", [b"a", b"b", b"c"])
    Producer(c, None, client_id="l2").send("in", None, b"z", partition=2)
    con = Consumer(c, "g", client_id="c1")
    con.subscribe(["in"])
    assert sorted(r.value for r in con.poll()) == [b"a", b"b", b"c", b"z"]
    assert {e.broker for e in requests(c, "Fetch", "c1")} == {0, 1, 2}
    assert {e.broker for e in requests(c, "ConsumerGroupHeartbeat", "c1")} == {c.coordinator_broker(0, "g")}
    assert c.internal_errors == []


def test_manual_assignment_without_a_group_uses_auto_offset_reset(cluster):
    load(cluster, "in", [b"a", b"b", b"c", b"d"])
    latest = Consumer(cluster, None, client_id="l", auto_offset_reset="latest")
    latest.assign([("in", 0)])
    assert latest.poll() == [] and latest.position(("in", 0)) == 2
    strict = Consumer(cluster, None, client_id="s", auto_offset_reset="none")
    strict.assign([("in", 0)])
    with pytest.raises(ConsumerError):
        strict.poll()
    with pytest.raises(ConsumerError):
        strict.commit({("in", 0): 0})
    assert not requests(cluster, "ConsumerGroupHeartbeat")


def test_closed_and_unsubscribed_consumers_refuse_to_poll(cluster):
    c = Consumer(cluster, "g", client_id="c1")
    with pytest.raises(ConsumerError):
        c.poll()
    c.subscribe(["in"])
    c.close()
    with pytest.raises(ConsumerError):
        c.poll()
    with pytest.raises(ValueError):
        Consumer(cluster, "g", protocol="eager")


def test_an_older_release_without_kip848_serves_only_the_classic_protocol():
    c = Cluster(seed=2, release="3.6")
    c.create_topic("in", 1)
    new = Consumer(c, "g", client_id="new")
    new.subscribe(["in"])
    with pytest.raises(ConsumerError) as e:
        new.poll()
    assert e.value.error == "UNSUPPORTED_VERSION" and e.value.api == "ConsumerGroupHeartbeat"
    # ApiVersions v5 (Kafka 4.4) is not served by 3.6: the answer comes in v0 and the client re-sends v3 at once
    assert [v for a, v in [(x.api, x.version) for x in requests(c, client="new")] if a == "ApiVersions"] == [5, 3]
    assert c.now == 0
    old = Consumer(c, "g2", client_id="old", protocol="classic")
    old.subscribe(["in"])
    old.poll()
    assert old.generation == 1 and old.assignment() == {("in", 0)}
    assert requests(c, "OffsetFetch", "old")[0].version == 8 and requests(c, "Fetch", "old")[0].version == 15
    assert c.internal_errors == []
