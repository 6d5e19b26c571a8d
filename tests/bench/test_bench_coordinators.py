"""Smoke check of bench/bench_coordinators.py (not timed): a ``kwire broker`` subprocess, a
three-member rebalance and a close, offset commits and transactions of 100 records all complete."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_coordinators

pytestmark = pytest.mark.bench


def test_coordinator_benchmark_runs() -> None:
    result = bench_coordinators.run(rounds=1, delay_ms=0, heartbeat_ms=300, commits=10, txns=2)
    assert len(result["join_s"]) == 1 and len(result["leave_s"]) == 1
    assert result["commit_ms"]["n"] == 10
    assert result["txn_commit_ms"]["n"] == 2
    assert set(result["targets"]) >= {"rebalance_join", "commit_p50_under_2ms"}
