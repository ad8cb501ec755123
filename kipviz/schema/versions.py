"""Kafka version ranges as written in schema files: "0+", "3-5", "7", "none".

A version is an int16 on the wire (RequestHeader.RequestApiVersion; Kafka's generator reads
ranges as shorts, `Versions.parse`), so a bound past 32767 is an error, not a range to walk."""
from __future__ import annotations

import re
from dataclasses import dataclass

_RANGE = re.compile(r"^\s*(\d+)\s*(?:(\+)|-\s*(\d+))?\s*$")
MAX_VERSION = 2**15 - 1


@dataclass(frozen=True, slots=True)
class Versions:
    """Inclusive range lo..hi; hi None means open-ended; empty when lo > hi."""

    lo: int
    hi: int | None

    @classmethod
    def parse(cls, text: str) -> "Versions":
        """A range from its text in a definition: "0+", "1-3", "2" or "none"; ValueError otherwise."""
        if not isinstance(text, str):
            raise ValueError(f"version range must be a string, got {text!r}")
        if text.strip() == "none":
            return NONE
        m = _RANGE.match(text)
        if not m:
            raise ValueError(f"bad version range {text!r} (expected e.g. '0+', '1-3', '2' or 'none')")
        lo = int(m.group(1))
        hi = int(m.group(3)) if m.group(3) is not None else lo
        if max(lo, hi) > MAX_VERSION:
            raise ValueError(f"bad version range {text!r}: versions are int16, at most {MAX_VERSION}")
        if m.group(2):
            return cls(lo, None)
        if hi < lo:
            raise ValueError(f"bad version range {text!r}: end before start")
        return cls(lo, hi)

    @property
    def empty(self) -> bool:
        """Whether the range holds no version."""
        return self.hi is not None and self.hi < self.lo

    def __contains__(self, v: int) -> bool:
        return v >= self.lo and (self.hi is None or v <= self.hi)

    def intersect(self, other: "Versions") -> "Versions":
        """The versions in both ranges."""
        lo = max(self.lo, other.lo)
        his = [h for h in (self.hi, other.hi) if h is not None]
        hi = min(his) if his else None
        return Versions(lo, hi) if hi is None or hi >= lo else NONE

    def within(self, other: "Versions") -> bool:
        """True if every version here is also in other."""
        if self.empty:
            return True
        if self.lo < other.lo:
            return False
        if other.hi is None:
            return True
        return self.hi is not None and self.hi <= other.hi

    def iter(self, upto: int) -> range:
        """The versions of the range, at most `upto` (an open range stops there)."""
        hi = upto if self.hi is None else min(self.hi, upto)
        return range(self.lo, hi + 1)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)
ALL = Versions(0, None)
