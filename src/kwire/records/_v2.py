"""Magic 2 record batches (Kafka's ``DefaultRecordBatch`` / ``DefaultRecord``), read and write.

Layout (big-endian; 61-byte header)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32
    | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    | producerId int64 | producerEpoch int16 | baseSequence int32 | recordCount int32 | records

The CRC is CRC32C over attributes..end. Attribute bits: 0-2 codec, 3 timestamp type (1 =
LogAppendTime), 4 transactional, 5 control, 6 delete horizon (baseTimestamp then holds it).
A record is ``length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
keyLength varint | key | valueLength varint | value | headerCount varint | headers``, a header is
``keyLength varint | key (UTF-8) | valueLength varint | value`` (length -1 = null). Varints are
zigzag (Kafka's ``ByteUtils.readVarint``).

Approach: the header is one ``struct.unpack_from``; records decode lazily in one tight generator
with local-variable binding and the one-byte varint case inlined; encoding writes each record into
one ``bytearray`` using a table of pre-encoded small varints. Header keys are decoded with
``surrogateescape`` so that bytes which are not valid UTF-8 survive a read/write round trip.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import struct
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from kwire._wire import INT32_MAX, read_varint, read_varlong
from kwire.errors import CorruptRecordError, DecodeError, EncodeError, UnsupportedCodecError
from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression, compress, decompress
from kwire.records._model import LOG_APPEND_TIME, NO_TIMESTAMP, Batch, Header, Record

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BATCH_LENGTH_OFFSET",
    "CRC_OFFSET",
    "HEADER",
    "HEADER_SIZE",
    "MAGIC_OFFSET",
    "MAX_TIMESTAMP_OFFSET",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "RECORDS_COUNT_OFFSET",
    "RecordBatch",
    "crc32c",
    "encode_batch",
    "encode_headers",
    "encode_record",
    "encode_records",
    "zigzag_bytes",
]


def _load_crc32c() -> Callable[[bytes | bytearray | memoryview], int]:
    """The ``crc32c`` package's C function, loaded without the package's ``__init__``: that one
    imports ``importlib.metadata`` (and ``email`` with it) for a version string, 20-50 ms of every
    broker start. ``import crc32c`` later finds the same extension module in ``sys.modules``."""
    name = "crc32c._crc32c"
    module = sys.modules.get(name)
    if module is None:
        package = importlib.util.find_spec("crc32c")
        locations = package.submodule_search_locations if package is not None else None
        spec = importlib.machinery.PathFinder.find_spec(name, locations) if locations else None
        if spec is None or spec.loader is None:
            import crc32c

            return crc32c.crc32c  # type: ignore[no-any-return]
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module.crc32c  # type: ignore[no-any-return]


_crc32c: Final = _load_crc32c()

#: The 61-byte v2 header as one struct (see the module docstring for the fields).
HEADER: Final = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE: Final = 61
BASE_OFFSET_OFFSET: Final = 0
BATCH_LENGTH_OFFSET: Final = 8
PARTITION_LEADER_EPOCH_OFFSET: Final = 12
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21
LAST_OFFSET_DELTA_OFFSET: Final = 23
BASE_TIMESTAMP_OFFSET: Final = 27
MAX_TIMESTAMP_OFFSET: Final = 35
PRODUCER_ID_OFFSET: Final = 43
PRODUCER_EPOCH_OFFSET: Final = 51
BASE_SEQUENCE_OFFSET: Final = 53
RECORDS_COUNT_OFFSET: Final = 57
#: Bytes counted by batchLength start after baseOffset and batchLength.
LOG_OVERHEAD: Final = 12

ATTR_CODEC_MASK: Final = 0x07
ATTR_TIMESTAMP_TYPE: Final = 0x08
ATTR_TRANSACTIONAL: Final = 0x10
ATTR_CONTROL: Final = 0x20
ATTR_DELETE_HORIZON: Final = 0x40

_NO_HEADERS: Final[tuple[Header, ...]] = ()
_AFTER_CRC: Final = struct.Struct(">hiqqqhii")  # attributes .. recordCount (40 bytes)


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C (Castagnoli) as v2 batches use it."""
    return int(_crc32c(data))


