"""The reference implementation of the protocol: the careful decoder, the encode checks and JSON.

Approach: interpreters over a generated class's ``__kafka_fields__`` (the ``KField`` metadata), slow
and thorough where the generated functions are fast and terse. ``careful_decode`` tracks the field
path and byte offset and raises ``DecodeError`` naming both; ``check_encodable`` walks an object and
raises ``EncodeError`` or ``UnsupportedVersionError`` naming the field that cannot be written.
``KafkaMessage.decode``/``encode_into`` call them only when the generated code fails; when they find
nothing wrong the generated code has a bug (see ``_runtime.fast_path_fallbacks``), and tests compare
both on every message-version. JSON (``struct_to_json``/``struct_from_json``) is interpreted from the
same metadata, in the shape of Kafka's generated ``*JsonConverter`` classes.

Wire types and tag headers Kafka does not have are looked up in
``kwire.protocol._extension_points`` and read or checked by the extension that registered them.
"""

from __future__ import annotations

import base64
import struct
import uuid
from typing import TYPE_CHECKING, Any, Final

from kwire._wire import uuid_from_text, uuid_text
from kwire.errors import DecodeError, EncodeError, UnsupportedVersionError
from kwire.protocol._extension_points import (
    FIELD_ENCODINGS,
    KAFKA_TAG_HEADER,
    TAG_HEADER_CODECS,
    TagHeaderCodec,
)
from kwire.protocol._primitives import INT_RANGES, MAX_STRING, _records_bytes, uuid_from_bytes

if TYPE_CHECKING:
    from kwire.protocol._runtime import KafkaMessage, KafkaStruct, KField, MessageInfo

__all__ = [
    "careful_decode",
    "check_encodable",
    "check_version",
    "struct_from_json",
    "struct_to_json",
    "uuid_from_str",
    "uuid_to_str",
]

_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_new: Final[Any] = object.__new__


# ----------------------------------------------------------------------------------------------
# UUIDs as Kafka prints them


def uuid_to_str(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding (22 characters)."""
    return uuid_text(u.bytes)


def uuid_from_str(s: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString`` (22-character URL-safe base64)."""
    return uuid.UUID(bytes=uuid_from_text(s))


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
    """One reference decode: the buffer, the message it is read as, and its tag-header layout."""

    __slots__ = ("buf", "context", "tag_header_codec")

    def __init__(self, buf: Any, context: str, tag_header: TagHeaderCodec | None = None) -> None:
        self.buf = buf
        self.context = context
        #: ``None`` for Kafka's tag header, else the registered codec of the spec's layout
        self.tag_header_codec = tag_header

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

    def tag_header(self, pos: int, end: int, path: str) -> tuple[int, int, int]:
        """``(tag, size, position)``: two unsigned varints (or a registered codec's layout)."""
        if self.tag_header_codec is not None:
            return self.tag_header_codec.read_checked(self, pos, end, path)
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
        encoding = FIELD_ENCODINGS.get(t) if f.encodings else None
        if encoding is not None:
            return encoding.read_checked(self, pos, end, path)
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
    codec = None if info.tag_header == KAFKA_TAG_HEADER else TAG_HEADER_CODECS[info.tag_header]
    reader = _Careful(buf, f"{info.name} v{version}", codec)
    flexible = version in info.flexible
    msg, end = reader.struct(cls, pos, len(buf), version, flexible, "")
    if whole and end != len(buf):
        raise reader.fail(f"{len(buf) - end} trailing bytes after the message", end, "")
    return msg, end


# ----------------------------------------------------------------------------------------------
# The careful encoder check: says which field cannot be written, and why


def check_version(info: MessageInfo, version: int) -> None:
    """``UnsupportedVersionError`` unless ``version`` is one of the message's valid versions."""
    if version not in info.valid:
        raise UnsupportedVersionError(
            f"{info.name} has no version {version} (valid versions: {info.valid})"
        )


def check_encodable(obj: KafkaStruct, version: int) -> None:
    """Raise ``EncodeError`` / ``UnsupportedVersionError`` naming the first unwritable field."""
    info = obj.__kafka_message__
    check_version(info, version)
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
        encoding = FIELD_ENCODINGS.get(wire) if f.encodings else None
        if encoding is not None:
            why = encoding.why_unwritable(v)
            if why is not None:
                raise EncodeError(f"{why} at version {version}{where}")
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
