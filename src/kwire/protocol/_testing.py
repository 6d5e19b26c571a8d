"""Test helpers shared by kwire's protocol tests (unit, property, fuzz, oracle).

Not used by the library itself. ``instances`` needs hypothesis (a dev dependency), imported lazily.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from kwire.protocol._runtime import KafkaMessage, KafkaStruct, KField
from kwire.protocol._spec._model import INT_RANGES

__all__ = ["instances", "nested", "roundtrip"]


def roundtrip(msg: KafkaMessage, version: int) -> bytes:
    """Assert ``decode(encode(msg)) == msg`` and ``encode(decode(b)) == b``; return the bytes."""
    data = msg.encode(version)
    back = type(msg).decode(data, version)
    assert back == msg, f"{type(msg).__name__} v{version}: {back!r} != {msg!r}"
    again = back.encode(version)
    assert again == data, f"{type(msg).__name__} v{version}: re-encoding differs"
    return data


def nested(cls: type[KafkaStruct], attr: str) -> Any:
    """The struct class that field ``attr`` of ``cls`` holds."""
    for f in cls.__kafka_fields__:
        if f.attr == attr and f.struct is not None:
            return f.struct
    raise KeyError(attr)


def instances(cls: type[KafkaStruct], version: int, *, max_items: int = 3) -> Any:
    """A hypothesis strategy of random ``cls`` instances that can be written at ``version``.

    Fields absent from ``version`` keep their defaults; nullable fields are sometimes null;
    tagged fields are sometimes default (not written) and sometimes set; in flexible versions
    some structs carry unknown tags that do not collide with known ones.
    """
    from hypothesis import strategies as st

    flexible = version in cls.__kafka_message__.flexible

    def value(f: KField) -> Any:
        strat = st.lists(element(f), max_size=max_items) if f.is_array else element(f)
        if version in f.nullable:
            strat = st.none() | strat
        return strat

    def element(f: KField) -> Any:
        t = f.element
        if t == "struct":
            assert f.struct is not None
            return st.deferred(lambda: struct_of(f.struct))  # type: ignore[arg-type]
        if t in INT_RANGES:
            lo, hi = INT_RANGES[t]
            return st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1])
        if t == "bool":
            return st.booleans()
        if t == "float64":
            return st.floats(allow_nan=False).map(lambda x: 0.0 if x == 0 else x) | st.just(
                math.inf
            )
        if t == "uuid":
            import uuid

            return st.binary(min_size=16, max_size=16).map(lambda b: uuid.UUID(bytes=b))
        if t == "string":
            return st.text(max_size=12)
        if t == "bytes":
            return st.binary(max_size=12)
        if t == "records":
            return st.binary(max_size=24).map(memoryview)
        raise AssertionError(t)

    def struct_of(c: type[KafkaStruct]) -> Any:
        kwargs: dict[str, Any] = {}
        tags: set[int] = set()
        for f in c.__kafka_fields__:
            if version not in f.versions:
                continue
            if f.tag is not None and version in f.tagged:
                tags.add(f.tag)
            kwargs[f.attr] = value(f)
        unknown: Any = st.none()
        if flexible:
            unknown = st.none() | st.dictionaries(
                st.integers(0, 2**31 - 1).filter(lambda t: t not in tags),
                st.binary(max_size=6),
                min_size=1,
                max_size=3,
            )
        return st.builds(lambda ut, **kw: c(**kw, unknown_tags=ut), unknown, **kwargs)

    return struct_of(cls)


def float_bits(x: float) -> bytes:
    return struct.pack(">d", x)
