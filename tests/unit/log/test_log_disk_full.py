"""A full disk at each write site of the log layer (issue 21, item 3).

Kafka's rule (``UnifiedLog.maybeHandleIOException``, ``LogDirFailureChannel``): an I/O error takes
the log directory offline; nothing more is read or written (so nothing more is acknowledged);
the next start recovers, truncating a torn write (``LogLoader``). Each test fills the disk for
one kind of file while a partition is appended to (rolls, checkpoints, snapshots, leader epochs,
deletions all happening), gives the space back at once, and checks: the failure is a
``KafkaStorageError``, every later call fails the same way, no checkpoint or clean-shutdown
marker is written, and after a restart exactly the acknowledged records are there, whole, and
the log takes new appends that read back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from diskfaults import DiskFull

from kwire.errors import KafkaStorageError, KwireError
from kwire.log._datadir import CLEAN_SHUTDOWN_FILE
from kwire.log.storage import DataDir, LiveLog, LogConfig
from kwire.records import Compression, build_batch, read_batches

NOW = 1_700_000_000_000
ARM_AT = 8
ROUNDS = 30


def _log(p: str) -> bool:
    return p.endswith(".log")


#: site -> (the files whose writes fail, the calls that fail)
SITES: dict[str, tuple[object, frozenset[str]]] = {
    "segment append": (_log, frozenset({"write"})),
    "offset index append": (lambda p: p.endswith(".index"), frozenset({"write"})),
    "time index append": (lambda p: p.endswith(".timeindex"), frozenset({"write"})),
    "new segment (roll)": (_log, frozenset({"create"})),
    "segment fsync (flush)": (_log, frozenset({"fsync"})),
    "producer snapshot": (lambda p: ".snapshot" in p, frozenset({"open"})),
    "leader epoch checkpoint": (lambda p: "leader-epoch-checkpoint" in p, frozenset({"open"})),
    "recovery-point checkpoint": (
        lambda p: "recovery-point-offset-checkpoint" in p,
        frozenset({"open"}),
    ),
    "log-start-offset checkpoint": (
        lambda p: "log-start-offset-checkpoint" in p,
        frozenset({"open"}),
    ),
    "replication-offset checkpoint": (
        lambda p: "replication-offset-checkpoint" in p,
        frozenset({"open"}),
    ),
    "segment deletion": (_log, frozenset({"replace"})),
}

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=0, flush_messages=4)


def _batch(i: int) -> tuple[bytes, list[bytes]]:
    values = [b"v%03d-%d" % (i, j) for j in range(3)]
    return build_batch([(None, NOW + i, b"k", v) for v in values], 2, Compression.NONE), values


def _records(lg: LiveLog) -> dict[int, bytes]:
    """Offset -> value of every record from the log start, every batch CRC-checked."""
    out: dict[int, bytes] = {}
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        data = lg.read(offset, 1 << 24).read_bytes()  # one segment's batches at a time
        assert data, f"nothing readable at {offset}"
        for batch in read_batches(data, verify_crc=True):
            for record in batch:
                if record.offset >= lg.log_start_offset:
                    assert record.value is not None
                    out[record.offset] = bytes(record.value)
            offset = batch.last_offset + 1
    return out


def _round(dd: DataDir, lg: LiveLog, i: int, acked: dict[int, bytes]) -> None:
    """One round of a broker's work on the partition: an append (leader epoch bumped every
    4 rounds), the checkpoints, and every 6 rounds a DeleteRecords that retires segments."""
    data, values = _batch(i)
    info = lg.append_as_leader(data, now_ms=NOW + i, leader_epoch=i // 4)
    lg.high_watermark = lg.log_end_offset
    acked.update({info.first_offset + j: v for j, v in enumerate(values)})
    dd.write_checkpoints([lg])
    if i % 6 == 5:
        lg.delete_records_before(lg.high_watermark - 3)


@pytest.mark.parametrize("site", list(SITES))
def test_a_full_disk_takes_the_log_dir_offline_and_loses_nothing_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: str
) -> None:
    match, calls = SITES[site]
    root = tmp_path / "data"
    dd = DataDir.open(root, cluster_id="c", node_id=1)
    lg = dd.open_log("t", 0, CONFIG, now_ms=NOW)
    disk = DiskFull(monkeypatch, match, calls)  # type: ignore[arg-type]
    acked: dict[int, bytes] = {}
    errors: list[Exception] = []
    first: int | None = None
    for i in range(ROUNDS):
        disk.armed = i >= ARM_AT and first is None
        before = dict(acked)
        try:
            _round(dd, lg, i, acked)
        except (OSError, KwireError) as exc:
            errors.append(exc)
            disk.armed = False  # the space comes back at once
            if first is None:
                first = i
            else:
                assert acked == before, f"round {i} acknowledged records after the failure"
    assert disk.hits, f"{site}: the write site was never reached"
    assert first is not None, f"{site}: the failure went unnoticed"
    assert all(isinstance(e, KafkaStorageError) for e in errors), errors
    # Once offline, nothing more is acknowledged or read, however much space there is.
    assert len(errors) == ROUNDS - first
    assert lg.offline and dd.offline
    with pytest.raises(KafkaStorageError):
        lg.read(lg.log_start_offset, 1 << 20)
    # A broker with its only log dir offline stops without writing anything.
    dd.close([lg])
    assert not (root / CLEAN_SHUTDOWN_FILE).exists()
    assert not [n for n in os.listdir(root) if n.endswith(".tmp")]
    # The next start recovers: exactly the acknowledged records, whole; appends work again.
    dd2 = DataDir.open(root, cluster_id="c", node_id=1)
    lg2 = dd2.open_log("t", 0, CONFIG, now_ms=NOW + 100)
    try:
        start = lg2.log_start_offset
        assert _records(lg2) == {o: v for o, v in acked.items() if o >= start}
        assert lg2.log_end_offset == max(acked) + 1
        data, values = _batch(99)
        info = lg2.append_as_leader(data, now_ms=NOW + 200, leader_epoch=99)
        lg2.high_watermark = lg2.log_end_offset
        got = _records(lg2)
        assert [got[info.first_offset + j] for j in range(3)] == values
    finally:
        dd2.close([lg2])


def test_a_log_opened_alone_goes_offline_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``LiveLog`` without a data dir has a failure channel of its own."""
    a = LiveLog.open(tmp_path / "a-0", CONFIG, now_ms=NOW)
    b = LiveLog.open(tmp_path / "b-0", CONFIG, now_ms=NOW)
    disk = DiskFull(
        monkeypatch, lambda p: "/a-0/" in p and p.endswith(".log"), frozenset({"write"})
    )
    disk.armed = True
    with pytest.raises(KafkaStorageError) as failed:
        a.append_as_leader(_batch(0)[0], now_ms=NOW)
    assert failed.value.error_code == 56 and failed.value.error_name == "KAFKA_STORAGE_ERROR"
    disk.armed = False
    b.append_as_leader(_batch(1)[0], now_ms=NOW)
    assert a.offline and not b.offline
    a.close()
    b.close()
    a2 = LiveLog.open(tmp_path / "a-0", CONFIG, now_ms=NOW)
    assert a2.log_end_offset == 0 and a2.size_in_bytes() == 0
    a2.close()


