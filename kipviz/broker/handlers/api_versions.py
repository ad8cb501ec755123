"""ApiVersions: what the brokers serve (per the configured release), so clients can negotiate."""
from __future__ import annotations

import struct

from ... import codec
from ...schema import events as ev
from ...schema import registry, releases
from ...schema.error_codes import CODE
from ...schema.headers import request_header_version
from ..config import served_versions
from ..error_rows import rows
from . import HANDLERS, Request, handles

API_KEY = 18

_ADVERTISED: dict = {}      # what the served versions depend on -> the ApiKeys rows (made once per setting)


def advertised(config, features=None) -> list[dict]:
    """The APIs and versions the broker serves: the configured release's (from the kit's labels),
    for the APIs the model has a handler for -- exactly what it answers (a defined RPC the model
    does not serve, such as LeaderAndIsr in a KRaft release, is not listed, as a broker lists only
    what it handles)."""
    proposals = config.proposals() if features is None else features.proposed_apis()
    key = (config.release, tuple(sorted(config.api_versions.items())), proposals)
    rows_ = _ADVERTISED.get(key)
    if rows_ is None:
        rows_ = []
        for _, spec in sorted(registry.messages().items(), key=lambda kv: registry.api_key(kv[1]) or 0):
            if spec.type != "request" or spec.api in ("LeaderAndIsr", "StopReplica", "UpdateMetadata") \
                    or spec.api not in HANDLERS:      # what the model cannot answer is not served (a closed connection)
                continue
            rng = served_versions(spec.api, config, features)
            if rng is not None:
                rows_.append((registry.api_key(spec), rng[0], rng[1]))
        if len(_ADVERTISED) > 64:
            _ADVERTISED.clear()
        _ADVERTISED[key] = rows_
    return [{"ApiKey": k, "MinVersion": lo, "MaxVersion": hi} for k, lo, hi in rows_]


def unknown_version(config, frame) -> tuple[int, dict] | None:
    """An ApiVersions request of a version this broker does not know, read as Kafka reads it:
    RequestContext.parseRequest (clients/src/main/java/org/apache/kafka/common/requests/RequestContext.java,
    isUnsupportedApiVersionsRequest) takes it as a v0 request without parsing its body, so a body
    the broker could not read is answered too. Returns (version, header) -- the header read alone,
    in the version's header layout -- or None for every other request. A header that does not
    parse raises DecodeError (RequestHeader.parse: InvalidRequestException, the connection closes)."""
    if len(frame) < 8:
        return None
    key, version = struct.unpack_from(">hh", frame, 4)      # a peek: no copy of a large frame
    served = served_versions("ApiVersions", config)
    if key != API_KEY or served is not None and served[0] <= version <= served[1]:
        return None
    payload = codec.unframe(bytes(frame))
    hv = request_header_version(registry.get("ApiVersionsRequest"), version)
    header, _ = codec.plan("RequestHeader", hv).decode_at(payload, 0, "header.")
    return version, header


def unsupported_body(config) -> dict:
    """The answer to unknown_version, in the v0 layout: UNSUPPORTED_VERSION and, since KIP-511, the
    ApiVersions versions this broker accepts -- only those (ApiVersionsRequest.getErrorResponse;
    KafkaApis.handleApiVersionsRequest), so the client retries at the highest of them."""
    lo, hi = served_versions("ApiVersions", config) or (0, 0)
    return {"ErrorCode": CODE["UNSUPPORTED_VERSION"], "ApiKeys": [{"ApiKey": API_KEY, "MinVersion": lo, "MaxVersion": hi}]}


def feature_off(api: str, version: int, config) -> bool:
    """An API the broker knows but whose feature is not enabled (KIP-1289's TxnShareAcknowledge below
    share.version 2): KafkaApis answers such a request with UNSUPPORTED_VERSION in its body (as
    handleShareFetchRequest does while share groups are off) instead of closing the connection."""
    if api in config.api_versions:
        return False
    gated = releases.served(registry.get(api + "Request"), config.release, frozenset({api}))
    return gated is not None and gated[0] <= version <= gated[1]


def misrouted(cluster, req: Request) -> tuple[str, str] | None:
    """KIP-1242 (ApiVersions v5, Kafka 4.4; apache/kafka PR #22187): the client names the cluster and
    node it expects. A node id without a cluster id is a malformed request (INVALID_REQUEST, as
    franz-go found against 4.4.0-rc1: twmb/franz-go #1449); a cluster id or node id that is not this
    broker's means DNS or a load balancer sent the connection elsewhere (REBOOTSTRAP_REQUIRED).
    Returns (error name, reason) or None; nothing is checked before v5 or when the fields are unset."""
    if req.version < 5:
        return None
    cid, node = req.body.get("ClusterId"), req.body.get("NodeId", -1)
    if cid is None:
        if node is not None and node >= 0:
            return "INVALID_REQUEST", f"NodeId {node} given without a ClusterId"
        return None
    if cid != cluster.cluster_id:
        return "REBOOTSTRAP_REQUIRED", f"ClusterId {cid} is not this cluster's ({cluster.cluster_id})"
    if node is not None and node >= 0 and node != req.broker:
        return "REBOOTSTRAP_REQUIRED", f"NodeId {node} reached broker {req.broker}"
    return None


# The errors ApiVersions can return (kipviz.broker.api_errors reads ERRORS). UNSUPPORTED_VERSION is
# cluster.handle's answer to a version the broker does not serve (unknown_version, unsupported_body).
ERRORS = {"ApiVersions": (
    rows(0, ("UNSUPPORTED_VERSION",), "ApiVersionsRequest.getErrorResponse (KIP-511: answered with the ApiVersions versions served)")
    + rows(3, ("INVALID_REQUEST",), "ApiVersionsRequest.isValid (KIP-511, v3 ClientSoftwareName/Version); "
                                    "KIP-1242 (v5) a NodeId without a ClusterId: the model checks the v5 case only")
    + rows(5, ("REBOOTSTRAP_REQUIRED",), "KIP-1242 (ApiVersions v5, Kafka 4.4)"))}


@handles("ApiVersions")
def api_versions(cluster, req: Request) -> dict:
    wrong = misrouted(cluster, req)
    if wrong is not None:
        cluster.emit(ev.ApiVersionsRefused, broker=req.broker, client=req.client, version=req.version,
                     error=wrong[0], why=wrong[1])
        return {"ErrorCode": CODE[wrong[0]], "ApiKeys": [], "ThrottleTimeMs": 0}
    body = {"ErrorCode": 0, "ApiKeys": advertised(cluster.config, cluster.features), "ThrottleTimeMs": 0}
    if req.version >= 3:
        body.update({"SupportedFeatures": [], "FinalizedFeaturesEpoch": -1, "FinalizedFeatures": [],
                     "ZkMigrationReady": False})
        feats = cluster.features.finalized()
        body["SupportedFeatures"] = [{"Name": n, "MinVersion": 0, "MaxVersion": max(v, 2)} for n, v in feats]
        body["FinalizedFeatures"] = [{"Name": n, "MaxVersionLevel": v, "MinVersionLevel": v} for n, v in feats]
        body["FinalizedFeaturesEpoch"] = 1
    return body