class RecordBatch(Batch):
    """A magic 2 record batch; see ``Batch`` for the fields and what keeps the buffer alive."""

    __slots__ = (
        "_base_offset",
        "_base_timestamp",
        "_last_offset_delta",
        "_record_count",
        "_src",
        "_whole",
    )

    HEADER_SIZE = HEADER_SIZE
    CRC_NAME = "CRC32C"
    CRC_OFFSET = CRC_OFFSET

    _base_offset: int
    _base_timestamp: int
    _last_offset_delta: int
    _record_count: int

    def __init__(
        self,
        view: memoryview,
        position: int = 0,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        whole: memoryview | None = None,
        src: bytes | memoryview | None = None,
    ) -> None:
        """Parse the header of the batch that ``view`` holds exactly (caller checked the length).

        ``whole`` is the reader's buffer (``view`` is ``whole[position : position + size]``) and
        ``src`` the same bytes as a ``bytes`` object when that is what the caller passed:
        record fields are then read from ``src`` (faster indexing) and sliced from ``whole``.
        """
        size = len(view)
        if size < HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch of {size} bytes is smaller than the 61-byte v2 header",
                offset=position,
            )
        (
            base_offset,
            batch_length,
            self.partition_leader_epoch,
            self.magic,
            crc,
            attributes,
            last_offset_delta,
            base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            count,
        ) = HEADER.unpack_from(view, 0)
        if batch_length + LOG_OVERHEAD != size:
            raise CorruptRecordError(
                f"batch length {batch_length} does not match the {size - LOG_OVERHEAD} bytes given",
                offset=position + BATCH_LENGTH_OFFSET,
                context=f"batch at base offset {base_offset}",
            )
        if verify_crc:
            actual = _crc32c(view[ATTRIBUTES_OFFSET:])
            if actual != crc:
                raise CorruptRecordError(
                    f"CRC32C mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}",
                    offset=position + CRC_OFFSET,
                    context=f"batch at base offset {base_offset}",
                )
        if count < 0:
            raise CorruptRecordError(
                f"negative record count {count}",
                offset=position + RECORDS_COUNT_OFFSET,
                context=f"batch at base offset {base_offset}",
            )
        if attributes & ATTR_CODEC_MASK > 4:
            raise CorruptRecordError(
                f"unknown compression codec id {attributes & ATTR_CODEC_MASK}",
                offset=position + ATTRIBUTES_OFFSET,
                context=f"batch at base offset {base_offset}",
            )
        self.view = view
        self.position = position
        self.size = size
        self.crc = crc
        self.attributes = attributes
        self.timestamp_type = 1 if attributes & ATTR_TIMESTAMP_TYPE else 0
        self.is_transactional = bool(attributes & ATTR_TRANSACTIONAL)
        self.is_control = bool(attributes & ATTR_CONTROL)
        self._base_offset = base_offset
        self._last_offset_delta = last_offset_delta
        self._base_timestamp = base_timestamp
        self._record_count = count
        self._max_decompressed_size = max_decompressed_size
        self._whole = whole
        self._src = src if whole is not None else None

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def last_offset(self) -> int:
        return self._base_offset + self._last_offset_delta

    @property
    def offset_delta(self) -> int:
        """The header's lastOffsetDelta."""
        return self._last_offset_delta

    last_offset_delta = offset_delta

    @property
    def base_timestamp(self) -> int:
        return self._base_timestamp

    @property
    def delete_horizon_ms(self) -> int:
        """The delete horizon (KIP-534) if the attribute bit is set, else -1."""
        return self._base_timestamp if self.attributes & ATTR_DELETE_HORIZON else NO_TIMESTAMP

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def record_count(self) -> int:
        return self._record_count

    @property
    def stored_crc(self) -> int:
        return self.crc

    def compute_crc(self) -> int:
        return _crc32c(self.view[ATTRIBUTES_OFFSET:])

    def verify(self) -> None:
        """Check the CRC32C, then decode every record (raises ``CorruptRecordError``)."""
        self._check_crc(self._where())
        for _ in self.records():
            pass

    def _where(self) -> str:
        return f"batch at base offset {self._base_offset}"

    def records_view(self) -> tuple[memoryview, int]:
        """The (decompressed) record bytes and their start position in the caller's buffer.

        For a compressed batch the position is -1: offsets in errors are then relative to the
        decompressed bytes.
        """
        codec = self.attributes & ATTR_CODEC_MASK
        body = self.view[HEADER_SIZE:]
        if codec == 0:
            return body, self.position + HEADER_SIZE
        try:
            data = decompress(codec, body, magic=2, max_size=self._max_decompressed_size)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"{Compression(codec).name.lower()} records: {exc.reason}",
                offset=self.position + HEADER_SIZE + (exc.offset or 0),
                context=self._where(),
            ) from None
        except UnsupportedCodecError as exc:  # pragma: no cover - ids checked in __init__
            raise CorruptRecordError(str(exc), context=self._where()) from None
        return memoryview(data), -1

    def records(self) -> Iterator[Record]:
        """Decode the records lazily (for a compressed batch, decompress first, once per call).

        A batch whose record count is 0 has no records, whatever bytes follow its header (they are
        neither decompressed nor parsed), as Kafka's ``DefaultRecordBatch.iterator()``: compaction
        leaves such batches, and the columnar decoder reads them the same way.
        """
        if not self._record_count:
            return iter(())
        if self.attributes & ATTR_CODEC_MASK == 0 and self._whole is not None:
            start = self.position
            src = self._src if self._src is not None else self._whole
            return _iter_records(self, src, self._whole, start + HEADER_SIZE, start + self.size, 0)
        view, base = self.records_view()
        # decompressed records: integers are read from the bytes object (faster to index)
        data = view.obj if base < 0 and isinstance(view.obj, bytes) else view
        return _iter_records(self, data, view, 0, len(view), base)

    def header_dict(self) -> dict[str, int | bool]:
        """The header fields as a plain dict (for printing and tests)."""
        return {
            "base_offset": self._base_offset,
            "batch_length": self.size - LOG_OVERHEAD,
            "partition_leader_epoch": self.partition_leader_epoch,
            "magic": self.magic,
            "crc": self.crc,
            "attributes": self.attributes,
            "last_offset_delta": self._last_offset_delta,
            "base_timestamp": self._base_timestamp,
            "max_timestamp": self.max_timestamp,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "base_sequence": self.base_sequence,
            "record_count": self._record_count,
        }


