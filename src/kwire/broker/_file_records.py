"""Fetch's record sets that stay in the segment files until they are sent: ``FileRecords``
(``sendfile`` slices) and ``ConvertedRecords`` (down-converted a chunk at a time as they go out).

Approach: Kafka's ``FileRecords`` and ``LazyDownConversionRecords``. The Fetch handler (``_fetch``)
makes them; the server (``_server``) sends them. A module of their own so that the server, which
imports them to send a Fetch response's pieces, does not load the Fetch handler at start.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import Final

from kwire.log.storage import (
    FileSlice,
    hold_slices,
    read_batch_chunks,
    read_slices,
    release_slices,
)
from kwire.protocol import RecordsReference
from kwire.records import convert_for_fetch

__all__ = ["CONVERT_CHUNK", "ConvertedRecords", "FileRecords"]


class FileRecords(RecordsReference):
    """Record bytes left in segment files: the server ``sendfile``s each slice in turn.

    The file descriptors are duplicated, so a segment deleted by retention while the response
    waits in the socket's queue is still read whole (an unlinked file lives while it is open).
    The request that made them holds them (``RequestContext.hold``); the server releases them
    when the request ends, its response written or not.
    """

    def __init__(self, slices: list[FileSlice]) -> None:
        self.slices = hold_slices(slices)
        self.nbytes = sum(s.size for s in slices)
        self.frame_position = -1

    def place_in_frame(self, out: bytearray) -> None:
        self.frame_position = len(out)

    def to_bytes(self) -> bytes:
        return read_slices(self.slices)

    def close(self) -> None:
        release_slices(self.slices)
        self.slices = []


#: Source bytes converted at a time by a lazy down-conversion, and the largest fetch converted
#: whole up front (Kafka converts in 16 KiB reads; bigger chunks cost fewer Python calls).
CONVERT_CHUNK: Final = 1 << 18


class ConvertedRecords(FileRecords):
    """Records down-converted while they are sent, a chunk at a time (Kafka's
    ``LazyDownConversionRecords`` and ``LazyDownConversionRecordsSend``).

    The frame needs its size before the first byte goes out, and converted bytes are known
    only once converted: as Kafka does, the size is the larger of the stored size and the first
    converted chunk (so the client always gets a whole first batch), the output is cut at that
    size (the client drops a partial batch at the end) or, when the conversion came out
    smaller, ends with a fake batch header (offset -1) whose length runs past the frame, which
    the client drops too. Memory: one chunk, never the whole response.
    """

    def __init__(self, slices: list[FileSlice], fetch_version: int, first_offset: int) -> None:
        super().__init__(slices)
        self.fetch_version = fetch_version
        self.first_offset = first_offset
        self._source = read_batch_chunks(self.slices, CONVERT_CHUNK)
        try:
            self._first = self._convert(next(self._source, b""))  # errors surface here, up front
        except BaseException:
            self.close()  # no one else has these descriptors yet
            raise
        self.stored_bytes = self.nbytes
        self.nbytes = max(self.nbytes, len(self._first))

    def _convert(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        converted = convert_for_fetch(chunk, self.fetch_version, first_offset=self.first_offset)
        return bytes(converted.records)

    def chunks(self) -> Iterator[bytes]:
        """The converted bytes, exactly ``nbytes`` of them, a chunk at a time."""
        remaining = self.nbytes
        first, self._first = self._first, b""
        pending: Iterator[bytes] = iter([first])
        for chunk in itertools.chain(pending, map(self._convert, self._source)):
            if remaining <= 0:
                return
            piece = chunk[:remaining]
            remaining -= len(piece)
            if piece:
                yield piece
        if remaining > 0:
            yield (_OVERFLOW.pack(-1, remaining + 1) + bytes(max(remaining - 12, 0)))[:remaining]

    def to_bytes(self) -> bytes:
        return b"".join(self.chunks())


_OVERFLOW: Final = struct.Struct(">qi")  # a batch header: offset -1, a length past the frame
