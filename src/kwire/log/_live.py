"""The live partition log a broker appends to and fetches from (Kafka's ``UnifiedLog``).

Approach: one ``LiveLog`` per ``<topic>-<partition>`` folder, single-threaded (the broker calls it
from its event loop). Which Kafka class each part follows:

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
  ``os.sendfile``;
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
import mmap
import os
import shutil
import struct
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import Concatenate, Final, Literal, NamedTuple, ParamSpec, TypeVar

from kwire.errors import KafkaStorageError, KwireError
from kwire.log._checkpoint import (
    encode_leader_epoch_checkpoint,
    encode_partition_metadata,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
)
from kwire.log._errors import LogError, OffsetOutOfRangeError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._index import (
    OFFSET_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_SIZE,
    OffsetIndex,
    TimeIndex,
    encode_offset_index_entry,
    encode_time_index_entry,
    offset_index_sanity_problem,
    time_index_sanity_problem,
)
from kwire.log._layout import (
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_SUFFIX,
    PARTITION_METADATA,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    parse_partition_dir,
    parse_segment_file_name,
    segment_file_name,
)
from kwire.log._producer_state import (
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateEntry,
    ProducerStateManager,
)
from kwire.log._rules import LeaderEpochCache, SegmentIndexer, should_roll
from kwire.log._snapshot import read_producer_snapshot
from kwire.log._txnindex import AbortedTxn, TransactionIndex, encode_aborted_txn
from kwire.log._writer import TMP_SUFFIX, _fsync_dir, _write_file
from kwire.records import (
    AppendOrigin,
    AppendResult,
    Batch,
    BatchReader,
    TopicConfig,
    read_batches,
    validate_and_assign,
)

__all__ = [
    "FetchDataInfo",
    "FileSlice",
    "LiveLog",
    "LogAppendInfo",
    "LogConfig",
    "batch_formats",
    "read_batch_chunks",
    "read_topic_id",
]

log = logging.getLogger("kwire.log")

LONG_MAX: Final = (1 << 63) - 1
DELETED_SUFFIX: Final = ".deleted"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
_LOG_OVERHEAD: Final = 12
_HEADER: Final = struct.Struct(">qiibIhi")  # offset, length, leader epoch, magic, crc, attrs, delta
_LATEST_TIMESTAMP: Final = -1
_EARLIEST_TIMESTAMP: Final = -2
_MAX_TIMESTAMP: Final = -3
_EARLIEST_LOCAL_TIMESTAMP: Final = -4


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


@dataclass(frozen=True)
class LogConfig:
    """Kafka's topic-level log settings (names in comments), defaults as Kafka 3.9."""

    segment_bytes: int = 1073741824  # segment.bytes
    segment_ms: int = 604800000  # segment.ms
    segment_index_bytes: int = 10485760  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 604800000  # retention.ms (-1: unlimited)
    retention_bytes: int = -1  # retention.bytes
    flush_messages: int = LONG_MAX  # flush.messages
    flush_ms: int = LONG_MAX  # flush.ms
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    cleanup_policy: str = "delete"  # cleanup.policy (retention applies when it holds "delete")
    delete_retention_ms: int = 86400000  # delete.retention.ms (tombstones, markers)
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    #: The records layer's append settings (message.format.version, compression.type,
    #: message.timestamp.*, cleanup.policy=compact, max.message.bytes).
    records: TopicConfig = field(default_factory=TopicConfig)

    def __post_init__(self) -> None:
        if not 14 <= self.segment_bytes <= (1 << 31) - 1:
            raise ValueError(f"segment.bytes must be in [14, 2**31-1], not {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError("segment.ms must be >= 1")
        if self.segment_index_bytes < 4 * TIME_INDEX_ENTRY_SIZE:
            raise ValueError(f"segment.index.bytes must be >= {4 * TIME_INDEX_ENTRY_SIZE}")
        if self.index_interval_bytes < 0:
            raise ValueError("index.interval.bytes must be >= 0")
        if self.flush_messages < 1 or self.flush_ms < 0 or self.file_delete_delay_ms < 0:
            raise ValueError("flush.messages must be >= 1, flush.ms and delay must be >= 0")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min.cleanable.dirty.ratio must be in [0, 1]")
        if self.delete_retention_ms < 0 or self.min_compaction_lag_ms < 0:
            raise ValueError("delete.retention.ms and min.compaction.lag.ms must be >= 0")
        if self.max_compaction_lag_ms < 1:
            raise ValueError("max.compaction.lag.ms must be >= 1")

    @property
    def delete_retention(self) -> bool:
        return "delete" in {p.strip() for p in self.cleanup_policy.split(",")}

    @property
    def compact(self) -> bool:
        """``cleanup.policy`` holds "compact": the log cleaner compacts this log."""
        return "compact" in {p.strip() for p in self.cleanup_policy.split(",")}

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """Read Kafka topic properties (``segment.bytes=...``); unknown keys are ignored."""
        names = {
            "segment.bytes": "segment_bytes",
            "segment.ms": "segment_ms",
            "segment.index.bytes": "segment_index_bytes",
            "index.interval.bytes": "index_interval_bytes",
            "retention.ms": "retention_ms",
            "retention.bytes": "retention_bytes",
            "flush.messages": "flush_messages",
            "flush.ms": "flush_ms",
            "file.delete.delay.ms": "file_delete_delay_ms",
            "delete.retention.ms": "delete_retention_ms",
            "min.compaction.lag.ms": "min_compaction_lag_ms",
            "max.compaction.lag.ms": "max_compaction_lag_ms",
        }
        kwargs: dict[str, object] = {
            attr: int(props[key].strip()) for key, attr in names.items() if key in props
        }
        if "min.cleanable.dirty.ratio" in props:
            kwargs["min_cleanable_dirty_ratio"] = float(props["min.cleanable.dirty.ratio"])
        if "cleanup.policy" in props:
            kwargs["cleanup_policy"] = props["cleanup.policy"]
        kwargs["records"] = TopicConfig.from_properties(props)
        return cls(**kwargs)  # type: ignore[arg-type]


class FileSlice(NamedTuple):
    """``size`` bytes at ``position`` of the open file ``fd`` (valid while the log is open)."""

    fd: int
    position: int
    size: int


@dataclass(frozen=True)
class FetchDataInfo:
    """Kafka's ``FetchDataInfo``: what a fetch at ``first_offset`` returns (whole batches)."""

    first_offset: int
    slices: list[FileSlice] = field(default_factory=list)
    #: Base offset of the segment the data comes from (-1 when empty).
    segment_base_offset: int = -1

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slices)

    def read_bytes(self) -> bytes:
        return b"".join(_pread_exact(s.fd, s.size, s.position) for s in self.slices)


