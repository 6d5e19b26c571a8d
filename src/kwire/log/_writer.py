"""Writing a partition's log the way a Kafka broker lays it out on disk.

Approach: ``LogWriter`` appends already-built batches (any magic, from ``kwire.records`` builders or
read from another log) to ``<root>/<topic>-<partition>/``, and keeps Kafka's ``LogSegment``
bookkeeping in memory (the segment's ``.log`` is streamed to disk, its indexes are small):

- every batch is parsed and CRC-checked through ``kwire.records`` before anything is written, and
  its offsets must come after the previous batch's last offset (gaps are allowed, as compaction
  leaves them);
- offset index: as ``LogSegment.append``/``recover`` do, an entry (the batch's LAST offset, the
  batch's START position) is added before writing a batch when more than ``index_interval_bytes``
  were written since the previous entry, so the first batch of a segment is never indexed;
- time index: at the same moments, ``(largest timestamp so far, last offset of the batch that
  carried it)`` is added only when that timestamp is strictly larger than the last entry's; when a
  segment is finished (roll or close) the segment's largest timestamp is appended the same way
  (``onBecomeInactiveSegment``), so the last entry of a finished segment is its max timestamp;
- rolling: before a batch, when ``size + batch size > segment_bytes`` (``LogSegment.shouldRoll``),
  when ``segment_ms`` is set and the batch's max timestamp is more than that after the segment's
  first batch's (Kafka's ``segment.ms`` with message timestamps, no jitter), when an index would be full (``max_index_bytes``; the time index keeps one slot for the roll),
  or when the batch's last offset would not fit a 32-bit offset relative to the segment base. The
  new segment is named by the batch's base offset. A batch larger than ``segment_bytes`` is
  rejected, as Kafka rejects it (``RecordBatchTooLargeException``);
- ``.txnindex`` entries (``append_aborted_txn``) go to the segment holding the ABORT marker; the
  file exists only when the segment has entries (Kafka creates it lazily too);
- index files are written at their exact size (no preallocation, nothing to trim);
- every file is first written under a ``.kwire-tmp`` suffix, fsynced, and renamed when its segment
  is complete, the ``.log`` last, so a reader never sees a segment without its indexes. Readers
  (and Kafka) ignore the temporary names; leftovers of a crash can be deleted;
- on close, ``leader-epoch-checkpoint`` is written from the partition leader epochs of the v2
  batches (a new entry whenever the epoch grows, as ``LeaderEpochFileCache.assign``), and
  ``partition.metadata`` when a topic id was given.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from dataclasses import field
from types import TracebackType
from typing import BinaryIO, Final

from kwire._lazy import lazy_dataclass
from kwire._wire import INT32_MAX, as_view
from kwire.errors import EncodeError
from kwire.log._checkpoint import encode_leader_epoch_checkpoint, encode_partition_metadata
from kwire.log._index import (
    TIME_INDEX_ENTRY_SIZE,
    BytesLike,
    encode_offset_index_entry,
    encode_time_index_entry,
)
from kwire.log._layout import (
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_SUFFIX,
    PARTITION_METADATA,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    SegmentFiles,
    parse_segment_file_name,
    segment_file_name,
)
from kwire.log._producer_state import ProducerStateManager
from kwire.log._rules import LeaderEpochCache, SegmentIndexer, should_roll
from kwire.log._txnindex import AbortedTxn, encode_aborted_txn
from kwire.records import Batch, read_batches

__all__ = ["TMP_SUFFIX", "LogWriter"]

TMP_SUFFIX: Final = ".kwire-tmp"
DEFAULT_SEGMENT_BYTES: Final = 1 << 30
DEFAULT_INDEX_INTERVAL_BYTES: Final = 4096
DEFAULT_MAX_INDEX_BYTES: Final = 10 * 1024 * 1024
_LEGAL_TOPIC: Final = re.compile(r"[a-zA-Z0-9._-]+")


def _check_topic(topic: str) -> None:
    # Kafka's Topic.validate: 1..249 legal characters, not "." or "..".
    if (
        not topic
        or len(topic) > 249
        or topic in (".", "..")
        or _LEGAL_TOPIC.fullmatch(topic) is None
    ):
        raise ValueError(f"illegal Kafka topic name {topic!r}")


def _fsync_dir(path: str) -> None:
    """``Utils.flushDir``: an I/O error is raised (a renamed file may not be durable), except on
    platforms and file systems that cannot open or fsync a directory."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes | str) -> None:
    """The one atomic write of a small file: ``_write_file`` (a temporary file, fsynced, renamed
    over ``path``), then an fsync of the directory so the rename survives a power cut (Kafka's
    ``CheckpointFile.write``, ``Utils.atomicMoveWithFallback``)."""
    _write_file(path, data)
    _fsync_dir(os.path.dirname(path) or ".")


