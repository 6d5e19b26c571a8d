"""The append path for compressed records (in or out): kept as they are when possible, else rebuilt.

Approach: Kafka 3.9's ``LogValidator.validateMessagesAndAssignOffsetsCompressed``. The one batch
(compressed input is one batch) is validated and its records walked after decompression. The
compressed payload is kept as it is (KIP-31), with only the header patched, unless the codec
changes, the format changes, the target is magic 0 (absolute inner offsets), or magic 0/1 inner
offsets are not 0, 1, 2, ... (the mirror-maker case); then the batch is rebuilt with the topic's
codec (``buildRecordsAndAssignOffsets``). Uncompressed control batches reach this path when the
topic compresses; they stay as they are.
"""

from __future__ import annotations

from kwire.errors import RecordError
from kwire.records._append_rules import Validation, Walk
from kwire.records._append_types import AppendResult
from kwire.records._codecs import Compression
from kwire.records._model import LOG_APPEND_TIME, Batch

__all__ = ["validate_messages_and_assign_offsets_compressed"]


def validate_messages_and_assign_offsets_compressed(v: Validation) -> AppendResult:
    """``validateMessagesAndAssignOffsetsCompressed``: keep the payload or rebuild it."""
    in_place = v.source == v.target
    first = v.first_batch(v.source)
    reason: str | None = None
    if not in_place:
        reason = f"codec change from {v.source.name.lower()} to {v.target.name.lower()}"
    if first.magic != v.to_magic:
        in_place = False
        reason = f"format conversion from magic {first.magic} to magic {v.to_magic}"
    elif v.to_magic == 0:
        in_place = False
        reason = "magic 0 stores absolute offsets: every inner offset must be rewritten"
    if v.source == Compression.NONE and first.is_control:
        in_place, reason = True, None  # control records stay uncompressed
    fast = v.fast_walk(first, need_contiguous=True) if in_place else None
    if fast is not None:
        v.validate_batch(first, first)
        return _patch_in_place(v, first, first.record_count, fast)
    walk = Walk(records=[])
    expected = 0
    for batch in v.inp.batches:
        v.validate_batch(first, batch)
        errors: list[tuple[str, RecordError]] = []
        magics = v.inner_magics(batch)
        for index, record in enumerate(v.records_of(batch)):
            exp = expected
            expected += 1
            err = v.validate_record(batch, record, index, magics)
            if err is None and batch.magic > 0 and v.to_magic > 0:
                if record.timestamp > walk.max_timestamp:
                    walk.max_timestamp = record.timestamp
                if record.offset != exp:
                    walk.offsets_contiguous = False
            if err is not None:
                errors.append(err)
            else:
                walk.records.append(record)
        v.raise_record_errors(errors, batch.position)
    if in_place and not walk.offsets_contiguous:
        in_place = False
        reason = "inner offsets are not 0, 1, 2, ...: they are reassigned"
    if not in_place:
        assert reason is not None
        return v.rebuild(first, walk.records, v.target, reason)
    return _patch_in_place(v, first, len(walk.records), walk.max_timestamp)


def _patch_in_place(v: Validation, first: Batch, count: int, records_max_ts: int) -> AppendResult:
    """The in-place end of the compressed path: one batch, header fields only."""
    last = v.next_offset + count - 1
    buf = v.output_buffer()
    max_ts = v.now if v.ts_type == LOG_APPEND_TIME else records_max_ts
    # (in place means no format conversion: first.magic is the target magic here)
    v.patch_header(buf, first, last, records_max_ts)
    return v.result(
        buf,
        first=v.next_offset,
        last=last,
        max_ts=max_ts,
        shallow=last,
        in_place=True,
        reason=None,
        count=count,
        converted=0,
        compression=first.compression,
    )
