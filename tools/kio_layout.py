"""Wire layouts of kio 0.6.5's generated schema classes (Kafka 4.3.1), in ``spec_layout``'s shape.

kio (Aiven's Kafka protocol library, a dev dependency) generates one frozen dataclass per message,
version and struct from Kafka 4.3.1's JSON specs and keeps the wire facts as field metadata:
``kafka_type``, ``tag``, nullability as ``X | None``, flexibility as ``__flexible__``. Reading them back
gives an independent second source for every 4.3.1 message-version, used to cross-check the spec
files staged under ``tools/specs/`` (see ``tools/merge_specs.py``) and by the kio differential tests.

kio names fields in snake_case and drops a ``_ms`` suffix where it types a field as a duration or a
timestamp (``throttle_time_ms`` -> ``throttle_time``); ``names_match`` allows for that.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

from spec_layout import Field, Layout

KIO_TYPE = {
    "error_code": "int16",
    "timedelta_i32": "int32",
    "timedelta_i64": "int64",
    "datetime_i64": "int64",
}

_NOT_NULLABLE = frozenset({"uuid", "datetime_i64"})

# kio's name for an API (its package directory) -> Kafka's spec name stem, where the plain
# CamelCase conversion does not give Kafka's spelling.
_STEM_OVERRIDES = {
    "k_raft_version_record": "KRaftVersionRecord",
}


def kafka_stem(kio_api: str) -> str:
    if kio_api in _STEM_OVERRIDES:
        return _STEM_OVERRIDES[kio_api]
    return "".join(p.capitalize() for p in kio_api.split("_"))


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def names_match(kafka_name: str, kio_name: str) -> bool:
    k, o = _norm(kafka_name), _norm(kio_name)
    return k == o or k == o + "ms" or k == o + "s"


def outer_optional(f: Any) -> bool:
    """Is the field itself optional (``X | None``)? kio's own ``is_optional`` also answers yes for
    an array whose *elements* are optional (``tuple[UUID | None, ...]``), which is not nullability."""
    import types
    import typing

    t = f.type
    return typing.get_origin(t) in (types.UnionType, typing.Union) and type(
        None
    ) in typing.get_args(t)


def entity_layout(cls: Any) -> Layout:
    """The layout of one kio entity class (a request, response, header or data message)."""
    return Layout(bool(cls.__flexible__), _fields(cls))


def _fields(cls: Any) -> tuple[Field, ...]:
    from kio.serial._introspect import (
        EntityField,
        EntityTupleField,
        PrimitiveField,
        PrimitiveTupleField,
        classify_field,
    )

    regular: list[Field] = []
    tagged: list[Field] = []
    for f in dataclasses.fields(cls):
        tag = f.metadata.get("tag")
        kind = classify_field(f)
        # kio types the zero UUID and the -1 timestamp as None: not wire nullability.
        nullable = outer_optional(f) and (
            isinstance(kind, PrimitiveTupleField | EntityTupleField)
            or f.metadata.get("kafka_type") not in _NOT_NULLABLE
        )
        children: tuple[Field, ...] | None = None
        if isinstance(kind, PrimitiveField | PrimitiveTupleField):
            kt = f.metadata["kafka_type"]
            t = KIO_TYPE.get(kt, kt)
            wtype = "[]" + t if isinstance(kind, PrimitiveTupleField) else t
        else:
            assert isinstance(kind, EntityField | EntityTupleField)
            children = _fields(kind.type_)
            wtype = "[]struct" if isinstance(kind, EntityTupleField) else "struct"
        entry = Field(f.name, wtype, nullable, tag, children)
        (tagged if tag is not None else regular).append(entry)
    tagged.sort(key=lambda e: e.tag if e.tag is not None else -1)
    return tuple(regular) + tuple(tagged)


def kio_entities() -> Iterator[tuple[str, int, str, Any]]:
    """Every (Kafka spec name, version, kind, class) kio has; kind is request/response/header/data."""
    from pkgutil import resolve_name

    from kio.schema.index import schema_name_map

    for api, by_version in schema_name_map.items():
        for version, by_type in by_version.items():
            for etype, path in by_type.items():
                cls = resolve_name(path)
                kind = etype.name
                stem = kafka_stem(api)
                if kind == "request":
                    name = stem + "Request"
                elif kind == "response":
                    name = stem + "Response"
                else:
                    name = stem
                yield name, int(version), kind, cls


def kio_layouts() -> dict[str, dict[int, Layout]]:
    """kio's layouts by Kafka spec name and version."""
    out: dict[str, dict[int, Layout]] = {}
    for name, version, _kind, cls in kio_entities():
        out.setdefault(name, {})[version] = entity_layout(cls)
    return out


def describe_difference(kafka: Layout, kio: Layout, path: str = "") -> str | None:
    """First difference between a layout from a Kafka spec and one from kio, or None."""
    if kafka.flexible != kio.flexible:
        return f"{path or '<message>'}: flexible {kafka.flexible} != kio {kio.flexible}"
    return _diff(kafka.fields, kio.fields, path)


def _diff(a: tuple[Field, ...], b: tuple[Field, ...], path: str) -> str | None:
    for i in range(max(len(a), len(b))):
        if i >= len(a):
            return f"{path}: kio has an extra field {b[i].name}"
        if i >= len(b):
            return f"{path}: kio lacks field {a[i].name}"
        fa, fb = a[i], b[i]
        here = f"{path}.{fa.name}" if path else fa.name
        if not names_match(fa.name, fb.name):
            return f"{here}: name != kio {fb.name}"
        ta = fa.type.split("!")[0]
        if ta != fb.type:
            return f"{here}: type {fa.type} != kio {fb.type}"
        if fa.nullable != fb.nullable:
            return f"{here}: nullable {fa.nullable} != kio {fb.nullable}"
        if fa.tag != fb.tag:
            return f"{here}: tag {fa.tag} != kio {fb.tag}"
        if fa.children is not None and fb.children is not None:
            d = _diff(fa.children, fb.children, here)
            if d:
                return d
    return None