@dataclass(frozen=True)
class LogAppendInfo:
    """Kafka's ``LogAppendInfo``: what a produce response reports for the partition."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    duplicate: bool = False
    in_place: bool = True
    recompressed: bool = False
    size: int = 0


def batch_formats(slices: list[FileSlice]) -> set[tuple[int, int]]:
    """(magic, compression codec) of every batch in ``slices``, from their headers alone
    (Kafka's ``FileRecords.hasMatchingMagic``: the fetch path decides whether to convert
    without reading the records)."""
    found: set[tuple[int, int]] = set()
    for s in slices:
        position, end = s.position, s.position + s.size
        while position + _LOG_OVERHEAD + 10 <= end:
            raw = os.pread(s.fd, 23, position)
            if len(raw) < _LOG_OVERHEAD + 6:
                break
            length = struct.unpack_from(">i", raw, 8)[0]
            magic = raw[16]
            # v2: attributes (int16) at 21; v0/v1: attributes (int8) at 17 after the crc at 12
            attributes = struct.unpack_from(">h", raw, 21)[0] if magic >= 2 else raw[17]
            found.add((magic, attributes & 0x07))
            position += _LOG_OVERHEAD + max(length, 0)
            if length <= 0:
                break
    return found


def read_batch_chunks(slices: list[FileSlice], chunk_bytes: int) -> Iterator[bytes]:
    """The batches in ``slices``, read whole, about ``chunk_bytes`` at a time (one batch larger
    than that is one chunk): what a lazy down-conversion reads, never all of it at once."""
    for s in slices:
        position, end = s.position, s.position + s.size
        while position < end:
            take = 0
            while position + take + _LOG_OVERHEAD <= end:
                raw = os.pread(s.fd, _LOG_OVERHEAD, position + take)
                if len(raw) < _LOG_OVERHEAD:
                    break
                size = _LOG_OVERHEAD + max(struct.unpack_from(">i", raw, 8)[0], 0)
                if take and take + size > chunk_bytes:
                    break
                take += min(size, end - position - take)
                if take >= chunk_bytes:
                    break
            if take == 0:  # a trailing partial header: send it as it is
                take = end - position
            yield _pread_exact(s.fd, take, position)
            position += take


def _pread_exact(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            raise OSError(f"short read: {got} of {size} bytes at {position}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_topic_id(partition_dir: str | os.PathLike[str]) -> bytes | None:
    """The topic id in a partition folder's ``partition.metadata`` (None when absent)."""
    path = os.path.join(os.fspath(partition_dir), PARTITION_METADATA)
    try:
        with open(path, "rb") as f:
            return read_partition_metadata(f.read()).topic_id_bytes
    except FileNotFoundError:
        return None


