"""Local log directories as Arrow record batches: ``to_arrow_batch_reader``.

Approach: the resilient segment scan (``BatchScan``) finds the runs of consecutive good batches;
each run (cut at about ``split_bytes``) goes in one call to the records layer's columnar decoder
(``kwire.records.decode_columnar``), which turns it into one Arrow ``RecordBatch`` without a
Python object per record. The schema is ``kwire.records.records_arrow_schema``, the single
definition the Spark source uses too. Bytes the scan could not read, and batches whose records
the decoder rejected, are appended to the caller's ``skipped`` list. pyarrow (the ``arrow``
extra) is imported only when this is used.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kwire.log._files import list_log_dir, open_segment
from kwire.log._layout import PartitionDir
from kwire.log._segment import SkippedBytes

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["to_arrow_batch_reader"]

DEFAULT_SPLIT_BYTES = 64 << 20


def _partitions(source: Any) -> list[PartitionDir]:
    if isinstance(source, PartitionDir):
        return [source]
    if isinstance(source, (str, os.PathLike)):
        return list_log_dir(source)
    return list(source)


def _runs(scan: Iterable[Any], split_bytes: int) -> Iterator[tuple[int, int]]:
    """Byte ranges of consecutive batches (no gap between them), each about ``split_bytes``."""
    start = end = -1
    for batch in scan:
        if start >= 0 and (batch.position != end or end - start >= split_bytes):
            yield start, end
            start = -1
        if start < 0:
            start = batch.position
        end = batch.position + batch.size
    if start >= 0:
        yield start, end


def to_arrow_batch_reader(
    source: str | os.PathLike[str] | PartitionDir | Iterable[PartitionDir],
    *,
    columns: Sequence[str] | None = None,
    verify_crc: bool = True,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    skipped: list[SkippedBytes] | None = None,
) -> pa.RecordBatchReader:
    """Every record of the local log(s) in ``source`` as Arrow record batches.

    ``source``: a data dir, a partition dir (path), a ``PartitionDir`` or several. ``columns``
    picks the columns (``kwire.records.RECORD_COLUMNS`` names; default: all). Damaged bytes never
    stop the read: they are reported in ``skipped`` (when given) as ``SkippedBytes``.
    """
    import pyarrow as pa

    from kwire.records._columnar import decode_columnar, records_arrow_schema

    if split_bytes <= 0:
        raise ValueError("split_bytes must be positive")
    partitions = _partitions(source)
    schema = records_arrow_schema(columns)

    def batches() -> Iterator[pa.RecordBatch]:
        for part in partitions:
            for files in part.segments:
                with open_segment(files, indexes=False) as segment:
                    scan = segment.scan(verify_crc=verify_crc)
                    for start, end in _runs(scan, split_bytes):
                        result = decode_columnar(
                            segment.view[start:end],
                            columns=columns,
                            verify_crc=False,  # the scan checked every batch's CRC already
                            on_corrupt="skip",
                            topic=part.topic,
                            partition=part.partition,
                            segment=files.log,
                            position_base=start,
                        )
                        if skipped is not None:
                            skipped.extend(
                                SkippedBytes(files.log, s.position, s.size, s.reason)
                                for s in result.skipped
                            )
                        if result.batch.num_rows:
                            yield result.batch
                    if skipped is not None:
                        skipped.extend(scan.skipped)

    return pa.RecordBatchReader.from_batches(schema, batches())
