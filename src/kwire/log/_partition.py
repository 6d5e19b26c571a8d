"""A partition folder on the local filesystem: offset and timestamp resolution across segments.

Approach: ``PartitionLog`` reads only what a question needs: the segment list comes from the
folder listing, index files are small, and a ``.log`` is memory-mapped only when an index lookup
has to be finished by a short scan (Kafka's ``translateOffset`` / ``findOffsetByTimestamp``).
Segments are visited in base-offset order, as ``UnifiedLog`` does:

- ``position_of(offset)``: the segment whose base offset is the greatest <= offset, then later
  ones (compaction may have emptied the tail of a segment);
- ``offset_for_timestamp(ts)``: the first segment whose largest timestamp (last time index entry;
  unknown without one) is >= ts, then ``findOffsetByTimestamp`` there (and onwards if needed);
- ``aborted_transactions(start, end)``: the ``.txnindex`` entries of the segment holding ``start``
  and every later one (an ABORT marker may sit segments after its transaction's data).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager

from kwire.log._checkpoint import EpochEntry, PartitionMetadata
from kwire.log._checkpoint import read_leader_epoch_checkpoint as _read_epochs
from kwire.log._checkpoint import read_partition_metadata as _read_metadata
from kwire.log._files import list_log_dir, open_segment, read_small_file
from kwire.log._index import TimeIndex
from kwire.log._layout import PartitionDir, SegmentFiles, parse_segment_file_name
from kwire.log._segment import Segment, TimestampAndOffset
from kwire.log._snapshot import ProducerSnapshot, read_producer_snapshot
from kwire.log._txnindex import AbortedTxn, TransactionIndex, collect_aborted_transactions

__all__ = ["PartitionLog"]


class PartitionLog:
    """Read-only view of one local ``<topic>-<partition>`` folder (see the module doc)."""

    def __init__(self, partition: PartitionDir | str | os.PathLike[str]) -> None:
        if not isinstance(partition, PartitionDir):
            found = [p for p in list_log_dir(partition) if os.path.samefile(p.path, partition)]
            if not found:
                raise ValueError(f"{os.fspath(partition)} is not a <topic>-<partition> folder")
            partition = found[0]
        self.dir = partition
        self._bases = [s.base_offset for s in partition.segments]

    @property
    def topic(self) -> str:
        return self.dir.topic

    @property
    def partition(self) -> int:
        return self.dir.partition

    @property
    def segments(self) -> tuple[SegmentFiles, ...]:
        return self.dir.segments

    def open(self, segment: SegmentFiles) -> AbstractContextManager[Segment]:
        return open_segment(segment)

    def segment_index_for_offset(self, offset: int) -> int | None:
        """Index in ``segments`` of the segment whose base offset is the greatest <= ``offset``."""
        i = bisect.bisect_right(self._bases, offset) - 1
        return None if i < 0 else i

    def segment_for_offset(self, offset: int) -> SegmentFiles | None:
        i = self.segment_index_for_offset(offset)
        return None if i is None else self.segments[i]

    @property
    def start_offset(self) -> int | None:
        """Base offset of the first segment (the log start, unless a DeleteRecords moved it)."""
        return self._bases[0] if self._bases else None

    def next_offset(self) -> int:
        """The log end offset: the offset after the last batch of the last non-empty segment."""
        for segment in reversed(self.segments):
            with open_segment(segment) as seg:
                nxt = seg.next_offset()
            if nxt > segment.base_offset or segment is self.segments[0]:
                return nxt
        return 0

    def position_of(self, offset: int) -> tuple[SegmentFiles, int] | None:
        """The segment and file position of the first batch with ``last_offset >= offset``."""
        first = self.segment_index_for_offset(offset)
        for segment in self.segments[0 if first is None else first :]:
            with open_segment(segment) as seg:
                pos = seg.position_of(offset)
            if pos is not None:
                return segment, pos
        return None

    def _max_timestamp(self, segment: SegmentFiles) -> int | None:
        if segment.timeindex is None:
            return None
        return TimeIndex(read_small_file(segment.timeindex), segment.base_offset).max_timestamp

    def offset_for_timestamp(
        self, timestamp: int
    ) -> tuple[SegmentFiles, TimestampAndOffset] | None:
        """The first record with timestamp >= ``timestamp`` (Kafka's ``fetchOffsetByTimestamp``)."""
        last = len(self.segments) - 1
        for i, segment in enumerate(self.segments):
            largest = self._max_timestamp(segment)
            if largest is not None and largest < timestamp and i < last:
                continue
            with open_segment(segment) as seg:
                found = seg.lookup_timestamp(timestamp)
            if found is not None:
                return segment, found
        return None

    def aborted_transactions(
        self, start_offset: int = 0, end_offset: int | None = None
    ) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, end_offset)``, from the ``.txnindex`` of
        the segment holding ``start_offset`` and of every later segment."""
        first = self.segment_index_for_offset(start_offset) or 0
        entries: list[AbortedTxn] = []
        for segment in self.segments[first:]:
            if segment.txnindex is not None:
                entries.extend(TransactionIndex(read_small_file(segment.txnindex)).entries)
        return collect_aborted_transactions(entries, start_offset, end_offset)

    def leader_epochs(self) -> list[EpochEntry]:
        path = self.dir.leader_epoch_checkpoint
        return [] if path is None else _read_epochs(read_small_file(path))

    def metadata(self) -> PartitionMetadata | None:
        path = self.dir.partition_metadata
        return None if path is None else _read_metadata(read_small_file(path))

    def producer_snapshots(self) -> Iterator[tuple[int, ProducerSnapshot]]:
        """``(offset, snapshot)`` for each ``.snapshot`` file, oldest first."""
        for path in self.dir.snapshots:
            parsed = parse_segment_file_name(os.path.basename(path))
            assert parsed is not None
            yield parsed[0], read_producer_snapshot(read_small_file(path))
