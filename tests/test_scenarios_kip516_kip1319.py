"""The KIP-516 and KIP-1319 scenarios (kipviz/scenarios/kip516.py, kip1319.py).

Every scenario runs with two seeds, all its checks pass and the model records no internal error.
On top of the scenario's own checks, each test reads the recorded events (the requests and the
response bodies that went over the simulated wire, the __consumer_offsets records) and asserts
the error names where the KIPs put them (their pages: docs/facts.md)."""
from __future__ import annotations

import uuid

import pytest

from kipviz import codec, scenarios
from kipviz.broker import Cluster
from kipviz.broker.groups.model import shape
from kipviz.records import decode_internal
from kipviz.schema import events as ev
from kipviz.schema.error_codes import CODE, name_of
from kipviz.uuids import RESERVED, ZERO_UUID, from_kafka_str

SEEDS = (0, 7)
KIP516 = ["kip516.stale_read", "kip516.stale_state", "kip516.delete_recreate_committed_offsets",
          "kip516.ids_never_reused"]
KIP1319 = ["kip1319.group_id_not_found_v5", "kip1319.group_id_not_found_v6", "kip1319.stale_member_epoch_v5",
           "kip1319.stale_member_epoch_v6", "kip1319.unknown_topic_id_v6", "kip1319.error_order_v6",
           "kip1319.fallback_old_broker", "kip1319.fallback_unknown_topic_id", "kip1319.topic_id_persisted",
           "kip1319.producer_error_classes"]


def run(name: str, seed: int):
    t = scenarios.run(name, seed=seed)
    assert t.cluster.internal_errors == []
    assert t.checks, f"{name} records no checks"
    assert t.passed, "\n".join(f"{c.description}: {c.detail}" for c in t.failures())
    return t


def responses(t, api):
    """[(version, body, [error names])] of every response to `api`, in order."""
    return [(e.version, e.body, [name_of(c) for c in e.error_codes])
            for e in t.events if e.kind == "ResponseSent" and e.api == api]


def requests(t, api):
    return [(e.version, e.body) for e in t.events if e.kind == "RequestReceived" and e.api == api]


def partition_errors(body):
    return {(t.get("Name") or t.get("TopicId"), p["PartitionIndex"]): name_of(p["ErrorCode"])
            for t in body["Topics"] for p in t["Partitions"]}


def offset_records(t):
    return [decode_internal(e.key, e.value, "__consumer_offsets") for e in t.events
            if e.kind == "RecordAppended" and e.topic == "__consumer_offsets" and not e.control]


def all_frames_decode(t):
    for e in t.events:
        if e.kind == "ResponseSent" and e.frame:
            assert codec.decode_response(e.frame, e.api, e.version)["body"] == e.body


# ---- the catalog ------------------------------------------------------------------------------------------
def test_catalog_lists_every_scenario_with_its_kip_and_status():
    rows = {r["name"]: r for r in scenarios.catalog()}
    for name in KIP516:
        assert (rows[name]["kip"], rows[name]["status"]) == ("KIP-516", "released")
    for name in KIP1319:
        assert (rows[name]["kip"], rows[name]["status"]) == ("KIP-1319", "released")
    assert all(rows[n]["title"] and rows[n]["summary"] for n in KIP516 + KIP1319)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", KIP516 + KIP1319)
def test_every_scenario_runs_and_passes(name, seed):
    t = run(name, seed)
    all_frames_decode(t)
    assert t.result


def test_seeds_change_the_topic_ids():
    a, b = (run("kip516.stale_read", s).result for s in SEEDS)
    assert a["old_topic_id"] != b["old_topic_id"]


# ---- KIP-516 -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_stale_read_old_id_is_unknown_topic_id_by_name_reads_new_data(seed):
    t = run("kip516.stale_read", seed)
    fetches = responses(t, "Fetch")
    by_id_errors = [errs for v, _, errs in fetches if v >= 13 and errs]
    assert by_id_errors == [["UNKNOWN_TOPIC_ID"]]
    stale_req = [b for v, b in requests(t, "Fetch") if v >= 13][1]
    assert stale_req["Topics"][0]["TopicId"] == from_kafka_str(t.result["old_topic_id"])
    by_name = [(b, errs) for v, b, errs in fetches if v == 12]
    assert len(by_name) == 1 and by_name[0][1] == []
    assert t.result["fetch_by_name_values"] == ["b3", "b4"]
    md_errors = [errs for _, _, errs in responses(t, "Metadata") if errs]
    assert md_errors == [["UNKNOWN_TOPIC_ID"]]
    assert t.result["old_topic_id"] != t.result["new_topic_id"]


