"""``committed_batches``: Kafka's read_committed consumer logic, and ``PartitionLog`` lookups."""

from __future__ import annotations

from pathlib import Path

from kwire.log import (
    AbortedTxn,
    LogWriter,
    PartitionLog,
    TimestampAndOffset,
    committed_batches,
    is_abort_marker,
    scan_batches,
)
from kwire.records import BatchBuilder, build_end_txn_marker


def data(base: int, n: int, pid: int = -1, txn: bool = False, ts: int = 0) -> bytes:
    b = BatchBuilder(
        base_offset=base,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        is_transactional=txn,
    )
    for i in range(n):
        b.append(timestamp=ts + i, value=b"%d" % (base + i))
    return b.build()


def marker(offset: int, pid: int, commit: bool) -> bytes:
    return build_end_txn_marker(
        commit, offset=offset, producer_id=pid, producer_epoch=0, coordinator_epoch=1
    )


A, B, C = 100, 200, 300
LOG = b"".join(
    [
        data(0, 3, A, txn=True),
        data(3, 3, A, txn=True),
        marker(6, A, commit=False),
        data(7, 2, B),  # idempotent, not transactional
        data(9, 2, A, txn=True),
        marker(11, A, commit=True),
        data(12, 2, C, txn=True),
        data(14, 1, A, txn=True),
        marker(15, C, commit=False),
        marker(16, A, commit=True),
        data(17, 1),  # no producer id at all
    ]
)
ABORTED = [AbortedTxn(A, 0, 6, 0), AbortedTxn(C, 12, 15, 12)]


def test_read_committed_drops_aborted_data_and_control_batches() -> None:
    kept = committed_batches(scan_batches(LOG), ABORTED)
    assert [b.base_offset for b in kept] == [7, 9, 14, 17]


def test_keep_control_keeps_the_markers() -> None:
    kept = committed_batches(scan_batches(LOG), ABORTED, keep_control=True)
    assert [b.base_offset for b in kept] == [6, 7, 9, 11, 14, 15, 16, 17]


def test_without_aborted_transactions_everything_but_control_is_returned() -> None:
    kept = committed_batches(scan_batches(LOG), [])
    assert [b.base_offset for b in kept] == [0, 3, 7, 9, 12, 14, 17]


def test_a_producer_aborting_again_after_committing() -> None:
    log = b"".join(
        [
            data(0, 1, A, txn=True),
            marker(1, A, commit=True),
            data(2, 1, A, txn=True),
            marker(3, A, commit=False),
            data(4, 1, A, txn=True),
            marker(5, A, commit=True),
        ]
    )
    kept = committed_batches(scan_batches(log), [AbortedTxn(A, 2, 3, 2)])
    assert [b.base_offset for b in kept] == [0, 4]


def test_is_abort_marker() -> None:
    batches = list(scan_batches(LOG))
    assert [b.base_offset for b in batches if is_abort_marker(b)] == [6, 15]


def test_partition_log_across_segments(tmp_path: Path) -> None:
    with LogWriter(
        tmp_path, "p-q", 1, segment_bytes=300, index_interval_bytes=50, fsync=False
    ) as w:
        for i in range(12):
            w.append(data(w.next_offset, 2, ts=1000 + 100 * i))
    log = PartitionLog(tmp_path / "p-q-1")
    assert (log.topic, log.partition) == ("p-q", 1)
    assert len(log.segments) > 2 and log.start_offset == 0
    assert log.next_offset() == 24
    for offset in (0, 5, 11, 23):
        seg, pos = log.position_of(offset)  # type: ignore[misc]
        assert log.segment_for_offset(offset) == seg
        with log.open(seg) as s:
            found = next(iter(s.scan(pos)))
            assert found.base_offset <= offset <= found.last_offset
    assert log.position_of(24) is None
    # Kafka's offsetsForTimes: the first record with timestamp >= the target.
    hit = log.offset_for_timestamp(1250)
    assert hit is not None and hit[1].offset == 6 and hit[1].timestamp == 1300
    seg, found = log.offset_for_timestamp(0)  # type: ignore[misc]
    assert found == TimestampAndOffset(1000, 0, 0) and seg == log.segments[0]
    assert log.offset_for_timestamp(1101)[1].offset == 3  # type: ignore[index]
    assert log.offset_for_timestamp(99999) is None
    assert log.segment_for_offset(-1) is None
    assert log.metadata() is None
    # A snapshot at each roll (named by the new segment's base offset) and one at close.
    snapshots = list(log.producer_snapshots())
    assert [o for o, _ in snapshots] == [s.base_offset for s in log.segments[1:]] + [24]
    assert all(snap.entries == () for _, snap in snapshots)  # no producer ids in this log


def test_starting_in_the_middle_ignores_transactions_that_already_ended() -> None:
    # Start reading at offset 7: A's aborted txn (0..6) ended before; its later committed
    # transactional batches (9, 14) must not be dropped even if the caller passes that txn.
    mid = scan_batches(LOG, start=next(b.position for b in scan_batches(LOG) if b.base_offset == 7))
    kept = committed_batches(mid, ABORTED)
    assert [b.base_offset for b in kept] == [7, 9, 14, 17]
    # Starting inside C's aborted transaction (12..15) still drops its data.
    inside = scan_batches(
        LOG, start=next(b.position for b in scan_batches(LOG) if b.base_offset == 12)
    )
    assert [b.base_offset for b in committed_batches(inside, ABORTED)] == [14, 17]
