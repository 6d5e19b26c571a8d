# Driver-side planning of a kafka-log scan: file listings and index files in, small splits out.
#
# The driver lists the log directory through pyarrow's filesystems and reads only index files
# (.index, .timeindex, and .txnindex for read_committed): never a .log byte. From them it decides,
# per topic-partition, which segments a query touches and where inside them to start and stop:
#   * startingOffsets O: the segment holding O, from the offset index's entry at or below O (the
#     reader drops the few records before O); segments before it are skipped.
#   * endingOffsets E (exclusive): segments whose base offset is >= E are skipped; inside the last
#     one the scan stops at the index entry after the first entry >= E (offsets only grow, so
#     nothing before E lies beyond it); the reader drops records >= E.
#   * timestamps T (Kafka's offsetsForTimes, as LogSegment.findOffsetByTimestamp): the first
#     segment whose largest timestamp (the time index's last entry) is >= T holds the first record
#     at or after T; the time index, then the offset index give the position to start from, and
#     the reader skips records until the first one with timestamp >= T. A segment that holds a
#     timestamp bound is read as one split, because that "first record" rule needs the segment's
#     records in order. An ending timestamp works the same way and stops there.
# Each segment is cut at offset-index positions (batch boundaries) into splits of about
# maxSplitBytes. A split is a small picklable `SegmentSplit`: a path, a byte range, the bounds, and
# for read_committed the aborted transactions that overlap it (a transaction is indexed in the
# segment of its ABORT marker, possibly later than its data, so every later segment's .txnindex is
# read too).
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql.datasource import InputPartition

from kwire.log import (
    AbortedTxn,
    OffsetIndex,
    PartitionDir,
    SegmentFiles,
    TimeIndex,
    TransactionIndex,
    partitions_from_paths,
    split_ranges,
)
from kwire.spark._options import EARLIEST, LATEST, ReadOptions, bound_for

__all__ = ["SegmentSplit", "plan_splits"]

# Reads a whole (small) index file: (path) -> bytes. The driver passes a pyarrow-backed reader.
ReadFile = Callable[[str], bytes | memoryview]


@dataclass(frozen=True)
class SegmentSplit(InputPartition):  # type: ignore[misc]
    """One unit of work: bytes [start, end) of one segment, plus what to keep from them.

    Pickled on the driver and shipped to an executor, which opens ``uri`` itself.
    """

    uri: str  # the segment's .log, as a URI (local path or object-store URI)
    topic: str
    partition: int
    base_offset: int  # the segment's base offset
    start: int  # byte range [start, end) of the .log; both are batch boundaries
    end: int
    log_size: int
    start_offset: int | None = None  # keep records with offset >= start_offset
    end_offset: int | None = None  # keep records with offset < end_offset
    start_timestamp: int | None = None  # skip records until the first with timestamp >= this
    end_timestamp: int | None = None  # stop at the first record with timestamp >= this
    # read_committed: (producer_id, first_offset, last_offset) of aborted transactions overlapping
    # this segment; None for read_uncommitted.
    aborted: tuple[tuple[int, int, int], ...] | None = field(default=None)

    @property
    def name(self) -> str:
        """The segment's file name (what the ``segment`` column shows)."""
        return self.uri.rsplit("/", 1)[-1]

    def __repr__(self) -> str:
        return f"SegmentSplit({self.uri}[{self.start}:{self.end}])"


def _max_timestamp(timeindex: TimeIndex | None) -> int | None:
    return None if timeindex is None or len(timeindex) == 0 else timeindex.max_timestamp