@pytest.mark.parametrize("seed", SEEDS)
def test_stale_state_offset_out_of_range_then_wrong_data_and_only_v10_metadata_tells(seed):
    t = run("kip516.stale_state", seed)
    by_name = [(b, errs) for v, b, errs in responses(t, "Fetch") if v == 12]
    assert [errs for _, errs in by_name] == [[], ["OFFSET_OUT_OF_RANGE"], []]
    assert by_name[1][0]["Responses"][0]["Partitions"][0]["HighWatermark"] == 1
    assert t.result["then_read"] == ["n4"] and t.result["leader_epoch"] == 0
    mds = responses(t, "Metadata")
    v9 = [b["Topics"][0] for v, b, _ in mds if v == 9]
    v12 = [b["Topics"][0] for v, b, _ in mds if v == 12]
    assert len(v9) == 2 and all("TopicId" not in x for x in v9)
    assert v9[0]["Partitions"] == v9[1]["Partitions"]            # nothing to tell them apart
    assert v12[0]["TopicId"] != v12[1]["TopicId"]                # the id does


@pytest.mark.parametrize("seed", SEEDS)
def test_committed_offsets_are_tombstoned_and_a_late_commit_is_refused_by_id_only(seed):
    t = run("kip516.delete_recreate_committed_offsets", seed)
    commits = responses(t, "OffsetCommit")
    assert [(v, errs) for v, _, errs in commits] == [(9, []), (10, ["UNKNOWN_TOPIC_ID"]), (9, [])]
    recs = offset_records(t)
    assert [r["tombstone"] for r in recs] == [False, True, False]
    a, b = from_kafka_str(t.result["topic_id_a"]), from_kafka_str(t.result["topic_id_b"])
    assert recs[0]["value"]["topicId"] == a and recs[2]["value"]["topicId"] == b and a != b
    assert recs[0]["value_version"] == recs[2]["value_version"] == 4
    fetched = [b["Groups"][0]["Topics"][0]["Partitions"][0]["CommittedOffset"]
               for _, b, _ in responses(t, "OffsetFetch")]
    assert fetched == [-1, -1, -1, 43, 43]


@pytest.mark.parametrize("seed", SEEDS)
def test_ids_never_reused(seed):
    t = run("kip516.ids_never_reused", seed)
    created = [b["Topics"][0]["TopicId"] for _, b, _ in responses(t, "CreateTopics")]
    assert len(created) == len(set(created)) == 5 and not RESERVED & set(created)
    assert [errs for _, _, errs in responses(t, "DeleteTopics") if errs] == [["UNKNOWN_TOPIC_ID"]]
    assert [errs for _, _, errs in responses(t, "Produce")] == [["UNKNOWN_TOPIC_ID"]]
    assert [errs for _, _, errs in responses(t, "Metadata")] == [["UNKNOWN_TOPIC_ID"]] * 4 + [[]]


def test_deleting_a_topic_tombstones_committed_and_pending_offsets():
    """The model fix behind delete_recreate_committed_offsets: onPartitionsDeleted (KAFKA-16168)."""
    c = Cluster(seed=3)
    c.create_topic("t", 2)
    c.create_topic("keep", 1)

    def send(api, v, body):
        f = codec.encode_request(api, v, shape(api + "Request", v, body), correlation_id=1)
        return codec.decode_response(c.handle(f), api, v)["body"]
    parts = [{"PartitionIndex": p, "CommittedOffset": 5, "CommittedLeaderEpoch": -1, "CommittedMetadata": ""}
             for p in (0, 1)]
    send("OffsetCommit", 9, {"GroupId": "g", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
                             "Topics": [{"Name": "t", "Partitions": parts}, {"Name": "keep", "Partitions": parts[:1]}]})
    init = send("InitProducerId", 5, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                                      "ProducerEpoch": -1})
    r = send("TxnOffsetCommit", 5, {"TransactionalId": "tx", "GroupId": "g2", "ProducerId": init["ProducerId"],
                                    "ProducerEpoch": init["ProducerEpoch"], "GenerationIdOrMemberEpoch": -1,
                                    "MemberId": "", "GroupInstanceId": None,
                                    "Topics": [{"Name": "t", "Partitions": parts[:1]}]})
    assert partition_errors(r) == {("t", 0): "NONE"}
    before = len(c.events)
    c.delete_topic("t")
    tomb = [decode_internal(e.key, e.value, "__consumer_offsets") for e in c.events[before:]
            if e.kind == "RecordAppended"]
    assert sorted((d["key"]["group"], d["key"]["partition"]) for d in tomb) == [("g", 0), ("g", 1), ("g2", 0)]
    assert all(d["tombstone"] for d in tomb)
    assert c.groups.committed("g", "t", 0) is None and c.groups.committed("g", "keep", 0).offset == 5
    assert not c.groups.has_pending("g2", "t", 0)
    send("EndTxn", 5, {"TransactionalId": "tx", "ProducerId": init["ProducerId"],
                       "ProducerEpoch": init["ProducerEpoch"], "Committed": True})
    assert c.groups.committed("g2", "t", 0) is None           # the dropped pending offset stays dropped
    assert c.internal_errors == []


