"""Where a log's segment bytes live: a segment file, or a bytearray (Kafka's ``FileRecords`` and
``MemoryRecords``), and the stores that roll, list and delete them.

Approach: a segment's ``.log`` is reached only through ``SegmentRecords`` (``size``, ``append``,
``read``, ``truncate_to``, ``flush``, ``close``); ``LogSegment`` reads batch headers and batches
through it, and ``LiveLog`` appends and undoes appends through it. ``FileSegmentRecords`` is the
broker's: an ``O_APPEND`` descriptor (``os.write``, ``pread``, ``ftruncate``, ``fsync``), whose
``fd`` the read path hands out as ``FileSlice`` for ``sendfile``. ``MemorySegmentRecords`` holds
the same bytes in a ``bytearray``: a test runs the segment rules (``SegmentIndexer``, the batch
lookups of ``LogSegment``) over it without a disk, with the same assertions as over files.

A ``SegmentStore`` names segments by base offset: ``roll`` a new one, ``open`` an existing one,
``delete`` one, ``base_offsets``. ``FileSegmentStore`` keeps Kafka's layout
(``<20-digit base offset>.log`` in the partition folder, nothing else); ``MemorySegmentStore``
a dict of bytearrays. ``LiveLog`` (``open``'s ``store``, files by default) and its loader roll,
open, list and delete segments through one.

Beside the segments, a store's ``indexes`` (an ``IndexStore``) hold each segment's ``.index``,
``.timeindex`` and ``.txnindex`` by path: files appended at their exact size
(``FileIndexStore``), or bytearrays (``MemoryIndexStore``). ``on_disk`` tells the live log
whether the rest of Kafka's folder exists: with a memory store there are no producer snapshots,
leader epoch checkpoint, ``partition.metadata`` or ``.deleted`` renames, reads answer with bytes
instead of descriptors, and a reopen recovers every segment (producer state and leader epochs
are rebuilt from the batches, as Kafka does when those files are missing).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from typing import Final, Protocol

from kwire.log._layout import LOG_SUFFIX, parse_segment_file_name, segment_file_name
from kwire.log._writer import _write_file

__all__ = [
    "FileIndexStore",
    "FileSegmentRecords",
    "FileSegmentStore",
    "IndexStore",
    "MemoryIndexStore",
    "MemorySegmentRecords",
    "MemorySegmentStore",
    "SegmentRecords",
    "SegmentStore",
    "drop_segment",
]


class SegmentRecords(Protocol):
    """The bytes of one segment (``FileRecords`` / ``MemoryRecords``)."""

    def size(self) -> int: ...

    def append(self, data: bytes | bytearray | memoryview) -> None: ...

    def read(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``position`` (fewer at the end)."""
        ...

    def truncate_to(self, size: int) -> None: ...

    def flush(self) -> None: ...

    def modified_ms(self) -> int:
        """When the bytes last changed (a segment without timestamps is as old as this)."""
        ...

    def close(self) -> None: ...


class FileSegmentRecords:
    """A segment file open for appends (``O_APPEND``); ``fd`` is what ``sendfile`` reads."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def append(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def read(self, position: int, size: int) -> bytes:
        parts = []
        while size > 0:
            chunk = os.pread(self.fd, size, position)
            if not chunk:
                break
            parts.append(chunk)
            position += len(chunk)
            size -= len(chunk)
        return b"".join(parts)

    def truncate_to(self, size: int) -> None:
        if self.size() > size:
            os.ftruncate(self.fd, size)

    def flush(self) -> None:
        os.fsync(self.fd)

    def modified_ms(self) -> int:
        return int(os.fstat(self.fd).st_mtime * 1000)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class MemorySegmentRecords:
    """A segment's bytes in a ``bytearray`` (nothing to flush; closing keeps them)."""

    __slots__ = ("data", "modified")

    def __init__(self, data: bytes | bytearray = b"") -> None:
        self.data = bytearray(data)
        self.modified = int(time.time() * 1000)

    def size(self) -> int:
        return len(self.data)

    def append(self, data: bytes | bytearray | memoryview) -> None:
        self.data += data
        self.modified = int(time.time() * 1000)

    def read(self, position: int, size: int) -> bytes:
        return bytes(self.data[position : position + size])

    def truncate_to(self, size: int) -> None:
        if len(self.data) > size:
            del self.data[size:]
            self.modified = int(time.time() * 1000)

    def flush(self) -> None:
        pass

    def modified_ms(self) -> int:
        return self.modified

    def close(self) -> None:
        pass


