"""Which request/response header version a message version uses: a fact of its definition
(flexibleVersions), read by the codec's framing and the version diff."""
from __future__ import annotations

from .model import MessageSpec


def request_header_version(spec: MessageSpec, version: int) -> int:
    """Kafka derives the header version from the body's flexibleVersions."""
    if spec.api == "ControlledShutdown" and version == 0:
        return 0
    return 2 if spec.is_flexible(version) else 1


def response_header_version(spec: MessageSpec, version: int) -> int:
    # ApiVersionsResponse always uses header v0: a client that does not yet know the
    # broker's versions must be able to read the answer.
    """The response header version of a message version: 1 when flexible, else 0; ApiVersions
    always 0, so a client that knows no versions yet can read it."""
    if spec.api == "ApiVersions":
        return 0
    return 1 if spec.is_flexible(version) else 0
