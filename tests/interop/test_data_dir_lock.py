"""Two brokers on one data directory: the second refuses to start, as Kafka's does
(``LogManager.lockLogDirs``: "Failed to acquire lock on file .lock in <dir>. A Kafka instance in
another process or thread is using this directory."), and the first keeps serving."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from interop_helpers import Rec, ck_consume, ck_produce

from kwire.errors import DataDirLockedError

pytestmark = pytest.mark.interop


def test_second_cli_broker_refuses_the_same_data_dir(tmp_path: Path, broker_cli: Any) -> None:
    data = tmp_path / "data"
    first = broker_cli(data_dir=data)
    argv = [sys.executable, "-m", "kwire", "broker", "--data-dir", str(data), "--port", "0"]
    second = subprocess.run(
        [*argv, "--host", "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert second.returncode == 1, second.stderr[-3000:]
    assert second.stdout == ""
    assert second.stderr.splitlines() == [
        f"kwire broker: Failed to acquire lock on file .lock in {data}. A Kafka instance in "
        "another process or thread is using this directory."
    ]
    ck_produce(first.bootstrap, "still-served", [Rec(b"k", b"v")])
    assert [r.value for r in ck_consume(first.bootstrap, "still-served", 1)] == [b"v"]


def test_second_in_process_broker_refuses_the_same_data_dir(
    tmp_path: Path, start_broker: Any
) -> None:
    data = tmp_path / "shared"
    first = start_broker(data_dir=data)
    with pytest.raises(DataDirLockedError):
        start_broker(data_dir=data)
    ck_produce(first.bootstrap, "still-served", [Rec(b"k", b"v")])
    assert [r.value for r in ck_consume(first.bootstrap, "still-served", 1)] == [b"v"]
    first.stop()
    again = start_broker(data_dir=data)  # the lock went with the first broker
    assert [r.value for r in ck_consume(again.bootstrap, "still-served", 1)] == [b"v"]
