"""Generate an encoder for one message version as Python source (values must be normalised
or already complete; anything odd raises and the caller falls back to normalize()).

Nested structs are inlined into one function. Elements of arrays of simple structs (fixed-width
fields, strings/bytes, arrays of numbers, no tagged fields) are written with one struct.pack
each: the element's string byte lengths and array counts select a cached Struct ("shape") whose
format also holds the length/count bytes and the empty tag buffer."""
from __future__ import annotations

import struct
from operator import itemgetter

from ..schema.resolve import VField
from .defaults import default_value
from .gen_decode import FMT, UNKNOWN_TAGS
from .varint import write_uvarint

_EFMT = dict(FMT, bool="B")
_NULL4, _NULL2 = repr(b"\xff" * 4), repr(b"\xff" * 2)
_BLOBS = ("string", "bytes", "records")
# arrays of numbers: one packer per (element format, count) up to this count, count prefix included
_ARRAY_PACKERS = 64
SHAPES = True            # generate shape packers at all (tests compare against False)
ENC_SHAPE_MIN_SEEN = 2   # build a packer the second time a key is seen (one-off lengths stay generic)
ENC_SHAPE_CACHE_MAX = 256


class _Fail(Exception):
    pass


def _array_packers(code: str, compact: bool) -> list:
    prefix = "B" if compact else "i"
    return [struct.Struct(f">{prefix}{c}{code}").pack for c in range(_ARRAY_PACKERS)]


BASE_NS = {"_Fail": _Fail, "_wuv": write_uvarint, "_pack": struct.pack, "_BOOL": {True: 1, False: 0},
           "_h": struct.Struct(">h"), "_i": struct.Struct(">i"), "_k0": itemgetter(0)}


class _EncShapeSite:
    """Struct packers for one run of fields (or one array element), by length/count key."""
    __slots__ = ("fields", "flexible", "nvar", "cache", "seen")

    def __init__(self, fields, flexible, nvar):
        self.fields, self.flexible, self.nvar = fields, flexible, nvar
        self.cache: dict = {}
        self.seen: dict = {}

    def make(self, key):
        """On a cache miss: the packer, False (never: write these generically), or None (not yet)."""
        cache, seen = self.cache, self.seen
        if len(cache) >= ENC_SHAPE_CACHE_MAX or len(seen) >= 4 * ENC_SHAPE_CACHE_MAX:
            cache.clear()
            seen.clear()
        count = seen.get(key, 0) + 1
        if count < ENC_SHAPE_MIN_SEEN:
            seen[key] = count
            return None
        seen.pop(key, None)
        keys = () if self.nvar == 0 else (key,) if self.nvar == 1 else key
        pk = self.packer(keys)
        cache[key] = pk
        return pk

    def packer(self, keys):
        it = iter(keys)
        fmt = [">"]
        for f in self.fields:
            et = f.elem
            if not f.is_array and et in _EFMT:
                fmt.append(_EFMT[et])
                continue
            k = next(it)
            if f.compact:
                if not 0 <= k < 128:         # longer lengths need a multi-byte uvarint
                    return False
                n = k - 1
                fmt.append("B")
            else:
                n = k
                fmt.append("h" if et == "string" and not f.is_array else "i")
            n = max(n, 0)
            fmt.append(f"{n}{FMT[et]}" if f.is_array else f"{n}s")
        if self.flexible:
            fmt.append("x")                  # empty tag buffer
        return struct.Struct("".join(fmt)).pack


def _shape_fields(fields: tuple[VField, ...]) -> bool:
    """Fields one Struct can write: numbers, strings, bytes and arrays of numbers. Records are
    left out: their lengths differ from one element to the next, so no packer would be reused."""
    for f in fields:
        if f.tagged:
            return False
        et = f.elem
        if f.is_array:
            if et not in FMT or et in ("uuid", "bool"):
                return False
        elif et not in _EFMT and et not in ("string", "bytes"):
            return False
    return True


