"""Checking index files against their ``.log``, as Kafka's ``DumpLogSegments`` does.

Approach: these walk an index the way ``kafka-dump-log.sh`` walks it and return, for each entry,
what the log holds there; callers (``kwire dump``) decide how to print it. Kafka's walk:

- offset index: every slot of the file in order, stopping at the first slot after the first one
  whose offset equals the base offset (a zero-filled tail); for each, the LAST offset of the batch
  that starts at the slot's position (read within ``max_message_size`` bytes), which should equal
  the slot's offset;
- time index: the same stop rule; for each slot, the offset index gives a position to scan from,
  the first batch with ``last_offset >= slot offset`` is looked up, and its records' largest
  timestamp should equal the slot's timestamp (with the batch's last offset equal to the slot's).
"""

from __future__ import annotations

from typing import Final, NamedTuple

from kwire._wire import as_view
from kwire.errors import KwireError
from kwire.log._index import (
    BytesLike,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
)
from kwire.log._segment import scan_batches
from kwire.records import NO_TIMESTAMP, BatchReader

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "OffsetIndexEntryCheck",
    "TimeIndexEntryCheck",
    "walk_offset_index",
    "walk_time_index",
]

#: ``kafka-dump-log.sh --max-message-size`` default.
DEFAULT_MAX_MESSAGE_SIZE: Final = 5 * 1024 * 1024


class OffsetIndexEntryCheck(NamedTuple):
    entry: OffsetPosition
    #: Last offset of the batch starting at ``entry.position``; None if no batch could be read there.
    log_offset: int | None
    #: Why no batch could be read (None when one was).
    problem: str | None = None

    @property
    def matches(self) -> bool:
        return self.log_offset == self.entry.offset


class TimeIndexEntryCheck(NamedTuple):
    entry: TimestampOffset
    #: Last offset of the first batch with ``last_offset >= entry.offset``; None if there is none.
    log_offset: int | None
    #: Largest record timestamp of that batch (when ``log_offset == entry.offset``), else None.
    log_max_timestamp: int | None


def walk_offset_index(
    index: BytesLike,
    log: BytesLike,
    base_offset: int,
    *,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> list[OffsetIndexEntryCheck]:
    """Kafka's ``dumpIndex`` walk over a ``.index`` and its ``.log`` (see the module doc)."""
    log_view = as_view(log)
    out = []
    for i, entry in enumerate(OffsetIndex.raw_entries(index, base_offset)):
        if i > 0 and entry.offset == base_offset:
            break
        if not 0 <= entry.position < len(log_view):
            out.append(
                OffsetIndexEntryCheck(
                    entry,
                    None,
                    f"position {entry.position} is outside the log ({len(log_view)} bytes)",
                )
            )
            continue
        end = min(len(log_view), entry.position + max_message_size)
        try:
            batch = next(BatchReader(log_view, verify_crc=False, start=entry.position, end=end))
        except StopIteration:
            out.append(OffsetIndexEntryCheck(entry, None, "no whole batch at this position"))
            continue
        except KwireError as exc:
            out.append(OffsetIndexEntryCheck(entry, None, str(exc)))
            continue
        out.append(OffsetIndexEntryCheck(entry, batch.last_offset))
    return out


def walk_time_index(
    timeindex: BytesLike,
    index: BytesLike | None,
    log: BytesLike,
    base_offset: int,
) -> list[TimeIndexEntryCheck]:
    """Kafka's ``dumpTimeIndex`` walk over a ``.timeindex``, its ``.index`` and ``.log``."""
    offsets = OffsetIndex(index if index is not None else b"", base_offset)
    log_view = as_view(log)
    out = []
    for i, entry in enumerate(TimeIndex.raw_entries(timeindex, base_offset)):
        if i > 0 and entry.offset == base_offset:
            break
        position = offsets.lookup(entry.offset).position
        found = None
        if 0 <= position <= len(log_view):
            for batch in scan_batches(log_view, start=position, verify_crc=False):
                if batch.last_offset >= entry.offset:
                    found = batch
                    break
        if found is None:
            out.append(TimeIndexEntryCheck(entry, None, None))
            continue
        if found.last_offset != entry.offset:
            out.append(TimeIndexEntryCheck(entry, found.last_offset, None))
            continue
        max_ts = NO_TIMESTAMP
        try:
            for record in found:
                max_ts = max(max_ts, record.timestamp)
        except KwireError:
            max_ts = NO_TIMESTAMP
        out.append(TimeIndexEntryCheck(entry, found.last_offset, max_ts))
    return out
