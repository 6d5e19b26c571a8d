"""Varint integer fields: a KIP proposal Kafka never shipped, as a kwire extension.

Approach: an integer field (or array of integers) may be written as a zigzag varint
(``varint16/32/64``, as record fields use) or an unsigned varint (``unsigned_varint16/32/64``,
LEB128 without zigzag) instead of Kafka's fixed width, at the versions a spec says. The extension
plugs into the core through ``kwire.protocol._extension_points``: each wire type is one
``VarintCodec`` registered as a field encoding (the generated code's reads and writes, the
reference decoder's checked read, the encode check), whose ``emit`` hook, a ``VarintEmitter``,
writes what the code generator asks for (one-byte values and small arrays of one-byte elements
inline, runs of consecutive varint fields in one slice and one ``bytes.translate`` through the
zigzag tables, the rest through the codec, bound to a module constant ``_V_<wire>``); and
``VarintForms`` reads the two spec forms the proposal leaves open into ``FieldSpec.encodings``:

- Form A, ``"type"`` as an object mapping version ranges to types
  (``{"0-9": "int32", "10+": "unsigned_varint32"}``) or a varint type name used in every version
  (``"type": "varint32"``). The logical type (the Python value's range) is the widest any version
  uses: ``int16``, ``int32`` or ``int64``.
- Form B, a separate ``"encoding"`` property mapping version ranges to ``fixedN``, ``varintN``
  (zigzag) or ``unsignedN`` (N = 16, 32, 64, at most the width of the logical ``type``), keeping
  the logical ``type``.

An ``unsigned_varintN`` holds the non-negative half of ``intN`` (a Java ``int`` written as an
unsigned varint), so every wire type of a field fits its logical type. Arrays of integers
(``[]int32``) take the same forms; the encoding applies to each element. A spec that uses neither
form behaves exactly as Kafka's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Final

from kwire._wire import write_uvarint
from kwire.protocol._extension_points import (
    CheckedReader,
    CodeWriter,
    ModuleWriter,
    register_field_encoding,
    register_field_spec_form,
)
from kwire.protocol._primitives import Malformed
from kwire.protocol._spec._versions import VersionRange

__all__ = [
    "ENCODING_NAMES",
    "MAX_VARINT_BYTES",
    "UNZIGZAG_EVEN",
    "VARINTS",
    "VARINT_TYPES",
    "WIRE_INT_TYPES",
    "ZIGZAG_SMALL",
    "VarintCodec",
    "VarintEmitter",
    "VarintForms",
    "check_default",
    "encoded_size",
    "is_unsigned",
    "parse_encoding_form",
    "parse_type_form",
    "wire_range",
]

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


#: ``bytes.translate`` tables for arrays of one-byte zigzag varints: values 0..63 <-> their zigzag
#: bytes; anything else (negative values, odd bytes) maps to 0xFF, which ``isascii()`` then catches.
ZIGZAG_SMALL: Final = bytes((x << 1) if x < 0x40 else 0xFF for x in range(256))
UNZIGZAG_EVEN: Final = bytes((x >> 1) if x < 0x80 and not x & 1 else 0xFF for x in range(256))


class VarintCodec:
    """One varint wire type (``varint32``, ``unsigned_varint64``...): single values and arrays.

    Readers raise ``Malformed`` (or ``IndexError`` when the bytes run out) for an overlong varint or
    a value outside the wire type's range; the careful decoder then says where. Writers raise
    ``Malformed`` for a value they cannot hold (negative into an unsigned varint, out of range);
    ``check_encodable`` then names the field.
    """

    __slots__ = ("emit", "hi", "lo", "max_bytes", "name", "unsigned")

    def __init__(self, name: str) -> None:
        self.name = name
        self.unsigned = is_unsigned(name)
        self.lo, self.hi = wire_range(name)
        self.max_bytes = MAX_VARINT_BYTES[VARINT_TYPES[name]]
        #: The generated code for this wire type (the code generator's hook).
        self.emit = VarintEmitter(name)

    def _raw(self, b: Any, p: int) -> tuple[int, int]:
        result = 0
        shift = 0
        limit = 7 * self.max_bytes
        while True:
            x = b[p]
            p += 1
            result |= (x & 0x7F) << shift
            if x < 0x80:
                return result, p
            shift += 7
            if shift >= limit:
                raise Malformed

    def read(self, b: Any, p: int) -> tuple[int, int]:
        x = b[p]
        if x < 0x80:
            return (x if self.unsigned else (x >> 1) ^ -(x & 1)), p + 1
        y = b[p + 1]
        if y < 0x80:  # two bytes: always in range
            n = (x & 0x7F) | (y << 7)
            return (n if self.unsigned else (n >> 1) ^ -(n & 1)), p + 2
        n, p = self._raw(b, p)
        if not self.unsigned:
            n = (n >> 1) ^ -(n & 1)
        if not self.lo <= n <= self.hi:
            raise Malformed
        return n, p

    def read_array(self, b: Any, p: int, n: int) -> tuple[list[int], int]:
        e = p + n
        chunk = bytes(b[p:e])
        if len(chunk) == n and chunk.isascii():  # every element one byte
            if self.unsigned:
                return list(chunk), e
            small = chunk.translate(UNZIGZAG_EVEN)
            if small.isascii():  # every value 0..63
                return list(small), e
            return [(x >> 1) ^ -(x & 1) for x in chunk], e
        out: list[int] = []
        ap = out.append
        read = self.read
        if self.unsigned:
            for _ in range(n):
                x = b[p]
                if x < 0x80:
                    ap(x)
                    p += 1
                else:
                    x, p = read(b, p)
                    ap(x)
        else:
            for _ in range(n):
                x = b[p]
                if x < 0x80:
                    ap((x >> 1) ^ -(x & 1))
                    p += 1
                else:
                    x, p = read(b, p)
                    ap(x)
        return out, p

    def read_checked(self, reader: CheckedReader, pos: int, end: int, path: str) -> tuple[int, int]:
        """The reference decoder's read: range-checked, failures name the field."""
        raw, after = reader.uvarint(pos, end, path, self.name, self.max_bytes, self.name)
        value = raw if self.unsigned else (raw >> 1) ^ -(raw & 1)
        if not self.lo <= value <= self.hi:
            raise reader.fail(f"{self.name} value {value} is out of range", pos, path)
        return value, after

    def why_unwritable(self, v: int) -> str | None:
        if v < 0 and self.unsigned:
            return f"negative value {v} cannot be written as {self.name}"
        if not self.lo <= v <= self.hi:
            return f"{v} is out of range for {self.name}"
        return None

    def write(self, out: bytearray, v: int) -> None:
        if not self.lo <= v <= self.hi:
            raise Malformed
        if not self.unsigned:
            v = (v << 1) ^ (v >> 63) if v < 0 else v << 1
        if v < 0x80:
            out.append(v)
        else:
            write_uvarint(out, v)

    def write_array(self, out: bytearray, a: Any) -> None:
        # every element one byte: bytes() takes 0..255 only, isascii() then means < 0x80
        try:
            raw = bytes(a)
        except (ValueError, TypeError):
            raw = None
        if raw is not None:
            if not self.unsigned:
                raw = raw.translate(ZIGZAG_SMALL)
            if raw.isascii():
                out += raw
                return
        if not self.unsigned:
            try:
                raw = bytes([(v << 1) ^ (v >> 63) for v in a])
            except (ValueError, TypeError):
                raw = None
            if raw is not None and raw.isascii():  # small negative values
                out += raw
                return
        write = self.write
        if self.unsigned:
            for v in a:
                if 0 <= v < 0x80:
                    out.append(v)
                else:
                    write(out, v)
        else:
            for v in a:
                if 0 <= v < 0x40:
                    out.append(v << 1)
                else:
                    write(out, v)


