"""The spec model: Kafka's message-spec language as immutable Python objects.

``MessageSpec`` (one JSON file) holds a root ``StructSpec``; every ``FieldSpec`` has a parsed
``FieldType`` and its version ranges; struct-typed fields point at their resolved ``StructSpec``
(inline or from ``commonStructs``). The loader (``_loader``) builds and validates these; the code
generator, the runtime interpreters (careful decoder, JSON, inspect) and the tests all read them.
Naming helpers live here too: ``snake_case`` mirrors Kafka's ``MessageGenerator.toSnakeCase``.
"""

from __future__ import annotations

import keyword
import uuid
from collections.abc import Iterator
from dataclasses import field
from typing import Any, Final

from kwire._lazy import lazy_dataclass
from kwire._wire import uuid_from_text
from kwire.protocol._primitives import INT_RANGES  # the runtime's too (re-exported here)
from kwire.protocol._spec._versions import NONE, VersionRange

__all__ = [
    "INT_RANGES",
    "PRIMITIVE_TYPES",
    "FieldSpec",
    "FieldType",
    "MessageSpec",
    "StructSpec",
    "camel_case",
    "python_attr",
    "snake_case",
]

#: Fixed-width primitives: name -> (struct format character(s), size in bytes).
FIXED_TYPES: Final[dict[str, tuple[str, int]]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}
PRIMITIVE_TYPES: Final = frozenset([*FIXED_TYPES, "string", "bytes", "records"])


def snake_case(name: str) -> str:
    """Kafka's ``toSnakeCase``: ``ThrottleTimeMs`` -> ``throttle_time_ms``, ``IsKRaftController`` ->
    ``is_kraft_controller`` (an underscore before a capital that follows a non-capital)."""
    out: list[str] = []
    prev_capital = True
    for ch in name:
        if ch.isupper():
            if not prev_capital:
                out.append("_")
            out.append(ch.lower())
            prev_capital = True
        else:
            out.append(ch)
            prev_capital = False
    return "".join(out)


def camel_case(name: str) -> str:
    """Kafka's ``camelCaseName`` (JSON key): the spec name with its first letter lower-cased."""
    return name[:1].lower() + name[1:]


#: Attribute names the generated classes use for themselves.
RESERVED_ATTRS: Final = frozenset(
    {"unknown_tags", "encode", "encode_into", "decode", "to_json", "from_json", "copy"}
)


def python_attr(name: str) -> str:
    """The Python attribute for a spec field name: ``snake_case`` plus ``_`` if it is a keyword."""
    attr = snake_case(name)
    if keyword.iskeyword(attr) or attr in RESERVED_ATTRS:
        attr += "_"
    return attr


@lazy_dataclass(frozen=True, slots=True)
class FieldType:
    """A parsed field type: a primitive (``int32``, ``string``...), a struct or an array of either."""

    name: str
    element: FieldType | None = None

    @classmethod
    def parse(cls, text: str) -> FieldType:
        s = text.strip()
        if s.startswith("[]"):
            inner = s[2:]
            if not inner:
                raise ValueError(f"can't parse array type {text!r}: no element type")
            element = cls.parse(inner)
            if element.is_array:
                raise ValueError("can't have an array of arrays; use an array of structs")
            return cls(s, element)
        if s in PRIMITIVE_TYPES or (s[:1].isupper() and s.isidentifier()):
            return cls(s)
        raise ValueError(f"can't parse type {text!r}")

    @property
    def is_array(self) -> bool:
        return self.element is not None

    @property
    def is_struct(self) -> bool:
        return self.element is None and self.name not in PRIMITIVE_TYPES

    @property
    def is_struct_array(self) -> bool:
        return self.element is not None and self.element.is_struct

    @property
    def struct_name(self) -> str | None:
        """The struct's name for a struct or struct-array type."""
        if self.is_struct:
            return self.name
        if self.element is not None and self.element.is_struct:
            return self.element.name
        return None

    @property
    def is_fixed(self) -> bool:
        return self.name in FIXED_TYPES

    @property
    def can_be_nullable(self) -> bool:
        return self.is_array or self.is_struct or self.name in ("string", "bytes", "records")

    @property
    def has_compact_form(self) -> bool:
        """Serialised differently in flexible versions (strings, bytes, records, arrays)."""
        return self.is_array or self.name in ("string", "bytes", "records")

    def __str__(self) -> str:
        return self.name


