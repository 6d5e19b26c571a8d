"""Kafka's offset index (``.index``) and time index (``.timeindex``), read from any bytes-like.

Approach: both files are arrays of fixed-size big-endian entries, relative to the segment's base
offset (Kafka's ``OffsetIndex`` / ``TimeIndex``):

- ``.index``: 8 bytes = relative offset (int32), position in the ``.log`` (int32). Kafka's
  ``LogSegment`` appends an entry for a batch when more than ``index.interval.bytes`` were written
  since the last entry; the entry holds the batch's LAST offset and the batch's START position, so
  every position is a batch boundary;
- ``.timeindex``: 12 bytes = timestamp (int64), relative offset (int32): "the largest timestamp
  seen up to this offset", appended only when it strictly increases.

A broker preallocates the active segment's index files (``segment.index.bytes``, 10 MiB) and trims
them when the segment rolls or the broker shuts down cleanly; after a crash the tail is zeros. As
Kafka does, a zero-filled tail is not made of entries: the parsed entries are the monotonic prefix
before it. Entries that break monotonicity (garbage, not zeros) end the usable index too, and are
listed in ``problems`` (Kafka would rebuild such an index). Lookups use binary search over the
valid entries, with Kafka's semantics for misses. ``raw_entries()`` returns every slot of the file,
zeros included, for tools (``kwire dump``) that show the file as it is.
"""

from __future__ import annotations

import bisect
import mmap
import struct
from collections.abc import Iterable
from typing import Final, NamedTuple, TypeAlias

from kwire._wire import INT32_MAX, as_view

__all__ = [
    "OFFSET_INDEX_ENTRY_SIZE",
    "TIME_INDEX_ENTRY_SIZE",
    "BytesLike",
    "OffsetIndex",
    "OffsetPosition",
    "TimeIndex",
    "TimestampOffset",
    "encode_offset_index_entry",
    "encode_time_index_entry",
    "offset_index_sanity_problem",
    "time_index_sanity_problem",
]

OFFSET_INDEX_ENTRY_SIZE: Final = 8
TIME_INDEX_ENTRY_SIZE: Final = 12
#: Kafka's ``RecordBatch.NO_TIMESTAMP``.
NO_TIMESTAMP: Final = -1

_OFFSET_ENTRY: Final = struct.Struct(">ii")
_TIME_ENTRY: Final = struct.Struct(">qi")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


