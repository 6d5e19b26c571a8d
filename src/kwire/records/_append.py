"""The broker's append path: validate one partition's Produce records and assign their offsets.

Approach: a pure function (bytes in, bytes and facts out) that follows what Apache Kafka 3.9 does
between receiving a Produce request and writing the log: ``UnifiedLog.analyzeAndValidateRecords``
(framing, size, CRC) and then ``LogValidator.validateMessagesAndAssignOffsets``. Three paths, as
Kafka's:

1. uncompressed in, uncompressed out, same magic: offsets (and v2 leader epoch, v1/v2 max
   timestamp) are patched into the batch headers in place;
2. uncompressed in, uncompressed out, other magic: every record is rebuilt in the topic's format;
3. anything compressed: records are validated by walking the (decompressed) batch; the compressed
   payload is kept as it is (KIP-31) unless the codec changes, the format changes, the target is
   magic 0 (absolute inner offsets), or magic 0/1 inner offsets are not 0, 1, 2, ... (the
   mirror-maker case), in which case the batch is rebuilt with the topic's codec.

In-place patches touch only header fields. A v2 batch's base offset and partition leader epoch lie
outside its CRC32C, so writing them costs nothing more; the CRC is recomputed only when the
attributes or the max timestamp change (LogAppendTime, or a producer max timestamp that disagrees
with its records). A magic 0/1 message's offset lies outside its CRC32; its timestamp and attributes
do not. The result is a new buffer; the caller's bytes are never modified (``mutate=True`` patches a
writable caller buffer instead, like Kafka does, when the copy matters).

Errors are what Kafka would put in the ProduceResponse: ``AppendError`` carries the error code and
name, a message, and for per-record failures the indexes (within the batch) and messages of the
offending records, as ``ProduceResponse.PartitionResponse.recordErrors``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from kwire._wire import INT16, INT32, INT64, UINT32
from kwire.errors import (
    APPEND_ERRORS,
    AppendError,
    DecodeError,
    RecordError,
    kafka_error_code,
)
from kwire.records import _legacy as legacy
from kwire.records import _v2 as v2
from kwire.records._append_scan import OK as SCAN_OK
from kwire.records._append_scan import scanner
from kwire.records._batch import read_batches
from kwire.records._builder import BatchBuilder
from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression
from kwire.records._model import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    Batch,
    Header,
    Record,
)

__all__ = [
    "AppendError",
    "AppendOrigin",
    "AppendResult",
    "RecordError",
    "TopicConfig",
    "magic_for_message_format_version",
    "validate_and_assign",
]

LONG_MAX: Final = (1 << 63) - 1
_LEGACY_OFFSET: Final = 0  # a magic 0/1 entry starts with its offset (outside its CRC)
_LEGACY_CODEC_MASK: Final = 0x07
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


# --- configuration ------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
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


# --- result -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
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

    @property
    def recompressed(self) -> bool:
        """True when records were rebuilt into a compressed batch (Kafka had to recompress)."""
        return not self.in_place and self.compression != Compression.NONE


# --- in-place patches ---------------------------------------------------------------------------


def _v2_attributes(
    codec: int, ts_type: int, transactional: bool, control: bool, delete_horizon: bool
) -> int:
    # DefaultRecordBatch.computeAttributes: unknown bits are not carried over.
    attrs = codec & v2.ATTR_CODEC_MASK
    if ts_type == LOG_APPEND_TIME:
        attrs |= v2.ATTR_TIMESTAMP_TYPE
    if transactional:
        attrs |= v2.ATTR_TRANSACTIONAL
    if control:
        attrs |= v2.ATTR_CONTROL
    if delete_horizon:
        attrs |= v2.ATTR_DELETE_HORIZON
    return attrs


def _patch_v2(
    buf: bytearray | memoryview,
    pos: int,
    batch: Batch,
    *,
    last_offset: int,
    leader_epoch: int,
    ts_type: int | None,
    max_timestamp: int,
) -> None:
    """``setLastOffset``, ``setPartitionLeaderEpoch`` and (if ``ts_type``) ``setMaxTimestamp``."""
    INT64.pack_into(buf, pos + v2.BASE_OFFSET_OFFSET, last_offset - batch.offset_delta)
    INT32.pack_into(buf, pos + v2.PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    if ts_type is None:
        return
    if batch.timestamp_type == ts_type and batch.max_timestamp == max_timestamp:
        return  # nothing the CRC covers changes
    attrs = _v2_attributes(
        batch.compression,
        ts_type,
        batch.is_transactional,
        batch.is_control,
        batch.has_delete_horizon,
    )
    INT16.pack_into(buf, pos + v2.ATTRIBUTES_OFFSET, attrs)
    INT64.pack_into(buf, pos + v2.MAX_TIMESTAMP_OFFSET, max_timestamp)
    end = pos + batch.size
    crc = v2.crc32c(memoryview(buf)[pos + v2.ATTRIBUTES_OFFSET : end])
    UINT32.pack_into(buf, pos + v2.CRC_OFFSET, crc)


def _patch_legacy(
    buf: bytearray | memoryview,
    pos: int,
    batch: Batch,
    *,
    last_offset: int,
    ts_type: int | None,
    max_timestamp: int,
) -> None:
    """``AbstractLegacyRecordBatch.setLastOffset`` and, for magic 1, ``setMaxTimestamp``."""
    INT64.pack_into(buf, pos + _LEGACY_OFFSET, last_offset)
    if ts_type is None or batch.magic == 0:
        return
    if batch.timestamp_type == ts_type and batch.max_timestamp == max_timestamp:
        return
    # LegacyRecord.computeAttributes: the codec bits and, for magic 1, the timestamp type bit.
    attrs = batch.compression & _LEGACY_CODEC_MASK
    if ts_type == LOG_APPEND_TIME:
        attrs |= legacy.ATTR_TIMESTAMP_TYPE
    buf[pos + legacy.ATTRIBUTES_OFFSET] = attrs
    INT64.pack_into(buf, pos + legacy.TIMESTAMP_OFFSET, max_timestamp)
    end = pos + batch.size
    crc = legacy.legacy_crc(memoryview(buf)[pos + legacy.MAGIC_OFFSET : end])
    UINT32.pack_into(buf, pos + legacy.CRC_OFFSET, crc)


# --- validation ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Input:
    """The parsed request: the buffer, its complete batches, and what the framing pass found."""

    view: memoryview
    batches: list[Batch]
    source_compression: Compression
    valid_bytes: int


def _analyze(
    view: memoryview,
    config: TopicConfig,
    origin: AppendOrigin,
    *,
    verify_crc: bool,
    max_decompressed_size: int,
) -> _Input:
    """``UnifiedLog.analyzeAndValidateRecords``: framing, CRC, v2 base offset 0, size, codec."""
    batches: list[Batch] = []
    source = Compression.NONE
    valid = 0
    reader = read_batches(
        view,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        allow_truncated_tail=True,
    )
    try:
        for batch in reader:
            pos = batch.position
            if origin is AppendOrigin.CLIENT and batch.magic >= 2 and batch.base_offset != 0:
                raise AppendError(
                    "INVALID_RECORD",
                    f"the baseOffset of the record batch should be 0, but it is {batch.base_offset}",
                    position=pos,
                )
            if batch.size > config.max_message_bytes:
                raise AppendError(
                    "MESSAGE_TOO_LARGE",
                    f"the record batch size is {batch.size} bytes which exceeds the maximum "
                    f"configured value of {config.max_message_bytes}",
                    position=pos,
                )
            if batch.compression != Compression.NONE:
                source = batch.compression
            valid = pos + batch.size
            batches.append(batch)
    except DecodeError as exc:
        # A bad CRC, a length below the minimum, an unknown magic or codec id: Kafka's
        # CorruptRecordException from the framing pass.
        raise AppendError("CORRUPT_MESSAGE", str(exc), position=reader.position) from exc
    return _Input(view, batches, source, valid)


def _inner_index(path: str | None) -> int:
    """The index in a legacy decoder path such as ``inner[3]`` (0 when there is none)."""
    if path and path.startswith("inner[") and path.endswith("]"):
        digits = path[6:-1]
        if digits.isdigit():
            return int(digits)
    return 0


@dataclass(slots=True)
class _Walk:
    """What walking the records of the input found."""

    records: list[Record]
    max_timestamp: int = NO_TIMESTAMP
    offsets_contiguous: bool = True


class _Validator:
    """One call of ``LogValidator.validateMessagesAndAssignOffsets`` (see the module docstring)."""

    def __init__(
        self,
        inp: _Input,
        config: TopicConfig,
        *,
        next_offset: int,
        now_ms: int,
        leader_epoch: int,
        origin: AppendOrigin,
        mutate: bool,
        fast: bool = True,
    ) -> None:
        self.fast = fast
        self.inp = inp
        self.config = config
        self.next_offset = next_offset
        self.now = now_ms
        self.leader_epoch = leader_epoch
        self.origin = origin
        self.mutate = mutate
        self.to_magic = config.message_format
        self.ts_type = config.timestamp_type
        self.source = inp.source_compression
        forced = config.compression
        self.target = self.source if forced is None else forced

    # -- batch and record rules

    def first_batch(self, source: Compression) -> Batch:
        batches = self.inp.batches
        first = batches[0]
        if (first.magic >= 2 or source != Compression.NONE) and len(batches) > 1:
            raise AppendError(
                "INVALID_RECORD",
                "compressed outer record has more than one batch",
                position=batches[1].position,
            )
        return first

    def validate_batch(self, first: Batch, batch: Batch) -> None:
        pos = batch.position
        if batch.magic != first.magic:
            raise AppendError(
                "INVALID_RECORD",
                f"batch magic {batch.magic} is not the same as the first batch's magic {first.magic}",
                position=pos,
            )
        if self.origin is AppendOrigin.CLIENT:
            if batch.magic >= 2:
                from_offsets = batch.last_offset - batch.base_offset + 1
                count = batch.record_count
                if from_offsets <= 0:
                    raise AppendError(
                        "INVALID_RECORD",
                        f"batch has an invalid offset range: [{batch.base_offset}, "
                        f"{batch.last_offset}]",
                        position=pos,
                    )
                if count <= 0:
                    raise AppendError(
                        "INVALID_RECORD",
                        f"invalid reported count for record batch: {count}",
                        position=pos,
                    )
                if from_offsets != count:
                    raise AppendError(
                        "INVALID_RECORD",
                        f"inconsistent batch offset range [{batch.base_offset}, "
                        f"{batch.last_offset}] and count of records {count}",
                        position=pos,
                    )
            if batch.is_control:
                raise AppendError(
                    "INVALID_RECORD",
                    "clients are not allowed to write control records",
                    position=pos,
                )
            if batch.producer_id >= 0 and batch.base_sequence < 0:
                raise AppendError(
                    "INVALID_RECORD",
                    f"invalid sequence number {batch.base_sequence} in record batch with "
                    f"producerId {batch.producer_id}",
                    position=pos,
                )
        if batch.is_transactional and self.to_magic < 2:
            raise AppendError(
                "UNSUPPORTED_FOR_MESSAGE_FORMAT",
                f"transactional records cannot be used with magic version {self.to_magic}",
                position=pos,
            )
        if batch.producer_id >= 0 and self.to_magic < 2:
            raise AppendError(
                "UNSUPPORTED_FOR_MESSAGE_FORMAT",
                f"idempotent records cannot be used with magic version {self.to_magic}",
                position=pos,
            )

    @staticmethod
    def inner_magics(batch: Batch) -> list[int] | None:
        """The stored magic of each inner message of a legacy wrapper (None otherwise)."""
        if batch.magic >= 2 or batch.compression == Compression.NONE:
            return None
        assert isinstance(batch, legacy.LegacyBatch)
        try:
            return [entry[1] for entry in batch.inner_entries()]
        except DecodeError:
            return None  # records_of reports the failure

    def validate_record(
        self, batch: Batch, record: Record, index: int, magics: list[int] | None
    ) -> tuple[str, RecordError] | None:
        """``LogValidator.validateRecord`` (magic, key, timestamp); None when the record is fine."""
        magic = magics[index] if magics is not None and index < len(magics) else batch.magic
        if magic != batch.magic:
            return "INVALID_RECORD", RecordError(
                index, f"record's magic {magic} does not match outer magic {batch.magic}"
            )
        if self.config.compacted and record.key is None:
            return "INVALID_RECORD", RecordError(
                index, "compacted topic cannot accept message without key"
            )
        ts = record.timestamp
        if self.ts_type == CREATE_TIME and ts != NO_TIMESTAMP:
            diff = self.now - ts
            if (
                diff > self.config.timestamp_before_max_ms
                or -diff > self.config.timestamp_after_max_ms
            ):
                low = self.now - self.config.timestamp_before_max_ms
                high = self.now + self.config.timestamp_after_max_ms
                return "INVALID_TIMESTAMP", RecordError(
                    index,
                    f"timestamp {ts} of message with offset {record.offset} is out of range: "
                    f"it should be within [{low}, {high}]",
                )
        elif batch.timestamp_type == LOG_APPEND_TIME:
            return "INVALID_TIMESTAMP", RecordError(
                index,
                "invalid timestamp type in message: producer should not set timestamp type to "
                "LogAppendTime",
            )
        return None

    @staticmethod
    def raise_record_errors(errors: list[tuple[str, RecordError]], position: int) -> None:
        """``processRecordErrors``: INVALID_TIMESTAMP if any record has one, else INVALID_RECORD."""
        if not errors:
            return
        record_errors = [e for _, e in errors]
        if any(name == "INVALID_TIMESTAMP" for name, _ in errors):
            raise AppendError(
                "INVALID_TIMESTAMP",
                "one or more records have been rejected due to invalid timestamp",
                record_errors=record_errors,
                position=position,
            )
        shown = "; ".join(f"{e.index}: {e.message}" for e in record_errors[:3])
        raise AppendError(
            "INVALID_RECORD",
            f"one or more records have been rejected due to {len(record_errors)} record errors "
            f"in total, and only showing the first three errors at most: {shown}",
            record_errors=record_errors,
            position=position,
        )

    def records_of(self, batch: Batch) -> Iterator[Record]:
        """The batch's records; decoding failures become the error Kafka returns for them.

        Decompression failures and legacy inner CRC mismatches are CORRUPT_MESSAGE; records that
        do not parse inside a batch whose CRC holds are INVALID_RECORD (Kafka's
        ``InvalidRecordException``); a compressed legacy inner message is a per-record
        INVALID_RECORD, as ``validateRecordCompression`` reports it.
        """
        try:
            it = batch.records()  # decompresses (v2) or decodes the whole wrapper (legacy)
        except DecodeError as exc:
            if exc.reason == "inner messages must not be compressed":
                index = _inner_index(exc.path)
                raise AppendError(
                    "INVALID_RECORD",
                    "one or more records have been rejected: compressed outer record should not "
                    "have an inner record with a compression attribute set",
                    record_errors=[
                        RecordError(
                            index,
                            "compressed outer record should not have an inner record with a "
                            "compression attribute set",
                        )
                    ],
                    position=batch.position,
                ) from exc
            raise AppendError("CORRUPT_MESSAGE", str(exc), position=batch.position) from exc
        try:
            yield from it
        except DecodeError as exc:
            raise AppendError("INVALID_RECORD", str(exc), position=batch.position) from exc

    # -- the three paths

    def run(self) -> AppendResult:
        if self.target == Compression.ZSTD and self.to_magic < 2:
            raise AppendError(
                "UNSUPPORTED_COMPRESSION_TYPE",
                f"zstd compression cannot be used with magic version {self.to_magic}",
            )
        if self.source == Compression.NONE and self.target == Compression.NONE:
            if all(b.magic == self.to_magic for b in self.inp.batches):
                return self.assign_uncompressed_in_place()
            return self.convert_uncompressed()
        return self.assign_compressed()

    def assign_uncompressed_in_place(self) -> AppendResult:
        first = self.first_batch(Compression.NONE)
        counter = self.next_offset
        initial = counter
        max_ts = NO_TIMESTAMP
        shallow = -1
        patches: list[tuple[Batch, int, int]] = []  # (batch, last offset, its max timestamp)
        for batch in self.inp.batches:
            self.validate_batch(first, batch)
            fast = self.fast_walk(batch, need_contiguous=False)
            if fast is not None:
                counter += batch.record_count
                batch_max = fast
            else:
                errors: list[tuple[str, RecordError]] = []
                batch_max = NO_TIMESTAMP
                magics = self.inner_magics(batch)
                for index, record in enumerate(self.records_of(batch)):
                    err = self.validate_record(batch, record, index, magics)
                    if err is not None:
                        errors.append(err)
                    counter += 1
                    if batch.magic > 0 and record.timestamp > batch_max:
                        batch_max = record.timestamp
                self.raise_record_errors(errors, batch.position)
            if batch.magic > 0 and batch_max > max_ts:
                max_ts = batch_max
                shallow = counter - 1
            patches.append((batch, counter - 1, batch_max))
        # Everything validated: only now touch the bytes (so mutate=True never half-patches).
        buf = self.output_buffer()
        for batch, last, batch_max in patches:
            self.patch_header(buf, batch, last, batch_max)
        if self.ts_type == LOG_APPEND_TIME:
            # Kafka 3.9 keeps these equal to what MemoryRecordsBuilder.info() reports.
            if self.to_magic == 0:
                max_ts, shallow = NO_TIMESTAMP, -1
            elif self.to_magic == 1:
                max_ts, shallow = self.now, initial
            else:
                max_ts, shallow = self.now, counter - 1
        return self.result(
            buf,
            first=initial,
            last=counter - 1,
            max_ts=max_ts,
            shallow=shallow,
            in_place=True,
            reason=None,
            count=counter - initial,
            converted=0,
            compression=Compression.NONE,
        )

    def convert_uncompressed(self) -> AppendResult:
        first = self.first_batch(Compression.NONE)
        records: list[Record] = []
        for batch in self.inp.batches:
            self.validate_batch(first, batch)
            errors: list[tuple[str, RecordError]] = []
            magics = self.inner_magics(batch)
            for index, record in enumerate(self.records_of(batch)):
                err = self.validate_record(batch, record, index, magics)
                if err is not None:
                    errors.append(err)
                elif not errors:
                    records.append(record)
            self.raise_record_errors(errors, batch.position)
        reason = f"format conversion from magic {first.magic} to magic {self.to_magic}"
        return self.rebuild(first, records, Compression.NONE, reason)

    def assign_compressed(self) -> AppendResult:
        in_place = self.source == self.target
        first = self.first_batch(self.source)
        reason: str | None = None
        if not in_place:
            reason = f"codec change from {self.source.name.lower()} to {self.target.name.lower()}"
        if first.magic != self.to_magic:
            in_place = False
            reason = f"format conversion from magic {first.magic} to magic {self.to_magic}"
        elif self.to_magic == 0:
            in_place = False
            reason = "magic 0 stores absolute offsets: every inner offset must be rewritten"
        if self.source == Compression.NONE and first.is_control:
            in_place, reason = True, None  # control records stay uncompressed
        walk = _Walk(records=[])
        fast = self.fast_walk(first, need_contiguous=True) if in_place else None
        if fast is not None:
            self.validate_batch(first, first)
            walk.max_timestamp = fast
            return self.patch_in_place(first, first.record_count, walk.max_timestamp)
        expected = 0
        for batch in self.inp.batches:
            self.validate_batch(first, batch)
            errors: list[tuple[str, RecordError]] = []
            magics = self.inner_magics(batch)
            for index, record in enumerate(self.records_of(batch)):
                exp = expected
                expected += 1
                err = self.validate_record(batch, record, index, magics)
                if err is None and batch.magic > 0 and self.to_magic > 0:
                    if record.timestamp > walk.max_timestamp:
                        walk.max_timestamp = record.timestamp
                    if record.offset != exp:
                        walk.offsets_contiguous = False
                if err is not None:
                    errors.append(err)
                else:
                    walk.records.append(record)
            self.raise_record_errors(errors, batch.position)
        if in_place and not walk.offsets_contiguous:
            in_place = False
            reason = "inner offsets are not 0, 1, 2, ...: they are reassigned"
        if not in_place:
            assert reason is not None
            return self.rebuild(first, walk.records, self.target, reason)
        return self.patch_in_place(first, len(walk.records), walk.max_timestamp)

    def patch_header(
        self, buf: bytearray | memoryview, batch: Batch, last_offset: int, records_max_ts: int
    ) -> None:
        """Write one batch's assigned offsets (and leader epoch, timestamp type and max
        timestamp: the log-append time under LogAppendTime) into its header in ``buf``."""
        stamp = self.now if self.ts_type == LOG_APPEND_TIME else records_max_ts
        if batch.magic >= 2:
            _patch_v2(
                buf,
                batch.position,
                batch,
                last_offset=last_offset,
                leader_epoch=self.leader_epoch,
                ts_type=self.ts_type,
                max_timestamp=stamp,
            )
        else:
            _patch_legacy(
                buf,
                batch.position,
                batch,
                last_offset=last_offset,
                ts_type=self.ts_type if batch.magic > 0 else None,
                max_timestamp=stamp,
            )

    def patch_in_place(self, first: Batch, count: int, records_max_ts: int) -> AppendResult:
        """The in-place end of the compressed path: one batch, header fields only."""
        last = self.next_offset + count - 1
        buf = self.output_buffer()
        max_ts = self.now if self.ts_type == LOG_APPEND_TIME else records_max_ts
        # (in place means no format conversion: first.magic is the target magic here)
        self.patch_header(buf, first, last, records_max_ts)
        return self.result(
            buf,
            first=self.next_offset,
            last=last,
            max_ts=max_ts,
            shallow=last,
            in_place=True,
            reason=None,
            count=count,
            converted=0,
            compression=first.compression,
        )

    def fast_walk(self, batch: Batch, *, need_contiguous: bool) -> int | None:
        """The records' max timestamp when the compiled walk finds nothing to report, else None.

        Only for one v2 CreateTime batch (see ``_append_scan``); ``None`` sends the caller to the
        per-record walk, which is the reference and produces the exact errors.
        """
        if (
            batch.magic != 2
            or len(self.inp.batches) != 1
            or batch.timestamp_type != CREATE_TIME
            or batch.has_delete_horizon
            or not self.fast
        ):
            return None
        compiled = scanner()
        if compiled is None:
            return None
        kernel, np = compiled
        assert isinstance(batch, v2.RecordBatch)
        try:
            data, _ = batch.records_view()
        except DecodeError:
            return None
        arr = np.frombuffer(data, dtype=np.uint8)
        check_ts = self.ts_type == CREATE_TIME
        low = max(self.now - self.config.timestamp_before_max_ms, -LONG_MAX - 1)
        high = min(self.now + self.config.timestamp_after_max_ms, LONG_MAX)
        status, max_ts, contiguous = kernel(
            arr,
            0,
            len(arr),
            batch.record_count,
            batch.base_timestamp,
            check_ts,
            low,
            high,
            self.config.compacted,
        )
        if status != SCAN_OK or (need_contiguous and not contiguous):
            return None
        return int(max_ts)

    # -- building blocks

    def output_buffer(self) -> bytearray | memoryview:
        view = self.inp.view[: self.inp.valid_bytes]
        if self.mutate:
            if view.readonly:
                raise ValueError("mutate=True needs a writable buffer (bytearray, mmap, ...)")
            return view
        return bytearray(view)

    def rebuild(
        self, first: Batch, records: list[Record], codec: Compression, reason: str
    ) -> AppendResult:
        """``buildRecordsAndAssignOffsets``: one builder in the topic's magic and codec."""
        to_magic = self.to_magic
        for index, record in enumerate(records):
            if to_magic < 2 and record.headers:
                raise AppendError(
                    "UNSUPPORTED_FOR_MESSAGE_FORMAT",
                    f"magic v{to_magic} does not support record headers (record {index})",
                    position=first.position,
                )
        log_append_time = self.now
        if to_magic >= 2:
            builder = BatchBuilder.like(
                first,
                codec,
                base_offset=self.next_offset,
                timestamp_type=self.ts_type,
                log_append_time=log_append_time,
                partition_leader_epoch=self.leader_epoch,
                keep_control=False,  # LogValidator's rebuilt batches are never control batches
            )
        else:  # validate_batch already refused producer state and transactions below magic 2
            builder = BatchBuilder(
                to_magic,
                codec,
                base_offset=self.next_offset,
                timestamp_type=self.ts_type,
                log_append_time=log_append_time,
            )
        offset = self.next_offset
        max_ts = NO_TIMESTAMP
        offset_of_max = -1
        for record in records:
            ts = record.timestamp
            if ts < 0 and ts != NO_TIMESTAMP:
                raise AppendError(
                    "INVALID_TIMESTAMP",
                    f"invalid negative timestamp {ts} of message with offset {record.offset}",
                    position=first.position,
                )
            headers: tuple[Header, ...] = record.headers if to_magic >= 2 else ()
            builder.append(
                offset=offset, timestamp=ts, key=record.key, value=record.value, headers=headers
            )
            if to_magic > 0 and ts > max_ts:  # magic 0 keeps no timestamp
                max_ts, offset_of_max = ts, offset
            offset += 1
        data = builder.build() if records else b""
        first_offset = self.next_offset
        last = offset - 1
        batched = codec != Compression.NONE or to_magic >= 2
        # MemoryRecordsBuilder.info() of Kafka 3.9.
        if not records:
            max_ts, shallow = NO_TIMESTAMP, -1
        elif self.ts_type == LOG_APPEND_TIME:
            max_ts, shallow = log_append_time, (last if batched else first_offset)
        elif max_ts == NO_TIMESTAMP:
            shallow = -1
        else:
            shallow = last if batched else offset_of_max
        return self.result(
            data,
            first=first_offset,
            last=last,
            max_ts=max_ts,
            shallow=shallow,
            in_place=False,
            reason=reason,
            count=len(records),
            converted=len(records),
            compression=codec,
        )

    def result(
        self,
        data: bytes | bytearray | memoryview,
        *,
        first: int,
        last: int,
        max_ts: int,
        shallow: int,
        in_place: bool,
        reason: str | None,
        count: int,
        converted: int,
        compression: Compression,
    ) -> AppendResult:
        view = memoryview(data)
        batches = tuple(b.view for b in read_batches(view, verify_crc=False)) if data else ()
        return AppendResult(
            records=data,
            batches=batches,
            first_offset=first,
            last_offset=last,
            max_timestamp=max_ts,
            shallow_offset_of_max_timestamp=shallow,
            log_append_time=self.now if self.ts_type == LOG_APPEND_TIME else NO_TIMESTAMP,
            in_place=in_place,
            rebuild_reason=reason,
            record_count=count,
            converted_records=converted,
            magic=self.to_magic,
            compression=compression,
        )


