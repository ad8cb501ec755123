"""The coordinators' states rebuilt from a capture (kipviz.explain.states / coordinators): each
observation fires the row of the broker model's own table; the bundled mistakes show the fencing
and the expelled member; a share group's acquisitions, acknowledgements and a lock expiry; a step
the table does not allow is listed, never forced; --gif writes the animation."""
from __future__ import annotations

import subprocess
import sys
import uuid

from kipviz.explain import bundled, explain
from kipviz.explain.coordinators import States
from kipviz.explain.states import DELIVERY_LIMIT

TOPIC = uuid.UUID(int=7)


def _ex(t, api, version, req, resp, *, client="10.0.0.1:5000", took=0.001):
    return {"time": t, "response_time": t + took, "client": client, "server": "10.0.0.9:9092", "connection": 0,
            "correlation_id": int(t * 1000), "api": api, "version": version,
            "request": {"api": api, "version": version, "header": {"ClientId": "app"}, "body": req},
            "response": {"body": resp}}


def _metadata(t):
    return _ex(t, "Metadata", 12, {"Topics": None},
               {"Topics": [{"Name": "jobs", "TopicId": TOPIC, "ErrorCode": 0, "Partitions": [{"PartitionIndex": 0}]}]})


def _share_fetch(t, acquired=(), acks=(), member="m1"):
    part = {"PartitionIndex": 0, "AcknowledgementBatches": [
        {"FirstOffset": a, "LastOffset": b, "AcknowledgeTypes": [k]} for a, b, k in acks]}
    return _ex(t, "ShareFetch", 1, {"GroupId": "sg", "MemberId": member, "Topics": [{"TopicId": TOPIC, "Partitions": [part]}]},
               {"ErrorCode": 0, "Responses": [{"TopicId": TOPIC, "Partitions": [
                   {"PartitionIndex": 0, "ErrorCode": 0, "AcknowledgeErrorCode": 0,
                    "AcquiredRecords": [{"FirstOffset": a, "LastOffset": b, "DeliveryCount": n} for a, b, n in acquired]}]}]})


def test_a_share_groups_records_follow_the_share_record_table():
    s = States([_metadata(0.0),
                _share_fetch(1.0, acquired=[(0, 2, 1)]),
                _share_fetch(2.0, acks=[(0, 0, 1), (1, 1, 2), (2, 2, 3)], acquired=[(1, 1, 2)]),
                _share_fetch(40.0, acquired=[(1, 1, 3)], member="m2")])     # m1 never acked offset 1 again
    assert s.path("share-record", "sg/jobs-0@0") == ["AVAILABLE", "ACQUIRED", "ACKNOWLEDGED"]
    assert s.path("share-record", "sg/jobs-0@2") == ["AVAILABLE", "ACQUIRED", "ARCHIVED"]
    assert s.path("share-record", "sg/jobs-0@1") == ["AVAILABLE", "ACQUIRED", "AVAILABLE", "ACQUIRED",
                                                      "AVAILABLE", "ACQUIRED"]
    assert [e.cause for e in s.changes("share-record") if e.key.endswith("@1")][-2:] == ["lock-expired", "acquire"]
    strip = s.strip()
    cells = {c["offset"]: c for c in strip.frames[-1]["lanes"][0]["cells"]}
    assert cells[0]["state"] == "ACKNOWLEDGED" and cells[1]["state"] == "ACQUIRED" and cells[1]["owner"] == "m2"
    assert "share partition sg/jobs-0: 3 offsets delivered" in str(s)


def test_a_release_at_the_delivery_limit_archives():
    s = States([_metadata(0.0), _share_fetch(1.0, acquired=[(0, 0, DELIVERY_LIMIT)]),
                _share_fetch(2.0, acks=[(0, 0, 2)])])
    assert s.changes("share-record")[-1].cause == "release-at-limit"
    assert s.path("share-record", "sg/jobs-0@0")[-1] == "ARCHIVED"


def test_a_capture_that_starts_mid_transaction_is_listed_not_forced():
    s = States([_ex(1.0, "EndTxn", 3, {"TransactionalId": "t1", "ProducerId": 5, "ProducerEpoch": 0,
                                       "Committed": True}, {"ErrorCode": 0})])
    assert s.changes() == [] and len(s.unexplained) == 1
    assert "transaction t1 is Empty" in s.unexplained[0] and "end-txn-commit" in s.unexplained[0]
    assert "not explained" in str(s)


def test_the_zombie_is_fenced_in_the_transaction_table():
    s = explain(bundled("zombie_producer")).states
    path = s.path("transaction", "orders-writer")
    assert path[:6] == ["Empty", "Empty", "Ongoing", "PrepareEpochFence", "PrepareAbort", "CompleteAbort"], path
    (_, e0), (_, e1) = s.transactions["orders-writer"].producers
    assert e1 > e0
    fence = next(f for f in s.animation("transaction").frames if f.state == "PrepareEpochFence")
    assert "request: InitProducerId" in fence.caption and "writer-new" in fence.caption


def test_the_expelled_member_is_not_in_the_next_generation():
    s = explain(bundled("late_commit")).states
    g1, g2 = s.generations["billing"][:2]
    (a,), (b,) = g1.members, g2.members
    assert a.startswith("billing-a") and b.startswith("billing-b")
    assert g1.assignments[a] == g2.assignments[b] == [("invoices", 0), ("invoices", 1)]
    assert f"no longer a member: {a}" in str(s)


def test_gif_writes_the_animation_and_a_capture_without_states_is_one_line(tmp_path):
    run = [sys.executable, "-m", "kipviz.cli", "explain"]
    out = subprocess.run(run + [str(bundled("zombie_producer")), "--gif", str(tmp_path / "t.gif")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "t.gif").read_bytes()[:6] == b"GIF89a" and "the transaction animation" in out.stderr


def test_a_range_of_2_63_offsets_is_listed_not_followed():
    s = States([_metadata(0.0), _share_fetch(1.0, acquired=[(0, 2**63 - 1, 1)])])
    assert s.changes("share-record") == [] and "not followed" in s.unexplained[0]


def test_gif_of_a_capture_without_states_is_one_line_and_exit_2(tmp_path):
    from kipviz import codec
    from kipviz.capture import write_pcap
    frame = codec.encode_request("ApiVersions", 3, {"ClientSoftwareName": "x", "ClientSoftwareVersion": "1"},
                                 correlation_id=1)
    answer = codec.encode_response("ApiVersions", 3, {"ErrorCode": 0, "ApiKeys": [], "ThrottleTimeMs": 0},
                                   correlation_id=1)
    cap = write_pcap(tmp_path / "t.pcap", [("request", frame, 0.0, 0), ("response", answer, 0.001, 0)])
    out = subprocess.run([sys.executable, "-m", "kipviz.cli", "explain", str(cap), "--gif", str(tmp_path / "t.gif")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out
    assert "no coordinator state change" in out.stderr and not (tmp_path / "t.gif").exists()
