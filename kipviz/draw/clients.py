"""Which client a connection belongs to, for the pictures: the client.id its requests carry.

    names = client_names(events)      # {event .client: the ClientId of its requests' headers}
    names.get(ev.client, ev.client)

A live server names each connection by its peer address ("127.0.0.1:42454"), so an admin, a
producer and a consumer would look alike; every request header from v1 on carries the client's
client.id, which the pictures show instead. The kit's own clients send their name as client.id,
so for a model run every name maps to itself. A picture of the newest events of a live server
may hold no request of a connection whose first request is long gone (or whose frame was
slimmed): `known`, the cluster's Cluster.client_ids, names it. A connection whose requests carry
no client id (header v0) keeps its own name."""
from __future__ import annotations

from collections.abc import Mapping

from ..codec.framing import decode_request_header
from ..errors import DecodeError, UnknownMessageError
from ..schema import events as E

__all__ = ["client_names", "client_name"]


def client_names(events, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """{connection name (an event's `client`): the client.id its first request with one carries,
    else the one `known` gives}."""
    out: dict[str, str] = {}
    for ev in events:
        if isinstance(ev, E.RequestReceived) and ev.client not in out and ev.frame:
            try:
                cid = decode_request_header(ev.frame).get("ClientId")
            except (DecodeError, UnknownMessageError):
                continue
            if cid:
                out[ev.client] = cid
    if known:
        for ev in events:
            c = getattr(ev, "client", None)
            if c is not None and c not in out and c in known:
                out[c] = known[c]
    return out


def client_name(names: dict[str, str], connection: str) -> str:
    """The client.id of a connection, or the connection's own name when none is known."""
    return names.get(connection, connection)
