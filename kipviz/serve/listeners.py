"""The listeners of `kipviz serve` and what each puts in front of the model per connection.

    PLAINTEXT        every frame goes to Cluster.dispatch as User:ANONYMOUS (as before SASL existed)
    SASL_PLAINTEXT   a kipviz.broker.sasl.Authenticator reads the frames until the client is
                     authenticated -- ApiVersions and SaslHandshake first, then SaslAuthenticate;
                     any other request before that closes the connection -- then hands them to
                     Cluster.dispatch with the authenticated principal, as Kafka's
                     SaslServerAuthenticator does before KafkaApis sees a request
                     (clients/src/main/java/org/apache/kafka/common/security/authenticator/
                     SaslServerAuthenticator.java, handleKafkaRequest)

Each connection's object answers `kind, out = session.handle(frame)` (the kinds of
Cluster.dispatch; "close" may carry a last answer, which is written before the close, both after
`session.close_delay_s`: Kafka delays a failed authentication's answer and close by
connection.failed.authentication.delay.ms). The
listener's name goes to the model with every frame, so Metadata, FindCoordinator, DescribeCluster
and the Produce/Fetch NodeEndpoints advertise the brokers on the listener the client came in on
(KafkaApis asks the metadata cache by request.context.listenerName): a client on the SASL port is
told SASL ports.

Who may do what on a served cluster (`access_settings`; docs/workshop.md, "A shared server"):
  - no users and no ACLs: no authorizer, everyone may do everything (Kafka without
    authorizer.class.name), CreateAcls answers SECURITY_DISABLED -- `kipviz serve` as it always was;
  - users without ACLs: the authorizer is on with no bindings and allow.everyone.if.no.acl.found
    true, so every authenticated user may do everything until a binding names a resource (the
    host adds prefixed bindings during the session with CreateAcls);
  - ACLs given: the authorizer with those bindings and Kafka's default
    allow.everyone.if.no.acl.found=false: what no binding allows is denied;
  - super users may do everything in either case; an explicit allow_everyone_if_no_acl_found wins.
With users, the PLAINTEXT listener stays on the loopback address whatever `host` is: only the
host's own tools reach it unauthenticated, learners come in on SASL_PLAINTEXT."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from ..broker.sasl import MECHANISMS, Authenticator, Users, UsersError
from ..broker.tables import sasl as sasl_states

PLAINTEXT, SASL_PLAINTEXT = "PLAINTEXT", "SASL_PLAINTEXT"
ANONYMOUS = "User:ANONYMOUS"          # KafkaPrincipal.ANONYMOUS: every PLAINTEXT connection's principal
LOOPBACK = "127.0.0.1"
# connection.failed.authentication.delay.ms (SocketServerConfigs.FAILED_AUTHENTICATION_DELAY_MS_DEFAULT):
# a failed authentication's answer, and the close after it, wait this long (KafkaChannel.prepare
# throws DelayedResponseAuthenticationException; Selector.maybeDelayCloseOnAuthenticationFailure)
FAILED_AUTHENTICATION_DELAY_MS = 100


class _Direct:
    """A PLAINTEXT connection: each frame straight to the model."""
    principal = ANONYMOUS
    close_delay_s = 0.0
    max_receive = None                    # socket.request.max.bytes only

    def __init__(self, cluster, broker: int, client: str, host: str | None = None):
        self.cluster, self.broker, self.client, self.host = cluster, broker, client, host

    def handle(self, frame: bytes) -> tuple[str, bytes]:
        return self.cluster.dispatch(frame, broker=self.broker, client=self.client, listener=PLAINTEXT,
                                     host=self.host)


class _Sasl(Authenticator):
    """A SASL_PLAINTEXT connection: the Authenticator, and how long a close after its failure waits."""

    @property
    def close_delay_s(self) -> float:
        return FAILED_AUTHENTICATION_DELAY_MS / 1000 if self.state == sasl_states.FAILED else 0.0


@dataclass
class Listener:
    """One listener name on every broker: brokers listen on host:port, port+1, ... (port 0: free
    ports). `users` None: PLAINTEXT; else SASL_PLAINTEXT with those users and `mechanisms`."""
    name: str
    host: str
    port: int
    users: Users | None = None
    mechanisms: tuple[str, ...] = MECHANISMS
    addresses: list[tuple[str, int]] = field(default_factory=list)    # bound, per broker id

    def session(self, cluster, broker: int, client: str, host: str | None = None):
        """The connection's object; `host`: the peer's address (ACL hosts are matched against it)."""
        if self.users is None:
            return _Direct(cluster, broker, client, host)
        return _Sasl(cluster, self.users, broker=broker, client=client, mechanisms=self.mechanisms,
                     listener=self.name, host=host)

    def port_of(self, broker: int) -> int:
        """The port broker `broker` listens on (0: any free port)."""
        return 0 if self.port == 0 else self.port + broker


def users_from(users) -> Users:
    """Server(users=...): a Users, a dict of name -> password, or the path of a users file."""
    if isinstance(users, Users):
        return users
    if isinstance(users, dict):
        return Users(users)
    if isinstance(users, (str, Path)):
        return Users.load(users)
    raise UsersError(f"users must be a dict of name -> password, a Users or a users file's path, "
                     f"not {type(users).__name__}")


def acls_from(acls):
    """Server(acls=...): a list of Acl, the path of an ACL file (kipviz.serve.acl_file), or None."""
    if isinstance(acls, (str, Path)):
        from .acl_file import load_acls
        return load_acls(acls)
    return acls


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine's loopback."""
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host == "localhost"


def listeners_for(host: str, port: int, brokers: int, users: Users | None, sasl_port: int | None,
                  mechanisms=MECHANISMS) -> list[Listener]:
    """PLAINTEXT first (on loopback when there are users), then SASL_PLAINTEXT when there are users,
    on `sasl_port` (None: the port after the PLAINTEXT brokers' ports, or free ports with port 0)."""
    if users is None:
        return [Listener(PLAINTEXT, host, port)]
    if sasl_port is None:
        sasl_port = 0 if port == 0 else port + brokers
    if port and sasl_port and not (sasl_port + brokers <= port or port + brokers <= sasl_port):
        raise ValueError(f"the SASL port range {sasl_port}-{sasl_port + brokers - 1} overlaps the plaintext "
                         f"one {port}-{port + brokers - 1}")
    plain_host = host if is_loopback(host) else LOOPBACK
    return [Listener(PLAINTEXT, plain_host, port),
            Listener(SASL_PLAINTEXT, host, sasl_port, users=users, mechanisms=tuple(mechanisms))]


def access_settings(*, users: bool, acls, super_users=None, allow_everyone_if_no_acl_found: bool | None = None) -> dict:
    """The authorizer's cluster settings for a served cluster (the rules in the module text)."""
    if acls is None and not users:
        if super_users or allow_everyone_if_no_acl_found is not None:
            raise ValueError("super users and allow.everyone.if.no.acl.found need users or ACLs: without "
                             "an authorizer everyone may do everything")
        return {}
    allow = acls is None if allow_everyone_if_no_acl_found is None else allow_everyone_if_no_acl_found
    return {"acls": list(acls or []), "super_users": tuple(super_users or ()),
            "allow_everyone_if_no_acl_found": allow}
