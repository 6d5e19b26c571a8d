"""Scanning a ``.log`` resiliently, byte ranges, split points and Kafka's lookups in a segment."""

from __future__ import annotations

import gc
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import CorruptRecordError
from kwire.log import (
    OffsetIndex,
    OffsetPosition,
    Segment,
    SkippedBytes,
    TimestampAndOffset,
    open_segment,
    scan_batches,
    split_ranges,
)
from kwire.records import BatchBuilder, Compression


def batch(base: int, n: int = 3, ts: int = 1000, size: int = 40, codec: int = 0) -> bytes:
    b = BatchBuilder(base_offset=base, compression=codec)
    for i in range(n):
        b.append(timestamp=ts + i, key=b"k%d" % (base + i), value=b"v" * size)
    return b.build()


def log_of(count: int, n: int = 3) -> tuple[bytes, list[int]]:
    """``count`` batches of ``n`` records; returns the bytes and each batch's start position."""
    parts, positions, pos = [], [], 0
    for i in range(count):
        data = batch(i * n, n, ts=1000 + 10 * i)
        parts.append(data)
        positions.append(pos)
        pos += len(data)
    return b"".join(parts), positions


def read(scan_iter: object) -> list[tuple[int, int]]:
    return [(b.base_offset, b.position) for b in scan_iter]  # type: ignore[attr-defined]


def test_clean_log_reads_every_batch() -> None:
    data, positions = log_of(5)
    scan = scan_batches(data)
    assert read(scan) == [(3 * i, p) for i, p in enumerate(positions)]
    assert scan.skipped == [] and scan.skipped_bytes == 0
    assert scan.position == len(data) and scan.batches_read == 5


def test_empty_buffer() -> None:
    scan = scan_batches(b"")
    assert read(scan) == [] and scan.skipped == [] and scan.position == 0


def test_zero_filled_tail_is_reported_once() -> None:
    data, _ = log_of(3)
    scan = scan_batches(data + bytes(10_000), source="seg.log")
    assert [b.base_offset for b in scan] == [0, 3, 6]
    assert scan.skipped == [SkippedBytes("seg.log", len(data), 10_000, "zero-filled tail")]
    assert scan.position == len(data) + 10_000


def test_truncated_tail_is_reported_with_what_was_declared() -> None:
    data, positions = log_of(3)
    cut = data[:-7]
    scan = scan_batches(cut)
    assert [b.base_offset for b in scan] == [0, 3]
    (skipped,) = scan.skipped
    assert skipped.position == positions[2] and skipped.length == len(cut) - positions[2]
    declared = len(data) - positions[2]
    assert skipped.reason == f"truncated batch: {declared} bytes declared, {declared - 7} present"
    tiny = scan_batches(data[: positions[1] + 10])  # the base offset (3) and half a length
    assert [b.base_offset for b in tiny] == [0]
    assert tiny.skipped[0].length == 10
    assert "fewer than the 12-byte log overhead" in tiny.skipped[0].reason
    zeros = scan_batches(data[: positions[1] + 5])  # offset 3's first five bytes are all zero
    assert [b.base_offset for b in zeros] == [0]
    assert zeros.skipped[0].reason == "zero-filled tail"


def test_corrupt_batch_in_the_middle_is_skipped_and_later_batches_are_read() -> None:
    data, positions = log_of(5)
    bad = bytearray(data)
    bad[positions[2] + 70] ^= 0xFF  # inside the CRC-covered part of batch 2
    scan = scan_batches(bad)
    assert [b.base_offset for b in scan] == [0, 3, 9, 12]
    (skipped,) = scan.skipped
    assert skipped.position == positions[2]
    assert skipped.length == positions[3] - positions[2]
    assert skipped.reason.startswith("corrupt batch: CRC32C mismatch")


def test_garbage_between_batches_resynchronises() -> None:
    data, positions = log_of(4)
    garbage = bytes((i * 37 + 11) % 251 + 3 for i in range(777))
    spliced = data[: positions[2]] + garbage + data[positions[2] :]
    scan = scan_batches(spliced)
    assert [b.base_offset for b in scan] == [0, 3, 6, 9]
    (skipped,) = scan.skipped
    assert (skipped.position, skipped.length) == (positions[2], 777)
    assert "resumed at the next valid batch" in skipped.reason


def test_corrupt_length_field_resynchronises_at_the_next_batch() -> None:
    data, positions = log_of(4)
    bad = bytearray(data)
    struct.pack_into(">i", bad, positions[1] + 8, 2_000_000)  # length far past the end
    scan = scan_batches(bad)
    assert [b.base_offset for b in scan] == [0, 6, 9]
    assert scan.skipped[0].position == positions[1]
    assert scan.skipped[0].length == positions[2] - positions[1]
    bad2 = bytearray(data)
    struct.pack_into(">i", bad2, positions[1] + 8, 3)  # below the minimum record overhead
    scan2 = scan_batches(bad2)
    assert [b.base_offset for b in scan2] == [0, 6, 9]
    assert "less than the minimum" in scan2.skipped[0].reason


