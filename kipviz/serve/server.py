"""The socket edge around the cluster model: one asyncio listener per modelled broker.

Per connection, like Kafka's SocketServer Processor: read a size-prefixed frame, hand it to the
model, write the answer, and only then read the next request (Kafka mutes a channel while a request
is in flight, so responses leave in request order). A request the model holds (Fetch/ShareFetch long
polling, JoinGroup/SyncGroup) keeps its connection waiting until Cluster.take_completed() hands its
frame over; an acks=0 Produce gets nothing; a request Kafka cannot parse closes the connection.
The virtual clock follows wall time (times `speed`), so MaxWaitMs, session timeouts, lock expiry and
transaction timeouts fire as they would on a broker. One lock guards the model; the event loop and
any notebook thread take it before touching the cluster.

Listeners (kipviz.serve.listeners): PLAINTEXT on port, port+1, ...; with `users`, also
SASL_PLAINTEXT on sasl_port, sasl_port+1, ..., whose connections authenticate before the model
sees a request. Each connection's frames go through the session its listener gives it."""
from __future__ import annotations

import asyncio
import collections
import secrets
import struct
import threading
import time
from collections.abc import Callable

from ..broker import Cluster
from .listeners import PLAINTEXT, access_settings, acls_from, listeners_for, users_from

MAX_REQUEST_BYTES = 104857600      # socket.request.max.bytes: a bigger size prefix closes the connection
MIN_TICK_S, MAX_TICK_S = 0.002, 0.1    # virtual time catches up with the wall clock at the next timer
DEFAULT_EVENTS_MAX = 50_000        # a long-running server keeps at most this many events (issue 22 item 8)
RETENTION_CHECK_MS = 1000          # the kit's log.retention.check.interval.ms for a live server (Kafka: 300000)


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
            plan_for(registry.get(api + "Request"), served[1])._decoder()
            plan_for(registry.get(api + "Response"), served[1])._encoder()
        except Exception:  # noqa: BLE001 - a warm-up only; the request itself reports any problem
            pass


