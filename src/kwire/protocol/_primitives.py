"""Kafka's wire primitives, named with Kafka's type words: what the generated codecs call.

Approach: one small function per variable-length type of Kafka's protocol (``Type.STRING``,
``COMPACT_NULLABLE_STRING``, ``COMPACT_ARRAY``...), in the words of Kafka's ``Readable`` and
``Writable``: ``read_compact_string``, ``read_nullable_bytes``, ``read_compact_array_length``,
``write_uvarint``, ``read_tagged_fields``, ... Readers take ``(buffer, position)`` and return
``(value, new position)``; writers append to a ``bytearray``. Fixed-width fields need no helper (the
generated code packs runs of them with one ``struct.Struct``); arrays of one fixed-width type go
through ``ARRAYS`` (count and elements in one unpack).

The readers keep no bookkeeping: on short or malformed bytes they raise whatever Python raises
(``struct.error``, ``IndexError``, ``UnicodeDecodeError``) or ``Malformed`` for a rule violation
(``FAST_ERRORS`` lists them), and the caller re-decodes with the reference decoder
(``kwire.protocol._reference``), which names the field and the byte offset.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, ClassVar, Final

from kwire._wire import read_uvarint
from kwire._wire import write_uvarint as _write_uvarint

__all__ = [
    "ARRAYS",
    "FAST_ERRORS",
    "MAX_STRING",
    "FixedArray",
    "Malformed",
    "RecordsReference",
    "read_array_length",
    "read_bytes",
    "read_compact_array_length",
    "read_compact_bytes",
    "read_compact_nullable_array_length",
    "read_compact_nullable_bytes",
    "read_compact_nullable_records",
    "read_compact_nullable_string",
    "read_compact_records",
    "read_compact_string",
    "read_nullable_array_length",
    "read_nullable_bytes",
    "read_nullable_records",
    "read_nullable_string",
    "read_records",
    "read_string",
    "read_tagged_fields",
    "read_unknown_tagged_fields",
    "read_uuid_array",
    "read_uvarint",
    "uuid_from_bytes",
    "write_bytes",
    "write_compact_bytes",
    "write_compact_nullable_bytes",
    "write_compact_nullable_string",
    "write_compact_records",
    "write_compact_string",
    "write_nullable_bytes",
    "write_nullable_string",
    "write_records",
    "write_string",
    "write_tagged_fields",
    "write_uvarint",
]

#: The range of each integer type of the spec language (the model checks defaults against it, the
#: reference codec values; here so the runtime needs no spec model).
INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

#: Kafka's longest string (``Short.MAX_VALUE`` bytes of UTF-8).
MAX_STRING: Final = 0x7FFF

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_new: Final[Any] = object.__new__


class Malformed(Exception):
    """Raised by the fast path for a rule violation; the careful decoder then says what and where."""


# Exceptions the fast decoder may raise on bad input (anything else escaping it is a bug).
FAST_ERRORS: Final = (
    struct.error,
    IndexError,
    ValueError,  # includes UnicodeDecodeError and DecodeError
    TypeError,
    KeyError,
    OverflowError,
    MemoryError,
    Malformed,
)


# ----------------------------------------------------------------------------------------------
# Readers (raise anything on bad input; the caller falls back to the reference decoder)


def read_string(b: Any, p: int) -> tuple[str, int]:
    n = (b[p] << 8) | b[p + 1]
    if n >= 0x8000:
        raise Malformed
    p += 2
    e = p + n
    if e > len(b):
        raise Malformed
    return str(b[p:e], "utf-8"), e


def read_nullable_string(b: Any, p: int) -> tuple[str | None, int]:
    n = (b[p] << 8) | b[p + 1]
    if n >= 0x8000:
        if n == 0xFFFF:
            return None, p + 2
        raise Malformed
    p += 2
    e = p + n
    if e > len(b):
        raise Malformed
    return str(b[p:e], "utf-8"), e


def read_compact_string(b: Any, p: int) -> tuple[str, int]:
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    if n == 0 or n > MAX_STRING + 1:
        raise Malformed
    e = p + n - 1
    if e > len(b):
        raise Malformed
    return str(b[p:e], "utf-8"), e


def read_compact_nullable_string(b: Any, p: int) -> tuple[str | None, int]:
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    if n > MAX_STRING + 1:
        raise Malformed
    e = p + n - 1
    if e > len(b):
        raise Malformed
    return str(b[p:e], "utf-8"), e


def read_bytes(b: Any, p: int) -> tuple[bytes, int]:
    (n,) = _I32.unpack_from(b, p)
    p += 4
    e = p + n
    if n < 0 or e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def read_nullable_bytes(b: Any, p: int) -> tuple[bytes | None, int]:
    (n,) = _I32.unpack_from(b, p)
    p += 4
    if n < 0:
        if n == -1:
            return None, p
        raise Malformed
    e = p + n
    if e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def read_compact_bytes(b: Any, p: int) -> tuple[bytes, int]:
    n, p = read_uvarint(b, p)
    e = p + n - 1
    if n == 0 or e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def read_compact_nullable_bytes(b: Any, p: int) -> tuple[bytes | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    e = p + n - 1
    if e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def read_nullable_records(b: Any, p: int) -> tuple[memoryview | None, int]:
    (n,) = _I32.unpack_from(b, p)
    p += 4
    if n < 0:
        if n == -1:
            return None, p
        raise Malformed
    e = p + n
    if e > len(b):
        raise Malformed
    return memoryview(b)[p:e], e


def read_compact_nullable_records(b: Any, p: int) -> tuple[memoryview | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    e = p + n - 1
    if e > len(b):
        raise Malformed
    return memoryview(b)[p:e], e


def read_records(b: Any, p: int) -> tuple[memoryview, int]:
    v, p = read_nullable_records(b, p)
    if v is None:
        raise Malformed
    return v, p


def read_compact_records(b: Any, p: int) -> tuple[memoryview, int]:
    v, p = read_compact_nullable_records(b, p)
    if v is None:
        raise Malformed
    return v, p


def read_array_length(b: Any, p: int) -> tuple[int, int]:
    """Non-nullable array count (int32); checked against the bytes that remain."""
    (n,) = _I32.unpack_from(b, p)
    p += 4
    if n < 0 or n > len(b) - p:
        raise Malformed
    return n, p


def read_nullable_array_length(b: Any, p: int) -> tuple[int, int]:
    """Nullable array count; -1 for null."""
    (n,) = _I32.unpack_from(b, p)
    p += 4
    if n < -1 or n > len(b) - p:
        raise Malformed
    return n, p


def read_compact_array_length(b: Any, p: int) -> tuple[int, int]:
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    n -= 1
    if n < 0 or n > len(b) - p:
        raise Malformed
    return n, p


def read_compact_nullable_array_length(b: Any, p: int) -> tuple[int, int]:
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    n -= 1
    if n > len(b) - p:
        raise Malformed
    return n, p


class FixedArray:
    """Arrays of one fixed-width type (``[]int32``...): count and elements in one call, one unpack.

    The count is checked against the bytes that remain before anything is allocated. Structs for
    each element count are cached per type.
    """

    __slots__ = ("_cache", "code", "size", "structs")

    #: Counts below this get a prebuilt struct in ``structs`` (generated code indexes it inline).
    SMALL: ClassVar[int] = 64

    def __init__(self, code: str, size: int) -> None:
        self.code = code
        self.size = size
        self._cache: dict[int, struct.Struct] = {}
        self.structs = [struct.Struct(f">{n}{code}") for n in range(self.SMALL)]

    def _struct(self, n: int) -> struct.Struct:
        s = self._cache.get(n)
        if s is None:
            s = struct.Struct(f">{n}{self.code}")
            if len(self._cache) < 256:
                self._cache[n] = s
        return s

    def _items(self, b: Any, p: int, n: int) -> tuple[list[Any], int]:
        e = p + n * self.size
        if e > len(b):
            raise Malformed
        s = self._cache.get(n) or self._struct(n)
        return list(s.unpack_from(b, p)), e

    def read(self, b: Any, p: int) -> tuple[list[Any], int]:
        (n,) = _I32.unpack_from(b, p)
        if n <= 0:
            if n == 0:
                return [], p + 4
            raise Malformed
        return self._items(b, p + 4, n)

    def read_nullable(self, b: Any, p: int) -> tuple[list[Any] | None, int]:
        (n,) = _I32.unpack_from(b, p)
        if n <= 0:
            if n == 0:
                return [], p + 4
            if n == -1:
                return None, p + 4
            raise Malformed
        return self._items(b, p + 4, n)

    def read_compact(self, b: Any, p: int) -> tuple[list[Any], int]:
        n = b[p]
        if n < 0x80:
            p += 1
        else:
            n, p = read_uvarint(b, p)
        if n <= 1:
            if n == 1:
                return [], p
            raise Malformed
        return self._items(b, p, n - 1)

    def read_compact_nullable(self, b: Any, p: int) -> tuple[list[Any] | None, int]:
        n = b[p]
        if n < 0x80:
            p += 1
        else:
            n, p = read_uvarint(b, p)
        if n <= 1:
            return ([] if n == 1 else None), p
        return self._items(b, p, n - 1)

    def write(self, out: bytearray, a: Any) -> None:
        n = len(a)
        out += _I32.pack(n)
        if n:
            out += (self._cache.get(n) or self._struct(n)).pack(*a)

    def write_compact(self, out: bytearray, a: Any) -> None:
        n = len(a)
        if n < 0x7F:
            out.append(n + 1)
        else:
            _write_uvarint(out, n + 1)
        if n:
            out += (self._cache.get(n) or self._struct(n)).pack(*a)


#: One shared instance per fixed-width element type (generated modules import these).
ARRAYS: Final[dict[str, FixedArray]] = {
    name: FixedArray(code, size)
    for name, code, size in [
        ("bool", "?", 1),
        ("int8", "b", 1),
        ("int16", "h", 2),
        ("uint16", "H", 2),
        ("int32", "i", 4),
        ("uint32", "I", 4),
        ("int64", "q", 8),
        ("float64", "d", 8),
    ]
}


def read_uuid_array(b: Any, p: int, n: int) -> tuple[list[uuid.UUID], int]:
    e = p + 16 * n
    if e > len(b):
        raise Malformed
    mk = uuid_from_bytes
    return [mk(b[i : i + 16]) for i in range(p, e, 16)], e


def uuid_from_bytes(raw: Any) -> uuid.UUID:
    u: uuid.UUID = _new(uuid.UUID)
    object.__setattr__(u, "int", int.from_bytes(raw, "big"))
    object.__setattr__(u, "is_safe", uuid.SafeUUID.unknown)
    return u


def read_tagged_fields(b: Any, p: int) -> tuple[dict[int, bytes] | None, int]:
    """A tag section in a struct with no known tagged fields: every tag is kept as unknown."""
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    return read_unknown_tagged_fields(b, p, n)


def read_unknown_tagged_fields(b: Any, p: int, n: int) -> tuple[dict[int, bytes], int]:
    ut: dict[int, bytes] = {}
    for _ in range(n):
        tag, p = read_uvarint(b, p)
        size, p = read_uvarint(b, p)
        e = p + size
        if e > len(b) or tag in ut:
            raise Malformed
        ut[tag] = bytes(b[p:e])
        p = e
    return ut, p


# ----------------------------------------------------------------------------------------------
# Writers


def write_uvarint(out: bytearray, n: int) -> None:
    """Kafka's unsigned varint (``ByteUtils.writeUnsignedVarint``); one byte inline."""
    if n < 0x80:
        out.append(n)
    else:
        _write_uvarint(out, n)


