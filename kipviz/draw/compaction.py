"""A partition before and after one pass of the log cleaner (cleanup.policy=compact), as SVG text.

    pic = compaction_picture(cluster.events, "prices", 0)       # the newest pass over prices-0
    pic = compaction_picture(events, "prices", 0, pass_index=0)  # the first one
    pic.before / pic.after     per offset: (offset, kind, key, value); kind is "data", "tombstone",
                               "COMMIT"/"ABORT" (a marker) or "gap" (no record there)
    pic.svg()                  two rows of cells, offsets under them, the dirty range and the end of
                               the rewritten segments marked

Read from the events only: the records from RecordAppended, which offsets a pass kept from its
LogCleaned (`kept` runs below `rewritten_end`); the offsets past `rewritten_end` are as appended
(the active segment and what the pass did not reach). Nothing here decides what the cleaner keeps."""
from __future__ import annotations

from dataclasses import dataclass

from ..schema import events as E
from .render import svg_text

__all__ = ["compaction_picture", "CompactionPicture"]

CELL_W, CELL_H, GAP_X = 46, 34, 3
FS, FS_SMALL = 12, 10
COLORS = {"data": ("#bee3f8", "#2b6cb0"), "tombstone": ("#e2e8f0", "#4a5568"),
          "COMMIT": ("#c6f6d5", "#276749"), "ABORT": ("#fed7d7", "#9b2c2c"), "gap": ("#ffffff", "#cbd5e0")}
C_TEXT, C_MUTED, C_MARK = "#1a202c", "#718096", "#c05621"


@dataclass
class CompactionPicture:
    """A partition's batches before and after one log cleaner pass (kipviz.schema.events.LogCleaned)."""
    topic: str
    partition: int
    cleaned: E.LogCleaned
    before: list[tuple]
    after: list[tuple]
    max_cells: int = 60

    def svg(self) -> str:
        """The picture as SVG text: the two rows of batches, at most max_cells each."""
        cells = min(len(self.before), self.max_cells)
        h = 60 + 2 * (CELL_H + 44) + 30
        c = self.cleaned
        title = (f"{self.topic}-{self.partition}: log cleaner pass at t={c.t} ms · {c.records_removed} of "
                 f"{c.records_before} records removed, {c.bytes_before} → {c.bytes_after} bytes")
        first = self.before[0][0] if self.before else 0
        marks = [(offset, what, 90 + (offset - first) * (CELL_W + GAP_X) - GAP_X / 2)
                 for offset, what in ((c.first_dirty_offset, "dirty from"), (c.end_offset, "first uncleanable"),
                                      (c.rewritten_end, "rewritten up to"))
                 if 0 <= offset - first <= cells]
        # wide enough for every text: the cells, the title and the marks' labels right of their lines
        w = int(max(90 + cells * (CELL_W + GAP_X) + 20, 10 + _width(title, FS + 1, bold=True) + 10,
                    *(x + 3 + _width(f"{what} {offset}", FS_SMALL) + 10 for offset, what, x in marks)))
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
               f'font-family="Helvetica, Arial, sans-serif">', f'<rect width="{w}" height="{h}" fill="white"/>',
               _text(10, 20, title, FS + 1, bold=True)]
        for row, (label, cells_of) in enumerate((("before", self.before), ("after", self.after))):
            y = 50 + row * (CELL_H + 44)
            out.append(_text(10, y + CELL_H / 2 + 4, label, FS, bold=True))
            out += [_cell(90 + i * (CELL_W + GAP_X), y, cell) for i, cell in enumerate(cells_of[:cells])]
        for offset, what, x in marks:
            out.append(f'<line x1="{x:g}" y1="40" x2="{x:g}" y2="{h - 24}" stroke="{C_MARK}" '
                       f'stroke-width="1.5" stroke-dasharray="4,3"/>')
            out.append(_text(x + 3, h - 10 - 12 * (what == "first uncleanable"), f"{what} {offset}", FS_SMALL,
                             color=C_MARK))
        if len(self.before) > cells:
            out.append(_text(w - 10, 20, f"(first {cells} of {len(self.before)} offsets)", FS_SMALL,
                             anchor="end", color=C_MUTED))
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self) -> str:
        return self.svg()


def _width(s: str, size: float, bold: bool = False) -> float:
    """About how wide `s` is drawn in Helvetica at `size` px (a generous average glyph width)."""
    return len(s) * size * (0.62 if bold else 0.56)


def _text(x, y, s, size, *, bold=False, anchor="start", color=C_TEXT) -> str:
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" fill="{color}"'
            + (' font-weight="bold"' if bold else "") + f">{svg_text(s)}</text>")


def _short(b) -> str:
    if b is None:
        return "null"
    s = b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else str(b)
    return s if len(s) <= 6 else s[:5] + "\u2026"


def _cell(x, y, cell) -> str:
    offset, kind, key, value = cell
    fill, stroke = COLORS[kind]
    parts = [f'<rect x="{x:g}" y="{y:g}" width="{CELL_W}" height="{CELL_H}" rx="3" fill="{fill}" '
             f'stroke="{stroke}"' + (' stroke-dasharray="4,3"' if kind == "gap" else "") + "/>"]
    if kind in ("data", "tombstone"):
        parts.append(_text(x + CELL_W / 2, y + 14, _short(key), FS_SMALL, anchor="middle", bold=True))
        parts.append(_text(x + CELL_W / 2, y + 28, _short(value), FS_SMALL, anchor="middle"))
    elif kind != "gap":
        parts.append(_text(x + CELL_W / 2, y + 21, kind, FS_SMALL, anchor="middle", bold=True))
    parts.append(_text(x + CELL_W / 2, y + CELL_H + 12, offset, FS_SMALL, anchor="middle", color=C_MUTED))
    return "\n".join(parts)


def _in(runs, o: int) -> bool:
    return any(a <= o <= b for a, b in runs)


def compaction_picture(events, topic: str, partition: int, pass_index: int = -1,
                       max_cells: int = 60) -> CompactionPicture:
    """The partition just before and just after one LogCleaned pass of `events`."""
    passes = [e for e in events if type(e) is E.LogCleaned and e.topic == topic and e.partition == partition]
    if not passes:
        raise ValueError(f"no log cleaner pass over {topic}-{partition} in these events")
    c = passes[pass_index]
    prev = passes[passes.index(c) - 1] if passes.index(c) else None
    records = {}
    for e in events:
        if e.seq > c.seq:
            break
        if type(e) is E.RecordAppended and e.topic == topic and e.partition == partition:
            kind = e.record.get("type", "data") if e.control else ("tombstone" if e.value is None else "data")
            records[e.offset] = (e.offset, kind, e.key, e.value)
    if not records:
        raise ValueError(f"the events hold no records of {topic}-{partition} before its pass")
    lo, hi = max(min(records), c.log_start_offset), max(records) + 1

    def held_before(o):
        return o in records and (prev is None or o >= prev.rewritten_end or _in(prev.kept, o))

    def held_after(o):
        return o in records and (o >= c.rewritten_end or _in(c.kept, o))

    gap = lambda o: (o, "gap", None, None)      # noqa: E731 - one line
    before = [records[o] if held_before(o) else gap(o) for o in range(lo, hi)]
    after = [records[o] if held_after(o) else gap(o) for o in range(lo, hi)]
    return CompactionPicture(topic, partition, c, before, after, max_cells)
