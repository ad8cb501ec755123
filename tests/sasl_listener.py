"""A test-only SASL_PLAINTEXT listener: one thread per connection, each with its own
kipviz.broker.sasl.Authenticator in front of one Cluster (the socket edge the real `kipviz serve`
listener will be; this one exists so real clients can be tried against the sans-IO API now). No
long polling: requests are answered at once. 127.0.0.1 only, free ports, bounded waits.

    with SaslListener(users={"alice": "alice-secret"}, acls=[...]) as srv:
        ... a client with security.protocol=SASL_PLAINTEXT at srv.bootstrap ..."""
from __future__ import annotations

import socket
import struct
import threading

from kipviz.broker import Cluster
from kipviz.broker.sasl import Authenticator, Users


class SaslListener:
    def __init__(self, users: dict[str, str], *, mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
                 **cluster_settings):
        self.cluster = Cluster(brokers=1, **cluster_settings)
        self.users = Users(users)
        self.mechanisms = mechanisms
        self.lock = threading.Lock()
        self.authenticated: list[str] = []         # principals, in the order their connections authenticated
        self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(16)
        self._srv.settimeout(0.05)
        self.port = self._srv.getsockname()[1]
        self.cluster.config.advertised_listeners = {0: ("127.0.0.1", self.port)}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> SaslListener:
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5)
        self._srv.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self._srv.accept()
            except OSError:
                continue
            t = threading.Thread(target=self._serve, args=(conn, f"{peer[0]}:{peer[1]}"), daemon=True)
            t.start()
            self._threads.append(t)

    def _read(self, conn, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            if self._stop.is_set():
                return None
            try:
                chunk = conn.recv(n - len(buf))
            except TimeoutError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def _serve(self, conn, client: str) -> None:
        conn.settimeout(0.1)
        with self.lock:
            auth = Authenticator(self.cluster, self.users, broker=0, client=client, mechanisms=self.mechanisms)
        try:
            while True:
                head = self._read(conn, 4)
                if head is None:
                    return
                payload = self._read(conn, struct.unpack(">i", head)[0])
                if payload is None:
                    return
                with self.lock:
                    was = auth.principal
                    kind, out = auth.handle(head + payload)
                    if auth.principal and not was:
                        self.authenticated.append(auth.principal)
                if out:
                    conn.sendall(out)
                if kind == "close":
                    return
        finally:
            with self.lock:
                self.cluster.connection_closed(client, 0)
            conn.close()