def _empty_result(magic: int) -> AppendResult:
    return AppendResult(
        records=b"",
        batches=(),
        first_offset=-1,
        last_offset=-1,
        max_timestamp=NO_TIMESTAMP,
        shallow_offset_of_max_timestamp=-1,
        log_append_time=NO_TIMESTAMP,
        in_place=True,
        rebuild_reason=None,
        record_count=0,
        converted_records=0,
        magic=magic,
        compression=Compression.NONE,
    )


def _replicate(inp: _Input, next_offset: int) -> AppendResult:
    """A follower's append: offsets kept; they must increase and not go below the log end."""
    last = -1
    first_offset = -1
    count = 0
    max_ts = NO_TIMESTAMP
    shallow = -1
    for batch in inp.batches:
        if first_offset < 0:
            first_offset = batch.base_offset if batch.magic >= 2 else batch.last_offset
            if first_offset < next_offset:
                raise AppendError(
                    "INVALID_RECORD",
                    f"the first offset {first_offset} is below the log end offset {next_offset}",
                    position=batch.position,
                )
        if batch.last_offset <= last:
            raise AppendError(
                "INVALID_RECORD",
                f"out of order offsets: {batch.last_offset} follows {last}",
                position=batch.position,
            )
        last = batch.last_offset
        count += batch.record_count
        if batch.max_timestamp > max_ts:
            max_ts, shallow = batch.max_timestamp, batch.last_offset
    data = inp.view[: inp.valid_bytes]
    return AppendResult(
        records=data,
        batches=tuple(b.view for b in inp.batches),
        first_offset=first_offset,
        last_offset=last,
        max_timestamp=max_ts,
        shallow_offset_of_max_timestamp=shallow,
        log_append_time=NO_TIMESTAMP,
        in_place=True,
        rebuild_reason=None,
        record_count=count,
        converted_records=0,
        magic=inp.batches[-1].magic,
        compression=inp.source_compression,
    )


