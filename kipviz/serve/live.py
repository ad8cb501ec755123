"""A live view of a running kipviz.serve.Server in a notebook: a sequence diagram of the newest
requests, an event table, the state-machine player following the newest changed machine instance
(a transactional id, a group, a member) and the share-record strip of the newest share group,
redrawn as requests arrive.

    from kipviz.serve import Server, LiveView
    srv = Server(brokers=3).start()
    LiveView(srv)                 # shows itself; run clients against srv.bootstrap and watch

Throttled: a background thread redraws at most every `every_s` seconds and only when the cluster
has new events, copying the newest events under the server's lock, so a busy client cannot flood
the notebook. The two players (graphviz drawings, dearer) are rebuilt at most every `players_every_s`
from the newest `players_window` events. refresh() redraws once (what the tests call)."""
from __future__ import annotations

import html
import threading
import time
from collections.abc import Mapping

import ipywidgets as W

from ..draw.clients import client_names
from ..draw.record_strip import parse_key
from ..draw.sequence import lanes_that_fit, sequence_diagram
from ..schema import events as ev

# share-record state changes are drawn by the record strip, not the state-machine player
_STRIP_MACHINES = ("share-record",)
# what the broker did (a Happened; a client's ClientDid is left out below)
_SHOWN = (ev.RequestReceived, ev.ResponseSent, ev.StateChanged, ev.RecordAppended, ev.Happened, ev.LogCleaned)


def _row(e, t0: int = 0, names: dict | None = None) -> str:
    kind = type(e).__name__
    client = (names or {}).get(getattr(e, "client", None), getattr(e, "client", None))
    if isinstance(e, ev.RequestReceived):
        what = f"{client} → broker {e.broker}: {e.api} v{e.version} #{e.correlation_id}"
    elif isinstance(e, ev.ResponseSent):
        errs = ",".join(str(c) for c in e.error_codes) or "ok"
        what = f"broker {e.broker} → {client}: {e.api} v{e.version} #{e.correlation_id} ({errs})"
    elif isinstance(e, ev.StateChanged):
        what = f"{e.machine} {e.key}: {e.from_state} → {e.to_state} ({e.cause})"
    elif isinstance(e, ev.RecordAppended):
        what = f"{e.topic}-{e.partition}@{e.offset}"
    elif isinstance(e, ev.LogCleaned):
        what = (f"log cleaner: {e.topic}-{e.partition} below {e.rewritten_end}: {e.records_removed} of "
                f"{e.records_before} records removed, {e.bytes_before} -> {e.bytes_after} bytes")
    else:
        what = getattr(e, "text", "")
    return (f"<tr><td>{e.seq}</td><td>{e.t - t0}</td><td>{kind}</td>"
            f"<td style='text-align:left'>{html.escape(str(what))}</td></tr>")


LIVE_WIDTH = 740       # the sequence tab's width in JupyterLab at 1280 px with the file browser open


def newest_that_fit(wire: list, max_lanes: int) -> tuple[list, int]:
    """The newest requests and responses whose clients and brokers fit `max_lanes` lanes (one per
    client, one per broker): walking back from the newest, an exchange that would open a lane past
    the limit is left out. Returns (the events kept, in order; how many were left out)."""
    lanes: set = set()
    kept: list = []
    for e in reversed(wire):
        need = {("client", e.client), ("broker", e.broker)} - lanes
        if len(lanes) + len(need) > max_lanes:
            continue
        lanes |= need
        kept.append(e)
    return kept[::-1], len(wire) - len(kept)


def live_diagram(wire: list, *, t0: int | None = None, width: int = LIVE_WIDTH,
                 client_ids: Mapping[str, str] | None = None) -> str:
    """The newest requests as a sequence diagram no wider than `width` (one lane per broker, its
    roles under its name): with more clients and brokers than lanes fit, the older ones' requests
    are left out and the title says how many. Its text (10 px and up, FS_NOTE the smallest) is never
    scaled: the live view's content varies per run, and a picture drawn wider than its tab was
    scaled to text under 8 px (issue 25)."""
    shown, hidden = newest_that_fit(wire, lanes_that_fit(width))
    title = "newest requests" + (f" ({hidden} older of other clients or brokers not shown)" if hidden else "")
    return sequence_diagram(shown, title=title, t0=t0, width=width, lanes="broker", client_ids=client_ids)


