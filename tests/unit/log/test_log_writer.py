"""``LogWriter`` against Kafka's ``LogSegment`` rules (index interval, time index, roll, files).

The expected indexes come from a model written after ``LogSegment.recover`` (positions, not a
byte counter): an offset index entry ``(batch last offset, batch position)`` whenever
``position - last indexed position > index.interval.bytes``, a time index entry at the same moments
when the running max timestamp grew, and the final max timestamp appended when the segment ends.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.errors import CorruptRecordError, EncodeError
from kwire.log import (
    AbortedTxn,
    EpochEntry,
    LogWriter,
    OffsetIndex,
    OffsetPosition,
    PartitionLog,
    TimeIndex,
    TimestampOffset,
    list_log_dir,
    open_segment,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    read_txn_index,
    walk_offset_index,
    walk_time_index,
)
from kwire.records import BatchBuilder, Compression, build_end_txn_marker, read_batches


def make_batch(
    base: int, n: int, ts: int, value_size: int = 30, epoch: int = -1, codec: int = 0
) -> bytes:
    b = BatchBuilder(base_offset=base, partition_leader_epoch=epoch, compression=codec)
    for i in range(n):
        b.append(timestamp=ts + i, key=None, value=b"x" * value_size)
    return b.build()


def kafka_model(
    batches: list[tuple[int, int, int]], base_offset: int, interval: int
) -> tuple[list[OffsetPosition], list[TimestampOffset]]:
    """Offset and time index entries LogSegment.recover builds for (size, last offset, max ts)."""
    valid, last_entry = 0, 0
    max_ts, offset_of_max = -1, base_offset
    offsets: list[OffsetPosition] = []
    times: list[TimestampOffset] = []

    def maybe_time() -> None:
        if max_ts > (times[-1].timestamp if times else -1):
            times.append(TimestampOffset(max_ts, offset_of_max))

    for size, last, ts in batches:
        if ts > max_ts:
            max_ts, offset_of_max = ts, last
        if valid - last_entry > interval:
            offsets.append(OffsetPosition(last, valid))
            maybe_time()
            last_entry = valid
        valid += size
    maybe_time()  # onBecomeInactiveSegment / close
    return offsets, times


def write(tmp_path: Path, parts: list[bytes], **options: int) -> list:
    with LogWriter(tmp_path, "orders", 0, fsync=False, **options) as w:  # type: ignore[arg-type]
        for data in parts:
            w.append(data)
    return w.segments_written


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(1, 6), st.integers(0, 400), st.integers(-50, 50)),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([0, 100, 1000, 4096]),
)
def test_indexes_follow_kafkas_rule(
    tmp_path_factory: pytest.TempPathFactory, spec: list[tuple[int, int, int]], interval: int
) -> None:
    tmp = tmp_path_factory.mktemp("w")
    parts, meta, offset, ts = [], [], 0, 10_000
    for n, size, jump in spec:
        ts += jump  # timestamps go up and down
        data = make_batch(offset, n, ts, size)
        parts.append(data)
        meta.append((len(data), offset + n - 1, ts + n - 1))
        offset += n
    (seg,) = write(tmp, parts, index_interval_bytes=interval)
    expected_offsets, expected_times = kafka_model(meta, 0, interval)
    with open_segment(seg.log) as s:
        assert s.offset_index.entries == expected_offsets
        assert s.time_index.entries == expected_times
        assert bytes(s.view) == b"".join(parts)
        index_bytes = Path(seg.index).read_bytes()
        assert len(index_bytes) == 8 * len(expected_offsets)  # trimmed: no preallocation
        # What kafka-dump-log checks: each entry points at a batch whose last offset it names.
        assert all(c.matches for c in walk_offset_index(index_bytes, s.view, 0))
        for check in walk_time_index(Path(seg.timeindex).read_bytes(), index_bytes, s.view, 0):
            assert check.log_offset == check.entry.offset
            assert check.log_max_timestamp == check.entry.timestamp
    if meta:
        assert TimeIndex(Path(seg.timeindex).read_bytes(), 0).max_timestamp == max(
            m[2] for m in meta
        )


def test_first_batch_is_never_indexed_and_entries_use_last_offsets(tmp_path: Path) -> None:
    parts = [make_batch(5 * i, 5, 1000 + 10 * i, 200) for i in range(6)]
    size = len(parts[0])
    (seg,) = write(tmp_path, parts, index_interval_bytes=size)  # > interval: every 2nd batch
    entries = OffsetIndex(Path(seg.index).read_bytes(), 0).entries
    assert entries == [OffsetPosition(14, 2 * size), OffsetPosition(24, 4 * size)]


def test_rolls_at_segment_bytes(tmp_path: Path) -> None:
    parts = [make_batch(4 * i, 4, 1000 + i, 100) for i in range(20)]
    size = len(parts[0])
    segment_bytes = 3 * size + size // 2  # room for three batches
    segs = write(tmp_path, parts, segment_bytes=segment_bytes)
    assert [s.base_offset for s in segs] == [0, 12, 24, 36, 48, 60, 72]
    assert [s.size for s in segs] == [3 * size] * 6 + [2 * size]
    assert all(s.size <= segment_bytes for s in segs)
    names = sorted(os.listdir(tmp_path / "orders-0"))
    assert "00000000000000000012.log" in names and "00000000000000000012.timeindex" in names
    assert not [n for n in names if n.endswith(".kwire-tmp")]
    # Each finished segment's last time index entry is its largest timestamp.
    for s, first in zip(segs, range(0, 20, 3), strict=True):
        last_batch = min(first + 2, 19)
        assert TimeIndex(Path(s.timeindex).read_bytes(), s.base_offset).last_entry == (
            TimestampOffset(1000 + last_batch + 3, 4 * last_batch + 3)
        )
    log = PartitionLog(tmp_path / "orders-0")
    assert log.next_offset() == 80
    assert log.position_of(50) == (segs[4], size * 0)


def test_batch_larger_than_a_segment_is_rejected(tmp_path: Path) -> None:
    big = make_batch(0, 1, 0, 500)
    with LogWriter(tmp_path, "t", 0, segment_bytes=200, fsync=False) as w:
        with pytest.raises(EncodeError, match="larger than segment_bytes"):
            w.append(big)
        w.append(make_batch(0, 1, 0, 10))
    assert w.batches_written == 1


def test_index_full_rolls(tmp_path: Path) -> None:
    parts = [make_batch(i, 1, 100 + i, 10) for i in range(40)]
    segs = write(tmp_path, parts, index_interval_bytes=0, max_index_bytes=48)
    # 48 bytes: 6 offset entries, 4 time entries (one kept for the roll) -> roll before the 5th.
    assert len(segs) > 1
    for s in segs:
        assert len(Path(s.index).read_bytes()) <= 48
        assert len(Path(s.timeindex).read_bytes()) <= 48


def test_segment_files_appear_only_when_complete(tmp_path: Path) -> None:
    w = LogWriter(tmp_path, "t", 0, fsync=False)
    w.append(make_batch(0, 2, 5))
    names = os.listdir(tmp_path / "t-0")
    assert names == ["00000000000000000000.log.kwire-tmp"]
    assert list_log_dir(tmp_path)[0].segments == ()  # readers do not see it yet
    w.close()
    assert sorted(os.listdir(tmp_path / "t-0")) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000002.snapshot",  # producer state at the log end, as Kafka's close
        "leader-epoch-checkpoint",
    ]
    w.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        w.append(make_batch(2, 1, 5))


def test_offsets_must_move_forward_and_bad_bytes_write_nothing(tmp_path: Path) -> None:
    with LogWriter(tmp_path, "t", 0, fsync=False) as w:
        w.append(make_batch(0, 3, 5))
        with pytest.raises(EncodeError, match="do not follow the log end offset 3"):
            w.append(make_batch(2, 3, 5))
        good, bad = make_batch(3, 1, 5), bytearray(make_batch(4, 1, 5))
        bad[-1] ^= 1
        with pytest.raises(CorruptRecordError):
            w.append(good + bytes(bad))  # validated as a whole: the good one is not written
        assert w.next_offset == 3
        w.append(make_batch(10, 1, 5))  # gaps are fine (compaction leaves them)
        assert w.next_offset == 11
    with open_segment(w.segments_written[0]) as seg:
        assert [b.base_offset for b in seg.batches()] == [0, 10]


def test_existing_segments_and_bad_names_are_refused(tmp_path: Path) -> None:
    write(tmp_path, [make_batch(0, 1, 0)])
    with pytest.raises(FileExistsError):
        LogWriter(tmp_path, "orders", 0)
    for topic in ["", ".", "..", "a/b", "x" * 250, "tópico"]:
        with pytest.raises(ValueError):
            LogWriter(tmp_path, topic, 0)
    with pytest.raises(ValueError):
        LogWriter(tmp_path, "t", -1)
    with pytest.raises(ValueError):
        LogWriter(tmp_path, "t", 0, segment_bytes=2**31)


def test_aborted_transactions_go_to_the_segment_with_the_marker(tmp_path: Path) -> None:
    pid, epoch = 42, 3
    with LogWriter(tmp_path, "t", 0, fsync=False, segment_bytes=500) as w:
        b = BatchBuilder(
            base_offset=0,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            is_transactional=True,
        )
        for i in range(3):
            b.append(timestamp=10 + i, value=b"p" * 60)
        w.append(b.build())
        w.append(make_batch(3, 2, 20, 60))
        w.append(make_batch(5, 2, 21, 60))  # rolls: the marker lands in the second segment
        marker = w.next_offset
        w.append(
            build_end_txn_marker(
                False,
                offset=marker,
                producer_id=pid,
                producer_epoch=epoch,
                coordinator_epoch=9,
                timestamp=30,
            )
        )
        # The ABORT marker completed the transaction: its entry is already there (LSO marker + 1)...
        assert w._active is not None and w._active.txns == [AbortedTxn(pid, 0, marker, marker + 1)]
        # ... and an explicit call for the same transaction replaces it.
        w.append_aborted_txn(pid, 0, marker, 0)
        with pytest.raises(EncodeError, match="in order of last offset"):
            w.append_aborted_txn(pid + 1, 0, marker, 0)
        with pytest.raises(EncodeError, match="not in the current segment"):
            w.append_aborted_txn(pid, 0, marker + 1, 0)
    first, second = w.segments_written
    assert first.txnindex is None and second.txnindex is not None
    assert read_txn_index(Path(second.txnindex).read_bytes()) == [AbortedTxn(pid, 0, marker, 0)]
    log = PartitionLog(tmp_path / "t-0")
    # An aborted txn's data is in segment 1, its marker in segment 2: reading from offset 0 needs both.
    assert log.aborted_transactions(0) == [AbortedTxn(pid, 0, marker, 0)]
    assert log.aborted_transactions(marker + 1) == []


def test_leader_epoch_checkpoint_and_partition_metadata(tmp_path: Path) -> None:
    parts = [
        make_batch(0, 2, 0, epoch=0),
        make_batch(2, 2, 0, epoch=0),
        make_batch(4, 1, 0, epoch=3),
        make_batch(5, 1, 0, epoch=2),
        make_batch(6, 1, 0, epoch=5),
    ]
    with LogWriter(tmp_path, "t", 0, fsync=False, topic_id=bytes(range(16))) as w:
        for data in parts:
            w.append(data)
    folder = tmp_path / "t-0"
    # LeaderEpochFileCache.assign: a new entry only when the epoch grows.
    entries = read_leader_epoch_checkpoint((folder / "leader-epoch-checkpoint").read_text())
    assert entries == [EpochEntry(0, 0), EpochEntry(3, 4), EpochEntry(5, 6)]
    assert read_partition_metadata(
        (folder / "partition.metadata").read_text()
    ).topic_id_bytes == bytes(range(16))
    assert PartitionLog(folder).leader_epochs() == entries


def test_empty_log_is_one_empty_segment(tmp_path: Path) -> None:
    with LogWriter(tmp_path, "t", 2, fsync=False, start_offset=500):
        pass
    (p,) = list_log_dir(tmp_path)
    (seg,) = p.segments
    assert seg.base_offset == 500 and seg.size == 0
    assert (tmp_path / "t-2" / "leader-epoch-checkpoint").read_text() == "0\n0\n"


def test_start_offset_names_the_first_segment(tmp_path: Path) -> None:
    with LogWriter(tmp_path, "t", 0, fsync=False, start_offset=100) as w:
        with pytest.raises(EncodeError):
            w.append(make_batch(99, 1, 0))
        w.append(make_batch(150, 1, 0))
    assert w.segments_written[0].base_offset == 100
    with LogWriter(tmp_path, "u", 0, fsync=False) as w2:
        w2.append(make_batch(150, 1, 0))
    assert w2.segments_written[0].base_offset == 150


def test_legacy_batches_have_no_time_index(tmp_path: Path) -> None:
    parts = []
    for i in range(30):
        b = BatchBuilder(0, Compression.GZIP if i % 2 else Compression.NONE, base_offset=2 * i)
        b.append(key=b"k", value=b"v" * 100)
        b.append(key=None, value=b"w" * 100)
        parts.append(b.build())
    (seg,) = write(tmp_path, parts, index_interval_bytes=300)
    # Magic 0 has no timestamps (-1): TimeIndex.maybeAppend never appends.
    assert Path(seg.timeindex).read_bytes() == b""
    assert len(OffsetIndex(Path(seg.index).read_bytes(), 0)) > 3
    with open_segment(seg) as s:
        # A magic 0/1 "batch" is one top-level message: two per uncompressed set, one wrapper else.
        expected = [o for i in range(30) for o in ([2 * i + 1] if i % 2 else [2 * i, 2 * i + 1])]
        assert [b.last_offset for b in s.batches()] == expected


def test_written_bytes_read_back_identically(tmp_path: Path) -> None:
    parts = [make_batch(3 * i, 3, 100 * i, 20, codec=Compression.ZSTD) for i in range(10)]
    (seg,) = write(tmp_path, parts)
    data = Path(seg.log).read_bytes()
    assert data == b"".join(parts)
    assert [b.base_offset for b in read_batches(data)] == list(range(0, 30, 3))
    _ = struct  # hand-made entries are checked in test_log_index.py


def test_producer_state_snapshot_and_automatic_txn_index(tmp_path: Path) -> None:
    """ProducerStateManager's bookkeeping: entries, ongoing transactions, the last stable offset
    of an aborted transaction (the first offset of the earliest OTHER ongoing one)."""
    from kwire.log import ProducerSnapshotEntry, read_producer_snapshot

    p1, p2, p3 = 1001, 1002, 1003

    def data(base: int, n: int, pid: int, epoch: int, seq: int, txn: bool, ts: int) -> bytes:
        b = BatchBuilder(
            base_offset=base,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=txn,
        )
        for i in range(n):
            b.append(timestamp=ts + i, value=b"x")
        return b.build()

    def end(
        offset: int, pid: int, epoch: int, commit: bool, coordinator_epoch: int, ts: int
    ) -> bytes:
        return build_end_txn_marker(
            commit,
            offset=offset,
            producer_id=pid,
            producer_epoch=epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=ts,
        )

    with LogWriter(tmp_path, "t", 0, fsync=False) as w:
        w.append(data(0, 2, p1, 0, 0, True, 100))
        w.append(data(2, 1, p2, 5, 0, True, 110))
        w.append(end(3, p1, 0, False, 4, 120))  # P1 aborts while P2's txn (from 2) is open
        w.append(end(4, p2, 5, True, 6, 130))
        w.append(data(5, 3, p3, 1, 10, False, 140))
        w.append(data(8, 1, p1, 1, 0, True, 150))  # P1, new epoch, new transaction
    (seg,) = w.segments_written
    assert read_txn_index(Path(seg.txnindex).read_bytes()) == [AbortedTxn(p1, 0, 3, 2)]  # type: ignore[arg-type]
    assert [Path(p).name for p in w.snapshots_written] == ["00000000000000000009.snapshot"]
    snap = read_producer_snapshot(Path(w.snapshots_written[0]).read_bytes())
    assert snap.entries == (
        # epoch bumped: batch metadata restarts, the coordinator epoch stays
        ProducerSnapshotEntry(p1, 1, 0, 8, 0, 150, 4, 8),
        # a marker updates the timestamp and coordinator epoch, not the batch metadata
        ProducerSnapshotEntry(p2, 5, 0, 2, 0, 130, 6, None),
        ProducerSnapshotEntry(p3, 1, 12, 7, 2, 142, -1, None),
    )


def test_segment_ms_rolls_on_message_time(tmp_path: Path) -> None:
    # LogSegment.shouldRoll: batch max timestamp - first batch's max timestamp > segment.ms.
    hour = 3_600_000
    parts = [make_batch(i, 1, i * hour // 2, 10) for i in range(10)]  # one batch per half hour
    segs = write(tmp_path, parts, segment_ms=hour)
    # 0h, 0.5h, 1h stay (1h - 0h is not > 1h); 1.5h rolls; and so on.
    assert [s.base_offset for s in segs] == [0, 3, 6, 9]
    with pytest.raises(ValueError):
        LogWriter(tmp_path, "x", 0, segment_ms=0)
