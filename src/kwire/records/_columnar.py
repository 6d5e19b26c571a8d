"""The columnar decoder: a buffer of record batches straight into Arrow arrays.

Approach. No Python object is made per record. Three steps:
  1. ``scan_batches`` (a numba kernel, see _columnar_kernels) walks the batch framing and fills
     an int64 table of header fields, one row per batch. Sizes come from the bytes (a counting
     walk, then a filling walk), never from counts the input claims.
  2. Python handles what is per batch: CRC32C (the ``crc32c`` C extension over a memoryview
     slice) and, for magic 0/1, CRC32 (zlib); decompression (kwire.records._codecs, the same
     codec table as the row API) of v2 batches and legacy wrappers into an "arena" of
     decompressed sections, in one ``bytes`` object.
  3. ``walk_records`` (numba) walks every section twice: once to validate and count the bytes
     each column needs, then to fill preallocated numpy buffers (int64 offsets and timestamps,
     Arrow offsets/data/validity for key, value and headers). A section is either v2 records or
     magic 0/1 entries (a plain message in the caller's buffer, or a wrapper's decompressed
     message set with KIP-31 relative offsets and LogAppendTime applied). The buffers become
     Arrow arrays through ``pa.Array.from_buffers`` without another copy. Per-batch columns are
     ``np.repeat`` of per-batch values; topic/partition/segment are per-call constants.

Where the columnar decoder and the row API differ, on purpose: a header key that is not UTF-8
gets U+FFFD where Java's ``new String(bytes, UTF_8)`` puts them (``java_string``, shared with
``kwire dump``; Arrow strings must be UTF-8),
a timestamp that int64 microseconds cannot hold is null, and a v2 batch whose record count is 0
has no records whatever bytes follow its header, without decompressing them (Kafka's
``DefaultRecordBatch.iterator()``; the row API checks those bytes). Everything else, errors
included, matches ``read_batches`` (tests/unit/records/test_columnar*.py check both on generated
and on mutated data).

The Arrow schema is the one Spark's Python data source compares against exactly
(``to_arrow_schema`` of Spark's Kafka source schema with timezone UTC): every field nullable,
``timestamp`` as timestamp[us, tz=UTC], list items named ``element``. ``records_arrow_schema`` is
the single definition the log and spark layers reuse; ``records_spark_ddl`` is the same schema
as a Spark DDL string.

pyarrow is imported lazily (it is the ``arrow`` extra), so importing kwire.records stays light.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np

from kwire._lazy import lazy_dataclass
from kwire._wire import INT32_MAX
from kwire.errors import CorruptRecordError, DecodeError, UnsupportedCodecError
from kwire.records._java import java_string
from kwire.records._sequence import NO_SEQUENCE, increment_sequence

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BATCH_COLUMNS",
    "CONSTANT_COLUMNS",
    "RECORD_COLUMNS",
    "ColumnarResult",
    "SkippedBatch",
    "columnar_engine",
    "constant_array",
    "decode_columnar",
    "decode_to_arrow",
    "records_arrow_schema",
    "records_spark_ddl",
    "warm_up",
]

#: Every column the decoder can produce, in Spark's Kafka source order, then the batch columns.
RECORD_COLUMNS: Final = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
    "headers",
    "magic",
    "compression",
    "producerId",
    "producerEpoch",
    "sequence",
    "isTransactional",
    "isControl",
    "leaderEpoch",
    "batchOffset",
    "segment",
)
#: Columns whose value is the same for a whole call; the caller supplies them.
CONSTANT_COLUMNS: Final = ("topic", "partition", "segment")
#: Columns that describe the batch a record came from.
BATCH_COLUMNS: Final = (
    "magic",
    "compression",
    "producerId",
    "producerEpoch",
    "sequence",
    "isTransactional",
    "isControl",
    "leaderEpoch",
    "batchOffset",
)

_SPARK_TYPES: Final = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "int",
    "offset": "bigint",
    "timestamp": "timestamp",
    "timestampType": "int",
    "headers": "array<struct<key:string,value:binary>>",
    "magic": "tinyint",
    "compression": "string",
    "producerId": "bigint",
    "producerEpoch": "smallint",
    "sequence": "int",
    "isTransactional": "boolean",
    "isControl": "boolean",
    "leaderEpoch": "int",
    "batchOffset": "bigint",
    "segment": "string",
}

#: Names of the ``compression`` column, indexed by codec id (ids 5-7 never decode).
_CODEC_NAMES: Final = ("none", "gzip", "snappy", "lz4", "zstd")

_V2_HEADER: Final = 61
_V2_CRC_START: Final = 21


def _arrow_type(name: str) -> pa.DataType:
    import pyarrow as pa

    if name in ("key", "value"):
        return pa.binary()
    if name in ("topic", "compression", "segment"):
        return pa.string()
    if name in ("partition", "timestampType", "sequence", "leaderEpoch"):
        return pa.int32()
    if name in ("offset", "producerId", "batchOffset"):
        return pa.int64()
    if name == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if name == "headers":
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        return pa.list_(pa.field("element", header))
    if name == "magic":
        return pa.int8()
    if name == "producerEpoch":
        return pa.int16()
    if name in ("isTransactional", "isControl"):
        return pa.bool_()
    raise ValueError(f"unknown column {name!r}; the columns are {', '.join(RECORD_COLUMNS)}")


def _resolve_columns(columns: Sequence[str] | None) -> tuple[str, ...]:
    if columns is None:
        return RECORD_COLUMNS
    if isinstance(columns, str):
        raise TypeError("columns must be a sequence of column names, not one string")
    names = tuple(columns)
    for name in names:
        if name not in _SPARK_TYPES:
            raise ValueError(
                f"unknown column {name!r}; the columns are {', '.join(RECORD_COLUMNS)}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate column names in {names!r}")
    return names


def records_arrow_schema(columns: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of the decoder's output, for ``columns`` (all of them by default) in order.

    It equals what PySpark's ``to_arrow_schema`` makes of Spark's Kafka source schema (plus kwire's
    batch columns) with timezone UTC, so record batches built with it pass the Python data source's
    exact schema check. Every field is nullable; ``key``, ``value`` and a header's ``value`` hold
    nulls, ``headers`` is null for a record without headers, ``timestamp`` is null only for a
    Kafka timestamp that int64 microseconds cannot hold (beyond ±292,000 years), and the constant
    columns are null when the caller gives no value; the other columns never are.
    """
    return _schema(_resolve_columns(columns))


