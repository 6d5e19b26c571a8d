"""Magic 0 and 1 message sets (Kafka's ``LegacyRecord`` / ``AbstractLegacyRecordBatch``).

Layout of one entry (big-endian)::

    offset int64 | size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (magic 1 only) | keyLength int32 | key | valueLength int32 | value

The CRC is CRC32 (zlib's) over magic..end. Attributes: bits 0-2 codec, bit 3 timestamp type
(magic 1 only). A compressed entry (a "wrapper") carries in its value a compressed message set of
inner entries, which must not themselves be compressed.

Offsets (KIP-31): inner offsets of a magic 1 wrapper are relative; the absolute offset of an inner
entry is ``wrapper offset - last inner offset + inner offset``, except that a wrapper offset of 0
means the inner offsets are used as they are (what a producer sends before the broker assigns
offsets); a wrapper offset smaller than the last inner offset is corrupt. Magic 0 inner offsets
are absolute. A magic 1 wrapper with LogAppendTime gives its timestamp to every inner entry.

Approach: as Kafka, each top-level entry is a "batch" (``LegacyBatch``); a compressed one is
decompressed (bounded) on first iteration and its inner entries are parsed in full, because the
relative offsets need the last inner offset before the first record can be given its offset.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Final, NamedTuple

from kwire._wire import INT32_MAX
from kwire.errors import CorruptRecordError, DecodeError, EncodeError
from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression, decompress
from kwire.records._model import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    Batch,
    Record,
)

__all__ = [
    "LOG_OVERHEAD",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "InnerEntry",
    "LegacyBatch",
    "encode_message",
    "legacy_crc",
]

LOG_OVERHEAD: Final = 12  # offset int64 + size int32
RECORD_OVERHEAD_V0: Final = 14  # crc + magic + attributes + key length + value length
RECORD_OVERHEAD_V1: Final = 22  # ... + timestamp
CRC_OFFSET: Final = 12  # in the entry, after offset and size
MAGIC_OFFSET: Final = 16
ATTRIBUTES_OFFSET: Final = 17
TIMESTAMP_OFFSET: Final = 18
ATTR_TIMESTAMP_TYPE: Final = 0x08

_ENTRY_V0: Final = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_ENTRY_V1: Final = struct.Struct(">qiIbbq")  # ... timestamp
_INT32: Final = struct.Struct(">i")

_crc32 = zlib.crc32


def legacy_crc(data: bytes | bytearray | memoryview) -> int:
    """CRC32 as legacy messages use it (over magic..end)."""
    return _crc32(data)


class InnerEntry(NamedTuple):
    """One inner message of a legacy wrapper, as stored (``LegacyBatch.inner_entries``)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    crc: int


class _Entry:
    """One parsed legacy entry (shallow or inner)."""

    __slots__ = ("attributes", "crc", "key", "magic", "offset", "timestamp", "value")

    def __init__(
        self,
        offset: int,
        magic: int,
        attributes: int,
        crc: int,
        timestamp: int,
        key: memoryview | None,
        value: memoryview | None,
    ) -> None:
        self.offset = offset
        self.magic = magic
        self.attributes = attributes
        self.crc = crc
        self.timestamp = timestamp
        self.key = key
        self.value = value


def _parse_entry(view: memoryview, pos: int, size: int, verify_crc: bool) -> _Entry:
    """Parse the entry occupying ``view[pos : pos + 12 + size]`` (the caller checked the bounds).

    Raised errors carry offsets relative to ``view``.
    """
    end = pos + LOG_OVERHEAD + size
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"message size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
            offset=pos + 8,
        )
    magic = view[pos + MAGIC_OFFSET]
    if magic == 0:
        offset, _, crc, magic, attributes = _ENTRY_V0.unpack_from(view, pos)
        timestamp = NO_TIMESTAMP
        p = pos + TIMESTAMP_OFFSET
    elif magic == 1:
        if size < RECORD_OVERHEAD_V1:
            raise CorruptRecordError(
                f"message size {size} is less than the magic 1 overhead ({RECORD_OVERHEAD_V1})",
                offset=pos + 8,
            )
        offset, _, crc, magic, attributes, timestamp = _ENTRY_V1.unpack_from(view, pos)
        p = pos + TIMESTAMP_OFFSET + 8
    else:
        raise CorruptRecordError(f"invalid magic {magic} in a legacy message set", offset=pos + 16)
    if verify_crc:
        actual = _crc32(view[pos + MAGIC_OFFSET : end])
        if actual != crc:
            raise CorruptRecordError(
                f"CRC32 mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}",
                offset=pos + CRC_OFFSET,
            )
    (n,) = _INT32.unpack_from(view, p)
    p += 4
    if n >= 0:
        if n > end - 4 - p:
            raise CorruptRecordError(f"key length {n} past the message end", offset=p - 4)
        key: memoryview | None = view[p : p + n]
        p += n
    elif n == -1:
        key = None
    else:
        raise CorruptRecordError(f"invalid key length {n}", offset=p - 4)
    (n,) = _INT32.unpack_from(view, p)
    p += 4
    if n >= 0:
        if n != end - p:
            raise CorruptRecordError(
                f"value length {n} does not match the {end - p} bytes left in the message",
                offset=p - 4,
            )
        value: memoryview | None = view[p:end]
    elif n == -1:
        if p != end:
            raise CorruptRecordError(
                f"{end - p} bytes left after a null value in the message", offset=p - 4
            )
        value = None
    else:
        raise CorruptRecordError(f"invalid value length {n}", offset=p - 4)
    return _Entry(offset, magic, attributes, crc, timestamp, key, value)


