"""The kit's ACL file (`kipviz serve --acls FILE`, `Server(acls=path)`): one binding per line,

    # permission principal operation resource-type resource-name [pattern]
    ALLOW User:ana   ALL              TOPIC   ana.  PREFIXED
    ALLOW User:*     IDEMPOTENT_WRITE CLUSTER kafka-cluster
    DENY  User:ben   WRITE            TOPIC   shared.orders

the words of Kafka's AclBinding (AclPermissionType, AclOperation, ResourceType, PatternType; the
pattern is LITERAL when left out, the host always "*"). Blank lines and lines starting with # are
skipped. Each binding is checked as CreateAcls checks one (kipviz.broker.authorizer.binding_problem);
a bad line is one readable error naming the file and line."""
from __future__ import annotations

from pathlib import Path

from ..broker.authorizer import OPERATIONS, RESOURCE_TYPES, Acl, binding_problem


class AclFileError(ValueError):
    """An ACL file that cannot be read: one readable line."""


def parse_acls(text: str, *, where: str = "acls") -> list[Acl]:
    """The ACLs of an ACL file's text, one a line (# comments); AclFileError names a bad line."""
    out: list[Acl] = []
    for i, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if not 5 <= len(words) <= 6:
            raise AclFileError(f"{where} line {i}: expected 'permission principal operation resource-type "
                               f"resource-name [LITERAL|PREFIXED]', got {len(words)} words")
        permission, principal, operation, kind, name = (w.upper() if j != 1 and j != 4 else w
                                                        for j, w in enumerate(words[:5]))
        pattern = words[5].upper() if len(words) == 6 else "LITERAL"
        for value, allowed, what in ((permission, ("ALLOW", "DENY"), "permission"),
                                     (operation, OPERATIONS, "operation"), (kind, RESOURCE_TYPES, "resource type"),
                                     (pattern, ("LITERAL", "PREFIXED"), "pattern")):
            if value not in allowed or value in ("ANY", "UNKNOWN"):
                raise AclFileError(f"{where} line {i}: unknown {what} {value!r}")
        acl = Acl(principal, kind, name, operation, permission == "ALLOW", pattern)
        problem = binding_problem(acl)
        if problem:
            raise AclFileError(f"{where} line {i}: {problem}")
        if acl not in out:
            out.append(acl)
    return out


def load_acls(path) -> list[Acl]:
    """The ACLs of an ACL file; AclFileError when it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AclFileError(f"cannot read ACL file {path}: {e}") from None
    return parse_acls(text, where=str(path))
