"""Test helpers shared by kwire's protocol tests (unit, property, fuzz, oracle).

Not used by the library itself. ``instances`` needs hypothesis (a dev dependency), imported lazily.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable
from typing import Any

from kwire.protocol._primitives import INT_RANGES
from kwire.protocol._runtime import KafkaMessage, KafkaStruct, KField
from kwire.protocol.ext.varint_fields import VARINT_TYPES, wire_range

__all__ = ["fast_roundtrip", "instances", "nested", "roundtrip"]


def roundtrip(msg: KafkaMessage, version: int) -> bytes:
    """Assert ``decode(encode(msg)) == msg`` and ``encode(decode(b)) == b``; return the bytes."""
    data = msg.encode(version)
    back = type(msg).decode(data, version)
    assert back == msg, f"{type(msg).__name__} v{version}: {back!r} != {msg!r}"
    again = back.encode(version)
    assert again == data, f"{type(msg).__name__} v{version}: re-encoding differs"
    return data


def fast_roundtrip(msg: KafkaMessage, version: int) -> bytes:
    """``roundtrip`` through the generated functions alone, with no fallback to the reference.

    Calls the version's generated encoder and decoder directly, so a bug in generated code fails
    here instead of being hidden by ``decode``'s careful re-decode. Returns the bytes.
    """
    cls = type(msg)
    name = f"{cls.__name__} v{version}"
    out = bytearray()
    cls._encoders[version](msg, out)
    data = bytes(out)
    back, end = cls._decoders[version](data, 0)
    assert end == len(data), f"{name}: the generated decoder stopped at {end} of {len(data)}"
    assert back == msg, f"{name}: {back!r} != {msg!r}"
    again = bytearray()
    cls._encoders[version](back, again)
    assert again == data, f"{name}: re-encoding with the generated encoder differs"
    # a memoryview input takes the same generated code with other indexing: check it too
    view_back, _ = cls._decoders[version](memoryview(data), 0)
    assert view_back == msg, f"{name}: decoding a memoryview differs"
    return data


def nested(cls: type[KafkaStruct], attr: str) -> Any:
    """The struct class that field ``attr`` of ``cls`` holds."""
    for f in cls.__kafka_fields__:
        if f.attr == attr and f.struct is not None:
            return f.struct
    raise KeyError(attr)


def random_instance(
    cls: type[KafkaStruct],
    version: int,
    rng: random.Random,
    *,
    max_items: int = 3,
    unknown_tags: bool = True,
) -> Any:
    """A random ``cls`` instance that can be written at ``version`` (fast; no hypothesis).

    Fields absent from ``version`` keep their defaults; nullable fields are sometimes null;
    tagged fields are sometimes default (then not written) and sometimes set; in flexible
    versions some structs carry unknown tags that do not collide with known ones.
    """
    flexible = version in cls.__kafka_message__.flexible

    def element(f: KField) -> Any:
        t = f.element
        if t == "struct":
            assert f.struct is not None
            return struct_of(f.struct)
        if t in INT_RANGES:
            lo, hi = INT_RANGES[t]
            if f.encodings:  # a varint field (kwire extension): the range of its wire type
                wire = f.wire(version)
                lo, hi = wire_range(wire) if wire in VARINT_TYPES else INT_RANGES[wire]
            pick = rng.random()
            if pick < 0.3:
                return rng.choice((lo, hi, 0, -1 if lo < 0 else 1))
            if pick < 0.6:
                return rng.randint(-100 if lo < 0 else 0, 100)
            return rng.randint(lo, hi)
        if t == "bool":
            return rng.random() < 0.5
        if t == "float64":
            return rng.choice(
                (0.0, -1.5, 1e300, -math.inf, math.inf, 5e-324, rng.uniform(-1e9, 1e9))
            )
        if t == "uuid":
            return uuid.UUID(int=rng.getrandbits(128))
        if t == "string":
            alphabet = "abcXYZ09 _-é中𝄞"
            return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        if t == "bytes":
            return rng.randbytes(rng.randint(0, 8))
        if t == "records":
            return memoryview(rng.randbytes(rng.randint(0, 24)))
        raise AssertionError(t)

    def value(f: KField) -> Any:
        if version in f.nullable and rng.random() < 0.2:
            return None
        if f.tag is not None and version in f.tagged and rng.random() < 0.4:
            return f.make_default()
        if f.is_array:
            return [element(f) for _ in range(rng.randint(0, max_items))]
        return element(f)

    def struct_of(c: type[KafkaStruct]) -> Any:
        kwargs: dict[str, Any] = {}
        tags: set[int] = set()
        for f in c.__kafka_fields__:
            if f.tag is not None:
                tags.add(f.tag)  # unknown tags must not reuse any field's tag
            if version not in f.versions:
                continue
            if f.tag is not None:
                tags.add(f.tag)
            kwargs[f.attr] = value(f)
        unknown = None
        if unknown_tags and flexible and rng.random() < 0.25:
            unknown = {}
            for _ in range(rng.randint(1, 3)):
                tag = rng.choice((rng.randint(0, 40), rng.randint(0, 2**31 - 1)))
                if tag not in tags:
                    unknown[tag] = rng.randbytes(rng.randint(0, 5))
        # the keywords are the fields the metadata lists, which mypy cannot see from the class
        make: Callable[..., KafkaStruct] = c
        return make(**kwargs, unknown_tags=unknown or None)

    return struct_of(cls)


def instances(
    cls: type[KafkaStruct], version: int, *, max_items: int = 3, unknown_tags: bool = True
) -> Any:
    """A hypothesis strategy of ``random_instance``s (seeded by hypothesis, so failures repeat)."""
    from hypothesis import strategies as st

    return st.randoms(use_true_random=False).map(
        lambda rng: random_instance(
            cls, version, rng, max_items=max_items, unknown_tags=unknown_tags
        )
    )
