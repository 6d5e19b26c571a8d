"""Kafka's segment rules, shared by the offline ``LogWriter`` and the live ``LiveLog``.

Approach: pure bookkeeping, no files. ``SegmentIndexer`` is the part of ``LogSegment`` that decides
index entries, ``should_roll`` is ``LogSegment.shouldRoll``, ``LeaderEpochCache`` is
``LeaderEpochFileCache``'s arithmetic. The callers write what these return.

- offset index: as ``LogSegment.recover`` (and ``append`` since Kafka 3.9/4.0 indexes per batch),
  before a batch is written, when more than ``index_interval_bytes`` were written since the last
  entry, an entry (the batch's LAST offset, the batch's START position) is added, so a segment's
  first batch is never indexed;
- time index: at the same moments ``(largest timestamp so far, last offset of the batch that
  carried it)`` when that timestamp is strictly larger than the last entry's
  (``TimeIndex.maybeAppend``); when the segment stops being active (roll, close, recovery) its
  largest timestamp is appended the same way (``onBecomeInactiveSegment``);
- rolling (``shouldRoll``): the segment is non-empty and either the append does not fit
  ``segment.bytes``, or ``segment.ms`` passed since the segment's first batch's max timestamp (the
  segment's creation time when there is none), or an index is full (the time index keeps a slot
  for the final entry), or the append's last offset does not fit 32 bits relative to the base.
"""

from __future__ import annotations

import bisect
from dataclasses import field
from typing import Final

from kwire._lazy import lazy_dataclass
from kwire._wire import INT32_MAX
from kwire.log._checkpoint import EpochEntry
from kwire.log._index import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    OffsetPosition,
    TimestampOffset,
)

__all__ = ["LeaderEpochCache", "SegmentIndexer", "should_roll"]

NO_TIMESTAMP: Final = -1


@lazy_dataclass
class SegmentIndexer:
    """Index bookkeeping of one segment (``LogSegment``'s in-memory fields).

    ``offsets``/``positions`` and ``timestamps``/``time_offsets`` are the segment's index entries
    (absolute offsets), also used for lookups.
    """

    base_offset: int
    index_interval_bytes: int
    size: int = 0
    bytes_since_last_index_entry: int = 0
    offsets: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    time_offsets: list[int] = field(default_factory=list)
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    #: ``rollingBasedTimestamp``: the max timestamp of the segment's first batch.
    rolling_timestamp: int = NO_TIMESTAMP

    def __post_init__(self) -> None:
        if self.offset_of_max_timestamp < 0:
            self.offset_of_max_timestamp = self.base_offset

    @property
    def last_time_entry(self) -> TimestampOffset:
        if not self.timestamps:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.timestamps[-1], self.time_offsets[-1])

    def append_batch(
        self, size: int, last_offset: int, max_timestamp: int
    ) -> tuple[OffsetPosition | None, TimestampOffset | None]:
        """Account for one batch written at ``self.size``; returns the index entries to write."""
        position = self.size
        if position == 0:
            self.rolling_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        offset_entry: OffsetPosition | None = None
        time_entry: TimestampOffset | None = None
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            if not self.offsets or last_offset > self.offsets[-1]:
                self.offsets.append(last_offset)
                self.positions.append(position)
                offset_entry = OffsetPosition(last_offset, position)
            time_entry = self.maybe_append_time_entry()
            self.bytes_since_last_index_entry = 0
        self.size += size
        self.bytes_since_last_index_entry += size
        return offset_entry, time_entry

    def maybe_append_time_entry(self) -> TimestampOffset | None:
        """``TimeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)``."""
        if self.max_timestamp > self.last_time_entry.timestamp:
            self.timestamps.append(self.max_timestamp)
            self.time_offsets.append(self.offset_of_max_timestamp)
            return TimestampOffset(self.max_timestamp, self.offset_of_max_timestamp)
        return None

    def lookup(self, offset: int) -> OffsetPosition:
        """``OffsetIndex.lookup``: the entry with the largest offset <= ``offset``."""
        slot = bisect.bisect_right(self.offsets, offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.offsets[slot], self.positions[slot])

    def lookup_time(self, timestamp: int) -> TimestampOffset:
        """``TimeIndex.lookup``: the entry with the largest timestamp <= ``timestamp``."""
        slot = bisect.bisect_right(self.timestamps, timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.timestamps[slot], self.time_offsets[slot])


def should_roll(
    seg: SegmentIndexer,
    *,
    append_size: int,
    max_timestamp: int,
    last_offset: int,
    segment_bytes: int,
    segment_ms: int | None,
    max_index_bytes: int,
    now_ms: int | None = None,
    created_ms: int | None = None,
) -> bool:
    """``LogSegment.shouldRoll`` for an append of ``append_size`` bytes (no roll jitter)."""
    if seg.size == 0:
        return False
    reached_ms = False
    if segment_ms is not None:
        if seg.rolling_timestamp >= 0:
            reached_ms = max_timestamp - seg.rolling_timestamp > segment_ms
        elif now_ms is not None and created_ms is not None:
            reached_ms = now_ms - created_ms > segment_ms
    return (
        seg.size > segment_bytes - append_size
        or reached_ms
        or len(seg.offsets) >= max_index_bytes // OFFSET_INDEX_ENTRY_SIZE
        or len(seg.timestamps) >= max_index_bytes // TIME_INDEX_ENTRY_SIZE - 1
        or last_offset - seg.base_offset > INT32_MAX
    )


class LeaderEpochCache:
    """``LeaderEpochFileCache``: (epoch, start offset) entries, epochs and offsets increasing."""

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self.entries: list[EpochEntry] = list(entries or [])

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` began at ``start_offset`` when it is newer; True if it changed."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1].epoch):
            return False
        # assign also drops entries whose start offset is not below the new one.
        while self.entries and self.entries[-1].start_offset >= start_offset:
            self.entries.pop()
        self.entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop the entries starting at or after ``end_offset`` (``truncateFromEnd``)."""
        kept = [e for e in self.entries if e.start_offset < end_offset]
        changed = len(kept) != len(self.entries)
        self.entries = kept
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """``truncateFromStart``: entries before ``start_offset`` go, the latest of them is kept
        with its start moved to ``start_offset``."""
        below = [e for e in self.entries if e.start_offset < start_offset]
        if not below:
            return False
        rest = [e for e in self.entries if e.start_offset >= start_offset]
        first = EpochEntry(below[-1].epoch, start_offset)
        if rest and rest[0].start_offset == start_offset:
            self.entries = rest
        else:
            self.entries = [first, *rest]
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor``: (epoch, end offset) as OffsetForLeaderEpoch answers."""
        if epoch == -1 or not self.entries:
            return (-1, -1)
        if self.entries[-1].epoch == epoch:
            return (epoch, log_end_offset)
        higher = next((e for e in self.entries if e.epoch > epoch), None)
        if higher is None:
            return (-1, -1)
        floor = None
        for e in self.entries:
            if e.epoch <= epoch:
                floor = e
        if floor is None:
            return (epoch, higher.start_offset)
        return (floor.epoch, higher.start_offset)