class LegacyBatch(Batch):
    """One top-level magic 0/1 entry (a message or a compressed wrapper), like Kafka's legacy batch.

    For an uncompressed entry the batch holds exactly one record. For a wrapper, iteration
    decompresses the value (bounded by ``max_decompressed_size``) and yields the inner messages
    with absolute offsets; the decompressed bytes are kept by the batch (and by the records' key
    and value slices) once decoded. See ``Batch`` for the fields.
    """

    __slots__ = ("_entry", "_inner", "_verify_crc")

    CRC_NAME = "CRC32"
    CRC_OFFSET = CRC_OFFSET

    def __init__(
        self,
        view: memoryview,
        position: int = 0,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        whole: memoryview | None = None,
        src: bytes | memoryview | None = None,
    ) -> None:
        """Parse the entry that ``view`` holds exactly (offset and size prefix included).

        ``whole`` and ``src`` (the reader's buffer) are accepted for symmetry with
        ``RecordBatch`` and not used.
        """
        size = len(view) - LOG_OVERHEAD
        try:
            entry = _parse_entry(view, 0, size, verify_crc)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                exc.reason,
                offset=None if exc.offset is None else position + exc.offset,
                context=f"legacy message at offset {int.from_bytes(view[:8], 'big', signed=True)}",
            ) from None
        codec = entry.attributes & 0x07
        if codec > 3:
            raise CorruptRecordError(
                f"compression codec id {codec} is not valid for magic {entry.magic}",
                offset=position + ATTRIBUTES_OFFSET,
                context=f"legacy message at offset {entry.offset}",
            )
        if codec and entry.value is None:
            raise CorruptRecordError(
                "compressed message set with a null value",
                offset=position,
                context=f"legacy message at offset {entry.offset}",
            )
        self._entry = entry
        self._inner: list[Record] | None = None
        self._verify_crc = verify_crc
        self._max_decompressed_size = max_decompressed_size
        self.view = view
        self.position = position
        self.size = len(view)
        self.magic = entry.magic
        self.crc = entry.crc
        self.attributes = entry.attributes
        if entry.magic == 0:
            self.timestamp_type = NO_TIMESTAMP_TYPE
        else:
            self.timestamp_type = (
                LOG_APPEND_TIME if entry.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME
            )
        self.max_timestamp = entry.timestamp
        self.is_transactional = False
        self.is_control = False
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.partition_leader_epoch = -1

    @property
    def offset(self) -> int:
        """The entry's own offset field (a wrapper's is the offset of its last inner message)."""
        return self._entry.offset

    @property
    def timestamp(self) -> int:
        return self._entry.timestamp

    @property
    def key(self) -> memoryview | None:
        """The top-level entry's key (a slice of the caller's buffer)."""
        return self._entry.key

    @property
    def value(self) -> memoryview | None:
        """The top-level entry's value (for a wrapper: the compressed inner message set)."""
        return self._entry.value

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & 0x07)

    @property
    def base_offset(self) -> int:
        """The first record's offset (decompresses a wrapper, as Kafka does)."""
        if not self.attributes & 0x07:
            return self._entry.offset
        return self._records()[0].offset

    @property
    def last_offset(self) -> int:
        return self._entry.offset

    @property
    def base_timestamp(self) -> int:
        return self._entry.timestamp

    @property
    def record_count(self) -> int:
        return len(self._records()) if self.attributes & 0x07 else 1

    def compute_crc(self) -> int:
        return _crc32(self.view[MAGIC_OFFSET:])

    def verify(self) -> None:
        self._check_crc(f"legacy message at offset {self._entry.offset}")
        if self.attributes & 0x07:
            self._inner = None
            verify = self._verify_crc
            self._verify_crc = True
            try:
                self._records()
            finally:
                self._verify_crc = verify

    def records(self) -> Iterator[Record]:
        if not self.attributes & 0x07:
            e = self._entry
            return iter(
                (Record(e.offset, e.timestamp, e.key, e.value, (), self, self.timestamp_type),)
            )
        return iter(self._records())

    def inner_entries(self) -> list[InnerEntry]:
        """For a wrapper: its inner messages' stored offset, magic, attributes, timestamp and CRC.

        What Kafka's deep iteration of a legacy wrapper shows (``kwire dump``), without building
        records. Raises ``CorruptRecordError`` if the payload cannot be decompressed or parsed.
        """
        data = self._decompress()
        return [
            InnerEntry(e.offset, e.magic, e.attributes, e.timestamp, e.crc)
            for e in self._parse_inner(data)
        ]

    def _decompress(self) -> memoryview:
        e = self._entry
        assert e.value is not None
        codec = e.attributes & 0x07
        try:
            data = decompress(codec, e.value, magic=e.magic, max_size=self._max_decompressed_size)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"{Compression(codec).name.lower()} message set: {exc.reason}",
                offset=self.position + self.size - len(e.value) + (exc.offset or 0),
                context=f"legacy wrapper at offset {e.offset}",
            ) from None
        return memoryview(data)

    def _parse_inner(self, view: memoryview) -> list[_Entry]:
        wrapper = self._entry
        entries: list[_Entry] = []
        pos = 0
        end = len(view)
        verify = self._verify_crc
        try:
            while pos < end:
                if end - pos < LOG_OVERHEAD:
                    raise CorruptRecordError("truncated inner message header", offset=pos)
                (size,) = _INT32.unpack_from(view, pos + 8)
                if size < RECORD_OVERHEAD_V0 or size > end - pos - LOG_OVERHEAD:
                    raise CorruptRecordError(
                        f"inner message size {size} out of range ({end - pos - 12} bytes left)",
                        offset=pos + 8,
                    )
                entry = _parse_entry(view, pos, size, verify)
                if entry.attributes & 0x07:
                    raise CorruptRecordError("inner messages must not be compressed", offset=pos)
                entries.append(entry)
                pos += LOG_OVERHEAD + size
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                exc.reason,
                offset=exc.offset,
                path=f"inner[{len(entries)}]",
                context=f"legacy wrapper at offset {wrapper.offset}, decompressed message set",
            ) from None
        except DecodeError as exc:  # pragma: no cover - struct reads are bounds-checked above
            raise CorruptRecordError(str(exc)) from None
        if not entries:
            raise CorruptRecordError(
                "compressed message set with no inner messages",
                context=f"legacy wrapper at offset {wrapper.offset}",
            )
        return entries

    def _records(self) -> list[Record]:
        if self._inner is not None:
            return self._inner
        wrapper = self._entry
        entries = self._parse_inner(self._decompress())
        if wrapper.magic == 1:
            if wrapper.offset == 0:
                base = 0
            else:
                last = entries[-1].offset
                if wrapper.offset < last:
                    raise CorruptRecordError(
                        f"wrapper offset {wrapper.offset} is less than the last inner offset "
                        f"{last} and is not zero",
                        offset=self.position,
                        context=f"legacy wrapper at offset {wrapper.offset}",
                    )
                base = wrapper.offset - last
        else:
            base = 0
        ts_type = self.timestamp_type
        log_append = ts_type == LOG_APPEND_TIME
        wrapper_ts = wrapper.timestamp
        records = [
            Record(
                base + e.offset,
                (wrapper_ts if log_append else e.timestamp) if e.magic == 1 else NO_TIMESTAMP,
                e.key,
                e.value,
                (),
                self,
                ts_type if e.magic == 1 else NO_TIMESTAMP_TYPE,
            )
            for e in entries
        ]
        self._inner = records
        return records


def encode_message(
    out: bytearray,
    *,
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int,
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
) -> int:
    """Append one legacy entry (offset, size, CRC32, ...) to ``out``; returns its start."""
    if magic not in (0, 1):
        raise EncodeError(f"legacy messages have magic 0 or 1, not {magic}")
    start = len(out)
    try:
        if magic == 0:
            out += _ENTRY_V0.pack(offset, 0, 0, 0, attributes)
        else:
            out += _ENTRY_V1.pack(offset, 0, 0, 1, attributes, timestamp)
    except struct.error as exc:
        raise EncodeError(f"legacy message field out of range: {exc}") from None
    if key is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _INT32.pack(len(key))
        out += key
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        if len(value) > INT32_MAX:
            raise EncodeError("legacy message value too large")
        out += _INT32.pack(len(value))
        out += value
    size = len(out) - start - LOG_OVERHEAD
    out[start + 8 : start + 12] = _INT32.pack(size)
    crc = _crc32(memoryview(out)[start + MAGIC_OFFSET :])
    out[start + CRC_OFFSET : start + MAGIC_OFFSET] = crc.to_bytes(4, "big")
    return start
