"""SaslHandshake and SaslAuthenticate: one answer for both places Kafka answers them.

Before a SASL connection has authenticated, its authenticator (kipviz.broker.sasl.Authenticator,
after clients/.../security/authenticator/SaslServerAuthenticator.java) reads the frames and answers
these two with the bodies below: the enabled mechanisms (UNSUPPORTED_SASL_MECHANISM for another),
then the mechanism's tokens (SASL_AUTHENTICATION_FAILED with the reason). Afterwards, and on a
PLAINTEXT listener, they reach KafkaApis (core/src/main/scala/kafka/server/KafkaApis.scala
handleSaslHandshakeRequest / handleSaslAuthenticateRequest), which answers ILLEGAL_SASL_STATE."""
from __future__ import annotations

from ...schema.error_codes import CODE
from ..error_rows import rows
from . import Request, handles
from .metadata import shape

ERRORS = {
    "SaslHandshake": rows(0, ("UNSUPPORTED_SASL_MECHANISM",), "SaslServerAuthenticator.handleHandshakeRequest")
    + rows(0, ("ILLEGAL_SASL_STATE",), "KafkaApis.handleSaslHandshakeRequest (after authentication, or on a "
                                       "PLAINTEXT listener)"),
    "SaslAuthenticate": rows(0, ("SASL_AUTHENTICATION_FAILED",), "SaslServerAuthenticator.handleSaslToken")
    + rows(0, ("ILLEGAL_SASL_STATE",), "KafkaApis.handleSaslAuthenticateRequest"),
}


def handshake_body(mechanism: str | None, enabled: list[str] | None) -> dict:
    """The SaslHandshake answer: `enabled` None is KafkaApis' (the connection is past SASL)."""
    if enabled is None:
        return {"ErrorCode": CODE["ILLEGAL_SASL_STATE"], "Mechanisms": []}
    return {"ErrorCode": 0 if mechanism in enabled else CODE["UNSUPPORTED_SASL_MECHANISM"],
            "Mechanisms": list(enabled)}


def authenticate_body(reply: bytes | None, failure: str | None = None) -> dict:
    """The SaslAuthenticate answer: the mechanism's `reply` token, or its `failure` message; both
    None is KafkaApis' answer after a successful authentication. SessionLifetimeMs stays 0
    (connections.max.reauth.ms is 0 by default: no re-authentication)."""
    body = {"ErrorCode": 0, "ErrorMessage": None, "AuthBytes": reply or b"", "SessionLifetimeMs": 0}
    if failure is not None:
        body.update(ErrorCode=CODE["SASL_AUTHENTICATION_FAILED"], ErrorMessage=failure)
    elif reply is None:
        body.update(ErrorCode=CODE["ILLEGAL_SASL_STATE"],
                    ErrorMessage="SaslAuthenticate request received after successful authentication")
    return body


@handles("SaslHandshake")
def sasl_handshake(cluster, req: Request) -> dict:
    return shape("SaslHandshakeResponse", req.version, handshake_body(req.body.get("Mechanism"), None))


@handles("SaslAuthenticate")
def sasl_authenticate(cluster, req: Request) -> dict:
    return shape("SaslAuthenticateResponse", req.version, authenticate_body(None))
