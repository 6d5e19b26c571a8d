"""Exports never destroy: an output that exists and is not the export's own table is refused
(Spark's errorifexists), input and output that overlap are refused, and a full re-export of a
table writes a new version that leaves the previous one readable (Delta overwrite commit, Iceberg
overwrite snapshot) until the user's own retention (VACUUM, expire_snapshots) removes it.

The jobs run on the session a user's code gets from ``SparkSession.builder.getOrCreate()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kwire.errors import KwireError
from kwire.log import SampleSummary

pytestmark = pytest.mark.spark


def _own_session(spark: Any) -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()  # the active session, as a user's job gets it


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("fmt", ["parquet", "delta", "iceberg"])
def test_an_output_that_is_not_the_table_is_refused(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path, fmt: str
) -> None:
    from kwire.spark._pipeline import export

    path, _ = sample
    out = tmp_path / "home"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "thesis.txt").write_text("years of work")
    (out / "data.parquet").write_bytes(b"not mine")
    before = _tree(out)
    with pytest.raises(KwireError, match="exists and is not"):
        export(_own_session(spark), str(path), str(out), fmt)
    assert _tree(out) == before


def test_input_and_output_that_overlap_are_refused(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    from kwire.spark._convert_log import convert_log
    from kwire.spark._pipeline import export

    path, _ = sample
    before = _tree(path)
    session = _own_session(spark)
    for out in (path, path / "exports", path.parent):
        for fmt in ("parquet", "delta"):
            with pytest.raises(KwireError, match="overlap"):
                export(session, str(path), str(out), fmt)
        with pytest.raises(KwireError, match="overlap"):
            convert_log(session, str(path), str(out))
    assert _tree(path) == before


def test_cli_same_input_and_output_keeps_the_log(
    sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    path, _ = sample
    before = _tree(path)
    kwire = [sys.executable, "-m", "kwire"]
    proc = subprocess.run(
        [*kwire, "pipeline", "export", "--input", str(path), "--output", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ},
    )
    assert proc.returncode != 0
    assert _tree(path) == before
    lines = [line for line in proc.stderr.splitlines() if "overlap" in line]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_a_parquet_reexport_replaces_its_own_table(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    from kwire.spark._pipeline import count_output, export

    path, summary = sample
    out = tmp_path / "parquet"
    session = _own_session(spark)
    export(session, str(path), str(out))
    again = export(session, str(path), str(out), engine="spark")
    assert again.records == summary.records == count_output(session, str(out))


def test_a_delta_reexport_is_a_new_version(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path, monkeypatch: Any
) -> None:
    from deltalake import DeltaTable

    import kwire.spark._pipeline as pipeline

    path, summary = sample
    out = tmp_path / "delta"
    session = _own_session(spark)
    pipeline.export(session, str(path), str(out), "delta")
    assert DeltaTable(str(out)).version() == 0

    # stopped between its files and its commit (Ctrl-C): the table is untouched
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(pipeline, "_commit_full_delta", interrupted)
        with pytest.raises(KeyboardInterrupt):
            pipeline.export(session, str(path), str(out), "delta")
    assert DeltaTable(str(out)).version() == 0
    assert DeltaTable(str(out)).to_pyarrow_table().num_rows == summary.records

    result = pipeline.export(session, str(path), str(out), "delta", options={"subscribe": "orders"})
    table = DeltaTable(str(out))
    assert table.version() == 1 and result.records == 900
    assert table.to_pyarrow_table().num_rows == 900
    assert next(h["operation"] for h in table.history()) in ("WRITE", "CREATE OR REPLACE TABLE")
    table.load_as_version(0)
    assert table.to_pyarrow_table().num_rows == summary.records  # time travel still reads v0


def test_an_iceberg_reexport_keeps_the_previous_snapshot_readable(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    from kwire.spark._pipeline import _iceberg_catalog, export

    path, summary = sample
    out = tmp_path / "iceberg"
    session = _own_session(spark)
    export(session, str(path), str(out), "iceberg")
    first = _iceberg_catalog(str(out)).load_table("kwire.records").current_snapshot()
    assert first is not None
    export(session, str(path), str(out), "iceberg", options={"subscribe": "orders"})
    table = _iceberg_catalog(str(out)).load_table("kwire.records")
    assert table.scan().to_arrow().num_rows == 900
    old = table.scan(snapshot_id=first.snapshot_id)
    assert all(os.path.exists(t.file.file_path.removeprefix("file://")) for t in old.plan_files())
    assert old.to_arrow().num_rows == summary.records
