"""Driver-side planning of a kafka-log scan: file listings and index files in, small splits out.

The driver lists the log directory through pyarrow's filesystems and reads only index files
(.index, .timeindex, and .txnindex for read_committed): never a .log byte. From them it decides,
per topic-partition, which segments a query touches and where inside them to start and stop:
  * startingOffsets O: the segment holding O, from the offset index's entry at or below O (the
    reader drops the few records before O); segments before it are skipped.
  * endingOffsets E (exclusive): segments whose base offset is >= E are skipped; inside the last
    one the scan stops at the index entry after the first entry >= E (offsets only grow, so
    nothing before E lies beyond it); the reader drops records >= E.
  * timestamps T (Kafka's offsetsForTimes, as LogSegment.findOffsetByTimestamp): the first
    segment whose largest timestamp (the time index's last entry) is >= T holds the first record
    at or after T; the time index, then the offset index give the position to start from, and
    the reader skips records until the first one with timestamp >= T. A segment that holds a
    timestamp bound is read as one split, because that "first record" rule needs the segment's
    records in order. An ending timestamp works the same way and stops there.
Pushed filters (`Pushdown`, from Spark's pushFilters) narrow the same plan: topic and partition
sets, an offset range, and a timestamp range. A timestamp lower bound T skips every segment
whose largest timestamp (its time index's last entry; not the active segment's, whose index
lags) is below T, and inside the first kept one starts after the last time index entry below T:
an entry (t, o) says no record up to offset o has a timestamp above t. An upper bound cannot
stop a scan by itself (CreateTime goes back and forth); with the timestampSkewMs option (no
record is more than S ms older than an earlier one, which Kafka's
log.message.timestamp.before/after.max.ms guarantee with S = their sum) the first entry with
t - S >= the bound ends the scan after its offset.
Each segment is cut at offset-index positions (batch boundaries) into splits of about
maxSplitBytes. A split is a small picklable `SegmentSplit`: a path, a byte range, the bounds, and
for read_committed the aborted transactions that overlap it (a transaction is indexed in the
segment of its ABORT marker, possibly later than its data, so every later segment's .txnindex is
read too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import field

from pyspark.sql.datasource import InputPartition

from kwire._lazy import lazy_dataclass
from kwire.errors import DecodeError, KwireError, OffsetOutOfRangeError, OptionError
from kwire.log import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    AbortedTxn,
    OffsetIndex,
    PartitionDir,
    SegmentFiles,
    TimeIndex,
    TopicPartition,
    TransactionIndex,
    partitions_from_paths,
    read_offset_checkpoint,
    split_ranges,
)
from kwire.records import read_batches
from kwire.spark._options import EARLIEST, LATEST, ReadOptions, bound_for

__all__ = ["PlanStats", "Pushdown", "SegmentSplit", "plan_splits"]

log = logging.getLogger("kwire.spark")

# Reads a whole (small) index file: (path) -> bytes. The driver passes a pyarrow-backed reader.
ReadFile = Callable[[str], bytes | memoryview]
# Reads a file from a position to its end: (path, start) -> bytes (a segment's tail).
ReadTail = Callable[[str, int], bytes | memoryview]


# The most of a segment the planner reads to find where it ends when its offset index does not
# say (no .index, or a truncated file): beyond this the join to the next segment is not checked.
UNINDEXED_CHECK_BYTES = 16 << 20


@lazy_dataclass(frozen=True)
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
    # a streaming split over a live log: bytes after end_offset are not written yet (a torn tail)
    live: bool = False
    # the partition's last segment: if no record reaches start_timestamp here, none does
    final: bool = False

    @property
    def name(self) -> str:
        """The segment's file name (what the ``segment`` column shows)."""
        return self.uri.rsplit("/", 1)[-1]

    def __repr__(self) -> str:
        return f"SegmentSplit({self.uri}[{self.start}:{self.end}])"