class Server:
    """The model behind `brokers` TCP listeners on `host`: port, port+1, ... (0: free ports).
    start() returns once every listener is bound; stop() closes them and waits for the thread.

    users (a dict name -> password, a Users, or a users file's path): a SASL_PLAINTEXT listener
    too, on sasl_port.. (None: after the plaintext ports; 0 with port 0); acls (Acl list or an ACL
    file's path), super_users, allow_everyone_if_no_acl_found: the authorizer of the cluster Server
    makes, with the defaults kipviz.serve.listeners names (a Cluster passed in keeps its own)."""

    def __init__(self, cluster: Cluster | None = None, *, brokers: int | None = None, host: str = "127.0.0.1",
                 port: int = 0, speed: float = 1.0, verbose: bool = False,
                 log: Callable[[str], None] | None = None, events_max: int | None = DEFAULT_EVENTS_MAX,
                 record=None, seed: int | None = None, users=None, sasl_port: int | None = None, acls=None,
                 super_users=None, allow_everyone_if_no_acl_found: bool | None = None, **cluster_settings):
        users = None if users is None else users_from(users)
        if cluster is not None and (acls, super_users, allow_everyone_if_no_acl_found) != (None, None, None):
            raise ValueError("acls, super_users and allow_everyone_if_no_acl_found are the cluster's settings: "
                             "give them to Cluster(...), or let Server make the cluster")
        if cluster is None:
            cluster_settings.update(access_settings(users=users is not None, acls=acls_from(acls), super_users=super_users,
                                                    allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found))     # Kafka's cluster id and member ids are random per cluster; seed=N repeats them
            seed = secrets.randbits(63) if seed is None else seed
            cluster = Cluster(brokers=brokers or 1, seed=seed, start_ms=int(time.time() * 1000), **cluster_settings)
        elif brokers is not None and brokers != cluster.config.brokers:
            raise ValueError(f"the cluster has {cluster.config.brokers} brokers, not {brokers}")
        elif seed is not None and seed != cluster.seed:
            raise ValueError(f"the cluster was made with seed {cluster.seed}, not {seed}")
        if speed <= 0:
            raise ValueError(f"--speed must be > 0, got {speed}")
        self.cluster = cluster
        cluster.config.long_poll = True             # a live broker holds Fetch/ShareFetch (DelayedFetch)
        if events_max is not None and cluster.config.events_max is None:
            cluster.config.events_max = events_max
        # the retention task runs on a live server (LogManager's, every log.retention.check.interval.ms;
        # the kit checks every second so a teaching server's memory follows retention.bytes closely)
        if cluster.config.log_retention_check_interval_ms is None:
            cluster.config.log_retention_check_interval_ms = RETENTION_CHECK_MS
        cluster.start_log_retention()
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
        self.listeners = listeners_for(host, port, cluster.config.brokers, users, sasl_port)
        self.verbose = verbose
        self.log = log or (lambda line: print(line, flush=True))
        self.lock = threading.RLock()
        self.addresses: list[tuple[str, int]] = self.listeners[0].addresses    # PLAINTEXT's
        self.connections = 0                         # accepted so far
        self.open_connections = 0
        self.requests = 0
        # the last 20,000 answered-at-once requests: (seconds in the model, seconds frame-in to frame-out);
        # ~2 MiB when full (100,000 took ~10 MiB and 10+ minutes to fill: a soak's slow "growth")
        self.timings: collections.deque = collections.deque(maxlen=20_000)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._waiting: dict[tuple[str, int], asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self._stopping = False

    # ---- lifecycle ----------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """bootstrap.servers for a client: every broker's host:port."""
        return ",".join(f"{h}:{p}" for h, p in self.addresses)

    @property
    def sasl_bootstrap(self) -> str:
        """bootstrap.servers for a SASL_PLAINTEXT client ("" without users)."""
        return ",".join(f"{h}:{p}" for li in self.listeners[1:] for h, p in li.addresses)

    def start(self) -> Server:
        if self._thread is not None:
            return self
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

    def stop(self, timeout: float = 10.0) -> None:
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
        from ..broker.retention import held_bytes
        with self.lock:
            sizes = [held_bytes(log) for t in self.cluster.topics.by_name.values() if not t.internal
                     for log in t.partitions]
        return sum(sizes), max(sizes, default=0)

    def internal_log_bytes(self) -> dict[str, int]:
        """Bytes of record batches the model holds per internal topic (__consumer_offsets,
        __transaction_state, __share_group_state), all partitions summed."""
        from ..broker.retention import held_bytes
        with self.lock:
            return {t.name: sum(held_bytes(log) for log in t.partitions)
                    for t in self.cluster.topics.by_name.values() if t.internal}

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
        n = self.cluster.config.brokers
        for li in self.listeners:
            for b in range(n):
                srv = await asyncio.start_server(lambda r, w, b=b, li=li: self._connection(r, w, b, li), li.host,
                                                 li.port_of(b), reuse_address=True)
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
        for t in list(self._tasks):
            t.cancel()
        for srv in self._servers:
            try:
                await asyncio.wait_for(srv.wait_closed(), 2)
            except Exception:  # noqa: BLE001
                pass
        self._stop_event.set()

    async def _tick(self) -> None:
        """Virtual time follows the wall clock (times speed); due timers fire, held requests time out."""
        c = self.cluster
        wall0, virt0 = time.monotonic(), c.now
        while True:
            with self.lock:
                due = c.clock.next_due()
                wait = MAX_TICK_S if due is None else (due - c.now) / 1000 / self.speed
            await asyncio.sleep(min(max(wait, MIN_TICK_S), MAX_TICK_S))
            target = virt0 + int((time.monotonic() - wall0) * 1000 * self.speed)
            with self.lock:
                if target > c.now:
                    c.advance(target - c.now)
                done = c.take_completed()
            self._route(done)

    def _route(self, done) -> None:
        for client, broker, frame in done:
            fut = self._waiting.pop((client, broker), None)
            if fut is not None and not fut.done():
                fut.set_result(frame)

    # ---- one connection -----------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, broker: int,
                          listener) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        client = f"{peer[0]}:{peer[1]}"
        self.connections += 1
        self.open_connections += 1
        self._say(f"broker {broker}: connection from {client}")
        rec = self.recorder
        if rec is not None:
            with self.lock:
                rec.opened((client, broker), peer, writer.get_extra_info("sockname") or ("0.0.0.0", 0))
        why = "client closed"
        with self.lock:
            session = listener.session(self.cluster, broker, client)     # Kafka's authenticator, or none
        try:
            why = await self._serve(reader, writer, broker, client, session)
        except asyncio.CancelledError:
            why = "server stopping"
        except (ConnectionError, OSError) as e:
            why = f"connection error: {e}"
        finally:
            self.open_connections -= 1
            self._waiting.pop((client, broker), None)
            with self.lock:
                self.cluster.connection_closed(client, broker)
                if self.recorder is not None:
                    self.recorder.gone((client, broker))
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass
            self._say(f"broker {broker}: {client} closed ({why})")
            self._tasks.discard(task)

    # size: one connection's read-decode-answer loop; its cancellation and half-close handling share one try block
    async def _serve(self, reader, writer, broker: int, client: str, session) -> str:
        c = self.cluster
        head_task: asyncio.Task | None = None
        try:
            while True:
                if head_task is None:
                    head_task = asyncio.ensure_future(reader.readexactly(4))
                try:
                    head = await head_task
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        return self._half(broker, client, f"{len(e.partial)} of 4 size bytes")
                    return "client closed"
                head_task = None
                size, = struct.unpack(">i", head)
                if size < 0 or size > MAX_REQUEST_BYTES:
                    with self.lock:
                        c.note(f"connection closed: request size {size} out of range", broker=broker, client=client)
                    return f"bad size {size}"
                try:
                    payload = await reader.readexactly(size)
                except asyncio.IncompleteReadError as e:
                    return self._half(broker, client, f"{len(e.partial)} of {size} bytes")
                fut = None
                t0 = time.perf_counter()
                with self.lock:
                    self.requests += 1
                    if self.recorder is not None:
                        self.recorder.sent((client, broker), True, head + payload)
                    t1 = time.perf_counter()
                    kind, out = session.handle(head + payload)
                    model_s = time.perf_counter() - t1
                    if kind == "held":
                        fut = self._loop.create_future()
                        self._waiting[(client, broker)] = fut
                    done = c.take_completed()
                self._route(done)
                if kind == "close" and session.close_delay_s:    # a failed authentication's answer waits
                    await asyncio.sleep(session.close_delay_s)
                if kind == "held":
                    # the channel stays muted (the next request is not handled before this answer),
                    # but a client that goes away is noticed: its held request is dropped
                    head_task = asyncio.ensure_future(reader.readexactly(4))
                    await asyncio.wait({fut, head_task}, return_when=asyncio.FIRST_COMPLETED)
                    if not fut.done() and head_task.exception() is not None:
                        return "client closed while its request was held"
                    out = await fut
                if out:
                    if self.recorder is not None:
                        with self.lock:
                            self.recorder.sent((client, broker), False, out)
                    writer.write(out)
                    await writer.drain()
                if kind == "close":     # after its last answer, if any (a failed SASL authentication's)
                    return ("closed by the broker (a request it cannot read or does not serve, an acks=0 error, "
                            "or a failed authentication)")
                if kind == "send":
                    self.timings.append((model_s, time.perf_counter() - t0))
        finally:
            if head_task is not None and not head_task.done():
                head_task.cancel()
            elif head_task is not None and not head_task.cancelled():
                head_task.exception()       # retrieved: a client gone while its answer left is no error

    def _half(self, broker: int, client: str, what: str) -> str:
        with self.lock:
            self.cluster.note(f"connection closed mid-request: {what}", broker=broker, client=client)
        return f"closed mid-request ({what})"

    def _say(self, line: str) -> None:
        if self.verbose:
            self.log(line)
