"""Format conversion (``convert``, ``convert_for_fetch``): what is kept, what is lost, and the count.

Down-conversion follows Kafka's ``RecordsUtil.downConvert`` (checked byte for byte in
``tests/oracle/test_records_convert.py``); these tests pin the rules and the loss report.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import CorruptRecordError, UnsupportedCodecError, UnsupportedVersionError
from kwire.records import (
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    BatchBuilder,
    Compression,
    build_end_txn_marker,
    read_batches,
)
from kwire.records._convert import (
    ConversionLoss,
    convert,
    convert_for_fetch,
    magic_for_fetch_version,
    magic_for_produce_version,
)

NOW = 1_700_000_000_000
Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def rows(data: bytes | memoryview) -> list[Row]:
    return [
        (
            r.offset,
            r.timestamp,
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            tuple((k, None if v is None else bytes(v)) for k, v in r.headers),
        )
        for b in read_batches(data)
        for r in b.records()
    ]


def v2_batch(
    offsets: list[int], codec: int = Compression.NONE, *, headers: bool = True, **opts: object
) -> bytes:
    b = BatchBuilder(2, codec, base_offset=offsets[0], **opts)  # type: ignore[arg-type]
    for i, off in enumerate(offsets):
        b.append(
            offset=off,
            timestamp=NOW + i,
            key=None if i % 3 == 2 else b"key-%d" % off,
            value=None if i % 4 == 3 else b"value-%d" % off,
            headers=[("h", b"x"), ("n", None)] if headers and i % 2 == 0 else (),
        )
    return b.build()


@pytest.mark.parametrize("codec", [0, 1, 2, 3], ids=lambda c: Compression(c).name)
@pytest.mark.parametrize("to_magic", [0, 1])
def test_down_conversion_keeps_offsets_holes_keys_values(codec: int, to_magic: int) -> None:
    offsets = [10, 11, 14, 15, 20]  # holes, as compaction leaves them
    data = v2_batch(
        offsets, codec, producer_id=3, producer_epoch=1, base_sequence=0, partition_leader_epoch=5
    )
    result = convert(data, to_magic)
    assert result.magic == to_magic and result.batches_converted == 1
    out = rows(result.records)
    src = rows(data)
    assert [r[0] for r in out] == offsets
    assert [(r[2], r[3]) for r in out] == [(r[2], r[3]) for r in src]
    assert all(r[4] == () for r in out)
    assert [r[1] for r in out] == ([NO_TIMESTAMP] * 5 if to_magic == 0 else [r[1] for r in src])
    batches = list(read_batches(result.records))
    assert all(b.magic == to_magic for b in batches)
    if codec:
        assert len(batches) == 1 and batches[0].compression == codec
        assert batches[0].last_offset == 20  # the wrapper carries the last offset
    else:
        assert len(batches) == 5
    loss = result.loss
    assert (loss.headers, loss.records_with_headers) == (6, 3)
    assert loss.producer_state == 1 and loss.partition_leader_epochs == 1
    assert loss.timestamps == (5 if to_magic == 0 else 0)
    assert not result.lossless and loss.describe()


def test_every_kind_of_loss_is_described() -> None:
    loss = ConversionLoss(headers=2, control_batches=1, timestamps=3)
    assert loss.describe() == [
        "2 record headers dropped",
        "1 control batches dropped",
        "3 record timestamps dropped",
    ]
    assert ConversionLoss().lossless and ConversionLoss().describe() == []


def test_control_batches_are_dropped_below_magic_2() -> None:
    marker = build_end_txn_marker(
        True, coordinator_epoch=2, producer_id=9, producer_epoch=0, offset=3, timestamp=NOW
    )
    data = (
        v2_batch(
            [0, 1, 2],
            headers=False,
            producer_id=9,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        + marker
    )
    result = convert(data, 1)
    assert [r[0] for r in rows(result.records)] == [0, 1, 2]
    assert result.loss.control_batches == 1 and result.loss.control_records == 1
    assert result.loss.transactional == 1 and result.loss.producer_state == 1


def test_log_append_time_survives_to_magic1_and_is_reported_lost_at_magic0() -> None:
    data = v2_batch(
        [0, 1],
        Compression.GZIP,
        headers=False,
        timestamp_type=LOG_APPEND_TIME,
        log_append_time=NOW + 99,
    )
    r1 = convert(data, 1)
    (batch,) = read_batches(r1.records)
    assert batch.timestamp_type == LOG_APPEND_TIME and batch.max_timestamp == NOW + 99
    assert {r[1] for r in rows(r1.records)} == {NOW + 99}
    assert r1.lossless
    r0 = convert(data, 0)
    assert r0.loss.log_append_time == 1 and r0.loss.timestamps == 2


def test_first_offset_skips_uncompressed_v2_records_only() -> None:
    plain = v2_batch([0, 1, 2, 3], headers=False)
    result = convert(plain, 1, first_offset=2)
    assert [r[0] for r in rows(result.records)] == [2, 3]
    assert result.loss.records_before_first_offset == 2
    packed = v2_batch([0, 1, 2, 3], Compression.LZ4, headers=False)
    assert [r[0] for r in rows(convert(packed, 1, first_offset=2).records)] == [0, 1, 2, 3]
    assert convert(plain, 1, first_offset=10).records == b""


def test_zstd_cannot_go_below_magic_2_unless_recompressed() -> None:
    data = v2_batch([0, 1], Compression.ZSTD, headers=False)
    with pytest.raises(UnsupportedCodecError, match="zstd"):
        convert(data, 1)
    result = convert(data, 1, compression=Compression.GZIP)
    (batch,) = read_batches(result.records)
    assert batch.compression == Compression.GZIP and batch.magic == 1
    with pytest.raises(UnsupportedCodecError):
        convert(data, 0, compression=Compression.ZSTD)


def test_strict_refuses_to_lose_anything() -> None:
    data = v2_batch([0, 1], headers=True)
    with pytest.raises(UnsupportedVersionError, match="record headers dropped"):
        convert(data, 1, strict=True)
    clean = v2_batch([0, 1], headers=False)
    assert convert(clean, 1, strict=True).lossless


def test_same_format_is_copied_unchanged() -> None:
    data = v2_batch([0, 1, 2], Compression.SNAPPY)
    result = convert(data, 2)
    assert result.records == data and result.batches_copied == 1 and result.records_converted == 0


def test_recompressing_v2_keeps_the_whole_header() -> None:
    data = v2_batch(
        [5, 6, 9],
        Compression.GZIP,
        producer_id=4,
        producer_epoch=2,
        base_sequence=7,
        is_transactional=True,
        partition_leader_epoch=11,
    )
    result = convert(data, 2, compression=Compression.LZ4)
    (old,) = read_batches(data)
    (new,) = read_batches(result.records)
    assert new.compression == Compression.LZ4
    for field in (
        "base_offset",
        "last_offset",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "partition_leader_epoch",
        "max_timestamp",
        "record_count",
    ):
        assert getattr(new, field) == getattr(old, field), field
    assert rows(result.records) == rows(data) and result.lossless


def test_up_conversion_joins_plain_legacy_messages_and_keeps_offsets() -> None:
    legacy0 = BatchBuilder(0, base_offset=40)
    for off in (40, 41, 45):
        legacy0.append(offset=off, key=b"k%d" % off, value=b"v")
    result = convert(legacy0.build(), 2)
    (batch,) = read_batches(result.records)
    assert batch.magic == 2 and batch.base_offset == 40 and batch.last_offset == 45
    assert [(r[0], r[1]) for r in rows(result.records)] == [(40, -1), (41, -1), (45, -1)]
    assert result.lossless and result.batches_converted == 1


def test_up_conversion_keeps_each_log_append_time_message_apart() -> None:
    b = BatchBuilder(1, timestamp_type=LOG_APPEND_TIME, log_append_time=NOW)
    b.append(key=b"a", value=b"1")
    b2 = BatchBuilder(1, base_offset=1, timestamp_type=LOG_APPEND_TIME, log_append_time=NOW + 5)
    b2.append(key=b"b", value=b"2")
    result = convert(b.build() + b2.build(), 2)
    batches = list(read_batches(result.records))
    assert [(x.base_offset, x.timestamp_type, x.max_timestamp) for x in batches] == [
        (0, LOG_APPEND_TIME, NOW),
        (1, LOG_APPEND_TIME, NOW + 5),
    ]


def test_compressed_magic1_up_to_v2_keeps_relative_offsets_meaning() -> None:
    b = BatchBuilder(1, Compression.GZIP, base_offset=100)
    for off in (100, 103, 104):
        b.append(offset=off, timestamp=NOW, key=b"k", value=b"v")
    result = convert(b.build(), 2)
    (batch,) = read_batches(result.records)
    assert batch.compression == Compression.GZIP
    assert [r[0] for r in rows(result.records)] == [100, 103, 104]
    assert batch.offset_delta == 4 and batch.record_count == 3


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # offset gap
            st.integers(0, 10**13),
            st.one_of(st.none(), st.binary(max_size=8)),
            st.one_of(st.none(), st.binary(max_size=8)),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([0, 1, 2, 3]),
)
@settings(max_examples=60, deadline=None)
def test_magic1_to_v2_and_back_is_the_identity_on_records(
    recs: list[tuple[int, int, bytes | None, bytes | None]], codec: int
) -> None:
    b = BatchBuilder(1, codec)
    off = 0
    for gap, ts, key, value in recs:
        off += gap
        b.append(offset=off, timestamp=ts, key=key, value=value)
        off += 1
    data = b.build()
    there = convert(data, 2)
    back = convert(there.records, 1)
    assert there.lossless and back.lossless
    assert rows(back.records) == rows(data)


def test_convert_for_fetch_is_zero_copy_when_nothing_is_newer() -> None:
    data = bytearray(v2_batch([0, 1], headers=False))
    result = convert_for_fetch(data, 11)
    assert isinstance(result.records, memoryview) and result.records.obj is data
    old = bytearray(v2_batch([0, 1], headers=False)[:0])  # empty fetch
    assert convert_for_fetch(old, 0).records_converted == 0


def test_convert_for_fetch_down_converts_and_copies_older_batches_as_they_are() -> None:
    legacy0 = BatchBuilder(0)
    legacy0.append(key=b"a", value=b"b")
    old = legacy0.build()
    data = old + v2_batch([1, 2], headers=False)
    result = convert_for_fetch(data, 3)  # Fetch v2-3 read magic 1
    assert result.magic == 1 and result.batches_copied == 1
    assert bytes(result.records).startswith(old)  # the magic 0 message is not up-converted
    assert [b.magic for b in read_batches(result.records)] == [0, 1, 1]
    with pytest.raises(UnsupportedCodecError, match="v10"):
        convert_for_fetch(v2_batch([0], Compression.ZSTD), 9)
    assert convert_for_fetch(v2_batch([0], Compression.ZSTD), 10).lossless


def test_convert_for_fetch_ignores_a_partial_last_batch() -> None:
    data = v2_batch([0, 1], headers=False)
    result = convert_for_fetch(data + data[:30], 1)
    assert [r[0] for r in rows(result.records)] == [0, 1]


def test_version_maps() -> None:
    assert [magic_for_fetch_version(v) for v in range(6)] == [0, 0, 1, 1, 2, 2]
    assert [magic_for_produce_version(v) for v in range(5)] == [0, 0, 1, 2, 2]
    with pytest.raises(ValueError):
        magic_for_fetch_version(-1)


def test_bad_input_is_a_typed_error() -> None:
    with pytest.raises(CorruptRecordError):
        convert(b"\x00" * 11 + b"\x01" + b"\x00" * 40, 1)
    with pytest.raises(UnsupportedVersionError):
        convert(b"", 3)


def test_empty_v2_batches_are_kept_when_recompressing_and_reported_when_going_down() -> None:
    from kwire.records._v2 import encode_batch

    out = bytearray()
    encode_batch(
        out,
        b"",
        count=0,
        base_offset=10,
        last_offset_delta=4,
        base_timestamp=NOW,
        max_timestamp=NOW,
        producer_id=6,
        producer_epoch=1,
        base_sequence=3,
    )
    empty = bytes(out)
    same = convert(empty, 2, compression=Compression.GZIP)
    assert same.records == empty and same.batches_copied == 1
    down = convert(empty, 1)
    assert down.records == b"" and down.loss.producer_state == 1


def test_plain_legacy_messages_with_repeated_offsets_start_new_batches() -> None:
    from kwire.records._legacy import encode_message

    data = bytearray()
    for off in (5, 6, 6, 2):  # not increasing (hand-made, or concatenated sets)
        encode_message(
            data, offset=off, magic=1, attributes=0, timestamp=NOW, key=b"k", value=b"%d" % off
        )
    result = convert(bytes(data), 2)
    assert [b.base_offset for b in read_batches(result.records)] == [5, 6, 2]
    assert [r[0] for r in rows(result.records)] == [5, 6, 6, 2]