@lazy_dataclass(frozen=True)
class Pushdown:
    """What pushed filters allow a scan to skip (each None: no bound)."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    offset_lo: int | None = None  # offsets >= this
    offset_hi: int | None = None  # offsets < this
    timestamp_lo: int | None = None  # ms: records with timestamp >= this may match
    timestamp_hi: int | None = None  # ms: records with timestamp < this may match

    def wants(self, topic: str, partition: int) -> bool:
        return (self.topics is None or topic in self.topics) and (
            self.partitions is None or partition in self.partitions
        )

    @property
    def empty(self) -> bool:
        return (
            (
                self.offset_lo is not None
                and self.offset_hi is not None
                and self.offset_hi <= self.offset_lo
            )
            or (
                self.timestamp_lo is not None
                and self.timestamp_hi is not None
                and self.timestamp_hi <= self.timestamp_lo
            )
            or self.topics == frozenset()
            or self.partitions == frozenset()
        )


@lazy_dataclass
class PlanStats:
    """What planning saw: the log bytes of the selected partitions, the index bytes it read, the
    segment tail bytes it read to check that segments join up, and the offsets it found lost
    (skipped with failOnDataLoss=false)."""

    log_bytes: int = 0
    index_bytes: int = 0
    planned_bytes: int = 0
    splits: int = 0
    check_bytes: int = 0
    lost_offsets: int = 0
    lost: list[str] = field(default_factory=list)


def _max_timestamp(timeindex: TimeIndex | None) -> int | None:
    return None if timeindex is None or len(timeindex) == 0 else timeindex.max_timestamp


class _PartitionPlanner:
    def __init__(
        self,
        pdir: PartitionDir,
        options: ReadOptions,
        read_file: ReadFile,
        to_uri: Callable[[str], str],
        pushdown: Pushdown | None = None,
        stats: PlanStats | None = None,
        *,
        read_tail: ReadTail | None = None,
        log_start: int | None = None,
        cleaned_to: int | None = None,
    ) -> None:
        self.pdir = pdir
        self.options = options
        # Kafka's log start: the first segment's base, or the log-start-offset-checkpoint entry
        # when higher (DeleteRecords, retention inside a segment: UnifiedLog.logStartOffset)
        first = pdir.segments[0].base_offset if pdir.segments else 0
        self.log_start = first if log_start is None else max(first, log_start)
        # the log cleaner's first dirty offset: gaps below it are compaction, not lost data
        self.cleaned_to = cleaned_to
        self.pushdown = pushdown or Pushdown()
        self.stats = stats if stats is not None else PlanStats()
        self.to_uri = to_uri

        def read_counted(path: str) -> bytes | memoryview:
            data = read_file(path)
            self.stats.index_bytes += len(data)
            return data

        def tail_counted(path: str, start: int) -> bytes | memoryview:
            data = read_tail(path, start) if read_tail else memoryview(read_file(path))[start:]
            self.stats.check_bytes += len(data)
            return data

        self.read_file = read_counted
        self.read_tail = tail_counted
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
        offset: int | None = None
        if start_ts is None:
            wanted = bound_for(opts.starting_offsets, topic, partition, EARLIEST)
            if 0 <= wanted < self.log_start:
                self._data_loss(wanted, self.log_start, "the log starts at", self.log_start)
                wanted = self.log_start
            elif wanted < 0 and self.log_start > segments[0].base_offset:
                wanted = self.log_start  # earliest is the log start, as Kafka's ListOffsets
            offset = wanted if wanted >= 0 else None
        elif self.log_start > segments[0].base_offset:
            offset = self.log_start  # no record below the log start, whatever the timestamps
        lo = self.pushdown.offset_lo
        if lo is not None and (offset is None or offset < lo):
            offset = lo
        if offset is not None:
            start_offset = offset
            moved = first  # the segment holding the offset (never back before a timestamp start)
            while moved < last and segments[moved + 1].base_offset <= offset:
                moved += 1
            if moved > first:
                first, start_pos = moved, 0
            if segments[first].base_offset <= offset:
                start_pos = max(start_pos, self.index(segments[first]).lookup(offset).position)
        skipped: set[int] = set()
        if self.pushdown.timestamp_lo is not None:
            first, start_pos, skipped = self._prune_before(
                segments, first, last, start_pos, self.pushdown.timestamp_lo
            )

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
        hi = self.pushdown.offset_hi
        if self.pushdown.timestamp_hi is not None and opts.timestamp_skew_ms is not None:
            stop = self._stop_after(segments, first, last, self.pushdown.timestamp_hi)
            if stop is not None:
                hi = stop if hi is None else min(hi, stop)
        if hi is not None and end_ts is None:
            end_offset = hi if end_offset is None else min(end_offset, hi)
        if end_offset is not None:
            while last >= 0 and segments[last].base_offset >= end_offset:
                last -= 1
        if last < first or (
            end_offset is not None and start_offset is not None and end_offset <= start_offset
        ):
            return []

        self._check_joins(segments, first, last, start_offset, end_offset, end_ts_segment)
        aborted_by_segment = self._aborted(segments) if opts.read_committed else None
        splits: list[SegmentSplit] = []
        for i in range(first, last + 1):
            if i in skipped:
                continue
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
                        final=i == len(segments) - 1,
                    )
                )
        return splits

    def _data_loss(self, lo: int, hi: int, why: str, where: int | str) -> None:
        """Offsets [lo, hi) of the requested range are not in the log: fail (failOnDataLoss, the
        default, as Spark's Kafka source) or count them and go on (warned once, by plan_splits)."""
        name = f"{self.pdir.topic}-{self.pdir.partition}"
        detail = f"offsets {lo} to {hi - 1} are not in the log ({why} {where})"
        if self.options.fail_on_data_loss:
            raise OffsetOutOfRangeError(
                message=f"{name}: {detail}: data was lost (retention or DeleteRecords removed it, "
                "a segment file is missing or truncated, or the topic was recreated). Set the "
                'option "failOnDataLoss" to "false" to skip them with a warning.'
            )
        self.stats.lost_offsets += hi - lo
        self.stats.lost.append(f"{name}: {detail}")

    def _next_offset(self, seg: SegmentFiles) -> int | None:
        """The offset after the segment's last whole batch, from its last offset index entry on
        (a few KiB: the index interval and one batch). A truncated file reads from the last entry
        that is still inside it, or from its start; None (unknown) rather than read more than
        UNINDEXED_CHECK_BYTES of a segment without a usable index."""
        size = seg.size
        entries = self.index(seg).entries
        inside = [e.position for e in entries if size is None or e.position < size]
        starts = [*inside[-1:]]
        if size is not None and size <= UNINDEXED_CHECK_BYTES:
            starts.append(0)
        for start in dict.fromkeys(starts):
            nxt = None
            try:
                view = self.read_tail(seg.log, start)
                for batch in read_batches(view, verify_crc=False, allow_truncated_tail=True):
                    nxt = batch.last_offset + 1
            except (DecodeError, FileNotFoundError):
                pass  # unreadable from here on: the batches before count
            if nxt is not None:
                return nxt
        return seg.base_offset if size is not None and size <= UNINDEXED_CHECK_BYTES else None

    def _check_joins(
        self,
        segments: Sequence[SegmentFiles],
        first: int,
        last: int,
        start_offset: int | None,
        end_offset: int | None,
        end_ts_segment: int | None,
    ) -> None:
        """Kafka rolls a segment at the log end, so each segment starts where the one before it
        ends: a gap between them inside the requested range is a missing or truncated segment
        (below the cleaner's checkpoint, it is compaction)."""
        lo_bound = start_offset if start_offset is not None else -1
        hi_bound = end_offset if end_offset is not None else None
        for i in range(max(first, 0), min(last + 1, len(segments) - 1)):
            if i == end_ts_segment:
                break  # the scan stops inside this segment
            nxt, following = self._next_offset(segments[i]), segments[i + 1]
            if nxt is None:
                continue  # no index to find its end by: not checked
            lo, hi = max(nxt, lo_bound), following.base_offset
            if self.cleaned_to is not None:
                lo = max(lo, self.cleaned_to)
            if hi_bound is not None:
                hi = min(hi, hi_bound)
            if lo < hi:
                names = f"{_name(segments[i].log)} and {_name(following.log)}"
                self._data_loss(lo, hi, "missing between segments", names)

    def _prune_before(
        self, segments: Sequence[SegmentFiles], first: int, last: int, start_pos: int, ts: int
    ) -> tuple[int, int, set[int]]:
        """Skip what cannot hold a timestamp >= ts: whole segments (largest timestamp below ts;
        not the last one, whose index may lag) and, in the first kept one, everything up to the
        last time index entry below ts."""
        skipped = set()
        for i in range(first, last):
            largest = _max_timestamp(self.timeindex(segments[i]))
            if largest is not None and largest < ts:
                skipped.add(i)
        while first in skipped:
            first += 1
            start_pos = 0
        tindex = self.timeindex(segments[first])
        if tindex is not None and len(tindex):
            below = [e for e in tindex.entries if e.timestamp < ts]
            if below:
                pos = self.index(segments[first]).lookup(below[-1].offset + 1).position
                start_pos = max(start_pos, pos)
        return first, start_pos, skipped

    def _stop_after(
        self, segments: Sequence[SegmentFiles], first: int, last: int, ts: int
    ) -> int | None:
        """With timestampSkewMs S: an exclusive end offset after which no record has a timestamp
        below ts (the first time index entry with t - S >= ts; every later record is >= t - S)."""
        skew = self.options.timestamp_skew_ms or 0
        for i in range(first, last + 1):
            tindex = self.timeindex(segments[i])
            if tindex is None:
                continue
            for entry in tindex.entries:
                if entry.timestamp - skew >= ts:
                    return entry.offset + 1
        return None

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


@lazy_dataclass(frozen=True)
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


def check_named_partitions(options: ReadOptions, found: Sequence[tuple[str, int]]) -> None:
    """Spark's rule: a per-partition JSON option names every partition of the subscribed topics
    (without subscribe/subscribePattern/assign: of each topic it names), and no other."""
    for name, named in options.named_partitions:
        topics = {t for t, _ in named}
        expected = {
            (t, p) for t, p in found if (options.wants(t, p) if options.subscribed else t in topics)
        }
        if set(named) != expected:
            raise OptionError(
                f"option {name}: when it gives specific offsets it must name every "
                "TopicPartition (use -1 for latest, -2 for earliest). "
                f"Specified: {_tps(named)} Assigned: {_tps(expected)}"
            )


def _tps(tps: set[tuple[str, int]] | frozenset[tuple[str, int]]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "]"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0] if "/" in path else ""


def dir_checkpoints(
    files: dict[str, int], read_file: ReadFile, name: str
) -> dict[str, dict[TopicPartition, int]]:
    """Per data dir (the folder holding partition folders): its checkpoint file ``name``. One
    that cannot be read right now (being replaced) counts as absent."""
    out: dict[str, dict[TopicPartition, int]] = {}
    for path in files:
        if _name(path) == name:
            try:
                out[_parent(path)] = read_offset_checkpoint(bytes(read_file(path)).decode())
            except (DecodeError, UnicodeDecodeError, FileNotFoundError):
                continue
    return out


def check_subscribed_exist(
    options: ReadOptions, found: Sequence[tuple[str, int]], where: str
) -> None:
    """A batch read of topics or partitions that are not there fails, as Spark's Kafka source
    fails on an unknown topic (its admin client's describeTopics / listOffsets); a pattern that
    matches nothing reads nothing."""
    topics = {t for t, _ in found}
    missing = sorted((options.topics or frozenset()) - topics)
    if options.assign is not None:
        missing += sorted(f"{t}-{p}" for t, p in options.assign - set(found))
    if missing:
        there = ", ".join(sorted(t for t in topics if not t.startswith("__"))[:20]) or "none"
        raise OptionError(
            f"UnknownTopicOrPartitionException: {', '.join(missing)} not found in {where} "
            f"(topics there: {there})"
        )


def check_one_copy(options: ReadOptions, pdirs: Sequence[PartitionDir]) -> None:
    """A selected topic-partition in two folders (a directory holding several copies of a data
    dir) would be read twice, every record a duplicate: refuse, naming the folders. A broker
    keeps a partition in one log dir only (a replica being moved is ``<name>-future``)."""
    seen: dict[tuple[str, int], str] = {}
    for pdir in pdirs:
        tp = (pdir.topic, pdir.partition)
        if not options.wants(*tp):
            continue
        if tp in seen:
            raise KwireError(
                f"{tp[0]}-{tp[1]} is in more than one folder ({seen[tp]} and {pdir.path}): the "
                "path holds several copies of a data dir, whose records would be read twice. "
                "Load one copy's directory, or select the topics with subscribe / assign."
            )
        seen[tp] = pdir.path


def plan_splits(
    files: dict[str, int],
    options: ReadOptions,
    read_file: ReadFile,
    to_uri: Callable[[str], str] = str,
    *,
    pushdown: Pushdown | None = None,
    stats: PlanStats | None = None,
    read_tail: ReadTail | None = None,
    must_exist: str | None = None,
) -> list[SegmentSplit]:
    """Splits for every selected topic-partition found in a listing ``{path: size}``.

    Data loss inside the requested range (offsets below the log start asked for by
    startingOffsets, a gap between segments) raises ``OffsetOutOfRangeError`` under
    failOnDataLoss, or is counted in ``stats`` and warned about once. ``must_exist`` (a batch read: the path, for the message): the
    topics and partitions subscribe and assign name must be there."""
    splits: list[SegmentSplit] = []
    stats = stats if stats is not None else PlanStats()
    pdirs = partitions_from_paths(sorted(files), files)
    check_named_partitions(options, [(p.topic, p.partition) for p in pdirs])
    if must_exist is not None:
        check_subscribed_exist(options, [(p.topic, p.partition) for p in pdirs], must_exist)
    check_one_copy(options, pdirs)
    if pushdown is not None and pushdown.empty:
        return []
    starts = dir_checkpoints(files, read_file, LOG_START_OFFSET_CHECKPOINT)
    cleaned = dir_checkpoints(files, read_file, CLEANER_OFFSET_CHECKPOINT)
    for pdir in pdirs:
        if options.wants(pdir.topic, pdir.partition) and (
            pushdown is None or pushdown.wants(pdir.topic, pdir.partition)
        ):
            stats.log_bytes += sum(s.size or 0 for s in pdir.segments)
            parent, tp = _parent(pdir.path), pdir.topic_partition
            planner = _PartitionPlanner(
                pdir,
                options,
                read_file,
                to_uri,
                pushdown,
                stats,
                read_tail=read_tail,
                log_start=starts.get(parent, {}).get(tp),
                cleaned_to=cleaned.get(parent, {}).get(tp),
            )
            splits.extend(planner.plan())
    stats.splits = len(splits)
    stats.planned_bytes = sum(s.end - s.start for s in splits)
    if stats.lost:
        log.warning(
            "kwire: failOnDataLoss=false: skipping %d lost offsets: %s%s",
            stats.lost_offsets,
            "; ".join(stats.lost[:5]),
            f" (and {len(stats.lost) - 5} more)" if len(stats.lost) > 5 else "",
        )
    return splits
