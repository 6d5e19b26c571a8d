"""The message model: the base classes every generated message and struct derives from.

Approach. A generated module holds one class per struct of a message (``KafkaStruct``; the top one a
``KafkaMessage``) with ``__slots__``, a ``__kafka_fields__`` tuple of ``KField`` metadata, and one
straight-line decode and encode function per (struct, version layout), written with the wire
primitives of ``kwire.protocol._primitives``. ``KafkaMessage.decode`` and ``encode_into`` call those
functions and nothing else on the fast path; when they fail (short or malformed bytes, a value that
cannot be written) the reference implementation (``kwire.protocol._reference``) re-does the work
and raises ``DecodeError``/``EncodeError`` naming the field and offset. A fast-path failure the
reference does not confirm is a bug in generated code: counted (``fast_path_fallbacks``), warned
(``FastPathFallbackWarning``), or raised under ``KWIRE_STRICT_FASTPATH``. JSON (``to_json``,
``from_json``) is interpreted by the reference from the same metadata.
"""

from __future__ import annotations

import gc
import math
import os
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self

from kwire._wire import as_view
from kwire.errors import (
    EncodeError,
    FastPathError,
    FastPathFallbackWarning,
    KwireError,
    UnsupportedVersionError,
)
from kwire.protocol._primitives import FAST_ERRORS, RecordsReference
from kwire.protocol._reference import (
    careful_decode,
    check_encodable,
    check_version,
    struct_from_json,
    struct_to_json,
    uuid_from_str,
    uuid_to_str,
)
from kwire.protocol._spec._versions import VersionRange

__all__ = [
    "UNSET",
    "ZERO_UUID",
    "AnyMessage",
    "AnyStruct",
    "KField",
    "KafkaMessage",
    "KafkaStruct",
    "MessageInfo",
    "RecordsReference",
    "fast_path_fallbacks",
    "fields_at",
    "strict_fast_path",
    "uuid_from_str",
    "uuid_to_str",
]

#: The sentinel for "use the field's default" in generated ``__init__`` signatures (mutable defaults).
UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "UNSET", "__slots__": ()})()
ZERO_UUID: Final = uuid.UUID(int=0)
#: ``object.__new__``: generated decoders build instances without calling ``__init__``.
_new: Final[Any] = object.__new__


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
        #: ``(version range, wire type)`` pairs where an extension's field encoding replaces the
        #: type's own wire form (see ``kwire.protocol.ext``); empty for Kafka's fields.
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
        #: The tag-header layout: "kip482" (Kafka's) or an extension's (see ``kwire.protocol.ext``).
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

    def __repr__(self) -> str:
        parts = [f"{f.attr}={_short_repr(getattr(self, f.attr))}" for f in self.__kafka_fields__]
        if self.unknown_tags:
            parts.append(f"unknown_tags={self.unknown_tags!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_json(self, version: int) -> dict[str, Any]:
        """The JSON object Kafka's ``*JsonConverter.write`` gives for this struct at ``version``."""
        info = self.__kafka_message__
        check_version(info, version)
        return struct_to_json(self, version, info.flexible.contains(version), info.name)

    @classmethod
    def from_json(cls, obj: Any, version: int) -> Self:
        """Build an instance from Kafka's JSON shape (as ``*JsonConverter.read`` does)."""
        info = cls.__kafka_message__
        check_version(info, version)
        built: Self = struct_from_json(
            cls, obj, version, info.flexible.contains(version), info.name
        )
        return built


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
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Self:
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
    ) -> tuple[Self, int]:
        """Decode one message starting at ``pos``; returns ``(message, end position)``.

        With ``whole=True`` the message must end exactly at the end of ``data``.
        """
        fn = cls._decoders.get(version)
        if fn is None:
            check_version(cls.__kafka_message__, version)
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
            check_version(self.__kafka_message__, version)
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


if TYPE_CHECKING:

    class _AnyStructMeta(type):
        def __getattr__(cls, name: str) -> Any: ...

    class AnyStruct(KafkaStruct, metaclass=_AnyStructMeta):
        """A struct class found by name (``struct_class``): any constructor argument, any attribute.

        Typing only: the generated classes derive from ``KafkaStruct``, which has no catch-all
        ``__getattr__``, so mypy checks their field names; the lookups by name return this.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...

    class AnyMessage(KafkaMessage, AnyStruct):
        """A message class found by name or API key (``message_class``); typing only."""

else:
    AnyStruct = KafkaStruct
    AnyMessage = KafkaMessage


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
# Introspection


def fields_at(cls: type[KafkaStruct], version: int) -> list[KField]:
    """The fields of ``cls`` present at ``version``, in wire order."""
    return [f for f in cls.__kafka_fields__ if version in f.versions]
