"""What the emitter's parts share: layouts, Python literals and annotations, the code buffer.

Approach: ``_Msg`` computes each (struct, version)'s *layout key* (the fields present, their wire
form at that version, the child structs' layouts), so that versions with the same key share one
function; ``_literal``/``_annotation`` turn spec defaults and types into Python source; ``_Code``
collects indented lines; ``_MOD`` is the module being emitted (its ``struct.Struct`` constants,
fixed-array constants, and the constants and imports extensions ask for), reset by ``emit_module``
for each module. A wire type that is not Kafka's is found only in the field-encoding registry of
``_extension_points`` (``_value_encoding``, ``_element_encoding``, ``_encoding_run``), whose
``FieldEmitter`` hooks write its code; nothing here knows a particular extension.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import field
from typing import Any

from kwire._lazy import lazy_dataclass
from kwire.protocol._extension_points import (
    FIELD_ENCODINGS,
    KAFKA_TAG_HEADER,
    TAG_HEADER_CODECS,
    FieldEmitter,
)
from kwire.protocol._spec import (
    FIXED_TYPES,
    STRUCT_DEFAULT,
    FieldSpec,
    MessageSpec,
    StructSpec,
    parse_default,
)

# ------------------------------------------------------------------------------------------------
# Layouts


def _fixed(f: FieldSpec, v: int) -> bool:
    """A fixed-width value at ``v`` (a field with ``encodings`` may use an extension's wire type
    at some versions)."""
    return f.wire_type(v) in FIXED_TYPES


def _value_encoding(f: FieldSpec, v: int) -> FieldEmitter | None:
    """The registered emitter of a single-value field's wire type at ``v`` (``None`` for Kafka's
    types: a field without ``encodings`` never reaches the registry)."""
    if not f.encodings or f.type.is_array:
        return None
    encoding = FIELD_ENCODINGS.get(f.wire_element(v))
    return None if encoding is None else encoding.emit


def _element_encoding(f: FieldSpec, v: int) -> FieldEmitter | None:
    """The registered emitter of an array field's element wire type at ``v`` (``None`` for
    Kafka's types)."""
    if not f.encodings or not f.type.is_array:
        return None
    encoding = FIELD_ENCODINGS.get(f.wire_element(v))
    return None if encoding is None else encoding.emit


class _Msg:
    """Per-message emission state: struct class names and layout -> function tables."""

    def __init__(self, spec: MessageSpec, class_names: dict[str, str]) -> None:
        self.spec = spec
        self.class_names = class_names  # struct name -> python class name
        self.keys: dict[tuple[str, int], Any] = {}
        self.funcs: dict[tuple[str, Any], str] = {}  # (struct, layout key) -> suffix "X_v3"
        self.order: list[tuple[StructSpec, int, Any]] = []  # functions to emit

    def cls(self, s: StructSpec) -> str:
        return self.class_names[s.name]

    def key(self, s: StructSpec, v: int) -> Any:
        k = self.keys.get((s.name, v))
        if k is None:
            flexible = self.spec.flexible(v)
            parts: list[Any] = []
            for f in s.fields:
                if v not in f.versions:
                    parts.append(("a", f.attr, f.ignorable))
                    continue
                child = self.key(f.struct, v) if f.struct is not None else None
                parts.append(
                    (
                        "t" if v in f.tagged_versions else "f",
                        f.attr,
                        f.wire_type(v),
                        v in f.nullable_versions,
                        f.compact(v, self.spec.flexible_versions),
                        child,
                    )
                )
            k = (flexible, tuple(parts))
            self.keys[(s.name, v)] = k
        return k

    def func(self, s: StructSpec, v: int) -> str:
        """The function suffix for struct ``s`` at version ``v``, registering it (and children)."""
        k = self.key(s, v)
        name = self.funcs.get((s.name, k))
        if name is None:
            name = f"{self.cls(s)}_v{v}"
            self.funcs[(s.name, k)] = name
            for f in s.fields:
                if f.struct is not None and v in f.versions:
                    self.func(f.struct, v)
            self.order.append((s, v, k))
        return name


# ------------------------------------------------------------------------------------------------
# Literals and annotations


def _literal(f: FieldSpec) -> str:
    d = parse_default(f)
    if d is STRUCT_DEFAULT or isinstance(d, list):
        return "UNSET"
    if isinstance(d, uuid.UUID):
        if d.int == 0:
            return "ZERO_UUID"
        return f"_uuid.UUID({str(d)!r})"
    if isinstance(d, float):
        if math.isnan(d) or math.isinf(d):
            return f"float({str(d)!r})"
        return repr(d)
    return repr(d)


def _fresh_default(f: FieldSpec, class_names: dict[str, str]) -> str:
    """An expression for a fresh default value (new list / new struct for mutable defaults)."""
    d = parse_default(f)
    if isinstance(d, list):
        return "[]"
    if d is STRUCT_DEFAULT:
        assert f.struct is not None
        return f"{class_names[f.struct.name]}()"
    return _literal(f)


_PY_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "uuid": "_uuid.UUID",
    "string": "str",
    "bytes": "bytes",
    "records": "Records",
}


def _annotation(f: FieldSpec, class_names: dict[str, str]) -> str:
    t = f.type
    if t.is_array:
        assert t.element is not None
        inner = class_names[t.element.name] if t.element.is_struct else _PY_TYPES[t.element.name]
        ann = f"list[{inner}]"
    elif t.is_struct:
        ann = class_names[t.name]
    else:
        ann = _PY_TYPES[t.name]
    if not f.nullable_versions.empty or f.null_default:
        ann += " | None"
    return ann


