"""Runtime support for the generated codecs: base classes, field metadata, fast-path helpers, and the
careful spec-driven interpreters behind the error paths and JSON.

Approach. The generated modules hold one straight-line decode and encode function per (struct,
version layout); they call the small helpers below for variable-length items and raise whatever
Python raises when bytes are short or malformed (``struct.error``, ``IndexError``,
``UnicodeDecodeError``, or ``Malformed`` for rule violations). ``KafkaMessage.decode`` catches those
and re-decodes with ``careful_decode``: an interpreter over the classes' ``__kafka_fields__`` that
tracks the field path and byte offset and raises ``DecodeError`` naming both. Encoding works the same
way: on any failure ``check_encodable`` walks the object and raises ``EncodeError`` or
``UnsupportedVersionError`` naming the field. The fast path therefore carries no bookkeeping.

JSON (``to_json`` / ``from_json``) is interpreted from the same metadata, in the shape of Kafka's
generated ``*JsonConverter`` classes.
"""

from __future__ import annotations

import base64
import gc
import math
import os
import struct
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

from kwire._wire import as_view, read_uvarint, read_uvarlong, write_uvarint
from kwire.errors import (
    DecodeError,
    EncodeError,
    FastPathError,
    FastPathFallbackWarning,
    KwireError,
    UnsupportedVersionError,
)
from kwire.protocol._spec._model import INT_RANGES
from kwire.protocol._spec._varint import (
    MAX_VARINT_BYTES,
    VARINT_TYPES,
    interleave,
    is_unsigned,
    uninterleave,
    wire_range,
)
from kwire.protocol._spec._versions import NONE, VersionRange

__all__ = [
    "UNSET",
    "ZERO_UUID",
    "Buf",
    "FixedArray",
    "KField",
    "KafkaMessage",
    "KafkaStruct",
    "Malformed",
    "RecordsReference",
    "careful_decode",
    "check_encodable",
    "fast_path_fallbacks",
    "strict_fast_path",
]

Buf: TypeAlias = "bytes | memoryview"
#: The sentinel for "use the field's default" in generated ``__init__`` signatures (mutable defaults).
UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "UNSET", "__slots__": ()})()
ZERO_UUID: Final = uuid.UUID(int=0)
MAX_STRING: Final = 0x7FFF

_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_U32: Final = struct.Struct(">I")
_new: Final[Any] = object.__new__


class Malformed(Exception):
    """Raised by the fast path for a rule violation; the careful decoder then says what and where."""


# Exceptions the fast decoder may raise on bad input (anything else escaping it is a bug).
FAST_ERRORS: Final = (
    struct.error,
    IndexError,
    ValueError,  # includes UnicodeDecodeError and DecodeError from the varint readers
    TypeError,
    KeyError,
    OverflowError,
    MemoryError,
    Malformed,
)


# ----------------------------------------------------------------------------------------------
# Field metadata


