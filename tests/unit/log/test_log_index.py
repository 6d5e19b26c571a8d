"""Offset and time indexes, built from hand-made bytes (Kafka's OffsetIndex / TimeIndex semantics)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kwire.log import (
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    offset_index_sanity_problem,
    time_index_sanity_problem,
)


def offset_entries(*pairs: tuple[int, int]) -> bytes:
    # .index entry: relative offset int32, position int32 (big-endian)
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in pairs)


def time_entries(*pairs: tuple[int, int]) -> bytes:
    # .timeindex entry: timestamp int64, relative offset int32
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in pairs)


def test_offset_index_entries_are_absolute() -> None:
    index = OffsetIndex(offset_entries((10, 4100), (25, 8300), (40, 12500)), base_offset=1000)
    assert index.entries == [
        OffsetPosition(1010, 4100),
        OffsetPosition(1025, 8300),
        OffsetPosition(1040, 12500),
    ]
    assert len(index) == 3
    assert index.positions == [4100, 8300, 12500]
    assert index.last_offset == 1040
    assert index.problems == []


def test_offset_index_lookup_is_kafkas_greatest_lower_bound() -> None:
    index = OffsetIndex(offset_entries((10, 4100), (25, 8300), (40, 12500)), base_offset=1000)
    # OffsetIndex.lookup: the entry with the largest offset <= target, else (baseOffset, 0).
    assert index.lookup(999) == OffsetPosition(1000, 0)
    assert index.lookup(1009) == OffsetPosition(1000, 0)
    assert index.lookup(1010) == OffsetPosition(1010, 4100)
    assert index.lookup(1024) == OffsetPosition(1010, 4100)
    assert index.lookup(1025) == OffsetPosition(1025, 8300)
    assert index.lookup(10**12) == OffsetPosition(1040, 12500)
    assert index.upper_bound(8300) == OffsetPosition(1025, 8300)
    assert index.upper_bound(8301) == OffsetPosition(1040, 12500)
    assert index.upper_bound(12501) is None


def test_empty_offset_index() -> None:
    index = OffsetIndex(b"", base_offset=7)
    assert len(index) == 0 and index.lookup(100) == OffsetPosition(7, 0)
    assert index.last_offset == 7


def test_preallocated_zero_tail_is_not_entries() -> None:
    # A broker preallocates segment.index.bytes of zeros for the active segment.
    data = offset_entries((3, 4200), (9, 8400)) + bytes(8 * 1000)
    index = OffsetIndex(data, base_offset=0)
    assert index.entries == [OffsetPosition(3, 4200), OffsetPosition(9, 8400)]
    assert index.problems == []
    assert index.raw_count == 1002
    # raw_entries shows every slot, as Kafka's entry(n) does (zeros decode to (base, 0)).
    raw = OffsetIndex.raw_entries(data, base_offset=0)
    assert len(raw) == 1002 and raw[2] == OffsetPosition(0, 0)
    assert len(OffsetIndex(bytes(80), base_offset=5)) == 0


def test_non_monotonic_entries_end_the_index_and_are_reported() -> None:
    data = offset_entries((3, 4200), (9, 8400), (5, 9000), (20, 12000))
    index = OffsetIndex(data, base_offset=0)
    assert index.entries == [OffsetPosition(3, 4200), OffsetPosition(9, 8400)]
    assert len(index.problems) == 1 and "entry 2" in index.problems[0]
    assert "2 entries from here ignored" in index.problems[0]
    negative = OffsetIndex(offset_entries((-1, 5)), base_offset=0)
    assert len(negative) == 0 and negative.problems


def test_partial_trailing_entry_is_reported() -> None:
    index = OffsetIndex(offset_entries((3, 4200)) + b"\x00\x01\x02", base_offset=0)
    assert index.entries == [OffsetPosition(3, 4200)]
    assert "3 trailing bytes" in index.problems[0]


def test_index_accepts_memoryview_bytearray_and_roundtrips_from_entries() -> None:
    entries = [OffsetPosition(105, 4096), OffsetPosition(130, 9000)]
    index = OffsetIndex.from_entries(entries, base_offset=100)
    assert index.entries == entries
    data = bytearray(offset_entries((5, 4096), (30, 9000)))
    assert OffsetIndex(memoryview(data), 100).entries == entries
    assert OffsetIndex(data, 100).entries == entries


@given(st.lists(st.integers(1, 500), min_size=0, max_size=60), st.integers(0, 2**40))
def test_lookup_matches_a_linear_scan(gaps: list[int], base: int) -> None:
    rel, pos, entries = 0, 0, []
    for g in gaps:
        rel += g
        pos += g * 7
        entries.append(OffsetPosition(base + rel, pos))
    index = OffsetIndex.from_entries(entries, base)
    for target in [base - 1, base, *(e.offset for e in entries), *(e.offset + 1 for e in entries)]:
        lower = [e for e in entries if e.offset <= target]
        assert index.lookup(target) == (lower[-1] if lower else OffsetPosition(base, 0))


def test_time_index_lookup_and_last_entry() -> None:
    index = TimeIndex(time_entries((1000, 4), (1500, 9), (2500, 20)), base_offset=50)
    assert index.entries == [
        TimestampOffset(1000, 54),
        TimestampOffset(1500, 59),
        TimestampOffset(2500, 70),
    ]
    # TimeIndex.lookup: largest timestamp <= target, else (NO_TIMESTAMP = -1, baseOffset).
    assert index.lookup(999) == TimestampOffset(-1, 50)
    assert index.lookup(1000) == TimestampOffset(1000, 54)
    assert index.lookup(2499) == TimestampOffset(1500, 59)
    assert index.lookup(9999) == TimestampOffset(2500, 70)
    assert index.last_entry == TimestampOffset(2500, 70)
    assert index.max_timestamp == 2500
    empty = TimeIndex(b"", base_offset=50)
    assert empty.last_entry == TimestampOffset(-1, 50) and empty.max_timestamp is None


def test_time_index_zero_tail_and_non_increasing_timestamps() -> None:
    index = TimeIndex(time_entries((1000, 4), (1500, 9)) + bytes(12 * 50), base_offset=0)
    assert len(index) == 2 and index.problems == []
    bad = TimeIndex(time_entries((1000, 4), (1000, 9), (3000, 12)), base_offset=0)
    # Kafka only appends a strictly larger timestamp: an equal one is not a valid entry.
    assert bad.entries == [TimestampOffset(1000, 4)]
    assert bad.problems and "entry 1" in bad.problems[0]
    backwards = TimeIndex(time_entries((1000, 9), (2000, 4)), base_offset=0)
    assert len(backwards) == 1 and backwards.problems


def test_time_index_raw_entries() -> None:
    data = time_entries((1000, 4)) + bytes(24)
    assert TimeIndex.raw_entries(data, 10) == [
        TimestampOffset(1000, 14),
        TimestampOffset(0, 10),
        TimestampOffset(0, 10),
    ]


def test_offset_index_sanity_check_messages() -> None:
    # Messages of Kafka's OffsetIndex.sanityCheck (CorruptIndexException).
    assert offset_index_sanity_problem(offset_entries((3, 4200)), 0, "/x/0.index") is None
    assert offset_index_sanity_problem(bytes(8 * 10), 0, "/x/0.index") is None
    assert offset_index_sanity_problem(offset_entries((-5, 0)), 100, "/x/100.index") == (
        "Corrupt index found, index file /x/100.index has non-zero size but the last offset "
        "is 95 which is less than the base offset 100"
    )
    assert offset_index_sanity_problem(b"\0" * 12, 0, "/x/0.index") == (
        "Index file /x/0.index is corrupt, found 12 bytes which is neither positive nor a "
        "multiple of 8"
    )


def test_time_index_sanity_check_messages() -> None:
    # Messages of Kafka's TimeIndex.sanityCheck.
    assert time_index_sanity_problem(time_entries((5, 1), (9, 2)), 0, "t") is None
    assert time_index_sanity_problem(time_entries((9, 1), (5, 2)), 0, "t") == (
        "Corrupt time index found, time index file (t) has non-zero size but the last "
        "timestamp is 5 which is less than the first timestamp 9"
    )
    assert time_index_sanity_problem(time_entries((9, -1)), 10, "t") == (
        "Corrupt time index found, time index file (t) has non-zero size but the last offset "
        "is 9 which is less than the first offset 10"
    )
    assert time_index_sanity_problem(b"\0" * 13, 0, "t") == (
        "Time index file t is corrupt, found 13 bytes which is neither positive nor a multiple "
        "of 12"
    )


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 16])
def test_any_length_parses_without_crashing(size: int) -> None:
    data = bytes(range(1, size + 1))
    OffsetIndex(data, 0)
    TimeIndex(data, 0)
