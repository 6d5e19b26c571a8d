"""Retention (Kafka's ``UnifiedLog.deleteOldSegments`` and ``LocalLog``'s deletion): which
leading segments go (below the log start offset, over ``retention.bytes``, older than
``retention.ms`` by their largest timestamp, never at or above the high watermark) and how
(renamed ``*.deleted``, removed after ``file.delete.delay.ms``; a memory store's at once: its
reads copy, so no fetch in flight holds them). As Kafka, the active segment
goes only when every segment is to be deleted, after a roll, so a log always keeps one;
retention never rolls otherwise (``segment.ms`` rolls on append only). Functions of the
``LiveLog`` they delete from.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kwire.log._log_segment import DELETED_SUFFIX, LogSegment
from kwire.log._store import drop_segment

if TYPE_CHECKING:
    from kwire.log._live import LiveLog

logger = logging.getLogger("kwire.log")

__all__ = [
    "deletable",
    "delete_below_log_start",
    "delete_old_segments",
    "delete_segments",
    "retire_segment",
]


def delete_old_segments(log: LiveLog, now_ms: int) -> int:
    """``deleteOldSegments``: log start offset, ``retention.bytes``, ``retention.ms``; returns
    how many segments were deleted."""
    deleted = delete_below_log_start(log)
    if log.config.delete_retention:
        if log.config.retention_bytes >= 0:
            excess = [log.size_in_bytes() - log.config.retention_bytes]

            def over_size(seg: LogSegment, upper: int) -> bool:
                if excess[0] - seg.size >= 0:
                    excess[0] -= seg.size
                    return True
                return False

            doomed = deletable(log, over_size)
            if doomed:
                deleted += delete_segments(
                    log,
                    doomed,
                    f"retention size {log.config.retention_bytes} breach: log size after "
                    f"deletion {log.size_in_bytes() - sum(seg.size for seg in doomed)}",
                )
        if log.config.retention_ms >= 0:
            retention = log.config.retention_ms
            deleted += delete_segments(
                log,
                deletable(log, lambda seg, upper: now_ms - seg.largest_timestamp > retention),
                f"retention time {retention}ms breach",
            )
    return deleted


def delete_below_log_start(log: LiveLog) -> int:
    """``deleteLogStartOffsetBreachedSegments``: the segments whose NEXT segment starts at or
    below the log start offset."""
    last = log._segments[-1]
    return delete_segments(
        log,
        deletable(log, lambda seg, upper: seg is not last and upper <= log.log_start_offset),
        f"log start offset {log.log_start_offset} breach",
    )


def deletable(log: LiveLog, predicate: Callable[[LogSegment, int], bool]) -> list[LogSegment]:
    """``UnifiedLog.deletableSegments``: leading segments the predicate accepts, wholly below
    the high watermark, never an empty last segment."""
    out: list[LogSegment] = []
    for i, seg in enumerate(log._segments):
        last = i + 1 == len(log._segments)
        upper = log.log_end_offset if last else log._segments[i + 1].base_offset
        if last and seg.size == 0:
            break
        if log._high_watermark < upper or not predicate(seg, upper):
            break
        out.append(seg)
    return out


def delete_segments(log: LiveLog, segments: list[LogSegment], reason: str) -> int:
    """Delete leading ``segments`` for ``reason`` (the breach, said at INFO in one line for
    them all, as ``UnifiedLog.deleteSegments``' ``SegmentDeletionReason``), then move the log
    start offset to the first segment left."""
    if not segments:
        return 0
    logger.info(
        "%s: deleting %d segments [%s] (%d bytes) due to %s",
        log.path,
        len(segments),
        ", ".join(str(seg.base_offset) for seg in segments),
        sum(seg.size for seg in segments),
        reason,
    )
    if len(segments) == len(log._segments):
        log.roll()  # a log keeps one segment: the new, empty, active one
    for seg in segments:
        log._segments.remove(seg)
        retire_segment(log, seg, snapshot=True)
    log._increment_log_start_offset(log._segments[0].base_offset, "segment deletion")
    return len(segments)


def retire_segment(log: LiveLog, seg: LogSegment, *, snapshot: bool) -> None:
    """Rename a removed segment's files ``*.deleted``; they (and its descriptor) go after
    ``file.delete.delay.ms`` (``LocalLog.deleteSegmentFiles`` with async delete)."""
    if not log._store.on_disk:
        seg.close()
        drop_segment(log._store, seg.base_offset, seg.files()[1:])  # with its indexes
        return
    renamed = []
    for path in seg.files():
        if os.path.exists(path):
            os.replace(path, path + DELETED_SUFFIX)
            renamed.append(path + DELETED_SUFFIX)
    snap = log._snapshot_path(seg.base_offset)
    if snapshot and os.path.exists(snap):
        os.replace(snap, snap + DELETED_SUFFIX)
        renamed.append(snap + DELETED_SUFFIX)
    seg.close_index_files()
    due = log._now_ms + log.config.file_delete_delay_ms
    log._pending_deletes.append((due, seg, renamed))