def test_a_full_disk_under_the_log_cleaner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cleaner's ``.cleaned`` files: the directory goes offline (Kafka's ``CleanerThread``),
    the log keeps every record it had, and the next start deletes the leftovers."""
    from kwire.log.storage import LogCleaner

    config = LogConfig(segment_bytes=600, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
    root = tmp_path / "data"
    dd = DataDir.open(root, cluster_id="c", node_id=1)
    lg = dd.open_log("t", 0, config, now_ms=NOW)
    acked: dict[int, bytes] = {}
    for i in range(40):
        data, values = _batch(i)
        info = lg.append_as_leader(data, now_ms=NOW + i)
        acked.update({info.first_offset + j: v for j, v in enumerate(values)})
    lg.roll()
    lg.high_watermark = lg.log_end_offset
    disk = DiskFull(monkeypatch, lambda p: ".cleaned" in p)
    disk.armed = True
    with pytest.raises(KafkaStorageError):
        LogCleaner().clean_one([lg], NOW + 1000)
    disk.armed = False
    assert disk.hits and dd.offline
    dd.close([lg])
    dd2 = DataDir.open(root, cluster_id="c", node_id=1)
    lg2 = dd2.open_log("t", 0, config, now_ms=NOW + 100)
    try:
        assert _records(lg2) == acked
        assert not [n for n in os.listdir(root / "t-0") if ".cleaned" in n or ".swap" in n]
    finally:
        dd2.close([lg2])


def test_a_full_disk_under_an_abort_marker_and_its_txnindex_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.txnindex``: the ABORT marker whose index entry cannot be written is undone whole; the
    transaction is still open after the restart (Kafka's coordinator writes the marker again)."""
    from kwire.records import AppendOrigin, BatchBuilder, build_end_txn_marker

    builder = BatchBuilder(
        base_offset=0, producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    for i in range(3):
        builder.append(None, NOW, b"k", b"txn-%d" % i)
    root = tmp_path / "data"
    dd = DataDir.open(root, cluster_id="c", node_id=1)
    lg = dd.open_log("t", 0, CONFIG, now_ms=NOW)
    lg.append_as_leader(builder.build(), now_ms=NOW)
    marker = build_end_txn_marker(
        False, coordinator_epoch=1, producer_id=5, producer_epoch=0, timestamp=NOW
    )
    disk = DiskFull(monkeypatch, lambda p: p.endswith(".txnindex"))
    disk.armed = True
    with pytest.raises(KafkaStorageError):
        lg.append_as_leader(marker, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
    disk.armed = False
    assert disk.hits
    dd.close([lg])
    dd2 = DataDir.open(root, cluster_id="c", node_id=1)
    lg2 = dd2.open_log("t", 0, CONFIG, now_ms=NOW)
    try:
        assert lg2.log_end_offset == 3 and lg2.first_unstable_offset() == 0
        assert lg2.collect_aborted_transactions(0, 10) == []
        info = lg2.append_as_leader(marker, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
        assert info.first_offset == 3 and lg2.first_unstable_offset() is None
        assert [t.first_offset for t in lg2.collect_aborted_transactions(0, 10)] == [0]
    finally:
        dd2.close([lg2])
