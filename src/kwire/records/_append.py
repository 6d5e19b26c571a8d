"""The broker's append path: validate one partition's Produce records and assign their offsets.

Approach: a pure function (bytes in, bytes and facts out) that follows what Apache Kafka 3.9 does
between receiving a Produce request and writing the log: ``UnifiedLog.analyzeAndValidateRecords``
(framing, size, CRC; ``_append_rules.analyze``) and then
``LogValidator.validateMessagesAndAssignOffsets``, which picks one of three paths, each in its own
module so that it reads next to the Java method of the same name:

1. ``_append_in_place.assign_offsets_non_compressed``: uncompressed in, uncompressed out, same
   magic: offsets (and v2 leader epoch, v1/v2 max timestamp) are patched into the batch headers;
2. ``_append_convert.convert_and_assign_offsets_non_compressed``: uncompressed in, uncompressed
   out, other magic: every record is rebuilt in the topic's format;
3. ``_append_compressed.validate_messages_and_assign_offsets_compressed``: anything compressed:
   records are validated by walking the (decompressed) batch; the compressed payload is kept as it
   is (KIP-31) unless the codec or format changes or offsets must be rewritten, in which case the
   batch is rebuilt with the topic's codec.

The rules the paths share (``validateBatch``, ``validateRecord``, ``processRecordErrors``, header
patches, ``buildRecordsAndAssignOffsets``) are in ``_append_rules``; the configuration and result
types in ``_append_types``. The result is a new buffer; the caller's bytes are never modified
(``mutate=True`` patches a writable caller buffer instead, like Kafka does, when the copy matters).

Errors are what Kafka would put in the ProduceResponse: ``AppendError`` carries the error code and
name, a message, and for per-record failures the indexes (within the batch) and messages of the
offending records, as ``ProduceResponse.PartitionResponse.recordErrors``.
"""

from __future__ import annotations

from typing import Final

from kwire.errors import AppendError, RecordError
from kwire.records._append_compressed import validate_messages_and_assign_offsets_compressed
from kwire.records._append_convert import convert_and_assign_offsets_non_compressed
from kwire.records._append_in_place import assign_offsets_non_compressed
from kwire.records._append_rules import Compiled, Input, Validation, analyze
from kwire.records._append_types import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ERROR_CODES,
    LONG_MAX,
    AppendOrigin,
    AppendResult,
    TopicConfig,
    magic_for_message_format_version,
)
from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression
from kwire.records._model import NO_TIMESTAMP

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ERROR_CODES",
    "LONG_MAX",
    "AppendError",
    "AppendOrigin",
    "AppendResult",
    "RecordError",
    "TopicConfig",
    "magic_for_message_format_version",
    "validate_and_assign",
]

#: Kafka's topic defaults (``TopicConfig()``).
_DEFAULT_CONFIG: Final = TopicConfig()


def _validate_messages_and_assign_offsets(v: Validation) -> AppendResult:
    """``LogValidator.validateMessagesAndAssignOffsets``: the choice between the three paths."""
    if v.target == Compression.ZSTD and v.to_magic < 2:
        raise AppendError(
            "UNSUPPORTED_COMPRESSION_TYPE",
            f"zstd compression cannot be used with magic version {v.to_magic}",
        )
    if v.source == Compression.NONE and v.target == Compression.NONE:
        if all(b.magic == v.to_magic for b in v.inp.batches):
            return assign_offsets_non_compressed(v)
        return convert_and_assign_offsets_non_compressed(v)
    return validate_messages_and_assign_offsets_compressed(v)


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


def _replicate(inp: Input, next_offset: int) -> AppendResult:
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


def _check_produce_version(inp: Input, version: int) -> None:
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
    config: TopicConfig = _DEFAULT_CONFIG,
    partition_leader_epoch: int = -1,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    produce_version: int | None = None,
    verify_crc: bool = True,
    mutate: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    compiled: Compiled = True,
) -> AppendResult:
    """Validate one partition's Produce records and assign offsets from ``next_offset``.

    Pure: no I/O, no clock (``now_ms`` is the broker's time). Returns the batches to append and
    the facts the broker reports (``AppendResult``), or raises ``AppendError`` with the error Kafka
    would return. ``produce_version`` adds ``ProduceRequest``'s own checks for that version.
    ``verify_crc=False`` skips the batch CRC check (only for bytes already verified).
    ``mutate=True`` patches the caller's (writable) buffer in place instead of a copy.
    ``compiled`` picks the walk of a v2 batch's records (``_append_scan``): numba's kernel
    (``True``), the same walk interpreted (``"python"``: no numba), numba's for batches of many
    records once it has loaded in the background and the interpreted one meanwhile (``"auto"``),
    or only the per-record reference walk (``False``). All give the same result (tests compare
    them); the fast walks only vouch for valid records, the reference reports the errors.

    A trailing partial batch is dropped, as Kafka trims it; when no complete batch remains the
    result is empty (offsets -1) and nothing is to be appended. ``origin=REPLICATION`` checks and
    keeps the leader's offsets instead of assigning new ones.
    """
    if next_offset < 0:
        raise ValueError(f"next_offset must not be negative: {next_offset}")
    view = memoryview(records)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    inp = analyze(
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
    validation = Validation(
        inp,
        config,
        next_offset=next_offset,
        now_ms=now_ms,
        leader_epoch=partition_leader_epoch,
        origin=origin,
        mutate=mutate,
        fast=compiled,
    )
    return _validate_messages_and_assign_offsets(validation)
