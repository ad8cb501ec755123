"""Generate a decoder (and its annotating twin) for one message version as Python source.

Nested structs are inlined (Kafka schemas are not recursive), so decoding a message is one
Python function. The fast decoder has no paths and raises a bare _Fail; when it fails, the
annotating decoder (same walk, with spans and precise checks) says which byte and field.
Arrays of structs whose elements share one layout take a "shape" path in both (see below)."""
from __future__ import annotations

import struct
import uuid

from ..errors import DecodeError
from ..schema.resolve import VField
from .defaults import default_value
from .varint import read_uvarint

FMT = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
       "float64": "d", "uuid": "16s"}
SIZE = {k: struct.calcsize(">" + v) for k, v in FMT.items()}
UNKNOWN_TAGS = "_unknownTaggedFields"


class _Fail(Exception):
    """Raised by fast decoders; the annotating decoder then explains it."""


def _fast_uv(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value > 0xFFFFFFFF:
                raise _Fail
            return value, pos
        shift += 7
        if shift > 28:
            raise _Fail


def _fast_unknown_tags(buf, pos, n, nt):
    """Tag buffer of a struct with no known tagged fields: keep every entry as raw bytes."""
    unk = []
    for _ in range(nt):
        tg, pos = _fast_uv(buf, pos)
        sz, pos = _fast_uv(buf, pos)
        e = pos + sz
        if e > n:
            raise _Fail
        unk.append((tg, buf[pos:e]))
        pos = e
    return unk, pos


def _uuid(b: bytes, _new=object.__new__, _set=object.__setattr__, _UUID=uuid.UUID,
          _from=int.from_bytes, _unknown=uuid.SafeUUID.unknown) -> uuid.UUID:
    """uuid.UUID(bytes=b) for 16 bytes, without UUID.__init__'s argument juggling (3x faster);
    the object is the same: the same two slots, set the way __init__ sets them."""
    u = _new(_UUID)
    _set(u, "int", _from(b))
    _set(u, "is_safe", _unknown)
    return u


def _uuid_checked():
    """_uuid if it builds exactly what uuid.UUID(bytes=...) builds on this Python, else UUID itself."""
    sample = bytes(range(1, 17))
    try:
        a, b = _uuid(sample), uuid.UUID(bytes=sample)
        if type(a) is type(b) and a == b and a.is_safe == b.is_safe and str(a) == str(b) and hash(a) == hash(b):
            return _uuid
    except Exception:       # pragma: no cover - a future UUID with other internals
        pass
    return lambda b: uuid.UUID(bytes=b)     # pragma: no cover


_uuid = _uuid_checked()


def _short(pos, need, n, path, what):
    return DecodeError(f"needs {need} bytes for {what}, only {max(n - pos, 0)} left", pos, path)


def _utf8(buf, start, end, path):
    try:
        return buf[start:end].decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid UTF-8 ({e.reason})", start + e.start, path) from None


BASE_NS = {"_Fail": _Fail, "_ruv": _fast_uv, "_ruvp": read_uvarint, "_short": _short,
           "_utags": _fast_unknown_tags, "_utf8": _utf8, "_DE": DecodeError, "_U": _uuid,
           "_unpack": struct.unpack_from, "_h": struct.Struct(">h").unpack_from,
           "_i": struct.Struct(">i").unpack_from, "_b": struct.Struct(">b").unpack_from}


# ---- shape-homogeneous arrays of structs ---------------------------------------------------
# Most arrays of structs repeat one layout: every element has the same string lengths, the same
# primitive-array counts and an empty tag buffer (all Partitions of a commit, say). The generated
# decoder peeks at the first element's length/count bytes (the "shape key"), and a function
# compiled for that shape unpacks the whole array with one struct.iter_unpack after checking
# every length/count/tag byte of every element (strided compares). Any mismatch returns None
# and the generic loop runs instead, so the shape path changes speed, never results or errors.

SHAPES = True            # generate shape paths at all (tests compare against False)
SHAPE_MIN_SEEN = 2       # compile a shape the second time a site sees it (one-offs stay generic)
SHAPE_CACHE_MAX = 64     # shapes remembered per array site; then the site starts over
SHAPE_MAX_VAR = 12       # variable-length fields per element (strings, bytes, primitive arrays)
SHAPE_MAX_VALUES = 64    # values unpacked per element
SHAPE_MAX_CHECKS = 24    # length/count/tag bytes verified per element
SHAPE_MAX_COMPILES = 1024  # shapes compiled per site, ever: a site that keeps meeting new ones stops
SHAPE_RETIRE_AFTER = 16  # misses before a shape that misses more than it hits is retired


def shape_items(fields: tuple[VField, ...], flexible: bool):
    """The wire layout of a struct as items, or None when its elements cannot share one shape:
    ("fixed", size) | ("blob", compact, width) | ("parr", compact, elem_size) | ("tag",)."""
    items: list[tuple] = []
    for f in fields:
        if f.tagged:
            continue
        et = f.elem
        if f.is_array:
            if et not in FMT:
                return None
            items.append(("parr", f.compact, SIZE[et]))
        elif et in FMT:
            items.append(("fixed", SIZE[et]))
        elif et in ("string", "bytes"):      # records: lengths differ per element, never one shape
            items.append(("blob", f.compact, 2 if et == "string" else 4))
        elif f.is_struct and not f.nullable:
            sub = shape_items(f.fields, f.compact)
            if sub is None:
                return None
            items.extend(sub)
        else:
            return None
    if flexible:
        items.append(("tag",))
    if sum(1 for it in items if it[0] in ("blob", "parr")) > SHAPE_MAX_VAR:
        return None
    return items


class _ShapeSite:
    """One array-of-structs site of one generated decoder: its compiled shapes, by shape key."""
    __slots__ = ("fields", "flexible", "ann", "nvar", "cache", "seen", "compiles")

    def __init__(self, fields, flexible, ann, nvar):
        self.fields, self.flexible, self.ann, self.nvar = fields, flexible, ann, nvar
        self.cache: dict = {}
        self.seen: dict = {}
        self.compiles = 0

    def make(self, key):
        """Called on a cache miss: the shape's function, or False (generic loop) for now."""
        cache, seen = self.cache, self.seen
        if len(cache) >= SHAPE_CACHE_MAX or len(seen) >= 4 * SHAPE_CACHE_MAX:
            cache.clear()
            seen.clear()
        if self.compiles >= SHAPE_MAX_COMPILES:
            cache[key] = False
            return False
        count = seen.get(key, 0) + 1
        if count < SHAPE_MIN_SEEN:
            seen[key] = count
            return False
        seen.pop(key, None)
        self.compiles += 1
        keys = () if self.nvar == 0 else (key,) if self.nvar == 1 else key
        try:
            fn = _ShapeBuilder(self.ann, keys).build(self.fields, self.flexible, self.misses(key))
        except _NoShape:
            fn = False
        cache[key] = fn
        return fn

    def misses(self, key):
        """The shape's hit/miss tally and what it calls on a miss: a shape that misses more often
        than it hits (the first element unlike the rest, say) is retired, and the site goes
        straight to the generic loop for that key."""
        tally = [0, 0]

        def miss():
            tally[1] += 1
            if tally[1] >= SHAPE_RETIRE_AFTER and tally[1] > tally[0] and self.cache.get(key):
                self.cache[key] = False
            return None
        return tally, miss


class _NoShape(Exception):
    pass


class _ShapeBuilder:
    """Source for one shape: the element's struct format, its structural bytes, its dict and spans."""

    def __init__(self, ann: bool, keys: tuple):
        self.ann = ann
        self.keys = iter(keys)
        self.fmt: list[str] = []
        self.off = 0
        self.checks: list[tuple[int, int]] = []
        self.vars: list[str] = []
        self.pre: list[str] = []       # per-element statements (annotate: decode once, use twice)
        self.spans: list[tuple[int, int, str]] = []   # (start, end, rest of the span's source)
        self.ns: dict = {"_U": _uuid}
        self.nc = 0

    def const(self, obj) -> str:
        self.nc += 1
        name = f"_k{self.nc}"
        self.ns[name] = obj
        return name

    def key(self) -> int:
        try:
            return next(self.keys)
        except StopIteration:      # pragma: no cover - the peek and the walk disagree
            raise _NoShape from None

    def raw(self, data: bytes):
        for j, b in enumerate(data):
            self.checks.append((self.off + j, b))
        self.fmt.append(f"{len(data)}x")
        self.off += len(data)

    def value(self, code: str, size: int) -> str:
        v = f"v{len(self.vars)}"
        self.vars.append(v)
        self.fmt.append(code)
        self.off += size
        return v

    def span(self, start: int, end: int, path: str, wtype: str, value: str, role: str):
        if self.ann:
            self.spans.append((start, end, f"q + {path!r}, {wtype!r}, {value}, {role!r}"))

    def local(self, expr: str) -> str:
        """In the annotator a value is used twice (dict and span): compute it once."""
        if not self.ann:
            return expr
        x = f"x{len(self.pre)}"
        self.pre.append(f"{x} = {expr}")
        return x

    # size: code generator: one branch per field kind, each emitting the lines of the generated decoder it stands for
    def walk(self, fields: tuple[VField, ...], flexible: bool, sfx: str) -> str:
        items = []
        for f in fields:
            if f.tagged:
                continue
            path, et = sfx + f.name, f.elem
            start = self.off
            if f.is_array:
                k = self.key()
                if f.compact:
                    if not 0 <= k < 128:
                        raise _NoShape
                    c, cw = k - 1, "uvarint"
                    self.raw(bytes((k,)))
                else:
                    if k < -1:
                        raise _NoShape
                    c, cw = k, "int32"
                    self.raw(k.to_bytes(4, "big", signed=True))
                self.span(start, self.off, path, f"{cw} count", "None" if c < 0 else str(c), "count")
                if c < 0:
                    if not f.nullable:
                        raise _NoShape
                    expr = "None"
                else:
                    if len(self.vars) + c > SHAPE_MAX_VALUES:
                        raise _NoShape
                    elems = []
                    for j in range(c):
                        s0 = self.off
                        v = self.value(FMT[et], SIZE[et])
                        x = self.local(f"_U({v})") if et == "uuid" else v
                        self.span(s0, self.off, f"{path}[{j}]", et, x, "value")
                        elems.append(x)
                    expr = "[" + ", ".join(elems) + "]"
            elif et in FMT:
                v = self.value(FMT[et], SIZE[et])
                expr = self.local(f"_U({v})") if et == "uuid" else v
                self.span(start, self.off, path, et, expr, "value")
            elif et in ("string", "bytes"):
                k = self.key()
                if f.compact:
                    if not 0 <= k < 128:
                        raise _NoShape
                    ln, lw = k - 1, "uvarint"
                    self.raw(bytes((k,)))
                else:
                    if k < -1:
                        raise _NoShape
                    ln, lw = k, "int16" if et == "string" else "int32"
                    self.raw(k.to_bytes(2 if et == "string" else 4, "big", signed=True))
                self.span(start, self.off, path, f"{lw} length", "None" if ln < 0 else str(ln), "length")
                if ln < 0:
                    if not f.nullable:
                        raise _NoShape
                    expr = "None"
                elif ln == 0:
                    expr = "''" if et == "string" else "b''"
                else:
                    s0 = self.off
                    v = self.value(f"{ln}s", ln)
                    expr = self.local(f"{v}.decode()") if et == "string" else v
                    self.span(s0, self.off, path, et, expr, "value")
            elif f.is_struct and not f.nullable:
                expr = self.walk(f.fields, f.compact, path + ".")
            else:                  # pragma: no cover - shape_items() refused these
                raise _NoShape
            items.append(f"{f.name!r}: {expr}")
        if flexible:
            for t in sorted((f for f in fields if f.tagged), key=lambda f: f.tag):
                dv = default_value(t)
                if isinstance(dv, (list, dict)):
                    expr = f"{self.const(lambda t=t: default_value(t))}()"
                else:
                    expr = self.const(dv)
                items.append(f"{t.name!r}: {expr}")
            start = self.off
            self.raw(b"\x00")
            self.span(start, self.off, sfx + "_tags", "uvarint tag count", "0", "tag-count")
        return "{" + ", ".join(items) + "}"

    # size: code generator: assembles one decoder's source; its branches mirror the generated code's shape
    def build(self, fields: tuple[VField, ...], flexible: bool, misses):
        d = self.walk(fields, flexible, "")
        size = self.off
        if size == 0 or len(self.checks) > SHAPE_MAX_CHECKS or len(self.vars) > SHAPE_MAX_VALUES:
            raise _NoShape
        st = struct.Struct(">" + "".join(self.fmt))
        assert st.size == size
        self.ns["_it"] = st.iter_unpack
        self.ns["_tally"], self.ns["_miss"] = misses
        args = "buf, pos, cnt, n, path, spx" if self.ann else "buf, pos, cnt, n"
        L = [f"def _shape({args}):",
             f"    e = pos + cnt * {size}",
             "    if e > n:",
             "        return _miss()",
             "    seg = buf[pos:e]"]
        if self.checks:
            pats = {}
            for _, b in self.checks:
                if b not in pats:
                    pats[b] = f"p{len(pats)}"
                    L.append(f"    {pats[b]} = {self.const(bytes((b,)))} * cnt")
            cond = " or ".join(f"seg[{o}::{size}] != {pats[b]}" for o, b in self.checks)
            L.append(f"    if {cond}:")
            L.append("        return _miss()")
        L.append("    _tally[0] += 1")
        names = ", ".join(self.vars) + ("," if len(self.vars) == 1 else "") if self.vars else "_"
        if not self.ann:
            L.append(f"    return [{d} for {names} in _it(seg)], e")
        else:
            L += ["    out = []; ap = out.append; sps = []; ex = sps.extend",
                  "    s = pos; i = 0",
                  "    try:",
                  f"        for {names} in _it(seg):",
                  "            q = f'{path}[{i}].'"]
            L += [f"            {p}" for p in self.pre]
            # each element boundary once: one span's end is the next one's start
            cuts = sorted({o for sp in self.spans for o in sp[:2]} - {0})
            at = {0: "s", **{o: f"t{o}" for o in cuts}}
            if cuts:
                L.append(f"            {', '.join(at[o] for o in cuts)} = {', '.join(f's + {o}' for o in cuts)}")
            spans = ", ".join(f"({at[a]}, {at[b]}, {rest})" for a, b, rest in self.spans)
            L += [f"            ap({d})",
                  f"            ex(({spans},))",
                  f"            s = {at[size]}; i += 1" if size in at else f"            s += {size}; i += 1",
                  "    except UnicodeDecodeError:",      # the generic loop names the byte
                  "        return None",
                  "    spx(sps)",
                  "    return out, e"]
        src = "\n".join(L)
        ns = self.ns
        exec(compile(src, "<kipviz shape>", "exec"), ns)
        fn = ns["_shape"]
        fn.source = src
        return fn


class DecodeGen:
    """Emit source for one message version; `annotate` selects the span-recording twin."""

    def __init__(self, annotate: bool, tag: str):
        self.ann = annotate
        self.tag = tag
        self.ns = dict(BASE_NS)
        self.nconst = 0
        self.nvar = 0
        self.sites: list[_ShapeSite] = []

    def const(self, obj) -> str:
        """A name in the generated code's namespace bound to `obj`."""
        self.nconst += 1
        name = f"_c{self.nconst}"
        self.ns[name] = obj
        return name

    def var(self, stem: str) -> str:
        """A fresh local variable name starting with `stem`."""
        self.nvar += 1
        return f"{stem}{self.nvar}"

    # ---- small emitters -------------------------------------------------------------------
    def uv(self, L, ind, var, path_expr):
        """Read an unsigned varint into var (fast path inlines the one-byte case)."""
        if self.ann:   # one-byte values inline; the rest (and truncation) via read_uvarint
            L.append(f"{ind}{var} = buf[pos] if pos < n else 128")
            L.append(f"{ind}if {var} < 128: pos += 1")
            L.append(f"{ind}else: {var}, pos = _ruvp(buf, pos, {path_expr})")
        else:
            L.append(f"{ind}{var} = buf[pos]")
            L.append(f"{ind}if {var} < 128: pos += 1")
            L.append(f"{ind}else: {var}, pos = _ruv(buf, pos)")

    def span(self, L, ind, start, path_expr, wtype, value, role):
        """Emit the recording of one span (the annotator only)."""
        if self.ann:
            L.append(f"{ind}sp(({start}, pos, {path_expr}, {wtype!r}, {value}, {role!r}))")

    def fail(self, L, ind, msg_expr, at, path_expr):
        """Emit a failure: a DecodeError with its message in the annotator, a bare _Fail in the fast decoder."""
        if self.ann:
            L.append(f"{ind}raise _DE({msg_expr}, {at}, {path_expr})")
        else:
            L.append(f"{ind}raise _Fail")

    def start(self, L, ind) -> str:
        """Emit the saving of the start offset of what follows (annotator only); its variable, or ""."""
        if not self.ann:
            return ""
        s0 = self.var("s")
        L.append(f"{ind}{s0} = pos")
        return s0

    # ---- one value of a field ----------------------------------------------------------------
    def read_value(self, L, ind, f: VField, var: str, path: str, compact: bool, nullable: bool, q: str):
        """Emit the reading of one value of a field (not an array) into `var`."""
        et = f.elem
        if et in FMT:
            size = SIZE[et]
            if self.ann:
                L.append(f"{ind}if pos + {size} > n: raise _short(pos, {size}, n, {path}, {et!r})")
            st = self.const(struct.Struct(">" + FMT[et]).unpack_from)
            L.append(f"{ind}{var}, = {st}(buf, pos)")
            if et == "uuid":
                L.append(f"{ind}{var} = _U({var})")
            L.append(f"{ind}pos += {size}")
            self.span(L, ind, f"pos - {size}", path, et, var, "value")
        elif et in ("string", "bytes", "records"):
            self.read_blob(L, ind, et, var, path, compact, nullable)
        else:
            if nullable:
                m = self.var("m")
                if self.ann:
                    L.append(f"{ind}if pos + 1 > n: raise _short(pos, 1, n, {path}, 'null marker')")
                L.append(f"{ind}{m}, = _b(buf, pos); pos += 1")
                self.span(L, ind, "pos - 1", path, "int8", m, "presence")
                L.append(f"{ind}if {m} == -1: {var} = None")
                L.append(f"{ind}elif {m} != 1:")
                self.fail(L, ind + "    ", f"f'bad null marker {{{m}}} (expected -1 or 1)'", "pos - 1", path)
                L.append(f"{ind}else:")
                ind += "    "
            sub_q = ""
            if self.ann:
                sub_q = self.var("q")
                L.append(f"{ind}{sub_q} = {path} + '.'")
            d = self.struct_body(L, ind, f.fields, compact, sub_q)
            L.append(f"{ind}{var} = {d}")

    def read_blob(self, L, ind, et, var, path, compact, nullable):
        """Emit the reading of a string or bytes value: its length (int16/int32 or compact varint), then its bytes."""
        s0 = self.start(L, ind)
        ln, e = self.var("ln"), self.var("e")
        if compact:
            self.uv(L, ind, ln, path)
            L.append(f"{ind}{ln} -= 1")
            lw = "uvarint"
        else:
            w, lw = ("_h", "int16") if et == "string" else ("_i", "int32")
            size = 2 if et == "string" else 4
            if self.ann:
                L.append(f"{ind}if pos + {size} > n: raise _short(pos, {size}, n, {path}, '{et} length')")
            L.append(f"{ind}{ln}, = {w}(buf, pos); pos += {size}")
        L.append(f"{ind}if {ln} < 0:")
        self.span(L, ind + "    ", s0, path, f"{lw} length", "None", "length")
        if nullable:
            L.append(f"{ind}    if {ln} != -1:")
            self.fail(L, ind + "        ", f"f'invalid length {{{ln}}}'", s0, path)
            L.append(f"{ind}    {var} = None")
        else:
            self.fail(L, ind + "    ", f"'null (length -1) in a non-nullable field' if {ln} == -1 else f'invalid length {{{ln}}}'", s0, path)
        L.append(f"{ind}else:")
        i2 = ind + "    "
        self.span(L, i2, s0, path, f"{lw} length", ln, "length")
        L.append(f"{i2}{e} = pos + {ln}")
        L.append(f"{i2}if {e} > n:")
        self.fail(L, i2 + "    ", f"f'length {{{ln}}} exceeds the {{n - pos}} bytes left'", s0, path)
        if et == "string":
            if self.ann:
                L.append(f"{i2}{var} = _utf8(buf, pos, {e}, {path})")
            else:
                L.append(f"{i2}{var} = buf[pos:{e}].decode()")
        else:
            L.append(f"{i2}{var} = buf[pos:{e}]")
        L.append(f"{i2}pos = {e}")
        if self.ann:   # empty values have no bytes of their own: the length span says it all
            L.append(f"{i2}if {ln}: sp((pos - {ln}, pos, {path}, {et!r}, {var}, 'value'))")

    def read_field(self, L, ind, f: VField, var: str, path: str, compact: bool, nullable: bool, q: str):
        """Emit the reading of a field into `var`: one value, or an array's count then its elements."""
        if not f.is_array:
            self.read_value(L, ind, f, var, path, compact, nullable, q)
            return
        s0 = self.start(L, ind)
        cnt = self.var("cnt")
        if compact:
            self.uv(L, ind, cnt, path)
            L.append(f"{ind}{cnt} -= 1")
            cw = "uvarint"
        else:
            if self.ann:
                L.append(f"{ind}if pos + 4 > n: raise _short(pos, 4, n, {path}, 'array count')")
            L.append(f"{ind}{cnt}, = _i(buf, pos); pos += 4")
            cw = "int32"
        self.span(L, ind, s0, path, f"{cw} count", f"(None if {cnt} < 0 else {cnt})", "count")
        L.append(f"{ind}if {cnt} < 0:")
        if nullable:
            L.append(f"{ind}    if {cnt} != -1:")
            self.fail(L, ind + "        ", f"f'invalid array count {{{cnt}}}'", s0, path)
            L.append(f"{ind}    {var} = None")
        else:
            self.fail(L, ind + "    ", f"'null array (count -1) in a non-nullable field' if {cnt} == -1 else f'invalid array count {{{cnt}}}'", s0, path)
        # Kafka's own rule: an array cannot have more elements than there are bytes left
        L.append(f"{ind}elif {cnt} > n - pos:")
        self.fail(L, ind + "    ", f"f'array count {{{cnt}}} exceeds the {{n - pos}} bytes left'", s0, path)
        L.append(f"{ind}else:")
        i2 = ind + "    "
        et = f.elem
        if et in FMT and et != "uuid" and not self.ann:
            L.append(f"{i2}{var} = list(_unpack(f'>{{{cnt}}}{FMT[et]}', buf, pos)); pos += {cnt} * {SIZE[et]}")
            return
        if f.is_struct and SHAPES:
            items = shape_items(f.fields, compact)
            if items is not None:
                self.shape_try(L, i2, f, items, cnt, var, compact, path)
                L.append(f"{i2}if {var} is None:")
                i2 += "    "
        ap, i, x = self.var("ap"), self.var("i"), self.var("x")
        L.append(f"{i2}{var} = []; {ap} = {var}.append")
        L.append(f"{i2}for {i} in range({cnt}):")
        i3 = i2 + "    "
        epath = ("f\"{" + path + "}[{" + i + "}]\"") if self.ann else "''"
        if f.is_struct:
            sub_q = ""
            if self.ann:
                sub_q = self.var("q")
                L.append(f"{i3}{sub_q} = {epath} + '.'")
            d = self.struct_body(L, i3, f.fields, compact, sub_q)
            L.append(f"{i3}{ap}({d})")
        else:
            self.read_value(L, i3, f, x, epath, compact, False, q)
            L.append(f"{i3}{ap}({x})")

    def shape_try(self, L, ind, f: VField, items, cnt, var, compact, path):
        """Try the whole array as one shape; leaves var None when the generic loop must run."""
        nvar = sum(1 for it in items if it[0] in ("blob", "parr"))
        site = _ShapeSite(f.fields, compact, self.ann, nvar)
        self.sites.append(site)
        sg, sm = self.const(site.cache.get), self.const(site.make)
        key, sh, r = self.var("key"), self.var("sh"), self.var("r")
        L.append(f"{ind}{var} = None")
        L.append(f"{ind}if {cnt} > 1:")
        i2 = ind + "    "
        if nvar:
            if self.ann:       # the annotator must explain bad bytes itself: peek defensively
                L.append(f"{i2}try:")
                self.emit_peek(L, i2 + "    ", items, key)
                L.append(f"{i2}except Exception:")
                L.append(f"{i2}    {key} = None")
                guarded = True
            else:
                guarded = self.emit_peek(L, i2, items, key)
            if guarded:
                L.append(f"{i2}if {key} is not None:")
                i2 += "    "
        else:
            L.append(f"{i2}{key} = 0")
        L.append(f"{i2}{sh} = {sg}({key})")
        L.append(f"{i2}if {sh} is None: {sh} = {sm}({key})")
        L.append(f"{i2}if {sh}:")
        args = f"buf, pos, {cnt}, n, {path}, spx" if self.ann else f"buf, pos, {cnt}, n"
        L.append(f"{i2}    {r} = {sh}({args})")
        L.append(f"{i2}    if {r} is not None: {var}, pos = {r}")

    def emit_peek(self, L, ind, items, key) -> bool:
        """Read the first element's length/count bytes (its shape key) without decoding it.
        Stops (key None) at a multi-byte varint or a non-empty nested tag buffer, so on valid
        input every byte read lies inside the first element. The last length needs no guard:
        the shape builder refuses keys it cannot lay out. Returns whether key may be None."""
        last = max(i for i, it in enumerate(items) if it[0] in ("blob", "parr"))
        guarded = any(it[0] == "tag" for it in items[:last]) or \
            any(it[0] in ("blob", "parr") for it in items[:last])
        if guarded:
            L.append(f"{ind}{key} = None")
        base, off, ks = "pos", 0, []
        o = self.var("o")
        for i, it in enumerate(items[:last + 1]):
            kind = it[0]
            if kind == "fixed":
                off += it[1]
                continue
            addr = f"{base} + {off}" if off else base
            if kind == "tag":
                L.append(f"{ind}if buf[{addr}] == 0:")
                ind += "    "
                off += 1
                continue
            k = self.var("k")
            ks.append(k)
            if it[1]:          # compact: a one-byte uvarint
                L.append(f"{ind}{k} = buf[{addr}]")
                guard = f"{k} < 128"
                adv = f"{k} or 1" if kind == "blob" else f"({k} - 1) * {it[2]} + 1 if {k} else 1"
            else:
                w = it[2] if kind == "blob" else 4
                L.append(f"{ind}{k}, = {'_h' if w == 2 else '_i'}(buf, {addr})")
                guard = f"{k} >= -1"
                adv = f"{k} + {w} if {k} > 0 else {w}" if kind == "blob" else f"{k} * {it[2]} + 4 if {k} > 0 else 4"
            if i != last:
                L.append(f"{ind}if {guard}:")
                ind += "    "
                L.append(f"{ind}{o} = {addr} + ({adv})")
                base, off = o, 0
        L.append(f"{ind}{key} = {ks[0] if len(ks) == 1 else '(' + ', '.join(ks) + ')'}")
        return guarded

    # ---- a struct, inlined ------------------------------------------------------------------
    # size: code generator: one struct's decoding lines, a branch per field form (plain, tagged, nullable, array)
    def struct_body(self, L, ind, fields: tuple[VField, ...], flexible: bool, q: str) -> str:
        """Emit code that reads a struct; returns the name of the variable holding its dict."""
        plain = [f for f in fields if not f.tagged]
        tagged = sorted((f for f in fields if f.tagged), key=lambda f: f.tag)
        local = {f.name: self.var("f") for f in fields}
        i = 0
        while i < len(plain):
            f = plain[i]
            # the fast decoder unpacks runs of fixed-width fields with one Struct
            if not self.ann and f.elem in FMT and not f.is_array:
                run = [f]
                while i + len(run) < len(plain) and plain[i + len(run)].elem in FMT and not plain[i + len(run)].is_array:
                    run.append(plain[i + len(run)])
                if len(run) > 1:
                    s = struct.Struct(">" + "".join(FMT[r.elem] for r in run))
                    st = self.const(s.unpack_from)
                    L.append(f"{ind}{', '.join(local[r.name] for r in run)} = {st}(buf, pos)")
                    L.append(f"{ind}pos += {s.size}")
                    for r in run:
                        if r.elem == "uuid":
                            L.append(f"{ind}{local[r.name]} = _U({local[r.name]})")
                    i += len(run)
                    continue
            path = f"{q} + {f.name!r}" if self.ann else "''"
            self.read_field(L, ind, f, local[f.name], path, f.compact, f.nullable, q)
            i += 1
        d = self.var("d")
        items = ", ".join(f"{f.name!r}: {local[f.name]}" for f in fields if not f.tagged)
        if flexible:
            for f in tagged:
                dv = default_value(f)
                if isinstance(dv, (list, dict)):
                    L.append(f"{ind}{local[f.name]} = {self.const(lambda f=f: default_value(f))}()")
                else:
                    L.append(f"{ind}{local[f.name]} = {self.const(dv)}")
            if tagged or self.ann:
                self.tag_section(L, ind, tagged, local, q, d, items)
            else:
                # no known tags: the common case is an empty tag buffer, one zero byte
                nt = self.var("nt")
                L.append(f"{ind}{nt} = buf[pos]; pos += 1")
                L.append(f"{ind}{d} = {{{items}}}")
                L.append(f"{ind}if {nt}:")
                L.append(f"{ind}    if {nt} > 127: {nt}, pos = _ruv(buf, pos - 1)")
                L.append(f"{ind}    {d}[{UNKNOWN_TAGS!r}], pos = _utags(buf, pos, n, {nt})")
            return d
        L.append(f"{ind}{d} = {{{items}}}")
        return d

    def tag_section(self, L, ind, tagged, local, q, d, items):
        """Emit the reading of a flexible struct's tagged-field section (known tags into their fields,
        unknown ones kept)."""
        unk, nt, tg, sz, e, tp = (self.var(s) for s in ("unk", "nt", "tg", "sz", "e", "tp"))
        L.append(f"{ind}{unk} = None")
        tpath = f"{q} + '_tags'" if self.ann else "''"
        s0 = self.start(L, ind)
        self.uv(L, ind, nt, tpath)
        self.span(L, ind, s0, tpath, "uvarint tag count", nt, "tag-count")
        L.append(f"{ind}for _ in range({nt}):")
        i2 = ind + "    "
        s1 = self.start(L, i2)
        self.uv(L, i2, tg, tpath)
        if self.ann:
            names = ", ".join(f"{t.tag}: {q} + {t.name!r}" for t in tagged)
            L.append(f"{i2}{tp} = {{{names}}}.get({tg}, {q} + f'_unknown[{{{tg}}}]')")
        self.span(L, i2, s1, tp, "uvarint tag", tg, "tag")
        s2 = self.start(L, i2)
        self.uv(L, i2, sz, tp if self.ann else "''")
        self.span(L, i2, s2, tp, "uvarint size", sz, "tag-size")
        L.append(f"{i2}{e} = pos + {sz}")
        L.append(f"{i2}if {e} > n:")
        self.fail(L, i2 + "    ", f"f'tagged field size {{{sz}}} exceeds the {{n - pos}} bytes left'", s2 or "pos", tp if self.ann else "''")
        kw = "if"
        for t in tagged:
            L.append(f"{i2}{kw} {tg} == {t.tag}:")
            kw = "elif"
            i3 = i2 + "    "
            path = f"{q} + {t.name!r}" if self.ann else "''"
            self.read_field(L, i3, t, local[t.name], path, True, t.nullable, q)
            L.append(f"{i3}if pos != {e}:")
            self.fail(L, i3 + "    ", f"f'tagged field declared {{{sz}}} bytes but its value used {{pos - {e} + {sz}}}'", f"{e} - {sz}", path)
        L.append(f"{i2}{'else' if tagged else 'if True'}:")
        i3 = i2 + "    "
        L.append(f"{i3}if {unk} is None: {unk} = []")
        L.append(f"{i3}{unk}.append(({tg}, buf[pos:{e}])); pos = {e}")
        self.span(L, i3, f"{e} - {sz}", tp, "unknown tagged field", f"buf[{e} - {sz}:{e}]", "unknown")
        all_items = ", ".join(x for x in (items, ", ".join(f"{t.name!r}: {local[t.name]}" for t in tagged)) if x)
        L.append(f"{ind}{d} = {{{all_items}}}")
        L.append(f"{ind}if {unk}: {d}[{UNKNOWN_TAGS!r}] = {unk}")

    def build(self, fields: tuple[VField, ...], flexible: bool):
        """Compile the decoder of a message version's fields; returns (function, its source)."""
        args = "buf, pos, n, q, sp, spx" if self.ann else "buf, pos, n"
        L = [f"def _decode({args}):"]
        d = self.struct_body(L, "    ", fields, flexible, "q" if self.ann else "")
        L.append(f"    return {d}, pos")
        src = "\n".join(L)
        code = compile(src, f"<kipviz {'annotate' if self.ann else 'decode'} {self.tag}>", "exec")
        ns = dict(self.ns)
        exec(code, ns)
        fn = ns["_decode"]
        fn.shape_sites = self.sites
        return fn, src
