"""The data directory's ``.lock``: one broker per directory (Kafka's ``LogManager.lockLogDirs``).

An exclusive ``flock`` on ``<dir>/.lock``, taken before anything in the directory is read or
written and held until ``close``. flock locks belong to an open file, so a second ``DataDir`` in
the same process is refused as well as one in another process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kwire.errors import DataDirLockedError, KwireError
from kwire.log.storage import DataDir


def test_second_open_is_refused_until_close(tmp_path: Path) -> None:
    path = tmp_path / "data"
    first = DataDir.open(path, cluster_id=None, node_id=1)
    assert (path / ".lock").exists()
    with pytest.raises(DataDirLockedError) as caught:
        DataDir.open(path, cluster_id=None, node_id=1)
    assert isinstance(caught.value, KwireError)
    assert caught.value.path == str(path)
    assert str(caught.value) == (
        f"Failed to acquire lock on file .lock in {path}. A Kafka instance in another process "
        "or thread is using this directory."
    )
    first.close([])
    second = DataDir.open(path, cluster_id=None, node_id=1)
    second.close([])


def test_refused_open_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "data"
    first = DataDir.open(path, cluster_id=None, node_id=1)
    first.close([])  # writes .kafka_cleanshutdown
    holder = DataDir.open(path, cluster_id=None, node_id=1)
    assert holder.had_clean_shutdown
    before = sorted(p.name for p in path.iterdir())
    with pytest.raises(DataDirLockedError):
        DataDir.open(path, cluster_id=None, node_id=1)
    assert sorted(p.name for p in path.iterdir()) == before
    holder.close([])


def test_a_failed_open_releases_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "data"
    DataDir.open(path, cluster_id=None, node_id=1).close([])
    with pytest.raises(ValueError, match="doesn't match previous node id"):
        DataDir.open(path, cluster_id=None, node_id=2)
    DataDir.open(path, cluster_id=None, node_id=1).close([])


def test_another_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "data"
    held = DataDir.open(path, cluster_id=None, node_id=1)
    probe = (
        "import sys\n"
        "from kwire.errors import DataDirLockedError\n"
        "from kwire.log.storage import DataDir\n"
        "try:\n"
        "    DataDir.open(sys.argv[1], cluster_id=None, node_id=1)\n"
        "except DataDirLockedError:\n"
        "    sys.exit(3)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, timeout=60, check=False
    )
    assert proc.returncode == 3, proc.stderr.decode(errors="replace")
    held.close([])
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
