"""Codec framings Kafka uses, read leniently and written like Kafka, with bounded output."""

from __future__ import annotations

import gzip
import os
import zlib

import cramjam
import pytest
import xxhash

from kwire.errors import CorruptRecordError, UnsupportedCodecError
from kwire.records import BatchBuilder, Compression, compress, decompress, read_batches

DATA = b"".join(b"record %d " % i for i in range(20000)) + os.urandom(3000)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_roundtrip(codec: Compression, magic: int) -> None:
    packed = compress(codec, DATA, magic=magic)
    assert len(packed) < len(DATA)
    assert decompress(codec, packed, magic=magic) == DATA


def test_zstd_magic2_only() -> None:
    assert decompress(Compression.ZSTD, compress(Compression.ZSTD, DATA)) == DATA
    with pytest.raises(UnsupportedCodecError):
        compress(Compression.ZSTD, DATA, magic=1)
    with pytest.raises(UnsupportedCodecError):
        decompress(7, b"")


def test_snappy_writes_xerial_and_reads_raw_too() -> None:
    packed = compress(Compression.SNAPPY, DATA)
    assert packed[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    raw = bytes(cramjam.snappy.compress_raw(DATA))
    assert decompress(Compression.SNAPPY, raw) == DATA
    with pytest.raises(CorruptRecordError):
        decompress(Compression.SNAPPY, packed[:-5])


def _lz4_frame(
    data: bytes, *, block_checksum: bool, content_size: bool, content_checksum: bool
) -> bytes:
    flg = 0x60 | (0x10 if block_checksum else 0) | (0x08 if content_size else 0)
    flg |= 0x04 if content_checksum else 0
    desc = bytes((flg, 0x40)) + (len(data).to_bytes(8, "little") if content_size else b"")
    out = bytearray(b"\x04\x22\x4d\x18" + desc)
    out.append((xxhash.xxh32_intdigest(desc) >> 8) & 0xFF)
    for i in range(0, len(data), 65536):
        block = bytes(cramjam.lz4.compress_block(data[i : i + 65536], store_size=False))
        out += len(block).to_bytes(4, "little") + block
        if block_checksum:
            out += xxhash.xxh32_intdigest(block).to_bytes(4, "little")
    out += b"\x00\x00\x00\x00"
    if content_checksum:
        out += xxhash.xxh32_intdigest(data).to_bytes(4, "little")
    return bytes(out)


@pytest.mark.parametrize("block_checksum", [False, True])
@pytest.mark.parametrize("content_size", [False, True])
@pytest.mark.parametrize("content_checksum", [False, True])
def test_lz4_frames_with_optional_fields(
    block_checksum: bool, content_size: bool, content_checksum: bool
) -> None:
    frame = _lz4_frame(
        DATA,
        block_checksum=block_checksum,
        content_size=content_size,
        content_checksum=content_checksum,
    )
    assert decompress(Compression.LZ4, frame, magic=2) == DATA
    if block_checksum or content_checksum:
        bad = bytearray(frame)
        bad[-1] ^= 1  # the content checksum, or the last block's checksum
        if not content_checksum:
            bad = bytearray(frame)
            bad[-5] ^= 1
        with pytest.raises(CorruptRecordError, match="checksum"):
            decompress(Compression.LZ4, bad, magic=2)


def test_lz4_header_checksum_quirk() -> None:
    magic0 = compress(Compression.LZ4, b"abc", magic=0)
    magic1 = compress(Compression.LZ4, b"abc", magic=1)
    # Kafka's magic-0 writer hashes the frame magic too: a different (wrong) HC byte
    assert magic0[6] == (xxhash.xxh32_intdigest(b"\x04\x22\x4d\x18\x60\x40") >> 8) & 0xFF
    assert magic1[6] == (xxhash.xxh32_intdigest(b"\x60\x40") >> 8) & 0xFF
    assert magic0[6] != magic1[6]
    # readers of magic 0 ignore the HC (as Kafka); newer magics check it
    assert decompress(Compression.LZ4, magic0, magic=0) == b"abc"
    assert decompress(Compression.LZ4, magic1, magic=0) == b"abc"
    with pytest.raises(CorruptRecordError, match="descriptor checksum"):
        decompress(Compression.LZ4, magic0, magic=1)


def test_lz4_incompressible_blocks_are_stored() -> None:
    noise = os.urandom(70000)
    packed = compress(Compression.LZ4, noise)
    assert int.from_bytes(packed[7:11], "little") & 0x80000000
    assert decompress(Compression.LZ4, packed) == noise


def test_gzip_concatenated_members_and_trailing_garbage() -> None:
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(Compression.GZIP, two) == b"first second"
    assert decompress(Compression.GZIP, gzip.compress(b"x") + b"junk") == b"x"
    with pytest.raises(CorruptRecordError):
        decompress(Compression.GZIP, gzip.compress(DATA)[:-10])
    with pytest.raises(CorruptRecordError):
        decompress(Compression.GZIP, b"not gzip at all")


@pytest.mark.parametrize("codec", [c for c in Compression if c != Compression.NONE])
def test_compression_bomb_is_capped(codec: Compression) -> None:
    bomb = compress(codec, bytes(50_000_000))
    assert len(bomb) < 3_000_000
    with pytest.raises(CorruptRecordError, match="exceeds the limit of 1000000"):
        decompress(codec, bomb, max_size=1_000_000)
    assert (
        len(decompress(codec, compress(codec, bytes(1_000_000)), max_size=1_000_000)) == 1_000_000
    )


def test_bomb_through_read_batches() -> None:
    b = BatchBuilder(2, Compression.ZSTD)
    b.append(value=bytes(5_000_000))
    data = b.build()
    assert len(data) < 10_000
    with pytest.raises(CorruptRecordError, match="limit") as info:
        for batch in read_batches(data, max_decompressed_size=1 << 20):
            list(batch)
    assert info.value.context == "batch at base offset 0"
    assert [len(r.value or b"") for r in next(iter(read_batches(data)))] == [5_000_000]


def test_gzip_written_is_plain_gzip() -> None:
    assert zlib.decompress(compress(Compression.GZIP, b"hello"), 31) == b"hello"


@pytest.mark.parametrize(
    ("codec", "levels"),
    [(Compression.GZIP, (1, 9)), (Compression.LZ4, (1, 12)), (Compression.ZSTD, (1, 19))],
)
def test_compression_levels(codec: Compression, levels: tuple[int, int]) -> None:
    sizes = []
    for level in levels:
        b = BatchBuilder(2, codec, compression_level=level)
        for i in range(300):
            b.append(value=b"value %d " % (i % 17) * 20)
        data = b.build()
        assert [len(r.value or b"") for batch in read_batches(data) for r in batch][:1] == [
            len(b"value 0 ") * 20
        ]
        sizes.append(len(data))
    assert sizes[1] <= sizes[0]
    with pytest.raises(UnsupportedCodecError):
        compress(codec, DATA, level=10_000)


@pytest.mark.parametrize("magic", [1, 2])
@pytest.mark.parametrize("size", [0, 1, 5000, 65536, 65537, 300_000])
def test_lz4_frame_sizes_tails_and_truncation(magic: int, size: int) -> None:
    data = DATA[:size] + os.urandom(size // 10)  # some blocks stored, most compressed
    frame = compress(Compression.LZ4, data, magic=magic)
    assert decompress(Compression.LZ4, frame, magic=magic) == data
    # what follows the end mark is ignored by both (one frame per batch, as Kafka reads it)
    for tail in (b"junk", frame):
        assert decompress(Compression.LZ4, frame + tail, magic=magic) == data
    for cut in (len(frame) - 2, 9, 7):
        with pytest.raises(CorruptRecordError, match="truncated"):
            decompress(Compression.LZ4, frame[:cut], magic=magic)
    if size:
        with pytest.raises(CorruptRecordError, match="exceeds the limit of"):
            decompress(Compression.LZ4, frame, magic=magic, max_size=len(data) - 1)


def test_kafka_lz4_header_constant() -> None:
    from kwire.records._codecs import _KAFKA_LZ4_HEADER

    assert _KAFKA_LZ4_HEADER[6] == (xxhash.xxh32_intdigest(b"\x60\x40") >> 8) & 0xFF
    assert compress(Compression.LZ4, b"abc", magic=2)[:7] == _KAFKA_LZ4_HEADER


def test_lz4_bad_block_size_and_header_checksum() -> None:
    frame = bytearray(compress(Compression.LZ4, DATA))
    frame[7:11] = (70_000).to_bytes(4, "little")  # larger than the 64 KiB block maximum
    with pytest.raises(CorruptRecordError, match="exceeds the frame's maximum") as info:
        decompress(Compression.LZ4, bytes(frame))
    assert info.value.offset == 7
    broken = bytearray(compress(Compression.LZ4, DATA, magic=1))
    broken[6] ^= 0xFF  # the header checksum
    with pytest.raises(CorruptRecordError, match="descriptor checksum"):
        decompress(Compression.LZ4, bytes(broken), magic=2)


@pytest.mark.parametrize("size", [0, 100, 1023, 1024, 5000, 2_000_000])
def test_zstd_frames_without_content_size(size: int) -> None:
    zstandard = pytest.importorskip("zstandard")
    data = (DATA * (1 + size // len(DATA)))[:size]
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert decompress(Compression.ZSTD, frame) == data  # the output buffer grows by doubling
    if size:
        with pytest.raises(CorruptRecordError, match="exceeds the limit of"):
            decompress(Compression.ZSTD, frame, max_size=size - 1)
    with_size = zstandard.ZstdCompressor(write_content_size=True).compress(data)
    assert decompress(Compression.ZSTD, with_size) == data


def test_zstd_reused_context_and_general_path_agree() -> None:
    from kwire.records import _codecs

    zstandard = pytest.importorskip("zstandard")
    one = compress(Compression.ZSTD, DATA)
    assert _codecs._zstd_reused(one, 1 << 30) == DATA  # the per-thread context, header's size
    assert _codecs._zstd_reused(memoryview(one), 1 << 30) == DATA
    assert _codecs._zstd_reused(one + one, 1 << 30) is None  # two frames: the general path
    with pytest.raises(CorruptRecordError, match="exceeds the limit"):
        _codecs._zstd_reused(one, len(DATA) - 1)  # declared size over the cap: never allocated
    # concatenated frames and trailing frames read as the general path did (every frame)
    assert decompress(Compression.ZSTD, one + one) == DATA + DATA
    bare = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    assert _codecs._zstd_reused(bare, 1 << 30) is None  # no size, > 4x the input: general path
    assert decompress(Compression.ZSTD, bare) == DATA
    noise = os.urandom(5000)
    bare = zstandard.ZstdCompressor(write_content_size=False).compress(noise)
    assert _codecs._zstd_reused(bare, 1 << 30) == noise  # no declared size: a guessed bound
    assert _codecs._zstd_reused(bare, len(noise) - 1) is None  # over the cap: not returned
    assert _codecs._zstd_reused(b"\x28\xb5\x2f\xfd", 1 << 30) is None  # no header to read
    for bad in (one[:-3], one[:5], b"\x28\xb5\x2f\xfd" + bytes(10)):
        with pytest.raises(CorruptRecordError, match="zstd"):
            decompress(Compression.ZSTD, bad)
