"""Who is talking in a capture: per connection the client id, the client software (ApiVersions v3+,
KIP-511: clients/src/main/resources/common/message/ApiVersionsRequest.json ClientSoftwareName /
ClientSoftwareVersion), the version of each API it chose against what the broker advertised, and
the Kafka release the broker's ApiVersions answer matches best among the kit's release profiles
(kipviz.schema.releases.served, the rule the broker model serves by)."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from ..errors import UnknownMessageError
from ..schema import registry, releases


@dataclass
class Connection:
    """One client connection as the capture shows it."""
    index: int
    client: str                      # "ip:port"
    server: str
    client_id: str | None = None
    software: str | None = None
    software_version: str | None = None
    chosen: dict[str, set] = field(default_factory=dict)     # api -> versions the client sent
    exchanges: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The lane name: client id and the client port (several connections share a client id)."""
        port = self.client.rsplit(":", 1)[-1]
        return f"{self.client_id or 'client'} :{port}"


@dataclass
class BrokerGuess:
    """The release a broker's ApiVersions answer matches best: matched of compared APIs agree."""
    server: str
    advertised: dict[str, tuple[int, int]]
    release: str | None
    matched: int
    compared: int
    scores: dict[str, int] = field(default_factory=dict)


def _advertised(body: dict) -> dict[str, tuple[int, int]]:
    out = {}
    for row in body.get("ApiKeys") or ():
        try:
            spec = registry.by_api_key(row["ApiKey"], "request")
        except (UnknownMessageError, KeyError):
            continue
        out[spec.api] = (row["MinVersion"], row["MaxVersion"])
    return out


def guess_release(advertised: dict[str, tuple[int, int]]) -> tuple[str | None, int, dict[str, int]]:
    """(release, APIs agreeing, score per release): each release scores the advertised APIs whose
    (min, max) is what it serves (proposed versions counted when the broker advertises them, as a
    feature level switches them on: kipviz.schema.releases.served_list); ties go to the newest."""
    scores = {}
    for rel in releases.RELEASES:
        n = 0
        for api, rng in advertised.items():
            spec = registry.get(api + "Request")
            if rng in (releases.served(spec, rel), releases.served(spec, rel, frozenset({api}))):
                n += 1
        scores[rel] = n
    if not advertised:
        return None, 0, scores
    best = max(releases.RELEASES, key=lambda r: (scores[r], releases.release_key(r)))
    return best, scores[best], scores


def who(exchanges) -> tuple[list[Connection], list[BrokerGuess]]:
    """The connections (in order of their first exchange) and one guess per broker address."""
    conns: dict[int, Connection] = {}
    brokers: dict[str, BrokerGuess] = {}
    for i, ex in enumerate(exchanges):
        if ex.get("connection") is None:
            continue
        c = conns.get(ex["connection"])
        if c is None:
            c = conns[ex["connection"]] = Connection(ex["connection"], ex["client"], ex["server"])
        c.exchanges.append(i)
        req = ex.get("request")
        if req is None:
            continue
        c.client_id = c.client_id or req["header"].get("ClientId")
        c.chosen.setdefault(req["api"], set()).add(req["version"])
        if req["api"] == "ApiVersions":
            c.software = c.software or req["body"].get("ClientSoftwareName")
            c.software_version = c.software_version or req["body"].get("ClientSoftwareVersion")
            resp = ex.get("response")
            if resp and not resp["body"].get("ErrorCode") and ex["server"] not in brokers:
                adv = _advertised(resp["body"])
                rel, n, scores = guess_release(adv)
                brokers[ex["server"]] = BrokerGuess(ex["server"], adv, rel, n, len(adv), scores)
    return list(conns.values()), list(brokers.values())


def _versions(vs) -> str:
    return ", ".join(f"v{v}" for v in sorted(vs))


class Who:
    """The `who` part of a report: connections and broker guesses, as text and HTML."""

    def __init__(self, connections: list[Connection], brokers: list[BrokerGuess]):
        self.connections, self.brokers = connections, brokers

    def advertised_for(self, server: str) -> dict[str, tuple[int, int]]:
        """The (min, max) per API the broker at `server` advertised."""
        b = next((b for b in self.brokers if b.server == server), None)
        return b.advertised if b else {}

    def choice_text(self, c: Connection, api: str) -> str:
        """The versions connection `c` sent of `api`, next to the broker's range."""
        rng = self.advertised_for(c.server).get(api)
        adv = f" (broker: v{rng[0]}-v{rng[1]})" if rng else ""
        return f"{api} {_versions(c.chosen[api])}{adv}"

    def lines(self) -> list[str]:
        """The part as text lines: each broker's guess, then each connection."""
        out = []
        for b in self.brokers:
            what = (f"Kafka {b.release} (its ApiVersions answer matches {b.matched} of {b.compared} APIs "
                    f"of the kit's {b.release} profile)" if b.release else "no release guessed")
            out.append(f"broker {b.server}: {what}")
        for c in self.connections:
            soft = f"{c.software} {c.software_version}" if c.software else "software not said (ApiVersions < v3)"
            out.append(f"connection {c.index} {c.client} -> {c.server}: client id {c.client_id!r}, {soft}")
            if c.chosen:
                out.append("    " + "; ".join(self.choice_text(c, a) for a in sorted(c.chosen)))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(
            f"<tr><td>{c.index}</td><td>{e(c.client)}</td><td>{e(c.client_id or '')}</td>"
            f"<td>{e(c.software or '')} {e(c.software_version or '')}</td>"
            f"<td>{e('; '.join(self.choice_text(c, a) for a in sorted(c.chosen)))}</td></tr>"
            for c in self.connections)
        guesses = "".join(f"<li>broker {e(b.server)}: Kafka {e(b.release or '?')} "
                          f"({b.matched}/{b.compared} APIs match)</li>" for b in self.brokers)
        return (f"<div class='kv-who'><h3>Who is talking</h3><ul>{guesses}</ul><table>"
                "<tr><th>conn</th><th>client</th><th>client id</th><th>software</th><th>versions chosen</th></tr>"
                f"{rows}</table></div>")