#: Zigzag decoding of every raw varint value below 2**14 (one- and two-byte varints), by lookup.
def _unzigzag_table() -> list[int]:
    # even raw values are 0, 1, 2, ...; odd ones -1, -2, ...: two slice assignments, not 16,384
    # Python-level steps at every import
    table = [0] * (1 << 14)
    table[0::2] = range(1 << 13)
    table[1::2] = range(-1, -(1 << 13) - 1, -1)
    return table


_UNZIGZAG: Final = _unzigzag_table()


def _iter_records(
    batch: RecordBatch,
    data: bytes | memoryview,
    view: memoryview,
    pos: int,
    end: int,
    base: int,
) -> Iterator[Record]:
    # The hot loop of the row API. Varints of one and two bytes (almost every record field) are
    # decoded inline, zigzag through a lookup table; longer ones go through ``_wire``. Bounds:
    # slices of a memoryview never read past it, a key or value running past its record is caught
    # by the final ``pos != rec_end`` check, and single-byte reads past the view raise IndexError,
    # translated below. ``data`` and ``view`` hold the same bytes: integers are read from
    # ``data`` (a bytes object when there is one: faster to index), slices taken from ``view``.
    # Positions run from ``pos`` to ``end``; ``base`` maps them to the caller's buffer (-1:
    # decompressed bytes).
    count = batch._record_count
    base_offset = batch._base_offset
    base_ts = batch._base_timestamp
    ts_type = batch.timestamp_type
    log_append = ts_type == LOG_APPEND_TIME
    max_ts = batch.max_timestamp
    no_headers = _NO_HEADERS
    unzz = _UNZIGZAG
    rvarint = read_varint
    rvarlong = read_varlong
    new = Record
    alloc = object.__new__
    index = 0
    start = 0
    try:
        for index in range(count):  # noqa: B007 (read by the error handlers)
            start = pos
            b = data[pos]
            if b < 0x80:
                length = unzz[b]
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    length = unzz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    length, pos = rvarint(data, pos)
            rec_end = pos + length
            if rec_end > end:  # a too short length fails the rec_end check below
                raise CorruptRecordError(
                    f"record length {length} out of range ({end - pos} bytes left)",
                    offset=start,
                )
            # timestamp delta (after the unused attributes byte)
            b = data[pos + 1]
            if b < 0x80:
                ts_delta = unzz[b]
                pos += 2
            else:
                c = data[pos + 2]
                if c < 0x80:
                    ts_delta = unzz[(b & 0x7F) | (c << 7)]
                    pos += 3
                else:
                    d = data[pos + 3]
                    if d < 0x80:
                        b = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
                        ts_delta = (b >> 1) ^ -(b & 1)
                        pos += 4
                    else:
                        ts_delta, pos = rvarlong(data, pos + 1)
            # offset delta
            b = data[pos]
            if b < 0x80:
                off_delta = unzz[b]
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    off_delta = unzz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    d = data[pos + 2]
                    if d < 0x80:
                        b = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
                        off_delta = (b >> 1) ^ -(b & 1)
                        pos += 3
                    else:
                        off_delta, pos = rvarint(data, pos)
            # key, then value: the same steps twice, inline on purpose (a helper call per field
            # costs ~15% of this loop; the varint decoding above is inline for the same reason)
            b = data[pos]
            if b < 0x80:
                n = unzz[b]
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = unzz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    n, pos = rvarint(data, pos)
            if n >= 0:
                key: memoryview | None = view[pos : pos + n]
                pos += n
            elif n == -1:
                key = None
            else:
                raise CorruptRecordError(f"invalid key length {n}", offset=pos)
            # value
            b = data[pos]
            if b < 0x80:
                n = unzz[b]
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    n = unzz[(b & 0x7F) | (c << 7)]
                    pos += 2
                else:
                    n, pos = rvarint(data, pos)
            if n >= 0:
                value: memoryview | None = view[pos : pos + n]
                pos += n
            elif n == -1:
                value = None
            else:
                raise CorruptRecordError(f"invalid value length {n}", offset=pos)
            # headers: usually none, the record's last byte (this also checks the length)
            pos += 1
            if pos == rec_end and data[pos - 1] == 0:
                headers = no_headers
            else:
                headers, pos = _read_headers(view, pos - 1, rec_end)
                if pos != rec_end:
                    raise CorruptRecordError(
                        f"record length {length} does not match its {pos - start} decoded bytes",
                        offset=start,
                    )
            # Record.__init__ without the call: allocating and filling the slots here is faster
            r = alloc(new)
            r.offset = base_offset + off_delta
            r.timestamp = max_ts if log_append else base_ts + ts_delta
            r.key = key
            r.value = value
            r.headers = headers
            r._batch = batch
            r.timestamp_type = ts_type
            yield r
        if pos != end:
            index = count
            raise CorruptRecordError(
                f"{end - pos} bytes left after the batch's {count} records", offset=pos
            )
    except CorruptRecordError as exc:
        raise _relocate(exc, batch, base, index) from None
    except (DecodeError, IndexError):
        raise _relocate(
            CorruptRecordError("truncated or malformed record", offset=start), batch, base, index
        ) from None


