"""Wire primitives shared by the protocol and records layers.

Readers take ``(buf, pos)`` where ``buf`` is a ``memoryview`` (or bytes) and return
``(value, new_pos)``; they check that the bytes exist before reading and raise ``DecodeError``
with the byte offset otherwise. Writers append to a caller-supplied ``bytearray``. Fixed-width
integers use module-level precompiled ``struct.Struct`` objects (big-endian, as Kafka writes them).
Varints follow Kafka's ``ByteUtils``: unsigned LEB128 for lengths and tags (KIP-482), zigzag for
signed record fields; 32-bit varints are at most 5 bytes and 64-bit ones at most 10.
"""

from __future__ import annotations

import base64
import random
import struct
import uuid
from typing import Any, Final

from kwire.errors import DecodeError

__all__ = [
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT32_MAX",
    "INT32_MIN",
    "INT64",
    "UINT16",
    "UINT32",
    "as_view",
    "java_string_hash",
    "random_uuid_text",
    "read_uvarint",
    "read_uvarlong",
    "read_varint",
    "read_varlong",
    "uuid_from_text",
    "uuid_text",
    "uvarint_size",
    "varint_size",
    "write_uvarint",
    "write_varint",
    "write_varlong",
    "zigzag_decode",
    "zigzag_encode",
]

#: Java's ``Integer.MIN_VALUE`` / ``MAX_VALUE``: Kafka's int32 bounds (lengths, offset deltas,
#: sequences, partitions, segment sizes).
INT32_MIN: Final = -(1 << 31)
INT32_MAX: Final = (1 << 31) - 1

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")
UINT32: Final = struct.Struct(">I")
FLOAT64: Final = struct.Struct(">d")


def as_view(buffer: Any) -> memoryview:
    """A flat unsigned-byte ``memoryview`` of any bytes-like object (``mmap`` too), without copying.

    The one conversion at every boundary that takes bytes; raises ``TypeError`` for anything else.
    """
    if isinstance(buffer, memoryview):
        view = buffer
    else:
        try:
            view = memoryview(buffer)
        except TypeError:
            raise TypeError(f"expected a bytes-like object, not {type(buffer).__name__}") from None
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


_MAX_U32: Final = 0xFFFFFFFF
_MAX_U64: Final = 0xFFFFFFFFFFFFFFFF


def _read_leb128(buf: memoryview | bytes, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    result = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError(f"truncated {what}", offset=start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if pos - start >= max_bytes:
            raise DecodeError(f"{what} longer than {max_bytes} bytes", offset=start)
    if max_bytes == 5 and result > _MAX_U32:
        raise DecodeError(f"{what} does not fit in 32 bits", offset=start)
    return result, pos


def read_uvarint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """Unsigned 32-bit varint (KIP-482 lengths, tags and counts)."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:  # the common one-byte case, inlined
        return b, pos + 1
    return _read_leb128(buf, pos, 5, "unsigned varint")


def read_uvarlong(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """Unsigned 64-bit varint."""
    return _read_leb128(buf, pos, 10, "unsigned varlong")


def zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def zigzag_encode(n: int) -> int:
    # Python ints are unbounded, so the arithmetic shift needs no width: -1 -> 1, 1 -> 2, ...
    return (n << 1) ^ (n >> 63) if n < 0 else n << 1


def read_varint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """Signed (zigzag) 32-bit varint, as v2 record fields use."""
    raw, pos = _read_leb128(buf, pos, 5, "varint")
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """Signed (zigzag) 64-bit varint."""
    raw, pos = _read_leb128(buf, pos, 10, "varlong")
    return (raw >> 1) ^ -(raw & 1), pos


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned varint (any non-negative value below 2**64)."""
    if value < 0x80:
        if value < 0:
            raise ValueError(f"unsigned varint cannot hold {value}")
        out.append(value)
        return
    if value > _MAX_U64:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    """Append a zigzag varint; the caller checks the range (32 or 64 bits)."""
    write_uvarint(out, (value << 1) ^ (value >> 63) if value < 0 else value << 1)


write_varlong = write_varint  # zigzag encoding is the same for both widths within range


def uvarint_size(value: int) -> int:
    """Bytes an unsigned varint of ``value`` takes."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def varint_size(value: int) -> int:
    """Bytes a zigzag varint of ``value`` takes."""
    return uvarint_size((value << 1) ^ (value >> 63) if value < 0 else value << 1)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``31 * h + c`` over UTF-16 code units, as a signed int32.

    Kafka keys its coordinators' partitions on it (``__consumer_offsets``,
    ``__transaction_state``) and Scala's collections order ``TopicPartition``s by it.
    """
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


# -- Kafka's Uuid text form ------------------------------------------------------------------------


def uuid_text(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: the 16 bytes in URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_text(text: str) -> bytes:
    """Kafka's ``Uuid.fromString``: the 16 bytes; ``ValueError`` for anything else."""
    if len(text) > 24:
        raise ValueError(f"not a Kafka UUID: {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError as exc:  # binascii.Error
        raise ValueError(f"not a Kafka UUID: {text!r}") from exc
    if len(raw) != 16:
        raise ValueError(f"not a Kafka UUID: {text!r}")
    return raw


def random_uuid(source: random.Random | None = None) -> uuid.UUID:
    """A random (version 4) UUID: from ``source`` when given (a seeded source, so a test
    replays), else the system's."""
    return uuid.uuid4() if source is None else uuid.UUID(int=source.getrandbits(128), version=4)


def random_uuid_text(source: random.Random | None = None) -> str:
    """``Uuid.randomUuid().toString()``: never one starting with "-" (Kafka's rule for ids on
    command lines) nor a reserved one (all zeros, or zeros then 1: ``METADATA_TOPIC_ID``).
    ``source``: a seeded random source (tests replay), else the system's."""
    while True:
        raw = random_uuid(source).bytes
        text = uuid_text(raw)
        if not text.startswith("-") and raw[:15] != bytes(15):
            return text