def _used_length(view: memoryview, entry_size: int) -> int:
    """Length of ``view`` up to (and rounded up to the entry holding) its last non-zero byte."""
    end = len(view) - len(view) % entry_size
    chunk = 1 << 16
    while end > 0:
        start = max(0, end - chunk)
        stripped = len(bytes(view[start:end]).rstrip(b"\0"))
        if stripped:
            last = start + stripped
            return -(-last // entry_size) * entry_size
        end = start
    return 0


#: Anything the buffer protocol exposes as bytes; ``mmap`` objects included.
BytesLike: TypeAlias = bytes | bytearray | memoryview | mmap.mmap


def encode_offset_index_entry(base_offset: int, offset: int, position: int) -> bytes:
    relative = offset - base_offset
    if not 0 <= relative <= INT32_MAX or not 0 <= position <= INT32_MAX:
        raise ValueError(f"offset {offset} / position {position} do not fit segment {base_offset}")
    return _OFFSET_ENTRY.pack(relative, position)


def encode_time_index_entry(base_offset: int, timestamp: int, offset: int) -> bytes:
    relative = offset - base_offset
    if not 0 <= relative <= INT32_MAX:
        raise ValueError(f"offset {offset} does not fit segment {base_offset}")
    return _TIME_ENTRY.pack(timestamp, relative)


class OffsetIndex:
    """A segment's offset index over any bytes-like (copied into lists; the buffer is not kept).

    ``entries`` are absolute ``OffsetPosition`` s, offsets and positions strictly increasing.
    """

    __slots__ = ("_offsets", "_positions", "base_offset", "file_size", "problems", "raw_count")

    def __init__(self, buffer: BytesLike, base_offset: int) -> None:
        view = as_view(buffer)
        self.base_offset = base_offset
        self.file_size = len(view)
        self.raw_count = len(view) // OFFSET_INDEX_ENTRY_SIZE
        self.problems: list[str] = []
        if len(view) % OFFSET_INDEX_ENTRY_SIZE:
            self.problems.append(
                f"{len(view)} bytes is not a multiple of {OFFSET_INDEX_ENTRY_SIZE}: "
                f"{len(view) % OFFSET_INDEX_ENTRY_SIZE} trailing bytes ignored"
            )
        used = _used_length(view, OFFSET_INDEX_ENTRY_SIZE)
        self._offsets: list[int] = []
        self._positions: list[int] = []
        last_rel = last_pos = -1
        for i, (rel, pos) in enumerate(_OFFSET_ENTRY.iter_unpack(view[:used])):
            if rel < 0 or pos < 0 or rel <= last_rel or pos <= last_pos:
                self.problems.append(
                    f"entry {i} (relative offset {rel}, position {pos}) does not follow "
                    f"(relative offset {last_rel}, position {last_pos}): "
                    f"{used // OFFSET_INDEX_ENTRY_SIZE - i} entries from here ignored"
                )
                break
            self._offsets.append(base_offset + rel)
            self._positions.append(pos)
            last_rel, last_pos = rel, pos

    @classmethod
    def from_entries(cls, entries: Iterable[OffsetPosition], base_offset: int) -> OffsetIndex:
        data = b"".join(encode_offset_index_entry(base_offset, o, p) for o, p in entries)
        return cls(data, base_offset)

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def entries(self) -> list[OffsetPosition]:
        return [OffsetPosition(o, p) for o, p in zip(self._offsets, self._positions, strict=True)]

    @property
    def positions(self) -> list[int]:
        """Positions of the valid entries: batch boundaries in the ``.log``."""
        return list(self._positions)

    @property
    def last_offset(self) -> int:
        """Kafka's ``OffsetIndex.lastOffset``: the last entry's offset, or the base offset if empty."""
        return self._offsets[-1] if self._offsets else self.base_offset

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Kafka's ``OffsetIndex.lookup``: the entry with the largest offset <= ``target_offset``;
        ``(base_offset, 0)`` if there is none."""
        slot = bisect.bisect_right(self._offsets, target_offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self._offsets[slot], self._positions[slot])

    def upper_bound(self, position: int) -> OffsetPosition | None:
        """Kafka's ``fetchUpperBoundOffset``: the first entry with position >= ``position``."""
        slot = bisect.bisect_left(self._positions, position)
        if slot >= len(self._positions):
            return None
        return OffsetPosition(self._offsets[slot], self._positions[slot])

    @staticmethod
    def raw_entries(buffer: BytesLike, base_offset: int) -> list[OffsetPosition]:
        """Every slot of the file (zero-filled tail included), as Kafka's ``entry(n)`` shows them."""
        view = as_view(buffer)
        used = len(view) - len(view) % OFFSET_INDEX_ENTRY_SIZE
        return [
            OffsetPosition(base_offset + rel, pos)
            for rel, pos in _OFFSET_ENTRY.iter_unpack(view[:used])
        ]


class TimeIndex:
    """A segment's time index over any bytes-like (copied; the buffer is not kept).

    ``entries`` are ``TimestampOffset`` s with strictly increasing timestamps and non-decreasing
    absolute offsets.
    """

    __slots__ = ("_offsets", "_timestamps", "base_offset", "file_size", "problems", "raw_count")

    def __init__(self, buffer: BytesLike, base_offset: int) -> None:
        view = as_view(buffer)
        self.base_offset = base_offset
        self.file_size = len(view)
        self.raw_count = len(view) // TIME_INDEX_ENTRY_SIZE
        self.problems: list[str] = []
        if len(view) % TIME_INDEX_ENTRY_SIZE:
            self.problems.append(
                f"{len(view)} bytes is not a multiple of {TIME_INDEX_ENTRY_SIZE}: "
                f"{len(view) % TIME_INDEX_ENTRY_SIZE} trailing bytes ignored"
            )
        used = _used_length(view, TIME_INDEX_ENTRY_SIZE)
        self._timestamps: list[int] = []
        self._offsets: list[int] = []
        last_ts: int | None = None
        last_rel = 0
        for i, (ts, rel) in enumerate(_TIME_ENTRY.iter_unpack(view[:used])):
            if rel < 0 or (last_ts is not None and (ts <= last_ts or rel < last_rel)):
                self.problems.append(
                    f"entry {i} (timestamp {ts}, relative offset {rel}) does not follow "
                    f"(timestamp {last_ts}, relative offset {last_rel}): "
                    f"{used // TIME_INDEX_ENTRY_SIZE - i} entries from here ignored"
                )
                break
            self._timestamps.append(ts)
            self._offsets.append(base_offset + rel)
            last_ts, last_rel = ts, rel

    @classmethod
    def from_entries(cls, entries: Iterable[TimestampOffset], base_offset: int) -> TimeIndex:
        data = b"".join(encode_time_index_entry(base_offset, t, o) for t, o in entries)
        return cls(data, base_offset)

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def entries(self) -> list[TimestampOffset]:
        return [TimestampOffset(t, o) for t, o in zip(self._timestamps, self._offsets, strict=True)]

    @property
    def last_entry(self) -> TimestampOffset:
        """Kafka's ``TimeIndex.lastEntry``: ``(-1, base_offset)`` when empty."""
        if not self._timestamps:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[-1], self._offsets[-1])

    @property
    def max_timestamp(self) -> int | None:
        """The last entry's timestamp. For a segment Kafka rolled or closed this is the segment's
        largest timestamp (Kafka appends it then); for an active segment it may lag behind."""
        return self._timestamps[-1] if self._timestamps else None

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Kafka's ``TimeIndex.lookup``: the entry with the largest timestamp <= target;
        ``(-1, base_offset)`` if there is none."""
        slot = bisect.bisect_right(self._timestamps, target_timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[slot], self._offsets[slot])

    @staticmethod
    def raw_entries(buffer: BytesLike, base_offset: int) -> list[TimestampOffset]:
        """Every slot of the file (zero-filled tail included), as Kafka's ``entry(n)`` shows them."""
        view = as_view(buffer)
        used = len(view) - len(view) % TIME_INDEX_ENTRY_SIZE
        return [
            TimestampOffset(ts, base_offset + rel)
            for ts, rel in _TIME_ENTRY.iter_unpack(view[:used])
        ]


