"""The emitter's decoders: one straight-line ``_d_<Struct>_v<N>`` function per layout.

Approach: fields are read in wire order; runs of fixed-width fields become one precompiled
``struct.Struct.unpack_from`` (absorbing the length prefix of a following non-compact field), small
arrays of fixed-width elements and one-byte uvarints are read inline, and everything else calls the
wire primitives (``read_compact_string``, ``read_nullable_bytes``, ...). A wire type that is not
Kafka's is read by the code its registered ``FieldEmitter`` writes (one value, an array, its
elements, or a run of consecutive values). The tag section is one loop over tag numbers. No
bookkeeping: any failure raises, and ``KafkaMessage.decode`` then asks the reference decoder what is
wrong.
"""

from __future__ import annotations

import functools

from kwire.protocol._codegen._emit_common import (
    _ARRAY_CODES,
    _MOD,
    _absorbable,
    _Code,
    _element_encoding,
    _encoding_run,
    _fixed,
    _fmt_versions,
    _fresh_default,
    _Module,
    _Msg,
    _other_tags,
    _tag_header_helper,
    _tags_helper,
    _value_encoding,
)
from kwire.protocol._extension_points import KAFKA_TAG_HEADER
from kwire.protocol._spec import (
    FIXED_TYPES,
    FieldSpec,
    StructSpec,
)

# ------------------------------------------------------------------------------------------------
# Decoders


def _emit_decoder(code: _Code, mod: _Module, m: _Msg, s: StructSpec, v: int) -> None:
    cls = m.cls(s)
    flexible = m.spec.flexible(v)
    name = m.func(s, v)
    versions = sorted(x for (sn, x), k in m.keys.items() if sn == s.name and k == m.key(s, v))
    code(f"def _d_{name}(b: Any, p: int) -> tuple[{cls}, int]:")
    with code.block():
        code(f'"""Decode {cls} (versions {_fmt_versions(versions)})."""')
        declared: list[str] = []
        if any(f.type.is_array and v in f.versions for f in s.fields):
            declared += ["x: Any", "ap: Any"]
        for f in s.fields:
            emitter = _value_encoding(f, v) if v in f.versions else None
            if emitter is not None:
                declared += [d for d in emitter.decode_declarations() if d not in declared]
        for line in declared:
            code(line)
        present = [f for f in s.fields if v in f.versions and v not in f.tagged_versions]
        tagged = [f for f in s.fields if v in f.versions and v in f.tagged_versions]
        i = 0
        while i < len(present):
            f = present[i]
            if _fixed(f, v):
                run = [f]
                while i + len(run) < len(present) and _fixed(present[i + len(run)], v):
                    run.append(present[i + len(run)])
                fmt = "".join(FIXED_TYPES[x.wire_type(v)][0] for x in run)
                size = sum(FIXED_TYPES[x.wire_type(v)][1] for x in run)
                targets = ", ".join(f"f_{x.attr}" for x in run)
                # the length prefix of a following non-compact string or fixed-width array joins
                # the run: one unpack instead of two
                nxt = present[i + len(run)] if i + len(run) < len(present) else None
                absorb = nxt is not None and _absorbable(nxt, v, m)
                if absorb:
                    assert nxt is not None
                    prefix = "h" if nxt.type.name == "string" else "i"
                    fmt += prefix
                    size += 2 if prefix == "h" else 4
                    targets += ", n"
                const = mod.struct_const(fmt)
                if len(run) == 1 and not absorb:
                    targets += ","
                code(f"({targets}) = {const}.unpack_from(b, p)")
                code(f"p += {size}")
                for x in run:
                    if x.type.name == "uuid":
                        code(f"f_{x.attr} = uuid_from_bytes(f_{x.attr})")
                i += len(run)
                if absorb:
                    assert nxt is not None
                    _decode_value(code, m, nxt, v, f"f_{nxt.attr}", "b", pre_read=True)
                    i += 1
                continue
            emitter, run = _encoding_run(present, i, v)
            if emitter is not None and len(run) > 1:
                emitter.decode_run(
                    code,
                    _MOD,
                    [f"f_{x.attr}" for x in run],
                    "b",
                    functools.partial(_decode_one_by_one, code, m, run, v),
                )
                i += len(run)
                continue
            _decode_value(code, m, f, v, f"f_{f.attr}", "b")
            i += 1
        if flexible:
            if tagged:
                for f in tagged:
                    code(f"f_{f.attr}: Any = {_fresh_default(f, m.class_names)}")
                code("ut: dict[int, bytes] | None = None")
                code("n = b[p]")
                code("if n < 0x80:")
                with code.block():
                    code("p += 1")
                code("else:")
                with code.block():
                    code("n, p = read_uvarint(b, p)")
                code("if n:")
                with code.block():
                    code("ut = {}")
                    code("seen: set[int] = set()")
                    code("for _ in range(n):")
                    with code.block():
                        if m.spec.tag_header != KAFKA_TAG_HEADER:
                            header = _tag_header_helper(m, 3)
                            code(f"tag, size, p = {header}(b, p)")
                        else:
                            code("tag, p = read_uvarint(b, p)")
                            code("size, p = read_uvarint(b, p)")
                        code("e = p + size")
                        code("if e > len(b) or tag in seen:")
                        with code.block():
                            code("raise Malformed")
                        code("seen.add(tag)")
                        first = True
                        for f in sorted(tagged, key=lambda x: x.tag or 0):
                            code(f"{'if' if first else 'elif'} tag == {f.tag}:")
                            first = False
                            with code.block():
                                _decode_value(code, m, f, v, f"f_{f.attr}", "b", False)
                                code("if p > e:")
                                with code.block():
                                    code("raise Malformed")
                        other = _other_tags(s, v)
                        if other:
                            code(f"elif tag in {other}:")
                            with code.block():
                                code("raise Malformed  # a tag Kafka rejects at this version")
                        code("else:")
                        with code.block():
                            code("ut[tag] = bytes(b[p:e])")
                        code("p = e")
                    code("if not ut:")
                    with code.block():
                        code("ut = None")
            else:
                code("if b[p] == 0:")
                with code.block():
                    code("ut = None")
                    code("p += 1")
                code("else:")
                with code.block():
                    code(f"ut, p = {_tags_helper(m, 'read_tagged_fields')}(b, p)")
                    other = _other_tags(s, v)
                    if other:
                        code(f"if ut and not ut.keys().isdisjoint({other}):")
                        with code.block():
                            code("raise Malformed  # a tag Kafka rejects at this version")
        code(f"o = _new({cls})")
        for f in s.fields:
            if v in f.versions:
                code(f"o.{f.attr} = f_{f.attr}")
            else:
                code(f"o.{f.attr} = {_fresh_default(f, m.class_names)}")
        code(f"o.unknown_tags = {'ut' if flexible else 'None'}")
        code("return o, p")
    code()
    code()


