"""Executor-side reading of one SegmentSplit into Arrow record batches.

Approach: the split's byte range is read through pyarrow's filesystem in windows of about
WINDOW_BYTES, cut at batch boundaries by a 12-byte frame walk (offset, size: the same for every
magic), so a Python worker's memory depends on the window, not on the size or number of
segments. Each window goes whole to the records layer's columnar decoder
(`kwire.records.decode_columnar`), which returns Arrow arrays without a Python object per record
and the segment constants (topic, partition, segment) filled in. What a query keeps is then a
few vectorised masks over those columns:
  * offsets in [start_offset, end_offset) (the planner's bounds are index positions, a little
    wide); control records unless includeControl;
  * timestamp bounds: from the first record with timestamp >= startingTimestamp on, up to (not
    including) the first record with timestamp >= endingTimestamp, as Kafka's offsetsForTimes;
  * read_committed: Kafka's consumer logic (kwire.log.ReadCommittedFilter) runs over the batch headers of the
    window (a cheap header walk, kwire.records.read_batches) and names the aborted batches by
    base offset; their rows are masked out. Control batches never reach the output.
Problems follow Spark's file-source modes: PERMISSIVE keeps what can be read and says why in
`_corrupt_record` (a batch failing its CRC is decoded without the check and its rows are kept; a
batch or region that cannot be decoded becomes one row with only topic, partition, segment,
batchOffset when known, and `_corrupt_record`); DROPMALFORMED drops them; FAILFAST raises.
Skipped bytes are counted per split, logged as a warning on the executor and, when the
`reportPath` option is set, written there as one small JSON file per split (the pipeline sums
them for its closing table). With `metricsPath`, every split leaves the bytes it read there
(`scan_metrics` sums them, with the planner's note). A streaming split over a live log
(`live`) stops once it has read its end offset: bytes after it, a batch still being written
included, are not yet written as far as the query is concerned, never corruption.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import struct
import uuid
from collections.abc import Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kwire._lazy import lazy_dataclass
from kwire.errors import CorruptRecordError, DecodeError, OffsetOutOfRangeError
from kwire.log import ReadCommittedFilter, scan_batches
from kwire.records import read_batches
from kwire.records._columnar import decode_columnar, decode_to_arrow
from kwire.spark._fs import read_bytes, resolve
from kwire.spark._options import ReadOptions
from kwire.spark._plan import SegmentSplit
from kwire.spark._schema import CORRUPT_RECORD, RECORD_COLUMNS, arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ScanMetrics", "SplitStats", "read_split", "scan_metrics", "write_metrics"]

log = logging.getLogger("kwire.spark")

WINDOW_BYTES = 16 << 20
_FRAME = struct.Struct(">qi")  # every magic starts with offset int64, size int32
_FRAME_OVERHEAD = 12
_MIN_FRAME = 14  # the smallest message a size field can announce (magic 0 record overhead)


@lazy_dataclass
class SplitStats:
    """What reading one split did (kept on the executor; logged and optionally reported)."""

    records: int = 0
    bytes_read: int = 0
    skipped_bytes: int = 0
    malformed: int = 0  # regions or batches reported (dropped, or marked in PERMISSIVE)
    problems: list[str] = field(default_factory=list)

    def skip(self, position: int, length: int, reason: str) -> None:
        self.skipped_bytes += length
        self.malformed += 1
        if len(self.problems) < 20:
            self.problems.append(f"{length} bytes at position {position}: {reason}")


def frame_cut(view: memoryview, limit: int) -> int:
    """Bytes of whole batches at the start of ``view`` within ``limit`` (a frame walk).

    Returns -1 if the first frame is unusable (corrupt framing). Returns 0 if the first batch is
    whole but longer than ``limit``, or cut off by the end of ``view``.
    """
    pos = 0
    end = min(limit, len(view))
    while pos + _FRAME_OVERHEAD <= len(view):
        size = _FRAME.unpack_from(view, pos)[1]
        if size < _MIN_FRAME:
            return pos if pos else -1
        nxt = pos + _FRAME_OVERHEAD + size
        if nxt > end:
            return pos
        pos = nxt
    return pos


def _aborted_batches(view: memoryview, txn_filter: ReadCommittedFilter) -> list[int]:
    """Base offsets of the batches in ``view`` that read_committed drops (control included)."""
    dropped: list[int] = []
    try:
        for batch in read_batches(view, verify_crc=False, allow_truncated_tail=True):
            if not txn_filter.keep(batch):
                dropped.append(batch.base_offset)
    except DecodeError:
        pass  # the columnar decode reports the corrupt bytes; decisions so far stand
    return dropped


class _SplitReader:
    def __init__(self, split: SegmentSplit, options: ReadOptions, target: pa.Schema) -> None:
        self.split = split
        self.options = options
        self.target = target
        self.stats = SplitStats()
        names = set(target.names)
        needed = [c for c in RECORD_COLUMNS if c in names]
        if split.start_offset is not None or split.end_offset is not None:
            needed.append("offset")
        if split.start_timestamp is not None or split.end_timestamp is not None:
            needed.append("timestamp")
        if not options.include_control or options.read_committed:
            needed.append("isControl")
        if options.read_committed:
            needed.append("batchOffset")
        self.columns = tuple(dict.fromkeys(needed))
        self.decoded_schema = arrow_schema(self.columns)
        self.committed = (
            ReadCommittedFilter(split.aborted or ()) if options.read_committed else None
        )
        self.started = split.start_timestamp is None  # the start timestamp rule is satisfied
        self.stopped = False  # the end timestamp rule was reached
        self.with_corrupt = CORRUPT_RECORD in names
        self.pending: list[pa.RecordBatch] = []

    # ---- rows --------------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """What a FAILFAST error names: the topic-partition and the segment file."""
        return f"{self.split.topic}-{self.split.partition}, segment {self.split.uri}"

    def decode(self, view: memoryview, base: int, *, verify_crc: bool) -> Any:
        split = self.split
        strict = self.options.mode == "FAILFAST"
        try:
            return decode_columnar(
                view,
                columns=self.columns,
                verify_crc=verify_crc,
                allow_truncated_tail=not strict,
                on_corrupt="raise" if strict else "skip",
                topic=split.topic,
                partition=split.partition,
                segment=split.name,
                position_base=base,
            )
        except DecodeError as exc:
            if not strict:
                raise
            # the decoder knows the byte position and batch; the file and partition are ours
            where = f"{self.where}, {exc.context}" if exc.context else self.where
            raise type(exc)(exc.reason, offset=exc.offset, path=exc.path, context=where) from None

    def select(self, table: pa.RecordBatch, dropped: list[int]) -> pa.RecordBatch:
        """Apply the bounds, control and read_committed masks to decoded rows."""
        import pyarrow as pa
        import pyarrow.compute as pc

        split = self.split
        masks: list[Any] = []
        if split.start_offset is not None:
            masks.append(pc.greater_equal(table.column("offset"), split.start_offset))
        if split.end_offset is not None:
            masks.append(pc.less(table.column("offset"), split.end_offset))
        if self.committed is not None or not self.options.include_control:
            masks.append(pc.invert(table.column("isControl")))
        if dropped:
            masks.append(
                pc.invert(pc.is_in(table.column("batchOffset"), pa.array(dropped, pa.int64())))
            )
        if split.start_timestamp is not None or split.end_timestamp is not None:
            millis = pc.fill_null(
                pc.divide(pc.cast(table.column("timestamp"), pa.int64()), 1000), -1
            )
            n = len(millis)
            lo, hi = 0, n
            if not self.started:
                hits = pc.indices_nonzero(pc.greater_equal(millis, split.start_timestamp))
                if len(hits):
                    lo = hits[0].as_py()
                    self.started = True
                else:
                    lo = n
            if split.end_timestamp is not None and lo < n:
                hits = pc.indices_nonzero(pc.greater_equal(millis.slice(lo), split.end_timestamp))
                if len(hits):
                    hi = lo + hits[0].as_py()
                    self.stopped = True
            if lo > 0 or hi < n:
                import numpy as np

                window = np.zeros(n, dtype=bool)
                window[lo:hi] = True
                masks.append(pa.array(window))
        if not masks:
            return table
        mask = masks[0]
        for other in masks[1:]:
            mask = pc.and_(mask, other)
        return table.filter(mask)

    def finish(self, table: pa.RecordBatch, corrupt: str | None) -> pa.RecordBatch:
        """Order and cast the columns to the target schema, adding ``_corrupt_record``."""
        import pyarrow as pa

        from kwire.records._columnar import constant_array

        n = table.num_rows
        arrays = []
        for f in self.target:
            if f.name == CORRUPT_RECORD:
                column = constant_array(corrupt, n, pa.string())
            else:
                column = table.column(f.name)
            arrays.append(column if column.type == f.type else column.cast(f.type))
        self.stats.records += n
        return pa.RecordBatch.from_arrays(arrays, schema=self.target)

    def marker(self, position: int, reason: str, batch_offset: int | None) -> pa.RecordBatch:
        """The one PERMISSIVE row standing for bytes that could not be read as records."""
        import pyarrow as pa

        split = self.split
        values: dict[str, object] = {
            "topic": split.topic,
            "partition": split.partition,
            "segment": split.name,
            "batchOffset": batch_offset,
        }
        arrays = [pa.array([values.get(f.name)], f.type) for f in self.decoded_schema]
        table = pa.RecordBatch.from_arrays(arrays, schema=self.decoded_schema)
        self.stats.records -= 1  # not a record
        return self.finish(table, f"{reason} (segment {split.name}, byte position {position})")

    def problem(
        self, position: int, length: int, reason: str, batch_offset: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        self.stats.skip(position, length, reason)
        if self.options.mode == "FAILFAST":
            at = "" if batch_offset is None else f", batch base offset {batch_offset}"
            raise CorruptRecordError(reason, offset=position, context=f"{self.where}{at}")
        if self.options.mode == "PERMISSIVE" and self.with_corrupt:
            yield self.marker(position, reason, batch_offset)

    # ---- one window of whole batches -----------------------------------------------------------
    def window(self, view: memoryview, base: int) -> Iterator[pa.RecordBatch]:
        opts = self.options
        dropped = _aborted_batches(view, self.committed) if self.committed is not None else []
        result = self.decode(view, base, verify_crc=opts.verify_crc)
        split = self.split
        if split.live and split.end_offset is not None and result.batch.num_rows:
            import pyarrow.compute as pc

            top = pc.max(result.batch.column("offset")).as_py()
            if top is not None and top >= split.end_offset - 1:
                self.stopped = True  # what follows is past the end: maybe still being written
        table = self.select(result.batch, dropped)
        if table.num_rows:
            yield self.finish(table, None)
        for skipped in result.skipped:
            start = skipped.position - base
            piece = view[start : start + skipped.size]
            batch_offset = (
                _FRAME.unpack_from(piece, 0)[0] if len(piece) >= _FRAME_OVERHEAD else None
            )
            if opts.mode == "PERMISSIVE" and self.with_corrupt and "CRC" in skipped.reason.upper():
                # Keep what can be read: the same batch without the CRC check.
                try:
                    rows = decode_to_arrow(
                        piece,
                        columns=self.columns,
                        verify_crc=False,
                        topic=self.split.topic,
                        partition=self.split.partition,
                        segment=self.split.name,
                        position_base=skipped.position,
                    )
                except DecodeError:
                    pass
                else:
                    self.stats.skip(skipped.position, 0, skipped.reason)
                    rows = self.select(rows, dropped)
                    if rows.num_rows:
                        yield self.finish(
                            rows, f"{skipped.reason} (batch at byte position {skipped.position})"
                        )
                    continue
            yield from self.problem(skipped.position, skipped.size, skipped.reason, batch_offset)
        if result.truncated_bytes and self.split.live:
            self.stopped = True  # a batch still being written: not there yet
        elif result.truncated_bytes:
            tail = view[result.bytes_consumed :]
            reason = "zero-filled tail" if not any(tail) else "truncated batch at the end"
            yield from self.problem(base + result.bytes_consumed, result.truncated_bytes, reason)

    # ---- the split -----------------------------------------------------------------------------
    def resync(self, fs: Any, path: str, pos: int) -> int | None:
        """Where the next readable batch starts after bad framing at ``pos`` (None: none left).

        The bytes skipped are reported (or raised, in FAILFAST) through ``problem``; their marker
        rows are queued in ``self.pending``.
        """
        rest = read_bytes(fs, path, pos, self.split.end)
        self.stats.bytes_read += len(rest)
        scan = scan_batches(
            rest, base_position=pos, source=self.split.uri, verify_crc=True, errors="report"
        )
        first = next(scan, None)
        resume = None if first is None else scan.file_position(first)
        for skipped in scan.skipped:
            if resume is not None and skipped.position >= resume:
                break
            self.pending.extend(self.problem(skipped.position, skipped.length, skipped.reason))
        if resume is not None and resume <= pos:
            return None  # cannot move forward: give up on the rest (already reported)
        return resume

    def read(self) -> Iterator[pa.RecordBatch]:
        split = self.split
        fs, path = resolve(split.uri)
        pos = split.start
        while pos < split.end and not self.stopped:
            want = min(split.end, pos + WINDOW_BYTES)
            view = read_bytes(fs, path, pos, want)
            self.stats.bytes_read += len(view)
            length = frame_cut(view, len(view))
            if length == 0 and len(view) >= _FRAME_OVERHEAD:
                # One batch larger than the window, or running past the split's end: read it whole
                # (bounded by the file size, so a corrupt size cannot make us allocate more).
                size = _FRAME.unpack_from(view, 0)[1]
                view = read_bytes(fs, path, pos, min(split.log_size, pos + _FRAME_OVERHEAD + size))
                self.stats.bytes_read += len(view)
                length = len(view)
            elif length < 0 and split.live and not any(view):
                break  # zeros at the end of a live segment: not written yet
            elif length <= 0:
                # Corrupt framing: the log layer's scan resynchronises on the next batch whose
                # CRC verifies; the bytes in between are reported, the batches after them read.
                resume = self.resync(fs, path, pos)
                if resume is None:
                    break
                pos = resume
                continue
            if length == 0:
                break
            yield from self.pending
            self.pending.clear()
            yield from self.window(view[:length], pos)
            pos += length
        yield from self.pending
        self.pending.clear()
        if (
            split.start_timestamp is not None
            and not self.started
            and split.final
            and split.end_offset is None
            and self.options.timestamp_strategy == "error"
        ):
            # Spark's startingOffsetsByTimestampStrategy=error (its default): no record of the
            # partition is at or after the starting timestamp
            raise OffsetOutOfRangeError(
                message=f"No offset matched from request of topic-partition {split.topic}-"
                f"{split.partition} and timestamp {split.start_timestamp}. Set the option "
                '"startingOffsetsByTimestampStrategy" to "latest" to read nothing from it.'
            )


def read_split(
    split: SegmentSplit, options: ReadOptions, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Arrow record batches (schema ``target``) for one split; see the module comment."""
    reader = _SplitReader(split, options, target)
    try:
        yield from reader.read()
    finally:
        stats = reader.stats
        if options.metrics_path:
            write_metrics(
                options.metrics_path,
                f"split-{split.topic}-{split.partition}-{split.base_offset}-{split.start}",
                {
                    "bytes_read": stats.bytes_read,
                    "records": stats.records,
                    "skipped_bytes": stats.skipped_bytes,
                    "malformed": stats.malformed,
                },
            )
        if stats.skipped_bytes or stats.problems:
            log.warning(
                "kwire: skipped %d bytes in %s [%d:%d]: %s",
                stats.skipped_bytes,
                split.uri,
                split.start,
                split.end,
                "; ".join(stats.problems[:5]),
            )
            if options.report_path:
                _report(options.report_path, split, stats)


