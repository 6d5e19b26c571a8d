"""BatchReader: one entry point for every magic, positions, buffer kinds."""

from __future__ import annotations

import array
import mmap

import pytest

from kwire.errors import CorruptRecordError
from kwire.records import (
    BatchBuilder,
    BatchReader,
    Compression,
    LegacyBatch,
    RecordBatch,
    read_batch,
    read_batches,
)


def _mixed() -> tuple[bytes, list[int]]:
    parts = []
    for magic, codec, base in [(0, 0, 0), (1, 1, 1), (2, 3, 3), (1, 0, 6), (2, 0, 7)]:
        b = BatchBuilder(magic, codec, base_offset=base)
        b.append(base, 10, b"k", b"v%d" % base)
        parts.append(b.build())
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p)
    return b"".join(parts), starts


def test_mixed_magics_in_one_buffer() -> None:
    data, starts = _mixed()
    reader = read_batches(data)
    batches = list(reader)
    assert [b.magic for b in batches] == [0, 1, 2, 1, 2]
    assert [type(b) for b in batches] == [
        LegacyBatch,
        LegacyBatch,
        RecordBatch,
        LegacyBatch,
        RecordBatch,
    ]
    assert [b.position for b in batches] == starts
    assert reader.position == reader.bytes_consumed == len(data)
    assert reader.truncated_at is None
    assert [r.offset for b in batches for r in b] == [0, 1, 3, 6, 7]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "slice", "array", "mmap"])
def test_any_bytes_like(kind: str) -> None:
    data, _ = _mixed()
    buf: object
    if kind == "bytes":
        buf = data
    elif kind == "bytearray":
        buf = bytearray(data)
    elif kind == "memoryview":
        buf = memoryview(data)
    elif kind == "slice":
        buf = memoryview(b"xxxx" + data + b"yy")[4:-2]
    elif kind == "array":
        padded = data + b"\x00" * (-len(data) % 4)
        buf = memoryview(array.array("i", padded)).cast("B")[: len(data)]
    else:
        m = mmap.mmap(-1, len(data))
        m.write(data)
        buf = m
    rows = [(r.offset, bytes(r.value or b"")) for b in read_batches(buf) for r in b]  # type: ignore[arg-type]
    assert rows == [(0, b"v0"), (1, b"v1"), (3, b"v3"), (6, b"v6"), (7, b"v7")]


def test_start_and_end_window() -> None:
    data, starts = _mixed()
    reader = BatchReader(data, start=starts[2], end=starts[4])
    assert [b.magic for b in reader] == [2, 1]
    assert reader.position == starts[4]


def test_read_batch_wants_exactly_one() -> None:
    data, _ = _mixed()
    with pytest.raises(CorruptRecordError, match="bytes after the batch"):
        read_batch(data)
    with pytest.raises(CorruptRecordError, match="empty buffer"):
        read_batch(b"")


def test_tiny_tail_is_truncation() -> None:
    b = BatchBuilder(2, Compression.NONE)
    b.append(value=b"v")
    data = b.build() + b"\x00" * 5
    with pytest.raises(CorruptRecordError, match="too few"):
        list(read_batches(data))
    reader = read_batches(data, allow_truncated_tail=True)
    assert len(list(reader)) == 1 and reader.truncated_at == len(data) - 5
