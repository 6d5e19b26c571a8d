"""Smoke check of bench/bench_pipeline.py's pieces (not timed): its data and its baseline decoder."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from kwire.log import list_log_dir
from kwire.records import Compression, read_batches

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_pipeline

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD])
def test_generated_log_is_valid_and_sized(tmp_path: Path, codec: int) -> None:
    records = bench_pipeline.records_for_bytes(2 << 20, codec)
    info = bench_pipeline.make_log(tmp_path, records, codec)
    assert info["records"] == records and info["bytes"] >= 2 << 20
    seen = 0
    for pdir in list_log_dir(tmp_path):
        expected = 0
        for seg in pdir.segments:
            for batch in read_batches(Path(seg.log).read_bytes()):
                assert batch.base_offset == expected and batch.compression == codec
                expected = batch.last_offset + 1
                seen += batch.record_count
    assert seen == records


def test_baseline_decoder_matches_kwire(tmp_path: Path) -> None:
    bench_pipeline.make_log(tmp_path, bench_pipeline.RECORDS_PER_BATCH * 4, Compression.NONE)
    log = next(tmp_path.rglob("*.log")).read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record import MemoryRecords

        records = MemoryRecords(log)
        theirs = []
        while (batch := records.next_batch()) is not None:
            theirs.extend((r.offset, r.key, r.value) for r in batch)
    ours = [
        (r.offset, bytes(r.key or b""), bytes(r.value or b""))
        for b in read_batches(log)
        for r in b.records()
    ]
    assert theirs == ours and len(ours) == bench_pipeline.RECORDS_PER_BATCH