def _relocate(
    exc: CorruptRecordError, batch: RecordBatch, base: int, index: int
) -> CorruptRecordError:
    """Turn a position in the record bytes into one in the caller's buffer (when there is one)."""
    where = f"batch at base offset {batch._base_offset}"
    path = f"records[{index}]"
    if base < 0:
        where += ", decompressed records"
        offset = exc.offset
    else:
        offset = None if exc.offset is None else base + exc.offset
    return CorruptRecordError(exc.reason, offset=offset, path=path, context=where)


def _read_headers(view: memoryview, pos: int, rec_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varint(view, pos)
    if count < 0 or count > rec_end - pos:
        raise CorruptRecordError(f"invalid header count {count}", offset=pos)
    headers: list[Header] = []
    for _ in range(count):
        n, pos = read_varint(view, pos)
        if n < 0 or pos + n > rec_end:
            raise CorruptRecordError(f"invalid header key length {n}", offset=pos)
        key = str(view[pos : pos + n], "utf-8", "surrogateescape")
        pos += n
        n, pos = read_varint(view, pos)
        if n >= 0:
            if pos + n > rec_end:
                raise CorruptRecordError(f"header value length {n} past the record end", offset=pos)
            headers.append((key, view[pos : pos + n]))
            pos += n
        elif n == -1:
            headers.append((key, None))
        else:
            raise CorruptRecordError(f"invalid header value length {n}", offset=pos)
    return tuple(headers), pos


# -- encoding ------------------------------------------------------------------------------------


def _zigzag_slow(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63) if value < 0 else value << 1
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


#: Pre-encoded zigzag varints for -1 .. 16383 (index: value + 1).
_SMALL_MIN: Final = -1
_SMALL_MAX: Final = 16383


def _small_table() -> list[bytes]:
    # One bytes object per width, sliced, its columns filled by slice assignment (C loops, not a
    # Python loop per byte: this runs at every import). Value v >= 0 zigzags to raw r = 2v, -1 to
    # raw 1; a varint's first byte is (r & 0x7F) | 0x80, cycling through the 64 even values.
    low = bytes(range(0x80, 0x100, 2)) * 0x80  # the first byte of r = 0, 2, .. 0x7FFE
    two = bytearray(2 * (0x4000 - 0x80) // 2)  # r = 0x80 .. 0x3FFE: two bytes
    two[0::2] = low[0x40 : 0x40 * 0x80]
    two[1::2] = b"".join(bytes((h,)) * 0x40 for h in range(1, 0x80))  # r >> 7
    three = bytearray(3 * (0x8000 - 0x4000) // 2)  # r = 0x4000 .. 0x7FFE: three bytes
    three[0::3] = low[: 0x40 * 0x80]
    three[1::3] = b"".join(bytes((h | 0x80,)) * 0x40 for h in range(0x80))  # (r >> 7) & 0x7F
    three[2::3] = b"\x01" * (0x40 * 0x80)  # r >> 14
    two_bytes, three_bytes = bytes(two), bytes(three)
    return (
        [b"\x01"]
        + [bytes((r,)) for r in range(0, 0x80, 2)]
        + [two_bytes[i : i + 2] for i in range(0, len(two_bytes), 2)]
        + [three_bytes[i : i + 3] for i in range(0, len(three_bytes), 3)]
    )


_SMALL: Final = _small_table()

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def zigzag_bytes(value: int) -> bytes:
    """The zigzag varint encoding of ``value`` (table lookup for small values)."""
    if -1 <= value <= 16383:
        return _SMALL[value + 1]
    raw = (value << 1) ^ (value >> 63) if value < 0 else value << 1
    if raw < 0x80:
        return bytes((raw,))
    if raw < 0x4000:
        return bytes(((raw & 0x7F) | 0x80, raw >> 7))
    if raw < 0x200000:
        return bytes(((raw & 0x7F) | 0x80, ((raw >> 7) & 0x7F) | 0x80, raw >> 14))
    return _zigzag_slow(value)


_vb = zigzag_bytes

BytesLike = bytes | bytearray | memoryview
HeaderInput = tuple[str, BytesLike | None]
#: (offset delta, timestamp delta, key, value, headers)
RecordInput = tuple[int, int, BytesLike | None, BytesLike | None, Iterable[HeaderInput]]


def encode_record(
    off_delta: int,
    ts_delta: int,
    key: BytesLike | None,
    value: BytesLike | None,
    headers: Iterable[HeaderInput] = (),
) -> bytes:
    """One v2 record, length prefix included. Deltas must fit int32 / int64 (checked)."""
    if not 0 <= off_delta <= INT32_MAX:
        raise EncodeError(f"offset delta {off_delta} out of the int32 range")
    if not _INT64_MIN <= ts_delta <= _INT64_MAX:
        raise EncodeError(f"timestamp delta {ts_delta} out of the int64 range")
    small = _SMALL
    if key is None:
        kpart = b"\x01"
        key = b""
    else:
        n = len(key)
        kpart = small[n + 1] if n <= 16383 else _vb(n)
    if value is None:
        vpart = b"\x01"
        value = b""
    else:
        n = len(value)
        vpart = small[n + 1] if n <= 16383 else _vb(n)
    body = b"".join(
        (
            b"\x00",
            small[ts_delta + 1] if -1 <= ts_delta <= 16383 else _vb(ts_delta),
            small[off_delta + 1] if off_delta <= 16383 else _vb(off_delta),
            kpart,
            key,
            vpart,
            value,
            encode_headers(headers) if headers else b"\x00",
        )
    )
    n = len(body)
    return (small[n + 1] if n <= 16383 else _vb(n)) + body


def encode_records(out: bytearray, records: Iterable[RecordInput]) -> int:
    """Append v2 records ``(offset delta, timestamp delta, key, value, headers)`` to ``out``.

    Returns how many records were written.
    """
    n_written = 0
    for off_delta, ts_delta, key, value, headers in records:
        out += encode_record(off_delta, ts_delta, key, value, headers)
        n_written += 1
    return n_written


def encode_headers(headers: Iterable[HeaderInput]) -> bytes:
    """The header count and headers of one record (keys UTF-8, surrogateescape)."""
    items = list(headers)
    parts = [_vb(len(items))]
    for key, value in items:
        if not isinstance(key, str):
            raise EncodeError(f"header key must be a str, not {type(key).__name__}")
        raw = key.encode("utf-8", "surrogateescape")
        parts.append(_vb(len(raw)))
        parts.append(raw)
        if value is None:
            parts.append(b"\x01")
        else:
            parts.append(_vb(len(value)))
            parts.append(bytes(value))
    return b"".join(parts)


def encode_batch(
    out: bytearray,
    records: bytes | bytearray | memoryview,
    *,
    count: int,
    base_offset: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    compression: int = Compression.NONE,
    timestamp_type: int = 0,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    compression_level: int | None = None,
) -> int:
    """Append one v2 batch around already-encoded ``records`` to ``out``; returns its start.

    The records are compressed here with ``compression`` (at ``compression_level``, Kafka's
    default when None); the CRC32C is computed last.
    """
    if compression not in (0, 1, 2, 3, 4):
        raise UnsupportedCodecError(f"unknown compression codec id {compression}")
    payload = (
        compress(compression, records, magic=2, level=compression_level) if compression else records
    )
    attributes = compression
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    if delete_horizon:
        attributes |= ATTR_DELETE_HORIZON
    start = len(out)
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    if batch_length > INT32_MAX:
        raise EncodeError(f"batch of {batch_length} bytes is too large")
    try:
        out += HEADER.pack(
            base_offset,
            batch_length,
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    except struct.error as exc:
        raise EncodeError(f"v2 batch header field out of range: {exc}") from None
    out += payload
    crc = _crc32c(memoryview(out)[start + ATTRIBUTES_OFFSET :])
    out[start + CRC_OFFSET : start + ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return start
