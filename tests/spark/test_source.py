"""spark.read.format("kafka-log") against the row API (kwire.records) over the same files."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from kwire.log import SampleSummary, list_log_dir
from kwire.records import read_batches

pytestmark = pytest.mark.spark


def _expected_rows(log_dir: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Every non-control record of the log, decoded by the row API."""
    rows = {}
    for pdir in list_log_dir(log_dir):
        for seg in pdir.segments:
            data = Path(seg.log).read_bytes()
            for batch in read_batches(data):
                if batch.is_control:
                    continue
                for rec in batch.records():
                    headers = (
                        [(k, None if v is None else bytes(v)) for k, v in rec.headers]
                        if rec.headers
                        else None
                    )
                    rows[(pdir.topic, pdir.partition, rec.offset)] = {
                        "key": None if rec.key is None else bytes(rec.key),
                        "value": None if rec.value is None else bytes(rec.value),
                        "timestamp": rec.timestamp,
                        "headers": headers,
                        "magic": batch.magic,
                        "isTransactional": batch.is_transactional,
                        "producerId": batch.producer_id,
                    }
    return rows


def _kafka_python_rows(log_dir: Path) -> set[tuple[Any, ...]]:
    """The same records decoded by an independent implementation (kafka-python 3.0.12)."""
    with warnings.catch_warnings():  # kafka-python's imports use deprecated importlib APIs
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record import MemoryRecords

    rows = set()
    for pdir in list_log_dir(log_dir):
        for seg in pdir.segments:
            records = MemoryRecords(Path(seg.log).read_bytes())
            while (batch := records.next_batch()) is not None:
                if getattr(batch, "is_control_batch", False):
                    continue
                for r in batch:
                    headers = tuple(r.headers) if r.headers else None
                    rows.add((pdir.topic, pdir.partition, r.offset, r.key, r.value, headers))
    return rows


def _millis(ts: dt.datetime | None) -> int:
    if ts is None:
        return -1
    return round(ts.replace(tzinfo=dt.UTC).timestamp() * 1000)


def test_every_record_and_column_matches_the_row_api(
    spark: Any, sample: tuple[Path, SampleSummary]
) -> None:
    path, summary = sample
    df = spark.read.format("kafka-log").load(str(path))
    assert df.columns[:8] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert df.columns[-1] == "_corrupt_record"
    rows = df.collect()
    expected = _expected_rows(path)
    assert len(rows) == summary.records == len(expected)
    for row in rows:
        want = expected[(row["topic"], row["partition"], row["offset"])]
        assert row["key"] == want["key"] and row["value"] == want["value"]
        assert row["magic"] == want["magic"]
        assert row["producerId"] == want["producerId"]
        assert row["isTransactional"] == want["isTransactional"]
        got_headers = (
            None if row["headers"] is None else [(h["key"], h["value"]) for h in row["headers"]]
        )
        assert got_headers == want["headers"]
        if want["magic"] > 0:
            assert _millis(row["timestamp"]) == want["timestamp"]
        assert row["segment"].endswith(".log") and row["_corrupt_record"] is None
    independent = {
        (
            r["topic"],
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            None if r["headers"] is None else tuple((h["key"], h["value"]) for h in r["headers"]),
        )
        for r in rows
    }
    assert independent == _kafka_python_rows(path)


