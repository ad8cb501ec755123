"""One connection's SASL authentication on a SASL_PLAINTEXT listener, after Kafka's
clients/src/main/java/org/apache/kafka/common/security/authenticator/SaslServerAuthenticator.java
(enum SaslState, re-authentication left out). Executed by kipviz.broker.sasl.Authenticator, one
instance per connection, keyed by the client's address.

Before COMPLETE the authenticator, not KafkaApis, reads the frames: only ApiVersions (once, first)
and SaslHandshake are Kafka requests it accepts, then SaslAuthenticate tokens (v1 handshake) or raw
tokens (v0). Any other request, an unknown mechanism or bad credentials end in FAILED: the answer
goes out, then the connection is closed."""
from __future__ import annotations

from ..machine import Row, Table

# Kafka passes through HANDSHAKE_OR_VERSIONS_REQUEST while it reads the first request; the table
# moves on the request's outcome, so INITIAL_REQUEST stands for both
INITIAL, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = (
    "INITIAL_REQUEST", "HANDSHAKE_REQUEST", "AUTHENTICATE", "COMPLETE", "FAILED")

TABLE = Table(
    name="sasl",
    states=(INITIAL, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED),
    initial=INITIAL,
    terminal=(COMPLETE, FAILED),
    source="clients/src/main/java/org/apache/kafka/common/security/authenticator/SaslServerAuthenticator.java",
    rows=(
        Row(INITIAL, "api-versions", HANDSHAKE, kip="KIP-35",
            note="ApiVersions before the handshake: answered with the broker's versions"),
        Row(INITIAL, "handshake", AUTHENTICATE, kip="KIP-43", note="an enabled mechanism: a SASL server is created"),
        Row(HANDSHAKE, "handshake", AUTHENTICATE, kip="KIP-43", note="as from INITIAL_REQUEST"),
        Row(AUTHENTICATE, "challenge", AUTHENTICATE, kip="KIP-152",
            note="a token answered, more expected (SCRAM's server-first message)"),
        Row(AUTHENTICATE, "authenticated", COMPLETE, kip="KIP-152",
            note="the mechanism completed: the connection has its principal; KafkaApis reads the next frames"),
        Row(INITIAL, "unsupported-mechanism", FAILED, kip="KIP-43",
            note="UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection closes"),
        Row(HANDSHAKE, "unsupported-mechanism", FAILED, kip="KIP-43", note="as from INITIAL_REQUEST"),
        Row(AUTHENTICATE, "authentication-failed", FAILED, kip="KIP-152",
            note="SASL_AUTHENTICATION_FAILED (or ILLEGAL_SASL_STATE for another request), then the connection closes"),
        Row(INITIAL, "unexpected-request", FAILED, note="not ApiVersions or SaslHandshake: the connection closes"),
        Row(HANDSHAKE, "unexpected-request", FAILED, note="as from INITIAL_REQUEST (also a second ApiVersions)"),
    ),
)
