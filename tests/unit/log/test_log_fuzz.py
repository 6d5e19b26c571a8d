"""Random and mutated bytes: the log's parsers give results or ``DecodeError``, nothing else."""

from __future__ import annotations

import contextlib
import struct

import crc32c
from hypothesis import given
from hypothesis import strategies as st

from kwire.errors import DecodeError
from kwire.log import (
    OffsetIndex,
    Segment,
    TimeIndex,
    TransactionIndex,
    offset_index_sanity_problem,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    read_producer_snapshot,
    read_txn_index,
    time_index_sanity_problem,
    walk_offset_index,
    walk_time_index,
)


@given(st.binary(max_size=300), st.integers(0, 2**40))
def test_index_parsers_take_any_bytes(data: bytes, base: int) -> None:
    for index in (OffsetIndex(data, base), TimeIndex(data, base)):
        assert len(index) <= len(data) // 8
        index.lookup(base + 5)
    assert len(TransactionIndex(data)) <= len(data) // 34
    offset_index_sanity_problem(data, base, "f")
    time_index_sanity_problem(data, base, "f")


@given(st.binary(max_size=200))
def test_strict_readers_raise_only_decode_errors(data: bytes) -> None:
    for reader in (
        read_txn_index,
        read_producer_snapshot,
        read_leader_epoch_checkpoint,
        read_partition_metadata,
    ):
        with contextlib.suppress(DecodeError):
            reader(data)


@given(st.binary(max_size=120), st.integers(0, 120), st.integers(0, 7))
def test_snapshot_bit_flips_are_caught(extra: bytes, where: int, bit: int) -> None:
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 1, 2, 3, 4, 5, 6, 7, -1)
    good = bytearray(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    at = where % len(good)
    good[at] ^= 1 << bit
    try:
        snap = read_producer_snapshot(bytes(good))
    except DecodeError:
        return
    raise AssertionError(f"a flipped bit at byte {at} was not detected: {snap}")


@given(st.binary(max_size=400), st.binary(max_size=64), st.binary(max_size=64))
def test_segment_lookups_and_index_walks_on_garbage(
    log: bytes, index: bytes, timeindex: bytes
) -> None:
    seg = Segment(log, base_offset=0, index=index, timeindex=timeindex)
    seg.position_of(3)
    seg.lookup_timestamp(10)
    seg.next_offset()
    seg.split_ranges(50)
    walk_offset_index(index, log, 0)
    walk_time_index(timeindex, index, log, 0)