def test_zero_hole_in_the_middle() -> None:
    data, positions = log_of(3)
    holed = data[: positions[1]] + bytes(5000) + data[positions[1] :]
    scan = scan_batches(holed)
    assert [b.base_offset for b in scan] == [0, 3, 6]
    assert (scan.skipped[0].position, scan.skipped[0].length) == (positions[1], 5000)
    assert scan.skipped[0].reason == "zero-filled bytes; resumed at the next valid batch"


def test_unreadable_tail_without_any_later_batch() -> None:
    data, _ = log_of(2)
    tail = b"\x01" * 100
    scan = scan_batches(data + tail)
    assert [b.base_offset for b in scan] == [0, 3]
    (skipped,) = scan.skipped
    assert skipped.position == len(data) and skipped.length == 100


def test_strict_mode_raises_at_the_first_problem() -> None:
    data, positions = log_of(3)
    bad = bytearray(data)
    bad[positions[1] + 70] ^= 1
    scan = scan_batches(bad, errors="strict", source="x.log")
    assert next(scan).base_offset == 0
    with pytest.raises(CorruptRecordError) as err:
        next(scan)
    assert err.value.offset == positions[1] and "x.log" in str(err.value)
    with pytest.raises(ValueError):
        scan_batches(data, errors="lenient")  # type: ignore[arg-type]


def test_ranges_yield_batches_starting_inside_them() -> None:
    data, positions = log_of(6)
    # [positions[1], positions[3]) holds batches 1 and 2; a range end inside batch 3 still
    # includes batch 3 (it starts in the range) and reads it whole.
    assert [b.base_offset for b in scan_batches(data, start=positions[1], end=positions[3])] == [
        3,
        6,
    ]
    within = scan_batches(data, start=positions[1], end=positions[3] + 1)
    assert [b.base_offset for b in within] == [3, 6, 9]
    assert within.position == positions[4]
    assert [b.base_offset for b in scan_batches(data, start=positions[5])] == [15]
    with pytest.raises(ValueError):
        scan_batches(data, start=len(data) + 1)


def test_byte_range_buffer_with_base_position() -> None:
    data, positions = log_of(4)
    chunk = data[positions[1] : positions[3]]  # e.g. a ranged GET from an object store
    scan = scan_batches(chunk, start=positions[1], end=positions[3], base_position=positions[1])
    got = list(scan)
    assert [b.base_offset for b in got] == [3, 6]
    assert [scan.file_position(b) for b in got] == positions[1:3]
    assert scan.position == positions[3]
    bad = bytearray(chunk)
    bad[-5] ^= 1
    scan2 = scan_batches(bytes(bad), base_position=positions[1], start=positions[1])
    list(scan2)
    assert scan2.skipped[0].position == positions[2]  # reported as a FILE position


def test_split_ranges_cut_at_index_positions() -> None:
    positions = [4100, 8300, 12500, 16700, 20900]
    assert split_ranges(positions, 25000, 8000) == [(0, 8300), (8300, 16700), (16700, 25000)]
    assert split_ranges(positions, 25000, 10**9) == [(0, 25000)]
    assert split_ranges([], 25000, 100) == [(0, 25000)]
    assert split_ranges([], 0, 100) == []
    index = OffsetIndex.from_entries([OffsetPosition(10, 4100), OffsetPosition(20, 8300)], 0)
    assert split_ranges(index, 9000, 4000) == [(0, 4100), (4100, 8300), (8300, 9000)]
    # A stale index entry beyond the log is ignored.
    assert split_ranges([100, 5000], 200, 50) == [(0, 100), (100, 200)]
    with pytest.raises(ValueError):
        split_ranges(positions, 100, 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=25), st.integers(1, 3000))
def test_split_ranges_cover_every_batch_once(sizes: list[int], target: int) -> None:
    parts, starts, pos, base = [], [], 0, 0
    for n in sizes:
        data = batch(base, n)
        parts.append(data)
        starts.append(pos)
        pos += len(data)
        base += n
    log = b"".join(parts)
    ranges = split_ranges(starts[1::2], len(log), target)
    seen = [b.base_offset for s, e in ranges for b in scan_batches(log, start=s, end=e)]
    assert seen == [b.base_offset for b in scan_batches(log)]
    assert ranges[0][0] == 0 and ranges[-1][1] == len(log)


def index_bytes(base: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", o - base, p) for o, p in entries)


def time_bytes(base: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">qi", t, o - base) for t, o in entries)


