"""The simulated cluster: bytes in, bytes out, everything recorded as events.

    cluster = Cluster(brokers=3, seed=7)
    response = cluster.handle(frame)          # a size-prefixed request in, the framed response out
    cluster.advance(1000)                     # virtual time: timeouts fire here, never on their own
    cluster.events                            # ordered, typed events (kipviz.schema.events)

No sockets, threads or wall clock: a Cluster is a pure object driven by requests and a clock."""
from __future__ import annotations

import random
import struct
import uuid
from functools import cached_property

from .. import codec
from ..errors import DecodeError
from ..records import group_coordinator_partition, transaction_coordinator_partition
from ..schema import events as ev
from ..schema import registry
from ..schema.coordinators import GROUP_KEY, TRANSACTION_KEY, coordinator_key_type
from ..schema.error_codes import CODE, error_codes
from ..schema.topics import CONSUMER_OFFSETS, INTERNAL_TOPICS, SHARE_GROUP_STATE, TRANSACTION_STATE
from ..uuids import random_uuid, to_kafka_str
from .authorizer import Authorizer
from .clock import VirtualClock
from .config import SHARE_MARKER_ROUTINGS, ClusterConfig, served_versions
from .deferred import DEFERRED
from .delayed import Delayed
from .features import Features
from .groups import GroupCoordinator
from .handlers import CLOSE, HANDLERS, Request, api_versions, load_all
from .machine import Machine
from .replicas import ReplicaManager
from .respond import error_response
from .shares import ShareCoordinator
from .tables.topic_id import TABLE as TOPIC_ID
from .topics import INTERNAL_TOPIC_CONFIGS, TopicRegistry
from .transactions import TransactionCoordinator

CLIENT_IDS_MAX = 10_000      # connections whose client.id is kept (a live server's are unbounded)


