"""Smoke check of bench/bench_broker.py's pieces against kwire only (not timed, tansu skipped):
the broker subprocess starts and answers Metadata, and produce/consume/latency move the right
number of messages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_broker

pytestmark = pytest.mark.bench

N = 2_000


def test_values_are_1kib() -> None:
    assert {len(v) for v in bench_broker.VALUES} == {bench_broker.VALUE_SIZE}


def test_kwire_subprocess_produce_consume_latency() -> None:
    srv = bench_broker.KwireServer()
    try:
        srv.start()
        assert srv.startup_s > 0
        assert bench_broker.metadata_once(srv.port) == 1
        assert bench_broker.rss_mb(srv.pid) > 0
        for partitions in (1, 3):
            topic = f"smoke-{partitions}"
            bench_broker.create_topic(srv.bootstrap, topic, partitions)
            produced = bench_broker.produce(srv.bootstrap, topic, N, batch_size=16384, timeout=20)
            assert produced["messages"] == N
            consumed = bench_broker.consume(srv.bootstrap, topic, partitions, N, timeout=20)
            assert consumed["messages"] == N
        bench_broker.create_topic(srv.bootstrap, "smoke-latency", 1)
        lat = bench_broker.latency(srv.bootstrap, "smoke-latency", 0.2, rate_mb_s=2.0)
        assert lat["messages"] == int(2.0e6 / bench_broker.VALUE_SIZE * 0.2)
        assert 0 < lat["p50_ms"] <= lat["p99_ms"]
    finally:
        srv.stop()
    assert srv.proc is None


def test_fixture_startup_runs() -> None:
    out = bench_broker.fixture_startup(1)
    assert out["warm_ms"] > 0 and out["cold_first_metadata_ms"] > 0


def test_raw_profile_summary(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "main (/x/src/kwire/cli/__init__.py:10);handle (/x/src/kwire/broker/_data.py:20) 3\n"
        "main (/x/src/kwire/cli/__init__.py:10) 1\n"
    )
    text = bench_broker.summarise_raw(raw, 5)
    assert "kwire/broker/_data.py:handle" in text and "75.0" in text
