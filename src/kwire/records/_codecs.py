"""Compression codecs of Kafka record batches, keyed by the codec bits of the attributes.

Approach: every codec is a well-kept library (cramjam for snappy/lz4/zstd, zstandard for zstd
decompression, zlib-ng for gzip, the standard library's zlib when zlib-ng is missing, xxhash for
lz4 frame checksums); this module only does Kafka's framing around them and bounds the output. Each codec sits in a table entry
(compress, decompress) imported lazily on first use, so a missing library is reported as
``UnsupportedCodecError`` naming what to install.

Framing, as Kafka's Java client writes and reads it:

- gzip: one gzip member (RFC 1952) written; concatenated members read, trailing garbage after a
  complete member ignored (as ``java.util.zip.GZIPInputStream``).
- snappy: written in snappy-java's "xerial" stream framing (8-byte magic ``\\x82SNAPPY\\0``,
  version and compatible version int32, then int32-length-prefixed raw snappy chunks of 32 KiB);
  read either that framing or one raw snappy block (snappy-java falls back to raw too).
- lz4: Kafka's LZ4 frame (``Lz4BlockOutputStream``): FLG 0x60 (v1, independent blocks), BD 0x40
  (64 KiB blocks), no content size, no checksums. Magic 0 writes the historical *broken* header
  checksum (xxHash32 over magic number + FLG + BD instead of FLG + BD) and its reader ignores the
  header checksum, as Kafka does. Frames from other writers, with block checksums, content size or
  content checksum, are read and their checksums verified.
- zstd: a plain zstd frame; only magic 2 may use it.

Decompression never allocates more than ``max_size`` bytes of output: gzip through zlib's
``max_length``, snappy by reading the declared length first, lz4 block by block into buffers of
the declared block maximum, zstd through a reused zstandard context bounded by the frame's
declared content size (checked against the cap first) or by a guess, else into a bounded buffer
that grows by doubling up to the cap. Output beyond the cap raises ``CorruptRecordError`` (a
compression bomb or a too-small cap).
"""

from __future__ import annotations

import importlib
import struct
import threading
import zlib as _stdlib_zlib
from collections.abc import Callable
from enum import IntEnum
from typing import Any, Final, Protocol

from kwire.errors import CorruptRecordError, DecompressedSizeError, UnsupportedCodecError

_ZLIB: list[Any] = []  # the deflate module, loaded with the first gzip batch (see _deflate)


def _deflate() -> Any:
    """zlib-ng (the same deflate format and API as zlib, about 2x faster at the same level),
    imported on first use: its extension imports ``gzip``, which a broker that sees no gzip
    batch never needs."""
    if not _ZLIB:
        try:
            _ZLIB.append(importlib.import_module("zlib_ng.zlib_ng"))
        except ImportError:  # pragma: no cover - zlib-ng is a core dependency; zlib the fallback
            _ZLIB.append(_stdlib_zlib)
    return _ZLIB[0]


__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "Compression",
    "compress",
    "decompress",
    "decompress_into",
]

#: Default cap on the decompressed size of one batch (or legacy wrapper): 64 MiB. Kafka's own
#: limits (message.max.bytes 1 MiB, fetch.max.bytes 50 MiB) bound the *compressed* size; a
#: realistic batch decompresses to well under this, a compression bomb does not.
DEFAULT_MAX_DECOMPRESSED_SIZE: Final = 64 * 1024 * 1024