@functools.lru_cache(maxsize=256)
def _schema(names: tuple[str, ...]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow_type(name)) for name in names])


def records_spark_ddl(columns: Sequence[str] | None = None) -> str:
    """The same schema as a Spark DDL string (``"key binary, value binary, ..."``)."""
    return ", ".join(f"`{name}` {_SPARK_TYPES[name]}" for name in _resolve_columns(columns))


def constant_array(value: object, length: int, type: pa.DataType) -> pa.Array:
    """``length`` copies of ``value`` as an Arrow array of ``type`` (null if ``value`` is None).

    Strings are built from one repeated byte string and arithmetic offsets, with no Python object
    per row; use it for the per-segment ``topic``/``partition``/``segment`` columns.
    """
    import pyarrow as pa

    if value is None:
        return pa.nulls(length, type)
    if pa.types.is_string(type) or pa.types.is_binary(type):
        raw = value.encode() if isinstance(value, str) else bytes(value)  # type: ignore[call-overload]
        if len(raw) * length > INT32_MAX:
            raise ValueError("constant column larger than 2 GiB; use fewer rows per call")
        offsets = np.arange(0, (length + 1) * len(raw), len(raw) or 1, dtype=np.int32)
        if not raw:
            offsets = np.zeros(length + 1, dtype=np.int32)
        return pa.Array.from_buffers(
            type, length, [None, pa.py_buffer(offsets), pa.py_buffer(raw * length)]
        )
    scalar = pa.scalar(value, type=type)
    if pa.types.is_integer(type) or pa.types.is_floating(type):
        return pa.array(np.full(length, scalar.as_py(), dtype=type.to_pandas_dtype()), type=type)
    return pa.repeat(scalar, length)


@lazy_dataclass(frozen=True)
class SkippedBatch:
    """A batch ``decode_columnar(..., on_corrupt="skip")`` left out: where, how long, and why."""

    position: int  # byte position (including ``position_base``)
    size: int  # bytes skipped from ``position``
    reason: str


@lazy_dataclass(frozen=True)
class ColumnarResult:
    """What ``decode_columnar`` returns: the Arrow batch plus what it read and skipped."""

    batch: pa.RecordBatch
    #: Bytes of whole batches read from the start of the buffer (where a truncated tail starts).
    bytes_consumed: int
    #: Bytes after the last whole batch left unread (``allow_truncated_tail=True`` only).
    truncated_bytes: int = 0
    #: Batches left out because they were corrupt (``on_corrupt="skip"`` only).
    skipped: tuple[SkippedBatch, ...] = field(default_factory=tuple)
    #: Number of batches (v2 batches and legacy shallow messages) whose records were decoded.
    batch_count: int = 0

    @property
    def skipped_bytes(self) -> int:
        return self.truncated_bytes + sum(s.size for s in self.skipped)


def columnar_engine() -> str:
    """``"numba"`` when the compiled kernels are in use, ``"python"`` otherwise."""
    from kwire.records import _columnar_kernels as k

    return k.ENGINE


def _kernels(engine: str | None) -> tuple[Any, Any]:
    from kwire.records import _columnar_kernels as k

    if engine is None or engine == "auto" or engine == k.ENGINE:
        return k.scan_batches, k.walk_records
    if engine == "python":
        return k.PY_SCAN_BATCHES, k.PY_WALK_RECORDS
    raise ValueError(f"engine {engine!r} is not available (this process uses {k.ENGINE!r})")


