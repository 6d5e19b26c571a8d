"""One segment of a live log (Kafka's ``LogSegment``): its ``.log`` bytes (``SegmentRecords``:
a file descriptor, or a bytearray for a log without a disk), its indexes kept in memory and
appended at their exact size to their files (or bytearrays: the store's ``IndexStore``), its
``.txnindex``; reads of batch headers with ``pread``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Final

from kwire.errors import CorruptRecordError
from kwire.log._index import (
    encode_time_index_entry,
)
from kwire.log._layout import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kwire.log._rules import SegmentIndexer
from kwire.log._store import FILE_INDEXES, FileSegmentRecords, IndexStore, SegmentRecords
from kwire.log._txnindex import AbortedTxn, encode_aborted_txn
from kwire.records import (
    RECORD_OVERHEAD_V0,
    Batch,
    read_batches,
)

LONG_MAX: Final = (1 << 63) - 1
DELETED_SUFFIX: Final = ".deleted"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
LOG_OVERHEAD: Final = 12
_HEADER: Final = struct.Struct(">qiibIhi")  # offset, length, leader epoch, magic, crc, attrs, delta


def pread_exact(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            raise OSError(f"short read: {got} of {size} bytes at {position}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class LogSegment:
    """One segment of a live log: its ``.log`` bytes and index bookkeeping. ``records``: the
    ``SegmentRecords`` (a descriptor is a segment file's); ``indexes``: where its index files
    are appended (files by default)."""

    __slots__ = (
        "created_ms",
        "index_out",
        "indexer",
        "indexes",
        "records",
        "stem",
        "time_out",
        "txn_out",
        "txns",
    )

    def __init__(
        self,
        stem: str,
        records: int | SegmentRecords,
        indexer: SegmentIndexer,
        created_ms: int,
        indexes: IndexStore = FILE_INDEXES,
    ) -> None:
        self.stem = stem  # path without suffix
        self.records = FileSegmentRecords(records) if isinstance(records, int) else records
        self.indexer = indexer
        self.created_ms = created_ms
        self.indexes = indexes
        #: The ``.index``, ``.timeindex`` and ``.txnindex`` open for appends (None: closed).
        self.index_out: SegmentRecords | None = None
        self.time_out: SegmentRecords | None = None
        self.txn_out: SegmentRecords | None = None
        self.txns: list[AbortedTxn] = []

    @property
    def fd(self) -> int:
        """The ``.log`` descriptor (``FileSlice``, ``mmap``); a segment in memory has none."""
        if not isinstance(self.records, FileSegmentRecords):
            raise TypeError(f"segment {self.base_offset} is not a file")
        return self.records.fd

    @property
    def base_offset(self) -> int:
        return self.indexer.base_offset

    @property
    def size(self) -> int:
        return self.indexer.size

    @property
    def largest_timestamp(self) -> int:
        """``LogSegment.largestTimestamp``: the max timestamp, else the file's mtime."""
        if self.indexer.max_timestamp >= 0:
            return self.indexer.max_timestamp
        return self.records.modified_ms()

    def open_index_files(self) -> None:
        if self.index_out is None:
            self.index_out = self.indexes.append_to(self.stem + INDEX_SUFFIX)
        if self.time_out is None:
            self.time_out = self.indexes.append_to(self.stem + TIME_INDEX_SUFFIX)

    def close_index_files(self) -> None:
        for out in (self.index_out, self.time_out, self.txn_out):
            if out is not None:
                out.close()
        self.index_out = self.time_out = self.txn_out = None

    def fsync(self) -> None:
        self.records.flush()
        for out in (self.index_out, self.time_out, self.txn_out):
            if out is not None:
                out.flush()

    def write_time_entry(self) -> None:
        entry = self.indexer.maybe_append_time_entry()
        if entry is not None:
            if self.time_out is None:
                self.open_index_files()
            assert self.time_out is not None
            self.time_out.append(encode_time_index_entry(self.base_offset, *entry))

    def append_txn(self, txn: AbortedTxn) -> None:
        self.txns.append(txn)
        if self.txn_out is None:
            self.txn_out = self.indexes.append_to(self.stem + TXN_INDEX_SUFFIX)
        self.txn_out.append(encode_aborted_txn(txn))

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """``LogSegment.append``'s write: the bytes at the end of the ``.log`` (the caller
        feeds ``indexer`` the batches)."""
        self.records.append(data)

    def files(self) -> list[str]:
        return [
            self.stem + s for s in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
        ]

    def header_at(self, position: int) -> tuple[int, int, int] | None:
        """(base offset, last offset, size) of the batch at ``position``; None past the end."""
        if position + LOG_OVERHEAD + 5 > self.size:
            return None
        raw = self.records.read(position, _HEADER.size)
        if len(raw) < LOG_OVERHEAD + 5:
            return None
        offset, length = struct.unpack_from(">qi", raw)
        if length < RECORD_OVERHEAD_V0:
            # FileLogInputStream.nextBatch: a walk over damaged bytes must not stall or go back.
            raise CorruptRecordError(
                f"batch size {length} at byte {position} of segment {self.base_offset} is less "
                f"than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                offset=position,
            )
        size = LOG_OVERHEAD + length
        if position + size > self.size:
            return None  # nextBatch: the rest of the segment cannot hold the batch
        magic = raw[16]
        if magic >= 2 and len(raw) >= _HEADER.size:
            delta = struct.unpack_from(">i", raw, 23)[0]
            return offset, offset + delta, size
        return offset, offset, size

    def batches_from(
        self, position: int, end: int | None = None
    ) -> Iterator[tuple[int, int, int, int]]:
        """(position, base offset, last offset, size) of each batch from ``position``."""
        stop = self.size if end is None else min(end, self.size)
        while position < stop:
            header = self.header_at(position)
            if header is None:
                return
            base, last, size = header
            yield position, base, last, size
            position += size

    def translate_offset(self, offset: int, end: int | None = None) -> tuple[int, int, int] | None:
        """``translateOffset``: (position, size, last offset) of the first batch whose last
        offset is >= ``offset``; None when the segment has none."""
        start = self.indexer.lookup(offset).position
        for position, _base, last, size in self.batches_from(start, end):
            if last >= offset:
                return position, size, last
        return None

    def read_batch(self, position: int, size: int) -> Batch:
        data = self.records.read(position, size)
        if len(data) != size:
            raise OSError(f"short read: {len(data)} of {size} bytes at {position}")
        return next(iter(read_batches(data, verify_crc=False)))

    def close(self) -> None:
        self.close_index_files()
        self.records.close()
