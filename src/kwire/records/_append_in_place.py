"""The append path for uncompressed records already in the topic's format: offsets patched in place.

Approach: Kafka 3.9's ``LogValidator.assignOffsetsNonCompressed``, step by step. Every batch is
validated (``validateBatch``) and every record walked (``validateRecord``: magic, key, timestamp
bounds), through the compiled walk of ``_append_scan`` when it can vouch for a v2 batch, else one
record at a time; only when everything holds are the headers patched (last offset, leader epoch,
and the max timestamp and timestamp type under LogAppendTime), so ``mutate=True`` never leaves a
half-patched buffer. The records' bytes are kept.
"""

from __future__ import annotations

from kwire.errors import RecordError
from kwire.records._append_rules import Validation
from kwire.records._append_types import AppendResult
from kwire.records._codecs import Compression
from kwire.records._model import LOG_APPEND_TIME, NO_TIMESTAMP, Batch

__all__ = ["assign_offsets_non_compressed"]


def assign_offsets_non_compressed(v: Validation) -> AppendResult:
    """``assignOffsetsNonCompressed``: validate every record, then patch each batch's header."""
    first = v.first_batch(Compression.NONE)
    counter = v.next_offset
    initial = counter
    max_ts = NO_TIMESTAMP
    shallow = -1
    patches: list[tuple[Batch, int, int]] = []  # (batch, last offset, its max timestamp)
    for batch in v.inp.batches:
        v.validate_batch(first, batch)
        fast = v.fast_walk(batch, need_contiguous=False)
        if fast is not None:
            counter += batch.record_count
            batch_max = fast
        else:
            errors: list[tuple[str, RecordError]] = []
            batch_max = NO_TIMESTAMP
            magics = v.inner_magics(batch)
            for index, record in enumerate(v.records_of(batch)):
                err = v.validate_record(batch, record, index, magics)
                if err is not None:
                    errors.append(err)
                counter += 1
                if batch.magic > 0 and record.timestamp > batch_max:
                    batch_max = record.timestamp
            v.raise_record_errors(errors, batch.position)
        if batch.magic > 0 and batch_max > max_ts:
            max_ts = batch_max
            shallow = counter - 1
        patches.append((batch, counter - 1, batch_max))
    # Everything validated: only now touch the bytes (so mutate=True never half-patches).
    buf = v.output_buffer()
    for batch, last, batch_max in patches:
        v.patch_header(buf, batch, last, batch_max)
    if v.ts_type == LOG_APPEND_TIME:
        # Kafka 3.9 keeps these equal to what MemoryRecordsBuilder.info() reports.
        if v.to_magic == 0:
            max_ts, shallow = NO_TIMESTAMP, -1
        elif v.to_magic == 1:
            max_ts, shallow = v.now, initial
        else:
            max_ts, shallow = v.now, counter - 1
    return v.result(
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