@lazy_dataclass(frozen=True, eq=False)
class FieldSpec:
    """One field of a struct, as the spec declares it (see Kafka's ``FieldSpec``)."""

    name: str
    type: FieldType
    versions: VersionRange
    nullable_versions: VersionRange = NONE
    tagged_versions: VersionRange = NONE
    tag: int | None = None
    default: str = ""
    ignorable: bool = False
    map_key: bool = False
    entity_type: str = "unknown"
    about: str = ""
    flexible_versions: VersionRange | None = None
    zero_copy: bool = False
    fields: tuple[FieldSpec, ...] = ()
    #: The struct a struct or struct-array field holds (resolved by the loader).
    struct: StructSpec | None = None
    #: The wire type per version range where an extension's spec form gives one (see
    #: ``kwire.protocol._extension_points``), and that form's name; empty for Kafka's fields.
    encodings: tuple[tuple[VersionRange, str], ...] = ()
    encoding_form: str = ""

    @property
    def attr(self) -> str:
        """The snake_case Python attribute name."""
        return python_attr(self.name)

    @property
    def json_name(self) -> str:
        """The key Kafka's JsonConverter uses (``isKRaftController``)."""
        return camel_case(self.name)

    def present(self, version: int) -> bool:
        return version in self.versions

    def nullable(self, version: int) -> bool:
        return version in self.nullable_versions

    def tagged(self, version: int) -> bool:
        return version in self.tagged_versions

    def compact(self, version: int, message_flexible: VersionRange) -> bool:
        """Whether this field uses the compact (uvarint length) form at ``version``."""
        flex = self.flexible_versions if self.flexible_versions is not None else message_flexible
        return version in flex

    def wire_element(self, version: int) -> str:
        """The wire type of the value (or of each array element) at ``version``: the type itself,
        or for an encoded field ``int32``, ``varint32``, ``unsigned_varint32``..."""
        for r, wire in self.encodings:
            if version in r:
                return wire
        t = self.type
        return t.element.name if t.element is not None else t.name

    def wire_type(self, version: int) -> str:
        """``wire_element`` with the array marker: ``[]varint32`` for an encoded array."""
        if not self.encodings:
            return self.type.name
        return ("[]" if self.type.is_array else "") + self.wire_element(version)

    @property
    def null_default(self) -> bool:
        return self.default == "null" or self.type.name == "records"

    def default_value(self) -> Any:
        """The field's default as a Python value, as a freshly built Java message holds it.

        Arrays default to a new empty list and structs to a fresh default instance; for those this
        returns ``[]`` or the marker ``STRUCT_DEFAULT`` (the caller builds the struct).
        """
        return parse_default(self)


class _StructDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "STRUCT_DEFAULT"


STRUCT_DEFAULT: Final = _StructDefault()


def _parse_int(text: str, type_name: str) -> int:
    s = text
    base = 10
    if s.startswith("0x"):
        base = 16
        s = s[2:]
    value = int(s, base)  # ValueError on junk
    lo, hi = INT_RANGES[type_name]
    if not lo <= value <= hi:
        raise ValueError(f"{text!r} is out of range for {type_name}")
    return value


def parse_default(f: FieldSpec) -> Any:
    """Kafka's ``FieldSpec.fieldDefault`` semantics; ``ValueError`` for an invalid default."""
    d = f.default
    t = f.type
    if t.name == "bool":
        if d == "":
            return False
        if d.lower() in ("true", "false"):
            return d.lower() == "true"
        raise ValueError(f"invalid default for boolean field: {d!r}")
    if t.name in INT_RANGES:
        return 0 if d == "" else _parse_int(d, t.name)
    if t.name == "uuid":
        if d == "":
            return uuid.UUID(int=0)
        try:
            return uuid.UUID(bytes=uuid_from_text(d))
        except ValueError:
            raise ValueError(f"invalid default for uuid field: {d!r}") from None
    if t.name == "float64":
        return 0.0 if d == "" else float(d)
    if d == "null" and (t.name in ("string", "bytes") or t.is_struct or t.is_array):
        if not f.nullable_versions.contains(f.versions):
            raise ValueError(
                "null cannot be the default, because not all versions of this field are nullable"
            )
        return None
    if t.name == "string":
        return d
    if t.name == "bytes":
        if d:
            raise ValueError("the only valid default for a bytes field is empty or null")
        return b""
    if t.name == "records":
        return None
    if t.is_struct:
        if d:
            raise ValueError(
                "the only valid default for a struct field is the empty struct or null"
            )
        return STRUCT_DEFAULT
    if t.is_array:
        if d:
            raise ValueError("the only valid default for an array field is the empty array or null")
        return []
    raise ValueError(f"unsupported field type {t}")


@lazy_dataclass(frozen=True, eq=False)
class StructSpec:
    """A struct: the message's root fields, an inline struct, or a common struct."""

    name: str
    versions: VersionRange
    fields: tuple[FieldSpec, ...]
    is_common: bool = False

    def fields_at(self, version: int) -> Iterator[FieldSpec]:
        """The fields present at ``version``, in wire order (tagged ones included)."""
        return (f for f in self.fields if version in f.versions)

    def has_tagged_fields(self) -> bool:
        return any(f.tag is not None for f in self.fields)


@lazy_dataclass(frozen=True, eq=False)
class MessageSpec:
    """One spec file: a request, response, header, or data/metadata type."""

    name: str
    type: str
    api_key: int | None
    valid_versions: VersionRange
    flexible_versions: VersionRange
    struct: StructSpec
    common_structs: tuple[StructSpec, ...] = ()
    latest_version_unstable: bool = False
    listeners: tuple[str, ...] = ()
    deprecated_versions: VersionRange = NONE
    #: Every struct of the message by name (inline and common), resolved.
    structs: dict[str, StructSpec] = field(default_factory=dict)
    #: Where it was loaded from (file name), for error messages and generated headers.
    source: str = ""
    #: The tag-header layout: "kip482" (Kafka's) or a registered extension's.
    tag_header: str = "kip482"

    @property
    def fields(self) -> tuple[FieldSpec, ...]:
        return self.struct.fields

    def versions(self) -> range:
        """Every valid version."""
        return self.valid_versions.versions()

    def flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    def iter_structs(self) -> Iterator[StructSpec]:
        """Every struct reachable from the root (root first, then depth-first), each once."""
        seen: set[str] = set()

        def walk(s: StructSpec) -> Iterator[StructSpec]:
            if s.name in seen:
                return
            seen.add(s.name)
            yield s
            for f in s.fields:
                if f.struct is not None:
                    yield from walk(f.struct)

        yield from walk(self.struct)
