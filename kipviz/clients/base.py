"""What the producer and consumer models share: the wire (frames, correlation ids), ApiVersions
negotiation (with the UNSUPPORTED_VERSION v0-layout fallback), the version choice per API
(min(client max, broker max)), the retry loop on the virtual clock, the typed events of the
clients' decisions (`did`, schema/events.py's client section), FindCoordinator and the Metadata /
topic-id caches.

Subclasses say how they fail through a few hooks (`_unsupported`, `_api_versions_failed`,
`_retries_exhausted`, `_coordinator_error`) and may read more of the ApiVersions and Metadata
results (`_transaction_version`, `metadata_extra`) or add to what a retry refreshes (`_refresh`)."""
from __future__ import annotations

import itertools
import uuid

from .. import codec
from ..codec.fit import complete_body
from ..errors import DecodeError
from ..schema import events as ev
from ..schema import registry
from ..schema.error_codes import CODE, NAME, RETRIABLE
from ..uuids import ZERO_UUID

E = CODE
NETWORK_EXCEPTION = CODE["NETWORK_EXCEPTION"]

# client-side caps that are not "newest non-proposed version"
CLIENT_MAX = {"AddPartitionsToTxn": 3}      # v4+ is the broker-to-coordinator form (KIP-890)


def client_max_version(api: str) -> int:
    """The kit's newest non-proposed request version of `api` (with the client caps above)."""
    spec = registry.get(api + "Request")
    ok = [v for v in spec.versions if (st := spec.status(v)) is None or st.status != "proposed"]
    top = max(ok)
    return min(top, CLIENT_MAX.get(api, top))


def client_min_version(api: str) -> int:
    """The kit's oldest request version of `api`."""
    return min(registry.get(api + "Request").versions)


def error_name_code(error: str | int) -> tuple[str, int | None]:
    """(name, code) of a Kafka error given by either."""
    if isinstance(error, int):
        return NAME.get(error, f"ERROR_{error}"), error
    return error, CODE.get(error)


def error_text(name: str, api: str | None, message: str) -> str:
    """The message of a client error: name, (api), message."""
    where = f" ({api})" if api else ""
    return f"{name}{where}" + (f": {message}" if message else "")


class Retry(Exception):
    """Raised inside an attempt: back off and try again, refreshing `refresh` first
    ("coordinator", "metadata", or "group:<id>" for the producer's group coordinators)."""

    def __init__(self, code: int, refresh: str | None = None):
        self.code, self.refresh = code, refresh