def write_string(out: bytearray, s: Any) -> None:
    raw = s.encode()
    n = len(raw)
    if n > MAX_STRING:
        raise Malformed
    out += _I16.pack(n)
    out += raw


def write_nullable_string(out: bytearray, s: Any) -> None:
    if s is None:
        out += b"\xff\xff"
    else:
        write_string(out, s)


def write_compact_string(out: bytearray, s: Any) -> None:
    raw = s.encode()
    n = len(raw)
    if n > MAX_STRING:
        raise Malformed
    if n < 0x7F:
        out.append(n + 1)
    else:
        _write_uvarint(out, n + 1)
    out += raw


def write_compact_nullable_string(out: bytearray, s: Any) -> None:
    if s is None:
        out.append(0)
    else:
        write_compact_string(out, s)


def write_bytes(out: bytearray, v: Any) -> None:
    out += _I32.pack(len(v))
    out += v


def write_nullable_bytes(out: bytearray, v: Any) -> None:
    if v is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _I32.pack(len(v))
        out += v


def write_compact_bytes(out: bytearray, v: Any) -> None:
    write_uvarint(out, len(v) + 1)
    out += v


def write_compact_nullable_bytes(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0)
    else:
        write_uvarint(out, len(v) + 1)
        out += v


def write_records(out: bytearray, v: Any) -> None:
    """Records: any bytes-like (or an object with ``to_bytes()``) as nullable bytes."""
    if v is None:
        out += b"\xff\xff\xff\xff"
        return
    if not isinstance(v, bytes | bytearray | memoryview):
        if isinstance(v, RecordsReference):
            out += _I32.pack(v.nbytes)
            v.place_in_frame(out)
            return
        v = _records_bytes(v)
    out += _I32.pack(len(v) if not isinstance(v, memoryview) else v.nbytes)
    out += v