class EncodeGen:
    """Writes, compiles and returns one message version's encoder, f(value, bytearray) (Plan.encoder)."""
    def __init__(self, tag: str):
        self.tag = tag
        self.ns = dict(BASE_NS)
        self.nconst = 0
        self.nvar = 0
        self.packers: dict = {}
        self.sites: list[_EncShapeSite] = []

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

    def array_packers(self, et: str, compact: bool) -> str:
        """The name of the packers of an array of fixed-size `et` values (shared per element type)."""
        key = (FMT[et], compact)
        if key not in self.packers:
            self.packers[key] = self.const(_array_packers(FMT[et], compact))
        return self.packers[key]

    def fixed_expr(self, f: VField, x: str) -> str:
        """The expression packing a fixed-size value `x` (a uuid's bytes, a bool's byte, else x)."""
        if f.elem == "uuid":
            return f"{x}.bytes"
        if f.elem == "bool":
            return f"_BOOL[{x}]"
        return x

    def write_len(self, L, ind, expr, compact, wide):
        """Emit the writing of a length: compact varint (length + 1) or int16/int32 (`wide`)."""
        if compact:
            lv = self.var("l")
            L.append(f"{ind}{lv} = {expr} + 1")
            L.append(f"{ind}if {lv} < 128: w.append({lv})")
            L.append(f"{ind}else: _wuv(w, {lv})")
        else:
            L.append(f"{ind}w += {'_i' if wide else '_h'}.pack({expr})")

    def write_null(self, L, ind, compact, wide):
        """Emit the writing of a null string, bytes or array (compact 0, else -1)."""
        if compact:
            L.append(f"{ind}w.append(0)")
        else:
            L.append(f"{ind}w += {_NULL4 if wide else _NULL2}")

    def write_value(self, L, ind, f: VField, x: str, compact: bool, nullable: bool):
        """Emit the writing of one value of a field (not an array)."""
        et = f.elem
        if et in _EFMT:
            st = self.const(struct.Struct(">" + _EFMT[et]))
            L.append(f"{ind}w += {st}.pack({self.fixed_expr(f, x)})")
            return
        if et in _BLOBS or f.is_struct:
            L.append(f"{ind}if {x} is None:")
            if nullable:
                if f.is_struct:
                    L.append(f"{ind}    w.append(255)")
                else:
                    self.write_null(L, ind + "    ", compact, et != "string")
            else:
                L.append(f"{ind}    raise _Fail")
            L.append(f"{ind}else:")
            ind += "    "
        if et == "string":
            b = self.var("b")
            L.append(f"{ind}{b} = {x}.encode()")
            self.write_len(L, ind, f"len({b})", compact, False)
            L.append(f"{ind}w += {b}")
        elif et in ("bytes", "records"):
            self.write_len(L, ind, f"len({x})", compact, True)
            L.append(f"{ind}w += {x}")
        else:
            if nullable:
                L.append(f"{ind}w.append(1)")
            self.struct_body(L, ind, f.fields, compact, x)

    def write_field(self, L, ind, f: VField, x: str, compact: bool, nullable: bool):
        """Emit the writing of a field: one value, or an array's count then its elements (null if allowed)."""
        if not f.is_array:
            self.write_value(L, ind, f, x, compact, nullable)
            return
        L.append(f"{ind}if {x} is None:")
        if nullable:
            self.write_null(L, ind + "    ", compact, True)
        else:
            L.append(f"{ind}    raise _Fail")
        L.append(f"{ind}else:")
        i2 = ind + "    "
        et = f.elem
        if et in FMT and et not in ("uuid", "bool"):
            # one cached Struct per count writes the count prefix and the numbers
            c, pk = self.var("c"), self.array_packers(et, compact)
            L.append(f"{i2}{c} = len({x})")
            L.append(f"{i2}if {c} < {_ARRAY_PACKERS}: w += {pk}[{c}]({c + ' + 1' if compact else c}, *{x})")
            L.append(f"{i2}else:")
            self.write_len(L, i2 + "    ", c, compact, True)
            L.append(f"{i2}    w += _pack(f'>{{{c}}}{FMT[et]}', *{x})")
            return
        self.write_len(L, i2, f"len({x})", compact, True)
        e = self.var("e")
        shaped = f.is_struct and SHAPES and _shape_fields(f.fields)
        if shaped:
            lk = self.var("lk")
            L.append(f"{i2}{lk} = None")      # the previous element's key: runs of one shape skip the lookup
        L.append(f"{i2}for {e} in {x}:")
        i3 = i2 + "    "
        if f.is_struct:
            if shaped:
                self.shape_element(L, i3, f, e, compact, lk)
            else:
                self.struct_body(L, i3, f.fields, compact, e)
        else:
            self.write_value(L, i3, f, e, compact, False)

    def packed_run(self, L, ind, fields, v: str, flexible: bool, lk: str | None) -> tuple[str, list[str]]:
        """Emit code computing a packer for these fields of struct v (string/bytes/array lengths
        select a cached Struct; its format holds the length/count bytes, and with flexible the
        empty tag buffer). Returns the packer's variable (false: write them the generic way) and
        the arguments to call it with."""
        var = [g for g in fields if g.is_array or g.elem not in _EFMT]
        site = _EncShapeSite(fields, flexible, len(var))
        self.sites.append(site)
        pk = self.var("pk")
        keys: dict = {}
        for g in var:
            k, y = self.var("k"), self.var("y")
            if g.is_array or g.elem != "string":
                L.append(f"{ind}{y} = {v}[{g.name!r}]")
                empty = "()" if g.is_array else "b''"
            else:
                s = self.var("s")
                L.append(f"{ind}{s} = {v}[{g.name!r}]")
                if g.nullable:
                    L.append(f"{ind}{y} = b'' if {s} is None else {s}.encode()")
                else:
                    L.append(f"{ind}{y} = {s}.encode()")
                empty = None
            null = "0" if g.compact else "-1"
            size = f"len({y}) + 1" if g.compact else f"len({y})"
            if g.nullable:
                if empty is None:                   # string: null was already mapped to b''
                    L.append(f"{ind}{k} = {null} if {s} is None else {size}")
                else:
                    L.append(f"{ind}if {y} is None: {y} = {empty}; {k} = {null}")
                    L.append(f"{ind}else: {k} = {size}")
            else:                                   # None raises here: normalize() names it
                L.append(f"{ind}{k} = {size}")
            keys[g.name] = (k, y)
        if var:
            key = ", ".join(keys[g.name][0] for g in var)
            key = key if len(var) == 1 else f"({key})"
            sg, sm = self.const(site.cache.get), self.const(site.make)
            if lk:                                  # in a loop: the previous element's key
                kv = self.var("key")
                L.append(f"{ind}{kv} = {key}")
                L.append(f"{ind}if {kv} != {lk}:")
                L.append(f"{ind}    {pk} = {sg}({kv})")
                L.append(f"{ind}    if {pk} is None: {pk} = {sm}({kv})")
                L.append(f"{ind}    {lk} = None if {pk} is None else {kv}")
            else:
                L.append(f"{ind}{pk} = {sg}({key})")
                L.append(f"{ind}if {pk} is None: {pk} = {sm}({key})")
        else:
            L.append(f"{ind}{pk} = {self.const(site.packer(()))}")
        args = []
        for g in fields:
            if g.name in keys:
                k, y = keys[g.name]
                args += [k, f"*{y}" if g.is_array else y]
            else:
                args.append(self.fixed_expr(g, f"{v}[{g.name!r}]"))
        return pk, args

    def shape_element(self, L, ind, f: VField, e: str, compact: bool, lk: str):
        """One struct.pack per element when its lengths fit a cached shape; else the generic body."""
        fields = f.fields
        L.append(f"{ind}if len({e}) == {len(fields)}:")
        pk, args = self.packed_run(L, ind + "    ", fields, e, compact, lk)
        # this is the whole loop body: a packed element continues with the next one
        L.append(f"{ind}    if {pk}:")
        L.append(f"{ind}        w += {pk}({', '.join(args)})")
        L.append(f"{ind}        continue")
        self.struct_body(L, ind, fields, compact, e)

    def plain_fields(self, L, ind, plain: list[VField], v: str):
        """The generic way: runs of fixed-width fields with one Struct, the rest one by one."""
        i = 0
        while i < len(plain):
            f = plain[i]
            if f.elem in _EFMT and not f.is_array:
                run = [f]
                while i + len(run) < len(plain) and plain[i + len(run)].elem in _EFMT and not plain[i + len(run)].is_array:
                    run.append(plain[i + len(run)])
                st = self.const(struct.Struct(">" + "".join(_EFMT[r.elem] for r in run)))
                args = ", ".join(self.fixed_expr(r, f"{v}[{r.name!r}]") for r in run)
                L.append(f"{ind}w += {st}.pack({args})")
                i += len(run)
                continue
            x = self.var("x")
            L.append(f"{ind}{x} = {v}[{f.name!r}]")
            self.write_field(L, ind, f, x, f.compact, f.nullable)
            i += 1

    def struct_body(self, L, ind, fields: tuple[VField, ...], flexible: bool, v: str):
        """Emit the writing of a struct value `v`: its plain fields in order, then (flexible) the tagged ones."""
        nall = len(fields)
        L.append(f"{ind}if len({v}) != {nall} and not (len({v}) == {nall + 1} and {UNKNOWN_TAGS!r} in {v}): raise _Fail")
        plain = [f for f in fields if not f.tagged]
        tagged = sorted((f for f in fields if f.tagged), key=lambda f: f.tag)
        # consecutive fields one Struct can hold (numbers, strings, bytes, arrays of numbers) and
        # with at least one length among them: one pack when their lengths fit a cached shape
        i = 0
        while i < len(plain):
            j = i
            while j < len(plain) and _shape_fields((plain[j],)):
                j += 1
            run = plain[i:j]
            if SHAPES and len(run) > 1 and any(g.is_array or g.elem not in _EFMT for g in run):
                pk, args = self.packed_run(L, ind, run, v, False, None)
                L.append(f"{ind}if {pk}: w += {pk}({', '.join(args)})")
                L.append(f"{ind}else:")
                self.plain_fields(L, ind + "    ", run, v)
            else:
                self.plain_fields(L, ind, run, v)
            if j < len(plain):
                self.plain_fields(L, ind, [plain[j]], v)
            i = j + 1
        if flexible:
            unk, tg, t, b = self.var("unk"), self.var("tg"), self.var("t"), self.var("b")
            L.append(f"{ind}{unk} = {v}.get({UNKNOWN_TAGS!r})")
            if not tagged:
                L.append(f"{ind}if not {unk}: w.append(0)")
                L.append(f"{ind}else:")
                L.append(f"{ind}    {tg} = sorted({unk}, key=_k0)")
            else:
                L.append(f"{ind}{tg} = list({unk}) if {unk} else []")
                for tf in tagged:
                    d, x, ow = self.const(default_value(tf)), self.var("x"), self.var("ow")
                    L.append(f"{ind}{x} = {v}.get({tf.name!r}, {d})")
                    L.append(f"{ind}if {x} != {d}:")
                    L.append(f"{ind}    {ow} = w; w = bytearray()")
                    self.write_field(L, ind + "    ", tf, x, True, tf.nullable)
                    L.append(f"{ind}    {tg}.append(({tf.tag}, w)); w = {ow}")
                L.append(f"{ind}if not {tg}: w.append(0)")
                L.append(f"{ind}else:")
                L.append(f"{ind}    {tg}.sort(key=_k0)")
            L.append(f"{ind}    _wuv(w, len({tg}))")
            L.append(f"{ind}    for {t}, {b} in {tg}:")
            L.append(f"{ind}        _wuv(w, {t}); _wuv(w, len({b})); w += {b}")

    def build(self, fields: tuple[VField, ...], flexible: bool):
        """Compile the encoder of a message version's fields; returns (function, its source)."""
        L = ["def _encode(v, w):"]
        self.struct_body(L, "    ", fields, flexible, "v")
        src = "\n".join(L)
        ns = dict(self.ns)
        exec(compile(src, f"<kipviz encode {self.tag}>", "exec"), ns)
        fn = ns["_encode"]
        fn.shape_sites = self.sites
        return fn, src
