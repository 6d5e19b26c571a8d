"""One SparkSession (local[2]) shared by every Spark test, a small sample log directory, and a
runner for jobs that build their own session the way a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="session")
def user_job(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    """Run a script as a user's own job: a fresh interpreter of this venv, called by its path as
    a user of an unactivated venv would (the venv's bin not on the PATH, no PYSPARK_PYTHON), whose
    script builds its own ``SparkSession.builder...getOrCreate()``. The script prints one JSON
    line last; that is returned. ``submit=True`` runs it with ``spark-submit`` instead."""
    scripts = tmp_path_factory.mktemp("jobs")
    venv_bin = str(Path(sys.executable).parent)

    def run(script: str, *, submit: bool = False, timeout: float = 300) -> dict[str, Any]:
        path = scripts / f"job{len(list(scripts.iterdir()))}.py"
        path.write_text(textwrap.dedent(script))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin
        )
        env.pop("VIRTUAL_ENV", None)
        if submit:
            # spark-submit runs the driver with PYSPARK_DRIVER_PYTHON / PYSPARK_PYTHON or python3
            # from the PATH: a user puts their environment's python first, as its docs say
            env["PATH"] = venv_bin + os.pathsep + env["PATH"]
            argv = [
                str(Path(venv_bin) / "spark-submit"),
                "--master",
                "local[2]",
                "--conf",
                "spark.ui.enabled=false",
                str(path),
            ]
        else:
            argv = [sys.executable, str(path)]
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        assert proc.returncode == 0 and lines, (proc.returncode, proc.stdout, proc.stderr[-6000:])
        return json.loads(lines[-1])  # type: ignore[no-any-return]

    return run
