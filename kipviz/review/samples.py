"""Example values for a draft: encode with the draft, decode back, and let the baseline read the
same bytes (how a peer that only knows the released definition would see them)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import codec
from ..codec.jsonview import to_json
from ..errors import KipvizError
from ..records.examples import example_value
from ..schema.model import MessageSpec

__all__ = ["Example", "example", "to_json"]


@dataclass
class Example:
    """A draft version's example: its value, its bytes and spans, or the problem met building it."""
    version: int
    value: dict | None = None
    data: bytes | None = None
    spans: list = field(default_factory=list)
    problem: str | None = None          # encode/decode failure or a value that did not come back
    base_reading: str | None = None     # how the baseline reads the bytes (None: nothing to compare)
    base_ok: bool | None = None

    @property
    def ok(self) -> bool:
        """Whether the example was built and read back without a problem."""
        return self.problem is None


def _differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k == codec.UNKNOWN_TAGS:
                continue
            p = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(f"{p} {'only in the draft' if k in a else 'only in the baseline'}")
            else:
                out += _differences(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def example(spec: MessageSpec, version: int, base: MessageSpec | None = None) -> Example:
    """Encode the kit's example value for `spec` v`version`, decode it back, annotate the bytes,
    and, when `base` has the version, decode the same bytes with the baseline."""
    ex = Example(version)
    try:
        ex.value = example_value(spec, version)
        ex.data = codec.encode(spec, version, ex.value)
        decoded = codec.decode(spec, version, ex.data)
        ex.spans = codec.annotate(spec, version, ex.data)
    except (KipvizError, ValueError) as e:
        ex.problem = f"{type(e).__name__}: {e}"
        return ex
    diffs = _differences(ex.value, decoded)
    if diffs:
        ex.problem = "decoded value differs from the encoded one: " + "; ".join(diffs[:5])
    if base is not None and version in base.valid:
        try:
            theirs = codec.decode(base, version, ex.data)
        except (KipvizError, ValueError) as e:
            ex.base_ok, ex.base_reading = False, f"cannot read these bytes: {e}"
        else:
            diffs = _differences(decoded, theirs)
            ex.base_ok = not diffs
            ex.base_reading = ("reads the same values" if not diffs else
                               "reads the bytes but sees other fields or values: " + "; ".join(diffs[:6]))
    return ex
