"""The `states` part of a report: the coordinators' states rebuilt from the wire (kipviz.explain.states),
drawn by the scenarios' own pictures -- an Animation per state table and the share partitions'
record strip -- with each group's generations and each transactional id's producers as text."""
from __future__ import annotations

import html
from pathlib import Path

from ..draw.animate import Animation
from ..draw.record_strip import record_strip
from ..errors import KipvizError
from ..schema import events as E
from .states import Rebuild
from .who import who

ANIMATED = ("transaction", "classic-group", "share-record")     # the tables Rebuild fires, in report order
MAX_LINES = 60


class States:
    """The coordinators' states as the capture shows them (see kipviz.explain.states)."""

    def __init__(self, exchanges, lanes: dict[str, str] | None = None):
        r = Rebuild(exchanges)
        r.run()
        self.events = r.events
        self.transactions, self.generations = r.transactions, r.generations
        self.consumer_members, self.unexplained = r.consumer_members, r.unexplained
        # connection -> lane name (client id and port), as the story names them
        self.lanes = dict(lanes) if lanes is not None else {c.client: c.name for c in who(exchanges)[0]}
        self.t0 = self.events[0].t if self.events else 0

    def changes(self, machine: str | None = None) -> list[E.StateChanged]:
        """The reconstructed state changes (of one table)."""
        return [e for e in self.events if isinstance(e, E.StateChanged) and machine in (None, e.machine)]

    def path(self, machine: str, key: str) -> list[str]:
        """The states one instance went through, the first one included."""
        ch = [e for e in self.changes(machine) if e.key == key]
        return ([ch[0].from_state] + [e.to_state for e in ch]) if ch else []

    def animation(self, machine: str = "transaction", key: str | None = None) -> Animation:
        """The scenarios' animation of one table over the capture (every instance, or one key)."""
        return Animation(machine, self.events, key=key, t0=self.t0, client_ids=self.lanes,
                         title=f"{machine} (from the capture)" + (f" · {key}" if key else ""))

    def strip(self, group: str | None = None):
        """The share partitions' record strip over the capture."""
        return record_strip(self.events, group=group, t0=self.t0, client_ids=self.lanes,
                            title="share partitions (from the capture)")

    def animated(self) -> str | None:
        """The table to_gif draws: the first with changes (transaction, classic-group, share-record)."""
        return next((m for m in ANIMATED if self.changes(m)), None)

    def to_gif(self, path) -> tuple[str, Path]:
        """An animated GIF of the `animated()` table: (its name, the path). KipvizError when the
        capture changed no coordinator state."""
        machine = self.animated()
        if machine is None:
            raise KipvizError("the capture shows no coordinator state change to animate (no transactional "
                              "producer, classic group or share group in it)")
        out = self.strip().to_gif(path) if machine == "share-record" else self.animation(machine).to_gif(path)
        return machine, Path(out)

    def lines(self) -> list[str]:
        """The part as text lines."""
        out = self._transaction_lines() + self._group_lines() + self._member_lines() + self._share_lines()
        out += [f"not explained: {u}" for u in self.unexplained[:10]]
        return out[:MAX_LINES] or ["no coordinator state in the capture"]

    def _transaction_lines(self) -> list[str]:
        out = []
        for tid, tx in self.transactions.items():
            ids = ", ".join(f"{p}/{e}" for p, e in tx.producers) or "not seen"
            out.append(f"transactional id {tid!r}: producer id/epoch {ids}; "
                       f"{' -> '.join(self.path('transaction', tid))}")
            if tx.outcomes:
                out.append(f"    transactions: {', '.join(tx.outcomes)}")
        return out

    def _group_lines(self) -> list[str]:
        out = []
        for gid, gens in self.generations.items():
            out.append(f"group {gid!r}: {' -> '.join(self.path('classic-group', gid))}")
            for prev, g in zip([None] + gens[:-1], gens, strict=True):
                gone = sorted(set(prev.members) - set(g.members)) if prev is not None else []
                members = "; ".join(f"{m}{' (leader)' if m == g.leader else ''}: "
                                    f"{_parts(g.assignments.get(m)) if m in g.assignments else 'no assignment seen'}"
                                    for m in g.members)
                out.append(f"    generation {g.generation} ({g.protocol or '?'}): {members}"
                           + (f"; no longer a member: {', '.join(gone)}" if gone else ""))
        return out

    def _member_lines(self) -> list[str]:
        out = []
        for gid, members in self.consumer_members.items():
            out.append(f"consumer group {gid!r} (KIP-848, members' epochs from ConsumerGroupHeartbeat):")
            for mid, hist in members.items():
                epochs = " -> ".join(str(e) for e in dict.fromkeys(e for _, e, _ in hist))
                last = next((p for _, _, p in reversed(hist) if p is not None), None)
                out.append(f"    {mid}: epochs {epochs}; assignment {_parts(last) if last is not None else 'not seen'}")
        return out

    def _share_lines(self) -> list[str]:
        keys = {e.key for e in self.changes("share-record")}
        return [f"share partition {sp}: {sum(1 for k in keys if k.startswith(sp + '@'))} offsets delivered"
                for sp in sorted({k.rsplit("@", 1)[0] for k in keys})]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        e = html.escape
        parts = [f"<pre>{e(str(self))}</pre>"]
        for m in ANIMATED:
            if not self.changes(m):
                continue
            parts.append(self.strip()._repr_html_() if m == "share-record" else self.animation(m)._repr_html_())
        return f"<div class='kv-states'><h3>The coordinators' states</h3>{''.join(parts)}</div>"


def _parts(parts) -> str:
    by: dict[str, list[int]] = {}
    for t, p in parts or ():
        by.setdefault(t, []).append(p)
    return ", ".join(f"{t} {sorted(ps)}" for t, ps in sorted(by.items())) or "none"
