"""``LiveLog`` creates, opens, lists and deletes its segments through the ``SegmentStore`` it is
given (issue 18's storage boundary); by default a ``FileSegmentStore`` of the partition folder,
whose bytes are Kafka's layout, the same as a log opened without a store. Over a
``MemorySegmentStore`` the log touches no disk: the same segment and index bytes live in the
store, and reads answer with bytes instead of descriptors."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from kwire.errors import CorruptRecordError, KafkaStorageError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._rules import SegmentIndexer
from kwire.log._store import (
    FileSegmentRecords,
    FileSegmentStore,
    IndexStore,
    MemorySegmentStore,
    SegmentRecords,
    SegmentStore,
)
from kwire.log.storage import LiveLog, LogConfig
from kwire.records import (
    AppendOrigin,
    BatchBuilder,
    build_batch,
    build_end_txn_marker,
    read_batches,
)

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100)


class RecordingStore(FileSegmentStore):
    """The file store, remembering which segments it was asked for."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.rolled: list[int] = []
        self.opened: list[int] = []

    def roll(self, base_offset: int) -> FileSegmentRecords:
        self.rolled.append(base_offset)
        return super().roll(base_offset)

    def open(self, base_offset: int) -> FileSegmentRecords:
        self.opened.append(base_offset)
        return super().open(base_offset)


def fill(path: Path, store: SegmentStore | None) -> LiveLog:
    log = LiveLog.open(path, CONFIG, now_ms=NOW, store=store)
    for i in range(12):
        values = [(None, NOW + i, None, b"v%d" % i * 20) for _ in range(3)]
        log.append_as_leader(build_batch(values), now_ms=NOW + i)
    return log


