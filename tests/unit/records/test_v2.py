"""Magic 2 specifics: empty batches, delete horizon, control records, located errors."""

from __future__ import annotations

import pytest

from kwire.errors import CorruptRecordError, EncodeError
from kwire.records import (
    BatchBuilder,
    Compression,
    ControlRecordType,
    EndTransactionMarker,
    RecordBatch,
    build_control_batch,
    build_end_txn_marker,
    decode_control_record,
    read_batch,
    read_batches,
)
from kwire.records._v2 import HEADER, HEADER_SIZE, crc32c, encode_batch


def test_empty_batch_left_by_compaction() -> None:
    out = bytearray()
    encode_batch(
        out,
        b"",
        count=0,
        base_offset=500,
        last_offset_delta=9,
        base_timestamp=-1,
        max_timestamp=-1,
        producer_id=7,
        producer_epoch=1,
        base_sequence=40,
        is_transactional=True,
    )
    assert len(out) == HEADER_SIZE
    batch = read_batch(out)
    assert isinstance(batch, RecordBatch)
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (500, 509, 0)
    assert list(batch) == []
    batch.verify()


@pytest.mark.parametrize("codec", list(Compression))
@pytest.mark.parametrize("tail", [b"", b"\x00", b"garbage that is no record and no frame"])
def test_zero_count_batch_has_no_records_whatever_follows(codec: Compression, tail: bytes) -> None:
    """Kafka's DefaultRecordBatch.iterator(): count 0 means no records, the bytes are not read."""
    from kwire.records import decode_to_arrow

    real = BatchBuilder(2, codec)
    real.append(0, 1, b"k", b"v")
    section = real.build()[HEADER_SIZE:]  # a real (compressed) records section
    for body in (tail, section, section + tail):
        out = bytearray()
        encode_batch(
            out,
            body,
            count=0,
            base_offset=70,
            last_offset_delta=3,
            base_timestamp=5,
            max_timestamp=5,
        )
        out[22] |= codec  # attributes (int16 at 21): codec bits; the records stay as given
        out[17:21] = crc32c(memoryview(out)[21:]).to_bytes(4, "big")
        data = bytes(out) + real.build()  # a normal batch after it is still read
        first, second = read_batches(data)
        assert first.record_count == 0 and first.compression == codec
        assert list(first) == [] and list(first.records()) == []
        first.verify()
        assert [(r.offset, bytes(r.value or b"")) for r in second] == [(0, b"v")]
        table = decode_to_arrow(data)
        assert table.column("offset").to_pylist() == [0]
    # the CRC still covers the ignored bytes
    broken = bytearray(out)
    broken[HEADER_SIZE] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        read_batch(bytes(broken))


def test_header_layout_is_61_bytes_in_kafka_order() -> None:
    assert HEADER.size == HEADER_SIZE == 61
    b = BatchBuilder(2, base_offset=0x0102030405060708, partition_leader_epoch=0x11223344)
    b.append(0x0102030405060708, 5, b"k", b"v")
    data = b.build()
    assert data[:8] == bytes.fromhex("0102030405060708")
    assert int.from_bytes(data[8:12], "big") == len(data) - 12
    assert data[12:16] == bytes.fromhex("11223344")
    assert data[16] == 2


def test_delete_horizon() -> None:
    b = BatchBuilder(2, delete_horizon_ms=1_000_000)
    b.append(timestamp=1_000_500, value=b"x")
    batch = read_batch(b.build())
    assert isinstance(batch, RecordBatch)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 1_000_000
    assert batch.base_timestamp == 1_000_000
    assert [r.timestamp for r in batch] == [1_000_500]


def test_end_txn_marker_roundtrip() -> None:
    data = build_end_txn_marker(
        False, coordinator_epoch=9, producer_id=5, producer_epoch=2, offset=30, timestamp=99
    )
    batch = read_batch(data)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch) == (5, 2)
    (rec,) = batch
    assert rec.is_control
    control = decode_control_record(rec)
    assert control.type == ControlRecordType.ABORT
    assert control.value == EndTransactionMarker(ControlRecordType.ABORT, 9)
    assert (control.offset, control.timestamp) == (30, 99)


def test_other_control_types_and_unknown() -> None:
    data = build_control_batch(ControlRecordType.SNAPSHOT_FOOTER, b"\x00\x00\x00", offset=3)
    (rec,) = read_batch(data)
    control = decode_control_record(rec)
    assert control.type == ControlRecordType.SNAPSHOT_FOOTER
    assert not read_batch(data).is_transactional
    data = build_control_batch(77, b"payload")
    control = decode_control_record(next(iter(read_batch(data))))
    assert (control.type, control.type_id, control.value) == (
        ControlRecordType.UNKNOWN,
        77,
        b"payload",
    )
    with pytest.raises(EncodeError):
        build_control_batch(ControlRecordType.UNKNOWN, None)


def test_malformed_control_records() -> None:
    b = BatchBuilder(2, is_control=True)
    b.append(key=b"\x00", value=b"")
    with pytest.raises(CorruptRecordError, match="key of 1 bytes"):
        decode_control_record(next(iter(read_batch(b.build()))))
    b = BatchBuilder(2, is_control=True, is_transactional=True)
    b.append(key=b"\x00\x00\x00\x01", value=b"\x00\x00")
    with pytest.raises(CorruptRecordError, match="marker value of 2 bytes"):
        decode_control_record(next(iter(read_batch(b.build()))))


def test_record_errors_are_located_in_the_callers_buffer() -> None:
    prefix = BatchBuilder(2)
    prefix.append(value=b"first")
    first = prefix.build()
    b = BatchBuilder(2, base_offset=10)
    b.append(value=b"a")
    b.append(value=b"b")
    second = bytearray(b.build())
    # make the second record's value length claim 63 bytes (zigzag 0x7e), CRC not checked
    pos = second.rindex(b"b") - 1
    second[pos] = 0x7E
    data = first + bytes(second)
    with pytest.raises(CorruptRecordError) as info:
        for batch in read_batches(data, verify_crc=False):
            list(batch)
    err = info.value
    assert err.context == "batch at base offset 10"
    assert err.path == "records[1]"
    assert err.offset is not None and len(first) + HEADER_SIZE <= err.offset < len(data)


def test_compressed_record_errors_name_the_batch() -> None:
    b = BatchBuilder(2, Compression.GZIP, base_offset=77)
    b.append(value=b"x")
    data = bytearray(b.build())
    data[HEADER_SIZE + 12] ^= 0xFF  # inside the gzip stream
    with pytest.raises(CorruptRecordError) as info:
        list(read_batch(data, verify_crc=False))
    assert "batch at base offset 77" in str(info.value)


def test_invalid_magic_and_short_batches() -> None:
    b = BatchBuilder(2)
    b.append(value=b"v")
    data = bytearray(b.build())
    data[16] = 3
    with pytest.raises(CorruptRecordError, match="invalid magic byte 3"):
        list(read_batches(data))
    bad = bytearray(b.build())
    bad[8:12] = (10).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        list(read_batches(bad))


def test_v2_rejects_builder_misuse() -> None:
    with pytest.raises(EncodeError):
        BatchBuilder(0, is_transactional=True)
    b = BatchBuilder(2)
    b.append(0)
    with pytest.raises(EncodeError):
        b.append(2**31)
