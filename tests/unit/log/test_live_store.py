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

from kwire.errors import CorruptRecordError
from kwire.log._failure import LogDirFailureChannel
from kwire.log._rules import SegmentIndexer
from kwire.log._store import (
    FileSegmentRecords,
    FileSegmentStore,
    MemorySegmentStore,
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
