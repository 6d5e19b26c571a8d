"""The append path for uncompressed records in another format: every record rebuilt.

Approach: Kafka 3.9's ``LogValidator.convertAndAssignOffsetsNonCompressed``: every batch is
validated and every record walked (``validateRecord``); the valid records are then written anew in
the topic's magic, uncompressed, with offsets from the log end (``buildRecordsAndAssignOffsets``,
``Validation.rebuild``). Headers cannot go below magic 2; magic 0 keeps no timestamp.
"""

from __future__ import annotations

from kwire.errors import RecordError
from kwire.records._append_rules import Validation
from kwire.records._append_types import AppendResult
from kwire.records._codecs import Compression
from kwire.records._model import Record

__all__ = ["convert_and_assign_offsets_non_compressed"]


def convert_and_assign_offsets_non_compressed(v: Validation) -> AppendResult:
    """``convertAndAssignOffsetsNonCompressed``: validate, then rebuild in the topic's magic."""
    first = v.first_batch(Compression.NONE)
    records: list[Record] = []
    for batch in v.inp.batches:
        v.validate_batch(first, batch)
        errors: list[tuple[str, RecordError]] = []
        magics = v.inner_magics(batch)
        for index, record in enumerate(v.records_of(batch)):
            err = v.validate_record(batch, record, index, magics)
            if err is not None:
                errors.append(err)
            elif not errors:
                records.append(record)
        v.raise_record_errors(errors, batch.position)
    reason = f"format conversion from magic {first.magic} to magic {v.to_magic}"
    return v.rebuild(first, records, Compression.NONE, reason)
