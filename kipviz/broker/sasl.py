"""SASL on a SASL_PLAINTEXT listener, sans-IO: one Authenticator per connection reads the frames
until the client is authenticated, then hands them to the cluster with the connection's principal.

    users = Users.parse("alice = alice-secret\\nbob = bob-secret")    # or Users.load(path), Users({...})
    auth = Authenticator(cluster, users, broker=0, client="127.0.0.1:50123")
    kind, out = auth.handle(frame)     # a size-prefixed request in
    #   "send"  write `out` and read the next frame
    #   "close" write `out` (if any), then close the connection (Kafka's answer to bad credentials,
    #           an unsupported mechanism, or a request out of turn)
    #   "none" / "held": as Cluster.dispatch (after authentication every frame goes there)
    auth.principal                     # "User:alice" once authenticated, else None

This is the API the socket edge calls (kipviz.serve; its SASL_PLAINTEXT listener is wired there,
not here). Kafka's side: clients/src/main/java/org/apache/kafka/common/security/authenticator/
SaslServerAuthenticator.java (the state machine, kipviz/broker/tables/sasl.py), PlainSaslServer.java
(RFC 4616) and scram/internals/ScramSaslServer.java with ScramFormatter (RFC 5802, RFC 7677). The
principal is User:<name> (DefaultKafkaPrincipalBuilder).

Users file: one user per line, `name = password` (blank lines and lines starting with # are
skipped; a name may not contain "=", "," or spaces). The SCRAM credentials (salt, 4096 iterations,
StoredKey, ServerKey) are derived from the password once, as kafka-storage / AlterUserScramCredentials
would store them; PLAIN checks the password itself. Passwords never go into the event log: a
SaslAuthenticate request is recorded with its AuthBytes left out."""
from __future__ import annotations

import base64
import hashlib
import hmac
import random
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from .. import codec
from ..errors import DecodeError
from ..schema import events as ev
from ..schema import registry
from ..schema.error_codes import CODE, error_codes
from .handlers.sasl import authenticate_body, handshake_body
from .machine import Machine
from .respond import error_response
from .tables import sasl as st

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# sasl.server.max.receive.size (BrokerSecurityConfigs.DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE): the largest
# frame SaslServerAuthenticator.authenticate reads before the client is authenticated
SASL_SERVER_MAX_RECEIVE_SIZE = 524288
SCRAM = {"SCRAM-SHA-256": ("sha256", 4096), "SCRAM-SHA-512": ("sha512", 4096)}   # ScramMechanism: hash, min iterations
_NAME = re.compile(r"[^=,\s]+\Z")
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"              # ScramMessages.PRINTABLE: \x21-\x7E but ","
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
                           r"(?P<ext>(?:,[A-Za-z]+=[\x01-\x2b\x2d-\x7f]+)*)\Z")
_B64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE})"
                           r"(?P<ext>(?:,[A-Za-z]+=[\x01-\x2b\x2d-\x7f]+)*)" rf",p=(?P<proof>{_B64})\Z")


class UsersError(ValueError):
    """A users file or dict that cannot be read: one readable line."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def scram_credential(password: str, mechanism: str, salt: bytes, iterations: int = 4096) -> ScramCredential:
    """ScramFormatter: SaltedPassword = Hi(password, salt, i) (PBKDF2 with HMAC), ClientKey and
    ServerKey HMACs of it, StoredKey = H(ClientKey) (RFC 5802 section 3)."""
    h = SCRAM[mechanism][0]
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", h).digest()
    return ScramCredential(salt, iterations, hashlib.new(h, client_key).digest(),
                           hmac.new(salted, b"Server Key", h).digest())


class Users:
    """The users a SASL listener knows: name -> password, with each name's SCRAM credentials."""

    def __init__(self, passwords: dict[str, str], *, seed: int = 0):
        bad = [n for n in passwords if not isinstance(n, str) or not _NAME.match(n)]
        if bad:
            raise UsersError(f"user name {bad[0]!r} may not be empty or contain '=', ',' or spaces")
        empty = [n for n, p in passwords.items() if not isinstance(p, str) or not p]
        if empty:
            raise UsersError(f"user {empty[0]!r} has no password")
        self.passwords = dict(passwords)
        rng = random.Random(seed)
        self.scram = {(n, m): scram_credential(p, m, rng.randbytes(16), SCRAM[m][1])
                      for n, p in self.passwords.items() for m in SCRAM}

    @classmethod
    def parse(cls, text: str, *, where: str = "users") -> Users:
        out: dict[str, str] = {}
        for i, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, eq, password = line.partition("=")
            if not eq:
                raise UsersError(f"{where} line {i}: expected 'name = password'")
            name, password = name.strip(), password.strip()
            if name in out:
                raise UsersError(f"{where} line {i}: user {name!r} given twice")
            out[name] = password
        return cls(out)

    @classmethod
    def load(cls, path) -> Users:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UsersError(f"cannot read users file {path}: {e}") from None
        return cls.parse(text, where=str(path))


