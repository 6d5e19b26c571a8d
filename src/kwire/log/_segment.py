"""One log segment: scanning its batches (resiliently), index lookups and split points.

Approach: a ``Segment`` is sans-IO: it wraps the bytes of a ``.log`` (any bytes-like; ``open_segment``
gives it a read-only ``mmap``) and, when present, of its ``.index``, ``.timeindex`` and
``.txnindex``. Batches are parsed by ``kwire.records`` (``BatchReader``); this module only decides
*where* to read and what to do when the bytes there are not a batch.

Policy for bad bytes (``scan_batches`` / ``BatchScan``): nothing after a good batch is dropped
silently. Every stretch of bytes that is not read as a batch becomes one ``SkippedBytes`` (file
position, length, reason), and the scan tries to go on:

- a batch whose framing is sound (length field, magic) but that fails to parse (CRC mismatch, bad
  header) is skipped whole and scanning resumes right after it, unless a valid batch starts
  inside it: then its length field is what is wrong, and scanning resumes at that batch;
- unreadable framing (a length below the minimum, an unknown magic, a length running past the end
  of the data) starts a *resynchronisation*: the scan looks for the next position holding a batch
  whose CRC verifies, reports the bytes in between, and resumes there; with no such position, the
  rest is reported as one stretch, classified as "zero-filled tail" (all zeros: a preallocated file
  or a crash before the data reached the disk), "truncated batch" (a batch cut short by the end
  of the data) or "unreadable bytes".

With ``errors="strict"`` the first problem raises ``CorruptRecordError`` instead (Spark's FAILFAST).

Ranges: ``scan_batches(start=, end=)`` yields the batches that START in ``[start, end)``; a batch
starting before ``end`` is read whole even if it extends past ``end``. Split points come from the
offset index, whose positions are batch starts, so ranges cut there never share a batch.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import Final, Literal, NamedTuple

from kwire._wire import as_view
from kwire.errors import CorruptRecordError, DecodeError, KwireError
from kwire.log._index import (
    BytesLike,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
)
from kwire.log._txnindex import AbortedTxn, TransactionIndex
from kwire.records import DEFAULT_MAX_DECOMPRESSED_SIZE, Batch, BatchReader

__all__ = [
    "BatchScan",
    "Segment",
    "SkippedBytes",
    "TimestampAndOffset",
    "scan_batches",
    "split_ranges",
]

LOG_OVERHEAD: Final = 12  # offset int64 + size int32, in front of every batch of every magic
MIN_BATCH_SIZE: Final = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field
_PREFIX: Final = struct.Struct(">qi")
_MAGIC_AT: Final = 16
_CHUNK: Final = 1 << 20
_ZERO_SIZE: Final = b"\0\0\0\0"
_ZEROS: Final = bytes(_CHUNK)
_WINDOW: Final = 1 << 16
_MAGIC_CANDIDATE: Final = re.compile(rb"[\x00-\x02]")

ErrorMode = Literal["report", "strict"]


class SkippedBytes(NamedTuple):
    """A stretch of a ``.log`` that was not read as batches, and why."""

    source: str | None
    position: int
    length: int
    reason: str


class TimestampAndOffset(NamedTuple):
    """The result of a timestamp lookup: the first record with timestamp >= the target."""

    timestamp: int
    offset: int
    #: File position of the batch holding the record.
    position: int


def _next_nonzero(view: memoryview, start: int, stop: int) -> int | None:
    """Index of the first non-zero byte in ``view[start:stop]``, or None."""
    pos = start
    while pos < stop:
        n = min(_CHUNK, stop - pos)
        chunk = bytes(view[pos : pos + n])
        if chunk != (_ZEROS if n == _CHUNK else bytes(n)):  # memcmp: fast on long zero runs
            return pos + n - len(chunk.lstrip(b"\0"))
        pos += n
    return None


class BatchScan(Iterator[Batch]):
    """Iterates the batches starting in ``[start, end)`` of a ``.log``'s bytes; see the module doc.

    ``buffer`` holds the file's bytes from file position ``base_position`` on (0 for a whole file;
    the start of the range for a byte range read from an object store). ``start``/``end`` and
    every reported position are FILE positions; ``batch.position`` is relative to ``buffer`` (add
    ``base_position``, or use ``file_position(batch)``). After (or during) iteration, ``skipped``
    lists what was not read and ``position`` is the file position where the scan stands.
    """

    __slots__ = (
        "_data_end",
        "_end",
        "_errors",
        "_final",
        "_max_decompressed_size",
        "_reader",
        "_verify_crc",
        "_view",
        "base_position",
        "batches_read",
        "skipped",
        "source",
    )

    def __init__(
        self,
        buffer: BytesLike,
        *,
        start: int | None = None,
        end: int | None = None,
        base_position: int = 0,
        source: str | None = None,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        errors: ErrorMode = "report",
    ) -> None:
        if errors not in ("report", "strict"):
            raise ValueError(f"errors must be 'report' or 'strict', not {errors!r}")
        view = as_view(buffer)
        self._view = view
        self.base_position = base_position
        self.source = source
        self._data_end = len(view)
        rel_start = 0 if start is None else start - base_position
        rel_end = self._data_end if end is None else end - base_position
        if rel_start < 0 or rel_start > self._data_end:
            raise ValueError(
                f"start {start} is outside the buffer (file positions {base_position}.."
                f"{base_position + self._data_end})"
            )
        self._end = max(rel_start, min(rel_end, self._data_end))
        self._verify_crc = verify_crc
        self._max_decompressed_size = max_decompressed_size
        self._errors = errors
        self.skipped: list[SkippedBytes] = []
        self.batches_read = 0
        self._final = rel_start
        self._reader: BatchReader | None = self._reader_at(rel_start)

    def _reader_at(self, rel: int) -> BatchReader:
        return BatchReader(
            self._view,
            verify_crc=self._verify_crc,
            max_decompressed_size=self._max_decompressed_size,
            allow_truncated_tail=True,
            start=rel,
        )

    @property
    def position(self) -> int:
        """File position of the next batch (after iteration: where the scan stopped)."""
        if self._reader is None:
            return self.base_position + self._final
        return self.base_position + self._reader.position

    @property
    def skipped_bytes(self) -> int:
        return sum(s.length for s in self.skipped)

    def file_position(self, batch: Batch) -> int:
        return self.base_position + batch.position

    def __iter__(self) -> BatchScan:
        return self

    def __next__(self) -> Batch:
        while True:
            reader = self._reader
            if reader is None:
                raise StopIteration
            pos = reader.position
            if pos >= self._end:
                self._stop(pos)
                raise StopIteration
            try:
                batch = next(reader)
            except StopIteration:
                if reader.truncated_at is not None:
                    self._recover(reader.truncated_at, None)
                    continue
                self._stop(reader.position)
                raise
            except KwireError as exc:
                self._recover(pos, exc)
                continue
            self.batches_read += 1
            return batch

    def _stop(self, rel: int) -> None:
        self._final = rel
        self._reader = None

    # -- problems ------------------------------------------------------------------------------

    def _report(self, rel: int, length: int, reason: str) -> None:
        skipped = SkippedBytes(self.source, self.base_position + rel, length, reason)
        if self._errors == "strict":
            where = f"{self.source}: " if self.source else ""
            raise CorruptRecordError(
                f"{where}{reason} ({length} bytes skipped)",
                offset=skipped.position,
                context="log segment",
            )
        self.skipped.append(skipped)

    def _framing(self, rel: int) -> tuple[int, int] | None:
        """(size, magic) at ``rel`` when the framing is plausible and the batch fits the data."""
        if self._data_end - rel < LOG_OVERHEAD + MIN_BATCH_SIZE:
            return None
        _, size = _PREFIX.unpack_from(self._view, rel)
        if size < MIN_BATCH_SIZE or rel + LOG_OVERHEAD + size > self._data_end:
            return None
        magic = self._view[rel + _MAGIC_AT]
        if magic > 2:
            return None
        return size, magic

    def _valid_batch_at(self, rel: int) -> bool:
        framing = self._framing(rel)
        if framing is None:
            return False
        size, _ = framing
        try:
            reader = BatchReader(
                self._view,
                verify_crc=True,
                max_decompressed_size=self._max_decompressed_size,
                start=rel,
                end=rel + LOG_OVERHEAD + size,
            )
            batch = next(reader)
            # Offsets are not covered by the CRC: a candidate with a negative one is garbage.
            if batch.last_offset < 0:
                return False
        except (KwireError, StopIteration):
            return False
        return True

    def _resync(self, rel: int) -> int | None:
        """The first position after ``rel`` (and before the range end) holding a valid batch.

        Candidates are found a window at a time: a regular expression picks the positions whose
        magic byte (at +16) is 0, 1 or 2, a zero size field skips the whole zero run, and only
        the survivors are parsed (with their CRC checked).
        """
        view = self._view
        data_end = self._data_end
        last = min(self._end - 1, data_end - LOG_OVERHEAD - MIN_BATCH_SIZE)
        q = rel + 1
        while q <= last:
            hi = min(last, q + _WINDOW - 1)
            window = bytes(view[q + _MAGIC_AT : hi + _MAGIC_AT + 1])
            restart = hi + 1
            for match in _MAGIC_CANDIDATE.finditer(window):
                c = q + match.start()
                if view[c + 8 : c + 12].tobytes() == _ZERO_SIZE:
                    # A batch's size field is never zero: jump over the zero run in one go.
                    nz = _next_nonzero(view, c + 8, min(last + 12, data_end))
                    if nz is None:
                        return None
                    restart = max(c + 1, nz - 11)
                    break
                if self._valid_batch_at(c):
                    return c
            q = restart
        return None

    def _recover(self, rel: int, exc: KwireError | None) -> None:
        """Report the bad bytes at ``rel`` and move the reader past them (or stop)."""
        reason = None if exc is None else (exc.reason if isinstance(exc, DecodeError) else str(exc))
        framing = self._framing(rel)
        nxt = self._resync(rel)
        if exc is not None and framing is not None:
            # Sound framing, bad batch (CRC, header). When the next valid batch starts right after
            # it (or nothing valid follows), the length was right: exactly this batch is skipped.
            # A valid batch starting *inside* it means its length field is wrong: report only the
            # bytes up to that batch, so no intact batch is swallowed.
            after = rel + LOG_OVERHEAD + framing[0]
            if nxt is None or nxt == after:
                self._report(rel, after - rel, f"corrupt batch: {reason}")
                self._reader = self._reader_at(after)
                return
        if nxt is not None:
            if _next_nonzero(self._view, rel, nxt) is None:
                what = "zero-filled bytes"
            else:
                why = reason if reason is not None else "batch length runs past the end of the data"
                what = f"unreadable bytes ({why})"
            self._report(rel, nxt - rel, f"{what}; resumed at the next valid batch")
            self._reader = self._reader_at(nxt)
            return
        stop = max(self._end, rel)
        data_end = self._data_end
        self._stop(max(stop, data_end) if exc is None else stop)
        if _next_nonzero(self._view, rel, stop) is None:
            what = "zero-filled tail" if stop == data_end else "zero-filled bytes"
            self._report(rel, stop - rel, what)
        elif exc is None:
            have = data_end - rel
            if have >= LOG_OVERHEAD:
                _, size = _PREFIX.unpack_from(self._view, rel)
                why = f"truncated batch: {LOG_OVERHEAD + size} bytes declared, {have} present"
            else:
                why = f"truncated batch: {have} bytes, fewer than the {LOG_OVERHEAD}-byte log overhead"
            self._report(rel, have, why)
        else:
            self._report(rel, stop - rel, f"unreadable bytes ({reason})")


def scan_batches(
    buffer: BytesLike,
    *,
    start: int | None = None,
    end: int | None = None,
    base_position: int = 0,
    source: str | None = None,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    errors: ErrorMode = "report",
) -> BatchScan:
    """Scan the batches of a ``.log``'s bytes resiliently; see ``BatchScan`` and the module doc."""
    return BatchScan(
        buffer,
        start=start,
        end=end,
        base_position=base_position,
        source=source,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        errors=errors,
    )


