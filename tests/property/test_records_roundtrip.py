"""Property: every batch kwire builds reads back to the records it was given (any magic x codec)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.records import (
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    BatchBuilder,
    Compression,
    read_batch,
    read_batches,
)

COMBOS = [(m, c) for m in (0, 1, 2) for c in Compression if not (c == Compression.ZSTD and m < 2)]

maybe_bytes = st.none() | st.binary(max_size=64)
header = st.tuples(st.text(max_size=8), maybe_bytes)


@st.composite
def batches(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    magic, codec = draw(st.sampled_from(COMBOS))
    opts: dict[str, Any] = {"base_offset": draw(st.integers(0, 2**40))}
    if magic > 0 and draw(st.booleans()):
        opts["timestamp_type"] = LOG_APPEND_TIME
        opts["log_append_time"] = draw(st.integers(0, 2**45))
    if magic == 2:
        opts["producer_id"] = draw(st.sampled_from([-1, 0, 2**62]))
        opts["producer_epoch"] = draw(st.sampled_from([-1, 0, 2**15 - 1]))
        opts["base_sequence"] = draw(st.sampled_from([-1, 0, 2**31 - 1]))
        opts["is_transactional"] = draw(st.booleans())
        opts["partition_leader_epoch"] = draw(st.integers(-1, 2**31 - 1))
    offset = opts["base_offset"]
    records = []
    for _ in range(draw(st.integers(1, 20))):
        offset += draw(st.sampled_from([0, 0, 1, 5, 1000]))
        ts = draw(st.sampled_from([NO_TIMESTAMP, 0, 1_700_000_000_000]) | st.integers(0, 2**45))
        headers = draw(st.lists(header, max_size=3)) if magic == 2 else []
        records.append((offset, ts, draw(maybe_bytes), draw(maybe_bytes), headers))
        offset += 1
    return {"magic": magic, "compression": codec, **opts}, records


@settings(max_examples=150, deadline=None)
@given(batches())
def test_build_then_read_is_identity(case: tuple[dict[str, Any], list[tuple[Any, ...]]]) -> None:
    opts, records = case
    builder = BatchBuilder(**opts)
    for rec in records:
        builder.append(*rec)
    data = builder.build()
    magic = opts["magic"]
    lat = opts.get("timestamp_type") == LOG_APPEND_TIME
    got = []
    for batch in read_batches(data):
        batch.verify()
        for r in batch:
            got.append(
                (
                    r.offset,
                    r.timestamp,
                    None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value),
                    [(k, None if v is None else bytes(v)) for k, v in r.headers],
                )
            )
    expected = [
        (
            o,
            NO_TIMESTAMP if magic == 0 else opts["log_append_time"] if lat else t,
            k,
            v,
            [(hk, None if hv is None else bytes(hv)) for hk, hv in h],
        )
        for o, t, k, v, h in records
    ]
    assert got == expected
    if magic == 2 or opts["compression"] != Compression.NONE:
        batch = read_batch(data)
        # v2: the builder's base offset (the first record may sit at a delta > 0);
        # legacy wrapper: the first inner offset, as Kafka computes it
        assert batch.base_offset == (opts["base_offset"] if magic == 2 else records[0][0])
        assert batch.last_offset == records[-1][0]
        assert batch.record_count == len(records)


big_or_small = st.binary(max_size=64) | st.builds(bytes, st.integers(16_380, 70_000))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20_000),  # offset gap
            st.integers(-1, 2**50),  # timestamp
            st.none() | big_or_small,
            st.none() | big_or_small,
            st.lists(header, max_size=2),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_builder_inline_encoding_is_encode_record(records: list[tuple[Any, ...]]) -> None:
    """BatchBuilder.append has _v2.encode_record inlined (speed): both write the same records."""
    from kwire.records._v2 import HEADER_SIZE, encode_record

    builder = BatchBuilder(2)
    offset = 0
    expected = bytearray()
    base_ts = None
    for gap, ts, key, value, headers in records:
        offset += gap
        builder.append(offset, ts, key, value, headers)
        base_ts = ts if base_ts is None else base_ts
        expected += encode_record(offset, ts - base_ts, key, value, headers)
        offset += 1
    assert builder.build()[HEADER_SIZE:] == bytes(expected)