def warm_up(engine: str | None = None) -> float:
    """Compile (or load from the on-disk cache) the kernels now; returns the seconds it took.

    Call it once per process (a Spark executor, a benchmark) so the first real decode is not
    charged with numba's compile time. The cache directory is ``NUMBA_CACHE_DIR`` or
    ``<user cache dir>/kwire/numba``.
    """
    import time
    import zlib

    t0 = time.perf_counter()
    # one tiny batch exercising every path: a key, a value, a header with a null value
    record = bytes([0, 0, 0, 2, ord("k"), 2, ord("v"), 2, 2, ord("h"), 1])
    body = bytes([len(record) * 2]) + record
    header = bytearray(_V2_HEADER)
    header[8:12] = (_V2_HEADER - 12 + len(body)).to_bytes(4, "big")
    header[16] = 2
    header[57:61] = (1).to_bytes(4, "big")
    decode_to_arrow(bytes(header) + body, verify_crc=False, engine=engine)
    # and the legacy CRC walk (a one-message magic 0 set)
    entry = b"\x00\x00" + b"\xff" * 8  # magic 0, attributes 0, null key, null value
    legacy = bytes(8) + (14).to_bytes(4, "big") + zlib.crc32(entry).to_bytes(4, "big") + entry
    decode_to_arrow(legacy, engine=engine)
    from kwire.records import _columnar_kernels as k

    if engine in (None, "auto", k.ENGINE):
        k.legacy_crc_ranges(_as_uint8(legacy)[1], 0, len(legacy), np.zeros((1, 3), np.int64))
    return time.perf_counter() - t0


def decode_to_arrow(
    buffer: bytes | bytearray | memoryview | Any,
    *,
    columns: Sequence[str] | None = None,
    verify_crc: bool = True,
    max_decompressed_size: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    segment: str | None = None,
    position_base: int = 0,
    engine: str | None = None,
) -> pa.RecordBatch:
    """Decode every batch in ``buffer`` (any magic) into one Arrow ``RecordBatch``.

    ``columns`` picks and orders the output columns (default: all of ``RECORD_COLUMNS``); columns
    not asked for are not materialised (only ``key`` and ``offset`` copies no values or headers).
    The constant columns ``topic``, ``partition`` and ``segment`` take the values passed here
    (null if not given). The record batch's schema is ``records_arrow_schema(columns)``.

    Malformed input raises ``CorruptRecordError`` naming the batch and the byte position
    (``position_base`` is added to positions, for callers decoding a slice of a file). A codec
    kwire cannot use raises ``UnsupportedCodecError``. See ``decode_columnar`` for tolerant reads.
    The result owns its memory; it does not keep ``buffer`` alive.
    """
    return decode_columnar(
        buffer,
        columns=columns,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        topic=topic,
        partition=partition,
        segment=segment,
        position_base=position_base,
        engine=engine,
    ).batch


def decode_columnar(
    buffer: bytes | bytearray | memoryview | Any,
    *,
    columns: Sequence[str] | None = None,
    verify_crc: bool = True,
    max_decompressed_size: int | None = None,
    allow_truncated_tail: bool = False,
    on_corrupt: Literal["raise", "skip"] = "raise",
    topic: str | None = None,
    partition: int | None = None,
    segment: str | None = None,
    position_base: int = 0,
    engine: str | None = None,
) -> ColumnarResult:
    """``decode_to_arrow`` that also reports what it read, with tolerant options.

    ``allow_truncated_tail``: a last batch cut short (or a zero-filled tail, as a preallocated or
    crashed segment leaves) ends the decode instead of raising; ``truncated_bytes`` says how much
    was left. ``on_corrupt="skip"``: a batch that fails its CRC, its decompression or its record
    structure is left out and listed in ``skipped``; if the framing itself is broken (a batch
    length that cannot be right) the rest of the buffer is skipped as one piece.
    """
    if on_corrupt not in ("raise", "skip"):
        raise ValueError(f"on_corrupt must be 'raise' or 'skip', not {on_corrupt!r}")
    names = _resolve_columns(columns)
    return _Decoder(
        buffer,
        names=names,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
        allow_truncated_tail=allow_truncated_tail,
        skip_corrupt=on_corrupt == "skip",
        constants={"topic": topic, "partition": partition, "segment": segment},
        position_base=position_base,
        engine=engine,
    ).run()


class _Arena:
    """The decompressed records of one decode call: one buffer written at its end (a
    ``kwire.records._codecs.Sink``), not zero-filled, grown by doubling."""

    __slots__ = ("array", "size")

    def __init__(self, capacity: int) -> None:
        self.array = np.empty(max(capacity, 1), dtype=np.uint8)
        self.size = 0

    def reserve(self, n: int) -> memoryview:
        need = self.size + n
        if need > self.array.shape[0]:
            grown = np.empty(max(need, 2 * self.array.shape[0]), dtype=np.uint8)
            grown[: self.size] = self.array[: self.size]
            self.array = grown
        return self.array.data[self.size : need]

    def commit(self, n: int) -> None:
        self.size += n

    def append(self, data: bytes) -> None:
        view = self.reserve(len(data))
        view[:] = data
        view.release()
        self.commit(len(data))


