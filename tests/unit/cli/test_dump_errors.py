"""``kwire dump`` as a new user meets its errors, the command run as a subprocess: a path that does
not exist (a typo) fails with exit status 1 and one line naming it, whatever its name looks like;
a file that is not Kafka's fails with one line naming the file and the byte position."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"


def kwire_dump(*args: str) -> subprocess.CompletedProcess[str]:
    return kwire("dump", *args)


def kwire_sample(*args: str) -> subprocess.CompletedProcess[str]:
    return kwire("sample", "--records", "30", "--json", *args)


def kwire(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "kwire", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize(
    "name", ["nope", "nope.log", "kafka-data", "00000000000000000000.index", "t-0/x.timeindex"]
)
def test_a_missing_path_fails_naming_it(tmp_path: Path, name: str) -> None:
    missing = tmp_path / name
    done = kwire_dump("--files", str(missing))
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [f"kwire: {missing}: No such file or directory"]
    assert done.stdout.splitlines() == [f"Dumping {missing}"]


def test_a_missing_path_among_others_fails_the_run(tmp_path: Path) -> None:
    other = tmp_path / "leader-epoch-checkpoint"
    other.write_text("0\n0\n")
    done = kwire_dump("--files", f"{other},{tmp_path / 'typo'}")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Ignoring unknown file {other}",  # as kafka-dump-log.sh says of a file it does not read
        f"kwire: {tmp_path / 'typo'}: No such file or directory",
    ]


def test_a_file_that_is_not_kafka_s_names_file_and_position(tmp_path: Path) -> None:
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"# not a Kafka segment, a text file\n" * 20)
    done = kwire_dump("--files", str(segment))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"kwire: {segment}: ") and "at position 0" in line, line


def test_a_directory_of_segments_not_named_as_a_partition_is_dumped(tmp_path: Path) -> None:
    # a copy of a partition's segments under another name (a backup, a download) holds
    # segments: "no partition directories or log segments in it" was untrue
    data = tmp_path / "data"
    assert kwire_sample(str(data)).returncode == 0
    copy = tmp_path / "backup"
    copy.mkdir()
    for f in (data / "orders-0").iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    done = kwire_dump("--files", str(copy))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    dumped = [x for x in done.stdout.splitlines() if x.startswith("Dumping ")]
    segments = sorted(p.name for p in copy.glob("*.log"))
    assert dumped == [f"Dumping {copy / name}" for name in segments]
    original = kwire_dump("--files", str(data / "orders-0"))
    assert done.stdout.replace(str(copy), "X") == original.stdout.replace(
        str(data / "orders-0"), "X"
    )
