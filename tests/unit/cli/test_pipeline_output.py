"""`kwire pipeline`'s own output: the closing table fits 80 columns, third-party warnings stay out
of the progress bar (issue 16 item 7). No Spark: the formatting functions alone."""

from __future__ import annotations

import warnings

import pytest

from kwire.cli._pipeline import print_results, progress_bar
from kwire.spark._pipeline import JobResult


def test_the_closing_table_fits_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    big = JobResult(
        "export to iceberg (arrow)",
        records=1_234_567_890,
        input_bytes=987_654_321_000,
        output_bytes=123_456_789_000,
        seconds=12_345.6,
        skipped_bytes=1_234_567,
        notes=["iceberg snapshot 123"],
    )
    print_results([big, JobResult("convert")])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out  # nothing cut
    for value in ("export to iceberg (arrow)", "1,234,567,890", "987,654.32 MB", "1,234,567 B"):
        assert value in out


def test_warnings_wait_until_the_bar_is_done(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar("export to delta", True) as update:
        assert update is not None
        update(1, 4)
        for _ in range(3):  # deltalake warns once per file it writes
            warnings.warn("a deltalake deprecation", DeprecationWarning, stacklevel=1)
        update(4, 4)
    captured = capsys.readouterr()
    assert "a deltalake deprecation" not in captured.out  # not through the live bar
    assert captured.err.count("a deltalake deprecation") == 1
    assert captured.err.startswith("warning: DeprecationWarning:")
