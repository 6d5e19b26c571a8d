"""``decompress_into``: the same bytes and the same errors as ``decompress``, written in place."""

from __future__ import annotations

import os

import pytest
from test_codecs import DATA, _lz4_frame

from kwire.errors import CorruptRecordError
from kwire.records import BatchBuilder, Compression, compress, decompress
from kwire.records._codecs import decompress_into
from kwire.records._columnar import _Arena, decode_columnar


class Spy(_Arena):
    """An arena that counts its reservations (lz4 blocks are written into reserved views)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.reserved = 0

    def reserve(self, n: int) -> memoryview:
        self.reserved += 1
        return super().reserve(n)


@pytest.mark.parametrize("codec", [c for c in Compression if c != Compression.NONE])
def test_same_bytes_as_decompress_after_what_the_sink_holds(codec: Compression) -> None:
    sink = _Arena(16)  # far too small: grown while writing
    sink.append(b"before")
    packed = compress(codec, DATA)
    assert decompress_into(codec, packed, sink) == len(DATA)
    assert bytes(sink.array[: sink.size]) == b"before" + decompress(codec, packed)


def test_lz4_blocks_go_straight_into_the_sink() -> None:
    noise = os.urandom(70_000)  # a stored (incompressible) block, then a short one
    for data in (DATA, noise):
        sink = Spy(1)
        packed = compress(Compression.LZ4, data)
        assert decompress_into(Compression.LZ4, packed, sink) == len(data)
        assert sink.reserved == -(-len(data) // 65536)  # one view per block, no chunks
        assert bytes(sink.array[: sink.size]) == data


@pytest.mark.parametrize("content_checksum", [False, True])
def test_lz4_frame_fields_and_checksums(content_checksum: bool) -> None:
    frame = _lz4_frame(
        DATA, block_checksum=True, content_size=True, content_checksum=content_checksum
    )
    sink = _Arena(1)
    assert decompress_into(Compression.LZ4, frame, sink) == len(DATA)
    assert bytes(sink.array[: sink.size]) == DATA
    bad = bytearray(frame)
    bad[-1 if content_checksum else -5] ^= 1  # the content checksum, or the last block's
    with pytest.raises(CorruptRecordError, match="checksum"):
        decompress_into(Compression.LZ4, bad, _Arena(1))


def test_lz4_bomb_is_capped() -> None:
    bomb = compress(Compression.LZ4, bytes(5_000_000))
    with pytest.raises(CorruptRecordError, match="exceeds the limit of 1000000"):
        decompress_into(Compression.LZ4, bomb, _Arena(1), max_size=1_000_000)
    sink = _Arena(1)
    exact = compress(Compression.LZ4, bytes(1_000_000))
    assert decompress_into(Compression.LZ4, exact, sink, max_size=1_000_000) == 1_000_000


def test_a_batch_failing_after_its_first_blocks_leaves_nothing_in_the_arena() -> None:
    parts = []
    for b in range(5):
        builder = BatchBuilder(2, Compression.LZ4, base_offset=b * 100)
        for i in range(100):
            value = b"value %05d " % (b * 100 + i) * 100  # 1,200 bytes: two lz4 blocks a batch
            builder.append(b * 100 + i, 1_700_000_000_000, b"k", value)
        parts.append(bytearray(builder.build()))
    # the third batch's end mark becomes a block of 5 bytes that is not there: its first block
    # was written to the arena before the error
    parts[2][-4:] = (5).to_bytes(4, "little")
    result = decode_columnar(
        b"".join(parts), columns=["offset", "value"], verify_crc=False, on_corrupt="skip"
    )
    assert [s.reason for s in result.skipped] == ["truncated lz4 block"]
    kept = [o for o in range(500) if not 200 <= o < 300]
    assert result.batch.column("offset").to_pylist() == kept
    assert result.batch.column("value").to_pylist() == [b"value %05d " % o * 100 for o in kept]