class IndexStore(Protocol):
    """A segment's index files (``.index``, ``.timeindex``, ``.txnindex``), by path."""

    def append_to(self, path: str) -> SegmentRecords:
        """The index open for appends (created empty when absent)."""
        ...

    def read(self, path: str) -> bytes | None:
        """Its bytes; None when there is no such index."""
        ...

    def write(self, path: str, data: bytes) -> None:
        """Replace its bytes (recovery rebuilds an index whole)."""
        ...

    def remove(self, path: str) -> None:
        """Delete it (nothing when absent)."""
        ...


class FileIndexStore:
    """Index files beside the segment files (``O_APPEND``, no preallocation)."""

    def append_to(self, path: str) -> FileSegmentRecords:
        return FileSegmentRecords(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))

    def read(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, path: str, data: bytes) -> None:
        _write_file(path, data, fsync=False)  # fsynced with the segment (LogSegment.flush)

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


class MemoryIndexStore:
    """Indexes as bytearrays, kept as long as the store (a reopen finds them)."""

    def __init__(self) -> None:
        self.indexes: dict[str, MemorySegmentRecords] = {}

    def append_to(self, path: str) -> MemorySegmentRecords:
        return self.indexes.setdefault(path, MemorySegmentRecords())

    def read(self, path: str) -> bytes | None:
        found = self.indexes.get(path)
        return None if found is None else bytes(found.data)

    def write(self, path: str, data: bytes) -> None:
        self.indexes[path] = MemorySegmentRecords(data)

    def remove(self, path: str) -> None:
        self.indexes.pop(path, None)


#: The one ``FileIndexStore`` (it holds no state).
FILE_INDEXES: Final = FileIndexStore()


class SegmentStore(Protocol):
    """The segments of one partition, by base offset, and their indexes."""

    @property
    def on_disk(self) -> bool:
        """Whether the partition folder exists (snapshots, checkpoints, ``sendfile`` reads)."""
        ...

    @property
    def indexes(self) -> IndexStore: ...

    def roll(self, base_offset: int) -> SegmentRecords:
        """A new, empty segment (an old one of that base offset is replaced)."""
        ...

    def open(self, base_offset: int) -> SegmentRecords: ...

    def delete(self, base_offset: int) -> None: ...

    def base_offsets(self) -> list[int]: ...


class FileSegmentStore:
    """Segment files in a partition folder, named as Kafka names them."""

    on_disk = True

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.indexes: IndexStore = FILE_INDEXES
        self.path = os.fspath(path)
        os.makedirs(self.path, exist_ok=True)

    def _file(self, base_offset: int) -> str:
        return os.path.join(self.path, segment_file_name(base_offset, LOG_SUFFIX))

    def roll(self, base_offset: int) -> FileSegmentRecords:
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
        return FileSegmentRecords(os.open(self._file(base_offset), flags, 0o644))

    def open(self, base_offset: int) -> FileSegmentRecords:
        return FileSegmentRecords(os.open(self._file(base_offset), os.O_RDWR | os.O_APPEND))

    def delete(self, base_offset: int) -> None:
        os.remove(self._file(base_offset))

    def base_offsets(self) -> list[int]:
        found = (parse_segment_file_name(name) for name in os.listdir(self.path))
        return sorted(p[0] for p in found if p is not None and p[1] == LOG_SUFFIX)


class MemorySegmentStore:
    """Segments as bytearrays, for a log that needs no disk."""

    on_disk = False

    def __init__(self) -> None:
        self.indexes = MemoryIndexStore()
        self.segments: dict[int, MemorySegmentRecords] = {}

    def roll(self, base_offset: int) -> MemorySegmentRecords:
        self.segments[base_offset] = MemorySegmentRecords()
        return self.segments[base_offset]

    def open(self, base_offset: int) -> MemorySegmentRecords:
        try:
            return self.segments[base_offset]
        except KeyError:
            raise FileNotFoundError(f"no segment {base_offset}") from None

    def delete(self, base_offset: int) -> None:
        self.open(base_offset)
        del self.segments[base_offset]

    def base_offsets(self) -> list[int]:
        return sorted(self.segments)


def drop_segment(store: SegmentStore, base_offset: int, index_paths: Iterable[str]) -> None:
    """A segment's records and its indexes out of ``store`` at once (no ``.deleted`` rename:
    what a memory store does, and a truncation's removal of later segments)."""
    with contextlib.suppress(FileNotFoundError):
        store.delete(base_offset)
    for path in index_paths:
        store.indexes.remove(path)
