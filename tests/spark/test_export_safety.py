"""Exports never destroy: an output that exists is refused (Spark's default save mode,
errorifexists), and one that is not a table of the format in every mode; input and output that
overlap are refused, and a full re-export of a table (mode overwrite) writes a new version that leaves the previous one readable (Delta overwrite commit, Iceberg
overwrite snapshot) until the user's own retention (VACUUM, expire_snapshots) removes it.

The jobs run on the session a user's code gets from ``SparkSession.builder.getOrCreate()``.
"""

from __future__ import annotations

import json
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
    again = export(session, str(path), str(out), engine="spark", mode="overwrite")
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
            pipeline.export(session, str(path), str(out), "delta", mode="overwrite")
    assert DeltaTable(str(out)).version() == 0
    assert DeltaTable(str(out)).to_pyarrow_table().num_rows == summary.records

    result = pipeline.export(
        session, str(path), str(out), "delta", options={"subscribe": "orders"}, mode="overwrite"
    )
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
    export(
        session, str(path), str(out), "iceberg", options={"subscribe": "orders"}, mode="overwrite"
    )
    table = _iceberg_catalog(str(out)).load_table("kwire.records")
    assert table.scan().to_arrow().num_rows == 900
    old = table.scan(snapshot_id=first.snapshot_id)
    assert all(os.path.exists(t.file.file_path.removeprefix("file://")) for t in old.plan_files())
    assert old.to_arrow().num_rows == summary.records


@pytest.mark.parametrize("fmt", ["parquet", "delta", "iceberg"])
def test_save_modes_on_an_existing_table_are_sparks(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path, fmt: str
) -> None:
    """DataFrameWriter's modes: errorifexists (the default; "error" too) refuses an output that
    exists, ignore leaves it and writes nothing, append adds the rows to the table, overwrite
    replaces them (a new version, above); a mode Spark does not know is refused."""
    from kwire.spark._pipeline import count_output, export

    path, summary = sample
    out = tmp_path / fmt
    session = _own_session(spark)
    orders = {"subscribe": "orders"}
    assert export(session, str(path), str(out), fmt, options=orders).records == 900
    before = _tree(out)
    for mode in (None, "error", "ErrorIfExists"):
        with pytest.raises(KwireError, match="already exists"):
            export(session, str(path), str(out), fmt, **({} if mode is None else {"mode": mode}))
        assert _tree(out) == before
    with pytest.raises(KwireError, match="save mode"):
        export(session, str(path), str(out), fmt, mode="upsert")
    ignored = export(session, str(path), str(out), fmt, mode="ignore")
    assert ignored.records == 0 and _tree(out) == before
    appended = export(session, str(path), str(out), fmt, mode="append", engine="spark")
    assert appended.records == summary.records  # what this run wrote
    assert count_output(session, str(out), fmt) == 900 + summary.records
    if fmt == "delta":
        from deltalake import DeltaTable

        assert DeltaTable(str(out)).version() == 1
    rows = session.read.parquet(str(out)) if fmt == "parquet" else None
    if rows is not None:  # every record of both runs, once per run
        assert rows.where("topic = 'orders'").count() == 2 * 900
        assert rows.select("topic", "partition", "offset").distinct().count() == summary.records
    replaced = export(session, str(path), str(out), fmt, mode="overwrite", options=orders)
    assert replaced.records == 900 == count_output(session, str(out), fmt)
    for mode in ("ignore", "append", "overwrite"):  # an absent output is written in every mode
        fresh = tmp_path / f"{fmt}-{mode}"
        assert export(session, str(path), str(fresh), fmt, mode=mode).records == summary.records


def test_cli_mode_of_an_existing_output(sample: tuple[Path, SampleSummary], tmp_path: Path) -> None:
    """`kwire pipeline export` twice to one --output: the second is refused (errorifexists) in one
    line, a mode Spark does not know is a usage error, and --mode append adds the records."""
    path, summary = sample
    out = tmp_path / "out"

    def kwire(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "kwire", "pipeline", "export", "--input", str(path)]
        return subprocess.run(
            [*argv, "--output", str(out), "--json", *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    assert kwire().returncode == 0
    before = _tree(out)
    again = kwire()
    assert again.returncode != 0 and _tree(out) == before
    lines = [line for line in again.stderr.splitlines() if "already exists" in line]
    assert len(lines) == 1 and "Traceback" not in again.stderr, again.stderr[-3000:]
    bad = kwire("--mode", "upsert")
    assert bad.returncode == 2 and "save mode" in bad.stderr
    appended = kwire("--mode", "append")
    assert appended.returncode == 0, appended.stderr[-3000:]
    assert json.loads(appended.stdout.splitlines()[-1])["records"] == summary.records
