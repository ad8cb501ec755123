"""ACLs and the authorizer that reads them, with the semantics of Kafka's StandardAuthorizer
(metadata/src/main/java/org/apache/kafka/metadata/authorizer/StandardAuthorizerData.java):

  - a binding is a resource pattern (type, name, LITERAL or PREFIXED) and an entry (principal,
    host, operation, ALLOW or DENY); a LITERAL "*" matches every name of its type, a PREFIXED one
    every name starting with it; principal "User:*" matches everyone;
  - super users (super.users) may do everything, whatever the ACLs say;
  - a matching DENY wins over any ALLOW;
  - an ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE, one of ALTER_CONFIGS implies
    DESCRIBE_CONFIGS, ALL matches every operation; a DENY denies only its own operation (or ALL);
  - no binding at all on the resource (whoever it is for): allow.everyone.if.no.acl.found decides
    (false by default); bindings on it but none for this principal: denied.

Sans-IO: names are strings ("TOPIC", "READ", ...), the wire codes are the tables below
(AclOperation.java, AclPermissionType.java, ResourceType.java, PatternType.java). The client host
is known only where the edge passes it (kipviz serve: the connection's peer address, as
RequestContext.clientAddress; Cluster.dispatch(host=...)); an ACL for a particular host then
matches that host (or its CIDR range) and never an unknown one."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

RESOURCE_TYPES = {"UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5,
                  "DELEGATION_TOKEN": 6, "USER": 7}
PATTERN_TYPES = {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
OPERATIONS = {"UNKNOWN": 0, "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
              "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11,
              "IDEMPOTENT_WRITE": 12, "CREATE_TOKENS": 13, "DESCRIBE_TOKENS": 14, "TWO_PHASE_COMMIT": 15}
PERMISSIONS = {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}
NAME_OF = {table: {v: k for k, v in codes.items()}
           for table, codes in (("resource", RESOURCE_TYPES), ("pattern", PATTERN_TYPES),
                                ("operation", OPERATIONS), ("permission", PERMISSIONS))}

# StandardAuthorizerData.IMPLIES_DESCRIBE / IMPLIES_DESCRIBE_CONFIGS: ALLOW bindings only
IMPLIES = {"DESCRIBE": frozenset({"DESCRIBE", "READ", "WRITE", "DELETE", "ALTER"}),
           "DESCRIBE_CONFIGS": frozenset({"DESCRIBE_CONFIGS", "ALTER_CONFIGS"})}


@dataclass(frozen=True, slots=True)
class Acl:
    """Allow (or deny) `principal` the `operation` on resources matching (`resource_type`,
    `resource_name`, `pattern`) from `host`. The kit also takes "*" for the principal "User:*"."""
    principal: str                 # "User:alice", or "User:*" / "*" for everyone
    resource_type: str             # TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER, DELEGATION_TOKEN, USER
    resource_name: str             # a name or prefix; LITERAL "*": every resource of the type
    operation: str                 # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, ALL, ...
    allow: bool = True
    pattern: str = "LITERAL"       # LITERAL or PREFIXED
    host: str = WILDCARD           # "*", an address, or (Kafka 4.4, KIP-1236) a CIDR range

    @property
    def who(self) -> str:
        """The principal as Kafka writes it ("*" -> "User:*")."""
        return WILDCARD_PRINCIPAL if self.principal == WILDCARD else self.principal

    @property
    def permission(self) -> str:
        return "ALLOW" if self.allow else "DENY"

    def matches_resource(self, resource_type: str, name: str) -> bool:
        """Whether this binding's pattern applies to the (literal) resource."""
        if self.resource_type != resource_type:
            return False
        if self.pattern == "PREFIXED":
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def result_for(self, principals: frozenset, host: str | None, operation: str) -> bool | None:
        """StandardAuthorizerData.findResult: True (allow), False (deny) or None (does not apply)."""
        if self.who not in principals or not host_matches(self.host, host):
            return None
        if self.operation != "ALL":
            if self.allow:
                if self.operation not in IMPLIES.get(operation, (operation,)):
                    return None
            elif self.operation != operation:
                return None
        return self.allow


def host_matches(acl_host: str, host: str | None) -> bool:
    if acl_host == WILDCARD:
        return True
    if host is None:
        return False
    if acl_host == host:
        return True
    if "/" in acl_host:
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(acl_host, strict=False)
        except ValueError:
            return False
    return False


