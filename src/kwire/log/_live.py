"""The live partition log a broker appends to and fetches from (Kafka's ``UnifiedLog``).

Approach: one ``LiveLog`` per ``<topic>-<partition>`` folder, single-threaded (the broker calls it
from its event loop). Split as Kafka splits it: this module is ``UnifiedLog`` (append, roll,
flush, read, lookups, the swap of cleaned segments); ``_log_segment`` is ``LogSegment``,
``_log_loader`` is ``LogLoader``, ``_retention`` is ``deleteOldSegments``, ``_log_config`` is
``LogConfig`` and ``_fetch_info`` holds what reads and appends answer. Which Kafka class each
part follows:

- ``UnifiedLog.append``: the records layer's ``validate_and_assign`` (``LogValidator``) assigns
  offsets; then the producer state is checked (``analyzeAndValidateProducerState``: duplicates of
  one of the producer's last 5 batches are not appended and answer with their original offsets);
  then ``maybeRoll`` and ``LogSegment.append``. Bytes go to the active segment's ``.log`` with
  ``os.write`` on an ``O_APPEND`` descriptor, so they are in the OS page cache when ``append``
  returns (a killed process loses nothing; a power cut loses what was not fsynced, as Kafka);
  index entries are decided by the rules shared with ``LogWriter`` (``_rules.py``), kept in memory
  for lookups and appended to the ``.index``/``.timeindex`` files at their exact size (nothing is
  preallocated, so nothing needs trimming). ``flush.messages`` / ``flush.ms`` trigger ``fsync``
  and advance the recovery point;
- ``UnifiedLog.roll``: the old segment gets its final time index entry
  (``onBecomeInactiveSegment``) and is fsynced, a producer snapshot ``<new base>.snapshot`` is
  written, the new segment is named by the next offset;
- ``LocalLog.read`` / ``LogSegment.read``: the offset index gives a start position, batch headers
  are read with ``pread`` up to the batch whose last offset reaches the fetch offset, and the
  answer is a ``FileSlice`` (descriptor, position, size) of whole batches of one segment, for
  ``os.sendfile`` (over a memory store, which has no descriptors, the bytes themselves);
- ``LogLoader`` (open): leftovers are handled as Kafka does (``.deleted`` and ``.cleaned`` files
  deleted, ``.swap`` files renamed into place, orphan index files and kwire temporary files
  deleted); segments from the one holding the recovery point on (every segment when the
  recovery point is 0), and any whose index fails Kafka's sanity check, are recovered as
  ``LogSegment.recover``: batches are validated one by one (framing, CRC), the first invalid byte
  truncates the segment (and later segments are deleted), indexes and ``.txnindex`` are rebuilt;
  the producer state is loaded from the latest snapshot at or below the first recovered segment
  (without the producers expired by then, when ``producer_id_expiration_ms`` is given) and the
  batches after it are replayed; the leader epoch cache is truncated to the log end;
- ``UnifiedLog.removeExpiredProducers``: ``remove_expired_producers(now_ms)`` drops the producer
  ids idle for ``producer_id_expiration_ms`` (the broker's ``producer.id.expiration.ms``) that have
  no ongoing transaction; the next snapshot no longer holds them;
- retention (``UnifiedLog.deleteOldSegments``): log start offset, ``retention.bytes`` and
  ``retention.ms`` (by each segment's largest timestamp) delete whole segments below the high
  watermark; as Kafka, the active segment may go too when it is old enough, after a roll, so the
  log always keeps one (empty) segment. Deleted segments are renamed ``*.deleted`` and removed
  after ``file.delete.delay.ms``; their descriptors stay open until then so fetches in flight
  can finish;
- stores (``_store.py``): segments and indexes live in the ``SegmentStore`` given to ``open``
  (files of the partition folder by default). Over a ``MemorySegmentStore`` nothing touches the
  disk: producer snapshots, the leader epoch checkpoint and ``partition.metadata`` are not kept
  (skipped, not held in memory), retention drops segments at once, and ``open`` recovers every
  segment, so the producer state and leader epochs come back from the batches; the cleaner's
  ``replace_segments`` needs files;
- I/O errors (``UnifiedLog.maybeHandleIOException``): an ``OSError`` in any operation takes the
  log directory offline (``LogDirFailureChannel``, ``_failure.py``) and leaves as
  ``KafkaStorageError``; every log of that directory then refuses to read or write, and ``close``
  only releases descriptors, so the next start recovers. A failed append is never half-applied:
  the segment and its indexes are cut back to their sizes before it (best effort; where that
  fails too, recovery at the next start truncates the torn tail, as ``LogLoader`` does).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import Concatenate, Literal, ParamSpec, TypeVar

from kwire.errors import KafkaStorageError
from kwire.log._checkpoint import (
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
)
from kwire.log._errors import LogError, OffsetOutOfRangeError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._fetch_info import (
    FetchDataInfo,
    FileSlice,
    LogAppendInfo,
)
from kwire.log._index import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    encode_offset_index_entry,
    encode_time_index_entry,
)
from kwire.log._layout import (
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    parse_partition_dir,
    parse_segment_file_name,
    segment_file_name,
)
from kwire.log._log_config import LogConfig
from kwire.log._log_loader import load, read_topic_id
from kwire.log._log_segment import (
    LogSegment,
)
from kwire.log._producer_state import (
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateEntry,
    ProducerStateManager,
)
from kwire.log._retention import (
    delete_below_log_start,
    delete_old_segments,
)
from kwire.log._rules import LeaderEpochCache, SegmentIndexer, should_roll
from kwire.log._segment_swap import replace_segments
from kwire.log._store import FileSegmentRecords, FileSegmentStore, SegmentStore, drop_segment
from kwire.log._timestamp_lookup import max_timestamp_and_offset, offset_for_timestamp
from kwire.log._txnindex import AbortedTxn, encode_aborted_txn
from kwire.log._writer import _fsync_dir, _write_file
from kwire.records import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    AppendOrigin,
    AppendResult,
    Batch,
    read_batches,
    validate_and_assign,
)

__all__ = ["LiveLog"]


log = logging.getLogger("kwire.log")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _storage(
    action: str,
) -> Callable[[Callable[Concatenate[LiveLog, _P], _R]], Callable[Concatenate[LiveLog, _P], _R]]:
    """``UnifiedLog.maybeHandleIOException``: an ``OSError`` in the wrapped operation takes the
    log directory offline and leaves as ``KafkaStorageError`` ("Error while <action> ...")."""

    def wrap(fn: Callable[Concatenate[LiveLog, _P], _R]) -> Callable[Concatenate[LiveLog, _P], _R]:
        @functools.wraps(fn)
        def run(self: LiveLog, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(self, *args, **kwargs)
            except OSError as exc:
                raise self._storage_failure(action, exc) from exc

        return run

    return wrap


class LiveLog:
    """A partition's live log; see the module doc. Open with ``LiveLog.open``.

    ``compiled_validation`` (class-wide default ``False``: numba costs ~130 MB of memory, so a
    broker asks for it with ``kwire.append.compiled.walk``) chooses the append path's walk of
    compressed batches: ``"auto"`` uses the records layer's numba walk for batches of 8 records
    or more once numba has loaded in a background thread (started by the first such batch; until
    then, and for smaller batches, the interpreted walk), so a process with light traffic never
    pays its ~110 MB and a busy one gets 2-6x cheaper appends of large batches without a stall;
    ``True`` always (loading it in the caller), ``False`` never (the records layer's interpreted
    walk, ``compiled="python"``). All walks give the same results.
    """

    compiled_validation: bool | Literal["auto"] = False

    def __init__(self) -> None:  # use LiveLog.open
        self.topic = ""
        self.partition = 0
        self.path = ""
        self.config = LogConfig()
        self.topic_id: bytes | None = None
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.recovery_point = 0
        self._high_watermark = 0
        self._segments: list[LogSegment] = []
        #: Where the segments' ``.log`` bytes live (``open``'s ``store``; files by default).
        self._store: SegmentStore
        self._producers = ProducerStateManager()
        #: ``producer.id.expiration.ms`` (None: producer ids never expire)
        self.producer_id_expiration_ms: int | None = None
        self._epochs = LeaderEpochCache()
        self._last_snapshot_offset = -1
        self._last_flush_ms = 0
        self._now_ms = 0
        self._pending_deletes: list[tuple[int, LogSegment, list[str]]] = []
        self._closed = False
        #: The directory holding the partition folder (Kafka's ``parentDir``) and the channel that
        #: takes it offline on an I/O error (shared by every log of a ``DataDir``).
        self.log_dir = ""
        self._failures = LogDirFailureChannel()

    # -- opening and loading ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: LogConfig,
        *,
        now_ms: int,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        topic_id: bytes | None = None,
        high_watermark: int | None = None,
        clean_shutdown: bool = False,
        producer_id_expiration_ms: int | None = None,
        failure_channel: LogDirFailureChannel | None = None,
        store: SegmentStore | None = None,
    ) -> LiveLog:
        """Open (or create) the partition folder ``path`` (``<data dir>/<topic>-<partition>``).

        ``recovery_point`` and ``log_start_offset`` come from the data dir's checkpoints;
        ``clean_shutdown`` (the data dir's ``.kafka_cleanshutdown`` marker) skips recovery of the
        segments past the recovery point. ``high_watermark`` defaults to the log end offset.
        ``producer_id_expiration_ms`` (Kafka's ``producer.id.expiration.ms``) lets producer ids
        expire: at load (from the snapshot) and in ``remove_expired_producers``.
        ``failure_channel`` is the log directory's (``DataDir.failures``): an I/O error of this
        log takes every log of the directory offline (``KafkaStorageError``).
        ``store`` creates, opens and lists the segments and their indexes (default: a
        ``FileSegmentStore`` of ``path``, Kafka's layout); over a ``MemorySegmentStore`` the log
        needs no disk (``path`` only names the partition; see the module doc), and reopening it
        over the same store finds what was appended.
        """
        self = cls()
        self.path = os.path.abspath(os.fspath(path))
        tp = parse_partition_dir(os.path.basename(self.path))
        if tp is None:
            raise ValueError(f"{self.path} is not named <topic>-<partition>")
        self.topic, self.partition = tp
        self.config = config
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._now_ms = now_ms
        self._last_flush_ms = now_ms
        self.log_dir = os.path.dirname(self.path)
        if failure_channel is not None:
            self._failures = failure_channel
        if topic_id is not None and len(topic_id) != 16:
            raise ValueError("topic_id is 16 bytes")
        self._failures.check(self.log_dir)
        try:
            self._open(topic_id, now_ms, recovery_point, log_start_offset, clean_shutdown, store)
        except OSError as exc:
            # LogManager.getOrCreateLog / loadLog: "Error while creating/loading log ..."
            raise self._storage_failure("loading the log", exc) from exc
        hw = self.log_end_offset if high_watermark is None else high_watermark
        self.high_watermark = hw
        return self

    def _open(
        self,
        topic_id: bytes | None,
        now_ms: int,
        recovery_point: int,
        log_start_offset: int,
        clean_shutdown: bool,
        store: SegmentStore | None,
    ) -> None:
        self._store = FileSegmentStore(self.path) if store is None else store
        if not self._store.on_disk:
            self.topic_id = topic_id
            self._load(now_ms, recovery_point, log_start_offset, clean_shutdown)
            return
        os.makedirs(self.path, exist_ok=True)
        existing = read_topic_id(self.path)
        if topic_id is not None and existing is not None and existing != topic_id:
            raise ValueError(f"{self.path}: partition.metadata holds another topic id")
        if topic_id is not None and existing is None:
            _write_file(
                os.path.join(self.path, PARTITION_METADATA), encode_partition_metadata(topic_id)
            )
        self.topic_id = existing if existing is not None else topic_id
        self._load(now_ms, recovery_point, log_start_offset, clean_shutdown)

    def _load(
        self, now_ms: int, recovery_point: int, log_start_offset: int, clean_shutdown: bool
    ) -> None:
        try:
            load(self, now_ms, recovery_point, log_start_offset, clean_shutdown)
        except BaseException:
            for seg in self._segments:
                seg.close()
            raise

    def _fsync_dir(self) -> None:
        if self._store.on_disk:
            _fsync_dir(self.path)

    def _stem(self, base_offset: int) -> str:
        return os.path.join(self.path, segment_file_name(base_offset, ""))

    def _snapshot_path(self, offset: int) -> str:
        return os.path.join(self.path, segment_file_name(offset, SNAPSHOT_SUFFIX))

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        stem = self._stem(base_offset)
        indexes = self._store.indexes
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            indexes.remove(stem + suffix)
        seg = LogSegment(
            stem,
            self._store.roll(base_offset),
            SegmentIndexer(base_offset, self.config.index_interval_bytes),
            now_ms,
            indexes,
        )
        seg.open_index_files()
        return seg

    # -- properties ------------------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        # UnifiedLog.updateHighWatermark: bounded by the log start and end offsets.
        self._high_watermark = min(max(value, self.log_start_offset), self.log_end_offset)

    @property
    def segment_base_offsets(self) -> list[int]:
        return [s.base_offset for s in self._segments]

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        return [(e.epoch, e.start_offset) for e in self._epochs.entries]

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def producer_state(self) -> Mapping[int, ProducerStateEntry]:
        """A copy of the producer entries (for DescribeProducers)."""
        return MappingProxyType({pid: e.copy() for pid, e in self._producers.producers.items()})

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """``UnifiedLog.removeExpiredProducers``: drop the producer ids without an ongoing
        transaction idle for ``producer_id_expiration_ms`` or longer; their ids."""
        if self.producer_id_expiration_ms is None:
            return []
        expired = self._producers.remove_expired_producers(now_ms, self.producer_id_expiration_ms)
        if expired:
            log.debug("%s: expired producer ids %s", self.path, expired)
        return expired

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest ongoing transaction (for the last stable offset)."""
        return self._producers.first_unstable_offset()

    @property
    def last_stable_offset(self) -> int:
        first = self.first_unstable_offset()
        return self._high_watermark if first is None else min(first, self._high_watermark)

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for seg in self._segments:
            seg.indexer.index_interval_bytes = config.index_interval_bytes

    # -- append ----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.path}: the log is closed")
        self._failures.check(self.log_dir)

    @property
    def offline(self) -> bool:
        """The log directory went offline (an I/O error): the log neither reads nor writes."""
        return self._failures.is_offline(self.log_dir)

    def _storage_failure(self, action: str, exc: OSError) -> KafkaStorageError:
        return self._failures.mark_offline(
            self.log_dir,
            f"Error while {action} for {self.topic}-{self.partition} in dir {self.log_dir}",
            exc,
        )

    def _undo_append(
        self, seg: LogSegment, log_size: int, offsets: int, times: int, txns: int
    ) -> None:
        """Cut the files a failed append wrote back to their sizes before it (best effort: the
        directory is offline already, and recovery at the next start truncates a torn tail)."""
        txn_size = sum(len(encode_aborted_txn(t)) for t in seg.txns[:txns])
        try:
            seg.records.truncate_to(log_size)
        except OSError as exc:
            log.warning("%s: could not undo a failed append: %s", self.path, exc)
        for out, size in (
            (seg.index_out, offsets * OFFSET_INDEX_ENTRY_SIZE),
            (seg.time_out, times * TIME_INDEX_ENTRY_SIZE),
            (seg.txn_out, txn_size),
        ):
            if out is None:
                continue
            try:
                out.truncate_to(size)
            except OSError as exc:
                log.warning("%s: could not undo a failed append: %s", self.path, exc)

    def validate_for_append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        leader_epoch: int = 0,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        produce_version: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> AppendResult:
        """``LogValidator`` for a client append at the current log end, without appending:
        pure computation on the log's config (safe from a worker thread; the expensive part of
        a compressed append: decompression and the record walk). Raises ``AppendError``."""
        return validate_and_assign(
            records,
            next_offset=self.log_end_offset,
            now_ms=now_ms,
            config=self.config.records,
            partition_leader_epoch=leader_epoch,
            origin=origin,
            produce_version=produce_version,
            compiled=self.compiled_validation or "python",
            max_decompressed_size=max_decompressed_size,
        )

    @_storage("appending records")
    def append_as_leader(
        self,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        leader_epoch: int = 0,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        produce_version: int | None = None,
        validated: AppendResult | None = None,
    ) -> LogAppendInfo:
        """``UnifiedLog.appendAsLeader``; see the module doc. Raises ``AppendError`` (records)
        or ``LogError`` / ``ProducerStateError`` before anything is written. ``validated`` is
        ``validate_for_append``'s result for these records, computed ahead (elsewhere than the
        caller's thread); its offsets move to the log end when appends came in between."""
        self._check_open()
        self._now_ms = now_ms
        result = validated.relocated(self.log_end_offset) if validated is not None else None
        if result is None:
            result = self.validate_for_append(
                records,
                now_ms=now_ms,
                leader_epoch=leader_epoch,
                origin=origin,
                produce_version=produce_version,
            )
        if result.last_offset < 0:
            return LogAppendInfo(-1, -1, -1, -1, -1, self.log_start_offset, 0)
        data = result.records
        size = len(memoryview(data))
        if size > self.config.segment_bytes:
            raise LogError(
                "RECORD_LIST_TOO_LARGE",
                f"Message batch size is {size} bytes in append to partition "
                f"{self.topic}-{self.partition} which exceeds the maximum configured segment "
                f"size of {self.config.segment_bytes}.",
            )
        batches = list(read_batches(data, verify_crc=False))
        # analyzeAndValidateProducerState
        updates: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        for batch in batches:
            if batch.magic < 2 or batch.producer_id < 0:
                continue
            pid = batch.producer_id
            if origin is AppendOrigin.CLIENT:
                entry = self._producers.entry(pid)
                dup = entry.find_duplicate_batch(batch) if entry is not None else None
                if dup is not None:
                    return LogAppendInfo(
                        first_offset=dup.first_offset,
                        last_offset=dup.last_offset,
                        max_timestamp=result.max_timestamp,
                        offset_of_max_timestamp=-1,
                        log_append_time=dup.timestamp,
                        log_start_offset=self.log_start_offset,
                        record_count=result.record_count,
                        duplicate=True,
                        in_place=result.in_place,
                        recompressed=result.recompressed,
                    )
            info = updates.get(pid)
            if info is None:
                info = updates[pid] = self._producers.prepare_update(pid, origin)
            done = info.append(batch)
            if done is not None:
                completed.append(done)
        # maybeRoll, then LogSegment.append
        seg = self._maybe_roll(size, result.max_timestamp, result.last_offset, now_ms)
        position = seg.size
        undo = (seg, position, len(seg.indexer.offsets), len(seg.indexer.timestamps), len(seg.txns))
        try:
            return self._append_to(seg, data, size, batches, result, updates, completed, now_ms)
        except (OSError, KafkaStorageError):  # the latter from a nested flush
            self._undo_append(*undo)
            raise

    def _append_to(
        self,
        seg: LogSegment,
        data: bytes | bytearray | memoryview,
        size: int,
        batches: list[Batch],
        result: AppendResult,
        updates: dict[int, ProducerAppendInfo],
        completed: list[CompletedTxn],
        now_ms: int,
    ) -> LogAppendInfo:
        """``LogSegment.append`` and what follows it: the file writes of one append."""
        position = seg.size
        seg.append(data)
        index = bytearray()
        timeindex = bytearray()
        for batch in batches:
            oe, te = seg.indexer.append_batch(batch.size, batch.last_offset, batch.max_timestamp)
            if oe is not None:
                index += encode_offset_index_entry(seg.base_offset, *oe)
            if te is not None:
                timeindex += encode_time_index_entry(seg.base_offset, *te)
        assert seg.size == position + size
        if index or timeindex:
            seg.open_index_files()
            assert seg.index_out is not None and seg.time_out is not None
            if index:
                seg.index_out.append(index)
            if timeindex:
                seg.time_out.append(timeindex)
        epochs_changed = False
        for batch in batches:
            if batch.magic >= 2:
                epochs_changed |= self._epochs.assign(
                    batch.partition_leader_epoch, batch.base_offset
                )
        if epochs_changed:
            self._write_epochs()
        for info in updates.values():
            self._producers.update(info)
        for txn in completed:
            lso = self._producers.last_stable_offset(txn)
            if txn.is_aborted:
                seg.append_txn(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
            self._producers.complete_txn(txn)
        self.log_end_offset = result.last_offset + 1
        self._producers.map_end_offset = self.log_end_offset
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages or (
            now_ms - self._last_flush_ms >= self.config.flush_ms
        ):
            self.flush(now_ms)
        return LogAppendInfo(
            first_offset=result.first_offset,
            last_offset=result.last_offset,
            max_timestamp=result.max_timestamp,
            offset_of_max_timestamp=result.shallow_offset_of_max_timestamp,
            log_append_time=result.log_append_time,
            log_start_offset=self.log_start_offset,
            record_count=result.record_count,
            duplicate=False,
            in_place=result.in_place,
            recompressed=result.recompressed,
            size=size,
        )

    def _maybe_roll(
        self, size: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> LogSegment:
        seg = self._segments[-1]
        if should_roll(
            seg.indexer,
            append_size=size,
            max_timestamp=max_timestamp,
            last_offset=last_offset,
            segment_bytes=self.config.segment_bytes,
            segment_ms=self.config.segment_ms,
            max_index_bytes=self.config.segment_index_bytes,
            now_ms=now_ms,
            created_ms=seg.created_ms,
        ):
            self.roll(now_ms)
        return self._segments[-1]

    @_storage("deleting segment files")
    def delete_pending_files(self, now_ms: int) -> None:
        """Timer work: delete the files of segments deleted more than ``file.delete.delay.ms``
        ago. There is no roll here: ``segment.ms`` rolls only when appending
        (``UnifiedLog.maybeRoll``), so an idle partition keeps its active segment."""
        self._check_open()
        self._now_ms = now_ms
        self._delete_pending(now_ms)

    @_storage("flushing the log")
    def maybe_flush(self, now_ms: int) -> None:
        """Timer work: fsync when ``flush.ms`` passed since the last flush (LogManager's flusher)."""
        self._check_open()
        if now_ms - self._last_flush_ms >= self.config.flush_ms:
            self.flush(now_ms)

    @_storage("rolling the log")
    def roll(self, now_ms: int | None = None) -> None:
        """``UnifiedLog.roll``: start a new segment at the log end offset (no-op when empty)."""
        self._check_open()
        now = self._now_ms if now_ms is None else now_ms
        old = self._segments[-1]
        new_base = self.log_end_offset
        if old.size == 0 and old.base_offset == new_base:
            return
        old.write_time_entry()  # onBecomeInactiveSegment
        self._segments.append(self._new_segment(new_base, now))
        self._take_snapshot(new_base)
        # Kafka flushes the old segment in the background (flushUptoOffsetExclusive).
        self._flush_segments(upto=new_base)
        old.close_index_files()
        self._fsync_dir()

    # -- flush and snapshots ---------------------------------------------------------------------

    def _flush_segments(self, upto: int) -> None:
        for i, seg in enumerate(self._segments):
            nxt = self._segments[i + 1].base_offset if i + 1 < len(self._segments) else None
            if (nxt is None or nxt > self.recovery_point) and seg.base_offset < upto:
                seg.fsync()
        self.recovery_point = max(self.recovery_point, upto)

    @_storage("flushing the log")
    def flush(self, now_ms: int | None = None) -> None:
        """fsync what was appended and advance the recovery point to the log end offset."""
        self._check_open()
        if self.recovery_point < self.log_end_offset:
            self._flush_segments(self.log_end_offset)
        if now_ms is not None:
            self._last_flush_ms = now_ms

    def _take_snapshot(self, offset: int) -> None:
        # ProducerStateManager.takeSnapshot: only when the log moved past the last snapshot.
        if offset <= self._last_snapshot_offset or not self._store.on_disk:
            return
        _write_file(self._snapshot_path(offset), self._producers.snapshot())
        self._last_snapshot_offset = offset

    def _delete_snapshot(self, offset: int) -> None:
        if not self._store.on_disk:
            return
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._snapshot_path(offset))

    def _write_epochs(self) -> None:
        if not self._store.on_disk:
            return
        _write_file(
            os.path.join(self.path, LEADER_EPOCH_CHECKPOINT),
            encode_leader_epoch_checkpoint(self._epochs.entries),
        )

    # -- read ------------------------------------------------------------------------------------

    def iter_batches(
        self, start_offset: int | None = None, chunk_bytes: int = 1 << 20
    ) -> Iterator[Batch]:
        """Every batch from ``start_offset`` (default: the log start) to the log end, in order,
        read ``chunk_bytes`` at a time (how a coordinator replays its partition on load). A batch
        keeps its chunk alive; the first one may begin before ``start_offset``."""
        offset = self.log_start_offset if start_offset is None else start_offset
        end = self.log_end_offset
        while offset < end:
            data = self.read(offset, chunk_bytes, max_offset=end)
            if data.size == 0:
                return
            chunk = data.read_bytes()
            for batch in read_batches(chunk):
                yield batch
                offset = batch.last_offset + 1

    @_storage("reading the log")
    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        """``LocalLog.read``: whole batches from the batch holding ``offset``; see the module doc."""
        self._check_open()
        if max_bytes < 0:
            raise ValueError(f"invalid max_bytes {max_bytes}")
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                "OFFSET_OUT_OF_RANGE",
                f"Received request for offset {offset} for partition {self.topic}-"
                f"{self.partition}, but we only have log segments upto {self.log_end_offset} "
                f"and the log start offset is {self.log_start_offset}.",
            )
        limit = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        if offset >= limit:
            return FetchDataInfo(offset)
        i = self._segment_index(offset)
        while i < len(self._segments):
            seg = self._segments[i]
            found = seg.translate_offset(offset)
            if found is None:
                i += 1
                continue
            position = found[0]
            slice_size = 0
            for _pos, _base, last, size in seg.batches_from(position):
                # Stop before the batch holding max_offset (its position is the fetch bound).
                if last >= limit:
                    break
                if slice_size + size > max_bytes and not (slice_size == 0 and min_one_message):
                    break
                slice_size += size
            if slice_size == 0:
                return FetchDataInfo(offset, [], seg.base_offset)
            records = seg.records
            if isinstance(records, FileSegmentRecords):
                return FetchDataInfo(
                    offset, [FileSlice(records.fd, position, slice_size)], seg.base_offset
                )
            data = records.read(position, slice_size)
            return FetchDataInfo(offset, [], seg.base_offset, data=data)
        return FetchDataInfo(offset)

    def _segment_index(self, offset: int) -> int:
        index = 0
        for i, seg in enumerate(self._segments):
            if seg.base_offset <= offset:
                index = i
            else:
                break
        return index

    def aborted_transactions(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """The same as ``collect_aborted_transactions``."""
        return self.collect_aborted_transactions(start_offset, upper_offset)

    def collect_aborted_transactions(
        self, start_offset: int, upper_offset: int
    ) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, upper_offset)`` (read_committed)."""
        i = self._segment_index(start_offset)
        hits = [
            t
            for seg in self._segments[i:]
            for t in seg.txns
            if t.last_offset >= start_offset and t.first_offset < upper_offset
        ]
        hits.sort(key=lambda t: (t.first_offset, t.last_offset))
        return hits

    # -- ListOffsets and OffsetForLeaderEpoch ----------------------------------------------------

    def _epoch_for_offset(self, offset: int) -> int:
        epoch = -1
        for e in self._epochs.entries:
            if e.start_offset <= offset:
                epoch = e.epoch
        return epoch

    @_storage("reading the log")
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        """``UnifiedLog.fetchOffsetByTimestamp`` (``_timestamp_lookup``)."""
        self._check_open()
        return offset_for_timestamp(self, timestamp)

    @_storage("reading the log")
    def max_timestamp_and_offset(self) -> tuple[int, int, int] | None:
        """ListOffsets MAX_TIMESTAMP (-3) (``_timestamp_lookup``)."""
        self._check_open()
        return max_timestamp_and_offset(self)

    @_storage("writing the leader epoch checkpoint")
    def assign_leader_epoch(self, epoch: int) -> None:
        """A new leader epoch starts at the log end offset (``UnifiedLog
        .maybeAssignEpochStartOffset``, called when a replica becomes leader); checkpointed."""
        self._check_open()
        if self._epochs.assign(epoch, self.log_end_offset):
            self._write_epochs()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``LeaderEpochFileCache.endOffsetFor``: (epoch, end offset); (-1, -1) when unknown."""
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    # -- deletion --------------------------------------------------------------------------------

    @_storage("deleting records")
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset`` (at most the high watermark),
        delete the segments wholly below it; returns the new log start offset."""
        self._check_open()
        if offset > self._high_watermark or offset < 0:
            raise OffsetOutOfRangeError(
                "OFFSET_OUT_OF_RANGE",
                f"Cannot increment the log start offset to {offset} of partition "
                f"{self.topic}-{self.partition} since it is larger than the high watermark "
                f"{self._high_watermark}",
            )
        self._increment_log_start_offset(offset, "client delete records request")
        delete_below_log_start(self)
        return self.log_start_offset

    def _increment_log_start_offset(self, offset: int, reason: str) -> None:
        """``UnifiedLog.maybeIncrementLogStartOffset``: the log start only moves up, and says so
        with its ``reason`` (Kafka's ``LogStartOffsetIncrementReason``)."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        log.info("%s: incremented log start offset to %d due to %s", self.path, offset, reason)
        if self._epochs.truncate_from_start(offset):
            self._write_epochs()
        for s in self._snapshot_offsets():
            if s < offset and s != self._last_snapshot_offset:
                self._delete_snapshot(s)

    def _snapshot_offsets(self) -> list[int]:
        if not self._store.on_disk:
            return []
        return sorted(
            p[0]
            for n in os.listdir(self.path)
            if (p := parse_segment_file_name(n)) and p[1] == SNAPSHOT_SUFFIX
        )

    @_storage("deleting segments")
    def enforce_retention(self, now_ms: int) -> int:
        """``deleteOldSegments``: log start offset, ``retention.bytes``, ``retention.ms``; returns
        how many segments were deleted."""
        self._check_open()
        self._now_ms = now_ms
        deleted = delete_old_segments(self, now_ms)
        self._delete_pending(now_ms)
        return deleted

    # -- compaction (the cleaner writes the files, the log swaps them in) ------------------------

    @_storage("replacing segments")
    def replace_segments(
        self,
        old_bases: list[int],
        indexer: SegmentIndexer,
        txns: list[AbortedTxn],
        now_ms: int,
    ) -> None:
        """``LocalLog.replaceSegments`` for the log cleaner (``_segment_swap``)."""
        self._check_open()
        replace_segments(self, old_bases, indexer, txns, now_ms)

    def _delete_pending(self, now_ms: int | None) -> None:
        keep = []
        for due, seg, files in self._pending_deletes:
            if now_ms is None or due <= now_ms:
                seg.close()
                for path in files:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(path)
            else:
                keep.append((due, seg, files))
        self._pending_deletes = keep

    # -- closing ---------------------------------------------------------------------------------

    def close(self) -> None:
        """``UnifiedLog.close``: final time index entry, producer snapshot, fsync, descriptors."""
        if self._closed:
            return
        if self.offline:
            # LogManager.handleLogDirFailure closes the handlers only: nothing is written to a
            # failed directory, and the next start recovers it.
            self._close_handlers()
            return
        try:
            active = self._segments[-1]
            active.write_time_entry()
            self._take_snapshot(self.log_end_offset)
            self.flush()
            for seg in self._segments:
                seg.fsync()
                seg.close()
            self._fsync_dir()
            self._delete_pending(None)
        except OSError as exc:
            self._close_handlers()
            raise self._storage_failure("closing the log", exc) from exc
        except KafkaStorageError:
            self._close_handlers()
            raise
        self._closed = True

    def _close_handlers(self) -> None:
        """``UnifiedLog.closeHandlers``: release every descriptor, write nothing."""
        for seg in self._segments:
            seg.close()
        for _due, seg, _files in self._pending_deletes:
            seg.close()
        self._pending_deletes = []
        self._closed = True

    def delete(self) -> None:
        """Close and remove the folder (renamed ``<topic>-<p>.<uuid>-delete`` first, as Kafka)."""
        self._failures.check(self.log_dir)
        try:
            self._delete()
        except OSError as exc:
            raise self._storage_failure("deleting the log", exc) from exc

    def _delete(self) -> None:
        if not self._closed:
            for seg in self._segments:
                seg.close()
            self._delete_pending(None)
            self._closed = True
        if not self._store.on_disk:
            for base in self._store.base_offsets():
                stem = self._stem(base)
                indexes = (stem + s for s in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX))
                drop_segment(self._store, base, indexes)
            return
        target = f"{self.path}.{uuid.uuid4().hex}-delete"
        os.replace(self.path, target)
        import shutil  # here: only a deleted log needs it, not a start

        shutil.rmtree(target)

    def __enter__(self) -> LiveLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"LiveLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, hw={self._high_watermark}, "
            f"segments={len(self._segments)})"
        )
