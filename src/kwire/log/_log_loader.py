"""Opening a live log (Kafka's ``LogLoader``): leftovers of an interrupted delete, clean or swap
are finished or removed, segments past the recovery point (or failing the index sanity
check) are recovered (``LogSegment.recover``), the producer state is rebuilt from the latest
snapshot and the batches after it, the leader epoch cache is cut to the log end. Functions of
the ``LiveLog`` being opened, which calls ``load`` once from ``LiveLog.open``.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
from typing import TYPE_CHECKING

from kwire.errors import KwireError
from kwire.log._checkpoint import (
    read_leader_epoch_checkpoint,
    read_partition_metadata,
)
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
    parse_segment_file_name,
    segment_file_name,
)
from kwire.log._log_segment import CLEANED_SUFFIX, DELETED_SUFFIX, LONG_MAX, SWAP_SUFFIX, LogSegment
from kwire.log._rules import LeaderEpochCache, SegmentIndexer
from kwire.log._snapshot import read_producer_snapshot
from kwire.log._store import FileSegmentRecords, drop_segment
from kwire.log._txnindex import AbortedTxn, TransactionIndex, encode_aborted_txn
from kwire.log._writer import TMP_SUFFIX, _fsync_dir
from kwire.records import (
    BatchReader,
)

if TYPE_CHECKING:
    from kwire.log._live import LiveLog

logger = logging.getLogger("kwire.log")


__all__ = ["load", "read_topic_id"]


def read_topic_id(partition_dir: str | os.PathLike[str]) -> bytes | None:
    """The topic id in a partition folder's ``partition.metadata`` (None when absent)."""
    path = os.path.join(os.fspath(partition_dir), PARTITION_METADATA)
    try:
        with open(path, "rb") as f:
            return read_partition_metadata(f.read()).topic_id_bytes
    except FileNotFoundError:
        return None