class ClientBase:
    """What the producer and consumer models share (see the module); its public methods are the seams their
    parts use."""
    SOFTWARE_NAME = "kipviz-client"

    def __init__(self, cluster, client_id: str, *, bootstrap_broker: int, principal: str, retries: int,
                 retry_backoff_ms: int, client_versions: dict[str, int] | None):
        self.cluster = cluster
        self.client_id = client_id
        self.bootstrap_broker = bootstrap_broker
        self.principal = principal
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.client_versions = dict(client_versions or {})
        self.broker_versions: dict[str, tuple[int, int]] | None = None
        self._cid = itertools.count(1)
        self._coordinator: int | None = None
        self._metadata: dict[str, dict] = {}
        self._names: dict[uuid.UUID, str] = {}
        self._chosen: dict[str, int] = {}

    # ---- hooks -------------------------------------------------------------------------------------
    def _unsupported(self, api: str, message: str) -> Exception:
        raise NotImplementedError

    def _api_versions_failed(self, code: int) -> Exception:
        raise NotImplementedError

    def _retries_exhausted(self, code: int, message: str, api: str) -> Exception:
        raise NotImplementedError

    def _coordinator_error(self, code: int, api: str) -> Exception:
        """The exception for a non-retriable FindCoordinator error."""
        raise NotImplementedError

    def _transaction_version(self, resp: dict) -> int | None:
        """The finalized transaction.version the client reads from the ApiVersions answer (after
        broker_versions is set); None for a client that does not read it."""
        return None

    def metadata_extra(self, version: int) -> dict:
        """Extra keys of a topic's metadata entry."""
        return {}

    def _refresh(self, refresh: str | None) -> None:
        if refresh == "coordinator":
            self._coordinator = None
        elif refresh == "metadata":
            self._metadata.clear()

    # ---- events and state --------------------------------------------------------------------------
    def did(self, kind: type[ev.ClientDid], **fields) -> ev.ClientDid:
        """Record one of this client's decisions (a ClientDid class of schema/events.py), `client` filled in."""
        return self.cluster.emit(kind, client=self.client_id, **fields)

    def set_state(self, state: str, why: str = "") -> None:
        """Move the client's state (a StateMoved event when it changes)."""
        if state != self.state:
            self.did(ev.StateMoved, from_state=self.state, to_state=state, reason=why)
            self.state = state

    # ---- the wire ----------------------------------------------------------------------------------
    def encode_frame(self, api: str, version: int, body: dict) -> tuple[int, bytes]:
        """(correlation id, request frame) of `api` at `version`, the body completed with defaults."""
        cid = next(self._cid)
        return cid, codec.encode_request(api, version, complete_body(api + "Request", version, body),
                                         correlation_id=cid, client_id=self.client_id)

    def send_frame(self, frame: bytes, broker: int) -> bytes:
        """Hand a frame to the cluster as this client; its answer (b"": none)."""
        return self.cluster.handle(frame, broker=broker, client=self.client_id, principal=self.principal)

    def call(self, api: str, version: int, body: dict, broker: int) -> dict:
        """Encode, hand the frame to the cluster, decode the answer; b"" becomes a retriable
        NETWORK_EXCEPTION (the connection was closed, or the broker is down)."""
        _, frame = self.encode_frame(api, version, body)
        out = self.send_frame(frame, broker)
        if not out:
            raise Retry(NETWORK_EXCEPTION, refresh="coordinator")
        return codec.decode_response(out, api, version)["body"]

    def retrying(self, what: str, attempt):
        """Run attempt() until it returns; Retry means back off (virtual time) and try again."""
        last = None
        for n in range(self.retries + 1):
            try:
                return attempt()
            except Retry as r:
                last = r
                self.did(ev.Retried, api=what, error=NAME.get(r.code, str(r.code)), attempt=n + 1,
                          backoff_ms=self.retry_backoff_ms)
                self._refresh(r.refresh)
                self.cluster.advance(self.retry_backoff_ms)
        raise self._retries_exhausted(last.code, f"still failing after {self.retries} retries", what)

    # ---- versions ----------------------------------------------------------------------------------
    def api_versions(self) -> None:
        """ApiVersions once (with the UNSUPPORTED_VERSION fallback); sets broker_versions."""
        if self.broker_versions is not None:
            return
        version = self.client_versions.get("ApiVersions", client_max_version("ApiVersions"))
        body = {"ClientSoftwareName": self.SOFTWARE_NAME, "ClientSoftwareVersion": "1.0"}

        def attempt():
            nonlocal version
            _, frame = self.encode_frame("ApiVersions", version, body)
            out = self.send_frame(frame, self.bootstrap_broker)
            if not out:
                raise Retry(NETWORK_EXCEPTION)
            try:
                resp = codec.decode_response(out, "ApiVersions", version)["body"]
            except DecodeError:       # an UNSUPPORTED_VERSION answer comes in the v0 layout
                resp = codec.decode_response(out, "ApiVersions", 0)["body"]
            if resp["ErrorCode"] == E["UNSUPPORTED_VERSION"]:
                theirs = next((k["MaxVersion"] for k in resp["ApiKeys"]
                               if k["ApiKey"] == registry.api_key(registry.get("ApiVersionsRequest"))), 0)
                self.did(ev.VersionFallback, api="ApiVersions", version=version, fallback_to=theirs,
                          reason="broker answered UNSUPPORTED_VERSION")
                if theirs >= version:
                    raise Retry(E["UNSUPPORTED_VERSION"])
                version = theirs
                return attempt()    # NetworkClient re-sends at once in the version the broker named
            if resp["ErrorCode"]:
                raise self._api_versions_failed(resp["ErrorCode"])
            return resp
        resp = self.retrying("ApiVersions", attempt)
        versions = {}
        for k in resp["ApiKeys"]:
            try:
                api = registry.by_api_key(k["ApiKey"], "request").api
            except Exception:  # noqa: BLE001 - an api key the kit does not define
                continue
            versions[api] = (k["MinVersion"], k["MaxVersion"])
        self.broker_versions = versions
        self.did(ev.ApiVersionsLearned, version=version, transaction_version=self._transaction_version(resp),
                  apis=len(versions))

    def client_max(self, api: str) -> int:
        """This client's newest usable version of `api` (after ApiVersions)."""
        return self.client_versions.get(api, client_max_version(api))

    def choose_version(self, api: str, cap: int | None = None, floor: int | None = None) -> int:
        """min(client max, broker max), or the `_unsupported` error if none fits (or the best is
        below `floor`)."""
        self.api_versions()
        mine = self.client_max(api)
        if cap is not None:
            mine = min(mine, cap)
        theirs = self.broker_versions.get(api)
        if theirs is None or theirs[1] < client_min_version(api) or mine < theirs[0]:
            raise self._unsupported(api, f"broker serves {theirs}")
        chosen = min(mine, theirs[1])
        if floor is not None and chosen < floor:
            raise self._unsupported(api, f"needs v{floor}+, can use v{chosen}")
        if self._chosen.get(api) != chosen:
            self._chosen[api] = chosen
            self.did(ev.VersionChosen, api=api, version=chosen, client_max=mine, broker_max=theirs[1])
        return chosen

    # ---- coordinators and metadata -----------------------------------------------------------------
    def _find_coordinator(self, key_type: int, key: str) -> int:
        api = "FindCoordinator"
        v = self.choose_version(api)
        body = {"KeyType": key_type, "CoordinatorKeys": [key]} if v >= 4 else {"Key": key, "KeyType": key_type}
        resp = self.call(api, v, body, self.bootstrap_broker)
        if v >= 4:
            c = (resp["Coordinators"] or [{"ErrorCode": E["COORDINATOR_NOT_AVAILABLE"], "NodeId": -1}])[0]
            code, node = c["ErrorCode"], c["NodeId"]
        else:
            code, node = resp["ErrorCode"], resp["NodeId"]
        if code:
            if code in RETRIABLE:
                raise Retry(code)
            raise self._coordinator_error(code, api)
        self.did(ev.CoordinatorFound, key_type=key_type, key=key, node=node)
        return node

    def _fetch_metadata(self, topics: list[str]) -> None:
        api = "Metadata"
        v = self.choose_version(api)
        req_topics = [{"TopicId": ZERO_UUID, "Name": t} if v >= 10 else {"Name": t} for t in topics]
        resp = self.call(api, v, {"Topics": req_topics, "AllowAutoTopicCreation": False,
                                   "IncludeClusterAuthorizedOperations": False,
                                   "IncludeTopicAuthorizedOperations": False}, self.bootstrap_broker)
        for t in resp["Topics"]:
            name = t.get("Name")
            if name is None:
                continue
            if t["ErrorCode"]:
                self._metadata.pop(name, None)
                continue
            tid = t.get("TopicId")
            tid = tid if isinstance(tid, uuid.UUID) and tid != ZERO_UUID else None
            self._metadata[name] = {"id": tid, "partitions": {p["PartitionIndex"]: p["LeaderId"]
                                                              for p in t["Partitions"]},
                                    **self.metadata_extra(v)}
            if tid is not None:
                self._names[tid] = name

    def topic_info(self, topic: str, refresh: bool = False) -> dict | None:
        """The cached metadata of `topic` ({id, partitions: {partition: leader}}), fetched if unknown or `refresh`."""
        if refresh or topic not in self._metadata:
            self._fetch_metadata([topic])
        return self._metadata.get(topic)

    def topic_ids(self, topics) -> dict:
        """{topic: topic id} for requests by id; Retry (refresh metadata) while one is unknown."""
        ids = {}
        for t in topics:
            info = self.topic_info(t)
            if info is None or info["id"] is None:
                raise Retry(E["UNKNOWN_TOPIC_OR_PARTITION"], refresh="metadata")
            ids[t] = info["id"]
        return ids