class LiveView(W.VBox):
    def __init__(self, server, *, max_events: int = 40, rows: int = 25, every_s: float = 0.5, auto: bool = True,
                 players: bool = True, players_every_s: float = 2.0, players_window: int = 2000):
        self.server = server
        self.cluster = getattr(server, "cluster", server)
        self.lock = getattr(server, "lock", None) or threading.RLock()
        self.max_events, self.rows, self.every_s = max_events, rows, every_s
        self.players_every_s, self.players_window = players_every_s, players_window
        self.status = W.HTML()
        self.diagram = W.HTML()
        self.table = W.HTML()
        self.machine_box = W.VBox([W.HTML("<i>no state changes yet</i>")])
        self.strip_box = W.VBox([W.HTML("<i>no share-group records yet</i>")])
        self.machine_player = self.strip_player = None
        self.followed: dict[str, tuple] = {}           # "machine": (machine, key), "strip": (group,)
        self.players = players
        self.t0 = getattr(self.cluster, "start_ms", 0)     # the run's start: times are shown from it
        # the players under the tabs (a player in a hidden tab could not be watched live), one above the
        # other at the notebook's width: side by side, a transaction machine (~1100 px) shrank to ~3 px text
        below = [self.machine_box, self.strip_box] if players else []
        super().__init__([self.status, W.Tab([self.diagram, self.table], titles=("sequence", "events")), *below])
        self._seen = -1
        self._players_seen, self._players_at = -1, 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refresh()
        if auto:
            self.start()

    def snapshot(self) -> tuple[int, list, dict]:
        """(the next event's seq, the newest events, connection -> client.id for every connection the
        cluster has named: the newest events may not hold a connection's first request)."""
        with self.lock:
            c = self.cluster
            return c.next_seq, list(c.events[-4 * self.max_events:]), dict(getattr(c, "client_ids", {}))

    def refresh(self) -> bool:
        """Redraw if the cluster has new events; True if it did."""
        seq, recent, known = self.snapshot()
        if seq == self._seen:
            return False
        self._seen = seq
        shown = [e for e in recent if isinstance(e, _SHOWN) and not isinstance(e, ev.ClientDid)]   # no client decisions
        wire = [e for e in shown if isinstance(e, (ev.RequestReceived, ev.ResponseSent))][-self.max_events:]
        bootstrap = getattr(self.server, "bootstrap", "")
        self.status.value = (f"<b>kipviz live</b> {html.escape(bootstrap)} · {seq} events · "
                             f"{getattr(self.server, 'requests', '?')} requests · "
                             f"{getattr(self.server, 'open_connections', '?')} open connections · "
                             f"t = {(self.cluster.now - self.t0) / 1000:.1f} s from the start" + self._budget())
        try:
            # times in seconds from the run's start; drawn for the tab's ~740 px, not scaled (live_diagram)
            self.diagram.value = live_diagram(wire, t0=self.t0, client_ids=known) if wire else "<i>no requests yet</i>"
        except Exception as e:  # noqa: BLE001 - a drawing problem is a readable line, never a dead view
            self.diagram.value = f"<i>cannot draw: {html.escape(str(e))}</i>"
        names = client_names(recent, known)
        body = "".join(_row(e, self.t0, names) for e in reversed(recent[-self.rows:]))
        self.table.value = ("<table><tr><th>seq</th><th>t (ms from the start)</th><th>event</th><th>what</th></tr>"
                            + body + "</table>")
        if self.players and time.monotonic() - self._players_at >= self.players_every_s:
            self.refresh_players()
        return True

    def _budget(self) -> str:
        """What the server holds and its bounds (Server.budget, kipviz.serve.budget.lines)."""
        budget = getattr(self.server, "budget", None)
        if budget is None:
            return ""
        from .budget import lines
        rows = "".join(f"<li>{html.escape(line)}</li>" for line in lines(budget()))
        return f"<details><summary>memory budget</summary><ul style='margin:0'>{rows}</ul></details>"

    def refresh_players(self) -> bool:
        """Rebuild the state-machine player and the record strip from the newest events (True if
        anything changed): the player follows the machine instance that changed last (share records
        are the strip's), the strip the share group whose records changed last."""
        with self.lock:
            seq = self.cluster.next_seq
            window = list(self.cluster.events[-self.players_window:])
            known = dict(getattr(self.cluster, "client_ids", {}))
        self._players_at = time.monotonic()
        if seq == self._players_seen:
            return False
        self._players_seen = seq
        changes = [e for e in window if isinstance(e, ev.StateChanged)]
        machine = next(((e.machine, e.key) for e in reversed(changes) if e.machine not in _STRIP_MACHINES), None)
        share = next((e.key for e in reversed(changes) if e.machine in _STRIP_MACHINES), None)
        try:
            if machine is not None:
                self._follow_machine(machine, window, known)
            if share is not None:
                self._follow_strip(parse_key(share)[0], window, known)
        except Exception as e:  # noqa: BLE001 - a drawing problem is a readable line, never a dead view
            self.machine_box.children = [W.HTML(f"<i>cannot draw: {html.escape(str(e))}</i>")]
        return True

    def _follow_machine(self, machine: tuple, window: list, known: dict) -> None:
        from ..draw.animate import Animation
        from ..draw.machines import tables
        table = next((t for t in tables().values() if t.name == machine[0]), None)
        if table is None:
            return
        anim = Animation(table, window, key=machine[1], title=f"{machine[0]} · {machine[1]} (live)", t0=self.t0,
                         client_ids=known)
        if self.machine_player is not None and self.followed.get("machine") == machine:
            self.machine_player.follow(anim)
        else:
            from ..widgets.player import Player
            self.machine_player = Player(anim)
            self.machine_player.index = max(len(anim.frames) - 1, 0)      # live: start at the newest frame
            self.machine_box.children = [self.machine_player]
        self.followed["machine"] = machine

    def _follow_strip(self, group: str, window: list, known: dict) -> None:
        from ..draw.record_strip import record_strip
        strip = record_strip(window, group=group, title=f"share group {group} · records (live)", t0=self.t0,
                             client_ids=known)
        if not len(strip):
            return
        if self.strip_player is not None and self.followed.get("strip") == (group,):
            self.strip_player.follow(strip)
        else:
            from ..widgets.strip_player import strip_player
            self.strip_player = strip_player(strip)
            self.strip_player.index = len(strip) - 1
            self.strip_box.children = [self.strip_player]
        self.followed["strip"] = (group,)

    def start(self) -> LiveView:
        """Start refreshing in the background; returns the view."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kipviz-live", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop refreshing."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - the view must never take the kernel down
                pass
