"""One SparkSession (local[2]) shared by every Spark test, and a small sample log directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kwire.log import SampleSummary, write_sample


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from kwire.spark import get_session

    session = get_session(
        "local[2]",
        app_name="kwire tests",
        config={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SampleSummary]:
    path = tmp_path_factory.mktemp("sample") / "log"
    return path, write_sample(path, records_per_partition=300, segment_bytes=16 * 1024)