def load(
    log: LiveLog, now_ms: int, recovery_point: int, log_start_offset: int, clean_shutdown: bool
) -> None:
    names = _clean_leftovers(log) if log._store.on_disk else []
    bases = log._store.base_offsets()
    snapshots = sorted(
        p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == SNAPSHOT_SUFFIX
    )
    epoch_path = os.path.join(log.path, LEADER_EPOCH_CHECKPOINT)
    if log._store.on_disk and os.path.exists(epoch_path):
        with open(epoch_path, "rb") as f:
            log._epochs = LeaderEpochCache(read_leader_epoch_checkpoint(f.read()))
    if not bases:
        log._segments.append(log._new_segment(log_start_offset, now_ms))
        log.log_start_offset = log.log_end_offset = log_start_offset
        log.recovery_point = log_start_offset
        log._producers.clear(log_start_offset)
        log._epochs.truncate_from_end(log_start_offset)
        log._write_epochs()
        for s in snapshots:
            log._delete_snapshot(s)
        return
    broken: int | None = None
    for i, base in enumerate(bases):
        seg, ok = _open_existing(log, base, now_ms)
        log._segments.append(seg)
        if not ok and broken is None:
            broken = i
    # Segments to recover: from the one holding the recovery point (LogLoader.recoverLog).
    start = len(log._segments)
    if not clean_shutdown or not log._store.on_disk:
        # A memory store keeps no snapshots nor epoch checkpoint: every segment is recovered.
        start = 0
        for i, seg in enumerate(log._segments):
            if seg.base_offset <= recovery_point:
                start = i
    if broken is not None:
        start = min(start, broken)
    # Producer state: the latest snapshot at or below where replay must begin.
    replay_from = log._segments[start].base_offset if start < len(log._segments) else LONG_MAX
    first_base = log._segments[0].base_offset
    snap = None
    for s in snapshots:
        if first_base <= s <= replay_from:
            snap = s
    if snap is not None:
        try:
            with open(log._snapshot_path(snap), "rb") as f:
                log._producers.load(
                    read_producer_snapshot(f.read()).entries,
                    snap,
                    now_ms=now_ms,
                    expiration_ms=log.producer_id_expiration_ms,
                )
            log._last_snapshot_offset = snap
        except (OSError, KwireError) as exc:
            logger.warning("%s: ignoring producer snapshot %d: %s", log.path, snap, exc)
            snap = None
    if snap is None:
        log._producers.clear(first_base)
    replay_offset = log._producers.map_end_offset
    unflushed = len(log._segments) - start
    i = 0
    while i < len(log._segments):
        seg = log._segments[i]
        nxt = log._segments[i + 1].base_offset if i + 1 < len(log._segments) else None
        if i >= start:
            # LogLoader.recoverLog says this at INFO; one line a log (below) is what an operator
            # needs, the per-segment detail is for debugging.
            logger.debug(
                "%s: recovering unflushed segment %d (%d/%d recovered)",
                log.path,
                seg.base_offset,
                i - start,
                unflushed,
            )
            truncated = _recover_segment(log, seg, replay_offset)
            if truncated and i + 1 < len(log._segments):
                later = log._segments[i + 1 :]
                del log._segments[i + 1 :]
                logger.warning(
                    "%s: deleting %d segments after the truncated segment %d",
                    log.path,
                    len(later),
                    seg.base_offset,
                )
                for other in later:
                    other.close()
                    drop_segment(log._store, other.base_offset, other.files()[1:])
        elif nxt is None or nxt > replay_offset:
            _replay_segment(log, seg, replay_offset)
        i += 1
    active = log._segments[-1]
    end = active.base_offset
    last = last_batch_offset(log, active)
    if last is not None:
        end = last + 1
    log.log_end_offset = end
    log._producers.map_end_offset = max(log._producers.map_end_offset, end)
    log.log_start_offset = min(max(log_start_offset, log._segments[0].base_offset), end)
    log._epochs.truncate_from_end(end)
    log._epochs.truncate_from_start(log.log_start_offset)
    log._write_epochs()
    for s in snapshots:
        if s > end or (s < log.log_start_offset and s != snap):
            log._delete_snapshot(s)
        elif s > log._last_snapshot_offset:
            log._last_snapshot_offset = s
    logger.debug(
        "%s: loaded producer state till offset %d (snapshot %s)",
        log.path,
        end,
        "none" if snap is None else snap,
    )
    # Recovered data was read back and validated: make it durable, then it is "flushed".
    if start < len(log._segments):
        for seg in log._segments[start:]:
            seg.fsync()
        if log._store.on_disk:
            _fsync_dir(log.path)
        logger.info(
            "%s: recovered %d unflushed segments from offset %d (recovery point %d): "
            "log end offset %d",
            log.path,
            len(log._segments) - start,
            log._segments[start].base_offset,
            recovery_point,
            end,
        )
        log.recovery_point = end
    else:
        log.recovery_point = min(max(recovery_point, log.log_start_offset), end)
    active.open_index_files()


