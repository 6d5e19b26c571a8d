"""The broker append path (``validate_and_assign``): KIP-31 offsets in place, rebuilds, and errors.

Each test states the rule of Kafka 3.9's ``LogValidator`` (or of KIP-31) it checks.
Batches are built with kwire's own builder; ``tests/oracle/test_records_convert.py`` checks the
same paths byte for byte against Kafka's classes.
"""

from __future__ import annotations

import pickle
import struct
import zlib

import crc32c
import pytest

from kwire.errors import KwireError
from kwire.records import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    BatchBuilder,
    Compression,
    build_batch,
    build_end_txn_marker,
    compress,
    read_batches,
)
from kwire.records._append import (
    ERROR_CODES,
    AppendError,
    AppendOrigin,
    AppendResult,
    RecordError,
    TopicConfig,
    magic_for_message_format_version,
    validate_and_assign,
)
from kwire.records._legacy import encode_message

NOW = 1_700_000_000_000
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
LEGACY_CODECS = [Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def v2(
    n: int = 3,
    codec: int = Compression.NONE,
    *,
    ts: list[int] | None = None,
    keys: bool = True,
    **options: int | bool,
) -> bytes:
    stamps = ts if ts is not None else [NOW - 10 + i for i in range(n)]
    b = BatchBuilder(2, codec, **options)  # type: ignore[arg-type]
    for i, t in enumerate(stamps):
        b.append(timestamp=t, key=b"k%d" % i if keys else None, value=b"value-%d" % i)
    return b.build()


def legacy(
    magic: int, n: int = 3, codec: int = Compression.NONE, *, offsets: list[int] | None = None
) -> bytes:
    b = BatchBuilder(magic, codec)
    for i, off in enumerate(offsets if offsets is not None else range(n)):
        b.append(
            offset=off,
            timestamp=NOW - 10 + i if magic else NO_TIMESTAMP,
            key=b"k%d" % i,
            value=b"value-%d" % i,
        )
    return b.build()


def rows(data: bytes | bytearray | memoryview) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, CRCs verified."""
    return [
        (
            r.offset,
            r.timestamp,
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
        )
        for batch in read_batches(data)
        for r in batch.records()
    ]


def assign(data: bytes, **kwargs: object) -> AppendResult:
    kwargs.setdefault("next_offset", 1000)
    kwargs.setdefault("now_ms", NOW)
    return validate_and_assign(data, **kwargs)  # type: ignore[arg-type]


# --- in place -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_v2_in_place_changes_only_base_offset_and_leader_epoch(codec: Compression) -> None:
    data = v2(5, codec)
    result = assign(data, partition_leader_epoch=42)
    assert result.in_place and result.rebuild_reason is None and not result.recompressed
    assert (result.first_offset, result.last_offset, result.next_offset) == (1000, 1004, 1005)
    out = bytes(result.records)
    assert len(out) == len(data)
    # Only baseOffset (bytes 0-8) and partitionLeaderEpoch (12-16) differ: both lie outside the
    # CRC, so the CRC and the whole compressed payload are the producer's bytes.
    changed = {i for i in range(len(out)) if out[i] != data[i]}
    assert changed and changed <= set(range(0, 8)) | set(range(12, 16))
    assert out[17:21] == data[17:21]
    (batch,) = read_batches(out)
    assert batch.base_offset == 1000 and batch.partition_leader_epoch == 42
    assert [r[0] for r in rows(out)] == list(range(1000, 1005))
    assert data == v2(5, codec)  # the caller's bytes are untouched


def test_v2_create_time_result_reports_the_batch_last_offset_for_the_max_timestamp() -> None:
    # Kafka 3.9's shallowOffsetOfMaxTimestamp: for v2 it is the last offset of the batch, not
    # the offset of the record that holds the max timestamp.
    for codec in (Compression.NONE, Compression.GZIP):
        result = assign(v2(3, codec, ts=[NOW - 1, NOW + 1, NOW]))
        assert result.max_timestamp == NOW + 1
        assert result.shallow_offset_of_max_timestamp == 1002
        assert result.log_append_time == NO_TIMESTAMP


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_v2_log_append_time_rewrites_attributes_max_timestamp_and_crc(codec: Compression) -> None:
    data = v2(4, codec)
    result = assign(data, config=TopicConfig(timestamp_type=LOG_APPEND_TIME))
    assert result.in_place
    out = bytes(result.records)
    (batch,) = read_batches(out)  # verifies the recomputed CRC32C
    assert batch.timestamp_type == LOG_APPEND_TIME and batch.max_timestamp == NOW
    assert out[61:] == data[61:]  # records (compressed or not) untouched
    assert {r[1] for r in rows(out)} == {NOW}
    assert result.max_timestamp == NOW and result.log_append_time == NOW
    assert result.shallow_offset_of_max_timestamp == 1003


def test_v2_producer_max_timestamp_that_disagrees_with_records_is_corrected() -> None:
    data = bytearray(v2(3, ts=[NOW - 3, NOW - 1, NOW - 2]))
    struct.pack_into(">q", data, 35, NOW - 100)  # a wrong maxTimestamp, CRC fixed up
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    result = assign(bytes(data))
    (batch,) = read_batches(result.records)
    assert batch.max_timestamp == NOW - 1 == result.max_timestamp
    assert result.in_place


def test_mutate_patches_the_callers_buffer() -> None:
    buf = bytearray(v2(3, Compression.LZ4))
    result = validate_and_assign(buf, next_offset=7, now_ms=NOW, mutate=True)
    assert read_batches(buf).__next__().base_offset == 7
    assert result.batches[0].obj is buf
    with pytest.raises(ValueError, match="writable"):
        validate_and_assign(v2(3), next_offset=7, now_ms=NOW, mutate=True)


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_legacy_messages_get_sequential_offsets_in_place(magic: int) -> None:
    data = bytearray()  # every message at offset 0, as some clients send them
    for i in range(4):
        encode_message(
            data,
            offset=0,
            magic=magic,
            attributes=0,
            timestamp=NOW - 10 + i if magic else NO_TIMESTAMP,
            key=b"k",
            value=b"v",
        )
    result = assign(bytes(data), config=TopicConfig(message_format=magic))
    assert result.in_place
    assert [r[0] for r in rows(result.records)] == [1000, 1001, 1002, 1003]
    assert len(result.batches) == 4
    if magic == 1:
        # Each message is its own batch: the shallow offset is the message holding the max.
        assert result.max_timestamp == NOW - 7
        assert result.shallow_offset_of_max_timestamp == 1003
    else:
        assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (-1, -1)


def test_uncompressed_legacy_log_append_time_follows_kafka_3_9() -> None:
    r1 = assign(legacy(1, 3), config=TopicConfig(message_format=1, timestamp_type=LOG_APPEND_TIME))
    assert {r[1] for r in rows(r1.records)} == {NOW}
    assert all(b[17] & 0x08 for b in r1.batches)  # the timestamp-type bit of every message
    assert (r1.max_timestamp, r1.shallow_offset_of_max_timestamp) == (NOW, 1000)
    r0 = assign(legacy(0, 3), config=TopicConfig(message_format=0, timestamp_type=LOG_APPEND_TIME))
    assert (r0.max_timestamp, r0.shallow_offset_of_max_timestamp) == (NO_TIMESTAMP, -1)
    assert bytes(r0.records)[12:] != b"" and r0.in_place


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_magic1_wrapper_gets_its_last_offset_and_keeps_inner_relative_offsets(
    codec: Compression,
) -> None:
    data = legacy(1, 5, codec)
    result = assign(data, config=TopicConfig(message_format=1))
    assert result.in_place and not result.recompressed
    out = bytes(result.records)
    (batch,) = read_batches(out)
    assert batch.last_offset == 1004  # the wrapper's offset field
    assert out[12:] == data[12:]  # CRC, timestamp and the compressed inner set are the same
    assert [r[0] for r in rows(out)] == list(range(1000, 1005))
    assert result.shallow_offset_of_max_timestamp == 1004 and result.max_timestamp == NOW - 6


def test_magic1_producer_wrapper_offset_zero_is_accepted_in_place() -> None:
    # Some clients leave the wrapper offset 0 (KIP-31: "leave the wrapped message's offset
    # blank"); inner offsets 0..n-1 are then used as they are, and still contiguous.
    inner = bytearray()
    for i in range(3):
        encode_message(inner, offset=i, magic=1, attributes=0, timestamp=NOW, key=b"k", value=b"v")
    wrapper = bytearray()
    encode_message(
        wrapper,
        offset=0,
        magic=1,
        attributes=Compression.GZIP,
        timestamp=NOW,
        key=None,
        value=compress(Compression.GZIP, inner, magic=1),
    )
    result = assign(bytes(wrapper), config=TopicConfig(message_format=1))
    assert result.in_place
    assert [r[0] for r in rows(result.records)] == [1000, 1001, 1002]


def test_magic1_log_append_time_stamps_the_wrapper_only() -> None:
    data = legacy(1, 3, Compression.SNAPPY)
    result = assign(data, config=TopicConfig(message_format=1, timestamp_type=LOG_APPEND_TIME))
    assert result.in_place
    out = bytes(result.records)
    assert out[26:] == data[26:]  # key/value (the compressed inner set) untouched
    assert {r[1] for r in rows(out)} == {NOW}
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (NOW, 1002)


def test_uncompressed_control_batch_from_coordinator_stays_uncompressed() -> None:
    data = build_end_txn_marker(
        producer_id=5, producer_epoch=1, coordinator_epoch=3, commit=True, timestamp=NOW
    )
    cfg = TopicConfig(compression_type="gzip")
    result = assign(data, config=cfg, origin=AppendOrigin.COORDINATOR)
    assert result.in_place and result.compression == Compression.NONE
    (batch,) = read_batches(result.records)
    assert batch.is_control and batch.base_offset == 1000
    with pytest.raises(AppendError, match="control records") as err:
        assign(data, config=cfg)
    assert err.value.error_name == "INVALID_RECORD"


# --- rebuilt ------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_codec_change_rebuilds_and_keeps_producer_state(target: str) -> None:
    data = v2(
        4,
        Compression.LZ4 if target != "lz4" else Compression.GZIP,
        producer_id=77,
        producer_epoch=3,
        base_sequence=10,
        is_transactional=True,
    )
    result = assign(data, config=TopicConfig(compression_type=target), partition_leader_epoch=9)
    assert not result.in_place and "codec change" in (result.rebuild_reason or "")
    assert result.converted_records == 4
    (batch,) = read_batches(result.records)
    assert batch.compression == TopicConfig(compression_type=target).compression
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 10)
    assert batch.is_transactional and batch.partition_leader_epoch == 9
    assert rows(result.records) == [
        (1000 + i, NOW - 10 + i, b"k%d" % i, b"value-%d" % i) for i in range(4)
    ]
    assert result.recompressed == (target != "uncompressed")


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_non_contiguous_magic1_inner_offsets_are_reassigned(codec: Compression) -> None:
    # Seed 001: mirror maker copies a compacted topic's wrapper as it is; its inner offsets have
    # holes. The broker reassigns them (rebuilding) instead of rejecting the request.
    data = legacy(1, 4, codec, offsets=[0, 2, 3, 7])
    assert [r[0] for r in rows(data)] == [0, 2, 3, 7]
    result = assign(data, config=TopicConfig(message_format=1))
    assert not result.in_place and "inner offsets" in (result.rebuild_reason or "")
    assert [r[0] for r in rows(result.records)] == [1000, 1001, 1002, 1003]
    (batch,) = read_batches(result.records)
    assert batch.compression == codec and batch.last_offset == 1003


def test_v2_non_contiguous_offsets_are_rejected() -> None:
    # Kafka is strict for v2: the header's offset range must match the record count.
    b = BatchBuilder(2)
    for off in (0, 2, 3):
        b.append(offset=off, timestamp=NOW, key=b"k", value=b"v")
    with pytest.raises(AppendError, match="inconsistent batch offset range") as err:
        assign(b.build())
    assert err.value.error_code == 87


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_magic0_target_always_rebuilds_compressed_sets(codec: Compression) -> None:
    result = assign(legacy(0, 3, codec), config=TopicConfig(message_format=0))
    assert not result.in_place and "absolute offsets" in (result.rebuild_reason or "")
    assert [r[0] for r in rows(result.records)] == [1000, 1001, 1002]


def test_up_conversion_v0_to_v1_and_v2_gives_no_timestamp() -> None:
    # Seed 001, phase 2 (a): a ProduceRequest v1 (magic 0) to a magic 1 topic is up-converted.
    for fmt in (1, 2):
        for codec in (Compression.NONE, Compression.GZIP):
            result = assign(legacy(0, 3, codec), config=TopicConfig(message_format=fmt))
            assert not result.in_place and "format conversion" in (result.rebuild_reason or "")
            assert result.magic == fmt
            assert rows(result.records) == [
                (1000 + i, NO_TIMESTAMP, b"k%d" % i, b"value-%d" % i) for i in range(3)
            ]
            assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (-1, -1)


def test_seed001_phase1_magic1_produce_to_magic0_topic_is_down_converted() -> None:
    # Phase 1 (b): absolute offsets, recompressed, no timestamps.
    result = assign(legacy(1, 3, Compression.GZIP), config=TopicConfig(message_format=0))
    assert result.magic == 0 and not result.in_place
    (batch,) = read_batches(result.records)
    assert batch.magic == 0 and batch.compression == Compression.GZIP
    assert [(r[0], r[1]) for r in rows(result.records)] == [(1000, -1), (1001, -1), (1002, -1)]


def test_down_conversion_refuses_what_old_formats_cannot_hold() -> None:
    with pytest.raises(AppendError) as err:
        assign(
            v2(2, Compression.GZIP, producer_id=1, producer_epoch=0, base_sequence=0),
            config=TopicConfig(message_format=1),
        )
    assert err.value.error_name == "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    assert "idempotent" in err.value.message
    with pytest.raises(AppendError, match="transactional"):
        assign(
            v2(2, producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True),
            config=TopicConfig(message_format=0),
        )
    b = BatchBuilder(2)
    b.append(timestamp=NOW, key=b"k", value=b"v", headers=[("h", b"x")])
    with pytest.raises(AppendError, match="headers") as err:
        assign(b.build(), config=TopicConfig(message_format=1))
    assert err.value.error_name == "UNSUPPORTED_FOR_MESSAGE_FORMAT"


def test_uncompressed_down_conversion_v2_to_v1_keeps_timestamps() -> None:
    result = assign(v2(3, ts=[NOW - 1, NOW + 1, NOW]), config=TopicConfig(message_format=1))
    assert result.magic == 1 and len(result.batches) == 3
    assert [r[1] for r in rows(result.records)] == [NOW - 1, NOW + 1, NOW]
    # MemoryRecordsBuilder.info() for uncompressed legacy: the record holding the max.
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (NOW + 1, 1001)


def test_several_uncompressed_legacy_messages_become_one_wrapper_when_the_topic_compresses() -> (
    None
):
    result = assign(legacy(1, 4), config=TopicConfig(message_format=1, compression_type="gzip"))
    (batch,) = read_batches(result.records)
    assert batch.compression == Compression.GZIP and batch.last_offset == 1003
    assert result.recompressed and result.shallow_offset_of_max_timestamp == 1003


# --- errors -------------------------------------------------------------------------------------


def test_error_codes_are_kafkas() -> None:
    assert ERROR_CODES == {
        "CORRUPT_MESSAGE": 2,
        "MESSAGE_TOO_LARGE": 10,
        "INVALID_TIMESTAMP": 32,
        "UNSUPPORTED_FOR_MESSAGE_FORMAT": 43,
        "UNSUPPORTED_COMPRESSION_TYPE": 76,
        "INVALID_RECORD": 87,
    }
    err = AppendError("INVALID_RECORD", "x", record_errors=[RecordError(1, "y")], position=4)
    assert isinstance(err, KwireError) and err.error_code == 87
    back = pickle.loads(pickle.dumps(err))
    assert (back.error_name, back.message, back.record_errors, back.position) == (
        "INVALID_RECORD",
        "x",
        (RecordError(1, "y"),),
        4,
    )
    with pytest.raises(ValueError):
        AppendError("NOT_AN_ERROR", "x")


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP], ids=lambda c: c.name)
def test_crc_mismatch_is_corrupt_message(codec: Compression) -> None:
    data = bytearray(v2(3, codec))
    data[-1] ^= 0x01
    with pytest.raises(AppendError) as err:
        assign(bytes(data))
    assert err.value.error_name == "CORRUPT_MESSAGE" and err.value.error_code == 2
    legacy_data = bytearray(legacy(1, 1))
    legacy_data[-1] ^= 0x40
    with pytest.raises(AppendError, match="CORRUPT_MESSAGE"):
        assign(bytes(legacy_data), config=TopicConfig(message_format=1))


def test_corrupt_inner_message_crc_is_corrupt_message() -> None:
    inner = bytearray()
    encode_message(inner, offset=0, magic=1, attributes=0, timestamp=NOW, key=b"k", value=b"v")
    inner[-1] ^= 0x01  # the inner CRC no longer matches; the wrapper CRC is computed after
    wrapper = bytearray()
    encode_message(
        wrapper,
        offset=0,
        magic=1,
        attributes=Compression.GZIP,
        timestamp=NOW,
        key=None,
        value=compress(Compression.GZIP, inner, magic=1),
    )
    with pytest.raises(AppendError) as err:
        assign(bytes(wrapper), config=TopicConfig(message_format=1))
    assert err.value.error_name == "CORRUPT_MESSAGE"


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD], ids=lambda c: c.name)
def test_compacted_topic_rejects_records_without_key_with_their_indexes(codec: Compression) -> None:
    b = BatchBuilder(2, codec)
    for i in range(5):
        b.append(timestamp=NOW, key=None if i in (1, 3) else b"k", value=b"v")
    with pytest.raises(AppendError) as err:
        assign(b.build(), config=TopicConfig(compacted=True))
    assert err.value.error_name == "INVALID_RECORD"
    assert [e.index for e in err.value.record_errors] == [1, 3]
    assert all("without key" in e.message for e in err.value.record_errors)
    assign(b.build())  # fine for a topic that is not compacted


def test_timestamps_out_of_bounds_are_invalid_timestamp() -> None:
    cfg = TopicConfig(timestamp_before_max_ms=1000, timestamp_after_max_ms=100)
    data = v2(4, Compression.GZIP, ts=[NOW - 1000, NOW - 1001, NOW + 100, NOW + 101])
    with pytest.raises(AppendError) as err:
        assign(data, config=cfg)
    assert err.value.error_name == "INVALID_TIMESTAMP" and err.value.error_code == 32
    assert [e.index for e in err.value.record_errors] == [1, 3]
    assert "[1699999999000, 1700000000100]" in err.value.record_errors[0].message
    # NO_TIMESTAMP is never out of range; LogAppendTime topics do not check the bounds.
    assign(v2(1, ts=[NO_TIMESTAMP]), config=cfg)
    assign(data, config=TopicConfig(timestamp_type=LOG_APPEND_TIME, timestamp_before_max_ms=1))


def test_timestamp_errors_win_over_invalid_record_in_the_same_batch() -> None:
    b = BatchBuilder(2)
    b.append(timestamp=NOW, key=None, value=b"v")
    b.append(timestamp=NOW - 10_000, key=b"k", value=b"v")
    cfg = TopicConfig(compacted=True, timestamp_before_max_ms=1)
    with pytest.raises(AppendError) as err:
        assign(b.build(), config=cfg)
    assert err.value.error_name == "INVALID_TIMESTAMP"
    assert [e.index for e in err.value.record_errors] == [0, 1]


def test_producer_must_not_send_log_append_time() -> None:
    data = v2(2, timestamp_type=LOG_APPEND_TIME, log_append_time=NOW)
    with pytest.raises(AppendError) as err:
        assign(data, config=TopicConfig(timestamp_type=LOG_APPEND_TIME))
    assert err.value.error_name == "INVALID_TIMESTAMP"
    assert [e.index for e in err.value.record_errors] == [0, 1]


def test_batch_level_rules() -> None:
    two = v2(1) + v2(1)
    with pytest.raises(AppendError, match="more than one batch"):
        assign(two)
    moved = bytearray(v2(2))
    struct.pack_into(">q", moved, 0, 5)
    with pytest.raises(AppendError, match="baseOffset of the record batch should be 0"):
        assign(bytes(moved))
    with pytest.raises(AppendError, match="invalid sequence number -1"):
        assign(v2(1, producer_id=4, producer_epoch=0))
    mixed = legacy(0, 1) + legacy(1, 1)
    with pytest.raises(AppendError, match="is not the same as the first batch's magic"):
        assign(mixed, config=TopicConfig(message_format=1))
    with pytest.raises(AppendError) as err:
        assign(v2(50), config=TopicConfig(max_message_bytes=100))
    assert err.value.error_name == "MESSAGE_TOO_LARGE" and err.value.error_code == 10


def test_count_must_match_offset_range() -> None:
    data = bytearray(v2(3))
    struct.pack_into(">i", data, 57, 2)  # recordCount 2, lastOffsetDelta 2
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    with pytest.raises(AppendError, match="inconsistent batch offset range") as err:
        assign(bytes(data))
    assert err.value.error_name == "INVALID_RECORD"


def test_nested_compression_and_inner_magic_mismatch_are_record_errors() -> None:
    def wrapper_of(*inner_specs: tuple[int, int]) -> bytes:
        inner = bytearray()
        for i, (magic, attrs) in enumerate(inner_specs):
            encode_message(
                inner, offset=i, magic=magic, attributes=attrs, timestamp=NOW, key=b"k", value=b"v"
            )
        out = bytearray()
        encode_message(
            out,
            offset=len(inner_specs) - 1,
            magic=1,
            attributes=Compression.GZIP,
            timestamp=NOW,
            key=None,
            value=compress(Compression.GZIP, inner, magic=1),
        )
        return bytes(out)

    cfg = TopicConfig(message_format=1)
    with pytest.raises(AppendError) as err:
        assign(wrapper_of((1, 0), (1, Compression.GZIP)), config=cfg)
    assert err.value.error_name == "INVALID_RECORD"
    assert [e.index for e in err.value.record_errors] == [1]
    with pytest.raises(AppendError) as err:
        assign(wrapper_of((1, 0), (0, 0), (1, 0)), config=cfg)
    assert err.value.error_name == "INVALID_RECORD"
    assert [e.index for e in err.value.record_errors] == [1]
    assert "magic 0 does not match outer magic 1" in err.value.record_errors[0].message


def test_zstd_rules() -> None:
    with pytest.raises(AppendError) as err:
        assign(v2(2, Compression.ZSTD), config=TopicConfig(message_format=1))
    assert err.value.error_name == "UNSUPPORTED_COMPRESSION_TYPE" and err.value.error_code == 76
    with pytest.raises(AppendError, match="ZStandard") as err:
        assign(v2(2, Compression.ZSTD), produce_version=6)
    assert err.value.error_code == 76
    assert assign(v2(2, Compression.ZSTD), produce_version=7).in_place


def test_produce_version_checks() -> None:
    with pytest.raises(AppendError, match="magic version 2"):
        assign(legacy(1, 1), produce_version=3, config=TopicConfig(message_format=1))
    assert assign(legacy(1, 2), produce_version=2, config=TopicConfig(message_format=1)).in_place


def test_truncated_tail_is_trimmed_and_empty_input_appends_nothing() -> None:
    data = legacy(1, 3)
    result = assign(data + data[:20], config=TopicConfig(message_format=1))
    assert len(result.records) == len(data) and result.last_offset == 1002
    empty = assign(b"")
    assert (empty.first_offset, empty.last_offset, empty.next_offset) == (-1, -1, -1)
    assert empty.records == b"" and empty.batches == ()
    assert assign(data[:20], config=TopicConfig(message_format=1)).record_count == 0


def test_garbage_is_a_typed_error() -> None:
    with pytest.raises(AppendError) as err:
        assign(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 30)
    assert err.value.error_name == "CORRUPT_MESSAGE"


# --- replication and configuration --------------------------------------------------------------


def test_replication_keeps_the_leaders_offsets() -> None:
    data = build_batch(
        [(500 + i, NOW + i, b"k", b"v") for i in range(3)],
        base_offset=500,
        partition_leader_epoch=4,
    )
    result = assign(data, next_offset=500, origin=AppendOrigin.REPLICATION)
    assert bytes(result.records) == data
    assert (result.first_offset, result.last_offset, result.max_timestamp) == (500, 502, NOW + 2)
    with pytest.raises(AppendError, match="below the log end offset"):
        assign(data, next_offset=501, origin=AppendOrigin.REPLICATION)


def test_topic_config_from_kafka_properties() -> None:
    cfg = TopicConfig.from_properties(
        {
            "message.format.version": "0.10.2-IV0",
            "compression.type": "lz4",
            "message.timestamp.type": "LogAppendTime",
            "message.timestamp.difference.max.ms": "5000",
            "message.timestamp.after.max.ms": "10",
            "cleanup.policy": "compact,delete",
            "max.message.bytes": "2048",
        }
    )
    assert cfg == TopicConfig(
        message_format=1,
        compression_type="lz4",
        timestamp_type=LOG_APPEND_TIME,
        timestamp_before_max_ms=5000,
        timestamp_after_max_ms=10,
        compacted=True,
        max_message_bytes=2048,
    )
    assert cfg.compression == Compression.LZ4
    assert TopicConfig().compression is None and TopicConfig().timestamp_type == CREATE_TIME
    for bad in ({"message_format": 3}, {"compression_type": "brotli"}, {"timestamp_type": 2}):
        with pytest.raises(ValueError):
            TopicConfig(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("version", "magic"),
    [("0.8.2", 0), ("0.9.0.1", 0), ("0.10.0-IV1", 1), ("0.10.2", 1), ("0.11.0", 2), ("3.9", 2)],
)
def test_message_format_version_to_magic(version: str, magic: int) -> None:
    assert magic_for_message_format_version(version) == magic


def test_legacy_patch_recomputes_crc32_over_magic_to_end() -> None:
    data = legacy(1, 1)
    result = assign(data, config=TopicConfig(message_format=1, timestamp_type=LOG_APPEND_TIME))
    out = bytes(result.records)
    assert struct.unpack_from(">I", out, 12)[0] == zlib.crc32(out[16:]) & 0xFFFFFFFF
    assert struct.unpack_from(">q", out, 18)[0] == NOW


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP], ids=lambda c: c.name)
def test_v2_shuffled_offset_deltas_with_a_consistent_header(codec: Compression) -> None:
    # lastOffsetDelta = count - 1, but the records' deltas are 0, 2, 1. Kafka's compressed path
    # notices (record.offset() != expected) and rebuilds with 0, 1, 2; its uncompressed path only
    # rewrites the header and keeps the producer's deltas.
    from kwire.records._v2 import encode_batch, encode_records  # compresses the records itself

    body = bytearray()
    encode_records(body, [(d, 0, b"k%d" % d, b"v", ()) for d in (0, 2, 1)])
    out = bytearray()
    encode_batch(
        out,
        body,
        count=3,
        base_offset=0,
        last_offset_delta=2,
        base_timestamp=NOW,
        max_timestamp=NOW,
        compression=codec,
    )
    result = assign(bytes(out))
    got = [(r[0], r[2]) for r in rows(result.records)]
    if codec == Compression.NONE:
        assert result.in_place
        assert got == [(1000, b"k0"), (1002, b"k2"), (1001, b"k1")]
    else:
        assert not result.in_place and "inner offsets" in (result.rebuild_reason or "")
        assert got == [(1000, b"k0"), (1001, b"k2"), (1002, b"k1")]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_batch_without_records_is_not_allowed(codec: Compression) -> None:
    # Kafka's testBatchWithoutRecordsNotAllowed: an empty header (lastOffsetDelta 5, count 0).
    from kwire.records._v2 import encode_batch

    out = bytearray()
    encode_batch(
        out,
        b"",
        count=0,
        base_offset=0,
        last_offset_delta=5,
        base_timestamp=NOW,
        max_timestamp=NOW,
        compression=codec,
        producer_id=1324,
        producer_epoch=10,
        base_sequence=984,
        is_transactional=True,
        partition_leader_epoch=40,
    )
    for target in ("producer", "gzip", "uncompressed"):
        with pytest.raises(AppendError, match="invalid reported count") as err:
            assign(bytes(out), config=TopicConfig(compression_type=target))
        assert err.value.error_name == "INVALID_RECORD"
