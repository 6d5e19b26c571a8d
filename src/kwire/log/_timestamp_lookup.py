"""Finding offsets by timestamp in a live log (ListOffsets): ``UnifiedLog.fetchOffsetByTimestamp``
with the special values (-2 earliest, -4 earliest local, -1 latest, -3 max timestamp), through the
segments' time indexes, then the batches' largest timestamps, then the records. Functions of the
``LiveLog`` they read (its methods call them after checking the log is open).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kwire.log._log_segment import LogSegment

if TYPE_CHECKING:
    from kwire.log._live import LiveLog

__all__ = ["max_timestamp_and_offset", "offset_for_timestamp"]

_LATEST_TIMESTAMP: Final = -1
_EARLIEST_TIMESTAMP: Final = -2
_MAX_TIMESTAMP: Final = -3
_EARLIEST_LOCAL_TIMESTAMP: Final = -4


def offset_for_timestamp(log: LiveLog, timestamp: int) -> tuple[int, int, int] | None:
    """``UnifiedLog.fetchOffsetByTimestamp``: (offset, timestamp, leader epoch) of the first
    record with timestamp >= ``timestamp``; -2 (earliest), -4 (earliest local), -1 (latest)
    and -3 (max timestamp) are the special ListOffsets values. None: no such record."""
    if timestamp in (_EARLIEST_TIMESTAMP, _EARLIEST_LOCAL_TIMESTAMP):
        start = log.log_start_offset
        return (start, -1, log._epoch_for_offset(start))
    if timestamp == _LATEST_TIMESTAMP:
        latest = log._epochs.latest_epoch
        return (log.log_end_offset, -1, -1 if latest is None else latest)
    if timestamp == _MAX_TIMESTAMP:
        return max_timestamp_and_offset(log)
    for seg in log._segments:
        if seg.indexer.max_timestamp < timestamp and seg is not log._segments[-1]:
            continue
        if seg.indexer.max_timestamp < timestamp:
            return None
        start_offset = max(log.log_start_offset, seg.base_offset)
        ts_entry = seg.indexer.lookup_time(timestamp)
        found = seg.translate_offset(max(ts_entry.offset, start_offset))
        if found is None:
            continue
        for pos, _base, last, size in seg.batches_from(found[0]):
            if last < start_offset:
                continue
            batch = seg.read_batch(pos, size)
            if batch.max_timestamp < timestamp:
                continue
            for record in batch:
                if record.timestamp >= timestamp and record.offset >= start_offset:
                    return (record.offset, record.timestamp, batch.partition_leader_epoch)
    return None


def max_timestamp_and_offset(log: LiveLog) -> tuple[int, int, int] | None:
    """ListOffsets MAX_TIMESTAMP (-3): (offset, timestamp, leader epoch) of the first record
    holding the log's largest timestamp; None when the log has no timestamps."""
    best: LogSegment | None = None
    for seg in log._segments:
        if seg.indexer.max_timestamp >= 0 and (
            best is None or seg.indexer.max_timestamp > best.indexer.max_timestamp
        ):
            best = seg
    if best is None:
        return None
    target = best.indexer.max_timestamp
    found = best.translate_offset(best.indexer.offset_of_max_timestamp)
    if found is not None:
        batch = best.read_batch(found[0], found[1])
        for record in batch:
            if record.timestamp == target:
                return (record.offset, target, log._epoch_for_offset(record.offset))
    off = best.indexer.offset_of_max_timestamp
    return (off, target, log._epoch_for_offset(off))
