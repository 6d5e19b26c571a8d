"""What the append path's three ways share: Kafka's batch and record rules and the building blocks.

Approach: ``Validation`` holds one call's inputs (the parsed request, the topic configuration, the
offset to assign from, the broker's clock) and the pieces every path of ``LogValidator`` uses, under
Kafka's names: ``validateBatch``, ``validateRecord``, ``processRecordErrors``, the record walk that
turns decoding failures into the error Kafka returns, header patches (``setLastOffset``,
``setPartitionLeaderEpoch``, ``setMaxTimestamp``) and ``buildRecordsAndAssignOffsets``. The paths
themselves are in ``_append_in_place``, ``_append_convert`` and ``_append_compressed``;
``UnifiedLog.analyzeAndValidateRecords`` (framing, size, CRC) is ``analyze`` here.

In-place patches touch only header fields. A v2 batch's base offset and partition leader epoch lie
outside its CRC32C, so writing them costs nothing more; the CRC is recomputed only when the
attributes or the max timestamp change (LogAppendTime, or a producer max timestamp that disagrees
with its records). A magic 0/1 message's offset lies outside its CRC32; its timestamp and attributes
do not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Literal

from kwire._lazy import lazy_dataclass
from kwire._wire import INT16, INT32, INT64, UINT32
from kwire.errors import AppendError, DecodeError, RecordError
from kwire.records import _legacy as legacy
from kwire.records import _v2 as v2
from kwire.records._append_scan import OK as SCAN_OK
from kwire.records._append_scan import scanner, scanner_if_ready, walk_v2_records
from kwire.records._append_types import LONG_MAX, AppendOrigin, AppendResult, TopicConfig
from kwire.records._batch import read_batches
from kwire.records._builder import BatchBuilder
from kwire.records._codecs import Compression
from kwire.records._model import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    Batch,
    Header,
    Record,
)

#: ``validate_and_assign(compiled=...)``: the compiled walk always (True), or ``"auto"``: for
#: batches of at least ``AUTO_COMPILED_MIN_RECORDS`` records once numba has loaded in a background
#: thread, else the interpreted walk (``"python"``, the live log's default: no numba, ~130 MB less
#: memory); ``False`` is the per-record reference walk alone (tests compare the walks with it).
Compiled = bool | Literal["auto", "python"]
AUTO_COMPILED_MIN_RECORDS: Final = 8

__all__ = ["Input", "Validation", "Walk", "analyze"]

_LEGACY_OFFSET: Final = 0  # a magic 0/1 entry starts with its offset (outside its CRC)
_LEGACY_CODEC_MASK: Final = 0x07


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


@lazy_dataclass(slots=True)
class Input:
    """The parsed request: the buffer, its complete batches, and what the framing pass found."""

    view: memoryview
    batches: list[Batch]
    source_compression: Compression
    valid_bytes: int


def analyze(
    view: memoryview,
    config: TopicConfig,
    origin: AppendOrigin,
    *,
    verify_crc: bool,
    max_decompressed_size: int,
) -> Input:
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
    return Input(view, batches, source, valid)


def _inner_index(path: str | None) -> int:
    """The index in a legacy decoder path such as ``inner[3]`` (0 when there is none)."""
    if path and path.startswith("inner[") and path.endswith("]"):
        digits = path[6:-1]
        if digits.isdigit():
            return int(digits)
    return 0


@lazy_dataclass
class Walk:
    """What walking the records of the input found."""

    records: list[Record]
    max_timestamp: int = NO_TIMESTAMP
    offsets_contiguous: bool = True


class Validation:
    """One call of ``LogValidator.validateMessagesAndAssignOffsets``: its inputs and shared steps."""

    def __init__(
        self,
        inp: Input,
        config: TopicConfig,
        *,
        next_offset: int,
        now_ms: int,
        leader_epoch: int,
        origin: AppendOrigin,
        mutate: bool,
        fast: Compiled = "python",
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

    # -- header patches shared by the in-place paths

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

    def fast_walk(self, batch: Batch, *, need_contiguous: bool) -> int | None:
        """The records' max timestamp when a fast walk finds nothing to report, else None.

        Only for one v2 CreateTime batch (see ``_append_scan``): numba's kernel where ``fast``
        asks for it and it is loaded, else the same walk interpreted (``walk_v2_records``);
        ``fast=False`` (tests) always answers None. ``None`` sends the caller to the per-record
        walk, which is the reference and produces the exact errors.
        """
        if (
            batch.magic != 2
            or len(self.inp.batches) != 1
            or batch.timestamp_type != CREATE_TIME
            or batch.has_delete_horizon
            or not self.fast
        ):
            return None
        compiled = None
        if self.fast == "auto":
            # only batches of many records gain more than the kernel costs to load, and a caller
            # in "auto" mode must not wait for that load: it happens in the background
            if batch.record_count >= AUTO_COMPILED_MIN_RECORDS:
                compiled = scanner_if_ready()
        elif self.fast is True:
            compiled = scanner()
        assert isinstance(batch, v2.RecordBatch)
        try:
            data, _ = batch.records_view()
        except DecodeError:
            return None
        check_ts = self.ts_type == CREATE_TIME
        low = max(self.now - self.config.timestamp_before_max_ms, -LONG_MAX - 1)
        high = min(self.now + self.config.timestamp_after_max_ms, LONG_MAX)
        count = batch.record_count
        if compiled is not None:
            kernel, np = compiled
            arr = np.frombuffer(data, dtype=np.uint8)
            status, max_ts, contiguous = kernel(
                arr,
                0,
                len(arr),
                count,
                batch.base_timestamp,
                check_ts,
                low,
                high,
                self.config.compacted,
            )
        else:
            # decompressed records are a bytes object: faster to index than a view of it
            obj = data.obj
            src = obj if isinstance(obj, bytes) and len(obj) == len(data) else data
            status, max_ts, contiguous = walk_v2_records(
                src,
                0,
                len(data),
                count,
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
        if in_place:  # the input's batches, at the same positions: no second parse
            batches = tuple(view[b.position : b.position + b.size] for b in self.inp.batches)
        else:
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
