"""The objects ``read_batches`` hands out: ``Batch`` (any magic) and ``Record``.

Approach: a batch is a parsed header plus a ``memoryview`` of its bytes in the caller's buffer (no
copy). Records are decoded lazily, one at a time, when the batch is iterated; a record holds its
key, value and header values as ``memoryview`` slices, either of the caller's buffer (uncompressed
batches) or of the batch's decompressed bytes (compressed batches, which the slices keep alive).
A ``memoryview`` slice keeps its whole underlying buffer alive; ``bytes(view)`` or
``Record.copy()`` detaches. Per-batch facts that every record shares (timestamp type, control flag,
base sequence) are read through a reference to the batch instead of being copied into each record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar, Final

from kwire.errors import CorruptRecordError, DecodeError
from kwire.records._codecs import Compression
from kwire.records._sequence import last_sequence

__all__ = [
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "NO_TIMESTAMP",
    "NO_TIMESTAMP_TYPE",
    "Batch",
    "Header",
    "Record",
]

#: Timestamp types (Kafka's ``TimestampType`` ids). Magic 0 has none (-1).
NO_TIMESTAMP_TYPE: Final = -1
CREATE_TIME: Final = 0
LOG_APPEND_TIME: Final = 1
#: Kafka's ``RecordBatch.NO_TIMESTAMP``.
NO_TIMESTAMP: Final = -1

#: Every codec by its id (``Batch.compression``).
_CODECS: Final = tuple(Compression)

#: One record header: (key, value). The value is ``None`` for a null header value.
Header = tuple[str, memoryview | bytes | None]


class _BatchFacts:
    """What a detached record needs from its batch (``Record.copy()``)."""

    __slots__ = ("base_offset", "base_sequence", "is_control", "magic", "timestamp_type")

    def __init__(
        self, base_offset: int, base_sequence: int, is_control: bool, magic: int, ts_type: int
    ) -> None:
        self.base_offset = base_offset
        self.base_sequence = base_sequence
        self.is_control = is_control
        self.magic = magic
        self.timestamp_type = ts_type


class Record:
    """One record (v2) or message (magic 0/1).

    ``key`` and ``value`` are ``memoryview`` slices (or ``None`` for null); ``headers`` is a tuple
    of ``(str, memoryview | None)`` (always empty below magic 2). The slices keep the buffer they
    come from alive: the caller's buffer for uncompressed batches, the decompressed bytes of the
    batch otherwise. ``copy()`` returns a record holding ``bytes`` instead, bound to nothing.
    """

    __slots__ = ("_batch", "headers", "key", "offset", "timestamp", "timestamp_type", "value")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: memoryview | bytes | None,
        value: memoryview | bytes | None,
        headers: tuple[Header, ...],
        batch: Batch | _BatchFacts,
        timestamp_type: int,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self._batch = batch
        #: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0).
        self.timestamp_type = timestamp_type

    @property
    def is_control(self) -> bool:
        return self._batch.is_control

    @property
    def magic(self) -> int:
        return self._batch.magic

    @property
    def sequence(self) -> int:
        """The producer sequence number (v2 with a base sequence), else -1; wraps like Kafka's."""
        return last_sequence(self._batch.base_sequence, self.offset - self._batch.base_offset)

    def copy(self) -> Record:
        """A detached copy: ``bytes`` key, value and header values, no reference to any buffer."""
        b = self._batch
        facts = _BatchFacts(b.base_offset, b.base_sequence, b.is_control, b.magic, b.timestamp_type)
        return Record(
            self.offset,
            self.timestamp,
            None if self.key is None else bytes(self.key),
            None if self.value is None else bytes(self.value),
            tuple((k, None if v is None else bytes(v)) for k, v in self.headers),
            facts,
            self.timestamp_type,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (
            self.offset == other.offset
            and self.timestamp == other.timestamp
            and self.timestamp_type == other.timestamp_type
            and self.key == other.key
            and self.value == other.value
            and self.headers == other.headers
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        def show(v: memoryview | bytes | None) -> str:
            if v is None:
                return "None"
            raw = bytes(v)
            return repr(raw if len(raw) <= 32 else raw[:32] + b"...")

        hdrs = ", ".join(f"({k!r}, {show(v)})" for k, v in self.headers)
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={show(self.key)}, "
            f"value={show(self.value)}, headers=[{hdrs}])"
        )


class Batch:
    """One record batch (magic 2) or one shallow message (magic 0/1, as Kafka's legacy batches).

    ``view`` is a ``memoryview`` of the batch's bytes in the caller's buffer (offset and length
    prefix included) and keeps that buffer alive; ``position`` is where it starts in the buffer.
    Iterating decodes the records lazily. Fields a format lacks have Kafka's "none" values:
    producer id/epoch/base sequence/partition leader epoch -1, not transactional, not control.
    """

    __slots__ = (
        "_max_decompressed_size",
        "attributes",
        "base_sequence",
        "crc",
        "is_control",
        "is_transactional",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "size",
        "timestamp_type",
        "view",
    )

    #: Header size in bytes (v2: 61; legacy: offset+size+CRC+magic+attributes[+timestamp]).
    HEADER_SIZE: ClassVar[int] = 0

    magic: int
    attributes: int
    crc: int
    size: int
    position: int
    view: memoryview
    timestamp_type: int
    is_transactional: bool
    is_control: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    max_timestamp: int
    _max_decompressed_size: int

    @property
    def compression(self) -> Compression:
        codec = self.attributes & 0x07
        # a tuple lookup: calling the enum class costs more than the rest of a header check
        return _CODECS[codec] if codec < len(_CODECS) else Compression(codec)

    @property
    def base_offset(self) -> int:
        raise NotImplementedError

    @property
    def last_offset(self) -> int:
        raise NotImplementedError

    @property
    def offset_delta(self) -> int:
        """``last_offset - base_offset`` (v2: the header's lastOffsetDelta)."""
        return self.last_offset - self.base_offset

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        """The producer sequence of the last record (``DefaultRecordBatch.lastSequence``), or -1."""
        return last_sequence(self.base_sequence, self.offset_delta)

    @property
    def has_delete_horizon(self) -> bool:
        return False

    @property
    def base_timestamp(self) -> int:
        raise NotImplementedError

    @property
    def record_count(self) -> int:
        raise NotImplementedError

    #: The checksum's name in errors and where it is stored in the batch.
    CRC_NAME: ClassVar[str] = "CRC"
    CRC_OFFSET: ClassVar[int] = 0

    def compute_crc(self) -> int:
        """The checksum of the bytes the stored CRC covers (v2: CRC32C, magic 0/1: CRC32)."""
        raise NotImplementedError

    def is_valid(self) -> bool:
        """Whether the stored CRC matches the bytes (Kafka's ``isValid()``)."""
        return self.compute_crc() == self.crc

    def _check_crc(self, context: str) -> None:
        actual = self.compute_crc()
        if actual != self.crc:
            raise CorruptRecordError(
                f"{self.CRC_NAME} mismatch: stored 0x{self.crc:08x}, computed 0x{actual:08x}",
                offset=self.position + self.CRC_OFFSET,
                context=context,
            )

    def verify(self) -> None:
        """Check the CRC (and, for compressed batches, that every record decodes)."""
        raise NotImplementedError

    def records(self) -> Iterator[Record]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def __bytes__(self) -> bytes:
        return bytes(self.view)

    def __repr__(self) -> str:
        try:
            base: object = self.base_offset
        except DecodeError:  # a legacy wrapper that does not decompress
            base = "?"
        return (
            f"{type(self).__name__}(magic={self.magic}, base_offset={base}, "
            f"last_offset={self.last_offset}, compression={self.compression.name}, "
            f"size={self.size}, position={self.position})"
        )