def write_atomic_once(path: str, data: bytes | str) -> bool:
    """``write_atomic`` unless ``path`` already exists (a file written once and never replaced,
    such as ``bootstrap.checkpoint``); whether it was written."""
    if os.path.exists(path):
        return False
    write_atomic(path, data)
    return True


def _write_file(path: str, data: bytes | str, fsync: bool = True) -> None:
    """Write ``path + TMP_SUFFIX``, fsync it, rename it to ``path`` (on an error the old file is
    left as it was and the temporary file removed)."""
    tmp = path + TMP_SUFFIX
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@lazy_dataclass
class _ActiveSegment:
    """The segment a ``LogWriter`` appends to: its open ``.log`` and the indexes it builds."""

    log_path: str
    file: BinaryIO  # the .log, open under its temporary name
    indexer: SegmentIndexer
    index: bytearray = field(default_factory=bytearray)
    timeindex: bytearray = field(default_factory=bytearray)
    txns: list[AbortedTxn] = field(default_factory=list)

    @property
    def base_offset(self) -> int:
        return self.indexer.base_offset

    @property
    def size(self) -> int:
        return self.indexer.size


class LogWriter:
    """Appends batches to a partition folder as a Kafka broker would; see the module doc.

    ``root`` is the data dir: the writer creates ``root/<topic>-<partition>/``, which must not hold
    segments yet. ``start_offset`` is the log start (the first segment's base offset); by default
    the first batch's base offset. Use as a context manager, or call ``close()``: a segment is on
    disk under its final name only once it is complete. Leaving the ``with`` block through an
    exception still finishes what was appended (every appended batch was validated).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        topic: str,
        partition: int,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES,
        segment_ms: int | None = None,
        start_offset: int | None = None,
        verify_crc: bool = True,
        topic_id: bytes | None = None,
        fsync: bool = True,
        producer_snapshots: bool = True,
        track_transactions: bool = True,
    ) -> None:
        _check_topic(topic)
        if not 0 <= partition <= INT32_MAX:
            raise ValueError(f"partition {partition} is not a valid partition number")
        if not 14 <= segment_bytes <= INT32_MAX:
            raise ValueError(f"segment_bytes must be in [14, {INT32_MAX}], not {segment_bytes}")
        if index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must be >= 0")
        if max_index_bytes < 4 * TIME_INDEX_ENTRY_SIZE:
            raise ValueError(f"max_index_bytes must be >= {4 * TIME_INDEX_ENTRY_SIZE}")
        if start_offset is not None and start_offset < 0:
            raise ValueError("start_offset must be >= 0")
        if topic_id is not None and len(topic_id) != 16:
            raise ValueError("topic_id is 16 bytes")
        self.topic = topic
        self.partition = partition
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.max_index_bytes = max_index_bytes
        if segment_ms is not None and segment_ms <= 0:
            raise ValueError("segment_ms must be positive")
        self.segment_ms = segment_ms
        self.verify_crc = verify_crc
        self.topic_id = topic_id
        self.fsync = fsync
        self.path = os.path.join(os.fspath(root), f"{topic}-{partition}")
        os.makedirs(self.path, exist_ok=True)
        for name in os.listdir(self.path):
            parsed = parse_segment_file_name(name)
            if parsed is not None and parsed[1] == LOG_SUFFIX:
                raise FileExistsError(f"{self.path} already holds log segments ({name})")
        self._start_offset = start_offset
        self._next_offset = 0 if start_offset is None else start_offset
        self._active: _ActiveSegment | None = None
        self._epochs = LeaderEpochCache()
        self._closed = False
        self._producers = ProducerStateManager()
        self._producer_snapshots = producer_snapshots
        self._track_transactions = track_transactions
        self._last_snapshot_offset = self._next_offset
        self.snapshots_written: list[str] = []
        self.segments_written: list[SegmentFiles] = []
        self.batches_written = 0
        self.bytes_written = 0

    # -- public API ------------------------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        """The offset after the last appended batch (where the next batch's base offset may start)."""
        return self._next_offset

    def append(self, data: BytesLike) -> int:
        """Append the batches in ``data`` (one or more, any magic); returns the file position of the
        first one in its segment. Raises ``CorruptRecordError`` (bad bytes) or ``EncodeError``
        (offsets going backwards, a batch larger than a segment) before writing anything."""
        if self._closed:
            raise ValueError("LogWriter is closed")
        view = as_view(data)
        batches = list(read_batches(view, verify_crc=self.verify_crc))
        expected = self._next_offset
        for batch in batches:
            base, last = batch.base_offset, batch.last_offset
            if base < expected or last < base:
                raise EncodeError(
                    f"batch offsets {base}..{last} do not follow the log end offset {expected}"
                )
            if batch.size > self.segment_bytes:
                raise EncodeError(
                    f"batch of {batch.size} bytes is larger than segment_bytes {self.segment_bytes}"
                )
            if last - base > INT32_MAX:
                raise EncodeError(f"batch offsets {base}..{last} span more than 2**31 offsets")
            expected = last + 1
        first_position = -1
        for batch in batches:
            position = self._append_batch(batch)
            if first_position < 0:
                first_position = position
        return first_position

    def append_aborted_txn(
        self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int
    ) -> None:
        """Record an aborted transaction in the ``.txnindex`` of the current segment, which must
        hold its ABORT marker at ``last_offset`` (call this right after appending the marker)."""
        seg = self._active
        if seg is not None:
            for i, known in enumerate(seg.txns):
                if known.last_offset == last_offset and known.producer_id == producer_id:
                    # Already recorded from the ABORT marker itself: the caller's entry replaces it.
                    seg.txns[i] = AbortedTxn(
                        producer_id, first_offset, last_offset, last_stable_offset
                    )
                    return
        if seg is None or not seg.base_offset <= last_offset < self._next_offset:
            raise EncodeError(
                f"the ABORT marker at offset {last_offset} is not in the current segment"
            )
        if first_offset > last_offset:
            raise EncodeError(f"first offset {first_offset} is after last offset {last_offset}")
        if seg.txns and seg.txns[-1].last_offset >= last_offset:
            raise EncodeError(
                f"aborted transactions must be appended in order of last offset: {last_offset} "
                f"is not after {seg.txns[-1].last_offset}"
            )
        seg.txns.append(AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._active is not None:
            self._finish_segment()
        elif not self.segments_written:
            self._write_empty_segment()
        self._take_snapshot(self._next_offset)  # as UnifiedLog.close
        _write_file(
            os.path.join(self.path, LEADER_EPOCH_CHECKPOINT),
            encode_leader_epoch_checkpoint(self._epochs.entries),
            self.fsync,
        )
        if self.topic_id is not None:
            _write_file(
                os.path.join(self.path, PARTITION_METADATA),
                encode_partition_metadata(self.topic_id),
                self.fsync,
            )
        if self.fsync:
            _fsync_dir(self.path)

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------

    def _should_roll(self, seg: _ActiveSegment, batch: Batch) -> bool:
        # timeWaitedForRoll with a message timestamp (the wall clock has no meaning offline).
        return should_roll(
            seg.indexer,
            append_size=batch.size,
            max_timestamp=batch.max_timestamp,
            last_offset=batch.last_offset,
            segment_bytes=self.segment_bytes,
            segment_ms=self.segment_ms,
            max_index_bytes=self.max_index_bytes,
        )

    def _open_segment(self, base_offset: int) -> _ActiveSegment:
        log_path = os.path.join(self.path, segment_file_name(base_offset, LOG_SUFFIX))
        f = open(log_path + TMP_SUFFIX, "wb")  # noqa: SIM115 - closed in _finish_segment
        return _ActiveSegment(
            log_path=log_path,
            file=f,
            indexer=SegmentIndexer(base_offset, self.index_interval_bytes),
        )

    def _append_batch(self, batch: Batch) -> int:
        seg = self._active
        if seg is None:
            base = batch.base_offset if self._start_offset is None else self._start_offset
            seg = self._active = self._open_segment(base)
        elif self._should_roll(seg, batch):
            self._finish_segment()
            # UnifiedLog.roll: the producer state is snapshotted at the new segment's base offset.
            self._take_snapshot(batch.base_offset)
            seg = self._active = self._open_segment(batch.base_offset)
        position = seg.size
        last = batch.last_offset
        offset_entry, time_entry = seg.indexer.append_batch(batch.size, last, batch.max_timestamp)
        if offset_entry is not None:
            seg.index += encode_offset_index_entry(seg.base_offset, *offset_entry)
        if time_entry is not None:
            seg.timeindex += encode_time_index_entry(seg.base_offset, *time_entry)
        seg.file.write(batch.view)
        if batch.magic >= 2:
            self._epochs.assign(batch.partition_leader_epoch, batch.base_offset)
        aborted = self._producers.replay(batch)
        if aborted is not None and self._track_transactions:
            seg.txns.append(aborted)
        self._next_offset = last + 1
        self.batches_written += 1
        self.bytes_written += batch.size
        return position

    def _take_snapshot(self, offset: int) -> None:
        # ProducerStateManager.takeSnapshot: only when the log moved past the last snapshot.
        if not self._producer_snapshots or offset <= self._last_snapshot_offset:
            return
        path = os.path.join(self.path, segment_file_name(offset, SNAPSHOT_SUFFIX))
        _write_file(path, self._producers.snapshot(), self.fsync)
        self._last_snapshot_offset = offset
        self.snapshots_written.append(path)

    def _finish_segment(self) -> None:
        seg = self._active
        assert seg is not None
        self._active = None
        time_entry = seg.indexer.maybe_append_time_entry()  # onBecomeInactiveSegment / close
        if time_entry is not None:
            seg.timeindex += encode_time_index_entry(seg.base_offset, *time_entry)
        f = seg.file
        f.flush()
        if self.fsync:
            os.fsync(f.fileno())
        f.close()
        stem = seg.log_path[: -len(LOG_SUFFIX)]
        index_path = stem + INDEX_SUFFIX
        time_path = stem + TIME_INDEX_SUFFIX
        txn_path = stem + TXN_INDEX_SUFFIX if seg.txns else None
        _write_file(index_path, bytes(seg.index), self.fsync)
        _write_file(time_path, bytes(seg.timeindex), self.fsync)
        if txn_path is not None:
            _write_file(txn_path, b"".join(encode_aborted_txn(t) for t in seg.txns), self.fsync)
        os.replace(seg.log_path + TMP_SUFFIX, seg.log_path)
        if self.fsync:
            _fsync_dir(self.path)
        self.segments_written.append(
            SegmentFiles(
                base_offset=seg.base_offset,
                log=seg.log_path,
                index=index_path,
                timeindex=time_path,
                txnindex=txn_path,
                size=seg.size,
                index_size=len(seg.index),
            )
        )

    def _write_empty_segment(self) -> None:
        # A Kafka log always has an active segment; an empty log is one empty segment.
        self._active = self._open_segment(self._next_offset)
        self._finish_segment()
