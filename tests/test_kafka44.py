"""Kafka 4.4 in the model: the default release, ApiVersions v5 (KIP-1242), DeleteGroups v0-3."""
import pytest

from kipviz import codec, scenarios
from kipviz.broker import Cluster
from kipviz.broker.config import ClusterConfig, served_versions
from kipviz.broker.groups.model import shape
from kipviz.schema import releases
from kipviz.schema.error_codes import CODE


def _call(cluster, api, version, body, broker=0):
    frame = codec.encode_request(api, version, shape(api + "Request", version, body), correlation_id=7, client_id="t")
    out = cluster.handle(frame, broker=broker, client="t")
    return codec.decode_response(out, api, version)["body"]


def test_the_model_plays_the_newest_release_by_default():
    assert releases.NEWEST == "4.4" and ClusterConfig().release == "4.4"
    c = Cluster()
    assert c.config.release == "4.4"
    assert served_versions("TxnOffsetCommit", c.config) == (0, 6)
    assert served_versions("ApiVersions", c.config) == (0, 5)
    assert served_versions("DeleteGroups", c.config) == (0, 3)


@pytest.mark.parametrize("release", ["4.0", "4.1", "4.2", "4.3"])
def test_releases_before_4_4_serve_none_of_its_versions(release):
    cfg = ClusterConfig(release=release)
    assert served_versions("TxnOffsetCommit", cfg)[1] == 5
    assert served_versions("ApiVersions", cfg)[1] == 4
    assert served_versions("DeleteGroups", cfg)[1] == 2
    keys = {k["ApiKey"]: k["MaxVersion"] for k in _call(Cluster(release=release), "ApiVersions", 4, {})["ApiKeys"]}
    assert keys[28] == 5 and keys[18] == 4 and keys[42] == 2


def test_api_versions_v5_request_bytes():
    # flexible body: name, version (compact strings), ClusterId (compact nullable string), NodeId int32, no tags
    body = {"ClientSoftwareName": "k", "ClientSoftwareVersion": "1", "ClusterId": "abc", "NodeId": 2}
    data = codec.encode("ApiVersionsRequest", 5, body)
    assert data == bytes([2]) + b"k" + bytes([2]) + b"1" + bytes([4]) + b"abc" + (2).to_bytes(4, "big") + b"\x00"
    assert codec.decode("ApiVersionsRequest", 5, data) == body
    nulls = codec.encode("ApiVersionsRequest", 5, shape("ApiVersionsRequest", 5, {"ClientSoftwareName": "k",
                                                                                "ClientSoftwareVersion": "1"}))
    assert nulls.endswith(b"\x00" + (-1).to_bytes(4, "big", signed=True) + b"\x00")   # defaults: null, -1


@pytest.mark.parametrize("cluster_id,node,broker,want", [
    (None, -1, 1, "NONE"),                     # a bootstrap connection: nothing to check
    ("own", 1, 1, "NONE"),
    ("own", 2, 1, "REBOOTSTRAP_REQUIRED"),     # meant for node 2, reached broker 1
    ("other", 1, 1, "REBOOTSTRAP_REQUIRED"),   # another cluster
    (None, 1, 1, "INVALID_REQUEST"),           # a node id without a cluster id
])
def test_api_versions_v5_checks_the_route(cluster_id, node, broker, want):
    c = Cluster(brokers=3)
    cid = c.cluster_id if cluster_id == "own" else ("AAAAAAAAAAAAAAAAAAAAAA" if cluster_id else None)
    r = _call(c, "ApiVersions", 5, {"ClientSoftwareName": "k", "ClientSoftwareVersion": "1", "ClusterId": cid,
                                    "NodeId": node}, broker=broker)
    assert r["ErrorCode"] == CODE[want]
    assert (len(r["ApiKeys"]) > 0) == (want == "NONE")


def test_api_versions_v4_is_never_checked():
    c = Cluster(brokers=3)
    assert _call(c, "ApiVersions", 4, {"ClientSoftwareName": "k", "ClientSoftwareVersion": "1"}, broker=2)[
        "ErrorCode"] == 0


def test_a_4_3_cluster_answers_api_versions_v5_as_unknown():
    out = Cluster(release="4.3").handle(codec.encode_request("ApiVersions", 5, {
        "ClientSoftwareName": "k", "ClientSoftwareVersion": "1", "ClusterId": None, "NodeId": -1},
        correlation_id=1, client_id="t"))
    body = codec.decode_response(out, "ApiVersions", 0)["body"]       # RequestContext.parseRequest: answered in the v0 layout
    assert body["ErrorCode"] == CODE["UNSUPPORTED_VERSION"]
    assert {k["ApiKey"]: k["MaxVersion"] for k in body["ApiKeys"]}[18] == 4


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_delete_groups_every_version(version):
    c = Cluster()
    c.create_topic("t", 1)
    r = _call(c, "OffsetCommit", 9, {"GroupId": "g", "GenerationIdOrMemberEpoch": -1, "MemberId": "",
                                      "Topics": [{"Name": "t", "Partitions": [
                                          {"PartitionIndex": 0, "CommittedOffset": 3}]}]})
    assert r["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
    r = _call(c, "DeleteGroups", version, {"GroupsNames": ["g", "nope", ""]})
    got = {x["GroupId"]: x["ErrorCode"] for x in r["Results"]}
    # the empty id is served like any other (GroupCoordinatorService.deleteGroups: only null is
    # INVALID_GROUP_ID, "for backwards compatibility"); no group "" exists here
    assert got == {"g": 0, "nope": CODE["GROUP_ID_NOT_FOUND"], "": CODE["GROUP_ID_NOT_FOUND"]}
    assert ("ErrorMessage" in r["Results"][0]) == (version >= 3)
    assert c.groups.committed("g", "t", 0) is None and not c.internal_errors


def test_delete_groups_needs_the_delete_acl():
    from kipviz.broker import Acl
    c = Cluster(acls=[Acl("User:ANONYMOUS", "GROUP", "*", "READ")])
    r = _call(c, "DeleteGroups", 3, {"GroupsNames": ["g"]})
    assert r["Results"][0]["ErrorCode"] == CODE["GROUP_AUTHORIZATION_FAILED"]


@pytest.mark.parametrize("name", ["kip1242.misrouted_connection", "groups.delete_groups",
                                  "kip1319.fallback_old_broker"])
def test_scenarios_pass(name):
    t = scenarios.run(name, seed=3)
    assert not t.failures(), [(c.description, c.detail) for c in t.failures()]


def test_fallback_plays_a_4_3_broker_against_a_4_4_client():
    sc = scenarios.get("kip1319.fallback_old_broker")
    assert sc.cluster_settings["release"] == "4.3" and sc.status == "released"
    assert all(s["status"] != "accepted" for s in scenarios.catalog() if s["kip"] == "KIP-1319")


def test_cli_decodes_an_api_versions_v5_request(capsys):
    from kipviz import cli
    data = codec.encode("ApiVersionsRequest", 5, {"ClientSoftwareName": "librdkafka", "ClientSoftwareVersion": "2.16.1",
                                                  "ClusterId": "4-cGgsIJTKyin2--2CwHzQ", "NodeId": 1})
    assert cli.main(["decode", "ApiVersionsRequest", "--version", "5", "--hex", data.hex()]) == 0
    out = capsys.readouterr().out
    assert '"ClusterId": "4-cGgsIJTKyin2--2CwHzQ"' in out and '"NodeId": 1' in out
