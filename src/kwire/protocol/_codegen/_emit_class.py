"""The emitter's classes: one ``KafkaStruct``/``KafkaMessage`` subclass per struct of a message.

Approach: classes read like hand-written code: Kafka's struct names, ``__slots__``, typed
attributes with a comment per field (``# v3+, ignorable``), keyword construction with the spec's
defaults (fresh lists and structs), docstrings from ``about``, and the ``__kafka_fields__`` tuple of
``KField`` metadata the reference implementation and ``inspect`` read.
"""

from __future__ import annotations

from kwire.protocol._codegen._emit_common import (
    _annotation,
    _Code,
    _doc,
    _field_comment,
    _fresh_default,
    _literal,
    _Msg,
)
from kwire.protocol._spec import (
    FieldSpec,
    StructSpec,
)

# ------------------------------------------------------------------------------------------------
# Classes


def _emit_class(
    code: _Code, m: _Msg, s: StructSpec, about: str, top: bool, message_doc: str
) -> None:
    spec = m.spec
    cls = m.cls(s)
    base = "KafkaMessage" if top else "KafkaStruct"
    code(f"class {cls}({base}):")
    with code.block():
        for line in _doc(message_doc if top else about, ""):
            code(line)
        slots = [f.attr for f in s.fields] + ["unknown_tags"]
        code(f"__slots__ = ({', '.join(repr(x) for x in slots)},)")
        code()
        if top:
            code(f"API_KEY: ClassVar[int | None] = {spec.api_key!r}")
            code(f"MIN_VERSION: ClassVar[int] = {spec.valid_versions.lowest}")
            code(f"MAX_VERSION: ClassVar[int] = {spec.valid_versions.highest}")
            code()
            # the nested struct classes under Kafka's names, as Java nests them, typed for
            # checkers: ``ProduceResponse.TopicProduceResponse(...)``
            nested = sorted(x for x in spec.structs if x != spec.name)
            for n in nested:
                code(f"{n}: TypeAlias = {m.class_names[n]}")
            if nested:
                code()
        for f in s.fields:
            code(f"{f.attr}: {_annotation(f, m.class_names)}  # {_field_comment(f)}")
        code()
        # __init__
        params = []
        for f in s.fields:
            ann = _annotation(f, m.class_names)
            params.append(f"{f.attr}: {ann} = {_literal(f)}")  # UNSET is typed Any
        params.append("unknown_tags: dict[int, bytes] | None = None")
        code(
            f"def __init__(self, {', '.join(params[:-1])}{', ' if len(params) > 1 else ''}*, {params[-1]}) -> None:"
        )
        with code.block():
            for f in s.fields:
                if _literal(f) == "UNSET":
                    code(
                        f"self.{f.attr} = {_fresh_default(f, m.class_names)} if {f.attr} is UNSET else {f.attr}"
                    )
                else:
                    code(f"self.{f.attr} = {f.attr}")
            code("self.unknown_tags = unknown_tags")
        code()
        code("def __eq__(self, other: object) -> bool:")
        with code.block():
            code(f"if not isinstance(other, {cls}):")
            with code.block():
                code("return NotImplemented")
            if s.fields:
                mine = ", ".join(f"self.{f.attr}" for f in s.fields)
                theirs = ", ".join(f"other.{f.attr}" for f in s.fields)
                code(
                    f"return ({mine},) == ({theirs},) and _ut_eq(self.unknown_tags, other.unknown_tags)"
                )
            else:
                code("return _ut_eq(self.unknown_tags, other.unknown_tags)")
        code()
        code("__hash__ = None  # type: ignore[assignment]")
    code()
    code()


def _kfield(f: FieldSpec, class_names: dict[str, str]) -> str:
    args = [repr(f.name), repr(f.attr), repr(f.type.name), repr(str(f.versions))]
    if not f.nullable_versions.empty:
        args.append(f"nullable={str(f.nullable_versions)!r}")
    if f.tag is not None:
        args.append(f"tag={f.tag}")
        args.append(f"tagged={str(f.tagged_versions)!r}")
    args.append(f"default={_literal(f)}")
    if f.ignorable:
        args.append("ignorable=True")
    if f.flexible_versions is not None:
        args.append(f"flexible={str(f.flexible_versions)!r}")
    if f.struct is not None:
        args.append(f"struct={class_names[f.struct.name]}")
    if f.zero_copy:
        args.append("zero_copy=True")
    if f.encodings:
        pairs = ", ".join(f"({str(r)!r}, {w!r})" for r, w in f.encodings)
        args.append(f"encoding=({pairs},)")
    if f.about:
        args.append(f"about={f.about!r}")
    return f"KField({', '.join(args)})"
