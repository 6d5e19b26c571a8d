"""Executor-side reading of one split (kwire.spark._read), without a JVM: bad bytes in each mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwire.errors import CorruptRecordError
from kwire.records import BatchBuilder, Compression, build_end_txn_marker, read_batches
from kwire.spark._options import parse_read_options
from kwire.spark._plan import SegmentSplit
from kwire.spark._read import read_reports, read_split
from kwire.spark._schema import CORRUPT_RECORD, RECORD_COLUMNS, arrow_schema

T0 = 1_700_000_000_000
ALL = [*RECORD_COLUMNS, CORRUPT_RECORD]


def _batches(n: int, per: int = 5, codec: int = Compression.NONE) -> list[bytes]:
    out, off = [], 0
    for _ in range(n):
        b = BatchBuilder(2, codec, base_offset=off)
        for _ in range(per):
            b.append(timestamp=T0 + off, key=b"k%d" % off, value=b"v" * 20)
            off += 1
        out.append(b.build())
    return out


def _split(path: Path, **kw: object) -> SegmentSplit:
    size = path.stat().st_size
    return SegmentSplit(
        uri=str(path),
        topic="t",
        partition=0,
        base_offset=0,
        start=0,
        end=size,
        log_size=size,
        **kw,  # type: ignore[arg-type]
    )


def _read(path: Path, columns: list[str] | None = None, **options: str) -> list[dict[str, object]]:
    opts = parse_read_options(options)
    cols = columns or (ALL if opts.mode == "PERMISSIVE" else list(RECORD_COLUMNS))
    rows: list[dict[str, object]] = []
    for batch in read_split(_split(path), opts, arrow_schema(cols)):
        rows.extend(batch.to_pylist())
    return rows


def test_clean_segment_all_columns(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(_batches(4)))
    rows = _read(log)
    assert [r["offset"] for r in rows] == list(range(20))
    assert {r["topic"] for r in rows} == {"t"} and {r["segment"] for r in rows} == {log.name}
    assert all(r[CORRUPT_RECORD] is None for r in rows)
    assert [r["key"] for r in rows[:2]] == [b"k0", b"k1"]


def test_garbage_between_batches_is_reported_and_reading_resumes(tmp_path: Path) -> None:
    b = _batches(6)
    log = tmp_path / "00000000000000000000.log"
    garbage = b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x03xyz" + b"\xff" * 40
    log.write_bytes(b"".join(b[:3]) + garbage + b"".join(b[3:]))
    rows = _read(log)
    good = [r for r in rows if r[CORRUPT_RECORD] is None]
    bad = [r for r in rows if r[CORRUPT_RECORD] is not None]
    assert [r["offset"] for r in good] == list(range(30))  # nothing after the garbage is lost
    assert len(bad) == 1 and bad[0]["offset"] is None
    assert str(len(b"".join(b[:3]))) in str(bad[0][CORRUPT_RECORD])  # names the byte position
    assert len(_read(log, mode="DROPMALFORMED")) == 30
    with pytest.raises(CorruptRecordError):
        _read(log, mode="FAILFAST")


def test_crc_failure_keeps_rows_in_permissive_only(tmp_path: Path) -> None:
    b = [bytearray(x) for x in _batches(3)]
    b[1][-2] ^= 0x01  # inside the records: the CRC no longer matches, the records still parse
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(b))
    rows = _read(log)
    marked = [r for r in rows if r[CORRUPT_RECORD] is not None]
    assert len(rows) == 15 and [r["offset"] for r in marked] == [5, 6, 7, 8, 9]
    assert "crc" in str(marked[0][CORRUPT_RECORD]).lower()
    assert [r["offset"] for r in _read(log, mode="DROPMALFORMED")] == [*range(5), *range(10, 15)]
    # FAILFAST names the topic-partition, the segment file, the byte position and the batch
    with pytest.raises(CorruptRecordError) as failed:
        _read(log, mode="FAILFAST")
    message = str(failed.value)
    assert f"t-0, segment {log}" in message and "base offset 5" in message, message


def test_zero_filled_and_truncated_tails_with_report(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(_batches(2)) + bytes(300))
    reports = tmp_path / "reports"
    rows = _read(log, reportPath=str(reports))
    assert len(rows) == 11 and "zero-filled" in str(rows[-1][CORRUPT_RECORD])
    skipped, problems = read_reports(str(reports))
    assert skipped == 300 and "zero-filled" in problems[0]
    doc = json.loads(next(reports.glob("*.json")).read_text())
    assert doc["skipped_bytes"] == 300

    whole = b"".join(_batches(3))
    cut = tmp_path / "cut" / "00000000000000000000.log"
    cut.parent.mkdir()
    cut.write_bytes(whole[:-10])
    rows = _read(cut, mode="DROPMALFORMED")
    assert [r["offset"] for r in rows] == list(range(10))


def test_read_committed_and_control_records(tmp_path: Path) -> None:
    parts, off = [], 0
    for pid in (7, 8):
        b = BatchBuilder(
            2, base_offset=off, producer_id=pid, producer_epoch=0, is_transactional=True
        )
        for _ in range(3):
            b.append(timestamp=T0, value=b"x")
        parts.append(b.build())
        off += 3
    parts.append(
        build_end_txn_marker(False, coordinator_epoch=0, producer_id=7, producer_epoch=0, offset=6)
    )
    parts.append(
        build_end_txn_marker(True, coordinator_epoch=0, producer_id=8, producer_epoch=0, offset=7)
    )
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(parts))
    cols = ["offset", "isControl"]
    assert [r["offset"] for r in _read(log, cols)] == [0, 1, 2, 3, 4, 5]
    assert [r["offset"] for r in _read(log, cols, includeControl="true")] == list(range(8))
    opts = parse_read_options({"isolationLevel": "read_committed"})
    split = _split(log, aborted=((7, 0, 6),))
    got = [r["offset"] for b in read_split(split, opts, arrow_schema(cols)) for r in b.to_pylist()]
    assert got == [3, 4, 5]
    assert sum(1 for _ in read_batches(log.read_bytes())) == 4


def test_convert_segment_skips_and_reports_corrupt_bytes(tmp_path: Path) -> None:
    from kwire.log import list_log_dir
    from kwire.spark._convert_log import _convert_segment, _SegmentJob

    b = _batches(6)
    src = tmp_path / "in" / "t-0" / "00000000000000000000.log"
    src.parent.mkdir(parents=True)
    src.write_bytes(b"".join(b[:3]) + b"\xff" * 50 + b"".join(b[3:]) + bytes(64))
    job = _SegmentJob(str(src), "t", 0, 0, None)
    out = _convert_segment(job, str(tmp_path / "staging"), 2, Compression.ZSTD, 1 << 20)
    assert out["records"] == 30 and out["skipped"] == 50 + 64
    assert len(out["problems"]) == 2
    (pdir,) = list_log_dir(Path(out["dir"]))
    converted = [bt for seg in pdir.segments for bt in read_batches(Path(seg.log).read_bytes())]
    assert sum(bt.record_count for bt in converted) == 30
    assert {bt.compression for bt in converted} == {Compression.ZSTD}
    assert [bt.base_offset for bt in converted] == [0, 5, 10, 15, 20, 25]