def offset_index_sanity_problem(buffer: BytesLike, base_offset: int, name: str) -> str | None:
    """Kafka's ``OffsetIndex.sanityCheck`` (what a broker runs on start-up to decide whether to
    rebuild an index) over the raw file: the message Kafka's ``CorruptIndexException`` carries, or None."""
    view = as_view(buffer)
    raw = len(view) // OFFSET_INDEX_ENTRY_SIZE
    if raw:
        last = OffsetIndex.raw_entries(view[(raw - 1) * OFFSET_INDEX_ENTRY_SIZE :], base_offset)[0]
        if last.offset < base_offset:
            return (
                f"Corrupt index found, index file {name} has non-zero size but the last offset "
                f"is {last.offset} which is less than the base offset {base_offset}"
            )
    if len(view) % OFFSET_INDEX_ENTRY_SIZE:
        return (
            f"Index file {name} is corrupt, found {len(view)} bytes which is neither positive "
            f"nor a multiple of {OFFSET_INDEX_ENTRY_SIZE}"
        )
    return None


def time_index_sanity_problem(buffer: BytesLike, base_offset: int, name: str) -> str | None:
    """Kafka's ``TimeIndex.sanityCheck`` over the raw file: the exception message, or None."""
    view = as_view(buffer)
    raw = TimeIndex.raw_entries(view, base_offset)
    if raw:
        first, last = raw[0], raw[-1]
        if last.timestamp < first.timestamp:
            return (
                f"Corrupt time index found, time index file ({name}) has non-zero size but the "
                f"last timestamp is {last.timestamp} which is less than the first timestamp "
                f"{first.timestamp}"
            )
        if last.offset < base_offset:
            return (
                f"Corrupt time index found, time index file ({name}) has non-zero size but the "
                f"last offset is {last.offset} which is less than the first offset {base_offset}"
            )
    if len(view) % TIME_INDEX_ENTRY_SIZE:
        return (
            f"Time index file {name} is corrupt, found {len(view)} bytes which is neither "
            f"positive nor a multiple of {TIME_INDEX_ENTRY_SIZE}"
        )
    return None