# ---- KIP-1319 -------------------------------------------------------------------------------------------
def txn_answers(t):
    return [(v, sorted(set(errs)) or ["NONE"]) for v, _, errs in responses(t, "TxnOffsetCommit")]


def all_error_names(t):
    return {n for e in t.events if e.kind == "ResponseSent" for n in map(name_of, e.error_codes)}


@pytest.mark.parametrize("seed", SEEDS)
def test_group_id_not_found_is_illegal_generation_at_v5(seed):
    t = run("kip1319.group_id_not_found_v5", seed)
    assert txn_answers(t) == [(5, ["ILLEGAL_GENERATION"])]
    assert "GROUP_ID_NOT_FOUND" not in all_error_names(t)
    assert [b["Topics"][0]["Name"] for _, b in requests(t, "TxnOffsetCommit")] == ["in"]


@pytest.mark.parametrize("seed", SEEDS)
def test_group_id_not_found_is_returned_as_is_at_v6(seed):
    t = run("kip1319.group_id_not_found_v6", seed)
    assert txn_answers(t) == [(6, ["GROUP_ID_NOT_FOUND"])]
    assert "ILLEGAL_GENERATION" not in all_error_names(t)
    (_, body), = requests(t, "TxnOffsetCommit")
    assert body["GenerationIdOrMemberEpoch"] == 3 and isinstance(body["Topics"][0]["TopicId"], uuid.UUID)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("version, error", [(5, "ILLEGAL_GENERATION"), (6, "STALE_MEMBER_EPOCH")])
def test_stale_member_epoch(seed, version, error):
    t = run(f"kip1319.stale_member_epoch_v{version}", seed)
    assert txn_answers(t) == [(version, [error]), (version, ["NONE"])]
    other = {"ILLEGAL_GENERATION", "STALE_MEMBER_EPOCH"} - {error}
    assert not other & all_error_names(t)
    epochs = [b["GenerationIdOrMemberEpoch"] for _, b in requests(t, "TxnOffsetCommit")]
    assert epochs == [t.result["stale_epoch"], t.result["current_epoch"]] and epochs[0] < epochs[1]
    assert any(e.kind == "StateChanged" and e.machine == "consumer-member" for e in t.events)


@pytest.mark.parametrize("seed", SEEDS)
def test_unknown_topic_id_for_the_whole_topic(seed):
    t = run("kip1319.unknown_topic_id_v6", seed)
    (v6_old, v5, v6_new) = responses(t, "TxnOffsetCommit")
    assert v6_old[0] == 6 and set(partition_errors(v6_old[1]).values()) == {"UNKNOWN_TOPIC_ID"}
    assert len(partition_errors(v6_old[1])) == 2
    assert (v5[0], v5[2]) == (5, []) and (v6_new[0], v6_new[2]) == (6, [])


