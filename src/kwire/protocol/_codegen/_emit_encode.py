"""The emitter's encoders: one straight-line ``_e_<Struct>_v<N>`` function per layout.

Approach: the mirror of the decoders: runs of fixed-width fields packed by one ``struct.Struct``,
small arrays and one-byte lengths written inline, the rest through the wire primitives
(``write_compact_string``, ...), a wire type that is not Kafka's by the code its registered
``FieldEmitter`` writes, tagged fields collected and written in tag order. Only the version
checks that can fail are emitted: a field absent from the target version whose value is not the
default and which is not ignorable.
"""

from __future__ import annotations

import functools

from kwire.protocol._codegen._emit_common import (
    _ARRAY_CODES,
    _MOD,
    _Code,
    _element_encoding,
    _encoding_run,
    _fixed,
    _literal,
    _Module,
    _Msg,
    _tags_helper,
    _value_encoding,
)
from kwire.protocol._extension_points import KAFKA_TAG_HEADER
from kwire.protocol._spec import (
    FIXED_TYPES,
    STRUCT_DEFAULT,
    FieldSpec,
    StructSpec,
    parse_default,
)

# ------------------------------------------------------------------------------------------------
# Encoders


def _nondefault(f: FieldSpec, expr: str, class_names: dict[str, str]) -> str:
    d = parse_default(f)
    if d is None:
        return f"{expr} is not None"
    if isinstance(d, list):
        return f"{expr} != []"
    if d is STRUCT_DEFAULT:
        assert f.struct is not None
        return f"{expr} != {_MOD.default_const(class_names[f.struct.name])}"
    return f"{expr} != {_literal(f)}"


def _emit_encoder(code: _Code, mod: _Module, m: _Msg, s: StructSpec, v: int) -> None:
    cls = m.cls(s)
    flexible = m.spec.flexible(v)
    name = m.func(s, v)
    code(f"def _e_{name}(o: {cls}, out: bytearray) -> None:")
    with code.block():
        if any(f.type.is_array and v in f.versions for f in s.fields):
            code("a: Any")
        for f in s.fields:
            if v not in f.versions and not f.ignorable:
                code(f"if {_nondefault(f, 'o.' + f.attr, m.class_names)}:")
                with code.block():
                    code(f"raise Malformed({f.json_name!r})")
        present = [f for f in s.fields if v in f.versions and v not in f.tagged_versions]
        tagged = sorted(
            (f for f in s.fields if v in f.versions and v in f.tagged_versions),
            key=lambda x: x.tag or 0,
        )
        i = 0
        while i < len(present):
            f = present[i]
            if _fixed(f, v):
                run = [f]
                while i + len(run) < len(present) and _fixed(present[i + len(run)], v):
                    run.append(present[i + len(run)])
                fmt = "".join(FIXED_TYPES[x.wire_type(v)][0] for x in run)
                const = mod.struct_const(fmt)
                args = ", ".join(
                    f"o.{x.attr}.bytes" if x.type.name == "uuid" else f"o.{x.attr}" for x in run
                )
                code(f"out += {const}.pack({args})")
                i += len(run)
                continue
            emitter, run = _encoding_run(present, i, v)
            if emitter is not None and len(run) > 1:
                emitter.encode_run(
                    code,
                    _MOD,
                    [f"o.{x.attr}" for x in run],
                    "out",
                    functools.partial(_encode_one_by_one, code, m, run, v),
                )
                i += len(run)
                continue
            _encode_value(code, m, f, v, f"o.{f.attr}", "out")
            i += 1
        if flexible:
            own = tuple(sorted(f.tag for f in tagged if f.tag is not None))
            if own:
                code(f"if o.unknown_tags and not o.unknown_tags.keys().isdisjoint({own}):")
                with code.block():
                    code("raise Malformed  # an unknown tag that is a known field's tag")
            if tagged:
                code("t: list[tuple[int, Any]] = []")
                for f in tagged:
                    code(f"if {_nondefault(f, 'o.' + f.attr, m.class_names)}:")
                    with code.block():
                        code("tb = bytearray()")
                        _encode_value(code, m, f, v, f"o.{f.attr}", "tb")
                        code(f"t.append(({f.tag}, tb))")
                if m.spec.tag_header == KAFKA_TAG_HEADER:
                    # most sections are empty: the one zero byte without the general writer
                    code("if t or o.unknown_tags:")
                    with code.block():
                        code("write_tagged_fields(out, t, o.unknown_tags)")
                    code("else:")
                    with code.block():
                        code("out.append(0)")
                else:
                    code(f"{_tags_helper(m, 'write_tagged_fields')}(out, t, o.unknown_tags)")
            else:
                code("if o.unknown_tags:")
                with code.block():
                    code(f"{_tags_helper(m, 'write_tagged_fields')}(out, [], o.unknown_tags)")
                code("else:")
                with code.block():
                    code("out.append(0)")
        else:
            code("if o.unknown_tags:")
            with code.block():
                code("raise Malformed")
    code()
    code()


