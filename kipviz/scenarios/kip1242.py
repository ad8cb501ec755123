"""KIP-1242 (ApiVersions v5, released in Kafka 4.4; FACTS (h), apache/kafka PR #22187, KAFKA-20246):
a client names the cluster and node it means to reach, so a misrouted connection (an address now
used by another cluster, or by another node) is refused with REBOOTSTRAP_REQUIRED instead of being
served with the wrong cluster's data.

    kip1242.misrouted_connection   v5 with cluster A's id (or another node id) at a broker of cluster
                                   B: REBOOTSTRAP_REQUIRED; the same at v4 is served (nothing to check)

The requests are hand-built frames (kipviz.scenarios.kip516.Wire); the checks read what came back."""
from __future__ import annotations

from ..broker import Cluster
from ..broker.error_codes import CODE, name_of
from . import Trace, scenario
from .kip516 import Wire

KIP = "KIP-1242"


@scenario("kip1242.misrouted_connection", kip=KIP, status="released", release="4.4", brokers=3,
          title="KIP-1242: ApiVersions v5 refuses a misrouted connection with REBOOTSTRAP_REQUIRED",
          summary="A client bootstrapped against cluster A (it learned A's cluster id and node ids from "
                  "Metadata). Its connection to 'node 2' reaches a broker of cluster B. With ApiVersions v5 it "
                  "names the cluster and node it expects, and B answers REBOOTSTRAP_REQUIRED; the same happens "
                  "inside one cluster when the address now belongs to another node. With v4 the request carries "
                  "no ids, so B serves it and the client would talk to the wrong cluster.")
def misrouted_connection(trace: Trace) -> None:
    b = trace.cluster
    cluster_a = Cluster(seed=trace.seed + 1, brokers=3).cluster_id
    trace.expect("the two clusters have different ids", cluster_a != b.cluster_id, f"{cluster_a} {b.cluster_id}")
    wire = Wire(trace, "client-of-A")
    base = {"ClientSoftwareName": "kipviz", "ClientSoftwareVersion": "1.0"}
    got = {}
    for label, version, extra, broker in (
            ("bootstrap (ids unknown)", 5, {"ClusterId": None, "NodeId": -1}, 0),
            ("other cluster", 5, {"ClusterId": cluster_a, "NodeId": 2}, 2),
            ("other node", 5, {"ClusterId": b.cluster_id, "NodeId": 2}, 1),
            ("right node", 5, {"ClusterId": b.cluster_id, "NodeId": 1}, 1),
            ("other cluster at v4", 4, {}, 2)):
        body = wire("ApiVersions", version, {**base, **extra}, broker=broker)
        got[label] = (name_of(body["ErrorCode"]), len(body["ApiKeys"]))
    trace.expect("a bootstrap connection (null ClusterId, NodeId -1) is served: nothing to check",
                 got["bootstrap (ids unknown)"][0] == "NONE" and got["bootstrap (ids unknown)"][1] > 0,
                 repr(got["bootstrap (ids unknown)"]))
    trace.expect("v5 naming cluster A at a broker of cluster B: REBOOTSTRAP_REQUIRED, no API list",
                 got["other cluster"] == ("REBOOTSTRAP_REQUIRED", 0), repr(got["other cluster"]))
    trace.expect("v5 naming node 2 at node 1 of the right cluster: REBOOTSTRAP_REQUIRED",
                 got["other node"] == ("REBOOTSTRAP_REQUIRED", 0), repr(got["other node"]))
    trace.expect("v5 naming the node it reached, in its cluster: served",
                 got["right node"][0] == "NONE" and got["right node"][1] > 0, repr(got["right node"]))
    trace.expect("v4 carries no ids: cluster B serves cluster A's client (the misrouting goes unnoticed)",
                 got["other cluster at v4"][0] == "NONE", repr(got["other cluster at v4"]))
    trace.result.update(cluster_a=cluster_a, cluster_b=b.cluster_id,
                        answers={k: v[0] for k, v in got.items()},
                        rebootstrap_code=CODE["REBOOTSTRAP_REQUIRED"])
