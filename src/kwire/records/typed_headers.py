"""Typed header values (KIP-82's draft): a kwire extension, opt in only, beside the records.

Approach: Kafka shipped headers as ``(String key, byte[] value)``; the draft's typed values never
shipped. This codec lets applications put typed values in ordinary v2 header *values*: one type
byte, then the value, big-endian like Java's ``DataOutput``::

    0x00 boolean (1 byte, 0 or 1)   0x04 int    (4 bytes)   0x08 string (UTF-8, rest of the bytes)
    0x01 byte    (1 byte, signed)   0x05 long   (8 bytes)   0x09 byte[] (rest of the bytes)
    0x02 char    (2 bytes, UTF-16)  0x06 float  (4 bytes, IEEE 754)
    0x03 short   (2 bytes)          0x07 double (8 bytes, IEEE 754)

The draft's "null and boolean ... zero length" line is ambiguous; kwire keeps Kafka's own null
header value (length -1) for null and writes booleans as one byte. Nothing in kwire applies this
codec unless it is called: ``read_batches`` always returns raw header bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from enum import IntEnum
from typing import Final, NamedTuple

from kwire.errors import DecodeError, EncodeError

__all__ = [
    "HeaderType",
    "TypedValue",
    "decode_headers",
    "decode_value",
    "encode_headers",
    "encode_value",
]


class HeaderType(IntEnum):
    """The draft's type byte."""

    BOOLEAN = 0x00
    BYTE = 0x01
    CHAR = 0x02
    SHORT = 0x03
    INT = 0x04
    LONG = 0x05
    FLOAT = 0x06
    DOUBLE = 0x07
    STRING = 0x08
    BYTES = 0x09


TypedPython = bool | int | float | str | bytes


class TypedValue(NamedTuple):
    """A decoded typed header value (``value`` is ``bytes`` for BYTES, ``str`` for CHAR/STRING)."""

    type: HeaderType
    value: TypedPython


_FIXED: Final = {
    HeaderType.BYTE: struct.Struct(">b"),
    HeaderType.SHORT: struct.Struct(">h"),
    HeaderType.INT: struct.Struct(">i"),
    HeaderType.LONG: struct.Struct(">q"),
    HeaderType.FLOAT: struct.Struct(">f"),
    HeaderType.DOUBLE: struct.Struct(">d"),
}
_INT_RANGES: Final = {
    HeaderType.BYTE: (-(2**7), 2**7 - 1),
    HeaderType.SHORT: (-(2**15), 2**15 - 1),
    HeaderType.INT: (-(2**31), 2**31 - 1),
    HeaderType.LONG: (-(2**63), 2**63 - 1),
}


def _infer(value: object) -> HeaderType:
    if isinstance(value, bool):
        return HeaderType.BOOLEAN
    if isinstance(value, int):
        return HeaderType.LONG
    if isinstance(value, float):
        return HeaderType.DOUBLE
    if isinstance(value, str):
        return HeaderType.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return HeaderType.BYTES
    raise EncodeError(f"no typed header type for a {type(value).__name__}")


def encode_value(value: object, type: HeaderType | int | None = None) -> bytes:
    """Encode one typed value; ``type`` defaults from the Python type.

    bool -> BOOLEAN, int -> LONG, float -> DOUBLE, str -> STRING, bytes-like -> BYTES; a
    ``TypedValue`` keeps its own type. Pass ``type`` for BYTE, SHORT, INT, CHAR or FLOAT.
    """
    if isinstance(value, TypedValue):
        type, value = value.type, value.value
    kind = _infer(value) if type is None else HeaderType(type)
    tag = bytes((kind,))
    if kind == HeaderType.BOOLEAN:
        if not isinstance(value, bool):
            raise EncodeError(f"BOOLEAN needs a bool, not {value!r}")
        return tag + (b"\x01" if value else b"\x00")
    if kind in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise EncodeError(f"{kind.name} needs an int, not {value!r}")
        low, high = _INT_RANGES[kind]
        if not low <= value <= high:
            raise EncodeError(f"{value} does not fit a {kind.name}")
        return tag + _FIXED[kind].pack(value)
    if kind in (HeaderType.FLOAT, HeaderType.DOUBLE):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EncodeError(f"{kind.name} needs a float, not {value!r}")
        try:
            return tag + _FIXED[kind].pack(float(value))
        except (OverflowError, struct.error):
            raise EncodeError(f"{value} does not fit a {kind.name}") from None
    if kind == HeaderType.CHAR:
        if not isinstance(value, str) or len(value) != 1 or ord(value) > 0xFFFF:
            raise EncodeError(f"CHAR needs one UTF-16 code unit, not {value!r}")
        return tag + ord(value).to_bytes(2, "big")
    if kind == HeaderType.STRING:
        if not isinstance(value, str):
            raise EncodeError(f"STRING needs a str, not {value!r}")
        try:
            return tag + value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(f"STRING is not encodable as UTF-8: {exc}") from None
    if not isinstance(value, bytes | bytearray | memoryview):
        raise EncodeError(f"BYTES needs a bytes-like value, not {value!r}")
    return tag + bytes(value)


def decode_value(data: bytes | bytearray | memoryview) -> TypedValue:
    """Decode one typed value; raises ``DecodeError`` for an unknown type or a bad length."""
    view = memoryview(data)
    if not len(view):
        raise DecodeError("empty typed header value (no type byte)", offset=0)
    try:
        kind = HeaderType(view[0])
    except ValueError:
        raise DecodeError(f"unknown typed header type 0x{view[0]:02x}", offset=0) from None
    body = view[1:]
    if kind == HeaderType.BOOLEAN:
        if len(body) != 1 or body[0] > 1:
            raise DecodeError("BOOLEAN must be one byte, 0 or 1", offset=1)
        return TypedValue(kind, body[0] == 1)
    if kind in _FIXED:
        fixed = _FIXED[kind]
        if len(body) != fixed.size:
            raise DecodeError(f"{kind.name} needs {fixed.size} bytes, not {len(body)}", offset=1)
        return TypedValue(kind, fixed.unpack(body)[0])
    if kind == HeaderType.CHAR:
        if len(body) != 2:
            raise DecodeError(f"CHAR needs 2 bytes, not {len(body)}", offset=1)
        return TypedValue(kind, chr(int.from_bytes(body, "big")))
    if kind == HeaderType.STRING:
        try:
            return TypedValue(kind, str(body, "utf-8"))
        except UnicodeDecodeError as exc:
            raise DecodeError(
                f"STRING is not valid UTF-8: {exc.reason}", offset=1 + exc.start
            ) from None
    return TypedValue(kind, bytes(body))


def encode_headers(
    headers: Mapping[str, object] | Iterable[tuple[str, object]],
) -> list[tuple[str, bytes | None]]:
    """Typed-encode header values for ``BatchBuilder.append(headers=...)``; ``None`` stays null."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(key, None if value is None else encode_value(value)) for key, value in items]


def decode_headers(
    headers: Iterable[tuple[str, bytes | bytearray | memoryview | None]],
) -> list[tuple[str, TypedValue | None]]:
    """Typed-decode the header values of a record (``Record.headers``); null stays ``None``."""
    out: list[tuple[str, TypedValue | None]] = []
    for index, (key, value) in enumerate(headers):
        try:
            out.append((key, None if value is None else decode_value(value)))
        except DecodeError as exc:
            raise DecodeError(
                exc.reason, offset=exc.offset, path=f"headers[{index}]({key!r})"
            ) from None
    return out
