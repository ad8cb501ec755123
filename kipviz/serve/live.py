"""A live view of a running kipviz.serve.Server in a notebook: a sequence diagram of the newest
requests and an event table, redrawn as requests arrive.

    from kipviz.serve import Server, LiveView
    srv = Server(brokers=3).start()
    LiveView(srv)                 # shows itself; run clients against srv.bootstrap and watch

Throttled: a background thread redraws at most every `every_s` seconds and only when the cluster
has new events, copying the newest events under the server's lock, so a busy client cannot flood
the notebook. refresh() redraws once (what the tests call)."""
from __future__ import annotations

import html
import threading

import ipywidgets as W

from ..broker import events as ev
from ..draw.sequence import sequence_diagram

_SHOWN = (ev.RequestReceived, ev.ResponseSent, ev.StateChanged, ev.RecordAppended, ev.Note)


def _row(e) -> str:
    kind = type(e).__name__
    if isinstance(e, ev.RequestReceived):
        what = f"{e.client} → broker {e.broker}: {e.api} v{e.version} #{e.correlation_id}"
    elif isinstance(e, ev.ResponseSent):
        errs = ",".join(str(c) for c in e.error_codes) or "ok"
        what = f"broker {e.broker} → {e.client}: {e.api} v{e.version} #{e.correlation_id} ({errs})"
    elif isinstance(e, ev.StateChanged):
        what = f"{e.machine} {e.key}: {e.from_state} → {e.to_state} ({e.cause})"
    elif isinstance(e, ev.RecordAppended):
        what = f"{e.topic}-{e.partition}@{e.offset}"
    else:
        what = getattr(e, "text", "")
    return (f"<tr><td>{e.seq}</td><td>{e.t}</td><td>{kind}</td>"
            f"<td style='text-align:left'>{html.escape(str(what))}</td></tr>")


class LiveView(W.VBox):
    def __init__(self, server, *, max_events: int = 40, rows: int = 25, every_s: float = 0.5, auto: bool = True):
        self.server = server
        self.cluster = getattr(server, "cluster", server)
        self.lock = getattr(server, "lock", None) or threading.RLock()
        self.max_events, self.rows, self.every_s = max_events, rows, every_s
        self.status = W.HTML()
        self.diagram = W.HTML()
        self.table = W.HTML()
        super().__init__([self.status, W.Tab([self.diagram, self.table], titles=("sequence", "events"))])
        self._seen = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refresh()
        if auto:
            self.start()

    def snapshot(self) -> tuple[int, list]:
        with self.lock:
            c = self.cluster
            return c.next_seq, list(c.events[-4 * self.max_events:])

    def refresh(self) -> bool:
        """Redraw if the cluster has new events; True if it did."""
        seq, recent = self.snapshot()
        if seq == self._seen:
            return False
        self._seen = seq
        shown = [e for e in recent if isinstance(e, _SHOWN)]
        wire = [e for e in shown if isinstance(e, (ev.RequestReceived, ev.ResponseSent))][-self.max_events:]
        bootstrap = getattr(self.server, "bootstrap", "")
        self.status.value = (f"<b>kipviz live</b> {html.escape(bootstrap)} · {seq} events · "
                             f"{getattr(self.server, 'requests', '?')} requests · "
                             f"{getattr(self.server, 'open_connections', '?')} open connections · "
                             f"virtual t = {self.cluster.now} ms")
        try:
            self.diagram.value = sequence_diagram(wire, title="newest requests") if wire else "<i>no requests yet</i>"
        except Exception as e:  # noqa: BLE001 - a drawing problem is a readable line, never a dead view
            self.diagram.value = f"<i>cannot draw: {html.escape(str(e))}</i>"
        body = "".join(_row(e) for e in reversed(recent[-self.rows:]))
        self.table.value = ("<table><tr><th>seq</th><th>t (ms)</th><th>event</th><th>what</th></tr>"
                            + body + "</table>")
        return True

    def start(self) -> LiveView:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kipviz-live", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
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