def contents(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def test_an_explicit_file_store_writes_the_same_folder_as_the_default(tmp_path: Path) -> None:
    fill(tmp_path / "a" / "t-0", None).close()
    fill(tmp_path / "b" / "t-0", FileSegmentStore(tmp_path / "b" / "t-0")).close()
    default, explicit = contents(tmp_path / "a" / "t-0"), contents(tmp_path / "b" / "t-0")
    assert sum(name.endswith(".log") for name in default) > 1
    assert explicit == default


def test_segments_are_rolled_opened_and_recovered_through_the_store(tmp_path: Path) -> None:
    folder = tmp_path / "t-0"
    store = RecordingStore(folder)
    log = fill(folder, store)
    bases = log.segment_base_offsets
    assert len(bases) > 1
    assert store.rolled == bases
    assert store.opened == []
    log.close()
    # A torn tail in the active segment: reopened through the store, recovered, cut back.
    active = folder / f"{bases[-1]:020d}.log"
    intact = active.stat().st_size
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x40torn")
    reopened = RecordingStore(folder)
    log = LiveLog.open(folder, CONFIG, now_ms=NOW, store=reopened)
    try:
        assert reopened.opened == bases
        assert reopened.base_offsets() == log.segment_base_offsets == bases
        assert active.stat().st_size == intact
        assert log.log_end_offset == 36
        read = log.read(0, 1 << 20, max_offset=log.log_end_offset)
        assert [r.offset for b in read_batches(read.read_bytes()) for r in b][:3] == [0, 1, 2]
    finally:
        log.close()


def test_a_clean_start_over_a_bad_batch_length_raises_corrupt_record(tmp_path: Path) -> None:
    """After a clean shutdown the active segment is not recovered, only walked (producer state
    replay, ``readNextOffset``): a length field below the minimum record overhead is a
    ``CorruptRecordException`` (``FileLogInputStream.nextBatch``), which fails the log's load
    (``LogManager.loadLogs`` rethrows it), not an I/O error taking the directory offline. (The
    replay raised this before ``LogSegment.header_at`` did too; the test keeps both walks so.)"""
    folder = tmp_path / "t-0"
    log = fill(folder, None)
    active = folder / f"{log.segment_base_offsets[-1]:020d}.log"
    log.close()
    with open(active, "ab") as f:
        f.write(struct.pack(">qi", 36, -(2**31)) + bytes(20))
    failures = LogDirFailureChannel()
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        LiveLog.open(
            folder,
            CONFIG,
            now_ms=NOW,
            recovery_point=36,
            clean_shutdown=True,
            failure_channel=failures,
        )
    assert not failures.is_offline(str(tmp_path))


def fill_with_aborted_txn(path: Path, store: SegmentStore | None) -> LiveLog:
    log = fill(path, store)
    b = BatchBuilder(producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True)
    b.append(timestamp=NOW, key=None, value=b"t")
    log.append_as_leader(b.build(), now_ms=NOW)
    marker = build_end_txn_marker(
        False, coordinator_epoch=1, producer_id=5, producer_epoch=0, timestamp=NOW
    )
    log.append_as_leader(marker, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
    return log


def test_a_memory_log_holds_the_bytes_a_file_log_writes_and_no_file(tmp_path: Path) -> None:
    files = fill_with_aborted_txn(tmp_path / "f" / "t-0", None)
    store = MemorySegmentStore()
    memory = fill_with_aborted_txn(tmp_path / "m" / "t-0", store)
    try:
        assert not (tmp_path / "m").exists()
        bases = files.segment_base_offsets
        assert memory.segment_base_offsets == bases and len(bases) > 1
        written = contents(tmp_path / "f" / "t-0")
        held = {os.path.basename(path): bytes(r.data) for path, r in store.indexes.indexes.items()}
        held |= {f"{base:020d}.log": bytes(r.data) for base, r in store.segments.items()}
        # The same segments, offset/time/transaction indexes (the open time index is appended
        # at the roll or close); snapshots and checkpoints are not kept in memory.
        assert any(name.endswith(".txnindex") for name in held)
        assert held == {n: b for n, b in written.items() if n.endswith((".log", "index"))}
        # Files answer with descriptors (sendfile), memory with the same bytes.
        for offset in (0, 17, 35, 36):
            by_file, in_memory = files.read(offset, 1000), memory.read(offset, 1000)
            base = by_file.segment_base_offset
            seg = files._segments[bases.index(base)]
            assert [s.fd for s in by_file.slices] == [seg.fd]
            assert in_memory.segment_base_offset == base
            assert in_memory.slices == [] and by_file.data == b""
            assert in_memory.data == by_file.read_bytes() == in_memory.read_bytes()
            assert in_memory.size == by_file.size > 0
        aborted = [
            (t.producer_id, t.first_offset) for t in memory.collect_aborted_transactions(0, 99)
        ]
        assert aborted == [(5, 36)]
    finally:
        files.close()
        memory.close()


def test_a_memory_log_reopens_over_its_store_and_delete_empties_it(tmp_path: Path) -> None:
    store = MemorySegmentStore()
    log = fill_with_aborted_txn(tmp_path / "t-0", store)
    end, bases, before = log.log_end_offset, log.segment_base_offsets, log.read(0, 1 << 20)
    log.close()
    log = LiveLog.open(tmp_path / "t-0", CONFIG, now_ms=NOW, store=store)
    assert (log.log_end_offset, log.segment_base_offsets) == (end, bases)
    assert log.read(0, 1 << 20).data == before.data
    assert [t.first_offset for t in log.collect_aborted_transactions(0, end)] == [36]
    with pytest.raises(ValueError, match="segment files only"):
        log.replace_segments(bases[:1], SegmentIndexer(0, 100), [], NOW)
    log.delete()
    assert store.segments == {} and store.indexes.indexes == {}
    assert not (tmp_path / "t-0").exists()


class FailingRecords:
    """An index open for appends whose appends fail while its store is ``armed`` (a full disk)."""

    def __init__(self, inner: SegmentRecords, owner: FailingIndexes) -> None:
        self.inner, self.owner = inner, owner

    def append(self, data: bytes | bytearray | memoryview) -> None:
        if self.owner.armed:
            raise OSError(28, "No space left on device")
        self.inner.append(data)

    def size(self) -> int:
        return self.inner.size()

    def read(self, position: int, size: int) -> bytes:
        return self.inner.read(position, size)

    def truncate_to(self, size: int) -> None:
        self.inner.truncate_to(size)

    def flush(self) -> None:
        self.inner.flush()

    def modified_ms(self) -> int:
        return self.inner.modified_ms()

    def close(self) -> None:
        self.inner.close()


class FailingIndexes:
    """An ``IndexStore`` whose offset index appends fail once ``armed``."""

    def __init__(self, inner: IndexStore) -> None:
        self.inner = inner
        self.armed = False

    def append_to(self, path: str) -> SegmentRecords:
        out = self.inner.append_to(path)
        return FailingRecords(out, self) if path.endswith(".index") else out

    def read(self, path: str) -> bytes | None:
        return self.inner.read(path)

    def write(self, path: str, data: bytes) -> None:
        self.inner.write(path, data)

    def remove(self, path: str) -> None:
        self.inner.remove(path)


@pytest.mark.parametrize("kind", ["files", "memory"])
def test_a_failed_append_is_cut_back_in_both_stores(tmp_path: Path, kind: str) -> None:
    """``_undo_append`` over either store: the segment and its indexes are cut back to their
    sizes before the append that failed, so a reopen finds the log as it was."""
    folder = tmp_path / "t-0"
    store: FileSegmentStore | MemorySegmentStore
    store = FileSegmentStore(folder) if kind == "files" else MemorySegmentStore()
    indexes = FailingIndexes(store.indexes)
    store.indexes = indexes  # type: ignore[assignment]
    log = fill(folder, store)
    log.roll(NOW)
    # A segment's first batch gets no index entry, the next one (past the interval) does.
    log.append_as_leader(build_batch([(None, NOW, None, b"x" * 150)]), now_ms=NOW)
    base = log.segment_base_offsets[-1]
    stem = log._stem(base)
    before = (store.open(base).size(), indexes.read(stem + ".index"), log.log_end_offset)
    assert before[:2] == (log._segments[-1].size, b"")
    indexes.armed = True
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(build_batch([(None, NOW, None, b"y" * 150)]), now_ms=NOW)
    assert (store.open(base).size(), indexes.read(stem + ".index")) == before[:2]
    log.close()  # offline: releases, writes nothing
    indexes.armed = False
    reopened = LiveLog.open(folder, CONFIG, now_ms=NOW, store=store)
    try:
        assert reopened.log_end_offset == before[2]
        assert reopened.read(before[2] - 1, 1).size > 0
    finally:
        reopened.close()
