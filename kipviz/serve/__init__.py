"""`kipviz serve`: the cluster model behind real sockets, so real Kafka clients (librdkafka,
kafka-python, the Java client) can talk to it while a notebook watches.

    from kipviz.serve import Server
    with Server(brokers=3) as srv:            # or Server(cluster) for a Cluster you already have
        print(srv.bootstrap)                  # "127.0.0.1:40123,127.0.0.1:40124,127.0.0.1:40125"
        ...                                   # point bootstrap.servers at it; srv.cluster.events grows

The edge lives here (sockets, wall clock, one asyncio loop in a background thread); everything Kafka
does is the sans-IO model's (kipviz.broker), reached only through Cluster.dispatch,
Cluster.take_completed, Cluster.advance and Cluster.connection_closed.

With users, a SASL_PLAINTEXT listener runs beside the plaintext one (kipviz.serve.listeners):
each of its connections authenticates through a kipviz.broker.sasl.Authenticator before the model
sees a request, then its frames reach Cluster.dispatch with the authenticated principal:

    with Server(users={"ana": "ana-pw"}, acls="acls.txt", super_users=("User:host",)) as srv:
        print(srv.sasl_bootstrap)             # security.protocol=SASL_PLAINTEXT, sasl.mechanism=SCRAM-SHA-256, ..."""
from __future__ import annotations

from ..broker.sasl import Authenticator, Users
from .server import Server


def __getattr__(name):
    if name == "LiveView":            # ipywidgets only when a notebook asks for the view
        from .live import LiveView
        return LiveView
    raise AttributeError(name)


__all__ = ["Server", "LiveView", "Authenticator", "Users"]