@pytest.mark.parametrize("seed", SEEDS)
def test_error_order_unknown_id_then_acl_then_partition(seed):
    t = run("kip1319.error_order_v6", seed)
    (v6, b6, _), (v5, b5, _) = responses(t, "TxnOffsetCommit")
    assert (v6, v5) == (6, 5)
    got = [sorted(set(p["ErrorCode"] for p in tp["Partitions"])) for tp in b6["Topics"]]
    assert got == [[CODE["UNKNOWN_TOPIC_ID"]], [CODE["TOPIC_AUTHORIZATION_FAILED"]],
                   [0, CODE["UNKNOWN_TOPIC_OR_PARTITION"]]]
    orders = {p["PartitionIndex"]: name_of(p["ErrorCode"]) for p in b6["Topics"][2]["Partitions"]}
    assert orders == {0: "NONE", 7: "UNKNOWN_TOPIC_OR_PARTITION"}
    secret = {p["PartitionIndex"]: name_of(p["ErrorCode"]) for p in b6["Topics"][1]["Partitions"]}
    assert secret == {0: "TOPIC_AUTHORIZATION_FAILED", 9: "TOPIC_AUTHORIZATION_FAILED"}
    assert partition_errors(b5) == {("ghost", 0): "UNKNOWN_TOPIC_OR_PARTITION",
                                    ("hidden", 0): "TOPIC_AUTHORIZATION_FAILED",
                                    ("secret", 0): "TOPIC_AUTHORIZATION_FAILED",
                                    ("orders", 0): "NONE", ("orders", 7): "UNKNOWN_TOPIC_OR_PARTITION"}


@pytest.mark.parametrize("seed", SEEDS)
def test_fallback_to_v5_against_a_kafka_4_3_broker(seed):
    t = run("kip1319.fallback_old_broker", seed)
    assert t.cluster.config.release == "4.3"        # a 4.4 client in a fleet still on 4.3
    sent = requests(t, "TxnOffsetCommit")
    assert [v for v, _ in sent] == [5]
    assert sorted(tp["Name"] for tp in sent[0][1]["Topics"]) == ["clicks", "in"]
    assert txn_answers(t) == [(5, ["NONE"])]
    assert t.result["broker_max"] == 5


@pytest.mark.parametrize("seed", SEEDS)
def test_fallback_to_v5_when_no_topic_id_is_known(seed):
    t = run("kip1319.fallback_unknown_topic_id", seed)
    assert [v for v, _ in requests(t, "TxnOffsetCommit")] == [5]
    assert {v for v, _, _ in responses(t, "Metadata")} == {9}
    assert t.result["broker_max"] == 6 and t.result["fallback"]["topics"] == ["clicks", "in"]
    assert txn_answers(t) == [(5, ["NONE"])]


@pytest.mark.parametrize("seed", SEEDS)
def test_v6_persists_the_topic_id_v5_the_zero_id(seed):
    t = run("kip1319.topic_id_persisted", seed)
    tid = t.cluster.topics.get("in").topic_id
    recs = [r for r in offset_records(t) if r["record"] == "OffsetCommit"]
    by_partition = {r["key"]["partition"]: r for r in recs}
    assert by_partition[0]["value"]["topicId"] == tid and by_partition[0]["value"]["offset"] == 106
    assert by_partition[1]["value"]["topicId"] == ZERO_UUID and by_partition[1]["value"]["offset"] == 105
    assert {r["value_version"] for r in recs} == {4}
    assert sorted(v for v, _ in requests(t, "TxnOffsetCommit")) == [5, 6]


@pytest.mark.parametrize("seed", SEEDS)
def test_producer_error_classes(seed):
    t = run("kip1319.producer_error_classes", seed)
    assert txn_answers(t) == [(6, ["GROUP_ID_NOT_FOUND"]), (6, ["STALE_MEMBER_EPOCH"]), (6, ["UNKNOWN_TOPIC_ID"]),
                              (6, ["NONE"])]
    errors = [e for e in t.events if isinstance(e, ev.ClientError)]
    assert [(d.error, d.error_class) for d in errors] == [("GROUP_ID_NOT_FOUND", "CommitFailedError"),
                                                          ("STALE_MEMBER_EPOCH", "CommitFailedError")]
    retries = [e.error for e in t.events if isinstance(e, ev.Retried)]
    assert retries == ["UNKNOWN_TOPIC_ID"]
    ids = [b["Topics"][0]["TopicId"] for _, b in requests(t, "TxnOffsetCommit")][-2:]
    assert ids[0] != ids[1] and ids[1] == t.cluster.topics.get("in").topic_id
    ends = [b["Committed"] for _, b in requests(t, "EndTxn")]
    assert ends == [False, False, True]                   # two aborts, then the commit
