"""KafkaJS 2.2.4 (tests/js, installed by `make test` with npm ci) against `kipviz serve`
(kipviz.serve.Server on 127.0.0.1, free ports, one server for the module with both listeners):
produce, a consumer group with a rebalance, a transaction with sendOffsets read back with
read_committed, every admin call KafkaJS has that the model serves, SASL PLAIN and SCRAM-SHA-256/512
on the SASL_PLAINTEXT listener, a wrong password and an ACL denial.

Each batch of scenarios runs in one node process (tests/js/scenarios.js), which prints KafkaJS's
log entries (WARN and above) and each scenario's result as JSON lines. A KafkaJS ERROR line fails
its scenario's test unless it is one that test expects -- each expected line is one real Kafka
causes too (a heartbeat answered REBALANCE_IN_PROGRESS while the group rebalances, the refusals a
test provokes) -- and so does a model internal error."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.client_logs import USERS, users_server

JS = Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")
BATCH_S = 240

# Only a machine without node skips; with node, a missing KafkaJS fails (as a missing Chromium fails
# the browser tests): `make test` installs it first (its `js` target), so a skip would hide a break.
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs npm)")


@pytest.fixture(scope="module")
def server():
    if not (JS / "node_modules" / "kafkajs").is_dir():
        pytest.fail("KafkaJS is not installed in tests/js/node_modules: `make js` (npm ci in tests/js) installs it")
    with users_server() as srv:
        yield srv


def run_batch(server, scenarios: list[str]) -> dict[str, dict]:
    """One node process for the scenarios: {name: {"result"|"error": ..., "errors": [ERROR lines]}}."""
    cfg = {"brokers": server.bootstrap.split(","), "sasl": server.sasl_bootstrap.split(","),
           "prefix": uuid.uuid4().hex[:8], "users": USERS, "scenarios": scenarios}
    env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")
    proc = subprocess.run([NODE, str(JS / "scenarios.js"), json.dumps(cfg)], capture_output=True, text=True,
                          timeout=BATCH_S, env=env, cwd=JS)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:], lines[-3:])
    out = {s: {"errors": []} for s in scenarios}
    for line in lines:
        if "log" in line:
            log = line["log"]
            if log["level"] == "ERROR":
                out.setdefault(log["scenario"], {"errors": []})["errors"].append(f"{log['message']}: {log.get('error')}")
        elif "scenario" in line:
            out[line["scenario"]].update({k: line[k] for k in ("result", "error") if k in line})
    assert set(out) == set(scenarios), f"error lines outside any scenario: {out.get(None)}"
    assert server.cluster.internal_errors == []
    return out


def outcome(batch: dict, scenario: str, *expected: str) -> dict:
    """The scenario's result; every KafkaJS ERROR line of it must hold one of `expected`, and each
    expected text must appear."""
    got = batch[scenario]
    assert "error" not in got, got
    unexpected = [line for line in got["errors"] if not any(text in line for text in expected)]
    assert unexpected == [], unexpected
    missing = [text for text in expected if not any(text in line for line in got["errors"])]
    assert missing == [], (missing, got["errors"])
    return got["result"]


@pytest.fixture(scope="module")
def plain(server):
    return run_batch(server, ["produce", "group", "transaction", "admin"])


@pytest.fixture(scope="module")
def sasl(server):
    return run_batch(server, ["sasl_plain", "sasl_scram256", "sasl_scram512", "sasl_wrong_password", "acl_denied"])


def test_kafkajs_produces_idempotently_with_and_without_compression(plain):
    r = outcome(plain, "produce")
    assert all(a["errorCode"] == 0 for a in r["acks"])
    assert r["values"] == sorted(["acks1", *(f"{c}-{i}" for c in ("none", "gzip") for i in range(20))])


def test_kafkajs_group_rebalances_when_a_second_member_joins(plain):
    # the first member's heartbeat is answered REBALANCE_IN_PROGRESS once the second joins, as
    # GroupCoordinator answers it (KafkaJS logs every error response at ERROR)
    r = outcome(plain, "group", "Response Heartbeat(key: 12, version: 3): The group is rebalancing")
    assert r["first"] == list(range(40)) and r["later"] == list(range(40, 48))       # each record once
    assert r["joinsOne"] >= 2
    one, two = r["assignments"]
    assert one and two and sorted(one + two) == [0, 1, 2, 3]
    assert r["described"] == {"state": "Stable", "members": 2, "protocol": "RoundRobinAssigner"} and r["listed"]


def test_kafkajs_transaction_with_send_offsets_then_read_committed(plain):
    r = outcome(plain, "transaction")
    assert r["committed"] == [[0, 5], [1, 5]]                     # sendOffsets: committed with the transaction
    assert r["readCommitted"] == sorted(f"out{i}" for i in range(10))             # not the aborted record
    assert r["readUncommitted"] == sorted(["aborted", *(f"out{i}" for i in range(10))])


def test_kafkajs_admin_calls(plain, server):
    # the bad cleanup.policy is refused with INVALID_CONFIG (the expected error line)
    r = outcome(plain, "admin", "Response CreateTopics(key: 19, version: 3): Topic creation errors")
    assert r["created"] is True and r["badConfig"] == "INVALID_CONFIG" and r["listed"]
    assert r["partitions"] == 4
    topic_cfg, broker_cfg = r["configs"]
    # AlterConfigs replaces a topic's whole set: cleanup.policy, set at creation, is the default again
    assert topic_cfg[1] == [["retention.ms", "3600000", False], ["cleanup.policy", "delete", True]]
    assert broker_cfg == ["0", [["log.retention.ms", None, True]]]       # Kafka's default is null (log.retention.hours)
    assert r["cluster"]["brokers"] == sorted(f"{h}:{p}" for h, p in server.addresses)
    assert r["cluster"]["controller"] in (0, 1, 2) and r["cluster"]["id"] == server.cluster.cluster_id
    assert r["offsets"] == [["4", "6"]] and r["byTimestamp"] == ["6"] and r["afterDelete"] == [4, 5]
    assert r["groups"] == ["consumer"] and r["describedGroup"] == ["Empty"]
    # resetOffsets(earliest) commits KafkaJS's EARLIEST marker itself (-2), which a broker stores as given
    # (OffsetCommit does not check the value) and a consumer of the group resolves when it starts
    assert r["setTo"] == ["5"] and r["resetTo"] == ["-2"] and r["deletedGroups"] == [0]
    assert r["acls"] == [[r["acls"][0][0], 1]] and r["deletedAcls"] == [1] and r["aclsAfter"] == 0
    assert r["gone"] is True


@pytest.mark.parametrize("scenario", ["sasl_plain", "sasl_scram256", "sasl_scram512"])
def test_kafkajs_authenticates_and_is_told_the_sasl_ports(sasl, server, scenario):
    r = outcome(sasl, scenario)
    assert r["brokers"] == sorted(f"{h}:{p}" for h, p in server.listeners[1].addresses)
    assert r["sent"] == 0 and r["values"] == ["hello"]


def test_kafkajs_with_a_wrong_password_gets_its_sasl_authentication_error(sasl):
    r = outcome(sasl, "sasl_wrong_password",
                "Response SaslAuthenticate(key: 36, version: 1): Authentication failed during authentication due "
                "to invalid credentials with SASL mechanism SCRAM-SHA-256",
                "SASL SCRAM SHA256 authentication failed")
    assert r == {"error": "KafkaJSSASLAuthenticationError"}


def test_kafkajs_outside_its_acl_gets_topic_authorization_failed(sasl, server):
    r = outcome(sasl, "acl_denied", "Response Metadata(key: 3, version: 6): Not authorized to access topics")
    assert r["type"] == "TOPIC_AUTHORIZATION_FAILED"
    assert not any(n.startswith("alice.") and n.endswith("-private") for n in server.cluster.topics.by_name)