def _report(report_path: str, split: SegmentSplit, stats: SplitStats) -> None:
    fs, root = resolve(report_path)
    fs.create_dir(root, recursive=True)
    doc = {
        "segment": split.uri,
        "start": split.start,
        "end": split.end,
        "skipped_bytes": stats.skipped_bytes,
        "problems": stats.problems,
    }
    name = (
        f"{split.topic}-{split.partition}-{split.base_offset}-{split.start}-{uuid.uuid4().hex[:8]}"
    )
    with fs.open_output_stream(f"{root}/{name}.json") as out:
        out.write(json.dumps(doc).encode())


def read_reports(report_path: str) -> tuple[int, list[str]]:
    """Total skipped bytes and the problems listed in a ``reportPath`` directory."""
    import pyarrow.fs as pafs

    fs, root = resolve(report_path)
    total = 0
    problems: list[str] = []
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=False))
    except FileNotFoundError:
        return 0, []
    for info in infos:
        if info.path.endswith(".json"):
            with fs.open_input_file(info.path) as f:
                doc = json.loads(f.read().decode())
            total += int(doc["skipped_bytes"])
            problems.extend(f"{doc['segment']}: {p}" for p in doc["problems"])
    return total, problems


def write_metrics(metrics_path: str, name: str, doc: dict[str, int]) -> None:
    """Leave one small JSON note in a ``metricsPath`` directory (one per split or plan)."""
    fs, root = resolve(metrics_path)
    fs.create_dir(root, recursive=True)
    with fs.open_output_stream(f"{root}/{name}-{uuid.uuid4().hex[:8]}.json") as out:
        out.write(json.dumps(doc).encode())


