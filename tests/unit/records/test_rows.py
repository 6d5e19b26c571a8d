"""Row API: build batches of every magic x codec and read them back."""

from __future__ import annotations

import pytest

from kwire.errors import CorruptRecordError, EncodeError, UnsupportedCodecError
from kwire.records import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    BatchBuilder,
    Compression,
    LegacyBatch,
    RecordBatch,
    read_batch,
    read_batches,
)

COMBOS = [(m, c) for m in (0, 1, 2) for c in Compression if not (c == Compression.ZSTD and m < 2)]


def _rows(data: bytes) -> list[tuple[object, ...]]:
    out = []
    for batch in read_batches(data):
        for r in batch:
            out.append(
                (
                    r.offset,
                    r.timestamp,
                    r.timestamp_type,
                    None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value),
                    tuple((k, None if v is None else bytes(v)) for k, v in r.headers),
                )
            )
    return out


@pytest.mark.parametrize(("magic", "codec"), COMBOS)
def test_roundtrip_every_magic_and_codec(magic: int, codec: Compression) -> None:
    b = BatchBuilder(magic, codec, base_offset=1000)
    expected = []
    for i in range(50):
        key = None if i % 7 == 0 else b"key-%d" % i
        value = None if i % 11 == 0 else bytes([i]) * (i * 13)
        headers = ((f"h{i}", b"v"), ("null", None)) if magic == 2 and i % 3 == 0 else ()
        offset = 1000 + i * 2  # holes, as compaction leaves them
        ts = 1_700_000_000_000 + i
        assert b.append(offset, ts, key, value, headers) == offset
        expected.append(
            (
                offset,
                ts if magic > 0 else NO_TIMESTAMP,
                CREATE_TIME if magic > 0 else NO_TIMESTAMP_TYPE,
                key,
                value,
                headers,
            )
        )
    data = b.build()
    assert _rows(data) == expected
    batches = list(read_batches(data))
    if magic == 2 or codec != Compression.NONE:
        assert len(batches) == 1
        (batch,) = batches
        assert batch.base_offset == 1000
        assert batch.last_offset == 1098
        assert batch.record_count == 50
        assert batch.compression == codec
        assert batch.size == len(data)
        if magic > 0:
            assert batch.max_timestamp == 1_700_000_000_049
    else:
        assert [bt.base_offset for bt in batches] == [e[0] for e in expected]
    for bt in batches:
        assert isinstance(bt, RecordBatch if magic == 2 else LegacyBatch)
        assert bt.magic == magic
        bt.verify()


def test_v2_header_fields() -> None:
    b = BatchBuilder(
        2,
        base_offset=42,
        producer_id=77,
        producer_epoch=3,
        base_sequence=2**31 - 2,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    for i in range(4):
        b.append(timestamp=500 - i, key=b"k", value=b"v")
    batch = read_batch(b.build())
    assert isinstance(batch, RecordBatch)
    assert batch.header_dict() | {"crc": 0} == {
        "base_offset": 42,
        "batch_length": batch.size - 12,
        "partition_leader_epoch": 9,
        "magic": 2,
        "crc": 0,
        "attributes": 0x10,
        "last_offset_delta": 3,
        "base_timestamp": 500,
        "max_timestamp": 500,
        "producer_id": 77,
        "producer_epoch": 3,
        "base_sequence": 2**31 - 2,
        "record_count": 4,
    }
    assert batch.is_transactional and not batch.is_control
    # sequences wrap at Int32.MAX like Kafka's DefaultRecordBatch.incrementSequence
    assert [r.sequence for r in batch] == [2**31 - 2, 2**31 - 1, 0, 1]
    assert [r.timestamp for r in batch] == [500, 499, 498, 497]


def test_log_append_time_v2_and_v1() -> None:
    for magic in (1, 2):
        for codec in (Compression.NONE, Compression.GZIP):
            b = BatchBuilder(magic, codec, timestamp_type=LOG_APPEND_TIME, log_append_time=9999)
            b.append(timestamp=5, value=b"a")
            b.append(timestamp=6, value=b"b")
            rows = _rows(b.build())
            assert [(r[1], r[2]) for r in rows] == [(9999, LOG_APPEND_TIME)] * 2


def test_zero_copy_views() -> None:
    b = BatchBuilder(2)
    b.append(key=b"key", value=b"value", headers=[("h", b"hv")])
    data = bytearray(b.build())
    (rec,) = read_batch(data)
    assert isinstance(rec.key, memoryview) and isinstance(rec.value, memoryview)
    detached = rec.copy()
    pos = data.find(b"value")
    data[pos] = ord("V")  # the views see the caller's buffer, the copy does not
    assert bytes(rec.value) == b"Value"
    assert detached.value == b"value"
    assert detached.headers == (("h", b"hv"),)


def test_builder_rejects() -> None:
    with pytest.raises(UnsupportedCodecError):
        BatchBuilder(1, Compression.ZSTD)
    with pytest.raises(EncodeError):
        BatchBuilder(1).append(headers=[("a", b"b")])
    b = BatchBuilder(2, base_offset=10)
    b.append(12)
    with pytest.raises(EncodeError):
        b.append(12)
    with pytest.raises(EncodeError):
        BatchBuilder(2).append(timestamp=-5)
    with pytest.raises(EncodeError):
        BatchBuilder(2, timestamp_type=LOG_APPEND_TIME)


def test_truncated_tail() -> None:
    b = BatchBuilder(2)
    b.append(value=b"x")
    one = b.build()
    data = one + one[:30]
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(read_batches(data))
    reader = read_batches(data, allow_truncated_tail=True)
    assert len(list(reader)) == 1
    assert reader.truncated_at == len(one)
    assert reader.position == len(one)


def test_crc_checked_and_skippable() -> None:
    b = BatchBuilder(2)
    b.append(value=b"hello")
    data = bytearray(b.build())
    data[data.find(b"hello") + 4] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC32C"):
        list(read_batches(data))
    (batch,) = read_batches(data, verify_crc=False)
    assert bytes(next(iter(batch)).value or b"") == b"helln"


def test_zigzag_bytes_is_canonical() -> None:
    from kwire._wire import write_varint
    from kwire.records._v2 import zigzag_bytes

    values = [*range(-20000, 20000, 7), 2**21, -(2**21), 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]
    for v in values:
        expected = bytearray()
        write_varint(expected, v)
        assert zigzag_bytes(v) == bytes(expected), v
