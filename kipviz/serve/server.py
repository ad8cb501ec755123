"""The socket edge around the cluster model: one asyncio listener per modelled broker.

Per connection, like Kafka's SocketServer Processor and its Selector: read a size-prefixed frame,
hand it to the model, write the answer, and only when the answer has left handle the next
request (Kafka mutes a channel while a request is in flight, until its response is sent, so
responses leave in request order). A request the model holds (Fetch/ShareFetch long polling,
JoinGroup/SyncGroup) keeps its connection waiting until Cluster.take_completed() hands its frame
over; an acks=0 Produce gets nothing; a request Kafka cannot parse closes the connection.

What the server holds is bounded (kipviz.serve.budget): a frame's bytes are taken from a
server-wide pool when its size prefix is read (queued.max.request.bytes; a connection waits,
unread, while the pool is spent), a connection reads at most PIPELINE_BYTES past the request it
is waiting on, the events keep a byte bound (kipviz.broker.event_buffer) and the logs keep their
batches in a Kafka-style log directory (kipviz.broker.segments), not in memory.
A connection with no traffic for connections.max.idle.ms is closed, as Kafka's Selector does
(clients/.../common/network/Selector.java, IdleExpiryManager: the least recently active channel
is closed once idle longer than the bound; SocketServerConfigs.CONNECTIONS_MAX_IDLE_MS_DEFAULT is
10 minutes), and -- the kit's own bound, Kafka has none -- a frame whose first byte came more
than frame_timeout_ms ago but is still incomplete closes its connection (a slowloris).

The virtual clock follows wall time (times `speed`), so MaxWaitMs, session timeouts, lock expiry and
transaction timeouts fire as they would on a broker. One lock guards the model; the event loop and
any notebook thread take it before touching the cluster.

Listeners (kipviz.serve.listeners): PLAINTEXT on port, port+1, ...; with `users`, also
SASL_PLAINTEXT on sasl_port, sasl_port+1, ..., whose connections authenticate before the model
sees a request. Each connection's frames go through the session its listener gives it."""
from __future__ import annotations

import asyncio
import collections
import gc
import secrets
import struct
import tempfile
import threading
import time
from collections.abc import Callable

from ..broker import Cluster
from ..schema import events as ev
from .budget import DEFAULT_EVENTS_MAX_BYTES, DEFAULT_QUEUED_MAX_REQUEST_BYTES, RequestPool, lines
from .listeners import PLAINTEXT, access_settings, acls_from, listeners_for, users_from

MAX_REQUEST_BYTES = 104857600      # socket.request.max.bytes: a bigger size prefix closes the connection
MIN_TICK_S, MAX_TICK_S = 0.002, 0.1    # virtual time catches up with the wall clock at the next timer
DEFAULT_EVENTS_MAX = 50_000        # a long-running server keeps at most this many events (issue 22 item 8)
CLEANER_BACKOFF_MS = 15000        # log.cleaner.backoff.ms (CleanerConfig's default)
RETENTION_CHECK_MS = 1000          # the kit's log.retention.check.interval.ms for a live server (Kafka: 300000)
CONNECTIONS_MAX_IDLE_MS = 600_000  # connections.max.idle.ms (SocketServerConfigs.CONNECTIONS_MAX_IDLE_MS_DEFAULT)
FRAME_TIMEOUT_MS = 30_000          # kit: a started frame must be complete within this (Kafka: no bound)
PIPELINE_BYTES = 64 * 1024         # bytes read past the request a connection waits on before reading pauses
VERBOSE_BUDGET_S = 10.0            # -v: the budget lines at most this often, when they changed
GC_FULL_EVERY_S = 300.0            # the cyclic collector's full pass: this often, from the ticker (see _Collector)
GC_IDLE_S = 2.0                    # ... or sooner once the server has been idle this long (at most once a minute)
_SIZE = struct.Struct(">i")


