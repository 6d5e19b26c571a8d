"""The append path's inputs and outputs: ``TopicConfig``, ``AppendOrigin``, ``AppendResult``.

Approach: plain frozen dataclasses holding what Kafka 3.9's ``LogValidator`` takes from the topic
configuration (``LogConfig``) and the caller (``AppendOrigin``), and what it hands back
(``ValidationResult``, ``RecordValidationStats``), with Kafka's property names beside each field.
The validation itself lives in ``_append`` and its three path modules.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from collections.abc import Mapping
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire.errors import APPEND_ERRORS, kafka_error_code
from kwire.records._codecs import Compression
from kwire.records._model import CREATE_TIME, LOG_APPEND_TIME

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ERROR_CODES",
    "LONG_MAX",
    "AppendOrigin",
    "AppendResult",
    "TopicConfig",
    "magic_for_message_format_version",
]

LONG_MAX: Final = (1 << 63) - 1
_INT64: Final = struct.Struct(">q")
#: Kafka's default ``max.message.bytes`` (1 MiB + the 12-byte log overhead).
DEFAULT_MAX_MESSAGE_BYTES: Final = 1024 * 1024 + 12

#: The Kafka error codes the append path can return (``org.apache.kafka.common.protocol.Errors``).
ERROR_CODES: Final[Mapping[str, int]] = {
    name: kafka_error_code(name) for name in sorted(APPEND_ERRORS)
}

_COMPRESSION_NAMES: Final[Mapping[str, Compression | None]] = {
    "producer": None,
    "uncompressed": Compression.NONE,
    "none": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


class AppendOrigin(enum.Enum):
    """Who is appending (Kafka's ``AppendOrigin``); the checks differ.

    ``CLIENT``: a producer; every rule applies. ``COORDINATOR``: a group or transaction
    coordinator; may write control batches, skips the producer-side offset and sequence checks.
    ``REPLICATION``: a follower copying the leader; nothing is validated beyond framing, size and
    CRC, and offsets are kept (the records must continue the log: see ``validate_and_assign``).
    """

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


def magic_for_message_format_version(version: str) -> int:
    """The magic a ``message.format.version`` writes: below 0.10.0 magic 0, below 0.11.0 magic 1."""
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    if not parts:
        raise ValueError(f"not a message.format.version: {version!r}")
    key = tuple(parts)
    if key < (0, 10):
        return 0
    if key < (0, 11):
        return 1
    return 2


@lazy_dataclass(frozen=True, slots=True)
class TopicConfig:
    """The topic settings the append path obeys (Kafka's names in the comments).

    ``message_format`` is the magic stored (``message.format.version``, see
    ``magic_for_message_format_version``); ``compression_type`` is ``producer`` (keep what the
    producer sent) or a codec name; ``timestamp_type`` is ``CREATE_TIME`` or ``LOG_APPEND_TIME``;
    a CreateTime record is rejected when it is more than ``timestamp_before_max_ms`` older or
    ``timestamp_after_max_ms`` newer than the broker's clock; ``compacted`` topics
    (``cleanup.policy`` containing ``compact``) require keys; a batch larger than
    ``max_message_bytes`` is rejected.
    """

    message_format: int = 2  # message.format.version (as the magic it writes)
    compression_type: str = "producer"  # compression.type
    timestamp_type: int = CREATE_TIME  # message.timestamp.type
    timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    timestamp_after_max_ms: int = LONG_MAX  # message.timestamp.after.max.ms
    compacted: bool = False  # cleanup.policy=compact
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES  # max.message.bytes

    def __post_init__(self) -> None:
        if self.message_format not in (0, 1, 2):
            raise ValueError(f"message_format must be a magic 0, 1 or 2, not {self.message_format}")
        if self.compression_type.lower() not in _COMPRESSION_NAMES:
            raise ValueError(
                f"compression_type must be one of {sorted(_COMPRESSION_NAMES)}, "
                f"not {self.compression_type!r}"
            )
        if self.timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError("timestamp_type must be CREATE_TIME (0) or LOG_APPEND_TIME (1)")
        if self.timestamp_before_max_ms < 0 or self.timestamp_after_max_ms < 0:
            raise ValueError("timestamp bounds must not be negative")
        if self.max_message_bytes < 0:
            raise ValueError("max_message_bytes must not be negative")

    @property
    def compression(self) -> Compression | None:
        """The codec the topic forces, or ``None`` for ``producer``."""
        return _COMPRESSION_NAMES[self.compression_type.lower()]

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TopicConfig:
        """Read Kafka topic properties (``message.timestamp.type=LogAppendTime``, ...).

        The pre-3.6 ``message.timestamp.difference.max.ms`` bounds both directions unless
        ``message.timestamp.before.max.ms``/``after.max.ms`` are given, as in Kafka 3.6-3.9.
        """
        kwargs: dict[str, object] = {}
        if "message.format.version" in props:
            kwargs["message_format"] = magic_for_message_format_version(
                props["message.format.version"]
            )
        if "compression.type" in props:
            kwargs["compression_type"] = props["compression.type"]
        if "message.timestamp.type" in props:
            name = props["message.timestamp.type"].strip()
            types = {"CreateTime": CREATE_TIME, "LogAppendTime": LOG_APPEND_TIME}
            if name not in types:
                raise ValueError(
                    f"message.timestamp.type must be CreateTime or LogAppendTime: {name}"
                )
            kwargs["timestamp_type"] = types[name]
        difference = props.get("message.timestamp.difference.max.ms")
        for key, attr in (
            ("message.timestamp.before.max.ms", "timestamp_before_max_ms"),
            ("message.timestamp.after.max.ms", "timestamp_after_max_ms"),
        ):
            value = props.get(key, difference)
            if value is not None:
                kwargs[attr] = int(value)
        if "cleanup.policy" in props:
            policies = {p.strip() for p in props["cleanup.policy"].split(",")}
            kwargs["compacted"] = "compact" in policies
        if "max.message.bytes" in props:
            kwargs["max_message_bytes"] = int(props["max.message.bytes"])
        return cls(**kwargs)  # type: ignore[arg-type]


@lazy_dataclass(frozen=True, slots=True)
class AppendResult:
    """What to append and what the broker reports about it.

    ``records`` holds every batch to write (``batches`` are views of it, one per batch).
    ``first_offset``/``last_offset`` are the offsets assigned (-1 when nothing is appended).
    ``max_timestamp`` and ``shallow_offset_of_max_timestamp`` are Kafka 3.9's
    ``ValidationResult.maxTimestampMs``/``shallowOffsetOfMaxTimestamp``: the offset is the *last
    offset of the batch* holding the max timestamp (v2 and compressed), the record's own offset for
    uncompressed magic 0/1 messages, -1 when there is no timestamp. ``log_append_time`` is the time
    written under LogAppendTime, else -1 (as ProduceResponse's ``log_append_time_ms``).
    ``in_place`` tells whether the producer's bytes were kept (only header fields patched);
    otherwise ``rebuild_reason`` says why the records were rebuilt. ``converted_records`` counts
    records rebuilt (Kafka's ``RecordValidationStats.numRecordsConverted``).
    """

    records: bytes | bytearray | memoryview
    batches: tuple[memoryview, ...]
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int
    in_place: bool
    rebuild_reason: str | None
    record_count: int
    converted_records: int
    magic: int
    compression: Compression

    @property
    def next_offset(self) -> int:
        """The log end offset after this append."""
        return self.last_offset + 1 if self.last_offset >= 0 else -1

    def relocated(self, next_offset: int) -> AppendResult | None:
        """The same append with offsets assigned from ``next_offset`` instead: v2 batches keep
        their base offset outside the CRC, so validation done ahead (off the broker's event loop)
        still holds when other appends came first. None when a batch is magic 0/1 (offsets
        inside a compressed wrapper) and validation must run again."""
        if self.first_offset < 0 or next_offset == self.first_offset:
            return self
        if self.magic < 2 or any(b[16] < 2 for b in self.batches):
            return None
        delta = next_offset - self.first_offset
        buf = bytearray(self.records)
        views: list[memoryview] = []
        position = 0
        whole = memoryview(buf)
        for batch in self.batches:
            base = _INT64.unpack_from(buf, position)[0]
            _INT64.pack_into(buf, position, base + delta)
            views.append(whole[position : position + len(batch)])
            position += len(batch)
        shallow = self.shallow_offset_of_max_timestamp
        return dataclasses.replace(
            self,
            records=buf,
            batches=tuple(views),
            first_offset=self.first_offset + delta,
            last_offset=self.last_offset + delta,
            shallow_offset_of_max_timestamp=shallow + delta if shallow >= 0 else shallow,
        )

    @property
    def recompressed(self) -> bool:
        """True when records were rebuilt into a compressed batch (Kafka had to recompress)."""
        return not self.in_place and self.compression != Compression.NONE