def split_ranges(
    index: OffsetIndex | list[OffsetPosition] | list[int],
    log_size: int,
    target_bytes: int,
) -> list[tuple[int, int]]:
    """Cut ``[0, log_size)`` into byte ranges of about ``target_bytes`` at index positions.

    Pure: needs only the offset index (entries, or just their positions) and the ``.log`` size, so
    a planner never reads record data. Index positions are batch starts, so the ranges never
    share a batch. A segment without index entries is one range; an empty segment, none.
    """
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    if log_size <= 0:
        return []
    if isinstance(index, OffsetIndex):
        positions = index.positions
    else:
        positions = [p if isinstance(p, int) else p.position for p in index]
    cuts = [0]
    for p in positions:
        if p >= log_size:
            break
        if p - cuts[-1] >= target_bytes and log_size - p > 0:
            cuts.append(p)
    cuts.append(log_size)
    return [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1) if cuts[i] < cuts[i + 1]]


class Segment:
    """A segment over in-memory (or mmap'd) bytes: its batches, indexes and aborted transactions.

    Sans-IO: pass the bytes of the ``.log`` and, when you have them, of the index files
    (``open_segment`` does this for local files). ``view`` and the batches it yields reference
    ``log``; with ``open_segment`` they are valid only inside the ``with`` block (copy with
    ``bytes()`` / ``Record.copy()`` to keep data).
    """

    __slots__ = (
        "_index_bytes",
        "_offset_index",
        "_time_index",
        "_timeindex_bytes",
        "_txn_index",
        "_txnindex_bytes",
        "base_offset",
        "source",
        "view",
    )

    def __init__(
        self,
        log: BytesLike,
        *,
        base_offset: int,
        index: BytesLike | None = None,
        timeindex: BytesLike | None = None,
        txnindex: BytesLike | None = None,
        source: str | None = None,
    ) -> None:
        self.view = as_view(log)
        self.base_offset = base_offset
        self.source = source
        self._index_bytes = index
        self._timeindex_bytes = timeindex
        self._txnindex_bytes = txnindex
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._txn_index: TransactionIndex | None = None

    @property
    def size(self) -> int:
        return len(self.view)

    @property
    def offset_index(self) -> OffsetIndex:
        """The parsed ``.index`` (empty when the segment has none)."""
        if self._offset_index is None:
            data = self._index_bytes if self._index_bytes is not None else b""
            self._offset_index = OffsetIndex(data, self.base_offset)
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        """The parsed ``.timeindex`` (empty when the segment has none)."""
        if self._time_index is None:
            data = self._timeindex_bytes if self._timeindex_bytes is not None else b""
            self._time_index = TimeIndex(data, self.base_offset)
        return self._time_index

    @property
    def txn_index(self) -> TransactionIndex:
        if self._txn_index is None:
            data = self._txnindex_bytes if self._txnindex_bytes is not None else b""
            self._txn_index = TransactionIndex(data)
        return self._txn_index

    @property
    def aborted_transactions(self) -> list[AbortedTxn]:
        """The aborted transactions whose ABORT marker is in this segment (its ``.txnindex``)."""
        return list(self.txn_index.entries)

    def scan(
        self,
        start: int | None = None,
        end: int | None = None,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        errors: ErrorMode = "report",
    ) -> BatchScan:
        """A ``BatchScan`` of this segment's batches starting in ``[start, end)`` (file positions)."""
        return BatchScan(
            self.view,
            start=start,
            end=end,
            source=self.source,
            verify_crc=verify_crc,
            max_decompressed_size=max_decompressed_size,
            errors=errors,
        )

    def batches(
        self, start: int | None = None, end: int | None = None, *, verify_crc: bool = True
    ) -> Iterator[Batch]:
        """The batches starting in ``[start, end)``; problems are skipped (use ``scan`` to see them)."""
        return iter(self.scan(start, end, verify_crc=verify_crc))

    def _start_near(self, indexed: int) -> int:
        """``indexed`` if a valid batch starts there (a sound index), else 0 (scan from the start)."""
        if indexed <= 0 or indexed >= self.size:
            return 0
        try:
            next(BatchReader(self.view, verify_crc=False, start=indexed))
        except (DecodeError, StopIteration):
            return 0
        return indexed

    def position_of(self, offset: int) -> int | None:
        """File position of the first batch with ``last_offset >= offset`` (Kafka's
        ``translateOffset``): the batch holding ``offset``, or the next one if compaction removed
        it; None when every batch of the segment is below ``offset``."""
        start = self._start_near(self.offset_index.lookup(offset).position)
        for batch in self.scan(start, verify_crc=False):
            if batch.last_offset >= offset:
                return batch.position
        return None

    def lookup_timestamp(
        self, timestamp: int, starting_offset: int | None = None
    ) -> TimestampAndOffset | None:
        """Kafka's ``LogSegment.findOffsetByTimestamp``: the first record with timestamp >=
        ``timestamp`` and offset >= ``starting_offset``; None if the segment has none."""
        floor = self.base_offset if starting_offset is None else starting_offset
        entry = self.time_index.lookup(timestamp)
        indexed = self.offset_index.lookup(max(entry.offset, floor)).position
        for batch in self.scan(self._start_near(indexed), verify_crc=False):
            if batch.max_timestamp >= timestamp and batch.last_offset >= floor:
                try:
                    for record in batch:
                        if record.timestamp >= timestamp and record.offset >= floor:
                            return TimestampAndOffset(
                                record.timestamp, record.offset, batch.position
                            )
                except KwireError:
                    continue  # records that cannot be decoded cannot answer the lookup
        return None

    def next_offset(self) -> int:
        """Offset after the last batch (Kafka's ``readNextOffset``); the base offset if empty."""
        start = self._start_near(self.offset_index.lookup(self.offset_index.last_offset).position)
        nxt = self.base_offset
        for batch in self.scan(start, verify_crc=False):
            nxt = batch.last_offset + 1
        return nxt

    def split_ranges(self, target_bytes: int) -> list[tuple[int, int]]:
        """``split_ranges`` over this segment's offset index and size."""
        return split_ranges(self.offset_index, self.size, target_bytes)

    def release(self) -> None:
        """Drop the reference to the log bytes (the mmap can then be closed)."""
        self.view.release()