class KField:
    """One field of a generated struct, as ``__kafka_fields__`` lists it (see ``inspect``)."""

    __slots__ = (
        "about",
        "attr",
        "default",
        "element",
        "encodings",
        "flexible",
        "ignorable",
        "is_array",
        "json_name",
        "name",
        "nullable",
        "struct",
        "tag",
        "tagged",
        "type",
        "versions",
        "zero_copy",
    )

    def __init__(
        self,
        name: str,
        attr: str,
        type: str,
        versions: str,
        *,
        nullable: str = "none",
        tagged: str = "none",
        tag: int | None = None,
        default: Any = None,
        ignorable: bool = False,
        flexible: str | None = None,
        struct: type[KafkaStruct] | None = None,
        zero_copy: bool = False,
        about: str = "",
        encoding: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.name = name
        self.attr = attr
        self.json_name = name[:1].lower() + name[1:]
        self.type = type
        self.is_array = type.startswith("[]")
        #: The element type for arrays, else the type itself ("struct" for struct types).
        base = type[2:] if self.is_array else type
        self.element = "struct" if struct is not None else base
        self.versions = VersionRange.parse(versions)
        self.nullable = VersionRange.parse(nullable)
        self.tagged = VersionRange.parse(tagged)
        self.tag = tag
        self.default = default
        self.ignorable = ignorable
        self.flexible = None if flexible is None else VersionRange.parse(flexible)
        self.struct = struct
        self.zero_copy = zero_copy
        self.about = about
        #: kwire extension: varint integer fields (a KIP proposal Kafka never shipped): ``(version
        #: range, wire type)`` pairs of a varint field.
        self.encodings = tuple((VersionRange.parse(r), w) for r, w in encoding)

    def wire(self, version: int) -> str:
        """The wire type of the value (or of each element) at ``version``."""
        for r, w in self.encodings:
            if version in r:
                return w
        return self.element

    def make_default(self) -> Any:
        """A fresh default value (a new list or struct where the default is mutable)."""
        d = self.default
        if d is UNSET:
            if self.is_array:
                return []
            assert self.struct is not None
            return self.struct()
        return d

    def is_default(self, value: Any) -> bool:
        d = self.default
        if d is UNSET:
            if self.is_array:
                return isinstance(value, list) and not value
            assert self.struct is not None
            return bool(value == self.struct())
        if d is None:
            return value is None
        if value is None:
            return False
        if isinstance(d, float) and isinstance(value, float) and math.isnan(d):
            return math.isnan(value)
        return bool(value == d)

    def compact(self, version: int, flexible: bool) -> bool:
        return version in self.flexible if self.flexible is not None else flexible

    def __repr__(self) -> str:
        extra = []
        if not self.nullable.empty:
            extra.append(f"nullable={self.nullable}")
        if self.tag is not None:
            extra.append(f"tag={self.tag} tagged={self.tagged}")
        if self.ignorable:
            extra.append("ignorable")
        more = (" " + " ".join(extra)) if extra else ""
        return f"<KField {self.attr}: {self.type} v{self.versions}{more}>"


class MessageInfo:
    """Message-level facts a generated top-level class carries."""

    __slots__ = (
        "api_key",
        "flexible",
        "kind",
        "name",
        "source",
        "tag_header",
        "unstable",
        "valid",
    )

    def __init__(
        self,
        name: str,
        kind: str,
        api_key: int | None,
        valid: str,
        flexible: str,
        *,
        unstable: bool = False,
        source: str = "",
        tag_header: str = "kip482",
    ) -> None:
        self.name = name
        self.kind = kind
        #: kwire extension: the interleaved tag header of KIP-482's first draft: "kip482" or
        #: "interleaved" tag headers.
        self.tag_header = tag_header
        self.api_key = api_key
        self.valid = VersionRange.parse(valid)
        self.flexible = VersionRange.parse(flexible)
        self.unstable = unstable
        self.source = source


# ----------------------------------------------------------------------------------------------
# Base classes


def _short_repr(value: Any) -> str:
    if isinstance(value, memoryview | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, bytes) and len(value) > 32:
        return f"<{len(value)} bytes>"
    if isinstance(value, uuid.UUID):
        return f"Uuid({uuid_to_str(value)!r})"
    return repr(value)


class KafkaStruct:
    """Base of every generated struct class (messages and their nested structs)."""

    __slots__ = ()
    __kafka_fields__: ClassVar[tuple[KField, ...]] = ()
    __kafka_message__: ClassVar[MessageInfo]

    unknown_tags: dict[int, bytes] | None

    if TYPE_CHECKING:
        # Classes found by name (``message_class``) are typed as this base; let mypy accept their
        # keyword construction and attributes. Import a generated class directly for exact types.
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...

    def __repr__(self) -> str:
        parts = [f"{f.attr}={_short_repr(getattr(self, f.attr))}" for f in self.__kafka_fields__]
        if self.unknown_tags:
            parts.append(f"unknown_tags={self.unknown_tags!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_json(self, version: int) -> dict[str, Any]:
        """The JSON object Kafka's ``*JsonConverter.write`` gives for this struct at ``version``."""
        info = self.__kafka_message__
        _check_version(info, version)
        return struct_to_json(self, version, info.flexible.contains(version), info.name)

    @classmethod
    def from_json(cls, obj: Any, version: int) -> Any:
        """Build an instance from Kafka's JSON shape (as ``*JsonConverter.read`` does)."""
        info = cls.__kafka_message__
        _check_version(info, version)
        return struct_from_json(cls, obj, version, info.flexible.contains(version), info.name)


def _check_version(info: MessageInfo, version: int) -> None:
    if version not in info.valid:
        raise UnsupportedVersionError(
            f"{info.name} has no version {version} (valid versions: {info.valid})"
        )


def _ut_eq(a: dict[int, bytes] | None, b: dict[int, bytes] | None) -> bool:
    return (a or None) == (b or None)


class KafkaMessage(KafkaStruct):
    """Base of every generated top-level message class: ``decode``, ``encode``, ``encode_into``."""

    __slots__ = ()
    API_KEY: ClassVar[int | None] = None
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = -1
    _decoders: ClassVar[dict[int, Callable[[Any, int], tuple[Any, int]]]] = {}
    _encoders: ClassVar[dict[int, Callable[[Any, bytearray], None]]] = {}

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Any:
        """Decode the whole buffer as this message at ``version``; trailing bytes are an error."""
        msg, _ = cls.decode_from(data, version, 0, whole=True)
        return msg

    @classmethod
    def decode_from(
        cls,
        data: bytes | bytearray | memoryview,
        version: int,
        pos: int = 0,
        *,
        whole: bool = False,
    ) -> tuple[Any, int]:
        """Decode one message starting at ``pos``; returns ``(message, end position)``.

        With ``whole=True`` the message must end exactly at the end of ``data``.
        """
        fn = cls._decoders.get(version)
        if fn is None:
            _check_version(cls.__kafka_message__, version)
            raise UnsupportedVersionError(f"{cls.__name__} has no decoder for version {version}")
        buf: Any = data if type(data) is bytes else as_view(data)
        # Decoding allocates many objects that all survive: pause the cyclic GC for big inputs,
        # or its collections (each scanning the young objects again) dominate the decode time.
        pause = len(buf) > 4096 and gc.isenabled()
        if pause:
            gc.disable()
        failure: BaseException | None = None
        try:
            msg, end = fn(buf, pos)
            if not whole or end == len(buf):
                return msg, end
        except FAST_ERRORS as exc:
            failure = exc
        finally:
            if pause:
                gc.enable()
        # The reference names what is wrong and where; if it finds nothing wrong, the fast path
        # has a bug (reported below), and the reference's result is the right one.
        result = careful_decode(cls, buf, version, pos, whole=whole)
        _fast_path_failed(cls, version, "decoder", failure)
        return result

    def encode(self, version: int) -> bytes:
        """The bytes of this message at ``version``."""
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append this message's bytes at ``version`` to ``out`` (unchanged on error)."""
        fn = self._encoders.get(version)
        if fn is None:
            _check_version(self.__kafka_message__, version)
            raise UnsupportedVersionError(
                f"{type(self).__name__} has no encoder for version {version}"
            )
        start = len(out)
        try:
            fn(self, out)
        except Exception as exc:
            del out[start:]
            if isinstance(exc, KwireError):
                raise
            check_encodable(self, version)
            # The reference finds nothing wrong: the generated encoder has a bug.
            _fast_path_failed(type(self), version, "encoder", exc)
            raise EncodeError(
                f"cannot encode {type(self).__name__} v{version}: {type(exc).__name__}: {exc}"
            ) from exc


_FALLBACKS: dict[tuple[str, int, str], int] = {}


def strict_fast_path() -> bool:
    """Whether a fast-path failure the reference does not confirm raises (``KWIRE_STRICT_FASTPATH``).

    kwire's test suite turns it on (tests/conftest.py), so a bug in generated code fails a test
    instead of showing up only as a slowdown. Read at each failure, so it can be set at any time.
    """
    return os.environ.get("KWIRE_STRICT_FASTPATH", "") not in ("", "0")


def fast_path_fallbacks() -> dict[tuple[str, int, str], int]:
    """How often the generated code failed where the reference succeeded, since the process began.

    Keys are ``(message name, version, "decoder" | "encoder")``; an empty dict is the healthy state.
    """
    return dict(_FALLBACKS)


def _fast_path_failed(
    cls: type[KafkaStruct], version: int, which: str, exc: BaseException | None
) -> None:
    name = cls.__kafka_message__.name
    key = (name, version, which)
    _FALLBACKS[key] = _FALLBACKS.get(key, 0) + 1
    why = "left trailing bytes" if exc is None else f"raised {type(exc).__name__}: {exc}"
    text = (
        f"the generated {which} of {name} v{version} {why}, where the reference implementation "
        "succeeded: a bug in kwire's generated code (the reference's result was used)"
    )
    if strict_fast_path():
        raise FastPathError(text) from exc
    warnings.warn(text, FastPathFallbackWarning, stacklevel=4)


# ----------------------------------------------------------------------------------------------
# Fast-path decode helpers (raise anything on bad input; the caller falls back to careful_decode)


def uv(b: Any, p: int) -> tuple[int, int]:
    """Unsigned varint (32-bit)."""
    return read_uvarint(b, p)


def r_str(b: Any, p: int) -> tuple[str, int]:
    n = (b[p] << 8) | b[p + 1]
    if n >= 0x8000:
        raise Malformed
    p += 2
    e = p + n
    if e > len(b):
        raise Malformed
    return str(b[p:e], "utf-8"), e


def r_nstr(b: Any, p: int) -> tuple[str | None, int]:
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


def r_cstr(b: Any, p: int) -> tuple[str, int]:
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


def r_ncstr(b: Any, p: int) -> tuple[str | None, int]:
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


def r_bytes(b: Any, p: int) -> tuple[bytes, int]:
    (n,) = _I32.unpack_from(b, p)
    p += 4
    e = p + n
    if n < 0 or e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def r_nbytes(b: Any, p: int) -> tuple[bytes | None, int]:
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


def r_cbytes(b: Any, p: int) -> tuple[bytes, int]:
    n, p = read_uvarint(b, p)
    e = p + n - 1
    if n == 0 or e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def r_ncbytes(b: Any, p: int) -> tuple[bytes | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    e = p + n - 1
    if e > len(b):
        raise Malformed
    return bytes(b[p:e]), e


def r_nrecords(b: Any, p: int) -> tuple[memoryview | None, int]:
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


def r_ncrecords(b: Any, p: int) -> tuple[memoryview | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    e = p + n - 1
    if e > len(b):
        raise Malformed
    return memoryview(b)[p:e], e


def r_records(b: Any, p: int) -> tuple[memoryview, int]:
    v, p = r_nrecords(b, p)
    if v is None:
        raise Malformed
    return v, p


def r_crecords(b: Any, p: int) -> tuple[memoryview, int]:
    v, p = r_ncrecords(b, p)
    if v is None:
        raise Malformed
    return v, p


def r_alen(b: Any, p: int) -> tuple[int, int]:
    """Non-nullable array count (int32); checked against the bytes that remain."""
    (n,) = _I32.unpack_from(b, p)
    p += 4
    if n < 0 or n > len(b) - p:
        raise Malformed
    return n, p


def r_nalen(b: Any, p: int) -> tuple[int, int]:
    """Nullable array count; -1 for null."""
    (n,) = _I32.unpack_from(b, p)
    p += 4
    if n < -1 or n > len(b) - p:
        raise Malformed
    return n, p


def r_calen(b: Any, p: int) -> tuple[int, int]:
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    n -= 1
    if n < 0 or n > len(b) - p:
        raise Malformed
    return n, p


def r_ncalen(b: Any, p: int) -> tuple[int, int]:
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

    def read_n(self, b: Any, p: int) -> tuple[list[Any] | None, int]:
        (n,) = _I32.unpack_from(b, p)
        if n <= 0:
            if n == 0:
                return [], p + 4
            if n == -1:
                return None, p + 4
            raise Malformed
        return self._items(b, p + 4, n)

    def read_c(self, b: Any, p: int) -> tuple[list[Any], int]:
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

    def read_nc(self, b: Any, p: int) -> tuple[list[Any] | None, int]:
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

    def write_c(self, out: bytearray, a: Any) -> None:
        n = len(a)
        if n < 0x7F:
            out.append(n + 1)
        else:
            write_uvarint(out, n + 1)
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


def r_uuid_array(b: Any, p: int, n: int) -> tuple[list[uuid.UUID], int]:
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


def skip_tags(b: Any, p: int) -> tuple[dict[int, bytes] | None, int]:
    """A tag section in a struct with no known tagged fields: every tag is kept as unknown."""
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    return read_unknown_tags(b, p, n)


def read_unknown_tags(b: Any, p: int, n: int) -> tuple[dict[int, bytes], int]:
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
# Fast-path encode helpers


def w_uv(out: bytearray, n: int) -> None:
    if n < 0x80:
        out.append(n)
    else:
        write_uvarint(out, n)


def w_str(out: bytearray, s: Any) -> None:
    raw = s.encode()
    n = len(raw)
    if n > MAX_STRING:
        raise Malformed
    out += _I16.pack(n)
    out += raw


def w_nstr(out: bytearray, s: Any) -> None:
    if s is None:
        out += b"\xff\xff"
    else:
        w_str(out, s)


def w_cstr(out: bytearray, s: Any) -> None:
    raw = s.encode()
    n = len(raw)
    if n > MAX_STRING:
        raise Malformed
    if n < 0x7F:
        out.append(n + 1)
    else:
        write_uvarint(out, n + 1)
    out += raw


def w_ncstr(out: bytearray, s: Any) -> None:
    if s is None:
        out.append(0)
    else:
        w_cstr(out, s)


def w_bytes(out: bytearray, v: Any) -> None:
    out += _I32.pack(len(v))
    out += v


def w_nbytes(out: bytearray, v: Any) -> None:
    if v is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _I32.pack(len(v))
        out += v


def w_cbytes(out: bytearray, v: Any) -> None:
    w_uv(out, len(v) + 1)
    out += v


def w_ncbytes(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0)
    else:
        w_uv(out, len(v) + 1)
        out += v


def w_records(out: bytearray, v: Any) -> None:
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


def w_crecords(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0)
        return
    if not isinstance(v, bytes | bytearray | memoryview):
        if isinstance(v, RecordsReference):
            w_uv(out, v.nbytes + 1)
            v.place_in_frame(out)
            return
        v = _records_bytes(v)
    w_uv(out, (len(v) if not isinstance(v, memoryview) else v.nbytes) + 1)
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


def w_tags(out: bytearray, tags: list[tuple[int, Any]], unknown: dict[int, bytes] | None) -> None:
    """Write a tag section: known ``(tag, bytes)`` pairs merged with unknown ones, in tag order."""
    if unknown:
        known = {t for t, _ in tags}
        for t in unknown:
            if t in known:
                raise Malformed
        tags = sorted([*tags, *unknown.items()], key=_first)
    w_uv(out, len(tags))
    for tag, data in tags:
        w_uv(out, tag)
        w_uv(out, len(data))
        out += data


def _first(item: tuple[int, Any]) -> int:
    return item[0]


# ----------------------------------------------------------------------------------------------
# kwire extensions: varint integer fields (a KIP proposal Kafka never shipped) and the interleaved
# tag header of KIP-482's first draft


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

    __slots__ = ("hi", "lo", "max_bytes", "name", "unsigned")

    def __init__(self, name: str) -> None:
        self.name = name
        self.unsigned = is_unsigned(name)
        self.lo, self.hi = wire_range(name)
        self.max_bytes = MAX_VARINT_BYTES[VARINT_TYPES[name]]

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


#: One codec per varint wire type (generated modules that use varint fields import these).
VARINTS: Final[dict[str, VarintCodec]] = {name: VarintCodec(name) for name in VARINT_TYPES}


def r_taghdr(b: Any, p: int) -> tuple[int, int, int]:
    """An interleaved tag header: ``(tag, size, new position)``."""
    x = b[p]
    if x < 0x80:
        # one byte: length bits 0, 2, 4, 6 -> 0..3; tag bits 1, 3, 5 -> 0..2
        return (
            ((x >> 1) & 1) | ((x >> 2) & 2) | ((x >> 3) & 4),
            (x & 1) | ((x >> 1) & 2) | ((x >> 2) & 4) | ((x >> 3) & 8),
            p + 1,
        )
    h, p = read_uvarlong(b, p)
    tag, size = uninterleave(h)
    return tag, size, p


def skip_tags_il(b: Any, p: int) -> tuple[dict[int, bytes] | None, int]:
    """``skip_tags`` for interleaved tag headers."""
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    ut: dict[int, bytes] = {}
    for _ in range(n):
        tag, size, p = r_taghdr(b, p)
        e = p + size
        if e > len(b) or tag in ut:
            raise Malformed
        ut[tag] = bytes(b[p:e])
        p = e
    return ut, p


def w_tags_il(
    out: bytearray, tags: list[tuple[int, Any]], unknown: dict[int, bytes] | None
) -> None:
    """``w_tags`` with interleaved tag headers."""
    if unknown:
        known = {t for t, _ in tags}
        for t in unknown:
            if t in known:
                raise Malformed
        tags = sorted([*tags, *unknown.items()], key=_first)
    w_uv(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, interleave(tag, len(data)))
        out += data


# ----------------------------------------------------------------------------------------------
# UUIDs as Kafka prints them


def uuid_to_str(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding (22 characters)."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def uuid_from_str(s: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString`` (22-character URL-safe base64)."""
    if len(s) > 24:
        raise ValueError(f"not a Kafka UUID: {s!r}")
    raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka UUID: {s!r}")
    return uuid.UUID(bytes=raw)


# ----------------------------------------------------------------------------------------------
# The careful decoder: an interpreter over __kafka_fields__ that says what failed and where


_FIXED: Final[dict[str, tuple[struct.Struct, int]]] = {
    "bool": (struct.Struct(">?"), 1),
    "int8": (struct.Struct(">b"), 1),
    "int16": (struct.Struct(">h"), 2),
    "uint16": (struct.Struct(">H"), 2),
    "int32": (struct.Struct(">i"), 4),
    "uint32": (struct.Struct(">I"), 4),
    "int64": (struct.Struct(">q"), 8),
    "float64": (struct.Struct(">d"), 8),
}


class _Careful:
    __slots__ = ("buf", "context", "interleaved")

    def __init__(self, buf: Any, context: str, interleaved: bool = False) -> None:
        self.buf = buf
        self.context = context
        #: interleaved tag headers of KIP-482's first draft (kwire extension)
        self.interleaved = interleaved

    def fail(self, reason: str, pos: int, path: str) -> DecodeError:
        return DecodeError(reason, offset=pos, path=path or None, context=self.context)

    def need(self, pos: int, n: int, end: int, path: str, what: str) -> None:
        if n > end - pos:
            raise self.fail(
                f"{what} needs {n} bytes but only {max(end - pos, 0)} remain", pos, path
            )

    def uvarint(
        self, pos: int, end: int, path: str, what: str, max_bytes: int = 5, kind: str = ""
    ) -> tuple[int, int]:
        kind = kind or ("unsigned varint" if max_bytes == 5 else "unsigned varlong")
        result = 0
        shift = 0
        start = pos
        while True:
            if pos >= end:
                raise self.fail(f"truncated {kind} ({what})", start, path)
            byte = self.buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if pos - start >= max_bytes:
                raise self.fail(f"{kind} longer than {max_bytes} bytes ({what})", start, path)
        bits = 32 if max_bytes == 5 else 64
        if result >> bits:
            raise self.fail(f"{kind} does not fit in {bits} bits ({what})", start, path)
        return result, pos

    def varint_field(self, wire: str, pos: int, end: int, path: str) -> tuple[int, int]:
        """A varint integer field's value (kwire extension), range-checked for its wire type."""
        codec = VARINTS[wire]
        raw, after = self.uvarint(pos, end, path, wire, codec.max_bytes, wire)
        value = raw if codec.unsigned else (raw >> 1) ^ -(raw & 1)
        if not codec.lo <= value <= codec.hi:
            raise self.fail(f"{wire} value {value} is out of range", pos, path)
        return value, after

    def tag_header(self, pos: int, end: int, path: str) -> tuple[int, int, int]:
        """``(tag, size, position)``: two unsigned varints, or one interleaved varlong."""
        if self.interleaved:
            h, pos = self.uvarint(pos, end, path, "interleaved tag header", 10)
            tag, size = uninterleave(h)
            return tag, size, pos
        tag, pos = self.uvarint(pos, end, path, "tag")
        size, pos = self.uvarint(pos, end, path, f"size of tag {tag}")
        return tag, size, pos

    def length(
        self, pos: int, end: int, path: str, compact: bool, nullable: bool, width: int, what: str
    ) -> tuple[int, int]:
        """A length or count prefix; -1 for null. Checks nullability and negative lengths."""
        start = pos
        if compact:
            n, pos = self.uvarint(pos, end, path, f"{what} length")
            n -= 1
        else:
            self.need(pos, width, end, path, f"{what} length")
            n = (_I16 if width == 2 else _I32).unpack_from(self.buf, pos)[0]
            pos += width
            if n < -1:
                raise self.fail(f"negative {what} length {n}", start, path)
        if n == -1 and not nullable:
            raise self.fail(f"non-nullable field was serialized as null ({what})", start, path)
        return n, pos

    def struct(
        self, cls: type[KafkaStruct], pos: int, end: int, version: int, flexible: bool, path: str
    ) -> tuple[KafkaStruct, int]:
        obj = _new(cls)
        tagged: dict[int, KField] = {}
        for f in cls.__kafka_fields__:
            if version not in f.versions:
                object.__setattr__(obj, f.attr, f.make_default())
                continue
            if version in f.tagged:
                assert f.tag is not None
                tagged[f.tag] = f
                object.__setattr__(obj, f.attr, f.make_default())
                continue
            fpath = f"{path}.{f.attr}" if path else f.attr
            value, pos = self.value(f, pos, end, version, flexible, fpath)
            object.__setattr__(obj, f.attr, value)
        unknown: dict[int, bytes] | None = None
        if flexible:
            # tags of fields that are not tagged at this version: Kafka's readers reject them
            reserved = {
                f.tag for f in cls.__kafka_fields__ if f.tag is not None and version not in f.tagged
            }
            tpath = f"{path}._tagged_fields" if path else "_tagged_fields"
            count, pos = self.uvarint(pos, end, tpath, "tagged field count")
            seen: set[int] = set()
            for _ in range(count):
                tag_pos = pos
                tag, size, pos = self.tag_header(pos, end, tpath)
                if tag in seen:
                    raise self.fail(f"duplicate tag {tag}", tag_pos, tpath)
                seen.add(tag)
                self.need(pos, size, end, tpath, f"tag {tag}")
                tag_end = pos + size
                tf = tagged.get(tag)
                if tf is None and tag in reserved:
                    raise self.fail(f"tag {tag} is not valid for version {version}", tag_pos, tpath)
                if tf is None:
                    if unknown is None:
                        unknown = {}
                    unknown[tag] = bytes(self.buf[pos:tag_end])
                else:
                    fpath = f"{path}.{tf.attr}" if path else tf.attr
                    value, _ = self.value(tf, pos, tag_end, version, True, fpath)
                    object.__setattr__(obj, tf.attr, value)
                pos = tag_end
        object.__setattr__(obj, "unknown_tags", unknown)
        return obj, pos

    def value(
        self, f: KField, pos: int, end: int, version: int, flexible: bool, path: str
    ) -> tuple[Any, int]:
        nullable = version in f.nullable
        compact = f.compact(version, flexible)
        if f.is_array:
            n, pos = self.length(pos, end, path, compact, nullable, 4, "array")
            if n == -1:
                return None, pos
            if n > end - pos:
                raise self.fail(
                    f"array claims {n} elements but only {end - pos} bytes remain", pos, path
                )
            items = []
            for i in range(n):
                item, pos = self.element(f, pos, end, version, flexible, compact, f"{path}[{i}]")
                items.append(item)
            return items, pos
        if f.struct is not None and nullable:
            self.need(pos, 1, end, path, "struct null marker")
            marker = _I8.unpack_from(self.buf, pos)[0]
            pos += 1
            if marker < 0:
                return None, pos
        return self.element(f, pos, end, version, flexible, compact, path, nullable)

    def element(
        self,
        f: KField,
        pos: int,
        end: int,
        version: int,
        flexible: bool,
        compact: bool,
        path: str,
        nullable: bool = False,
    ) -> tuple[Any, int]:
        t = f.wire(version) if f.encodings else f.element
        if t == "struct":
            assert f.struct is not None
            return self.struct(f.struct, pos, end, version, flexible, path)
        if t in VARINTS:
            return self.varint_field(t, pos, end, path)
        fixed = _FIXED.get(t)
        if fixed is not None:
            s, size = fixed
            self.need(pos, size, end, path, t)
            return s.unpack_from(self.buf, pos)[0], pos + size
        if t == "uuid":
            self.need(pos, 16, end, path, "uuid")
            return uuid_from_bytes(self.buf[pos : pos + 16]), pos + 16
        start = pos
        if t == "string":
            n, pos = self.length(pos, end, path, compact, nullable, 2, "string")
            if n == -1:
                return None, pos
            if n > MAX_STRING:
                raise self.fail(f"string length {n} is over 32767", start, path)
            self.need(pos, n, end, path, "string")
            try:
                return str(self.buf[pos : pos + n], "utf-8"), pos + n
            except UnicodeDecodeError as exc:
                raise self.fail(
                    f"invalid UTF-8 in string: {exc.reason}", pos + exc.start, path
                ) from None
        if t in ("bytes", "records"):
            n, pos = self.length(pos, end, path, compact, nullable, 4, t)
            if n == -1:
                return None, pos
            self.need(pos, n, end, path, t)
            if t == "records":
                return memoryview(self.buf)[pos : pos + n], pos + n
            return bytes(self.buf[pos : pos + n]), pos + n
        raise self.fail(f"unsupported type {t}", pos, path)  # pragma: no cover - spec validated


def careful_decode(
    cls: type[KafkaMessage], buf: Any, version: int, pos: int = 0, *, whole: bool = True
) -> tuple[Any, int]:
    """Decode with full checking; raises ``DecodeError`` with the field path and byte offset."""
    info = cls.__kafka_message__
    reader = _Careful(buf, f"{info.name} v{version}", info.tag_header == "interleaved")
    flexible = version in info.flexible
    msg, end = reader.struct(cls, pos, len(buf), version, flexible, "")
    if whole and end != len(buf):
        raise reader.fail(f"{len(buf) - end} trailing bytes after the message", end, "")
    return msg, end


# ----------------------------------------------------------------------------------------------
# The careful encoder check: says which field cannot be written, and why


def check_encodable(obj: KafkaStruct, version: int) -> None:
    """Raise ``EncodeError`` / ``UnsupportedVersionError`` naming the first unwritable field."""
    info = obj.__kafka_message__
    _check_version(info, version)
    _check_struct(obj, type(obj), version, version in info.flexible, f"{info.name} v{version}", "")


def _check_struct(
    obj: Any, cls: type[KafkaStruct], version: int, flexible: bool, ctx: str, path: str
) -> None:
    where = f" ({ctx}{', field ' + path if path else ''})"
    if not isinstance(obj, cls):
        raise EncodeError(f"expected {cls.__name__}, not {type(obj).__name__}{where}")
    # Like Kafka's writer, unknown tags may reuse the tag of a field tagged in other versions only
    # (Kafka's readers, and kwire's, then reject the bytes); only collisions with a field tagged
    # at this version are refused, as they would put one tag on the wire twice.
    known_tags = {f.tag for f in cls.__kafka_fields__ if f.tag is not None and version in f.tagged}
    for f in cls.__kafka_fields__:
        fpath = f"{path}.{f.attr}" if path else f.attr
        value = getattr(obj, f.attr)
        if version not in f.versions:
            if not f.ignorable and not f.is_default(value):
                raise UnsupportedVersionError(
                    f"Attempted to write a non-default {f.json_name} at version {version} "
                    f"({ctx}, field {fpath})"
                )
            continue
        _check_value(f, value, version, flexible, ctx, fpath)
    unknown = getattr(obj, "unknown_tags", None)
    if unknown:
        if not flexible:
            raise UnsupportedVersionError(
                f"Tagged fields were set, but version {version} of this message does not support them{where}"
            )
        if not isinstance(unknown, dict):
            raise EncodeError(f"unknown_tags must be a dict of tag -> bytes{where}")
        for tag, raw in unknown.items():
            if not isinstance(tag, int) or not 0 <= tag <= 0xFFFFFFFF:
                raise EncodeError(f"invalid unknown tag {tag!r}{where}")
            if tag in known_tags:
                raise EncodeError(
                    f"unknown tag {tag} is the tag of field of {cls.__name__} tagged at this version{where}"
                )
            if not isinstance(raw, bytes | bytearray | memoryview):
                raise EncodeError(f"unknown tag {tag} must hold bytes{where}")


def _check_value(f: KField, value: Any, version: int, flexible: bool, ctx: str, path: str) -> None:
    where = f" ({ctx}, field {path})"
    if value is None:
        if version in f.nullable:
            return
        raise EncodeError(f"null in non-nullable field{where}")
    if f.is_array:
        if not isinstance(value, list | tuple):
            raise EncodeError(f"expected a list, not {type(value).__name__}{where}")
        for i, item in enumerate(value):
            if item is None:
                raise EncodeError(f"null array element{where[:-1]}[{i}])")
            _check_element(f, item, version, flexible, ctx, f"{path}[{i}]")
        return
    _check_element(f, value, version, flexible, ctx, path)


def _check_element(f: KField, v: Any, version: int, flexible: bool, ctx: str, path: str) -> None:
    where = f" ({ctx}, field {path})"
    t = f.element
    if t == "struct":
        assert f.struct is not None
        _check_struct(v, f.struct, version, flexible, ctx, path)
    elif t in INT_RANGES:
        if not isinstance(v, int):
            raise EncodeError(f"expected an int for {t}, not {type(v).__name__}{where}")
        lo, hi = INT_RANGES[t]
        if not lo <= v <= hi:
            raise EncodeError(f"{v} is out of range for {t}{where}")
        wire = f.wire(version) if f.encodings else t
        if wire in VARINTS:
            codec = VARINTS[wire]
            if v < 0 and codec.unsigned:
                raise EncodeError(
                    f"negative value {v} cannot be written as {wire} at version {version}{where}"
                )
            if not codec.lo <= v <= codec.hi:
                raise EncodeError(f"{v} is out of range for {wire} at version {version}{where}")
        elif wire != t and wire in INT_RANGES:
            lo, hi = INT_RANGES[wire]
            if not lo <= v <= hi:
                raise EncodeError(f"{v} is out of range for {wire} at version {version}{where}")
    elif t == "bool":
        if not isinstance(v, bool | int):
            raise EncodeError(f"expected a bool, not {type(v).__name__}{where}")
    elif t == "float64":
        if not isinstance(v, float | int):
            raise EncodeError(f"expected a float, not {type(v).__name__}{where}")
    elif t == "uuid":
        if not isinstance(v, uuid.UUID):
            raise EncodeError(f"expected a uuid.UUID, not {type(v).__name__}{where}")
    elif t == "string":
        if not isinstance(v, str):
            raise EncodeError(f"expected a str, not {type(v).__name__}{where}")
        try:
            raw = v.encode()
        except UnicodeEncodeError as exc:
            raise EncodeError(f"string is not encodable as UTF-8: {exc.reason}{where}") from None
        if len(raw) > MAX_STRING:
            raise EncodeError(
                f"'{f.json_name}' field is too long to be serialized: {len(raw)} bytes > 32767{where}"
            )
    elif t == "bytes":
        if not isinstance(v, bytes | bytearray | memoryview):
            raise EncodeError(f"expected bytes, not {type(v).__name__}{where}")
    elif t == "records" and not _records_like(v):
        raise EncodeError(f"expected bytes-like records, not {type(v).__name__}{where}")


def _records_like(v: Any) -> bool:
    if isinstance(v, bytes | bytearray | memoryview) or hasattr(v, "to_bytes"):
        return True
    try:
        memoryview(v)
    except TypeError:
        return False
    return True


# ----------------------------------------------------------------------------------------------
# JSON in Kafka's JsonConverter shape


def struct_to_json(
    obj: Any, version: int, flexible: bool, ctx: str, path: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in type(obj).__kafka_fields__:
        value = getattr(obj, f.attr)
        fpath = f"{path}.{f.attr}" if path else f.attr
        if version not in f.versions:
            if not f.ignorable and not f.is_default(value):
                raise UnsupportedVersionError(
                    f"Attempted to write a non-default {f.json_name} at version {version} "
                    f"({ctx}, field {fpath})"
                )
            continue
        if version in f.tagged and f.is_default(value):
            continue
        if value is None:
            # Records default to null even where not nullable; Kafka's converter writes that null.
            if version not in f.nullable and f.type != "records":
                raise EncodeError(f"null in non-nullable field ({ctx}, field {fpath})")
            out[f.json_name] = None
        elif f.is_array:
            out[f.json_name] = [
                _elem_to_json(f, v, version, flexible, ctx, f"{fpath}[{i}]")
                for i, v in enumerate(value)
            ]
        else:
            out[f.json_name] = _elem_to_json(f, value, version, flexible, ctx, fpath)
    return out


def _elem_to_json(f: KField, v: Any, version: int, flexible: bool, ctx: str, path: str) -> Any:
    t = f.element
    if t == "struct":
        return struct_to_json(v, version, flexible, ctx, path)
    if t == "uuid":
        return uuid_to_str(v)
    if t in ("bytes", "records"):
        if not isinstance(v, bytes | bytearray | memoryview):
            v = _records_bytes(v)
        return base64.b64encode(v).decode("ascii")
    if t == "bool":
        return bool(v)
    if t == "float64":
        return float(v)
    return v


def struct_from_json(
    cls: type[KafkaStruct], obj: Any, version: int, flexible: bool, ctx: str, path: str = ""
) -> Any:
    if not isinstance(obj, dict):
        raise DecodeError(
            f"expected a JSON object, not {type(obj).__name__}", path=path or None, context=ctx
        )
    out = _new(cls)
    for f in cls.__kafka_fields__:
        fpath = f"{path}.{f.attr}" if path else f.attr
        node = obj.get(f.json_name, _MISSING)
        if node is _MISSING:
            if version in f.versions and version not in f.tagged:
                raise DecodeError(
                    f"unable to locate field '{f.json_name}', which is mandatory in version {version}",
                    path=fpath,
                    context=ctx,
                )
            object.__setattr__(out, f.attr, f.make_default())
            continue
        object.__setattr__(out, f.attr, _value_from_json(f, node, version, flexible, ctx, fpath))
    object.__setattr__(out, "unknown_tags", None)
    return out


_MISSING: Final = object()


def _value_from_json(
    f: KField, node: Any, version: int, flexible: bool, ctx: str, path: str
) -> Any:
    if node is None:
        if f.nullable.empty and f.type != "records":
            raise DecodeError("null in a non-nullable field", path=path, context=ctx)
        return None
    if f.is_array:
        if not isinstance(node, list):
            raise DecodeError("expected a JSON array", path=path, context=ctx)
        return [
            _elem_from_json(f, x, version, flexible, ctx, f"{path}[{i}]")
            for i, x in enumerate(node)
        ]
    return _elem_from_json(f, node, version, flexible, ctx, path)


def _elem_from_json(f: KField, node: Any, version: int, flexible: bool, ctx: str, path: str) -> Any:
    t = f.element

    def bad(what: str) -> DecodeError:
        return DecodeError(f"expected {what}, not {node!r:.60}", path=path, context=ctx)

    if t == "struct":
        assert f.struct is not None
        return struct_from_json(f.struct, node, version, flexible, ctx, path)
    if t in INT_RANGES:
        if isinstance(node, bool):
            raise bad(f"an integer ({t})")
        if isinstance(node, str):
            try:
                node = int(node)
            except ValueError:
                raise bad(f"an integer ({t})") from None
        if isinstance(node, float) and node.is_integer():
            node = int(node)
        if not isinstance(node, int):
            raise bad(f"an integer ({t})")
        lo, hi = INT_RANGES[t]
        if not lo <= node <= hi:
            raise bad(f"an integer in range for {t}")
        return node
    if t == "bool":
        if not isinstance(node, bool):
            raise bad("a boolean")
        return node
    if t == "float64":
        if isinstance(node, bool) or not isinstance(node, int | float | str):
            raise bad("a number")
        try:
            return float(node)
        except ValueError:
            raise bad("a number") from None
    if t == "string":
        if not isinstance(node, str):
            raise bad("a string")
        return node
    if t == "uuid":
        if not isinstance(node, str):
            raise bad("a base64url UUID string")
        try:
            return uuid_from_str(node)
        except ValueError:
            raise bad("a base64url UUID string") from None
    if t in ("bytes", "records"):
        if not isinstance(node, str):
            raise bad("a base64 string")
        try:
            raw = base64.b64decode(node, validate=True)
        except ValueError:
            raise bad("a base64 string") from None
        return memoryview(raw) if t == "records" else raw
    raise bad(f"a value of type {t}")  # pragma: no cover


# ----------------------------------------------------------------------------------------------
# Introspection


def fields_at(cls: type[KafkaStruct], version: int) -> list[KField]:
    """The fields of ``cls`` present at ``version``, in wire order."""
    return [f for f in cls.__kafka_fields__ if version in f.versions]


_ = NONE  # re-exported for generated modules that need an empty range
