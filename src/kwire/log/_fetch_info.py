"""What the live log answers: the byte ranges of a read (``FileSlice``, ``FetchDataInfo``, for
``sendfile``; a log over a memory store answers with the bytes) and of an append (``LogAppendInfo``), and helpers that read those ranges back.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import field
from typing import NamedTuple

from kwire._lazy import lazy_dataclass
from kwire.log._log_segment import LOG_OVERHEAD, pread_exact

__all__ = [
    "FetchDataInfo",
    "FileSlice",
    "LogAppendInfo",
    "batch_formats",
    "hold_slices",
    "read_batch_chunks",
    "read_slices",
    "release_slices",
]


class FileSlice(NamedTuple):
    """``size`` bytes at ``position`` of the open file ``fd`` (valid while the log is open)."""

    fd: int
    position: int
    size: int


@lazy_dataclass(frozen=True)
class FetchDataInfo:
    """Kafka's ``FetchDataInfo``: what a fetch at ``first_offset`` returns (whole batches):
    ``slices`` of segment files, or (a log over a memory store) ``data``, a copy of the bytes."""

    first_offset: int
    slices: list[FileSlice] = field(default_factory=list)
    #: Base offset of the segment the data comes from (-1 when empty).
    segment_base_offset: int = -1
    data: bytes = b""

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slices) + len(self.data)

    def read_bytes(self) -> bytes:
        return read_slices(self.slices) if self.slices else self.data


def read_slices(slices: list[FileSlice]) -> bytes:
    """The bytes of ``slices``, in order."""
    return b"".join(pread_exact(s.fd, s.size, s.position) for s in slices)


def hold_slices(slices: list[FileSlice]) -> list[FileSlice]:
    """``slices`` on duplicated descriptors, so they stay readable after the log lets its own go
    (a segment deleted by retention while a response waits lives while it is open); give them
    back with ``release_slices``."""
    return [FileSlice(os.dup(s.fd), s.position, s.size) for s in slices]


def release_slices(slices: list[FileSlice]) -> None:
    """Close the descriptors ``hold_slices`` duplicated."""
    for s in slices:
        os.close(s.fd)


@lazy_dataclass(frozen=True)
class LogAppendInfo:
    """Kafka's ``LogAppendInfo``: what a produce response reports for the partition."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    duplicate: bool = False
    in_place: bool = True
    recompressed: bool = False
    size: int = 0


def batch_formats(slices: list[FileSlice]) -> set[tuple[int, int]]:
    """(magic, compression codec) of every batch in ``slices``, from their headers alone
    (Kafka's ``FileRecords.hasMatchingMagic``: the fetch path decides whether to convert
    without reading the records)."""
    found: set[tuple[int, int]] = set()
    for s in slices:
        position, end = s.position, s.position + s.size
        while position + LOG_OVERHEAD + 10 <= end:
            raw = os.pread(s.fd, 23, position)
            if len(raw) < LOG_OVERHEAD + 6:
                break
            length = struct.unpack_from(">i", raw, 8)[0]
            magic = raw[16]
            # v2: attributes (int16) at 21; v0/v1: attributes (int8) at 17 after the crc at 12
            attributes = struct.unpack_from(">h", raw, 21)[0] if magic >= 2 else raw[17]
            found.add((magic, attributes & 0x07))
            position += LOG_OVERHEAD + max(length, 0)
            if length <= 0:
                break
    return found


def read_batch_chunks(slices: list[FileSlice], chunk_bytes: int) -> Iterator[bytes]:
    """The batches in ``slices``, read whole, about ``chunk_bytes`` at a time (one batch larger
    than that is one chunk): what a lazy down-conversion reads, never all of it at once."""
    for s in slices:
        position, end = s.position, s.position + s.size
        while position < end:
            take = 0
            while position + take + LOG_OVERHEAD <= end:
                raw = os.pread(s.fd, LOG_OVERHEAD, position + take)
                if len(raw) < LOG_OVERHEAD:
                    break
                size = LOG_OVERHEAD + max(struct.unpack_from(">i", raw, 8)[0], 0)
                if take and take + size > chunk_bytes:
                    break
                take += min(size, end - position - take)
                if take >= chunk_bytes:
                    break
            if take == 0:  # a trailing partial header: send it as it is
                take = end - position
            yield pread_exact(s.fd, take, position)
            position += take