def _reader(kind: str, compact: bool, nullable: bool) -> str:
    """``read_compact_nullable_string`` and its kind: Kafka's type words."""
    return f"read_{'compact_' if compact else ''}{'nullable_' if nullable else ''}{kind}"


def _decode_value(
    code: _Code,
    m: _Msg,
    f: FieldSpec,
    v: int,
    target: str,
    b: str,
    declare: bool = True,
    pre_read: bool = False,
) -> None:
    """Decode field ``f`` into ``target``. With ``pre_read`` the field's non-compact length or
    count prefix was already unpacked (into ``n``) with the fixed run before it."""
    t = f.type
    nullable = v in f.nullable_versions
    compact = f.compact(v, m.spec.flexible_versions)
    if t.is_array:
        assert t.element is not None
        wire = f.wire_element(v)
        if wire in _ARRAY_CODES:
            const = _MOD.array_const(wire)
            size = _ARRAY_CODES[wire][1]
            method = "read" + ("_compact" if compact else "") + ("_nullable" if nullable else "")
            if declare:
                code(f"{target}: list[Any] | None" if nullable else f"{target}: list[Any]")
            # small counts inline (one prebuilt struct, which also checks the bytes are there);
            # empty, null, big or malformed counts go through the helper
            if compact:
                code(f"n = {b}[p]")
                code("if 1 < n < 64:")
                with code.block():
                    code(f"{target} = list({const}_S[n - 1].unpack_from({b}, p + 1))")
                    code(f"p += {size} * n - {size - 1}")
                code("elif n == 1:")
                with code.block():
                    code(f"{target} = []")
                    code("p += 1")
                code("else:")
                with code.block():
                    code(f"{target}, p = {const}.{method}({b}, p)")
            else:
                if not pre_read:  # else the count is already in n, read with the fixed run before
                    code(f"(n,) = _I32.unpack_from({b}, p)")
                    code("p += 4")
                code("if 0 < n < 64:")
                with code.block():
                    code(f"{target} = list({const}_S[n].unpack_from({b}, p))")
                    code(f"p += {size} * n")
                code("elif n == 0:")
                with code.block():
                    code(f"{target} = []")
                code("else:")
                with code.block():
                    code(f"{target}, p = {const}.{method}({b}, p - 4)")
            return
        emitter = _element_encoding(f, v)
        if emitter is not None and emitter.decode_array(
            code, _MOD, target, b, compact=compact, nullable=nullable, declare=declare
        ):
            return
        reader = (
            "read_"
            + ("compact_" if compact else "")
            + ("nullable_" if nullable else "")
            + "array_length"
        )
        code(f"n, p = {reader}({b}, p)")
        if declare:
            code(f"{target}: list[Any] | None" if nullable else f"{target}: list[Any]")
        if nullable:
            code("if n < 0:")
            with code.block():
                code(f"{target} = None")
            code("else:")
            with code.block():
                _decode_elements(code, m, f, v, target, b, compact)
        else:
            _decode_elements(code, m, f, v, target, b, compact)
        return
    if t.is_struct:
        assert f.struct is not None
        fn = f"_d_{m.func(f.struct, v)}"
        if nullable:
            code(f"if {b}[p] >= 0x80:")
            with code.block():
                code(f"{target} = None")
                code("p += 1")
            code("else:")
            with code.block():
                code(f"{target}, p = {fn}({b}, p + 1)")
        else:
            code(f"{target}, p = {fn}({b}, p)")
        return
    emitter = _value_encoding(f, v)
    if emitter is not None:
        emitter.decode(code, _MOD, target, b)
        return
    wire = f.wire_type(v)
    if wire in FIXED_TYPES:
        fmt, size = FIXED_TYPES[wire]
        code(f"({target},) = {_MOD.struct_const(fmt)}.unpack_from({b}, p)")
        code(f"p += {size}")
        if t.name == "uuid":
            code(f"{target} = uuid_from_bytes({target})")
        return
    if pre_read:
        assert t.name == "string" and not compact
        if declare:
            code(f"{target}: str | None" if nullable else f"{target}: str")
        code("e = p + n")
        code(f"if n >= 0 and e <= len({b}):")
        with code.block():
            code(f'{target} = str({b}[p:e], "utf-8")')
            code("p = e")
        code("else:")
        with code.block():
            code(f"{target}, p = {_reader(t.name, compact, nullable)}({b}, p - 2)")
        return
    code(f"{target}, p = {_reader(t.name, compact, nullable)}({b}, p)")


def _decode_elements(
    code: _Code, m: _Msg, f: FieldSpec, v: int, target: str, b: str, compact: bool
) -> None:
    el = f.type.element
    assert el is not None
    if el.name == "uuid":
        code(f"{target}, p = read_uuid_array({b}, p, n)")
        return
    emitter = _element_encoding(f, v)
    if emitter is not None:
        emitter.decode_elements(code, _MOD, target, b)
        return
    if el.is_struct:
        assert f.struct is not None
        call = f"_d_{m.func(f.struct, v)}({b}, p)"
    else:
        call = f"{_reader(el.name, compact, False)}({b}, p)"
    code(f"{target} = []")
    code(f"ap = {target}.append")
    code("for _ in range(n):")
    with code.block():
        code(f"x, p = {call}")
        code("ap(x)")


def _decode_one_by_one(code: _Code, m: _Msg, run: list[FieldSpec], v: int) -> None:
    """A run's fields read one at a time (the fallback a ``FieldEmitter.decode_run`` writes)."""
    for f in run:
        _decode_value(code, m, f, v, f"f_{f.attr}", "b")
