"""A tiny single-node "broker" for tests: it answers ApiVersions and Metadata (and a few more)
with kipviz.codec, on 127.0.0.1 only, and records every byte both ways with a timestamp and a
connection number, ready for kipviz.capture.write_pcap.

    with FakeBroker(topic="demo") as broker:
        ... run a real client against ("127.0.0.1", broker.port) ...
    write_pcap(path, broker.records, server=("127.0.0.1", broker.port))

Unknown requests are not answered (the client times out); every request seen is kept in
`broker.requests` (decoded) and undecodable ones in `broker.problems`."""
from __future__ import annotations

import socket
import threading
import time
import uuid

from kipviz.codec import decode_request, encode_response, split_frames
from kipviz.codec.defaults import default_value
from kipviz.codec.plan import plan_for
from kipviz.errors import KipvizError
from kipviz.schema import registry

# what the fake broker advertises: modest ranges inside what the kit defines
SUPPORTED = {
    "ApiVersions": (0, 3),
    "Metadata": (0, 12),
    "FindCoordinator": (0, 4),
    "ListOffsets": (0, 7),
    "Heartbeat": (0, 4),
    "ListGroups": (0, 4),
    "DescribeGroups": (0, 5),
    "CreateTopics": (0, 7),
    "DeleteTopics": (0, 6),
}


def fill(fields, value: dict) -> dict:
    """A complete body for one version: given values, schema defaults for the rest (recursively)."""
    out = {}
    for f in fields:
        if f.name not in value:
            out[f.name] = default_value(f)
            continue
        v = value[f.name]
        if f.is_struct and v is not None:
            v = [fill(f.fields, x) for x in v] if f.is_array else fill(f.fields, v)
        out[f.name] = v
    return out


def body(api: str, version: int, value: dict, kind: str = "Response") -> dict:
    """A full `api` response (or, with kind="Request", request) body at `version`."""
    spec = registry.get(api + kind)
    return fill(plan_for(spec, version).vm.fields, value)


class FakeBroker:
    def __init__(self, *, topic: str = "kipviz-demo", partitions: int = 1, node_id: int = 0,
                 supported: dict | None = None):
        self.topic, self.partitions, self.node_id = topic, partitions, node_id
        self.topic_id = uuid.UUID("6b697076-697a-4000-8000-000000000001")
        self.supported = dict(SUPPORTED if supported is None else supported)
        self.records: list[tuple[str, bytes, float, int]] = []
        self.requests: list[dict] = []
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(8)
        self._srv.settimeout(0.05)
        self.port = self._srv.getsockname()[1]
        self._accepter = threading.Thread(target=self._accept, name="fake-broker-accept", daemon=True)

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> "FakeBroker":
        self._accepter.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._accepter.ident is not None:
            self._accepter.join(timeout=5)
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(timeout=5)
        self._srv.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def threads(self) -> list[threading.Thread]:
        with self._lock:
            return [self._accepter, *self._threads]

    # -- serving ---------------------------------------------------------------------------------
    def _accept(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                sock, _ = self._srv.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                break
            t = threading.Thread(target=self._serve, args=(sock, n), name=f"fake-broker-conn-{n}", daemon=True)
            with self._lock:
                self._threads.append(t)
            t.start()
            n += 1

    def _record(self, direction: str, data: bytes, conn: int) -> None:
        with self._lock:
            self.records.append((direction, data, time.time(), conn))

    def _serve(self, sock: socket.socket, conn: int) -> None:
        sock.settimeout(0.05)
        buf = b""
        try:
            while not self._stop.is_set():
                try:
                    data = sock.recv(65536)
                except (TimeoutError, socket.timeout):
                    continue
                if not data:
                    break
                self._record("request", data, conn)
                frames, buf = split_frames(buf + data)
                for frame in frames:
                    answer = self._answer(frame)
                    if answer is not None:
                        self._record("response", answer, conn)
                        sock.sendall(answer)
        except (OSError, KipvizError) as e:
            self.problems.append(f"connection {conn}: {type(e).__name__}: {e}")
        finally:
            sock.close()

    def _answer(self, frame: bytes) -> bytes | None:
        try:
            req = decode_request(frame)
        except KipvizError as e:
            self.problems.append(f"undecodable request: {e}")
            return None
        with self._lock:
            self.requests.append(req)
        api, v, corr = req["api"], req["version"], req["correlation_id"]
        make = getattr(self, f"_{api}", None)
        lo, hi = self.supported.get(api, (None, None))
        if api == "ApiVersions" and v > hi:
            # KIP-511: an unsupported ApiVersions version gets UNSUPPORTED_VERSION in the v0 layout
            return encode_response(api, 0, body(api, 0, {"ErrorCode": 35, "ApiKeys": [
                {"ApiKey": 18, "MinVersion": lo, "MaxVersion": hi}]}), correlation_id=corr)
        if make is None or lo is None or not lo <= v <= hi:
            self.problems.append(f"unanswered {api} v{v}")
            return None
        return encode_response(api, v, body(api, v, make(req)), correlation_id=corr)

    def _ApiVersions(self, req):
        keys = []
        for api, (lo, hi) in sorted(self.supported.items(), key=lambda kv: registry.api_key(registry.get(kv[0] + "Request"))):
            keys.append({"ApiKey": registry.api_key(registry.get(api + "Request")), "MinVersion": lo, "MaxVersion": hi})
        return {"ErrorCode": 0, "ApiKeys": keys, "ThrottleTimeMs": 0}

    def _topic(self):
        return {"ErrorCode": 0, "Name": self.topic, "TopicId": self.topic_id, "IsInternal": False,
                "Partitions": [{"ErrorCode": 0, "PartitionIndex": p, "LeaderId": self.node_id, "LeaderEpoch": 0,
                                "ReplicaNodes": [self.node_id], "IsrNodes": [self.node_id], "OfflineReplicas": []}
                               for p in range(self.partitions)]}

    def _Metadata(self, req):
        wanted = req["body"].get("Topics")
        topics = []
        if wanted is None or any(t.get("Name") == self.topic for t in wanted):
            topics.append(self._topic())
        for t in wanted or []:
            if t.get("Name") not in (None, self.topic):
                topics.append({"ErrorCode": 3, "Name": t["Name"], "Partitions": []})   # UNKNOWN_TOPIC_OR_PARTITION
        return {"ThrottleTimeMs": 0, "ClusterId": "kipviz-fake-cluster", "ControllerId": self.node_id,
                "Brokers": [{"NodeId": self.node_id, "Host": "127.0.0.1", "Port": self.port, "Rack": None}],
                "Topics": topics}

    def _FindCoordinator(self, req):
        return {"ErrorCode": 0, "NodeId": self.node_id, "Host": "127.0.0.1", "Port": self.port,
                "Coordinators": [{"Key": k, "NodeId": self.node_id, "Host": "127.0.0.1", "Port": self.port,
                                  "ErrorCode": 0} for k in req["body"].get("CoordinatorKeys", [])]}

    def _ListGroups(self, req):
        return {"ErrorCode": 0, "Groups": []}