def test_segment_position_of_uses_the_index_then_scans() -> None:
    data, positions = log_of(6)  # offsets 0..17, batch i = offsets 3i..3i+2, ts 1000+10i..+2
    base = 0
    # Kafka's entries: (last offset of the batch, its start position)
    idx = index_bytes(base, [(8, positions[2]), (14, positions[4])])
    seg = Segment(data, base_offset=base, index=idx)
    assert seg.position_of(0) == positions[0]
    assert seg.position_of(7) == positions[2]
    assert seg.position_of(9) == positions[3]
    assert seg.position_of(17) == positions[5]
    assert seg.position_of(18) is None
    assert seg.next_offset() == 18
    # A wrong index (position not at a batch start) falls back to scanning from the start.
    wrong = Segment(data, base_offset=base, index=index_bytes(base, [(8, positions[2] + 3)]))
    assert wrong.position_of(10) == positions[3]
    assert Segment(b"", base_offset=40).next_offset() == 40


def test_segment_lookup_timestamp_is_find_offset_by_timestamp() -> None:
    data, positions = log_of(6)
    # Time index entries (max timestamp so far, offset of the batch that carried it)
    seg = Segment(
        data,
        base_offset=0,
        index=index_bytes(0, [(8, positions[2])]),
        timeindex=time_bytes(0, [(1022, 8)]),
    )
    assert seg.lookup_timestamp(0) == TimestampAndOffset(1000, 0, positions[0])
    assert seg.lookup_timestamp(1021) == TimestampAndOffset(1021, 7, positions[2])
    assert seg.lookup_timestamp(1023) == TimestampAndOffset(1030, 9, positions[3])
    assert seg.lookup_timestamp(1052) == TimestampAndOffset(1052, 17, positions[5])
    assert seg.lookup_timestamp(1053) is None
    assert seg.lookup_timestamp(1000, starting_offset=4) == TimestampAndOffset(
        1011, 4, positions[1]
    )
    assert seg.split_ranges(2 * positions[1]) == [(0, positions[2]), (positions[2], len(data))]


def test_compressed_batches_and_legacy_magic_in_one_log() -> None:
    parts = [batch(0, 3, codec=Compression.GZIP)]
    legacy = BatchBuilder(1, Compression.NONE, base_offset=3)
    legacy.append(timestamp=5, key=None, value=b"old")
    parts.append(legacy.build())
    parts.append(batch(4, 2, codec=Compression.ZSTD))
    scan = scan_batches(b"".join(parts))
    assert [(b.magic, b.base_offset, b.last_offset) for b in scan] == [
        (2, 0, 2),
        (1, 3, 3),
        (2, 4, 5),
    ]


def test_open_segment_maps_files_read_only(tmp_path: Path) -> None:
    data, positions = log_of(4)
    log = tmp_path / "00000000000000000100.log"
    log.write_bytes(data)
    (tmp_path / "00000000000000000100.index").write_bytes(index_bytes(100, [(108, positions[2])]))
    (tmp_path / "00000000000000000100.txnindex").write_bytes(
        struct.pack(">hqqqq", 0, 5, 100, 103, 100)
    )
    kept = None
    with open_segment(log) as seg:
        assert seg.base_offset == 100 and seg.size == len(data) and seg.source == str(log)
        assert seg.offset_index.entries == [OffsetPosition(108, positions[2])]
        assert len(seg.time_index) == 0  # no .timeindex file
        assert [t.producer_id for t in seg.aborted_transactions] == [5]
        batches = list(seg.batches())
        kept = bytes(batches[-1].view)
        assert seg.view.readonly
        with pytest.raises(TypeError):
            seg.view[0] = 1  # type: ignore[index]
    del batches, seg
    gc.collect()
    assert kept == data[positions[3] :]
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    with open_segment(empty, indexes=False) as seg2:
        assert seg2.size == 0 and list(seg2.batches()) == []
    other = tmp_path / "weird.log"
    other.write_bytes(data)
    with pytest.raises(ValueError, match="base_offset"), open_segment(other):
        pass
    with open_segment(other, base_offset=0) as seg3:
        assert seg3.next_offset() == 12


def test_a_length_field_swallowing_the_next_batch_loses_only_the_bad_batch() -> None:
    data, positions = log_of(4)
    bad = bytearray(data)
    # Batch 1's length now covers batch 2 exactly (and still lands on batch 3's start).
    (size,) = struct.unpack_from(">i", bad, positions[1] + 8)
    struct.pack_into(">i", bad, positions[1] + 8, size + positions[3] - positions[2])
    scan = scan_batches(bad)
    assert [b.base_offset for b in scan] == [0, 6, 9]
    (skipped,) = scan.skipped
    assert (skipped.position, skipped.length) == (positions[1], positions[2] - positions[1])