def _check_produce_version(inp: _Input, version: int) -> None:
    """``ProduceRequest.validateRecords``: v3+ carries exactly one magic-2 batch; zstd needs v7+."""
    if version >= 3:
        if len(inp.batches) != 1:
            raise AppendError(
                "INVALID_RECORD",
                f"produce requests with version {version} must contain exactly one record batch",
            )
        if inp.batches[0].magic != 2:
            raise AppendError(
                "INVALID_RECORD",
                f"produce requests with version {version} are only allowed to contain record "
                "batches with magic version 2",
            )
    if version < 7 and any(b.compression == Compression.ZSTD for b in inp.batches):
        raise AppendError(
            "UNSUPPORTED_COMPRESSION_TYPE",
            f"produce requests with version {version} are not allowed to use ZStandard compression",
        )


def validate_and_assign(
    records: bytes | bytearray | memoryview,
    *,
    next_offset: int,
    now_ms: int,
    config: TopicConfig = TopicConfig(),
    partition_leader_epoch: int = -1,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    produce_version: int | None = None,
    verify_crc: bool = True,
    mutate: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    compiled: bool = True,
) -> AppendResult:
    """Validate one partition's Produce records and assign offsets from ``next_offset``.

    Pure: no I/O, no clock (``now_ms`` is the broker's time). Returns the batches to append and
    the facts the broker reports (``AppendResult``), or raises ``AppendError`` with the error Kafka
    would return. ``produce_version`` adds ``ProduceRequest``'s own checks for that version.
    ``verify_crc=False`` skips the batch CRC check (only for bytes already verified).
    ``mutate=True`` patches the caller's (writable) buffer in place instead of a copy.
    ``compiled=False`` forces the per-record reference walk even where the compiled walk of
    ``_append_scan`` would do (both give the same result; tests compare them).

    A trailing partial batch is dropped, as Kafka trims it; when no complete batch remains the
    result is empty (offsets -1) and nothing is to be appended. ``origin=REPLICATION`` checks and
    keeps the leader's offsets instead of assigning new ones.
    """
    if next_offset < 0:
        raise ValueError(f"next_offset must not be negative: {next_offset}")
    view = memoryview(records)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    inp = _analyze(
        view,
        config,
        origin,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
    )
    if not inp.batches:
        return _empty_result(config.message_format)
    if produce_version is not None:
        _check_produce_version(inp, produce_version)
    if origin is AppendOrigin.REPLICATION:
        return _replicate(inp, next_offset)
    return _Validator(
        inp,
        config,
        next_offset=next_offset,
        now_ms=now_ms,
        leader_epoch=partition_leader_epoch,
        origin=origin,
        mutate=mutate,
        fast=compiled,
    ).run()