class _PartitionPlanner:
    def __init__(
        self,
        pdir: PartitionDir,
        options: ReadOptions,
        read_file: ReadFile,
        to_uri: Callable[[str], str],
    ) -> None:
        self.pdir = pdir
        self.options = options
        self.read_file = read_file
        self.to_uri = to_uri
        self._indexes: dict[int, OffsetIndex] = {}
        self._timeindexes: dict[int, TimeIndex | None] = {}

    def index(self, seg: SegmentFiles) -> OffsetIndex:
        if seg.base_offset not in self._indexes:
            data = self.read_file(seg.index) if seg.index else b""
            self._indexes[seg.base_offset] = OffsetIndex(data, seg.base_offset)
        return self._indexes[seg.base_offset]

    def timeindex(self, seg: SegmentFiles) -> TimeIndex | None:
        if seg.base_offset not in self._timeindexes:
            self._timeindexes[seg.base_offset] = (
                TimeIndex(self.read_file(seg.timeindex), seg.base_offset) if seg.timeindex else None
            )
        return self._timeindexes[seg.base_offset]

    def _timestamp_segment(self, segments: Sequence[SegmentFiles], ts: int) -> int | None:
        """Index of the first segment whose largest timestamp is >= ts (unknown counts as yes).

        The last segment may be a broker's active segment, whose time index is only written
        every index interval (its largest timestamp is known only once it rolls): it is always
        a candidate, and the reader's first-record rule decides.
        """
        for i, seg in enumerate(segments):
            largest = _max_timestamp(self.timeindex(seg))
            if largest is None or largest >= ts or i == len(segments) - 1:
                return i
        return None

    def plan(self) -> list[SegmentSplit]:
        opts = self.options
        segments = list(self.pdir.segments)
        if not segments:
            return []
        topic, partition = self.pdir.topic, self.pdir.partition
        first, last = 0, len(segments) - 1  # inclusive range of segments to read
        start_pos = 0  # in segments[first]
        start_offset: int | None = None
        start_ts: int | None = None
        end_offset: int | None = None
        end_ts: int | None = None
        end_ts_segment: int | None = None

        if opts.starting_timestamps is not None:
            start_ts = bound_for(opts.starting_timestamps, topic, partition, EARLIEST)
            if start_ts < 0:  # not given for this partition: earliest
                start_ts = None
        if start_ts is not None:
            found = self._timestamp_segment(segments, start_ts)
            if found is None:
                return []  # no record at or after the timestamp: nothing to read
            first = found
            tindex = self.timeindex(segments[first])
            if tindex is not None and len(tindex):
                start_pos = (
                    self.index(segments[first]).lookup(tindex.lookup(start_ts).offset).position
                )
        else:
            offset = bound_for(opts.starting_offsets, topic, partition, EARLIEST)
            if offset >= 0:
                start_offset = offset
                while first < last and segments[first + 1].base_offset <= offset:
                    first += 1
                if segments[first].base_offset <= offset:
                    start_pos = self.index(segments[first]).lookup(offset).position

        if opts.ending_timestamps is not None:
            end_ts = bound_for(opts.ending_timestamps, topic, partition, LATEST)
            if end_ts < 0:
                end_ts = None
        if end_ts is not None:
            found = self._timestamp_segment(segments, end_ts)
            if found is not None:
                last = found
                end_ts_segment = found
            else:
                end_ts = None  # every record is before the ending timestamp: read to the end
        else:
            offset = bound_for(opts.ending_offsets, topic, partition, LATEST)
            if offset >= 0:
                end_offset = offset
                while last >= 0 and segments[last].base_offset >= offset:
                    last -= 1
        if last < first or (
            end_offset is not None and start_offset is not None and end_offset <= start_offset
        ):
            return []

        aborted_by_segment = self._aborted(segments) if opts.read_committed else None
        splits: list[SegmentSplit] = []
        for i in range(first, last + 1):
            seg = segments[i]
            size = seg.size if seg.size is not None else 0
            lo = start_pos if i == first else 0
            hi = size
            if end_offset is not None and i == last:
                index = self.index(seg)
                entries = index.entries
                for j, entry in enumerate(entries):
                    if entry.offset >= end_offset:
                        if j + 1 < len(entries):
                            hi = entries[j + 1].position
                        break
            if lo >= hi:
                continue
            whole = (i == first and start_ts is not None) or (i == end_ts_segment)
            if whole:
                ranges = [(lo, hi)]
            else:
                ranges = [
                    (max(s, lo), min(e, hi))
                    for s, e in split_ranges(self.index(seg), size, opts.max_split_bytes)
                    if e > lo and s < hi
                ]
            aborted = None if aborted_by_segment is None else aborted_by_segment[i]
            for s, e in ranges:
                splits.append(
                    SegmentSplit(
                        uri=self.to_uri(seg.log),
                        topic=topic,
                        partition=partition,
                        base_offset=seg.base_offset,
                        start=s,
                        end=e,
                        log_size=size,
                        start_offset=start_offset if i == first else None,
                        end_offset=end_offset if i == last else None,
                        start_timestamp=start_ts if i == first else None,
                        end_timestamp=end_ts if i == end_ts_segment else None,
                        aborted=aborted,
                    )
                )
        return splits

    def _aborted(self, segments: Sequence[SegmentFiles]) -> list[tuple[tuple[int, int, int], ...]]:
        """Per segment, the aborted transactions overlapping its offsets (from every .txnindex)."""
        txns: list[AbortedTxn] = []
        for seg in segments:
            if seg.txnindex:
                # lenient, as Kafka: a partial trailing entry (a crash mid-write) is not an entry
                txns.extend(TransactionIndex(self.read_file(seg.txnindex)).entries)
        txns.sort(key=lambda t: t.first_offset)
        result = []
        for i, seg in enumerate(segments):
            lo = seg.base_offset
            hi = segments[i + 1].base_offset if i + 1 < len(segments) else None
            result.append(
                tuple(
                    (t.producer_id, t.first_offset, t.last_offset)
                    for t in txns
                    if t.last_offset >= lo and (hi is None or t.first_offset < hi)
                )
            )
        return result


OPEN_COST_BYTES = 4 << 20  # Spark's spark.sql.files.openCostInBytes default


@dataclass(frozen=True)
class SplitGroup(InputPartition):  # type: ignore[misc]
    """Several small splits read by one Spark task (as Spark's file sources pack small files)."""

    splits: tuple[SegmentSplit, ...]

    def __repr__(self) -> str:
        return f"SplitGroup({len(self.splits)} splits)"


def pack_splits(
    splits: Sequence[SegmentSplit], target_bytes: int, open_cost: int = OPEN_COST_BYTES
) -> list[SegmentSplit | SplitGroup]:
    """Spark partitions for ``splits``: a split of about ``target_bytes`` stays alone; smaller
    ones (small segments, the tail of a big one) are packed in order, each counted with an open
    cost, until a pack reaches the target."""
    result: list[SegmentSplit | SplitGroup] = []
    pack: list[SegmentSplit] = []
    size = 0

    def flush() -> None:
        nonlocal pack, size
        if len(pack) == 1:
            result.append(pack[0])
        elif pack:
            result.append(SplitGroup(tuple(pack)))
        pack, size = [], 0

    for split in splits:
        cost = split.end - split.start + open_cost
        if pack and size + cost > target_bytes:
            flush()
        pack.append(split)
        size += cost
    flush()
    return result


def plan_splits(
    files: dict[str, int],
    options: ReadOptions,
    read_file: ReadFile,
    to_uri: Callable[[str], str] = str,
) -> list[SegmentSplit]:
    """Splits for every selected topic-partition found in a listing ``{path: size}``."""
    splits: list[SegmentSplit] = []
    for pdir in partitions_from_paths(sorted(files), files):
        if options.wants(pdir.topic, pdir.partition):
            splits.extend(_PartitionPlanner(pdir, options, read_file, to_uri).plan())
    return splits