@lazy_dataclass(frozen=True)
class ScanMetrics:
    """What scans that had ``metricsPath`` set did: bytes executors read from ``.log`` files,
    index bytes the planner read, and the log bytes of the partitions they selected; what was
    lost or malformed: offsets skipped with failOnDataLoss=false (``lost_offsets``), and bytes
    and regions that could not be read as records (``skipped_bytes``, ``malformed``: dropped
    by DROPMALFORMED, marked by PERMISSIVE). ``check_bytes``: segment tails the planner read to
    check that segments join up."""

    bytes_read: int
    index_bytes: int
    log_bytes: int
    planned_bytes: int
    splits: int
    records: int
    check_bytes: int = 0
    lost_offsets: int = 0
    skipped_bytes: int = 0
    malformed: int = 0

    @property
    def fraction_read(self) -> float:
        """``bytes_read`` over ``log_bytes`` (the share of the selected logs a scan touched)."""
        return self.bytes_read / self.log_bytes if self.log_bytes else 0.0


def scan_metrics(metrics_path: str) -> ScanMetrics:
    """Sum the notes scans left in ``metricsPath`` (see the ``metricsPath`` option)."""
    import pyarrow.fs as pafs

    fs, root = resolve(metrics_path)
    totals = dict.fromkeys((f.name for f in dataclasses.fields(ScanMetrics)), 0)
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=False))
    except FileNotFoundError:
        infos = []
    for info in infos:
        if info.path.endswith(".json"):
            with fs.open_input_file(info.path) as f:
                doc = json.loads(f.read().decode())
            for key, value in doc.items():
                if key in totals:
                    totals[key] += int(value)
    return ScanMetrics(**totals)