def _clean_leftovers(log: LiveLog) -> list[str]:
    """``LogLoader.removeTempFilesAndCollectSwapFiles``, the completion of interrupted swaps
    (``LogLoader.load``: the segments a ``.log.swap`` covers are deleted, then the swap files
    are renamed) and the orphan index cleanup."""
    names = os.listdir(log.path)
    cleaned_bases = [
        p[0]
        for n in names
        if n.endswith(CLEANED_SUFFIX) and (p := parse_segment_file_name(n[: -len(CLEANED_SUFFIX)]))
    ]
    min_cleaned = min(cleaned_bases, default=LONG_MAX)
    for name in names:
        full = os.path.join(log.path, name)
        if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, TMP_SUFFIX)):
            logger.info("%s: deleting leftover file %s", log.path, name)
            os.remove(full)
        elif name.endswith(SWAP_SUFFIX):
            parsed = parse_segment_file_name(name[: -len(SWAP_SUFFIX)])
            if parsed is not None and parsed[0] >= min_cleaned:
                # KAFKA-6264: a swap at or above a .cleaned file belongs to an unfinished
                # operation whose old segments are all still there.
                logger.info("%s: deleting unfinished swap file %s", log.path, name)
                os.remove(full)
    _delete_swapped_over(log)
    for name in os.listdir(log.path):
        if name.endswith(SWAP_SUFFIX):
            target = name[: -len(SWAP_SUFFIX)]
            parsed = parse_segment_file_name(target)
            logger.info("%s: completing swap of %s", log.path, target)
            os.replace(os.path.join(log.path, name), os.path.join(log.path, target))
            if parsed is not None and parsed[1] == LOG_SUFFIX:
                # The swapped-in log's indexes are rebuilt.
                stem = os.path.join(log.path, segment_file_name(parsed[0], ""))
                for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(stem + suffix)
    names = os.listdir(log.path)
    logs = {p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX}
    for name in names:
        parsed = parse_segment_file_name(name)
        if (
            parsed is not None
            and parsed[1] in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
            and parsed[0] not in logs
        ):
            logger.info("%s: deleting orphaned index file %s", log.path, name)
            os.remove(os.path.join(log.path, name))
    return os.listdir(log.path)


def _delete_swapped_over(log: LiveLog) -> None:
    """Delete the segments each ``.log.swap`` replaces: those whose base offset is in
    ``[swap base, swap next offset)`` (the cleaner merged them into the swap)."""
    names = os.listdir(log.path)
    logs = {p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX}
    for name in names:
        if not name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            continue
        parsed = parse_segment_file_name(name[: -len(SWAP_SUFFIX)])
        if parsed is None:
            continue
        base = parsed[0]
        fd = os.open(os.path.join(log.path, name), os.O_RDONLY)
        try:
            ix = SegmentIndexer(base, 0, size=os.fstat(fd).st_size)
            swap = LogSegment(os.path.join(log.path, name), fd, ix, 0)
            next_offset = base
            for _pos, _base, last, _size in swap.batches_from(0):
                next_offset = last + 1
        finally:
            os.close(fd)
        for old in sorted(b for b in logs if base <= b < next_offset):
            logger.info("%s: deleting segment %d replaced by %s", log.path, old, name)
            stem = log._stem(old)
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(stem + suffix)


def _open_existing(log: LiveLog, base: int, now_ms: int) -> tuple[LogSegment, bool]:
    """Open a segment and load its indexes; False when they need rebuilding."""
    stem = log._stem(base)
    records = log._store.open(base)
    indexes = log._store.indexes
    indexer = SegmentIndexer(base, log.config.index_interval_bytes)
    indexer.size = records.size()
    seg = LogSegment(stem, records, indexer, now_ms, indexes)
    ok = True
    raw = indexes.read(stem + INDEX_SUFFIX)
    raw_time = indexes.read(stem + TIME_INDEX_SUFFIX)
    if raw is None or raw_time is None:
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
        logger.warning("%s: rebuilding the indexes of segment %d", log.path, base)
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
        index_size, time_size = (
            len(oidx) * OFFSET_INDEX_ENTRY_SIZE,
            len(tidx) * TIME_INDEX_ENTRY_SIZE,
        )
        if len(raw) != index_size or len(raw_time) != time_size:
            for path, size in ((INDEX_SUFFIX, index_size), (TIME_INDEX_SUFFIX, time_size)):
                out = indexes.append_to(stem + path)
                try:
                    out.truncate_to(size)
                finally:
                    out.close()
    raw_txns = indexes.read(stem + TXN_INDEX_SUFFIX)
    if raw_txns is not None:
        seg.txns = list(TransactionIndex(raw_txns).entries)
    first = seg.header_at(0)
    if first is not None:
        with contextlib.suppress(KwireError, OSError, StopIteration):
            indexer.rolling_timestamp = seg.read_batch(0, first[2]).max_timestamp
    return seg, ok