def _as_uint8(buffer: Any) -> tuple[memoryview, np.ndarray]:
    view = buffer if isinstance(buffer, memoryview) else memoryview(buffer)
    if view.ndim != 1 or view.itemsize != 1 or view.format not in ("B", "b", "c"):
        view = view.cast("B")
    if not view.c_contiguous:
        raise TypeError("the buffer must be contiguous")
    arr = np.frombuffer(view, dtype=np.uint8) if len(view) else np.zeros(0, dtype=np.uint8)
    arr = arr.view()
    arr.flags.writeable = False  # one numba type for every buffer (bytes, bytearray, mmap)
    return view, arr


class _Decoder:
    """One decode call's state (see the module comment for the steps)."""

    def __init__(
        self,
        buffer: Any,
        *,
        names: tuple[str, ...],
        verify_crc: bool,
        max_decompressed_size: int | None,
        allow_truncated_tail: bool,
        skip_corrupt: bool,
        constants: dict[str, object],
        position_base: int,
        engine: str | None,
    ) -> None:
        from kwire.records._codecs import DEFAULT_MAX_DECOMPRESSED_SIZE

        self.view, self.buf = _as_uint8(buffer)
        self.names = names
        self.verify_crc = verify_crc
        self.max_size = (
            DEFAULT_MAX_DECOMPRESSED_SIZE
            if max_decompressed_size is None
            else max_decompressed_size
        )
        self.allow_truncated_tail = allow_truncated_tail
        self.skip_corrupt = skip_corrupt
        self.constants = constants
        self.base = position_base
        self.scan, self.walk = _kernels(engine)
        # Without numba the kernels read a memoryview (indexing it yields ints, several times
        # faster than numpy scalars); compiled kernels (and their helpers) read the numpy view.
        from kwire.records import _columnar_kernels as k

        self.interpreted = k.ENGINE == "python"
        self.kbuf: Any = self.view if self.interpreted else self.buf
        self.skipped: list[SkippedBatch] = []

    # -- errors ------------------------------------------------------------------------------

    def _where(self, table: np.ndarray, i: int) -> str:
        from kwire.records import _columnar_kernels as k

        pos = int(table[i, k.BT_POS])
        return f"batch at byte {self.base + pos} (base offset {int(table[i, k.BT_BASE_OFFSET])})"

    def _fail(self, table: np.ndarray, i: int, reason: str, offset: int, keep: np.ndarray) -> None:
        """Raise, or (skip mode) mark batch ``i`` as skipped."""
        from kwire.records import _columnar_kernels as k

        if not self.skip_corrupt:
            raise CorruptRecordError(
                reason, offset=self.base + offset, context=self._where(table, i)
            )
        keep[i] = False
        self.skipped.append(
            SkippedBatch(int(table[i, k.BT_POS]) + self.base, int(table[i, k.BT_SIZE]), reason)
        )

    # -- the steps -----------------------------------------------------------------------------

    def run(self) -> ColumnarResult:
        from kwire.records import _columnar_kernels as k

        buf = self.buf
        n, stop, status = self.scan(self.kbuf, 0, buf.shape[0], False, np.zeros((0, 1), np.int64))
        table = np.zeros((n, k.BT_NFIELDS), dtype=np.int64)
        if n:
            self.scan(self.kbuf, 0, buf.shape[0], True, table)
        truncated = 0
        if status != k.E_OK:
            rest = buf.shape[0] - stop
            if self.allow_truncated_tail and (
                status == k.E_TRUNCATED or not buf[stop:].any()  # zero-filled tail
            ):
                truncated = rest
            elif self.skip_corrupt:
                self.skipped.append(
                    SkippedBatch(self.base + stop, rest, k.ERROR_MESSAGES[int(status)])
                )
            else:
                base_offset = ""
                if rest >= 8:
                    base_offset = (
                        f" (base offset {int.from_bytes(buf[stop : stop + 8], 'big', signed=True)})"
                    )
                raise CorruptRecordError(
                    k.ERROR_MESSAGES[int(status)],
                    offset=self.base + stop,
                    context=f"batch at byte {self.base + stop}{base_offset}",
                )

        keep = np.ones(n, dtype=bool)
        magic = table[:, k.BT_MAGIC]
        attrs = table[:, k.BT_ATTRS]
        v2 = magic == 2
        if self.verify_crc:
            self._check_crcs(table, np.flatnonzero(v2), keep)
        for i in np.flatnonzero(v2 & ((attrs & 7) > 4) & keep).tolist():
            reason = f"unknown compression codec id {int(attrs[i]) & 7}"
            self._fail(table, i, reason, int(table[i, k.BT_POS]) + _V2_CRC_START, keep)

        sections = np.zeros((n, k.SC_NFIELDS), dtype=np.int64)
        sections[:, k.SC_START] = table[:, k.BT_POS] + _V2_HEADER
        sections[:, k.SC_END] = table[:, k.BT_POS] + table[:, k.BT_SIZE]
        sections[:, k.SC_COUNT] = np.where(v2, table[:, k.BT_COUNT], 0)
        sections[:, k.SC_BASE_OFFSET] = table[:, k.BT_BASE_OFFSET]
        sections[:, k.SC_BASE_TS] = table[:, k.BT_BASE_TS]
        sections[:, k.SC_MAX_TS] = table[:, k.BT_MAX_TS]
        sections[:, k.SC_LOG_APPEND] = np.where(v2, (attrs >> 3) & 1, 0)
        # per-batch values of the batch columns (legacy messages overwrite theirs below)
        meta = {
            "timestampType": np.where(magic == 0, -1, (attrs >> 3) & 1).astype(np.int32),
            "magic": magic.astype(np.int8),
            "codec": (attrs & 7).astype(np.int8),
            "producerId": table[:, k.BT_PID].copy(),
            "producerEpoch": table[:, k.BT_PRODUCER_EPOCH].astype(np.int16),
            "baseSequence": table[:, k.BT_BASE_SEQ].copy(),
            "isTransactional": v2 & (((attrs >> 4) & 1) == 1),
            "isControl": v2 & (((attrs >> 5) & 1) == 1),
            "leaderEpoch": table[:, k.BT_LEADER_EPOCH].astype(np.int32),
            "batchOffset": table[:, k.BT_BASE_OFFSET].copy(),
        }

        arena_parts: list[bytes] = []
        arena_len = 0
        compressed = np.flatnonzero(v2 & ((attrs & 7) != 0) & (table[:, k.BT_COUNT] != 0) & keep)
        sink: _Arena | None = None
        if compressed.size:
            from kwire.records._codecs import decompress_into

            view = self.view
            max_size = self.max_size
            done: list[int] = []
            sizes: list[int] = []
            starts = (table[compressed, k.BT_POS] + _V2_HEADER).tolist()
            ends = (table[compressed, k.BT_POS] + table[compressed, k.BT_SIZE]).tolist()
            codecs = (attrs[compressed] & 7).tolist()
            # every batch decompresses into one arena (lz4 blocks in place): no per-batch bytes
            # and no join of them; sized for text-like ratios, grown by doubling past that
            sink = _Arena(4 * int(table[compressed, k.BT_SIZE].sum()))
            for i, start, end, codec in zip(compressed.tolist(), starts, ends, codecs, strict=True):
                mark = sink.size
                try:
                    written = decompress_into(
                        codec, view[start:end], sink, magic=2, max_size=max_size
                    )
                except CorruptRecordError as exc:
                    sink.size = mark  # a failed batch leaves nothing behind

                    self._fail(table, i, exc.reason, start, keep)
                    continue
                except UnsupportedCodecError:
                    sink.size = mark
                    if not self.skip_corrupt:
                        raise
                    self._fail(table, i, f"unsupported compression codec id {codec}", start, keep)
                    continue
                done.append(i)
                sizes.append(written)
            if done:
                ends_in_arena = np.cumsum(np.array(sizes, dtype=np.int64))
                sections[done, k.SC_SRC] = 1
                sections[done, k.SC_START] = ends_in_arena - np.array(sizes, dtype=np.int64)
                sections[done, k.SC_END] = ends_in_arena
                arena_len = int(ends_in_arena[-1])

        legacy = np.flatnonzero(~v2 & keep)
        if legacy.size:
            arena_len = self._legacy(table, legacy, keep, sections, meta, arena_parts, arena_len)

        if sink is None:
            joined: Any = b"".join(arena_parts)
        else:
            for part in arena_parts:  # legacy wrappers' messages, after the v2 batches
                sink.append(part)
            joined = sink.array[: sink.size]
        arena = memoryview(joined) if self.interpreted else _as_uint8(joined)[1]

        return self._records(table, keep, sections, meta, arena, stop, truncated)

    def _check_crcs(self, table: np.ndarray, rows: np.ndarray, keep: np.ndarray) -> None:
        import crc32c

        from kwire.records import _columnar_kernels as k

        view = self.view
        fn = crc32c.crc32c
        positions = table[rows, k.BT_POS].tolist()
        sizes = table[rows, k.BT_SIZE].tolist()
        stored = table[rows, k.BT_CRC].tolist()
        for j, (pos, size, crc) in enumerate(zip(positions, sizes, stored, strict=True)):
            actual = fn(view[pos + _V2_CRC_START : pos + size])
            if actual != crc:
                self._fail(
                    table,
                    int(rows[j]),
                    f"CRC32C mismatch: stored {crc:#010x}, computed {actual:#010x}",
                    pos + 17,
                    keep,
                )

    def _legacy(
        self,
        table: np.ndarray,
        rows: np.ndarray,
        keep: np.ndarray,
        sections: np.ndarray,
        meta: dict[str, np.ndarray],
        arena_parts: list[bytes],
        arena_len: int,
    ) -> int:
        """Magic 0/1 entries: plain messages are read in place, wrappers are decompressed.

        The kernel walks both (``KIND_LEGACY`` sections); here only the per-entry work Python
        must do: CRC32 (zlib) checks, the wrapper's own fields, and decompression.
        """
        import zlib

        from kwire.records import _columnar_kernels as k
        from kwire.records._codecs import decompress

        view = self.view
        pos_all = table[rows, k.BT_POS]
        size_all = table[rows, k.BT_SIZE]
        sections[rows, k.SC_KIND] = k.KIND_LEGACY
        sections[rows, k.SC_START] = pos_all
        sections[rows, k.SC_END] = pos_all + size_all
        sections[rows, k.SC_COUNT] = 0
        if self.verify_crc:
            crc32 = zlib.crc32
            stored = table[rows, k.BT_CRC].tolist()
            for j, (pos, size) in enumerate(zip(pos_all.tolist(), size_all.tolist(), strict=True)):
                actual = crc32(view[pos + 16 : pos + size])
                if actual != stored[j]:
                    reason = f"CRC32 mismatch: stored {stored[j]:#010x}, computed {actual:#010x}"
                    self._fail(table, int(rows[j]), reason, pos + 12, keep)
        codecs = table[rows, k.BT_ATTRS] & 7
        for j in np.flatnonzero(codecs).tolist():
            i = int(rows[j])
            if not keep[i]:
                continue
            pos = int(table[i, k.BT_POS])
            end = pos + int(table[i, k.BT_SIZE])
            magic = int(table[i, k.BT_MAGIC])
            codec = int(codecs[j])
            if codec > 3:
                reason = f"compression codec id {codec} is not valid for magic {magic}"
                self._fail(table, i, reason, pos + 17, keep)
                continue
            # the wrapper's key (ignored) and value (the compressed inner message set)
            p = pos + (26 if magic == 1 else 18)
            klen = int.from_bytes(view[p : p + 4], "big", signed=True)
            p += 4 + max(klen, 0)
            if klen < -1 or p + 4 > end:
                self._fail(table, i, "invalid wrapper key length", pos, keep)
                continue
            vlen = int.from_bytes(view[p : p + 4], "big", signed=True)
            p += 4
            if vlen < 0 or vlen != end - p:
                reason = (
                    "compressed message set with a null value"
                    if vlen == -1
                    else f"wrapper value length {vlen} does not match the message"
                )
                self._fail(table, i, reason, p - 4, keep)
                continue
            try:
                data = decompress(codec, view[p:end], magic=magic, max_size=self.max_size)
            except CorruptRecordError as exc:
                self._fail(table, i, exc.reason, p, keep)
                continue
            if self.verify_crc and not self._inner_crcs_ok(table, i, data, keep):
                continue
            sections[i, k.SC_SRC] = 1
            sections[i, k.SC_START] = arena_len
            sections[i, k.SC_END] = arena_len + len(data)
            sections[i, k.SC_INNER] = 1
            wrapper_offset = int(table[i, k.BT_BASE_OFFSET])
            sections[i, k.SC_RELATIVE] = 1 if magic == 1 and wrapper_offset != 0 else 0
            if magic == 1 and (int(table[i, k.BT_ATTRS]) >> 3) & 1:
                sections[i, k.SC_LOG_APPEND] = 1
                sections[i, k.SC_MAX_TS] = int.from_bytes(
                    view[pos + 18 : pos + 26], "big", signed=True
                )
            arena_parts.append(data)
            arena_len += len(data)
        return arena_len

    def _inner_crcs_ok(self, table: np.ndarray, i: int, data: bytes, keep: np.ndarray) -> bool:
        import zlib

        from kwire.records import _columnar_kernels as k

        arr = memoryview(data) if self.interpreted else _as_uint8(data)[1]
        ranges = np.empty((len(data) // 26 + 1, 3), dtype=np.int64)
        fn = k.legacy_crc_ranges if self.walk is k.walk_records else k.PY_LEGACY_CRC_RANGES
        n = fn(arr, 0, len(data), ranges)
        crc32 = zlib.crc32
        mv = memoryview(data)
        for index, (start, end, stored) in enumerate(ranges[:n].tolist()):
            actual = crc32(mv[start:end])
            if actual != stored:
                reason = (
                    f"CRC32 mismatch in inner message {index}: stored {stored:#010x}, "
                    f"computed {actual:#010x} (at byte {start - 4} of the decompressed messages)"
                )
                self._fail(table, i, reason, int(table[i, k.BT_POS]), keep)
                return False
        return True

    def _records(
        self,
        table: np.ndarray,
        keep: np.ndarray,
        sections: np.ndarray,
        meta: dict[str, np.ndarray],
        arena: Any,  # numpy view, or memoryview for the interpreted kernels
        stop: int,
        truncated: int,
    ) -> ColumnarResult:
        from kwire.records import _columnar_kernels as k

        names = set(self.names)
        want_key = "key" in names
        want_value = "value" in names
        want_headers = "headers" in names
        i32 = np.zeros(0, dtype=np.int32)
        u8 = np.zeros(0, dtype=np.uint8)
        i64 = np.zeros(0, dtype=np.int64)

        rows = np.flatnonzero(keep)
        sec = np.ascontiguousarray(sections[rows])
        totals = np.zeros(k.T_NFIELDS, dtype=np.int64)
        errors = np.zeros((sec.shape[0], 2), dtype=np.int64)
        sec_info = np.zeros((sec.shape[0], 2), dtype=np.int64)
        # pass 1: validate and count
        failed = self.walk(
            self.kbuf, arena, sec, False, not self.skip_corrupt,
            want_key, want_value, want_headers, totals, errors,
            i64, i64, i32, u8, u8, i32, u8, u8, i32, u8, i32, u8, i32, u8, u8, sec_info,
        )  # fmt: skip
        if failed:
            for j in np.flatnonzero(errors[:, 0]).tolist():
                self._section_error(table, int(rows[j]), sec[j], errors[j], keep)
            ok = errors[:, 0] == 0
            sec_info = np.ascontiguousarray(sec_info[ok])
            rows = np.flatnonzero(keep)
            sec = np.ascontiguousarray(sections[rows])
            errors = np.zeros((sec.shape[0], 2), dtype=np.int64)
        # a legacy batch's base offset is its first record's (a wrapper's first inner offset)
        legacy = sec[:, k.SC_KIND] == k.KIND_LEGACY
        if legacy.any():
            meta["batchOffset"][rows[legacy]] = sec_info[legacy, 0]

        nrec = int(totals[k.T_RECORDS])
        for what, t in (
            ("keys", k.T_KEY_BYTES),
            ("values", k.T_VALUE_BYTES),
            ("header keys", k.T_HDR_KEY_BYTES),
            ("header values", k.T_HDR_VALUE_BYTES),
        ):
            if int(totals[t]) > INT32_MAX:
                raise DecodeError(
                    f"the {what} of this buffer exceed Arrow's 2 GiB binary column limit; "
                    "decode it in smaller byte ranges",
                    offset=self.base,
                )
        nh = int(totals[k.T_HEADERS])
        off_out = np.empty(nrec, dtype=np.int64)
        ts_out = np.empty(nrec, dtype=np.int64)
        key_offs = np.empty(nrec + 1, dtype=np.int32) if want_key else i32
        key_data = np.empty(int(totals[k.T_KEY_BYTES]), dtype=np.uint8) if want_key else u8
        key_valid = np.empty(nrec, dtype=np.uint8) if want_key else u8
        val_offs = np.empty(nrec + 1, dtype=np.int32) if want_value else i32
        val_data = np.empty(int(totals[k.T_VALUE_BYTES]), dtype=np.uint8) if want_value else u8
        val_valid = np.empty(nrec, dtype=np.uint8) if want_value else u8
        if want_headers:
            hdr_offs = np.empty(nrec + 1, dtype=np.int32)
            hdr_valid = np.empty(nrec, dtype=np.uint8)
            hk_offs = np.empty(nh + 1, dtype=np.int32)
            hk_data = np.empty(int(totals[k.T_HDR_KEY_BYTES]), dtype=np.uint8)
            hv_offs = np.empty(nh + 1, dtype=np.int32)
            hv_data = np.empty(int(totals[k.T_HDR_VALUE_BYTES]), dtype=np.uint8)
            hv_valid = np.empty(nh, dtype=np.uint8)
        else:
            hdr_offs, hdr_valid, hk_offs, hk_data, hv_offs, hv_data, hv_valid = (
                i32, u8, i32, u8, i32, u8, u8,
            )  # fmt: skip
        # pass 2: fill
        if sec.shape[0]:
            failed = self.walk(
                self.kbuf, arena, sec, True, True,
                want_key, want_value, want_headers, np.zeros(k.T_NFIELDS, dtype=np.int64), errors,
                off_out, ts_out, key_offs, key_data, key_valid, val_offs, val_data, val_valid,
                hdr_offs, hdr_valid, hk_offs, hk_data, hv_offs, hv_data, hv_valid, sec_info,
            )  # fmt: skip
            if failed:
                j = int(np.flatnonzero(errors[:, 0])[0])
                raise CorruptRecordError(
                    k.ERROR_MESSAGES[int(errors[j, 0])],
                    offset=self.base,
                    context=self._where(table, int(rows[j])),
                )
        elif want_key or want_value or want_headers:
            for arr in (key_offs, val_offs, hdr_offs, hk_offs, hv_offs):
                if arr.shape[0]:
                    arr[0] = 0

        counts = sec_info[:, 1]
        per_batch = {name: values[rows] for name, values in meta.items()}
        batch = self._build(
            nrec, counts, per_batch, off_out, ts_out,
            (key_offs, key_data, key_valid), (val_offs, val_data, val_valid),
            (hdr_offs, hdr_valid, hk_offs, hk_data, hv_offs, hv_data, hv_valid),
        )  # fmt: skip
        return ColumnarResult(
            batch=batch,
            bytes_consumed=int(stop),
            truncated_bytes=int(truncated),
            skipped=tuple(sorted(self.skipped, key=lambda s: s.position)),
            batch_count=int(rows.shape[0]),
        )

    def _section_error(
        self, table: np.ndarray, i: int, sec: np.ndarray, err: np.ndarray, keep: np.ndarray
    ) -> None:
        from kwire.records import _columnar_kernels as k

        code, pos = int(err[0]), int(err[1])
        reason = k.ERROR_MESSAGES.get(code, f"error {code}")
        if sec[k.SC_SRC] == 1:
            reason += f" (at byte {pos - int(sec[k.SC_START])} of the decompressed records)"
            pos = int(table[i, k.BT_POS]) + _V2_HEADER
        self._fail(table, i, reason, pos, keep)

    # -- Arrow assembly -----------------------------------------------------------------------

    def _build(
        self,
        nrec: int,
        counts: np.ndarray,
        meta: dict[str, np.ndarray],
        off_out: np.ndarray,
        ts_out: np.ndarray,
        key: tuple[np.ndarray, np.ndarray, np.ndarray],
        value: tuple[np.ndarray, np.ndarray, np.ndarray],
        headers: tuple[np.ndarray, ...],
    ) -> pa.RecordBatch:
        import pyarrow as pa

        if not self.names:  # no columns, but still the number of rows (a count)
            offsets = pa.RecordBatch.from_arrays([_fixed(pa.int64(), off_out)], names=["offset"])
            return offsets.select([])
        schema = _schema(self.names)
        arrays: list[pa.Array] = []
        for name in self.names:
            typ = schema.field(name).type
            if name == "offset":
                arrays.append(_fixed(typ, off_out))
            elif name == "timestamp":
                arrays.append(_timestamps(typ, ts_out))
            elif name == "key":
                arrays.append(_binary(typ, nrec, *key))
            elif name == "value":
                arrays.append(_binary(typ, nrec, *value))
            elif name == "headers":
                arrays.append(_headers(typ, nrec, *headers))
            elif name in CONSTANT_COLUMNS:
                arrays.append(constant_array(self.constants[name], nrec, typ))
            elif name == "compression":
                codes = np.repeat(meta["codec"], counts)
                arrays.append(pa.array(_CODEC_NAMES, pa.string()).take(pa.array(codes)))
            elif name == "sequence":
                arrays.append(_fixed(typ, _sequences(off_out, counts, meta)))
            elif name in ("isTransactional", "isControl"):
                arrays.append(pa.array(np.repeat(meta[name], counts), type=typ))
            else:
                values = np.repeat(meta[name], counts).astype(typ.to_pandas_dtype(), copy=False)
                arrays.append(_fixed(typ, values))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _fixed(typ: pa.DataType, values: np.ndarray) -> pa.Array:
    import pyarrow as pa

    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


def _timestamps(typ: pa.DataType, values: np.ndarray) -> pa.Array:
    """Timestamps in microseconds; Kafka timestamps beyond what int64 microseconds hold are null."""
    import pyarrow as pa

    from kwire.records._columnar_kernels import TS_NULL

    out_of_range = values == TS_NULL
    if not out_of_range.any():
        return _fixed(typ, values)
    bitmap, nulls = _validity(~out_of_range)
    return pa.Array.from_buffers(typ, len(values), [bitmap, pa.py_buffer(values)], null_count=nulls)


def _validity(valid: np.ndarray) -> tuple[Any, int]:
    import pyarrow as pa

    nulls = int(valid.shape[0] - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def _binary(
    typ: pa.DataType, n: int, offs: np.ndarray, data: np.ndarray, valid: np.ndarray
) -> pa.Array:
    import pyarrow as pa

    bitmap, nulls = _validity(valid)
    return pa.Array.from_buffers(
        typ, n, [bitmap, pa.py_buffer(offs), pa.py_buffer(data)], null_count=nulls
    )


def _headers(
    typ: pa.DataType,
    n: int,
    hdr_offs: np.ndarray,
    hdr_valid: np.ndarray,
    hk_offs: np.ndarray,
    hk_data: np.ndarray,
    hv_offs: np.ndarray,
    hv_data: np.ndarray,
    hv_valid: np.ndarray,
) -> pa.Array:
    import pyarrow as pa

    nh = hv_valid.shape[0]
    keys = _binary(pa.string(), nh, hk_offs, hk_data, np.ones(0, dtype=np.uint8))
    if hk_data.size and bool((hk_data >= 0x80).any()):
        keys = _utf8_or_replace(keys)
    values = _binary(pa.binary(), nh, hv_offs, hv_data, hv_valid)
    struct = pa.StructArray.from_arrays([keys, values], fields=list(typ.value_type))
    bitmap, nulls = _validity(hdr_valid)
    return pa.Array.from_buffers(
        typ, n, [bitmap, pa.py_buffer(hdr_offs)], null_count=nulls, children=[struct]
    )


def _utf8_or_replace(keys: pa.Array) -> pa.Array:
    """Header keys that are not UTF-8 get U+FFFD, as Java's ``new String(bytes, UTF_8)``."""
    import pyarrow as pa

    try:
        keys.validate(full=True)
        return keys
    except pa.ArrowInvalid:
        raw = keys.view(pa.binary()).to_pylist()
        return pa.array([java_string(b) for b in raw], pa.string())


def _sequences(offsets: np.ndarray, counts: np.ndarray, meta: dict[str, np.ndarray]) -> np.ndarray:
    """Each record's producer sequence: base + offset delta, wrapping at 2**31 - 1 like Kafka."""
    base = np.repeat(meta["baseSequence"], counts)
    delta = offsets - np.repeat(meta["batchOffset"], counts)
    seq = np.where(base < 0, NO_SEQUENCE, increment_sequence(base, delta))
    return seq.astype(np.int32)