def test_isolation_control_offsets_timestamps_and_projection(
    spark: Any, sample: tuple[Path, SampleSummary]
) -> None:
    path, summary = sample
    load = str(path)
    committed = spark.read.format("kafka-log").option("isolationLevel", "read_committed")
    assert committed.load(load).count() == summary.committed_records
    with_control = spark.read.format("kafka-log").option("includeControl", "true").load(load)
    assert with_control.where("isControl").count() == summary.control_records

    bounded = (
        spark.read.format("kafka-log")
        .option("subscribe", "orders")
        .option("startingOffsets", json.dumps({"orders": {"0": 100, "1": -2, "2": -2}}))
        .option("endingOffsets", json.dumps({"orders": {"0": 150, "1": 10, "2": -1}}))
        .load(load)
    )
    per_partition = {
        r["partition"]: (r["min(offset)"], r["max(offset)"], r["count"])
        for r in bounded.groupBy("partition")
        .agg({"offset": "min", "*": "count"})
        .withColumnRenamed("count(1)", "count")
        .join(bounded.groupBy("partition").agg({"offset": "max"}), "partition")
        .collect()
    }
    assert per_partition[0] == (100, 149, 50)
    assert per_partition[1] == (0, 9, 10)
    assert per_partition[2][2] == 300

    # timestamps: from the first record at/after T (Kafka's offsetsForTimes), before the end one
    orders0 = sorted(
        (r["offset"], _millis(r["timestamp"]))
        for r in spark.read.format("kafka-log")
        .load(load)
        .where("topic='orders' AND partition=0")
        .collect()
    )
    t_start, t_end = orders0[40][1], orders0[200][1]
    first = next(i for i, (_, ts) in enumerate(orders0) if ts >= t_start)
    stop = next(i for i, (_, ts) in enumerate(orders0) if ts >= t_end)
    by_time = (
        spark.read.format("kafka-log")
        .option("assign", json.dumps({"orders": [0]}))
        .option("startingOffsetsByTimestamp", json.dumps({"orders": {"0": t_start}}))
        .option("endingOffsetsByTimestamp", json.dumps({"orders": {"0": t_end}}))
        .load(load)
    )
    assert sorted(r["offset"] for r in by_time.select("offset").collect()) == [
        o for o, _ in orders0[first:stop]
    ]

    # a user schema with fewer columns decodes only those; URIs go through pyarrow's filesystems
    narrow = spark.read.format("kafka-log").schema("offset long, key binary").load(f"file://{load}")
    assert narrow.columns == ["offset", "key"]
    assert narrow.count() == summary.records
    one = sorted((path / "orders-0").glob("*.log"))[0]
    assert (
        spark.read.format("kafka-log")
        .load(str(one))
        .select("segment")
        .distinct()
        .collect()[0]["segment"]
        == one.name
    )


def _corrupt_copy(src: Path, dst: Path) -> tuple[int, int]:
    """Copy one partition, flip a byte inside its 3rd batch's records, add a zero-filled tail.
    Returns (records in the damaged batch, zero bytes appended)."""
    shutil.copytree(src, dst)
    seg = sorted(dst.glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    batches = list(read_batches(bytes(data)))
    victim = batches[2]
    data[victim.position + victim.size - 3] ^= 0xFF
    seg.write_bytes(bytes(data) + bytes(500))
    return victim.record_count, 500


def test_corrupt_bytes_in_each_mode(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    path, summary = sample
    damaged = tmp_path / "log"
    bad_records, zeros = _corrupt_copy(path / "orders-1", damaged / "orders-1")
    good = summary.partitions["orders-1"].records
    load = str(damaged)

    permissive = spark.read.format("kafka-log").load(load)
    rows = permissive.collect()
    corrupt = [r for r in rows if r["_corrupt_record"] is not None]
    tail = [r for r in corrupt if "zero-filled" in r["_corrupt_record"]]
    assert len(tail) == 1 and tail[0]["offset"] is None and tail[0]["topic"] == "orders"
    crc_rows = [r for r in corrupt if r not in tail]
    # the batch failing its CRC keeps what can be read, marked; or becomes one marker row
    assert crc_rows and all(r["segment"] for r in crc_rows)
    assert len(rows) - len(corrupt) == good - bad_records

    dropped = spark.read.format("kafka-log").option("mode", "DROPMALFORMED").load(load)
    assert "_corrupt_record" not in dropped.columns
    assert dropped.count() == good - bad_records

    reports = tmp_path / "reports"
    spark.read.format("kafka-log").option("mode", "DROPMALFORMED").option(
        "reportPath", str(reports)
    ).load(load).count()
    from kwire.spark._read import read_reports

    skipped, problems = read_reports(str(reports))
    assert skipped >= zeros and any("zero-filled" in p for p in problems)

    with pytest.raises(Exception, match=r"(?i)crc|corrupt"):
        spark.read.format("kafka-log").option("mode", "FAILFAST").load(load).count()