def map_segment(log: LiveLog, seg: LogSegment) -> tuple[mmap.mmap | None, memoryview]:
    """The segment's bytes: a read-only map of its file, or a copy of a memory segment's (a
    view of its bytearray would stop it growing while a batch still held the view)."""
    if seg.size == 0:
        return None, memoryview(b"")
    if not isinstance(seg.records, FileSegmentRecords):
        return None, memoryview(seg.records.read(0, seg.size))
    m = mmap.mmap(seg.fd, seg.size, access=mmap.ACCESS_READ)
    return m, memoryview(m)


def _replay_segment(log: LiveLog, seg: LogSegment, from_offset: int) -> None:
    """Producer state of a segment that needs no recovery (headers only, no CRC)."""
    start = seg.indexer.lookup(from_offset).position if from_offset > seg.base_offset else 0
    m, view = map_segment(log, seg)
    try:
        reader = BatchReader(view, verify_crc=False, allow_truncated_tail=True, start=start)
        for batch in reader:
            if batch.base_offset >= from_offset or batch.last_offset >= from_offset:
                log._producers.replay(batch)
            del batch
    finally:
        view.release()
        if m is not None:
            # A reader over legacy batches can still hold a view: the GC closes the map.
            with contextlib.suppress(BufferError):
                m.close()


def _recover_segment(log: LiveLog, seg: LogSegment, replay_offset: int) -> bool:
    """``LogSegment.recover``: validate, truncate the invalid tail, rebuild the indexes."""
    ix = SegmentIndexer(seg.base_offset, log.config.index_interval_bytes)
    index = bytearray()
    timeindex = bytearray()
    txns: list[AbortedTxn] = []
    valid = 0
    m, view = map_segment(log, seg)
    try:
        reader = BatchReader(view, verify_crc=True, allow_truncated_tail=True)
        while True:
            try:
                batch = next(reader)
            except StopIteration:
                break
            except KwireError as exc:
                logger.warning(
                    "%s: invalid batch in segment %d at byte %d: %s",
                    log.path,
                    seg.base_offset,
                    valid,
                    exc,
                )
                break
            if batch.last_offset - seg.base_offset > (1 << 31) - 1 or (
                batch.base_offset < seg.base_offset
            ):
                logger.warning(
                    "%s: batch at byte %d of segment %d has offsets %d..%d outside it",
                    log.path,
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
                log._epochs.assign(batch.partition_leader_epoch, batch.base_offset)
            if batch.last_offset >= replay_offset:
                aborted = log._producers.replay(batch)
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
        logger.warning(
            "%s: truncated %d invalid bytes at the end of segment %d",
            log.path,
            truncated,
            seg.base_offset,
        )
        seg.records.truncate_to(valid)
    te = ix.maybe_append_time_entry()  # as a closed segment, recovery appends the max
    if te is not None:
        timeindex += encode_time_index_entry(seg.base_offset, *te)
    ix.bytes_since_last_index_entry = 0
    seg.indexer = ix
    seg.close_index_files()
    indexes = log._store.indexes
    indexes.write(seg.stem + INDEX_SUFFIX, bytes(index))
    indexes.write(seg.stem + TIME_INDEX_SUFFIX, bytes(timeindex))
    if txns:
        indexes.write(seg.stem + TXN_INDEX_SUFFIX, b"".join(map(encode_aborted_txn, txns)))
    else:
        indexes.remove(seg.stem + TXN_INDEX_SUFFIX)
    seg.txns = txns
    return truncated > 0


def last_batch_offset(log: LiveLog, seg: LogSegment) -> int | None:
    """Last offset of the segment's last batch (``readNextOffset`` - 1)."""
    start = seg.indexer.positions[-1] if seg.indexer.positions else 0
    last = None
    for _pos, _base, last_offset, _size in seg.batches_from(start):
        last = last_offset
    return last
