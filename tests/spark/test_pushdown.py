"""What a scan reads: a where() is Spark's filter over every record (kafka-log pushes no filters),
and the subscription, offset and timestamp options read only what they select.

A 66 MB log (two topics; `orders` has two partitions of one day each) is queried for one hour of
one partition; the `metricsPath` notes (`kwire.spark.scan_metrics`) say how many `.log` bytes the
executors read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kwire.log import LogWriter
from kwire.records import BatchBuilder
from kwire.spark import scan_metrics

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000  # ms
STEP_MS = 4_000  # one record every 4 s: 21,600 records a day per partition
VALUE = bytes(1000)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pushdown") / "log"
    for topic, partitions in (("orders", 2), ("clicks", 1)):
        for partition in range(partitions):
            with LogWriter(root, topic, partition, segment_bytes=512 << 10, fsync=False) as w:
                for _ in range(216):
                    b = BatchBuilder(2, base_offset=w.next_offset)
                    for _ in range(100):
                        # CreateTime that goes back a little now and then (within 10 s)
                        jitter = -7_000 if b.next_offset % 7 == 3 else 0
                        b.append(
                            timestamp=T0 + b.next_offset * STEP_MS + jitter, key=None, value=VALUE
                        )
                    w.append(b.build())
    return root


def _log_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.log"))


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _query(spark: Any, root: Path, metrics: Path, **options: str) -> Any:
    reader = spark.read.format("kafka-log").option("metricsPath", str(metrics))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(root))


def test_where_is_spark_and_the_options_skip_what_they_exclude(
    spark: Any, big_log: Path, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    total = _log_bytes(big_log)
    assert total > 45 << 20
    start = T0 + 10 * 3_600_000  # the 11th hour of the day
    end = start + 3_600_000
    where = (
        (F.col("topic") == "orders")
        & (F.col("partition") == 1)
        & (F.col("timestamp") >= F.lit(_at(start)))
        & (F.col("timestamp") < F.lit(_at(end)))
    )
    # every record of that hour: offsets o with start <= T0 + o*STEP (+ jitter) < end
    expected = sorted(
        o for o in range(21_600) if start <= T0 + o * STEP_MS + (-7_000 if o % 7 == 3 else 0) < end
    )

    # no filter pushdown (it cannot be made safe on PySpark 4.1-4.3): Spark filters every record
    metrics = tmp_path / "where"
    rows = _query(spark, big_log, metrics).where(where).select("offset")
    assert sorted(r["offset"] for r in rows.collect()) == expected
    assert scan_metrics(str(metrics)).bytes_read == total

    # the options say what to read, per DataFrame: one partition, from the hour's start to its
    # end plus the log's largest step back in time (10 s), then the same where()
    metrics = tmp_path / "options"
    rows = (
        _query(
            spark,
            big_log,
            metrics,
            assign='{"orders": [1]}',
            startingTimestamp=str(start),
            endingTimestamp=str(end + 10_000),
        )
        .where(where)
        .select("offset")
    )
    assert sorted(r["offset"] for r in rows.collect()) == expected
    m = scan_metrics(str(metrics))
    assert 0 < m.bytes_read < 0.05 * total, (m, total)
    print(f"one hour, one partition: {m.bytes_read} of {total} bytes ({m.bytes_read / total:.2%})")

    # offsets and topics alone
    metrics = tmp_path / "offsets"
    rows = _query(
        spark,
        big_log,
        metrics,
        assign='{"clicks": [0]}',
        startingOffsets='{"clicks": {"0": 1000}}',
        endingOffsets='{"clicks": {"0": 1100}}',
    )
    assert rows.count() == 100
    assert scan_metrics(str(metrics)).bytes_read < 0.01 * total


def test_columns_and_include_headers(spark: Any, big_log: Path) -> None:
    narrow = spark.read.format("kafka-log").option("columns", "offset,timestamp")
    df = narrow.load(str(big_log / "clicks-0"))
    assert df.columns == ["offset", "timestamp"]
    assert df.count() == 21_600
    no_headers = (
        spark.read.format("kafka-log")
        .option("includeHeaders", "false")
        .load(str(big_log / "clicks-0"))
    )
    assert "headers" not in no_headers.columns and "value" in no_headers.columns