#: This module, as generated code imports it.
_MODULE: Final = __name__


class VarintEmitter:
    """The generated code for one varint wire type: the ``FieldEmitter`` of its ``VarintCodec``.

    One-byte values are read and written inline (the zigzag step written out), and so are compact
    arrays of one-byte elements and runs of consecutive varint fields whose values are all one byte
    (one slice, and ``UNZIGZAG_EVEN`` / ``ZIGZAG_SMALL`` for zigzag); anything else goes through the
    codec, bound to the module constant ``_V_<wire>`` (``VARINTS["<wire>"]``), which also checks
    ranges and overlong encodings.
    """

    __slots__ = ("name", "unsigned")

    def __init__(self, name: str) -> None:
        self.name = name
        self.unsigned = is_unsigned(name)

    @property
    def run_key(self) -> object:
        # consecutive fields form a run when all are zigzag or all unsigned (widths may differ)
        return (_MODULE, self.unsigned)

    def _codec(self, mod: ModuleWriter) -> str:
        mod.use(_MODULE, "VARINTS")
        return mod.table(f"_V_{self.name}", f'VARINTS["{self.name}"]')

    def decode_declarations(self) -> tuple[str, ...]:
        return ("x: Any",)

    def decode(self, code: CodeWriter, mod: ModuleWriter, target: str, b: str) -> None:
        # one-byte values inline; longer ones (and range checks) through the codec
        code(f"x = {b}[p]")
        code("if x < 0x80:")
        with code.block():
            code(f"{target} = x" if self.unsigned else f"{target} = (x >> 1) ^ -(x & 1)")
            code("p += 1")
        code("else:")
        with code.block():
            code(f"{target}, p = {self._codec(mod)}.read({b}, p)")

    def decode_array(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        target: str,
        b: str,
        *,
        compact: bool,
        nullable: bool,
        declare: bool,
    ) -> bool:
        if not compact or nullable:
            return False
        # small counts of one-byte elements inline (one slice); the rest through the codec
        codec = self._codec(mod)
        if declare:
            code(f"{target}: list[Any]")
        code(f"n = {b}[p]")
        code("x = None")
        code("if 0 < n < 0x80:")
        with code.block():
            code(f"x = {b}[p + 1 : p + n]")
            code(
                "if len(x) != n - 1 or not "
                "(x.isascii() if type(x) is bytes else bytes(x).isascii()):"
            )
            with code.block():
                code("x = None")
        code("if x is None:")
        with code.block():
            code(f"n, p = read_compact_array_length({b}, p)")
            code(f"{target}, p = {codec}.read_array({b}, p, n)")
        code("else:")
        with code.block():
            if self.unsigned:
                code(f"{target} = list(x)")
            else:
                mod.use(_MODULE, "UNZIGZAG_EVEN")
                code("y = bytes(x).translate(UNZIGZAG_EVEN)")
                code(f"{target} = list(y) if y.isascii() else [(z >> 1) ^ -(z & 1) for z in x]")
            code("p += n")
        return True

    def decode_elements(self, code: CodeWriter, mod: ModuleWriter, target: str, b: str) -> None:
        code(f"{target}, p = {self._codec(mod)}.read_array({b}, p, n)")

    def decode_run(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        targets: Sequence[str],
        b: str,
        one_by_one: Callable[[], None],
    ) -> None:
        # when every value is a single byte (the common case), one slice and one translate
        k = len(targets)
        if self.unsigned:
            code(f"y = bytes({b}[p : p + {k}])")
        else:
            mod.use(_MODULE, "UNZIGZAG_EVEN")
            code(f"y = bytes({b}[p : p + {k}]).translate(UNZIGZAG_EVEN)")
        code(f"if len(y) == {k} and y.isascii():")
        with code.block():
            code(f"({', '.join(targets)}) = y")
            code(f"p += {k}")
        code("else:")
        with code.block():
            one_by_one()

    def encode(self, code: CodeWriter, mod: ModuleWriter, expr: str, out: str) -> None:
        # one-byte values inline; the codec checks the range of the others
        code(f"iv = {expr}")
        if self.unsigned:
            code("if 0 <= iv < 0x80:")
            with code.block():
                code(f"{out}.append(iv)")
        else:
            code("if 0 <= iv < 0x40:")
            with code.block():
                code(f"{out}.append(iv << 1)")
        code("else:")
        with code.block():
            code(f"{self._codec(mod)}.write({out}, iv)")

    def encode_elements(self, code: CodeWriter, mod: ModuleWriter, out: str, compact: bool) -> None:
        if compact:
            code("n = len(a)")
            code("if n < 0x7F:")
            with code.block():
                code(f"{out}.append(n + 1)")
            code("else:")
            with code.block():
                code(f"write_uvarint({out}, n + 1)")
        else:
            code(f"{out} += _I32.pack(len(a))")
        code(f"{self._codec(mod)}.write_array({out}, a)")

    def encode_run(
        self,
        code: CodeWriter,
        mod: ModuleWriter,
        exprs: Sequence[str],
        out: str,
        one_by_one: Callable[[], None],
    ) -> None:
        # all one-byte values in one bytes() (and a translate for zigzag); otherwise value by value
        # (the codecs then check the ranges)
        values = ", ".join(exprs)
        code("try:")
        with code.block():
            if self.unsigned:
                code(f"iv = bytes(({values},))")
            else:
                mod.use(_MODULE, "ZIGZAG_SMALL")
                code(f"iv = bytes(({values},)).translate(ZIGZAG_SMALL)")
        code("except (ValueError, TypeError):")
        with code.block():
            code('iv = b"\\xff"')
        code("if iv.isascii():")
        with code.block():
            code(f"{out} += iv")
        code("else:")
        with code.block():
            one_by_one()


