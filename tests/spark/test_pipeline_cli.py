"""`kwire pipeline` and `get_session` as a user meets them (issue 16 item 7): errors that name the
partition and file, a clean Ctrl-C, the input it actually selected, the planning log, and a user's
own session left as it was."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kwire.log import SampleSummary, list_log_dir, write_sample
from kwire.records import read_batches

pytestmark = pytest.mark.spark


def _cli_env(**extra: str) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{path}" if path else src, **extra}


def test_get_session_leaves_an_active_session_as_it_was(spark: Any) -> None:
    from kwire.spark import get_session

    jvm = spark.sparkContext._jvm
    root = jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    before_level = root.getLevel().toString()
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    spark.sparkContext.setLogLevel("WARN")
    try:
        again = get_session()
        assert again is spark
        assert spark.conf.get("spark.sql.session.timeZone") == "America/New_York"
        assert root.getLevel().toString() == "WARN"
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.sparkContext.setLogLevel(before_level)


def test_export_input_counts_what_was_selected(
    spark: Any, sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    from kwire.spark._pipeline import export

    path, summary = sample
    result = export(spark, str(path), str(tmp_path / "out"), options={"subscribe": "orders"})
    orders = sum(summary.partitions[f"orders-{p}"].bytes for p in range(3))
    assert result.records == sum(summary.partitions[f"orders-{p}"].records for p in range(3))
    assert result.input_bytes == orders < summary.bytes


def test_cli_failfast_names_the_partition_and_segment_and_planning_logs(
    sample: tuple[Path, SampleSummary], tmp_path: Path
) -> None:
    src, _ = sample
    damaged = tmp_path / "log"
    shutil.copytree(src / "orders-1", damaged / "orders-1")
    seg = sorted((damaged / "orders-1").glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    victim = list(read_batches(bytes(data)))[2]
    data[victim.position + victim.size - 3] ^= 0xFF
    seg.write_bytes(bytes(data))
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "kwire", "pipeline", "export", "--input", str(damaged)),
            *("--output", str(tmp_path / "out"), "--option", "mode=FAILFAST"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=_cli_env(KWIRE_LOG_LEVEL="INFO"),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert f"orders-1, segment {seg}" in proc.stderr, proc.stderr[-3000:]
    assert f"base offset {victim.base_offset}" in proc.stderr
    assert "kwire: scan of" in proc.stderr  # the planner's INFO line, from Spark's worker


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def test_ctrl_c_stops_the_pipeline_with_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log"
    write_sample(log, records_per_partition=3000)
    assert list_log_dir(log)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "kwire", "pipeline", "export", "--input", str(log)),
            *("--output", str(tmp_path / "out"), "--engine", "spark"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_cli_env(),
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 300
        while not _children(proc.pid) and time.monotonic() < deadline:  # Spark's JVM started
            time.sleep(0.2)
        time.sleep(8)  # inside the session start or the job
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "kwire pipeline: interrupted", err[-3000:]
    assert "Traceback" not in err and len(lines) <= 3, err[-3000:]
