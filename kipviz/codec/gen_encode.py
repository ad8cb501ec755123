"""Generate an encoder for one message version as Python source (values must be normalised
or already complete; anything odd raises and the caller falls back to normalize())."""
from __future__ import annotations

import struct
from operator import itemgetter

from ..schema.resolve import VField
from .defaults import default_value
from .gen_decode import FMT, UNKNOWN_TAGS
from .varint import write_uvarint

_EFMT = dict(FMT, bool="B")
_NULL4, _NULL2 = repr(b"\xff" * 4), repr(b"\xff" * 2)


class _Fail(Exception):
    pass


BASE_NS = {"_Fail": _Fail, "_wuv": write_uvarint, "_pack": struct.pack, "_BOOL": {True: 1, False: 0},
           "_h": struct.Struct(">h"), "_i": struct.Struct(">i"), "_k0": itemgetter(0)}


class EncodeGen:
    def __init__(self, tag: str):
        self.tag = tag
        self.ns = dict(BASE_NS)
        self.funcs: list[str] = []
        self.nconst = 0

    def const(self, obj) -> str:
        self.nconst += 1
        name = f"_c{self.nconst}"
        self.ns[name] = obj
        return name

    def fixed_expr(self, f: VField, x: str) -> str:
        if f.elem == "uuid":
            return f"{x}.bytes"
        if f.elem == "bool":
            return f"_BOOL[{x}]"
        return x

    def write_len(self, L, ind, expr, compact, wide):
        if compact:
            L.append(f"{ind}l = {expr} + 1")
            L.append(f"{ind}if l < 128: w.append(l)")
            L.append(f"{ind}else: _wuv(w, l)")
        else:
            L.append(f"{ind}w += {'_i' if wide else '_h'}.pack({expr})")

    def write_null(self, L, ind, compact, wide):
        if compact:
            L.append(f"{ind}w.append(0)")
        else:
            L.append(f"{ind}w += {_NULL4 if wide else _NULL2}")

    def write_value(self, L, ind, f: VField, x: str, compact: bool, nullable: bool):
        et = f.elem
        if et in _EFMT:
            st = self.const(struct.Struct(">" + _EFMT[et]))
            L.append(f"{ind}w += {st}.pack({self.fixed_expr(f, x)})")
            return
        if et in ("string", "bytes", "records") or f.is_struct:
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
            L.append(f"{ind}b = {x}.encode()")
            self.write_len(L, ind, "len(b)", compact, False)
            L.append(f"{ind}w += b")
        elif et in ("bytes", "records"):
            self.write_len(L, ind, f"len({x})", compact, True)
            L.append(f"{ind}w += {x}")
        else:
            fn = self.struct_fn(f.fields, compact, f.elem)
            if nullable:
                L.append(f"{ind}w.append(1)")
            L.append(f"{ind}{fn}({x}, w)")

    def write_field(self, L, ind, f: VField, x: str, compact: bool, nullable: bool):
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
        self.write_len(L, i2, f"len({x})", compact, True)
        et = f.elem
        if et in FMT and et not in ("uuid", "bool"):
            L.append(f"{i2}w += _pack(f'>{{len({x})}}{FMT[et]}', *{x})")
            return
        L.append(f"{i2}for e in {x}:")
        if f.is_struct:
            fn = self.struct_fn(f.fields, compact, f.elem)
            L.append(f"{i2}    {fn}(e, w)")
        else:
            self.write_value(L, i2 + "    ", f, "e", compact, False)

    def struct_fn(self, fields: tuple[VField, ...], flexible: bool, label: str) -> str:
        name = f"_e{len(self.funcs)}_{label}"
        self.funcs.append("")
        slot = len(self.funcs) - 1
        L = [f"def {name}(v, w):"]
        ind = "    "
        nall = len(fields)
        L.append(f"{ind}if len(v) != {nall} and not (len(v) == {nall + 1} and {UNKNOWN_TAGS!r} in v): raise _Fail")
        plain = [f for f in fields if not f.tagged]
        tagged = sorted((f for f in fields if f.tagged), key=lambda f: f.tag)
        i = 0
        while i < len(plain):
            f = plain[i]
            if f.elem in _EFMT and not f.is_array:
                run = [f]
                while i + len(run) < len(plain) and plain[i + len(run)].elem in _EFMT and not plain[i + len(run)].is_array:
                    run.append(plain[i + len(run)])
                st = self.const(struct.Struct(">" + "".join(_EFMT[r.elem] for r in run)))
                args = ", ".join(self.fixed_expr(r, f"v[{r.name!r}]") for r in run)
                L.append(f"{ind}w += {st}.pack({args})")
                i += len(run)
                continue
            L.append(f"{ind}x = v[{f.name!r}]")
            self.write_field(L, ind, f, "x", f.compact, f.nullable)
            i += 1
        if flexible:
            L.append(f"{ind}unk = v.get({UNKNOWN_TAGS!r})")
            if not tagged:
                L.append(f"{ind}if not unk: w.append(0)")
                L.append(f"{ind}else:")
                L.append(f"{ind}    tg = sorted(unk, key=_k0)")
            else:
                L.append(f"{ind}tg = list(unk) if unk else []")
                for t in tagged:
                    d = self.const(default_value(t))
                    L.append(f"{ind}x = v.get({t.name!r}, {d})")
                    L.append(f"{ind}if x != {d}:")
                    L.append(f"{ind}    ow = w; w = bytearray()")
                    self.write_field(L, ind + "    ", t, "x", True, t.nullable)
                    L.append(f"{ind}    tg.append(({t.tag}, w)); w = ow")
                L.append(f"{ind}if not tg: w.append(0)")
                L.append(f"{ind}else:")
                L.append(f"{ind}    tg.sort(key=_k0)")
            L.append(f"{ind}    _wuv(w, len(tg))")
            L.append(f"{ind}    for t, b in tg:")
            L.append(f"{ind}        _wuv(w, t); _wuv(w, len(b)); w += b")
        self.funcs[slot] = "\n".join(L)
        return name

    def build(self, fields: tuple[VField, ...], flexible: bool):
        top = self.struct_fn(fields, flexible, "top")
        src = "\n\n".join(self.funcs)
        ns = dict(self.ns)
        exec(compile(src, f"<kipviz encode {self.tag}>", "exec"), ns)
        return ns[top], src
