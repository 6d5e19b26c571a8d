"""Fuzz: malformed record bytes only ever raise kwire's typed errors, and CRCs catch every bit flip."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kwire.errors import CorruptRecordError, DecodeError
from kwire.records import (
    BatchBuilder,
    Compression,
    build_end_txn_marker,
    decode_control_record,
    read_batches,
)

COMBOS = [(m, c) for m in (0, 1, 2) for c in Compression if not (c == Compression.ZSTD and m < 2)]


def _consume(data: bytes | bytearray, *, verify_crc: bool = True) -> int:
    """Touch everything a reader can touch; returns the number of records."""
    n = 0
    for batch in read_batches(data, verify_crc=verify_crc, max_decompressed_size=1 << 20):
        _ = (batch.base_offset, batch.last_offset, batch.record_count, batch.compression)
        _ = (batch.max_timestamp, batch.base_timestamp, batch.timestamp_type)
        for r in batch:
            _ = (r.offset, r.timestamp, r.sequence, r.key, r.value, r.headers)
            if batch.is_control:
                decode_control_record(r)
            n += 1
    return n


def _typed_only(data: bytes | bytearray, *, verify_crc: bool = True) -> bool:
    """Consume ``data``: True if it decoded; a kwire error must say where, anything else fails."""
    try:
        _consume(data, verify_crc=verify_crc)
    except DecodeError as exc:
        assert exc.offset is not None or exc.context, exc
        return False
    return True


def _sample(magic: int, codec: Compression, seed: int = 0) -> bytes:
    rnd = random.Random(seed)
    b = BatchBuilder(magic, codec, base_offset=10)
    for i in range(4):
        headers = [("h", rnd.randbytes(3)), ("n", None)] if magic == 2 else []
        b.append(10 + 2 * i, 1000 + i, rnd.randbytes(4), rnd.randbytes(12) * 2, headers)
    return b.build()


@pytest.mark.parametrize(("magic", "codec"), COMBOS)
def test_every_bit_flip_in_crc_covered_bytes_is_detected(magic: int, codec: Compression) -> None:
    data = _sample(magic, codec)
    assert _consume(data) > 0
    # per batch: the CRC field itself and the bytes it covers (v2: attributes..end at 21,
    # legacy: magic..end at 16; both store the CRC just before what it covers)
    covered: list[int] = []
    for batch in read_batches(data):
        first = batch.position + (21 if magic == 2 else 16)
        covered += range(first - 4, batch.position + batch.size)
    assert len(covered) > len(data) // 2
    for pos in covered:
        for bit in range(8):
            flipped = bytearray(data)
            flipped[pos] ^= 1 << bit
            with pytest.raises(CorruptRecordError):
                _consume(flipped)


@pytest.mark.parametrize(("magic", "codec"), COMBOS)
def test_bit_flips_anywhere_without_crc_only_typed_errors(magic: int, codec: Compression) -> None:
    data = _sample(magic, codec, seed=1)
    for pos in range(len(data)):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[pos] ^= 1 << bit
            for verify in (True, False):
                _typed_only(flipped, verify_crc=verify)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.booleans())
def test_random_bytes_only_typed_errors(data: bytes, verify: bool) -> None:
    _typed_only(data, verify_crc=verify)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(COMBOS),
    st.integers(0, 2**32),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    st.booleans(),
)
def test_mutated_batches_only_typed_errors(
    combo: tuple[int, Compression], seed: int, edits: list[tuple[int, int]], verify: bool
) -> None:
    data = bytearray(
        _sample(*combo, seed=seed)
        + build_end_txn_marker(
            True, coordinator_epoch=1, producer_id=1, producer_epoch=0, offset=100
        )
    )
    for pos, value in edits:
        data[pos % len(data)] = value
    _typed_only(data, verify_crc=verify)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(COMBOS), st.integers(1, 400))
def test_truncation_is_typed(combo: tuple[int, Compression], cut: int) -> None:
    data = _sample(*combo)
    cut = min(cut, len(data) - 1)
    assume(cut not in {b.position for b in read_batches(data)})  # a clean end is not truncation
    with pytest.raises(CorruptRecordError):
        _consume(data[:cut])
    reader = read_batches(data[:cut], allow_truncated_tail=True)
    assert list(reader) == [] or (combo[0] < 2 and combo[1] == Compression.NONE)
    assert reader.truncated_at is not None
