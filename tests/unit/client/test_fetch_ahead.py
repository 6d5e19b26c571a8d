"""The fetch pipeline's bookkeeping without I/O: what an answer's batch headers say
(``scan_fetched``), where the fetch kept in flight ahead goes (``fetch_ahead``), and the rows."""

from __future__ import annotations

from kwire.client._fetch import FetchedPartition, FetchedRange, fetch_ahead, scan_fetched
from kwire.protocol import ErrorCode
from kwire.records import BatchBuilder, Compression, build_end_txn_marker

COLUMNS = ("offset", "value")


def batch(base: int, count: int, *, producer_id: int = -1, txn: bool = False) -> bytes:
    builder = BatchBuilder(
        2,
        Compression.LZ4,
        base_offset=base,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        is_transactional=txn,
    )
    for i in range(count):
        builder.append(base + i, 1_700_000_000_000 + i, None, b"v%d" % (base + i))
    return builder.build()


def answer(data: bytes, aborted: list[tuple[int, int]] | None = None) -> FetchedPartition:
    return FetchedPartition(
        topic="t",
        partition=0,
        error=ErrorCode.NONE,
        high_watermark=1000,
        last_stable_offset=1000,
        log_start_offset=0,
        aborted=aborted or [],
        records=memoryview(data),
    )


def test_scan_stops_before_the_partial_batch_the_broker_cut() -> None:
    whole = batch(10, 5) + batch(15, 5)
    tail = batch(20, 5)
    scan = scan_fetched(answer(whole + tail[:30]), start=12, read_committed=False)
    assert (scan.cut, scan.next_offset, scan.dropped, scan.has_control) == (
        len(whole),
        20,
        (),
        False,
    )
    rows = FetchedRange.from_partition(
        answer(whole + tail[:30]), start=12, end=None, columns=COLUMNS, read_committed=False
    )
    assert rows.next_offset == 20
    assert rows.rows.column("offset").to_pylist() == list(range(12, 20))  # before 12: cut


def test_scan_reports_control_and_aborted_batches() -> None:
    data = (
        batch(0, 3, producer_id=7, txn=True)
        + build_end_txn_marker(
            False, coordinator_epoch=0, producer_id=7, producer_epoch=0, offset=3
        )
        + batch(4, 2)
    )
    fetched = answer(data, aborted=[(7, 0)])
    scan = scan_fetched(fetched, start=0, read_committed=True)
    # the aborted batch and its ABORT marker are both left out
    assert (scan.next_offset, scan.dropped, scan.has_control) == (6, (0, 3), True)
    rows = FetchedRange.from_partition(
        fetched, start=0, end=None, columns=COLUMNS, read_committed=True, scan=scan
    )
    assert rows.rows.column("offset").to_pylist() == [4, 5]  # no aborted rows, no marker
    uncommitted = FetchedRange.from_partition(
        fetched, start=0, end=None, columns=COLUMNS, read_committed=False
    )
    assert uncommitted.rows.column("offset").to_pylist() == [0, 1, 2, 4, 5]


def test_rows_within_the_range_are_kept_whole_and_the_end_still_cuts() -> None:
    data = batch(0, 50) + batch(50, 50)
    whole = FetchedRange.from_partition(
        answer(data), start=0, end=100, columns=COLUMNS, read_committed=False
    )
    assert whole.rows.column("offset").to_pylist() == list(range(100))
    assert whole.rows.column("value").to_pylist()[99] == b"v99"
    cut = FetchedRange.from_partition(
        answer(data), start=0, end=73, columns=COLUMNS, read_committed=False
    )
    assert cut.rows.column("offset").to_pylist() == list(range(73))
    assert cut.next_offset == 100


def test_fetch_ahead_goes_where_the_answer_ends() -> None:
    # an answer fetched at 100 whose whole batches end at 250: fetch 250 while it is decoded
    assert fetch_ahead(100, 250, end=1000, limit=900) == 250
    assert fetch_ahead(100, 250, end=1000, limit=-1) == 250  # the broker gave no high watermark


def test_no_fetch_ahead_without_progress_at_the_range_end_or_at_the_high_watermark() -> None:
    assert fetch_ahead(100, 100, end=1000, limit=900) is None  # no whole batch: retried, counted
    assert fetch_ahead(100, 1000, end=1000, limit=2000) is None  # the range is done
    assert fetch_ahead(100, 1200, end=1000, limit=2000) is None  # the last batch passes the end
    # at the high watermark a fetch would wait fetch.max.wait.ms for records not there yet
    assert fetch_ahead(100, 900, end=1000, limit=900) is None
