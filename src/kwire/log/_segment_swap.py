"""The log cleaner's swap of cleaned segments into a live log (``LocalLog.replaceSegments``),
crash-safe in Kafka's order; ``LogLoader`` completes an interrupted swap at open. A function of
the ``LiveLog`` it changes (its method calls it after checking the log is open).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kwire.log._layout import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from kwire.log._log_segment import CLEANED_SUFFIX, SWAP_SUFFIX, LogSegment
from kwire.log._retention import retire_segment
from kwire.log._rules import SegmentIndexer
from kwire.log._txnindex import AbortedTxn
from kwire.log._writer import _fsync_dir

if TYPE_CHECKING:
    from kwire.log._live import LiveLog

__all__ = ["replace_segments"]


def replace_segments(
    log: LiveLog,
    old_bases: list[int],
    indexer: SegmentIndexer,
    txns: list[AbortedTxn],
    now_ms: int,
) -> None:
    """``LocalLog.replaceSegments`` for the log cleaner: the ``<base>.*.cleaned`` files the
    cleaner wrote and fsynced (base = ``old_bases[0]``, its indexes as ``indexer`` and
    ``txns`` say) replace the segments ``old_bases``. Crash-safe in Kafka's order: cleaned
    files become ``.swap`` (the ``.log`` first), the old segments become ``.deleted``
    (removed after ``file.delete.delay.ms``; fetches in flight keep their descriptors), the
    swap files get their final names; ``open`` completes an interrupted swap."""
    if not log._store.on_disk:
        raise ValueError(f"{log.path}: the cleaner replaces segment files only")
    log._now_ms = now_ms
    wanted = set(old_bases)
    old = [seg for seg in log._segments if seg.base_offset in wanted]
    if len(old) != len(wanted) or log._segments[-1] in old:
        raise ValueError(f"{log.path}: cannot replace segments {sorted(wanted)}")
    base = old[0].base_offset
    if indexer.base_offset != base:
        raise ValueError("the cleaned segment must start at the first replaced segment")
    stem = log._stem(base)
    suffixes = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
    for suffix in suffixes:
        if os.path.exists(stem + suffix + CLEANED_SUFFIX):
            os.replace(stem + suffix + CLEANED_SUFFIX, stem + suffix + SWAP_SUFFIX)
    _fsync_dir(log.path)
    position = log._segments.index(old[0])
    for seg in old:
        log._segments.remove(seg)
        retire_segment(log, seg, snapshot=seg.base_offset != base)
    for suffix in suffixes:
        if os.path.exists(stem + suffix + SWAP_SUFFIX):
            os.replace(stem + suffix + SWAP_SUFFIX, stem + suffix)
    _fsync_dir(log.path)
    seg = LogSegment(stem, log._store.open(base), indexer, now_ms, log._store.indexes)
    seg.txns = list(txns)
    log._segments.insert(position, seg)