class Compression(IntEnum):
    """Codec ids as stored in attribute bits 0-2 (Kafka's ``CompressionType``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


_Codec = tuple[
    Callable[[bytes | memoryview, int, int | None], bytes],
    Callable[[bytes | memoryview, int, int], bytes],
]

#: Kafka's default levels (KIP-390): gzip -1 (zlib's 6), lz4 9 (the fast compressor), zstd 3.
DEFAULT_LEVELS: Final = {1: 6, 3: 9, 4: 3}
#: The levels Kafka accepts per codec (``GzipCompression``/``Lz4Compression``/``ZstdCompression``).
LEVEL_RANGES: Final = {1: (-1, 9), 3: (1, 17), 4: (-131072, 22)}


_LOADED: dict[str, Any] = {}


def _library(name: str) -> Any:
    """The codec library ``name`` (cramjam, xxhash), imported on first use and then cached."""
    lib = _LOADED.get(name)
    if lib is not None:
        return lib
    try:
        if name == "cramjam":
            import cramjam as lib
        else:
            import xxhash as lib
    except ImportError as exc:  # pragma: no cover - both are core dependencies
        raise UnsupportedCodecError(
            f"the {name} package is needed for this codec: pip install {name}"
        ) from exc
    _LOADED[name] = lib
    return lib


def _bomb(max_size: int) -> DecompressedSizeError:
    return DecompressedSizeError(
        f"decompressed size exceeds the limit of {max_size} bytes "
        "(compression bomb, or raise max_decompressed_size)",
        max_size,
    )


# -- gzip ----------------------------------------------------------------------------------------


def _gzip_compress(data: bytes | memoryview, magic: int, level: int | None) -> bytes:
    _zlib = _deflate()
    co = _zlib.compressobj(6 if level is None or level == -1 else level, _zlib.DEFLATED, 31)
    return bytes(co.compress(data) + co.flush())


def _gzip_decompress(data: bytes | memoryview, magic: int, max_size: int) -> bytes:
    _zlib = _deflate()
    parts: list[bytes] = []
    total = 0
    rest: bytes | memoryview = data
    first = True
    while first or (len(rest) >= 2 and rest[0] == 0x1F and rest[1] == 0x8B):
        d = _zlib.decompressobj(31)
        try:
            chunk = d.decompress(rest, max_size - total + 1)
        except _zlib.error as exc:
            if first:
                raise CorruptRecordError(f"invalid gzip data: {exc}") from None
            break  # trailing bytes that are not a gzip member are ignored, as Java does
        total += len(chunk)
        if total > max_size:
            raise _bomb(max_size)
        if not d.eof:
            if d.unconsumed_tail:
                raise _bomb(max_size)
            if first:
                raise CorruptRecordError("truncated gzip data")
            break
        parts.append(chunk)
        rest = d.unused_data
        first = False
    return parts[0] if len(parts) == 1 else b"".join(parts)


# -- snappy --------------------------------------------------------------------------------------

_XERIAL_MAGIC: Final[bytes] = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = _XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
_XERIAL_BLOCK: Final = 32 * 1024


def _snappy_compress(data: bytes | memoryview, magic: int, level: int | None) -> bytes:
    cramjam = _library("cramjam")
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(view), _XERIAL_BLOCK):
        chunk = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += len(chunk).to_bytes(4, "big")
        out += chunk
    return bytes(out)


def _snappy_raw(cramjam: Any, block: bytes | memoryview, limit: int, max_size: int) -> bytes:
    # the declared length (a varint at the start of the block) is checked against the cap before
    # anything is allocated; the decoder then fills exactly that many bytes or fails
    try:
        size = int(cramjam.snappy.decompress_raw_len(block))
        if size > limit:
            raise _bomb(max_size)
        out = bytes(cramjam.snappy.decompress_raw(block))
    except CorruptRecordError:
        raise
    except Exception as exc:
        raise CorruptRecordError(f"invalid snappy data: {exc}") from None
    if len(out) != size:  # pragma: no cover - the decoder enforces the declared length
        raise CorruptRecordError("invalid snappy data: short output")
    return out


_XERIAL_CHUNK_SIZE: Final = struct.Struct(">i")


def _snappy_decompress(data: bytes | memoryview, magic: int, max_size: int) -> bytes:
    cramjam = _library("cramjam")
    view = memoryview(data)
    if view[:8] != _XERIAL_MAGIC:
        return _snappy_raw(cramjam, view, max_size, max_size)
    end = len(view)
    if end < 16:
        raise CorruptRecordError("truncated xerial snappy header")
    pos = 16
    parts: list[bytes] = []
    total = 0
    chunk_size = _XERIAL_CHUNK_SIZE.unpack_from
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError("truncated xerial snappy chunk length", offset=pos)
        (size,) = chunk_size(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptRecordError(
                f"xerial snappy chunk length {size} out of range", offset=pos - 4
            )
        chunk = _snappy_raw(cramjam, view[pos : pos + size], max_size - total, max_size)
        total += len(chunk)
        parts.append(chunk)
        pos += size
    return parts[0] if len(parts) == 1 else b"".join(parts)


# -- lz4 -----------------------------------------------------------------------------------------

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
_LZ4_BLOCK: Final = 64 * 1024
_LZ4_FLG: Final = 0x60  # version 01, block independence, no checksums, no content size
_LZ4_BD: Final = 0x40  # 64 KiB maximum block size
_LZ4_INCOMPRESSIBLE: Final = 0x80000000


def _xxh32(data: bytes | memoryview) -> int:
    return int(_library("xxhash").xxh32_intdigest(bytes(data)))


_LZ4_SCRATCH = threading.local()
_LZ4_HC: dict[bytes, int] = {}


def _lz4_header_checksum(descriptor: bytes) -> int:
    """The frame header checksum byte (second byte of xxHash32) of FLG, BD [, content size]."""
    hc = _LZ4_HC.get(descriptor)
    if hc is None:
        hc = (_xxh32(descriptor) >> 8) & 0xFF
        if len(descriptor) == 2:  # at most 65,536 of these; frames with a content size vary
            _LZ4_HC[descriptor] = hc
    return hc


#: What Kafka's writer puts before the first block: magic number, FLG, BD and, for magic 1 and 2,
#: the correct header checksum byte (second byte of xxHash32(FLG BD); a unit test recomputes it).
_KAFKA_LZ4_HEADER: Final = _LZ4_MAGIC + bytes((_LZ4_FLG, _LZ4_BD, 0x82))


def _lz4_compress(data: bytes | memoryview, magic: int, level: int | None) -> bytes:
    cramjam = _library("cramjam")
    # Kafka uses lz4's fast compressor at the default level 9 and the high compressor otherwise
    options: dict[str, Any] = {}
    if level is not None and level != 9:
        options = {"mode": "high_compression", "compression": level}
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    # Kafka's magic-0 writer hashed the magic number too (KAFKA-1718); readers of magic 0 ignore HC.
    hashed = _LZ4_MAGIC + descriptor if magic == 0 else descriptor
    out = bytearray(_LZ4_MAGIC)
    out += descriptor
    out.append((_xxh32(hashed) >> 8) & 0xFF)
    view = memoryview(data)
    for start in range(0, len(view), _LZ4_BLOCK):
        raw = view[start : start + _LZ4_BLOCK]
        packed = bytes(cramjam.lz4.compress_block(raw, store_size=False, **options))
        if len(packed) >= len(raw):
            out += (len(raw) | _LZ4_INCOMPRESSIBLE).to_bytes(4, "little")
            out += raw
        else:
            out += len(packed).to_bytes(4, "little")
            out += packed
    out += b"\x00\x00\x00\x00"
    return bytes(out)


class Sink(Protocol):
    """Where ``decompress_into`` writes: the end of one growing buffer of ``size`` bytes."""

    size: int

    def reserve(self, n: int) -> memoryview:
        """A writable view of the next ``n`` bytes (valid until the next ``reserve``)."""

    def commit(self, n: int) -> None:
        """``n`` bytes of the last ``reserve`` were written."""


def _lz4_decompress(
    data: bytes | memoryview, magic: int, max_size: int, sink: Sink | None = None
) -> bytes:
    # Block by block, each through cramjam's block decoder. Measured against one call of
    # cramjam's (liblz4) frame decoder into a bounded buffer: that costs ~2 us more per frame
    # (a frame context per call) and ~4x more on a 1 MB frame, so frames are parsed here.
    cramjam = _library("cramjam")
    view = memoryview(data)
    end = len(view)
    if view[:7] == _KAFKA_LZ4_HEADER or (magic == 0 and view[:6] == _KAFKA_LZ4_HEADER[:6]):
        # Kafka's own frame (the common case; magic 0's checksum byte is not checked, as Kafka)
        block_checksum = content_checksum = False
        block_max = _LZ4_BLOCK
        pos = 7
    else:
        if end < 7:
            raise CorruptRecordError("truncated lz4 frame header")
        if bytes(view[:4]) != _LZ4_MAGIC:
            raise CorruptRecordError("not an lz4 frame (bad magic number)", offset=0)
        flg = view[4]
        bd = view[5]
        if flg >> 6 != 1 or flg & 0x03:
            raise CorruptRecordError(f"unsupported lz4 frame FLG byte 0x{flg:02x}", offset=4)
        if not flg & 0x20:
            raise CorruptRecordError("lz4 frames with dependent blocks are not supported", offset=4)
        block_checksum = bool(flg & 0x10)
        content_size = bool(flg & 0x08)
        content_checksum = bool(flg & 0x04)
        if bd & 0x8F or not 4 <= (bd >> 4) & 7 <= 7:
            raise CorruptRecordError(f"invalid lz4 frame BD byte 0x{bd:02x}", offset=5)
        block_max = 1 << (2 * ((bd >> 4) & 7) + 8)
        pos = 6
        if content_size:
            if end - pos < 9:
                raise CorruptRecordError("truncated lz4 frame header")
            declared = int.from_bytes(view[pos : pos + 8], "little")
            if declared > max_size:
                raise _bomb(max_size)
            pos += 8
        if (
            magic != 0
        ):  # Kafka ignores the header checksum of magic 0 (historically computed wrongly)
            expected = _lz4_header_checksum(bytes(view[4:pos]))
            if view[pos] != expected:
                raise CorruptRecordError("lz4 frame descriptor checksum mismatch", offset=pos)
        pos += 1
    parts: list[bytes] = []
    total = 0
    xxhash = _library("xxhash") if content_checksum else None
    hasher = xxhash.xxh32() if xxhash is not None else None
    while True:
        if end - pos < 4:
            raise CorruptRecordError("truncated lz4 frame (no end mark)", offset=pos)
        word = int.from_bytes(view[pos : pos + 4], "little")
        pos += 4
        if word == 0:
            break
        size = word & ~_LZ4_INCOMPRESSIBLE
        if size > block_max:
            raise CorruptRecordError(
                f"lz4 block size {size} exceeds the frame's maximum {block_max}", offset=pos - 4
            )
        if size > end - pos:
            raise CorruptRecordError("truncated lz4 block", offset=pos)
        block = view[pos : pos + size]
        pos += size
        if block_checksum:
            if end - pos < 4:
                raise CorruptRecordError("truncated lz4 block checksum", offset=pos)
            if _xxh32(block) != int.from_bytes(view[pos : pos + 4], "little"):
                raise CorruptRecordError("lz4 block checksum mismatch", offset=pos)
            pos += 4
        if sink is not None:  # straight to the caller's buffer: no chunk, no join
            limit = size if word & _LZ4_INCOMPRESSIBLE else min(block_max, max_size - total + 1)
            out = sink.reserve(limit)
            try:
                if word & _LZ4_INCOMPRESSIBLE:
                    out[:] = block
                    n = size
                else:
                    n = int(cramjam.lz4.decompress_block_into(block, out))
            except Exception:
                if limit <= max_size - total:
                    raise CorruptRecordError("invalid lz4 block", offset=pos - size) from None
                raise _bomb(max_size) from None
            total += n
            if total > max_size:
                raise _bomb(max_size)
            if hasher is not None:
                hasher.update(out[:n])
            out.release()
            sink.commit(n)
            continue
        if word & _LZ4_INCOMPRESSIBLE:
            chunk = bytes(block)
        else:
            # into a per-thread scratch buffer (a fresh zeroed 64 KiB one per block cost more than
            # decompressing a small batch), bounded by the block maximum and what the cap allows
            limit = min(block_max, max_size - total + 1)
            scratch = getattr(_LZ4_SCRATCH, "buf", None)
            if scratch is None or len(scratch) < limit:
                scratch = _LZ4_SCRATCH.buf = bytearray(max(limit, _LZ4_BLOCK))
            out = memoryview(scratch)[:limit]
            try:
                n = int(cramjam.lz4.decompress_block_into(block, out))
            except Exception:
                if limit <= max_size - total:
                    raise CorruptRecordError("invalid lz4 block", offset=pos - size) from None
                raise _bomb(max_size) from None
            finally:
                out.release()
            chunk = bytes(memoryview(scratch)[:n])
        total += len(chunk)
        if total > max_size:
            raise _bomb(max_size)
        if hasher is not None:
            hasher.update(chunk)
        parts.append(chunk)
    if hasher is not None:
        if end - pos < 4:
            raise CorruptRecordError("truncated lz4 content checksum", offset=pos)
        if hasher.intdigest() != int.from_bytes(view[pos : pos + 4], "little"):
            raise CorruptRecordError("lz4 content checksum mismatch", offset=pos)
    if sink is not None:
        return b""
    return parts[0] if len(parts) == 1 else b"".join(parts)


# -- zstd ----------------------------------------------------------------------------------------


def _zstd_compress(data: bytes | memoryview, magic: int, level: int | None) -> bytes:
    return bytes(_library("cramjam").zstd.compress(data, level=3 if level is None else level))


def _zstd_content_size(data: bytes | memoryview) -> int | None:
    """The Frame_Content_Size of a zstd frame header, when the writer put one there."""
    if len(data) < 6 or bytes(data[:4]) != b"\x28\xb5\x2f\xfd":
        return None
    fhd = data[4]
    single_segment = (fhd >> 5) & 1
    fcs_flag = fhd >> 6
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if not size:
        return None
    at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3]
    if len(data) < at + size:
        return None
    value = int.from_bytes(data[at : at + size], "little")
    return value + 256 if size == 2 else value


_ZSTD_LOCAL = threading.local()
_ZSTANDARD: list[Any] = []  # [the zstandard module] once imported, [None] if it is missing


def _zstd_reused(data: bytes | memoryview, max_size: int) -> bytes | None:
    """One zstd frame through a per-thread ``zstandard.ZstdDecompressor`` (its context is reused:
    a fresh one per call is most of the cost of a small batch), bounded by the frame's declared
    content size (checked against ``max_size`` first) or, without one, by a guess.

    None when zstandard is missing or rejects the data for any reason (more than one frame, a
    larger output, corrupt input): the caller then takes the general path, which says why.
    """
    if not _ZSTANDARD:
        try:
            _ZSTANDARD.append(importlib.import_module("zstandard"))
        except ImportError:  # pragma: no cover - zstandard is a core dependency
            _ZSTANDARD.append(None)
    zstandard = _ZSTANDARD[0]
    if zstandard is None:  # pragma: no cover
        return None
    d = getattr(_ZSTD_LOCAL, "d", None)
    if d is None:
        d = _ZSTD_LOCAL.d = zstandard.ZstdDecompressor()
    try:
        declared = int(zstandard.frame_content_size(data))
    except zstandard.ZstdError:
        return None
    if declared > max_size:
        raise _bomb(max_size)
    # max_output_size 0: exactly the declared size (zstd checks the frame produces that much)
    bound = 0 if declared >= 0 else min(max_size, max(1024, 4 * len(data)))
    try:
        return bytes(d.decompress(data, max_output_size=bound, allow_extra_data=False))
    except zstandard.ZstdError:
        return None


def _zstd_decompress(data: bytes | memoryview, magic: int, max_size: int) -> bytes:
    out = _zstd_reused(data, max_size)  # the fast path; a miss takes the bounded loop below
    if out is not None:
        return out
    cramjam = _library("cramjam")
    declared = _zstd_content_size(data)
    if declared is not None and declared > max_size:
        raise _bomb(max_size)
    # start from the declared size (a hint only: the loop below still bounds the output); frames
    # without one start from a guess (allocating a zeroed buffer is a per-batch cost, keep it small)
    size = min(max_size, declared if declared is not None else max(1024, 4 * len(data)))
    while True:
        buf = bytearray(size)
        try:
            n = int(cramjam.zstd.decompress_into(data, buf))
        except Exception as exc:
            if "whole buffer" not in str(exc):  # cramjam's "output buffer full"
                raise CorruptRecordError(f"invalid zstd data: {exc}") from None
            if size >= max_size:
                raise _bomb(max_size) from None
            size = min(max_size, max(1024, size * 2))
            continue
        # (cramjam raises rather than stop at a full buffer, so n == size is complete output)
        return bytes(buf) if n == size else bytes(memoryview(buf)[:n])


# -- table ---------------------------------------------------------------------------------------

_CODECS: Final[dict[int, _Codec]] = {
    Compression.GZIP: (_gzip_compress, _gzip_decompress),
    Compression.SNAPPY: (_snappy_compress, _snappy_decompress),
    Compression.LZ4: (_lz4_compress, _lz4_decompress),
    Compression.ZSTD: (_zstd_compress, _zstd_decompress),
}


def _codec(codec: int, magic: int) -> _Codec:
    entry = _CODECS.get(codec)
    if entry is None:
        if codec == Compression.NONE:
            raise UnsupportedCodecError("Compression.NONE has no codec")
        raise UnsupportedCodecError(f"unknown compression codec id {codec}")
    if codec == Compression.ZSTD and magic < 2:
        raise UnsupportedCodecError(f"zstd compression needs magic 2, not magic {magic}")
    return entry


def compress(
    codec: int, data: bytes | bytearray | memoryview, *, magic: int = 2, level: int | None = None
) -> bytes:
    """Compress ``data`` as Kafka's writer for ``magic`` does (see the module docstring).

    ``level`` is the codec's compression level (Kafka's ``compression.<codec>.level``, KIP-390);
    ``None`` is Kafka's default. Snappy has no levels.
    """
    if codec == Compression.NONE:
        return bytes(data)
    if level is not None:
        low, high = LEVEL_RANGES.get(codec, (0, -1))
        if not low <= level <= high or (level == 0 and codec == Compression.GZIP):
            raise UnsupportedCodecError(
                f"compression level {level} is not valid for {Compression(codec).name.lower()}"
            )
    try:
        return _codec(codec, magic)[0](memoryview(data), magic, level)
    except UnsupportedCodecError:
        raise
    except Exception as exc:  # an invalid level, from the library
        raise UnsupportedCodecError(f"cannot compress with level {level}: {exc}") from None


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytes:
    """Decompress ``data`` (Kafka's framing for ``codec``), never producing more than ``max_size``.

    Raises ``CorruptRecordError`` for invalid data or output above ``max_size`` and
    ``UnsupportedCodecError`` for an unknown codec id or zstd below magic 2. Byte offsets in the
    errors are positions in ``data``.
    """
    if codec == Compression.NONE:
        if len(data) > max_size:
            raise _bomb(max_size)
        return bytes(data)
    return _codec(codec, magic)[1](memoryview(data), magic, max_size)


def decompress_into(
    codec: int,
    data: bytes | bytearray | memoryview,
    sink: Sink,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> int:
    """``decompress`` written at the end of ``sink``; how many bytes it wrote.

    lz4 blocks decompress straight into the sink (a fetch answer's many blocks are never copied
    into chunks and joined); the other codecs' output is copied in once. Errors as ``decompress``;
    after one, the sink may hold part of the output, uncommitted or not (the caller drops it).
    """
    if codec == Compression.LZ4:
        before = sink.size
        _lz4_decompress(memoryview(data), magic, max_size, sink)
        return sink.size - before
    out = decompress(codec, data, magic=magic, max_size=max_size)
    view = sink.reserve(len(out))
    view[:] = out
    view.release()
    sink.commit(len(out))
    return len(out)