class _Collector:
    """The cyclic garbage collector's full (oldest-generation) pass, kept out of requests while a
    server runs. A full pass over a busy server's live objects (the event buffer's bodies, the
    topics) took 0.5-1.5 s on the loaded 2-core machine and came every few seconds under load (a
    canary's p99 was those pauses); garbage here is nearly all freed by reference counting. So the
    objects alive after the warm-up are frozen (gc.freeze), automatic full passes are off, and the
    ticker runs one every GC_FULL_EVERY_S, or after GC_IDLE_S without a request. The young
    generations are collected as usual. Restored when the last running server stops."""
    running = 0
    saved: tuple | None = None

    @classmethod
    def enter(cls) -> None:
        if cls.running == 0:
            cls.saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(cls.saved[0], cls.saved[1], 1 << 30)
        cls.running += 1

    @classmethod
    def leave(cls) -> None:
        cls.running -= 1
        if cls.running == 0 and cls.saved is not None:
            gc.set_threshold(*cls.saved)
            gc.unfreeze()


def _warm_up(config) -> None:
    """Load what the model builds lazily before the first client connects -- the kit's message and
    coordinator-record schemas (~0.8 s) and the codec of each served API's newest version, the one
    clients pick (~0.3 s) -- otherwise the first requests pay for it, which was the p99 latency of
    a benchmark run (benchmarks/README.md, serve)."""
    from ..broker.config import served_versions
    from ..broker.handlers import HANDLERS
    from ..codec.plan import plan_for
    from ..records import internal
    from ..schema import registry
    registry.by_api_key(0, "request")
    internal.definitions()
    for api in HANDLERS:
        served = served_versions(api, config)
        if served is None:
            continue
        try:
            plan_for(registry.get(api + "Request"), served[1]).decoder()
            plan_for(registry.get(api + "Response"), served[1]).encoder()
        except Exception:  # noqa: BLE001 - a warm-up only; the request itself reports any problem
            pass


def _cluster_for(cluster, brokers, seed, users, access: dict, cluster_settings: dict) -> Cluster:
    """Server's cluster: the one given (which keeps its own authorizer), or a new one with the
    access settings kipviz.serve.listeners derives from users and ACLs."""
    if cluster is not None:
        if tuple(access.values()) != (None, None, None):
            raise ValueError("acls, super_users and allow_everyone_if_no_acl_found are the cluster's settings: "
                             "give them to Cluster(...), or let Server make the cluster")
        if brokers is not None and brokers != cluster.config.brokers:
            raise ValueError(f"the cluster has {cluster.config.brokers} brokers, not {brokers}")
        if seed is not None and seed != cluster.seed:
            raise ValueError(f"the cluster was made with seed {cluster.seed}, not {seed}")
        return cluster
    settings = dict(cluster_settings, **access_settings(users=users is not None, acls=acls_from(access["acls"]),
                                                        super_users=access["super_users"],
                                                        allow_everyone_if_no_acl_found=access[
                                                            "allow_everyone_if_no_acl_found"]))
    seed = secrets.randbits(63) if seed is None else seed       # Kafka's ids are random per cluster; seed=N repeats them
    return Cluster(brokers=brokers or 1, seed=seed, start_ms=int(time.time() * 1000), **settings)


_ALWAYS_BOUNDED = ("queued_max_request_bytes", "socket_request_max_bytes")     # the others take None: no bound


def _check_bounds(*, speed: float, **bounds) -> None:
    if speed <= 0:
        raise ValueError(f"--speed must be > 0, got {speed}")
    for name, v in bounds.items():
        if (v is not None or name in _ALWAYS_BOUNDED) and v < 1:
            or_none = "" if name in _ALWAYS_BOUNDED else " (or None for no bound)"
            raise ValueError(f"{name} must be >= 1{or_none}, got {v}")


