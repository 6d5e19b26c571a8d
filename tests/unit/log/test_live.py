"""``LiveLog`` against Kafka's ``UnifiedLog`` / ``LogSegment`` / ``LogLoader`` rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kwire.log import (
    LogWriter,
    OffsetIndex,
    OffsetOutOfRangeError,
    PartitionLog,
    list_log_dir,
    open_segment,
    read_leader_epoch_checkpoint,
    read_producer_snapshot,
    read_txn_index,
    walk_offset_index,
    walk_time_index,
)
from kwire.log.storage import FetchDataInfo, LiveLog, LogConfig, ProducerStateError
from kwire.records import (
    AppendError,
    AppendOrigin,
    BatchBuilder,
    build_end_txn_marker,
    read_batches,
)

NOW = 1_700_000_000_000


def batch(
    n: int = 3,
    ts: int = NOW,
    value_size: int = 30,
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    txn: bool = False,
    base: int = 0,
) -> bytes:
    b = BatchBuilder(
        base_offset=base,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
    )
    for i in range(n):
        b.append(timestamp=ts + i, key=None, value=b"v" * value_size)
    return b.build()


def open_log(tmp_path: Path, config: LogConfig | None = None, **kw: object) -> LiveLog:
    return LiveLog.open(
        tmp_path / "t-0",
        config or LogConfig(),
        now_ms=NOW,
        **kw,  # type: ignore[arg-type]
    )


def offsets_of(info: FetchDataInfo) -> list[int]:
    return [r.offset for b in read_batches(info.read_bytes()) for r in b]


def test_append_read_across_rolls(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=1000, index_interval_bytes=100)
    log = open_log(tmp_path, cfg)
    for i in range(40):
        info = log.append_as_leader(batch(3, NOW + i), now_ms=NOW + i, leader_epoch=5)
        assert info.first_offset == 3 * i and info.last_offset == 3 * i + 2
        assert not info.duplicate
    assert log.log_end_offset == 120
    assert len(log.segment_base_offsets) > 3
    seen: list[int] = []
    offset = 0
    while offset < log.log_end_offset:
        got = log.read(offset, 250)
        assert got.size > 0
        offs = offsets_of(got)
        assert offs[0] <= offset
        seen += [o for o in offs if o >= offset]
        offset = offs[-1] + 1
    assert seen == list(range(120))
    # read in the middle of a batch returns the whole batch
    mid = log.read(4, 1)
    assert offsets_of(mid) == [3, 4, 5]
    assert log.read(4, 1, min_one_message=False).size == 0
    assert log.read(120, 100).size == 0
    assert offsets_of(log.read(0, 10_000, max_offset=6)) == [0, 1, 2, 3, 4, 5]
    assert log.read(0, 10_000, max_offset=0).size == 0
    with pytest.raises(OffsetOutOfRangeError) as exc:
        log.read(121, 100)
    assert exc.value.error_code == 1
    # iter_batches walks every segment in order, in small chunks or large
    for chunk in (1, 250, 1 << 20):
        walked = [b.base_offset for b in log.iter_batches(chunk_bytes=chunk)]
        assert walked == list(range(0, 120, 3))
    assert [b.base_offset for b in log.iter_batches(61)][:2] == [60, 63]
    log.close()


def test_index_entries_match_log_writer(tmp_path: Path) -> None:
    batches = [batch(2 + i % 3, NOW + 7 * i, 20 + 13 * i) for i in range(60)]
    cfg = LogConfig(segment_bytes=4000, index_interval_bytes=300)
    live = LiveLog.open(tmp_path / "a" / "t-0", cfg, now_ms=NOW)
    for b in batches:
        live.append_as_leader(b, now_ms=NOW, leader_epoch=-1)
    live.close()
    with LogWriter(tmp_path / "b", "t", 0, segment_bytes=4000, index_interval_bytes=300) as w:
        next_offset = 0
        for b in batches:
            builder_out = next(iter(read_batches(b)))
            n = builder_out.record_count
            w.append(batch_at(b, next_offset))
            next_offset += n
    [pa] = list_log_dir(tmp_path / "a")
    [pb] = list_log_dir(tmp_path / "b")
    assert [s.base_offset for s in pa.segments] == [s.base_offset for s in pb.segments]
    for sa, sb in zip(pa.segments, pb.segments, strict=True):
        for attr in ("log", "index", "timeindex"):
            assert Path(getattr(sa, attr)).read_bytes() == Path(getattr(sb, attr)).read_bytes()


def batch_at(data: bytes, base: int) -> bytes:
    """Re-base a v2 batch (base offset is outside the CRC)."""
    return base.to_bytes(8, "big", signed=True) + data[8:]


def test_read_active_segment_while_growing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2), now_ms=NOW)
    first = log.read(0, 1 << 20)
    log.append_as_leader(batch(2), now_ms=NOW)
    assert offsets_of(first) == [0, 1]
    assert offsets_of(log.read(0, 1 << 20)) == [0, 1, 2, 3]
    assert offsets_of(log.read(2, 1 << 20)) == [2, 3]
    s = log.read(2, 1 << 20).slices[0]
    assert os.pread(s.fd, s.size, s.position) == log.read(2, 1 << 20).read_bytes()
    log.close()


def test_recovery_truncates_torn_tail(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = LogConfig(segment_bytes=2000, index_interval_bytes=100)
    log = open_log(tmp_path, cfg)
    for i in range(30):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
    end = log.log_end_offset
    bases = log.segment_base_offsets
    active = Path(log.path) / f"{bases[-1]:020d}.log"
    # crash: no close; the last batch is torn
    del log
    size = active.stat().st_size
    os.truncate(active, size - 10)
    log = open_log(tmp_path, cfg)
    assert log.log_end_offset == end - 2
    assert "truncated" in caplog.text
    info = log.append_as_leader(batch(2), now_ms=NOW)
    assert info.first_offset == end - 2
    assert offsets_of(log.read(end - 4, 1 << 20)) == [end - 4, end - 3, end - 2, end - 1]
    log.close()
    # indexes of the recovered segment equal a rebuild from scratch
    with open_segment(active) as seg:
        assert seg.offset_index is not None
    log2 = open_log(tmp_path, cfg)
    assert log2.log_end_offset == end
    log2.close()


def test_recovery_of_garbage_tail_and_index_rebuild(tmp_path: Path) -> None:
    cfg = LogConfig(index_interval_bytes=50)
    log = open_log(tmp_path, cfg)
    for i in range(10):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
    path = Path(log.path)
    index_before = (path / f"{0:020d}.index").read_bytes()
    log.close()
    with open(path / f"{0:020d}.log", "ab") as f:
        f.write(b"\x00" * 100)  # a preallocated-looking tail
    (path / f"{0:020d}.index").write_bytes(b"\xff" * 16)
    log = open_log(tmp_path, cfg)
    assert log.log_end_offset == 20
    assert (path / f"{0:020d}.index").read_bytes() == index_before
    assert len(OffsetIndex((path / f"{0:020d}.index").read_bytes(), 0)) > 0
    log.close()


def test_retention_by_size_and_time(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=500, retention_bytes=1200, file_delete_delay_ms=0)
    log = open_log(tmp_path, cfg)
    for i in range(30):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
        log.high_watermark = log.log_end_offset  # a single node's high watermark
    total = log.size_in_bytes()
    assert total > 1200
    deleted = log.enforce_retention(NOW)
    assert deleted > 0
    assert log.size_in_bytes() <= 1200 + 500
    assert log.log_start_offset == log.segment_base_offsets[0]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert not [n for n in os.listdir(log.path) if n.endswith(".deleted")]
    # time: everything older than retention.ms goes, the log keeps an empty active segment
    log.update_config(LogConfig(segment_bytes=500, retention_ms=1000, file_delete_delay_ms=0))
    end = log.log_end_offset
    assert log.high_watermark == end
    log.enforce_retention(NOW + 10_000)
    assert log.log_start_offset == end == log.log_end_offset
    assert log.segment_base_offsets == [end]
    assert log.append_as_leader(batch(1), now_ms=NOW).first_offset == end
    log.close()


def test_retention_respects_high_watermark(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=500, retention_ms=1000, file_delete_delay_ms=0)
    log = open_log(tmp_path, cfg)
    for i in range(10):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
    log.high_watermark = 0
    assert log.enforce_retention(NOW + 10_000) == 0
    log.high_watermark = log.log_end_offset
    assert log.enforce_retention(NOW + 10_000) > 0
    log.close()


def test_delete_records(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=500, file_delete_delay_ms=1000)
    log = open_log(tmp_path, cfg)
    for i in range(20):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
    log.high_watermark = 30
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(31)
    assert log.delete_records_before(25) == 25
    assert log.log_start_offset == 25
    assert log.segment_base_offsets[0] <= 25
    assert all(b <= 25 for b in log.segment_base_offsets[:1])
    with pytest.raises(OffsetOutOfRangeError):
        log.read(24, 100)
    assert offsets_of(log.read(25, 1 << 20))[0] <= 25
    pending = [n for n in os.listdir(log.path) if n.endswith(".deleted")]
    assert pending
    log.delete_pending_files(NOW + 5000)
    assert not [n for n in os.listdir(log.path) if n.endswith(".deleted")]
    assert log.offset_for_timestamp(-2) == (25, -1, 0)
    log.close()
    reopened = open_log(tmp_path, cfg, log_start_offset=25)
    assert reopened.log_start_offset == 25
    reopened.close()


def test_idempotent_producer(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    a = log.append_as_leader(batch(3, pid=7, epoch=0, seq=0), now_ms=NOW)
    b = log.append_as_leader(batch(2, pid=7, epoch=0, seq=3), now_ms=NOW)
    assert (a.first_offset, a.last_offset, b.first_offset, b.last_offset) == (0, 2, 3, 4)
    dup = log.append_as_leader(batch(3, pid=7, epoch=0, seq=0), now_ms=NOW)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (0, 2)
    assert log.log_end_offset == 5
    with pytest.raises(ProducerStateError) as gap:
        log.append_as_leader(batch(1, pid=7, epoch=0, seq=9), now_ms=NOW)
    assert gap.value.error_code == 45
    assert gap.value.error_name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    c = log.append_as_leader(batch(1, pid=7, epoch=1, seq=0), now_ms=NOW)
    assert c.first_offset == 5
    with pytest.raises(ProducerStateError) as stale:
        log.append_as_leader(batch(1, pid=7, epoch=0, seq=5), now_ms=NOW)
    assert stale.value.error_code == 47
    with pytest.raises(ProducerStateError) as new_epoch:
        log.append_as_leader(batch(1, pid=7, epoch=2, seq=4), now_ms=NOW)
    assert new_epoch.value.error_code == 45
    # an unknown producer may start anywhere (KIP-360, Kafka >= 2.5)
    assert log.append_as_leader(batch(1, pid=8, epoch=0, seq=42), now_ms=NOW).first_offset == 6
    # int32 wrap-around
    log.append_as_leader(batch(1, pid=9, epoch=0, seq=2**31 - 1), now_ms=NOW)
    assert not log.append_as_leader(batch(1, pid=9, epoch=0, seq=0), now_ms=NOW).duplicate
    # rejected appends leave nothing behind
    assert log.log_end_offset == 9
    state = log.producer_state()
    assert state[7].producer_epoch == 1 and state[7].last_seq == 0
    log.close()


def test_producer_state_survives_close_and_crash(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=400)
    log = open_log(tmp_path, cfg)
    seq = 0
    for _ in range(10):
        log.append_as_leader(batch(2, pid=7, epoch=3, seq=seq), now_ms=NOW)
        seq += 2
    log.close()
    snaps = [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".snapshot")]
    assert f"{20:020d}.snapshot" in snaps
    log = open_log(tmp_path, cfg, recovery_point=20, clean_shutdown=True)
    dup = log.append_as_leader(batch(2, pid=7, epoch=3, seq=18), now_ms=NOW)
    assert dup.duplicate and dup.first_offset == 18
    log.append_as_leader(batch(2, pid=7, epoch=3, seq=20), now_ms=NOW)
    del log  # crash: no close, no snapshot at the end
    for n in os.listdir(tmp_path / "t-0"):
        if n.endswith(".snapshot"):
            os.remove(tmp_path / "t-0" / n)
    log = open_log(tmp_path, cfg)
    assert log.log_end_offset == 22
    dup = log.append_as_leader(batch(2, pid=7, epoch=3, seq=20), now_ms=NOW)
    assert dup.duplicate and dup.first_offset == 20
    with pytest.raises(ProducerStateError):
        log.append_as_leader(batch(2, pid=7, epoch=3, seq=30), now_ms=NOW)
    assert log.append_as_leader(batch(2, pid=7, epoch=3, seq=22), now_ms=NOW).first_offset == 22
    log.close()


def test_transactions_and_txn_index(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2, pid=5, epoch=0, seq=0, txn=True), now_ms=NOW)
    log.append_as_leader(batch(1), now_ms=NOW)
    assert log.first_unstable_offset() == 0
    with pytest.raises(ProducerStateError) as bad:
        log.append_as_leader(batch(1, pid=5, epoch=0, seq=2), now_ms=NOW)
    assert bad.value.error_code == 48
    marker = build_end_txn_marker(
        False, coordinator_epoch=1, producer_id=5, producer_epoch=0, timestamp=NOW
    )
    with pytest.raises(AppendError):
        log.append_as_leader(marker, now_ms=NOW)  # clients may not write control batches
    info = log.append_as_leader(marker, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
    assert info.first_offset == 3
    assert log.first_unstable_offset() is None
    aborted = log.collect_aborted_transactions(0, 10)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(5, 0, 3)]
    path = Path(log.path) / f"{0:020d}.txnindex"
    assert [t.last_stable_offset for t in read_txn_index(path.read_bytes())] == [4]
    log.close()
    # rebuilt by recovery
    path.unlink()
    log = open_log(tmp_path)
    assert [t.first_offset for t in log.collect_aborted_transactions(0, 10)] == [0]
    assert read_txn_index(path.read_bytes())[0].last_offset == 3
    log.close()


def test_leader_epochs_and_list_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=400))
    for i in range(6):
        log.append_as_leader(batch(2, NOW + 10 * i), now_ms=NOW, leader_epoch=1 if i < 3 else 4)
    assert log.leader_epochs == [(1, 0), (4, 6)]
    text = (Path(log.path) / "leader-epoch-checkpoint").read_text()
    assert text == "0\n2\n1 0\n4 6\n"
    assert read_leader_epoch_checkpoint(text)[1].start_offset == 6
    assert log.end_offset_for_epoch(4) == (4, 12)
    assert log.end_offset_for_epoch(1) == (1, 6)
    assert log.end_offset_for_epoch(2) == (1, 6)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(9) == (-1, -1)
    assert log.offset_for_timestamp(NOW + 21) == (5, NOW + 21, 1)
    assert log.offset_for_timestamp(NOW + 22) == (6, NOW + 30, 4)
    assert log.offset_for_timestamp(NOW + 1000) is None
    assert log.offset_for_timestamp(-1) == (12, -1, 4)
    assert log.max_timestamp_and_offset() == (11, NOW + 51, 4)
    log.close()


def test_segments_readable_by_partition_log(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=600, index_interval_bytes=100))
    for i in range(20):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
    log.close()
    [part] = list_log_dir(tmp_path)
    plog = PartitionLog(part)
    assert plog.next_offset() == 40
    assert len(plog.segments) > 2
    offsets = []
    for files in plog.segments:
        with plog.open(files) as seg:
            offsets += [r.offset for b in seg.batches() for r in b]
            assert seg.offset_index.problems == [] and seg.time_index.problems == []
            assert seg.time_index.max_timestamp == max(b.max_timestamp for b in seg.batches())
        assert files.index and files.timeindex
        index, data = Path(files.index).read_bytes(), Path(files.log).read_bytes()
        checks = walk_offset_index(index, data, files.base_offset)
        assert checks and all(c.matches for c in checks)
        times = walk_time_index(Path(files.timeindex).read_bytes(), index, data, files.base_offset)
        assert times and all(t.log_offset == t.entry.offset for t in times)
    assert offsets == list(range(40))
    assert plog.offset_for_timestamp(NOW + 7) is not None


def test_open_writes_partition_metadata(tmp_path: Path) -> None:
    tid = bytes(range(16))
    log = open_log(tmp_path, topic_id=tid)
    assert log.topic_id == tid
    log.close()
    assert open_log(tmp_path).topic_id == tid
    with pytest.raises(ValueError):
        open_log(tmp_path, topic_id=bytes(16))


def test_delete(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(1), now_ms=NOW)
    log.delete()
    assert os.listdir(tmp_path) == []


def test_flush_messages(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(flush_messages=4))
    log.append_as_leader(batch(2), now_ms=NOW)
    assert log.recovery_point == 0
    log.append_as_leader(batch(2), now_ms=NOW)
    assert log.recovery_point == 4
    log.close()


def test_segment_ms_roll(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_ms=1000))
    log.append_as_leader(batch(1, NOW), now_ms=NOW)
    log.append_as_leader(batch(1, NOW + 500), now_ms=NOW + 500)
    assert log.segment_base_offsets == [0]
    log.append_as_leader(batch(1, NOW + 1500), now_ms=NOW + 1500)
    assert log.segment_base_offsets == [0, 2]
    log.close()


def test_idle_segment_rolls_only_on_the_next_append(tmp_path: Path) -> None:
    """``segment.ms`` rolls in ``UnifiedLog.append`` (``maybeRoll``), never on a timer: an idle
    partition keeps its active segment, whatever the broker's housekeeping does meanwhile, so a
    compacted topic's last records stay uncleaned until something is written after them."""
    log = open_log(tmp_path, LogConfig(segment_ms=1000, file_delete_delay_ms=10))
    log.append_as_leader(batch(1, NOW), now_ms=NOW)
    log.delete_pending_files(NOW + 3000)
    log.delete_pending_files(NOW + 10_000)
    assert log.segment_base_offsets == [0]
    log.append_as_leader(batch(1, NOW + 10_000), now_ms=NOW + 10_000)
    assert log.segment_base_offsets == [0, 1]
    log.close()


