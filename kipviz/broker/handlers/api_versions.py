"""ApiVersions: what the brokers serve (per the configured release), so clients can negotiate."""
from __future__ import annotations

from ...schema import registry
from ..config import served_versions
from ..error_codes import CODE
from . import Request, handles


def advertised(config) -> list[dict]:
    out = []
    for _, spec in sorted(registry.messages().items(), key=lambda kv: registry.api_key(kv[1]) or 0):
        if spec.type != "request" or spec.api in ("LeaderAndIsr", "StopReplica", "UpdateMetadata"):
            continue
        rng = served_versions(spec.api, config)
        if rng is not None:
            out.append({"ApiKey": registry.api_key(spec), "MinVersion": rng[0], "MaxVersion": rng[1]})
    return out


def misrouted(cluster, req: Request) -> bool:
    """KIP-1242 (ApiVersions v5, Kafka 4.4; apache/kafka PR #22187, KAFKA-20246): the client names the
    cluster and node it means to reach; null / -1 means it does not know them, and is not checked."""
    if req.version < 5:
        return False
    cid, nid = req.body.get("ClusterId"), req.body.get("NodeId", -1)
    return (cid is not None and cid != cluster.cluster_id) or (nid != -1 and nid != req.broker)


@handles("ApiVersions")
def api_versions(cluster, req: Request) -> dict:
    if misrouted(cluster, req):
        # KIP-1242: a misrouted connection is refused with REBOOTSTRAP_REQUIRED and no API list,
        # so the client drops what it knew and bootstraps again.
        return {"ErrorCode": CODE["REBOOTSTRAP_REQUIRED"], "ApiKeys": [], "ThrottleTimeMs": 0}
    body = {"ErrorCode": 0, "ApiKeys": advertised(cluster.config), "ThrottleTimeMs": 0}
    if req.version >= 3:
        body.update({"SupportedFeatures": [], "FinalizedFeaturesEpoch": -1, "FinalizedFeatures": [],
                     "ZkMigrationReady": False})
        feats = [("transaction.version", cluster.config.transaction_version),
                 ("share.version", cluster.config.share_version)]
        body["SupportedFeatures"] = [{"Name": n, "MinVersion": 0, "MaxVersion": max(v, 2)} for n, v in feats]
        body["FinalizedFeatures"] = [{"Name": n, "MaxVersionLevel": v, "MinVersionLevel": v} for n, v in feats]
        body["FinalizedFeaturesEpoch"] = 1
    return body
