"""Data loss is never silent: deleted records, missing and truncated segments (issue 16 item 4).

Kafka's log start is the first segment's base offset or, when higher, the data dir's
``log-start-offset-checkpoint`` entry (DeleteRecords, retention inside a segment); nothing below it
is returned, and ``earliest`` means it. A gap inside the requested range (a segment file missing
from the middle of a partition, one cut short, offsets below the log start asked for by
``startingOffsets``) fails with ``failOnDataLoss=true`` (the default) naming the topic-partition
and the offsets, and with ``false`` is skipped and counted in the scan's metrics.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kwire.log import (
    LOG_START_OFFSET_CHECKPOINT,
    SampleSummary,
    TopicPartition,
    encode_offset_checkpoint,
    list_log_dir,
    write_sample,
)
from kwire.records import read_batches
from kwire.spark import scan_metrics

pytestmark = pytest.mark.spark


def _offsets(spark: Any, path: Path, **options: str) -> list[int]:
    reader = spark.read.format("kafka-log")
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted(r["offset"] for r in reader.load(str(path)).select("offset").collect())


def test_records_before_the_log_start_are_never_returned(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    src, _ = sample
    log = tmp_path / "log"
    shutil.copytree(src / "orders-0", log / "orders-0")
    # DeleteRecords(orders-0, 50): the broker keeps the log start in this checkpoint
    (log / LOG_START_OFFSET_CHECKPOINT).write_text(
        encode_offset_checkpoint({TopicPartition("orders", 0): 50})
    )
    assert _offsets(spark, log) == list(range(50, 300))  # earliest is the log start
    assert _offsets(spark, log, startingTimestamp="0") == list(range(50, 300))

    asked = {"subscribe": "orders", "startingOffsets": json.dumps({"orders": {"0": 10}})}
    with pytest.raises(Exception, match=r"orders-0: offsets 10 to 49 are not in the log"):
        _offsets(spark, log, **asked)
    metrics = tmp_path / "metrics"
    lenient = _offsets(spark, log, **asked, failOnDataLoss="false", metricsPath=str(metrics))
    assert lenient == list(range(50, 300))
    assert scan_metrics(str(metrics)).lost_offsets == 40


def _segments(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def test_a_missing_segment_fails_or_is_counted(spark: Any, tmp_path: Path) -> None:
    log = tmp_path / "log"
    write_sample(log, records_per_partition=700)
    orders = log / "orders-2"
    segments = _segments(orders)
    assert len(segments) >= 3
    middle = segments[1]
    lost_lo, lost_hi = int(middle.stem), int(segments[2].stem)
    for suffix in (".log", ".index", ".timeindex"):
        middle.with_suffix(suffix).unlink()

    for mode in ("PERMISSIVE", "FAILFAST", "DROPMALFORMED"):
        with pytest.raises(
            Exception, match=rf"orders-2: offsets {lost_lo} to {lost_hi - 1} are not in the log"
        ):
            _offsets(spark, log, subscribe="orders", mode=mode)
    # a range that does not reach the gap reads as before
    before = {"orders": {"0": -1, "1": -1, "2": lost_lo}}
    ok = _offsets(spark, log, subscribe="orders", endingOffsets=json.dumps(before))
    assert len(ok) == 700 * 2 + lost_lo

    metrics = tmp_path / "metrics"
    rows = _offsets(
        spark, log, assign='{"orders": [2]}', failOnDataLoss="false", metricsPath=str(metrics)
    )
    assert rows == [o for o in range(700) if not lost_lo <= o < lost_hi]
    assert scan_metrics(str(metrics)).lost_offsets == lost_hi - lost_lo


def test_a_truncated_segment_fails_or_is_counted(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    src, _ = sample
    log = tmp_path / "log"
    shutil.copytree(src / "orders-1", log / "orders-1")
    first, second = _segments(log / "orders-1")
    data = first.read_bytes()
    batches = list(read_batches(data))
    cut = batches[len(batches) // 2]
    first.write_bytes(data[: cut.position + 30])  # cut inside a batch: the rest is gone
    kept = cut.base_offset
    lost_hi = int(second.stem)

    for mode in ("DROPMALFORMED", "PERMISSIVE"):
        with pytest.raises(
            Exception, match=rf"orders-1: offsets {kept} to {lost_hi - 1} are not in the log"
        ):
            _offsets(spark, log, mode=mode)

    metrics = tmp_path / "metrics"
    rows = _offsets(
        spark, log, mode="DROPMALFORMED", failOnDataLoss="false", metricsPath=str(metrics)
    )
    assert rows == [o for o in range(300) if not kept <= o < lost_hi]
    found = scan_metrics(str(metrics))
    assert found.lost_offsets == lost_hi - kept
    assert found.malformed == 1 and found.skipped_bytes == 30  # the torn batch, counted


def test_compacted_gaps_are_not_data_loss(spark: Any, sample: tuple[Path, SampleSummary]) -> None:
    src, summary = sample
    (pdir,) = [p for p in list_log_dir(src) if p.topic == "users-compacted"]
    assert len(pdir.segments) > 1
    count = len(_offsets(spark, src, subscribe="users-compacted"))
    assert count == summary.partitions["users-compacted-0"].records