def _writer(kind: str, compact: bool, nullable: bool) -> str:
    """``write_compact_nullable_string`` and its kind (records writers take null themselves)."""
    if kind == "records":
        return "write_compact_records" if compact else "write_records"
    return f"write_{'compact_' if compact else ''}{'nullable_' if nullable else ''}{kind}"


def _encode_value(code: _Code, m: _Msg, f: FieldSpec, v: int, expr: str, out: str) -> None:
    t = f.type
    nullable = v in f.nullable_versions
    compact = f.compact(v, m.spec.flexible_versions)
    if t.is_array:
        assert t.element is not None
        code(f"a = {expr}")
        if nullable:
            code("if a is None:")
            with code.block():
                code(f"{out}.append(0)" if compact else f'{out} += b"\\xff\\xff\\xff\\xff"')
            code("else:")
            with code.block():
                _encode_elements(code, m, f, v, out, compact)
        else:
            _encode_elements(code, m, f, v, out, compact)
        return
    if t.is_struct:
        assert f.struct is not None
        fn = f"_e_{m.func(f.struct, v)}"
        if nullable:
            code(f"if {expr} is None:")
            with code.block():
                code(f"{out}.append(0xFF)")
            code("else:")
            with code.block():
                code(f"{out}.append(1)")
                code(f"{fn}({expr}, {out})")
        else:
            code(f"{fn}({expr}, {out})")
        return
    emitter = _value_encoding(f, v)
    if emitter is not None:
        emitter.encode(code, _MOD, expr, out)
        return
    wire = f.wire_type(v)
    if wire in FIXED_TYPES:
        fmt, _ = FIXED_TYPES[wire]
        arg = f"{expr}.bytes" if t.name == "uuid" else expr
        code(f"{out} += {_MOD.struct_const(fmt)}.pack({arg})")
        return
    if t.name == "records" and not nullable:
        code(f"if {expr} is None:")
        with code.block():
            code("raise Malformed")
    code(f"{_writer(t.name, compact, nullable)}({out}, {expr})")


def _encode_elements(code: _Code, m: _Msg, f: FieldSpec, v: int, out: str, compact: bool) -> None:
    el = f.type.element
    assert el is not None
    emitter = _element_encoding(f, v)
    if emitter is not None:
        emitter.encode_elements(code, _MOD, out, compact)
        return
    wire = f.wire_element(v)
    if wire in _ARRAY_CODES:
        const = _MOD.array_const(wire)
        # small arrays inline: count, then one prebuilt struct; big ones through the helper
        code("n = len(a)")
        code("if n < 64:")
        with code.block():
            code(f"{out}.append(n + 1)" if compact else f"{out} += _I32.pack(n)")
            code(f"{out} += {const}_S[n].pack(*a)")
        code("else:")
        with code.block():
            code(f"{const}.write{'_compact' if compact else ''}({out}, a)")
        return
    if compact:
        code(f"write_uvarint({out}, len(a) + 1)")
    else:
        code(f"{out} += _I32.pack(len(a))")
    code("for x in a:")
    with code.block():
        if el.is_struct:
            assert f.struct is not None
            code(f"_e_{m.func(f.struct, v)}(x, {out})")
        elif el.name == "uuid":
            code(f"{out} += x.bytes")
        else:
            code(f"{_writer(el.name, compact, False)}({out}, x)")


def _encode_one_by_one(code: _Code, m: _Msg, run: list[FieldSpec], v: int) -> None:
    """A run's fields written one at a time (the fallback a ``FieldEmitter.encode_run`` writes)."""
    for f in run:
        _encode_value(code, m, f, v, f"o.{f.attr}", "out")