def _field_comment(f: FieldSpec) -> str:
    parts = [f"v{f.versions}"]
    if not f.nullable_versions.empty:
        parts.append(f"nullable v{f.nullable_versions}")
    if f.tag is not None:
        parts.append(
            f"tag {f.tag}"
            + ("" if f.tagged_versions == f.versions else f" in v{f.tagged_versions}")
        )
    if f.ignorable:
        parts.append("ignorable")
    return ", ".join(parts)


def _doc(text: str, indent: str) -> list[str]:
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if not text:
        return []
    if text.endswith('"'):
        text += " "
    return [f'{indent}"""{text}"""', ""]


# ------------------------------------------------------------------------------------------------
# Code buffer


class _Code:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append(("    " * self.indent + line) if line else "")

    def block(self) -> _Indent:
        return _Indent(self)


class _Indent:
    def __init__(self, code: _Code) -> None:
        self.code = code

    def __enter__(self) -> None:
        self.code.indent += 1

    def __exit__(self, *exc: object) -> None:
        self.code.indent -= 1


@lazy_dataclass
class _Module:
    structs: dict[str, str] = field(default_factory=dict)  # format -> constant name

    arrays: dict[str, str] = field(default_factory=dict)  # element type -> FixedArray constant
    # names to import beyond the core's, by module (extensions' helpers)
    imports: dict[str, set[str]] = field(default_factory=dict)
    # module-level constants extensions ask for: name -> expression
    tables: dict[str, str] = field(default_factory=dict)
    # struct classes whose default instance encoders compare with: constant name -> class
    defaults: dict[str, str] = field(default_factory=dict)

    def reset(self) -> None:
        """Forget everything: a new module is being emitted."""
        self.structs.clear()
        self.arrays.clear()
        self.imports.clear()
        self.tables.clear()
        self.defaults.clear()

    def default_const(self, cls: str) -> str:
        """A module constant holding ``cls()``, for encoders to compare a struct field with
        (built once at import instead of on every encode; never handed out, never mutated)."""
        name = f"_D_{cls}"
        self.defaults[name] = cls
        return name

    def use(self, module: str, name: str) -> None:
        self.imports.setdefault(module, set()).add(name)

    def table(self, name: str, expression: str) -> str:
        """``ModuleWriter.table``: the constant ``name = expression``, defined once."""
        known = self.tables.setdefault(name, expression)
        if known != expression:
            raise ValueError(f"module constant {name} asked for as {expression} and as {known}")
        return name

    def array_const(self, type_name: str) -> str:
        name = self.arrays.get(type_name)
        if name is None:
            name = f"_A_{type_name}"
            self.arrays[type_name] = name
        return name

    def struct_const(self, fmt: str) -> str:
        name = self.structs.get(fmt)
        if name is None:
            name = "_S_" + fmt.replace("?", "B")
            self.structs[fmt] = name
        return name


_ARRAY_CODES = {k: v for k, v in FIXED_TYPES.items() if k != "uuid"}


# The struct-constant registry of the module being emitted (reset by emit_module).
_MOD = _Module()


def _tags_helper(m: _Msg, name: str) -> str:
    """A tag-section primitive, or the registered twin for the spec's tag-header layout."""
    if m.spec.tag_header == KAFKA_TAG_HEADER:
        return name
    return _tag_header_helper(m, 1 if name == "read_tagged_fields" else 2)


def _tag_header_helper(m: _Msg, which: int) -> str:
    """Helper ``which`` (1 read section, 2 write section, 3 one header) of the spec's layout."""
    helpers = TAG_HEADER_CODECS[m.spec.tag_header].helpers
    _MOD.use(helpers[0], helpers[which])
    return helpers[which]


def _other_tags(s: StructSpec, v: int) -> tuple[int, ...]:
    """Tags of fields of ``s`` that are not tagged at ``v`` (Kafka's readers reject them)."""
    return tuple(
        sorted(f.tag for f in s.fields if f.tag is not None and v not in f.tagged_versions)
    )


def _absorbable(f: FieldSpec, v: int, m: _Msg) -> bool:
    """A non-compact string, or a non-compact array of fixed-width elements."""
    if f.compact(v, m.spec.flexible_versions):
        return False
    if f.type.name == "string":
        return True
    el = f.type.element
    return el is not None and f.wire_element(v) in _ARRAY_CODES


def _fmt_versions(versions: list[int]) -> str:
    if not versions:
        return "none"
    if versions == list(range(versions[0], versions[-1] + 1)):
        return str(versions[0]) if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"
    return ", ".join(map(str, versions))


def _encoding_run(
    present: list[FieldSpec], i: int, v: int
) -> tuple[FieldEmitter | None, list[FieldSpec]]:
    """Consecutive single-value fields from ``present[i]`` whose registered encodings share one
    ``run_key`` (read and written together), with the first one's emitter; ``(None, [])`` when
    ``present[i]`` has no such encoding."""
    first = _value_encoding(present[i], v)
    key = None if first is None else first.run_key
    if key is None:
        return None, []
    run: list[FieldSpec] = []
    for f in present[i:]:
        emitter = _value_encoding(f, v)
        if emitter is None or emitter.run_key != key:
            break
        run.append(f)
    return first, run
