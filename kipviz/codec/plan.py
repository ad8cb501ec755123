"""One compiled plan per (message, version): the same walk encodes, decodes and annotates."""
from __future__ import annotations

from functools import lru_cache
from itertools import repeat
from typing import NamedTuple

from ..errors import DecodeError, EncodeError
from ..gcpause import gc_paused
from ..schema.model import MessageSpec
from ..schema.resolve import VMessage, resolve
from .gen_decode import DecodeGen
from .gen_encode import EncodeGen
from .normalize import absent_fields, normalize_struct

_GC_PAUSE_BYTES = 1024   # big messages make many dicts; see kipviz.gcpause


class Span(NamedTuple):
    """Bytes [start, end) hold `path` (e.g. "Topics[0].Partitions[1].CommittedOffset").

    role: value | length | count | presence | tag-count | tag | tag-size | unknown"""
    start: int
    end: int
    path: str
    wire_type: str
    value: object
    role: str


class Plan:
    """One message version compiled: decode, annotate and encode (each generated on first use)."""
    def __init__(self, vm: VMessage):
        self.vm = vm
        self.spec = vm.spec
        self.version = vm.version
        self._dec = self._ann = self._enc = None
        self.tag = f"{vm.spec.name} v{vm.version}"

    # compiled lazily: most users need only one of the three
    def _decoder(self):
        if self._dec is None:
            self._dec, self.decode_source = DecodeGen(False, self.tag).build(self.vm.fields, self.vm.flexible)
        return self._dec

    def _annotator(self):
        if self._ann is None:
            self._ann, self.annotate_source = DecodeGen(True, self.tag).build(self.vm.fields, self.vm.flexible)
        return self._ann

    def _encoder(self):
        if self._enc is None:
            self._enc, self.encode_source = EncodeGen(self.tag).build(self.vm.fields, self.vm.flexible)
        return self._enc

    def decoder(self):
        """The compiled decoder, f(buf, pos, end) -> (value, end position): the fast path, which
        raises on bad bytes without saying where (decode_at asks the annotator)."""
        return self._decoder()

    def encoder(self):
        """The compiled encoder (compiled on first use, as the decoder is)."""
        return self._encoder()

    def decode_at(self, buf: bytes, pos: int = 0, prefix: str = "") -> tuple[dict, int]:
        """Decode one message starting at pos; returns (value, end)."""
        try:
            return self._decoder()(buf, pos, len(buf))
        except DecodeError:
            raise
        except Exception:
            pass
        # the fast decoder only knows that something is wrong; the annotator says what and where
        self.annotate_at(buf, pos, prefix)
        raise DecodeError("could not decode", pos, prefix.rstrip("."))   # pragma: no cover

    def annotate_at(self, buf: bytes, pos: int = 0, prefix: str = "") -> tuple[dict, int, list[tuple]]:
        """Decode one message starting at pos, recording every span; returns (value, end, spans)."""
        spans: list[tuple] = []
        try:
            value, end = self._annotator()(buf, pos, len(buf), prefix, spans.append, spans.extend)
        except DecodeError:
            raise
        except RecursionError:
            raise DecodeError("structure nested too deeply", pos, prefix.rstrip(".")) from None
        except Exception as e:   # a bug, not bad input: still report it as a decode error
            raise DecodeError(f"internal decoder error: {type(e).__name__}: {e}", pos, prefix.rstrip(".")) from None
        return value, end, spans

    def decode(self, data) -> dict:
        """The value of a whole message; DecodeError on bad bytes or bytes left after it."""
        buf = data if type(data) is bytes else _as_bytes(data)
        if len(buf) < _GC_PAUSE_BYTES:
            value, end = self.decode_at(buf)
        else:
            with gc_paused():
                value, end = self.decode_at(buf)
        if end != len(buf):
            raise DecodeError(f"{len(buf) - end} trailing bytes after the message", end, "")
        return value

    def annotate(self, data, prefix: str = "") -> list[Span]:
        """The Spans of a whole message; DecodeError on bad bytes or bytes left after it."""
        buf = data if type(data) is bytes else _as_bytes(data)
        _, end, spans = self.annotate_at(buf, 0, prefix)
        if end != len(buf):
            raise DecodeError(f"{len(buf) - end} trailing bytes after the message", end, "")
        return list(map(_new_tuple, repeat(Span), spans))   # Span._make without its length check

    def normalize(self, value) -> dict:
        """A value filled out to this version's shape (defaults added, types checked), as encode sees it."""
        return normalize_struct(self.vm.fields, value, "", self.vm.flexible,
                                absent_fields(self.spec.fields, self.version))

    def encode_into(self, value, w: bytearray) -> None:
        """Append the message's bytes to `w`: the fast encoder, or on failure the normalized value
        (whose errors say which field is wrong)."""
        enc = self._encoder()
        mark = len(w)
        try:
            enc(value, w)
            return
        except Exception:
            del w[mark:]
        value = self.normalize(value)          # raises EncodeError naming the field
        try:
            enc(value, w)
        except Exception as e:                 # pragma: no cover - normalize should have caught it
            del w[mark:]
            raise EncodeError(f"cannot encode {self.tag}: {type(e).__name__}: {e}") from None

    def encode(self, value) -> bytes:
        """The message's bytes."""
        w = bytearray()
        self.encode_into(value, w)
        return bytes(w)


_new_tuple = tuple.__new__


def _as_bytes(data) -> bytes:
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        raise TypeError("decode needs bytes; for hex text use bytes.fromhex(...) or kipviz.codec.parse_hex")
    raise TypeError(f"decode needs bytes, got {type(data).__name__}")


@lru_cache(maxsize=8192)
def plan_for(spec: MessageSpec, version: int) -> Plan:
    """The plan of `spec` at `version` (resolved once per pair)."""
    return Plan(resolve(spec, version))
