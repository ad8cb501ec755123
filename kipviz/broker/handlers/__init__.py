"""Request handlers, one module per area; each registers its APIs with @handles."""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

HANDLERS: dict[str, Callable] = {}
# a handler returns broker/deferred.py's DEFERRED when Kafka holds the request (JoinGroup until the
# group rebalances, SyncGroup until the leader assigns); it answers later with Cluster.complete
# a handler returns CLOSE where Kafka answers nothing and closes the connection (an acks=0 Produce
# with an error: KafkaApis.handleProduceRequest -> requestHelper.closeConnection)
CLOSE = object()


@dataclass
class Request:
    api: str
    version: int
    correlation_id: int
    header: dict
    body: dict
    broker: int
    client: str
    principal: str
    # the listener the connection came in on (RequestContext.listenerName): brokers are told at
    # their endpoint on the same listener
    listener: str = "PLAINTEXT"
    # the client's address (RequestContext.clientAddress, its getHostAddress()): what an ACL's host
    # is matched against; None where no edge gave one (scenarios), and then only "*" ACLs match
    host: str | None = None


def handles(*apis: str):
    def register(fn):
        for api in apis:
            if api in HANDLERS:
                raise ValueError(f"two handlers for {api}")
            HANDLERS[api] = fn
        return fn
    return register


def load_all() -> dict[str, Callable]:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return HANDLERS
