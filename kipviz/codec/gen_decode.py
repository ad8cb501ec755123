"""Generate a decoder (and its annotating twin) for one message version as Python source.

Nested structs are inlined (Kafka schemas are not recursive), so decoding a message is one
Python function. The fast decoder has no paths and raises a bare _Fail; when it fails, the
annotating decoder (same walk, with spans and precise checks) says which byte and field."""
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


def _short(pos, need, n, path, what):
    return DecodeError(f"needs {need} bytes for {what}, only {max(n - pos, 0)} left", pos, path)


def _utf8(buf, start, end, path):
    try:
        return buf[start:end].decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid UTF-8 ({e.reason})", start + e.start, path) from None


BASE_NS = {"_Fail": _Fail, "_ruv": _fast_uv, "_ruvp": read_uvarint, "_short": _short,
           "_utags": _fast_unknown_tags, "_utf8": _utf8, "_DE": DecodeError, "_U": uuid.UUID,
           "_unpack": struct.unpack_from, "_h": struct.Struct(">h").unpack_from,
           "_i": struct.Struct(">i").unpack_from, "_b": struct.Struct(">b").unpack_from}


class DecodeGen:
    """Emit source for one message version; `annotate` selects the span-recording twin."""

    def __init__(self, annotate: bool, tag: str):
        self.ann = annotate
        self.tag = tag
        self.ns = dict(BASE_NS)
        self.nconst = 0
        self.nvar = 0

    def const(self, obj) -> str:
        self.nconst += 1
        name = f"_c{self.nconst}"
        self.ns[name] = obj
        return name

    def var(self, stem: str) -> str:
        self.nvar += 1
        return f"{stem}{self.nvar}"

    # ---- small emitters -------------------------------------------------------------------
    def uv(self, L, ind, var, path_expr):
        """Read an unsigned varint into var (fast path inlines the one-byte case)."""
        if self.ann:
            L.append(f"{ind}{var}, pos = _ruvp(buf, pos, {path_expr})")
        else:
            L.append(f"{ind}{var} = buf[pos]")
            L.append(f"{ind}if {var} < 128: pos += 1")
            L.append(f"{ind}else: {var}, pos = _ruv(buf, pos)")

    def span(self, L, ind, start, path_expr, wtype, value, role):
        if self.ann:
            L.append(f"{ind}sp(({start}, pos, {path_expr}, {wtype!r}, {value}, {role!r}))")

    def fail(self, L, ind, msg_expr, at, path_expr):
        if self.ann:
            L.append(f"{ind}raise _DE({msg_expr}, {at}, {path_expr})")
        else:
            L.append(f"{ind}raise _Fail")

    def start(self, L, ind) -> str:
        if not self.ann:
            return ""
        s0 = self.var("s")
        L.append(f"{ind}{s0} = pos")
        return s0

    # ---- one value of a field ----------------------------------------------------------------
    def read_value(self, L, ind, f: VField, var: str, path: str, compact: bool, nullable: bool, q: str):
        et = f.elem
        if et in FMT:
            size = SIZE[et]
            if self.ann:
                L.append(f"{ind}if pos + {size} > n: raise _short(pos, {size}, n, {path}, {et!r})")
            st = self.const(struct.Struct(">" + FMT[et]).unpack_from)
            L.append(f"{ind}{var}, = {st}(buf, pos)")
            if et == "uuid":
                L.append(f"{ind}{var} = _U(bytes={var})")
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

    # ---- a struct, inlined ------------------------------------------------------------------
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
                            L.append(f"{ind}{local[r.name]} = _U(bytes={local[r.name]})")
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
        args = "buf, pos, n, q, sp" if self.ann else "buf, pos, n"
        L = [f"def _decode({args}):"]
        d = self.struct_body(L, "    ", fields, flexible, "q" if self.ann else "")
        L.append(f"    return {d}, pos")
        src = "\n".join(L)
        code = compile(src, f"<kipviz {'annotate' if self.ann else 'decode'} {self.tag}>", "exec")
        ns = dict(self.ns)
        exec(code, ns)
        return ns["_decode"], src