class VarintForms:
    """The spec side: reads form A and form B of a field into ``(logical type, encodings)``."""

    keys: Final = frozenset({"encoding"})

    def parse(
        self,
        fail: Fail,
        obj: dict[str, Any],
        versions: VersionRange,
        parse_type: Callable[[str], Any],
    ) -> tuple[str, tuple[tuple[VersionRange, str], ...], str] | None:
        """``(logical type text, encodings, form)`` when the field uses a varint form, else None.

        ``parse_type`` is the core's ``FieldType.parse`` (it raises ``ValueError``)."""
        type_raw = obj.get("type")
        if isinstance(type_raw, dict) or (
            isinstance(type_raw, str) and type_raw.strip().removeprefix("[]") in VARINT_TYPES
        ):
            if "encoding" in obj:
                raise fail(
                    "mixes both varint forms: a version-dependent or varint type and an "
                    "encoding property; use one"
                )
            type_text, encodings = parse_type_form(fail, type_raw, versions)
            return type_text, encodings, "type"
        if "encoding" in obj and isinstance(type_raw, str):
            try:
                parse_type(type_raw)
            except ValueError as exc:
                raise fail(str(exc)) from None
            return (
                type_raw,
                parse_encoding_form(fail, obj["encoding"], type_raw, versions),
                "encoding",
            )
        return None

    def check_default(
        self, fail: Fail, default: int, encodings: tuple[tuple[VersionRange, str], ...]
    ) -> None:
        check_default(fail, default, encodings)


#: One codec per varint wire type (generated modules that use varint fields import these).
VARINTS: Final[dict[str, VarintCodec]] = {name: VarintCodec(name) for name in VARINT_TYPES}
for _codec in VARINTS.values():
    register_field_encoding(_codec)
register_field_spec_form(VarintForms())
