"""Incremental, exactly-once export: run twice, and once stopped before its commit then re-run;
the table always holds the source's records exactly once (Delta and Iceberg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

COLS = ["topic", "partition", "offset", "key", "value"]


def _write(path: Path, start: int, count: int) -> None:
    """``count`` records per partition of topics a (2 partitions) and b, from offset ``start``
    (later records are written apart, then their segments moved in beside the old ones, as a
    broker rolls segments)."""
    import shutil

    from kwire.log import LogWriter
    from kwire.records import build_batch

    target = path if start == 0 else path.parent / f"staging-{start}"
    for topic, partitions in (("a", 2), ("b", 1)):
        for p in range(partitions):
            with LogWriter(
                str(target), topic, p, segment_bytes=8192, start_offset=start, fsync=False
            ) as w:
                for i in range(start, start + count, 10):
                    records = [
                        (
                            None,
                            1_714_000_000_000 + j * 60_000,
                            f"k{j}".encode(),
                            f"{topic}{p}-{j}".encode(),
                        )
                        for j in range(i, min(i + 10, start + count))
                    ]
                    w.append(build_batch(records, base_offset=i))
            if target != path:
                for f in (target / f"{topic}-{p}").iterdir():
                    if f.suffix in (".log", ".index", ".timeindex"):
                        shutil.move(str(f), str(path / f"{topic}-{p}" / f.name))


def _table(spark: Any, out: Path, fmt: str) -> Any:
    if fmt == "delta":
        from deltalake import DeltaTable

        files = DeltaTable(str(out)).file_uris()
        df = spark.read.option("basePath", str(out)).parquet(*files)
    else:
        from kwire.spark._pipeline import ICEBERG_TABLE, _iceberg_catalog

        table = _iceberg_catalog(str(out)).load_table(ICEBERG_TABLE)
        df = spark.read.parquet(*[t.file.file_path for t in table.scan().plan_files()])
    return df.select(*COLS)


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_incremental_export_writes_each_record_once(spark: Any, tmp_path: Path, fmt: str) -> None:
    from kwire.errors import KwireError
    from kwire.spark._pipeline import export, export_incremental, read_log

    log = tmp_path / "log"
    out = tmp_path / fmt
    _write(log, 0, 120)

    first = export(spark, str(log), str(out), fmt, incremental=True)
    assert first.records == 3 * 120
    again = export(spark, str(log), str(out), fmt, incremental=True)
    assert again.records == 0 and "nothing new" in again.notes[0]

    def source() -> Any:
        return read_log(spark, str(log)).select(*COLS)

    assert _table(spark, out, fmt).count() == 3 * 120
    assert _table(spark, out, fmt).exceptAll(source()).count() == 0

    _write(log, 120, 50)  # new records arrive
    with pytest.raises(KwireError, match="before its commit"):
        export_incremental(spark, str(log), str(out), fmt, _fail_before_commit=True)
    assert _table(spark, out, fmt).count() == 3 * 120  # the stopped run added nothing

    rerun = export(spark, str(log), str(out), fmt, incremental=True)
    assert rerun.records == 3 * 50
    table = _table(spark, out, fmt)
    assert table.count() == 3 * 170
    assert table.exceptAll(source()).count() == 0 and source().exceptAll(table).count() == 0
    if fmt == "delta":
        from deltalake import DeltaTable

        dt = DeltaTable(str(out))
        assert dt.metadata().partition_columns == ["topic", "hour"]
        assert dt.transaction_version("kwire-export") == 2
    else:
        from kwire.spark._pipeline import ICEBERG_TABLE, _iceberg_catalog

        spec = _iceberg_catalog(str(out)).load_table(ICEBERG_TABLE).spec()
        assert [str(f.transform) for f in spec.fields] == ["identity", "hour"]


def test_iceberg_full_export_replaces_the_table_atomically(spark: Any, tmp_path: Path) -> None:
    from kwire.spark._pipeline import ICEBERG_TABLE, _iceberg_catalog, count_output, export

    log = tmp_path / "log"
    out = tmp_path / "ice"
    _write(log, 0, 40)
    export(spark, str(log), str(out), "iceberg")
    table = _iceberg_catalog(str(out)).load_table(ICEBERG_TABLE)
    first_uuid = table.metadata.table_uuid
    export(spark, str(log), str(out), "iceberg", mode="overwrite")  # Spark's save mode
    table = _iceberg_catalog(str(out)).load_table(ICEBERG_TABLE)
    assert table.metadata.table_uuid == first_uuid  # the same table: replaced, not recreated
    assert len(table.history()) >= 2
    assert count_output(spark, str(out), "iceberg") == 3 * 40
