"""DescribeAcls, CreateAcls and DeleteAcls, after released Kafka 4.4 (core/src/main/scala/kafka/server/
AclApis.scala, which both KafkaApis and ControllerApis use; AclControlManager.validateNewAcl and
validateFilter, metadata/src/main/java/org/apache/kafka/controller/AclControlManager.java).

    DescribeAcls  DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED); no authorizer:
                  SECURITY_DISABLED; else the bindings the filter matches, grouped by resource pattern.
    CreateAcls    ALTER on the cluster (else every result CLUSTER_AUTHORIZATION_FAILED); each binding
                  checked (INVALID_REQUEST with Kafka's message) and added; a binding already there
                  is a success that adds nothing.
    DeleteAcls    ALTER on the cluster; per filter the bindings it removed.

The bindings live in the cluster's authorizer (kipviz.broker.authorizer), which every other handler
asks. A request whose filter or binding holds an UNKNOWN (0) code cannot be parsed by Kafka
(CreateAclsRequest/DescribeAclsRequest/DeleteAclsRequest.validate throw while the request is
read): the connection is closed."""
from __future__ import annotations

from ...schema import events as ev
from ...schema.error_codes import CODE
from ..authorizer import (
    NAME_OF,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    Acl,
    AclFilter,
    binding_problem,
)
from ..error_rows import rows
from . import CLOSE, Request, handles
from .metadata import CLUSTER_RESOURCE, shape

ERRORS = {}
_SRC = "AclApis (core/src/main/scala/kafka/server/AclApis.scala): authorizeClusterOperation, no authorizer"


def _name(table: str, code) -> str:
    return NAME_OF[table].get(code, "UNKNOWN")


def _denied(req: Request, op: str) -> str:
    """AuthHelper.authorizeClusterOperation's ClusterAuthorizationException text (Kafka prints its
    Request object where the kit names the API and client)."""
    return f"Request {req.api} v{req.version} from {req.client} needs {op} permission."


def _filter(f: dict, prefix: str = "") -> AclFilter:
    return AclFilter(resource_type=_name("resource", f.get("ResourceTypeFilter")),
                     resource_name=f.get("ResourceNameFilter"),
                     pattern=_name("pattern", f.get("PatternTypeFilter", 3)), principal=f.get("PrincipalFilter"),
                     host=f.get("HostFilter"), operation=_name("operation", f.get("Operation")),
                     permission=_name("permission", f.get("PermissionType")))


def _has_unknown_code(items: list[dict], fields) -> bool:
    """The request classes' validate(): an UNKNOWN (0) code anywhere fails the parse."""
    return any(d.get(f) == 0 for d in items for f in fields)


def _binding(acl: Acl) -> dict:
    return {"ResourceType": RESOURCE_TYPES[acl.resource_type], "ResourceName": acl.resource_name,
            "PatternType": PATTERN_TYPES[acl.pattern], "Principal": acl.who, "Host": acl.host,
            "Operation": OPERATIONS[acl.operation], "PermissionType": PERMISSIONS[acl.permission]}


def _fields(acl: Acl) -> dict:
    """The binding as AclAdded / AclRemoved carry it."""
    return {"permission": acl.permission, "principal": acl.who, "operation": acl.operation,
            "resource_type": acl.resource_type, "pattern": acl.pattern, "resource_name": acl.resource_name,
            "host": acl.host}


def _alter_refused(cluster, req: Request, key: str, n: int, extra: dict) -> dict | None:
    """Create/DeleteAcls refused whole (getErrorResponse: the error on every result): ALTER on the
    cluster is missing, or no authorizer is configured; None when the request goes on."""
    if not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "ALTER"):
        code, message = CODE["CLUSTER_AUTHORIZATION_FAILED"], _denied(req, "ALTER")
    elif not cluster.authorizer.enabled:
        code, message = CODE["SECURITY_DISABLED"], "No Authorizer is configured."
    else:
        return None
    return shape(req.api + "Response", req.version, {"ThrottleTimeMs": 0, key: [
        {"ErrorCode": code, "ErrorMessage": message, **extra} for _ in range(n)]})


# ---- DescribeAcls -----------------------------------------------------------------------------------
ERRORS["DescribeAcls"] = rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "SECURITY_DISABLED", "INVALID_REQUEST"),
                              _SRC + "; AclControlManager.validateFilter")