class _Plain:
    """PlainSaslServer: one token [authzid] NUL authcid NUL passwd."""

    def __init__(self, users: Users):
        self.users, self.name = users, None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        text = token.decode("utf-8", "replace")
        tokens = text.split("\0", 3)
        if len(tokens) != 3:
            raise _AuthFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, name, password = tokens
        if not name:
            raise _AuthFailed("Authentication failed: username not specified")
        if not password:
            raise _AuthFailed("Authentication failed: password not specified")
        known = self.users.passwords.get(name)
        if known is None or not hmac.compare_digest(known.encode(), password.encode()):
            raise _AuthFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != name:
            raise _AuthFailed("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        self.name = name
        return b"", True


class _Scram:
    """ScramSaslServer: client-first -> server-first, client-final -> server-final (RFC 5802)."""

    def __init__(self, users: Users, mechanism: str, rng: random.Random):
        self.users, self.mechanism, self.rng = users, mechanism, rng
        self.hash = SCRAM[mechanism][0]
        self.first = self.server_first = self.cred = self.name = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        text = token.decode("ascii", "replace")
        if self.first is None:
            m = _CLIENT_FIRST.match(text)
            if m is None:
                raise _Generic(f"Invalid SCRAM client first message format: {text}")
            name = m["name"].replace("=2C", ",").replace("=3D", "=")
            self.cred = self.users.scram.get((name, self.mechanism))
            if self.cred is None:
                raise _Generic("Authentication failed: Invalid user credentials")
            if m["authzid"] and m["authzid"] != name:
                raise _AuthFailed("Authentication failed: Client requested an authorization id that is different "
                                  "from username")
            self.name, self.first = name, text.split(",", 2)[2]        # client-first-message-bare
            nonce = m["nonce"] + self.rng.randbytes(16).hex()            # ScramFormatter.secureRandomString
            self.server_first = f"r={nonce},s={base64.b64encode(self.cred.salt).decode()},i={self.cred.iterations}"
            return self.server_first.encode(), False
        m = _CLIENT_FINAL.match(text)
        if m is None:
            raise _Generic(f"Invalid SCRAM client final message format: {text}")
        if m["nonce"] != self.server_first[2:self.server_first.index(",")]:
            raise _Generic("Invalid client nonce in the final client message.")
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{self.first},{self.server_first},{without_proof}".encode()
        signature = hmac.new(self.cred.stored_key, auth_message, self.hash).digest()
        proof = base64.b64decode(m["proof"])
        if len(proof) != len(signature):
            raise _Generic("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), self.cred.stored_key):
            raise _Generic("Invalid client credentials")
        server_signature = hmac.new(self.cred.server_key, auth_message, self.hash).digest()
        return f"v={base64.b64encode(server_signature).decode()}".encode(), True


class _AuthFailed(Exception):
    """SaslAuthenticationException: its message goes to the client."""


class _Generic(Exception):
    """A SaslException: the client is told only that the credentials were invalid."""


class Authenticator:
    """One connection's SASL server (see the module text). `mechanisms`: sasl.enabled.mechanisms."""

    def __init__(self, cluster, users: Users, *, broker: int = 0, client: str = "client-1",
                 mechanisms=MECHANISMS, seed: int | None = None, listener: str = "SASL_PLAINTEXT",
                 host: str | None = None):
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            raise ValueError(f"SASL mechanisms must be some of {', '.join(MECHANISMS)}, not {list(mechanisms)}")
        self.cluster, self.users, self.broker, self.client = cluster, users, broker, client
        self.listener = listener           # the listener name Cluster.dispatch is told
        self.host = host                   # the client's address Cluster.dispatch is told (ACL hosts)
        self.mechanisms = list(mechanisms)
        self.machine = Machine(st.TABLE, client, cluster.transition)
        self.principal: str | None = None
        self.mechanism: str | None = None
        self._server = None
        self._raw = False                  # a v0 handshake: tokens come as bare size-prefixed bytes
        # server nonces: unpredictable on a live listener, reproducible when a run gives a seed
        self._rng = random.SystemRandom() if seed is None else random.Random(f"{seed}:{broker}:{client}")

    @property
    def state(self) -> str:
        return self.machine.state

    @property
    def max_receive(self) -> int | None:
        """The largest frame size the connection may announce now (None: the listener's own bound)."""
        return None if self.state == st.COMPLETE else SASL_SERVER_MAX_RECEIVE_SIZE

    def refuse_size(self, size: int) -> tuple[str, bytes]:
        """A size prefix outside 0..max_receive (NetworkReceive's InvalidReceiveException, which
        SaslServerAuthenticator.authenticate turns into a failed authentication): closed unanswered."""
        return self._fail("receive-too-large", f"Failing SASL authentication due to invalid receive size ({size} "
                          f"bytes; sasl.server.max.receive.size {SASL_SERVER_MAX_RECEIVE_SIZE})", b"")

    def handle(self, frame: bytes) -> tuple[str, bytes]:
        if self.state == st.COMPLETE:
            return self.cluster.dispatch(frame, broker=self.broker, client=self.client, principal=self.principal,
                                         listener=self.listener, host=self.host)
        if self.state == st.FAILED:
            return "close", b""
        if self._raw:
            return self._token(codec.unframe(bytes(frame)), None)
        try:
            key, version = struct.unpack_from(">hh", codec.unframe(bytes(frame)), 0)
            api = registry.by_api_key(key, "request").api
        except Exception:  # noqa: BLE001 - not a Kafka request at all
            return self._fail("unexpected-request", "Invalid request, potential reasons: kafka client configured "
                              "with the wrong security protocol, it does not support KIP-43 or it is not a kafka "
                              "client.", b"")
        if api == "ApiVersions" and self.state == st.INITIAL:
            kind, out = self.cluster.dispatch(frame, broker=self.broker, client=self.client, listener=self.listener,
                                              host=self.host)
            # an ApiVersions that failed (unsupported version, invalid fields) leaves the state as it is
            if kind == "send" and _error_code(out) == 0:
                self.machine.fire("api-versions")
            return kind, out
        if api == "SaslHandshake" and self.state in (st.INITIAL, st.HANDSHAKE):
            return self._handshake(frame)
        if api == "SaslAuthenticate" and self.state == st.AUTHENTICATE:
            return self._authenticate(frame)
        if self.state == st.AUTHENTICATE:
            req = self._read(frame)
            if req is None:
                return self._fail("authentication-failed", "unreadable request", b"")
            message = f"Unexpected Kafka request of type {api} during SASL authentication."
            body = error_response(api, req["version"], req["body"], CODE["ILLEGAL_SASL_STATE"])
            return self._fail("authentication-failed", message, self._answer(req, body))
        return self._fail("unexpected-request", f"Unexpected Kafka request of type {api} during SASL handshake.", b"")

    # ---- steps --------------------------------------------------------------------------------------
    def _read(self, frame: bytes, redact: bool = False) -> dict | None:
        try:
            req = codec.decode_request(frame, trailing_ok=True)
        except DecodeError:
            return None
        body = dict(req["body"], AuthBytes=b"") if redact else req["body"]
        self.cluster.emit(ev.RequestReceived, broker=self.broker, client=self.client, api=req["api"],
                          version=req["version"], correlation_id=req["correlation_id"], body=body,
                          frame=b"" if redact else bytes(frame))
        return req

    def _answer(self, req: dict, body: dict) -> bytes:
        out = codec.encode_response(req["api"], req["version"], body, correlation_id=req["correlation_id"])
        self.cluster.emit(ev.ResponseSent, broker=self.broker, client=self.client, api=req["api"],
                          version=req["version"], correlation_id=req["correlation_id"], body=body,
                          error_codes=error_codes(body), frame=out)
        return out

    def _fail(self, event: str, why: str, out: bytes) -> tuple[str, bytes]:
        self.machine.fire(event)
        self.cluster.emit(ev.SaslFailed, broker=self.broker, client=self.client, mechanism=self.mechanism, why=why)
        return "close", out

    def _handshake(self, frame: bytes) -> tuple[str, bytes]:
        req = self._read(frame)
        if req is None:
            return self._fail("unexpected-request", "unreadable SaslHandshake", b"")
        mechanism = req["body"].get("Mechanism")
        body = handshake_body(mechanism, self.mechanisms)
        if body["ErrorCode"]:
            return self._fail("unsupported-mechanism", f"Unsupported SASL mechanism {mechanism}",
                              self._answer(req, body))
        self.mechanism = mechanism
        self._raw = req["version"] == 0
        self._server = _Plain(self.users) if mechanism == "PLAIN" else _Scram(self.users, mechanism, self._rng)
        self.machine.fire("handshake")
        return "send", self._answer(req, body)

    def _authenticate(self, frame: bytes) -> tuple[str, bytes]:
        req = self._read(frame, redact=self.mechanism == "PLAIN")
        if req is None:
            return self._fail("authentication-failed", "unreadable SaslAuthenticate", b"")
        return self._token(bytes(req["body"].get("AuthBytes") or b""), req)

    def _token(self, token: bytes, req: dict | None) -> tuple[str, bytes]:
        """One SASL token through the mechanism: answered in a SaslAuthenticate response (v1
        handshake) or as bare size-prefixed bytes (v0)."""
        try:
            reply, done = self._server.step(token)
        except (_AuthFailed, _Generic) as e:
            text = str(e) if isinstance(e, _AuthFailed) else (
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{self.mechanism}")
            out = b"" if req is None else self._answer(req, authenticate_body(None, text))
            return self._fail("authentication-failed", f"{self.mechanism}: {e}", out)
        if done:
            self.principal = f"User:{self._server.name}"
            self.machine.fire("authenticated")
            self.cluster.emit(ev.SaslAuthenticated, broker=self.broker, client=self.client, mechanism=self.mechanism,
                              principal=self.principal)
        else:
            self.machine.fire("challenge")
        if req is None:
            return "send", codec.frame(reply)
        return "send", self._answer(req, authenticate_body(reply))


def _error_code(frame: bytes) -> int:
    """The ErrorCode of an ApiVersions response frame (it comes first after the header: bytes 8-10)."""
    return struct.unpack_from(">h", frame, 8)[0] if len(frame) >= 10 else -1
