"""kio 0.6.5 as a second implementation of Kafka 4.3.1's protocol, for kwire's differential tests.

kio (Aiven) generates frozen dataclasses per message and version from Kafka 4.3.1's specs and
encodes/decodes them with its own reader (Rust) and writer (Python). This module gives kwire's
tests what they need from it, built only from kio's own field metadata:

- ``random_instance(cls, rng)``: a random kio message (nulls, empty and several-element arrays,
  non-ASCII strings, extreme integers, tagged fields set or default) inside kio's limits;
- ``kio_encode`` / ``kio_decode``;
- ``canon_kio(obj)`` and ``canon_kwire(msg, version)``: one comparable value tree for both sides;
- ``build_kwire(cls, tree, version)``: a kwire message from such a tree, set field by field
  through kwire's constructors (so kwire's encoder is tested without its decoder).

kio's limits, minded here: it types durations (``*_ms`` int32/int64) as ``timedelta`` and
timestamps as time-zone-aware ``datetime`` and writes both through float seconds, so values are
whole milliseconds of moderate size (int32 extremes for int32 durations; timestamps within
datetime's range); it maps the zero UUID and a -1 timestamp to ``None``. The canonical tree undoes
those mappings: durations and timestamps become integer milliseconds, ``None`` UUIDs the zero UUID.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import random
import uuid
from typing import Any

from kio_layout import names_match

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
ZERO_UUID = uuid.UUID(int=0)

INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
# Durations and timestamps kio can carry exactly (whole milliseconds through float seconds).
SAFE_MS = {
    "timedelta_i32": (-(2**31), 2**31 - 1),
    "timedelta_i64": (-(2**40), 2**40),
    "datetime_i64": (0, 2**41),
}
TEXT = "aZ09_-.ßéü中文🙂 "


# ---------------------------------------------------------------------------------------------
# kio field metadata


def _fields(cls: Any) -> list[dataclasses.Field[Any]]:
    return list(dataclasses.fields(cls))


def _layout_order(cls: Any) -> list[dataclasses.Field[Any]]:
    """Fields in wire order: regular ones as declared, then tagged ones by tag."""
    fs = _fields(cls)
    regular = [f for f in fs if "tag" not in f.metadata]
    tagged = sorted((f for f in fs if "tag" in f.metadata), key=lambda f: f.metadata["tag"])
    return regular + tagged


def _classify(f: dataclasses.Field[Any]) -> Any:
    from kio.serial._introspect import classify_field

    return classify_field(f)


def _optional(f: dataclasses.Field[Any]) -> bool:
    from kio_layout import outer_optional

    return outer_optional(f)


# ---------------------------------------------------------------------------------------------
# Random kio instances


def _rand_int(rng: random.Random, lo: int, hi: int) -> int:
    pick = rng.random()
    if pick < 0.15:
        return lo
    if pick < 0.3:
        return hi
    if pick < 0.45:
        return max(lo, min(hi, rng.choice((-1, 0, 1))))
    return rng.randint(lo, hi)


def _rand_text(rng: random.Random) -> str:
    return "".join(rng.choice(TEXT) for _ in range(rng.choice((0, 1, 3, 8))))


def _primitive(kt: str, inner: Any, rng: random.Random, optional: bool = True) -> Any:
    from kio.schema.errors import ErrorCode
    from kio.static.primitive import f64, i32Timedelta, i64Timedelta

    if kt == "error_code":
        return rng.choice(list(ErrorCode))
    if kt in INT_BOUNDS:
        return inner(_rand_int(rng, *INT_BOUNDS[kt]))
    if kt == "bool":
        return rng.random() < 0.5
    if kt == "float64":
        return f64(rng.choice((0.0, -1.5, 3.25e300, rng.uniform(-1e6, 1e6))))
    if kt == "string":
        return inner(_rand_text(rng)) if inner is not str else _rand_text(rng)
    if kt in ("bytes", "records"):
        data = bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 5, 17))))
        return inner(data) if inner is not bytes else data
    if kt == "uuid":
        if not optional or rng.random() < 0.8:
            return uuid.UUID(int=rng.getrandbits(128))
        return None
    if kt in ("timedelta_i32", "timedelta_i64"):
        ms = _rand_int(rng, *SAFE_MS[kt])
        td = datetime.timedelta(milliseconds=ms)
        return (i32Timedelta if kt == "timedelta_i32" else i64Timedelta).parse(td)
    if kt == "datetime_i64":
        if optional and rng.random() < 0.2:
            return None
        return EPOCH + datetime.timedelta(milliseconds=_rand_int(rng, *SAFE_MS[kt]))
    raise NotImplementedError(kt)


def _inner_type(f: dataclasses.Field[Any]) -> Any:
    from kio.serial._introspect import EntityField, EntityTupleField

    kind = _classify(f)
    if isinstance(kind, EntityField | EntityTupleField):
        return kind.type_
    return kind.type_


def random_instance(cls: Any, rng: random.Random, depth: int = 0) -> Any:
    """A random instance of the kio dataclass ``cls``."""
    from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField

    values: dict[str, Any] = {}
    for f in _fields(cls):
        if "tag" in f.metadata and rng.random() < 0.4 and _has_default(f):
            continue  # leave the tagged field at its default: not written
        kind = _classify(f)
        nullable = _optional(f)
        kt = f.metadata.get("kafka_type")
        if nullable and kt not in ("uuid", "datetime_i64") and rng.random() < 0.2:
            values[f.name] = None
            continue
        if isinstance(kind, EntityTupleField | PrimitiveTupleField):
            n = rng.choice((0, 1, 3)) if depth < 3 else 0
            if isinstance(kind, EntityTupleField):
                values[f.name] = tuple(
                    random_instance(kind.type_, rng, depth + 1) for _ in range(n)
                )
            else:
                items = [_primitive(kt, kind.type_, rng) for _ in range(n)]
                if kt == "uuid":
                    items = [i if i is not None else ZERO_UUID for i in items]
                values[f.name] = tuple(items)
        elif isinstance(kind, EntityField):
            values[f.name] = random_instance(kind.type_, rng, depth + 1)
        else:
            assert kt is not None
            values[f.name] = _primitive(kt, kind.type_, rng, nullable)
    return cls(**values)


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


# ---------------------------------------------------------------------------------------------
# Encode / decode


def kio_encode(obj: Any) -> bytes:
    from kio.serial import entity_writer

    buf = io.BytesIO()
    entity_writer(type(obj))(buf, obj)
    return buf.getvalue()


def kio_decode(cls: Any, data: bytes) -> Any:
    from kio.serial import entity_reader

    obj, size = entity_reader(cls)(data, 0)
    if size != len(data):
        raise ValueError(f"kio read {size} of {len(data)} bytes")
    return obj


# ---------------------------------------------------------------------------------------------
# Canonical trees: [(name, value), ...] in wire order


def _ms(value: Any) -> int:
    if isinstance(value, datetime.datetime):
        value = value - EPOCH
    assert isinstance(value, datetime.timedelta)
    return (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000


def _canon_kio_value(f: dataclasses.Field[Any], value: Any) -> Any:
    from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField

    kt = f.metadata.get("kafka_type")
    kind = _classify(f)
    if value is None and isinstance(kind, EntityTupleField | PrimitiveTupleField):
        return None
    if isinstance(value, tuple):
        if isinstance(kind, EntityTupleField):
            return [canon_kio(v) for v in value]
        return [_canon_prim(kt, v) for v in value]
    if isinstance(kind, EntityField):
        return None if value is None else canon_kio(value)
    return _canon_prim(kt, value)


def _canon_prim(kt: str | None, value: Any) -> Any:
    if kt == "uuid":
        return ZERO_UUID if value is None else value
    if kt == "datetime_i64":
        return -1 if value is None else _ms(value)
    if value is None:
        return None
    if kt in ("timedelta_i32", "timedelta_i64"):
        return _ms(value)
    if kt == "error_code":
        return int(value)
    if kt in ("bytes", "records"):
        return bytes(value)
    if kt == "float64":
        return float(value)
    if kt == "bool":
        return bool(value)
    if kt == "string":
        return str(value)
    return int(value)


def canon_kio(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, _canon_kio_value(f, getattr(obj, f.name))) for f in _layout_order(type(obj))]


def _kwire_fields(cls: Any, version: int) -> list[Any]:
    fs = [f for f in cls.__kafka_fields__ if version in f.versions]
    regular = [f for f in fs if not (f.tag is not None and version in f.tagged)]
    tagged = sorted(
        (f for f in fs if f.tag is not None and version in f.tagged), key=lambda f: f.tag
    )
    return regular + tagged


def _canon_kwire_value(f: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if f.is_array:
        return [_canon_kwire_elem(f, v, version) for v in value]
    return _canon_kwire_elem(f, value, version)


def _canon_kwire_elem(f: Any, value: Any, version: int) -> Any:
    if f.element == "struct":
        return canon_kwire(value, version)
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if f.element in ("bytes", "records") and value is not None:
        return bytes(value)
    return value


def canon_kwire(msg: Any, version: int) -> list[tuple[str, Any]]:
    return [
        (f.name, _canon_kwire_value(f, getattr(msg, f.attr), version))
        for f in _kwire_fields(type(msg), version)
    ]


def tree_difference(kwire: Any, kio: Any, path: str = "") -> str | None:
    """First difference between a kwire tree and a kio tree (names matched loosely), or None."""
    if isinstance(kwire, list) and kwire and isinstance(kwire[0], tuple) and len(kwire[0]) == 2:
        pass
    if _is_struct(kwire) or _is_struct(kio):
        if not (_is_struct(kwire) and _is_struct(kio)):
            return f"{path}: struct vs value {kwire!r} / {kio!r}"
        if len(kwire) != len(kio):
            names_a = [n for n, _ in kwire]
            names_b = [n for n, _ in kio]
            return f"{path}: fields {names_a} vs kio {names_b}"
        for (na, va), (nb, vb) in zip(kwire, kio, strict=True):
            here = f"{path}.{na}" if path else na
            if not names_match(na, nb):
                return f"{here}: name vs kio {nb}"
            d = tree_difference(va, vb, here)
            if d:
                return d
        return None
    if isinstance(kwire, list) and isinstance(kio, list):
        if len(kwire) != len(kio):
            return f"{path}: {len(kwire)} items vs kio {len(kio)}"
        for i, (a, b) in enumerate(zip(kwire, kio, strict=True)):
            d = tree_difference(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    if type(kwire) is bool or type(kio) is bool:
        return None if (kwire is kio) else f"{path}: {kwire!r} != kio {kio!r}"
    if kwire != kio:
        return f"{path}: {kwire!r} != kio {kio!r}"
    return None


def _is_struct(tree: Any) -> bool:
    return (
        isinstance(tree, list)
        and all(isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) for t in tree)
        and (not tree or isinstance(tree[0], tuple))
    )


# ---------------------------------------------------------------------------------------------
# kwire messages from canonical trees


def build_kwire(cls: Any, tree: list[tuple[str, Any]], version: int) -> Any:
    """A kwire ``cls`` instance whose fields at ``version`` hold ``tree``'s values (others keep
    their defaults); ``tree`` comes from ``canon_kio``."""
    fields = _kwire_fields(cls, version)
    if len(fields) != len(tree):
        raise ValueError(f"{cls.__name__} v{version}: {len(fields)} fields vs {len(tree)} in tree")
    kwargs: dict[str, Any] = {}
    for f, (name, value) in zip(fields, tree, strict=True):
        if not names_match(f.name, name):
            raise ValueError(f"{cls.__name__}.{f.name} v{version}: tree has {name}")
        kwargs[f.attr] = _build_value(f, value, version)
    return cls(**kwargs)


def _build_value(f: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if f.is_array:
        return [_build_elem(f, v, version) for v in value]
    return _build_elem(f, value, version)


def _build_elem(f: Any, value: Any, version: int) -> Any:
    if f.element == "struct":
        return build_kwire(f.struct, value, version)
    return value