class _Segment:
    """One segment of a live log: its ``.log`` descriptor and index bookkeeping."""

    __slots__ = (
        "created_ms",
        "fd",
        "index_fd",
        "indexer",
        "stem",
        "time_fd",
        "txn_fd",
        "txns",
    )

    def __init__(self, stem: str, fd: int, indexer: SegmentIndexer, created_ms: int) -> None:
        self.stem = stem  # path without suffix
        self.fd = fd
        self.indexer = indexer
        self.created_ms = created_ms
        self.index_fd: int | None = None
        self.time_fd: int | None = None
        self.txn_fd: int | None = None
        self.txns: list[AbortedTxn] = []

    @property
    def base_offset(self) -> int:
        return self.indexer.base_offset

    @property
    def size(self) -> int:
        return self.indexer.size

    @property
    def largest_timestamp(self) -> int:
        """``LogSegment.largestTimestamp``: the max timestamp, else the file's mtime."""
        if self.indexer.max_timestamp >= 0:
            return self.indexer.max_timestamp
        return int(os.fstat(self.fd).st_mtime * 1000)

    def open_index_files(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        if self.index_fd is None:
            self.index_fd = os.open(self.stem + INDEX_SUFFIX, flags, 0o644)
        if self.time_fd is None:
            self.time_fd = os.open(self.stem + TIME_INDEX_SUFFIX, flags, 0o644)

    def close_index_files(self) -> None:
        for name in ("index_fd", "time_fd", "txn_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def fsync(self) -> None:
        os.fsync(self.fd)
        for fd in (self.index_fd, self.time_fd, self.txn_fd):
            if fd is not None:
                os.fsync(fd)

    def write_time_entry(self) -> None:
        entry = self.indexer.maybe_append_time_entry()
        if entry is not None:
            if self.time_fd is None:
                self.open_index_files()
            assert self.time_fd is not None
            _write_all(self.time_fd, encode_time_index_entry(self.base_offset, *entry))

    def append_txn(self, txn: AbortedTxn) -> None:
        self.txns.append(txn)
        if self.txn_fd is None:
            self.txn_fd = os.open(
                self.stem + TXN_INDEX_SUFFIX, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
        _write_all(self.txn_fd, encode_aborted_txn(txn))

    def files(self) -> list[str]:
        return [
            self.stem + s for s in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        ]

    def header_at(self, position: int) -> tuple[int, int, int] | None:
        """(base offset, last offset, size) of the batch at ``position``; None past the end."""
        if position + _LOG_OVERHEAD + 5 > self.size:
            return None
        raw = os.pread(self.fd, _HEADER.size, position)
        if len(raw) < _LOG_OVERHEAD + 5:
            return None
        offset, length = struct.unpack_from(">qi", raw)
        magic = raw[16]
        size = _LOG_OVERHEAD + length
        if magic >= 2 and len(raw) >= _HEADER.size:
            delta = struct.unpack_from(">i", raw, 23)[0]
            return offset, offset + delta, size
        return offset, offset, size

    def batches_from(
        self, position: int, end: int | None = None
    ) -> Iterator[tuple[int, int, int, int]]:
        """(position, base offset, last offset, size) of each batch from ``position``."""
        stop = self.size if end is None else min(end, self.size)
        while position < stop:
            header = self.header_at(position)
            if header is None:
                return
            base, last, size = header
            yield position, base, last, size
            position += size

    def translate_offset(self, offset: int, end: int | None = None) -> tuple[int, int, int] | None:
        """``translateOffset``: (position, size, last offset) of the first batch whose last
        offset is >= ``offset``; None when the segment has none."""
        start = self.indexer.lookup(offset).position
        for position, _base, last, size in self.batches_from(start, end):
            if last >= offset:
                return position, size, last
        return None

    def read_batch(self, position: int, size: int) -> Batch:
        data = _pread_exact(self.fd, size, position)
        return next(iter(read_batches(data, verify_crc=False)))

    def close(self) -> None:
        self.close_index_files()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class LiveLog:
    """A partition's live log; see the module doc. Open with ``LiveLog.open``.

    ``compiled_validation`` (class-wide default ``False``: numba costs ~130 MB of memory, so a
    broker asks for it with ``kwire.append.compiled.walk``) chooses the append path's walk of
    compressed batches: ``"auto"`` uses the records layer's numba walk for batches of 8 records
    or more once numba has loaded in a background thread (started by the first such batch; until
    then, and for smaller batches, the reference walk), so a process with light traffic never
    pays its ~110 MB and a busy one gets 2-6x cheaper appends of large batches without a stall;
    ``True`` always (loading it in the caller), ``False`` never. Both walks give the same results.
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
        self._segments: list[_Segment] = []
        self._producers = ProducerStateManager()
        #: ``producer.id.expiration.ms`` (None: producer ids never expire)
        self.producer_id_expiration_ms: int | None = None
        self._epochs = LeaderEpochCache()
        self._last_snapshot_offset = -1
        self._last_flush_ms = 0
        self._now_ms = 0
        self._pending_deletes: list[tuple[int, _Segment, list[str]]] = []
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
    ) -> LiveLog:
        """Open (or create) the partition folder ``path`` (``<data dir>/<topic>-<partition>``).

        ``recovery_point`` and ``log_start_offset`` come from the data dir's checkpoints;
        ``clean_shutdown`` (the data dir's ``.kafka_cleanshutdown`` marker) skips recovery of the
        segments past the recovery point. ``high_watermark`` defaults to the log end offset.
        ``producer_id_expiration_ms`` (Kafka's ``producer.id.expiration.ms``) lets producer ids
        expire: at load (from the snapshot) and in ``remove_expired_producers``.
        ``failure_channel`` is the log directory's (``DataDir.failures``): an I/O error of this
        log takes every log of the directory offline (``KafkaStorageError``).
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
            self._open(topic_id, now_ms, recovery_point, log_start_offset, clean_shutdown)
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
    ) -> None:
        os.makedirs(self.path, exist_ok=True)
        existing = read_topic_id(self.path)
        if topic_id is not None and existing is not None and existing != topic_id:
            raise ValueError(f"{self.path}: partition.metadata holds another topic id")
        if topic_id is not None and existing is None:
            _write_file(
                os.path.join(self.path, PARTITION_METADATA), encode_partition_metadata(topic_id)
            )
        self.topic_id = existing if existing is not None else topic_id
        try:
            self._load(now_ms, recovery_point, log_start_offset, clean_shutdown)
        except BaseException:
            for seg in self._segments:
                seg.close()
            raise

    def _load(
        self, now_ms: int, recovery_point: int, log_start_offset: int, clean_shutdown: bool
    ) -> None:
        names = self._clean_leftovers()
        bases = sorted(
            {p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX}
        )
        snapshots = sorted(
            p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == SNAPSHOT_SUFFIX
        )
        epoch_path = os.path.join(self.path, LEADER_EPOCH_CHECKPOINT)
        if os.path.exists(epoch_path):
            with open(epoch_path, "rb") as f:
                self._epochs = LeaderEpochCache(read_leader_epoch_checkpoint(f.read()))
        if not bases:
            self._segments.append(self._new_segment(log_start_offset, now_ms))
            self.log_start_offset = self.log_end_offset = log_start_offset
            self.recovery_point = log_start_offset
            self._producers.clear(log_start_offset)
            self._epochs.truncate_from_end(log_start_offset)
            self._write_epochs()
            for s in snapshots:
                self._delete_snapshot(s)
            return
        broken: int | None = None
        for i, base in enumerate(bases):
            seg, ok = self._open_existing(base, now_ms)
            self._segments.append(seg)
            if not ok and broken is None:
                broken = i
        # Segments to recover: from the one holding the recovery point (LogLoader.recoverLog).
        start = len(self._segments)
        if not clean_shutdown:
            start = 0
            for i, seg in enumerate(self._segments):
                if seg.base_offset <= recovery_point:
                    start = i
        if broken is not None:
            start = min(start, broken)
        # Producer state: the latest snapshot at or below where replay must begin.
        replay_from = self._segments[start].base_offset if start < len(self._segments) else LONG_MAX
        first_base = self._segments[0].base_offset
        snap = None
        for s in snapshots:
            if first_base <= s <= replay_from:
                snap = s
        if snap is not None:
            try:
                with open(self._snapshot_path(snap), "rb") as f:
                    self._producers.load(
                        read_producer_snapshot(f.read()).entries,
                        snap,
                        now_ms=now_ms,
                        expiration_ms=self.producer_id_expiration_ms,
                    )
                self._last_snapshot_offset = snap
            except (OSError, KwireError) as exc:
                log.warning("%s: ignoring producer snapshot %d: %s", self.path, snap, exc)
                snap = None
        if snap is None:
            self._producers.clear(first_base)
        replay_offset = self._producers.map_end_offset
        i = 0
        while i < len(self._segments):
            seg = self._segments[i]
            nxt = self._segments[i + 1].base_offset if i + 1 < len(self._segments) else None
            if i >= start:
                truncated = self._recover_segment(seg, replay_offset)
                if truncated and i + 1 < len(self._segments):
                    later = self._segments[i + 1 :]
                    del self._segments[i + 1 :]
                    log.warning(
                        "%s: deleting %d segments after the truncated segment %d",
                        self.path,
                        len(later),
                        seg.base_offset,
                    )
                    for other in later:
                        other.close()
                        for path in other.files():
                            with contextlib.suppress(FileNotFoundError):
                                os.remove(path)
            elif nxt is None or nxt > replay_offset:
                self._replay_segment(seg, replay_offset)
            i += 1
        active = self._segments[-1]
        end = active.base_offset
        last = self._last_batch(active)
        if last is not None:
            end = last + 1
        self.log_end_offset = end
        self._producers.map_end_offset = max(self._producers.map_end_offset, end)
        self.log_start_offset = min(max(log_start_offset, self._segments[0].base_offset), end)
        self._epochs.truncate_from_end(end)
        self._epochs.truncate_from_start(self.log_start_offset)
        self._write_epochs()
        for s in snapshots:
            if s > end or (s < self.log_start_offset and s != snap):
                self._delete_snapshot(s)
            elif s > self._last_snapshot_offset:
                self._last_snapshot_offset = s
        # Recovered data was read back and validated: make it durable, then it is "flushed".
        if start < len(self._segments):
            for seg in self._segments[start:]:
                seg.fsync()
            _fsync_dir(self.path)
            self.recovery_point = end
        else:
            self.recovery_point = min(max(recovery_point, self.log_start_offset), end)
        active.open_index_files()

    def _clean_leftovers(self) -> list[str]:
        """``LogLoader.removeTempFilesAndCollectSwapFiles``, the completion of interrupted swaps
        (``LogLoader.load``: the segments a ``.log.swap`` covers are deleted, then the swap files
        are renamed) and the orphan index cleanup."""
        names = os.listdir(self.path)
        cleaned_bases = [
            p[0]
            for n in names
            if n.endswith(CLEANED_SUFFIX)
            and (p := parse_segment_file_name(n[: -len(CLEANED_SUFFIX)]))
        ]
        min_cleaned = min(cleaned_bases, default=LONG_MAX)
        for name in names:
            full = os.path.join(self.path, name)
            if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, TMP_SUFFIX)):
                log.info("%s: deleting leftover file %s", self.path, name)
                os.remove(full)
            elif name.endswith(SWAP_SUFFIX):
                parsed = parse_segment_file_name(name[: -len(SWAP_SUFFIX)])
                if parsed is not None and parsed[0] >= min_cleaned:
                    # KAFKA-6264: a swap at or above a .cleaned file belongs to an unfinished
                    # operation whose old segments are all still there.
                    log.info("%s: deleting unfinished swap file %s", self.path, name)
                    os.remove(full)
        self._delete_swapped_over()
        for name in os.listdir(self.path):
            if name.endswith(SWAP_SUFFIX):
                target = name[: -len(SWAP_SUFFIX)]
                parsed = parse_segment_file_name(target)
                log.info("%s: completing swap of %s", self.path, target)
                os.replace(os.path.join(self.path, name), os.path.join(self.path, target))
                if parsed is not None and parsed[1] == LOG_SUFFIX:
                    # The swapped-in log's indexes are rebuilt.
                    stem = os.path.join(self.path, segment_file_name(parsed[0], ""))
                    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(stem + suffix)
        names = os.listdir(self.path)
        logs = {p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX}
        for name in names:
            parsed = parse_segment_file_name(name)
            if (
                parsed is not None
                and parsed[1] in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
                and parsed[0] not in logs
            ):
                log.info("%s: deleting orphaned index file %s", self.path, name)
                os.remove(os.path.join(self.path, name))
        return os.listdir(self.path)

    def _delete_swapped_over(self) -> None:
        """Delete the segments each ``.log.swap`` replaces: those whose base offset is in
        ``[swap base, swap next offset)`` (the cleaner merged them into the swap)."""
        names = os.listdir(self.path)
        logs = {p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX}
        for name in names:
            if not name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
                continue
            parsed = parse_segment_file_name(name[: -len(SWAP_SUFFIX)])
            if parsed is None:
                continue
            base = parsed[0]
            fd = os.open(os.path.join(self.path, name), os.O_RDONLY)
            try:
                ix = SegmentIndexer(base, 0, size=os.fstat(fd).st_size)
                swap = _Segment(os.path.join(self.path, name), fd, ix, 0)
                next_offset = base
                for _pos, _base, last, _size in swap.batches_from(0):
                    next_offset = last + 1
            finally:
                os.close(fd)
            for old in sorted(b for b in logs if base <= b < next_offset):
                log.info("%s: deleting segment %d replaced by %s", self.path, old, name)
                stem = self._stem(old)
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(stem + suffix)

    def _stem(self, base_offset: int) -> str:
        return os.path.join(self.path, segment_file_name(base_offset, ""))

    def _snapshot_path(self, offset: int) -> str:
        return os.path.join(self.path, segment_file_name(offset, SNAPSHOT_SUFFIX))

    def _new_segment(self, base_offset: int, now_ms: int) -> _Segment:
        stem = self._stem(base_offset)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                os.remove(stem + suffix)
        fd = os.open(stem + LOG_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
        seg = _Segment(
            stem, fd, SegmentIndexer(base_offset, self.config.index_interval_bytes), now_ms
        )
        seg.open_index_files()
        return seg

    def _open_existing(self, base: int, now_ms: int) -> tuple[_Segment, bool]:
        """Open a segment and load its indexes; False when they need rebuilding."""
        stem = self._stem(base)
        fd = os.open(stem + LOG_SUFFIX, os.O_RDWR | os.O_APPEND)
        indexer = SegmentIndexer(base, self.config.index_interval_bytes)
        indexer.size = os.fstat(fd).st_size
        seg = _Segment(stem, fd, indexer, now_ms)
        ok = True
        try:
            with open(stem + INDEX_SUFFIX, "rb") as f:
                raw = f.read()
            with open(stem + TIME_INDEX_SUFFIX, "rb") as f:
                raw_time = f.read()
        except FileNotFoundError:
            return seg, False
        name = os.path.basename(stem)
        oidx, tidx = OffsetIndex(raw, base), TimeIndex(raw_time, base)
        if (
            offset_index_sanity_problem(raw, base, name + INDEX_SUFFIX)
            or time_index_sanity_problem(raw_time, base, name + TIME_INDEX_SUFFIX)
            or oidx.problems
            or tidx.problems
            or (oidx.positions and oidx.positions[-1] >= indexer.size)
        ):
            log.warning("%s: rebuilding the indexes of segment %d", self.path, base)
            ok = False
        else:
            for o, p in oidx.entries:
                indexer.offsets.append(o)
                indexer.positions.append(p)
            for t, o in tidx.entries:
                indexer.timestamps.append(t)
                indexer.time_offsets.append(o)
            last = tidx.last_entry
            indexer.max_timestamp, indexer.offset_of_max_timestamp = last.timestamp, last.offset
            # Exact sizes: a preallocated (zero-filled) tail is cut off.
            self._truncate_file(stem + INDEX_SUFFIX, len(oidx) * OFFSET_INDEX_ENTRY_SIZE)
            self._truncate_file(stem + TIME_INDEX_SUFFIX, len(tidx) * TIME_INDEX_ENTRY_SIZE)
        with contextlib.suppress(FileNotFoundError), open(stem + TXN_INDEX_SUFFIX, "rb") as f:
            seg.txns = list(TransactionIndex(f.read()).entries)
        first = seg.header_at(0)
        if first is not None:
            with contextlib.suppress(KwireError, OSError, StopIteration):
                indexer.rolling_timestamp = seg.read_batch(0, first[2]).max_timestamp
        return seg, ok

    @staticmethod
    def _truncate_file(path: str, size: int) -> None:
        if os.path.getsize(path) != size:
            os.truncate(path, size)

    def _mapped(self, seg: _Segment) -> tuple[mmap.mmap | None, memoryview]:
        if seg.size == 0:
            return None, memoryview(b"")
        m = mmap.mmap(seg.fd, seg.size, access=mmap.ACCESS_READ)
        return m, memoryview(m)

    def _replay_segment(self, seg: _Segment, from_offset: int) -> None:
        """Producer state of a segment that needs no recovery (headers only, no CRC)."""
        start = seg.indexer.lookup(from_offset).position if from_offset > seg.base_offset else 0
        m, view = self._mapped(seg)
        try:
            reader = BatchReader(view, verify_crc=False, allow_truncated_tail=True, start=start)
            for batch in reader:
                if batch.base_offset >= from_offset or batch.last_offset >= from_offset:
                    self._producers.replay(batch)
                del batch
        finally:
            view.release()
            if m is not None:
                # A reader over legacy batches can still hold a view: the GC closes the map.
                with contextlib.suppress(BufferError):
                    m.close()

    def _recover_segment(self, seg: _Segment, replay_offset: int) -> bool:
        """``LogSegment.recover``: validate, truncate the invalid tail, rebuild the indexes."""
        ix = SegmentIndexer(seg.base_offset, self.config.index_interval_bytes)
        index = bytearray()
        timeindex = bytearray()
        txns: list[AbortedTxn] = []
        valid = 0
        m, view = self._mapped(seg)
        try:
            reader = BatchReader(view, verify_crc=True, allow_truncated_tail=True)
            while True:
                try:
                    batch = next(reader)
                except StopIteration:
                    break
                except KwireError as exc:
                    log.warning(
                        "%s: invalid batch in segment %d at byte %d: %s",
                        self.path,
                        seg.base_offset,
                        valid,
                        exc,
                    )
                    break
                if batch.last_offset - seg.base_offset > (1 << 31) - 1 or (
                    batch.base_offset < seg.base_offset
                ):
                    log.warning(
                        "%s: batch at byte %d of segment %d has offsets %d..%d outside it",
                        self.path,
                        valid,
                        seg.base_offset,
                        batch.base_offset,
                        batch.last_offset,
                    )
                    break
                oe, te = ix.append_batch(batch.size, batch.last_offset, batch.max_timestamp)
                if oe is not None:
                    index += encode_offset_index_entry(seg.base_offset, *oe)
                if te is not None:
                    timeindex += encode_time_index_entry(seg.base_offset, *te)
                if batch.magic >= 2:
                    self._epochs.assign(batch.partition_leader_epoch, batch.base_offset)
                if batch.last_offset >= replay_offset:
                    aborted = self._producers.replay(batch)
                    if aborted is not None:
                        txns.append(aborted)
                valid += batch.size
                del batch
        finally:
            view.release()
            if m is not None:
                # A reader over legacy batches can still hold a view: the GC closes the map.
                with contextlib.suppress(BufferError):
                    m.close()
        truncated = seg.size - valid
        if truncated > 0:
            log.warning(
                "%s: truncated %d invalid bytes at the end of segment %d",
                self.path,
                truncated,
                seg.base_offset,
            )
            os.ftruncate(seg.fd, valid)
        te = ix.maybe_append_time_entry()  # as a closed segment, recovery appends the max
        if te is not None:
            timeindex += encode_time_index_entry(seg.base_offset, *te)
        ix.bytes_since_last_index_entry = 0
        seg.indexer = ix
        seg.close_index_files()
        _write_file(seg.stem + INDEX_SUFFIX, bytes(index), fsync=False)
        _write_file(seg.stem + TIME_INDEX_SUFFIX, bytes(timeindex), fsync=False)
        if txns:
            _write_file(
                seg.stem + TXN_INDEX_SUFFIX, b"".join(map(encode_aborted_txn, txns)), fsync=False
            )
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(seg.stem + TXN_INDEX_SUFFIX)
        seg.txns = txns
        return truncated > 0

    def _last_batch(self, seg: _Segment) -> int | None:
        """Last offset of the segment's last batch (``readNextOffset`` - 1)."""
        start = seg.indexer.positions[-1] if seg.indexer.positions else 0
        last = None
        for _pos, _base, last_offset, _size in seg.batches_from(start):
            last = last_offset
        return last

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
        self, seg: _Segment, log_size: int, offsets: int, times: int, txns: int
    ) -> None:
        """Cut the files a failed append wrote back to their sizes before it (best effort: the
        directory is offline already, and recovery at the next start truncates a torn tail)."""
        txn_size = sum(len(encode_aborted_txn(t)) for t in seg.txns[:txns])
        for fd, size in (
            (seg.fd, log_size),
            (seg.index_fd, offsets * OFFSET_INDEX_ENTRY_SIZE),
            (seg.time_fd, times * TIME_INDEX_ENTRY_SIZE),
            (seg.txn_fd, txn_size),
        ):
            if fd is None:
                continue
            try:
                if os.fstat(fd).st_size > size:
                    os.ftruncate(fd, size)
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
            compiled=self.compiled_validation,
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
        seg: _Segment,
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
        _write_all(seg.fd, data)
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
            assert seg.index_fd is not None and seg.time_fd is not None
            if index:
                _write_all(seg.index_fd, index)
            if timeindex:
                _write_all(seg.time_fd, timeindex)
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

    def _maybe_roll(self, size: int, max_timestamp: int, last_offset: int, now_ms: int) -> _Segment:
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
        _fsync_dir(self.path)

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
        if offset <= self._last_snapshot_offset:
            return
        _write_file(self._snapshot_path(offset), self._producers.snapshot())
        self._last_snapshot_offset = offset

    def _delete_snapshot(self, offset: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._snapshot_path(offset))

    def _write_epochs(self) -> None:
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
            return FetchDataInfo(offset, [FileSlice(seg.fd, position, slice_size)], seg.base_offset)
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
        """``UnifiedLog.fetchOffsetByTimestamp``: (offset, timestamp, leader epoch) of the first
        record with timestamp >= ``timestamp``; -2 (earliest), -4 (earliest local), -1 (latest)
        and -3 (max timestamp) are the special ListOffsets values. None: no such record."""
        self._check_open()
        if timestamp in (_EARLIEST_TIMESTAMP, _EARLIEST_LOCAL_TIMESTAMP):
            start = self.log_start_offset
            return (start, -1, self._epoch_for_offset(start))
        if timestamp == _LATEST_TIMESTAMP:
            latest = self._epochs.latest_epoch
            return (self.log_end_offset, -1, -1 if latest is None else latest)
        if timestamp == _MAX_TIMESTAMP:
            return self.max_timestamp_and_offset()
        for seg in self._segments:
            if seg.indexer.max_timestamp < timestamp and seg is not self._segments[-1]:
                continue
            if seg.indexer.max_timestamp < timestamp:
                return None
            start_offset = max(self.log_start_offset, seg.base_offset)
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

    @_storage("reading the log")
    def max_timestamp_and_offset(self) -> tuple[int, int, int] | None:
        """ListOffsets MAX_TIMESTAMP (-3): (offset, timestamp, leader epoch) of the first record
        holding the log's largest timestamp; None when the log has no timestamps."""
        self._check_open()
        best: _Segment | None = None
        for seg in self._segments:
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
                    return (record.offset, target, self._epoch_for_offset(record.offset))
        off = best.indexer.offset_of_max_timestamp
        return (off, target, self._epoch_for_offset(off))

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
        self._increment_log_start_offset(offset)
        self._delete_segments(self._deletable(self._below_log_start))
        return self.log_start_offset

    def _below_log_start(self, seg: _Segment, upper: int) -> bool:
        # deleteLogStartOffsetBreachedSegments: the NEXT segment starts at or below the log start.
        return seg is not self._segments[-1] and upper <= self.log_start_offset

    def _increment_log_start_offset(self, offset: int) -> None:
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        if self._epochs.truncate_from_start(offset):
            self._write_epochs()
        for s in self._snapshot_offsets():
            if s < offset and s != self._last_snapshot_offset:
                self._delete_snapshot(s)

    def _snapshot_offsets(self) -> list[int]:
        return sorted(
            p[0]
            for n in os.listdir(self.path)
            if (p := parse_segment_file_name(n)) and p[1] == SNAPSHOT_SUFFIX
        )

    def _deletable(self, predicate: Callable[[_Segment, int], bool]) -> list[_Segment]:
        """``UnifiedLog.deletableSegments``: leading segments the predicate accepts, wholly below
        the high watermark, never an empty last segment."""
        out: list[_Segment] = []
        for i, seg in enumerate(self._segments):
            last = i + 1 == len(self._segments)
            upper = self.log_end_offset if last else self._segments[i + 1].base_offset
            if last and seg.size == 0:
                break
            if self._high_watermark < upper or not predicate(seg, upper):
                break
            out.append(seg)
        return out

    @_storage("deleting segments")
    def enforce_retention(self, now_ms: int) -> int:
        """``deleteOldSegments``: log start offset, ``retention.bytes``, ``retention.ms``; returns
        how many segments were deleted."""
        self._check_open()
        self._now_ms = now_ms
        deleted = self._delete_segments(self._deletable(self._below_log_start))
        if self.config.delete_retention:
            if self.config.retention_bytes >= 0:
                excess = [self.size_in_bytes() - self.config.retention_bytes]

                def over_size(seg: _Segment, upper: int) -> bool:
                    if excess[0] - seg.size >= 0:
                        excess[0] -= seg.size
                        return True
                    return False

                deleted += self._delete_segments(self._deletable(over_size))
            if self.config.retention_ms >= 0:
                retention = self.config.retention_ms
                deleted += self._delete_segments(
                    self._deletable(lambda seg, upper: now_ms - seg.largest_timestamp > retention)
                )
        self._delete_pending(now_ms)
        return deleted

    def _delete_segments(self, segments: list[_Segment]) -> int:
        if not segments:
            return 0
        if len(segments) == len(self._segments):
            self.roll()  # a log keeps one segment: the new, empty, active one
        for seg in segments:
            self._segments.remove(seg)
            self._retire_segment(seg, snapshot=True)
        self._increment_log_start_offset(self._segments[0].base_offset)
        return len(segments)

    def _retire_segment(self, seg: _Segment, *, snapshot: bool) -> None:
        """Rename a removed segment's files ``*.deleted``; they (and its descriptor) go after
        ``file.delete.delay.ms`` (``LocalLog.deleteSegmentFiles`` with async delete)."""
        renamed = []
        for path in seg.files():
            if os.path.exists(path):
                os.replace(path, path + DELETED_SUFFIX)
                renamed.append(path + DELETED_SUFFIX)
        snap = self._snapshot_path(seg.base_offset)
        if snapshot and os.path.exists(snap):
            os.replace(snap, snap + DELETED_SUFFIX)
            renamed.append(snap + DELETED_SUFFIX)
        seg.close_index_files()
        due = self._now_ms + self.config.file_delete_delay_ms
        self._pending_deletes.append((due, seg, renamed))

    # -- compaction (the cleaner writes the files, the log swaps them in) ------------------------

    @_storage("replacing segments")
    def replace_segments(
        self,
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
        self._check_open()
        self._now_ms = now_ms
        wanted = set(old_bases)
        old = [seg for seg in self._segments if seg.base_offset in wanted]
        if len(old) != len(wanted) or self._segments[-1] in old:
            raise ValueError(f"{self.path}: cannot replace segments {sorted(wanted)}")
        base = old[0].base_offset
        if indexer.base_offset != base:
            raise ValueError("the cleaned segment must start at the first replaced segment")
        stem = self._stem(base)
        suffixes = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        for suffix in suffixes:
            if os.path.exists(stem + suffix + CLEANED_SUFFIX):
                os.replace(stem + suffix + CLEANED_SUFFIX, stem + suffix + SWAP_SUFFIX)
        _fsync_dir(self.path)
        position = self._segments.index(old[0])
        for seg in old:
            self._segments.remove(seg)
            self._retire_segment(seg, snapshot=seg.base_offset != base)
        for suffix in suffixes:
            if os.path.exists(stem + suffix + SWAP_SUFFIX):
                os.replace(stem + suffix + SWAP_SUFFIX, stem + suffix)
        _fsync_dir(self.path)
        fd = os.open(stem + LOG_SUFFIX, os.O_RDWR | os.O_APPEND)
        seg = _Segment(stem, fd, indexer, now_ms)
        seg.txns = list(txns)
        self._segments.insert(position, seg)

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
            _fsync_dir(self.path)
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
        target = f"{self.path}.{uuid.uuid4().hex}-delete"
        os.replace(self.path, target)
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