def write_compact_records(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0)
        return
    if not isinstance(v, bytes | bytearray | memoryview):
        if isinstance(v, RecordsReference):
            write_uvarint(out, v.nbytes + 1)
            v.place_in_frame(out)
            return
        v = _records_bytes(v)
    write_uvarint(out, (len(v) if not isinstance(v, memoryview) else v.nbytes) + 1)
    out += v


class RecordsReference:
    """Records a frame refers to instead of holding (Kafka's zero-copy ``FileRecords`` send).

    Encoding writes the length prefix of ``nbytes`` and calls ``place_in_frame(out)`` instead of
    copying the bytes: a subclass remembers ``len(out)``, the position where its bytes belong, so
    the sender can write the encoded buffer in pieces with the records (``sendfile``) between them.
    The encoded buffer alone is then not a valid message; ``bytes()`` of a subclass gives the bytes.
    """

    nbytes: int = 0

    def place_in_frame(self, out: bytearray) -> None:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        raise NotImplementedError


def _records_bytes(v: Any) -> Any:
    to_bytes = getattr(v, "to_bytes", None)
    if to_bytes is not None:
        return to_bytes()
    return memoryview(v).cast("B")


def write_tagged_fields(
    out: bytearray, tags: list[tuple[int, Any]], unknown: dict[int, bytes] | None
) -> None:
    """Write a tag section: known ``(tag, bytes)`` pairs merged with unknown ones, in tag order."""
    if unknown:
        known = {t for t, _ in tags}
        for t in unknown:
            if t in known:
                raise Malformed
        tags = sorted([*tags, *unknown.items()], key=_first)
    write_uvarint(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def _first(item: tuple[int, Any]) -> int:
    return item[0]
