"""The pipeline jobs: export to Parquet/Delta/Iceberg and convert, records in = records out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.log import SampleSummary

pytestmark = pytest.mark.spark


def test_export_every_format_keeps_every_record(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    from kwire.spark._pipeline import count_output, export

    path, summary = sample
    seen: list[tuple[int, int]] = []
    for fmt in ("parquet", "delta", "iceberg"):
        result = export(
            spark, str(path), str(tmp_path / fmt), fmt, progress=lambda d, t: seen.append((d, t))
        )
        assert result.records == summary.records, fmt
        assert result.skipped_bytes == 0 and result.input_bytes == summary.bytes
        assert count_output(spark, str(tmp_path / fmt), fmt) == summary.records
    assert seen and seen[-1][0] == seen[-1][1]  # the progress callback saw the tasks finish
    from deltalake import DeltaTable

    assert DeltaTable(str(tmp_path / "delta")).version() == 0
    parquet = spark.read.parquet(str(tmp_path / "parquet"))
    # the DataFrame engine (Spark's Parquet writer) writes the same rows as the arrow engine
    by_spark = export(spark, str(path), str(tmp_path / "spark-engine"), engine="spark")
    assert by_spark.records == summary.records
    assert spark.read.parquet(str(tmp_path / "spark-engine")).exceptAll(parquet).count() == 0
    assert parquet.schema == spark.read.format("kafka-log").load(str(path)).schema
    committed = export(
        spark,
        str(path),
        str(tmp_path / "committed"),
        options={"isolationLevel": "read_committed"},
    )
    assert committed.records == summary.committed_records
    assert parquet.where("topic = 'payments'").count() == 2 * 300


def test_convert_keeps_offsets_transactions_and_records(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    from kwire.spark._convert_log import convert_log
    from kwire.spark._pipeline import read_log

    path, summary = sample
    out = tmp_path / "converted"
    result = convert_log(spark, str(path), str(out), magic=2, compression="zstd")
    assert result.records == summary.records and result.skipped_bytes == 0
    cols = ["topic", "partition", "offset", "key", "value", "headers"]
    before = read_log(spark, str(path)).select(*cols)
    after = read_log(spark, str(out))
    assert {r["compression"] for r in after.select("compression").distinct().collect()} == {"zstd"}
    assert before.exceptAll(after.select(*cols)).count() == 0
    assert after.select(*cols).exceptAll(before).count() == 0
    committed = read_log(spark, str(out), {"isolationLevel": "read_committed"}).count()
    assert committed == summary.committed_records
    assert list((out / "payments-0").glob("*.txnindex"))
