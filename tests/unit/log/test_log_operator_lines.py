"""The lines ``kwire.log`` says at INFO about a log's files, with Kafka's wording where Kafka has
one (``LogManager.loadLogs``, ``LogLoader.recoverLog``, ``UnifiedLog.deleteOldSegments`` and its
``SegmentDeletionReason``s, ``UnifiedLog.maybeIncrementLogStartOffset``): one line a directory
at load, one line a recovered log (the per-segment detail at DEBUG), one line a retention pass
that deletes (whatever the number of segments) and one when the log start moves. A clean start
says nothing per log."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest

from kwire.log.storage import DataDir, LiveLog, LogConfig
from kwire.records import BatchBuilder

NOW = 1_700_000_000_000


def batch(n: int = 2, ts: int = NOW) -> bytes:
    b = BatchBuilder(base_offset=0)
    for i in range(n):
        b.append(timestamp=ts + i, key=None, value=b"v" * 30)
    return b.build()


def info_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "kwire.log" and r.levelno == logging.INFO
    ]


def filled(path: Path, config: LogConfig, batches: int) -> LiveLog:
    log = LiveLog.open(path, config, now_ms=NOW)
    for i in range(batches):
        log.append_as_leader(batch(2, NOW + i), now_ms=NOW)
        log.high_watermark = log.log_end_offset  # a single node's high watermark
    return log


def test_an_unclean_open_is_one_line_a_log_and_a_clean_one_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = LogConfig(segment_bytes=300)
    filled(tmp_path / "t-0", cfg, 10).close()
    caplog.set_level(logging.DEBUG, "kwire.log")
    again = LiveLog.open(tmp_path / "t-0", cfg, now_ms=NOW, recovery_point=8)
    segments = again.segment_base_offsets
    first = max(b for b in segments if b <= 8)
    recovered = [b for b in segments if b >= first]
    assert len(recovered) > 1
    assert info_lines(caplog) == [
        f"{again.path}: recovered {len(recovered)} unflushed segments from offset {first} "
        "(recovery point 8): log end offset 20"
    ]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    per_segment = [m for m in debug if "recovering unflushed segment" in m]
    assert per_segment == [
        f"{again.path}: recovering unflushed segment {b} ({i}/{len(recovered)} recovered)"
        for i, b in enumerate(recovered)
    ]
    again.close()
    caplog.clear()
    LiveLog.open(tmp_path / "t-0", cfg, now_ms=NOW, recovery_point=20, clean_shutdown=True).close()
    assert info_lines(caplog) == []


def test_retention_size_deletes_in_one_line_then_moves_the_log_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = LogConfig(segment_bytes=500, retention_bytes=1200, file_delete_delay_ms=0)
    log = filled(tmp_path / "t-0", cfg, 30)
    before = log.segment_base_offsets
    size = log.size_in_bytes()
    caplog.set_level(logging.INFO, "kwire.log")
    deleted = log.enforce_retention(NOW)
    gone = before[:deleted]
    assert deleted > 1
    deleting, moved = info_lines(caplog)
    found = re.fullmatch(
        rf"{re.escape(log.path)}: deleting {deleted} segments \[{', '.join(map(str, gone))}\] "
        r"\((\d+) bytes\) due to retention size 1200 breach: log size after deletion (\d+)",
        deleting,
    )
    assert found, deleting
    assert int(found.group(1)) == size - log.size_in_bytes()
    assert int(found.group(2)) == log.size_in_bytes()
    assert moved == (
        f"{log.path}: incremented log start offset to {log.segment_base_offsets[0]} "
        "due to segment deletion"
    )
    caplog.clear()
    assert log.enforce_retention(NOW) == 0
    assert info_lines(caplog) == []  # a pass that deletes nothing says nothing
    log.close()


def test_delete_records_says_why_the_log_start_moved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = filled(tmp_path / "t-0", LogConfig(segment_bytes=300, file_delete_delay_ms=0), 10)
    cut = log.segment_base_offsets[1] + 1  # inside the second segment: the first goes
    caplog.set_level(logging.INFO, "kwire.log")
    log.delete_records_before(cut)
    log.delete_records_before(cut)  # not moved: no line
    moved, deleting = info_lines(caplog)
    assert moved == (
        f"{log.path}: incremented log start offset to {cut} due to client delete records request"
    )
    assert deleting.startswith(f"{log.path}: deleting 1 segments [0] (")
    assert deleting.endswith(f" bytes) due to log start offset {cut} breach")
    log.close()


def test_a_data_dir_says_once_whether_its_logs_recover(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "kwire.log")
    d = DataDir.open(tmp_path, cluster_id="c", node_id=1)
    assert info_lines(caplog) == []  # nothing to load
    logs = [d.open_log("orders", p, LogConfig(), NOW) for p in range(3)]
    os.makedirs(tmp_path / "__cluster_metadata-0")  # not one of LogManager's logs
    d.close(logs)
    caplog.clear()
    d = DataDir.open(tmp_path, cluster_id="c", node_id=1)
    assert info_lines(caplog) == [
        f"skipping recovery of 3 logs from {tmp_path} since clean shutdown file was found"
    ]
    d.close([])
    (tmp_path / ".kafka_cleanshutdown").unlink()  # as after a kill
    caplog.clear()
    d = DataDir.open(tmp_path, cluster_id="c", node_id=1)
    assert info_lines(caplog) == [
        f"recovering 3 logs from {tmp_path} since no clean shutdown file was found"
    ]
    d.close([])