@dataclass(frozen=True, slots=True)
class AclFilter:
    """An AclBindingFilter: None (or ANY) in a field matches everything; pattern MATCH matches
    every pattern that applies to `resource_name` (ResourcePatternFilter.matches)."""
    resource_type: str = "ANY"
    resource_name: str | None = None
    pattern: str = "ANY"
    principal: str | None = None
    host: str | None = None
    operation: str = "ANY"
    permission: str = "ANY"

    def matches(self, acl: Acl) -> bool:
        if self.resource_type != "ANY" and self.resource_type != acl.resource_type:
            return False
        if self.pattern not in ("ANY", "MATCH") and self.pattern != acl.pattern:
            return False
        if self.resource_name is not None:
            if self.pattern in ("ANY", acl.pattern):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern == "LITERAL":
                if acl.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif not self.resource_name.startswith(acl.resource_name):
                return False
        if self.principal is not None and self.principal != acl.who:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != "ANY" and self.operation != acl.operation:
            return False
        return self.permission == "ANY" or self.permission == acl.permission

    def problem(self) -> str | None:
        """AclControlManager.validateFilter: a filter with an UNKNOWN part is refused."""
        if self.pattern == "UNKNOWN" or self.resource_type == "UNKNOWN":
            return "Unknown patternFilter."
        if self.operation == "UNKNOWN" or self.permission == "UNKNOWN":
            return "Unknown entryFilter."
        return None


def binding_problem(acl: Acl) -> str | None:
    """Why CreateAcls refuses a binding (AclApis.handleCreateAcls, then
    AclControlManager.validateNewAcl), or None."""
    if acl.resource_type == "CLUSTER" and acl.resource_name != "kafka-cluster":
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in ("UNKNOWN", "ANY"):
        return f"Invalid resourceType {acl.resource_type}"
    if acl.pattern not in ("LITERAL", "PREFIXED"):
        return f"Invalid patternType {acl.pattern}"
    if acl.operation in ("UNKNOWN", "ANY"):
        return f"Invalid operation {acl.operation}"
    if ":" not in acl.who:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present separating the "
                "principal type from the principal name)")
    if not acl.host:
        return "Host pattern cannot be null or empty"
    if "/" in acl.host:
        try:
            ipaddress.ip_network(acl.host, strict=False)
        except ValueError as e:
            return f"Invalid CIDR notation '{acl.host}': {e}"
    return None


class Authorizer:
    """The cluster's ACLs and super users. `enabled` False (ClusterConfig.acls None): no
    authorizer is configured, every request is allowed and the ACL RPCs answer SECURITY_DISABLED."""

    def __init__(self, acls: list[Acl] | None, super_users=(), allow_everyone_if_no_acl_found: bool = False):
        self.enabled = acls is not None
        self.acls: list[Acl] = list(acls or [])
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found

    def decide(self, principal: str, resource_type: str, name: str, operation: str,
               host: str | None = None) -> tuple[bool, str]:
        """(allowed, the rule that decided: "no authorizer", "super user", "DENY binding",
        "ALLOW binding", "no ACL on the resource" or "no ACL for the principal")."""
        if not self.enabled:
            return True, "no authorizer"
        if principal in self.super_users:
            return True, "super user"
        principals = frozenset((principal, WILDCARD_PRINCIPAL))
        on_resource = allowed = False
        for acl in self.acls:
            if not acl.matches_resource(resource_type, name):
                continue
            on_resource = True
            r = acl.result_for(principals, host, operation)
            if r is False:
                return False, "DENY binding"
            allowed = allowed or bool(r)
        if allowed:
            return True, "ALLOW binding"
        if not on_resource:
            return self.allow_if_no_acl, "no ACL on the resource"
        return False, "no ACL for the principal"

    def authorize(self, principal: str, resource_type: str, name: str, operation: str,
                  host: str | None = None) -> bool:
        return self.decide(principal, resource_type, name, operation, host)[0]

    def authorize_by_resource_type(self, principal: str, resource_type: str, operation: str,
                                   host: str | None = None) -> bool:
        """Authorizer.authorizeByResourceType (clients/.../server/authorizer/Authorizer.java): may
        the principal do `operation` on SOME resource of the type? A hard-coded name first (super
        users, allow.everyone.if.no.acl.found), then: an ALLOW not dominated by a DENY."""
        if self.authorize(principal, resource_type, "hardcode", operation, host):
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        deny = {"LITERAL": set(), "PREFIXED": set()}
        allow = {"LITERAL": set(), "PREFIXED": set()}
        for a in self.acls:
            if (a.resource_type != resource_type or not host_matches(a.host, host) or a.who not in principals
                    or a.operation not in (operation, "ALL")):
                continue
            if not a.allow:
                if a.pattern == "LITERAL" and a.resource_name == WILDCARD:
                    return False
                deny[a.pattern].add(a.resource_name)
            elif a.pattern == "LITERAL" and a.resource_name == WILDCARD:
                return True
            else:
                allow[a.pattern].add(a.resource_name)
        for kind, names in allow.items():
            for n in names:
                if kind == "LITERAL" and n in deny["LITERAL"]:
                    continue
                if not any(n[:i] in deny["PREFIXED"] for i in range(1, len(n) + 1)):
                    return True
        return False

    def matching(self, flt: AclFilter) -> list[Acl]:
        return [a for a in self.acls if flt.matches(a)]

    def add(self, acl: Acl) -> bool:
        """Add a binding; False when it was there already (AclControlManager ignores duplicates)."""
        if acl in self.acls:
            return False
        self.acls.append(acl)
        return True

    def remove(self, flt: AclFilter) -> list[Acl]:
        gone = self.matching(flt)
        self.acls = [a for a in self.acls if a not in gone]
        return gone
