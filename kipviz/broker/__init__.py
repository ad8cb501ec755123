"""kipviz's sans-IO Kafka model: coordinators driven by real wire bytes and a virtual clock.

    from kipviz.broker import Cluster
    cluster = Cluster(seed=1)
    cluster.create_topic("orders", 3)
    response = cluster.handle(kipviz.codec.encode_request("Metadata", 12, {...}))
"""
from .api_errors import errors_by_version
from .cluster import Cluster
from .config import Acl, ClusterConfig, served_versions
from .machine import InvalidTransition, Machine, Row, Table

__all__ = ["errors_by_version", "Cluster", "ClusterConfig", "Acl", "served_versions", "Machine", "Table", "Row",
           "InvalidTransition"]
