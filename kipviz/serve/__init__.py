"""`kipviz serve`: the cluster model behind real sockets, so real Kafka clients (librdkafka,
kafka-python, the Java client) can talk to it while a notebook watches.

    from kipviz.serve import Server
    with Server(brokers=3) as srv:            # or Server(cluster) for a Cluster you already have
        print(srv.bootstrap)                  # "127.0.0.1:40123,127.0.0.1:40124,127.0.0.1:40125"
        ...                                   # point bootstrap.servers at it; srv.cluster.events grows

The edge lives here (sockets, wall clock, one asyncio loop in a background thread); everything Kafka
does is the sans-IO model's (kipviz.broker), reached only through Cluster.dispatch,
Cluster.take_completed, Cluster.advance and Cluster.connection_closed.

A SASL_PLAINTEXT listener (not wired here yet) puts one kipviz.broker.sasl.Authenticator in front of
each connection and calls it instead of Cluster.dispatch; it answers with the same kinds plus
"close" after a failed authentication, and hands the frames to the cluster with the connection's
principal once authenticated (Authenticator.principal):

    users = Users.load(path)                            # "name = password" per line
    auth = Authenticator(srv.cluster, users, broker=b, client=peer)    # per connection
    kind, out = auth.handle(frame)                      # under srv.lock, like Cluster.dispatch"""
from __future__ import annotations

from ..broker.sasl import Authenticator, Users
from .server import Server


def __getattr__(name):
    if name == "LiveView":            # ipywidgets only when a notebook asks for the view
        from .live import LiveView
        return LiveView
    raise AttributeError(name)


__all__ = ["Server", "LiveView", "Authenticator", "Users"]