@handles("DescribeAcls")
def describe_acls(cluster, req: Request) -> dict:
    b, v = req.body, req.version
    if _has_unknown_code([b], ("ResourceTypeFilter", "PatternTypeFilter", "Operation", "PermissionType")):
        return CLOSE
    top = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Resources": []}
    if not cluster.authorized(req.principal, "CLUSTER", CLUSTER_RESOURCE, "DESCRIBE"):
        top.update(ErrorCode=CODE["CLUSTER_AUTHORIZATION_FAILED"], ErrorMessage=_denied(req, "DESCRIBE"))
        return shape("DescribeAclsResponse", v, top)
    if not cluster.authorizer.enabled:
        top.update(ErrorCode=CODE["SECURITY_DISABLED"], ErrorMessage="No Authorizer is configured on the broker")
        return shape("DescribeAclsResponse", v, top)
    flt = _filter(b)
    problem = flt.problem()
    if problem:
        top.update(ErrorCode=CODE["INVALID_REQUEST"], ErrorMessage=problem)
        return shape("DescribeAclsResponse", v, top)
    groups: dict[tuple, list[dict]] = {}
    for acl in cluster.authorizer.matching(flt):
        d = _binding(acl)
        key = (d["ResourceType"], d["ResourceName"], d["PatternType"])
        groups.setdefault(key, []).append({k: d[k] for k in ("Principal", "Host", "Operation", "PermissionType")})
    top["Resources"] = [{"ResourceType": t, "ResourceName": n, "PatternType": p, "Acls": acls}
                        for (t, n, p), acls in groups.items()]
    return shape("DescribeAclsResponse", v, top)


# ---- CreateAcls -------------------------------------------------------------------------------------
ERRORS["CreateAcls"] = rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "SECURITY_DISABLED", "INVALID_REQUEST"),
                            _SRC + "; AclApis.handleCreateAcls and AclControlManager.validateNewAcl")


@handles("CreateAcls")
def create_acls(cluster, req: Request) -> dict:
    creations = req.body.get("Creations") or []
    if _has_unknown_code(creations, ("ResourceType", "ResourcePatternType", "Operation", "PermissionType")):
        return CLOSE

    early = _alter_refused(cluster, req, "Results", len(creations), {})
    if early is not None:
        return early
    results = []
    for c in creations:
        permission = _name("permission", c.get("PermissionType"))
        acl = Acl(c.get("Principal") or "", _name("resource", c.get("ResourceType")), c.get("ResourceName") or "",
                  _name("operation", c.get("Operation")), permission == "ALLOW",
                  _name("pattern", c.get("ResourcePatternType", 3)), c.get("Host") or "")
        problem = binding_problem(acl)
        if problem is None and permission not in ("ALLOW", "DENY"):
            problem = f"Invalid permissionType {permission}"
        if problem:
            results.append({"ErrorCode": CODE["INVALID_REQUEST"], "ErrorMessage": problem})
            continue
        if cluster.authorizer.add(acl):
            cluster.emit(ev.AclAdded, **_fields(acl))
        results.append({"ErrorCode": 0, "ErrorMessage": None})
    return shape("CreateAclsResponse", req.version, {"ThrottleTimeMs": 0, "Results": results})


# ---- DeleteAcls -------------------------------------------------------------------------------------
ERRORS["DeleteAcls"] = rows(0, ("CLUSTER_AUTHORIZATION_FAILED", "SECURITY_DISABLED", "INVALID_REQUEST"),
                            _SRC + "; AclControlManager.deleteAcls and validateFilter")


@handles("DeleteAcls")
def delete_acls(cluster, req: Request) -> dict:
    filters = req.body.get("Filters") or []
    if _has_unknown_code(filters, ("ResourceTypeFilter", "PatternTypeFilter", "Operation", "PermissionType")):
        return CLOSE

    early = _alter_refused(cluster, req, "FilterResults", len(filters), {"MatchingAcls": []})
    if early is not None:
        return early
    results = []
    for f in filters:
        flt = _filter(f)
        problem = flt.problem()
        if problem:
            results.append({"ErrorCode": CODE["INVALID_REQUEST"], "ErrorMessage": problem, "MatchingAcls": []})
            continue
        gone = cluster.authorizer.remove(flt)
        for acl in gone:
            cluster.emit(ev.AclRemoved, **_fields(acl))
        results.append({"ErrorCode": 0, "ErrorMessage": None,
                        "MatchingAcls": [{"ErrorCode": 0, "ErrorMessage": None, **_binding(a)} for a in gone]})
    return shape("DeleteAclsResponse", req.version, {"ThrottleTimeMs": 0, "FilterResults": results})
