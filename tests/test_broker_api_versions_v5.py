"""ApiVersions v5 (KIP-1242, Kafka 4.4): ClusterId / NodeId checked by the broker, through real frames."""
from __future__ import annotations

import struct

from kipviz import codec
from kipviz.broker import Cluster, served_versions
from kipviz.schema.error_codes import CODE


def _ask(c: Cluster, version: int, broker: int = 0, **body) -> dict:
    req = {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1", **body}
    if version >= 5:
        req = {"ClusterId": None, "NodeId": -1, **req}
    return codec.decode_response(c.handle(codec.encode_request("ApiVersions", version, req), broker=broker),
                                 "ApiVersions", version)["body"]


def test_v5_served_from_4_4_only():
    assert served_versions("ApiVersions", Cluster(release="4.4").config) == (0, 5)
    assert served_versions("ApiVersions", Cluster(release="4.3").config) == (0, 4)


def test_v5_request_layout_by_hand():
    frame = codec.encode_request("ApiVersions", 5, {"ClientSoftwareName": "a", "ClientSoftwareVersion": "1",
                                                    "ClusterId": "xy", "NodeId": 7}, correlation_id=1, client_id="c")
    # header v2: key 18, version 5, correlation 1, client id "c" (int16 length), no tags; then the body:
    # compact "a", compact "1", compact "xy", int32 7, no tags.
    body = b"\x02a" + b"\x021" + b"\x03xy" + struct.pack(">i", 7) + b"\x00"
    header = struct.pack(">hhi", 18, 5, 1) + b"\x00\x01c" + b"\x00"
    assert frame[4:] == header + body and struct.unpack(">i", frame[:4])[0] == len(header + body)
    back = codec.decode_request(frame)["body"]
    assert back["ClusterId"] == "xy" and back["NodeId"] == 7
    nulls = codec.encode_request("ApiVersions", 5, {"ClientSoftwareName": "a", "ClientSoftwareVersion": "1",
                                                    "ClusterId": None, "NodeId": -1},
                                 correlation_id=1, client_id="c")
    assert nulls[4:].endswith(b"\x00" + struct.pack(">i", -1) + b"\x00")   # null ClusterId, NodeId -1


def test_matching_or_unknown_ids_are_served():
    c = Cluster(brokers=3, release="4.4")
    assert _ask(c, 5)["ErrorCode"] == 0 and _ask(c, 5)["ApiKeys"]
    ok = _ask(c, 5, broker=2, ClusterId=c.cluster_id, NodeId=2)
    assert ok["ErrorCode"] == 0 and any(k["ApiKey"] == 18 and k["MaxVersion"] == 5 for k in ok["ApiKeys"])


def test_misrouted_connection_gets_rebootstrap_required():
    c = Cluster(brokers=3, release="4.4")
    other = Cluster(seed=99, release="4.4")
    assert other.cluster_id != c.cluster_id
    wrong_cluster = _ask(other, 5, ClusterId=c.cluster_id, NodeId=0)
    wrong_node = _ask(c, 5, broker=1, ClusterId=c.cluster_id, NodeId=2)
    for body in (wrong_cluster, wrong_node):
        assert body["ErrorCode"] == CODE["REBOOTSTRAP_REQUIRED"] == 129 and body["ApiKeys"] == []
    # v4 carries no ids: the same misrouted connection is served, nothing can be checked
    assert _ask(other, 4)["ErrorCode"] == 0


def test_v5_to_a_4_3_broker_is_answered_as_v0():
    c = Cluster(release="4.3")
    out = c.handle(codec.encode_request("ApiVersions", 5, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1",
                                                           "ClusterId": "x", "NodeId": 0}))
    body = codec.decode_response(out, "ApiVersions", 0)["body"]
    assert body["ErrorCode"] == CODE["UNSUPPORTED_VERSION"]
    assert any(k["ApiKey"] == 18 and k["MaxVersion"] == 4 for k in body["ApiKeys"])