class Cluster:
    def __init__(self, *, brokers: int | None = None, seed: int = 0, config: ClusterConfig | None = None,
                 start_ms: int = 0, **settings):
        cfg = config or ClusterConfig()
        for k, v in settings.items():
            if not hasattr(cfg, k):
                raise TypeError(f"unknown cluster setting {k!r}")
            setattr(cfg, k, v)
        if brokers is not None:
            cfg.brokers = brokers
        if cfg.share_marker_routing not in SHARE_MARKER_ROUTINGS:
            raise ValueError(f"share_marker_routing {cfg.share_marker_routing!r} is not one of "
                             f"{', '.join(SHARE_MARKER_ROUTINGS)}")
        self.config = cfg
        # the finalized feature levels: state, changed only by features.finalize (UpdateFeatures)
        self.features = Features(self, cfg.bootstrap_levels())
        self.seed = seed                         # the cluster id, topic ids and member ids follow from it
        self.rng = random.Random(seed)
        self.clock = VirtualClock(start_ms)
        self.start_ms = start_ms                 # the run's start: pictures give times from it
        self.events: list[ev.Event] = []
        self.events_taken = 0                    # events handed over by take_events (seq numbers go on)
        self.internal_errors: list[str] = []     # model bugs caught in handle(); tests keep this empty
        # connection -> the client.id its first request header carried, the newest CLIENT_IDS_MAX: a
        # picture of the newest events names a connection whose first request is long gone
        self.client_ids: dict[str, str] = {}
        self.cluster_id = to_kafka_str(random_uuid(self.rng))
        self.topics = TopicRegistry(self.rng, cfg.brokers)
        self.down: set[int] = set()             # brokers that are crashed (scenario faults)
        # the client address of the request being handled (dispatch's host): what authorized()
        # matches ACL hosts against when a handler does not name one
        self.request_host: str | None = None
        self.authorizer = Authorizer(cfg.acls, cfg.super_users, cfg.allow_everyone_if_no_acl_found)
        load_all()
        for name, n in zip(INTERNAL_TOPICS, (cfg.offsets_topic_partitions, cfg.transaction_topic_partitions,
                                      cfg.share_state_topic_partitions), strict=True):
            self.topics.create(name, n, self.now, internal=True).configs.update(INTERNAL_TOPIC_CONFIGS[name])

    # ---- the coordinators ----------------------------------------------------------------------
    # Each is created on first use: a run pays only for what it uses, and a coordinator reads the
    # config as it is then. cached_property keeps it in the instance's __dict__, so
    # `self.__dict__.get("groups")` is "the group coordinator, if it was created" (None otherwise).
    @cached_property
    def groups(self) -> GroupCoordinator:
        """The group coordinator: classic and consumer groups, committed offsets (kipviz.broker.groups)."""
        return GroupCoordinator(self)

    @cached_property
    def txns(self) -> TransactionCoordinator:
        """The transaction coordinator (kipviz.broker.transactions)."""
        return TransactionCoordinator(self)

    @cached_property
    def shares(self) -> ShareCoordinator:
        """Share groups and the share coordinator (kipviz.broker.shares)."""
        return ShareCoordinator(self)

    @cached_property
    def delayed(self) -> Delayed:
        """Held Fetch/ShareFetch requests, answered later (kipviz.broker.delayed)."""
        return Delayed(self)

    @cached_property
    def replicas(self) -> ReplicaManager:
        """The brokers' local replica logs (kipviz.broker.replicas)."""
        return ReplicaManager(self)

    # ---- time and events --------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.clock.now

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self._after()

    def _after(self) -> None:
        """After a request or a clock step: retry held requests, keep the event buffer bounded."""
        delayed = self.__dict__.get("delayed")
        if delayed is not None and delayed.held:
            delayed.poke()
        replicas = self.__dict__.get("replicas")
        if replicas is not None and replicas.deleting:
            replicas.poke()
        auto = self.__dict__.get("auto_creates")
        if auto is not None and auto.pending:      # the controller's bounded step (kipviz.broker.auto_create)
            auto.step()
        cap = self.config.events_max
        if cap is not None and len(self.events) > cap:
            # keep the newest half of the bound; the rest goes to the spill callback (a recording)
            n = len(self.events) - cap // 2
            out, self.events = self.events[:n], self.events[n:]
            self.events_taken += n
            buf = self.__dict__.get("event_buffer")
            if buf is not None:
                buf.forget_front(n)
            if self.config.events_spill is not None:
                self.config.events_spill(out)
        limit = self.config.events_max_bytes
        if limit is not None:          # ... and about this many bytes (kipviz.broker.event_buffer)
            buf = self.__dict__.get("event_buffer")
            if buf is None:
                from .event_buffer import EventBuffer
                buf = self.event_buffer = EventBuffer()
            buf.bound(self, limit)

    def _every(self, flag: str, every: int | None, task) -> None:
        """Run `task` every `every` ms of virtual time from now on; nothing without an interval or
        when `flag` says it already runs."""
        if not every or self.__dict__.get(flag):
            return
        setattr(self, flag, True)

        def check():
            task()
            self.clock.schedule(self.now + every, check)
        self.clock.schedule(self.now + every, check)

    def start_log_retention(self) -> None:
        """Run log retention every log.retention.check.interval.ms of virtual time (LogManager's
        kafka-log-retention task); does nothing without an interval or when already running."""
        from . import retention
        from .handlers.data import expire_producers

        def check():
            retention.enforce(self)
            expire_producers(self)      # Kafka's own task (PeriodicProducerExpirationCheck), run alongside
        self._every("_retention_on", self.config.log_retention_check_interval_ms, check)

    def start_log_cleaner(self) -> None:
        """Run the log cleaner every log.cleaner.backoff.ms of virtual time (LogCleaner's thread
        sleeps that long when no log is due); does nothing without an interval or when running."""
        from . import cleaner
        self._every("_cleaner_on", self.config.log_cleaner_backoff_ms, lambda: cleaner.run(self))

    def start_share_state_pruning(self) -> None:
        """Run the share coordinator's two timers every share.coordinator.state.topic.prune.interval.ms
        of virtual time (ShareCoordinatorService: the record-pruning task and the cold-partition
        snapshot task); does nothing without an interval or when already running."""
        def check():
            shares = self.__dict__.get("shares")
            if shares is not None:
                shares.snapshot_cold_partitions()
                shares.prune_state_topic()
        self._every("_share_prune_on", self.config.share_state_prune_interval_ms, check)

    def take_completed(self) -> list[tuple[str, int, bytes]]:
        """Responses to held requests completed since the last call: (client, broker, frame), in
        order (JoinGroup/SyncGroup from the group coordinator, Fetch/ShareFetch from `delayed`)."""
        out = []
        for name in ("groups", "delayed"):
            comp = self.__dict__.get(name)
            if comp is not None and comp.outbox:
                out.extend(comp.outbox)
                comp.outbox = []
        return out

    def connection_closed(self, client: str, broker: int) -> None:
        """The edge lost a connection: its held Fetch/ShareFetch requests are dropped, its share
        sessions removed."""
        delayed = self.__dict__.get("delayed")
        if delayed is not None:
            delayed.drop(client, broker)
        shares = self.__dict__.get("shares")
        if shares is not None:
            shares.on_disconnect(client, broker)

    def emit(self, kind: type[ev.Event], *values, **fields) -> ev.Event:
        """Record a `kind` event (seq and t are filled in). Fields by name, or (on the hot paths
        that emit one event per record) by position, in the order `kind` declares them."""
        events = self.events
        e = kind(self.events_taken + len(events), self.clock.now, *values, **fields)
        events.append(e)
        return e

    @property
    def next_seq(self) -> int:
        """The seq the next event will get."""
        return self.events_taken + len(self.events)

    def take_events(self) -> list[ev.Event]:
        """Hand over the events recorded so far and start a new list (long runs keep memory flat);
        seq numbers continue, so the chunks concatenate into one stream."""
        out, self.events = self.events, []
        self.events_taken += len(out)
        buf = self.__dict__.get("event_buffer")
        if buf is not None:
            buf.reset()
        return out

    def transition(self, **fields) -> None:
        """Callback for Machine: records a StateChanged event."""
        self.emit(ev.StateChanged, **fields)

    # ---- admin shortcuts ----------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> uuid.UUID:
        """Like CreateTopics: a new topic with a new topic ID (KIP-516), even for a reused name."""
        if self.topics.get(name) is not None:
            raise ValueError(f"topic {name!r} already exists")
        topic = self.topics.create(name, partitions, self.now)
        self._topic_id_machine(topic).fire("create")
        self.emit(ev.TopicCreated, topic=name, topic_id=str(topic.topic_id), partitions=partitions)
        return topic.topic_id

    def delete_topic(self, name: str) -> None:
        if self.topics.get(name) is None:
            raise ValueError(f"no topic {name!r}")
        topic = self.topics.delete(name, self.now)
        self._topic_id_machine(topic).fire("delete")
        self.emit(ev.TopicDeleted, topic=name, topic_id=str(topic.topic_id))
        # BrokerMetadataPublisher -> GroupCoordinator.onPartitionsDeleted: the group coordinator
        # drops (tombstones) the committed offsets of the deleted partitions (KAFKA-16168)
        groups = self.__dict__.get("groups")
        if groups is not None:
            groups.on_partitions_deleted(name, len(topic.partitions))

    def _topic_id_machine(self, topic) -> Machine:
        """The topic-id table (kipviz/broker/tables/topic_id.py) for one topic id, keyed "name@id"."""
        state = "Live" if topic.deleted_at is not None else "Absent"     # deleting: it was live
        return Machine(TOPIC_ID, f"{topic.name}@{to_kafka_str(topic.topic_id)}", self.transition, state=state)

    # ---- faults (scenarios) ---------------------------------------------------------------------
    def crash_broker(self, broker: int) -> None:
        """The broker answers nothing (`down`) and loses its in-memory share-partition state;
        transaction markers for partitions it leads are retried until it is back."""
        self.down.add(broker)
        self.emit(ev.BrokerCrashed, broker=broker)
        shares = self.__dict__.get("shares")
        if shares is not None:
            shares.on_broker_crash(broker)

    def restart_broker(self, broker: int) -> None:
        """Back up: share partitions it leads reload from their __share_group_state records
        (ACQUIRED / TX_PENDING were persisted as AVAILABLE, so they are redelivered)."""
        self.down.discard(broker)
        self.emit(ev.BrokerRestarted, broker=broker)
        shares = self.__dict__.get("shares")
        if shares is not None:
            shares.on_broker_restart(broker)

    def move_share_state_leader(self, partition: int, to_broker: int) -> None:
        """Leadership of __share_group_state-`partition` moves (leader epoch + 1). The new leader
        does not know the TX_PENDING records staged under the old one (KIP-1289 corner case 12):
        their marker resolves nothing, the acquisition lock reverts them."""
        log = self.topics.partition(SHARE_GROUP_STATE, partition)
        old = log.leader
        log.leader, log.leader_epoch = to_broker, log.leader_epoch + 1
        self.emit(ev.LeaderMoved, topic=SHARE_GROUP_STATE, partition=partition, old_leader=old, leader=to_broker,
                  leader_epoch=log.leader_epoch)

    def move_partition_leader(self, topic: str, partition: int, to_broker: int) -> None:
        """Leadership of a data partition moves (leader epoch + 1). The share partitions of it move
        too: the new leader builds each from __share_group_state (SharePartition.maybeInitialize
        reads the persister, core/src/main/java/kafka/server/share/SharePartition.java), so what was
        only in the old leader's memory -- acquisitions, KIP-1289's TX_PENDING -- is gone."""
        from .handlers.metadata import pin_replicas, replicas_of
        log = self.topics.partition(topic, partition)
        t = self.topics.get(topic)
        if to_broker in replicas_of(self, t, log):
            # a move to one of its replicas: the replica list (and its preferred replica) stays, as
            # KRaft's PartitionChangeRecord changes the leader only; a move elsewhere is the kit's
            # shortcut for a reassignment, and the list follows the leader as before
            pin_replicas(self, t)
        old = log.leader
        log.leader, log.leader_epoch = to_broker, log.leader_epoch + 1
        self.emit(ev.LeaderMoved, topic=topic, partition=partition, old_leader=old, leader=to_broker,
                  leader_epoch=log.leader_epoch)
        shares = self.__dict__.get("shares")
        for sp in list(shares.partitions.values()) if shares is not None else ():
            if sp.topic == topic and sp.partition == partition:
                sp.reload_from_state(f"leader change {old} -> {to_broker}")

    # ---- helpers for handlers ----------------------------------------------------------------
    def authorized(self, principal: str, resource_type: str, name: str, operation: str,
                   host: str | None = None) -> bool:
        """May `principal` do `operation` on the resource? The authorizer's answer
        (kipviz.broker.authorizer: StandardAuthorizer's rules); every handler asks it what
        KafkaApis asks (core/src/main/scala/kafka/server/KafkaApis.scala). `host` defaults to the
        address of the client whose request is being handled (dispatch's host), as Kafka's
        AuthorizableRequestContext carries the request's clientAddress to every authorize call."""
        return self.authorizer.authorize(principal, resource_type, name, operation,
                                         self.request_host if host is None else host)

    def coordinator_partition(self, key_type: int, key: str) -> tuple[str, int]:
        """(internal topic, partition) owning a group (GROUP_KEY) or a transactional id
        (TRANSACTION_KEY)."""
        if key_type == TRANSACTION_KEY:
            return TRANSACTION_STATE, transaction_coordinator_partition(
                key, self.config.transaction_topic_partitions)
        return CONSUMER_OFFSETS, group_coordinator_partition(key, self.config.offsets_topic_partitions)

    def coordinator_broker(self, key_type: int, key: str) -> int:
        """The broker leading the partition that owns `key` (coordinator_partition)."""
        topic, p = self.coordinator_partition(key_type, key)
        return self.topics.partition(topic, p).leader

    def append_internal(self, topic: str, partition: int, key: bytes, value: bytes | None, record: dict, *,
                        producer_id: int = -1, producer_epoch: int = -1, transactional: bool = False) -> int:
        log = self.topics.partition(topic, partition)
        offset = log.append([(key, value)], self.now, producer_id=producer_id, producer_epoch=producer_epoch,
                            transactional=transactional, seq=self.next_seq)
        self.emit(ev.RecordAppended, topic=topic, partition=partition, offset=offset, record=record, key=key,
                  value=value, producer_id=producer_id, producer_epoch=producer_epoch,
                  transactional=transactional, broker=log.leader)
        return offset

    # ---- the front door ------------------------------------------------------------------------
    def handle(self, frame: bytes, *, broker: int = 0, client: str = "client-1",
               principal: str = "User:ANONYMOUS", listener: str = "PLAINTEXT", host: str | None = None) -> bytes:
        """One request frame in, its response frame out; b"" when nothing is sent now (acks=0, a
        held request, or Kafka would close the connection: `dispatch` tells these apart)."""
        return self.dispatch(frame, broker=broker, client=client, principal=principal, listener=listener,
                             host=host)[1]

    def dispatch(self, frame: bytes, *, broker: int = 0, client: str = "client-1",
                 principal: str = "User:ANONYMOUS", listener: str = "PLAINTEXT",
                 host: str | None = None) -> tuple[str, bytes]:
        """Like handle, with what the connection does: ("send", frame), ("none", b"") for a request
        Kafka never answers (acks=0), ("held", b"") for a request answered later (take_completed),
        ("close", b"") where Kafka closes the connection. `listener`: the listener the connection
        came in on (brokers are advertised at their endpoints on it). `host`: the client's address
        (the connection's peer IP, as RequestContext.clientAddress), which ACL hosts are matched
        against; None (scenarios) matches only "*" hosts. A frame that is not bytes is the caller's
        mistake, not the model's: TypeError."""
        if not isinstance(frame, (bytes, bytearray, memoryview)):
            raise TypeError(f"Cluster.handle takes a request frame as bytes, not {type(frame).__name__}")
        outer, self.request_host = self.request_host, host
        try:
            out = self._dispatch(frame, broker, client, principal, listener, host)
        finally:
            self.request_host = outer
            self._after()
        return out

    def _name_connection(self, client: str, header: dict) -> None:
        cid = header.get("ClientId")
        if cid and client not in self.client_ids:
            if len(self.client_ids) >= CLIENT_IDS_MAX:
                del self.client_ids[next(iter(self.client_ids))]
            self.client_ids[client] = cid

    def _dispatch(self, frame, broker, client, principal, listener, host) -> tuple[str, bytes]:
        try:
            unknown = api_versions.unknown_version(self.config, frame)     # answered in v0, body unread
            req = None if unknown is not None else codec.decode_request(frame, trailing_ok=True)  # as AbstractRequest.parseRequest
        except DecodeError as e:
            return "close", self._malformed(frame, e, broker, client)
        except Exception as e:  # noqa: BLE001 - a bytes-level bug must still not escape
            self.internal_errors.append(f"decode: {type(e).__name__}: {e}")
            return "close", b""
        if unknown is not None:
            version, header = unknown
            self._name_connection(client, header)
            self.emit(ev.RequestReceived, broker=broker, client=client, api="ApiVersions", version=version,
                      correlation_id=header["CorrelationId"], body={}, frame=bytes(frame))
            if broker in self.down:
                return "close", b""
            return "send", self._respond(broker, client, "ApiVersions", 0, header["CorrelationId"],
                                         api_versions.unsupported_body(self.config))
        api, version, cid = req["api"], req["version"], req["correlation_id"]
        self._name_connection(client, req["header"])
        self.emit(ev.RequestReceived, broker=broker, client=client, api=api, version=version,
                  correlation_id=cid, body=req["body"], frame=bytes(frame))
        served = served_versions(api, self.config, self.features)
        if broker in self.down:
            return "close", b""
        if served is None or not served[0] <= version <= served[1] or api not in HANDLERS:
            if api in HANDLERS and api_versions.feature_off(api, version, self.config):
                return "send", self._respond(broker, client, api, version, cid,
                                             error_response(api, version, req["body"], CODE["UNSUPPORTED_VERSION"]))
            return "close", self._unserved(api, version, served, broker, client, cid)
        request = Request(api, version, cid, req["header"], req["body"], broker, client, principal, listener, host)
        try:
            body = HANDLERS[api](self, request)
        except Exception as e:  # noqa: BLE001 - a model bug becomes UNKNOWN_SERVER_ERROR, and is recorded
            self.internal_errors.append(f"{api} v{version}: {type(e).__name__}: {e}")
            self.emit(ev.InternalError, api=api, error=str(e))
            body = error_response(api, version, req["body"], CODE["UNKNOWN_SERVER_ERROR"])
        if body is DEFERRED:     # held; answered later through complete() -> take_completed()
            return "held", b""
        if body is CLOSE:        # no response, and Kafka closes the connection (acks=0 with an error)
            self.emit(ev.ConnectionClosed, broker=broker, client=client, reason="acks0-error", api=api,
                      version=version, correlation_id=cid)
            return "close", b""
        if body is None:         # no response on the wire (Produce with acks=0)
            self.emit(ev.NoResponse, broker=broker, client=client, api=api, version=version, correlation_id=cid)
            return "none", b""
        return "send", self._respond(broker, client, api, version, cid, body)

    def complete(self, request: Request, body: dict) -> bytes:
        """Answer a request a handler held (returned DEFERRED): records ResponseSent, returns the frame."""
        return self._respond(request.broker, request.client, request.api, request.version,
                             request.correlation_id, body)

    def call(self, api: str, version: int, body: dict, *, broker: int | None = None, client: str = "client-1",
             principal: str = "User:ANONYMOUS", host: str | None = None) -> dict | None:
        """Encode a request, hand it to handle(), decode the answer: the response body, or None
        when there is none yet (a held JoinGroup/SyncGroup) or the connection was closed.
        broker=None sends coordinator APIs to the right coordinator, like a client after
        FindCoordinator."""
        self._cid = getattr(self, "_cid", 0) + 1
        if broker is None:
            broker = self._route(api, body)
        frame = codec.encode_request(api, version, body, correlation_id=self._cid, client_id=client)
        out = self.handle(frame, broker=broker, client=client, principal=principal, host=host)
        if not out:
            return None
        return codec.decode_response(out, api, version)["body"]

    def _route(self, api: str, body: dict) -> int:
        kind = coordinator_key_type(api)        # kipviz.schema.coordinators: one table with the pictures
        if kind == GROUP_KEY:
            gid = body.get("GroupId") or next(iter(body.get("Groups") or body.get("GroupIds") or []), None)
            if isinstance(gid, dict):
                gid = gid.get("GroupId")
            if isinstance(gid, str):
                return self.coordinator_broker(GROUP_KEY, gid)
        if kind == TRANSACTION_KEY and body.get("TransactionalId"):
            return self.coordinator_broker(TRANSACTION_KEY, body["TransactionalId"])
        return 0

    def _respond(self, broker, client, api, version, cid, body) -> bytes:
        try:
            out = codec.encode_response(api, version, body, correlation_id=cid)
        except Exception as e:  # noqa: BLE001
            self.internal_errors.append(f"encode {api} v{version}: {e}")
            body = error_response(api, version, None, CODE["UNKNOWN_SERVER_ERROR"])
            out = codec.encode_response(api, version, body, correlation_id=cid)
        self.emit(ev.ResponseSent, broker=broker, client=client, api=api, version=version, correlation_id=cid,
                  body=body, error_codes=error_codes(body), frame=out)
        return out

    def _unserved(self, api: str, version: int, served, broker: int, client: str, cid: int) -> bytes:
        """An API or version this broker does not serve: Kafka's Processor.parseRequestHeader throws
        and SocketServer closes the channel (core/src/main/scala/kafka/network/SocketServer.scala,
        processCompletedReceives -> processChannelException); nothing is answered. Only ApiVersions
        is answered, in v0 (api_versions.unknown_version)."""
        if api not in HANDLERS:
            why = f"the kit does not model {api}"
        elif served is None:
            why = f"this broker does not serve {api}"
        else:
            why = f"this broker serves v{served[0]}-v{served[1]}"
        self.emit(ev.ConnectionClosed, broker=broker, client=client, reason="not-served", api=api, version=version,
                  correlation_id=cid, why=why)
        return b""

    def _malformed(self, frame: bytes, err: DecodeError, broker: int, client: str) -> bytes:
        """A request that cannot be parsed: RequestContext.parseRequest throws InvalidRequestException
        and SocketServer's Processor closes the connection (clients/.../requests/RequestContext.java); nothing is answered."""
        api, version = "", -1
        try:
            key, v = struct.unpack_from(">hh", codec.unframe(bytes(frame)), 0)
            api, version = registry.by_api_key(key, "request").api, v
        except Exception:  # noqa: BLE001 - not even the api key is readable
            pass
        self.emit(ev.ConnectionClosed, broker=broker, client=client, reason="unreadable", api=api, version=version,
                  why=str(err))
        return b""
