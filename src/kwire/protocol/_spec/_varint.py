"""kwire extensions of the spec language: varint integer fields (a KIP proposal Kafka never shipped)
and the interleaved tag header of KIP-482's first draft.

Neither is part of Kafka; a spec uses them only by saying so, and a spec that does not behaves
exactly as before.

Varint fields come in the two forms the proposal leaves open, both normalised here into one list of
``(VersionRange, wire type)`` pairs that the model carries as ``FieldSpec.encodings``:

- Form A, ``"type"`` as an object mapping version ranges to types
  (``{"0-9": "int32", "10+": "unsigned_varint32"}``) or a varint type name used in every version
  (``"type": "varint32"``). The logical type (the Python value's range) is the widest any version
  uses: ``int16``, ``int32`` or ``int64``.
- Form B, a separate ``"encoding"`` property mapping version ranges to ``fixedN``, ``varintN``
  (zigzag) or ``unsignedN`` (N = 16, 32, 64, at most the width of the logical ``type``), keeping
  the logical ``type``.

Wire types: ``int16/32/64`` (fixed, big-endian), ``varint16/32/64`` (zigzag, as record fields
use) and ``unsigned_varint16/32/64`` (LEB128, no zigzag). An ``unsigned_varintN`` holds the
non-negative half of ``intN`` (a Java ``int`` written as an unsigned varint), so every wire type
of a field fits its logical type. Arrays of integers (``[]int32``) take the same forms; the
encoding applies to each element.

The tag header: ``"tagHeader": "interleaved"`` at the top of a spec file (or
``load_specs(..., tag_header="interleaved")``) writes each tagged field's header as one unsigned
varlong whose even bits are the length and odd bits the tag, as KIP-482's first draft had it,
instead of KIP-482's two unsigned varints.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Final

from kwire.protocol._spec._versions import VersionRange

__all__ = [
    "ENCODING_NAMES",
    "TAG_HEADERS",
    "VARINT_TYPES",
    "WIRE_INT_TYPES",
    "encoded_size",
    "interleave",
    "is_unsigned",
    "parse_encoding_form",
    "parse_type_form",
    "uninterleave",
    "wire_range",
]

#: Tag-header layouts: KIP-482 as shipped, and the interleaved varlong of KIP-482's first draft.
TAG_HEADERS: Final = ("kip482", "interleaved")

#: Varint wire types -> bit width.
VARINT_TYPES: Final[dict[str, int]] = {
    "varint16": 16,
    "varint32": 32,
    "varint64": 64,
    "unsigned_varint16": 16,
    "unsigned_varint32": 32,
    "unsigned_varint64": 64,
}
#: Fixed-width integer types a varint field may use in other versions -> bit width.
_FIXED_WIDTHS: Final[dict[str, int]] = {"int16": 16, "int32": 32, "int64": 64}
#: Every integer wire type an encoded field may use at a version.
WIRE_INT_TYPES: Final[dict[str, int]] = {**_FIXED_WIDTHS, **VARINT_TYPES}
#: Form B encoding names -> wire type.
ENCODING_NAMES: Final[dict[str, str]] = {
    "fixed16": "int16",
    "fixed32": "int32",
    "fixed64": "int64",
    "varint16": "varint16",
    "varint32": "varint32",
    "varint64": "varint64",
    "unsigned16": "unsigned_varint16",
    "unsigned32": "unsigned_varint32",
    "unsigned64": "unsigned_varint64",
}
#: Longest valid encoding of each varint width, in bytes.
MAX_VARINT_BYTES: Final[dict[int, int]] = {16: 3, 32: 5, 64: 10}


def is_unsigned(wire: str) -> bool:
    return wire.startswith("unsigned_varint")


def wire_range(wire: str) -> tuple[int, int]:
    """The values a wire type can carry (``unsigned_varintN``: the non-negative half of ``intN``)."""
    bits = WIRE_INT_TYPES[wire]
    hi = 2 ** (bits - 1) - 1
    return (0, hi) if is_unsigned(wire) else (-hi - 1, hi)


def encoded_size(wire: str, value: int) -> int:
    """Bytes ``value`` takes in wire type ``wire``."""
    bits = WIRE_INT_TYPES[wire]
    if wire in _FIXED_WIDTHS:
        return bits // 8
    n = value if is_unsigned(wire) else ((value << 1) ^ (value >> 63) if value < 0 else value << 1)
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


Fail = Callable[[str], Exception]


def _ranges(
    fail: Fail, raw: dict[str, Any], versions: VersionRange, what: str
) -> list[tuple[VersionRange, Any]]:
    """Parse ``{"0-9": x, "10+": y}``; the ranges must cover ``versions`` without overlap."""
    if not raw:
        raise fail(f"{what} must map at least one version range")
    parsed: list[tuple[VersionRange, Any]] = []
    for key, value in raw.items():
        try:
            r = VersionRange.parse(key)
        except ValueError as exc:
            raise fail(f"{what}: {exc}") from None
        if r.empty:
            raise fail(f"{what}: the range {key!r} is empty")
        if r.intersect(versions).empty:
            raise fail(f"{what}: the range {key!r} is outside the field's versions {versions}")
        parsed.append((r, value))
    parsed.sort(key=lambda item: item[0].lowest)
    for (a, _), (b, _) in itertools.pairwise(parsed):
        if b.lowest <= a.highest:
            raise fail(f"{what}: the ranges {a} and {b} overlap")
    covered = versions.lowest
    for r, _ in parsed:
        if r.highest < versions.lowest:
            continue
        if r.lowest > covered:
            break
        covered = r.highest + 1
        if covered > versions.highest:
            break
    if covered <= versions.highest:
        raise fail(f"{what}: version {covered} of the field's versions {versions} is not covered")
    return [(r.intersect(versions), v) for r, v in parsed]


def _split_array(text: str) -> tuple[bool, str]:
    s = text.strip()
    return (True, s[2:]) if s.startswith("[]") else (False, s)


def parse_type_form(
    fail: Fail, raw: Any, versions: VersionRange
) -> tuple[str, tuple[tuple[VersionRange, str], ...]]:
    """Form A: ``type`` as a version map (or a varint type name). Returns the logical type text
    (``int32``, ``[]int64``...) and the per-range wire types."""
    if isinstance(raw, str):
        items = [(versions, raw)]
    elif isinstance(raw, dict):
        items = _ranges(fail, raw, versions, "type")
    else:
        raise fail(f"type must be a string or an object of version ranges, not {raw!r}")
    arrays: set[bool] = set()
    out: list[tuple[VersionRange, str]] = []
    for r, value in items:
        if not isinstance(value, str):
            raise fail(f"type for versions {r} must be a string, not {value!r}")
        is_array, name = _split_array(value)
        if name not in WIRE_INT_TYPES:
            raise fail(
                f"type {value!r} for versions {r}: a version-dependent type must be one of "
                f"{', '.join(WIRE_INT_TYPES)} (or an array of one)"
            )
        arrays.add(is_array)
        out.append((r, name))
    if len(arrays) > 1:
        raise fail("a version-dependent type cannot mix arrays and single values")
    width = max(WIRE_INT_TYPES[w] for _, w in out)
    logical = ("[]" if arrays.pop() else "") + f"int{width}"
    return logical, tuple(out)


def parse_encoding_form(
    fail: Fail, raw: Any, logical: str, versions: VersionRange
) -> tuple[tuple[VersionRange, str], ...]:
    """Form B: ``encoding`` as a version map (or one encoding for every version)."""
    _, base = _split_array(logical)
    if base not in _FIXED_WIDTHS:
        raise fail(
            f"encoding is only valid on int16, int32 and int64 fields (and arrays), not {logical}"
        )
    if isinstance(raw, str):
        items = [(versions, raw)]
    elif isinstance(raw, dict):
        items = _ranges(fail, raw, versions, "encoding")
    else:
        raise fail(f"encoding must be a string or an object of version ranges, not {raw!r}")
    out: list[tuple[VersionRange, str]] = []
    for r, value in items:
        wire = ENCODING_NAMES.get(value) if isinstance(value, str) else None
        if wire is None:
            raise fail(
                f"encoding {value!r} for versions {r}: use one of {', '.join(ENCODING_NAMES)}"
            )
        if WIRE_INT_TYPES[wire] > _FIXED_WIDTHS[base]:
            raise fail(f"encoding {value} for versions {r} is wider than the field's type {base}")
        out.append((r, wire))
    return tuple(out)


def check_default(
    fail: Fail, default: int, encodings: tuple[tuple[VersionRange, str], ...]
) -> None:
    """The default must be writable in every encoding (no unsigned encoding of a negative one)."""
    for r, wire in encodings:
        lo, hi = wire_range(wire)
        if default < 0 and is_unsigned(wire):
            raise fail(
                f"the default {default} is negative, so versions {r} cannot use the unsigned "
                f"encoding {wire}"
            )
        if not lo <= default <= hi:
            raise fail(f"the default {default} does not fit {wire} (versions {r})")


# ------------------------------------------------------------------------------------------------
# The interleaved tag header of KIP-482's first draft: even bits = length, odd bits = tag

_M = (
    (0x0000FFFF0000FFFF, 16),
    (0x00FF00FF00FF00FF, 8),
    (0x0F0F0F0F0F0F0F0F, 4),
    (0x3333333333333333, 2),
    (0x5555555555555555, 1),
)


def _spread(x: int) -> int:
    """Move bit i of a 32-bit value to bit 2i."""
    for mask, shift in _M:
        x = (x | (x << shift)) & mask
    return x


def _gather(x: int) -> int:
    """Inverse of ``_spread``: bit 2i to bit i."""
    x &= 0x5555555555555555
    x = (x | (x >> 1)) & 0x3333333333333333
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0F
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FF
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFF
    return (x | (x >> 16)) & 0xFFFFFFFF


def interleave(tag: int, length: int) -> int:
    """Seed 003's tag header value: length bits at even positions, tag bits at odd ones."""
    if not (0 <= tag <= 0xFFFFFFFF and 0 <= length <= 0xFFFFFFFF):
        raise ValueError(f"tag {tag} and length {length} must be 32-bit unsigned values")
    return _spread(length) | (_spread(tag) << 1)


def uninterleave(header: int) -> tuple[int, int]:
    """``(tag, length)`` from an interleaved tag header."""
    return _gather(header >> 1), _gather(header)
