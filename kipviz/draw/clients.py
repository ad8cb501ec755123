"""Which client a connection belongs to, for the pictures: the client.id its requests carry.

    names = client_names(events)      # {event .client: the ClientId of its requests' headers}
    names.get(ev.client, ev.client)

A live server names each connection by its peer address ("127.0.0.1:42454"), so an admin, a
producer and a consumer would look alike; every request header from v1 on carries the client's
client.id, which the pictures show instead. The kit's own clients send their name as client.id,
so for a model run every name maps to itself. A connection whose requests carry no client id
(header v0, or no frame kept) keeps its own name."""
from __future__ import annotations

from ..codec.framing import decode_request_header
from ..errors import DecodeError, UnknownMessageError
from ..schema import events as E

__all__ = ["client_names", "client_name"]


def client_names(events) -> dict[str, str]:
    """{connection name (an event's `client`): the client.id its first request with one carries}."""
    out: dict[str, str] = {}
    for ev in events:
        if isinstance(ev, E.RequestReceived) and ev.client not in out and ev.frame:
            try:
                cid = decode_request_header(ev.frame).get("ClientId")
            except (DecodeError, UnknownMessageError):
                continue
            if cid:
                out[ev.client] = cid
    return out


def client_name(names: dict[str, str], connection: str) -> str:
    return names.get(connection, connection)