class Server:
    """The model behind `brokers` TCP listeners on `host`: port, port+1, ... (0: free ports).
    start() returns once every listener is bound; stop() closes them and waits for the thread.

    Bounds (docs/limits.md): events_max events and about events_max_bytes bytes of them;
    queued_max_request_bytes of request frames being read; socket_request_max_bytes per frame;
    connections_max_idle_ms without traffic and frame_timeout_ms for a started frame (None: no
    bound). log_dir: where partition logs keep their batches (None: a temporary directory removed
    when the cluster is gone; False: in memory).

    users (a dict name -> password, a Users, or a users file's path): a SASL_PLAINTEXT listener
    too, on sasl_port.. (None: after the plaintext ports; 0 with port 0); acls (Acl list or an ACL
    file's path), super_users, allow_everyone_if_no_acl_found: the authorizer of the cluster Server
    makes, with the defaults kipviz.serve.listeners names (a Cluster passed in keeps its own)."""

    # size: the constructor's body is one assignment per attribute of the server; the checks are _cluster_for's and _check_bounds'
    def __init__(self, cluster: Cluster | None = None, *, brokers: int | None = None, host: str = "127.0.0.1",
                 port: int = 0, speed: float = 1.0, verbose: bool = False,
                 log: Callable[[str], None] | None = None, events_max: int | None = DEFAULT_EVENTS_MAX,
                 events_max_bytes: int | None = DEFAULT_EVENTS_MAX_BYTES,
                 queued_max_request_bytes: int = DEFAULT_QUEUED_MAX_REQUEST_BYTES,
                 socket_request_max_bytes: int = MAX_REQUEST_BYTES,
                 connections_max_idle_ms: int | None = CONNECTIONS_MAX_IDLE_MS,
                 frame_timeout_ms: int | None = FRAME_TIMEOUT_MS, log_dir=None,
                 record=None, seed: int | None = None, users=None, sasl_port: int | None = None, acls=None,
                 super_users=None, allow_everyone_if_no_acl_found: bool | None = None, **cluster_settings):
        users = None if users is None else users_from(users)
        access = {"acls": acls, "super_users": super_users,
                  "allow_everyone_if_no_acl_found": allow_everyone_if_no_acl_found}
        # a cluster Server makes keeps wall-clock time (its timestamps are a broker's); one given keeps its own
        self._wall_clock = cluster is None
        cluster = _cluster_for(cluster, brokers, seed, users, access, cluster_settings)
        _check_bounds(speed=speed, queued_max_request_bytes=queued_max_request_bytes,
                      socket_request_max_bytes=socket_request_max_bytes,
                      connections_max_idle_ms=connections_max_idle_ms, frame_timeout_ms=frame_timeout_ms)
        self.cluster = cluster
        cluster.config.long_poll = True             # a live broker holds Fetch/ShareFetch (DelayedFetch)
        if events_max is not None and cluster.config.events_max is None:
            cluster.config.events_max = events_max
        if events_max_bytes is not None and cluster.config.events_max_bytes is None:
            cluster.config.events_max_bytes = events_max_bytes
        # the retention task runs on a live server (LogManager's, every log.retention.check.interval.ms;
        # the kit checks every second so a teaching server's memory follows retention.bytes closely)
        if cluster.config.log_retention_check_interval_ms is None:
            cluster.config.log_retention_check_interval_ms = RETENTION_CHECK_MS
        cluster.start_log_retention()
        # ...and the log cleaner (compacted topics), every log.cleaner.backoff.ms as Kafka's
        if cluster.config.log_cleaner_backoff_ms is None:
            cluster.config.log_cleaner_backoff_ms = CLEANER_BACKOFF_MS
        cluster.start_log_cleaner()
        # ...and so do the share coordinator's record pruning and cold-partition snapshots
        # (ShareCoordinatorService; Kafka: every 5 min, the kit's server every second like retention)
        if cluster.config.share_state_prune_interval_ms is None:
            cluster.config.share_state_prune_interval_ms = RETENTION_CHECK_MS
        cluster.start_share_state_pruning()
        self.recorder = None
        self.manifest: dict | None = None
        if record is not None:
            from .record import Recorder
            self.recorder = Recorder(record, cluster)
            cluster.config.events_spill = self.recorder.spill
        self.host, self.port, self.speed = host, port, speed
        self._clock0: tuple[float, int] | None = None     # (monotonic, model ms) when the ticks started
        self.listeners = listeners_for(host, port, cluster.config.brokers, users, sasl_port)
        self.verbose = verbose
        self.log = log or (lambda line: print(line, flush=True))
        self.lock = threading.RLock()
        self.addresses: list[tuple[str, int]] = self.listeners[0].addresses    # PLAINTEXT's
        self.connections = 0                         # accepted so far
        self.open_connections = 0
        self.requests = 0
        self.pool = RequestPool(queued_max_request_bytes)
        self.socket_request_max_bytes = socket_request_max_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.frame_timeout_ms = frame_timeout_ms
        self._log_dir_setting = log_dir
        self.buffered = 0                            # request bytes read and not yet handled, all connections
        self.closed_idle = self.closed_slow = 0
        self.verbose_budget_s = VERBOSE_BUDGET_S     # -v: the budget lines at most this often
        # the last 20,000 answered-at-once requests: (seconds in the model, seconds frame-in to frame-out);
        # ~2 MiB when full (100,000 took ~10 MiB and 10+ minutes to fill: a soak's slow "growth")
        self.timings: collections.deque = collections.deque(maxlen=20_000)
        self._conns: dict[tuple[str, int], _Connection] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._stopping = False
        self._said_budget: tuple | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """bootstrap.servers for a client: every broker's host:port."""
        return ",".join(f"{h}:{p}" for h, p in self.addresses)

    @property
    def sasl_bootstrap(self) -> str:
        """bootstrap.servers for a SASL_PLAINTEXT client ("" without users)."""
        return ",".join(f"{h}:{p}" for li in self.listeners[1:] for h, p in li.addresses)

    @property
    def log_dir(self):
        """The directory the partition logs are kept in (Kafka's log.dirs layout), or None."""
        d = self.cluster.topics.log_dir
        return None if d is None else d.path

    def start(self) -> Server:
        """Start serving on a background thread; returns the server."""
        if self._thread is not None:
            return self
        self._use_log_dir()
        self._thread = threading.Thread(target=self._run, name="kipviz-serve", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            self._thread.join(5)
            self._thread = None
            raise self._error
        if not self._ready.is_set():
            raise OSError("kipviz serve: the listeners did not start within 30 s")
        return self

    def _use_log_dir(self) -> None:
        setting, topics = self._log_dir_setting, self.cluster.topics
        if setting is False or topics.log_dir is not None:
            return
        from ..broker.segments import cluster_log_dir
        path = setting if setting is not None else tempfile.mkdtemp(prefix="kipviz-logs-")
        d = cluster_log_dir(self.cluster, path)
        if setting is None:          # the kit's own directory goes with the cluster (or at exit)
            d.remove_when_gone()
        with self.lock:
            topics.use_log_dir(d)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait up to `timeout` seconds for the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if not loop.is_closed():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout)
            except Exception:  # noqa: BLE001 - the loop may already be gone
                pass
        thread.join(timeout)
        self._thread = None
        if self.recorder is not None and self.manifest is None:
            with self.lock:
                self.manifest = self.recorder.close({"connections": self.connections, "requests": self.requests})

    def log_bytes(self) -> tuple[int, int]:
        """(bytes of record batches the model holds in non-internal topics, the largest partition's)."""
        with self.lock:
            sizes = [log.held_bytes for t in self.cluster.topics.by_name.values() if not t.internal
                     for log in t.partitions]
        return sum(sizes), max(sizes, default=0)

    def internal_log_bytes(self) -> dict[str, int]:
        """Bytes of record batches the model holds per internal topic (__consumer_offsets,
        __transaction_state, __share_group_state), all partitions summed."""
        with self.lock:
            return {t.name: sum(log.held_bytes for log in t.partitions)
                    for t in self.cluster.topics.by_name.values() if t.internal}

    def budget(self) -> dict:
        """What the server holds now: request bytes read (and the pool's bound), held requests,
        unsent responses, events (count and estimated bytes, with their bounds), log batches (in
        memory and on disk) and connections. kipviz.serve.budget.lines renders it."""
        conns = list(self._conns.values())
        with self.lock:
            c = self.cluster
            buf = c.__dict__.get("event_buffer")
            if buf is not None:
                buf.count_new(c.events)
            logs = [log for t in c.topics.by_id.values() for log in t.partitions]
            held = sum(log.held_bytes for log in logs)
            in_memory = sum(log.store.resident() for log in logs)
            batches = sum(len(log.batches) for log in logs)
            events = {"count": len(c.events), "bytes": buf.total if buf is not None else 0,
                      "limit_count": c.config.events_max, "limit_bytes": c.config.events_max_bytes,
                      "slimmed": buf.slimmed_total if buf is not None else 0,
                      "dropped": buf.dropped_total if buf is not None else 0}
        return {"requests": {"limit": self.pool.capacity, "in_use": self.pool.in_use,
                             "frames": sum(1 for k in conns if k.reserved), "buffered": self.buffered,
                             "waiting": sum(1 for k in conns if k.waiting_memory)},
                "held": {"count": sum(1 for k in conns if k.held_size), "bytes": sum(k.held_size for k in conns)},
                "responses": {"unsent": sum(k.unsent() for k in conns)},
                "events": events,
                "logs": {"bytes": held, "in_memory": in_memory, "batches": batches,
                         "dir": str(self.log_dir) if self.log_dir is not None else None},
                "connections": {"open": self.open_connections, "idle_closed": self.closed_idle,
                                "slow_closed": self.closed_slow}}

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._thread is not None else "stopped"
        return f"<kipviz Server {state} {self.bootstrap or '-'} brokers={self.cluster.config.brokers}>"

    # ---- the loop thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as e:  # noqa: BLE001 - reported to start() (bind errors) or ends the thread
            if not self._ready.is_set():
                self._error = e
        finally:
            self._ready.set()
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    async def _main(self) -> None:
        _warm_up(self.cluster.config)
        _Collector.enter()
        try:
            await self._serve_until_stopped()
        finally:
            _Collector.leave()

    async def _serve_until_stopped(self) -> None:
        n = self.cluster.config.brokers
        loop = asyncio.get_running_loop()
        for li in self.listeners:
            for b in range(n):
                srv = await loop.create_server(lambda b=b, li=li: _Connection(self, b, li), li.host, li.port_of(b),
                                               reuse_address=True)
                self._servers.append(srv)
                li.addresses.append(srv.sockets[0].getsockname()[:2])
        with self.lock:
            # advertised.listeners: the real addresses, told to clients by the model itself
            self.cluster.config.advertised_listeners = {b: a for b, a in enumerate(self.addresses)}
            self.cluster.config.named_listeners = {li.name: dict(enumerate(li.addresses)) for li in self.listeners
                                                   if li.name != PLAINTEXT}
        self._stop_event = asyncio.Event()
        self._ready.set()
        ticker = asyncio.ensure_future(self._tick())
        await self._stop_event.wait()
        ticker.cancel()

    async def _shutdown(self) -> None:
        self._stopping = True
        for srv in self._servers:
            srv.close()
        for conn in list(self._conns.values()):
            conn.close("server stopping")
        for srv in self._servers:
            try:
                await asyncio.wait_for(srv.wait_closed(), 2)
            except Exception:  # noqa: BLE001
                pass
        await asyncio.sleep(0)              # connection_lost callbacks run
        self._stop_event.set()

    def _virtual_now(self) -> int:
        """The model time the wall clock says it is now (times speed); before the ticks start, the model's."""
        if self._clock0 is None:
            return self.cluster.now
        wall0, virt0 = self._clock0
        return virt0 + int((time.monotonic() - wall0) * 1000 * self.speed)

    def catch_up(self) -> None:
        """Move the model's clock to now (caller holds the lock): a request is handled at the time it
        arrives, as a broker reads its clock when it handles one, not at the last tick."""
        target = self._virtual_now()
        if target > self.cluster.now:
            self.cluster.advance(target - self.cluster.now)

    async def _tick(self) -> None:
        """Virtual time follows the wall clock (times speed); due timers fire, held requests time out;
        idle connections and slow frames are closed."""
        c = self.cluster
        loop = asyncio.get_running_loop()
        with self.lock:
            lag = int(time.time() * 1000) - c.now      # the start-up (warm-up, binding) since the cluster was made
            if self._wall_clock and lag > 0:
                c.advance(lag)
            self._clock0 = wall0, virt0 = time.monotonic(), c.now
        bounds = [b for b in (self.connections_max_idle_ms, self.frame_timeout_ms) if b is not None]
        check_every = min([1.0] + [b / 4000 for b in bounds])
        next_check = next_say = loop.time()
        last_full, seen = loop.time(), self.requests
        idle_since = loop.time()
        while True:
            with self.lock:
                due = c.clock.next_due()
                wait = MAX_TICK_S if due is None else (due - c.now) / 1000 / self.speed
            await asyncio.sleep(min(max(wait, MIN_TICK_S), MAX_TICK_S, check_every))
            target = self._virtual_now()
            with self.lock:
                if target > c.now:
                    c.advance(target - c.now)
                done = c.take_completed()
            self._route(done)
            now = loop.time()
            if now >= next_check:
                next_check = now + check_every
                self._close_expired(now)
            if self.verbose and now >= next_say:
                next_say = now + self.verbose_budget_s
                self._say_budget()
            if self.requests != seen:
                seen, idle_since = self.requests, now
            if now - last_full >= GC_FULL_EVERY_S or (now - idle_since >= GC_IDLE_S and now - last_full >= 60):
                last_full = now
                gc.collect()

    def _close_expired(self, now: float) -> None:
        idle, slow = self.connections_max_idle_ms, self.frame_timeout_ms
        for conn in list(self._conns.values()):
            if idle is not None and (now - conn.active) * 1000 > idle:
                self.closed_idle += 1
                self._closed(conn, "idle", limit_ms=idle)
                conn.close(f"idle for more than {idle} ms")
            elif slow is not None and conn.started is not None and (now - conn.started) * 1000 > slow:
                self.closed_slow += 1
                have = len(conn.buf)
                self._closed(conn, "frame-timeout", limit_ms=slow, size=have)
                conn.close(f"frame incomplete after {slow} ms")

    def _route(self, done) -> None:
        for client, broker, frame in done:
            conn = self._conns.get((client, broker))
            if conn is not None:
                conn.completed(frame)

    def _closed(self, conn: _Connection, reason: str, **fields) -> None:
        """Record that the edge closed `conn` (a ConnectionClosed of `reason`, ev.CLOSE_REASONS)."""
        with self.lock:
            self.cluster.emit(ev.ConnectionClosed, broker=conn.broker, client=conn.client, reason=reason, **fields)

    def _say(self, line: str) -> None:
        if self.verbose:
            self.log(line)

    def _say_budget(self) -> None:
        b = self.budget()
        key = (b["requests"]["in_use"], b["requests"]["waiting"], b["held"]["count"], b["events"]["count"],
               b["logs"]["bytes"], b["connections"]["open"])
        if key != self._said_budget:
            self._said_budget = key
            for line in lines(b):
                self.log("budget: " + line)


