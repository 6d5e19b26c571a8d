"""The log cleaner: compaction of ``LiveLog``s whose ``cleanup.policy`` holds ``compact``.

Approach: Kafka 3.9's ``LogCleanerManager`` (which log, which offsets) and ``Cleaner.doClean`` /
``cleanSegments`` (the files), single-threaded: ``LogCleaner.clean_one`` runs one cleaning round of
the filthiest log and returns; the caller decides when to call again (the broker: a ticker, with
``log.cleaner.backoff.ms`` between idle passes). The record rules are the sans-IO functions of
``_compaction.py``; this module reads segments through ``mmap``, writes the ``.cleaned`` files and
lets ``LiveLog.replace_segments`` swap them in (the ``.swap`` dance is there, with the rest of the
log's file handling). Which offsets (``LogCleanerManager.cleanableOffsets``):

- the first dirty offset is the ``cleaner-offset-checkpoint`` entry (``DataDir`` keeps that file),
  else the log start offset; a checkpoint below the log start or past the log end is reset to the
  log start;
- the first uncleanable offset is the smallest of the last stable offset (so never past the high
  watermark or an open transaction), the active segment's base offset and the base offset of the
  first dirty segment whose largest timestamp is within ``min.compaction.lag.ms`` of now; cleaning
  stops at the base of the segment holding it;
- a log is cleaned when its dirty ratio (dirty bytes / all bytes below the first uncleanable
  segment) is above ``min.cleanable.dirty.ratio``, or when ``max.compaction.lag.ms`` passed since
  the first batch of a dirty segment; the dirtiest such log goes first.

A round (``doClean``): the offset map is built over the dirty segments (it may fill up and end
the round early); then every segment below the map's last offset, clean ones included, is
rewritten, in groups that fit one segment (``groupSegmentsBySize``: ``segment.bytes``,
``segment.index.bytes``, 32-bit relative offsets), each group into one ``<base>.log.cleaned``
with indexes rebuilt by the rules ``LogWriter`` and ``LiveLog`` share (``SegmentIndexer``) and its
``.txnindex`` from the ABORT markers kept; the cleaned file keeps the group's last modification
time. The checkpoint becomes the map's last offset + 1.

Differs from Kafka: the offset map holds exact keys (no MD5), bounded by ``max_map_entries``
rather than ``log.cleaner.dedupe.buffer.size``; aborted transactions are looked up in every later
segment's ``.txnindex`` (Kafka's per-segment lookup can miss one whose marker is in a later
segment, and then keeps its records until a later round), so aborted records always go.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from kwire._lazy import lazy_dataclass
from kwire._wire import INT32_MAX
from kwire.log._compaction import (
    DEFAULT_MAX_MAP_ENTRIES,
    CleanedTransactionMetadata,
    CleanerStats,
    CleaningRound,
    LastRecord,
    OffsetMap,
    build_offset_map,
    clean_batches,
)
from kwire.log._index import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    encode_offset_index_entry,
    encode_time_index_entry,
)
from kwire.log._layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    TopicPartition,
)
from kwire.log._live import LiveLog
from kwire.log._log_loader import last_batch_offset, map_segment
from kwire.log._log_segment import CLEANED_SUFFIX
from kwire.log._rules import SegmentIndexer
from kwire.log._txnindex import AbortedTxn, encode_aborted_txn
from kwire.records import BatchReader

if TYPE_CHECKING:
    from kwire.log._log_segment import LogSegment

__all__ = [
    "CleanResult",
    "LogCleaner",
    "LogToClean",
    "cleanable_offsets",
    "group_segments_by_size",
    "log_to_clean",
    "max_compaction_delay",
]

log = logging.getLogger("kwire.log.cleaner")

T = TypeVar("T")


def _log_segments(segments: list[LogSegment], start: int, end: int) -> list[LogSegment]:
    """``LocalLog.logSegments(from, to)``: the segment holding ``start`` and the later ones whose
    base offset is below ``end``."""
    if start == end:
        return []
    out = []
    for i, seg in enumerate(segments):
        if seg.base_offset >= end:
            break
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if nxt is not None and nxt <= start:
            continue
        out.append(seg)
    return out


def _mtime_ms(seg: LogSegment) -> int:
    return os.fstat(seg.fd).st_mtime_ns // 1_000_000


def _with_view(live: LiveLog, seg: LogSegment, use: Callable[[memoryview], T]) -> T:
    m, view = map_segment(live, seg)
    try:
        return use(view)
    finally:
        with contextlib.suppress(BufferError):  # slices alive in a traceback: closed by the GC
            view.release()
            if m is not None:
                m.close()


@lazy_dataclass(frozen=True)
class LogToClean:
    """Kafka's ``LogToClean``: a log with its dirty section ``[first_dirty_offset,
    first_uncleanable_offset)`` (the latter a segment base offset)."""

    log: LiveLog
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool = False

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.log.topic, self.log.partition)

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@lazy_dataclass(frozen=True)
class CleanResult:
    """One cleaning round: the log, the offsets it covered, the new checkpoint, the counts."""

    topic_partition: TopicPartition
    first_dirty_offset: int
    end_offset: int
    stats: CleanerStats = field(default_factory=CleanerStats)
    segments_before: int = 0
    segments_after: int = 0


def cleanable_offsets(
    live: LiveLog, last_clean_offset: int | None, now_ms: int
) -> tuple[int, int, bool]:
    """``LogCleanerManager.cleanableOffsets``: (first dirty offset, first uncleanable dirty
    offset, whether the checkpoint must be rewritten)."""
    start = live.log_start_offset
    checkpoint = start if last_clean_offset is None else last_clean_offset
    force = False
    if checkpoint < start or checkpoint > live.log_end_offset:
        if checkpoint < start and not live.config.delete_retention:
            log.warning(
                "%s: resetting the first dirty offset to the log start offset %d since the "
                "checkpointed offset %d is invalid",
                live.path,
                start,
                checkpoint,
            )
        first_dirty, force = start, True
    else:
        first_dirty = checkpoint
    segments = live._segments
    active = segments[-1]
    candidates = [live.last_stable_offset, active.base_offset]
    lag = max(live.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in _log_segments(segments, first_dirty, active.base_offset):
            if seg.largest_timestamp > now_ms - lag:
                candidates.append(seg.base_offset)
                break
    return first_dirty, max(first_dirty, min(candidates)), force


def max_compaction_delay(live: LiveLog, first_dirty_offset: int, now_ms: int) -> int:
    """``LogCleanerManager.maxCompactionDelay``: how long past ``max.compaction.lag.ms`` the
    oldest dirty segment's first batch is (0: not due)."""
    segments = live._segments
    dirty = _log_segments(segments, first_dirty_offset, segments[-1].base_offset)
    stamps = [s.indexer.rolling_timestamp for s in dirty if s.indexer.rolling_timestamp > 0]
    earliest = min(stamps, default=None)
    clean_until = now_ms - max(live.config.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest is not None and earliest < clean_until else 0


def log_to_clean(live: LiveLog, last_clean_offset: int | None, now_ms: int) -> LogToClean:
    """A ``LogToClean`` for ``live`` (``calculateCleanableBytes`` included)."""
    first_dirty, uncleanable, _force = cleanable_offsets(live, last_clean_offset, now_ms)
    segments = live._segments
    active = segments[-1]
    non_active = _log_segments(segments, uncleanable, active.base_offset)
    first_uncleanable = (non_active[0] if non_active else active).base_offset
    clean_bytes = sum(s.size for s in _log_segments(segments, -1, first_dirty))
    cleanable_bytes = sum(
        s.size
        for s in _log_segments(segments, min(first_dirty, first_uncleanable), first_uncleanable)
    )
    return LogToClean(
        live,
        first_dirty,
        first_uncleanable,
        clean_bytes,
        cleanable_bytes,
        max_compaction_delay(live, first_dirty, now_ms) > 0,
    )


def group_segments_by_size(
    segments: list[LogSegment], max_size: int, max_index_size: int, first_uncleanable_offset: int
) -> list[list[LogSegment]]:
    """``Cleaner.groupSegmentsBySize``: consecutive segments whose sizes, index sizes and
    offsets (relative to the group's base) fit one segment."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        first = segments[i]
        group = [first]
        log_size = first.size
        index_size = len(first.indexer.offsets) * OFFSET_INDEX_ENTRY_SIZE
        time_size = len(first.indexer.timestamps) * TIME_INDEX_ENTRY_SIZE
        i += 1
        while i < len(segments):
            seg = segments[i]
            nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
            last_offset = (nxt if nxt is not None else first_uncleanable_offset) - 1
            seg_index = len(seg.indexer.offsets) * OFFSET_INDEX_ENTRY_SIZE
            seg_time = len(seg.indexer.timestamps) * TIME_INDEX_ENTRY_SIZE
            if (
                log_size + seg.size > max_size
                or index_size + seg_index > max_index_size
                or time_size + seg_time > max_index_size
                or (seg.size > 0 and last_offset - first.base_offset > INT32_MAX)
            ):
                break
            group.append(seg)
            log_size += seg.size
            index_size += seg_index
            time_size += seg_time
            i += 1
        groups.append(group)
    return groups


class LogCleaner:
    """Kafka's ``LogCleaner`` and ``LogCleanerManager`` for a set of logs (see the module doc).

    ``checkpoints`` is the ``cleaner-offset-checkpoint`` content (first dirty offset per
    partition); ``clean_one`` updates it, the caller writes it (``DataDir``).
    """

    def __init__(
        self,
        checkpoints: Mapping[TopicPartition, int] | None = None,
        *,
        max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
    ) -> None:
        self.checkpoints: dict[TopicPartition, int] = dict(checkpoints or {})
        self.max_map_entries = max_map_entries
        #: Partitions a cleaning round failed on (``LogCleanerManager.uncleanablePartitions``).
        self.uncleanable: set[TopicPartition] = set()

    def grab_filthiest_compacted_log(
        self, logs: Iterable[LiveLog], now_ms: int
    ) -> LogToClean | None:
        """``grabFilthiestCompactedLog``: the dirtiest log that is due, or None."""
        candidates = []
        for live in logs:
            tp = TopicPartition(live.topic, live.partition)
            if not live.config.compact or tp in self.uncleanable or live._closed:
                continue
            last = self.checkpoints.get(tp)
            _first, _uncleanable, force = cleanable_offsets(live, last, now_ms)
            ltc = log_to_clean(live, last, now_ms)
            if force:
                self.checkpoints[tp] = ltc.first_dirty_offset
            if ltc.total_bytes > 0:
                candidates.append(ltc)
        due = [
            c
            for c in candidates
            if (c.needs_compaction_now and c.cleanable_bytes > 0)
            or c.cleanable_ratio > c.log.config.min_cleanable_dirty_ratio
        ]
        return max(due, key=lambda c: c.cleanable_ratio, default=None)

    def clean_one(self, logs: Iterable[LiveLog], now_ms: int) -> CleanResult | None:
        """One cleaning round of the filthiest log; None when no log is due."""
        ltc = self.grab_filthiest_compacted_log(logs, now_ms)
        if ltc is None:
            return None
        result = self.clean(ltc, now_ms)
        self.checkpoints[ltc.topic_partition] = result.end_offset
        return result

    def forget(self, live_partitions: Iterable[TopicPartition]) -> None:
        """Drop the checkpoints of partitions that are gone (``updateCheckpoints`` removal)."""
        keep = set(live_partitions)
        self.checkpoints = {tp: o for tp, o in self.checkpoints.items() if tp in keep}

    # -- Cleaner -----------------------------------------------------------------------------

    def clean(self, ltc: LogToClean, now_ms: int) -> CleanResult:
        """``Cleaner.doClean``: build the offset map, rewrite the segments below its end. An I/O
        error takes the log directory offline (``CleanerThread``: "Failed to clean up log"),
        raised as ``KafkaStorageError``; the cleaned files left behind are deleted at the next
        start."""
        try:
            return self._clean(ltc, now_ms)
        except OSError as exc:
            raise ltc.log._storage_failure("cleaning the log", exc) from exc

    def _clean(self, ltc: LogToClean, now_ms: int) -> CleanResult:
        live = ltc.log
        segments = live._segments
        before = len(segments)
        first_dirty, upper = ltc.first_dirty_offset, ltc.first_uncleanable_offset
        stats = CleanerStats()
        offset_map = OffsetMap(self.max_map_entries)
        txn = CleanedTransactionMetadata()
        txn.add_aborted_transactions(live.collect_aborted_transactions(first_dirty, upper))
        for seg in _log_segments(segments, first_dirty, upper):
            position = seg.indexer.lookup(first_dirty).position
            full = _with_view(
                live,
                seg,
                partial(
                    build_offset_map,
                    offset_map=offset_map,
                    start_offset=first_dirty,
                    txn=txn,
                    start_position=position,
                    stats=stats,
                ),
            )
            if full:
                log.debug("%s: offset map full at %d", live.path, offset_map.latest_offset)
                break
        if offset_map.latest_offset < first_dirty:
            # Nothing past the checkpoint below the first uncleanable segment.
            return CleanResult(ltc.topic_partition, first_dirty, upper, stats, before, before)
        end_offset = offset_map.latest_offset + 1
        clean_section = _log_segments(segments, 0, first_dirty)
        cleanable_horizon_ms = _mtime_ms(clean_section[-1]) if clean_section else 0
        legacy_delete_horizon = cleanable_horizon_ms - live.config.delete_retention_ms
        txn = CleanedTransactionMetadata()
        groups = group_segments_by_size(
            _log_segments(segments, 0, end_offset),
            live.config.segment_bytes,
            live.config.segment_index_bytes,
            upper,
        )
        for group in groups:
            self._clean_segments(
                live, group, offset_map, now_ms, txn, legacy_delete_horizon, upper, stats
            )
        log.info(
            "%s: cleaned offsets %d..%d (%d segments -> %d): %d of %d records kept, %d -> %d bytes",
            live.path,
            first_dirty,
            end_offset,
            before,
            len(live._segments),
            stats.messages_written,
            stats.messages_read,
            stats.bytes_read,
            stats.bytes_written,
        )
        return CleanResult(
            ltc.topic_partition, first_dirty, end_offset, stats, before, len(live._segments)
        )

    def _clean_segments(
        self,
        live: LiveLog,
        group: list[LogSegment],
        offset_map: OffsetMap,
        now_ms: int,
        txn: CleanedTransactionMetadata,
        legacy_delete_horizon: int,
        upper_bound: int,
        stats: CleanerStats,
    ) -> None:
        """``Cleaner.cleanSegments``: the group into one ``.cleaned`` segment, then the swap."""
        base = group[0].base_offset
        stem = live._stem(base)
        suffixes = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        paths = {s: stem + s + CLEANED_SUFFIX for s in suffixes}
        for path in paths.values():
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        cleaned_txns: list[AbortedTxn] = []
        txn.cleaned_index = cleaned_txns
        last_records = {
            pid: LastRecord(
                e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch
            )
            for pid, e in live._producers.producers.items()
        }
        ix = SegmentIndexer(base, live.config.index_interval_bytes)
        index = bytearray()
        timeindex = bytearray()
        fd = os.open(paths[LOG_SUFFIX], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for i, seg in enumerate(group):
                if i + 1 < len(group):
                    seg_upper = group[i + 1].base_offset
                else:
                    last = last_batch_offset(live, seg)
                    seg_upper = seg.base_offset if last is None else last + 1
                txn.add_aborted_transactions(
                    live.collect_aborted_transactions(seg.base_offset, seg_upper)
                )
                rules = CleaningRound(
                    offset_map=offset_map,
                    txn=txn,
                    now_ms=now_ms,
                    delete_retention_ms=live.config.delete_retention_ms,
                    upper_bound_offset=upper_bound,
                    last_records=last_records,
                    retain_legacy_deletes=_mtime_ms(seg) > legacy_delete_horizon,
                    stats=stats,
                )
                out = bytearray()
                _with_view(live, seg, partial(clean_batches, rules=rules, out=out))
                for batch in BatchReader(out, verify_crc=False):
                    oe, te = ix.append_batch(batch.size, batch.last_offset, batch.max_timestamp)
                    if oe is not None:
                        index += encode_offset_index_entry(base, *oe)
                    if te is not None:
                        timeindex += encode_time_index_entry(base, *te)
                    del batch
                view = memoryview(out)
                while view:
                    view = view[os.write(fd, view) :]
            te = ix.maybe_append_time_entry()  # onBecomeInactiveSegment
            if te is not None:
                timeindex += encode_time_index_entry(base, *te)
            ix.bytes_since_last_index_entry = 0
            os.fsync(fd)
        finally:
            os.close(fd)
        files = [(INDEX_SUFFIX, bytes(index)), (TIME_INDEX_SUFFIX, bytes(timeindex))]
        if cleaned_txns:
            files.append((TXN_INDEX_SUFFIX, b"".join(map(encode_aborted_txn, cleaned_txns))))
        for suffix, data in files:
            with open(paths[suffix], "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        modified = os.fstat(group[-1].fd).st_mtime_ns
        os.utime(paths[LOG_SUFFIX], ns=(modified, modified))
        live.replace_segments([s.base_offset for s in group], ix, cleaned_txns, now_ms)
