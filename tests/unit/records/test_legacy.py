"""Magic 0/1 message sets: KIP-31 relative offsets, wrappers, timestamps, malformed wrappers."""

from __future__ import annotations

import pytest

from kwire.errors import CorruptRecordError
from kwire.records import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    Compression,
    LegacyBatch,
    compress,
    read_batch,
    read_batches,
)
from kwire.records._legacy import ATTR_TIMESTAMP_TYPE, encode_message


def _inner(magic: int, offsets: list[int], timestamps: list[int] | None = None) -> bytes:
    out = bytearray()
    for i, off in enumerate(offsets):
        encode_message(
            out,
            offset=off,
            magic=magic,
            attributes=0,
            timestamp=timestamps[i] if timestamps else 1000 + i,
            key=b"k%d" % i,
            value=b"v%d" % i,
        )
    return bytes(out)


def _wrapper(
    magic: int,
    wrapper_offset: int,
    inner: bytes,
    *,
    codec: Compression = Compression.GZIP,
    timestamp: int = 5000,
    log_append: bool = False,
) -> bytes:
    out = bytearray()
    encode_message(
        out,
        offset=wrapper_offset,
        magic=magic,
        attributes=codec | (ATTR_TIMESTAMP_TYPE if log_append else 0),
        timestamp=timestamp,
        key=None,
        value=compress(codec, inner, magic=magic),
    )
    return bytes(out)


def _offsets(data: bytes) -> list[int]:
    return [r.offset for b in read_batches(data) for r in b]


def test_magic1_relative_offsets_with_holes() -> None:
    # compacted: inner relative offsets 0, 2, 5; the wrapper holds the absolute last offset
    data = _wrapper(1, 105, _inner(1, [0, 2, 5]))
    assert _offsets(data) == [100, 102, 105]
    batch = read_batch(data)
    assert isinstance(batch, LegacyBatch)
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (100, 105, 3)
    assert batch.is_compressed and batch.offset == 105
    assert batch.inner_entries()[1][:2] == (2, 1)


def test_magic1_wrapper_offset_zero_uses_inner_offsets_as_they_are() -> None:
    assert _offsets(_wrapper(1, 0, _inner(1, [0, 1, 2]))) == [0, 1, 2]
    assert _offsets(_wrapper(1, 0, _inner(1, [3, 4]))) == [3, 4]


def test_magic1_wrapper_offset_below_last_inner_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="less than the last inner offset"):
        _offsets(_wrapper(1, 3, _inner(1, [0, 1, 5])))


def test_magic0_inner_offsets_are_absolute() -> None:
    data = _wrapper(0, 42, _inner(0, [40, 41, 42]))
    assert _offsets(data) == [40, 41, 42]
    rec = next(iter(read_batch(data)))
    assert rec.timestamp == NO_TIMESTAMP and rec.timestamp_type == NO_TIMESTAMP_TYPE


def test_log_append_time_wrapper_gives_its_timestamp() -> None:
    data = _wrapper(1, 2, _inner(1, [0, 1, 2], [7, 8, 9]), timestamp=777, log_append=True)
    recs = list(read_batch(data))
    assert [(r.timestamp, r.timestamp_type) for r in recs] == [(777, LOG_APPEND_TIME)] * 3
    data = _wrapper(1, 2, _inner(1, [0, 1, 2], [7, 8, 9]), timestamp=777)
    assert [(r.timestamp, r.timestamp_type) for r in read_batch(data)] == [
        (7, CREATE_TIME),
        (8, CREATE_TIME),
        (9, CREATE_TIME),
    ]


def test_nested_compression_is_corrupt() -> None:
    nested = _wrapper(1, 0, _inner(1, [0]))
    with pytest.raises(CorruptRecordError, match="must not be compressed"):
        _offsets(_wrapper(1, 0, nested))


def test_empty_and_null_wrappers_are_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="no inner messages"):
        _offsets(_wrapper(1, 0, b""))
    out = bytearray()
    encode_message(
        out, offset=0, magic=1, attributes=Compression.GZIP, timestamp=0, key=None, value=None
    )
    with pytest.raises(CorruptRecordError, match="null value"):
        list(read_batches(out))


def test_zstd_is_not_a_legacy_codec() -> None:
    out = bytearray()
    encode_message(out, offset=0, magic=1, attributes=4, timestamp=0, key=None, value=b"x")
    with pytest.raises(CorruptRecordError, match="codec id 4"):
        list(read_batches(out))


def test_errors_say_where() -> None:
    good = _inner(1, [0])
    bad = bytearray(good + good)
    bad[len(good) + 20] ^= 0xFF  # in the second message's CRC-covered bytes
    with pytest.raises(CorruptRecordError) as info:
        list(read_batches(bad))
    assert info.value.offset == len(good) + 12  # the CRC field of the second message
    assert "legacy message at offset 0" in str(info.value)


def test_inner_crc_checked_and_located() -> None:
    inner = bytearray(_inner(1, [0, 1]))
    inner[-1] ^= 1  # break the second inner message's CRC (inside the compressed value)
    data = _wrapper(1, 1, bytes(inner))
    with pytest.raises(CorruptRecordError) as info:
        _offsets(data)
    assert info.value.path == "inner[1]"
    assert "decompressed" in str(info.value)
    batch = read_batch(data, verify_crc=False)
    assert [bytes(r.value or b"") for r in batch] == [b"v0", b"v0"]  # "v1" with a flipped bit
