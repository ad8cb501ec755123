"""ApiVersions: what the brokers serve (per the configured release), so clients can negotiate."""
from __future__ import annotations

from ...schema import registry
from ..config import served_versions
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


@handles("ApiVersions")
def api_versions(cluster, req: Request) -> dict:
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
