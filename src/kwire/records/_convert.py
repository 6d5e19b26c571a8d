"""Conversion of record sets between magic 0, 1 and 2, with an account of what was lost.

Approach: batches are walked once. A batch already in the target format (and codec) is copied as
it is. A batch in a newer format is *down-converted* the way Kafka's broker answers an old Fetch
(``RecordsUtil.downConvert``): control batches are dropped, each batch becomes one message set
(compressed with its own codec, offsets kept, holes included), headers, producer state,
transactional flags and partition leader epochs are dropped, and magic 0 has no timestamps.
Uncompressed v2 records before ``first_offset`` are skipped (old consumers rely on it). A batch in
an older format is *up-converted* with its offsets and timestamps (magic 0 records get
``NO_TIMESTAMP``); consecutive uncompressed CreateTime messages join one target batch, as a
producer would have batched them. Asking for another ``compression`` rebuilds every batch with it.

Nothing is dropped silently: ``ConversionResult.loss`` counts every header, producer state,
timestamp, control batch and record that the target cannot carry, and ``strict=True`` raises
``UnsupportedVersionError`` instead of losing anything.

``convert_for_fetch`` is the broker's fetch path on top of this: the magic a Fetch version
understands, zero-copy when nothing is newer than it, and zstd refused below Fetch v10.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire._wire import as_view
from kwire.errors import UnsupportedCodecError, UnsupportedVersionError
from kwire.records._batch import read_batches
from kwire.records._builder import BatchBuilder
from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression
from kwire.records._model import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, Batch, Record

__all__ = [
    "ConversionLoss",
    "ConversionResult",
    "convert",
    "convert_for_fetch",
    "magic_for_fetch_version",
    "magic_for_produce_version",
]

_ZSTD_MIN_FETCH_VERSION: Final = 10


@lazy_dataclass(frozen=True)
class ConversionLoss:
    """What a conversion could not carry into the target format (all counts; 0 = nothing lost).

    Batch counts: ``producer_state`` (producer id, epoch or base sequence dropped),
    ``transactional`` (transactional flag dropped), ``partition_leader_epochs`` (epoch dropped),
    ``delete_horizons`` (compaction delete horizon dropped), ``control_batches`` (dropped whole:
    control records have no magic 0/1 form), ``log_append_time`` (a LogAppendTime batch written
    as magic 0, which has no timestamp type). Record counts: ``headers`` (header entries dropped)
    in ``records_with_headers`` records, ``timestamps`` (timestamps dropped going to magic 0),
    ``control_records`` (inside the dropped control batches), ``records_before_first_offset``
    (uncompressed records before ``first_offset``, skipped as Kafka's fetch down-conversion does).
    """

    headers: int = 0
    records_with_headers: int = 0
    producer_state: int = 0
    transactional: int = 0
    partition_leader_epochs: int = 0
    delete_horizons: int = 0
    control_batches: int = 0
    control_records: int = 0
    timestamps: int = 0
    log_append_time: int = 0
    records_before_first_offset: int = 0

    @property
    def lossless(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self))

    def describe(self) -> list[str]:
        """One human-readable line per kind of loss (empty when nothing was lost)."""
        words = {
            "headers": "record headers dropped",
            "records_with_headers": "records lost their headers",
            "producer_state": "batches lost producer id/epoch/sequence",
            "transactional": "batches lost their transactional flag",
            "partition_leader_epochs": "batches lost their partition leader epoch",
            "delete_horizons": "batches lost their delete horizon",
            "control_batches": "control batches dropped",
            "control_records": "control records dropped",
            "timestamps": "record timestamps dropped",
            "log_append_time": "batches lost their LogAppendTime type",
            "records_before_first_offset": "records before first_offset skipped",
        }
        return [
            f"{getattr(self, f.name)} {words[f.name]}"
            for f in fields(self)
            if getattr(self, f.name)
        ]


@lazy_dataclass(frozen=True)
class ConversionResult:
    """The converted records and what happened to them.

    ``records`` is the new record set (``bytes``), or a view of the input when nothing needed
    converting (``convert_for_fetch``'s zero-copy case). ``batches_copied`` were already in the
    target format and copied unchanged; ``batches_converted`` were rebuilt; ``records_converted``
    counts the records written by rebuilding (Kafka's ``numRecordsConverted``).
    """

    records: bytes | memoryview
    magic: int
    loss: ConversionLoss
    batches_copied: int
    batches_converted: int
    records_converted: int

    @property
    def lossless(self) -> bool:
        return self.loss.lossless


def magic_for_fetch_version(version: int) -> int:
    """The newest magic a Fetch request of ``version`` accepts (v0-1: 0, v2-3: 1, v4+: 2)."""
    if version < 0:
        raise ValueError(f"invalid Fetch version {version}")
    if version <= 1:
        return 0
    if version <= 3:
        return 1
    return 2


def magic_for_produce_version(version: int) -> int:
    """The magic a Produce request of ``version`` carries (v0-1: 0, v2: 1, v3+: 2)."""
    if version < 0:
        raise ValueError(f"invalid Produce version {version}")
    if version <= 1:
        return 0
    if version == 2:
        return 1
    return 2


class _Counter:
    """Mutable tallies behind a ``ConversionLoss``."""

    def __init__(self) -> None:
        self.counts = {f.name: 0 for f in fields(ConversionLoss)}

    def add(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def freeze(self) -> ConversionLoss:
        return ConversionLoss(**self.counts)


def _batch_losses(batch: Batch, to_magic: int, loss: _Counter) -> None:
    """Count the batch-level facts the target format cannot carry."""
    if to_magic >= 2:
        return
    if batch.producer_id >= 0 or batch.producer_epoch >= 0 or batch.base_sequence >= 0:
        loss.add("producer_state")
    if batch.is_transactional:
        loss.add("transactional")
    if batch.partition_leader_epoch >= 0:
        loss.add("partition_leader_epochs")
    if batch.has_delete_horizon:
        loss.add("delete_horizons")
    if to_magic == 0 and batch.magic >= 1 and batch.timestamp_type == LOG_APPEND_TIME:
        loss.add("log_append_time")


def _record_losses(record: Record, to_magic: int, loss: _Counter) -> None:
    if to_magic < 2 and record.headers:
        loss.add("headers", len(record.headers))
        loss.add("records_with_headers")
    if to_magic == 0 and record.timestamp != NO_TIMESTAMP:
        loss.add("timestamps")


def _codec_for(batch: Batch, to_magic: int, compression: Compression | None) -> Compression:
    codec = batch.compression if compression is None else Compression(compression)
    if codec == Compression.ZSTD and to_magic < 2:
        raise UnsupportedCodecError(
            f"the zstd batch at byte {batch.position} cannot be converted to magic {to_magic}: "
            "zstd needs magic 2 (pass compression= to recompress it)"
        )
    return codec


def _builder_for(batch: Batch, to_magic: int, codec: Compression, base_offset: int) -> BatchBuilder:
    ts_type = batch.timestamp_type if batch.magic >= 1 else CREATE_TIME
    log_append = batch.max_timestamp if ts_type == LOG_APPEND_TIME else None
    if to_magic < 2:
        return BatchBuilder(
            to_magic,
            codec,
            base_offset=base_offset,
            timestamp_type=ts_type,
            log_append_time=log_append,
        )
    if batch.magic < 2:
        return BatchBuilder(
            2, codec, base_offset=base_offset, timestamp_type=ts_type, log_append_time=log_append
        )
    # v2 -> v2 with another codec: everything in the header is kept.
    return BatchBuilder.like(
        batch, codec, base_offset=base_offset, timestamp_type=ts_type, log_append_time=log_append
    )


def _append(builder: BatchBuilder, record: Record, to_magic: int) -> None:
    builder.append(
        offset=record.offset,
        timestamp=record.timestamp if to_magic >= 1 else NO_TIMESTAMP,
        key=record.key,
        value=record.value,
        headers=record.headers if to_magic >= 2 else (),
    )


def _joinable(batch: Batch) -> bool:
    """An uncompressed magic 0/1 CreateTime message: a batch of one only by format necessity."""
    return (
        batch.magic < 2
        and batch.compression == Compression.NONE
        and batch.timestamp_type != LOG_APPEND_TIME
    )


def convert(
    records: bytes | bytearray | memoryview,
    to_magic: int,
    *,
    compression: int | None = None,
    first_offset: int = 0,
    upconvert: bool = True,
    strict: bool = False,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    allow_truncated_tail: bool = False,
) -> ConversionResult:
    """Convert every batch in ``records`` to ``to_magic`` (0, 1 or 2); see the module docstring.

    ``compression=None`` keeps each batch's codec (zstd cannot go below magic 2: then pass a
    codec); a codec rebuilds every batch with it. ``first_offset`` is Kafka's down-conversion
    rule for uncompressed v2 input: records before it are skipped (and counted in the loss).
    ``upconvert=False`` copies batches older than ``to_magic`` unchanged (the fetch path does).
    ``strict=True`` raises ``UnsupportedVersionError`` rather than lose anything.
    ``allow_truncated_tail=True`` ignores a partial batch at the end (as a fetch response may end).
    Raises ``CorruptRecordError`` for malformed input and ``UnsupportedCodecError`` as above.
    """
    if to_magic not in (0, 1, 2):
        raise UnsupportedVersionError(f"records have magic 0, 1 or 2, not {to_magic}")
    if compression is not None:
        compression = Compression(compression)
        if compression == Compression.ZSTD and to_magic < 2:
            raise UnsupportedCodecError(f"zstd compression needs magic 2, not magic {to_magic}")
    view = as_view(records)
    loss = _Counter()
    out = bytearray()
    copied = converted = written = 0
    pending: BatchBuilder | None = None  # a run of joined uncompressed legacy messages
    pending_magic = -1

    def flush() -> None:
        nonlocal pending, written, converted
        if pending is not None and len(pending):
            written += len(pending)
            converted += 1
            pending.build_into(out)
        pending = None

    for batch in read_batches(
        view,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        allow_truncated_tail=allow_truncated_tail,
    ):
        same_codec = compression is None or compression == batch.compression
        # An empty v2 batch (left by compaction to keep producer state) has nothing to recompress.
        empty = batch.magic == 2 and batch.record_count == 0
        if (batch.magic == to_magic and (same_codec or empty)) or (
            batch.magic < to_magic and not upconvert
        ):
            flush()
            out += batch.view
            copied += 1
            continue
        if batch.magic > to_magic and batch.is_control:
            flush()
            loss.add("control_batches")
            loss.add("control_records", batch.record_count)
            continue
        codec = _codec_for(batch, to_magic, compression)
        if batch.magic <= to_magic and _joinable(batch) and (to_magic == 2 or codec):
            # A plain legacy message going to v2 or a codec: join it with its neighbours.
            if pending is not None and (
                pending_magic != batch.magic or batch.base_offset < pending.next_offset
            ):
                flush()  # another magic, or offsets that do not increase: a new batch
            if pending is None:
                pending = _builder_for(batch, to_magic, codec, batch.base_offset)
                pending_magic = batch.magic
            for record in batch.records():
                _append(pending, record, to_magic)
            continue
        flush()
        _batch_losses(batch, to_magic, loss)
        keep: list[Record] = []
        for record in batch.records():
            if (
                to_magic < 2
                and batch.magic >= 2
                and batch.compression == Compression.NONE
                and record.offset < first_offset
            ):
                loss.add("records_before_first_offset")
                continue
            keep.append(record)
        if not keep:
            continue
        base = batch.base_offset if batch.magic >= 2 and to_magic >= 2 else keep[0].offset
        builder = _builder_for(batch, to_magic, codec, base)
        for record in keep:
            _record_losses(record, to_magic, loss)
            _append(builder, record, to_magic)
        builder.build_into(out)
        converted += 1
        written += len(keep)
    flush()
    result = ConversionResult(
        records=bytes(out),
        magic=to_magic,
        loss=loss.freeze(),
        batches_copied=copied,
        batches_converted=converted,
        records_converted=written,
    )
    if strict and not result.lossless:
        raise UnsupportedVersionError(
            f"converting to magic {to_magic} would lose: {'; '.join(result.loss.describe())}"
        )
    return result


def convert_for_fetch(
    records: bytes | bytearray | memoryview,
    fetch_version: int,
    *,
    first_offset: int = 0,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> ConversionResult:
    """What a broker sends a Fetch of ``fetch_version`` for ``records`` read from the log.

    Batches newer than the version understands are down-converted (``convert``); when none is,
    the input is returned as it is (a view, zero-copy). zstd batches are refused below Fetch v10
    (``UnsupportedCodecError``, the broker's UNSUPPORTED_COMPRESSION_TYPE).
    """
    to_magic = magic_for_fetch_version(fetch_version)
    view = as_view(records)
    newer = False
    for batch in read_batches(
        view,
        verify_crc=False,
        max_decompressed_size=max_decompressed_size,
        allow_truncated_tail=True,
    ):
        if fetch_version < _ZSTD_MIN_FETCH_VERSION and batch.compression == Compression.ZSTD:
            raise UnsupportedCodecError(
                f"Fetch v{fetch_version} cannot carry the zstd batch at byte {batch.position} "
                "(UNSUPPORTED_COMPRESSION_TYPE: zstd needs Fetch v10+)"
            )
        newer = newer or batch.magic > to_magic
    if not newer:
        return ConversionResult(
            records=view,
            magic=to_magic,
            loss=ConversionLoss(),
            batches_copied=0,
            batches_converted=0,
            records_converted=0,
        )
    return convert(
        view,
        to_magic,
        first_offset=first_offset,
        upconvert=False,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        allow_truncated_tail=True,
    )