class _Connection(asyncio.Protocol):
    """One client connection (SocketServer's KafkaChannel, with the Processor's muting)."""

    def __init__(self, server: Server, broker: int, listener):
        self.srv, self.broker, self.listener = server, broker, listener
        self.session = None               # the listener's (kipviz.serve.listeners): Kafka's authenticator, or none
        self.transport: asyncio.Transport | None = None
        self.client = "?"
        self.buf = bytearray()
        self.need: int | None = None      # size of the frame being read (its bytes are reserved)
        self.reserved = 0
        self.busy = False                 # a request in the model, held, or its answer not yet sent
        self.sending = False
        self.held_size = 0
        self.waiting_memory = False
        self.reading = True
        self.started: float | None = None     # when the current frame's first byte came
        self.active = 0.0                     # the last read or write
        self.closed = False
        self.why = "client closed"

    # ---- asyncio callbacks -----------------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        srv = self.srv
        self.transport = transport
        transport.set_write_buffer_limits(high=0, low=0)      # resume_writing: the answer has left
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.client = f"{peer[0]}:{peer[1]}"
        self.active = srv._loop.time()
        srv._conns[(self.client, self.broker)] = self
        with srv.lock:
            # the peer's IP address: RequestContext.clientAddress, which ACL hosts are matched against
            self.session = self.listener.session(srv.cluster, self.broker, self.client,
                                                 host=peer[0] if peer[0] != "?" else None)
        srv.connections += 1
        srv.open_connections += 1
        srv._say(f"broker {self.broker}: connection from {self.client}")
        if srv.recorder is not None:
            with srv.lock:
                srv.recorder.opened((self.client, self.broker), peer,
                                    transport.get_extra_info("sockname") or ("0.0.0.0", 0))

    def data_received(self, data: bytes) -> None:
        self.active = self.srv._loop.time()
        self.buf += data
        self.srv.buffered += len(data)
        self._pump_safely()

    def _pump_safely(self) -> None:
        try:
            self._pump()
        except Exception as e:  # noqa: BLE001 - an edge bug closes this connection only, and is recorded
            with self.srv.lock:
                self.srv.cluster.internal_errors.append(f"serve: {type(e).__name__}: {e}")
            self.close(f"internal error: {e}")

    def eof_received(self):
        if self.buf and not self.busy:
            have = len(self.buf)
            need = self.need if self.need is not None or have < 4 else _SIZE.unpack_from(self.buf, 0)[0]
            what = f"{have} of 4 size bytes" if need is None else f"{have - 4} of {need} bytes"
            self.srv._closed(self, "mid-request", why=what)
            self.why = f"closed mid-request ({what})"
        elif self.held_size:
            self.why = "client closed while its request was held"
        return False

    def pause_writing(self) -> None:
        self.sending = True

    def resume_writing(self) -> None:
        self.sending = False
        self.active = self.srv._loop.time()
        if self.busy and not self.held_size:
            self.busy = False
            self._pump_safely()

    def connection_lost(self, exc) -> None:
        srv = self.srv
        if exc is not None and self.why == "client closed":
            self.why = f"connection error: {exc}"
        self.closed = True
        if srv._conns.get((self.client, self.broker)) is self:
            del srv._conns[(self.client, self.broker)]
        srv.open_connections -= 1
        srv.buffered -= len(self.buf)
        self.buf = bytearray()
        if self.reserved:
            reserved, self.reserved = self.reserved, 0
            srv.pool.release(reserved)
        with srv.lock:
            srv.cluster.connection_closed(self.client, self.broker)
            if srv.recorder is not None:
                srv.recorder.gone((self.client, self.broker))
        srv._say(f"broker {self.broker}: {self.client} closed ({self.why})")

    # ---- reading and handling --------------------------------------------------------------------------
    def close(self, why: str) -> None:
        if not self.closed and self.transport is not None:
            self.why = why
            self.transport.close()

    def unsent(self) -> int:
        t = self.transport
        return t.get_write_buffer_size() if t is not None and not self.closed else 0

    def _pump(self) -> None:
        """Handle every complete frame while nothing is in flight; reserve the next frame's bytes."""
        srv = self.srv
        while not self.closed and not self.busy and not self.transport.is_closing():
            if self.need is None:
                if len(self.buf) < 4:
                    break
                size, = _SIZE.unpack_from(self.buf, 0)
                limit = self.session.max_receive       # SASL before authentication: sasl.server.max.receive.size
                if limit is not None and not 0 <= size <= limit:
                    self.busy = True
                    with srv.lock:
                        self.session.refuse_size(size)
                    self._broker_close(b"")
                    return
                if size < 0 or size > srv.socket_request_max_bytes:
                    srv._closed(self, "size-out-of-range", size=size)
                    self.close(f"bad size {size}")
                    return
                if not srv.pool.try_allocate(size):
                    self._wait_for_memory()
                    return
                self.need = self.reserved = size
            if len(self.buf) < 4 + self.need:
                break
            n = 4 + self.need
            frame = bytes(self.buf[:n])
            self.buf = self.buf[n:]            # a new, small buffer: a big frame's one is not kept
            srv.buffered -= n
            self.need = self.started = None    # the next frame's clock starts when it is looked at
            self._handle(frame)
        if not self.buf or self.busy or self.waiting_memory:
            self.started = None
        elif self.started is None:
            self.started = srv._loop.time()
        self._read_or_pause()

    def _read_or_pause(self) -> None:
        want = not self.closed and not self.waiting_memory and not (self.busy and len(self.buf) > PIPELINE_BYTES)
        if want != self.reading and self.transport is not None and not self.closed:
            self.reading = want
            if want:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def _wait_for_memory(self) -> None:
        self.waiting_memory = True
        self.started = None                 # the client is not slow: the server is not reading
        self.srv.pool.waiting.append(self._memory_back)
        self._read_or_pause()

    def _memory_back(self) -> None:
        self.waiting_memory = False
        if not self.closed:
            if self.buf:
                self.started = self.srv._loop.time()
            self._pump_safely()

    def _handle(self, frame: bytes) -> None:
        srv, c = self.srv, self.srv.cluster
        self.busy = True
        t0 = time.perf_counter()
        with srv.lock:
            srv.requests += 1
            if srv.recorder is not None:
                srv.recorder.sent((self.client, self.broker), True, frame)
            srv.catch_up()
            t1 = time.perf_counter()
            kind, out = self.session.handle(frame)
            model_s = time.perf_counter() - t1
            done = c.take_completed()
        reserved, self.reserved = self.reserved, 0
        srv.pool.release(reserved)              # Kafka releases a request's buffer once it is handled
        srv._route(done)
        if kind == "close":
            self._broker_close(out)
            return
        if kind == "held":
            # the channel stays muted (the next request waits for this answer); a client that
            # goes away is noticed (connection_lost) and its held request dropped
            self.held_size = len(frame)
            return
        if out:
            self._send(out)
        else:
            self.busy = False
        if kind == "send":
            srv.timings.append((model_s, time.perf_counter() - t0))

    def _broker_close(self, out: bytes) -> None:
        delay = self.session.close_delay_s
        if delay:                       # a failed authentication's answer and close wait (listeners.py)
            self.srv._loop.call_later(delay, self._close_after, out)
        else:
            self._close_after(out)

    def _close_after(self, out: bytes) -> None:
        """Kafka's close, after its last answer if there is one (a failed SASL authentication's)."""
        if out:
            self._send(out)
        self.close("closed by the broker (a request it cannot read or does not serve, an acks=0 error, "
                   "or a failed authentication)")

    def _send(self, out: bytes) -> None:
        srv = self.srv
        if self.closed or self.transport.is_closing():
            self.busy = False
            return
        if srv.recorder is not None:
            with srv.lock:
                srv.recorder.sent((self.client, self.broker), False, out)
        self.transport.write(out)
        self.active = srv._loop.time()
        if not self.sending:              # written at once: the next request may be handled
            self.busy = False

    def completed(self, frame: bytes) -> None:
        """A held request's answer (Cluster.take_completed)."""
        if self.closed:
            return
        self.held_size = 0
        if frame:
            self._send(frame)
        else:
            self.busy = False
        if not self.busy:
            self._pump_safely()