def test_record_errors_raise_before_write(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(segment_bytes=100))
    with pytest.raises(Exception) as exc:
        log.append_as_leader(batch(5, value_size=200), now_ms=NOW)
    assert getattr(exc.value, "error_code", None) in (10, 18)
    assert log.log_end_offset == 0 and log.size_in_bytes() == 0
    log.close()


def test_flush_ms_and_delete_records_to_end(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(flush_ms=1000, segment_bytes=300))
    for _ in range(5):
        log.append_as_leader(batch(2), now_ms=NOW)
    assert log.recovery_point < 10
    log.maybe_flush(NOW + 500)
    assert log.recovery_point < 10
    log.maybe_flush(NOW + 1000)
    assert log.recovery_point == 10
    log.high_watermark = 10
    active = log.segment_base_offsets[-1]
    assert log.delete_records_before(10) == 10
    # as Kafka, the active segment stays (deleteLogStartOffsetBreachedSegments)
    assert log.segment_base_offsets == [active]
    assert log.read(10, 100).size == 0
    log.close()


def _snapshot_pids(path: Path, offset: int) -> list[int]:
    data = (path / "t-0" / f"{offset:020d}.snapshot").read_bytes()
    return [e.producer_id for e in read_producer_snapshot(data).entries]


def test_producer_id_expiration(tmp_path: Path) -> None:
    """``removeExpiredProducers``: idle (by the last batch's max timestamp) for the expiration
    time or longer, and no ongoing transaction; the next snapshot no longer holds them."""
    log = open_log(tmp_path, producer_id_expiration_ms=1000)
    log.append_as_leader(batch(1, NOW, pid=7, epoch=0, seq=0), now_ms=NOW)
    log.append_as_leader(batch(1, NOW, pid=8, epoch=0, seq=0, txn=True), now_ms=NOW)
    log.append_as_leader(batch(3, NOW + 498, pid=9, epoch=0, seq=0), now_ms=NOW)  # max: +500
    assert log.remove_expired_producers(NOW + 999) == []
    assert log.remove_expired_producers(NOW + 1000) == [7]
    assert sorted(log.producer_state()) == [8, 9]  # 8: its transaction is open
    assert log.remove_expired_producers(NOW + 1500) == [9]
    assert sorted(log.producer_state()) == [8]
    # an expired producer is an unknown one: any sequence is accepted (Kafka >= 2.5)
    assert not log.append_as_leader(batch(1, NOW, pid=9, epoch=0, seq=3), now_ms=NOW).duplicate
    log.remove_expired_producers(NOW + 1500)
    log.close()
    assert _snapshot_pids(tmp_path, 6) == [8]
    # restart: they stay gone (even without expiration configured)
    log = open_log(tmp_path, recovery_point=6, clean_shutdown=True)
    assert sorted(log.producer_state()) == [8]
    log.close()


def test_producer_id_expiration_when_loading_a_snapshot(tmp_path: Path) -> None:
    """``loadFromSnapshot`` leaves out the entries expired by then; no expiration: all kept."""
    log = open_log(tmp_path)
    log.append_as_leader(batch(1, NOW, pid=7, epoch=0, seq=0), now_ms=NOW)
    log.append_as_leader(batch(1, NOW, pid=8, epoch=0, seq=0, txn=True), now_ms=NOW)
    assert log.remove_expired_producers(NOW + 10**12) == []  # not configured
    log.close()
    assert _snapshot_pids(tmp_path, 2) == [7, 8]
    later = LiveLog.open(
        tmp_path / "t-0",
        LogConfig(),
        now_ms=NOW + 1000,
        recovery_point=2,
        clean_shutdown=True,
        producer_id_expiration_ms=1000,
    )
    assert sorted(later.producer_state()) == [8]
    later.close()
